"""pyhpc-benchmarks' equation of state, as TorchBench runs it: ``gsw_dHdT``, the derivative of seawater's dynamic
enthalpy in Conservative Temperature, from TEOS-10's 48-term expression for density. Hundreds of elementwise ops.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import torch
from torch import nn

from torchbenchmark.contract import BatchSizes, BenchmarkModel, ModelMeta, StepFn

# Coefficients of the 48-term rational function for density (IOC, SCOR and IAPSO, 2010: TEOS-10 manual;
# McDougall et al. 2003), as the GSW toolbox and pyhpc-benchmarks use them: v01-v20 the numerator, a
# quadratic in pressure, and v21-v48 the denominator, a cubic.
V = (
    9.998420897506056e2,
    2.839940833161907e0,
    -3.147759265588511e-2,
    1.181805545074306e-3,
    -6.698001071123802e0,
    -2.986498947203215e-2,
    2.327859407479162e-4,
    -3.988822378968490e-2,
    5.095422573880500e-4,
    -1.426984671633621e-5,
    1.645039373682922e-7,
    -2.233269627352527e-2,
    -3.436090079851880e-4,
    3.726050720345733e-6,
    -1.806789763745328e-4,
    6.876837219536232e-7,
    -3.087032500374211e-7,
    -1.988366587925593e-8,
    -1.061519070296458e-11,
    1.550932729220080e-10,
    1.0e0,
    2.775927747785646e-3,
    -2.349607444135925e-5,
    1.119513357486743e-6,
    6.743689325042773e-10,
    -7.521448093615448e-3,
    -2.764306979894411e-5,
    1.262937315098546e-7,
    9.527875081696435e-10,
    -1.811147201949891e-11,
    -3.303308871386421e-5,
    3.801564588876298e-7,
    -7.672876869259043e-9,
    -4.634182341116144e-11,
    2.681097235569143e-12,
    5.419326551148740e-6,
    -2.742185394906099e-5,
    -3.212746477974189e-7,
    3.191413910561627e-9,
    -1.931012931541776e-12,
    -1.105097577149576e-7,
    6.211426728363857e-10,
    -1.119011592875110e-10,
    -1.941660213148725e-11,
    -1.864826425365600e-14,
    1.119522344879478e-14,
    -1.200507748551599e-15,
    6.057902487546866e-17,
)


def v(i: int) -> float:
    """The coefficient the TEOS-10 manual numbers ``v{i:02d}`` (1-based)."""
    return V[i - 1]


class Quadratic(NamedTuple):
    """Density's numerator in pressure, ``c + 2 a p + b p**2`` (v01-v20), and each coefficient's CT derivative."""

    c: torch.Tensor
    c_t: torch.Tensor
    a: torch.Tensor
    a_t: torch.Tensor
    b: torch.Tensor
    b_t: torch.Tensor
    two_a: torch.Tensor  # 2 a less v12: the linear coefficient as its terms are summed
    ct_v14: torch.Tensor


def _quadratic(sa: torch.Tensor, ct: torch.Tensor, sqrt_sa: torch.Tensor) -> Quadratic:
    ct_v04, ct_v07, ct_v11 = v(4) * ct, v(7) * ct, v(11) * ct
    c_ct, c_sqrt = ct * (v(3) + ct_v04), ct * (v(10) + ct_v11)
    c = v(1) + ct * (v(2) + c_ct) + sa * (v(5) + ct * (v(6) + ct_v07) + sqrt_sa * (v(8) + ct * (v(9) + c_sqrt)))
    c_t = v(2) + c_ct + ct * (v(3) + 2.0 * ct_v04) + sa * (v(6) + 2.0 * ct_v07 + sqrt_sa * (v(9) + c_sqrt + ct * (v(10) + 2.0 * ct_v11)))
    ct_v14 = v(14) * ct
    a_ct, a_sa = ct * (v(13) + ct_v14), sa * (v(15) + v(16) * ct)
    a = 0.5 * v(12) + 0.5 * a_ct + 0.5 * a_sa
    a_t = 0.5 * v(13) + ct_v14 + 0.5 * (sa * v(16))
    ct_v19 = v(19) * ct
    b = v(17) + ct * (v(18) + ct_v19) + v(20) * sa
    return Quadratic(c, c_t, a, a_t, b, v(18) + 2.0 * ct_v19, a_ct + a_sa, ct_v14)


class Remainder(NamedTuple):
    """What dividing density's cubic denominator by its quadratic numerator leaves: the cubic's two leading
    coefficients, the remainder's (``r0 + r1 p``, over the quadratic) and their CT derivatives."""

    n3: torch.Tensor
    n2: torch.Tensor
    n2_t: torch.Tensor
    r0: torch.Tensor
    r0_t: torch.Tensor
    r1: torch.Tensor
    r1_t: torch.Tensor


