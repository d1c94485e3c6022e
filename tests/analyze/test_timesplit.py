"""Where a step's wall time went, by what the kernel saw: the split, the clean steps, the marks and their use."""

from __future__ import annotations

import json
import math
import os
import threading
import time
from pathlib import Path

import pytest

from torchbenchmark.analyze import timesplit
from torchbenchmark.analyze.overhead import OverheadEvents
from torchbenchmark.api import compare
from torchbenchmark.cli import compare as compare_cli
from torchbenchmark.measure import schedstat
from torchbenchmark.results.records import RunRecord, summary_of_records
from torchbenchmark.results.schema import CaseResult, Dispatch, Samples, StepTime, TimeSplit, Verdict

MS = 1_000_000


def steps(count: int, wall_ms: float = 1.0, cpu_ms: float = 1.0, wait_ms: float = 0.0, others_ms: float = 0.0) -> list:
    return [(int(wall_ms * MS), int(cpu_ms * MS), int(wait_ms * MS), int(others_ms * MS))] * count


def test_a_step_is_clean_while_its_threads_hardly_waited() -> None:
    quiet, waited, by_the_pool = steps(1, wait_ms=0.02)[0], steps(1, wait_ms=0.021)[0], steps(1, others_ms=0.5)[0]
    assert timesplit.clean([quiet, waited, by_the_pool]) == [True, False, False]
    assert timesplit.waited(by_the_pool) == pytest.approx(0.5)


def test_the_split_sums_the_steps_and_what_is_neither_is_blocked() -> None:
    split = timesplit.split(steps(4, wall_ms=10, cpu_ms=1, wait_ms=1, others_ms=2))
    assert (split.on_cpu_pct, split.blocked_pct) == pytest.approx((10.0, 80.0))
    assert (split.waiting_pct, split.others_waiting_pct) == pytest.approx((30.0, 20.0))
    assert timesplit.split([]) is None


def test_steps_are_kept_clean_when_enough_are_and_all_are_kept_otherwise() -> None:
    mixed = steps(8) + steps(2, wait_ms=0.5)
    assert timesplit.kept(mixed) == [True] * 8 + [False] * 2
    mostly_waiting = steps(1) + steps(9, wait_ms=0.5)  # 1 clean of 10: too few to rest a figure on
    assert timesplit.kept(mostly_waiting) == [True] * 10


def split_of(samples: list, machine=(None,) * 4, profiled: list = ()) -> TimeSplit:
    result = timesplit.time_split(samples, "schedstat", machine, profiled)
    assert result is not None
    return result


def test_a_row_is_contended_when_too_few_steps_ran_clean_and_says_how_much_its_threads_waited() -> None:
    fine = split_of(steps(8) + steps(2, wait_ms=0.5))
    assert (fine.steps_kept, fine.steps_measured, fine.contended) == (8, 10, ())
    busy = split_of(steps(1) + steps(9, wait_ms=0.2, others_ms=0.3), machine=(35.0, 40.0, 2.5, 2))
    assert busy.contended == ("contended: its threads waited 45% of the step for a CPU (machine CPU pressure 35%)",)
    assert busy.intra_op_wait  # most of it the intra-op threads'
    no_psi = split_of(steps(1) + steps(9, wait_ms=0.5), machine=(None, None, 2.5, 2))
    assert no_psi.contended[0].endswith("(load average 2.5)") and not no_psi.intra_op_wait


def test_other_work_elsewhere_on_the_machine_is_information_not_a_mark() -> None:
    """The case's threads had the CPUs they asked for: no wait, so no mark, however busy the rest of the machine."""
    shared = split_of(steps(10), machine=(0.0, 50.0, 2.0, 2))
    assert (shared.contended, shared.shared, shared.other_work_pct) == ((), True, 50.0)
    assert not split_of(steps(10), machine=(0.0, 5.0, 1.0, 2)).shared
    waited = split_of(steps(1) + steps(9, wait_ms=0.5), machine=(40.0, 50.0, 2.0, 2))  # its own threads waited: marked
    assert waited.contended == ("contended: its threads waited 45% of the step for a CPU (machine CPU pressure 40%)",)


