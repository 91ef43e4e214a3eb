"""mma.sync / mma.sp value cases in bulk: the ``value`` check's distribution as array code (NumPy or CuPy).

The same recipe as :func:`ptxconf.families.mma.cases.make_checks` gives the ``value`` check: A and B
on the exact grids of :func:`~ptxconf.families.mma.cases.float_grid` (or uniform integers), C on the
products' grid (integers: half the cases within one product sum of the s32 limits), a random legal
index pair per chunk of a sparse A, random garbage in every slot a layout leaves unheld, and fresh
selector immediates and surroundings per seed.  D comes from :func:`ptxconf.oracle.mma` on the same
array module, so the prediction is the oracle's, not a second one.  Randomness is counter-based
(:mod:`ptxconf.isa.arrays`): case ``i`` is a function of (variant, seed, i) alone.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from ptxconf.core.bulk import BulkFields, Drawn
from ptxconf.core.plan import pick_build, variant_rng
from ptxconf.generators.ptx import checksum
from ptxconf.isa.arrays import below, case_counters, encode_exact, key_of
from ptxconf.isa.model import Variant
from ptxconf.isa.packing import pack
from ptxconf.isa.sparse import is_sparse, sparsity
from ptxconf.isa.targets import PtxVersion
from ptxconf.oracle import mma as oracle

from .cases import C_SPREAD, _max_product_sum, _params, _value_params, case_rng, float_grid
from .probe import Probe, buffer_layout

__all__ = ["MmaBulk", "ValueDraws", "bulk_cases", "bulk_reason"]

_STREAMS = ("A", "B", "C", "C.edge", "C.sign", "C.pick", "metadata", "scale_A", "scale_B", "filler")


def bulk_reason(v: Variant) -> str | None:
    """Why ``v`` has no bulk cases, or None."""
    for name in ("scale_A", "scale_B"):
        if name in v.operands and v.operands[name].type.name not in ("ue8m0", "ue4m3"):
            return f"{name} of .{v.operands[name].type.name}"
    if v.operands["D"].type.kind == "float" and v.operands["D"].type.name not in ("f16", "bf16", "f32", "f64"):
        return f"D of .{v.operands['D'].type.name}"
    return None


class ValueDraws:
    """The ``value`` check's A, B, C (and metadata, scale factors) of ``variant`` by counter under ``key``: what
    any probe that runs the variant's arithmetic draws (mma.sync and mma.sp here, the wmma.mma companions)."""

    def __init__(self, variant: Variant, key: int):
        v = self.variant = variant
        self.key = key
        self.fparams, self.cbound = _value_params(v)
        self.tables: dict[str, np.ndarray] = {}
        for name in ("A", "B"):
            t = v.operands[name].type
            if t.kind == "float":
                self.tables[name] = t.encode(float_grid(t.name, *self.fparams[name]))

    # --- one operand's values -----------------------------------------------------------------------
    def _counter(self, xp: Any, stream: str, first: int, n: int, per_case: int) -> Any:
        return case_counters(xp, _STREAMS.index(stream), len(_STREAMS), first, n, per_case)

    def _tile(self, name: str, n: int) -> tuple[int, ...]:
        lay = self.variant.operands[name].layout
        return (n, lay.matrices, lay.rows, lay.cols)

    def _multiplicand(self, xp: Any, name: str, first: int, n: int) -> Any:
        t = self.variant.operands[name].type
        shape = self._tile(name, n)
        size = int(np.prod(shape[1:]))
        ctr = self._counter(xp, name, first, n, size)
        if t.kind == "float":
            table = xp.asarray(self.tables[name])
            return table[below(xp, self.key, ctr, len(table))].reshape(shape)
        if t.kind == "bits":
            return below(xp, self.key, ctr, 2).astype(xp.uint64).reshape(shape)
        lo, hi = t.int_range()
        vals = below(xp, self.key, ctr, hi - lo + 1) + lo
        return (vals.astype(xp.uint64) & xp.uint64(t.mask)).reshape(shape)

    def _accumulator(self, xp: Any, first: int, n: int) -> Any:
        c = self.variant.operands["C"]
        shape = self._tile("C", n)
        size = int(np.prod(shape[1:]))
        ctr = self._counter(xp, "C", first, n, size)
        if c.type.kind == "float":
            frac = self.fparams["A"][1] + self.fparams["B"][1]
            step = 2.0**-frac
            span = int(self.cbound / step)
            vals = (below(xp, self.key, ctr, 2 * span + 1) - span).astype(xp.float64) * step
            return encode_exact(c.type, vals.reshape(shape))
        vals = below(xp, self.key, ctr, 2 * C_SPREAD) - C_SPREAD
        # Odd cases sit within one full product sum of the s32 limits: sums wrap, or saturate under .satfinite.
        reach = _max_product_sum(self.variant)
        edge = (2**31 - reach) + below(xp, self.key, self._counter(xp, "C.edge", first, n, size), reach)
        sign = below(xp, self.key, self._counter(xp, "C.sign", first, n, size), 2) * 2 - 1
        edge = xp.clip(edge * sign, -(2**31), 2**31 - 1)
        odd = (xp.arange(first, first + n) % 2 == 1)[:, None]
        vals = xp.where(odd, edge, vals)
        return (vals.astype(xp.uint64) & xp.uint64(c.type.mask)).reshape(shape)

    def _metadata(self, xp: Any, first: int, n: int) -> Any:
        sp = sparsity(self.variant)
        pats = xp.asarray(np.array(sp.patterns, dtype=np.uint64))
        ctr = self._counter(xp, "metadata", first, n, sp.m * sp.chunks)
        pick = pats[below(xp, self.key, ctr, len(sp.patterns))]  # [case, M * chunks, 2]
        return pick.reshape(n, 1, sp.m, 2 * sp.chunks)

    def _scales(self, xp: Any, name: str, first: int, n: int) -> Any:
        op = self.variant.operands[name]
        choices = np.array([0.25, 0.5, 1.0, 2.0, 4.0]) if op.type.name == "ue8m0" else np.array([0.5, 1.0, 1.5, 2.0])
        table = xp.asarray(op.type.encode(choices))
        shape = self._tile(name, n)
        ctr = self._counter(xp, name, first, n, int(np.prod(shape[1:])))
        return table[below(xp, self.key, ctr, len(choices))].reshape(shape)

    def bits(self, xp: Any, first: int, n: int) -> dict[str, Any]:
        """Container bits per input operand, ``[case, matrix, row, col]``."""
        v = self.variant
        out = {"A": self._multiplicand(xp, "A", first, n), "B": self._multiplicand(xp, "B", first, n),
               "C": self._accumulator(xp, first, n)}
        if is_sparse(v):
            out["metadata"] = self._metadata(xp, first, n)
        for name in ("scale_A", "scale_B"):
            if name in v.operands:
                out[name] = self._scales(xp, name, first, n)
        return out


