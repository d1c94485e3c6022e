"""Counting a step's instructions under callgrind: the dump parser on real callgrind files, the cost cap, the
reasons a case is not counted, one real count, and a sweep on a machine without valgrind."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.processes import HELPERS, ROOT
from tests.helpers.sweeps import FAST, TINY
from torchbenchmark.measure import instructions
from torchbenchmark.measure.instructions import Dump, Estimate, Request
from torchbenchmark.report.case import instructions_text
from torchbenchmark.report.summary import compact_count, instructions_figure, render_table
from torchbenchmark.results.schema import CaseResult, Instructions, Status
from torchbenchmark.results.spec import CaseSpec, Compile

DATA = ROOT / "tests" / "data"
# Two files of one real run of callgrind 3.19 (valgrind --tool=callgrind --instr-atstart=no --collect-atstart=no
# python -c ...), whose script turned instrumentation on as the child does (instructions._instrument), then
# collection on around `sum(range(3))` alone: the dump it asked for, and the one callgrind wrote at exit.
STEP_DUMP = DATA / "callgrind.out.step"
EXIT_DUMP = DATA / "callgrind.out.exit"
STEP_DUMP_INSTRUCTIONS = 4309  # its summary: and totals: lines
VALGRIND = shutil.which("valgrind")


def nowhere(_: str) -> None:
    return None


# -- the dump parser --------------------------------------------------------------------------------------


def test_a_step_dump_gives_its_part_trigger_and_instructions() -> None:
    dump = instructions.parse_dump(STEP_DUMP.read_text())
    assert dump == Dump(part=1, trigger="Client Request", instructions=STEP_DUMP_INSTRUCTIONS)


def test_the_dump_at_exit_is_told_apart_and_left_out(tmp_path: Path) -> None:
    assert instructions.parse_dump(EXIT_DUMP.read_text()).trigger.startswith("Program termination")
    shutil.copy(STEP_DUMP, tmp_path / "callgrind.out.41.1")
    shutil.copy(EXIT_DUMP, tmp_path / "callgrind.out.41")
    assert instructions.read_dumps(tmp_path) == [STEP_DUMP_INSTRUCTIONS]


def test_dumps_are_read_in_the_order_of_their_parts(tmp_path: Path) -> None:
    for part, count in ((2, 300), (10, 100), (1, 200)):
        text = f"version: 1\npart: {part}\ndesc: Trigger: Client Request: dump\nevents: Ir\nsummary: {count}\n"
        (tmp_path / f"callgrind.out.7.{part}").write_text(text)
    assert instructions.read_dumps(tmp_path) == [200, 300, 100]


def test_the_total_is_the_ir_column_and_a_column_left_off_is_zero() -> None:
    header = "events: Dr Ir Dw\npart: 3\ndesc: Trigger: Client Request: dump\n"
    assert instructions.parse_dump(header + "totals: 5 70 9\n").instructions == 70
    assert instructions.parse_dump(header + "totals: 5\n").instructions == 0


def test_a_file_that_is_not_callgrind_output_is_refused() -> None:
    with pytest.raises(ValueError, match="not a callgrind output file"):
        instructions.parse_dump("events: Dr\ntotals: 4\n")


def test_the_counts_give_the_median_per_step_and_their_spread() -> None:
    counted = instructions.summarise([4000, 4008, 4004, 3996, 4004], steps_each=4)
    assert counted == Instructions(method="callgrind", per_step=1001.0, spread_pct=round(100 * 12 / 4004, 4), steps=20)
    assert instructions.summarise([]).reason == "not counted: callgrind counted no instructions in 0 counts"
    assert (instructions.summarise([5, 0, 5]).reason or "").startswith("not counted")  # instrumentation never came on


def test_a_count_covers_enough_steps_to_average_out_a_steps_own_noise() -> None:
    assert instructions.steps_per_count(4_668_593) == 9  # many_tiny_ops eval: 9 x 4.7 M >= 40 M
    assert instructions.steps_per_count(10**9) == 1
    assert instructions.steps_per_count(0) == instructions.MOST_STEPS_PER_COUNT


# -- what a count would cost, and which cases are counted ---------------------------------------------------


def machine(step_ms: float, build_s: float = 0.0) -> Estimate:
    return Estimate(step_ms=step_ms, build_s=build_s, startup_s=40.0, slowdown=50.0)


def test_the_estimate_is_startup_then_the_build_warmup_first_step_and_counts_slowed_down() -> None:
    # The build, 10 warmup steps, the first step, and five counts of a step each (at least 15 ms natively).
    assert machine(100.0, build_s=0.5).seconds == pytest.approx(40.0 + 50.0 * (0.5 + 11 * 0.1 + 5 * 0.1))
    assert machine(1.0).seconds == pytest.approx(40.0 + 50.0 * (11 * 0.001 + 5 * instructions.COUNT_NATIVE_S))


def test_a_count_over_the_cap_is_skipped_with_its_estimate() -> None:
    long_step = machine(1000.0)  # 40 + 50 x 16 s = 840 s
    assert instructions.over_cap(long_step, left_s=1e6, cap_s=300.0) == (
        "skipped: counting would take about 840 s under callgrind, over the cap of 300 s"
    )
    assert instructions.over_cap(long_step, left_s=1e6, cap_s=900.0) is None


def test_a_count_over_what_the_timeout_leaves_is_skipped() -> None:
    short_step = machine(10.0)  # 40 + 50 x (0.11 + 0.075) = 49.25 s
    assert instructions.over_cap(short_step, left_s=100.0, cap_s=300.0) is None
    reason = instructions.over_cap(short_step, left_s=30.0, cap_s=300.0)
    assert reason == "skipped: counting would take about 49 s under callgrind, over what is left of the case's timeout, of 30 s"


def test_without_valgrind_the_row_says_how_to_get_it() -> None:
    counted = instructions.count_case(CaseSpec(model="tiny_mlp", mode="eval"), None, Estimate(step_ms=1.0), 600.0, find=nowhere)
    assert counted == Instructions(method="callgrind", reason=instructions.VALGRIND_MISSING)
    assert instructions.valgrind_missing(nowhere) == instructions.VALGRIND_MISSING
    assert instructions.valgrind_missing(lambda _: "/usr/bin/valgrind") is None


@pytest.mark.parametrize(
    ("spec", "why"),
    [
        (CaseSpec(model="tiny_mlp", compile=Compile()), "only eager cases are counted, and this is the inductor variant"),
        (CaseSpec(model="tiny_mlp", precision="bf16"), "this is the bf16 variant"),
        (CaseSpec(model="tiny_mlp", device="cuda:1"), "callgrind counts the CPU's instructions, and this case ran on cuda:1"),
    ],
)
def test_a_variant_or_gpu_case_says_why_it_was_not_counted(spec: CaseSpec, why: str) -> None:
    def refuse(_: str) -> str:
        raise AssertionError("valgrind looked up for a case that is not counted")

    counted = instructions.count_case(spec, None, Estimate(step_ms=1.0), 600.0, find=refuse)
    assert counted.per_step is None and why in (counted.reason or "")


def test_a_case_too_long_to_count_starts_no_child() -> None:
    # A valgrind that does not exist: had a child been started, the reason would say it failed.
    counted = instructions.count_case(CaseSpec(model="tiny_mlp"), None, Estimate(step_ms=60_000.0), 1e6, find=lambda _: "/no/valgrind")
    assert (counted.reason or "").startswith("skipped: counting would take about")
    capped = CaseSpec(model="tiny_mlp", instructions_cap_s=10.0)  # --instructions 10
    counted = instructions.count_case(capped, None, Estimate(step_ms=1.0), 1e6, find=lambda _: "/no/valgrind")
    assert (counted.reason or "").endswith("over the cap of 10 s")


def test_a_config_the_child_cannot_read_is_the_reason() -> None:
    counted = instructions.count_case(
        CaseSpec(model="tiny_mlp"), {"layer": object()}, Estimate(step_ms=1.0), 1e6, find=lambda _: "/no/valgrind"
    )
    assert (counted.reason or "").startswith("not counted: the model's config cannot be passed to a child process")


def test_the_child_runs_on_one_thread_with_its_allocator_set_after_the_users_tunables() -> None:
    env = instructions.child_environment({"PATH": "/bin", "GLIBC_TUNABLES": "glibc.malloc.arena_max=1", "OMP_NUM_THREADS": "8"})
    assert env["PATH"] == "/bin" and env["OMP_NUM_THREADS"] == "1" and env["PYTHONHASHSEED"] == "0"
    assert env["GLIBC_TUNABLES"] == f"glibc.malloc.arena_max=1:{instructions.GLIBC_COUNTING}"
    assert instructions.child_environment({})["GLIBC_TUNABLES"] == instructions.GLIBC_COUNTING


def callgrind_writing(dumps: list[int], returncode: int = 0, stderr: str = "") -> instructions.Runner:
    """A runner that stands for valgrind: it writes the dumps a child would have asked for, then ends."""

    def run(command: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        (out,) = [word.split("=", 1)[1] for word in command if word.startswith("--callgrind-out-file=")]
        request = Request.from_json(command[-1])
        assert Path(out).parent == Path(request.dumps) and command[-3:-1] == ["-m", "torchbenchmark.measure.instructions"]
        for part, count in enumerate(dumps, start=1):
            text = STEP_DUMP.read_text().replace(f": {STEP_DUMP_INSTRUCTIONS}\n", f": {count}\n")  # summary: and totals:
            Path(out.replace("%p", "41") + f".{part}").write_text(text.replace("part: 1", f"part: {part}"))
        return subprocess.CompletedProcess(command, returncode, "", stderr)

    return run


def test_the_first_step_sizes_the_counts_and_is_left_out() -> None:
    first, count = 10_000_000, 40_000_000  # a count of 4 steps
    counted = instructions.count(Request("tiny_mlp", "eval"), "valgrind", 60.0, run=callgrind_writing([first, *[count] * 5]))
    assert counted == Instructions(method="callgrind", per_step=10_000_000.0, spread_pct=0.0, steps=20)


def test_a_child_that_fails_gives_its_last_line_not_a_failed_row() -> None:
    crashed = callgrind_writing([], returncode=7, stderr="Traceback ...\nRuntimeError: a startup problem\n\n")
    counted = instructions.count(Request("tiny_mlp", "eval"), "valgrind", 60.0, run=crashed)
    assert counted.reason == "not counted: callgrind's run failed (exit 7): RuntimeError: a startup problem"
    short = instructions.count(Request("tiny_mlp", "eval"), "valgrind", 60.0, run=callgrind_writing([100, 200]))
    assert short.reason == "not counted: callgrind wrote 2 counts of 6: no output"


def test_a_child_past_the_time_left_is_the_reason() -> None:
    def hangs(command: list[str], **options: object) -> subprocess.CompletedProcess[str]:
        raise subprocess.TimeoutExpired(command, float(options["timeout"]))  # type: ignore[arg-type]

    counted = instructions.count(Request("tiny_mlp", "eval"), "valgrind", 42.0, run=hangs)
    assert counted.reason == "not counted: callgrind took more than the 42 s left to the case"


# -- shown in summary.txt -----------------------------------------------------------------------------------


def test_the_summary_shows_counts_only_when_a_row_has_them() -> None:
    plain = CaseResult(model="m", mode="eval", device="cpu", status=Status.OK)
    assert "instr/step" not in render_table(
        [plain, dataclasses.replace(plain, instructions=Instructions(reason=instructions.VALGRIND_MISSING))]
    )
    steady = dataclasses.replace(plain, instructions=Instructions(per_step=24_285_536.0, spread_pct=0.05, steps=5))
    wide = dataclasses.replace(plain, mode="train", instructions=Instructions(per_step=1.5e9, spread_pct=0.8, steps=5))
    assert "instr/step" in render_table([steady, wide])
    assert (instructions_figure(steady), instructions_figure(wide)) == ("24.3M", "1.50G ±0.8%")
    assert [compact_count(v) for v in (812, 1234, 999_600_000)] == ["812", "1.23k", "1.00G"]


def test_the_report_gives_the_count_or_why_not() -> None:
    row = CaseResult(model="m", mode="eval", device="cpu", status=Status.OK)
    counted = dataclasses.replace(row, instructions=Instructions(per_step=4_638_827.2, spread_pct=0.1589, steps=45))
    assert instructions_text(counted) == "4,638,827 per step, from 45 steps counted under callgrind on one thread; counts 0.16% apart"
    missing = dataclasses.replace(row, instructions=Instructions(reason=instructions.VALGRIND_MISSING))
    assert (instructions_text(missing), instructions_text(row)) == (instructions.VALGRIND_MISSING, "")


# -- under real callgrind -----------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.skipif(VALGRIND is None, reason="valgrind is not installed")
def test_a_tiny_plugins_eval_steps_count_alike() -> None:
    """Five counts of the same steps within 0.5% of each other (measured: 0.12%, docs/measurement.md)."""
    assert VALGRIND is not None
    request = Request(f"{HELPERS / 'synthetic_models.py'}:ManyTinyOps", "eval")
    counted = instructions.count(request, VALGRIND, timeout_s=600.0)
    assert counted.reason is None, counted.reason
    assert (counted.per_step or 0) > 0 and counted.steps is not None and counted.steps % instructions.COUNTS == 0
    assert (counted.spread_pct or 0) <= 0.5, counted


@pytest.mark.slow
def test_a_sweep_without_valgrind_says_so_once_and_goes_on(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": str(Path(sys.executable).parent)}  # python, and no valgrind
    assert shutil.which("valgrind", path=env["PATH"]) is None
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, str(ROOT / "diagnostics.py"), "--models", TINY, "--modes", "eval", "--out", str(out), "--instructions", *FAST],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    said = [message for message in re.split(r"\n(?! )", done.stderr) if message.startswith("diagnostics.py:") and "valgrind" in message]
    assert [" ".join(message.split()) for message in said] == [  # one message, wrapped at the terminal's width
        f"diagnostics.py: --instructions: {instructions.VALGRIND_MISSING}; the cases run without counts"
    ]
    (row,) = json.loads((out / "summary.json").read_text())["results"]
    assert row["status"] == "ok" and row["instructions"]["reason"] == instructions.VALGRIND_MISSING
    assert "instructions" in row["timings_s"]