def test_a_wait_other_work_cannot_account_for_is_named_the_cases_own() -> None:
    """Its threads waited 45% of the step while other processes took 5% of two CPUs (10% of the step's time at
    most): the wait is on the case's own threads and processes, and a quieter machine would not help."""
    own = split_of(steps(1) + steps(9, wait_ms=0.5), machine=(45.0, 5.0, 3.0, 2))
    assert own.own_wait and own.contended == (
        "contended: its threads waited 45% of the step for a CPU; other work took 5% of the machine, too little for that: "
        "the wait is on its own threads and processes",
    )
    assert not split_of(steps(1) + steps(9, wait_ms=0.5), machine=(45.0, 15.0, 3.0, 2)).own_wait  # 30% of the step: it could
    assert not split_of(steps(1) + steps(9, wait_ms=0.5), machine=(45.0, 5.0, 3.0, None)).own_wait  # CPUs unknown: not said


@pytest.mark.slow
def test_the_cases_own_helper_processes_are_not_other_work() -> None:
    """A process the case started (a data loader's worker) spins beside it: its CPU time is the case's family's."""
    import subprocess
    import sys

    gauge_start = schedstat.family_cpu_s()
    spinner = subprocess.Popen([sys.executable, "-c", "import time\nend = time.time() + 1.0\nwhile time.time() < end: pass"])
    try:
        time.sleep(0.6)
        assert schedstat.descendants_ticks() > 0  # alive, and counted from /proc
        spinner.wait(timeout=30)
    finally:
        spinner.kill()
    assert schedstat.family_cpu_s() - gauge_start >= 0.1  # reaped: its CPU time now in os.times's children


def test_a_window_shorter_than_the_tick_clock_can_resolve_gives_no_other_work_figure() -> None:
    """A microsecond step's five steps last well under a clock tick: one tick of anyone's work there read 700%."""
    assert schedstat.MachineGauge().read().other_work_pct is None
    gauge = schedstat.MachineGauge()
    time.sleep(schedstat.MIN_GAUGE_TICKS / schedstat.TICKS_PER_S / (os.cpu_count() or 1) + 0.05)
    assert gauge.read().other_work_pct is not None


def test_waits_of_a_few_percent_mark_no_row_however_few_steps_ran_clean() -> None:
    """A long step's three profiled steps may each wait 2.5% for a CPU on a quiet machine: not contention."""
    assert split_of(steps(10), profiled=steps(3, wait_ms=0.025)).contended == ()
    assert split_of(steps(10), profiled=steps(3, wait_ms=0.05)).contended != ()  # 5%: CONTENDED_WAIT_PCT
    assert split_of(steps(1) + steps(9, wait_ms=0.03)).contended == ()  # 9 of 10 steps waited 3%: a few percent


def test_contended_profiled_steps_mark_the_row_too() -> None:
    split = split_of(steps(10), profiled=steps(5, wait_ms=0.5))
    assert split.contended == ("contended while profiled: its threads waited 50% of the profiled step for a CPU",)


def row_with(split: TimeSplit | None, median_ms: float = 1.0, n: int = 10, samples: tuple = ()) -> CaseResult:
    return CaseResult(model="m", mode="eval", device="cpu", status="ok", step_time=StepTime(median_ms, 0.01, median_ms, n),
                      dispatch=Dispatch("compute-bound", 0.1, 10, 1, 1), time_split=split,
                      samples=Samples(samples or (median_ms,), ((median_ms, median_ms),)))  # fmt: skip


