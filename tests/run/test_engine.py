"""The CUDA path: device choice, names and syncs on any machine (CUDA faked where needed), and GPU-only
checks, marked ``gpu`` and skipped without one (benchmarks/gpu_check.sh runs them on a GPU)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from tests.helpers.sweeps import FAST, SWEEP_ARGS, TINY, diagnose
from tests.helpers.synthetic_models import FewLargeMatmuls, ManyTinyOps
from tests.helpers.tiny_models import TinyMLP
from torchbenchmark import cli
from torchbenchmark.cli.args import UsageError
from torchbenchmark.cli.models import resolve_device
from torchbenchmark.cli.sweep import build_parser
from torchbenchmark.contract import BatchSizes, BenchmarkModel, ModelMeta
from torchbenchmark.measure import calibration as dispatch
from torchbenchmark.measure import harness
from torchbenchmark.report.summary import note
from torchbenchmark.results.spec import Budget
from torchbenchmark.run import engine
from torchbenchmark.run.case import worker_environment as _worker_environment
from torchbenchmark.run.failures import OUT_OF_MEMORY_HINT, describe_failure
from torchbenchmark.run.outdir import stem, trace_name

ROOT = Path(__file__).resolve().parents[2]
gpu = pytest.mark.gpu
needs_gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
QUICK = Budget(warmup_s=1.0, measure_s=0.5, min_steps=3, edge_calls=2)


@pytest.fixture
def fake_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    """This machine as a two-GPU one, as far as choosing a device goes."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)


def test_auto_picks_cuda_where_there_is_one(fake_cuda: None) -> None:
    assert resolve_device("auto") == "cuda"


def test_every_sweep_in_the_tests_names_cpu_even_where_cuda_is_available(fake_cuda: None) -> None:
    # Without --device these sweeps would run on the GPU and their asserts on cpu rows and files fail.
    for args in (SWEEP_ARGS, FAST):
        parsed = build_parser().parse_args(["--models", "tiny_mlp", *args])
        assert resolve_device(parsed.device) == "cpu"


