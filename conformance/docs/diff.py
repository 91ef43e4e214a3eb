"""Compare what a document says with specs/, by meaning: lane maps, not text.

Each doc formula pair is evaluated to a ``[lane, element] -> (row, col)`` map
(plus the MMA computation index where the document's table gives one) and
compared with ``Layout.map()`` of every spec variant operand it applies to.
Statuses: ``same``, ``changed`` (with the lanes/elements that differ),
``only in doc``, ``only in specs`` (only within the shapes/types the document
covers), ``unparseable`` (line and why; matched against the errata specs/
records), ``note`` (said without a formula -- drawn only, metadata figures --
so not compared; never a difference).

A section is compared only with variants of its family (:mod:`.family`).  Sparse
A (``mma.sp``) is compared by meaning: the document's ``row`` per element and its
``col = [firstcol ... lastcol]`` range against the spec's compressed A layout and
:func:`ptxconf.isa.sparse.dense_ranges`.  "Matrix fragments for B/C/D are the
same as ..." is resolved to the dense variants it names and compared by map.  The tcgen05.mma kind/shape table (ISA Table 39) is compared as a set of
valid tuples with specs/tcgen05.yaml (:mod:`.table39`).
"""

from __future__ import annotations

import re

import numpy as np
from ptxconf.families.tcgen05.spec import Tcgen05Spec
from ptxconf.isa import ExprError, Specs, parse
from ptxconf.isa.expr import evaluate
from ptxconf.isa.model import Layout, Variant
from ptxconf.isa.sparse import dense_ranges, sparsity

from . import table39
from .coverage import uncovered
from .family import DENSE, SPARSE
from .findings import STATUSES, Finding
from .formula import DocFormula
from .model import ISA_BINDINGS, DocLayout, DocMention, Extraction, shape_matches
from .model import SHAPE as _SHAPE

__all__ = ["Finding", "STATUSES", "diff", "doc_map", "applies"]

def _is_sparse(v: Variant) -> bool:
    return v.family == SPARSE


_SHAPES: dict[str, str | None] = {}  # variant id -> "m16n8k16" (Variant.shape re-reads the instruction each call)


def _shape(v: Variant) -> str | None:
    if v.id not in _SHAPES:
        try:
            m, n, k = v.shape
            _SHAPES[v.id] = f"m{m}n{n}k{k}"
        except ValueError:
            _SHAPES[v.id] = None
    return _SHAPES[v.id]


def applies(lay: DocLayout, v: Variant, operand: str) -> bool:
    """Whether a doc layout describes this spec operand (family, shape, type, .row/.col)."""
    if operand not in lay.operands or operand not in v.operands:
        return False
    if not shape_matches(lay.shape, _shape(v)) or lay.family != v.family:
        return False
    if lay.types and v.operands[operand].type.name not in lay.types:
        return False
    if lay.orientation and operand in ("A", "B"):
        orient = v.instruction.layouts
        if len(orient) == 2 and orient["AB".index(operand)] != lay.orientation:
            return False
    return True


def _doc_env(lay: DocLayout, elements: int, lanes: int) -> dict[str, object]:
    env: dict[str, object] = {k: parse(v) for k, v in {**ISA_BINDINGS, **lay.bindings}.items()}
    for f in (lay.row, lay.col):
        assert f is not None
        env.update({k: parse(v) for k, v in f.lets.items()})
    env["%laneid"] = np.arange(lanes, dtype=np.int64)[:, None]
    env["i"] = np.arange(elements, dtype=np.int64)[None, :]
    return env


def doc_map(lay: DocLayout, elements: int, lanes: int = 32) -> np.ndarray:
    """``int64[lane, element, 3]``: (computation, row, col) as the document's formulas give them."""
    assert lay.row is not None and lay.row.expr is not None and lay.col is not None and lay.col.expr is not None
    env = _doc_env(lay, elements, lanes)
    shape = (lanes, elements)
    comp = np.zeros(shape, dtype=np.int64)
    if lay.computations is not None:
        comp = np.broadcast_to(np.asarray(lay.computations, dtype=np.int64)[:, None], shape)
    row = np.broadcast_to(evaluate(parse(lay.row.expr), env), shape)
    col = np.broadcast_to(evaluate(parse(lay.col.expr), env), shape)
    return np.stack([comp, row, col], axis=-1)