def test_the_mark_shows_on_the_row_its_repr_and_survives_json() -> None:
    busy = row_with(split_of(steps(1) + steps(9, wait_ms=0.5)))
    assert any(reason.startswith("contended: its threads waited 45%") for reason in busy.untrustworthy_reasons)
    assert "UNTRUSTWORTHY: contended" in repr(busy)
    assert CaseResult.from_dict(busy.to_dict()) == busy
    assert busy.to_dict()["time_split"]["steps_kept"] == 1


def test_what_every_step_spent_blocked_leaves_its_gaps() -> None:
    """Two 10 ms steps whose thread slept 9 ms (and 9.2) and waited 0.1 ms for a CPU: 9 ms of each gap is the sleep."""
    samples = [(10_000_000, 900_000, 100_000, 0), (10_000_000, 700_000, 100_000, 0)]
    assert timesplit.blocked_us(samples) == pytest.approx(9000.0) and timesplit.blocked_us([]) == 0.0
    sleeping = OverheadEvents(({"call": 10}, {"call": 10}), (9300.0, 9500.0))
    awake = sleeping.less(timesplit.blocked_us(samples))
    assert awake.python_gap_us_per_step == pytest.approx((300.0, 500.0)) and awake.least_gap_us == pytest.approx(300.0)
    assert sleeping.less(20_000.0).python_gap_us_per_step == (0.0, 0.0) and sleeping.less(0.0) is sleeping


def test_a_step_that_waited_for_a_cpu_is_no_measure_of_what_every_step_spent_blocked() -> None:
    """A sleeper's 10 ms steps, 9 ms asleep; in one, a wait of 4.3 ms ended after the boundary read the clock and
    before it read the kernel's account, so that step counts the wait in 10 ms of wall time and reads 4.8 ms blocked."""
    clean = [(10_000_000, 900_000, 50_000, 0)] * 9
    waited = (10_000_000, 900_000, 4_300_000, 0)
    assert timesplit.blocked_us([*clean, waited]) == pytest.approx(9050.0)
    # Where too few steps are clean every step counts (and the row is marked contended).
    assert timesplit.blocked_us([waited, waited, clean[0]]) == pytest.approx(4800.0)


def test_only_the_clean_steps_count() -> None:
    sleeping = OverheadEvents(({"call": 10}, {"call": 20}, {"call": 30}), (9100.0, 9050.0, 9300.0))
    # Steps left out were stretched by other work: the rest keep their gaps, and the least is of theirs.
    kept = sleeping.only([True, False, True])
    assert kept.events_per_step == ({"call": 10}, {"call": 30}) and kept.python_gap_us_per_step == (9100.0, 9300.0)
    assert kept.least_gap_us == 9100.0 and sleeping.least_gap_us == 9050.0
    assert sleeping.only([False, False, False]) is sleeping and sleeping.only([True] * 3) is sleeping


def test_the_spread_of_every_step_less_its_wait_is_read_only_where_steps_were_left_out() -> None:
    """Beside other work a step that slept 20 ms waits for a CPU as it wakes and is left out, as are some fast ones:
    the 3 kept are fast and agree. Every step less its wait shows the sleeps; the wait itself is no spread."""
    clean_fast = steps(3, wall_ms=0.16, cpu_ms=0.16)
    waited_fast = steps(5, wall_ms=0.30, cpu_ms=0.16, wait_ms=0.14)
    slept = steps(4, wall_ms=21.0, cpu_ms=0.16, wait_ms=0.8)
    assert timesplit.kept(clean_fast + waited_fast + slept).count(True) == 3
    assert timesplit.unwaited_iqr_pct(clean_fast + waited_fast + slept) > 10_000
    assert timesplit.unwaited_iqr_pct(clean_fast + waited_fast) == pytest.approx(0.0, abs=1e-6)  # waits taken off
    assert timesplit.unwaited_iqr_pct(clean_fast * 4) is None  # nothing left out
    assert timesplit.unwaited_iqr_pct(clean_fast[:2] + slept) is None  # too few clean: every step kept, the row contended
    row_split = timesplit.time_split(clean_fast + waited_fast + slept, "schedstat", (None, None, None, 2))
    assert row_split is not None and row_split.unwaited_iqr_pct > 10_000


