"""``ptxconf wmma-observe``: observe wmma.load/store fragment layouts on a GPU, record them, compare with a record.

Exit status: 0 every form observed; 1 a form failed; 2 no GPU (the ISA specifies no wmma layout for an emulator).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from .observe import compare_observations, observe, summarize


def main(args) -> int:
    from ptxconf.backends import get_backend
    from ptxconf.figures import map_figure

    backend = get_backend(args.backend)
    if backend.name != "pycuda":
        print("ptxconf wmma-observe: needs a GPU (the ISA specifies no wmma layout for an emulator to follow)")
        return 2
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    try:
        info = backend.info()
        results = observe(backend, args.seed, target=args.target)
    finally:
        backend.close()
    doc = {"device": info, "seed": args.seed, "wall_s": round(time.perf_counter() - t0, 3), "forms": []}
    arrays = {}
    for form, pad, m, err in results:
        if m is None:
            doc["forms"].append({"form": form.id, "error": err})
            continue
        entry = summarize(form, m) | {"stride_padding_elements": pad}
        doc["forms"].append(entry)
        arrays[form.id] = m
        if args.figures:
            letter = {"a": "a", "b": "b", "c": "c", "d": "d"}[form.frag]
            map_figure(m, out / f"{form.id}.svg", f"{form.id}\nobserved on {info.get('gpu')} (driver {info.get('driver')})",
                       letter, form.per_register)
        print(f"{form.id:60s} copies {entry['copies']}  row = {entry['row']}  col = {entry['col']}")
    if args.compare:
        before = json.loads(Path(args.compare).read_text())
        diff = compare_observations(before, doc)
        doc["compared_with"] = {"file": str(args.compare), "device": before.get("device"),
                                **{k: v for k, v in diff.items() if k != "same"}, "same": len(diff["same"])}
        was = before.get("device", {})
        print(f"against {args.compare} ({was.get('gpu')}, driver {was.get('driver')}): {len(diff['same'])} same, "
              f"{len(diff['changed'])} changed, {len(diff['new'])} new, {len(diff['missing'])} no longer observed")
        for form in diff["changed"]:
            print(f"  changed: {form}")
    (out / "observed_wmma.json").write_text(json.dumps(doc, indent=1) + "\n")
    np.savez_compressed(out / "observed_wmma.npz", **arrays)
    errors = [f for f in doc["forms"] if "error" in f]
    print(f"{len(doc['forms']) - len(errors)} forms observed, {len(errors)} failed -> {out}")
    return 1 if errors else 0


def add_parser(sub) -> None:
    p = sub.add_parser("wmma-observe", help="observe wmma.load/store fragment layouts on the GPU (unspecified by the ISA)")
    p.add_argument("--backend", default="auto", choices=["auto", "pycuda"])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--figures", action="store_true")
    p.add_argument("--target", default="sm_80", help="the .target of the probe module (default sm_80)")
    p.add_argument("--compare", metavar="JSON", help="a recorded observed_wmma.json: report forms whose distribution changed")
    p.add_argument("-o", "--output", default="ptxconf-wmma", metavar="DIR")
    p.set_defaults(func=main)
