"""wgmma value cases in bulk: the ``value`` check's cases as array code (NumPy or CuPy).

Per seed, as a plan draws them from their own streams: the immediate set, a swizzle mode and a descriptor for B (and
for A from shared memory), each on its repeat boundary or a random 128-byte step past it (the base offset then set by
the spec's rule), and the build.  Per case, by counter: A and B on the small grid of :func:`.cases._values`, C on
D's grid (integers: half the cases near the s32 limits), scale-d, and a salt of the pattern the image's free bytes hold.
The element addresses come from the spec's shared-memory layout (``SmemSpec.addresses``, evaluated once per seed);
the expected D is the exact product the comparator's ``numerics`` computes (float64 sums of grid values, which D
holds exactly), packed through D's fragment.  Case ``i`` is a function of (variant, seed, i) alone.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from ptxconf.core.bulk import BulkFields, Drawn
from ptxconf.core.plan import pick_build, variant_rng
from ptxconf.isa.arrays import below, case_counters, encode_exact, key_of, uniform_bits
from ptxconf.isa.packing import pack
from ptxconf.isa.ptxtypes import TYPES
from ptxconf.isa.targets import PtxVersion

from . import probe as _probe
from .cases import imm_tag, layout_choice
from .probe import (
    LANES,
    WgProbe,
    _words,
    a_off,
    b_base,
    c_off,
    img_off,
    immediate_sets,
    model_of,
)
from .spec import WgmmaVariant

__all__ = ["WgmmaBulk", "bulk_cases"]

_STREAMS = ("A", "B", "C", "C.near", "C.sign", "scale_d", "image")
GRID = np.arange(-3, 4)  # A and B values (cases._values): every product sum and C stay exact in D


class WgmmaBulk(BulkFields):
    """Bulk value cases of one wgmma form at one seed (layouts fixed per seed, values per case)."""

    buffers = None  # the probe module whose buffer contract the words follow (this family's; wgmma_sp's for .sp)

    def __post_init__(self) -> None:
        v = self.variant
        imm = dict(self.probe.imm)
        self.imm = imm
        self.params = {"imm": imm}
        self.check = self.check_name(imm)
        buf = self.buffers or _probe
        self.out_words, self.in_words, self.image_bytes = buf.out_words(v), buf.in_words(v), buf.image_bytes(v)
        self.key = key_of("bulk", v.id, self.seed)
        model = model_of(v)
        smem = model.smem
        rng = variant_rng(v, self.seed, "bulk layouts")
        self.desc_words = np.zeros(4, dtype=np.uint32)
        self.addresses: dict[str, np.ndarray] = {}  # operand -> byte address of element (mn, k), [ext * K]
        layouts = {}
        operands = ["B"] + (["A"] if v.a_src == "shared" else [])
        for name in operands:
            trans = imm.get(f"trans_{name.lower()}", 0)
            desc, pattern, sw = self.choose(rng, name, trans, model)
            col = 0 if name == "A" else 2
            self.desc_words[col], self.desc_words[col + 1] = _words(model, desc)
            ext, kext = self.tile(name)
            mn, k = np.meshgrid(np.arange(ext), np.arange(kext), indexing="ij")
            self.addresses[name] = smem.addresses(smem.major_of(trans), smem.name_of(desc.swizzle), desc.start, mn, k,
                                                  v.bits, desc.lbo, desc.sbo, desc.base_offset).ravel().astype(np.int64)
            layouts[name] = [sw, desc.start, desc.lbo, desc.sbo, pattern, desc.base_offset]
        self.meta = {"layouts_per_seed": layouts}
        self.pattern = ((np.arange(self.image_bytes) * 0x9D + 0x5B) & 0xFF).astype(np.uint8)
        self.grid = {t: TYPES[t].encode(GRID.astype(np.float64)) for t in {v.atype, v.btype} if TYPES[t].is_float}
        if v.bits == 1:  # .b1: eight consecutive k share a byte; each byte is written whole from its eight elements
            self.bit_order = {name: np.argsort(addr * 8 + np.arange(len(addr)) % self.tile(name)[1] % 8)
                              for name, addr in self.addresses.items()}

    # --- what a form built on this one (wgmma.sp) changes ------------------------------------------
    def check_name(self, imm: dict) -> str:
        return f"value[{imm_tag(imm)}]" if imm_tag(imm) else "value"

    def tile(self, name: str) -> tuple[int, int]:
        """(rows along M or N, columns along K) of A or B as stored."""
        v = self.variant
        return (64, v.K) if name == "A" else (v.N, v.K)

    def choose(self, rng, name: str, trans: int, model) -> tuple[Any, int, str]:
        """(descriptor, pattern start, swizzle mode) of A or B: any mode, on its repeat boundary or off it."""
        modes = list(model.smem.swizzles)
        sw = modes[int(rng.integers(len(modes)))]
        desc, pattern = layout_choice(self.variant, rng, name, trans, sw, model,
                                      0 if name == "A" else b_base(self.variant), bool(rng.integers(2)))
        return desc, pattern, sw

    def sparse(self, xp: Any, words: Any, a_vals: Any, first: int, n: int) -> Any:
        """The A values the product takes (a sparse form expands its stored A here and writes its metadata)."""
        return a_vals

    def _counter(self, xp: Any, stream: str, first: int, n: int, per_case: int) -> Any:
        return case_counters(xp, _STREAMS.index(stream), len(_STREAMS), first, n, per_case)

    def _multiplicand(self, xp: Any, name: str, tname: str, shape: tuple[int, int], first: int, n: int):
        """(container bits, values) ``[case, *shape]`` of A or B, as ``cases._values`` draws them: floats on the
        small grid, integers over their whole range, .b1 bits."""
        t = TYPES[tname]
        ctr = self._counter(xp, name, first, n, shape[0] * shape[1])
        if t.kind == "bits":
            vals = below(xp, self.key, ctr, 2).astype(xp.int64)
        elif t.is_float:
            vals = below(xp, self.key, ctr, len(GRID)).astype(xp.int64) + int(GRID[0])
        else:
            lo, hi = t.int_range()
            vals = below(xp, self.key, ctr, hi - lo + 1).astype(xp.int64) + lo
        vals = vals.reshape(n, *shape)
        if t.is_float:
            bits = xp.asarray(self.grid[tname])[vals - int(GRID[0])].astype(xp.uint64)
        else:
            bits = vals.astype(xp.uint64) & xp.uint64(t.mask)
        return bits, vals.astype(xp.float64)

    def _accumulator(self, xp: Any, first: int, n: int):
        """(container bits, values) of C ``[case, 64, N]``, as ``cases._c_values`` draws them."""
        v = self.variant
        size = 64 * v.N
        dt = TYPES[v.dtype]
        if dt.is_float:
            vals = (below(xp, self.key, self._counter(xp, "C", first, n, size), 129).astype(xp.int64) - 64)
            vals = vals.astype(xp.float64).reshape(n, 64, v.N)
            return encode_exact(dt, vals), vals
        small = below(xp, self.key, self._counter(xp, "C", first, n, size), 81).astype(xp.int64) - 40
        near = below(xp, self.key, self._counter(xp, "C.near", first, n, size), 2)
        sign = below(xp, self.key, self._counter(xp, "C.sign", first, n, size), 2)
        base = xp.where(near == 1, xp.where(sign == 1, 2**31 - 50, -(2**31) + 50), 0).astype(xp.int64)
        vals = (base + small).reshape(n, 64, v.N)
        return encode_exact(dt, vals), vals.astype(xp.float64)

    def _scatter(self, xp: Any, img: Any, name: str, bits: Any) -> None:
        """Write an operand's element bits ``[case, ext, K]`` (B given as ``[case, K, N]``) into the images."""
        v = self.variant
        mat = bits if name == "A" else xp.swapaxes(bits, 1, 2)
        flat = mat.reshape(len(mat), -1)
        addr = xp.asarray(self.addresses[name])
        if v.bits >= 8:
            for b in range(v.bits // 8):
                img[:, addr + b] = ((flat >> xp.uint64(8 * b)) & xp.uint64(0xFF)).astype(xp.uint8)
            return
        order = xp.asarray(self.bit_order[name])
        byte_addr = addr[order].reshape(-1, 8)[:, 0]
        bitvals = (flat[:, order] & xp.uint64(1)).astype(xp.uint8).reshape(len(flat), -1, 8)
        img[:, byte_addr] = (bitvals << xp.arange(8, dtype=xp.uint8)).sum(axis=-1).astype(xp.uint8)

    def draw(self, xp: Any, first: int, n: int) -> Drawn:
        v = self.variant
        a_bits, a_vals = self._multiplicand(xp, "A", v.atype, self.tile("A"), first, n)
        b_bits, b_vals = self._multiplicand(xp, "B", v.btype, (v.K, v.N), first, n)
        c_bits, c_vals = self._accumulator(xp, first, n)
        scale_d = below(xp, self.key, self._counter(xp, "scale_d", first, n, 1), 2)[:, 0]
        words = xp.zeros((n, LANES, self.in_words), dtype=xp.uint32)
        # bytes no element occupies: the plan's recognisable pattern, xor one random byte per case (random bits for
        # every byte of the image were three quarters of the draw)
        salt = (uniform_bits(xp, self.key, self._counter(xp, "image", first, n, 1)) & xp.uint64(0xFF)).astype(xp.uint8)
        img = xp.asarray(self.pattern)[None, :] ^ salt
        self._scatter(xp, img, "B", b_bits)
        if v.a_src == "shared":
            self._scatter(xp, img, "A", a_bits)
        else:
            aop = v.operands["A"]
            words[:, :, a_off(v) : a_off(v) + aop.words] = pack(aop, a_bits[:, None])
        words[:, :, 0:4] = xp.asarray(self.desc_words)[None, None, :]
        words[:, :, 4] = scale_d.astype(xp.uint32)[:, None]
        dop = v.operands["D"]
        words[:, :, c_off(v) : c_off(v) + dop.words] = pack(dop, c_bits[:, None])
        words[:, :, img_off(v) :] = img.view(xp.uint32).reshape(n, LANES, -1)
        a_vals = self.sparse(xp, words, a_vals, first, n)
        expected = xp.zeros((n, LANES, self.out_words), dtype=xp.uint32)
        expected[:, :, : dop.words] = pack(dop, self.product(xp, a_vals, b_vals, c_vals, scale_d)[:, None])
        defined = np.zeros((LANES, self.out_words), dtype=bool)
        defined[:, : dop.words] = True
        return Drawn(words, expected, xp.asarray(defined))

    def product(self, xp: Any, a: Any, b: Any, c: Any, scale_d: Any) -> Any:
        """D bits ``[case, 64, N]``: what ``probe.numerics`` computes, on ``xp`` (every sum exact in float64)."""
        v, imm = self.variant, self.imm
        # .b1 (.and.popc): the sum of the 0/1 products; the scale immediates exist for floats only
        acc = xp.einsum("cmk,ckn->cmn", a * imm.get("scale_a", 1), b * imm.get("scale_b", 1))
        acc = acc + xp.where(scale_d[:, None, None] == 1, c, 0.0)
        dt = TYPES[v.dtype]
        if dt.is_float:
            return encode_exact(dt, acc)
        acc = xp.rint(acc).astype(xp.int64)
        if v.satfinite:
            acc = xp.clip(acc, -(2**31), 2**31 - 1)
        return encode_exact(dt, acc)


def bulk_cases(v: WgmmaVariant, seed: int, cc: tuple[int, int], max_ptx: PtxVersion) -> WgmmaBulk:
    """The form's bulk cases at ``seed``: the immediate set, the layouts and the build drawn from their own streams."""
    rng = variant_rng(v, seed, "bulk")
    sets = immediate_sets(v)
    imm = sets[int(rng.integers(len(sets)))]
    target, version = pick_build(v, variant_rng(v, seed, "build"), cc, max_ptx)
    return WgmmaBulk(v, seed, version, target, WgProbe(v, tuple(sorted(imm.items()))), 1, lanes=LANES)
