"""Trace analysis and the GPU verdict on hand-made CUDA traces in the shape Kineto writes (any machine).

The traces under tests/data are written by tests/data/make_cuda_traces.py, which says what is in them:
two train steps of 1000 µs, GPU copies of the step and phase annotations, backward launched from the
autograd thread, kernels on streams 7 and 20 joined to their launches by correlation id, and the
harness's cudaDeviceSynchronize at each step's end. Only their kernels differ: CPU-paced or GPU-paced.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from torchbenchmark.analyze import steps as analysis
from torchbenchmark.analyze import verdict as dispatch
from torchbenchmark.analyze.steps import summarize_events, summarize_trace
from torchbenchmark.analyze.trace import load_events

DATA = Path(__file__).resolve().parents[1] / "data"
CPU_PACED = DATA / "cuda_cpu_paced.pt.trace.json"
GPU_PACED = DATA / "cuda_gpu_paced.pt.trace.json"
STEP_MS = 0.999  # each ProfilerStep window


@pytest.fixture(scope="module", params=[CPU_PACED, GPU_PACED], ids=["cpu-paced", "gpu-paced"])
def trace(request: pytest.FixtureRequest) -> Path:
    return request.param


def test_gpu_copies_of_the_step_annotation_are_not_steps(trace: Path) -> None:
    names = [(e.get("cat"), e.get("name")) for e in load_events(trace)]
    assert names.count(("gpu_user_annotation", "ProfilerStep#2")) == 1  # the trace has the copies...
    summary = summarize_trace(trace)
    assert summary.steps == 2  # ...and they do not double the steps
    assert summary.step_ms == pytest.approx(STEP_MS)
    assert summary.ops_per_step == 6
    assert summary.calls_per_step == 4
    assert summary.gpu_busy_fraction is not None


def test_gpu_work_is_counted_once_per_step(trace: Path) -> None:
    summary = summarize_trace(trace)
    assert summary.gpu is not None and summary.gpu.kernels_per_step == 5
    analysis.check_complete(summary, profiled_steps=2, on_gpu=True)


@pytest.mark.parametrize(
    ("path", "forward", "backward", "optimizer"),
    [
        # Kernel time launched in each phase: backward's from the autograd thread, two streams' overlap once.
        (CPU_PACED, 110 + 170, 215, 260),
        (GPU_PACED, 300 + 200, 315, 240),
    ],
    ids=["cpu-paced", "gpu-paced"],
)
def test_phases_on_a_gpu_are_the_kernel_time_each_launched(path: Path, forward: float, backward: float, optimizer: float) -> None:
    # Their CPU windows (290, 400 and 100 µs) are mostly time spent queuing, whatever the kernels take.
    phases_us = {phase: ms * 1e3 for phase, ms in summarize_trace(path).phases_ms.items()}
    assert phases_us == {"forward": pytest.approx(forward), "backward": pytest.approx(backward), "optimizer": pytest.approx(optimizer)}


@pytest.mark.parametrize(
    ("path", "busy_us", "wait_us"),
    [(CPU_PACED, 110 + 170 + 215 + 260, 5), (GPU_PACED, 940, 80)],
    ids=["cpu-paced", "gpu-paced"],
)
def test_kernel_time_busy_share_and_waits(path: Path, busy_us: float, wait_us: float) -> None:
    summary = summarize_trace(path)
    assert summary.gpu is not None
    assert summary.gpu.busy_ms_per_step * 1e3 == pytest.approx(busy_us)
    assert summary.gpu_busy_fraction == pytest.approx(busy_us / (STEP_MS * 1e3))
    assert summary.gpu.sync_ms_per_step * 1e3 == pytest.approx(140)  # the harness's sync at each step's end
    assert summary.gpu.median_launch_wait_us == pytest.approx(wait_us)
    assert summary.gpu.unlaunched == 0


def test_top_ops_rank_by_the_kernel_time_they_launched_as_well() -> None:
    top = summarize_trace(CPU_PACED).top_ops
    # By CPU self time alone aten::addmm (80 µs) would come second and relu (50 µs) fourth.
    assert [op.name for op in top[:4]] == ["aten::mm", "aten::_foreach_add_", "aten::relu", "aten::addmm"]
    # aten::mm launched both backward kernels, one on each stream: their time adds up per op.
    assert [op.kernel_ms_per_step * 1e3 for op in top[:4]] == pytest.approx([400, 260, 170, 110])
    assert top[0].self_ms_per_step * 1e3 == pytest.approx(150)


def test_a_cpu_paced_loop_is_dispatch_bound_however_busy_its_gpu() -> None:
    summary = summarize_trace(CPU_PACED)
    # The GPU's idle share (1 - 75.5%) alone reads "mixed"; the GPU only ever waits on the host.
    assert dispatch.verdict(1 - summary.gpu_busy_fraction) == "mixed"
    evidence = dispatch.judge_gpu(summary, median_ms=1.0)
    assert evidence.limited_by == "cpu"
    assert evidence.host_wait_pct == pytest.approx(100 * 0.14 / STEP_MS)
    assert evidence.median_launch_wait_us == pytest.approx(5)
    assert dispatch.gpu_verdict(evidence) == ("dispatch-bound", pytest.approx(0.245))


def test_a_gpu_paced_loop_is_compute_bound() -> None:
    evidence = dispatch.judge_gpu(summarize_trace(GPU_PACED), median_ms=1.0)
    # The host waits only 14% of the step, but kernels wait a median 80 µs in the queue behind earlier ones.
    assert evidence.limited_by == "gpu"
    assert evidence.host_wait_pct < 100 * dispatch.HOST_WAIT_CPU_BOUND_BELOW
    assert dispatch.gpu_verdict(evidence)[0] == "compute-bound"
    assert evidence.kernels_per_step == 5


def test_busy_share_is_against_the_unprofiled_median_step() -> None:
    # The profiled steps are 0.999 ms; a 2 ms unprofiled median halves the share.
    evidence = dispatch.judge_gpu(summarize_trace(CPU_PACED), median_ms=2.0)
    assert evidence.busy_pct == pytest.approx(100 * 0.755 / 2.0)
    assert evidence.kernel_ms_per_step == pytest.approx(0.755)


def _x(cat: str, name: str, ts: float, dur: float, tid: int = 1, pid: int = 1, **args: object) -> dict:
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "pid": pid, "tid": tid, "args": args}


def test_a_host_sync_inside_the_step_is_waiting_on_the_gpu_not_overhead() -> None:
    events = [
        _x("user_annotation", "ProfilerStep#1", 0, 100),
        _x("cpu_op", "aten::mm", 2, 8),
        _x("cuda_runtime", "cudaLaunchKernel", 4, 4, correlation=1),
        _x("kernel", "gemm", 9, 70, pid=0, tid=7, correlation=1),
        _x("cpu_op", "aten::item", 12, 70),  # .item(): a copy to the host, then the host waits for it
        _x("cuda_runtime", "cudaMemcpyAsync", 13, 3, correlation=2),
        _x("gpu_memcpy", "Memcpy DtoH (Device -> Pageable)", 79, 1, pid=0, tid=7, correlation=2),
        _x("cuda_runtime", "cudaStreamSynchronize", 17, 64, correlation=3),
        _x("cuda_runtime", "cudaDeviceSynchronize", 90, 2, correlation=4),
    ]
    summary = summarize_events(events)
    assert summary.gpu is not None and summary.gpu.sync_ms_per_step * 1e3 == pytest.approx(66)
    evidence = dispatch.judge_gpu(summary, median_ms=0.1)
    assert evidence.limited_by == "gpu" and evidence.host_wait_pct == pytest.approx(66)
    assert {op.name: op.kernel_ms_per_step * 1e3 for op in summary.top_ops} == {"aten::mm": 70, "aten::item": 1}


def test_kernels_launched_through_the_driver_api_join_too() -> None:
    # Triton kernels (torch.compile) are launched with cuLaunchKernel, a cuda_driver event.
    events = [
        _x("user_annotation", "ProfilerStep#1", 0, 100),
        _x("cpu_op", "triton_poi_fused_add_0", 2, 10),
        _x("cuda_driver", "cuLaunchKernel", 4, 4, correlation=9),
        _x("kernel", "triton_poi_fused_add_0", 60, 10, pid=0, tid=7, correlation=9),
    ]
    summary = summarize_events(events)
    assert summary.gpu is not None and summary.gpu.median_launch_wait_us == pytest.approx(56)
    assert summary.top_ops[0].kernel_ms_per_step * 1e3 == pytest.approx(10)


def test_kernels_belong_to_the_step_that_launched_them() -> None:
    events = [
        _x("user_annotation", "ProfilerStep#1", 0, 100),
        _x("user_annotation", "ProfilerStep#2", 100, 100),
        _x("cuda_runtime", "cudaLaunchKernel", 90, 4, correlation=1),
        _x("kernel", "late", 105, 20, pid=0, tid=7, correlation=1),  # runs in step 2's window, launched in step 1
        _x("cuda_runtime", "cudaLaunchKernel", 110, 4, correlation=2),
        _x("kernel", "on_time", 130, 20, pid=0, tid=7, correlation=2),
    ]
    summary = summarize_events(events)
    assert summary.gpu is not None and summary.gpu.kernels_per_step == 1
    assert summary.gpu.median_launch_wait_us == pytest.approx(17.5)


def test_a_cuda_trace_without_gpu_events_or_with_missing_steps_is_refused() -> None:
    cpu_only = [e for e in load_events(CPU_PACED) if e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset")]
    summary = summarize_events(cpu_only)
    assert summary.gpu is None and summary.gpu_busy_fraction is None
    analysis.check_complete(summary, profiled_steps=2, on_gpu=False)  # on a CPU nothing is missing
    with pytest.raises(analysis.IncompleteTrace, match="no kernel events"):
        analysis.check_complete(summary, profiled_steps=2, on_gpu=True)
    with pytest.raises(analysis.IncompleteTrace, match="holds 2 of the 3 profiled steps"):
        analysis.check_complete(summarize_trace(CPU_PACED), profiled_steps=3, on_gpu=True)


def test_a_cuda_graph_launch_waits_once_for_its_first_kernel() -> None:
    # torch.compile's reduce-overhead mode replays CUDA graphs: many kernels, one launch, run in turn.
    events = [
        _x("user_annotation", "ProfilerStep#1", 0, 200),
        _x("cuda_runtime", "cudaGraphLaunch", 10, 5, correlation=3),
        *(_x("kernel", f"graph_kernel_{i}", 16 + 30 * i, 30, pid=0, tid=7, correlation=3) for i in range(5)),
    ]
    summary = summarize_events(events)
    assert summary.gpu is not None and summary.gpu.kernels_per_step == 5
    assert summary.gpu.median_launch_wait_us == pytest.approx(6)
