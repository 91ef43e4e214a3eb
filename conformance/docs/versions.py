"""``doc-diff --base OLD NEW``: what changed in the matrix tables between two renderings of the ISA.

Both documents go through the same readers and extraction, then are keyed by
meaning -- (family, shape, operand, orientation, type) -- never by section or
figure number, which shift between ISA versions.  Reported: shapes, types and
fragment-table rows that are new or gone, rows whose registers or elements
changed, and formulas whose lane map changed (the (lane, element) cells that
moved), whatever the text of the formula looks like.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
from ptxconf.isa import ExprError, parse
from ptxconf.isa.expr import evaluate

from .findings import Finding
from .model import ISA_BINDINGS, DocFragment, DocLayout, Extraction

__all__ = ["VERSION_STATUSES", "compare_versions", "layout_key", "version_map"]

VERSION_STATUSES = ("same", "changed", "added", "removed", "unparseable")
_Key = tuple[str, str, str, str, str]  # family, shape, operand, orientation, type


@dataclass
class _Side:
    ex: Extraction
    layouts: dict[_Key, DocLayout]
    rows: dict[tuple[str, str, str, str], DocFragment]  # family, shape, operand, type

    @property
    def shapes(self) -> set[tuple[str, str]]:
        return {(k[0], k[1]) for k in self.layouts} | {(k[0], k[1]) for k in self.rows}


def _section_shape(ex: Extraction) -> dict[str, tuple[str | None, str | None]]:
    return {s.number: (s.shape, s.family) for s in ex.sections}


def layout_key(lay: DocLayout, operand: str, t: str) -> _Key:
    return (lay.family, lay.shape or "?", operand, lay.orientation or "", t)


def _side(ex: Extraction) -> _Side:
    layouts: dict[_Key, DocLayout] = {}
    for lay in ex.layouts:
        for op in lay.operands:
            for t in lay.types or ("*",):
                layouts.setdefault(layout_key(lay, op, t), lay)
    rows: dict[tuple[str, str, str, str], DocFragment] = {}
    where = _section_shape(ex)
    fallback = next((x.shape for x in ex.layouts if x.shape), None)
    for fr in ex.fragments:
        shape, family = where.get(fr.section, (None, None))
        lay_family = next((x.family for x in ex.layouts if x.section == fr.section), None)
        for op in fr.operands:
            for t in fr.types:
                rows.setdefault((family or lay_family or "mma.sync", shape or fallback or "?", op, t), fr)
    return _Side(ex, layouts, rows)


def _elements(lay: DocLayout) -> int:
    for f in (lay.row, lay.col):
        if f is not None and f.domain:
            return len(f.domain)
    return lay.elements or 1


def version_map(lay: DocLayout, elements: int, lanes: int = 32) -> np.ndarray:
    """``int64[lane, element, k]``: what a layout's formulas give per lane and element -- (computation, row,
    col), or (row, firstcol, lastcol) for a sparse A range."""
    env: dict[str, object] = {k: parse(v) for k, v in {**ISA_BINDINGS, **lay.bindings}.items()}
    for f in (lay.row, lay.col):
        if f is not None:
            env.update({k: parse(v) for k, v in f.lets.items()})
    env["%laneid"] = np.arange(lanes, dtype=np.int64)[:, None]
    env["i"] = np.arange(elements, dtype=np.int64)[None, :]
    shape = (lanes, elements)
    assert lay.row is not None and lay.col is not None
    exprs = [lay.row.expr, *(lay.col.bounds or ())] if lay.col.kind == "range" else [lay.row.expr, lay.col.expr]
    if any(e is None for e in exprs):
        raise ExprError("formula not translated")
    planes = [np.broadcast_to(evaluate(parse(e), env), shape) for e in exprs]
    if lay.computations is not None:
        planes.insert(0, np.broadcast_to(np.asarray(lay.computations, dtype=np.int64)[:, None], shape))
    return np.stack(planes, axis=-1)


def _name(key: _Key) -> str:
    family, shape, _, orient, t = key
    return f"{shape}{'.sp' if family == 'mma.sp' else ''} .{t}" + (f" {orient}-major" if orient else "")


def _compare_layouts(key: _Key, a: DocLayout, b: DocLayout, file: str) -> Finding:
    base = dict(subject=_name(key), operand=key[2], file=file, line=b.line, section=b.section or None)
    broken = [f"{f.field}: {f.error}" for f in (b.row, b.col) if f is not None and f.error]
    if broken and " ".join(_formula_text(a).split()) == " ".join(_formula_text(b).split()):
        return Finding("same", detail=f"unchanged text, unreadable in both ({'; '.join(broken)})", **base)
    if b.row is None or b.col is None or broken:
        return Finding("unparseable", detail="; ".join(broken) or "the new document gives only half a formula", **base)
    n = max(_elements(a), _elements(b))
    if _elements(a) != _elements(b):
        return Finding("changed", detail=f"elements per lane {_elements(a)} -> {_elements(b)}", **base)
    try:
        ma, mb = version_map(a, n), version_map(b, n)
    except (ExprError, AssertionError) as exc:
        return Finding("unparseable", detail=f"cannot evaluate: {exc}", **base)
    if ma.shape != mb.shape:
        return Finding("changed", detail="the formulas changed kind (map <-> range, or computations)", **base)
    mask = np.any(ma != mb, axis=-1)
    if not mask.any():
        return Finding("same", **base)
    cells = [{"lane": int(x), "element": int(y), "specs": [int(v) for v in ma[x, y]], "doc": [int(v) for v in mb[x, y]]}
             for x, y in zip(*np.nonzero(mask))]
    moved = [f.field for f, k in ((b.row, -2), (b.col, -1)) if f is not None and np.any(ma[..., k] != mb[..., k])]
    return Finding("changed", detail=f"{len(cells)} of {mask.size} (lane, element) cells moved ({', '.join(moved) or 'map'}); "
                                     f"base: {_formula_text(a)}; new: {_formula_text(b)} (shown as base/new below)",
                   differences=cells, sides=("base", "new"), **base)


def _formula_text(lay: DocLayout) -> str:
    texts = [(f.field, re.sub(r"^\w+\s*=\s*", "", f.isa_text.strip())) for f in (lay.row, lay.col) if f is not None]
    return "; ".join(f"{field} = {text}" for field, text in texts)


def compare_versions(old: Extraction, new: Extraction) -> list[Finding]:
    """Findings of NEW against OLD; ``same`` for each formula whose lane map did not move."""
    a, b = _side(old), _side(new)
    out: list[Finding] = []
    for fam, shape in sorted(b.shapes - a.shapes):
        out.append(Finding("added", f"{shape}{'.sp' if fam == 'mma.sp' else ''}", None, new.file, None, None,
                           detail=f"new shape ({fam}) not in {old.file}"))
    for fam, shape in sorted(a.shapes - b.shapes):
        out.append(Finding("removed", f"{shape}{'.sp' if fam == 'mma.sp' else ''}", None, new.file, None, None,
                           detail=f"shape ({fam}) in {old.file} is gone"))
    common = a.shapes & b.shapes
    for key in sorted(set(a.rows) | set(b.rows)):
        if key[:2] not in common:
            continue
        ra, rb = a.rows.get(key), b.rows.get(key)
        name = f"{key[1]}{'.sp' if key[0] == 'mma.sp' else ''} .{key[3]} table row"
        if rb is None:
            out.append(Finding("removed", name, key[2], new.file, None, ra.section or None,  # type: ignore[union-attr]
                               detail=f"fragment-table row .{key[3]} of {key[2]} gone (base line {ra.line})"))  # type: ignore[union-attr]
        elif ra is None:
            out.append(Finding("added", name, key[2], new.file, rb.line, rb.section or None,
                               detail=f"new fragment-table row: {rb.text}"))
        else:
            was = (ra.registers, ra.register, ra.per_register, len(ra.elements) or None)
            now = (rb.registers, rb.register, rb.per_register, len(rb.elements) or None)
            if was != now:
                out.append(Finding("changed", name, key[2], new.file, rb.line, rb.section or None,
                                   detail=f"(registers, register, per register, elements) {was} -> {now}"))
    out += _tables(old, new)
    for key in sorted(set(a.layouts) | set(b.layouts)):
        if key[:2] not in common:
            continue
        la, lb = a.layouts.get(key), b.layouts.get(key)
        if lb is None:
            out.append(Finding("removed", _name(key), key[2], new.file, None, la.section or None,  # type: ignore[union-attr]
                               detail=f"no formula for it any more (base line {la.line})"))  # type: ignore[union-attr]
        elif la is None:
            out.append(Finding("added", _name(key), key[2], new.file, lb.line, lb.section or None,
                               detail=f"new formula: {_formula_text(lb)}"))
        else:
            out.append(_compare_layouts(key, la, lb, new.file))
    return out


def _tables(old: Extraction, new: Extraction) -> list[Finding]:
    """The tcgen05 kind/shape table of both renderings, matched by its columns (never its number), by group."""
    from .table39 import compare_tables, is_kind_table

    olds = [t for t in old.tables if is_kind_table(t)]
    out: list[Finding] = []
    for t in (t for t in new.tables if is_kind_table(t)):
        if olds:
            section = next((s.number for s in new.sections if s.line <= t.line), None)
            out += compare_tables(olds[0], t, new.file, section)
    return out
