"""wgmma.mma_async.sp comparator: D bit for bit against the spec, and a diagnosis that names lanes.

A failing check is re-executed under fault hypotheses: the dense family's (operands transposed,
LBO/SBO swapped, descriptor encoding, swizzle mode, base offset, core matrices) and the sparse
ones (the other lane pair supplies the metadata, each lane one row instead of 16-bit halves or
back, the two index fields of a nibble swapped).  The tagged checks read back what the hardware
used: ``map.A`` which stored element sits at each dense position, ``map.B`` which B element,
``map.metadata`` which lane and bits each chunk's indices came from.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from ptxconf.core.record import CheckRecord
from ptxconf.core.verdict import UNDEFINED, Verdict
from ptxconf.families.mma import undefined as ud
from ptxconf.families.wgmma import compare as dense
from ptxconf.families.wgmma import probe as wg
from ptxconf.isa.expr import parse
from ptxconf.isa.packing import unpack
from ptxconf.isa.ptxtypes import TYPES

from . import probe as sp

MAX_LINES = 10


def _alternate_meta(v) -> list[tuple[str, object]]:
    """Metadata layouts the hardware might use instead: 16-bit halves per row <-> one row per lane."""
    lay = v.operands["metadata"].layout
    F = lay.cols
    if "i >> 3" in lay.row.text:  # halves: each lane one row instead
        row = "16 * warp + groupID + 8 * (threadID_in_group & 1)"
        col = f"{F // 2} * (threadID_in_group >> 1) + i" if F > 16 else "i"
        name = "each metadata lane describes one row (all 16 fields), not rows groupID / groupID + 8 in 16-bit halves"
    else:
        row = "16 * warp + groupID + 8 * (i >> 3)"
        col = f"{F // 4} * threadID_in_group + (i & 7)" if F > 16 else "8 * (threadID_in_group & 1) + (i & 7)"
        name = "metadata lanes hold rows groupID / groupID + 8 in 16-bit halves, not one row each"
    return [(name, replace(lay, row=parse(row), col=parse(col), name=lay.name + "[alt]"))]


def hypotheses(v, model: sp.SpModel, codes: set[int], selector: int) -> list[tuple[str, sp.SpModel]]:
    out = [(name, replace(model, dense=h)) for name, h in dense.hypotheses(v, model.dense, codes)]
    for other in range(4):
        if other != selector:
            out.append((f"metadata from the lanes of selector {other} (the kernel says {selector})",
                        replace(model, selector_map=((selector, other),))))
    for name, lay in _alternate_meta(v):
        out.append((name, replace(model, meta_layout=lay)))
    out.append(("index fields of each metadata nibble swapped (slot 0 in bits [3:2])", replace(model, slots_swapped=True)))
    return out


def compare_sp(v, rec: CheckRecord) -> Verdict:
    in_words, out_words = np.asarray(rec.in_words), np.asarray(rec.out_words)
    imm = rec.params.get("imm", {})
    if rec.check.startswith("undefined."):
        return undefined_verdict(v, rec.check, rec.seed, in_words, out_words, imm, rec.meta)
    model = sp.model_of(v)
    nd = v.operands["D"].words
    exp = sp.apply(v, in_words, imm, model)[:, :, :nd]
    got = out_words[:, :, :nd]

    def readback() -> list[str]:
        target = rec.meta.get("target")
        if target in ("A", "B"):
            return tagged_readback(v, rec.meta, in_words, got, imm, model)
        return metadata_readback(v, rec.meta, in_words, got, imm, model) if target == "metadata" else []

    return dense.d_verdict(v, rec, exp, got, dense.base_offset_problems(v, model.dense, in_words, rec.meta),
                           lambda failing: diagnose(v, in_words, got, imm, model, failing, exp), readback)


def diagnose(v, in_words, got, imm, model: sp.SpModel, failing, exp) -> list[str]:
    """The hypothesis that reproduces every failing case, else the best, else D fragment or numerics."""
    sub_in, sub_got = in_words[failing], got[failing]
    codes = {wg.decode_words(model.dense, in_words[c, 0, lo], in_words[c, 0, hi]).swizzle
             for c in failing for lo, hi in ((0, 1), (2, 3))}
    scores = []
    for name, hyp in hypotheses(v, model, codes, int(imm.get("sel", 0))):
        try:
            e = sp.apply(v, sub_in, imm, hyp)[:, :, : sub_got.shape[2]]
        except Exception:  # a hypothesis that reads outside the image is simply not it
            continue
        n = int((e == sub_got).all(axis=(1, 2)).sum())
        if n == len(failing):
            return [f"fault: {name} (reproduces all {n} failing cases)"]
        if n:
            scores.append((n, name))
    d_cases, d_name = dense._d_fragment(exp[failing], sub_got)
    if d_cases == len(failing):
        return [f"fault: {d_name} (all {d_cases} failing cases)"]
    if scores:
        n, name = max(scores)
        return [f"fault: {name} (reproduces {n} of {len(failing)} failing cases; the others differ otherwise)"]
    return [dense._numerics(v, exp[failing], sub_got)]


def _d_values(v, got) -> np.ndarray:
    dop = v.operands["D"]
    vals = np.abs(TYPES[v.dtype].decode(unpack(dop, got[:, :, : dop.words])[:, 0]).astype(np.float64))
    return np.nan_to_num(vals, nan=0, posinf=0, neginf=0).astype(np.int64)


def _observed_dense_a(v, vals: np.ndarray, shifts: int, groups: int, db: int = 0,
                      dtype: type = np.int64) -> tuple[np.ndarray, np.ndarray]:
    """Cases ``[group * shifts + s]`` with B selecting dense col n + s N -> (A values [group, 64, K], seen)."""
    A = np.zeros((groups, 64, v.K), dtype=dtype)
    seen = np.zeros((64, v.K), dtype=bool)
    for g in range(groups):
        for s in range(shifts):
            n = np.arange(v.N)
            k = n + s * v.N
            ok = k < v.K
            A[g][:, k[ok]] = vals[g * shifts + s][:, n[ok]]
            seen[:, k[ok]] = True
    return A, seen


def tagged_readback(v, meta: dict, in_words, got, imm: dict, model: sp.SpModel) -> list[str]:
    """map.A: the stored element at each dense position; map.B: the B element at each (k, n)."""
    vals = _d_values(v, got)
    digits, db, shifts = meta["digits"], meta["digit_bits"], meta["shifts"]
    mask = (1 << db) - 1
    if meta["target"] == "B":
        tags = np.zeros((v.K, v.N), dtype=np.int64)
        seen = np.zeros((v.K, v.N), dtype=bool)
        for d in range(digits):
            for s in range(shifts):
                m = np.arange(64)
                k = m + s * 64
                ok = k < v.K
                tags[k[ok]] |= (vals[d * shifts + s][m[ok]] & mask) << (db * d)
                seen[k[ok]] = True
        diff = np.argwhere(seen & (tags != np.arange(v.K * v.N).reshape(v.K, v.N)))
        out = [f"tagged B: {len(diff)} of {int(seen.sum())} positions read another element"] if len(diff) else []
        for k, n in diff[:6]:
            t = int(tags[k, n])
            out.append(f"B({k}, {n}): the hardware used the element the spec places at B({t // v.N}, {t % v.N})"
                       if 0 <= t < v.K * v.N else f"B({k}, {n}): the hardware used nothing the spec places (tag {t})")
        return out
    acc, seen = _observed_dense_a(v, vals & mask, shifts, digits)
    tags = np.zeros((64, v.K), dtype=np.int64)
    for d in range(digits):
        tags |= (acc[d] & mask) << (db * d)
    # where the spec puts each stored element, through the case's own metadata
    fields = sp.fields_of(v, in_words[:1, :, sp.META_WORD], int(imm.get("sel", 0)), model)
    want = sp.densify(v, (np.arange(64 * v.kc, dtype=np.uint64).reshape(1, 64, v.kc) + 1), fields)[0].astype(np.int64)
    diff = np.argwhere(seen & (tags != want))
    if not len(diff):
        return []
    out = [f"tagged A: {len(diff)} of {int(seen.sum())} dense positions hold another stored element"]
    for r, k in diff[:6]:
        t, w = int(tags[r, k]) - 1, int(want[r, k]) - 1
        got_s = f"stored A({t // v.kc}, {t % v.kc})" if 0 <= t < 64 * v.kc else "nothing (zero)"
        want_s = f"stored A({w // v.kc}, {w % v.kc})" if w >= 0 else "nothing (zero)"
        out.append(f"A({r}, {k}) (dense): the hardware has {got_s}, the spec {want_s}")
    return out


def metadata_readback(v, meta: dict, in_words, got, imm: dict, model: sp.SpModel) -> list[str]:
    """Which lane and bits each chunk's index fields came from, found by their values over the reps."""
    reps, shifts = meta["reps"], meta["shifts"]
    A, seen = _observed_dense_a(v, _d_values(v, got), shifts, reps)
    chunks = A.reshape(reps, 64, v.chunks, v.width)
    obs = np.full((reps, 64, v.chunks, 2), -1, dtype=np.int64)
    for s in range(v.nz):
        has = chunks == s + 1
        pos = np.argmax(has, axis=-1)
        found = has.any(-1)
        if v.nz == 1:  # 1:2: position p is the index pair (2p, 2p + 1)
            obs[..., 0] = np.where(found, 2 * pos, -1)
            obs[..., 1] = np.where(found, 2 * pos + 1, -1)
        else:
            obs[..., s] = np.where(found, pos, -1)
    obs = obs.reshape(reps, 64, 2 * v.chunks)
    sel = int(imm.get("sel", 0))
    words = in_words[:: shifts, :, sp.META_WORD][:reps]
    want = sp.fields_of(v, words, sel, model)
    diff = np.argwhere(((obs != want).any(0)) & seen.reshape(64, v.chunks, v.width).all(-1).repeat(2, axis=1))
    if not len(diff):
        return []
    lay = v.operands["metadata"].layout
    m, held = lay.map({"selector": sel}), lay.held({"selector": sel})
    owner = {(int(m[ln, i, 1]), int(m[ln, i, 2])): (int(ln), int(i)) for ln, i in zip(*np.nonzero(held))}
    fieldvals = (words[:, :, None].astype(np.int64) >> (2 * np.arange(16))) & 3  # [rep, lane, field]
    out = [f"metadata: {len(diff)} of {64 * 2 * v.chunks} index fields taken from elsewhere than the spec's lanes"]
    for r, fc in diff[:6]:
        cand = np.argwhere((fieldvals == obs[:, r, fc][:, None, None]).all(0))
        who = ", ".join(f"lane {ln} bits [{2 * i + 1}:{2 * i}]" for ln, i in cand[:3]) or "no lane's bits"
        more = f" (+{len(cand) - 3} more)" if len(cand) > 3 else ""
        sl, si = owner.get((int(r), int(fc)), (-1, -1))
        out.append(f"row {r} chunk {fc // 2} field {fc % 2}: the hardware's indices match {who}{more}; "
                   f"the spec: lane {sl} bits [{2 * si + 1}:{2 * si}]")
    return out


