"""Probes for wgmma.mma_async: one warpgroup (128 threads) per case.

Buffer contract (the mma kernel signature: in, out, order, ncases; ``[case][lane][word]``,
here 128 lanes per case):

* words 0-1 / 2-3 of every lane: the A / B matrix descriptor, with the start address relative
  to the case's shared image (the kernel adds the image's shared address >> 4);
* word 4: scale-d (0: D = A*B, else D = A*B + C);
* words ``c_off ..``: C, in D's fragment (D's registers before the instruction);
* words ``a_off ..`` (A from registers): A's fragment;
* words ``img_off ..``: the shared image, lane by lane (lane 0's words first); the kernel copies
  it to shared memory (aligned to 1024 bytes), fences the async proxy and runs the instruction.

Out: D's registers.  The immediates (imm-scale-a/b, imm-trans-a/b) are part of the kernel: a plan
has one kernel per immediate set; swizzle mode, LBO/SBO, start offsets and scale-d are data.

:func:`apply` executes a case as the spec says (emulator and comparator both use it), with a
:class:`Model` that may be perturbed (the fault hypotheses of :mod:`.compare`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import cache, lru_cache

import numpy as np
from ptxconf.core.verdict import Verdict
from ptxconf.families.wgmma.desc import Desc, decode, encode, shift_of
from ptxconf.families.wgmma.spec import SmemSpec, WgmmaVariant
from ptxconf.generators.ptx import KeyedProbe, case_prologue, global_moves
from ptxconf.generators.ptx import module_source as probe_module_source
from ptxconf.isa.model import Variant
from ptxconf.isa.packing import pack, unpack
from ptxconf.isa.ptxtypes import TYPES
from ptxconf.isa.targets import PtxVersion, Target

LANES = 128
HEAD_WORDS = 6
A_REGION = 64 * 128 + 1024  # 64 rows of the widest swizzle, plus room for an offset start
RUN_N = (8, 16, 64, 256)  # the N a quick GPU run covers per type (the specs enumerate all N)


def is_wgmma(v: Variant) -> bool:
    return v.family == "wgmma"


def _spec():
    from ptxconf.isa.loader import load_specs

    return load_specs().documents["wgmma"]


# --- buffers ---------------------------------------------------------------------------------


def d_words(v: WgmmaVariant) -> int:
    return v.operands["D"].words


def c_off(v: WgmmaVariant) -> int:
    return HEAD_WORDS


def a_off(v: WgmmaVariant) -> int:
    return HEAD_WORDS + d_words(v)


def b_region(v: WgmmaVariant) -> int:
    return max(v.N, 8) * 128 + 1024


def image_bytes(v: WgmmaVariant, region=None) -> int:
    """The shared image's bytes: A's region (from shared memory), then B's (``region(v)``: the dense
    :func:`b_region` unless a form that builds on this one needs more), in whole 16-byte vectors per lane."""
    total = b_base(v) + (region or b_region)(v)
    return -(-total // (LANES * 16)) * LANES * 16


def b_base(v: WgmmaVariant) -> int:
    return A_REGION if v.a_src == "shared" else 0


def img_off(v: WgmmaVariant) -> int:
    n = a_off(v) + (v.operands["A"].words if "A" in v.operands else 0)
    return -(-n // 4) * 4


def in_words(v: WgmmaVariant, region=None) -> int:
    return img_off(v) + image_bytes(v, region) // (4 * LANES)


def out_words(v: WgmmaVariant) -> int:
    return d_words(v) + d_words(v) % 2


def defined_words(v: WgmmaVariant) -> np.ndarray:
    """``uint32[lane, out_words]``: the bits of the out words a comparator reads (D's registers, not the padding)."""
    mask = np.zeros((LANES, out_words(v)), dtype=np.uint32)
    mask[:, : d_words(v)] = 0xFFFFFFFF
    return mask


def image_of(v: WgmmaVariant, words: np.ndarray) -> np.ndarray:
    """``uint32[case, lane, in_words]`` -> ``uint8[case, image_bytes]``."""
    w = np.ascontiguousarray(words[:, :, img_off(v) :], dtype="<u4")
    return w.reshape(len(w), -1).view(np.uint8).copy()


def put_image(v: WgmmaVariant, words: np.ndarray, img: np.ndarray) -> None:
    words[:, :, img_off(v) :] = np.ascontiguousarray(img).view("<u4").reshape(len(img), LANES, -1)


# --- the model the emulator and comparator execute --------------------------------------------


@dataclass(frozen=True)
class Model:
    """What the spec says, as data: perturb a field to state a fault hypothesis."""

    smem: SmemSpec
    desc: object = None  # DescSpec
    swap_lbo_sbo: bool = False  # the hardware takes LBO for SBO and vice versa
    unencoded: bool = False  # the hardware's descriptor encoding shifts where the spec's does not (or back)
    major_flip: tuple[str, ...] = ()  # operands read MN-major where the spec says K-major (and back)
    swizzle_map: tuple[tuple[int, str], ...] = ()  # descriptor code -> mode actually applied
    core_transpose: bool = False  # rows and 16-byte columns of each 8x8 core matrix exchanged
    ignore_base_offset: bool = False  # the hardware swizzles by the address alone (base offset read as 0)
    d_layout: object | None = None  # another D layout (a TableLayout) to pack D through
    a_layout: object | None = None  # another register-A layout

    def swizzle_name(self, code: int) -> str | None:
        for c, name in self.swizzle_map:
            if c == code:
                return name
        return self.smem.name_of(code)


def model_of(v: WgmmaVariant) -> Model:
    doc = v.doc if v.doc is not None else _spec()
    return Model(doc.smem, doc.descriptor)


def decode_words(model: Model, lo, hi) -> Desc:
    """The descriptor in a case's words 0-1 (A) or 2-3 (B) as ``model`` reads it (decoded once per process)."""
    key = (id(model.desc), id(model.smem), model.unencoded, int(lo), int(hi))
    hit = _DESCS.get(key)
    if hit is not None and hit[0] is model.desc and hit[1] is model.smem:
        return hit[2]
    s = shift_of(model.desc)
    if model.unencoded:
        s = 0 if s else 4
    got = decode(model.desc, model.smem, int(lo) | (int(hi) << 32), s)
    if len(_DESCS) > 65536:
        _DESCS.clear()
    _DESCS[key] = (model.desc, model.smem, got)  # the specs kept alive, so their ids stay their own
    return got


_DESCS: dict[tuple, tuple] = {}


def base_offset_of(model: Model, sw: str, pattern: int) -> int:
    """The base offset the spec's rule gives a ``sw`` pattern starting at ``pattern`` (image-relative bytes),
    evaluated once per process and (layout spec, mode, start): every case asks, from a few hundred starts."""
    key = (id(model.desc), id(model.smem), sw, int(pattern))
    hit = _BASE_OFFSETS.get(key)
    if hit is None or hit[0] is not model.desc or hit[1] is not model.smem:
        if len(_BASE_OFFSETS) > 65536:
            _BASE_OFFSETS.clear()
        hit = _BASE_OFFSETS[key] = (model.desc, model.smem, model.desc.base_offset_for(model.smem, sw, int(pattern)))
    return hit[2]


_BASE_OFFSETS: dict[tuple, tuple] = {}


def read_matrix(model: Model, v: WgmmaVariant, img: np.ndarray, desc: Desc, operand: str, trans: int) -> np.ndarray:
    """Element bits ``uint64[rows, cols]`` of A (64 x K) or B (K x N) from one case's image."""
    idx, outside, kb = _gather(model, v, desc, operand, trans, len(img))
    if kb is None:  # every byte of every element in one gather, read back little-endian
        nb = idx.shape[-1]
        out = img[idx].view(f"<u{nb}")[..., 0].astype(np.uint64) if nb in (1, 2, 4, 8) else _join_bytes(img[idx])
        out[outside] = 0
    else:
        out = (img[idx].astype(np.uint64) >> kb) & np.uint64(1)
    return out if operand == "A" else out.T


def read_matrices(model: Model, v: WgmmaVariant, img: np.ndarray, lo: np.ndarray, hi: np.ndarray, operand: str,
                  trans: int) -> np.ndarray:
    """:func:`read_matrix` of every case at once (``img[case]``, its descriptor in words ``lo[case]``,
    ``hi[case]``): each case's bytes gathered through its layout's cached indices into one array, then read as
    elements in one pass."""
    size = img.shape[1]
    parts = [_gather(model, v, decode_words(model, a, b), operand, trans, size) for a, b in zip(lo, hi)]
    if not parts:
        rows, cols = (64, v.K) if operand == "A" else (v.K, v.N)
        return np.zeros((0, rows, cols), dtype=np.uint64)
    img = np.ascontiguousarray(img)
    got = np.empty((len(parts), *parts[0][0].shape), dtype=np.uint8)
    for c, (idx, _, _) in enumerate(parts):
        np.take(img[c], idx, out=got[c])
    if parts[0][2] is None:
        nb = got.shape[-1]
        out = got.view(f"<u{nb}")[..., 0].astype(np.uint64) if nb in (1, 2, 4, 8) else _join_bytes(got)
        for c, (_, outside, _) in enumerate(parts):
            if outside.any():
                out[c][outside] = 0
    else:
        out = (got.astype(np.uint64) >> parts[0][2]) & np.uint64(1)  # the same bit shifts for every descriptor
    return out if operand == "A" else out.transpose(0, 2, 1)


def _join_bytes(b: np.ndarray) -> np.ndarray:
    out = np.zeros(b.shape[:-1], dtype=np.uint64)
    for k in range(b.shape[-1]):
        out |= b[..., k].astype(np.uint64) << np.uint64(8 * k)
    return out


def _gather(model: Model, v: WgmmaVariant, desc: Desc, operand: str, trans: int, size: int):
    """(byte indices ``[ext, K, bytes]`` of each element, elements outside the image, bit shift of sub-byte
    elements) of one operand's layout: the formulas are evaluated once per distinct descriptor, not per case."""
    key = (id(model.smem), model.swap_lbo_sbo, model.major_flip, model.swizzle_map, model.core_transpose,
           model.ignore_base_offset, v.bits, v.K, v.N, operand, trans, desc.start, desc.lbo, desc.sbo, desc.base_offset,
           desc.swizzle, size)
    hit = _GATHERS.get(key)
    if hit is not None:
        return hit[1]
    bits = v.bits
    ext = 64 if operand == "A" else v.N
    major = model.smem.major_of(trans)
    if operand in model.major_flip:
        major = "K" if major == "MN" else "MN"
    lbo, sbo = (desc.sbo, desc.lbo) if model.swap_lbo_sbo else (desc.lbo, desc.sbo)
    sw = model.swizzle_name(desc.swizzle) or "none"
    # no-swizzle layout: element (r, c) of each 8x8 core matrix is read where the spec puts (c, r)
    core = model.core_transpose and bits == 16 and sw == "none"
    bo = 0 if model.ignore_base_offset else desc.base_offset
    addr = tile_addresses(model.smem, major, sw, desc.start, ext, v.K, bits, lbo, sbo, bo, core)
    if bits >= 8:
        nb = bits // 8
        got = (np.clip(addr[..., None] + np.arange(nb), 0, size - 1), (addr < 0) | (addr + nb > size), None)
    else:
        k = np.arange(v.K)[None, :]
        got = (np.clip(addr, 0, size - 1), np.zeros(addr.shape, dtype=bool), np.broadcast_to((k * bits % 8).astype(np.uint64), addr.shape))
    if len(_GATHERS) > 1024:
        _GATHERS.clear()
    _GATHERS[key] = (model.smem, got)  # the layout spec is kept alive, so its id stays its own
    return got


def tile_addresses(smem: SmemSpec, major: str, sw: str, start: int, ext: int, kext: int, bits: int, lbo: int, sbo: int,
                   base_offset: int, core_transpose: bool = False, extent: bool = False):
    """Shared-image byte address ``int64[ext, kext]`` of each element (mn, k) of a tile, as the spec's formulas
    place it (``core_transpose``: each 8x8 core matrix read transposed); ``extent``: only the highest offset
    before the swizzle.  The offsets depend only on the layout and the tile's shape: they are evaluated once per
    process, the start and the swizzle applied per call."""
    off, low, high, _ = _tile(smem, major, sw, ext, kext, bits, lbo, sbo, core_transpose)
    if extent:
        return high
    return _swizzled(smem, sw, start, off, low, high, base_offset)[0]


def _swizzled(smem: SmemSpec, sw: str, start: int, off: np.ndarray, low: int, high: int, base_offset: int):
    """(the addresses ``start + off`` through the swizzle, whether the swizzle maps distinct addresses to distinct
    ones there: always for none; for a mode, where its table is one-to-one)."""
    addr = start + off
    if sw == "none":
        return addr, True
    if start + low < 0:  # (a negative address: the formula itself, as the spec writes it)
        return smem.swizzled(sw, addr, base_offset), False
    table = smem.swizzle_table(sw, int(base_offset), start + high + 1)
    return table[addr], _one_to_one(smem, sw, int(base_offset), table)


def _one_to_one(smem: SmemSpec, sw: str, base_offset: int, table: np.ndarray) -> bool:
    """Whether a swizzle table maps no two addresses to one, counted once per table (a table outgrown is a new
    one): then distinct offsets place distinct elements, and :func:`placement` need not count them."""
    key = (id(smem), sw, base_offset)
    hit = _ONE_TO_ONE.get(key)
    if hit is None or hit[0] is not table:
        low = int(table.min()) if table.size else 0
        hit = _ONE_TO_ONE[key] = (table, low >= 0 and _distinct(table - low))  # the table kept alive: its id its own
    return hit[1]


def _distinct(x: np.ndarray) -> bool:
    """No value of non-negative ``x`` twice; False (not known) where its values span more than a counter's bound
    (a perturbed stride's tile: counting it would cost more than the placements it spares)."""
    if not x.size:
        return True
    return int(x.max()) < _COUNTED and np.bincount(x.ravel()).max() <= 1


_COUNTED = 1 << 20


def _tile(smem: SmemSpec, major: str, sw: str, ext: int, kext: int, bits: int, lbo: int, sbo: int,
          core_transpose: bool) -> tuple:
    """(pre-swizzle offsets ``int64[ext, kext]``, their lowest and highest, whether no two are one) of a tile, once
    per process and layout (:func:`tile_addresses`)."""
    uses = smem.strides_read(major, sw)  # a stride the formula never reads does not make a layout distinct
    key = (id(smem), major, sw, bits, lbo if "LBO" in uses else None, sbo if "SBO" in uses else None, ext, kext,
           core_transpose)
    hit = _TILES.get(key)
    if hit is None or hit[0] is not smem:
        # the formula is evaluated element by element: a tile's offsets are the first ``ext`` rows of the widest
        # tile's, evaluated once per layout for every N where a layout comes with a second N (its strides not N's
        # own: A's are the same for every N, B's often are not), else ``ext`` rows alone
        layout = key[:6] + key[7:]
        rows = max(ext, TILE_ROWS) if layout in _TILE_LAYOUTS else ext
        whole = _TILES.get(key[:6] + (rows,) + key[7:])
        if whole is None or whole[0] is not smem:
            mn, k = np.arange(rows)[:, None], np.arange(kext)[None, :]  # (the formula broadcasts them to the tile)
            if core_transpose:
                mn, k = (mn // 8) * 8 + k % 8, (k // 8) * 8 + mn % 8
            # evaluated here, not through SmemSpec.offsets' own cache: this one already keeps every tile's offsets
            full = np.broadcast_to(smem._offsets(major, sw, mn, k, bits, lbo, sbo), (rows, kext))
            whole = _tile_entry(smem, full, None)
        if len(_TILES) > 4096:
            _TILES.clear()
            _TILE_LAYOUTS.clear()
        _TILE_LAYOUTS.add(layout)
        _TILES[key[:6] + (rows,) + key[7:]] = whole
        hit = _TILES[key] = _tile_entry(smem, whole[1][:ext], whole[4]) if ext < rows else whole
    return hit[1:]


def _tile_entry(smem: SmemSpec, off: np.ndarray, distinct: bool | None) -> tuple:
    """A :data:`_TILES` entry: (the layout spec, the offsets, lowest, highest, whether distinct); ``distinct`` where
    known already (the rows of a tile whose offsets are all distinct are)."""
    low, high = (int(off.min()), int(off.max())) if off.size else (0, -1)
    return smem, off, low, high, bool(distinct) or _distinct(off - low)


_TILES: dict[tuple, tuple] = {}
_ONE_TO_ONE: dict[tuple, tuple[np.ndarray, bool]] = {}
_TILE_LAYOUTS: set[tuple] = set()  # the layouts (tiles' keys less the extent) evaluated once already
TILE_ROWS = 256  # the widest tile (B at N = 256) whose offsets every narrower tile's are the first rows of
_GATHERS: dict[tuple, tuple[SmemSpec, tuple]] = {}


def decoded(t, bits) -> np.ndarray:
    """``t.decode(bits)``; for a type of at most 16 bits, looked up from a table of every pattern (one gather
    instead of a mask, two conversions and a view per element)."""
    if t.bits > 16:
        if t.name == "f32":  # the container is the float: one conversion (what decode does, without the mask's copy)
            with np.errstate(invalid="ignore"):
                return _low32(bits).view(np.float32).astype(np.float64)
        return t.decode(bits)
    return _looked_up(t, bits, False)


def decoded_float(t, bits) -> np.ndarray:
    """:func:`decoded` as float64 (an integer type's values too, exactly: at most 16 bits), from a float64 table."""
    if t.bits > 16:
        return np.asarray(decoded(t, bits), dtype=np.float64)
    return _looked_up(t, bits, True)


def _looked_up(t, bits, as_float: bool) -> np.ndarray:
    """Every pattern of a type of at most 16 bits decoded once per process (as float64 or as decode gives), and
    ``bits`` looked up in that table."""
    table = _DECODED.get((t.name, as_float))
    if table is None:
        table = t.decode(np.arange(1 << t.bits, dtype=np.uint64))
        table = _DECODED[(t.name, as_float)] = table.astype(np.float64) if as_float else table
    # the pattern as an index of the narrowest unsigned type that holds it (its low 8 or 16 bits: the cast drops
    # the rest, as the mask does); NumPy gathers through a uint64 index several times slower
    idx = np.asarray(bits).astype(np.uint8 if t.bits <= 8 else np.uint16)
    if t.bits not in (8, 16):
        idx &= t.mask
    return table[idx]


_DECODED: dict[tuple[str, object], object] = {}


def c_values(t, bits) -> np.ndarray:
    """C's values to add to a float64 product: ``.f32`` as float32 and ``.s32`` as int32 (NumPy converts each
    exactly as it adds, without a float64 copy of C), any other type :func:`decoded`."""
    if t.name in ("f32", "s32"):
        return _low32(bits).view(np.float32 if t.name == "f32" else np.int32)
    return decoded(t, bits)


def _low32(bits) -> np.ndarray:
    """The low 32 bits of each container (what decode's mask keeps of a 32-bit type) as uint32: the array
    itself where it is uint32 already."""
    bits = np.asarray(bits)
    return bits if bits.dtype == np.uint32 else np.asarray(bits, dtype=np.uint64).astype(np.uint32)


def _scaled(x: np.ndarray, scale: int) -> np.ndarray:
    """``scale * x`` (imm-scale-a/b: 1 or -1), without a copy for 1 (``1 * x`` is ``x``, bit for bit)."""
    return x if scale == 1 else scale * x


def numerics(v: WgmmaVariant, a_bits, b_bits, c_bits, scale_d: bool, imm: dict) -> np.ndarray:
    """D bits ``uint64[..., 64, N]`` from A, B, C bits (one case, or a stack of them), exactly as the spec's semantics
    say."""
    at, bt, dt = TYPES[v.atype], TYPES[v.btype], TYPES[v.dtype]
    if dt.is_float:
        a, b = decoded(at, a_bits), decoded(bt, b_bits)
        with np.errstate(invalid="ignore", over="ignore"):  # NaN/Inf bytes read under a fault hypothesis
            acc = _scaled(a, imm.get("scale_a", 1)) @ _scaled(b, imm.get("scale_b", 1))
            if scale_d:
                acc += c_values(dt, c_bits)
            return dt.encode(acc, exact=False)  # float64 already
    if at.bits + bt.bits + int(np.shape(a_bits)[-1]).bit_length() < 52 and dt.bits <= 32:
        # every product and partial sum an integer below 2**52, C below 2**32: float64 (a BLAS product) holds each
        # exactly, C added too
        acc = decoded_float(at, a_bits) @ decoded_float(bt, b_bits)
        if scale_d:
            acc += c_values(dt, c_bits)
        acc = acc.astype(np.int64)
    else:
        acc = decoded(at, a_bits).astype(np.int64) @ decoded(bt, b_bits).astype(np.int64)
        if scale_d:
            acc += decoded(dt, c_bits).astype(np.int64)
    if v.satfinite:
        acc = np.clip(acc, -(2**31), 2**31 - 1)
    return (acc & 0xFFFFFFFF).astype(np.uint64)


def operand_d(v: WgmmaVariant, model: Model | None):
    d = v.operands["D"]
    if model is not None and model.d_layout is not None:
        d = replace(d, layout=model.d_layout)
    return d


def matrices(v: WgmmaVariant, words: np.ndarray, imm: dict, model: Model) -> tuple[np.ndarray, np.ndarray]:
    """A and B bits ``[case, 64, K]``, ``[case, K, N]`` as the model reads them."""
    img = image_of(v, words)
    if v.a_src == "registers":
        aop = v.operands["A"]
        if model.a_layout is not None:
            aop = replace(aop, layout=model.a_layout)
        A = unpack(aop, words[:, :, a_off(v) : a_off(v) + aop.words])[:, 0]
    else:
        A = read_matrices(model, v, img, words[:, 0, 0], words[:, 0, 1], "A", imm.get("trans_a", 0))
    B = read_matrices(model, v, img, words[:, 0, 2], words[:, 0, 3], "B", imm.get("trans_b", 0))
    return A, B


def apply(v: WgmmaVariant, words: np.ndarray, imm: dict, model: Model | None = None, arithmetic=None) -> np.ndarray:
    """Expected out words ``uint32[case, 128, out_words]`` by the spec (or a perturbed model).

    ``arithmetic`` replaces :func:`numerics` (same signature): the numerics model's hook."""
    model = model or model_of(v)
    A, B = matrices(v, words, imm, model)
    dop = operand_d(v, model)
    C = unpack(dop, words[:, :, c_off(v) : c_off(v) + dop.words])[:, 0]
    D = d_of_cases(v, A, B, C, words[:, 0, 4] != 0, imm, numerics, arithmetic)
    out = np.zeros((len(words), LANES, out_words(v)), dtype=np.uint32)
    out[:, :, : dop.words] = pack(dop, D[:, None])
    return out


def d_of_cases(v, A: np.ndarray, B: np.ndarray, C: np.ndarray, scale_d: np.ndarray, imm: dict, spec_numerics,
               arithmetic=None) -> np.ndarray:
    """D bits ``[case, 64, N]``: the spec's arithmetic (``spec_numerics``) takes every case of one scale-d at once;
    a numerics-model hook (``arithmetic``) is asked case by case, as its signature says."""
    if arithmetic is not None:
        return np.stack([arithmetic(v, A[c], B[c], C[c], bool(scale_d[c]), imm) for c in range(len(A))])
    D = np.zeros((len(A), 64, v.N), dtype=np.uint64)
    for sd in (False, True):
        at = np.flatnonzero(scale_d == sd)
        if len(at):
            D[at] = spec_numerics(v, A[at], B[at], C[at], sd, imm)
    return D


def predict(v: WgmmaVariant, parts: Sequence[tuple], spec_numerics=numerics) -> list[np.ndarray]:
    """What :func:`apply` gives for the cases of each part ``(A, B, C, scale_d, imm)`` (the bits a generator placed,
    ``[case, 64, K]``, ``[case, K, N]``, ``[case, 64, N]``, ``bool[case]``; A or B may be (float32 values, the
    bound :func:`values_bound` gives, and the bits where at hand) instead: values drawn with their bits, the sparse
    form's densified A),
    without reading them back from the words: the out words
    ``uint32[case, 128, out_words]`` of each part, every part's D packed in one pass.  Each case's D is its own
    product, whatever else is stacked with it.

    A generator's cases hold small integers (grids, tags, selections): where every partial sum of a part is an
    integer below 2**24 its product is taken in float32 (half the BLAS time), the very sums ``spec_numerics``
    takes in float64, C then added in float64 as there; any other part goes through ``spec_numerics`` itself."""
    if not parts:
        return []
    dop = v.operands["D"]
    total = sum(len(p[3]) for p in parts)
    D = np.empty((total, 64, v.N), dtype=_D_BITS.get(v.dtype, np.uint64))
    at = 0
    for A, B, C, sd, imm in parts:
        _product(v, A, B, C, np.asarray(sd, dtype=bool), imm, spec_numerics, D[at : at + len(sd)])
        at += len(sd)
    packed = pack(dop, D[:, None])
    if out_words(v) != dop.words:
        words = np.zeros((total, LANES, out_words(v)), dtype=np.uint32)
        words[:, :, : dop.words] = packed
        packed = words
    out, at = [], 0
    for p in parts:
        out.append(packed[at : at + len(p[3])])
        at += len(p[3])
    return out


_D_BITS = {"f32": np.uint32, "s32": np.uint32, "f16": np.uint16}  # D's container bits as narrow as they fit


def _product(v: WgmmaVariant, A, B, C, sd: np.ndarray, imm: dict, spec_numerics, out: np.ndarray) -> None:
    """D bits of one part of :func:`predict` into ``out`` (D's container bits): in float32 where exact, else
    ``spec_numerics``'s."""
    dt = TYPES[v.dtype]
    a = A if isinstance(A, tuple) else values_bound(TYPES[v.atype], A)
    b = B if isinstance(B, tuple) else values_bound(TYPES[v.btype], B)
    c, C = (C[:2], C[2]) if isinstance(C, tuple) else (None, C)
    if a is None or b is None or not len(out) or v.K * a[1] * b[1] >= 2**24:
        A, B = (x[2] if isinstance(x, tuple) and len(x) > 2 else x for x in (A, B))  # the bits, where given
        if isinstance(A, tuple) or isinstance(B, tuple):
            raise ValueError(f"{v.id}: A or B given as values only, but their product is not exact in float32")
        # one product for both scale-d: without it C is -0, which adds nothing to any sum (x + -0 is x, -0 too)
        # (-0 in C's own container type: a uint32 C stays uint32)
        nothing = dt.encode(np.array(-0.0), exact=False) if dt.is_float else np.uint64(0)
        out[...] = spec_numerics(v, A, B, C if sd.all() else np.where(sd[:, None, None], C, C.dtype.type(nothing)),
                                 True, imm)
        return
    bound = v.K * a[1] * b[1] + (c[1] if c is not None else np.inf)
    exact = dt.is_float and bound < 2**24 and v.dtype in _D_BITS
    # an exact .f32 D: the product straight into D's bits, C added there (no copy of the sums)
    into = out.view(np.float32) if exact and v.dtype == "f32" else None
    acc = np.matmul(_scaled(a[0], imm.get("scale_a", 1)), _scaled(b[0], imm.get("scale_b", 1)), out=into)
    if exact:
        # C's values given, integers too: every sum exact in float32, D's bits straight from it (an .f16 D's
        # looked up by value, its rounding as the conversion's)
        total = _add_where(acc, c[0], sd)  # (an .f32 D's: summed in place)
        if v.dtype == "f16" and bound <= _F16_SPAN:
            # (the index in one pass: an integer sum of at most _F16_SPAN plus _F16_SPAN is exact in float32)
            at = np.add(total, _F16_SPAN, out=np.empty(total.shape, dtype=np.int32), casting="unsafe")
            np.take(_f16_of_integers(), at, out=out, mode="clip")
        elif v.dtype == "f16":
            out.view(np.float16)[...] = total
        return
    if dt.is_float:  # C added in float64, as spec_numerics adds it; then rounded to D's type as dt.encode does
        cv = c_values(dt, C)
        total = np.add(acc, cv, dtype=np.float64) if sd.all() else _add_where(acc.astype(np.float64), cv, sd)
        if v.dtype in _D_BITS:  # (the rounding is the assignment's, into D's own container width)
            out.view(np.float16 if v.dtype == "f16" else np.float32)[...] = total
        else:
            out[...] = dt.encode(total, exact=False)
        return
    c = c_values(dt, C)
    total = acc.astype(np.int64)
    _add_where(total, c if dt.bits <= 32 else decoded(dt, C).astype(np.int64), sd)
    if v.satfinite:
        np.clip(total, -(2**31), 2**31 - 1, out=total)
    if out.dtype == np.uint32:  # the low 32 bits (an unsafe cast keeps them)
        np.copyto(out, total, casting="unsafe")
    else:
        out[...] = total & 0xFFFFFFFF


_F16_SPAN = 2**16  # .f16 bits looked up for the integers -2**16 .. 2**16


@cache
def _f16_of_integers() -> np.ndarray:
    """``uint16[2 * _F16_SPAN + 1]``: the .f16 bits of each integer from -_F16_SPAN, as the conversion rounds it."""
    with np.errstate(over="ignore"):  # (past 65519: Inf, the conversion's answer)
        return np.arange(-_F16_SPAN, _F16_SPAN + 1, dtype=np.float64).astype(np.float16).view(np.uint16)


def _add_where(total: np.ndarray, c: np.ndarray, sd: np.ndarray) -> np.ndarray:
    """``total[case] += c[case]`` where scale-d is 1 (0: C not added, what adding -0 gives): case by case, or all at
    once (a masked ufunc takes several times as long)."""
    if sd.all():
        np.add(total, c, out=total)
        return total
    for i in np.flatnonzero(sd):
        np.add(total[i], c[i], out=total[i])
    return total


def _int_bound(x: np.ndarray) -> float:
    """The largest magnitude in ``x`` where every element is an integer of at most 24 bits, else inf."""
    if not x.size:
        return 0.0
    m = float(max(-x.min(), x.max()))
    return m if m < 2**24 and (np.rint(x) == x).all() else float("inf")


def values_bound(t, bits) -> tuple[np.ndarray, float] | None:
    """:func:`_values_bound`, kept for an array that owns its bits and is read-only (a form's tagged matrices,
    built once): looked up from then on."""
    bits = np.asarray(bits)
    if bits.base is not None or bits.flags.writeable:
        return _values_bound(t, bits)
    key = (t.name, id(bits))
    hit = _KEPT.get(key)
    if hit is None or hit[0] is not bits:
        if len(_KEPT) > 64:
            _KEPT.clear()
        hit = _KEPT[key] = (bits, _values_bound(t, bits))  # the array kept alive, so its id stays its own
    return hit[1]


_KEPT: dict[tuple, tuple] = {}


def _values_bound(t, bits) -> tuple[np.ndarray, float] | None:
    """(the values of container bits as float32, what ``t.decode`` gives, each exact in float32; the largest
    magnitude among them where every one is an integer below 2**24, else inf), or None for a type not listed
    here: for a type of at most 16 bits both looked up per pattern (no pass over the values to check them), for
    .f32 and .tf32 a view of the container (the low bits .tf32 ignores cleared)."""
    if t.bits <= 16:
        tables = _DECODED.get((t.name, "f4"))
        if tables is None:
            with np.errstate(invalid="ignore"):  # (NaN patterns stay NaN)
                vals = _looked_up(t, np.arange(1 << t.bits), True)
                ok = np.isfinite(vals) & (np.rint(vals) == vals) & (np.abs(vals) < 2**24)
                tables = _DECODED[(t.name, "f4")] = (vals.astype(np.float32),
                                                     np.where(ok, np.abs(vals), np.inf).astype(np.float32))
        idx = np.asarray(bits, dtype=np.uint8 if t.bits <= 8 else np.uint16)  # (bits this narrow already: no copy)
        if t.bits not in (8, 16):
            idx = idx & t.mask
        # (a clipped take: several times faster than an index array of narrow integers)
        return np.take(tables[0], idx, mode="clip"), float(np.take(tables[1], idx, mode="clip").max()) if idx.size else 0.0
    if t.name in ("f32", "tf32"):
        keep = np.uint32(t.mask ^ ((1 << t.ignored_low_bits) - 1))
        x = (_low32(bits) & keep).view(np.float32)
        return x, _int_bound(x)
    return None


def passed(v: WgmmaVariant, rec) -> Verdict:
    """The comparator's verdict of a check whose D words are the spec's (the sparse family's too)."""
    return Verdict(v.id, rec.check, rec.seed, "pass", elements=len(rec.in_words) * LANES * d_words(v))


# --- a case's words: kernels per immediate set, descriptors, matrices in the image --------------------


def immediate_sets(v: WgmmaVariant) -> list[dict]:
    """The immediate combinations a plan runs (each its own kernel)."""
    out = []
    ta = [0, 1] if "trans_a" in v.immediates else [0]
    tb = [0, 1] if "trans_b" in v.immediates else [0]
    for i, (x, y) in enumerate([(a, b) for a in ta for b in tb]):
        imm = {}
        if "trans_a" in v.immediates:
            imm["trans_a"] = x
        if "trans_b" in v.immediates:
            imm["trans_b"] = y
        if "scale_a" in v.immediates:
            imm["scale_a"] = -1 if i % 2 else 1
            imm["scale_b"] = -1 if i % 4 == 2 or (len(ta) * len(tb) == 1) else 1
        out.append(imm)
    if "scale_a" in v.immediates and len(out) == 1:
        out.append({**out[0], "scale_a": -1, "scale_b": 1})
    return out

def _words(model: Model, d: Desc) -> tuple[int, int]:
    """The descriptor's two words (low, high), encoded once per process."""
    key = (id(model.desc), id(model.smem), d.start, d.lbo, d.sbo, d.swizzle, d.base_offset)
    hit = _ENCODED.get(key)
    if hit is None or hit[0] is not model.desc or hit[1] is not model.smem:
        x = encode(model.desc, model.smem, d.start, d.lbo, d.sbo, model.smem.name_of(d.swizzle), d.base_offset)
        if len(_ENCODED) > 65536:
            _ENCODED.clear()
        hit = _ENCODED[key] = (model.desc, model.smem, (x & 0xFFFFFFFF, x >> 32))
    return hit[2]


_ENCODED: dict[tuple, tuple] = {}

def fill(v: WgmmaVariant, img: np.ndarray, desc: Desc, operand: str, trans: int, mat: np.ndarray, smem: SmemSpec) -> None:
    """Write matrix bits ``mat`` (A: 64 x K, B: K x N) into one case's image where the spec reads them."""
    fill_cases(v, img[None], [desc], operand, trans, np.asarray(mat)[None], smem)


def fill_cases(v: WgmmaVariant, img: np.ndarray, descs: Sequence[Desc], operand: str, trans: int | Sequence[int],
               mats: np.ndarray, smem: SmemSpec) -> None:
    """:func:`fill` of every case at once: ``mats[case]`` into ``img[case]`` (contiguous) through ``descs[case]``,
    read with imm-trans ``trans`` (one for every case, or one per case); each case's addresses from the
    per-layout cache, every byte in one scatter."""
    cases = len(descs)
    if not cases:
        return
    ext = 64 if operand == "A" else v.N
    majors = [smem.major_of(t) for t in trans] if isinstance(trans, Sequence) else [smem.major_of(trans)] * cases
    size = img.shape[1]
    fill_placed(v, img, [_placed(smem, major, d, ext, v.K, v.bits, operand, size) for major, d in zip(majors, descs)],
                operand, mats)


def fill_placed(v: WgmmaVariant, img: np.ndarray, placed: Sequence[tuple], operand: str, mats: np.ndarray,
                image_word: int | None = None) -> None:
    """:func:`fill_cases` through each case's :func:`_placed` layout.  With ``image_word``, ``img`` is the cases'
    words ``[case, lane, word]`` (contiguous), the image in them lane by lane from that word (the buffer contract):
    each unit goes straight to its place there, no image of its own copied in after."""
    bits, cases = v.bits, len(placed)
    ext = 64 if operand == "A" else v.N
    whole = all(p[1] is not None for p in placed) and (bits >= 8 or bits == 1)
    if image_word is not None:
        if not whole:  # (a layout reaching outside the image, or elements sharing a unit: through an image)
            image = np.ascontiguousarray(img[:, :, image_word:], dtype="<u4").reshape(cases, -1).view(np.uint8)
            fill_placed(v, image, placed, operand, mats)
            img[:, :, image_word:] = image.view("<u4").reshape(cases, img.shape[1], -1)
            return
        room = img.shape[1] * img.shape[2] * 4  # a case's words, in bytes
    size = img.shape[1] if image_word is None else room
    flat = img.reshape(-1) if image_word is None else img.reshape(-1).view(np.uint8)
    per = img.reshape(cases, -1) if image_word is None else img.reshape(cases, -1).view(np.uint8)

    def units(u: np.ndarray, nb: int) -> np.ndarray:
        return u if image_word is None else _in_words(u, nb, img.shape[2], image_word)

    if bits >= 8:  # each element's bytes, low first
        nb = bits // 8
        if whole:  # whole aligned elements, each case inside its own image
            # the element order of ``mats`` itself (B's k, n): the cached indices are in that order; case by case
            # (no index array of every case: it costs more than the calls)
            vals = np.asarray(mats, dtype=f"<u{nb}").reshape(cases, -1)
            for c, p in enumerate(placed):
                per[c].view(f"<u{nb}")[units(p[1], nb)] = vals[c]
            return
        addr = np.stack([p[0] for p in placed])
        vals = np.asarray(mats if operand == "A" else np.swapaxes(mats, 1, 2), dtype=np.uint64).reshape(cases, -1)
        at = addr + (np.arange(cases) * size)[:, None]
        if nb in (1, 2, 4, 8) and size % nb == 0 and not (addr % nb).any():  # aligned elements: written whole
            flat.view(f"<u{nb}")[(at // nb).ravel()] = vals.astype(f"<u{nb}").ravel()
        else:
            at = at[..., None] + np.arange(nb)
            flat[at.ravel()] = np.ascontiguousarray(vals, dtype="<u8").view(np.uint8).reshape(cases, -1, 8)[..., :nb].ravel()
        return
    if whole:  # whole bytes of 8 elements along K, each case inside its own image
        m = np.asarray(mats if operand == "A" else np.swapaxes(mats, 1, 2), dtype=np.uint8)  # (mn, k) order
        byte = np.packbits(m.reshape(cases, ext, -1, 8) & 1, axis=-1, bitorder="little").reshape(cases, -1)
        for c, p in enumerate(placed):
            per[c][units(p[1], 1)] = byte[c]
        return
    addr = np.stack([p[0] for p in placed])
    vals = np.asarray(mats if operand == "A" else np.swapaxes(mats, 1, 2), dtype=np.uint64).reshape(cases, -1)
    kb = np.tile((np.arange(v.K) * bits % 8).astype(np.uint8), ext)
    for c in range(cases):  # bits of one byte from several elements: case by case, in order
        a = addr[c] + c * size
        flat[a] = 0
        np.bitwise_or.at(flat, a, ((vals[c] & np.uint64(1)).astype(np.uint8) << kb).astype(np.uint8))


def _in_words(units: np.ndarray, nb: int, words: int, image_word: int) -> np.ndarray:
    """Image units of ``nb`` bytes -> the same units in a case's words (``words`` a lane, the image lane by lane
    from ``image_word``), once per process and cached placement: looked up in :func:`_unit_words`."""
    key = (id(units), nb, words, image_word)
    hit = _IN_WORDS.get(key)
    if hit is None or hit[0] is not units:
        if len(_IN_WORDS) > 1024:
            _IN_WORDS.clear()
        hit = _IN_WORDS[key] = (units, _unit_words(nb, words, image_word).take(units).astype(np.intp))  # units kept alive
    return hit[1]


@lru_cache(maxsize=256)
def _unit_words(nb: int, words: int, image_word: int) -> np.ndarray:
    """Where each ``nb``-byte unit of an image held lane by lane (``words`` a lane, the image from ``image_word``)
    is in a case's words, in units (int32: a case's words are far fewer than 2**31): one table per buffer shape
    (the forms of a process have a few hundred), every placement's units looked up in it."""
    row = (words - image_word) * 4  # the image's bytes in one lane
    if row % nb:  # (units across lanes: each unit's byte split into its lane and its place there)
        b = np.arange(LANES * row // nb, dtype=np.int64) * nb
        got = (((b // row * words + image_word) * 4 + b % row) // nb).astype(np.int32)
    else:  # whole units in every lane: a lane's start plus the unit's place in it, as a [lane, unit] sum
        lane = (np.arange(LANES, dtype=np.int64)[:, None] * words + image_word) * 4
        got = ((lane + np.arange(0, row, nb, dtype=np.int64)[None, :]) // nb).astype(np.int32).ravel()
    got.setflags(write=False)
    return got


_IN_WORDS: dict[tuple, tuple] = {}


def _placed(smem: SmemSpec, major: str, d: Desc, ext: int, kext: int, bits: int, operand: str, size: int):
    """(byte address of each element ``int64[ext * kext]`` (mn, k order), and where the layout allows a plain
    scatter, the element indices in units of the element, in the order of the operand's own matrix (A: m, k;
    B: k, n), or for 1-bit elements the bytes of 8 elements along K, in (mn, k) order; else None), once per
    process and distinct layout, whatever the image's ``size`` (forms of every N place A alike).
    The scatter needs every address inside the image and no two elements on one unit."""
    _, addr, units, low, high = placement(smem, major, d, ext, kext, bits, operand)
    return addr, units if low >= 0 and high < size and (bits < 8 or size % (bits // 8) == 0) else None


def placement(smem: SmemSpec, major: str, d: Desc, ext: int, kext: int, bits: int, operand: str) -> tuple:
    """What :func:`_placed` reads, whatever the image's size: (the layout spec, byte address of each element,
    the scatter's units were every address inside the image (or None), the lowest and highest address)."""
    sw = smem.name_of(d.swizzle)
    uses = smem.strides_read(major, sw)  # (a stride the formula never reads: any value places alike)
    key = (id(smem), major, d.start, d.lbo if "LBO" in uses else None, d.sbo if "SBO" in uses else None,
           d.base_offset, d.swizzle, ext, kext, bits, operand)
    hit = _PLACED.get(key)
    if hit is None or hit[0] is not smem:
        off, low, high, distinct = _tile(smem, major, sw, ext, kext, bits, d.lbo, d.sbo, False)
        addr, one_to_one = _swizzled(smem, sw, d.start, off, low, high, d.base_offset)
        if not addr.size:
            low, high = 0, -1
        elif sw == "none":
            low, high = d.start + low, d.start + high
        else:
            low, high = int(addr.min()), int(addr.max())
        units = None
        if bits >= 8:
            nb = bits // 8
            if nb == 1:
                units = addr if operand == "A" else addr.T
            elif nb in (2, 4, 8) and not (addr & (nb - 1)).any():  # (aligned: the low bits clear)
                u = addr >> (nb.bit_length() - 1)  # (// nb)
                units = u if operand == "A" else u.T
        elif bits == 1 and kext % 8 == 0:
            groups = addr.reshape(ext, kext // 8, 8)
            if (groups == groups[..., :1]).all():  # 8 elements along K share each byte, low bit first
                units = groups[..., 0]
        if units is not None:
            units = np.ascontiguousarray(units).ravel()
            # distinct offsets through a one-to-one swizzle place every element of at least a byte on a unit of
            # its own; else they are counted
            known = bits >= 8 and distinct and one_to_one
            if units.size and low >= 0 and not known and np.bincount(units).max() > 1:
                units = None
        if len(_PLACED) > 8192:
            _PLACED.clear()
        hit = _PLACED[key] = (smem, addr.ravel(), units, low, high)  # the layout spec kept alive: its id its own
    return hit


_PLACED: dict[tuple, tuple] = {}


# --- kernels ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class WgProbe(KeyedProbe):
    variant: WgmmaVariant
    imm: tuple[tuple[str, int], ...]
    reuse: bool = False  # overwrite A's registers right after issuing, before wait_group

    def key(self) -> str:
        return f"{self.variant.id}|{self.imm}|{self.reuse}"

    @property
    def params(self) -> dict:
        return {"imm": dict(self.imm)}

    def instruction_text(self, d: str, a: str, b: str, p: str) -> str:
        return instruction_with_immediates(self.variant, dict(self.imm), [d, a, b, p])

    def source(self) -> str:
        return kernel_source(self)


def instruction_with_immediates(v: WgmmaVariant, imm: dict, ops: list[str]) -> str:
    """The instruction with its register operands ``ops`` and then the immediates the form takes (imm-scale-a/b,
    imm-trans-a/b; the sparse form's too)."""
    ops = list(ops)
    if "scale_a" in v.immediates:
        ops += [str(imm.get("scale_a", 1)), str(imm.get("scale_b", 1))]
    if "trans_a" in v.immediates:
        ops.append(str(imm.get("trans_a", 0)))
    if "trans_b" in v.immediates:
        ops.append(str(imm.get("trans_b", 0)))
    return f"{v.ptx} {', '.join(ops)};"


def dreg_type(v: WgmmaVariant) -> str:
    return {"f32": "f32", "s32": "s32", "f16": "b32"}[v.dtype]


def stage_case(iw: int, ow: int, imw: int, image_word: int) -> list[str]:
    """PTX shared by the dense and sparse wgmma kernels: find this warpgroup's case, copy its image into
    shared memory, and build the A/B descriptors (template + image address >> 4) and the scale-d predicate.

    Leaves the case's input row in %q2, its output row in %q4, the descriptors in %q6/%q7, scale-d in %p1
    (``imw``, the image's words per lane, is a multiple of 4)."""
    L = [
        *case_prologue(LANES),  # one warpgroup per case
        f"    mul.wide.u32 %q3, %t6, {iw * 4};",
        "    add.s64 %q2, %q2, %q3;",
        "    ld.param.u64 %q4, [p_out];",
        "    cvta.to.global.u64 %q4, %q4;",
        f"    mul.wide.u32 %q5, %t6, {ow * 4};",
        "    add.s64 %q4, %q4, %q5;",
        # this lane's slice of the image -> shared memory, 16 bytes a turn, in a loop ptxas is told not to unroll
        # (instructions ptxas ran on a sample of 39 wgmma kernels: imw / 4 copies written out, 3.90e9; this loop
        # left to ptxas to unroll, 4.15e9; not unrolled, 3.51e9; no copy at all, 3.33e9)
        "    mov.u32 %t9, img;",
        f"    mad.lo.u32 %t10, %t1, {imw * 4}, %t9;",
        f"    add.u32 %t15, %t10, {imw * 4};",
        f"    add.s64 %q8, %q2, {image_word * 4};",
        "$L_image:",
        '    .pragma "nounroll";',
        "    ld.global.v4.b32 {%t11, %t12, %t13, %t14}, [%q8];",
        "    st.shared.v4.b32 [%t10], {%t11, %t12, %t13, %t14};",
        "    add.s64 %q8, %q8, 16;",
        "    add.u32 %t10, %t10, 16;",
        "    setp.lt.u32 %p1, %t10, %t15;",
        "    @%p1 bra $L_image;",
    ]
    return L + [
        "    fence.proxy.async.shared::cta;",
        "    bar.sync 0;",
        # descriptors: template + (shared address of the image >> 4) in the start-address field
        "    shr.u32 %t15, %t9, 4;",
        "    and.b32 %t15, %t15, 16383;",
        "    ld.global.v2.b32 {%t11, %t12}, [%q2];",
        "    add.u32 %t11, %t11, %t15;",
        "    mov.b64 %q6, {%t11, %t12};",
        "    ld.global.v2.b32 {%t11, %t12}, [%q2+8];",
        "    add.u32 %t11, %t11, %t15;",
        "    mov.b64 %q7, {%t11, %t12};",
        "    ld.global.u32 %t13, [%q2+16];",
        "    setp.ne.u32 %p1, %t13, 0;",
    ]


def kernel_source(p: WgProbe) -> str:
    v = p.variant
    na = v.operands["A"].words if "A" in v.operands else 0
    # The ISA: A's registers must not be modified before wgmma.wait_group says the wgmma is done.  A reuse probe
    # overwrites them right after the issue: what a compiler reusing them early produces.
    after = [f"    mov.b32 %a{i}, 0;" for i in range(na)] if p.reuse and na else []
    return kernel_text(p, in_words(v), image_bytes(v), lambda d, a: p.instruction_text(d, a, "%q7", "%p1"), after=after)


def kernel_text(p, iw: int, img_bytes: int, instruction: Callable[[str, str], str], extra_regs: Sequence[str] = (),
                extra_loads: Sequence[str] = (), after: Sequence[str] = ()) -> str:
    """One case's kernel (the sparse family's too): stage the case, load C and A from registers, issue
    ``instruction(D registers, A operand)`` (``after`` it, anything before the wait), wait, store D.  A sparse
    form declares and loads its metadata register through ``extra_regs`` and ``extra_loads``.  Words move in
    vectors, so the ``in`` and ``out`` buffers start 16-byte aligned (as every device allocation does)."""
    v = p.variant
    ow, nd = out_words(v), d_words(v)
    na = v.operands["A"].words if "A" in v.operands else 0
    dt = dreg_type(v)
    L = [
        f".visible .entry {p.name}(",
        "    .param .u64 p_in, .param .u64 p_out, .param .u64 p_order, .param .u32 p_ncases",
        ")",
        "{",
        f"    .reg .{dt} %d<{nd}>;",
        f"    .reg .b32 %a<{max(na, 1)}>;",
        *extra_regs,
        "    .reg .b32 %t<16>;",
        "    .reg .b64 %q<12>;",
        "    .reg .pred %p<2>;",
        f"    .shared .align 1024 .b8 img[{img_bytes}];",
        *stage_case(iw, ow, img_bytes // (4 * LANES), img_off(v)),
        *extra_loads,
    ]
    # C and A loaded in pairs, D stored in fours (where aligned): what ptxas assembled fastest (instructions it ran
    # on a sample of 39 wgmma kernels, D stored in fours: C loaded a word at a time 3.98e9, in fours 3.51e9, in
    # pairs 3.26e9; C in pairs and D stored in pairs: 3.64e9; 37 wgmma.sp kernels, C and A in fours 2.85e9, in
    # pairs 2.65e9)
    dregs = [f"%d{i}" for i in range(nd)]
    L += global_moves("ld", dt, dregs, "%q2", c_off(v), iw, widest=2)
    L += global_moves("ld", "b32", [f"%a{i}" for i in range(na)], "%q2", a_off(v), iw, widest=2)
    a = "{" + ", ".join(f"%a{i}" for i in range(na)) + "}" if na else "%q6"
    L += ["    wgmma.fence.sync.aligned;", "    " + instruction("{" + ", ".join(dregs) + "}", a), *after]
    L.append("    wgmma.commit_group.sync.aligned;")
    L.append("    wgmma.wait_group.sync.aligned 0;")
    L += global_moves("st", dt, dregs, "%q4", 0, ow)
    L += ["$L_done:", "    ret;", "}"]
    return "\n".join(L)


def module_source(probes: list[WgProbe], version: PtxVersion, target: Target) -> str:
    return probe_module_source(probes, version, target, kernel_source)
