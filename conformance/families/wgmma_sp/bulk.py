"""wgmma.mma_async.sp value cases in bulk: the dense family's bulk cases (:mod:`ptxconf.families.wgmma.bulk`)
with a compressed A and its metadata, as array code (NumPy or CuPy).

Per seed (as a plan draws them): the immediate set with its sparsity selector, and the layouts of the compressed
A (a 64 x K/2 tile) and of B.  Per case, by counter: every lane's sp-meta word made of random legal index pairs
(a byte, two chunks' pairs, per draw), so the selector's lanes give each row a random legal pair per chunk and every
other lane holds legal metadata too (reading the wrong lanes shows); the stored A elements, which the expected D
takes at the dense columns the selector's lanes name (read back from the words, through per-seed maps).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from ptxconf.core.plan import pick_build, variant_rng
from ptxconf.families.wgmma.bulk import WgmmaBulk
from ptxconf.isa.arrays import on_module, u16_choices
from ptxconf.isa.sparse import positions

from . import probe as sp
from .cases import _fits, imm_tag, immediate_sets, layout_choice
from .spec import WgmmaSpVariant

__all__ = ["WgmmaSpBulk", "bulk_cases"]


class WgmmaSpBulk(WgmmaBulk):
    buffers = sp

    def __post_init__(self) -> None:
        v = self.variant
        self.sp = spc = sp.sparsity(v)
        lay = v.operands["metadata"].layout
        sel = dict(self.probe.imm)["sel"]
        m, held = lay.map({"selector": sel}), lay.held({"selector": sel})
        # the lane and nibble that hold each (row, chunk)'s index pair: both fields in one nibble, in order (array
        # code: a loop over the held elements was 4.4 of the 5.6 ms a seed's set-up took, on the 2-core host)
        self.pair_lane = np.full((64, spc.chunks), -1, dtype=np.int64)
        self.pair_shift = np.zeros((64, spc.chunks), dtype=np.uint32)
        lanes, elems = np.nonzero(held)
        rows, cols = m[lanes, elems, 1], m[lanes, elems, 2]
        if ((elems % 2 != cols % 2) | ~held[lanes, elems ^ 1] | (m[lanes, elems ^ 1, 1] != rows)).any():
            raise NotImplementedError(f"{v.id}: a chunk's index pair split across nibbles")
        self.pair_lane[rows, cols // 2] = lanes
        self.pair_shift[rows, cols // 2] = 4 * (elems // 2)
        if (self.pair_lane < 0).any():
            raise NotImplementedError(f"{v.id}: a chunk no lane's metadata names")
        # a nibble (two 2-bit fields) -> the dense columns of its stored elements, within the chunk
        legal = np.array([a | b << 2 for a, b in spc.patterns], dtype=np.int64)
        self.columns_of = np.zeros((16, spc.nz), dtype=np.int64)
        self.columns_of[legal] = positions(spc, np.array(spc.patterns, dtype=np.int64)[:, None, :])[:, 0]
        pairs = u16_choices(len(legal) ** 2)  # a draw -> a byte of two legal nibbles
        self.meta_bytes = (legal[pairs % len(legal)] | legal[pairs // len(legal)] << 4).astype(np.uint8)
        super().__post_init__()
        # each stored element's flat dense index (row * K + chunk * width), without its position within the chunk
        rows = np.arange(64)[:, None, None] * v.K
        self.dense_base = (rows + (np.arange(spc.chunks) * spc.width)[None, :, None]).repeat(spc.nz, axis=2)

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

    def header_words(self) -> list[int]:
        return [*super().header_words(), sp.META_WORD]

    def extra_columns(self) -> tuple[tuple[str, int], ...]:
        return (("metadata", sp.LANES * 4),)  # a byte of each lane's word per draw

    def sparse(self, xp: Any, draws: Any, words: Any, a_vals: Any) -> Any:
        """Writes each case's sp-meta words; the dense A values ``[case, 64, K]`` the stored ones stand for."""
        v, n = self.variant, len(a_vals)
        meta = xp.ascontiguousarray(on_module(xp, self.meta_bytes)[self.part(draws, "metadata")]).view(xp.uint32)
        words[:, :, sp.META_WORD] = meta
        nib = (meta[:, on_module(xp, self.pair_lane)] >> on_module(xp, self.pair_shift)) & xp.uint32(0xF)
        cols = on_module(xp, self.columns_of)[nib] + on_module(xp, self.dense_base)  # [case, 64, chunk, nz]
        cols += (xp.arange(n, dtype=xp.int64) * (64 * v.K))[:, None, None, None]
        dense = xp.zeros((n, 64, v.K), dtype=a_vals.dtype)
        dense.reshape(-1)[cols.reshape(-1)] = a_vals.reshape(-1)
        return dense


def bulk_cases(v: WgmmaSpVariant, seed: int, cc: tuple[int, int], max_ptx, imm: dict | None = None) -> WgmmaSpBulk:
    """The form's bulk cases at ``seed``: the immediate set and selector (``imm``, else drawn), the layouts and the
    build from their own streams."""
    if imm is None:
        sets = immediate_sets(v)
        imm = sets[int(variant_rng(v, seed, "bulk").integers(len(sets)))]
    target, version = pick_build(v, variant_rng(v, seed, "build"), cc, max_ptx)
    return WgmmaSpBulk(v, seed, version, target, sp.SpProbe(v, tuple(sorted(imm.items()))), 1, lanes=sp.LANES)
