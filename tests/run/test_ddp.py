"""--ddp N: a train case as DistributedDataParallel through torch.distributed.run, with real ranks.

Each test launches torchrun with two gloo ranks on this machine. Every process of a test carries a
marker in its environment, so "no process left" is checked on exactly the processes the test started.
"""

from __future__ import annotations

import gzip
import json
import time
import uuid
from pathlib import Path

import pytest

from tests.helpers.processes import TOKEN_ENV, processes_with
from torchbenchmark.analyze.comm import summarize_comm
from torchbenchmark.analyze.trace import load_events
from torchbenchmark.results.schema import CaseResult
from torchbenchmark.results.spec import Budget, CaseSpec
from torchbenchmark.run import ddp
from torchbenchmark.run.worker import run_in_process

ROOT = Path(__file__).resolve().parents[2]
TINY = str(ROOT / "tests" / "helpers" / "tiny_models.py")
QUICK = Budget(warmup_s=0.5, steps=10, edge_calls=1, light_steps=3, light_s=0.0)


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


@pytest.mark.slow
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


@pytest.mark.slow
def test_a_segfaulting_rank_is_named_with_its_signal(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    row, marker = run_ddp(monkeypatch, tmp_path, "RankOneSegfaults")
    assert row.status == "failed"
    assert row.error is not None and row.error.startswith("rank 1 crashed: Fatal Python error: Segmentation fault"), row.error
    assert_no_process_left(marker)


@pytest.mark.slow
def test_a_hanging_rank_times_the_case_out_and_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    row, marker = run_ddp(monkeypatch, tmp_path, "RankOneHangs", timeout_s=45.0)
    assert row.status == "timeout"
    assert row.error is not None and "rank 1 got least far (build" in row.error, row.error
    assert_no_process_left(marker)


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
