"""compare: the ratio interval on samples with known answers, each call, and the exit codes end to end."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import random
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.sweeps import PRICED
from tests.helpers.work_models import WORK_ENV
from torchbenchmark.analyze.compare import CaseComparison, Comparison, compare_rows
from torchbenchmark.analyze.ratios import (
    PROCESS_NOISE_FLOOR,
    RUN_NOISE_MIN_CASES,
    RatioEstimate,
    calibration_drift,
    processes_needed,
    ratio_interval,
    run_noise,
    t95,
)
from torchbenchmark.analyze.verdict import verdict
from torchbenchmark.analyze.walltime import Between
from torchbenchmark.api import compare
from torchbenchmark.report.tables import render_comparison
from torchbenchmark.results.files import dumps
from torchbenchmark.results.records import RunRecord, Summary, summary_of_records
from torchbenchmark.results.schema import CaseResult, Dispatch, Instructions, Samples, StepTime, processes_apart

ROOT = Path(__file__).resolve().parents[2]
ENV = {"host": "box", "cpu": "Test CPU", "cpu_count": 2, "device_name": "Test CPU", "torch": "2.14.1"}


def test_identical_samples_give_ratio_one_inside_an_interval_set_by_the_noise_floor() -> None:
    estimate = ratio_interval([10.0], [10.0])
    assert estimate.ratio == 1.0
    half = 1.96 * PROCESS_NOISE_FLOOR * math.sqrt(2)
    assert estimate.low == pytest.approx(math.exp(-half)) and estimate.high == pytest.approx(math.exp(half))


def test_a_ten_percent_shift_is_measured_and_excludes_one() -> None:
    estimate = ratio_interval([10.0, 10.1, 9.9], [11.0, 11.11, 10.89])
    assert estimate.ratio == pytest.approx(1.10, rel=1e-9)
    assert estimate.low > 1.05  # three processes a side: the interval is narrow enough to gate at 5%


def test_own_spread_wider_than_the_floor_uses_students_t() -> None:
    base, new = [10.0, 12.0, 8.0], [10.0, 12.0, 8.0]
    estimate = ratio_interval(base, new)
    logs = [math.log(x) for x in base]
    mean = sum(logs) / 3
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / 2)
    assert estimate.spread == pytest.approx(sd)
    assert math.log(estimate.high) == pytest.approx(t95(4) * sd * math.sqrt(2 / 3))


def test_window_spread_raises_the_floor() -> None:
    assert ratio_interval([10.0], [10.0], window_spread=0.1).spread == 0.1


def row(model: str, medians: list[float], status: str = "ok", verdict: str = "compute-bound", **fields: object) -> CaseResult:
    if status != "ok":
        return CaseResult(model=model, mode="train", device="cpu", status=status, error="boom", **fields)
    ms = sorted(medians)[len(medians) // 2]
    figures = dict(
        batch_size=4,
        step_time=StepTime(ms, 0.1, ms, 10),
        dispatch=Dispatch(verdict, 0.1, 10, 1, 1),
        samples=Samples(tuple(medians), tuple((m, m) for m in medians)),
    )
    return CaseResult(model=model, mode="train", device="cpu", status="ok", **{**figures, **fields})


def side(*rows: CaseResult, env: dict | None = None) -> Summary:
    return summary_of_records([RunRecord("r", env or ENV, None, rows)], "side")


def test_noisy_but_equal_processes_are_called_same() -> None:
    rng = random.Random(0)
    same = 0
    for _ in range(200):  # processes 2% apart in log spread, the floor: at most a few false alarms
        base = [10 * math.exp(rng.gauss(0, 0.02)) for _ in range(3)]
        new = [10 * math.exp(rng.gauss(0, 0.02)) for _ in range(3)]
        same += compare(side(row("m", base)), side(row("m", new))).cases[0].call == "same"
    assert same >= 196


def test_calls_and_exit_status() -> None:
    base = side(
        row("slow", [10.0] * 3),
        row("fast", [10.0] * 3),
        row("flat", [10.0] * 3),
        row("breaks", [10.0]),
        row("mended", [], status="failed"),
        row("flip", [10.0] * 3, verdict="mixed"),
        row("gone", [1.0]),
    )
    new = side(
        row("slow", [11.0] * 3),
        row("fast", [8.0] * 3),
        row("flat", [10.2] * 3),
        row("breaks", [], status="failed"),
        row("mended", [5.0]),
        row("flip", [10.0] * 3, verdict="dispatch-bound"),
        row("added", [1.0]),
    )
    comparison = compare(base, new)
    calls = {case.model: case.call for case in comparison.cases}
    assert calls == {
        "slow": "slower",
        "fast": "faster",
        "flat": "same",
        "breaks": "new failure",
        "mended": "fixed",
        "flip": "verdict changed",
        "gone": "only in base",
        "added": "only in new",
    }
    assert [case.call for case in comparison.cases[:2]] == ["slower", "new failure"], "regressions first"
    assert comparison.exit_status == 1
    assert compare(side(row("flat", [10.0] * 3)), side(row("flat", [10.2] * 3))).exit_status == 0


def test_a_change_under_the_threshold_is_same_even_when_significant() -> None:
    case = compare(side(row("m", [10.0] * 5)), side(row("m", [10.4] * 5))).cases[0]
    assert case.estimate.low > 1.0 and case.call == "same"
    assert compare(side(row("m", [10.0] * 5)), side(row("m", [10.4] * 5)), threshold_pct=2).cases[0].call == "slower"


def test_a_verdict_that_flips_within_both_intervals_is_same_not_changed() -> None:
    """A case whose overhead share sits at a threshold is borderline on both sides: its verdict flipping
    between runs is noise, noted; a verdict whose interval no longer reaches the other's is a change."""

    def at(share: float, low: float, high: float) -> CaseResult:
        dispatch = Dispatch(verdict(share), share, 10, 1, 1, overhead_interval=(low, high), borderline=verdict(low) != verdict(high))
        return row("sac", [10.0] * 3, dispatch=dispatch)

    flipped = compare_rows(at(0.21, 0.18, 0.30), at(0.19, 0.12, 0.29), 5.0, ENV, ENV)
    assert (flipped.base_verdict, flipped.new_verdict, flipped.call) == ("mixed", "compute-bound", "same")
    assert flipped.notes == ("verdict mixed -> compute-bound (borderline: both intervals reach compute-bound and mixed)",)
    one_sided = compare_rows(at(0.25, 0.21, 0.30), at(0.15, 0.12, 0.22), 5.0, ENV, ENV)  # only new's reaches mixed
    assert one_sided.call == "same"
    moved = compare_rows(at(0.25, 0.21, 0.30), at(0.10, 0.08, 0.15), 5.0, ENV, ENV)  # the intervals share no verdict
    assert moved.call == "verdict changed" and moved.notes == ()


def test_differences_in_machine_torch_and_batch_size_are_noted() -> None:
    comparison = compare(side(row("m", [10.0])), side(row("m", [10.0], batch_size=8), env={**ENV, "host": "b", "torch": "2.15"}))
    assert any("different machines" in note for note in comparison.notes)
    assert set(comparison.cases[0].notes) >= {"batch size 4 -> 8", "another machine", "torch 2.14.1 -> 2.15"}


def test_nothing_in_common_is_an_error() -> None:
    with pytest.raises(ValueError, match="no case in common"):
        compare(side(row("a", [1.0])), side(row("b", [1.0])))


