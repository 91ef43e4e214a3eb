"""Evaluators for the export tests, written apart from the exporter: a CuTe layout read as Python tuples
and evaluated digit by digit, and a GF(2) evaluator that XORs basis vectors.  What the exporter writes
is checked by these, so a bug shared by both sides would have to be made twice."""

from __future__ import annotations

import ast
import re

import numpy as np


def cute_literal(text: str):
    """A CuTe layout's text (print form or C++ type) -> (shape, stride) as nested Python tuples."""
    text = text.strip()
    if text.startswith("Layout<"):
        text = re.sub(r"\bInt<(\d+)>", r"\1", text[len("Layout<"):-1])
        text = re.sub(r"\b_(\d+)\b", r"\1", text)
        text = re.sub(r"\b(?:Shape|Stride)<", "(", text).replace(">", ",)")
        shape, stride = ast.literal_eval("(" + text + ")")
    else:
        left, right = text.split(":")
        shape, stride = ast.literal_eval(left), ast.literal_eval(right)
    return shape, stride


def _leaves(x):
    return [y for z in x for y in _leaves(z)] if isinstance(x, tuple) else [x]


def cute_eval(shape, stride, coord: int) -> int:
    """The index of a linear coordinate: digits over the leaves, first leaf fastest."""
    out = 0
    for s, d in zip(_leaves(shape), _leaves(stride)):
        out += (coord % s) * d
        coord //= s
    return out


def cute_table(text: str, lanes: int, elements: int) -> np.ndarray:
    shape, stride = cute_literal(text)
    threads = cute_eval(shape[0], stride[0], np.arange(lanes))
    values = cute_eval(shape[1], stride[1], np.arange(elements))
    return threads[:, None] + values[None, :]


def gf2_eval(bases: dict, inputs: dict, width: int) -> np.ndarray:
    """XOR of the basis vectors of every set bit of every input (inputs broadcast): [..., width]."""
    shape = np.broadcast_shapes(*(np.shape(x) for x in inputs.values()))
    out = np.zeros(shape + (width,), dtype=np.int64)
    for dim, value in inputs.items():
        for bit, vec in enumerate(bases.get(dim, [])):
            on = (np.broadcast_to(value, shape) >> bit) & 1
            out = np.where(on[..., None] == 1, out ^ np.array(vec), out)
    return out


def spec_index(op, operand: str, params: dict) -> np.ndarray:
    """The column-major tile index CuTe uses (B as (N, K)), straight from the spec's map."""
    m = op.layout.map(params or None)
    mat, row, col = m[..., 0], m[..., 1], m[..., 2]
    rows, cols = op.layout.rows, op.layout.cols
    first, e0 = (col, cols) if operand == "B" else (row, rows)
    second = row if operand == "B" else col
    return np.where(mat >= 0, first + second * e0 + mat * rows * cols, -1)