def _norm(text: str) -> str:
    return re.sub(r"[\s()]+|otherwise", "", text.lower())


def _erratum(lay: Layout, f: DocFormula, lines: dict[int, str]) -> dict | None:
    """The errata entry of ``lay`` whose ISA text the document's failing (or changed) line repeats."""
    candidates = [lines.get(f.error_line or -1, "")] if f.error else []
    candidates += [part for part in f.isa_text.split(" / ")]
    for err in lay.errata:
        known = _norm(err["isa_text"])
        for c in candidates:
            c = _norm(re.sub(r"^(row|col)\s*=", "", c.strip()))
            if len(c) >= 8 and c in known:
                return dict(err)
    return None


def _formulas(lay: DocLayout) -> dict:
    return {f.field: {"isa": f.isa_text, "expr": f.expr, **({"where": f.lets} if f.lets else {})}
            for f in (lay.row, lay.col) if f is not None}


def _compare(ex: Extraction, lay: DocLayout, v: Variant, operand: str, lines: dict[int, str]) -> Finding:
    op = v.operands[operand]
    base = dict(subject=v.id, operand=operand, file=ex.file, line=lay.line, section=lay.section,
                doc_formulas=_formulas(lay), spec_layout=op.layout.name)
    missing = [fld for fld in ("row", "col") if getattr(lay, fld) is None]
    if missing:
        return Finding("unparseable", detail=f"the document gives no '{missing[0]} =' formula here", **base)
    for f in (lay.row, lay.col):
        if f.kind == "range" and not (f.field == "col" and operand == "A" and _is_sparse(v)):
            return Finding("unparseable", detail=f"{f.field} is a range ({f.isa_text!r}), not a lane map", **base)
        if f.error:
            base["line"] = f.error_line or f.line
            why = f"{f.field}: {f.error}"
            if f.suspected_erratum:
                why += " (suspected doc erratum)"
            return Finding("unparseable", detail=why, erratum=_erratum(op.layout, f, lines), **base)
    if op.params:
        return Finding("unparseable", detail=f"specs/ layout {op.layout.name} takes parameters; not compared", **base)
    n_spec = op.layout.elements
    n_doc = lay.elements or (lay.col.domain and len(lay.col.domain)) or (lay.row.domain and len(lay.row.domain)) or n_spec
    if n_doc != n_spec:
        return Finding("changed", detail=f"the document gives {n_doc} elements per lane, specs/ {n_spec}", **base)
    if lay.col.kind == "range":
        return _compare_sparse_a(lay, v, lines, base)
    spec = op.layout.map()
    try:
        doc = doc_map(lay, n_doc, op.layout.lanes)
    except ExprError as exc:
        return Finding("unparseable", detail=f"cannot evaluate: {exc}", **base)
    axes = [1, 2] if lay.computations is None or op.layout.matrices == 1 else [0, 1, 2]
    held = spec[..., 1] >= 0
    diff_mask = np.any(spec[..., axes] != doc[..., axes], axis=-1) | ~held
    if not diff_mask.any():
        return Finding("same", **base)
    cells = [{"lane": int(a), "element": int(b), "specs": [int(x) for x in spec[a, b, axes]],
              "doc": [int(x) for x in doc[a, b, axes]]} for a, b in zip(*np.nonzero(diff_mask))]
    elems = sorted({c["element"] for c in cells})
    lanes = sorted({c["lane"] for c in cells})
    names = "(computation, row, col)" if len(axes) == 3 else "(row, col)"
    detail = (f"{len(cells)} of {diff_mask.size} (lane, element) pairs map elsewhere {names}: "
              f"elements {_ranges(elems)} in lanes {_ranges(lanes)}")
    worst = lay.row if np.any(spec[..., 1] != doc[..., 1]) else lay.col
    return Finding("changed", detail=detail, differences=cells, erratum=_erratum(op.layout, worst, lines), **base)


