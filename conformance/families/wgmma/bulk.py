"""wgmma value cases in bulk: the ``value`` check's cases as array code (NumPy or CuPy).

Per seed, as a plan draws them from their own streams: the immediate set, a swizzle mode and a descriptor for B (and
for A from shared memory), each on its repeat boundary or a random 128-byte step past it (the base offset then set by
the spec's rule), and the build.  Per case, by counter: A and B on the small grid of :func:`.cases._values`, C on
D's grid (integers: half the cases near the s32 limits), scale-d, and the random bytes the image's free units hold.

Why it is built as it is: on a GPU the draw's cost is its passes over arrays, not its arithmetic.  So everything a
seed fixes is evaluated once per seed into index maps (where each image unit, register slot and D slot comes from),
and a batch is a few whole-array steps: one 16-bit random draw per element, one table gather per operand part that
turns draws into container bits (and one into values), one gather that lays out the whole shared-memory image, C
drawn straight in its register order, and the product as one float32 matmul (exact: every value has at most eight
significant bits and every sum stays below 2**24), gathered into D's register order.  The prediction is the spec's
``probe.numerics`` on the drawn values; case ``i`` is a function of (variant, seed, i) alone.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np
from ptxconf.core.bulk import BulkFields, Drawn
from ptxconf.core.plan import pick_build, variant_rng
from ptxconf.isa.arrays import halves, key_of, on_module, u16_choices
from ptxconf.isa.ptxtypes import TYPES
from ptxconf.isa.targets import PtxVersion

from . import probe as _probe
from .cases import imm_tag, layout_choice
from .probe import LANES, WgProbe, _words, a_off, b_base, c_off, img_off, immediate_sets, model_of
from .spec import WgmmaVariant

__all__ = ["WgmmaBulk", "bulk_cases", "slot_map"]

GRID = np.arange(-3, 4)  # A and B values (cases._values): every product sum and C stay exact in D
C_SPAN = 64  # float C on -64..64 (cases._c_values)
FILL = 64  # free image units per case drawn at random (the image's other free units repeat them)
_CONTAINER = {8: np.uint8, 16: np.uint16, 32: np.uint32}


def slot_map(op: Any, shape: tuple[int, int], params: dict | None = None) -> np.ndarray:
    """``int64[lanes * elements]``: the flat (row, col) element of a one-matrix operand each register slot holds,
    lane-major (the order of :func:`ptxconf.isa.packing.pack`'s words).  Every slot must be held."""
    m, held = op.layout.map(params), op.layout.held(params)
    if not held.all():
        raise NotImplementedError(f"{op.name}: slots the layout leaves unheld")
    return (m[..., 1] * shape[1] + m[..., 2]).reshape(-1).astype(np.int64)


def _registers(xp: Any, slots: Any, op: Any, n: int) -> Any:
    """Container bits in slot order ``[case, lanes * elements]`` -> the operand's words ``uint32[case, lane, words]``
    (fields low to high, as :func:`ptxconf.isa.packing.pack` puts them)."""
    frag = op.fragment
    if frag.value_shift:
        raise NotImplementedError(f"{op.name}: a value shift")
    if frag.container_bits >= 8:
        return xp.ascontiguousarray(slots).view(xp.uint32).reshape(n, op.layout.lanes, op.words)
    per = frag.per_register
    fields = slots.astype(xp.uint32).reshape(n, op.layout.lanes, op.words, per)
    return (fields << xp.arange(0, 32, frag.container_bits, dtype=xp.uint32)).sum(axis=-1, dtype=xp.uint32)


class _Tables:
    """One operand type's draw -> (container bits, value) tables, 65536 entries each: a uniform 16-bit draw becomes
    an element of :func:`.cases._values` (floats on the grid, times the scale immediate; integers over their range;
    .b1 bits) in one gather."""

    def __init__(self, tname: str, scale: int = 1):
        t = TYPES[tname]
        if t.kind == "bits":
            vals = u16_choices(2).astype(np.float64)
            bits = vals.astype(np.uint64)
        elif t.is_float:
            vals = GRID[u16_choices(len(GRID))].astype(np.float64)
            bits = t.encode(vals, exact=False)
        else:
            lo, hi = t.int_range()
            vals = (lo + u16_choices(hi - lo + 1)).astype(np.float64)
            bits = t.encode(vals.astype(np.int64))
        self.unit = max(t.bits // 8, 1)
        self.bits = bits.astype(_CONTAINER[8 * self.unit]) if t.bits >= 8 else bits.astype(np.uint8)
        self.vals = (vals * scale).astype(np.float32)


@cache
def _tables(tname: str, scale: int) -> _Tables:
    """The tables of one (type, scale immediate), shared by every form and seed (so moved to a GPU once)."""
    return _Tables(tname, scale)


@cache
def _c_table(dtype: str) -> np.ndarray:
    """A uniform 16-bit draw -> C's container bits, as :func:`.cases._c_values` draws C: floats on -64..64; integers
    half near the s32 limits (either sign), all within 40 of their base."""
    t = TYPES[dtype]
    u = np.arange(1 << 16, dtype=np.int64)
    if t.is_float:
        return t.encode((u16_choices(2 * C_SPAN + 1) - C_SPAN).astype(np.float64), exact=False).astype(
            _CONTAINER[t.bits])
    near, sign, small = u >> 15, (u >> 14) & 1, ((u & 0x3FFF) * 81 >> 14) - 40
    base = np.where(near == 1, np.where(sign == 1, 2**31 - 50, -(2**31) + 50), 0)
    return ((base + small) & 0xFFFFFFFF).astype(np.uint32)


@cache
def _fill_table(unit: int) -> np.ndarray:
    """A draw -> the bits of a free image unit of ``unit`` bytes (wider units: the draw spread by a multiplier)."""
    u = np.arange(1 << 16, dtype=np.uint32)
    return (u * np.uint32(0x9E3779B1) if unit == 4 else u).astype(_CONTAINER[8 * unit])


@cache
def _c_values(dtype: str) -> np.ndarray:
    """C's values by draw, for a D whose bits are not float32's."""
    return TYPES[dtype].decode(_c_table(dtype).astype(np.uint64)).astype(np.float32)


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
        self._maps()

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

    def header_words(self) -> list[int]:
        """The words of every lane's header the draw writes (descriptors and scale-d); a sparse form adds its own."""
        return [0, 1, 2, 3, 4]

    def extra_columns(self) -> tuple[tuple[str, int], ...]:
        """Draws per case a form built on this one needs besides A, B, C and scale-d (name, count)."""
        return ()

    def sparse(self, xp: Any, draws: Any, words: Any, a_vals: Any) -> Any:
        """The A values the product takes (a sparse form expands its stored A here and writes its metadata from its
        :meth:`extra_columns` of ``draws``)."""
        return a_vals

    # --- what a seed fixes: tables and index maps ------------------------------------------------
    def _maps(self) -> None:
        """The per-seed index maps and tables every batch reuses (host arrays; moved once per array module)."""
        v, imm = self.variant, self.imm
        self.tabs = {"A": _tables(v.atype, imm.get("scale_a", 1)), "B": _tables(v.btype, imm.get("scale_b", 1))}
        self.unit = self.tabs["B"].unit  # bytes per image unit: an element, or for .b1 eight of them
        self.per_unit = 8 if v.bits == 1 else 1
        dop = v.operands["D"]
        self.d_slots = slot_map(dop, (64, v.N))
        self.c_table = _c_table(v.dtype)
        self.c_vals = _c_values(v.dtype) if v.dtype == "f16" else None
        # the draw's columns: C (D's slots), A (its slots from registers, else its stored units), B's units, free units
        cols, at = {}, 0
        a_ext, a_k = self.tile("A")
        if v.a_src == "registers":
            self.a_slots = slot_map(v.operands["A"], (a_ext, a_k))
            self.a_source = np.argsort(self.a_slots, kind="stable")  # slot that holds each element (every one once)
        for name, count in (("C", len(self.d_slots)),
                            ("A", a_ext * a_k // (1 if v.a_src == "registers" else self.per_unit)),
                            ("B", np.prod(self.tile("B")) // self.per_unit), ("fill", FILL), ("scale_d", 1),
                            *self.extra_columns()):
            cols[name] = (at, at + int(count))
            at += int(count)
        self.cols, self.columns = cols, at
        # the image: every unit's source among [image operands' units | free units], as one gather
        units = self.image_bytes // self.unit
        src = [n for n in ("A", "B") if n in self.addresses]
        base, parts = {}, 0
        for name in src:
            base[name] = parts
            parts += cols[name][1] - cols[name][0]
        imap = parts + np.arange(units, dtype=np.int64) % FILL
        taken = np.zeros(units, dtype=bool)
        for name in src:
            addr = self.addresses[name][:: self.per_unit]  # .b1: the byte of eight consecutive k
            if self.per_unit > 1 and not np.array_equal(np.repeat(addr, 8), self.addresses[name]):
                raise NotImplementedError(f"{v.id}: .b1 elements of one byte that are not eight consecutive k")
            if (addr % self.unit).any() or taken[addr // self.unit].any():
                raise NotImplementedError(f"{v.id}: {name}'s elements overlap or straddle units")
            taken[addr // self.unit] = True
            imap[addr // self.unit] = base[name] + np.arange(len(addr))
        self.image_map, self.image_src = imap, src
        self.fill_table = _fill_table(self.unit)
        self.defined = np.zeros((LANES, self.out_words), dtype=bool)
        self.defined[:, : dop.words] = True
        written = set(self.header_words()) | set(range(c_off(v), c_off(v) + dop.words)) | set(
            range(img_off(v), self.in_words))
        if v.a_src == "registers":
            written |= set(range(a_off(v), a_off(v) + v.operands["A"].words))
        gaps = sorted(set(range(self.in_words)) - written)
        self.zero_runs = [(w, w + 1) for w in gaps]  # the words nothing else writes, as runs of whole slices
        for i in range(len(self.zero_runs) - 1, 0, -1):
            if self.zero_runs[i - 1][1] == self.zero_runs[i][0]:
                self.zero_runs[i - 1:i + 1] = [(self.zero_runs[i - 1][0], self.zero_runs[i][1])]

    def part(self, u: Any, name: str) -> Any:
        """The draws ``[case, count]`` of one column block."""
        lo, hi = self.cols[name]
        return u[:, lo:hi]

    def _values(self, xp: Any, name: str, units: Any, n: int) -> Any:
        """``float32[case, ext, K]`` values of A or B from their units (matrix order)."""
        ext, kext = self.tile(name)
        if self.per_unit == 1:
            return units.reshape(n, ext, kext)
        bits = (units[..., None] >> xp.arange(8, dtype=xp.uint8)) & xp.uint8(1)  # .b1: bit k % 8 of its byte
        return bits.astype(xp.float32).reshape(n, ext, kext)

    def draw(self, xp: Any, first: int, n: int) -> Drawn:
        v = self.variant
        t = lambda a: on_module(xp, a)  # noqa: E731 - a host table or map on this array module
        u = halves(xp, self.key, first, n, self.columns)
        sd = self.part(u, "scale_d")[:, 0] >> xp.uint16(15)
        words = xp.empty((n, LANES, self.in_words), dtype=xp.uint32)
        words[:, :, 0:4] = t(self.desc_words)[None, None, :]
        words[:, :, 4] = sd.astype(xp.uint32)[:, None]
        for lo, hi in self.zero_runs:
            words[:, :, lo:hi] = 0
        dop = v.operands["D"]
        c_draws = self.part(u, "C")
        c_bits = t(self.c_table)[c_draws]
        words[:, :, c_off(v) : c_off(v) + dop.words] = _registers(xp, c_bits, dop, n)
        vals, units = {}, []
        for name in ("A", "B"):
            draws, tab = self.part(u, name), self.tabs[name]
            if name == "A" and v.a_src == "registers":
                aop = v.operands["A"]
                words[:, :, a_off(v) : a_off(v) + aop.words] = _registers(xp, t(tab.bits)[draws], aop, n)
                vals[name] = t(tab.vals)[draws[:, t(self.a_source)]].reshape(n, *self.tile("A"))
                continue
            if self.per_unit == 1:
                units.append(t(tab.bits)[draws])
                vals[name] = self._values(xp, name, t(tab.vals)[draws], n)
            else:  # .b1: the byte's eight elements are the draw's low bits
                units.append(draws.astype(xp.uint8))
                vals[name] = self._values(xp, name, units[-1], n)
        units.append(t(self.fill_table)[self.part(u, "fill")])
        image = xp.take(xp.concatenate(units, axis=1), t(self.image_map), axis=1)
        words[:, :, img_off(v) :] = image.view(xp.uint32).reshape(n, LANES, -1)
        a = self.sparse(xp, u, words, vals["A"])
        d = self.product(xp, a, vals["B"], c_draws, c_bits, sd)
        if self.out_words == dop.words:
            expected = d
        else:
            expected = xp.zeros((n, LANES, self.out_words), dtype=xp.uint32)
            expected[:, :, : dop.words] = d
        return Drawn(words, expected, on_module(xp, self.defined))

    def product(self, xp: Any, a: Any, b: Any, c_draws: Any, c_bits: Any, scale_d: Any) -> Any:
        """D's words ``uint32[case, lane, words]``: what ``probe.numerics`` computes, from A ``[case, 64, K]``, B as
        stored ``[case, N, K]`` (values, the scale immediates applied) and C's draws and bits in D's slot order."""
        v = self.variant
        n = len(a)
        acc = xp.matmul(a, b.transpose(0, 2, 1)).reshape(n, -1)  # exact in float32 (see the module's docstring)
        acc = xp.take(acc, on_module(xp, self.d_slots), axis=1)
        on = scale_d.astype(bool)[:, None]
        dt = TYPES[v.dtype]
        if dt.is_float:
            c = c_bits.view(xp.float32) if self.c_vals is None else on_module(xp, self.c_vals)[c_draws]
            d = acc + xp.where(on, c, xp.float32(0))  # + 0 where scale-d is 0: an all -0 sum is +0, as numerics
            d = d if dt.bits == 32 else d.astype(xp.float16)
        elif v.satfinite:
            d = acc.astype(xp.int64) + xp.where(on, c_bits.view(xp.int32).astype(xp.int64), 0)
            d = xp.clip(d, -(2**31), 2**31 - 1).astype(xp.int32)
        else:  # s32 wraps: sums in 32-bit words
            d = acc.astype(xp.int32).view(xp.uint32) + xp.where(on, c_bits, xp.uint32(0))
        return _registers(xp, d.view(_CONTAINER[dt.bits]), v.operands["D"], n)


def bulk_cases(v: WgmmaVariant, seed: int, cc: tuple[int, int], max_ptx: PtxVersion, imm: dict | None = None
               ) -> WgmmaBulk:
    """The form's bulk cases at ``seed``: the immediate set (``imm``, else drawn), the layouts and the build drawn
    from their own streams."""
    if imm is None:
        sets = immediate_sets(v)
        imm = sets[int(variant_rng(v, seed, "bulk").integers(len(sets)))]
    target, version = pick_build(v, variant_rng(v, seed, "build"), cc, max_ptx)
    return WgmmaBulk(v, seed, version, target, WgProbe(v, tuple(sorted(imm.items()))), 1, lanes=LANES)
