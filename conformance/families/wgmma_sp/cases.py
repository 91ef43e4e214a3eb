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

from functools import cache

import numpy as np
from ptxconf.core.plan import CaseSet, variant_rng
from ptxconf.families.mma import undefined as ud
from ptxconf.families.wgmma import cases as wgc
from ptxconf.families.wgmma import probe as wg
from ptxconf.families.wgmma.compare import base_offset_problems
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
    pats = np.array(sp.sparsity(v).patterns, dtype=np.uint32)
    nib = pats[rng.integers(len(pats), size=(cases, sp.LANES, 8))]
    words = (nib[..., 0] | nib[..., 1] << 2) << (4 * np.arange(8, dtype=np.uint32))
    words = np.bitwise_or.reduce(words, axis=-1).astype(np.uint32)
    lay = v.operands["metadata"].layout
    m, held = lay.map({"selector": selector}), lay.held({"selector": selector})
    lanes, idx = np.nonzero(held)
    bits = np.zeros((cases, *held.shape), dtype=np.uint32)
    bits[:, lanes, idx] = fields[:, m[lanes, idx, 1], m[lanes, idx, 2]].astype(np.uint32) << (2 * idx).astype(np.uint32)
    spec_lanes = held.any(1)
    words[:, spec_lanes] = np.bitwise_or.reduce(bits, axis=-1)[:, spec_lanes]
    return words


def random_patterns(v: WgmmaSpVariant, rng, cases: int) -> np.ndarray:
    """``int64[case, 64, 2 * chunks]`` index fields, a random legal pattern per chunk."""
    pats = np.array(sp.sparsity(v).patterns, dtype=np.int64)
    return pats[rng.integers(len(pats), size=(cases, 64, v.chunks))].reshape(cases, 64, 2 * v.chunks)


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