def _compare_sparse_a(lay: DocLayout, v: Variant, lines: dict[int, str], base: dict) -> Finding:
    """Sparse A by meaning: the doc's row per (lane, element) and its dense range ``[first, last]``.

    specs/ gives the compressed A layout (row, compressed col); the range the stored
    element may occupy in the dense A comes from the variant's sparsity
    (:func:`ptxconf.isa.sparse.dense_ranges`); the metadata picks the column.
    """
    op = v.operands["A"]
    assert lay.row is not None and lay.col is not None and lay.col.bounds is not None
    sp = sparsity(v)
    n = op.layout.elements
    try:
        env = _doc_env(lay, n, op.layout.lanes)
        shape = (op.layout.lanes, n)
        doc = np.stack([np.broadcast_to(evaluate(parse(e), env), shape)
                        for e in (lay.row.expr, *lay.col.bounds)], axis=-1)
    except ExprError as exc:
        return Finding("unparseable", detail=f"cannot evaluate: {exc}", **base)
    amap = op.layout.default_map
    spec = np.concatenate([amap[..., 1:2], dense_ranges(v)], axis=-1)  # (row, first, last)
    how = (f"compressed A {op.layout.name}, {sp.nz} of every {sp.width} dense columns stored, "
           f"range = the chunks of the element's register ({op.fragment.per_register} per register)")
    diff_mask = np.any(spec != doc, axis=-1) | (amap[..., 1] < 0)
    if not diff_mask.any():
        return Finding("same", detail=f"row and [firstcol ... lastcol] agree with {how}", **base)
    cells = [{"lane": int(a), "element": int(b), "specs": [int(x) for x in spec[a, b]],
              "doc": [int(x) for x in doc[a, b]]} for a, b in zip(*np.nonzero(diff_mask))]
    elems = sorted({c["element"] for c in cells})
    lanes = sorted({c["lane"] for c in cells})
    fields = [name for k, name in enumerate(("row", "firstcol", "lastcol")) if np.any(spec[..., k] != doc[..., k])]
    detail = (f"{len(cells)} of {diff_mask.size} (lane, element) pairs differ in {', '.join(fields)} "
              f"(shown as (row, firstcol, lastcol)): elements {_ranges(elems)} in lanes {_ranges(lanes)}; specs/: {how}")
    worst = lay.row if "row" in fields else lay.col
    return Finding("changed", detail=detail, differences=cells, erratum=_erratum(op.layout, worst, lines), **base)


def _section_types(ex: Extraction, section: str) -> set[str]:
    """Types a section covers: those its fragment tables and formulas name; its title's only where it has
    neither (a title such as "... with .u8/.s8 type" may name fewer types than its tables list)."""
    found = {t for f in ex.fragments if f.section == section for t in f.types}
    found |= {t for x in ex.layouts if x.section == section for t in (x.types or ())}
    return found or {t for s in ex.sections if s.number == section for t in s.types}


def _mentions(ex: Extraction, v: Variant, operand: str) -> list[DocMention]:
    """What the document says of this variant operand without a formula (figures, references)."""
    a = v.operands.get("A")
    out = []
    for m in ex.mentions:
        if operand not in m.operands or m.family != v.family or not shape_matches(m.shape, _shape(v)):
            continue
        types = _section_types(ex, m.section)
        if types and a is not None and a.type.name not in types:
            continue
        if m.kind == "figure" and any(x.section == m.section and operand in x.operands for x in ex.layouts):
            continue  # the section's formula for this operand is for other types: silence, not a drawing
        out.append(m)
    return out