def diagnostics(*args: str, work: int = 1) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, WORK_ENV: str(work)}
    return subprocess.run([sys.executable, str(ROOT / "diagnostics.py"), *args], capture_output=True, text=True, env=env, timeout=600)


@pytest.mark.slow
def test_exit_codes_end_to_end(tmp_path: Path) -> None:
    """Two runs as is are the same; a run with four times the work per step is a regression."""
    plugin = f"{ROOT / 'tests' / 'helpers' / 'work_models.py'}:WorkModel"
    # 30 steps a process: the gate then catches slowdowns of about 55%, well inside the 4x it must see.
    sweep = ["--models", plugin, "--modes", "eval", "--device", "cpu", "--threads", "1", "--steps", "30", "--no-detailed", "--no-progress",
             *PRICED]  # fmt: skip
    for name, more in (("a", []), ("b", ["--repeat", "2"])):
        assert diagnostics(*sweep, *more, "--out", str(tmp_path / name), work=1).returncode == 0
    # A sweep with --baseline gates in the same command; its run, four times the work, is the slower side below.
    gated = diagnostics(*sweep, "--out", str(tmp_path / "slow"), "--baseline", str(tmp_path / "a"), "--threshold", "50", work=4)
    assert gated.returncode == (3 if _cannot_see(gated.stdout + gated.stderr) else 1), gated.stdout + gated.stderr
    # A wide threshold: this checks the plumbing, not the machine's quiet (benchmarks/RESULTS.md has the rates).
    same = diagnostics("compare", str(tmp_path / "a"), str(tmp_path / "b"), "--threshold", "50", "--json", str(tmp_path / "aa.json"))
    (case,) = json.loads((tmp_path / "aa.json").read_text())["cases"]
    # On a loaded machine a side may be marked, or one process of a side caught a slow spell of the host and
    # the spread hides a slowdown of 4x the threshold: then the gate says it cannot see (3), never "same".
    cannot_see = _cannot_see(same.stdout)
    assert (same.returncode, case["call"]) == ((3, "inconclusive") if cannot_see else (0, "same")), same.stdout + same.stderr
    assert (case["estimate"]["n_base"], case["estimate"]["n_new"]) == (1, 2)  # --repeat 2: two processes
    slower = diagnostics("compare", str(tmp_path / "a"), str(tmp_path / "slow" / "summary.json"), "--threshold", "50")
    expected = (3, "inconclusive") if _cannot_see(slower.stdout) else (1, "slower")  # whatever the ratio
    assert slower.returncode == expected[0], slower.stdout + slower.stderr
    table = [line for line in slower.stdout.splitlines() if "work_model" in line and not line.startswith(("ops that moved", " "))]
    assert [line.split()[0] for line in table] == [expected[1]]
    record = next((tmp_path / "slow" / "runs").glob("*.json"))
    faster = diagnostics("compare", str(record), str(tmp_path / "b"), "--threshold", "50", "--allow-inconclusive")
    calls = [
        line.split()[0] for line in faster.stdout.splitlines() if "work_model" in line and not line.startswith(("ops that moved", " "))
    ]
    assert faster.returncode == 0 and calls == ["inconclusive" if _cannot_see(faster.stdout) else "faster"], faster.stdout
    for bad in (["compare", str(tmp_path / "a"), str(tmp_path / "missing")], ["compare", str(tmp_path / "a")]):
        result = diagnostics(*bad)
        assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr


def _cannot_see(output: str) -> bool:
    """A case's note says its measurement cannot see 4x the threshold (a side's marks stand beside the call)."""
    return "it catches only slowdowns of" in output


def test_the_comparison_table_is_pinned() -> None:
    base = side(row("slow", [10.0] * 3), row("flat", [2.0] * 3), row("gone", [1.0]))
    new = side(row("slow", [11.0] * 3, batch_size=8), row("flat", [2.0] * 3, verdict="mixed"), row("added", [1.0]))
    comparison = compare(base, new)
    text = render_comparison(comparison).splitlines()
    assert text[:4] == [
        "base: side",
        "new:  side",
        "4 cases: 1 slower, 1 verdict changed, 1 only in base, 1 only in new",
        "catches: slowdowns of 7.2% or more, 9 times in 10, in the median case",
    ]
    header, rule, *rows = text[5:11]
    assert header.split() == ["call", "model", "mode", "base", "ms", "new", "ms", "new/base", "95%", "interval", "n", "catches"]
    assert rows[0].split() == ["slower", "slow", "train", "10.0", "11.0", "1.100", "1.065", "to", "1.136", "3/3", "7.2%"]
    assert rows[1].split() == ["verdict", "changed", "flat", "train", "2.00", "2.00", "1.000", "0.969", "to", "1.033", "3/3", "7.2%"]
    assert rows[2].split() == ["only", "in", "base", "gone", "train", "1.00"]
    assert rows[3].split() == ["only", "in", "new", "added", "train", "1.00"]
    notes = text[text.index("notes:") + 1 : text.index("notes:") + 3]
    assert notes == ["  slow train cpu: batch size 4 -> 8", "  flat train cpu: verdict compute-bound -> mixed"]
    assert "past the 5% threshold" in "\n".join(text)
    every = render_comparison(comparison, ["all"]).splitlines()  # --columns all: the whole table, its notes in it
    assert every[5].split()[-2:] == ["verdict", "note"] and "notes:" not in every
    assert render_comparison(comparison, ["model", "ratio"]).splitlines()[5].split() == ["model", "new/base"]


def test_the_comparison_fits_120_columns_whatever_its_notes_and_names(monkeypatch: pytest.MonkeyPatch) -> None:
    """A log has no terminal: 120 columns. Long model names, marks and the machine's drift all wrap or sit under the table."""
    monkeypatch.setenv("COLUMNS", "120")  # a log's width, where no terminal says its own
    long_name = "fasterrcnn_mobilenet_v3_large_fpn"
    base = side(priced(A, model=long_name), row("m", [10.0] * 3), row("n", [10.0]))
    new = side(priced(A_AGAIN, drift=1.087, model=long_name), row("m", [10.0] * 3, batch_size=8), row("n", [10.0], verdict="mixed"))
    text = render_comparison(compare(base, new))
    assert "the machine itself ran 8.7% slower" in text.replace("\n ", " ").replace("  ", " ")
    assert max(map(len, text.splitlines())) <= 120, max(text.splitlines(), key=len)


def test_to_dict_and_repr_carry_the_calls() -> None:
    comparison = compare(side(row("slow", [10.0] * 3)), side(row("slow", [12.0] * 3)))
    data = comparison.to_dict()
    assert data["exit_status"] == 1 and data["counts"] == {"slower": 1}
    assert data["cases"][0]["estimate"]["ratio"] == pytest.approx(1.2)
    assert repr(comparison) == "Comparison(side -> side: 1 slower)"
    assert repr(comparison.counts()) == "{'slower': 1}"  # words, as printed, not the enum's repr


# Exact figures at each boundary of the statistics and of each call (benchmarks/mutation.py holds them to it).
H1 = 1.96 * PROCESS_NOISE_FLOOR * math.sqrt(1 / 1 + 1 / 1)  # the floor's half-width, one process a side


