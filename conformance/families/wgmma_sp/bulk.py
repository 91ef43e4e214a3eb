"""wgmma.mma_async.sp value cases in bulk: the dense family's bulk cases (:mod:`ptxconf.families.wgmma.bulk`)
with a compressed A and its metadata, as array code (NumPy or CuPy).

Per seed (as a plan draws them): the immediate set with its sparsity selector, and the layouts of the compressed
A (a 64 x K/2 tile) and of B.  Per case, by counter: a random legal index pair per chunk of every row, written
into the lanes the selector names (every other lane: random legal metadata, so reading the wrong lanes shows),
and the stored A elements, which the expected D takes at the dense columns the pairs name.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from ptxconf.core.plan import pick_build, variant_rng
from ptxconf.families.wgmma.bulk import WgmmaBulk
from ptxconf.isa.arrays import below, case_counters, key_of
from ptxconf.isa.sparse import positions

from . import probe as sp
from .cases import _fits, imm_tag, immediate_sets, layout_choice
from .spec import WgmmaSpVariant

__all__ = ["WgmmaSpBulk", "bulk_cases"]

_STREAMS = ("fields", "other lanes")


class WgmmaSpBulk(WgmmaBulk):
    buffers = sp

    def __post_init__(self) -> None:
        super().__post_init__()
        v = self.variant
        self.sp = sp.sparsity(v)
        self.meta_key = key_of("bulk metadata", v.id, self.seed)
        lay = v.operands["metadata"].layout
        sel = self.imm["sel"]
        m, held = lay.map({"selector": sel}), lay.held({"selector": sel})
        lanes, elems = np.nonzero(held)
        self.meta_lanes, self.meta_elems = lanes, elems  # (lane, 2-bit field) the selector's lanes supply
        self.meta_rows, self.meta_cols = m[lanes, elems, 1], m[lanes, elems, 2]
        self.spec_lanes = held.any(1)

    def check_name(self, imm: dict) -> str:
        return f"value[{imm_tag(imm)}]"

    def tile(self, name: str) -> tuple[int, int]:
        v = self.variant
        return (64, v.kc) if name == "A" else (v.N, v.K)

    def choose(self, rng, name: str, trans: int, model) -> tuple[Any, int, str]:
        v = self.variant
        modes = list(model.smem.swizzles)
        sw = modes[int(rng.integers(len(modes)))]
        if name == "B" and not _fits(v, "B", trans, sw, model):  # K-major B wider than the swizzle row
            sw = max((m for m in modes if m != "none"), key=model.smem.width)
        region, room = (0, sp.A_REGION) if name == "A" else (sp.b_base(v), sp.image_bytes(v) - sp.b_base(v))
        desc, pattern = layout_choice(v, rng, name, trans, sw, model, region, room, bool(rng.integers(2)))
        return desc, pattern, sw

    def _meta_counter(self, xp: Any, stream: str, first: int, n: int, per_case: int) -> Any:
        return case_counters(xp, _STREAMS.index(stream), len(_STREAMS), first, n, per_case)

    def sparse(self, xp: Any, words: Any, a_vals: Any, first: int, n: int) -> Any:
        """Writes each case's sp-meta words; the dense A values ``[case, 64, K]`` the stored ones stand for."""
        v, spc = self.variant, self.sp
        pats = xp.asarray(np.array(spc.patterns, dtype=np.int64))
        pick = below(xp, self.meta_key, self._meta_counter(xp, "fields", first, n, 64 * spc.chunks), len(spc.patterns))
        fields = pats[pick].reshape(n, 64, 2 * spc.chunks)  # [case, row, field]
        # every lane's word: random legal pairs in its eight nibbles, then the selector's lanes hold the fields
        other = pats[below(xp, self.meta_key, self._meta_counter(xp, "other lanes", first, n, sp.LANES * 8),
                           len(spc.patterns))].reshape(n, sp.LANES, 8, 2)
        nib = (other[..., 0] | (other[..., 1] << 2)) << (4 * xp.arange(8, dtype=xp.int64))
        meta = nib.sum(axis=-1)
        vals = fields[:, xp.asarray(self.meta_rows), xp.asarray(self.meta_cols)] << (2 * xp.asarray(self.meta_elems))
        held = xp.zeros((n, sp.LANES), dtype=xp.int64)
        for e in np.unique(self.meta_elems):  # one field position at a time: its lanes are distinct
            sel = self.meta_elems == e
            held[:, xp.asarray(self.meta_lanes[sel])] += vals[:, xp.asarray(np.flatnonzero(sel))]
        meta = xp.where(xp.asarray(self.spec_lanes)[None, :], held, meta)
        words[:, :, sp.META_WORD] = meta.astype(xp.uint32)
        pos = positions(spc, fields.reshape(n, 64, spc.chunks, 2)) + xp.asarray(np.arange(spc.chunks) * spc.width)[:, None]
        pos = pos.reshape(n, 64, v.kc)
        dense = xp.zeros((n, 64, v.K), dtype=a_vals.dtype)
        cs = xp.arange(n)[:, None, None]
        rows = xp.arange(64)[None, :, None]
        dense[cs, rows, pos] = a_vals
        return dense


def bulk_cases(v: WgmmaSpVariant, seed: int, cc: tuple[int, int], max_ptx) -> WgmmaSpBulk:
    """The form's bulk cases at ``seed``: the immediate set and selector, the layouts and the build from their own
    streams."""
    rng = variant_rng(v, seed, "bulk")
    sets = immediate_sets(v)
    imm = sets[int(rng.integers(len(sets)))]
    target, version = pick_build(v, variant_rng(v, seed, "build"), cc, max_ptx)
    return WgmmaSpBulk(v, seed, version, target, sp.SpProbe(v, tuple(sorted(imm.items()))), 1, lanes=sp.LANES)
