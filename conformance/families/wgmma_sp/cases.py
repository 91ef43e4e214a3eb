"""Cases for wgmma.mma_async.sp: random and tagged inputs, one warpgroup per case.

Checks (each a case set per immediate set and sparsity selector):

* ``value``: A (sparse: a random legal index pair per chunk of every row), B, C random on grids
  where D is exact; swizzle modes, descriptor strides, start offsets (off the repeat boundary
  too, with the base offset) and scale-d vary per case; the selectors cycle over the sets.
* ``map.A``: the stored A elements carry tags (their compressed index + 1, in digits), B is a
  0/1 selection, so D spells back the dense A: which stored element went to which dense column.
* ``map.B``: B carries tags, A is one 1 per row (its chunk's metadata chosen to hold it).
* ``map.metadata`` (every selector): slot s of every chunk stores s + 1 and the patterns vary
  over the cases; D spells each chunk's pattern back, so the comparator reads which lane and
  bits the hardware took each chunk's indices from.  Lanes outside the selector's carry other
  legal metadata throughout.
* ``undefined.metadata`` / ``undefined.selector`` (only when asked for: ``--undefined``): inputs
  the ISA leaves undefined (:mod:`ptxconf.families.mma.undefined`): tagged A under equal index
  pairs (.tf32: any pair but 0b0100 / 0b1110), or an out-of-range selector.
"""

from __future__ import annotations

from functools import cache, lru_cache

import numpy as np
from ptxconf.core.plan import CaseSet, variant_rng
from ptxconf.families.mma import undefined as ud
from ptxconf.families.wgmma import cases as wgc
from ptxconf.families.wgmma import probe as wg
from ptxconf.families.wgmma.desc import Desc
from ptxconf.isa.packing import pack
from ptxconf.isa.ptxtypes import TYPES

from . import probe as sp
from .spec import WgmmaSpVariant, k_major_fits

CASE_STREAM = 0x5A5  # variant_rng purpose of the case draws

META_REPS = 6  # patterns per chunk in map.metadata: enough to tell the 2048 (lane, field) slots apart
SELECTOR_CASES = 4  # value cases of an out-of-range selector


def immediate_sets(v: WgmmaSpVariant) -> list[dict]:
    """(immediates + selector) of each kernel: the dense family's immediate sets, selectors cycled
    over them (and an extra set where a selector is left over)."""
    sets = wg.immediate_sets(v)
    out = [{**imm, "sel": v.selectors[i % len(v.selectors)]} for i, imm in enumerate(sets)]
    for s in v.selectors[len(sets) :]:
        out.append({**sets[0], "sel": s})
    return out


def imm_tag(imm: dict) -> str:
    rest = wgc.imm_tag({k: val for k, val in imm.items() if k != "sel"})
    return ",".join(x for x in (rest, f"sel{imm.get('sel', 0)}") if x)


def meta_words(v: WgmmaSpVariant, rng, fields: np.ndarray, selector: int) -> np.ndarray:
    """``uint32[case, 128]`` sp-meta words: the spec's lanes for ``selector`` hold ``fields``
    (``[case, 64, 2 * chunks]``); every other lane random legal metadata."""
    cases = len(fields)
    byte, npat = _meta_bytes(sp.sparsity(v))
    # a random legal pattern in each of a word's 8 nibbles (low first), two nibbles to a byte, 4 bytes to a word
    drawn = rng.integers(npat, size=(cases, sp.LANES, 8), dtype=np.int32)
    words = np.take(byte, drawn[..., 0::2] * npat + drawn[..., 1::2], mode="clip").view("<u4")[..., 0]
    spec_lanes, where, keep, shift = _meta_slots(v, selector)
    # the spec's lanes: each slot's field (0 where the lane holds none) at its bits, the disjoint slots summed
    got = (fields.reshape(cases, -1).take(where, axis=1) & keep) << shift
    words[:, spec_lanes] = got.sum(axis=-1, dtype=np.uint32)
    return words


@cache
def _meta_bytes(spx) -> tuple[np.ndarray, int]:
    """(the sp-meta byte of each pair of legal patterns ``uint8[first * P + second]`` (first in the low nibble),
    P), once per chunk geometry."""
    pats = np.array(spx.patterns, dtype=np.uint32)
    nib = pats[:, 0] | pats[:, 1] << 2
    return (nib[:, None] | nib[None, :] << 4).astype(np.uint8).ravel(), len(pats)