@pytest.mark.parametrize(
    ("df", "quantile"),
    [
        (-1, 1.96),
        (0, 1.96),
        (1, 12.706),
        (2, 4.303),
        (5, 2.571),
        (11, 2.228),
        (12, 2.179),
        (29, 2.06),
        (30, 2.042),
        (31, 1.96),
        (100, 1.96),
    ],
)
def test_t95_reads_the_table_at_or_below_df_and_the_normal_beyond_30(df: int, quantile: float) -> None:
    assert t95(df) == quantile


@pytest.mark.parametrize(("base", "new"), [([], [1.0]), ([1.0], []), ([], []), ([1.0], [0.0]), ([0.0, 1.0], [1.0]), ([1.0], [-1.0])])
def test_ratio_interval_needs_a_positive_time_on_each_side(base: list[float], new: list[float]) -> None:
    with pytest.raises(ValueError, match=r"^each side needs at least one positive step time$"):
        ratio_interval(base, new)


def test_step_times_under_one_are_measured() -> None:
    assert ratio_interval([0.5], [0.25]).ratio == pytest.approx(0.5)


def test_groups_of_two_processes_give_a_spread_and_groups_of_one_none() -> None:
    estimate = ratio_interval([10.0, 12.0], [10.0, 12.0])
    assert estimate.spread == pytest.approx(math.log(1.2) / math.sqrt(2))  # one df a side, pooled
    assert ratio_interval([10.0], [12.0]).spread == PROCESS_NOISE_FLOOR


def test_a_spread_equal_to_the_floor_is_the_samples_own_and_uses_students_t() -> None:
    base = new = [10.0, 12.0, 8.0]
    observed = ratio_interval(base, new, noise_floor=0.0).spread
    estimate = ratio_interval(base, new, noise_floor=observed)
    assert math.log(estimate.high) == pytest.approx(t95(4) * observed * math.sqrt(2 / 3))


def ok(
    model: str = "m",
    medians: tuple[float, ...] = (),
    step_ms: float | None = None,
    windows: tuple[tuple[float, ...], ...] = (),
    verdict: str | None = "compute-bound",
    **fields: object,
) -> CaseResult:
    """An ok row with exactly the figures given: per-process medians, a step time, window medians, a verdict."""
    return CaseResult(
        model=model,
        mode="train",
        device="cpu",
        status="ok",
        step_time=None if step_ms is None else StepTime(step_ms, 0.1, step_ms, 10),
        dispatch=None if verdict is None else Dispatch(verdict, 0.1, 10, 1, 1),
        samples=Samples(medians, windows),
        **{"batch_size": 4, **fields},
    )


def ended(status: str, error: str | None = None, model: str = "m") -> CaseResult:
    return CaseResult(model=model, mode="train", device="cpu", status=status, batch_size=4, error=error)


def call(base: CaseResult, new: CaseResult, threshold_pct: float = 5.0):
    return compare_rows(base, new, threshold_pct, ENV, ENV)


@pytest.mark.parametrize(
    ("base", "new", "called", "notes"),
    [
        (ended("ok"), ended("failed", "boom"), "new failure", ("boom",)),
        (ended("skipped"), ended("timeout"), "new failure", ("timeout",)),  # no error: the status says it
        (ended("timeout"), ended("failed", "boom"), "not compared", ("timeout -> failed",)),
        (ended("failed", "a"), ended("failed", "b"), "same", ()),
        (ended("failed"), ended("ok"), "fixed", ()),
        (ended("skipped"), ended("skipped"), "same", ()),
        (ended("skipped"), ended("ok"), "not compared", ("skipped -> ok",)),
        (ended("failed"), ended("skipped"), "not compared", ("failed -> skipped",)),
    ],
)
def test_each_call_of_a_case_that_did_not_end_ok_on_both_sides(base: CaseResult, new: CaseResult, called: str, notes: tuple) -> None:
    case = call(base, new)
    assert (case.call, case.notes, case.estimate) == (called, notes, None)
    assert (case.model, case.base_status, case.new_status) == ("m", base.status, new.status)


def test_step_time_stands_in_for_missing_process_medians_and_neither_is_not_compared() -> None:
    case = call(ok(step_ms=10.0), ok(step_ms=20.0))
    assert case.call == "slower" and case.estimate.ratio == pytest.approx(2.0) and (case.base_ms, case.new_ms) == (10.0, 20.0)
    for base, new in ((ok(step_ms=10.0), ok()), (ok(), ok(step_ms=10.0)), (ok(), ok())):
        case = call(base, new)
        assert (case.call, case.notes, case.estimate, case.model) == ("not compared", ("no step times",), None, "m")
        assert (case.base_status, case.new_status) == ("ok", "ok")
    assert call(ok(step_ms=10.0, batch_size=8), ok()).notes == ("batch size 8 -> 4", "no step times")


def test_the_window_spread_of_both_sides_sets_the_floor() -> None:
    # Base's two windows 20% apart, new's agreeing: pooled over both sides, one df each.
    case = call(ok(medians=(10.0,), windows=((10.0, 12.0),)), ok(medians=(10.0,), windows=((10.0, 10.0),)))
    assert case.estimate.spread == pytest.approx(math.log(1.2) / 2)
    case = call(ok(medians=(10.0,), windows=((10.0, 10.0),)), ok(medians=(10.0,), windows=((12.0, 10.0),)))
    assert case.estimate.spread == pytest.approx(math.log(1.2) / 2)


def test_a_ratio_exactly_at_the_threshold_is_not_past_it() -> None:
    at = call(ok(medians=(1.0,)), ok(medians=(2.0,)), threshold_pct=100)
    assert at.estimate.ratio == 2.0 and at.estimate.low > 1.0
    assert (at.call, at.notes) == ("same", ())
    assert call(ok(medians=(2.0,)), ok(medians=(1.0,)), threshold_pct=100).estimate.ratio == 0.5
    assert call(ok(medians=(2.0,)), ok(medians=(1.0,)), threshold_pct=100).call == "same"
    # Just inside 5%, though the interval excludes 1.
    assert call(ok(medians=(10.0,) * 3), ok(medians=(10.497,) * 3)).call == "same"


def test_an_interval_touching_one_is_within_noise() -> None:
    slower = call(ok(medians=(1.0,)), ok(medians=(math.exp(H1),)))
    assert slower.estimate.low == 1.0 and slower.estimate.ratio > 1.05
    # 5.7% is close to the 5% threshold: it takes many processes to tell apart
    settle = (
        "past the threshold but within noise: 30 processes a side would settle a change this size (--repeat 30, or 30 turns and --pool)"
    )
    assert (slower.call, slower.notes) == ("same", (settle,))
    faster = call(ok(medians=(1.0,)), ok(medians=(math.exp(-H1),)))
    assert faster.estimate.high == 1.0 and faster.estimate.ratio < 1 / 1.05
    assert (faster.call, faster.notes) == ("same", (settle,))
    assert call(ok(medians=(1.0,)), ok(medians=(0.95,))).call == "same"  # past 5% faster, but the interval reaches 1.004
    wide = call(ok(medians=(10.0, 8.0, 12.0)), ok(medians=(11.0, 8.8, 13.2)))  # 10% slower, processes 40% apart
    # What would decide it at all takes the place of what would settle a change this size.
    assert wide.call == "inconclusive" and wide.notes[0].startswith("it catches only slowdowns of ")
    assert wide.notes[0].endswith("(4x the threshold is 20%): --repeat 27 a side would decide it") and wide.processes_to_decide == 27
    assert wide.notes[1:] == ("both sides are marked: noisy: processes 40% apart",)