def _remainder(sa: torch.Tensor, ct: torch.Tensor, sqrt_sa: torch.Tensor, q: Quadratic) -> Remainder:
    n3, ct_v45, sa_v46 = v(47) + v(48) * ct, v(45) * ct, v(46) * sa
    n2, n2_t = v(43) + ct * (v(44) + ct_v45 + sa_v46), v(44) + 2.0 * ct_v45 + sa_v46
    inv_b, inv_b2 = 1.0 / q.b, 1.0 / q.b**2
    a2, n3_a, b_t_b2, a_t_b = q.a**2, n3 * q.a, inv_b2 * q.b_t, inv_b * q.a_t
    n3_a2, n3_c, v48_c, n3_c_t, a_b = n3 * a2, n3 * q.c, v(48) * q.c, n3 * q.c_t, q.a * inv_b
    ct_v40 = v(40) * ct
    r1_ct = ct * (v(39) + ct_v40)
    s1 = 4.0 * n3_a2 * inv_b - n3_c - 2.0 * n2 * q.a
    r1 = v(37) + ct * (v(38) + r1_ct) + sa * (v(41) + v(42) * ct) + s1 * inv_b
    s1_t = 4.0 * v(48) * a2 * inv_b + 8.0 * n3_a * a_t_b - 4.0 * n3_a2 * b_t_b2 - v48_c - n3_c_t - 2.0 * n2_t * q.a - 2.0 * n2 * q.a_t
    r1_t = v(38) + r1_ct + ct * (v(39) + 2.0 * ct_v40) + sa * v(42) + s1_t * inv_b - s1 * inv_b2 * q.b_t
    s0 = 2.0 * n3_c * a_b - n2 * q.c
    ct_v25, ct_v30, ct_v35 = v(25) * ct, v(30) * ct, v(35) * ct
    ct3, sa_ct3, sqrt_ct3 = ct * (v(24) + ct_v25), ct * (v(29) + ct_v30), ct * (v(34) + ct_v35)
    ct2, sa_ct2, sqrt_ct2 = ct * (v(23) + ct3), ct * (v(28) + sa_ct3), ct * (v(33) + sqrt_ct3)
    r0 = v(21) + ct * (v(22) + ct2) + sa * (v(26) + ct * (v(27) + sa_ct2) + v(36) * sa + sqrt_sa * (v(31) + ct * (v(32) + sqrt_ct2)))
    r0 = r0 + s0 * inv_b
    polynomial_t = (
        v(22) + ct2 + ct * (v(23) + ct3 + ct * (v(24) + 2.0 * ct_v25))
        + sa * (v(27) + sa_ct2 + ct * (v(28) + sa_ct3 + ct * (v(29) + 2.0 * ct_v30))
                + sqrt_sa * (v(32) + sqrt_ct2 + ct * (v(33) + sqrt_ct3 + ct * (v(34) + 2.0 * ct_v35))))
    )  # fmt: skip
    s0_t = 2.0 * v48_c * a_b + 2.0 * n3_c_t * a_b + 2.0 * n3_c * a_t_b - 2.0 * n3_c * q.a * b_t_b2 - n2_t * q.c - n2 * q.c_t
    r0_t = polynomial_t + s0_t * inv_b - s0 * inv_b2 * q.b_t
    return Remainder(n3, n2, n2_t, r0, r0_t, r1, r1_t)