def _meta_slots(v: WgmmaSpVariant, selector: int) -> tuple:
    """Where the spec's metadata lanes for ``selector`` take each field, from the layout once per form and
    selector: (the lanes that hold any ``[L]``; per lane and slot of its register ``[L, slots]``: the flat (row,
    field col) each takes, 3 where it holds one and 0 where not, the slot's bit shift): once per process, layout
    and selector (the forms of a process share a few metadata layouts)."""
    lay = v.operands["metadata"].layout
    key = (id(lay), selector)
    hit = _META_SLOTS.get(key)
    if hit is not None and hit[0] is lay:
        return hit[1]
    m, held = lay.map({"selector": selector}), lay.held({"selector": selector})
    spec_lanes = np.flatnonzero(held.any(1))
    h = held[spec_lanes]
    where = np.where(h, m[spec_lanes, :, 1] * lay.cols + m[spec_lanes, :, 2], 0)
    keep = np.where(h, 3, 0).astype(np.int64)
    shift = (2 * np.arange(h.shape[1])).astype(np.int64)
    got = (spec_lanes, where, keep, shift)
    if len(_META_SLOTS) > 4096:
        _META_SLOTS.clear()
    _META_SLOTS[key] = (lay, got)  # the layout kept alive, so its id stays its own
    return got


_META_SLOTS: dict[tuple, tuple] = {}


def random_patterns(v: WgmmaSpVariant, rng, cases: int) -> np.ndarray:
    """``int64[case, 64, 2 * chunks]`` index fields, a random legal pattern per chunk."""
    pats = _patterns(sp.sparsity(v))
    drawn = rng.integers(len(pats), size=(cases, 64, v.chunks), dtype=np.int32)
    return np.take(pats, drawn, axis=0, mode="clip").reshape(cases, 64, 2 * v.chunks)


@cache
def _patterns(spx) -> np.ndarray:
    """The legal patterns ``int64[P, 2]`` of a chunk geometry."""
    return np.array(spx.patterns, dtype=np.int64)


def _values(rng, tname: str, shape) -> np.ndarray:
    return wgc._values(rng, tname, shape)


@cache
def _one(tname: str) -> np.uint64:
    t = TYPES[tname]
    return t.encode(np.array(1.0 if t.is_float else 1))


def _digit(tname: str, d: np.ndarray) -> np.ndarray:
    return wgc._digit(tname, d)


def layout_choice(v: WgmmaSpVariant, rng, operand: str, trans: int, sw: str, model: wg.Model, region: int,
                   room: int, off_boundary: bool) -> tuple[Desc, int]:
    """(descriptor, where its swizzle pattern starts) for the compressed A or B, as the dense
    family chooses them: canonical strides, K chunks in either order (K-major none), any LBO and a
    K start inside the swizzle row (K-major swizzled), a pattern start off the repeat boundary."""
    ext, kext = (64, v.a_view.K) if operand == "A" else (v.N, v.K)
    return wgc.descriptor_choice(rng, model, trans, sw, v.bits, ext, kext, region, room, off_boundary)


def _fits(v: WgmmaSpVariant, operand: str, trans: int, sw: str, model: wg.Model) -> bool:
    kbytes = (v.kc if operand == "A" else v.K) * v.bits // 8
    return model.smem.major_of(trans) != "K" or k_major_fits(v.doc, sw, kbytes)