class MmaBulk(BulkFields):

    def __post_init__(self) -> None:
        v = self.variant
        self.params = self.probe.params
        self.layout = buffer_layout(v)
        self.out_words = self.layout.out_words
        self.key = key_of("bulk", v.id, self.seed)
        self.values = ValueDraws(v, self.key)

    def draw(self, xp: Any, first: int, n: int) -> Drawn:
        v, lay = self.variant, self.layout
        bits = self.values.bits(xp, first, n)
        words = xp.zeros((n, 32, lay.in_words), dtype=xp.uint32)
        for k, (name, off) in enumerate(lay.inputs.items()):
            op = v.operands[name]
            filler = None
            if not op.layout.held(self.params.get(name)).all():
                elems = op.layout.lanes * op.layout.elements
                ctr = self.values._counter(xp, "filler", first, n, elems) + xp.uint64(k * elems)
                filler = below(xp, self.key, ctr, 1 << 32).astype(xp.uint64).reshape(n, op.layout.lanes, op.layout.elements)
            words[:, :, off : off + op.words] = pack(op, bits[name], self.params.get(name), filler)
        d = v.operands["D"]
        expected = xp.zeros((n, 32, self.out_words), dtype=xp.uint32)
        expected[:, :, : d.words] = pack(d, oracle(v, bits))
        expected[:, :, lay.checksum_offset] = xp.asarray(checksum(np.arange(32), self.probe.surroundings))[None, :]
        defined = np.zeros((32, self.out_words), dtype=bool)
        defined[:, : d.words] = True
        defined[:, lay.checksum_offset] = True
        return Drawn(words, expected, xp.asarray(defined))


def bulk_cases(v: Variant, seed: int, cc: tuple[int, int], max_ptx: PtxVersion, surroundings_of) -> MmaBulk:
    """The variant's bulk cases at ``seed``: the build, the selector immediates and the surroundings are drawn
    as a plan draws them (from their own streams), the values by counter."""
    why = bulk_reason(v)
    if why:
        raise NotImplementedError(f"{v.id}: no bulk cases for {why}")
    target, version = pick_build(v, variant_rng(v, seed, "build"), cc, max_ptx)
    rng = variant_rng(v, seed, "bulk")
    params = _params(v, case_rng(v, "bulk params", seed))
    probe = Probe(v, params, surroundings_of(v, rng))
    return MmaBulk(v, seed, version, target, probe, int(rng.choice([1, 2, 4, 8])))
