"""Table 39 (tcgen05.mma: which .kind, .ws, CTA group, sparsity and types take which MxNxK), by meaning.

The extracted rows (:mod:`.tables`, rowspans already carried down cell by cell)
are read here into :class:`ptxconf.families.tcgen05.spec.Row` objects, the same rows
``specs/tcgen05.yaml`` loads into; the valid tuples on both sides then come from
the one enumeration, :meth:`Tcgen05Spec.row_tuples`.  Only the document's shape
*text* is parsed here: ``"64xNxK, 128xNxK, 256xNxK1; N = {8, 16, 24, ... 256}
steps of 8; K = 64, K1 = 96"``, ``"N = {64, 128}; K = 32"`` (what a row leaves out
it takes from the row above in the same kind/.ws/CTA group, as the printed table
means), ``"Invalid"``.  What the table does not say (whether A and B share one
type) is taken from specs/ for the kinds it knows.
"""

from __future__ import annotations

import dataclasses
import re
from collections import defaultdict

from ptxconf.families.tcgen05.spec import Kind, MmaTuple, Row, Tcgen05Spec

from .findings import Finding
from .tables import DocTable

__all__ = ["ParsedTable", "is_kind_table", "parse_n", "parse_rows", "compare", "compare_tables", "fmt_values"]

_COLUMNS = {  # column role -> header pattern
    "kind": r"\.?kind",
    "ws": r"\.ws",
    "cta": r"cta",
    "sparsity": r"spars",
    "dtype": r"^\.?dtype",
    "ab": r"atype|btype",
    "shape": r"shape",
}


def _columns(header: list[str]) -> dict[str, int] | None:
    out = {}
    for role, pat in _COLUMNS.items():
        hit = [i for i, h in enumerate(header) if re.search(pat, h, re.I)]
        if not hit:
            return None
        out[role] = hit[0]
    return out


def is_kind_table(t: DocTable) -> bool:
    """Whether a captioned table is the tcgen05.mma kind/shape table (by its columns, not its number)."""
    return _columns(t.header) is not None


def parse_n(text: str) -> tuple[int, ...]:
    """``"{8, 16, 24, ... 256} steps of 8"``, ``"{8, 16, 24, 32, 48, ... 256} steps of 16 after N > 32"``,
    ``"{64, 128, 256}"``: the values.  An ellipsis continues from the last value before it in the
    stated step (or the step of the two values before it) up to the value after it."""
    m = re.fullmatch(r"\{([^}]*)\}\s*(.*)", text.strip())
    if not m:
        raise ValueError(f"N set {text!r} is not '{{...}}'")
    body, rest = m.group(1).replace("\u2026", "..."), m.group(2)
    step_m = re.search(r"steps? of (\d+)", rest)
    rest = re.sub(r"steps? of \d+|after N\s*>\s*\d+", "", rest).strip()
    if rest:
        raise ValueError(f"N set: cannot read {rest!r}")
    if "..." not in body:
        vals = [int(x) for x in re.split(r"\s*,\s*", body.strip())]
    else:
        head, _, tail = body.partition("...")
        before = [int(x) for x in re.findall(r"\d+", head)]
        after = [int(x) for x in re.findall(r"\d+", tail)]
        if not before or len(after) != 1:
            raise ValueError(f"N set {text!r}: an ellipsis needs values before it and one after it")
        step = int(step_m.group(1)) if step_m else (before[-1] - before[-2] if len(before) > 1 else 0)
        if step <= 0 or (after[0] - before[-1]) % step:
            raise ValueError(f"N set {text!r}: no step of {step} leads from {before[-1]} to {after[0]}")
        vals = before + list(range(before[-1] + step, after[0] + 1, step))
    if any(b <= a for a, b in zip(vals, vals[1:])):
        raise ValueError(f"N set {text!r}: values must increase")
    return tuple(vals)