def test_what_a_comparison_catches_follows_from_its_spread_and_processes() -> None:
    # Worked by hand at the 2% floor, one process a side: the interval's half-width 1.96 * 0.02 * sqrt(2) = 0.0554
    # passes the threshold's log(1.05) = 0.0488, and 1.2816 standard errors (0.0363) beyond it make 9.60%.
    one = call(ok(medians=(10.0,)), ok(medians=(10.0,)))
    assert one.detectable_pct == pytest.approx(9.602, abs=0.001)
    # Three a side: the threshold decides (a half-width of 0.032), and 0.0488 + 1.2816 * 0.0163 make 7.22%.
    three = call(ok(medians=(10.0,) * 3), ok(medians=(10.0,) * 3))
    assert three.detectable_pct == pytest.approx(7.221, abs=0.001)
    assert compare(side(row("a", [10.0] * 3), row("b", [10.0])), side(row("a", [10.0] * 3), row("b", [10.0]))).detectable_pct == (
        pytest.approx((7.221 + 9.602) / 2, abs=0.001)
    )


def test_the_processes_that_settle_a_change_are_the_fewest_that_catch_it() -> None:
    assert processes_needed(0.02, 1.10, 5.0) == 1  # 9.60% caught with one process a side
    assert processes_needed(0.02, 1.09, 5.0) == 2
    assert processes_needed(0.02, 1 / 1.09, 5.0) == 2  # a speed-up alike
    assert processes_needed(0.02, 1.06, 5.0) == 15  # near the threshold: 0.0488 + 1.2816 * 0.02 * sqrt(2 / n) <= 0.0583
    assert processes_needed(0.20, 1.10, 5.0) is None


@pytest.mark.parametrize(("sigma", "n", "floor"), [(0.02, 5, 0.02), (0.04, 3, 0.0), (0.05, 8, 0.0)])
def test_a_slowdown_of_the_size_a_comparison_catches_is_called_9_times_in_10(sigma: float, n: int, floor: float) -> None:
    """Processes drawn with a known spread: at a floor taken as known, and estimated from the sample (Student's t)."""
    df = 0 if floor else 2 * n - 2
    size = RatioEstimate(1.0, 1.0, math.exp(t95(df) * sigma * math.sqrt(2 / n)), sigma, n, n, df).detectable_pct(5.0)
    rng = random.Random(n)
    draws = 2000
    called = 0
    for _ in range(draws):
        base = [math.exp(rng.gauss(0, sigma)) for _ in range(n)]
        new = [(1 + size / 100) * math.exp(rng.gauss(0, sigma)) for _ in range(n)]
        estimate = ratio_interval(base, new, noise_floor=floor)
        called += estimate.ratio > 1.05 and estimate.low > 1.0
    assert 0.86 <= called / draws <= 0.94


def test_a_verdict_that_changes_is_noted_on_a_slower_or_faster_case_and_called_otherwise() -> None:
    slower = call(ok(medians=(10.0,) * 3), ok(medians=(12.0,) * 3, verdict="mixed"))
    assert (slower.call, slower.notes) == ("slower", ("verdict compute-bound -> mixed",))
    faster = call(ok(medians=(10.0,) * 3, verdict=None), ok(medians=(8.0,) * 3))
    assert (faster.call, faster.notes) == ("faster", ("verdict None -> compute-bound",))
    assert call(ok(medians=(10.0,) * 3), ok(medians=(12.0,) * 3)).notes == ()
    changed = call(ok(medians=(10.0,)), ok(medians=(10.0,), verdict="mixed"))
    assert (changed.call, changed.notes) == ("verdict changed", ())
    assert (changed.base_verdict, changed.new_verdict) == ("compute-bound", "mixed")


def test_the_threshold_must_be_zero_or_more() -> None:
    base, new = side(row("m", [10.0] * 3)), side(row("m", [10.4] * 3))
    assert compare(base, new, threshold_pct=0).cases[0].call == "slower"
    assert compare(base, new, threshold_pct=0.5).cases[0].call == "slower"
    for bad in (-1.0, float("nan")):
        with pytest.raises(ValueError, match=rf"^threshold must be a percentage of 0 or more, got {bad}$"):
            compare(base, new, threshold_pct=bad)


def test_compare_reads_either_side_from_a_path(tmp_path: Path) -> None:
    (tmp_path / "summary.json").write_text(dumps(side(row("m", [10.0])).to_dict()))
    comparison = compare(str(tmp_path), side(row("m", [12.0])))
    assert (comparison.base, comparison.cases[0].call) == (str(tmp_path / "summary.json"), "slower")
    comparison = compare(side(row("m", [12.0])), tmp_path / "summary.json")
    assert (comparison.new, comparison.cases[0].call) == (str(tmp_path / "summary.json"), "faster")


def test_cases_sort_by_model_ignoring_case_then_mode_device_and_variant() -> None:
    keys = [("b", "eval", "cpu"), ("_m", "eval", "cpu"), ("A", "train", "cpu"), ("a", "eval", "cuda"), ("a", "eval", "cpu")]
    rows = [CaseResult(model=m, mode=mode, device=d, status="ok", step_time=StepTime(1.0, 0.1, 1.0, 10)) for m, mode, d in keys]
    rows.append(dataclasses.replace(rows[-1], variant="inductor"))
    comparison = compare(side(*rows), side(*rows))
    assert [case.key for case in comparison.cases] == [
        ("_m", "eval", "cpu", "eager"),
        ("a", "eval", "cpu", "eager"),
        ("a", "eval", "cpu", "inductor"),
        ("a", "eval", "cuda", "eager"),
        ("A", "train", "cpu", "eager"),
        ("b", "eval", "cpu", "eager"),
    ]


def test_cases_on_one_side_only_keep_that_sides_status_and_step_time() -> None:
    base = side(row("both", [1.0]), row("gone", [2.0]), ended("failed", "x", model="broke"))
    new = side(row("both", [1.0]), row("added", [3.0], verdict="mixed"), ended("timeout", model="hung"))
    cases = {case.model: case for case in compare(base, new).cases}
    assert (cases["gone"].call, cases["gone"].base_ms, cases["gone"].base_status, cases["gone"].base_verdict) == (
        "only in base",
        2.0,
        "ok",
        "compute-bound",
    )
    assert (cases["gone"].new_ms, cases["gone"].new_status, cases["gone"].new_verdict) == (None, None, None)
    assert (cases["added"].call, cases["added"].new_ms, cases["added"].new_status, cases["added"].new_verdict) == (
        "only in new",
        3.0,
        "ok",
        "mixed",
    )
    assert (cases["added"].base_ms, cases["added"].base_status) == (None, None)
    assert (cases["broke"].call, cases["broke"].base_ms, cases["broke"].base_status) == ("only in base", None, "failed")
    assert (cases["hung"].call, cases["hung"].new_ms, cases["hung"].new_status) == ("only in new", None, "timeout")