def test_the_kernels_clock_sees_a_spin_on_a_cpu_and_a_sleep_off_it() -> None:
    """A spin is on a CPU, or waiting for one on a busy machine, never blocked; a sleep is neither. Three
    spins, the best counting: on a virtual machine the time the host takes from the guest's CPU is in
    neither account (one spin here read 89% of its 56 ms)."""
    account = schedstat.StepAccount()
    account.start()
    for _ in range(3):
        until = time.perf_counter() + 0.05
        while time.perf_counter() < until:
            pass
        account()
    time.sleep(0.05)
    account()
    *spins, sleep = account.steps
    assert max((spin[1] + spin[2]) / spin[0] for spin in spins) > 0.9, spins
    assert sleep[1] + sleep[2] < 0.2 * sleep[0]
    assert account.clock.method == schedstat.SCHEDSTAT and account.clock.main == threading.get_native_id()
    account.clock.close()


class SlicedThread:
    """The step thread's clocks, scripted: each step runs 3 ms on a CPU, and reading the CPU clock at the chosen
    boundaries ends the thread's time slice, so it waits 4 ms for a CPU before its next reading (as beside two CPU
    hogs, where a third of the waits began there)."""

    def __init__(self, sliced_at: set[int]) -> None:
        self.wall_ns = self.cpu_ns = self.wait_ns = 0
        self.boundary, self.sliced_at = 0, sliced_at

    def perf_counter_ns(self) -> int:
        return self.wall_ns

    def thread_time_ns(self) -> int:
        cpu = self.cpu_ns
        if self.boundary in self.sliced_at:
            self.sliced_at.discard(self.boundary)
            self.wall_ns += 4 * MS
            self.wait_ns += 4 * MS
        return cpu

    def step(self) -> None:
        self.wall_ns += 3 * MS
        self.cpu_ns += 3 * MS
        self.boundary += 1


def test_a_wait_that_begins_as_a_step_boundary_is_read_counts_in_neither_step(monkeypatch: pytest.MonkeyPatch) -> None:
    """Read once, such a wait counted in one step's wait and the next step's wall: that step read 4 ms blocked
    and clean, and a 2 ms nap inside an op had the glue around it taken out of a row's gaps, unmarked."""
    thread = SlicedThread(sliced_at={1, 2})
    monkeypatch.setattr(schedstat, "time", thread)
    account = schedstat.StepAccount()
    main = account.clock.main
    monkeypatch.setattr(account.clock, "_read", lambda tid, fd: (thread.cpu_ns, thread.wait_ns) if tid == main else (0, 0))
    account.start()
    for _ in range(3):
        thread.step()
        account()
    assert account.steps == [(3 * MS, 3 * MS, 0, 0)] * 3
    assert timesplit.blocked_us(account.steps) == 0 and all(timesplit.clean(account.steps))
    account.clock.close()


