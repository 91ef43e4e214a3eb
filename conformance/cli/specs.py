"""``ptxconf specs list|show|figure``: the variants of specs/, one operand's lane map, and its drawing.

Families add their own verbs to this group (``specs where``) through ``commands.group("specs")``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
from ptxconf.isa import load_specs

from .preflight import needs_package

__all__ = ["add_parser", "specs_arg", "load", "variant_of", "operand_of"]


def specs_arg(sp) -> None:
    sp.add_argument("--specs", metavar="DIR", help="spec directory (default: the specs/ shipped with the suite)")


def load(args):
    return load_specs(args.specs)


def variant_of(specs, vid: str):
    try:
        return specs.get(vid)
    except KeyError as exc:
        raise SystemExit(f"ptxconf: {exc.args[0]}") from None


def operand_of(v, name: str):
    if name not in v.operands:
        raise SystemExit(f"ptxconf: {v.id} has no operand {name!r}; it has {', '.join(v.operands)}")
    return v.operands[name]


def cmd_specs_list(args) -> int:
    specs = load(args)
    variants = specs.select(args.select) if args.select else list(specs.variants.values())
    if args.json:
        rows = [
            {
                "id": v.id,
                "family": v.family,
                "section": v.section,
                "min_ptx": str(v.min_ptx),
                "targets": [t.name for t in v.requires],
                "file": v.file,
                "line": v.line,
                "operands": {
                    n: {"type": o.type.name, "layout": o.layout.name, "registers": o.registers, "register_type": o.fragment.register}
                    for n, o in v.operands.items()
                },
            }
            for v in variants
        ]
        print(json.dumps(rows, indent=1))
    else:
        for v in variants:
            print(f"{v.id:80s}  ptx>={v.min_ptx}  {'|'.join(t.name for t in v.requires)}")
        print(f"{len(variants)} variants", file=sys.stderr)
    return 0


def cmd_specs_show(args) -> int:
    specs = load(args)
    v = variant_of(specs, args.variant)
    op = operand_of(v, args.operand)
    combos = op.param_combinations()
    params = combos[0] if combos and combos[0] else None
    m = op.layout.map(params)
    held = op.layout.held(params)
    rows = [[lane, e, int(m[lane, e, 1]), int(m[lane, e, 2])] for lane, e in zip(*np.nonzero(held))]
    if op.layout.matrices > 1:
        rows = [[lane, e, int(m[lane, e, 0]), r, c] for lane, e, r, c in rows]
    if args.json:
        doc = {
            "variant": v.id,
            "operand": op.name,
            "shape": [op.layout.rows, op.layout.cols],
            "map": [[int(x) for x in r] for r in rows],
        }
        if op.layout.matrices > 1:
            doc["matrices"] = op.layout.matrices
            doc["map_columns"] = ["lane", "element", "matrix", "row", "col"]
        if params:
            doc["params"] = params
        print(json.dumps(doc))
        return 0
    lay = op.layout
    print(f"{v.id}  operand {op.name}: .{op.type.name}, {op.registers} x .{op.fragment.register} registers, "
          f"{op.fragment.per_register} element(s) per register (low to high)")
    print(f"layout {lay.name}: {lay.maps}  [§{lay.section}{', ' + lay.figure if lay.figure else ''}]")
    if lay.matrices > 1:
        print(f"  matrix = {lay.matrix.text}")
    print(f"  row = {lay.row.text}\n  col = {lay.col.text}")
    if lay.where is not None:
        print(f"  where {lay.where.text}  {params or ''}")
    for note in lay.notes:
        print(f"  note: {note}")
    for err in lay.errata:
        print(f"  erratum: ISA says {err['isa_text']!r}: {err['problem']}; taken: {err['taken']}")
    from ptxconf.figures import ascii_grid

    print(ascii_grid(lay, params))
    return 0


def cmd_specs_figure(args) -> int:
    suffix = Path(args.output).suffix.lower()
    if suffix not in (".svg", ".png"):
        raise SystemExit(f"ptxconf specs figure: -o {args.output}: the figure must end in .svg or .png")
    needs_package("matplotlib", "ptxconf specs figure", "drawing")
    from ptxconf.figures import operand_figure

    specs = load(args)
    v = variant_of(specs, args.variant)
    operand_of(v, args.operand)
    if args.operand == "metadata":
        from ptxconf.figures import metadata_figure

        metadata_figure(v, args.output)  # bit fields labelled [hi:lo], as the ISA draws them
    else:
        operand_figure(v, args.operand, args.output)
    print(args.output)
    return 0


def add_parser(commands) -> None:
    specs = commands.group("specs", help="list, show and draw spec variants")
    s = specs.add_parser("list", help="list every variant")
    specs_arg(s)
    s.add_argument("--select", action="append", metavar="GLOB", help="only variants matching this prefix or glob")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_specs_list)
    s = specs.add_parser("show", help="one operand's lane map")
    specs_arg(s)
    s.add_argument("variant")
    s.add_argument("--operand", required=True, metavar="A|B|C|D|scale_A|scale_B")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_specs_show)
    s = specs.add_parser("figure", help="draw an operand's lane/register grid (SVG or PNG)")
    specs_arg(s)
    s.add_argument("variant")
    s.add_argument("--operand", required=True)
    s.add_argument("-o", "--output", required=True, metavar="FILE")
    s.set_defaults(func=cmd_specs_figure)
