"""wgmma.mma_async: comparator that names the fault, and figures of the shared-memory layouts.

:func:`compare_wgmma` checks D bit for bit against :func:`ptxconf.families.wgmma.probe.apply` (the spec).
When cases fail, it re-executes them under fault hypotheses, each a one-field change of the
spec's model, and names the hypothesis that reproduces the failing cases exactly:

* A / B transposed (read MN-major where the spec says K-major, or back);
* LBO and SBO swapped; descriptor offsets encoded without (or with) the ``>> 4``;
* a wrong swizzle (the descriptor code applies another mode);
* the base offset ignored (the swizzle phase taken from the address alone);
* a permutation inside the 8 x 16-byte core matrices (rows and columns exchanged);
* a wrong D fragment (all of D's values present, in other lanes or registers);
* numerics (no layout hypothesis explains it, the values are near the expected ones).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np
from ptxconf.core.record import CheckRecord
from ptxconf.core.verdict import Verdict
from ptxconf.families.wgmma import probe as wg

MAX_LINES = 10


def _per_case_equal(exp: np.ndarray, got: np.ndarray) -> np.ndarray:
    return (exp == got).all(axis=(1, 2))


def hypotheses(v, model: wg.Model, cfg_modes: set[int]) -> list[tuple[str, wg.Model]]:
    """(name, model) per fault hypothesis relevant to the variant."""
    out = []
    shared = ["B"] + (["A"] if v.a_src == "shared" else [])
    for op in shared:
        out.append((f"{op} transposed (read {op} MN-major where the spec says K-major, or back)", replace(model, major_flip=(op,))))
    if len(shared) == 2:
        out.append(("A and B transposed (the sense of imm-trans-a/b inverted)", replace(model, major_flip=("A", "B"))))
    out.append(("LBO and SBO swapped (the hardware takes the leading offset for the stride and back)", replace(model, swap_lbo_sbo=True)))
    out.append(("descriptor offsets encoded differently (matrix-descriptor-encode's >> 4 missing or extra)", replace(model, unencoded=True)))
    out.append(("base offset ignored (the hardware swizzles by the address alone, as if the pattern started on its repeat boundary)",
                replace(model, ignore_base_offset=True)))
    if v.bits == 16:
        out.append(("permutation inside the core matrices (no-swizzle layout: each 8x8 core matrix transposed)",
                    replace(model, core_transpose=True)))
    names = list(model.smem.swizzles)
    for code in sorted(cfg_modes):
        mine = model.smem.name_of(code)
        for other in names:
            if other != mine:
                out.append((f"wrong swizzle: descriptor code {code} ({mine} in the spec) behaves as {other}",
                            replace(model, swizzle_map=((code, other),))))
    return out


def compare_wgmma(v, rec: CheckRecord) -> Verdict:
    in_words, out_words = np.asarray(rec.in_words), np.asarray(rec.out_words)
    imm = rec.params.get("imm", {})
    model = wg.model_of(v)
    nd = v.operands["D"].words
    exp = wg.apply(v, in_words, imm, model)[:, :, :nd]
    got = out_words[:, :, :nd]

    def readback() -> list[str]:
        return tagged_readback(v, rec.meta, got, imm) if rec.meta.get("target") in ("A", "B") else []

    return d_verdict(v, rec, exp, got, base_offset_problems(v, model, in_words, rec.meta),
                     lambda failing: diagnose(v, in_words, got, imm, model, failing, exp), readback)


def d_verdict(v, rec: CheckRecord, exp: np.ndarray, got: np.ndarray, wrong_bo: list[str],
              diagnosis: Callable[[np.ndarray], list[str]], readback: Callable[[], list[str]]) -> Verdict:
    """D against the spec's D, case by case (the sparse family's verdict too): a pass; where D agrees but
    descriptors break the base-offset rule, a failure naming them (the descriptor itself is wrong); else a
    failure with ``diagnosis(failing cases)`` (the hypothesis that explains them), the first differing words
    and ``readback()`` (what the tags say the hardware used)."""
    ok = _per_case_equal(exp, got)
    verdict = wg.passed(v, rec)
    if ok.all() and not wrong_bo:
        return verdict
    verdict.status = "fail"
    if ok.all():
        verdict.message = f"{len(wrong_bo)} descriptors break the base-offset rule; " + wrong_bo[0]
        verdict.map_diff = wrong_bo[1 : MAX_LINES + 1]
        return verdict
    bad = np.argwhere(exp != got)
    verdict.mismatch_count = len(bad)
    failing = np.nonzero(~ok)[0]
    lines = diagnosis(failing)
    cfgs = rec.meta.get("layouts") or []
    for case, lane, reg in bad[:4]:
        where = f" layouts {cfgs[case]}" if case < len(cfgs) else ""
        lines.append(f"case {case} lane {lane} register {reg}: expected 0x{int(exp[case, lane, reg]):08x}, "
                     f"got 0x{int(got[case, lane, reg]):08x}{where}")
    lines += readback()
    lines[1:1] = wrong_bo[:4]
    verdict.message = f"{len(bad)} of {exp.size} D words differ in {len(failing)} of {len(ok)} cases; " + (lines[0] if lines else "")
    verdict.map_diff = lines[1 : MAX_LINES + 4]
    return verdict


def base_offset_problems(v, model: wg.Model, in_words: np.ndarray, meta: dict | None) -> list[str]:
    """Descriptors whose base offset is not what the spec's rule requires for where the generator
    started the swizzle pattern (recorded in the case layouts since the base-offset probes; older
    observations, without it, are not checked).

    The emulator reads a descriptor as it is, as the hardware does: a wrong base offset shows in D
    only against the intended placement, so the rule is checked on the descriptor words."""
    out = []
    cfgs = (meta or {}).get("layouts") or []
    head = in_words[: len(cfgs), 0, :4].tolist()  # every case's descriptor words at once, as Python ints
    seen: set[tuple] = set()  # (descriptor words, pattern start) found right: many cases share one
    for c, cfg in enumerate(cfgs[: len(in_words)]):
        for op, (lo, hi) in (("A", (0, 1)), ("B", (2, 3))):
            rec = cfg.get(op)
            if not rec or len(rec) < 5:
                continue
            key = (head[c][lo], head[c][hi], int(rec[4]))
            if key in seen:
                continue
            d = wg.decode_words(model, key[0], key[1])
            sw = model.smem.name_of(d.swizzle) or "none"
            want = wg.base_offset_of(model, sw, key[2])
            if d.base_offset == want:
                seen.add(key)
            else:
                rep = model.smem.swizzles[sw]["repeat"] if sw != "none" else 0
                out.append(f"case {c} {op}: descriptor base offset {d.base_offset} where §{model.desc.section} requires {want} "
                           f"({sw} pattern starts at +{int(rec[4])}, {'on' if rep and int(rec[4]) % rep == 0 else 'off'} its "
                           f"{rep}-byte repeat boundary)")
    return out


def tagged_readback(v, meta: dict, got: np.ndarray, imm: dict) -> list[str]:
    """Map checks: which element of the tagged operand the hardware used at each logical position.

    Tags are element indices in the spec's placement (A: m * K + k, B: k * N + n), one digit per
    case; the other operand selects one element per D cell, so D spells the tag back.
    """
    from ptxconf.isa.packing import unpack
    from ptxconf.isa.ptxtypes import TYPES

    dop = v.operands["D"]
    vals = np.abs(TYPES[v.dtype].decode(unpack(dop, got[:, :, : dop.words])[:, 0]))
    digits, db, target = meta["digits"], meta["digit_bits"], meta["target"]
    shifts = len(got) // digits
    rows, cols = (64, v.K) if target == "A" else (v.K, v.N)
    tags = np.full((rows, cols), -1, dtype=np.int64)
    acc = np.zeros((rows, cols), dtype=np.int64)
    seen = np.zeros((rows, cols), dtype=bool)
    for d in range(digits):
        for s in range(shifts):
            val = vals[d * shifts + s]
            if not np.all(np.isfinite(val)):
                val = np.nan_to_num(val, nan=0, posinf=0, neginf=0)
            val = val.astype(np.int64) & ((1 << db) - 1)
            if target == "A":
                n = np.arange(v.N)
                k = n + s * v.N
                ok = k < v.K
                acc[:, k[ok]] |= val[:, n[ok]] << (db * d)
                seen[:, k[ok]] = True
            else:
                m = np.arange(64)
                k = m + s * 64
                ok = k < v.K
                acc[k[ok], :] |= val[m[ok], :] << (db * d)
                seen[k[ok], :] = True
    tags[seen] = acc[seen]
    want = np.arange(rows * cols, dtype=np.int64).reshape(rows, cols)
    diff = np.argwhere(seen & (tags != want))
    if not len(diff):
        return []
    out = [f"tagged {target}: {len(diff)} of {int(seen.sum())} positions read another element"]
    for r, c in diff[:6]:
        t = int(tags[r, c])
        where = f"({t // cols}, {t % cols})" if 0 <= t < rows * cols else f"nothing the spec places (tag {t})"
        out.append(f"{target}({r}, {c}): the hardware used the element the spec places at {target}{where}")
    return out


def diagnose(v, in_words, got, imm, model, failing, exp) -> list[str]:
    """Name the fault: the hypothesis that reproduces the most failing cases (all, ideally)."""
    sub_in, sub_got = in_words[failing], got[failing]
    codes = set()
    for c in failing:
        for lo, hi in ((0, 1), (2, 3)):
            codes.add(wg.decode_words(model, in_words[c, 0, lo], in_words[c, 0, hi]).swizzle)
    scores: list[tuple[int, str]] = []
    for name, hyp in hypotheses(v, model, codes):
        try:
            e = wg.apply(v, sub_in, imm, hyp)[:, :, : sub_got.shape[2]]
        except Exception:  # a hypothesis that reads outside the image is simply not it
            continue
        n = int(_per_case_equal(e, sub_got).sum())
        if n == len(failing):
            return [f"fault: {name} (reproduces all {n} failing cases)"]
        if n:
            scores.append((n, name))
    d_cases, d_name = _d_fragment(exp[failing], sub_got)
    if d_cases == len(failing):
        return [f"fault: {d_name} (all {d_cases} failing cases)"]
    if d_cases:
        scores.append((d_cases, d_name))
    if scores:
        n, name = max(scores, key=lambda s: s[0])
        return [f"fault: {name} (reproduces {n} of {len(failing)} failing cases; the others differ otherwise)"]
    return [_numerics(v, exp[failing], sub_got)]


def _d_fragment(exp: np.ndarray, got: np.ndarray) -> tuple[int, str]:
    """(cases whose D values are all present but in other lanes/registers, the fault's name)."""
    perm = [c for c, (e, g) in enumerate(zip(exp, got)) if np.array_equal(np.sort(e.ravel()), np.sort(g.ravel()))]
    moved = []
    if perm:
        e, g = exp[perm[0]], got[perm[0]]
        for lane, reg in np.argwhere(e != g)[:3]:
            hits = np.argwhere(g == e[lane, reg])
            if len(hits) == 1:
                moved.append(f"lane {lane} register {reg} -> lane {hits[0][0]} register {hits[0][1]}")
    name = "wrong D fragment (every D value present, in other lanes/registers" + (": " + "; ".join(moved) if moved else "") + ")"
    return len(perm), name


def _numerics(v, exp: np.ndarray, got: np.ndarray) -> str:
    from ptxconf.isa.ptxtypes import TYPES

    dt = TYPES[v.dtype]
    if v.dtype == "f16":
        ev = dt.decode(np.concatenate([exp & 0xFFFF, exp >> 16]).astype(np.uint64))
        gv = dt.decode(np.concatenate([got & 0xFFFF, got >> 16]).astype(np.uint64))
    else:
        ev, gv = dt.decode(exp.astype(np.uint64)), dt.decode(got.astype(np.uint64))
    diff = np.abs(ev.astype(np.float64) - gv.astype(np.float64))
    worst = float(np.nanmax(diff)) if diff.size else 0.0
    return f"numerics (no layout hypothesis reproduces the failing cases; largest difference {worst:g})"


# --- figures ---------------------------------------------------------------------------------


def swizzle_svg(smem, swizzle: str, major: str = "K", bits: int = 16, rows: int = 8) -> str:
    """One repeat of a swizzle mode: each 16-byte chunk of each row, labelled with the logical
    (row, chunk) it holds, coloured by logical chunk."""
    W = smem.width(swizzle)
    nrows = max(rows, 8)
    cw, ch = 64, 28
    chunks = max(W // 16, 1)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{cw * 8 + 120}" height="{ch * nrows + 60}" font-family="monospace" font-size="11">',
           f'<text x="4" y="16">{swizzle} swizzle ({major}-major view): physical 16-byte chunk &lt;- logical (row, chunk)</text>']
    palette = ["#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3", "#fdb462", "#b3de69", "#fccde5"]
    for r in range(nrows):
        for c in range(chunks):
            addr = r * W + c * 16
            phys = int(smem.swizzled(swizzle, np.array([addr]))[0])
            pr, pc = divmod(phys, W) if W else (r, 0)
            x, y = 60 + (phys % W) // 16 * cw, 30 + pr * ch
            out.append(f'<rect x="{x}" y="{y}" width="{cw - 2}" height="{ch - 2}" fill="{palette[c % 8]}" stroke="#333"/>')
            out.append(f'<text x="{x + 4}" y="{y + 17}">r{r} c{c}</text>')
        out.append(f'<text x="4" y="{30 + r * ch + 17}">+{r * W}</text>')
    out.append("</svg>")
    return "\n".join(out)