def _tagged_plans(v: WgmmaSpVariant, rng, check: str, sel: int) -> tuple[tuple, dict, tuple]:
    """(compressed A, fields, B), each stacked over the cases, the meta of a tagged check, and (A's, B's) values
    and bound where they are built from a form's kept matrices (None where drawn).  Where a case draws its own
    patterns the draws are one call per check (the same range from the same stream)."""
    shifts_a = -(-v.K // v.N)
    at, bt = TYPES[v.atype], TYPES[v.btype]
    if check == "map.A":
        db = wgc.DIGIT_BITS[v.atype]
        comps, digits = _a_tags(v)
        fields = random_patterns(v, rng, digits)  # one pattern set per digit
        (comp, comp_vals), (B, b_vals) = _stacked(at, comps, shifts_a, True), _stacked(bt, _selections_b(v), digits)
        return ((comp, _repeat(fields, shifts_a), B), {"digits": digits, "digit_bits": db, "target": "A",
                                                       "shifts": shifts_a}, (comp_vals, b_vals))
    if check == "map.B":
        db = wgc.DIGIT_BITS[v.btype]
        tagged, digits = _b_tags(v)
        shifts = -(-v.K // 64)
        comp, fields = _selections_a(v, rng, list(range(shifts)) * digits)
        B, b_vals = _stacked(bt, tagged, shifts, True)
        return (comp, fields, B), {"digits": digits, "digit_bits": db, "target": "B", "shifts": shifts}, (None, b_vals)
    # map.metadata: slot s stores s + 1; every chunk's pattern changes from rep to rep
    slot = _slot_digits(v.atype, v.nz, v.kc)
    comp, comp_vals = _stacked(at, slot[None, None], (META_REPS * shifts_a, 64, 1))
    fields = random_patterns(v, rng, META_REPS)
    B, b_vals = _stacked(bt, _selections_b(v), META_REPS)
    return ((comp, _repeat(fields, shifts_a), B), {"target": "metadata", "reps": META_REPS, "shifts": shifts_a},
            (comp_vals, b_vals))


def _stacked(t, kept: np.ndarray, reps, each: bool = False) -> tuple[np.ndarray, tuple | None]:
    """A form's kept matrices stacked over the cases (``np.tile`` by ``reps``, or ``each`` one ``reps`` times over)
    and their values and bound (:func:`~ptxconf.families.wgmma.probe.values_bound`, kept), stacked alike: no
    lookup of the stack's bits."""
    def stack(x: np.ndarray) -> np.ndarray:
        return _repeat(x, reps) if each else np.tile(x, reps if isinstance(reps, tuple) else (reps, 1, 1))
    vals = wg.values_bound(t, kept)
    return stack(kept), None if vals is None else (stack(vals[0]), vals[1])


@lru_cache(maxsize=16)
def _slot_digits(atype: str, nz: int, kc: int) -> np.ndarray:
    """map.metadata's stored A of a row ``[K/2]``: slot s of every chunk stores s + 1 (read-only)."""
    got = wgc.narrowed(atype, _digit(atype, np.tile(np.arange(nz, dtype=np.int64) + 1, kc // nz)))
    got.setflags(write=False)
    return got


def _repeat(x: np.ndarray, k: int) -> np.ndarray:
    """Each case ``k`` times over (``x`` itself, uncopied, for once)."""
    return x if k == 1 else np.repeat(x, k, axis=0)


def _a_tags(v: WgmmaSpVariant) -> tuple[np.ndarray, int]:
    """map.A's compressed A of each digit ``[digit, 64, K/2]`` (stored element c of row m tagged m * K/2 + c + 1)
    and the digits, once per process and A type and K (the forms of every N share them)."""
    return _a_tags_of(v.atype, v.kc)


@lru_cache(maxsize=16)
def _a_tags_of(atype: str, kc: int) -> tuple[np.ndarray, int]:
    db = wgc.DIGIT_BITS[atype]
    tags = np.arange(64 * kc, dtype=np.int64).reshape(64, kc) + 1
    digits = max(1, -(-int(tags.max()).bit_length() // db))
    got = (wgc.narrowed(atype, np.stack([_digit(atype, (tags >> (db * d)) & ((1 << db) - 1)) for d in range(digits)])),
           digits)
    got[0].setflags(write=False)
    return got


def _b_tags(v: WgmmaSpVariant) -> tuple[np.ndarray, int]:
    """map.B's B of each digit ``[digit, K, N]`` (element (k, n) tagged k * N + n) and the digits, once per process
    and B type and shape."""
    return _b_tags_of(v.btype, v.K, v.N)


@lru_cache(maxsize=16)
def _b_tags_of(btype: str, K: int, N: int) -> tuple[np.ndarray, int]:
    db = wgc.DIGIT_BITS[btype]
    tags = np.arange(K * N, dtype=np.int64).reshape(K, N)
    digits = max(1, -(-max(1, int(tags.max()).bit_length()) // db))
    got = (wgc.narrowed(btype, np.stack([_digit(btype, (tags >> (db * d)) & ((1 << db) - 1)) for d in range(digits)])),
           digits)
    got[0].setflags(write=False)
    return got


def _selections_b(v: WgmmaSpVariant) -> np.ndarray:
    """:func:`_selection_b` of every shift ``[shift, K, N]``, once per process and B type and shape."""
    return _selections_b_of(v.btype, v.K, v.N)


@lru_cache(maxsize=16)
def _selections_b_of(btype: str, K: int, N: int) -> np.ndarray:
    got = wgc.narrowed(btype, np.stack([_selection_b_of(btype, K, N, s) for s in range(-(-K // N))]))
    got.setflags(write=False)
    return got




def _selection_b(v: WgmmaSpVariant, s: int) -> np.ndarray:
    """B picking dense column k = n + s * N of A into column n of D."""
    return _selection_b_of(v.btype, v.K, v.N, s)


def _selection_b_of(btype: str, K: int, N: int, s: int) -> np.ndarray:
    B = np.zeros((K, N), dtype=np.uint64)
    n = np.arange(N)
    k = n + s * N
    ok = k < K
    B[k[ok], n[ok]] = _one(btype)
    return B


def _selections_a(v: WgmmaSpVariant, rng, shifts: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """A (compressed ``[case, 64, K/2]``, fields ``[case, 64, 2 * chunks]``) of each shift s in turn: one 1 per row
    m, at dense column m + 64 s, stored in a random legal pattern that holds it, every other chunk a random legal
    pattern.  Each case draws its chunks' patterns, then for each 1 which of the patterns that hold it; every
    draw of every case in one :func:`bounded_draws`, every case placed at once (each writes only its own)."""
    pats, holding, counts, slot = _holding(v)
    spans, pat_at, hold_at, c, m, ch, p = _selection_draws(v, tuple(shifts))
    drawn = wgc.bounded_draws(rng, spans)
    n = len(shifts)
    fields = pats[drawn[pat_at]].reshape(n, 64, v.chunks, 2)
    pick = holding[p, drawn[hold_at]]
    fields[c, m, ch] = pats[pick]
    comp = np.zeros((n, 64, v.chunks, v.nz), dtype=wgc.narrow_type(v.atype))
    comp[c, m, ch, slot[pick, p]] = _one(v.atype)
    return comp.reshape(n, 64, v.kc), fields.reshape(n, 64, 2 * v.chunks)


def _selection_draws(v: WgmmaSpVariant, shifts: tuple[int, ...]) -> tuple:
    """What :func:`_selections_a` draws and where it puts it, once per process and chunk geometry and shifts: (the
    span of every draw, case after case: each chunk's pattern, then for each row's 1 the pattern that holds it;
    where the pattern draws and the holding draws are among them; the (case, row, chunk, position in the chunk)
    of each 1)."""
    key = (v.K, v.chunks, v.width, v.nz, shifts)
    hit = _SELECTION_DRAWS.get(key)
    if hit is None:
        pats, _, counts, _ = _holding(v)
        per = 64 * v.chunks
        spans, pat_at, hold_at, cs, ms, chs, ps = [], [], [], [], [], [], []
        at = 0
        for c, s in enumerate(shifts):
            m = np.flatnonzero(np.arange(64) + 64 * s < v.K)
            ch, p = np.divmod(m + 64 * s, v.width)
            spans += [np.full(per, len(pats)), counts[p]]
            pat_at.append(np.arange(at, at + per))
            hold_at.append(np.arange(at + per, at + per + len(m)))
            cs.append(np.full(len(m), c))
            ms.append(m)
            chs.append(ch)
            ps.append(p)
            at += per + len(m)
        if len(_SELECTION_DRAWS) > 1024:
            _SELECTION_DRAWS.clear()
        hit = _SELECTION_DRAWS[key] = tuple(np.concatenate(x) for x in (spans, pat_at, hold_at, cs, ms, chs, ps))
    return hit


_SELECTION_DRAWS: dict[tuple, tuple] = {}


def _holding(v: WgmmaSpVariant) -> tuple:
    """(legal patterns ``[P, 2]``, the patterns that store each dense position of a chunk (``[position, i]``, the
    first ``counts[position]`` of each row), ``counts``, the slot of each (pattern, position)),
    once per chunk geometry."""
    return _holding_of(sp.sparsity(v))


@cache
def _holding_of(spx) -> tuple:
    pats = np.array(spx.patterns, dtype=np.int64)
    pos = sp.positions(spx, pats)  # [P, nz] dense positions in the chunk
    holding = [np.nonzero((pos == p).any(1))[0] for p in range(spx.width)]  # patterns that store position p
    counts = np.array([len(h) for h in holding], dtype=np.int64)
    padded = np.zeros((spx.width, int(counts.max())), dtype=np.int64)
    for p, h in enumerate(holding):
        padded[p, : len(h)] = h
    slot = np.argmax(pos[:, None, :] == np.arange(spx.width)[None, :, None], axis=-1)  # [pattern, position] -> slot
    return pats, padded, counts, slot


def _undefined_plans(v: WgmmaSpVariant, rng, check: str) -> tuple[list, dict]:
    """(compressed A, fields, B) per case of an undefined check, and its meta.

    ``undefined.metadata``: map.A's tags and selections under one set of fields in which every chunk
    carries an undefined index pair.  ``undefined.selector``: value inputs (every lane's metadata
    legal and its own: the kernel's selector names none of them)."""
    if check == "undefined.selector":
        fields = random_patterns(v, rng, SELECTOR_CASES)
        plans = [(_values(rng, v.atype, (64, v.kc)), fields[i], _values(rng, v.btype, (v.K, v.N)))
                 for i in range(SELECTOR_CASES)]
        return plans, {"target": check}
    db = wgc.DIGIT_BITS[v.atype]
    tags = np.arange(64 * v.kc, dtype=np.int64).reshape(64, v.kc) + 1
    digits = max(1, -(-int(tags.max()).bit_length() // db))
    shifts = -(-v.K // v.N)
    pairs = np.array(ud.undefined_pairs(sp.sparsity(v), order_required=False), dtype=np.int64)
    which = (np.arange(64 * v.chunks) + int(rng.integers(len(pairs)))) % len(pairs)
    fields = pairs[which].reshape(64, 2 * v.chunks)
    plans = [(_digit(v.atype, (tags >> (db * d)) & ((1 << db) - 1)), fields, _selection_b(v, s))
             for d in range(digits) for s in range(shifts)]
    return plans, {"digits": digits, "digit_bits": db, "target": check, "shifts": shifts}


def make_cases(v: WgmmaSpVariant, seed: int, checks: tuple[str, ...], value_cases: int = 4) -> list[CaseSet]:
    """Case sets per (check, immediate set, selector); the undefined checks' after all the others, so
    asking for them changes no other check's inputs."""
    model = wg.model_of(v)
    smem = model.smem
    rng = variant_rng(v, seed, CASE_STREAM)
    swz = list(smem.swizzles)
    sw_modes = [m for m in swz if m != "none"]
    sets = immediate_sets(v)
    work = []
    for si, imm in enumerate(sets):
        jobs = ["value"] if "value" in checks else []
        if si in (0, len(sets) - 1):
            jobs += [c for c in ("map.A", "map.B") if c in checks]
        if "map.metadata" in checks and imm == next(s for s in sets if s["sel"] == imm["sel"]):
            jobs.append("map.metadata")
        work.append((si, imm, jobs))
    if "undefined.metadata" in checks:  # once per legal selector, on its first immediate set
        work += [(si, imm, ["undefined.metadata"]) for si, imm in enumerate(sets)
                 if imm == next(s for s in sets if s["sel"] == imm["sel"])]
    if "undefined.selector" in checks:  # the first immediate set, once per selector the form does not allow
        work += [(0, {**sets[0], "sel": s}, ["undefined.selector"]) for s in ud.out_of_range(v.selectors)]
    out = []
    parts: list[tuple] = []  # per predicted case set: (dense A, B, C, scale-d, scales) as placed
    predicted: list[CaseSet] = []
    size, iw, io, shared_a = sp.image_bytes(v), sp.in_words(v), sp.img_off(v), v.a_src == "shared"
    dwords = v.operands["D"].words
    room_b = size - sp.b_base(v)
    widest = max(sw_modes, key=smem.width)
    fits_b = cache(lambda tb, sw: _fits(v, "B", tb, sw, model))
    for si, imm, jobs in work:
        map_sw = swz[(si * (len(swz) - 1)) % len(swz)]  # none on the first set, swizzled on the last
        ta, tb = imm.get("trans_a", 0), imm.get("trans_b", 0)
        for check in jobs:
            if check == "value":  # every mode on the boundary; off it (base offset) on the first set
                n_on = max(value_cases, len(swz)) if si == 0 else len(swz)
                n = n_on + (len(sw_modes) if si == 0 else 0)
                fields = random_patterns(v, rng, n)
                (comp, comp_vals), (B, b_vals) = wgc.drawn_pairs(rng, v.atype, (64, v.kc), v.btype, (v.K, v.N), n)
                meta: dict = {}
            elif check.startswith("undefined."):
                plans, meta = _undefined_plans(v, rng, check)
                comp, fields, B = (np.stack([pl[j] for pl in plans]) for j in range(3))
                comp_vals = b_vals = None  # (not predicted)
            else:
                (comp, fields, B), meta, (comp_vals, b_vals) = _tagged_plans(v, rng, check, imm["sel"])
            n = len(comp)
            # written below: the head and sp-meta word, C's words where C is drawn, A's registers
            words = wgc.case_words(n, iw, io, size, [(0, sp.META_WORD + 1)]
                                   + ([(sp.c_off(v), sp.c_off(v) + dwords)] if check == "value" else [])
                                   + ([] if shared_a else [(sp.a_off(v), sp.a_off(v) + v.operands["A"].words)]))
            C, c_vals = wgc.c_draws(rng, v, n, zero=check != "value")
            head = np.zeros((n, 5), dtype=np.uint32)  # descriptor words and scale-d, the same in every lane
            b_asks, a_asks = [], []
            for i in range(n):
                if check == "value" and i < n_on:
                    sw_a, sw_b, off = swz[i % len(swz)], swz[(i + 1 + i // len(swz)) % len(swz)], False
                elif check == "value":
                    j = i - n_on
                    sw_a, sw_b, off = sw_modes[j % len(sw_modes)], sw_modes[(j + 1) % len(sw_modes)], True
                else:
                    sw_a = sw_b = map_sw
                    off = False
                if not fits_b(tb, sw_b):  # K-major B wider than the swizzle row: the widest mode
                    sw_b = widest
                b_asks.append((tb, sw_b, v.bits, v.N, v.K, sp.b_base(v), room_b, off))
                if shared_a:
                    a_asks.append((ta, sw_a, v.bits, 64, v.a_view.K, 0, sp.A_REGION, off))
            cfgs, b_placed, a_placed = wgc.case_layouts(rng, model, b_asks, a_asks, head, size)
            head[:, 4] = 1 if check != "value" else np.arange(n) % 3 != 2  # scale-d
            words[:, :, :5] = head[:, None, :]
            # every case's matrices into its image (B first, then A, as the layouts were drawn) or registers
            wg.fill_placed(v, words, b_placed, "B", B, io)
            if shared_a:
                wg.fill_placed(v.a_view, words, a_placed, "A", comp, io)
            else:
                aop = v.operands["A"]
                words[:, :, sp.a_off(v) : sp.a_off(v) + aop.words] = pack(aop, comp[:, None])
            words[:, :, sp.META_WORD] = meta_words(v, rng, fields, imm["sel"])
            dop = v.operands["D"]
            if check == "value":  # (a C of zeros is words of zeros)
                words[:, :, sp.c_off(v) : sp.c_off(v) + dop.words] = pack(dop, C[:, None])
            out.append(CaseSet(f"{check}[{imm_tag(imm)}]", words, {"imm": imm}, {**meta, "layouts": cfgs}))
            if not check.startswith("undefined."):  # what the GPU does with those is an observation, not predicted
                # A's values densified (the product's own input, without its bits densified and decoded)
                if comp_vals is None:
                    comp_vals = wg.values_bound(TYPES[v.atype], comp)
                if b_vals is None:
                    b_vals = wg.values_bound(TYPES[v.btype], B)
                dense = sp.densify(v, comp, fields) if comp_vals is None else \
                    (sp.densify(v, comp_vals[0], fields), comp_vals[1])
                scale = {k: val for k, val in imm.items() if k != "sel"}
                parts.append((dense, B if b_vals is None else (*b_vals, B), C if c_vals is None else (*c_vals, C),
                              head[:, 4] != 0, scale))
                predicted.append(out[-1])
    # every descriptor drawn here carries the base offset the spec's rule gives its pattern start
    # (descriptor_choice): every case set of defined inputs is predicted
    for cs, exp in zip(predicted, wg.predict(v, parts, sp.numerics)):
        cs.expected = exp
    return out
