"""Writes the two hand-made CUDA traces next to this file: ``python tests/data/make_cuda_traces.py``.

Each is two train steps in the shape Kineto writes on a GPU: ``ProfilerStep#N`` and phase annotations on
the main thread (``user_annotation``) with their GPU copies (``gpu_user_annotation``); ops (``cpu_op``) on
the main thread and, for backward, on the autograd thread; ``cudaLaunchKernel`` calls (``cuda_runtime``)
joined to their kernels by ``args.correlation`` and by ``ac2g`` flow events; kernels on streams 7 and 20
of GPU 0; the harness's ``cudaDeviceSynchronize`` at each step's end. The host side is the same in both;
only the kernels differ:

cuda_cpu_paced: every kernel starts about 5 µs after its launch and ends before the next launch; the GPU
    is busy 75.5% of each 1000 µs step, yet it only ever waits for the host.
cuda_gpu_paced: long kernels queue behind each other on stream 7 (a median 80 µs from launch to start);
    the host finishes launching early and waits in the final sync.
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).parent
PID, MAIN, AUTOGRAD = 4242, 4242, 4250  # the process, its main thread and the autograd engine's thread
GPU = 0
STEP_US = 1000.0
# (name, thread, start, duration) of each host event, relative to its step's start.
ANNOTATIONS = [("forward", 10, 290), ("backward", 300, 400), ("optimizer", 700, 100)]
OPS = [
    ("aten::linear", MAIN, 20, 100),
    ("aten::addmm", MAIN, 30, 80),
    ("aten::relu", MAIN, 150, 50),
    ("autograd::engine::evaluate_function: AddmmBackward0", AUTOGRAD, 320, 180),
    ("aten::mm", AUTOGRAD, 330, 150),
    ("aten::_foreach_add_", MAIN, 710, 80),
]
# (kernel, thread of its launch, launch start, stream) in launch order; the launch call lasts 8 µs.
LAUNCHES = [
    ("ampere_sgemm_64x32_tn", MAIN, 40, 7),
    ("vectorized_elementwise_kernel<relu>", MAIN, 160, 7),
    ("ampere_sgemm_128x64_nt", AUTOGRAD, 340, 7),
    ("ampere_sgemm_64x64_nn", AUTOGRAD, 350, 20),
    ("multi_tensor_apply_kernel<add>", MAIN, 720, 7),
]
# Phase of each launch, for the GPU copies of the annotations (backward launches on another thread: no copy).
PHASE_OF_LAUNCH = ["forward", "forward", None, None, "optimizer"]
SYNC = (850, 140)  # the harness's cudaDeviceSynchronize: start and duration
KERNELS = {  # (start, duration) of each launch's kernel
    "cuda_cpu_paced": [(45, 110), (165, 170), (345, 200), (360, 200), (725, 260)],
    "cuda_gpu_paced": [(45, 300), (345, 200), (545, 200), (430, 270), (745, 240)],
}


def complete(cat: str, name: str, pid: int, tid: int, ts: float, dur: float, **args: object) -> dict:
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def trace(kernels: list[tuple[float, float]]) -> dict:
    events: list[dict] = [
        {"name": "process_name", "ph": "M", "ts": 0, "pid": PID, "tid": 0, "args": {"name": "python"}},
        {"name": "process_name", "ph": "M", "ts": 0, "pid": GPU, "tid": 0, "args": {"name": "python"}},
        {"name": "process_labels", "ph": "M", "ts": 0, "pid": GPU, "tid": 0, "args": {"labels": "GPU 0"}},
        {"name": "thread_name", "ph": "M", "ts": 0, "pid": GPU, "tid": 7, "args": {"name": "stream 7"}},
        {"name": "thread_name", "ph": "M", "ts": 0, "pid": GPU, "tid": 20, "args": {"name": "stream 20"}},
        {"ph": "i", "cat": "Trace", "name": "Iteration Start: PyTorch Profiler", "pid": "Spans", "tid": "Spans", "ts": 900, "s": "g"},
    ]
    external = 0
    correlation = 100
    for step in range(2):
        base = 1000.0 + step * STEP_US
        external += 1
        step_name = f"ProfilerStep#{step + 2}"
        events.append(complete("user_annotation", step_name, PID, MAIN, base, STEP_US - 1, **{"External id": external}))
        for name, start, dur in ANNOTATIONS:
            external += 1
            events.append(complete("user_annotation", name, PID, MAIN, base + start, dur, **{"External id": external}))
        for name, tid, start, dur in OPS:
            external += 1
            events.append(complete("cpu_op", name, PID, tid, base + start, dur, **{"External id": external}))
        step_kernels = []
        for (kernel, tid, start, stream), (k_start, k_dur) in zip(LAUNCHES, kernels):
            correlation += 1
            events.append(complete("cuda_runtime", "cudaLaunchKernel", PID, tid, base + start, 8, correlation=correlation))
            events.append(
                complete(
                    "kernel",
                    kernel,
                    GPU,
                    stream,
                    base + k_start,
                    k_dur,
                    device=GPU,
                    stream=stream,
                    correlation=correlation,
                    **{"External id": external},
                )
            )
            events.append({"ph": "s", "id": correlation, "pid": PID, "tid": tid, "ts": base + start, "cat": "ac2g", "name": "ac2g"})
            events.append(
                {"ph": "f", "id": correlation, "pid": GPU, "tid": stream, "ts": base + k_start, "cat": "ac2g", "name": "ac2g", "bp": "e"}
            )
            step_kernels.append((base + k_start, base + k_start + k_dur))
        correlation += 1
        events.append(complete("cuda_runtime", "cudaDeviceSynchronize", PID, MAIN, base + SYNC[0], SYNC[1], correlation=correlation))
        # Kineto's GPU copies of the annotations: the span of the kernels launched under each, on stream 7.
        copies = {step_name: step_kernels[:2] + step_kernels[4:]}
        for phase in ("forward", "optimizer"):
            copies[phase] = [span for span, of in zip(step_kernels, PHASE_OF_LAUNCH) if of == phase]
        for name, spans in copies.items():
            start, end = min(s for s, _ in spans), max(e for _, e in spans)
            events.append(complete("gpu_user_annotation", name, GPU, 7, start, end - start, **{"External id": external}))
    return {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}], "traceEvents": events}


if __name__ == "__main__":
    for name, kernels in KERNELS.items():
        document = trace(kernels)
        lines = ",\n".join(json.dumps(event) for event in document.pop("traceEvents"))
        head = json.dumps(document)[:-1]
        (HERE / f"{name}.pt.trace.json").write_text(f'{head}, "traceEvents": [\n{lines}\n]}}\n', encoding="utf-8")
