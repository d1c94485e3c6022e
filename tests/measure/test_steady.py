"""The process settings of torchbenchmark/steady.py: freed tensor memory stays in the process, denormals flush."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from torchbenchmark.measure import steady

ON_GLIBC = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"

# Allocates, touches and frees a 64 MiB tensor: ten times to warm up (the heap takes a few rounds to
# settle), then nine times counting page faults. glibc maps a block that large afresh each time and
# faults its pages in again, unless told to keep freed memory.
CHURN = """
import json, resource, sys, torch
from torchbenchmark.measure.steady import steady_process
setting = steady_process() if sys.argv[1] == "steady" else None
for _ in range(10):
    torch.ones(16 << 20)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(9):
    torch.ones(16 << 20)
faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
kept = torch.ones(16 << 20)
with open("/proc/self/smaps_rollup") as smaps:
    huge_kb = next(int(line.split()[1]) for line in smaps if line.startswith("AnonHugePages:"))
print(json.dumps({"faults": faults, "setting": setting, "huge_kb": huge_kb}))
"""


def churn(variant: str, **env: str) -> dict:
    """Run CHURN in a fresh process with no allocator setting of the user's, plus ``env``."""
    clean = {key: value for key, value in os.environ.items() if key not in ("LD_PRELOAD", "GLIBC_TUNABLES", steady.THP_ENV)}
    done = subprocess.run([sys.executable, "-c", CHURN, variant], capture_output=True, text=True, env={**clean, **env}, check=True)
    return json.loads(done.stdout)


@pytest.mark.slow
@pytest.mark.skipif(not ON_GLIBC, reason="the allocator setting applies to glibc's malloc only")
def test_steady_process_keeps_freed_tensor_memory_instead_of_faulting_it_in_every_time() -> None:
    default, kept = churn("default"), churn("steady")
    pages = 9 * (64 << 20) // 4096
    assert default["faults"] > pages // 2, default  # the churn this guards against, measured as it happens
    assert kept["faults"] < pages // 100, kept
    assert kept["setting"].startswith(steady.GLIBC_KEEPS_MEMORY)


THP_MODE = Path("/sys/kernel/mm/transparent_hugepage/enabled")
MADVISE = THP_MODE.exists() and "[madvise]" in THP_MODE.read_text()


@pytest.mark.slow
@pytest.mark.skipif(not (ON_GLIBC and MADVISE), reason="huge pages on request: Linux with THP in madvise mode")
def test_steady_process_puts_large_tensors_in_huge_pages_unless_the_user_said_otherwise() -> None:
    default, kept = churn("default"), churn("steady")
    assert default["huge_kb"] == 0, default  # in madvise mode only a region that asks gets huge pages
    assert kept["huge_kb"] >= 32 << 10, kept  # the 64 MiB tensor, but for its unaligned edges
    assert kept["setting"] == f"{steady.GLIBC_KEEPS_MEMORY}; {steady.HUGE_PAGES}"
    user = churn("steady", **{steady.THP_ENV: "0"})
    assert user["huge_kb"] == 0 and user["setting"].endswith(f"the user's: {steady.THP_ENV}=0"), user


def test_a_users_own_allocator_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.arena_max=2")
    assert steady.malloc_setting() == "the user's: GLIBC_TUNABLES=glibc.malloc.arena_max=2"
    monkeypatch.delenv("GLIBC_TUNABLES")
    monkeypatch.setenv("LD_PRELOAD", "/usr/lib/libjemalloc.so.2")
    assert steady.malloc_setting() == "the user's: LD_PRELOAD=/usr/lib/libjemalloc.so.2"


@pytest.mark.slow
@pytest.mark.skipif(not ON_GLIBC, reason="the allocator setting applies to glibc's malloc only")
def test_a_users_tunables_win_over_ours() -> None:
    user = churn("steady", GLIBC_TUNABLES="glibc.malloc.mmap_threshold=1048576")
    assert user["setting"].startswith("the user's") and user["faults"] > 9 * (64 << 20) // 4096 // 2


@pytest.mark.slow
def test_denormals_are_flushed() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import torch; from torchbenchmark.measure.steady import steady_process; steady_process();"
            "print(torch.tensor([1e-40]).mul(1.0).item())",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert float(done.stdout) == 0.0