_N_DEF = re.compile(r"N(\d*)\s*=\s*(\{[^}]*\}\s*(?:steps? of \d+\s*)?(?:after N\s*>\s*\d+\s*)?)")


def _shape_cell(text: str) -> tuple[list[tuple[int, str, str]] | None, dict[str, tuple[int, ...]] | None,
                                    dict[str, tuple[int, ...]] | None]:
    """(M with the N and K names each goes with, N name -> values, K name -> values); None for what the cell
    leaves out.  ``64xN1 xK, 128xN2 xK; N1 = {...}; N2 = {...}`` gives each M its own N set (ISA 9.4's
    .kind::ti16); ``K = 64 / 96`` gives two K values under one name."""
    ms = ns = ks = None
    for clause in (c.strip() for c in text.split(";")):
        if not clause:
            continue
        if re.fullmatch(r"(\d+\s*x\s*N\d*\s*x\s*K\d*\s*,?\s*)+", clause):
            ms = [(int(a), f"N{b}", k) for a, b, k in re.findall(r"(\d+)\s*x\s*N(\d*)\s*x\s*(K\d*)", clause)]
        elif clause.startswith("N"):
            defs = list(_N_DEF.finditer(clause))
            rest = _N_DEF.sub("", clause).strip()
            if not defs or rest:
                raise ValueError(f"N set: cannot read {rest or clause!r}")
            ns = {f"N{m.group(1)}": parse_n(m.group(2)) for m in defs}
        elif re.fullmatch(r"(K\d*\s*=\s*\d+(?:\s*/\s*\d+)*\s*,?\s*)+", clause):
            ks = {a: tuple(int(x) for x in re.findall(r"\d+", b))
                  for a, b in re.findall(r"(K\d*)\s*=\s*(\d+(?:\s*/\s*\d+)*)", clause)}
        else:
            raise ValueError(f"cannot read {clause!r} (expected 'MxNxK, ...', 'N = {{...}}' or 'K = ...')")
    return ms, ns, ks


def _types(text: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(t.lstrip(".") for t in re.findall(r"\.\w+", text)))


@dataclasses.dataclass
class ParsedTable:
    rows: list[Row]  # valid rows split by K name, plus the Invalid rows
    scales: dict[int, tuple[str, ...]]  # Row.index -> scale types the row names
    problems: list[tuple[int, str]]  # (doc line, why) for rows that could not be read
    unread: set[tuple] = dataclasses.field(default_factory=set)  # (kind, .ws, cta_group, sparsity) of those rows


