"""Seawater density from TEOS-10's 48-term equation of state, as in pyhpc-benchmarks: many elementwise ops."""

from __future__ import annotations

import math

import torch
from torch import nn

from torchbenchmark.contract import BatchSizes, BenchmarkModel, ModelMeta, StepFn

# Coefficients of the 48-term rational function for specific volume (IOC, SCOR and IAPSO, 2010:
# TEOS-10 manual; McDougall et al. 2003), as the GSW toolbox and pyhpc-benchmarks use them.
V = (
    9.998420897506056e2, 2.839940833161907e0, -3.147759265588511e-2, 1.181805545074306e-3,
    -6.698001071123802e0, -2.986498947203215e-2, 2.327859407479162e-4, -3.988822378968490e-2,
    5.095422573880500e-4, -1.426984671633621e-5, 1.645039373682922e-7, -2.233269627352527e-2,
    -3.436090079851880e-4, 3.726050720345733e-6, -1.806789763745328e-4, 6.876837219536232e-7,
    -3.087032500374211e-7, -1.988366587925593e-8, -1.061519070296458e-11, 1.550932729220080e-10,
    1.0e0, 2.775927747785646e-3, -2.349607444135925e-5, 1.119513357486743e-6,
    6.743689325042773e-10, -7.521448093615448e-3, -2.764306979894411e-5, 1.262937315098546e-7,
    9.527875081696435e-10, -1.811147201949891e-11, -3.303308871386421e-5, 3.801564588876298e-7,
    -7.672876869259043e-9, -4.634182341116144e-11, 2.681097235569143e-12, 5.419326551148740e-6,
    -2.742185394906099e-5, -3.212746477974189e-7, 3.191413910561627e-9, -1.931012931541776e-12,
    -1.105097577149576e-7, 6.211426728363857e-10, -1.119011592875110e-10, -1.941660213148725e-11,
    -1.864826425365600e-14, 1.119522344879478e-14, -1.200507748551599e-15, 6.057902487546866e-17,
)  # fmt: skip


def v(i: int) -> float:
    """The coefficient the TEOS-10 manual numbers ``v{i:02d}`` (1-based)."""
    return V[i - 1]


def density(sa: torch.Tensor, ct: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    """In-situ density [kg/m^3] from Absolute Salinity [g/kg], Conservative Temperature [deg C], sea pressure [dbar].

    Written as plain tensor arithmetic in Horner form, one op per term, as array code usually is:
    that is what makes the workload dispatch-bound at small sizes.
    """
    sqrt_sa = torch.sqrt(sa)
    denominator = (
        v(1) + ct * (v(2) + ct * (v(3) + v(4) * ct))
        + sa * (v(5) + ct * (v(6) + v(7) * ct) + sqrt_sa * (v(8) + ct * (v(9) + ct * (v(10) + v(11) * ct))))
        + p * (
            v(12) + ct * (v(13) + v(14) * ct) + sa * (v(15) + v(16) * ct)
            + p * (v(17) + ct * (v(18) + v(19) * ct) + v(20) * sa)
        )
    )  # fmt: skip
    numerator = (
        v(21) + ct * (v(22) + ct * (v(23) + ct * (v(24) + v(25) * ct)))
        + sa * (
            v(26) + ct * (v(27) + ct * (v(28) + ct * (v(29) + v(30) * ct))) + v(36) * sa
            + sqrt_sa * (v(31) + ct * (v(32) + ct * (v(33) + ct * (v(34) + v(35) * ct))))
        )
        + p * (
            v(37) + ct * (v(38) + ct * (v(39) + v(40) * ct)) + sa * (v(41) + v(42) * ct)
            + p * (v(43) + ct * (v(44) + v(45) * ct + v(46) * sa) + p * (v(47) + v(48) * ct))
        )
    )  # fmt: skip
    return denominator / numerator


class EquationOfStateNet(nn.Module):
    """No parameters: the module exists so the harness has something to move, time and profile."""

    def forward(self, sa: torch.Tensor, ct: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
        return density(sa, ct, p)


class EquationOfState(BenchmarkModel):
    meta = ModelMeta(
        name="pyhpc_equation_of_state",
        family="scientific",
        # The batch size is the number of grid points, as in pyhpc-benchmarks' problem size.
        batch_sizes=BatchSizes.same(cpu=2**12, cuda=2**22),
        smoke={"batch_size": 4096},
        note=(
            "Eval only: nothing to train. The CPU default is pyhpc-benchmarks' smallest size, 2**12 float64 points, "
            "where about half of each of the ~95 elementwise ops is per-op overhead (eval step 0.28 ms, against "
            "0.15 ms at 8 points, which is all overhead, and 2.0 ms at 2**16; 2 idle cores). Pass --batch-size to "
            "move along that scale: 8 points is dispatch-bound, 2**16 compute-bound."
        ),
    )

    def build(self) -> nn.Module:
        return EquationOfStateNet()

    def make_optimizers(self) -> list[torch.optim.Optimizer]:
        return []

    def train(self, niter: int = 1, step_fn: StepFn | None = None) -> None:
        raise NotImplementedError("an equation of state has no parameters to train")

    def make_inputs(self, batch_size: int, mode: str, generator: torch.Generator) -> tuple[torch.Tensor, ...]:
        # pyhpc-benchmarks' grid: a wide, shallow ocean of about batch_size points, pressure varying with depth.
        side, depth = math.ceil(2 * batch_size ** (1 / 3)), math.ceil(0.25 * batch_size ** (1 / 3))
        shape = (side, side, depth)

        def uniform(low: float, high: float, size: tuple[int, ...]) -> torch.Tensor:
            return low + (high - low) * torch.rand(size, generator=generator, dtype=torch.float64)

        return uniform(1e-2, 10, shape), uniform(-12, 20, shape), uniform(0, 1000, (1, 1, depth))
