"""Plain-contract plug-ins for the warm replay: one whose glue runs after large ops, one whose step checks a value,
one through an LSTM, twins of glue whose rounds are counted in a tensor and in an int, and one blocked inside an op."""

from __future__ import annotations

import time
from collections.abc import Callable

import torch
from torch import nn

from tests.helpers.plain_plugins import PlainModel


class GlueAfterLargeOps(PlainModel):
    """Module calls between matrix products large enough to leave the caches cold."""

    name = "glue_after_large_ops"

    def __init__(self, device: str = "cpu", batch_size: int | None = None) -> None:
        super().__init__(device, batch_size)
        self.net = nn.Sequential(*(nn.Sequential(nn.Linear(512, 512), nn.Identity(), nn.ReLU()) for _ in range(4))).to(device)
        self.optimizer = torch.optim.SGD(self.net.parameters(), lr=0.1)
        self.x = torch.randn(batch_size or 256, 512, device=device)


class ChecksItsValues:
    """A step that counts in a tensor and checks the count: replayed, the count stands still and the check fails."""

    name = "checks_its_values"

    def __init__(self, device: str = "cpu", batch_size: int | None = None) -> None:
        self.count = torch.zeros((), device=device)
        self.expected = 0
        self.x = torch.randn(batch_size or 64, 64, device=device)

    def train(self, niter: int = 1, step_fn: Callable[[], None] | None = None) -> None:
        self.eval(niter, step_fn)

    def eval(self, niter: int = 1, step_fn: Callable[[], None] | None = None) -> None:
        for _ in range(niter):
            (self.x @ self.x).relu()
            self.count.add_(1)
            self.expected += 1
            if int(self.count) != self.expected:
                raise RuntimeError(f"counted {int(self.count)} steps, ran {self.expected}")
            if step_fn is not None:
                step_fn()


class SmallLSTM(PlainModel):
    """A step through a two-layer LSTM of width 4 over 16 time steps: oneDNN's RNN layer, one call a layer."""

    name = "small_lstm"

    def __init__(self, device: str = "cpu", batch_size: int | None = None) -> None:
        torch.manual_seed(0)
        self.net = nn.LSTM(4, 4, num_layers=2, batch_first=True).to(device)
        self.x = torch.randn(batch_size or 2, 16, 4, device=device)

    def train(self, niter: int = 1, step_fn: Callable[[], None] | None = None) -> None:
        for _ in range(niter):
            self.net(self.x)[0].sum().backward()
            if step_fn is not None:
                step_fn()


class GlueCountedInATensor:
    """300 rounds of glue a step (a tiny op and some Python each), their number read back from a running total the
    step adds to in place, a float: replayed, the add is not made, the total stands still, and the step runs no glue.
    (An integer total would be computed each call, as an index is: ``measure.replay._steers``.)"""

    name = "glue_counted_in_a_tensor"
    rounds = 300

    def __init__(self, device: str = "cpu", batch_size: int | None = None) -> None:
        self.x = torch.randn(batch_size or 8, device=device)
        self.total = torch.zeros((), dtype=torch.float64)
        self.seen = 0
        self.log: dict[int, float] = {}

    def train(self, niter: int = 1, step_fn: Callable[[], None] | None = None) -> None:
        self.eval(niter, step_fn)

    def eval(self, niter: int = 1, step_fn: Callable[[], None] | None = None) -> None:
        for _ in range(niter):
            self.glue(self.count())
            if step_fn is not None:
                step_fn()

    def count(self) -> int:
        self.total.add_(self.rounds)
        total = int(self.total)
        rounds, self.seen = total - self.seen, total
        return rounds

    def glue(self, rounds: int) -> None:
        y = self.x
        for i in range(rounds):
            y = y.mul(1.0001) if i % 2 else y.add(0.0001)
            self.log[i % 7] = float(i) * 0.5 + len(self.log)


class GlueCountedInAnInt(GlueCountedInATensor):
    """``GlueCountedInATensor``'s twin, its rounds counted in Python: the replay runs all of them."""

    name = "glue_counted_in_an_int"

    def count(self) -> int:
        return self.rounds


NAP_S = 0.002  # of a step with about 3 ms of glue


_LIBRARIES: list[torch.library.Library] = []  # a library's ops go with it


def _nap() -> Callable[[torch.Tensor], torch.Tensor]:
    """An op that sleeps inside its kernel, as a thread waits at a parallel region's join: blocked in an op event,
    not in a gap. Defined once a process, however often this file is loaded."""
    try:
        return torch.ops.torchbenchmark_tests.nap.default
    except AttributeError:
        library = torch.library.Library("torchbenchmark_tests", "DEF")
        library.define("nap(Tensor x) -> Tensor")

        def nap(x: torch.Tensor) -> torch.Tensor:
            time.sleep(NAP_S)
            return x.clone()

        library.impl("nap", nap, "CPU")
        _LIBRARIES.append(library)
        return torch.ops.torchbenchmark_tests.nap.default


class NapsInsideAnOp(PlainModel):
    """A step blocked 2 ms inside one op, with about 3 ms of Python between its ops: its gaps hold the glue and none
    of the nap."""

    name = "naps_inside_an_op"

    def __init__(self, device: str = "cpu", batch_size: int | None = None) -> None:
        super().__init__(device, batch_size)
        self.nap = _nap()

    def eval(self, niter: int = 1, step_fn: Callable[[], None] | None = None) -> None:
        with torch.no_grad():
            for _ in range(niter):
                y = self.nap(self.net(self.x))
                sum(i * i for i in range(120_000))  # the glue
                y.relu()
                if step_fn is not None:
                    step_fn()