def _by_reference(ex: Extraction, m: DocMention, v: Variant, operand: str, specs: Specs) -> Finding:
    """ "the same as <dense section>": the dense variants it names must map this operand as ``v`` does."""
    op = v.operands[operand]
    shape_m = _SHAPE.search(m.text)
    shape = shape_m.group(0) if shape_m else _shape(v)
    base = dict(subject=v.id, operand=operand, file=ex.file, line=m.line, section=m.section or None,
                spec_layout=op.layout.name)
    dense = [d for d in specs.variants.values()
             if d.family == DENSE and _shape(d) == shape and operand in d.operands
             and d.operands[operand].type.name == op.type.name
             and (operand not in ("A", "B") or d.instruction.layouts == v.instruction.layouts)]
    ref = f"by reference to {m.text!r}"
    if not dense:
        return Finding("note", detail=f"{ref}: specs/ has no dense {shape} {operand} .{op.type.name} to resolve it; "
                                      "not compared", **base)
    names = sorted({d.operands[operand].layout.name for d in dense})
    bad = sorted({d.operands[operand].layout.name for d in dense
                  if not np.array_equal(d.operands[operand].layout.default_map, op.layout.default_map)})
    if bad:
        return Finding("changed", detail=f"{ref}: dense {shape} .{op.type.name} uses {', '.join(bad)}, "
                                         f"specs/ gives {v.id} {op.layout.name}", **base)
    return Finding("same", detail=f"{ref}: dense mma {shape} .{op.type.name} uses {', '.join(names)}", **base)


def _ranges(xs: list[int]) -> str:
    out, k = [], 0
    while k < len(xs):
        j = k
        while j + 1 < len(xs) and xs[j + 1] == xs[j] + 1:
            j += 1
        out.append(str(xs[k]) if j == k else f"{xs[k]}-{xs[j]}")
        k = j + 1
    return ", ".join(out)


def _covers(ex: Extraction, v: Variant) -> str | None:
    """The section of the document whose heading covers this variant's shape/type group, if any."""
    a = v.operands.get("A")
    for sec in ex.sections:
        if shape_matches(sec.shape, _shape(v)) and sec.family == v.family and (not sec.types or (a and a.type.name in set(sec.types) | _section_types(ex, sec.number))):
            return sec.number
    for lay in ex.layouts:  # a document without headings covers what its formulas name
        if not lay.section and "A" in lay.operands and shape_matches(lay.shape, _shape(v)) and lay.family == v.family and (
            not lay.types or (a and a.type.name in lay.types)
        ):
            return ""
    return None


def _layout_names(names: set[str]) -> str:
    """Layout names, those that differ only in a parameter (``D.m64nN[N=8]``...) once with the count."""
    groups: dict[str, int] = {}
    for n in names:
        key = re.sub(r"\[(\w+)=[^\]]*\]", r"[\1]", n)
        groups[key] = groups.get(key, 0) + 1
    return ", ".join(k if c == 1 else f"{k} ({c} values)" for k, c in sorted(groups.items()))


def _figure_key(text: str) -> int:
    m = re.search(r"\d+", text)
    return int(m.group()) if m else 0


def _section_at(lines: dict[int, str], line: int) -> str | None:
    """The number of the last numbered heading above ``line`` ("9.7.16.2.1. Matrix Shape" -> "9.7.16.2.1")."""
    for n in sorted((n for n in lines if n < line), reverse=True):
        m = re.match(r"^\s*(\d+(?:\.\d+)+)\.\s+\S", lines[n])
        if m:
            return m.group(1)
    return None


