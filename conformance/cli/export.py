"""``ptxconf export layout|vectors`` and ``ptxconf check layout``: the tables in their users' own terms.

Exit status: export 0 (1 when the asked form does not exist for the operand, saying why);
check 0 when the user's layout agrees with the spec and every recorded map, 1 when one differs,
2 on bad input (unknown variant or operand, a layout that does not parse or has the wrong sizes).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

__all__ = ["add_parser"]


def _params(items: list[str] | None) -> dict[str, int]:
    out = {}
    for item in items or []:
        name, eq, value = item.partition("=")
        if not eq or not value.lstrip("-").isdigit():
            raise SystemExit(f"ptxconf: --param {item!r}: expected NAME=INTEGER")
        out[name] = int(value)
    return out


def _dumps(doc: dict) -> str:
    """Indented JSON with each basis vector on one line: ``[0, 8]``, not three."""
    return re.sub(r"\[\s*(-?\d+(?:,\s*-?\d+)*)\s*\]",
                  lambda m: "[" + ", ".join(x.strip() for x in m.group(1).split(",")) + "]", json.dumps(doc, indent=1))


def _variant(args):
    from ptxconf.isa import load_specs

    specs = load_specs(args.specs)
    try:
        return specs.get(args.variant)
    except KeyError as exc:
        raise SystemExit(f"ptxconf: {exc.args[0]}") from None


def add_parser(sub) -> None:
    esub = sub.group("export", help="layouts as CuTe, linear-layout bases or JSON; recorded results as a dataset")
    e = esub.add_parser("layout", help="one operand's layout as a CuTe layout, linear-layout bases or JSON")
    e.add_argument("--specs", metavar="DIR", help="spec directory (default: the specs/ shipped with the suite)")
    e.add_argument("variant")
    e.add_argument("--operand", required=True, metavar="A|B|C|D|...")
    e.add_argument("--as", dest="form", required=True, choices=["cute", "linear", "json"])
    e.add_argument("--param", action="append", metavar="NAME=VALUE",
                   help="a layout parameter (sparse selector, scale thread_id/byte_id); default the first legal one")
    e.set_defaults(func=cmd_export_layout)
    e = esub.add_parser("vectors", help="recorded numerics cases and observed lane maps as NPZ + a JSON manifest")
    e.add_argument("paths", nargs="+", metavar="PATH", help="run directories (numerics campaigns, suite runs)")
    e.add_argument("-o", "--out", required=True, metavar="DIR")
    e.set_defaults(func=cmd_export_vectors)

    csub = sub.group("check", help="check a user's own layout against the spec and the recorded hardware maps")
    k = csub.add_parser("layout", help="a CuTe layout (--cute) or linear-layout bases (--linear) of one operand")
    k.add_argument("--specs", metavar="DIR", help="spec directory (default: the specs/ shipped with the suite)")
    how = k.add_mutually_exclusive_group(required=True)
    how.add_argument("--cute", metavar="STRING", help="shape:stride, or Layout<Shape<...>,Stride<...>>")
    how.add_argument("--linear", metavar="FILE", help="a JSON document as `export layout --as linear` writes")
    k.add_argument("variant")
    k.add_argument("--operand", required=True)
    k.add_argument("--param", action="append", metavar="NAME=VALUE")
    k.add_argument("--runs", metavar="DIR", default="results",
                   help="where recorded runs are (each */observed_maps.npz is compared; default: results)")
    k.set_defaults(func=cmd_check_layout)


def cmd_export_layout(args: argparse.Namespace) -> int:
    from ptxconf.tools.export.layouts import export_layout
    from ptxconf.tools.export.tile import ExportError

    v = _variant(args)
    try:
        out = export_layout(v, args.operand, args.form, _params(args.param))
    except ExportError as exc:
        raise SystemExit(f"ptxconf export layout: {exc}") from None
    if out.doc is not None:
        print(_dumps(out.doc) if args.form == "linear" else json.dumps(out.doc))
    else:
        sys.stdout.write(out.text)
    for line in out.missing:
        print(f"ptxconf export layout: {v.id} operand {args.operand}: {line}", file=sys.stderr)
    empty = out.form == "cute" and out.text.count("\n") <= 1
    return 1 if out.missing and (empty or out.form == "linear" and "smem" not in (out.doc or {})) else 0


def cmd_export_vectors(args: argparse.Namespace) -> int:
    from ptxconf.tools.export.vectors import VectorsError, export_vectors

    try:
        m = export_vectors([Path(p) for p in args.paths], Path(args.out))
    except VectorsError as exc:
        raise SystemExit(f"ptxconf export vectors: {exc}") from None
    t = m["totals"]
    size = sum(f.stat().st_size for f in Path(args.out).iterdir() if f.is_file())
    print(f"{args.out}: {t['numerics_cases']} numerics cases in {t['numerics_groups']} groups, {t['maps']} observed "
          f"maps ({t['distinct_maps']} distinct), {len(m['devices'])} device record(s); {size / 1e6:.1f} MB")
    return 0


def cmd_check_layout(args: argparse.Namespace) -> int:
    from ptxconf.tools.export.check import (
        UserLayoutError,
        cute_coords,
        first_difference,
        linear_coords,
        parse_user,
        recorded_maps,
        run_dirs,
    )
    from ptxconf.tools.export.smem import smem_operands
    from ptxconf.tools.export.tile import ExportError, operand_tile

    v = _variant(args)
    if args.operand not in v.operands and args.operand in smem_operands(v):
        return _check_smem(args, v)
    try:
        tile = operand_tile(v, args.operand, _params(args.param))
        user = parse_user(args.cute, args.linear)
        coords = cute_coords(user, tile) if args.cute is not None else linear_coords(user, tile)
    except (ExportError, UserLayoutError) as exc:
        raise SystemExit(f"ptxconf check layout: {exc}") from None
    if tile.unspecified():
        raise SystemExit(f"ptxconf check layout: {tile.unspecified()}; nothing to check against")
    per_register = v.operands[args.operand].fragment.per_register
    status = 0
    refs = [("spec", "the spec", tile.coords)]
    refs += [(f"observed[{r.run}]", f"run {r.run} ({r.device})", r.coords)
             for r in recorded_maps(run_dirs(Path(args.runs)), v.id, args.operand)]
    for tag, what, ref in refs:
        if ref.shape != tile.coords.shape:
            print(f"{what}: recorded map has shape {list(ref.shape)}, the operand {list(tile.coords.shape)}; skipped")
            continue
        n, line = first_difference(tile, per_register, ref, coords, tag)
        if line is None:
            print(f"agrees with {what} ({int((ref[..., 0] >= 0).sum())} slots)")
        else:
            status = 1
            print(f"differs from {what} in {n} slot(s); first: {line}")
    return status


def _check_smem(args: argparse.Namespace, v) -> int:
    """A user's shared-memory swizzle atoms (``--linear`` with ``smem``) against the spec's."""
    from ptxconf.tools.export.check import UserLayoutError, parse_smem, smem_differences
    from ptxconf.tools.export.smem import smem_atoms

    if args.linear is None:
        raise SystemExit(f"ptxconf check layout: {v.id} operand {args.operand} is read from shared memory: give its "
                         "swizzle atoms with --linear FILE (as `export layout --as linear` writes them)")
    try:
        lines = smem_differences(parse_smem(args.linear), smem_atoms(v, args.operand))
    except UserLayoutError as exc:
        raise SystemExit(f"ptxconf check layout: {exc}") from None
    print("\n".join(lines))
    return 1 if any("differs" in ln for ln in lines) else 0
