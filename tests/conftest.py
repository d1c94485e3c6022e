"""Shared pytest setup: run in-process tests on one thread.

torchbenchmark is imported before torch, so its native-log levels are set before torch reads them.
"""

import torchbenchmark  # noqa: F401

import torch  # noqa: E402  isort: skip

# Behaviour, not speed, is tested here; one thread avoids intra-op threads spinning on a busy machine.
torch.set_num_threads(1)


def pytest_configure(config) -> None:  # type: ignore[no-untyped-def]
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU; skipped without one (benchmarks/gpu_check.sh runs them)")
