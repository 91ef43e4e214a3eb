"""Formula fitting: the inverse of evaluation, for maps learnt from hardware.

Given ``values[lane, element]`` read off a GPU, find a bit-linear formula over ``%laneid`` and
``i`` in the spec language that reproduces them exactly, so an observed layout can be written
as spec YAML and compared with the ISA's formulas.
"""

from __future__ import annotations

import math

import numpy as np

from .expr import evaluate as eval_expr
from .expr import parse

__all__ = ["fit_formula"]


def _runs(weights: list[int], lo: int) -> list[tuple[int, int, int]]:
    """(first bit, bit count, weight of first bit) for runs where each weight doubles."""
    out = []
    b = 0
    while b < len(weights):
        if weights[b] == 0:
            b += 1
            continue
        n = 1
        while b + n < len(weights) and weights[b + n] == weights[b] * 2**n:
            n += 1
        out.append((lo + b, n, weights[b]))
        b += n
    return out


def _term(var: str, first: int, count: int, weight: int, width: int) -> str:
    """One run of bits of ``var`` as the ISA would write it."""
    if var == "%laneid" and (first, count) == (2, 3):
        base = "groupID"
    elif var == "%laneid" and (first, count) == (0, 2):
        base = "threadID_in_group"
    elif first == 0 and count >= width:
        base = var
    else:
        inner = var if first == 0 else f"({var} >> {first})"
        base = f"({inner} & {(1 << count) - 1:#x})" if first + count < width else inner
    return base if weight == 1 else f"{base} * {weight}"


def fit_formula(values: np.ndarray) -> str | None:
    """A bit-linear formula over ``%laneid`` and ``i`` reproducing ``values[lane, element]``, or None."""
    lanes, elems = values.shape
    base = int(values[0, 0])
    lane_bits = int(math.log2(lanes))
    elem_bits = max(1, math.ceil(math.log2(elems))) if elems > 1 else 0
    lw = [int(values[1 << b, 0]) - base for b in range(lane_bits)]
    ew = [int(values[0, 1 << b]) - base if (1 << b) < elems else 0 for b in range(elem_bits)]
    terms = [_term("%laneid", f, n, w, lane_bits) for f, n, w in _runs(lw, 0)]
    terms += [_term("i", f, n, w, elem_bits) for f, n, w in _runs(ew, 0)]
    if base:
        terms.append(str(base))
    text = " + ".join(terms) if terms else "0"
    for w in lw + ew:
        if w < 0:
            return None
    env = {
        "%laneid": np.arange(lanes)[:, None],
        "i": np.arange(elems)[None, :],
        "groupID": parse("%laneid >> 2"),
        "threadID_in_group": parse("%laneid % 4"),
    }
    got = np.broadcast_to(eval_expr(parse(text), env), values.shape)
    return text if np.array_equal(got, values) else None
