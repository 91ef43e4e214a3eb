"""``ptxconf numerics dot|measure|campaign|report`` and ``ptxconf fuzz numerics``: tensor-core numerics."""

from __future__ import annotations

import fnmatch
import json
import sys
import time
from pathlib import Path

import numpy as np


def _setup(args):
    from conformance.spec import load_specs
    from conformance.tools.numerics.harness import numeric_variants
    from conformance.tools.numerics.spec import numerics_spec

    specs = load_specs(args.specs)
    return specs, numerics_spec(specs), numeric_variants(specs)


def _backend(name: str):
    from conformance.backends import BackendError, get_backend
    from conformance.tools.numerics.harness import path_of, wgmma_semantics
    from conformance.tools.numerics.model import mma_semantics
    from conformance.tools.numerics.spec import numerics_spec

    spec = numerics_spec()
    try:
        backend = get_backend(name, semantics=mma_semantics(lambda v: path_of(spec, v)), cc=(9, 0)) if name == "emulator" else \
            get_backend(name, semantics=mma_semantics(lambda v: path_of(spec, v)))
    except BackendError as exc:
        raise SystemExit(f"ptxconf: backend {name}: {exc}") from None
    if hasattr(backend, "arithmetic"):  # the emulator: wgmma under the numerics model too
        backend.arithmetic = wgmma_semantics(spec)
    return backend


def _ints(text: str | None) -> list[int]:
    return [int(x, 0) for x in text.split(",")] if text else []


def cmd_dot(args) -> int:
    from conformance.tools.numerics.harness import k_of, path_of
    from conformance.tools.numerics.model import Types, dot_bits, explain

    specs, spec, _ = _setup(args)
    v = specs.get(args.variant)
    p = path_of(spec, v)
    k = k_of(v)
    a, b = _ints(args.a), _ints(args.b)
    a, b = a + [0] * (k - len(a)), b + [0] * (k - len(b))
    if len(a) != k or len(b) != k:
        raise SystemExit(f"ptxconf: {v.id} has K={k}: give at most {k} values to --a and --b")
    c = int(args.c, 0)
    if args.explain:
        print(explain(p, Types.of(v), a, b, c))
    else:
        d = int(dot_bits(p, Types.of(v), [a], [b], [c])[0])
        print(f"{d:#x}")
    return 0


def _select(variants, globs):
    if not globs:
        return variants
    return [v for v in variants if any(fnmatch.fnmatchcase(v.id, g) or v.id.startswith(g) for g in globs)]


def cmd_measure(args) -> int:
    from conformance.tools.numerics.campaign import measure

    specs, spec, _ = _setup(args)
    v = specs.get(args.variant)
    backend = _backend(args.backend)
    try:
        m = measure(backend, spec, v)
    finally:
        backend.close()
    m.pop("observations")
    if args.json:
        print(json.dumps(m, indent=1, default=str))
    else:
        print(f"{v.id}  path {m['path']}  ({m['seconds']} s)")
        for g in m["groups"]:
            mark = "agrees" if g["agrees"] else "DEPARTS"
            print(f"  {g['group']:17s} {mark:8s} {g['cases']:4d} cases  model {g['model']}  consistent ({g['n_consistent']}): {g['consistent'][:4]}")
            for c in g["mismatches"][:3]:
                print(f"      {c['case']}: observed {c['observed']} model {c['model']}")
    return 0 if all(g["agrees"] for g in m["groups"]) else 1


def cmd_fuzz(args) -> int:
    from conformance.tools.numerics.fuzz import fuzz_variant
    from conformance.tools.numerics.harness import path_of

    specs, spec, variants = _setup(args)
    chosen = _select(variants, args.select)
    if not chosen:
        raise SystemExit("ptxconf: --select matches no variant with a numerics path")
    backend = _backend(args.backend)
    per = args.budget / len(chosen)
    total = 0
    try:
        for v in chosen:
            st = fuzz_variant(backend, path_of(spec, v), v, per, args.cases, Path(args.out), args.seed)
            st.pop("observations", None)
            total += st["mismatches"]
            print(f"{v.id}: {st['launches']} launches, {st['dots']} dots, {st['mismatches']} mismatches {st.get('error', '')}")
            for s in st["saved"]:
                print(f"  saved {s}")
    finally:
        backend.close()
    return 1 if total else 0


def cmd_campaign(args) -> int:
    from conformance.tools.numerics.campaign import findings, measure, report_text, representatives, save_observations
    from conformance.tools.numerics.fuzz import fuzz_variant
    from conformance.tools.numerics.harness import path_of

    specs, spec, variants = _setup(args)
    chosen = representatives(_select(variants, args.select), spec)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    backend = _backend(args.backend)
    started = time.time()
    measured, fuzzed = [], []
    try:
        info = backend.info()
        for v in chosen:
            try:
                measured.append(measure(backend, spec, v))
            except Exception as exc:  # noqa: BLE001 - recorded, the campaign goes on
                print(f"{v.id}: measure failed: {exc}", file=sys.stderr)
        per = max(1.0, (args.budget - (time.time() - started)) / max(1, len(chosen)))
        for v in chosen:
            fuzzed.append(fuzz_variant(backend, path_of(spec, v), v, per, args.cases, out / "mismatches", args.seed))
    finally:
        backend.close()
    doc = findings(spec, measured, fuzzed)
    save_observations(out, measured, fuzzed)
    doc.update({"backend": info, "wall_s": round(time.time() - started, 1), "variants": [v.id for v in chosen]})
    (out / "measure.json").write_text(json.dumps(measured, indent=1, default=str))
    (out / "findings.json").write_text(json.dumps(doc, indent=1, default=str))
    text = report_text(doc)
    (out / "findings.txt").write_text(text + "\n")
    print(text)
    dots = sum(f.get("dots", 0) for f in fuzzed)
    print(f"\n{len(measured)} variants measured, {dots} fuzzed dot products in {doc['wall_s']} s -> {out}")
    return 0 if doc["agrees"] else 1


