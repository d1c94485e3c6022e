"""--ddp N: a train case as DistributedDataParallel through torch.distributed.run, with real ranks, and a
failed case named by the rank that caused it: the one that failed of its own accord, or the one that got
least far when the case timed out.

Each slow test launches torchrun with two gloo ranks on this machine. Every process of a test carries a
marker in its environment, so "no process left" is checked on exactly the processes the test started.
The sweeps whose rank 1 fails start before the file's first case and are read by its last test: the stalled
rank's timeout is waited out while the cases between run.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from tests.helpers.processes import ROOT, TOKEN_ENV, processes_with
from tests.helpers.specs import friction
from tests.helpers.sweeps import PRICED
from torchbenchmark.analyze.comm import summarize_comm
from torchbenchmark.analyze.trace import load_events
from torchbenchmark.measure.calibration import MOMENT_REPEATS
from torchbenchmark.results.schema import CaseResult
from torchbenchmark.results.spec import Budget, CaseSpec
from torchbenchmark.run import ddp
from torchbenchmark.run import rank as rank_process
from torchbenchmark.run.worker import run_in_process

# The failing sweeps' fixture is shared by the first slow test and the last: one worker runs the file in order.
pytestmark = pytest.mark.xdist_group("test_ddp")

TINY = str(ROOT / "tests" / "helpers" / "tiny_models.py")
QUICK = Budget(warmup_s=0.5, steps=10, edge_calls=1, light_steps=3, light_s=0.0)
# The stalled rank's case waits out its timeout: still room for both ranks to start and build on a busy runner
# (about 20 s beside two hogs), where the worker's own start-up eats into it.
STALL_TIMEOUT_S = 50


def run_ddp(monkeypatch: pytest.MonkeyPatch, out: Path, model: str, timeout_s: float = 240.0) -> tuple[CaseResult, str]:
    marker = uuid.uuid4().hex
    monkeypatch.setenv(TOKEN_ENV, marker)
    spec = CaseSpec(model=f"{TINY}:{model}", mode="train", budget=QUICK, timeout_s=timeout_s, detailed=False, world_size=2)
    return run_in_process(spec, out), marker


def assert_no_process_left(marker: str) -> None:
    deadline = time.monotonic() + 10  # a killed process takes a moment to be reaped
    while processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert processes_with(marker) == [], "a rank or torchrun outlived its case"


@dataclasses.dataclass
class FailingSweeps:
    """Two sweeps through the whole path (guard, worker, torchrun) whose rank 1 fails: one where it crashes or
    is killed, which ends by itself, and one where it stalls, which times out. Their processes carry ``marker``."""

    out: Path
    marker: str
    crashed: subprocess.Popen[str] | None = None
    stalled: subprocess.Popen[str] | None = None
    stderr: str = ""
    left: list[int] = dataclasses.field(default_factory=list)  # processes with the marker 10 s after both ended

    def start(self, name: str, models: list[str], timeout_s: int) -> subprocess.Popen[str]:
        """The sweep of ``models`` into ``out/name``, its stderr in ``out/name.stderr``; not waited for."""
        command = [sys.executable, str(ROOT / "diagnostics.py"), "--models", ",".join(models), "--ddp", "2", "--steps", "10",
                   "--no-detailed", "--timeout", str(timeout_s), "--out", str(self.out / name), "--no-progress", *PRICED]  # fmt: skip
        with open(self.out / f"{name}.stderr", "w") as stderr:
            env = {**os.environ, TOKEN_ENV: self.marker}
            return subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=stderr, text=True)

    def wait_for_the_stall(self) -> None:
        """Return once the stalled sweep's rank 0 waits at the wrap for rank 1 (or it ended, or 180 s passed):
        from there on its case only waits for its timeout, and work beside it cannot make it miss the build."""
        deadline = time.monotonic() + 180
        while self.stalled.poll() is None and time.monotonic() < deadline:
            if re.search(r"rank 0 wrap; rank 1 build", (self.out / "stalled.stderr").read_text()):
                return
            time.sleep(0.5)

    def finish(self) -> None:
        """Wait for both sweeps; say which processes of theirs are left. Once."""
        if self.stderr:
            return
        for sweep in (self.crashed, self.stalled):
            sweep.wait(timeout=600)
        self.stderr = "".join((self.out / f"{name}.stderr").read_text() for name in ("crashed", "stalled"))
        deadline = time.monotonic() + 10  # a killed process takes a moment to be reaped
        while processes_with(self.marker) and time.monotonic() < deadline:
            time.sleep(0.2)
        self.left = processes_with(self.marker)

    def rows(self) -> dict[str, dict[str, object]]:
        found = {}
        for name in ("crashed", "stalled"):
            found.update({row["model"]: row for row in json.loads((self.out / name / "summary.json").read_text())["results"]})
        return found


@pytest.fixture(scope="module")
def failing_sweeps(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FailingSweeps]:
    sweeps = FailingSweeps(tmp_path_factory.mktemp("failing"), uuid.uuid4().hex)
    try:
        sweeps.stalled = sweeps.start("stalled", [friction("RankOneStalls")], STALL_TIMEOUT_S)
        sweeps.wait_for_the_stall()
        sweeps.crashed = sweeps.start("crashed", [friction("RankOneCrashes"), friction("RankOneKilled")], 90)
        yield sweeps
    finally:
        for pid in processes_with(sweeps.marker):  # a test that failed leaves nothing running either
            os.kill(pid, signal.SIGKILL)


@pytest.mark.slow
@pytest.mark.usefixtures("failing_sweeps")  # started first: the stalled rank waits out its timeout beside this case
def test_two_ranks_give_per_rank_traces_comm_share_and_leave_nothing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    row, marker = run_ddp(monkeypatch, tmp_path, "TinyMLP")
    assert row.status == "ok", row.error
    assert row.variant == "ddp2" and row.step_time is not None
    # Enough steps for a spread, or a row that says why not: a warmup stretched by a busy runner (two ranks on
    # two cores) sizes the windows from its slow steps, and the row is marked for it.
    assert row.step_time.n >= 10 or row.untrustworthy_reasons, row.step_time
    ddp = row.distributed
    assert ddp is not None and ddp.world_size == 2 and ddp.backend == "gloo" and ddp.nodes == 1
    assert [rank.rank for rank in ddp.ranks] == [0, 1]
    assert 0 < ddp.comm_pct <= 100 and 0 <= ddp.exposed_comm_pct <= ddp.comm_pct + 1e-9
    assert ddp.skew_pct >= 0 and row.step_time.median_ms == max(rank.step_median_ms for rank in ddp.ranks)
    for rank in (0, 1):
        trace = tmp_path / "tiny_mlp" / f"train-cpu-ddp2-rank{rank}.pt.trace.json.gz"
        assert ddp.ranks[rank].trace == trace.relative_to(tmp_path).as_posix()
        with gzip.open(trace, "rt") as stream:
            document = json.load(stream)
        info = document["distributedInfo"]
        assert (info["rank"], info["world_size"], info["backend"]) == (rank, 2, "gloo")
        assert summarize_comm(document["traceEvents"]).comm_ms > 0, "no collective in the rank's trace"
    assert row.traces.light == ddp.ranks[0].trace
    # The single-process engine's row: the estimate's interval and terms, the time split, the bound.
    dispatch = row.dispatch
    assert dispatch is not None and dispatch.overhead_interval is not None and dispatch.terms_us
    assert dispatch.overhead_interval[0] <= dispatch.fraction <= dispatch.overhead_interval[1]
    step_us = row.step_time.median_ms * 1e3
    assert sum(dispatch.terms_us.values()) == pytest.approx(dispatch.fraction * step_us, rel=0.01)
    assert row.time_split is not None and row.bound is not None
    assert row.attribution is not None and "no detailed profile" in (row.attribution.attribution_note or "")
    document = row.to_dict()["distributed"]
    assert document["step_time_ms_per_rank"] == [rank.step_median_ms for rank in ddp.ranks]
    assert CaseResult.from_dict(row.to_dict()) == row, "the distributed figures do not round-trip through JSON"
    assert_no_process_left(marker)


@pytest.mark.slow
def test_a_failing_rank_fails_the_case_with_its_reason(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    row, marker = run_ddp(monkeypatch, tmp_path, "RankOneFails")
    assert row.status == "failed"
    assert row.error is not None and row.error.startswith("rank 1: RuntimeError: rank one fails on purpose"), row.error
    assert_no_process_left(marker)


def test_a_rank_takes_its_share_of_the_cpus_as_a_single_process_takes_them_all(monkeypatch: pytest.MonkeyPatch) -> None:
    from torchbenchmark.measure.schedstat import cpu_share

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    cpus = len(os.sched_getaffinity(0))
    assert cpu_share(1) == cpus and cpu_share(2) == max(1, cpus // 2) and cpu_share(4 * cpus) == 1
    spec = CaseSpec(model="tiny_mlp", mode="train", world_size=2)
    assert ddp._launch_environment(spec)["OMP_NUM_THREADS"] == str(cpu_share(2))
    assert ddp._launch_environment(dataclasses.replace(spec, threads=3))["OMP_NUM_THREADS"] == "3"
    assert spec.timeout_s == CaseSpec(model="tiny_mlp", mode="train").timeout_s  # one default timeout


def test_rank_0_prices_at_three_moments_as_a_single_case_does(monkeypatch: pytest.MonkeyPatch) -> None:
    """Taken at one moment, a spell of load over its second could slow every repeat alike, unseen by the spread."""
    monkeypatch.setattr(rank_process, "MOMENT_SPACING_S", 0.0)
    assert len(rank_process._calibration(torch.device("cpu"), None).repeats) == 3 * MOMENT_REPEATS


def test_ddp_runs_train_cases_only() -> None:
    with pytest.raises(ValueError, match="train cases only"):
        CaseSpec(model="tiny_mlp", mode="eval", world_size=2)


def test_a_single_process_trace_says_it_is_rank_0(tmp_path: Path) -> None:
    import torch

    from tests.helpers.tiny_models import TinyMLP
    from torchbenchmark.measure.profiling import run_profile

    run = run_profile(TinyMLP(), "train", torch.device("cpu"), "light", 2, tmp_path / "t.pt.trace.json.gz")
    with gzip.open(run.trace_path, "rt") as stream:
        document = json.load(stream)
    assert document["distributedInfo"] == {"rank": 0, "world_size": 1, "backend": "none"}
    assert load_events(run.trace_path) == document["traceEvents"]


def test_comm_share_counts_collectives_and_the_part_compute_hid() -> None:
    step = {"ph": "X", "name": "ProfilerStep#1", "cat": "user_annotation", "ts": 0, "dur": 100, "pid": 1, "tid": 1}
    compute = {"ph": "X", "name": "aten::mm", "cat": "cpu_op", "ts": 0, "dur": 50, "pid": 1, "tid": 1}
    enqueue = {"ph": "X", "name": "c10d::allreduce_", "cat": "cpu_op", "ts": 60, "dur": 30, "pid": 1, "tid": 1}
    comm = [
        {"ph": "X", "name": "gloo:all_reduce", "cat": "user_annotation", "ts": ts, "dur": dur, "pid": 1, "tid": 2}
        for ts, dur in ((40, 30), (60, 20))
    ]
    summary = summarize_comm([step, compute, enqueue, *comm])
    assert summary.comm_ms == pytest.approx(0.040) and summary.hidden_ms == pytest.approx(0.010)
    assert (summary.comm_pct, summary.exposed_comm_pct, summary.overlap_pct) == pytest.approx((40.0, 30.0, 25.0))


@pytest.mark.slow
def test_under_a_users_torchrun_rank_0_writes_the_run_record(tmp_path: Path) -> None:
    import subprocess
    import sys

    from torchbenchmark.api import load_summary

    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node=2",
        "-m",
        "torchbenchmark.distributed",
        f"{TINY}:TinyMLP",
        "--out",
        str(tmp_path),
        "--steps",
        "5",
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    (row,) = load_summary(tmp_path).rows
    assert row.status == "ok" and row.variant == "ddp2" and row.step_time is not None
    assert 1 <= row.step_time.n <= 5, row.step_time  # steps other work stretched are left out (analyze.timesplit.kept)
    assert row.distributed is not None and row.distributed.world_size == 2
    assert all((tmp_path / rank.trace).is_file() for rank in row.distributed.ranks)


def test_the_rank_that_failed_of_its_own_accord_is_named_not_the_peer_that_saw_it_go(tmp_path: Path) -> None:
    (tmp_path / "rank0.error.json").write_text(
        json.dumps(
            {"rank": 0, "status": "failed", "reason": "RuntimeError: [pair.cc:561] Connection closed by peer [127.0.0.1]:1", "at": 1.0}
        )
    )
    (tmp_path / "rank1.error.json").write_text(
        json.dumps({"rank": 1, "status": "failed", "reason": "RuntimeError: rank one fails on purpose", "at": 2.0})
    )
    assert ddp.rank_failure(tmp_path, 2, 1) == ("failed", "rank 1: RuntimeError: rank one fails on purpose")
    # Only the peer reported: the rank that said nothing is the one that went away.
    (tmp_path / "rank1.error.json").unlink()
    assert ddp.rank_failure(tmp_path, 2, 1)[1].startswith("rank 1 died without a report")
    # A rank that crashed left its fault: it is named with it, whatever the others said.
    (tmp_path / "rank1.fault").write_text("Fatal Python error: Segmentation fault\n\nCurrent thread ...\n")
    assert ddp.rank_failure(tmp_path, 2, 1) == ("failed", "rank 1 crashed: Fatal Python error: Segmentation fault")


def test_where_the_ranks_are_is_one_short_line(tmp_path: Path) -> None:
    assert ddp.whereabouts(tmp_path, 2) == "2 ranks: not started"
    (tmp_path / "rank0.status.json").write_text(json.dumps({"pid": 1, "phase": "characterise", "detail": "measuring window 2"}))
    for rank in (1, 2):
        (tmp_path / f"rank{rank}.status.json").write_text(json.dumps({"pid": 2 + rank, "phase": "build", "detail": ""}))
    assert ddp.whereabouts(tmp_path, 3) == "rank 0 characterise (measuring window 2); ranks 1,2 build"
    (tmp_path / "rank1.status.json").write_text(json.dumps({"pid": 2, "phase": "characterise", "detail": "measuring window 2"}))
    assert ddp.whereabouts(tmp_path, 2) == "2 ranks: characterise (measuring window 2)"
    assert ddp.laggard(tmp_path, 2).startswith("ranks 0 and 1 got least far (characterise, 0 collectives")


WAITS = """\
import faulthandler, signal, sys, time
faulthandler.register(signal.SIGUSR1, open(sys.argv[1], "w"), all_threads=False)
def {function}():
    time.sleep(60)
{function}()
"""


@pytest.mark.slow
def test_a_rank_hung_in_its_own_code_is_named_where_its_peers_wait_in_torch(tmp_path: Path) -> None:
    """Ranks tied in phase and collectives (one hung inside a step, its peer in DDP's all-reduce for it): each is
    asked for its stack, and the one whose innermost frame lies outside torch is named, with where it was."""
    scratch = tmp_path / "scratch"
    (scratch / "torch" / "autograd").mkdir(parents=True)
    waiting = scratch / "torch" / "autograd" / "graph.py"  # stands in for torch's own file: a path under torch/
    waiting.write_text(WAITS.format(function="_engine_run_backward"))
    hung = scratch / "model.py"
    hung.write_text(WAITS.format(function="train"))
    ranks = [subprocess.Popen([sys.executable, str(path), str(ddp.stack_path(scratch, rank))]) for rank, path in enumerate((waiting, hung))]
    try:
        for rank, process in enumerate(ranks):
            status = {"pid": process.pid, "phase": "characterise", "detail": "", "collectives": 3}
            ddp.status_path(scratch, rank).write_text(json.dumps(status))
        time.sleep(1.0)  # each has registered its handler
        frames = ddp.where_ranks_were(scratch)
    finally:
        for process in ranks:
            process.kill()
            process.wait()
    assert {rank: where for rank, (_, where) in frames.items()} == {0: "graph.py:4 in _engine_run_backward", 1: "model.py:4 in train"}
    assert ddp.laggard(scratch, 2, frames) == (
        "rank 1 got least far (characterise, 3 collectives; rank 0 characterise, 3 collectives): "
        "rank 0 was at graph.py:4 in _engine_run_backward; rank 1 was at model.py:4 in train"
    )
    assert ddp.laggard(scratch, 2).startswith("ranks 0 and 1 got least far")  # no stacks: a tie, as before


TORCHRUN_REPORT = """\
Failures:
[1]:
  time      : 2026-12-02_02:07:47
  rank      : 0 (local_rank: 0)
  exitcode  : -15 (pid: 876)  (SIGTERM)
  traceback : Signal 15 (SIGTERM) received by PID 876
-----------------------------------------------------
Root Cause (first observed failure):
[0]:
  rank      : 1 (local_rank: 1)
  exitcode  : -9 (pid: 877)  (SIGKILL)
  traceback : Signal 9 (SIGKILL) received by PID 877
"""


def test_a_rank_that_left_no_word_is_named_with_the_signal_torchrun_saw(tmp_path: Path) -> None:
    lines = [line for line in TORCHRUN_REPORT.splitlines(keepends=True) if ddp.REPORT_LINE.search(line)]
    exits = ddp.exits_of(lines)
    assert exits == ddp.Exits({0: -15, 1: -9}, 1)
    # Neither rank reported: the one torchrun saw fail first, with its signal.
    assert ddp.rank_failure(tmp_path, 2, 1, exits)[1].startswith("rank 1 was killed by SIGKILL: the system may have run out")
    # Rank 0 saw its peer go: rank 1, silent, is named with its signal, not rank 0's connection error.
    peer = {"rank": 0, "status": "failed", "reason": "RuntimeError: [pair.cc:545] Read error: Connection reset by peer", "at": 1.0}
    (tmp_path / "rank0.error.json").write_text(json.dumps(peer))
    assert ddp.rank_failure(tmp_path, 2, 1, exits)[1].startswith("rank 1 was killed by SIGKILL")
    assert ddp.rank_failure(tmp_path, 2, 1)[1].startswith("rank 1 died without a report")


@pytest.mark.slow
def test_a_sweep_names_the_rank_that_crashed_and_the_rank_that_hung(failing_sweeps: FailingSweeps) -> None:
    """Through the whole sweep (guard, worker, torchrun), where the worker's own start-up eats into the timeout:
    a rank that segfaults, one killed by SIGKILL, and one that never finishes building, which times the case out."""
    failing_sweeps.finish()
    for sweep in (failing_sweeps.crashed, failing_sweeps.stalled):
        assert sweep.returncode == 1, failing_sweeps.stderr[-3000:]
    rows = failing_sweeps.rows()
    crashed, hung = rows["rank_one_crashes"], rows["rank_one_stalls"]
    assert crashed["status"] == "failed"
    assert crashed["error"].startswith("rank 1 crashed: Fatal Python error: Segmentation fault"), crashed["error"]
    killed = rows["rank_one_killed"]
    assert killed["status"] == "failed"
    assert killed["error"].startswith("rank 1 was killed by SIGKILL: the system may have run out of memory"), killed["error"]
    assert hung["status"] == "timeout"
    assert "rank 1 got least far (build" in hung["error"], hung["error"]
    assert "2 ranks: " in failing_sweeps.stderr, "the progress lines never said where the ranks were"
    assert failing_sweeps.left == [], "a rank or torchrun outlived its case"