@pytest.mark.parametrize(("text", "device"), [("cuda", "cuda"), ("cuda:1", "cuda:1"), ("cpu", "cpu"), ("cpu:0", "cpu")])
def test_devices_are_kept_whole(fake_cuda: None, text: str, device: str) -> None:
    assert resolve_device(text) == device


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("cuda:00", "unknown device 'cuda:00'"),  # torch.device refuses it: it must not pass the check
        ("cuda:-1", "unknown device 'cuda:-1'"),
        ("cuda:2", "there are 2 CUDA devices"),
        ("meta", "unknown device 'meta'"),
    ],
)
def test_a_device_torch_would_refuse_is_a_usage_error(fake_cuda: None, text: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        resolve_device(text)


def test_cuda_00_exits_2_before_the_output_folder_exists(fake_cuda: None, tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    assert cli.main(["--models", TINY, "--out", str(out), "--device", "cuda:00"]) == 2
    assert "unknown device 'cuda:00'" in capsys.readouterr().err
    assert not out.exists()


def test_trace_names_keep_the_full_device() -> None:
    assert trace_name(stem("train", "cpu"), "light") == "train-cpu.pt.trace.json.gz"
    assert trace_name(stem("eval", "cuda"), "detailed") == "eval-cuda-detailed.pt.trace.json.gz"
    assert trace_name(stem("train", "cuda:1"), "light") == "train-cuda:1.pt.trace.json.gz"


def test_kineto_errors_reach_a_cuda_cases_log(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KINETO_LOG_LEVEL", "5")  # as the tests' own process sets it
    assert _worker_environment("cuda:1")["KINETO_LOG_LEVEL"] == "3"  # errors: why a trace lacks GPU events
    assert _worker_environment("cpu")["KINETO_LOG_LEVEL"] == "5"  # on a CPU only noise about the GPU


def test_a_case_on_a_gpu_makes_it_current_and_syncs_it(monkeypatch: pytest.MonkeyPatch) -> None:
    current: list[Any] = []
    synced: list[Any] = []
    monkeypatch.setattr(torch.cuda, "set_device", current.append)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: synced.append(device))
    harness.use_device(torch.device("cpu"))
    harness.use_device(torch.device("cuda"))  # the current GPU already: set_device would refuse it
    assert current == []
    harness.use_device(torch.device("cuda:1"))
    harness.device_sync(torch.device("cuda:1"))()
    assert current == [torch.device("cuda:1")] and synced == [torch.device("cuda:1")]


def test_gpu_calibration_syncs_its_device_before_each_burst_it_does_not_wait_for(monkeypatch: pytest.MonkeyPatch) -> None:
    events: list[str] = []
    asked: list[Any] = []

    def device_sync(device: torch.device) -> Any:
        asked.append(device)
        return lambda: events.append("sync")

    clock = iter(range(0, 10**12, 1000))
    monkeypatch.setattr(dispatch, "device_sync", device_sync)
    monkeypatch.setattr(dispatch.time, "perf_counter_ns", lambda: (events.append("clock"), next(clock))[1])
    dispatch.calibrate(torch.device("cpu"), calls=80, repeats=1, profiled_calls=5)
    assert asked and all(device == torch.device("cpu") for device in asked)
    bursts = "".join("s" if e == "sync" else "c" for e in events)
    # Each burst: a sync, then two clock reads with no sync between them (the kernels are not waited for).
    assert re.fullmatch(r"(s+cc)+s*", bursts), bursts


def test_the_warmup_window_is_sized_from_the_second_step() -> None:
    budget = Budget(warmup_s=8.0, warmup_window=3)
    # A first step of 5 s (library set-up, lazy kernel loading) must not shrink the window of 1 ms steps.
    assert harness.warmup_window(budget, [5_000_000_000, 1_000_000]) == 3
    assert harness.warmup_window(budget, [1_000_000, 3_000_000_000]) == 2


@pytest.mark.parametrize(
    "message",
    [
        "CUDA out of memory. Tried to allocate 20.00 GiB",
        "CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`",
        "cuDNN error: CUDNN_STATUS_ALLOC_FAILED",
    ],
)
def test_gpu_allocation_failures_are_out_of_memory_rows(message: str) -> None:
    status, reason = describe_failure(RuntimeError(message), "train")
    assert status == "failed" and reason.startswith(OUT_OF_MEMORY_HINT)


# --- GPU only ---------------------------------------------------------------------------------------


class HugeActivation(BenchmarkModel):
    """Asks for a 64 TiB activation on its first step: more memory than any GPU has."""

    meta = ModelMeta(name="huge_activation", family="test", batch_sizes=BatchSizes.same(cpu=1, cuda=1))

    def build(self) -> nn.Module:
        return nn.Linear(4, 4)

    def make_inputs(self, batch_size: int, mode: str, generator: torch.Generator) -> Any:
        return (torch.randn(batch_size, 4, generator=generator),)

    def loss(self, inputs: Any) -> torch.Tensor:
        return self.module(*inputs).sum() + torch.empty(1 << 44, device=self.device).sum()


@gpu
@needs_gpu
@pytest.mark.parametrize("mode", ["train", "eval"])
def test_many_tiny_ops_on_a_gpu_is_dispatch_bound(tmp_path: Path, mode: str) -> None:
    result = diagnose(ManyTinyOps, mode, device="cuda", out_dir=tmp_path, budget=QUICK, detailed=False)
    assert result.status == "ok", result.error
    assert result.gpu is not None and result.gpu.limited_by == "cpu", result.gpu
    assert result.dispatch.verdict == "dispatch-bound", result
    assert result.dispatch.ops_per_step >= 300


@gpu
@needs_gpu
@pytest.mark.parametrize("mode", ["train", "eval"])
def test_few_large_matmuls_on_a_gpu_is_compute_bound(tmp_path: Path, mode: str) -> None:
    result = diagnose(FewLargeMatmuls, mode, device="cuda", out_dir=tmp_path, budget=QUICK, detailed=False)
    assert result.status == "ok", result.error
    assert result.gpu is not None and result.gpu.limited_by == "gpu", result.gpu
    assert result.dispatch.verdict == "compute-bound", result


@gpu
@needs_gpu
def test_a_gpu_row_has_every_gpu_figure(tmp_path: Path) -> None:
    result = diagnose(FewLargeMatmuls, "train", device="cuda:0", out_dir=tmp_path, budget=QUICK)
    assert result.status == "ok", result.error
    row = result.to_dict()
    assert row["device"] == "cuda:0"
    assert None not in row["gpu"].values() and row["gpu"]["kernels_per_step"] > 0
    assert row["gpu_busy_pct"] > 0 and row["phases_pct"]["backward"] > 0
    assert any(op["kernel_ms_per_step"] for op in row["top_ops"])
    assert (tmp_path / row["traces"]["light"]).name == "train-cuda:0.pt.trace.json.gz"
    assert dispatch.calibrate(torch.device("cuda:0"), calls=500, repeats=2).prices.call_us > 0


@gpu
@needs_gpu
def test_out_of_memory_on_a_gpu_is_a_row(tmp_path: Path) -> None:
    result = diagnose(HugeActivation, "train", device="cuda", out_dir=tmp_path, budget=QUICK, detailed=False)
    assert result.status == "failed" and result.error.startswith(OUT_OF_MEMORY_HINT), result.error


@gpu
@needs_gpu
def test_a_sweep_on_a_gpu_writes_cuda_rows_and_files(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "diagnostics.py"),
            "--models",
            TINY,
            "--device",
            "cuda",
            "--steps",
            "5",
            "--no-progress",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    rows = json.loads((tmp_path / "summary.json").read_text())["results"]
    assert {(row["device"], row["status"]) for row in rows} == {("cuda", "ok")}
    assert all(row["gpu"]["limited_by"] in ("cpu", "gpu", "both") for row in rows)
    assert (tmp_path / "tiny_mlp" / "train-cuda.pt.trace.json.gz").exists()


@pytest.fixture
def two_threads() -> Any:
    """Two intra-op threads for one test, the session's one restored after it."""
    saved = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(saved)


@pytest.mark.slow
def test_a_case_at_two_threads_is_priced_for_two(tmp_path: Path, two_threads: None) -> None:
    """In this process, as a sweep's --threads 2 case runs: the step replayed gives its Python, so the interval's
    low end holds it too and no note widens it."""
    row = diagnose(ManyTinyOps, "eval", out_dir=tmp_path, budget=QUICK, detailed=False)
    assert row.status == "ok", row.error
    dispatch = row.dispatch
    assert dispatch.warm_gap_us is not None and dispatch.real_gap_us and dispatch.interval_note is None, dispatch
    low, high = dispatch.overhead_interval
    assert low <= dispatch.fraction <= high, dispatch
    assert torch.get_num_threads() == 2  # the case left the threads it found
    # The estimate's terms sum to the overhead the share is made of, and the row's repr shows them.
    overhead_us = dispatch.overhead_fraction_uncapped * row.step_time.median_ms * 1e3
    assert sum(dispatch.terms_us.values()) == pytest.approx(overhead_us, rel=0.01), dispatch.terms_us
    assert "µs a step = call " in repr(row) and "python" in dispatch.terms_us


@pytest.mark.slow
def test_a_cases_prices_are_timed_before_its_profiles_and_on_each_side_of_its_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three moments seconds apart: a spell of load at one leaves the median, and a spell that slowed the replay
    slows a moment beside it. The prices are kept in the file only once all three are taken."""
    seen: list[str] = []

    def spy(owner: Any, name: str, label: str) -> None:
        real = getattr(owner, name)
        monkeypatch.setattr(owner, name, lambda *args, **kwargs: (seen.append(label), real(*args, **kwargs))[1])

    spy(dispatch.Calibrating, "moment", "calibrate")
    spy(engine, "run_profile", "profile")
    spy(engine, "measure_costs", "costs")
    spy(engine.replay, "warm_reading", "replay")
    kept = tmp_path / "prices.json"
    row = diagnose(TinyMLP, "eval", out_dir=tmp_path / "out", budget=QUICK, detailed=False, calibration=str(kept))
    assert row.status == "ok", row.error
    assert seen == ["calibrate", "profile", "costs", "calibrate", "replay", "calibrate"]
    repeats = json.loads(kept.read_text())["calibration"]["repeats"]
    assert len(repeats) == 3 * dispatch.MOMENT_REPEATS
    assert row.timings_s["calibrate"] > 0


class RecordsThreads(TinyMLP):
    """Keeps the intra-op threads each of its steps ran at."""

    seen: list[int] = []

    def eval_step(self, inputs: Any) -> None:
        RecordsThreads.seen.append(torch.get_num_threads())
        super().eval_step(inputs)


@pytest.mark.slow
def test_the_case_runs_at_the_threads_its_spec_records_and_gives_the_process_its_own_back(tmp_path: Path) -> None:
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        RecordsThreads.seen.clear()
        row = diagnose(RecordsThreads, "eval", out_dir=tmp_path, budget=QUICK, detailed=False, threads=1)
        after = torch.get_num_threads()
    finally:
        torch.set_num_threads(before)
    assert row.status == "ok", row.error
    assert RecordsThreads.seen and set(RecordsThreads.seen) == {1}, RecordsThreads.seen
    assert after == 2


class NoRoomAtBatchOne(TinyMLP):
    """Runs at its own batch (4) and at 2; at batch 1 its inputs cannot be made, as if memory ran out."""

    def make_inputs(self, batch_size: int, mode: str, generator: torch.Generator) -> Any:
        if batch_size == 1:
            raise RuntimeError("DefaultCPUAllocator: not enough memory: you tried to allocate 1099511627776 bytes")
        return super().make_inputs(batch_size, mode, generator)


@pytest.mark.slow
def test_a_scaling_batch_that_fails_is_a_note_and_the_case_keeps_its_figures(tmp_path: Path) -> None:
    row = diagnose(NoRoomAtBatchOne, "eval", out_dir=tmp_path, budget=QUICK, detailed=False, scaling=True)
    assert row.status == "ok" and row.step_time is not None and row.dispatch is not None, row.error
    assert row.dispatch.scaling_failed.startswith("failed at batch 1: "), row.dispatch.scaling_failed
    assert row.dispatch.scaling is not None and row.dispatch.scaling.batch_sizes == (2, 4)  # fitted on what ran
    assert f"scaling: {row.dispatch.scaling_failed}" in note(row)


@pytest.mark.slow
def test_a_replay_that_never_reaches_an_op_is_abandoned_and_the_case_keeps_its_figures(tmp_path: Path) -> None:
    """In a sweep, under its timeout: without the watchdog the case sat replaying until it timed out, its figures lost."""
    spec = f"{ROOT / 'tests' / 'helpers' / 'hostile_models.py'}:WaitsForItsOwnWrite"
    out = tmp_path / "out"
    assert cli.main(["--models", spec, "--modes", "eval", "--out", str(out), "--timeout", "180", *FAST]) == 0
    (row,) = json.loads((out / "summary.json").read_text())["results"]
    assert row["status"] == "ok" and row["dispatch"]["warm_gap_us"] is None, row.get("error")
    assert "no warm replay" in (out / row["log"]).read_text()
