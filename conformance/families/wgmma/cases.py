"""wgmma.mma_async cases: seeded matrices, descriptors and layouts, one warpgroup per case.

Case sets per (check, immediate set): ``value`` (A, B, C random on grids where D is exact; every swizzle mode for A
and for B, each swizzled mode also off its repeat boundary; scale-d cycling) and ``map.A`` / ``map.B`` (the tagged
operand's elements name themselves in digits, the other operand a shifted identity).  How the words sit in a case's
buffer is :mod:`.probe`'s contract.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache, lru_cache

import numpy as np
from ptxconf.core.plan import CaseSet, variant_rng
from ptxconf.isa.packing import pack
from ptxconf.isa.ptxtypes import TYPES

from .desc import Desc, with_leading_byte_offset
from .probe import (
    A_REGION,
    LANES,
    Model,
    _words,
    a_off,
    b_base,
    base_offset_of,
    c_off,
    fill_placed,
    image_bytes,
    img_off,
    immediate_sets,
    in_words,
    model_of,
    placement,
    predict,
    tile_addresses,
    values_bound,
)
from .spec import WgmmaVariant, canonical_strides

CASE_STREAM = 0x36A  # variant_rng purpose of the case draws
DIGIT_BITS = {"f16": 8, "bf16": 8, "tf32": 8, "e4m3": 4, "e5m2": 3, "s8": 7, "u8": 8, "b1": 1}


def imm_tag(imm: dict) -> str:
    short = {"scale_a": "sa", "scale_b": "sb", "trans_a": "ta", "trans_b": "tb"}
    return ",".join(f"{short[k]}{'+' if k.startswith('scale') and val > 0 else ''}{val}" for k, val in sorted(imm.items()))


def layout_choice(v: WgmmaVariant, rng, operand: str, trans: int, sw: str, model: Model, region: int,
                   off_boundary: bool = False) -> tuple[Desc, int]:
    """(descriptor, where its swizzle pattern starts): ``region`` (a repeat boundary: the image is
    1024-byte aligned in shared memory) or, ``off_boundary``, a random 128-byte step past it, the
    base offset then set by the spec's rule."""
    ext = 64 if operand == "A" else v.N
    room = A_REGION if operand == "A" else image_bytes(v) - b_base(v)
    return descriptor_choice(rng, model, trans, sw, v.bits, ext, v.K, region, room, off_boundary)


def descriptor_choice(rng, model: Model, trans: int, sw: str, bits: int, ext: int, kext: int, region: int, room: int,
                      off_boundary: bool) -> tuple[Desc, int]:
    """(descriptor, pattern start) of an ``ext`` x ``kext`` matrix of ``bits``-bit elements placed at ``region``
    with ``room`` bytes: canonical strides, K chunks in either order (K-major none), any LBO and a K start inside
    the swizzle row (K-major swizzled), and ``off_boundary`` a pattern start a random 128-byte step past the
    repeat boundary.  The sparse family places its compressed A and its B with it too."""
    return descriptor_choices(rng, model, [(trans, sw, bits, ext, kext, region, room, off_boundary)])[0]


def descriptor_choices(rng, model: Model, asks: Sequence[tuple]) -> list[tuple[Desc, int]]:
    """:func:`descriptor_choice` of each ask ``(trans, sw, bits, ext, kext, region, room, off_boundary)`` in turn,
    the same numbers from the same stream, every bounded integer of every choice in one :func:`bounded_draws`."""
    return [_chosen(model, ask, got) for ask, got in _drawn(rng, model, asks)]


def _drawn(rng, model: Model, asks: Sequence[tuple]) -> list[tuple[tuple, tuple]]:
    """(ask, the integers its choice drew) of each ask in turn."""
    spans = [_ask(model, ask)[1] for ask in asks]
    drawn = bounded_draws(rng, [r for rs in spans for r in rs]).tolist()
    out, at = [], 0
    for ask, rs in zip(asks, spans):
        out.append((ask, tuple(drawn[at : at + len(rs)])))
        at += len(rs)
    return out