def diff(ex: Extraction, specs: Specs, lines: dict[int, str] | None = None) -> list[Finding]:
    lines = lines or {}
    out: list[Finding] = []
    used: set[int] = set()
    drawn: dict[tuple[str, str], tuple[set[str], set[str], set[str]]] = {}  # (section, operand) -> figures, layouts, ids
    for v in specs.variants.values():
        for operand in ("A", "B", "C", "D"):
            if operand not in v.operands:
                continue
            hits = sorted((k for k, lay in enumerate(ex.layouts) if applies(lay, v, operand)),
                          key=lambda k: ex.layouts[k].types is None)  # a layout naming the type before a catch-all
            if hits:
                used.update(hits)
                out.append(_compare(ex, ex.layouts[hits[0]], v, operand, lines))
                continue
            said = _mentions(ex, v, operand)
            refs = [m for m in said if m.kind == "reference"]
            if refs:
                out.append(_by_reference(ex, refs[0], v, operand, specs))
                continue
            figs = [m for m in said if m.kind == "figure"]
            if figs:
                figures, names, ids = drawn.setdefault((figs[0].section, operand), (set(), set(), set()))
                figures.update(m.text for m in figs)
                names.add(v.operands[operand].layout.name)
                ids.add(v.id)
                continue
            sec = _covers(ex, v)
            if sec is not None:
                out.append(uncovered(ex, v, operand, sec))
    for (section, operand), (figures, names, ids) in drawn.items():
        shape = next((m.shape for m in ex.mentions if m.section == section), None)
        sparse = any(m.section == section and m.family == SPARSE for m in ex.mentions)
        out.append(Finding("note", f"{shape}{'.sp' if sparse else ''}", operand, ex.file, None, section or None,
                           detail=f"drawn only ({', '.join(sorted(figures, key=_figure_key))}), no formula: not compared; "
                                  f"specs/ takes {_layout_names(names)} ({len(ids)} variants)"))
    meta = [m for m in ex.mentions if "metadata" in m.operands and m.family == SPARSE]
    if meta:
        figs = sorted({m.text for m in meta}, key=_figure_key)
        out.append(Finding("note", SPARSE, "metadata", ex.file, meta[0].line, None,
                           detail=f"sparsity metadata is given by figures only ({', '.join(figs)}) in "
                                  f"{len({m.section for m in meta})} sections: not compared"))
    for lay in ex.layouts:
        for t in lay.types or ():
            for orient in ([lay.orientation] if lay.orientation else [None]):
                exists = any(
                    applies(DocLayout(lay.section, lay.shape, lay.family, (o,), orient, (t,), None, None, 0), v, o)
                    for v in specs.variants.values() for o in lay.operands
                )
                if not exists:
                    what = f"{lay.shape}{'.sp' if lay.sparse else ''} {'/'.join(lay.operands)}{'.' + orient if orient else ''} .{t}"
                    kinds = [f"{f.field} is a range {f.isa_text!r}" for f in (lay.row, lay.col) if f and f.kind == "range"]
                    errs = [f"{f.field} unparseable (line {f.error_line}): {f.error}" for f in (lay.row, lay.col) if f and f.error]
                    detail = "no variant in specs/ has this operand type" + (" (sparse)" if lay.sparse else "")
                    if kinds or errs:
                        detail += "; " + "; ".join(kinds + errs)
                    out.append(Finding("only in doc", what, None, ex.file, lay.line, lay.section or None,
                                       detail=detail, doc_formulas=_formulas(lay)))
    spec39 = next((d for d in specs.documents.values() if isinstance(d, Tcgen05Spec)), None)
    for t in ex.tables:
        if spec39 is not None and table39.is_kind_table(t):
            out += table39.compare(t, spec39, ex.file, _section_at(lines, t.line), lines)
            continue
        instr = re.search(r"\b(tcgen05\.mma|wgmma\.\w+|mma\.sp|mma)\b", " ".join(lines.values()))
        fam = instr.group(1) if instr else None
        have = fam and any(v.family.startswith(fam.split(".")[0]) and v.id.startswith(fam) for v in specs.variants.values())
        if not have:
            out.append(Finding("only in doc", f"Table {t.number} ({t.caption})", None, ex.file, t.line, None,
                               detail=f"{len(t.rows)} rows x {len(t.header)} columns ({', '.join(t.header)}); "
                                      f"specs/ has no {fam or 'matching'} variants to compare them with"))
        else:
            out.append(Finding("same", f"Table {t.number} ({t.caption})", None, ex.file, t.line, None,
                               detail=f"{len(t.rows)} rows extracted; shape-table comparison with specs/ is not implemented"))
    return out