def parse_rows(t: DocTable) -> ParsedTable:
    cols = _columns(t.header)
    assert cols is not None
    rows: list[Row] = []
    scales: dict[int, tuple[str, ...]] = {}
    problems: list[tuple[int, str]] = []
    above: dict[tuple, tuple] = {}  # (kind, ws, cta groups) -> (ms, ns, ks) of the last row that gave shapes
    unread: set[tuple] = set()
    for line, cells in zip(t.row_lines, t.rows):
        c = {role: cells[i].strip() for role, i in cols.items()}
        base = None
        try:
            kind = re.sub(r"^\.?kind::", "", c["kind"])
            if not re.fullmatch(r"\w+", kind):
                raise ValueError(f"cannot read .kind {c['kind']!r}")
            ws = {"no .ws": False, ".ws": True}.get(c["ws"].lower())
            if ws is None:
                raise ValueError(f"cannot read .ws column {c['ws']!r}")
            ctas = tuple(int(x) for x in re.findall(r"\d+", c["cta"]))
            sp = {"dense": ("dense",), "sparse": ("sparse",), "either": ("dense", "sparse")}.get(c["sparsity"].lower())
            if not ctas or sp is None:
                raise ValueError(f"cannot read CTA group {c['cta']!r} / sparsity {c['sparsity']!r}")
            base = dict(kind=kind, ws=ws, cta_groups=ctas, sparsities=sp, line=line)
            if c["shape"].lower().rstrip(".") == "invalid":
                rows.append(Row(index=len(rows), invalid=f"doc line {line}: Invalid", **base))
                continue
            ab_text, *scale_text = re.split(r"\bx\s*\(scale\)", c["ab"], maxsplit=1, flags=re.I)
            ab, sc = _types(ab_text), _types(" ".join(scale_text))
            dtype = _types(c["dtype"])  # one cell may name several (".f32 .f16": a cell the rowspan shares)
            if not dtype or not ab:
                raise ValueError(f"cannot read dtype {c['dtype']!r} / atype/btype {c['ab']!r}")
            ms, ns, ks = _shape_cell(c["shape"])
            prev = above.get((kind, ws, ctas))
            if prev is None and None in (ms, ns, ks):
                raise ValueError(f"{c['shape']!r} gives no {'M' if ms is None else 'N' if ns is None else 'K'} "
                                 f"and no row above it in this group does")
            ks = ks if ks is not None else prev[2]
            ns = ns if ns is not None else prev[1]
            ms = ms if ms is not None else [(m, n, k) for m, n, k in prev[0] if k in ks]
            above[(kind, ws, ctas)] = (ms, ns, ks)
            for kname, kval in ks.items():
                if not any(k == kname for _, _, k in ms):
                    raise ValueError(f"{kname} = {kval} goes with no MxNx{kname} shape")
                for nname, nval in ns.items():
                    mk = tuple(sorted({m for m, n, k in ms if k == kname and n == nname}))
                    for dt in dtype if mk else ():
                        rows.append(Row(index=len(rows), dtype=dt, ab=ab, M=mk, N=nval, K=kval, **base))
                        scales[rows[-1].index] = sc
            unused = {k for _, _, k in ms} - set(ks) | {n for _, n, _ in ms} - set(ns)
            if unused:
                raise ValueError(f"no value given for {', '.join(sorted(unused))}")
        except ValueError as exc:
            problems.append((line, str(exc)))
            if base is not None:
                unread.update((base["kind"], base["ws"], cg, sp) for cg in base["cta_groups"] for sp in base["sparsities"])
    return ParsedTable(rows, scales, problems, unread)


def doc_tuples(parsed: ParsedTable, spec: Tcgen05Spec) -> set[MmaTuple]:
    """The valid tuples of the document's rows, enumerated by the spec's own :meth:`row_tuples`."""
    enumerators: dict[tuple, Tcgen05Spec] = {}
    out: set[MmaTuple] = set()
    for r in parsed.rows:
        if r.invalid:
            continue
        sc = parsed.scales.get(r.index, ())
        key = (r.kind, sc)
        if key not in enumerators:
            k = spec.kinds.get(r.kind) or Kind(r.kind, "", next(iter(spec.kinds.values())).min_ptx, "any", (), None, False, ())
            k = dataclasses.replace(k, block_scaled=bool(sc), scale_types=sc)
            enumerators[key] = dataclasses.replace(spec, kinds={**spec.kinds, r.kind: k}, rows=())
        out.update(enumerators[key].row_tuples(r))
    return out


def fmt_values(values) -> str:
    """Increasing ints as runs: ``{8..32/8, 48..256/16}``; short runs listed."""
    xs = sorted(values)
    parts, k = [], 0
    while k < len(xs):
        j = k + 1
        if j < len(xs):
            step = xs[j] - xs[k]
            while j + 1 < len(xs) and xs[j + 1] - xs[j] == step:
                j += 1
            if j - k >= 3:
                parts.append(f"{xs[k]}..{xs[j]}/{step}")
                k = j + 1
                continue
        parts.append(str(xs[k]))
        k += 1
    return "{" + ", ".join(parts) + "}"


