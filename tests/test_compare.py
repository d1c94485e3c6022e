"""compare: the ratio interval on samples with known answers, each call, and the exit codes end to end."""

from __future__ import annotations

import json
import math
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from torchbenchmark.compare import PROCESS_NOISE_FLOOR, compare, ratio_interval, t95
from torchbenchmark.results import CaseResult, Dispatch, Samples, StepTime
from torchbenchmark.storage import RunRecord, Summary, summary_of_records
from tests.work_models import WORK_ENV

ROOT = Path(__file__).resolve().parent.parent
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
    figures = dict(batch_size=4, step_time=StepTime(ms, 0.1, ms, 10), dispatch=Dispatch(verdict, 0.1, 10, 1, 1),
                   samples=Samples(tuple(medians), tuple((m, m) for m in medians)))  # fmt: skip
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
        row("slow", [10.0] * 3), row("fast", [10.0] * 3), row("flat", [10.0] * 3), row("breaks", [10.0]),
        row("mended", [], status="failed"), row("flip", [10.0] * 3, verdict="mixed"), row("gone", [1.0]),
    )  # fmt: skip
    new = side(
        row("slow", [11.0] * 3), row("fast", [8.0] * 3), row("flat", [10.2] * 3), row("breaks", [], status="failed"),
        row("mended", [5.0]), row("flip", [10.0] * 3, verdict="dispatch-bound"), row("added", [1.0]),
    )  # fmt: skip
    comparison = compare(base, new)
    calls = {case.model: case.call for case in comparison.cases}
    assert calls == {"slow": "slower", "fast": "faster", "flat": "same", "breaks": "new failure", "mended": "fixed",
                     "flip": "verdict changed", "gone": "only in base", "added": "only in new"}  # fmt: skip
    assert [case.call for case in comparison.cases[:2]] == ["slower", "new failure"], "regressions first"
    assert comparison.exit_status == 1
    assert compare(side(row("flat", [10.0] * 3)), side(row("flat", [10.2] * 3))).exit_status == 0


def test_a_change_under_the_threshold_is_same_even_when_significant() -> None:
    case = compare(side(row("m", [10.0] * 5)), side(row("m", [10.4] * 5))).cases[0]
    assert case.estimate.low > 1.0 and case.call == "same"
    assert compare(side(row("m", [10.0] * 5)), side(row("m", [10.4] * 5)), threshold_pct=2).cases[0].call == "slower"


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


def test_exit_codes_end_to_end(tmp_path: Path) -> None:
    """Two runs as is are the same; a run with four times the work per step is a regression."""
    plugin = f"{ROOT / 'tests' / 'work_models.py'}:WorkModel"
    sweep = ["--models", plugin, "--modes", "eval", "--device", "cpu", "--threads", "1", "--no-detailed", "--no-progress"]
    for name, work in (("a", 1), ("b", 1), ("slow", 4)):
        assert diagnostics(*sweep, "--out", str(tmp_path / name), work=work).returncode == 0
    # A wide threshold: this checks the plumbing, not the machine's quiet (benchmarks/RESULTS.md has the rates).
    same = diagnostics("compare", str(tmp_path / "a"), str(tmp_path / "b"), "--threshold", "50", "--json", str(tmp_path / "aa.json"))
    assert same.returncode == 0, same.stdout + same.stderr
    assert json.loads((tmp_path / "aa.json").read_text())["cases"][0]["call"] == "same"
    slower = diagnostics("compare", str(tmp_path / "a"), str(tmp_path / "slow" / "summary.json"), "--threshold", "50")
    assert slower.returncode == 1, slower.stdout + slower.stderr
    assert [line.split()[0] for line in slower.stdout.splitlines() if "work_model" in line] == ["slower"]
    record = next((tmp_path / "slow" / "runs").glob("*.json"))
    faster = diagnostics("compare", str(record), str(tmp_path / "b"), "--threshold", "50")
    assert faster.returncode == 0 and "faster" in faster.stdout
    # A sweep with --baseline gates in the same command.
    gated = diagnostics(*sweep, "--out", str(tmp_path / "gated"), "--baseline", str(tmp_path / "a"), "--threshold", "50", work=4)
    assert gated.returncode == 1, gated.stderr
    for bad in (["compare", str(tmp_path / "a"), str(tmp_path / "missing")], ["compare", str(tmp_path / "a")]):
        result = diagnostics(*bad)
        assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr


def test_the_comparison_table_is_pinned() -> None:
    from torchbenchmark.summary import render_comparison

    base = side(row("slow", [10.0] * 3), row("flat", [2.0] * 3), row("gone", [1.0]))
    new = side(row("slow", [11.0] * 3, batch_size=8), row("flat", [2.0] * 3, verdict="mixed"), row("added", [1.0]))
    text = render_comparison(compare(base, new)).splitlines()
    assert text[:3] == ["base: side", "new:  side", "4 cases: 1 slower, 1 verdict changed, 1 only in base, 1 only in new"]
    header, rule, *rows = text[4:10]
    assert header.split() == ["call", "model", "mode", "device", "base", "ms", "new", "ms", "new/base", "95%", "interval",
                              "n", "verdict", "note"]  # fmt: skip
    assert rows[0].split() == ["slower", "slow", "train", "cpu", "10.0", "11.0", "1.100", "1.065", "to", "1.136", "3/3",
                               "compute-bound", "batch", "size", "4", "->", "8"]  # fmt: skip
    assert rows[1].split() == ["verdict", "changed", "flat", "train", "cpu", "2.00", "2.00", "1.000", "0.969", "to", "1.033",
                               "3/3", "compute-bound", "->", "mixed"]  # fmt: skip
    assert rows[2].split() == ["only", "in", "base", "gone", "train", "cpu", "1.00", "compute-bound"]
    assert rows[3].split() == ["only", "in", "new", "added", "train", "cpu", "1.00", "compute-bound"]
    assert "past the 5% threshold" in text[-1] or "past the 5% threshold" in "\n".join(text)


def test_to_dict_and_repr_carry_the_calls() -> None:
    comparison = compare(side(row("slow", [10.0] * 3)), side(row("slow", [12.0] * 3)))
    data = comparison.to_dict()
    assert data["exit_status"] == 1 and data["counts"] == {"slower": 1}
    assert data["cases"][0]["estimate"]["ratio"] == pytest.approx(1.2)
    assert repr(comparison) == "Comparison(side -> side: 1 slower)"