def test_a_busy_machine_is_named_before_a_sweep(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(schedstat.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(schedstat, "load_average", lambda: 1.5)
    monkeypatch.setattr(schedstat, "PSI_CPU", "/nonexistent")
    assert schedstat.busy_machine(2) == "load average 1.5 on 2 CPUs, 2 threads a case"
    monkeypatch.setattr(schedstat, "load_average", lambda: 0.9)
    assert schedstat.busy_machine(1) is None  # one thread fits beside the load
    pressure = tmp_path / "cpu"
    monkeypatch.setattr(schedstat, "PSI_CPU", str(pressure))
    pressure.write_text("some avg10=0.00 avg60=0.00 avg300=0.00 total=1\n")
    monkeypatch.setattr(schedstat, "load_average", lambda: 1.5)
    # Not beside "CPU pressure 0%", which made none of it.
    assert schedstat.busy_machine(2) == "load average 1.5 on 2 CPUs, 2 threads a case"
    pressure.write_text("some avg10=35.00 avg60=0.00 avg300=0.00 total=1\n")
    monkeypatch.setattr(schedstat, "load_average", lambda: 0.2)
    assert schedstat.busy_machine(1) == "CPU pressure 35%"


def side(*rows: CaseResult) -> object:
    env = {"host": "box", "cpu": "c", "cpu_count": 2, "device_name": "c", "torch": "2.14.1"}
    return summary_of_records([RunRecord("r", env, None, rows)], "side")


def test_a_side_whose_threads_waited_holds_the_wait_in_its_spread_so_its_case_cannot_see() -> None:
    busy = split_of(steps(1) + steps(9, wait_ms=0.5))  # its threads waited 45% of the step
    comparison = compare(side(row_with(None, 10.0)), side(row_with(busy, 10.0)))
    (case,) = comparison.cases
    assert case.call == "inconclusive" and case.estimate.spread == pytest.approx(math.log(1.45))
    assert case.notes[0].endswith(": a side's threads waited for a CPU; a quieter machine would decide it")
    assert case.notes[-1].startswith("new is marked: contended") and case.processes_to_decide is None
    assert comparison.exit_status == 3 and comparison.notes[0].startswith("1 inconclusive: the measurement could not see")
    slower = compare(side(row_with(None, 10.0)), side(row_with(busy, 20.0)))
    assert slower.cases[0].call == "inconclusive" and slower.exit_status == 3  # the wait may be what slowed it


def test_a_side_beside_other_work_whose_threads_did_not_wait_is_compared_on_its_steps() -> None:
    shared = split_of(steps(10), machine=(0.0, 60.0, 2.0, 2))
    quiet = [row_with(None, 10.0, samples=(10.0,) * 3)]
    comparison = compare(side(quiet[0]), side(row_with(shared, 12.0, samples=(12.0,) * 3)))
    assert (comparison.cases[0].call, comparison.cases[0].notes, comparison.exit_status) == ("slower", (), 1)
    alike = compare(side(row_with(shared, 10.0, samples=(10.0,) * 3)), side(row_with(shared, 10.0, samples=(10.0,) * 3)))
    assert (alike.cases[0].call, alike.exit_status) == ("same", 0)


def test_a_case_that_cannot_see_is_inconclusive_and_its_figures_read_as_such(tmp_path: Path, capsys) -> None:
    base = row_with(None, 1.0, samples=(0.0001, 1.0, 1000.0))
    new = row_with(None, 1.0, samples=(0.0001, 1.0, 1000.0))
    for name, row in (("base", base), ("new", new)):
        (tmp_path / f"{name}.json").write_text(json.dumps(RunRecord(name, {"host": "h"}, None, (row,)).to_dict()))
    status = compare_cli.run(tmp_path / "base.json", tmp_path / "new.json", 5.0)
    out = capsys.readouterr().out
    assert status == 3 and "> 1000%" in out and "< 0.001 to > 1000" in out and "inconclusive" in out
    assert compare_cli.run(tmp_path / "base.json", tmp_path / "new.json", 5.0, allow_inconclusive=True) == 0


def test_a_regression_wins_over_an_inconclusive_case() -> None:
    busy = split_of(steps(1) + steps(9, wait_ms=0.5))
    quiet = [row_with(None, 10.0, samples=(10.0, 10.0, 10.0))]
    slow = [row_with(None, 20.0, samples=(20.0, 20.0, 20.0))]
    base = side(quiet[0], CaseResult(**{**row_with(None).__dict__, "model": "other"}))
    new = side(slow[0], CaseResult(**{**row_with(busy).__dict__, "model": "other"}))
    comparison = compare(base, new)
    assert {case.call for case in comparison.cases} == {"slower", "inconclusive"} and comparison.exit_status == 1


def test_blocked_is_a_verdict_of_its_own() -> None:
    assert Verdict.BLOCKED == "blocked" and Verdict("blocked") is Verdict.BLOCKED