def test_the_environment_notes_name_both_hosts_and_both_torch_versions() -> None:
    comparison = compare(side(row("m", [10.0])), side(row("m", [10.0]), env={**ENV, "host": "b", "torch": "2.15"}))
    assert comparison.notes == (
        "the two sides ran on different machines (box, b): read changes as between machines, not only between code",
        "torch 2.14.1 -> 2.15",
    )
    threads = compare(side(row("m", [10.0]), env={**ENV, "threads": 2}), side(row("m", [10.0]), env={**ENV, "threads": 1}))
    assert threads.notes == ("torch intra-op threads 2 -> 1: step times at another thread count are not like for like",)
    assert threads.cases[0].notes == ("threads 2 -> 1",)
    assert compare(side(row("m", [10.0])), side(row("m", [10.0]), env={**ENV, "threads": 1})).notes == ()  # one side unrecorded
    small_pages = "glibc malloc keeps freed memory (no mmap, no trim)"
    huge_pages = f"{small_pages}; tensors of 2 MB or more in transparent huge pages"
    settings = compare(
        side(row("m", [10.0]), env={**ENV, "malloc": small_pages}), side(row("m", [10.0]), env={**ENV, "malloc": huge_pages})
    )
    assert settings.notes == (f"the processes' memory settings differ: {small_pages} -> {huge_pages}",)
    assert compare(side(row("m", [10.0])), side(row("m", [10.0]), env={**ENV, "malloc": huge_pages})).notes == ()  # one side unrecorded


def test_comparison_to_dict_has_the_pinned_keys_and_counts_each_call() -> None:
    base = side(row("a", [10.0] * 3), row("b", [10.0] * 3), row("c", [10.0] * 3))
    new = side(row("a", [10.0] * 3), row("b", [10.0] * 3), row("c", [12.0] * 3), env={**ENV, "torch": "2.15"})
    comparison = compare(base, new, threshold_pct=5)
    assert comparison.to_dict() == {
        "base": "side",
        "new": "side",
        "threshold_pct": 5,
        "instructions_threshold_pct": 1.0,
        "confidence": 0.95,
        "process_noise_floor": PROCESS_NOISE_FLOOR,
        "run_noise": None,
        "calibration_drift": None,  # torch versions differ: their prices differ by more than the machine
        "detectable_pct": pytest.approx(7.2206, abs=1e-4),
        "counts": {"slower": 1, "same": 2},
        "exit_status": 1,
        "notes": ["torch 2.14.1 -> 2.15"],
        "cases": [case.to_dict() for case in comparison.cases],
    }
    assert repr(comparison) == "Comparison(side -> side: 1 slower, 2 same)"
    assert repr(Comparison("a", "b", 5.0, ())) == "Comparison(a -> b: nothing compared)"
    assert Comparison("a", "b", 5.0, ()).to_dict()["counts"] == {}


def test_case_to_dict_has_every_field_and_its_notes_as_a_list() -> None:
    case = call(ok(medians=(10.0,)), ok(medians=(10.0,), batch_size=8))
    data = case.to_dict()
    assert set(data) == {field.name for field in dataclasses.fields(CaseComparison)}
    assert data["notes"] == ["batch size 4 -> 8"] and isinstance(data["notes"], list)
    assert data["estimate"]["ratio"] == 1.0 and data["call"] == "same"


def test_the_comparison_table_shows_a_left_aligned_variant_column_after_the_device_and_closes_with_how_to_read_it() -> None:
    rows = (row("m", [10.0]), dataclasses.replace(row("m", [10.0]), variant="inductor"))
    text = render_comparison(compare(side(*rows), side(*rows), threshold_pct=2.5))
    header, _, first, second = text.split("\n\n")[1].splitlines()
    assert header.split()[:5] == ["call", "model", "mode", "variant", "base"]
    start = header.index("variant")
    assert first[start:].startswith("eager ") and second[start:].startswith("inductor ")  # left-aligned under its header
    legend = (
        "new/base: ratio of median step times (per-process medians, geometric mean), with its 95% interval; "
        "n: processes per side; catches: the smallest slowdown a comparison measured alike calls slower 9 times in 10.\n"
        "slower/faster: past the 2.5% threshold and outside noise "
        "(the interval excludes 1); same: within the threshold or within noise; inconclusive: the case cannot see "
        "a slowdown of 4x the threshold, or the machine's own drift could explain it (a side's marks are noted beside the call).\n"
    )
    assert text.split("\n\n")[2].split() == legend.split()  # wrapped at the terminal's width
    assert "variant" not in render_comparison(compare(side(rows[0]), side(rows[0]))).split("\n\n")[1].splitlines()[0]


def test_a_case_record_is_flat_with_the_estimate_as_columns_and_the_notes_as_one_string() -> None:
    slower = call(ok(medians=(10.0,) * 3), ok(medians=(12.0,) * 3, verdict="mixed", batch_size=8))
    record = slower.record()
    flat = {field.name for field in dataclasses.fields(CaseComparison)} - {"estimate", "ops", "instructions", "op_events"}
    assert set(record) == flat | {"ratio", "low", "high", "instructions_change_pct"}
    assert (record["ratio"], record["low"], record["high"]) == (slower.estimate.ratio, slower.estimate.low, slower.estimate.high)
    assert record["notes"] == "batch size 4 -> 8; verdict compute-bound -> mixed" and record["call"] == "slower"
    unmeasured = call(ok(), ok()).record()
    assert (unmeasured["ratio"], unmeasured["low"], unmeasured["high"], unmeasured["notes"]) == (None, None, None, "no step times")


def test_a_comparison_shows_in_a_notebook_and_as_a_dataframe() -> None:
    comparison = compare(side(row("slow", [10.0] * 3), row("flat", [2.0])), side(row("slow", [12.0] * 3), row("flat", [2.0])))
    shown = comparison._repr_html_()
    assert shown.startswith("<style>.tb-report") and "1 slower, 1 same" in shown and 'href="#' in shown
    frame = comparison.to_dataframe()
    assert list(frame["model"]) == ["slow", "flat"] and list(frame["call"]) == ["slower", "same"]
    assert frame["ratio"].iloc[0] == pytest.approx(1.2)


# -- the noise between two runs, from all their cases ------------------------------------------


def _spread_ratios(n: int, half_width: float) -> list[float]:
    """n ratios alternating exp(+-half_width): their log MAD about the median is half_width."""
    return [math.exp(half_width if i % 2 else -half_width) for i in range(n)]


def test_run_noise_is_the_robust_spread_of_the_cases_log_ratios_per_process() -> None:
    ratios = _spread_ratios(11, 0.05)  # median +0.05 (6 of 11), absolute deviations: 5 of 0.1, 6 of 0
    sides = [([10.0], [10.0 * r]) for r in ratios]
    assert run_noise(sides) == pytest.approx(0.0)  # more than half sit at the median
    ratios = _spread_ratios(12, 0.05)  # median 0: every deviation is 0.05
    one_a_side = run_noise([([10.0], [10.0 * r]) for r in ratios])
    assert one_a_side == pytest.approx(1.4826 * 0.05 / math.sqrt(2))
    three_a_side = run_noise([([10.0] * 3, [10.0 * r] * 3) for r in ratios])  # the same ratios, from 3 processes
    assert three_a_side == pytest.approx(1.4826 * 0.05 / math.sqrt(2 / 3))


def test_run_noise_ignores_a_few_real_changes_and_a_change_that_moved_every_case() -> None:
    ratios = [math.exp(-0.03 + 0.06 * i / 19) for i in range(20)]  # evenly spread, 3% either way
    quiet = run_noise([([10.0], [10.0 * r]) for r in ratios])
    changed = [r * (1.5 if i % 10 == 0 else 1.0) for i, r in enumerate(ratios)]  # 2 of 20 got 50% slower
    assert run_noise([([10.0], [10.0 * r]) for r in changed]) == pytest.approx(quiet, rel=0.15)
    sd = statistics.stdev(math.log(r) for r in changed) / math.sqrt(2)
    assert sd > 4 * quiet  # what a plain standard deviation would have made of them
    assert run_noise([([10.0], [12.0 * r]) for r in ratios]) == pytest.approx(quiet)