def cmd_report(args) -> int:
    from conformance.tools.numerics.campaign import report_text

    directory = Path(args.directory)
    if args.write_open or args.refresh:
        from conformance.tools.numerics.recorded import RecordedRun, open_findings, refresh_findings

        specs, spec, _ = _setup(args)
        run = RecordedRun(directory, specs, spec)
        old = json.loads((directory / "findings.json").read_text())
        if args.refresh:
            doc = refresh_findings(run, old)
            (directory / "findings.json").write_text(json.dumps(doc, indent=1, default=str) + "\n")
            (directory / "findings.txt").write_text(report_text(doc) + "\n")
        if args.write_open:
            of = open_findings(run, old.get("backend"))
            (directory / "open_findings.json").write_text(json.dumps(of, indent=1) + "\n")
            for name, e in of["paths"].items():
                print(f"{name:9s} recorded {e['recorded']['designed']:5d} designed {e['recorded']['replay']:3d} replays; "
                      f"open {e['open']['designed']:5d} designed {e['open']['replay']:3d} replays {e['open_by_group']}")
            return 0
    doc = json.loads((directory / "findings.json").read_text())
    print(json.dumps(doc, indent=1) if args.json else report_text(doc))
    return 0


def cmd_bench(args) -> int:
    from conformance.tools.numerics.harness import k_of, path_of
    from conformance.tools.numerics.model import Types, dot_bits

    specs, spec, _ = _setup(args)
    v = specs.get(args.variant)
    p = path_of(spec, v)
    from conformance.tools.numerics.fuzz import _values

    rng = np.random.default_rng(0)
    k = k_of(v)
    t = Types.of(v)
    a = _values(rng, t.a, (args.n, k), 20, 0.02, 0.0)
    b = _values(rng, t.b, (args.n, k), 20, 0.02, 0.0)
    c = _values(rng, t.c, (args.n,), 20, 0.02, 0.0)
    t0 = time.perf_counter()
    dot_bits(p, t, a, b, c)
    dt = time.perf_counter() - t0
    print(f"{v.id}: {args.n} dot products (K={k}) in {dt:.3f} s = {args.n / dt:,.0f} dots/s")
    return 0


def add_parser(sub) -> None:
    def specs_arg(sp):
        sp.add_argument("--specs", metavar="DIR")

    n = sub.add_parser("numerics", help="tensor-core arithmetic: model, designed experiments, findings")
    ns = n.add_subparsers(dest="numerics_command", required=True)
    s = ns.add_parser("dot", help="D bits of one dot product under the model")
    specs_arg(s)
    s.add_argument("variant")
    s.add_argument("--a", required=True, help="comma-separated A bits along K (missing ones are 0)")
    s.add_argument("--b", required=True)
    s.add_argument("--c", default="0")
    s.add_argument("--explain", action="store_true", help="print the aligned terms")
    s.set_defaults(func=cmd_dot)
    s = ns.add_parser("measure", help="run the designed experiments of one variant (one launch) and infer parameters")
    specs_arg(s)
    s.add_argument("variant")
    s.add_argument("--backend", default="auto", choices=["auto", "pycuda", "emulator"])
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_measure)
    s = ns.add_parser("campaign", help="measure + fuzz every path; findings and observations under --out")
    specs_arg(s)
    s.add_argument("--backend", default="auto", choices=["auto", "pycuda", "emulator"])
    s.add_argument("--select", action="append", metavar="GLOB")
    s.add_argument("--budget", type=float, default=120.0, metavar="SECONDS")
    s.add_argument("--cases", type=int, default=4096, help="MMAs per fuzz launch")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--out", default="/tmp/numerics-run")
    s.set_defaults(func=cmd_campaign)
    s = ns.add_parser("report", help="print the findings of a campaign directory (offline: --refresh, --write-open)")
    specs_arg(s)
    s.add_argument("directory")
    s.add_argument("--refresh", action="store_true", help="re-infer findings.json/.txt from the recorded observations under the current model")
    s.add_argument("--write-open", action="store_true",
                   help="write open_findings.json: every recorded case (designed and replays) the current model does not reproduce")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_report)
    s = ns.add_parser("bench", help="model throughput: dot products per second")
    specs_arg(s)
    s.add_argument("variant")
    s.add_argument("-n", type=int, default=200000)
    s.set_defaults(func=cmd_bench)



def add_fuzz_numerics(fs) -> None:
    """``ptxconf fuzz numerics`` (the ``fuzz`` verb itself is conformance.cli.fuzz's)."""
    s = fs.add_parser("numerics", help="compare hardware with the numerics model bit for bit")
    s.add_argument("--specs", metavar="DIR")
    s.add_argument("--select", action="append", metavar="GLOB")
    s.add_argument("--budget", type=float, default=60.0, metavar="SECONDS")
    s.add_argument("--backend", default="auto", choices=["auto", "pycuda", "emulator"])
    s.add_argument("--cases", type=int, default=4096)
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--out", default="results/numerics-fuzz")
    s.set_defaults(func=cmd_fuzz)
