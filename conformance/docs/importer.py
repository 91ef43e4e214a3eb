"""Draft YAML for what the document has and specs/ lacks, in specs/' own format.

A new ISA version becomes a review, not a retyping: each doc layout whose
operand type no spec variant has becomes a ``layouts:`` entry (the document's
formulas, translated), and a variant group is drafted from the nearest spec
variant of the same shape with that operand's type replaced.  Versions and
targets are copied from that sibling and flagged in ``notes`` for review.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from ptxconf.isa import TYPES, Specs, load_file
from ptxconf.isa.model import Variant

from .diff import _shape, applies, diff
from .extract import ISA_BINDINGS, DocLayout, Extraction

__all__ = ["draft", "write_draft"]

_ORDER = ("D", "A", "B", "C")  # mma's type suffixes: .dtype.atype.btype.ctype


def _layout_yaml(lay: DocLayout, operand: str, v: Variant, t: str) -> dict:
    sl = v.operands[operand].layout
    body: dict = {
        "maps": f"(lane {sl.lanes}, element {sl.elements}) -> (row {sl.rows}, col {sl.cols})",
        "section": lay.section or v.section,
        "shape": [sl.rows, sl.cols],
        "elements": lay.elements or sl.elements,
    }
    if lay.figure:
        body["figure"] = lay.figure
    lets = {**lay.row.lets, **lay.col.lets}
    if lets:
        body["let"] = lets
    body["row"], body["col"] = lay.row.expr, lay.col.expr
    if sl.matrices > 1:
        body["matrices"], body["matrix"] = sl.matrices, sl.matrix.text
    body["notes"] = [f"draft from the document, line {lay.line}: row = {lay.row.isa_text!r}; col = {lay.col.isa_text!r}"]
    return body


def draft(ex: Extraction, specs: Specs) -> dict | None:
    """The draft spec document, or None when the document adds nothing importable."""
    layouts: dict[str, dict] = {}
    groups: list[dict] = []
    fragments: dict[str, dict] = {}
    for f in diff(ex, specs):
        if f.status != "only in doc" or f.line is None:
            continue
        lay = next((x for x in ex.layouts if x.line == f.line), None)
        if lay is None or not lay.row or not lay.col or not lay.row.expr or not lay.col.expr:
            continue
        t = f.subject.rsplit(".", 1)[-1]
        for operand in lay.operands:
            sib = next((v for v in specs.variants.values() if _shape(v) == lay.shape and operand in v.operands
                        and (not lay.orientation or applies(
                            DocLayout(lay.section, lay.shape, lay.family, (operand,), lay.orientation, None, None, None, 0),
                            v, operand))), None)
            if sib is None:
                continue
            parts = sib.id.split(".")
            typed = [k for k, p in enumerate(parts) if p in TYPES][:4]
            idx = typed[_ORDER.index(operand)] if len(typed) == 4 else None
            if idx is None:
                continue
            parts[idx] = t
            vid = ".".join(parts)
            if vid in specs.variants or any(g["instruction"] == vid for g in groups):
                continue
            name = f"draft.{lay.shape}.{operand}{'.' + lay.orientation if lay.orientation else ''}.{t}"
            layouts[name] = _layout_yaml(lay, operand, sib, t)
            ops = {}
            for o, sop in sib.operands.items():
                fr = sop.fragment
                fname = t if o == operand else sop.type.name
                ftype = t if o == operand else sop.type.name
                if fname not in fragments:
                    doc_fr = next((x for x in ex.fragments if t in x.types and operand in x.operands), None)
                    if o == operand and doc_fr and doc_fr.register and doc_fr.per_register:
                        fragments[fname] = {"register": doc_fr.register, "per_register": doc_fr.per_register}
                    else:
                        fragments[fname] = {"register": fr.register, "per_register": fr.per_register}
                lname = name if o == operand else f"draft.{sop.layout.name}"
                if o != operand and lname not in layouts:
                    sl = sop.layout
                    layouts[lname] = {"maps": sl.maps, "section": sl.section, "shape": [sl.rows, sl.cols],
                                      "elements": sl.elements, "matrices": sl.matrices, "matrix": sl.matrix.text,
                                      "let": {k: e.text for k, e in sl.bindings.items()},
                                      "row": sl.row.text, "col": sl.col.text,
                                      "notes": [f"copied from specs/ layout {sl.name}"]}
                ops[o] = {"type": ftype, "layout": lname, "fragment": fname}
            groups.append({
                "instruction": vid, "section": lay.section or sib.section, "min_ptx": str(sib.min_ptx),
                "targets": [r.name for r in sib.requires],
                "notes": [f"DRAFT from {ex.file}:{lay.line}: .{t} for {operand}; min_ptx/targets copied from {sib.id}: review"],
                "operands": ops, "_sibling": sib.id,
            })
    if not groups:
        return None
    family = next(v.family for v in specs.variants.values() if v.id == groups[0]["_sibling"])
    for g in groups:
        g.pop("_sibling")
    return {"schema": 1, "family": family, "document": f"draft from {ex.file}", "section": groups[0]["section"],
            "bindings": dict(ISA_BINDINGS), "fragments": fragments, "layouts": layouts, "variants": groups}


def write_draft(ex: Extraction, specs: Specs, out_dir: str | Path) -> Path | None:
    doc = draft(ex, specs)
    if doc is None:
        return None
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"draft_{Path(ex.file).stem}.yaml"
    # The draft passes the loader's gate (schema, invariants, the limits on formulas and YAML) before it is
    # written: it is checked as a hidden file beside the target and renamed only once it loads.
    tmp = out / f".{path.name}.check.yaml"
    tmp.write_text("# Draft written by `ptxconf doc-import`: review every formula before moving it into specs/.\n"
                   + yaml.safe_dump(doc, sort_keys=False, width=120))
    try:
        load_file(tmp)  # a draft that does not load is a bug here, not a review item
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    tmp.replace(path)
    return path
