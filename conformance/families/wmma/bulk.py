"""wmma value cases in bulk: the ``value`` check's cases as array code (NumPy or CuPy).

As a plan draws them (:func:`ptxconf.families.wmma.cases.case_words`): a random byte image, the header
(route, strides, base offsets, each random within what the hardware takes), and A, B, C of the
companion wmma.mma form at their offsets, drawn as the mma family's bulk cases draw them
(:class:`ptxconf.families.mma.bulk.ValueDraws`).  The expected ``out`` words are what
:func:`ptxconf.families.wmma.memory.apply` computes, without reading the operands back out of the image: D from
the same oracle on the drawn A, B, C, stored as the case's header says.

Why: on a GPU the draw is bounded by its passes over arrays.  A matrix's element offsets depend on its layout and
stride alone, and a case draws one of a few strides per layout, so the offsets of every (layout, stride) are
evaluated once per seed by the family's own address rule (``memory._bit_offsets``) into a table; placing a matrix is
then one row gather and one scatter.  Case ``i`` is a function of (variant, seed, i) alone.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from ptxconf.core.bulk import BulkFields, Drawn
from ptxconf.core.plan import pick_build, variant_rng
from ptxconf.families.mma.bulk import ValueDraws, bulk_reason
from ptxconf.isa.arrays import halves, key_of, on_module, u16_choices, words32
from ptxconf.isa.ptxtypes import TYPES
from ptxconf.isa.targets import PtxVersion
from ptxconf.oracle import mma as oracle_mma

from . import probe as wm
from .memory import HEADER_WORDS, SLACK, _bit_offsets, scatter_matrices, sizes
from .spec import WmmaVariant

__all__ = ["WmmaBulk", "bulk_cases"]

_HEADER_DRAWS = 1 + 4 + 4  # route, a stride step and a base-offset step per matrix


class WmmaBulk(BulkFields):

    def __post_init__(self) -> None:
        p = self.probe
        self.mma, self.routes, self.size = p.mma, p.routes, p.size
        self.out_words = self.size.out_words
        self.params = {"mma": self.mma.id, "routes": [list(r) for r in self.routes], "space": p.space}
        self.key = key_of("bulk", self.variant.id, self.seed)
        self.header_key = key_of("bulk header", self.variant.id, self.seed)
        self.values = ValueDraws(self.mma, key_of("bulk", self.variant.id, self.seed, self.mma.id))
        spec, mv, shape = self.mma.doc, self.mma, self.mma.shape_name
        # Per matrix: the stride of each (layout, step) and the byte offsets of its elements' bytes from its base
        # (the table a case's row is gathered from), where its slot starts, and the step of its base offset.
        self.route_of = u16_choices(len(self.routes))
        self.step_of = u16_choices(SLACK + 1)
        col = np.array([[r[0] == "col", r[1] == "col"] for r in self.routes], dtype=bool)
        self.offsets = {}
        stride = []  # [matrix * configs + layout * (SLACK + 1) + step]: the stride of each configuration
        for m in "abcd":
            t = mv.type_of(m)
            ld = np.array([[spec.min_stride(m, t, shape, lay) + s * spec.stride_unit(m, t, shape, lay)
                            for s in range(SLACK + 1)] for lay in ("row", "col")], dtype=np.int64).ravel()
            stride.append(ld)
            bits = TYPES[t].bits
            if bits >= 8:
                rows, cols = spec.dims(m, shape)
                colmajor = np.repeat([False, True], SLACK + 1)
                self.offsets[m] = _bit_offsets(np, rows, cols, colmajor, ld, bits) // bits  # [config, element]
        self.stride = np.concatenate(stride)
        # per route: each matrix's layout (A and B: the companion form's; C and D: the route's), as a table row
        # offset into the stride table
        lay = np.array([[mv.layout_of("a") == "col", mv.layout_of("b") == "col", *c] for c in col], dtype=np.int64)
        self.matrix_base = np.arange(4) * 2 * (SLACK + 1)
        self.config_base = lay * (SLACK + 1) + self.matrix_base
        self.defined = np.ones((32, self.out_words), dtype=bool)  # every out byte: D's, and the zeros elsewhere
        self.slot = np.array([*self.size.slots, 0], dtype=np.int64)
        self.align = np.array([spec.base_alignment(m, mv.type_of(m), shape) for m in "abcd"], dtype=np.int64)

    def header(self, xp: Any, first: int, n: int) -> tuple[Any, Any]:
        """(``int64[case, 9]``: route, ldA..ldD, offA..offD, as :func:`ptxconf.families.wmma.cases.case_words` draws
        them; ``int64[case, 4]``: each matrix's row of its stride and offset tables)."""
        u = halves(xp, self.header_key, first, n, _HEADER_DRAWS)
        route = on_module(xp, self.route_of)[u[:, 0]]
        step = on_module(xp, self.step_of)[u[:, 1:]]  # [case, 4 strides, then 4 offsets]
        config = on_module(xp, self.config_base)[route] + step[:, :4]  # [case, matrix]: its stride table row
        hdr = xp.empty((n, HEADER_WORDS), dtype=xp.int64)
        hdr[:, 0] = route
        hdr[:, 1:5] = on_module(xp, self.stride)[config]
        hdr[:, 5:] = on_module(xp, self.slot) + step[:, 4:] * on_module(xp, self.align)
        config -= on_module(xp, self.matrix_base)
        return hdr, config

    def _place(self, xp: Any, img: Any, k: int, m: str, bits: Any, hdr: Any, config: Any) -> None:
        """Write matrix ``m``'s element bits ``[case, rows, cols]`` into byte images ``uint8[case, bytes]`` (contiguous)
        at the case's base, stride and layout (element bytes little-endian)."""
        t = TYPES[self.mma.type_of(m)]
        n, width = img.shape
        if t.bits < 8:  # sub-byte elements: one layout for every case (the companion form's A or B)
            scatter_matrices(img, hdr[:, 5 + k], bits, self.mma.layout_of(m), hdr[:, 1 + k], t.bits)
            return
        # whole elements: every base is 32-byte aligned and every offset a multiple of the element's size
        size = t.bits // 8
        where = on_module(xp, self.offsets[m])[config[:, k]]  # [case, element] in elements from the base
        where += (hdr[:, 5 + k] // size + xp.arange(n, dtype=xp.int64) * (width // size))[:, None]
        img.view(np.dtype(f"<u{size}")).reshape(-1)[where.reshape(-1)] = bits.astype(f"<u{size}", copy=False).reshape(-1)

    def draw(self, xp: Any, first: int, n: int) -> Drawn:
        mv = self.mma
        flat = words32(xp, self.key, first, n, 32 * self.size.in_words)
        hdr, config = self.header(xp, first, n)
        flat[:, :HEADER_WORDS] = hdr.astype(xp.uint32)
        img = flat.view(xp.uint8)  # [case, 128 * in_words]: the region's bytes, lane-major words
        bits = self.values.bits(xp, first, n)
        ops = {m: bits[m] for m in "ABC"}
        for k, m in enumerate("abc"):
            self._place(xp, img, k, m, ops[m.upper()][:, 0], hdr, config)
        out = xp.zeros((n, 128 * self.out_words), dtype=xp.uint8)
        self._place(xp, out, 3, "d", oracle_mma(mv, ops)[:, 0], hdr, config)
        in_words = flat.reshape(n, 32, self.size.in_words)
        return Drawn(in_words, out.view(xp.uint32).reshape(n, 32, self.out_words), on_module(xp, self.defined))


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
