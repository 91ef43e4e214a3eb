"""``ptxconf discover``: learn lane maps from the hardware and write them as spec YAML.

    ptxconf discover VARIANT... [--all] [--backend auto|pycuda|emulator] [--canonical] [-o DIR] [--figures]

wgmma.mma_async.sp forms discover through their family (D, the register A of ``/rs`` forms, and the
metadata of each legal selector: ``metadata.sel<S>``), every other form as below.

For each variant: DIR/<variant>.yaml (the observed layouts in the specs/
format, with bit-linear formulas fitted in the ISA's words: groupID,
threadID_in_group, bit fields of %laneid and i), DIR/<variant>.npz (the raw
observed maps), optional side-by-side figures (spec vs observed, differing
cells marked), and DIR/summary.json with the device, the relabeling used, the
agreement with specs/ and the wall time per variant.
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

import numpy as np
import yaml
from ptxconf.backends.base import evidence_label
from ptxconf.isa.model import Variant
from ptxconf.tools.discover import Discovery, discover, fit_formula


def _safe(vid: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", vid)


def observed_yaml(v: Variant, disc: Discovery, device: dict) -> tuple[str, list[str]]:
    """Spec-format YAML of the observed layouts; the operands whose formulas did not fit."""
    layouts, operands, unfit = {}, {}, []
    for name in ("A", "B", "C", "D"):
        op = v.operands[name]
        m = disc.maps[name]
        fits = {axis: fit_formula(m[..., k]) for k, axis in enumerate(("matrix", "row", "col"))}
        if None in fits.values():
            unfit.append(name)
            continue
        lname = f"observed.{v.id}.{name}"
        lay = op.layout
        comp = f"computation {lay.matrices}, " if lay.matrices > 1 else ""
        entry = {
            "maps": f"(lane 32, element {lay.elements}) -> ({comp}row {lay.rows}, col {lay.cols})",
            "section": lay.section,
            "shape": [lay.rows, lay.cols],
            "elements": lay.elements,
        }
        if lay.matrices > 1:
            entry["matrices"] = lay.matrices
            entry["matrix"] = fits["matrix"]
        entry["row"] = fits["row"]
        entry["col"] = fits["col"]
        entry["notes"] = [f"observed on {device.get('gpu', '?')}; spec layout {lay.name}"]
        layouts[lname] = entry
        operands[name] = {"type": op.type.name, "layout": lname, "fragment": op.fragment.name}
    fragments = {
        op.fragment.name: {"register": op.fragment.register, "per_register": op.fragment.per_register}
        | ({"value_shift": op.fragment.value_shift} if op.fragment.value_shift else {})
        for op in v.operands.values()
    }
    doc = {
        "schema": 1,
        "family": f"observed.{v.family}",
        "document": f"observed by ptxconf discover on {device.get('gpu', '?')} "
        f"(compute capability {device.get('compute_capability', '?')}, driver {device.get('driver', '?')})",
        "section": v.section,
        "notes": disc.relabeling,
        "bindings": {"groupID": "%laneid >> 2", "threadID_in_group": "%laneid % 4"},
        "fragments": fragments,
        "layouts": layouts,
    }
    if "metadata" in v.operands:
        doc["notes"].append(
            "mma.sp: discovery ran under uniform metadata patterns, so it observes the stored A, B and C maps, "
            "not the metadata map (the conformance run's map.metadata check verifies that); layouts only, no variant"
        )
    elif not unfit:
        group = {"instruction": v.id, "section": v.section, "min_ptx": str(v.min_ptx)}
        if len(v.requires) == 1:
            group["min_target"] = v.requires[0].name
        else:
            group["targets"] = [t.name for t in v.requires]
        group["operands"] = operands
        doc["variants"] = [group]
    return yaml.safe_dump(doc, sort_keys=False, width=120), unfit


def run(args) -> int:
    from ptxconf.backends import get_backend
    from ptxconf.isa import load_specs
    from ptxconf.oracle import mma

    specs = load_specs(args.specs)
    if args.all:
        variants = list(specs.variants.values())
    elif args.variant:
        try:
            variants = [specs.get(vid) for vid in args.variant]
        except KeyError as exc:
            print(f"ptxconf discover: {exc.args[0]}", file=sys.stderr)
            return 2
    else:
        print("ptxconf discover: name one or more variants, or --all", file=sys.stderr)
        return 2
    backend = get_backend(args.backend, semantics=mma)
    info = backend.info()
    label = evidence_label(info)
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    try:
        for v in variants:
            try:
                disc = discover(backend, v, use_spec=not args.canonical)
            except ValueError as exc:
                rows.append({"variant": v.id, "status": "skip", "reason": str(exc)})
                continue
            except RuntimeError as exc:
                rows.append({"variant": v.id, "status": "error", "reason": str(exc)})
                continue
            if disc.document is not None:  # the family's own discovery wrote its document
                text, unfit = yaml.safe_dump(disc.document, sort_keys=False, width=120), disc.unfit
            else:
                text, unfit = observed_yaml(v, disc, info)
            (out / f"{_safe(v.id)}.yaml").write_text(text)
            np.savez_compressed(out / f"{_safe(v.id)}.npz", **disc.maps)
            status = "agrees" if disc.agrees else ("canonical" if args.canonical else "differs")
            rows.append({
                "variant": v.id, "status": status, "seconds": round(disc.seconds, 3), "cases": disc.cases,
                "relabeling": disc.relabeling, "differing_slots": {k: len(x) for k, x in disc.diffs.items()},
                "unfit_formulas": unfit,
            })
            if args.figures or not disc.agrees:
                _figures(v, disc, out)
            line = f"{status:9s} {disc.seconds:6.2f} s  {v.id}"
            print(line)
            for diffs in disc.diffs.values():
                for d in diffs[:4]:
                    print("    " + d)
    finally:
        backend.close()
        (out / "summary.json").write_text(json.dumps({"backend": info.get("backend"), "evidence": label, "device": info,
                                                      "variants": rows,
                                                      "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())},
                                                     indent=1) + "\n")
    bad = [r for r in rows if r["status"] in ("differs", "error")]
    print(f"{sum(r['status'] == 'agrees' for r in rows)} agree, {len(bad)} differ or failed, "
          f"{sum(r['status'] == 'skip' for r in rows)} skipped on {label} -> {out}")
    return 1 if bad else 0


def _figures(v: Variant, disc: Discovery, out: Path) -> None:
    from ptxconf.figures import map_diff_figure

    spec = disc.spec_maps or {name: v.operands[name].layout.map() for name in ("A", "B", "C")}
    for name, want in spec.items():
        map_diff_figure(want, disc.maps[name], out / f"{_safe(v.id)}.{name}.svg",
                        f"{v.id} {name}: spec (left) vs observed (right)")


def add_parser(sub) -> None:
    p = sub.add_parser("discover", help="learn lane maps from the hardware; write them as spec YAML")
    p.add_argument("variant", nargs="*")
    p.add_argument("--all", action="store_true", help="every variant the backend can run")
    p.add_argument("--specs", metavar="DIR")
    p.add_argument("--backend", default="auto", choices=["auto", "pycuda", "emulator"])
    p.add_argument("--canonical", action="store_true", help="ignore the spec: number M, N, K canonically")
    p.add_argument("--figures", action="store_true", help="spec-vs-observed figures for every variant")
    p.add_argument("-o", "--output", default="ptxconf-discovered", metavar="DIR")
    p.set_defaults(func=run)