def _ask(model: Model, ask: tuple) -> tuple:
    """(:func:`_placement` of an ask, the spans of its draws: the pattern's step (where it has steps), K-major
    none's chunk order, then K-major swizzled's LBO and K start; where in them the draw of a stride the layout
    never reads is (K-major swizzled's LBO: any value), or None), once per process and ask."""
    key = (id(model.smem), ask)
    hit = _ASKS.get(key)
    if hit is None or hit[0] is not model.smem:
        trans, sw, bits, ext, kext, _, room, off_boundary = ask
        place = _placement(model, trans, sw, bits, ext, kext, room, off_boundary)
        major, _, _, steps, kstarts, _ = place
        spans = ([len(steps)] if steps else []) + ([2] if major == "K" and sw == "none" else [])
        spans += [63, kstarts] if kstarts else []
        free = len(spans) - 2 if kstarts and "LBO" not in model.smem.strides_read(major, sw) else None
        if len(_ASKS) > 65536:
            _ASKS.clear()
        hit = _ASKS[key] = (model.smem, (place, spans, free))
    return hit[1]


def _lbo_drawn(d: int) -> int:
    """K-major swizzled's LBO from its draw: any 16-byte multiple the field holds (unused by the layout)."""
    return 16 * (1 + d)


def _split(model: Model, ask: tuple, got: tuple) -> tuple[tuple, int | None]:
    """(the draws ``got`` with the draw of a stride the layout never reads as 0, that draw or None): what the
    layout depends on, and what only its descriptor's words and meta do."""
    free = _ask(model, ask)[2]
    return (got, None) if free is None else (got[:free] + (0,) + got[free + 1 :], got[free])


def _chosen(model: Model, ask: tuple, got: tuple) -> tuple[Desc, int]:
    """(descriptor, pattern start) of an ask whose choice drew ``got``: the layout once per process and what it
    reads, an unread stride's drawn value put in per call."""
    fixed, free = _split(model, ask, got)
    desc, pattern = _chosen_layout(model, ask, fixed)
    if free is not None:
        desc = Desc(desc.start, _lbo_drawn(free), desc.sbo, desc.base_offset, desc.swizzle)
    return desc, pattern


