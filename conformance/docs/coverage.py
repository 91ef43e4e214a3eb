"""Coverage, kept apart from differences: what specs/ has that a document simply does not talk about.

An excerpt of the ISA (one section, one operand, a tutorial's paragraph) is not
wrong about what it leaves out, so a spec operand with no formula in the
document is ``not covered`` -- reported, never counted as a difference.  It is
``only in specs`` (a difference) only where the document itself lists that type
for that operand in a fragment table and then gives no formula for it.  What a
new ISA version drops is found by comparing it with the previous version
(:mod:`.versions`), not with specs/.
"""

from __future__ import annotations

import re
from collections import defaultdict

from ptxconf.isa.model import Variant

from .findings import Finding
from .model import Extraction, shape_matches

__all__ = ["uncovered", "summary"]


def _shape(v: Variant) -> str | None:
    try:
        m, n, k = v.shape
    except ValueError:
        return None
    return f"m{m}n{n}k{k}"


def _listed(ex: Extraction, v: Variant, operand: str):
    """The fragment-table rows of this document that list ``operand``'s type for ``v``'s shape and family."""
    t = v.operands[operand].type.name
    shapes = {s.number: s.shape for s in ex.sections if s.family == v.family}
    if not ex.sections:
        shapes[""] = next((x.shape for x in ex.layouts), None)
    return [fr for fr in ex.fragments if operand in fr.operands and t in fr.types and shape_matches(shapes.get(fr.section), _shape(v))]


def uncovered(ex: Extraction, v: Variant, operand: str, section: str) -> Finding:
    """The finding for a spec operand inside the document's shapes for which it gives no formula."""
    op = v.operands[operand]
    rows = _listed(ex, v, operand)
    if rows:
        return Finding("only in specs", v.id, operand, ex.file, rows[0].line, rows[0].section or None,
                       detail=f"the document lists .{op.type.name} for {'/'.join(rows[0].operands)} (line {rows[0].line}) "
                              f"but no formula of it applies; specs/ has {op.layout.name} ({v.file}:{v.line})")
    return Finding("not covered", v.id, operand, ex.file, None, section or None,
                   detail=f"the document covers {_shape(v)} but says nothing of .{op.type.name} {operand}: "
                          f"not compared (specs/: {op.layout.name})")


def summary(findings: list[Finding], specs_variants: dict) -> list[str]:
    """Text lines: per shape, which operands were compared and which the document leaves out."""
    compared: dict[str, set[str]] = defaultdict(set)
    left: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for f in findings:
        v = specs_variants.get(f.subject)
        if v is None or f.operand is None:
            continue
        shape = _shape(v) or "?"
        if f.status == "not covered":
            left[shape][f".{v.operands[f.operand].type.name} {f.operand}"].add(v.id)
        elif f.status != "note":
            compared[shape].add(f.operand)
    out = []
    for shape in sorted(set(compared) | set(left)):
        done = "".join(sorted(compared.get(shape, ())))
        gaps = ", ".join(f"{k} ({len(ids)} variants)" for k, ids in sorted(left.get(shape, {}).items()))
        out.append(f"coverage {shape}: compared {done or 'nothing'}" + (f"; not covered: {gaps}" if gaps else ""))
    return _by_n(out)


def _by_n(lines: list[str]) -> list[str]:
    """Lines that differ only in a shape's N (a warpgroup's m64nNk16 family) as one line naming the Ns."""
    groups: dict[str, list[int]] = defaultdict(list)
    order: list[str] = []
    for line in lines:
        m = re.match(r"^coverage m(\d+)n(\d+)k(\d+):(.*)$", line)
        key = f"coverage m{m.group(1)}nNk{m.group(3)}:{m.group(4)}" if m else line
        if key not in groups:
            order.append(key)
        groups[key].append(int(m.group(2)) if m else 0)
    out = []
    for key in order:
        ns = groups[key]
        if len(ns) > 3:
            out.append(key.replace(":", f" (N = {', '.join(map(str, sorted(ns)))}):", 1))
        else:
            out += [key.replace("nNk", f"n{n}k", 1) if n else key for n in ns]
    return out
