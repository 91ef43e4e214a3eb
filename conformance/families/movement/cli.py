"""CLI: ``ptxconf compose ldmatrix-for|stmatrix-for`` and ``ptxconf specs where``."""

from __future__ import annotations

import json

import numpy as np


def _specs(args):
    from ptxconf.isa.loader import load_specs

    return load_specs(args.specs)


def cmd_compose(args) -> int:
    from ptxconf.families.movement.compare import compose, coverage

    specs = _specs(args)
    if args.kind == "coverage":
        cov = coverage(specs)
        for fam in ("ldmatrix", "stmatrix"):
            print(f"{fam}: {cov[fam][0]} (variant, operand, tile) combinations have a form, {cov[fam][1]} have none")
        return 0
    if not args.variant or not args.operand:
        raise SystemExit("ptxconf compose: give VARIANT and --operand")
    v = specs.get(args.variant)
    if args.operand not in v.operands:
        raise SystemExit(f"ptxconf compose: {v.id} has no operand {args.operand}")
    c = compose(specs, v, args.operand, args.tile)
    if args.json:
        print(json.dumps({"variant": c.variant, "operand": c.operand, "tile": c.tile, "form": c.form,
                          "formula": c.formula, "why": c.why, "memory": c.memory_format,
                          "lanes": {str(k): list(v) for k, v in sorted(c.lanes.items())}}, indent=1))
        return 0 if c.form else 1
    if not c.form:
        print(f"no form fits {c.variant} operand {c.operand} from a {c.tile} tile: {c.why}")
        return 1
    print(f"{c.form}   ({c.memory_format})")
    print(c.formula)
    for lane, (r, col) in sorted(c.lanes.items()):
        print(f"  lane {lane:2d}: tile row {r:2d}, col {col:2d}")
    return 0


def _in_range(name: str, value: int | None, stop: int, what: str) -> None:
    """A usage error (one line, exit 2) for ``--NAME value`` outside ``0..stop-1``."""
    if value is not None and not 0 <= value < stop:
        raise SystemExit(f"ptxconf specs where: --{name} {value}: {what} has {_PLURAL.get(name, name + 's')} "
                         f"0..{stop - 1}")


_PLURAL = {"matrix": "matrices"}


def cmd_where(args) -> int:
    from ptxconf.families.movement.compare import where, who

    specs = _specs(args)
    try:
        v = specs.get(args.variant)
    except KeyError as exc:
        raise SystemExit(f"ptxconf specs where: {exc.args[0]}") from None
    if args.operand not in v.operands:
        raise SystemExit(f"ptxconf specs where: {v.id} has no operand {args.operand!r}; it has {', '.join(v.operands)}")
    op = v.operands[args.operand]
    cells = op.layout.map(op.param_combinations()[0])  # [lane, element, (matrix, row, col)]
    what = f"{v.id} operand {args.operand}"
    if args.lane is not None:
        _in_range("lane", args.lane, cells.shape[0], what)
        _in_range("element", args.element, cells.shape[1], what)
        m, r, c = who(op, args.lane, args.element)
        print(f"lane {args.lane} element {args.element} (register {args.element // op.fragment.per_register}): "
              f"matrix {m}, row {r}, col {c}")
        return 0
    if args.row is None or args.col is None:
        raise SystemExit("ptxconf specs where: give --row and --col, or --lane (and --element)")
    for name, value, axis in (("matrix", args.matrix, 0), ("row", args.row, 1), ("col", args.col, 2)):
        _in_range(name, value, int(np.max(cells[..., axis])) + 1, what)
    hits = where(op, args.row, args.col, args.matrix)
    if not hits:
        print("no lane holds that cell")
        return 1
    for lane, reg, k, e in hits:
        print(f"matrix {args.matrix} row {args.row} col {args.col}: lane {lane}, register {reg}, element {e} "
              f"(position {k} in the register)")
    return 0


def add_parser(sub) -> None:
    c = sub.add_parser("compose", help="which ldmatrix/stmatrix form moves an mma operand to/from a shared tile")
    c.add_argument("kind", choices=["ldmatrix-for", "stmatrix-for", "coverage"])
    c.add_argument("variant", nargs="?")
    c.add_argument("--operand", metavar="A|B|C|D")
    c.add_argument("--tile", default="row-major", choices=["row-major", "col-major"])
    c.add_argument("--json", action="store_true")
    c.add_argument("--specs", metavar="DIR")
    c.set_defaults(func=cmd_compose)
    w = sub.group("specs").add_parser("where", help="which lane/register/element holds a cell, or which cell a lane/element holds")
    w.add_argument("variant")
    w.add_argument("--operand", required=True)
    w.add_argument("--row", type=int)
    w.add_argument("--col", type=int)
    w.add_argument("--matrix", type=int, default=0)
    w.add_argument("--lane", type=int)
    w.add_argument("--element", type=int, default=0)
    w.add_argument("--specs", metavar="DIR")
    w.set_defaults(func=cmd_where)