def gsw_dHdT(sa: torch.Tensor, ct: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    """d/dCT of dynamic enthalpy [J/kg/K] from Absolute Salinity [g/kg], Conservative Temperature [deg C] and
    sea pressure [dbar]: the derivative, in closed form, of the integral of specific volume over pressure.

    Plain tensor arithmetic, one op per term, as array code usually is: what makes it dispatch-bound at
    small sizes. Integrating the cubic over the quadratic gives a polynomial, a log of the quadratic's
    ratio and a log of its roots' ratio; each term's CT derivative follows.
    """
    sqrt_sa = torch.sqrt(sa)
    q = _quadratic(sa, ct, sqrt_sa)
    r = _remainder(sa, ct, sqrt_sa, q)
    inv_b, inv_b2, inv_c = 1.0 / q.b, 1.0 / q.b**2, 1.0 / q.c
    b_t_b2, bp, b_t_p = inv_b2 * q.b_t, q.b * p, q.b_t * p
    linear = p * (v(12) + q.two_a + bp)  # 2 a p + b p**2
    ratio = 1.0 + linear * inv_c  # the quadratic over its value at p = 0
    log_ratio = torch.log(ratio)
    disc2 = q.a**2 - q.c * q.b
    disc = torch.sqrt(disc2)
    inv_disc, low, high = 1.0 / disc, q.a - disc, q.a + disc + bp
    inv_low, inv_high = 1.0 / low, 1.0 / high
    w = disc * inv_low * inv_high
    roots = 1.0 + 2.0 * bp * w
    log_roots = torch.log(roots)
    root_term = inv_disc * log_roots
    rem = r.r0 * q.b - r.r1 * q.a
    rem_b = rem * inv_b
    disc2_t = 2.0 * q.a * q.a_t - q.c_t * q.b - q.c * q.b_t
    bp_disc, disc_t = bp * disc, inv_disc * disc2_t / 2.0
    n3_a = r.n3 * q.a
    polynomial = 1e4 * p * (r.n2_t - 2.0 * v(48) * q.a * inv_b - 2.0 * r.n3 * q.a_t * inv_b + 2.0 * n3_a * b_t_b2 + 0.5 * v(48) * p) * inv_b
    polynomial = polynomial - 1e4 * p * (r.n2 - 2.0 * n3_a * inv_b + 0.5 * r.n3 * p) * b_t_b2
    ratio_t = p * (v(13) + 2.0 * q.ct_v14 + sa * v(16) + b_t_p) * inv_c - linear / q.c**2 * q.c_t
    logs = 5e3 * r.r1_t * inv_b * log_ratio - 5e3 * r.r1 * inv_b2 * log_ratio * q.b_t + 5e3 * r.r1 * inv_b * ratio_t / ratio
    rem_t = r.r0_t * q.b + r.r0 * q.b_t - r.r1_t * q.a - r.r1 * q.a_t
    logs = logs + 5e3 * rem_t * inv_b * root_term - 5e3 * rem * b_t_b2 * root_term - 2.5e3 * rem_b / disc / disc2 * log_roots * disc2_t
    roots_t = (
        2.0 * b_t_p * w + bp * inv_disc * inv_low * inv_high * disc2_t
        - 2.0 * bp_disc / low**2 * inv_high * (q.a_t - disc_t) - 2.0 * bp_disc * inv_low / high**2 * (q.a_t + disc_t + b_t_p)
    )  # fmt: skip
    return polynomial + logs + 5e3 * rem_b * inv_disc * roots_t / roots


class EquationOfStateNet(nn.Module):
    """No parameters: the module exists so the harness has something to move, time and profile."""

    def forward(self, sa: torch.Tensor, ct: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
        return gsw_dHdT(sa, ct, p)


class EquationOfState(BenchmarkModel):
    meta = ModelMeta(
        name="pyhpc_equation_of_state",
        family="scientific",
        # The batch size is the number of grid points, as in pyhpc-benchmarks' problem size.
        batch_sizes=BatchSizes.same(cpu=2**12, cuda=2**22),
        smoke={"batch_size": 4096},
        note=(
            "Eval only: nothing to train. TorchBench's pyhpc_equation_of_state: pyhpc-benchmarks' gsw_dHdT on its "
            "inputs (numpy seed 17), in eager mode. The CPU default is pyhpc-benchmarks' smallest size, 2**12 "
            "float64 points (TorchBench defaults to 2**20); pass --batch-size to move along that scale."
        ),
    )

    def build(self) -> nn.Module:
        return EquationOfStateNet()

    def make_optimizers(self) -> list[torch.optim.Optimizer]:
        return []

    def train(self, niter: int = 1, step_fn: StepFn | None = None) -> None:
        raise NotImplementedError("an equation of state has no parameters to train")

    def make_inputs(self, batch_size: int, mode: str, generator: torch.Generator) -> tuple[torch.Tensor, ...]:
        # pyhpc-benchmarks' grid and draws, as TorchBench makes them: a wide, shallow ocean of about
        # batch_size points, pressure varying with depth, from numpy's generator seeded with 17.
        side, depth = math.ceil(2 * batch_size ** (1 / 3)), math.ceil(0.25 * batch_size ** (1 / 3))
        draws = np.random.RandomState(17)
        sa = draws.uniform(1e-2, 10, size=(side, side, depth))
        ct = draws.uniform(-12, 20, size=(side, side, depth))
        p = draws.uniform(0, 1000, size=(1, 1, depth))
        return tuple(torch.tensor(values, dtype=torch.float64) for values in (sa, ct, p))