# --- inputs the ISA leaves undefined ---------------------------------------------------------


def undefined_verdict(v, check: str, seed: int, in_words, out_words, imm: dict, meta: dict) -> Verdict:
    """What the hardware made of undefined inputs: an ``undefined`` verdict (``skip`` where nothing ran)."""
    verdict = Verdict(v.id, check, seed, UNDEFINED)
    decided = ud.assembly_observation(meta) if meta.get("target") == "undefined.selector" else None
    if decided:
        verdict.status, verdict.message = decided
        return verdict
    nd = v.operands["D"].words
    got = out_words[:, :, :nd]
    verdict.elements = int(got.size)
    if ud.not_modelled(got):
        verdict.message = ud.NOT_MODELLED_TEXT
        return verdict
    if meta.get("target") == "undefined.metadata":
        digits, shifts = meta["digits"], meta["shifts"]
        dense, seen = _observed_dense_a(v, _d_values(v, got).astype(np.float64), shifts, digits, dtype=np.float64)
        dense[:, ~seen] = np.nan
        model = sp.model_of(v)
        comp = sp.compressed_a(v, in_words[::shifts][:digits], imm, model)  # [digit, 64, K/2] bits
        slots = np.abs(TYPES[v.atype].decode(comp).astype(np.float64)).reshape(digits, 64, v.chunks, v.nz)
        fields = sp.fields_of(v, in_words[:1, :, sp.META_WORD], int(imm.get("sel", 0)), model)[0]
        verdict.message, verdict.map_diff = ud.chunk_readback(sp.sparsity(v), slots, dense,
                                                             fields.reshape(64, v.chunks, 2))
        return verdict
    # an out-of-range selector that assembled: D against each legal selector's metadata
    sel = int(imm.get("sel", -1))
    lay = v.operands["metadata"].layout
    best, lines = None, []
    for other in v.selectors:
        exp = sp.apply(v, in_words, {**imm, "sel": other})[:, :, :nd]
        differ = int((exp != got).sum())
        lanes = np.nonzero(lay.held({"selector": other}).any(axis=1))[0]
        lines.append(f"under selector {other} (metadata of {ud.lanes_text(lanes)}): {differ} of {got.size} D words differ")
        if best is None or differ < best[0]:
            best = (differ, other, lanes)
    differ, other, lanes = best
    head = f"selector {sel} assembled ({(meta.get('assembler') or {}).get('ptxas', 'ptxas')})"
    verdict.message = (f"{head}: D as with selector {other} (the metadata of {ud.lanes_text(lanes)})" if differ == 0 else
                       f"{head}: D matches no legal selector's metadata (nearest: selector {other}, "
                       f"{differ} of {got.size} words differ)")
    verdict.map_diff = lines
    return verdict
