"""The sign of an exact zero D under each rounding modifier (IEEE 754 §6.3), as the H100 gives it.

Bulk wmma fuzzing on the H100 (results/h100-bulk-wmma) found f64 m8n8k4 `.rm` giving -0 where the oracle said +0:
an exact cancellation rounded toward -inf is -0. Only a sum whose every term is +0 stays +0 there."""

from __future__ import annotations

import numpy as np
import pytest
from ptxconf.isa import load_specs
from ptxconf.oracle import mma

FORM = "wmma.mma.sync.aligned.row.row.m8n8k4{}.f64.f64.f64.f64"


@pytest.fixture(scope="module")
def specs():
    return load_specs()


def _d(specs, rnd: str, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    v = specs.variants[FORM.format(f".{rnd}" if rnd else "")]
    bits = {k: x.astype(np.float64).view(np.uint64)[None, None] for k, x in (("A", a), ("B", b), ("C", c))}
    return mma(v, bits)[0, 0].view(np.float64)


def _operands():
    a = np.zeros((8, 4))
    b = np.zeros((4, 8))
    c = np.zeros((8, 8))
    a[0, 0], b[0, 0], c[0, 0] = 2.0, 3.0, -6.0  # D[0,0]: 6 - 6, an exact cancellation
    c[1, 1] = -0.0  # D[1,1]: +0 products and a -0 C
    a[2, 1], b[1, 2] = -0.0, 5.0  # D[2,2]: a -0 product, C +0
    a[3, :], c[3, 3] = -0.0, -0.0  # D[3,3]: every term -0 (b[:, 3] = 1.0)
    b[:, 3] = 1.0
    a[5, :], b[:, 5] = 0.0, -1.0  # D[5,5]: -0 products, C +0
    return a, b, c


@pytest.mark.parametrize("rnd", ["", "rn", "rz", "rp", "rm"])
def test_exact_zero_sign_per_rounding(specs, rnd):
    d = _d(specs, rnd, *_operands())
    signs = {cell: bool(np.signbit(d[cell])) for cell in [(0, 0), (1, 1), (2, 2), (3, 3), (4, 4), (5, 5)]}
    assert all(d[cell] == 0 for cell in signs)
    if rnd == "rm":  # -0 unless every term is +0 (D[4,4]: all +0)
        assert signs == {(0, 0): True, (1, 1): True, (2, 2): True, (3, 3): True, (4, 4): False, (5, 5): True}
    else:  # -0 only where every term is -0
        assert signs == {(0, 0): False, (1, 1): False, (2, 2): False, (3, 3): True, (4, 4): False, (5, 5): False}