def test_run_noise_needs_enough_cases() -> None:
    sides = [([10.0], [10.0 * r]) for r in _spread_ratios(RUN_NOISE_MIN_CASES - 1, 0.1)]
    assert run_noise(sides) is None
    assert run_noise([*sides, ([10.0], [10.0])]) is not None


def _even_ratios(n: int, width: float) -> list[float]:
    """n log ratios evenly spread over [-width, width]: their median absolute deviation is about width / 2."""
    return [math.exp(-width + 2 * width * i / (n - 1)) for i in range(n)]


def _runs(ratios: list[float], changed: float) -> tuple[Summary, Summary]:
    base = side(*[row(f"m{i}", [10.0]) for i in range(len(ratios))], row("changed", [10.0]))
    new = side(*[row(f"m{i}", [10.0 * r]) for i, r in enumerate(ratios)], row("changed", [10.0 * changed]))
    return base, new


def test_a_slowdown_within_noisy_runs_noise_is_not_called_and_the_comparison_says_why() -> None:
    base, new = _runs(_even_ratios(12, 0.16), 1.12)  # cases up to 16% either way: 12% does not stand out
    comparison = compare(base, new)
    assert comparison.run_noise == pytest.approx(1.4826 * 0.08 / math.sqrt(2), rel=0.1)
    assert {case.call for case in comparison.cases} == {"inconclusive"}  # a gate this noisy cannot say "same"
    assert comparison.exit_status == 3
    assert (
        f"noisy runs: the cases' ratios spread {100 * comparison.run_noise:.1f}% per process (over the 2% floor), so each "
        "case is called against that spread (see each case's 'catches')"
    ) in comparison.notes
    assert comparison.to_dict()["run_noise"] == comparison.run_noise


def test_the_same_slowdown_among_quiet_runs_is_called() -> None:
    base, new = _runs(_even_ratios(12, 0.01), 1.12)
    comparison = compare(base, new)
    assert comparison.run_noise < PROCESS_NOISE_FLOOR
    assert [case.model for case in comparison.regressions] == ["changed"]
    assert not any(note.startswith("noisy runs") for note in comparison.notes)


def test_compare_rows_takes_the_run_noise_as_a_floor() -> None:
    base, new = row("m", [10.0]), row("m", [11.2])
    assert compare_rows(base, new, 5.0, ENV, ENV).call == "slower"
    called = compare_rows(base, new, 5.0, ENV, ENV, Between(noise=0.05))
    assert called.call == "inconclusive" and called.estimate.spread == 0.05  # within noise this wide, "same" says nothing