def _fmt(values) -> str:
    vals = list(values)
    if vals and all(isinstance(v, int) for v in vals):
        return fmt_values(vals)
    return "{" + ", ".join(sorted(str(v) for v in vals)) + "}"


_DIMS = {  # what a group of tuples is compared on, one projection each
    "atype/btype": lambda t: f".{t.atype} x .{t.btype}",
    "scale": lambda t: f".{t.scale}" if t.scale else "none",
    "M": lambda t: t.M,
    "N": lambda t: t.N,
    "K": lambda t: t.K,
    "MxK": lambda t: f"{t.M}x{t.K}",
}


def group_name(kind: str, ws: bool, cta: int, sparsity: str, dtype: str | None = None) -> str:
    return f"kind::{kind}{' .ws' if ws else ''} cta_group {cta} {sparsity}" + (f" dtype .{dtype}" if dtype else "")


def target_notes(lines: dict[int, str]) -> dict[int, tuple[int, tuple[str, ...]]]:
    """"K = 96 is only supported for following architecture-specific targets: - sm_103a.":
    K -> (line, targets)."""
    out: dict[int, tuple[int, tuple[str, ...]]] = {}
    nums = sorted(lines)
    for i, n in enumerate(nums):
        m = re.search(r"K\s*=\s*(\d+) is only supported (?:for|on) (?:the )?following[\w\s-]*targets", lines[n])
        if not m:
            continue
        names = re.findall(r"sm_\w+?(?=[.,;\s]|$)", lines[n][m.end():])
        for n2 in nums[i + 1:]:
            hit = re.fullmatch(r"\s*[-*\u2022]?\s*((?:sm_\w+?[.,]?\s*)+)", lines[n2])
            if not hit:
                break
            names += re.findall(r"sm_\w+?(?=[.,;\s]|$)", hit.group(1))
        out[int(m.group(1))] = (n, tuple(sorted(set(names))))
    return out


