"""The machine's pace, timed beside each process's windows (``measure.reference``), taken out of a comparison."""

from __future__ import annotations

import dataclasses
import math
import random

import pytest

from torchbenchmark.analyze.compare import compare
from torchbenchmark.analyze.ratios import ratio_interval
from torchbenchmark.results.records import RunRecord, Summary, summary_of_records
from torchbenchmark.results.schema import CaseResult, Dispatch, Samples, StepTime

ENV = {"host": "box", "cpu": "Test CPU", "cpu_count": 2, "device_name": "Test CPU", "torch": "2.14.1"}


def paced_side(rng: random.Random, step_ms: float, paces: list[float], follows: float = 1.0, noise: float = 0.005) -> tuple[list, list]:
    """Processes whose step times follow their reference to the power ``follows``, with ``noise`` of their own."""
    references = [40.0 * pace for pace in paces]
    steps = [step_ms * pace**follows * math.exp(rng.gauss(0, noise)) for pace in paces]
    return steps, references


def test_a_machine_that_ran_slower_for_one_side_is_taken_out_where_the_steps_follow_its_pace() -> None:
    """The same code, three processes a side, the machine 10% slower for NEW and each process's pace its own:
    timed, a 10% slowdown; at equal pace, none."""
    rng = random.Random(1)
    base, base_ref = paced_side(rng, 2.0, [1.00, 1.06, 0.97])
    new, new_ref = paced_side(rng, 2.0, [1.10, 1.16, 1.07])
    plain = ratio_interval(base, new)
    assert plain.ratio > 1.08 and plain.slope is None, "timed, the machine's drift reads as a slowdown"
    paced = ratio_interval(base, new, references=(base_ref, new_ref))
    assert paced.slope == pytest.approx(1.0, abs=0.2)
    assert paced.low <= 1.0 <= paced.high and abs(paced.ratio - 1) < 0.03
    assert paced.high / paced.low < plain.high / plain.low


def test_a_real_change_survives_the_pace_taken_out() -> None:
    rng = random.Random(2)
    base, base_ref = paced_side(rng, 2.0, [1.00, 1.08, 0.95])
    new, new_ref = paced_side(rng, 2.2, [0.98, 1.09, 1.04])
    paced = ratio_interval(base, new, references=(base_ref, new_ref))
    assert paced.slope is not None and paced.ratio == pytest.approx(1.10, abs=0.02) and paced.low > 1.0


def test_a_reference_the_steps_do_not_follow_is_left_out() -> None:
    """Step times with a spread of their own, references that move independently: no slope, the plain interval."""
    rng = random.Random(3)
    base = [2.0 * math.exp(rng.gauss(0, 0.03)) for _ in range(3)]
    new = [2.0 * math.exp(rng.gauss(0, 0.03)) for _ in range(3)]
    references = ([40.0, 44.0, 39.0], [41.0, 38.0, 45.0])
    assert ratio_interval(base, new, references=references) == ratio_interval(base, new)


def test_a_step_faster_on_a_slower_machine_is_chance_not_a_slope() -> None:
    base, new = [2.0, 1.8, 2.2], [2.0, 1.8, 2.2]
    against = ([40.0, 44.0, 36.0], [40.0, 44.0, 36.0])
    assert ratio_interval(base, new, references=against).slope is None


def test_the_pace_s_uncertainty_widens_the_interval_the_further_apart_the_sides_ran() -> None:
    rng = random.Random(4)
    base, base_ref = paced_side(rng, 2.0, [1.00, 1.05, 0.96], noise=0.01)
    near_new, near_ref = paced_side(random.Random(5), 2.0, [1.01, 1.04, 0.97], noise=0.01)
    far_new, far_ref = paced_side(random.Random(5), 2.0, [1.21, 1.24, 1.17], noise=0.01)
    near = ratio_interval(base, near_new, references=(base_ref, near_ref))
    far = ratio_interval(base, far_new, references=(base_ref, far_ref))
    assert near.slope is not None and far.slope is not None
    assert far.leverage > near.leverage and far.high / far.low > near.high / near.low


def row(steps: list[float], references: list[float], **fields: object) -> CaseResult:
    ms = sorted(steps)[len(steps) // 2]
    samples = Samples(tuple(steps), tuple((s, s) for s in steps), tuple(references))
    figures = dict(batch_size=4, step_time=StepTime(ms, 0.01, ms, 100), dispatch=Dispatch("dispatch-bound", 0.9, 10, 1, 1), samples=samples)
    return CaseResult(model="m", mode="train", device="cpu", status="ok", **{**figures, **fields})


def side(case: CaseResult, env: dict = ENV) -> Summary:
    return summary_of_records([RunRecord("r", env, None, [case])], "side")


def test_compare_takes_the_pace_out_of_an_a_a_pair_on_one_machine_and_says_so() -> None:
    rng = random.Random(6)
    base = row(*paced_side(rng, 2.0, [1.00, 1.13, 1.12]))  # processes in two modes 13% apart
    new = row(*paced_side(rng, 2.0, [1.12, 1.01, 1.14]))
    case = compare(side(base), side(new)).cases[0]
    assert case.call == "same" and case.estimate.slope is not None
    assert case.notes[0].startswith("the machine's pace taken out: its step times followed the reference loop (slope ")
    timed = compare(side(dataclasses.replace(base, samples=Samples(base.samples.process_medians_ms))), side(new)).cases[0]
    assert timed.estimate.slope is None and timed.estimate.high / timed.estimate.low > case.estimate.high / case.estimate.low


@pytest.mark.parametrize("env", [{**ENV, "torch": "2.15.0"}, {**ENV, "host": "other", "cpu": "Other CPU", "device_name": "Other CPU"}])
def test_no_pace_is_taken_out_across_torch_versions_or_machines(env: dict) -> None:
    rng = random.Random(7)
    base, new = row(*paced_side(rng, 2.0, [1.00, 1.13, 1.12])), row(*paced_side(rng, 2.0, [1.12, 1.01, 1.14]))
    assert compare(side(base), side(new, env)).cases[0].estimate.slope is None


def test_processes_keep_their_references_only_while_every_process_has_one() -> None:
    one, two = Samples.of_process(1.0, (1.0,), 40.0), Samples.of_process(1.1, (1.1,), 42.0)
    assert (Samples() + one + two).references == (40.0, 42.0)
    lacking = Samples.of_process(1.2, (1.2,), None)
    assert (one + lacking + two).references == () and (one + lacking + two).process_medians_ms == (1.0, 1.2, 1.1)
