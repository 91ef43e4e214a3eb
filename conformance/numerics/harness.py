"""Dot products -> mma cases -> one launch -> D bits.  Dot i of a case sits on the diagonal
(A row i, B column i, C[i, i]); the other D elements are cross dot products, also checkable."""

from __future__ import annotations

import numpy as np

from conformance.backends.base import Backend, Launch, runnable_targets, support_reason
from conformance.spec.model import Variant
from conformance.spec.packing import pack, unpack
from conformance.spec.targets import PtxVersion, parse_target
from generators.probe import Probe, buffer_layout, module_source

from .model import PathParams, Types, dot_bits
from .spec import NumericsSpec


def path_of(spec: NumericsSpec, v: Variant) -> PathParams:
    return spec.path_for(v.operands["A"].type.name, v.operands["D"].type.name)


def numeric_variants(specs, cc=(9, 0)) -> list[Variant]:
    """Dense mma.sync variants that run on ``cc`` and have a numerics path."""
    spec = next(d for d in specs.documents.values() if isinstance(d, NumericsSpec))
    out = []
    for v in specs.variants.values():
        if v.family != "mma.sync" or any(n.startswith("scale_") or n == "metadata" for n in v.operands):
            continue
        if support_reason(v, cc, PtxVersion(9, 9)):
            continue
        try:
            path_of(spec, v)
        except KeyError:
            continue
        out.append(v)
    return out


def capacity(v: Variant) -> int:
    lay = v.operands["D"].layout
    return lay.matrices * min(lay.rows, lay.cols)


def place(v: Variant, a: np.ndarray, b: np.ndarray, c: np.ndarray, fill: dict | None = None):
    """Dot-product bits (``a, b [N, K]``, ``c [N]``) -> operand bits of ``ceil(N / capacity)`` cases."""
    ops = v.operands
    la, lb, lc = ops["A"].layout, ops["B"].layout, ops["C"].layout
    mats, m, k = la.matrices, la.rows, la.cols
    n = lb.cols
    cap = capacity(v)
    count = len(c)
    cases = max(1, -(-count // cap))
    fill = fill or {}
    A = fill.get("A", np.zeros((cases, mats, m, k), dtype=np.uint64)).copy()
    B = fill.get("B", np.zeros((cases, mats, k, n), dtype=np.uint64)).copy()
    C = fill.get("C", np.zeros((cases, lc.matrices, lc.rows, lc.cols), dtype=np.uint64)).copy()
    idx = np.arange(count)
    cs, rest = divmod(idx, cap)
    mat, i = divmod(rest, min(m, n))
    A[cs, mat, i, :] = a
    B[cs, mat, :, i] = b
    C[cs, mat, i, i] = c
    return {"A": A, "B": B, "C": C}, (cs, mat, i)


def diagonal(d: np.ndarray, where) -> np.ndarray:
    cs, mat, i = where
    return d[cs, mat, i, i]


def run_mma(backend: Backend, v: Variant, bits: dict[str, np.ndarray]) -> np.ndarray:
    """One launch of ``v`` over the operand bits; D bits ``[case, mat, M, N]``."""
    cc = backend.compute_capability()
    why = support_reason(v, cc, backend.max_ptx())
    if why:
        raise ValueError(f"{v.id}: {why}")
    target = sorted(runnable_targets(v, cc), key=lambda t: (t.cc, t.suffix))[-1]
    ptx = max(v.min_ptx, target.min_ptx)
    probe = Probe(v)
    module = module_source([probe], ptx, parse_target(target.name))
    layout = buffer_layout(v)
    cases = len(bits["A"])
    words = np.zeros((cases, 32, layout.in_words), dtype=np.uint32)
    for name, off in layout.inputs.items():
        op = v.operands[name]
        words[:, :, off : off + op.words] = pack(op, bits[name])
    res = backend.run(module, [Launch(probe, words, layout.out_words, np.arange(cases, dtype=np.uint32), 8)])[0]
    if res.error:
        raise RuntimeError(f"{v.id}: launch failed: {res.error}")
    d = v.operands["D"]
    return unpack(d, res.out[:, :, layout.d_offset : layout.d_offset + d.words])


def model_mma(p: PathParams, v: Variant, bits: dict[str, np.ndarray]) -> np.ndarray:
    from .model import mma_semantics

    return mma_semantics(lambda _v: p)(v, bits)


def model_dots(p: PathParams, v: Variant, a, b, c) -> np.ndarray:
    return dot_bits(p, Types.of(v), a, b, c)
