"""pyhpc_equation_of_state computes what it says: d/dCT of dynamic enthalpy, checked against the integral of
specific volume over pressure differentiated by autograd, on pyhpc-benchmarks' inputs (numpy seed 17)."""

from __future__ import annotations

import math

import numpy as np
import torch

from torchbenchmark.models.scientific import EquationOfState, gsw_dHdT, v

DBAR_PA = 1e4  # pressure in dbar, enthalpy per pascal


def specific_volume(sa: torch.Tensor, ct: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    """1/density from the 48-term expression: the cubic (v21-v48) over the quadratic (v01-v20) in pressure."""
    sqrt_sa = torch.sqrt(sa)
    quadratic = (
        v(1) + ct * (v(2) + ct * (v(3) + v(4) * ct))
        + sa * (v(5) + ct * (v(6) + v(7) * ct) + sqrt_sa * (v(8) + ct * (v(9) + ct * (v(10) + v(11) * ct))))
        + p * (v(12) + ct * (v(13) + v(14) * ct) + sa * (v(15) + v(16) * ct) + p * (v(17) + ct * (v(18) + v(19) * ct) + v(20) * sa))
    )  # fmt: skip
    cubic = (
        v(21) + ct * (v(22) + ct * (v(23) + ct * (v(24) + v(25) * ct)))
        + sa * (v(26) + ct * (v(27) + ct * (v(28) + ct * (v(29) + v(30) * ct))) + v(36) * sa
                + sqrt_sa * (v(31) + ct * (v(32) + ct * (v(33) + ct * (v(34) + v(35) * ct)))))
        + p * (v(37) + ct * (v(38) + ct * (v(39) + v(40) * ct)) + sa * (v(41) + v(42) * ct)
               + p * (v(43) + ct * (v(44) + v(45) * ct + v(46) * sa) + p * (v(47) + v(48) * ct)))
    )  # fmt: skip
    return cubic / quadratic


def dynamic_enthalpy_dct(sa: torch.Tensor, ct: torch.Tensor, p: torch.Tensor, points: int = 24) -> torch.Tensor:
    """d/dCT of the integral of specific volume from 0 to p, by Gauss-Legendre quadrature and autograd."""
    nodes, weights = np.polynomial.legendre.leggauss(points)
    ct = ct.clone().requires_grad_(True)
    enthalpy = sum(w * specific_volume(sa, ct, p * (x + 1) / 2) for x, w in zip(nodes.tolist(), weights.tolist())) * p / 2 * DBAR_PA
    (gradient,) = torch.autograd.grad(enthalpy.sum(), ct)
    return gradient


def test_it_is_the_temperature_derivative_of_dynamic_enthalpy() -> None:
    sa, ct, p = EquationOfState(batch_size=4096).inputs("eval")
    closed_form = gsw_dHdT(sa, ct, p)
    assert closed_form.shape == sa.shape and closed_form.dtype == torch.float64
    torch.testing.assert_close(closed_form, dynamic_enthalpy_dct(sa, ct, p), rtol=1e-7, atol=1e-9)


def test_its_inputs_are_pyhpc_benchmarks_own() -> None:
    size = 4096
    sa, ct, p = EquationOfState(batch_size=size).inputs("eval")
    side, depth = math.ceil(2 * size ** (1 / 3)), math.ceil(0.25 * size ** (1 / 3))
    assert sa.shape == ct.shape == (side, side, depth) and p.shape == (1, 1, depth)
    np.random.seed(17)  # pyhpc-benchmarks' (and TorchBench's) draws, in their order
    for tensor, (low, high, shape) in zip((sa, ct, p), ((1e-2, 10, sa.shape), (-12, 20, ct.shape), (0, 1000, p.shape))):
        assert np.array_equal(tensor.numpy(), np.random.uniform(low, high, size=shape))