def _chosen_layout(model: Model, ask: tuple, got: tuple) -> tuple[Desc, int]:
    """:func:`_chosen` of draws whose unread stride's draw is 0 (:func:`_split`), once per process."""
    key = (id(model.smem), id(model.desc), ask, got)
    hit = _CHOSEN.get(key)
    if hit is not None and hit[0] is model.smem and hit[1] is model.desc:
        return hit[2]
    (major, lbo, sbo, steps, kstarts, code), _, _ = _ask(model, ask)
    sw, ext, region = ask[1], ask[3], ask[5]
    rest = list(got)
    pattern = region
    if steps:
        pattern += 128 * steps[rest.pop(0)]
    start = pattern
    if major == "K" and sw == "none" and rest.pop(0):
        # K chunks after all MN groups: LBO and SBO differ the other way round
        lbo, sbo = 16 * 8 * max(1, ext // 8), 128
    if kstarts:
        lbo = _lbo_drawn(rest.pop(0))
        start += 32 * rest.pop(0)  # K start inside the swizzle row
    desc = Desc(start, lbo, sbo, base_offset_of(model, sw, pattern), code)
    if len(_CHOSEN) > 65536:
        _CHOSEN.clear()
    _CHOSEN[key] = (model.smem, model.desc, (desc, pattern))  # the specs kept alive, so their ids stay their own
    return desc, pattern


_ASKS: dict[tuple, tuple] = {}
_CHOSEN: dict[tuple, tuple] = {}


def case_layouts(rng, model: Model, b_asks: Sequence[tuple], a_asks: Sequence[tuple], head: np.ndarray,
                 size: int) -> tuple[list[dict], list[tuple], list[tuple]]:
    """Each case's B descriptor, then its A descriptor where A has asks (A from shared memory), drawn as
    :func:`descriptor_choice` draws them case by case: their words into ``head[case, 0:4]`` (A's, then B's), and
    (each case's layouts ``{"B": [mode, start, LBO, SBO, pattern start, base offset]}`` and "A" alike, in
    image-relative bytes; B's and A's placements in an image of ``size`` bytes, for :func:`.probe.fill_placed`).
    The sparse family places its compressed A and its B with it too."""
    per = 2 if a_asks else 1
    seq = [("B", b) for b in b_asks] if not a_asks else [x for b, a in zip(b_asks, a_asks) for x in (("B", b), ("A", a))]
    laid = [_laid(model, op, ask, got) for (op, _), (ask, got) in zip(seq, _drawn(rng, model, [x[1] for x in seq]))]
    if b_asks:
        head[:, :4] = np.array([(laid[per * i + 1][0] if a_asks else (0, 0)) + laid[per * i][0]
                                for i in range(len(b_asks))], dtype=np.uint32)
    cfgs = [{"B": list(laid[per * i][1]), **({"A": list(laid[per * i + 1][1])} if a_asks else {})}
            for i in range(len(b_asks))]
    placed = [(p[1], p[2] if p[3] >= 0 and p[4] < size and (bits < 8 or size % (bits // 8) == 0) else None)
              for _, _, p, bits in laid]
    return cfgs, placed[0::per], placed[1::per] if a_asks else []


def _laid(model: Model, operand: str, ask: tuple, got: tuple) -> tuple:
    """(descriptor words (low, high), its layout for the meta, its :func:`.probe.placement`, element bits) of the
    choice of ``operand``'s ask that drew ``got``: once per process and what the layout reads (:func:`_split`), a
    stride it never reads put into the words and meta per call."""
    fixed, free = _split(model, ask, got)
    key = (id(model.smem), id(model.desc), operand, ask, fixed)
    hit = _LAID.get(key)
    if hit is None or hit[0] is not model.smem or hit[1] is not model.desc:
        desc, pattern = _chosen_layout(model, ask, fixed)
        trans, sw, bits, ext, kext = ask[:5]
        smem = model.smem
        lo, hi = _words(model, desc)
        laid = (lo | hi << 32, (sw, desc.start, desc.lbo, desc.sbo, pattern, desc.base_offset),
                placement(smem, smem.major_of(trans), desc, ext, kext, bits, operand), bits)
        if len(_LAID) > 4096:  # (entries hold placements' arrays: kept as few as _PLACED keeps)
            _LAID.clear()
        hit = _LAID[key] = (smem, model.desc, laid)  # the specs kept alive, so their ids stay their own
    x, meta, place, bits = hit[2]
    if free is not None:
        lbo = _lbo_drawn(free)
        x = with_leading_byte_offset(model.desc, model.smem, x, lbo)
        meta = (*meta[:2], lbo, *meta[3:])
    return (x & 0xFFFFFFFF, x >> 32), meta, place, bits


_LAID: dict[tuple, tuple] = {}


def bounded_draws(rng, spans) -> np.ndarray:
    """``int(rng.integers(0, span))`` of each span in turn (``int64[len(spans)]``), the same numbers from the same
    stream, in one call: NumPy draws a bounded integer below 2**32 from the generator's 32-bit outputs by
    Lemire's method (the output times the span, its high half; a span of one takes no output), so one draw of
    those outputs, scaled here, gives them all.  Where a scaled output falls in the rejected sliver (under one in
    2**25 for these spans) NumPy takes the next output instead: replayed here output by output."""
    spans = np.asarray(spans, dtype=np.uint64)
    out = np.zeros(len(spans), dtype=np.int64)
    live = spans > 1
    span = spans[live]
    if len(span):
        scaled = rng.integers(0, 2**32, size=len(span), dtype=np.uint64) * span
        low = scaled & np.uint64(0xFFFFFFFF)
        if (low < span).any() and (low < (np.uint64(2**32) - span) % span).any():
            out[live] = _lemire(rng, span.tolist(), (scaled // span).tolist())
        else:
            out[live] = scaled >> np.uint64(32)
    return out


def skip_draws(rng, span: int, count: int) -> None:
    """Move ``rng`` on as ``rng.integers(0, span, size=count, dtype=np.int32)`` does, without building the draws (a
    tagged check's C of zeros draws them only to keep the stream where it was).  Each bounded draw takes one
    32-bit output (Lemire's method, as :func:`bounded_draws` says) unless the output times the span falls in the
    rejected sliver; a PCG64 generator gives its 32-bit outputs as the halves of its 64-bit ones (low first, the
    high one kept for the next), so the raw outputs are taken at once and only checked for a rejection: where one
    is (about one draw in 2**28 for these spans), or the generator is another, the draws are made after all.  A
    span of a power of two rejects nothing: the generator is advanced past all but the last output."""
    if span <= 1 or count <= 0:  # (a span of one takes no output)
        return
    bits = rng.bit_generator
    state = bits.state
    if state["bit_generator"] != "PCG64" or span >= 2**32 or count < _SKIP_FROM:
        rng.integers(0, span, size=count, dtype=np.int32)
        return
    kept = [state["uinteger"]] if state["has_uint32"] else []
    need = count - len(kept)
    outputs = (need + 1) // 2
    threshold = (2**32 - span) % span
    if not threshold and outputs:  # a span of a power of two rejects no output: only the last one is read
        bits.advance(outputs - 1)
        outputs = 1
    raw = bits.random_raw(outputs)
    high = int(raw[-1] >> np.uint64(32)) if len(raw) else state["uinteger"]  # the last output's high half
    if threshold:
        low = raw.view("<u4")  # each output's low half, then its high one (little-endian: as the generator gives them)
        low *= np.uint32(span)  # the product's low half, in place (uint32 wraps)
        if (low[:need] < threshold).any() or any(k * span % 2**32 < threshold for k in kept):
            bits.state = state
            rng.integers(0, span, size=count, dtype=np.int32)
            return
    moved = bits.state
    moved["has_uint32"], moved["uinteger"] = need % 2, high  # kept for the next draw, or taken by this one
    bits.state = moved


_SKIP_FROM = 8192  # fewer draws than this are made: cheaper than the generator state's round trip


def _lemire(rng, spans: list[int], outputs: list[int]) -> list[int]:
    """NumPy's bounded draws of ``spans`` from the generator's 32-bit ``outputs`` (taken already), one by one, a
    rejected output followed by the next (and, past the given ones, more from the generator)."""
    got, it = [], iter(outputs)
    for r in spans:
        threshold = (2**32 - r) % r
        while True:
            x = next(it, None)
            m = (int(rng.integers(0, 2**32, dtype=np.uint64)) if x is None else x) * r
            if m & 0xFFFFFFFF >= threshold:
                break
        got.append(m >> 32)
    return got


def _placement(model: Model, trans: int, sw: str, bits: int, ext: int, kext: int, room: int, off_boundary: bool):
    """What :func:`descriptor_choice` draws from, worked out once per process and layout: (major-ness, canonical
    LBO, SBO, the 128-byte steps a pattern may start past the boundary (empty: on it), how many 32-byte K starts
    a K-major swizzled row offers (0: not K-major swizzled), the descriptor's swizzle code)."""
    smem = model.smem
    key = (id(smem), trans, sw, bits, ext, kext, room, off_boundary)
    hit = _PLACEMENTS.get(key)
    if hit is not None and hit[0] is smem:
        return hit[1]
    major = smem.major_of(trans)
    W = smem.width(sw)
    lbo, sbo = canonical_strides(major, sw, W, bits, ext, kext)
    kbytes = kext * bits // 8
    steps: list[int] = []
    if off_boundary and sw != "none":
        # 128-byte steps that keep the matrix inside its region (none for MN-major B at N = 8, 128B)
        end = tile_addresses(smem, major, sw, 0, ext, kext, bits, lbo, sbo, 0, extent=True)
        end += max(1, bits // 8) + (W - kbytes if major == "K" else 0)
        steps = [r for r in range(1, int(smem.swizzles[sw]["repeat"]) // 128) if 128 * r <= room - end]
    kstarts = max(1, (W - kbytes) // 32 + 1) if major == "K" and sw != "none" else 0
    got = (major, lbo, sbo, steps, kstarts, smem.code_of(sw))
    if len(_PLACEMENTS) > 4096:
        _PLACEMENTS.clear()
    _PLACEMENTS[key] = (smem, got)  # the layout spec is kept alive, so its id stays its own
    return got


_PLACEMENTS: dict[tuple, tuple] = {}


@cache
def _encoded(tname: str, lo: int, hi: int) -> np.ndarray:
    """The container bits of every integer value ``lo .. hi`` in ``tname`` (looked up by value - lo): what
    ``encode`` gives value by value, computed once per process instead of for every element drawn."""
    t = TYPES[tname]
    values = np.arange(lo, hi + 1)
    return t.encode(values.astype(np.float64) if t.is_float else values, exact=False)


@cache
def _narrow(tname: str, lo: int, hi: int) -> np.ndarray:
    """:func:`_encoded` in the narrowest unsigned type that holds the type's bits: what the images and fragments
    take, in a fraction of the memory."""
    return narrowed(tname, _encoded(tname, lo, hi))


def narrowed(tname: str, bits: np.ndarray) -> np.ndarray:
    """Container bits of ``tname`` in :func:`narrow_type`: what an image takes as it is, no conversion per case."""
    return bits.astype(narrow_type(tname))


def narrow_type(tname: str) -> type:
    """The narrowest unsigned type that holds ``tname``'s container bits (uint64 past 32 bits)."""
    width = TYPES[tname].bits
    return np.uint8 if width <= 8 else np.uint16 if width <= 16 else np.uint32 if width <= 32 else np.uint64


def _values(rng, tname: str, shape) -> np.ndarray:
    t = TYPES[tname]
    if t.kind == "float":  # -3..3: exact in every element type (no exactness check to pay)
        return _encoded(tname, -3, 3)[rng.integers(-3, 4, size=shape) + 3]
    if t.kind == "bits":
        return rng.integers(0, 2, size=shape).astype(np.uint64)
    lo, hi = t.int_range()
    return _encoded(tname, lo, hi)[rng.integers(lo, hi + 1, size=shape) - lo]


def _c_values(rng, v: WgmmaVariant, cases: int, zero: bool = False) -> np.ndarray:
    """C's container bits ``[case, 64, N]`` (uint32 for .f32 and .s32, uint16 for .f16); ``zero``: the same draws
    (the stream moves on as for any C), a C of zeros (a tagged check's).  (A bounded draw gives the same integers
    into int32 as into int64: half the memory.)"""
    return c_draws(rng, v, cases, zero)[0]


def c_draws(rng, v: WgmmaVariant, cases: int, zero: bool = False) -> tuple[np.ndarray, tuple | None]:
    """(:func:`_c_values`, and for a float D (C's float32 values, their bound) as :func:`~.probe.predict` takes
    them: looked up from the same draws, or for .f32 the bits themselves)."""
    dt = TYPES[v.dtype]
    shape = (cases, 64, v.N)
    if dt.is_float:  # -64..64: exact in .f16 and .f32
        # drawn as 0 .. 128, the same numbers from the same stream less -64 (a bounded draw scales one output by the
        # span and adds the low end), looked up by a clipped take (several times faster than negative indices)
        if zero:
            skip_draws(rng, 129, int(np.prod(shape)))
            bits = np.zeros(shape, dtype=np.uint32)
            return bits, (bits.view(np.float32), 0.0)
        d = rng.integers(0, 129, size=shape, dtype=np.int32)
        bits = np.take(_narrow(v.dtype, -64, 64), d, mode="clip")
        if bits.dtype == np.uint32 and v.dtype == "f32":
            return bits, (bits.view(np.float32), 64.0)
        return bits, (np.take(np.arange(-64, 65, dtype=np.float32), d, mode="clip"), 64.0)
    return _c_ints(rng, v, shape, zero), None


def _c_ints(rng, v: WgmmaVariant, shape: tuple, zero: bool) -> np.ndarray:
    """An integer D's C bits (:func:`_c_values`)."""
    dt = TYPES[v.dtype]
    # integers: 0 or, half the time, near either end of the range (+-(2**31 - 50)), then -40..40 added
    if zero:  # the draws below, skipped
        for span in (2, 2, 81):
            skip_draws(rng, span, int(np.prod(shape)))
        return np.zeros(shape, dtype=np.uint32)
    near = rng.integers(0, 2, size=shape, dtype=np.int32)
    end = rng.integers(0, 2, size=shape, dtype=np.int32)  # which end
    noise = rng.integers(0, 81, size=shape, dtype=np.int32)  # -40..40, less -40
    if dt.bits == 32:  # in range by construction: the container bits are the low 32 bits, summed as uint32
        near <<= 1
        near += end
        got = np.take(_NEAR_ENDS, near, mode="clip")
        got += noise.view(np.uint32)
        return got
    value = (end * (2**32 - 100) - (2**31 - 50)) * near.astype(np.int64) + noise - 40
    return dt.encode(value)


# C's low 32 bits less 40 by (near an end, which end): 0, or -(2**31 - 50) and 2**31 - 50
_NEAR_ENDS = (np.array([0, 0, -(2**31 - 50), 2**31 - 50], dtype=np.int64) - 40).astype(np.uint32)


def drawn_pairs(rng, atype: str, ashape: tuple, btype: str, bshape: tuple, n: int) -> tuple[tuple, tuple]:
    """((A's bits ``[n, *ashape]``, (their float32 values, bound)), B's alike): what ``n`` alternating :func:`_values`
    draws of A then B give, the same numbers from the same stream, with the values and bound
    :func:`~.probe.predict` takes looked up from the same draws (no pass over the bits to decode them).  A bounded
    draw takes its integers one by one from the generator, so where A and B draw from one range the ``n`` pairs
    are one draw of ``n`` rows; otherwise pair by pair."""
    ra, rb = _draw_range(atype), _draw_range(btype)
    if ra == rb:
        sa = int(np.prod(ashape))
        d = rng.integers(0, ra[1] - ra[0] + 1, size=(n, sa + int(np.prod(bshape))), dtype=np.int32)  # (less ra[0])
        return ((_from_draw(atype, d[:, :sa]).reshape(n, *ashape), _draw_values(atype, d[:, :sa], (n, *ashape))),
                (_from_draw(btype, d[:, sa:]).reshape(n, *bshape), _draw_values(btype, d[:, sa:], (n, *bshape))))
    A = np.empty((n, *ashape), dtype=np.uint64)
    B = np.empty((n, *bshape), dtype=np.uint64)
    for i in range(n):
        A[i] = _values(rng, atype, ashape)
        B[i] = _values(rng, btype, bshape)
    return (A, values_bound(TYPES[atype], A)), (B, values_bound(TYPES[btype], B))


def _draw_values(tname: str, d: np.ndarray, shape: tuple) -> tuple[np.ndarray, float]:
    """(float32 values, their bound) of drawn integers ``d`` (less the low end of the draw), as
    :func:`~.probe.values_bound` gives them of their bits."""
    table, bound = _value_table(tname)
    return np.take(table, d, mode="clip").reshape(shape), bound


@cache
def _value_table(tname: str) -> tuple[np.ndarray, float]:
    """:func:`~.probe.values_bound` of every drawn value's bits, by the drawn integer less the low end."""
    lo, hi = _draw_range(tname)
    bits = _from_draw(tname, np.arange(hi - lo + 1))
    return values_bound(TYPES[tname], bits)


def _draw_range(tname: str) -> tuple[int, int]:
    """The integers :func:`_values` draws for ``tname`` (inclusive)."""
    t = TYPES[tname]
    if t.kind == "float":
        return -3, 3
    return (0, 1) if t.kind == "bits" else t.int_range()


def _from_draw(tname: str, d: np.ndarray) -> np.ndarray:
    """Container bits of drawn integers ``d``, less the low end of :func:`_draw_range` (as :func:`_values` turns
    them into elements)."""
    if TYPES[tname].kind == "bits":
        return d.astype(np.uint8)
    return np.take(_narrow(tname, *_draw_range(tname)), d, mode="clip")


@cache
def _filler(size: int) -> np.ndarray:
    """The bytes no element occupies: a fixed, recognisable pattern (compresses in recorded runs)."""
    out = ((np.arange(size) * 0x9D + 0x5B) & 0xFF).astype(np.uint8)
    out.setflags(write=False)
    return out


def case_words(cases: int, iw: int, io: int, size: int, written: Sequence[tuple[int, int]]) -> np.ndarray:
    """``uint32[case, lane, iw]``: from word ``io`` the image of only the filler, every word before it zero but the
    spans ``written`` (word ranges, in order, that the caller fills for every case itself: no pass to zero them)."""
    words = np.empty((cases, LANES, iw), dtype=np.uint32)
    at = 0
    for lo, hi in (*written, (io, io)):
        if lo > at:
            words[:, :, at:lo] = 0
        at = max(at, hi)
    words[:, :, io:] = image_words(size)
    return words


def image_words(size: int) -> np.ndarray:
    """``uint32[lane, word]``: an image of only the filler as a case's words hold it, lane by lane (read-only)."""
    return _filler(size).view("<u4").reshape(LANES, -1)


def tagged_matrices(v: WgmmaVariant, target: str) -> tuple[np.ndarray, np.ndarray, dict]:
    """(A ``[case, 64, K]``, B ``[case, K, N]``, meta) of a map check on ``target``: the tagged operand's elements
    name themselves, one digit per case, the other a shifted identity.  Nothing drawn: built once per process and
    what it depends on (the forms of one A and B type and N share it)."""
    return _tagged(v.atype, v.btype, v.K, v.N, target)


@lru_cache(maxsize=16)
def _tagged(atype: str, btype: str, K: int, N: int, target: str) -> tuple[np.ndarray, np.ndarray, dict]:
    db = DIGIT_BITS[atype if target == "A" else btype]
    space = 64 * K if target == "A" else K * N
    digits = max(1, -(-int(np.ceil(np.log2(space))) // db))
    shifts = -(-K // N) if target == "A" else -(-K // 64)
    one = TYPES[atype].encode(np.array(1.0 if TYPES[atype].is_float else 1))
    As, Bs = [], []
    for dgt in range(digits):
        for s in range(shifts):
            if target == "A":
                tags = np.arange(64 * K, dtype=np.int64).reshape(64, K)
                A = _digit(atype, (tags >> (db * dgt)) & ((1 << db) - 1))
                B = np.zeros((K, N), dtype=np.uint64)
                n_ = np.arange(N)
                kk = n_ + s * N
                ok = kk < K
                B[kk[ok], n_[ok]] = one
            else:
                tags = np.arange(K * N, dtype=np.int64).reshape(K, N)
                B = _digit(btype, (tags >> (db * dgt)) & ((1 << db) - 1))
                A = np.zeros((64, K), dtype=np.uint64)
                m_ = np.arange(64)
                kk = m_ + s * 64
                ok = kk < K
                A[m_[ok], kk[ok]] = one
            As.append(A)
            Bs.append(B)
    got = (narrowed(atype, np.stack(As)), narrowed(btype, np.stack(Bs)), {"digits": digits, "digit_bits": db, "target": target})
    got[0].setflags(write=False)
    got[1].setflags(write=False)
    return got



def make_cases(v: WgmmaVariant, seed: int, checks: tuple[str, ...], value_cases: int = 4) -> list[CaseSet]:
    """Case sets per (check, immediate set); swizzle modes and scale-d cycle over the cases."""
    model = model_of(v)
    smem = model.smem
    rng = variant_rng(v, seed, CASE_STREAM)
    swz = list(smem.swizzles)
    sw_modes = [m for m in swz if m != "none"]
    out = []
    sets = immediate_sets(v)
    size, iw, io, shared_a = image_bytes(v), in_words(v), img_off(v), v.a_src == "shared"
    dwords = v.operands["D"].words
    parts: list[tuple] = []  # per case set: (A, B, C, scale-d, immediates) as placed, for the prediction
    b_at, b_room = b_base(v), image_bytes(v) - b_base(v)  # B's region (layout_choice's)
    for si, imm in enumerate(sets):
        tag = imm_tag(imm)
        wanted = [c for c in ("value", "map.A", "map.B") if c in checks]
        if 0 < si < len(sets) - 1:  # tagged checks on the first and last immediate sets (K- and MN-major)
            wanted = [c for c in wanted if c == "value"]
        if v.atype == "b1":
            wanted = [c for c in wanted if c == "value"] or (["value"] if any(c.startswith("map") for c in checks) else [])
        map_sw = swz[(si * (len(swz) - 1)) % len(swz)]  # the tagged sets' mode: none first, then swizzled
        # each tagged set again with the swizzle pattern off its repeat boundary (the base offset set):
        # the swizzled one's mode, or 128B where a form's only tagged set is unswizzled
        jobs = [(c, False) for c in wanted] + [(c, True) for c in wanted if c.startswith("map") and (map_sw != "none" or len(sets) == 1)
                                               and not (c == "map.A" and v.a_src == "registers")]
        ta, tb = imm.get("trans_a", 0), imm.get("trans_b", 0)
        for check, off_set in jobs:
            n_on = max(value_cases, len(swz))
            if check == "value":
                # every mode for A and for B on the repeat boundary, then each swizzled mode off it
                (A, a_vals), (B, b_vals) = drawn_pairs(rng, v.atype, (64, v.K), v.btype, (v.K, v.N), n_on + len(swz) - 1)
                meta: dict = {}
            else:
                A, B, meta = tagged_matrices(v, check.split(".")[1])
                a_vals, b_vals = values_bound(TYPES[v.atype], A), values_bound(TYPES[v.btype], B)
            n = len(A)
            # written below: the head, C's words where C is drawn, A's registers
            words = case_words(n, iw, io, size, [(0, 5)] + ([(c_off(v), c_off(v) + dwords)] if check == "value" else [])
                               + ([] if shared_a else [(a_off(v), a_off(v) + v.operands["A"].words)]))
            C, c_vals = c_draws(rng, v, n, zero=check != "value")
            head = np.zeros((n, 5), dtype=np.uint32)  # descriptor words and scale-d, the same in every lane
            b_asks, a_asks = [], []
            for i in range(n):
                if check == "value" and i < n_on:  # every mode for A and for B, in different pairings
                    sw_a, sw_b = swz[i % len(swz)], swz[(i + 1 + i // len(swz)) % len(swz)]
                    off = False
                elif check == "value":  # each swizzled mode off its repeat boundary, for A and for B
                    j = i - n_on
                    sw_a, sw_b = sw_modes[j % len(sw_modes)], sw_modes[(j + 1) % len(sw_modes)]
                    off = True
                elif off_set:
                    sw_a = sw_b = map_sw if map_sw != "none" else "128B"
                    off = True
                else:  # one layout per tagged set (its digits spell tags back)
                    sw_a = sw_b = map_sw
                    off = False
                # a tagged set moves only the tagged operand: K-major A and B read with the same
                # permutation along K would give the same product
                b_asks.append((tb, sw_b, v.bits, v.N, v.K, b_at, b_room, off and (check == "value" or check.endswith("B"))))
                if shared_a:
                    a_asks.append((ta, sw_a, v.bits, 64, v.K, 0, A_REGION, off and (check == "value" or check.endswith("A"))))
            cfgs, b_placed, a_placed = case_layouts(rng, model, b_asks, a_asks, head, size)
            head[:, 4] = 1 if check != "value" else np.arange(n) % 3 != 2  # scale-d
            words[:, :, :5] = head[:, None, :]
            # every case's matrices into its image (B first, then A, as the layouts were drawn) or registers
            fill_placed(v, words, b_placed, "B", B, io)
            if shared_a:
                fill_placed(v, words, a_placed, "A", A, io)
            else:
                aop = v.operands["A"]
                words[:, :, a_off(v) : a_off(v) + aop.words] = pack(aop, A[:, None])
            dop = v.operands["D"]
            if check == "value":  # (a C of zeros is words of zeros)
                words[:, :, c_off(v) : c_off(v) + dop.words] = pack(dop, C[:, None])
            name = f"{check}[{tag}]" if tag else check
            if off_set:
                name = f"{check}[{tag},bo]" if tag else f"{check}[bo]"
            out.append(CaseSet(name, words, {"imm": imm}, {**meta, "layouts": cfgs}))
            parts.append((A if a_vals is None else (*a_vals, A), B if b_vals is None else (*b_vals, B),
                          C if c_vals is None else (*c_vals, C), head[:, 4] != 0, imm))
    # every descriptor drawn here carries the base offset the spec's rule gives its pattern start
    # (descriptor_choice): every case set is predicted
    for cs, exp in zip(out, predict(v, parts)):
        cs.expected = exp
    return out


def _digit(tname: str, d: np.ndarray) -> np.ndarray:
    return _exact_digits(tname)[d]


@cache
def _exact_digits(tname: str) -> np.ndarray:
    """Container bits of every digit a tag can have (0 .. 255, as far as ``tname`` holds them exactly; a digit past
    that is refused, an IndexError): ``encode``'s, computed once per process instead of for every element."""
    t = TYPES[tname]
    values = np.arange(256 if t.is_float else min(256, t.int_range()[1] + 1))
    bits = t.encode(values.astype(np.float64) if t.is_float else values, exact=False)
    exact = t.decode(bits) == values
    return bits[: len(values) if exact.all() else int(np.argmax(~exact))]