def test_compare_pool_reads_each_side_as_all_its_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Base and change took turns; a load spell hit only the change's second run: the latest runs alone call it
    10% slower, all the runs pooled call it the same."""
    from torchbenchmark.cli import main
    from torchbenchmark.run.outdir import write_record

    turns = (("base", 10.0), ("new", 10.0), ("base", 10.0), ("new", 11.0))
    for turn, (folder, ms) in enumerate(turns):
        write_record(tmp_path / folder, RunRecord(f"20260101T00000{turn}.000000Z-aaaa", ENV, None, (row("m", [ms]),), state="complete"))
    base, new = str(tmp_path / "base"), str(tmp_path / "new")
    assert main(["compare", base, new]) == 1
    assert main(["compare", "--pool", base, new, "--json", str(tmp_path / "pooled.json")]) == 3
    (case,) = json.loads((tmp_path / "pooled.json").read_text())["cases"]
    assert case["call"] == "inconclusive" and (case["estimate"]["n_base"], case["estimate"]["n_new"]) == (2, 2)
    assert case["new_ms"] == 10.5
    capsys.readouterr()
    record = next((tmp_path / "new" / "runs").glob("*.json"))
    assert main(["compare", "--pool", base, str(record)]) == 2
    assert "pooling needs an output folder with run records" in capsys.readouterr().err


# -- the counts' tier: instructions per step beside the wall time ------------------------------------


def counted(per_step: float | None, spread_pct: float | None = 0.05, reason: str | None = None) -> Instructions:
    return Instructions(per_step=per_step, spread_pct=spread_pct, steps=None if per_step is None else 5, reason=reason)


def test_ops_added_call_a_change_below_the_threshold_that_the_counts_noise_cannot_hide() -> None:
    """1% more ops moves the instructions by less than 1%: past their noise, with the ops moved the same way, it is called."""
    ops = Dispatch("dispatch-bound", 0.9, 300, 1, 1, events_per_step={"call": 300.0})
    more = dataclasses.replace(ops, ops_per_step=303, events_per_step={"call": 303.0})
    added = call(row("m", [10.0], instructions=counted(1e6), dispatch=ops), row("m", [10.0], instructions=counted(1.007e6), dispatch=more))
    assert (added.call, added.reason, added.counts_call) == ("slower", "instructions", "slower")
    alone = call(row("m", [10.0], instructions=counted(1e6), dispatch=ops), row("m", [10.0], instructions=counted(1.007e6), dispatch=ops))
    assert alone.call == "same"  # no op moved: 0.7% is under the 1% threshold
    noisy = call(
        row("m", [10.0], instructions=counted(1e6, 0.5), dispatch=ops), row("m", [10.0], instructions=counted(1.007e6, 0.5), dispatch=more)
    )
    assert noisy.call == "same"  # within the two sides' spread (1%), ops or not


def test_instructions_past_the_threshold_call_a_case_time_calls_the_same_slower_by_instructions() -> None:
    case = call(row("m", [10.0], instructions=counted(1_000_000)), row("m", [10.0], instructions=counted(1_013_500)))
    assert (case.call, case.reason, case.wall_call, case.counts_call) == ("slower", "instructions", "same", "slower")
    assert case.instructions.change_pct == pytest.approx(1.35) and case.instructions.noise_pct == pytest.approx(0.1)
    faster = call(row("m", [10.0], instructions=counted(1_000_000)), row("m", [10.0], instructions=counted(980_000)))
    assert (faster.call, faster.reason, faster.counts_call) == ("faster", "instructions", "faster")


def test_a_change_within_the_counts_own_spread_or_under_the_threshold_is_not_called() -> None:
    spread = call(row("m", [10.0], instructions=counted(1_000_000, 1.0)), row("m", [10.0], instructions=counted(1_015_000, 1.0)))
    assert (spread.call, spread.counts_call, spread.instructions.noise_pct) == ("same", "same", 2.0)  # 1.5%, within 1% + 1%
    under = call(row("m", [10.0], instructions=counted(1_000_000)), row("m", [10.0], instructions=counted(1_009_000)))
    assert (under.call, under.counts_call) == ("same", "same")
    wider = compare(
        side(row("m", [10.0], instructions=counted(1e6))),
        side(row("m", [10.0], instructions=counted(1.0135e6))),
        instructions_threshold_pct=2.0,
    )
    assert (wider.cases[0].call, wider.instructions_threshold_pct) == ("same", 2.0)


def test_same_counts_decide_a_case_time_cannot_see_and_two_runs_alike_exit_0() -> None:
    """A-A on a noisy machine: wall time cannot see 4x the threshold, the counts agree: same, not inconclusive."""
    noisy = Samples((10.0,), ((10.0, 14.0),))
    base = side(row("m", [10.0], instructions=counted(24_285_536), samples=noisy), row("other", [1.0]))
    new = side(row("m", [10.0], instructions=counted(24_298_354), samples=noisy), row("other", [1.0]))
    comparison = compare(base, new)
    case = next(case for case in comparison.cases if case.model == "m")
    assert (case.call, case.wall_call, case.counts_call, case.reason) == ("same", "inconclusive", "same", "instructions")
    assert case.instructions.change_pct == pytest.approx(0.0528, abs=1e-4)  # two runs of the same code, 0.05% apart
    assert comparison.exit_status == 0 and comparison.regressions == () and comparison.inconclusive == ()
    assert comparison.notes == ("1 case whose wall time was inconclusive called by instructions",)


def test_counts_decide_a_counted_case_its_wall_time_call_beside_and_a_case_without_counts_is_called_by_time() -> None:
    """Two runs whose wall times differ by 20% while their instructions do not: the load moved, the code did not."""
    aa = call(row("m", [10.0] * 3, instructions=counted(1e6)), row("m", [12.0] * 3, instructions=counted(1.0001e6)))
    assert (aa.call, aa.reason, aa.wall_call, aa.counts_call) == ("same", "instructions", "slower", "same")
    fewer = call(row("m", [10.0] * 3, instructions=counted(1e6)), row("m", [12.0] * 3, instructions=counted(0.98e6)))
    assert (fewer.call, fewer.reason, fewer.wall_call) == ("faster", "instructions", "slower")
    timed = call(row("m", [10.0] * 3), row("m", [8.0] * 3))
    assert (timed.call, timed.reason) == ("faster", "wall time")
    uncounted = call(row("m", [10.0], instructions=counted(1e6)), row("m", [10.0], instructions=counted(None, None, "no valgrind")))
    assert (uncounted.call, uncounted.counts_call, uncounted.instructions, uncounted.reason) == ("same", None, None, "wall time")
    elsewhere = dataclasses.replace(counted(1.1e6), method="perf")
    assert call(row("m", [10.0], instructions=counted(1e6)), row("m", [10.0], instructions=elsewhere)).counts_call is None
    failed = call(row("m", [10.0], instructions=counted(1e6)), row("m", [], status="failed"))
    assert (failed.call, failed.reason, failed.wall_call) == ("new failure", None, None)


def test_the_table_shows_both_tiers_calls_only_where_a_case_was_counted() -> None:
    base = side(row("m", [10.0], instructions=counted(1e6)), row("n", [10.0]))
    new = side(row("m", [10.0], instructions=counted(1.0135e6)), row("n", [10.0]))
    text = render_comparison(compare(base, new))
    header, _, first, second = text.split("\n\n")[1].splitlines()
    assert header.split()[:8] == ["call", "by", "time", "by", "instructions", "model", "mode", "base"]
    assert first.split()[:5] == ["slower", "same", "slower", "+1.35%", "m"]
    assert second.split()[:3] == ["same", "same", "n"]
    assert "past the 1% instructions threshold and both sides' spread" in " ".join(text.split("\n\n")[2].split())
    assert "by instructions" not in render_comparison(compare(side(row("n", [10.0])), side(row("n", [10.0]))))


def test_an_instructions_regression_exits_1_through_the_cli_and_its_json_says_by_which_tier(tmp_path: Path) -> None:
    from torchbenchmark.cli import main

    for folder, per_step in (("base", 1_000_000), ("new", 1_013_500)):
        record = RunRecord(f"20260101T000000.000000Z-{folder}", ENV, None, (row("m", [10.0], instructions=counted(per_step)),))
        (tmp_path / f"{folder}.json").write_text(dumps(record.to_dict()))
    base, new, document = str(tmp_path / "base.json"), str(tmp_path / "new.json"), tmp_path / "c.json"
    assert main(["compare", base, new, "--json", str(document)]) == 1
    data = json.loads(document.read_text())
    (case,) = data["cases"]
    assert (case["call"], case["reason"], case["wall_call"], case["counts_call"]) == ("slower", "instructions", "same", "slower")
    assert case["instructions"]["change_pct"] == pytest.approx(1.35) and data["instructions_threshold_pct"] == 1.0
    assert main(["compare", base, new, "--instructions-threshold", "2"]) == 0
    assert main(["compare", base, base]) == 0  # the same counts: nothing to call


def test_the_instructions_threshold_must_be_zero_or_more() -> None:
    with pytest.raises(ValueError, match=r"^instructions threshold must be a percentage of 0 or more, got -1.0$"):
        compare(side(row("m", [10.0])), side(row("m", [10.0])), instructions_threshold_pct=-1.0)


# -- op events per step, exact: a change is named ---------------------------------------------------------


def test_op_events_that_moved_beyond_rounding_are_named_on_the_case() -> None:
    def events(call_events: float, ops: float = 10) -> Dispatch:
        return Dispatch("compute-bound", 0.1, ops, 1, 1, events_per_step={"call": call_events, "nested": 40.0})

    moved = call(row("m", [10.0], dispatch=events(300.0)), row("m", [10.0], dispatch=events(303.0, ops=13)))
    assert moved.op_events == {"call": (300.0, 303.0), "ops": (10, 13)}
    assert moved.notes == ("op events per step changed: call 300 -> 303, ops 10 -> 13",) and moved.call == "same"
    rounding = call(row("m", [10.0], dispatch=events(300.0)), row("m", [10.0], dispatch=events(300.4)))
    assert (rounding.op_events, rounding.notes) == ({}, ())


# -- marks beside a call, and what would decide an inconclusive case -------------------------------------


def test_a_mark_on_a_side_whose_spread_still_sees_it_stands_beside_the_call() -> None:
    spread_steps = row("m", [12.0] * 3, step_time=StepTime(12.0, 6.0, 12.0, 10))  # IQR 50% of the median
    case = call(row("m", [10.0] * 3), spread_steps)
    assert case.call == "slower" and case.notes == ("new is marked: IQR 50% of the median",)
    assert compare(side(row("m", [10.0] * 3)), side(spread_steps)).exit_status == 1
    same = call(row("m", [10.0] * 3), dataclasses.replace(spread_steps, samples=Samples((10.0,) * 3, ((10.0, 10.0),) * 3)))
    assert same.call == "same" and same.notes == ("new is marked: IQR 50% of the median",)


def test_processes_apart_mark_the_row_beyond_a_quarter_of_their_median() -> None:
    assert row("m", [10.0, 12.0, 8.0]).untrustworthy_reasons == ("noisy: processes 40% apart",)
    assert row("m", [10.0, 12.5, 10.0]).untrustworthy_reasons == ()  # 25%: at the threshold
    assert row("m", [10.0]).untrustworthy_reasons == () and processes_apart(()) == 0.0


def test_an_inconclusive_case_says_how_many_processes_a_side_would_decide_it() -> None:
    # Windows 20% apart on both sides, one process each: a spread of log(1.2) / sqrt(2) = 0.129 catches only 80.6%.
    # Decided takes (1.96 + 1.2816) x 0.129 x sqrt(2 / n) <= log(1.2): n = 11.
    windows = ((10.0, 12.0),)
    case = call(ok(medians=(10.0,), windows=windows), ok(medians=(10.0,), windows=windows))
    assert case.call == "inconclusive" and case.processes_to_decide == 11
    assert case.processes_to_decide == processes_needed(math.log(1.2) / math.sqrt(2), 1.2, 5.0)
    assert case.notes == ("it catches only slowdowns of 80.6% or more (4x the threshold is 20%): --repeat 11 a side would decide it",)
    eleven = call(ok(medians=(10.0,) * 11, windows=windows * 11), ok(medians=(10.0,) * 11, windows=windows * 11))
    assert (eleven.call, eleven.processes_to_decide) == ("same", None) and eleven.detectable_pct <= 20
    ten = call(ok(medians=(10.0,) * 10, windows=windows * 10), ok(medians=(10.0,) * 10, windows=windows * 10))
    assert (ten.call, ten.processes_to_decide) == ("inconclusive", 11)
    assert compare(side(row("m", [10.0], samples=Samples((10.0,), windows))), side(row("m", [10.0]))).to_dict()["cases"][0][
        "processes_to_decide"
    ] == processes_needed(math.log(1.2) / 2, 1.2, 5.0)


def test_a_spread_the_processes_give_is_judged_with_students_t_at_their_count() -> None:
    # Processes 10% apart on both sides: an estimated spread, so the t quantile of 2n - 2 degrees of freedom.
    wide = call(ok(medians=(10.0, 11.0)), ok(medians=(10.0, 11.0)))
    assert wide.call == "inconclusive" and wide.estimate.df == 2
    n = wide.processes_to_decide
    assert n == processes_needed(wide.estimate.spread, 1.2, 5.0, estimated=True) and n > processes_needed(wide.estimate.spread, 1.2, 5.0)
    estimate = RatioEstimate(
        1.0, 1.0, math.exp(t95(2 * n - 2) * wide.estimate.spread * math.sqrt(2 / n)), wide.estimate.spread, n, n, 2 * n - 2
    )
    assert estimate.detectable_pct(5.0) <= 20


PRICES = {"call_us": 0.70, "nested_us": 0.22, "conv_us": 44.5, "call_gap_us": 0.0}


def priced(medians: list[float], drift: float = 1.0, model: str = "m") -> CaseResult:
    """A row whose calibration ran ``drift`` times as long as ``PRICES`` (a zero price stays zero)."""
    prices = {name: price * drift for name, price in PRICES.items()}
    return row(model, medians, dispatch=Dispatch("compute-bound", 0.1, 10, 1, 1, prices_us=prices))


# Figures of one A-A pair measured beside a CPU hog: the same code, its sweeps a minute apart, the machine 8.7% slower
# for the second by its calibration; and 10% more ops on the same machine 2.6% faster.
A, A_AGAIN, MORE_OPS = [0.342, 0.318, 0.334], [0.374, 0.359, 0.379], [0.374, 0.379, 0.401]


def test_a_slowdown_the_machine_drift_explains_is_inconclusive_and_says_why() -> None:
    assert compare(side(row("m", A)), side(row("m", A_AGAIN))).cases[0].call == "slower"  # no calibration: the false alarm
    comparison = compare(side(priced(A)), side(priced(A_AGAIN, drift=1.087)))
    case = comparison.cases[0]
    assert (case.call, case.wall_call) == ("inconclusive", "inconclusive")
    drifted = [note for note in case.notes if note.startswith("the machine itself ran 8.7% slower for NEW")]
    assert len(drifted) == 1 and "take turns and compare --pool" in drifted[0]
    assert comparison.calibration_drift == pytest.approx(1.087)
    assert comparison.notes[1].startswith("the machine itself ran 8.7% slower for NEW, by the calibration")
    assert comparison.exit_status == 3


def test_a_change_past_the_drift_or_against_it_is_still_called() -> None:
    past = compare(side(priced(A)), side(priced(MORE_OPS, drift=0.974))).cases[0]
    assert past.call == "slower" and not any("machine itself" in note for note in past.notes)
    against = compare(side(priced(A_AGAIN)), side(priced(A, drift=1.087))).cases[0]  # faster while the machine ran slower
    assert against.call == "faster"
    within = compare(side(priced(A_AGAIN)), side(priced(A, drift=0.92))).cases[0]  # faster, and so was the machine
    assert within.call == "inconclusive" and any("ran 8.0% faster for NEW" in note for note in within.notes)


@pytest.mark.parametrize(
    "env, device",
    [({**ENV, "torch": "2.15"}, "cpu"), ({**ENV, "host": "elsewhere"}, "cpu"), (ENV, "cuda")],
    ids=["another torch", "another machine", "a GPU case"],
)
def test_no_drift_is_read_across_torch_versions_or_machines_nor_applied_to_a_gpu_case(env: dict, device: str) -> None:
    base, new = dataclasses.replace(priced(A), device=device), dataclasses.replace(priced(A_AGAIN, drift=1.087), device=device)
    comparison = compare(side(base), side(new, env=env))
    assert comparison.cases[0].wall_call == "slower"
    assert not any("machine itself" in note for note in comparison.notes)


def test_the_drift_is_the_median_case_s_geometric_mean_of_its_prices_ratios() -> None:
    assert calibration_drift([]) is None and calibration_drift([({"a": 0.0}, {"a": 1.0})]) is None
    assert calibration_drift([({"a": 1.0, "b": 4.0}, {"a": 2.0, "b": 2.0})]) == pytest.approx(1.0)  # x2 and x0.5
    cases = [({"a": 1.0}, {"a": 1.1}), ({"a": 1.0}, {"a": 1.2}), ({"a": 1.0}, {"a": 3.0})]
    assert calibration_drift(cases) == pytest.approx(1.2)  # one case's calibration disturbed does not move it


def test_the_drift_reads_no_end_of_the_interval() -> None:
    """The cheapest nested op's price is a residual of some tens of ns: between two processes of one machine it
    read 0.55 to 1.33 times itself, and would have moved a case's drift by up to 12%."""
    ends = {"call_least_us": 0.58, "call_most_us": 0.87, "nested_least_us": 0.06, "nested_most_us": 0.3}
    base = dataclasses.replace(priced(A), dispatch=Dispatch("compute-bound", 0.1, 10, 1, 1, prices_us={**PRICES, **ends}))
    moved = {**PRICES, **ends, "nested_least_us": 0.033}
    new = dataclasses.replace(priced(A), dispatch=Dispatch("compute-bound", 0.1, 10, 1, 1, prices_us=moved))
    assert compare(side(base), side(new)).calibration_drift == pytest.approx(1.0)


def test_a_case_is_held_to_the_drift_its_own_processes_measured_not_the_runs_median() -> None:
    """Figures of an A-A pair beside a CPU hog: the eval case's sweep ran while the machine was 6.7% slower (its
    calibration that much dearer), the train case's while it was 6.3% faster; the runs' median drift is nil."""
    eval_a, eval_again = [0.368, 0.358, 0.358], [0.426, 0.390, 0.393]
    train_a, train_again = [1.889, 2.040, 2.049], [1.955, 1.917, 1.836]
    base = side(priced(eval_a, model="e"), priced(train_a, model="t"))
    new = side(priced(eval_again, drift=1.067, model="e"), priced(train_again, drift=0.937, model="t"))
    comparison = compare(base, new)
    assert comparison.calibration_drift == pytest.approx(math.sqrt(1.067 * 0.937))
    by_model = {case.model: case for case in comparison.cases}
    assert by_model["e"].call == "inconclusive" and any("ran 6.7% slower for NEW" in note for note in by_model["e"].notes)
    assert by_model["t"].call == "same" and comparison.exit_status == 3