def compare(t: DocTable, spec: Tcgen05Spec, file: str, section: str | None, lines: dict[int, str] | None = None):
    """Findings (see :mod:`.diff`) for the document's kind/shape table against the spec's Table 39.

    Where the document also says which targets alone take a K (the Target ISA note under the
    table), that is compared with the rows of specs/ that carry ``requires``."""
    parsed = parse_rows(t)
    out: list[Finding] = []
    notes = target_notes(lines or {})
    if notes:
        spec_req: dict[int, set[str]] = defaultdict(set)
        for r in spec.rows:
            if r.requires:
                for k in r.K:
                    spec_req[k].update(q.target.name for q in r.requires)
        for k in sorted(set(notes) | set(spec_req)):
            doc_t, spec_t = set(notes[k][1]) if k in notes else set(), spec_req.get(k, set())
            if doc_t != spec_t:
                out.append(Finding("changed" if doc_t and spec_t else "only in specs" if spec_t else "only in doc",
                                   f"K = {k} targets", None, file, notes[k][0] if k in notes else None, section,
                                   detail=f"only on {_fmt(spec_t) if spec_t else 'any (no requires)'} in specs, "
                                          f"{_fmt(doc_t) if doc_t else 'no Target ISA note'} in doc",
                                   differences=[{"field": "targets", "specs": sorted(spec_t), "doc": sorted(doc_t)}]))
    subject = f"Table {t.number} ({t.caption})"
    for line, why in parsed.problems:
        out.append(Finding("unparseable", subject, None, file, line, section, detail=why))
    doc = doc_tuples(parsed, spec)
    mine = set(spec.tuples)

    def where_doc(kind, ws=None, cta=None, sp=None, dt=None) -> int | None:
        hits = [r.line for r in parsed.rows if r.kind == kind and (ws is None or r.ws == ws)
                and (cta is None or cta in r.cta_groups) and (sp is None or sp in r.sparsities)
                and (dt is None or r.dtype == dt)]
        return hits[0] if hits else None

    def where_spec(kind, ws=None, cta=None, sp=None) -> str:
        hits = [r.line for r in spec.rows if r.kind == kind and (ws is None or r.ws == ws)
                and (cta is None or cta in r.cta_groups) and (sp is None or sp in r.sparsities)]
        return f"{spec.file}:{hits[0]}" if hits else spec.file

    doc_kinds = list(dict.fromkeys(r.kind for r in parsed.rows))
    for k in spec.kinds:
        if k not in doc_kinds:
            n = sum(1 for x in mine if x.kind == k)
            out.append(Finding("only in specs", f"kind::{k}", None, file, None, section,
                               detail=f"removed from doc: specs/ has {n} tuples of .kind::{k} ({where_spec(k)})"))
    for k in doc_kinds:
        if k not in spec.kinds:
            n = sum(1 for x in doc if x.kind == k)
            out.append(Finding("only in doc", f"kind::{k}", None, file, where_doc(k), section,
                               detail=f"specs/ has no .kind::{k}; the document gives {n} tuples "
                                      "(A/B types taken as independent)"))
    common = set(spec.kinds) & set(doc_kinds)

    def groups(ts):
        g = defaultdict(set)
        for x in ts:
            if x.kind in common:
                g[(x.kind, x.ws, x.cta_group, x.sparsity, x.dtype)].add(x)
        return g

    gs, gd = groups(mine), groups(doc)
    combos_s = {key[:4] for key in gs}
    combos_d = {key[:4] for key in gd}
    doc_invalid = {(r.kind, r.ws, cg, sp): r.line for r in parsed.rows if r.invalid
                   for cg in r.cta_groups for sp in r.sparsities}
    for key in sorted(set(gs) | set(gd), key=lambda k: (list(spec.kinds).index(k[0]), k[1:])):
        kind, ws, cta, sp, dt = key
        name = group_name(*key)
        line = where_doc(kind, ws, cta, sp, dt) or where_doc(kind, ws, cta, sp)
        if key not in gd and key[:4] in parsed.unread:
            continue  # the document's row for it could not be read: reported as unparseable, not as missing
        if key not in gd:
            if key[:4] not in combos_d:
                why = (f"the document marks it Invalid (line {doc_invalid[key[:4]]})" if key[:4] in doc_invalid
                       else "the document has no row for it")
            else:
                why = f"the document gives dtype {_fmt({k[4] for k in gd if k[:4] == key[:4]})} here"
            out.append(Finding("only in specs", name, None, file, doc_invalid.get(key[:4], line), section,
                               detail=f"specs/ allows {len(gs[key])} tuples ({where_spec(kind, ws, cta, sp)}); {why}"))
            continue
        if key not in gs:
            reason = spec.combo_reason(kind, ws, cta, sp) if key[:4] not in combos_s else (
                f"specs/ gives dtype {_fmt({k[4] for k in gs if k[:4] == key[:4]})} here")
            out.append(Finding("only in doc", name, None, file, line, section,
                               detail=f"the document allows {len(gd[key])} tuples; {reason or 'specs/ has none'}"))
            continue
        a, b = gs[key], gd[key]
        if a == b:
            continue
        diffs, parts = [], []
        for dim, proj in _DIMS.items():
            pa, pb = {proj(x) for x in a}, {proj(x) for x in b}
            if pa == pb or (dim == "MxK" and diffs):
                continue
            extra = [f"{_fmt(pa - pb)} only in specs" if pa - pb else "", f"{_fmt(pb - pa)} only in doc" if pb - pa else ""]
            diffs.append({"field": dim, "specs": sorted(pa), "doc": sorted(pb)})
            parts.append(f"{dim} {_fmt(pa)} in specs, {_fmt(pb)} in doc ({'; '.join(e for e in extra if e)})")
        if not diffs:  # same projections, different combinations: list some tuples
            sa, sb = sorted(a - b), sorted(b - a)
            diffs.append({"field": "tuples", "specs": [str(x) for x in sa[:20]], "doc": [str(x) for x in sb[:20]]})
            parts.append(f"{len(sa)} tuples only in specs (e.g. {sa[0] if sa else '-'}), "
                         f"{len(sb)} only in doc (e.g. {sb[0] if sb else '-'})")
        out.append(Finding("changed", name, None, file, line, section,
                           detail="; ".join(parts) + f" ({where_spec(kind, ws, cta, sp)})", differences=diffs))
    if not out:
        out.append(Finding("same", subject, None, file, t.line, section,
                           detail=f"{len(t.rows)} rows read as {len(doc)} valid (kind, .ws, cta_group, sparsity, dtype, "
                                  f"atype, btype, scale, M, N, K) tuples, the same set specs/ enumerates"
                                  + "".join(f"; K = {k} only on {_fmt(v[1])} in both" for k, v in sorted(notes.items()))))
    return out