def _tagged_plans(v: WgmmaSpVariant, rng, check: str, sel: int) -> tuple[list, dict]:
    """(compressed A, fields, B) per case and the meta of a tagged check."""
    plans = []
    if check == "map.A":
        db = wgc.DIGIT_BITS[v.atype]
        tags = np.arange(64 * v.kc, dtype=np.int64).reshape(64, v.kc) + 1
        digits = max(1, -(-int(tags.max()).bit_length() // db))
        shifts = -(-v.K // v.N)
        for d in range(digits):
            fields = random_patterns(v, rng, 1)[0]
            for s in range(shifts):
                comp = _digit(v.atype, (tags >> (db * d)) & ((1 << db) - 1))
                plans.append((comp, fields, _selection_b(v, s)))
        return plans, {"digits": digits, "digit_bits": db, "target": "A", "shifts": shifts}
    if check == "map.B":
        db = wgc.DIGIT_BITS[v.btype]
        tags = np.arange(v.K * v.N, dtype=np.int64).reshape(v.K, v.N)
        digits = max(1, -(-max(1, int(tags.max()).bit_length()) // db))
        shifts = -(-v.K // 64)
        for d in range(digits):
            for s in range(shifts):
                comp, fields = _selection_a(v, rng, s)
                plans.append((comp, fields, _digit(v.btype, (tags >> (db * d)) & ((1 << db) - 1))))
        return plans, {"digits": digits, "digit_bits": db, "target": "B", "shifts": shifts}
    # map.metadata: slot s stores s + 1; every chunk's pattern changes from rep to rep
    shifts = -(-v.K // v.N)
    slot = np.tile(np.arange(v.nz, dtype=np.int64) + 1, v.kc // v.nz)
    comp = np.broadcast_to(_digit(v.atype, slot), (64, v.kc)).copy()
    for _ in range(META_REPS):
        fields = random_patterns(v, rng, 1)[0]
        for s in range(shifts):
            plans.append((comp, fields, _selection_b(v, s)))
    return plans, {"target": "metadata", "reps": META_REPS, "shifts": shifts}


def _selection_b(v: WgmmaSpVariant, s: int) -> np.ndarray:
    """B picking dense column k = n + s * N of A into column n of D."""
    B = np.zeros((v.K, v.N), dtype=np.uint64)
    n = np.arange(v.N)
    k = n + s * v.N
    ok = k < v.K
    B[k[ok], n[ok]] = _one(v.btype)
    return B


def _selection_a(v: WgmmaSpVariant, rng, s: int) -> tuple[np.ndarray, np.ndarray]:
    """A (compressed, fields) with one 1 per row m, at dense column m + 64 s, stored in a random
    legal pattern that holds it."""
    spx = sp.sparsity(v)
    pats = np.array(spx.patterns, dtype=np.int64)
    pos = sp.positions(spx, pats)  # [P, nz] dense positions in the chunk
    fields = random_patterns(v, rng, 1)[0].reshape(64, v.chunks, 2)
    comp = np.zeros((64, v.chunks, v.nz), dtype=np.uint64)
    one = _one(v.atype)
    holding = [np.nonzero((pos == p).any(1))[0] for p in range(v.width)]  # patterns that store position p
    slot = np.argmax(pos[:, None, :] == np.arange(v.width)[None, :, None], axis=-1)  # [pattern, position] -> slot
    for m in range(64):
        k = m + 64 * s
        if k >= v.K:
            continue
        ch, p = divmod(k, v.width)
        pick = int(holding[p][rng.integers(0, len(holding[p]))])  # rng.choice(holding[p]), the same draw, cheaper
        fields[m, ch] = pats[pick]
        comp[m, ch, slot[pick, p]] = one
    return comp.reshape(64, v.kc), fields.reshape(64, 2 * v.chunks)


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
    for si, imm, jobs in work:
        map_sw = swz[(si * (len(swz) - 1)) % len(swz)]  # none on the first set, swizzled on the last
        for check in jobs:
            if check == "value":  # every mode on the boundary; off it (base offset) on the first set
                n_on = max(value_cases, len(swz)) if si == 0 else len(swz)
                n = n_on + (len(sw_modes) if si == 0 else 0)
                fields = random_patterns(v, rng, n)
                plans = [(_values(rng, v.atype, (64, v.kc)), fields[i], _values(rng, v.btype, (v.K, v.N))) for i in range(n)]
                meta: dict = {}
            elif check.startswith("undefined."):
                plans, meta = _undefined_plans(v, rng, check)
            else:
                plans, meta = _tagged_plans(v, rng, check, imm["sel"])
            words = np.zeros((len(plans), sp.LANES, sp.in_words(v)), dtype=np.uint32)
            img = np.tile(((np.arange(sp.image_bytes(v)) * 0x9D + 0x5B) & 0xFF).astype(np.uint8), (len(plans), 1))
            C = wgc._c_values(rng, v, len(plans))
            cfgs: list[dict] = []
            b_descs: list[Desc] = []
            a_descs: list[Desc] = []
            for i in range(len(plans)):
                if check == "value" and i < n_on:
                    sw_a, sw_b, off = swz[i % len(swz)], swz[(i + 1 + i // len(swz)) % len(swz)], False
                elif check == "value":
                    j = i - n_on
                    sw_a, sw_b, off = sw_modes[j % len(sw_modes)], sw_modes[(j + 1) % len(sw_modes)], True
                else:
                    sw_a = sw_b = map_sw
                    off = False
                ta, tb = imm.get("trans_a", 0), imm.get("trans_b", 0)
                if not _fits(v, "B", tb, sw_b, model):  # K-major B wider than the swizzle row: the widest mode
                    sw_b = max(sw_modes, key=smem.width)
                room_b = sp.image_bytes(v) - sp.b_base(v)
                db_, pb = layout_choice(v, rng, "B", tb, sw_b, model, sp.b_base(v), room_b, off)
                words[i, :, 2], words[i, :, 3] = wg._words(model, db_)
                b_descs.append(db_)
                cfg = {"B": [sw_b, db_.start, db_.lbo, db_.sbo, pb, db_.base_offset]}
                if v.a_src == "shared":
                    da, pa = layout_choice(v, rng, "A", ta, sw_a, model, 0, sp.A_REGION, off)
                    words[i, :, 0], words[i, :, 1] = wg._words(model, da)
                    a_descs.append(da)
                    cfg["A"] = [sw_a, da.start, da.lbo, da.sbo, pa, da.base_offset]
                words[i, :, 4] = 1 if check != "value" else int(i % 3 != 2)
                if check != "value":
                    C[i] = 0
                cfgs.append(cfg)
            # every case's matrices into its image (B first, then A, as the layouts were drawn) or registers
            ta, tb = imm.get("trans_a", 0), imm.get("trans_b", 0)
            wg.fill_cases(v, img, b_descs, "B", tb, np.stack([B for _, _, B in plans]), smem)
            if v.a_src == "shared":
                wg.fill_cases(v.a_view, img, a_descs, "A", ta, np.stack([comp for comp, _, _ in plans]), smem)
            else:
                aop = v.operands["A"]
                words[:, :, sp.a_off(v) : sp.a_off(v) + aop.words] = pack(aop, np.stack([c for c, _, _ in plans])[:, None])
            fields = np.stack([f for _, f, _ in plans])
            words[:, :, sp.META_WORD] = meta_words(v, rng, fields, imm["sel"])
            dop = v.operands["D"]
            words[:, :, sp.c_off(v) : sp.c_off(v) + dop.words] = pack(dop, C[:, None])
            sp.put_image(v, words, img)
            out.append(CaseSet(f"{check}[{imm_tag(imm)}]", words, {"imm": imm}, {**meta, "layouts": cfgs}))
            if not check.startswith("undefined."):  # what the GPU does with those is an observation, not predicted
                dense = sp.densify(v, np.stack([comp for comp, _, _ in plans]), fields)
                scale = {k: val for k, val in imm.items() if k != "sel"}
                parts.append((dense, np.stack([B for _, _, B in plans]), C, words[:, 0, 4] != 0, scale))
                predicted.append(out[-1])
    for cs, exp in zip(predicted, wg.predict(v, parts, sp.numerics)):
        if not base_offset_problems(v, model, cs.words, cs.meta):
            cs.expected = exp
    return out
