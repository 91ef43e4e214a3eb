"""wmma value cases in bulk: the ``value`` check's cases as array code (NumPy or CuPy).

As a plan draws them (:func:`ptxconf.families.wmma.cases.case_words`): a random byte image, the header
(route, strides, base offsets, each random within what the hardware takes), and A, B, C of the
companion wmma.mma form at their offsets, drawn as the mma family's bulk cases draw them
(:class:`ptxconf.families.mma.bulk.ValueDraws`).  The expected ``out`` words come from
:func:`ptxconf.families.wmma.memory.apply` on the same array module, reading the operands back out of
the drawn image, so the prediction is the comparator's, not a second one.  Case ``i`` is a function
of (variant, seed, i) alone.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from ptxconf.core.bulk import BulkFields, Drawn
from ptxconf.core.plan import pick_build, variant_rng
from ptxconf.families.mma.bulk import ValueDraws, bulk_reason
from ptxconf.isa.arrays import below, case_counters, key_of, uniform_bits
from ptxconf.isa.ptxtypes import TYPES
from ptxconf.isa.targets import PtxVersion

from . import probe as wm
from .memory import HEADER_WORDS, SLACK, apply, scatter_matrices, sizes
from .spec import WmmaVariant

__all__ = ["WmmaBulk", "bulk_cases"]

_STREAMS = ("image", "route", "stride", "offset")


class WmmaBulk(BulkFields):

    def __post_init__(self) -> None:
        p = self.probe
        self.mma, self.routes, self.size = p.mma, p.routes, p.size
        self.out_words = self.size.out_words
        self.params = {"mma": self.mma.id, "routes": [list(r) for r in self.routes], "space": p.space}
        self.key = key_of("bulk", self.variant.id, self.seed)
        self.values = ValueDraws(self.mma, key_of("bulk", self.variant.id, self.seed, self.mma.id))
        spec, mv, shape = self.mma.doc, self.mma, self.mma.shape_name
        # Per matrix and layout (row, col): the least stride and its step; per matrix: where its slot starts, and
        # the step of its base offset.
        self.stride = {m: np.array([[spec.min_stride(m, mv.type_of(m), shape, lay), spec.stride_unit(m, mv.type_of(m), shape, lay)]
                                    for lay in ("row", "col")], dtype=np.int64) for m in "abcd"}
        self.slot = [*self.size.slots, 0]
        self.align = [spec.base_alignment(m, mv.type_of(m), shape) for m in "abcd"]
        self.col = np.array([[r[0] == "col", r[1] == "col"] for r in self.routes], dtype=bool)

    def _counter(self, xp: Any, stream: str, first: int, n: int, per_case: int) -> Any:
        return case_counters(xp, _STREAMS.index(stream), len(_STREAMS), first, n, per_case)

    def header(self, xp: Any, first: int, n: int) -> Any:
        """``int64[case, 9]``: route, ldA..ldD, offA..offD, as :func:`ptxconf.families.wmma.cases.case_words` draws them."""
        mv = self.mma
        route = below(xp, self.key, self._counter(xp, "route", first, n, 1), len(self.routes))[:, 0]
        col = xp.asarray(self.col)[route]  # [case, (c, d)]
        steps = below(xp, self.key, self._counter(xp, "stride", first, n, 4), SLACK + 1)
        offs = below(xp, self.key, self._counter(xp, "offset", first, n, 4), SLACK + 1)
        hdr = xp.zeros((n, HEADER_WORDS), dtype=xp.int64)
        hdr[:, 0] = route
        for k, m in enumerate("abcd"):
            table = xp.asarray(self.stride[m])
            if m in "ab":
                lay = xp.full(n, mv.layout_of(m) == "col", dtype=xp.int64)
            else:
                lay = col[:, k - 2].astype(xp.int64)
            hdr[:, 1 + k] = table[lay, 0] + steps[:, k] * table[lay, 1]
            hdr[:, 5 + k] = self.slot[k] + offs[:, k] * self.align[k]
        return hdr

    def draw(self, xp: Any, first: int, n: int) -> Drawn:
        mv, spec = self.mma, self.mma.doc
        words = 32 * self.size.in_words
        rand = uniform_bits(xp, self.key, self._counter(xp, "image", first, n, words))
        flat = (rand >> xp.uint64(32)).astype(xp.uint32)
        hdr = self.header(xp, first, n)
        flat[:, :HEADER_WORDS] = hdr.astype(xp.uint32)
        img = flat.view(xp.uint8)  # [case, 128 * in_words]: the region's bytes, lane-major words
        bits = self.values.bits(xp, first, n)
        for k, m in enumerate("abc"):
            lay = mv.layout_of(m) if m in "ab" else xp.asarray(self.col)[hdr[:, 0], 0]
            scatter_matrices(img, hdr[:, 5 + k], bits[m.upper()][:, 0], lay, hdr[:, 1 + k], TYPES[mv.type_of(m)].bits)
        in_words = flat.reshape(n, 32, self.size.in_words)
        expected = apply(spec, mv, self.routes, in_words, self.out_words)
        return Drawn(in_words, expected, xp.ones((32, self.out_words), dtype=bool))


def bulk_cases(v: WmmaVariant, seed: int, cc: tuple[int, int], max_ptx: PtxVersion) -> WmmaBulk:
    """The form's bulk cases at ``seed``: the companion wmma.mma form, the build, the state space and the warps per
    block drawn from their own streams (as a plan draws them), the cases by counter."""
    rng = variant_rng(v, seed, "bulk")
    options = wm.companions(v)
    mv = options[int(rng.integers(len(options)))]
    why = bulk_reason(mv)
    if why:
        raise NotImplementedError(f"{v.id}: no bulk cases for {why} (through {mv.id})")
    target, version = pick_build(v, variant_rng(v, seed, "build"), cc, max_ptx, mv)
    size = sizes(v.doc, mv)
    spaces = [s for s in v.doc.spaces_for(version)
              if not s.startswith(".shared") or 128 * (size.in_words + size.out_words) <= wm.SHARED_BUDGET]
    probe = wm.WmmaProbe(v, mv, wm.routes_for(v), spaces[int(rng.integers(len(spaces)))], size)
    wpb = int(rng.choice([1, 2, 4, 8]))
    if probe.shared:
        wpb = max(w for w in (1, 2, 4, 8) if w <= wpb and w * probe.warp_bytes <= wm.SHARED_BUDGET)
    return WmmaBulk(v, seed, version, target, probe, wpb)