def _groups(parsed: ParsedTable) -> dict[tuple, dict[str, set]]:
    """(kind, .ws, cta_group, sparsity, dtype) -> the A/B types, scales, M, N and K values its rows allow
    (``Invalid`` rows as an empty group), read from the document alone: no spec is consulted."""
    out: dict[tuple, dict[str, set]] = {}
    for r in parsed.rows:
        for cta in r.cta_groups:
            for sp in r.sparsities:
                g = out.setdefault((r.kind, r.ws, cta, sp, r.dtype), {d: set() for d in ("atype/btype", "scale", "M", "N", "K")})
                if r.invalid:
                    continue
                g["atype/btype"].update(f".{t}" for t in r.ab)
                g["scale"].update(f".{t}" for t in parsed.scales.get(r.index, ()))
                g["M"].update(r.M)
                g["N"].update(r.N)
                g["K"].update(r.K)
    return out


def compare_tables(old: DocTable, new: DocTable, file: str, section: str | None) -> list[Finding]:
    """``--base`` for the kind/shape table: groups new, gone, and changed in any of their A/B types, scales,
    M, N or K, between two renderings of it (Table 39 in ISA 9.0-9.2, Table 48 in 9.4: matched by columns)."""
    a, b = parse_rows(old), parse_rows(new)
    out = [Finding("unparseable", f"Table {new.number} ({new.caption})", None, file, line, section, detail=why)
           for line, why in b.problems]
    ga, gb = _groups(a), _groups(b)
    for key in sorted(set(ga) | set(gb), key=lambda k: (k[0], k[1], k[2], k[3], k[4] or "")):
        name = group_name(*key)
        line = next((r.line for r in b.rows if (r.kind, r.ws, r.dtype) == (key[0], key[1], key[4])
                     and key[2] in r.cta_groups and key[3] in r.sparsities), None)
        if key not in gb and key[:4] in b.unread:
            continue  # its row could not be read: reported as unparseable above, not as gone
        if key not in gb:
            out.append(Finding("removed", name, None, file, None, section, detail=f"in {old.caption!r} (Table {old.number}), gone"))
        elif key not in ga:
            what = "Invalid" if not any(gb[key].values()) else "; ".join(
                f"{d} {_fmt(v)}" for d, v in gb[key].items() if v)
            out.append(Finding("added", name, None, file, line, section, detail=f"new: {what}"))
        elif ga[key] != gb[key]:
            parts, diffs = [], []
            for d in ga[key]:
                va, vb = ga[key][d], gb[key][d]
                if va != vb:
                    parts.append(f"{d} {_fmt(va)} -> {_fmt(vb)}")
                    diffs.append({"field": d, "specs": sorted(map(str, va)), "doc": sorted(map(str, vb))})
            out.append(Finding("changed", name, None, file, line, section, detail="; ".join(parts),
                               differences=diffs, sides=("base", "new")))
        else:
            out.append(Finding("same", name, None, file, line, section))
    return out
