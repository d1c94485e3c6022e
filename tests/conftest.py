"""Shared pytest setup: quiet the profiler's native logging, and run in-process tests on one thread."""

import os

os.environ.setdefault("KINETO_LOG_LEVEL", "5")

import torch  # noqa: E402

# Behaviour, not speed, is tested here; one thread avoids intra-op threads spinning on a busy machine.
torch.set_num_threads(1)


def pytest_configure(config) -> None:  # type: ignore[no-untyped-def]
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU; skipped without one (benchmarks/gpu_check.sh runs them)")
