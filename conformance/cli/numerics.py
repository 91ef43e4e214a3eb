"""``ptxconf numerics dot|measure|campaign|report`` and ``ptxconf fuzz numerics``: tensor-core numerics."""

from __future__ import annotations

import fnmatch
import json
import sys
import time
from pathlib import Path

import numpy as np


def _setup(args, every_form: bool = False):
    """(specs, numerics spec, the forms with a numerics path): mma.sync and wgmma N=64, or with ``every_form`` also
    mma.sp, wgmma.sp and every wgmma N (what the GPU fuzzer takes)."""
    from ptxconf.isa import load_specs
    from ptxconf.tools.numerics.harness import numeric_variants
    from ptxconf.tools.numerics.spec import numerics_spec

    specs = load_specs(args.specs)
    if every_form:
        forms = numeric_variants(specs, families=("mma.sync", "mma.sp", "wgmma", "wgmma.sp"), wgmma_n=range(8, 257, 8))
    else:
        forms = numeric_variants(specs)
    return specs, numerics_spec(specs), forms


def _backend(name: str):
    from ptxconf.backends import BackendError, get_backend
    from ptxconf.tools.numerics.harness import path_of, wgmma_semantics
    from ptxconf.tools.numerics.model import mma_semantics
    from ptxconf.tools.numerics.spec import numerics_spec

    spec = numerics_spec()
    try:
        backend = get_backend(name, semantics=mma_semantics(lambda v: path_of(spec, v)), cc=(9, 0)) if name == "emulator" else \
            get_backend(name, semantics=mma_semantics(lambda v: path_of(spec, v)))
    except BackendError as exc:
        raise SystemExit(f"ptxconf: backend {name}: {exc}") from None
    if hasattr(backend, "arithmetic"):  # the emulator: wgmma under the numerics model too
        backend.arithmetic = wgmma_semantics(spec)
    return backend


def _backend_line(info: dict) -> str:
    """What produced a result, said with it: the emulator's answers are the model's own, no evidence of hardware."""
    what = "the emulator computes the model itself: no evidence of hardware" if info.get("backend") == "emulator" else \
        f"{info.get('gpu', '?')}, ptxas {info.get('ptxas', '?')}"
    return f"backend {info.get('backend', '?')} ({what})"


def _ints(text: str | None, opt: str, bound: int, what: str) -> list[int]:
    """Comma-separated integers (0x.., 0b.. or decimal), each in ``0 <= x < bound``; one line naming the option
    otherwise (a value too wide for its type is refused, not masked)."""
    out = []
    for item in text.split(",") if text else []:
        try:
            x = int(item.strip(), 0)
        except ValueError:
            raise SystemExit(f"ptxconf numerics dot: {opt} {item!r}: not an integer (give bit patterns such as "
                             "0x3c00)") from None
        if not 0 <= x < bound:
            raise SystemExit(f"ptxconf numerics dot: {opt} {item.strip()}: outside {what} (0 to {bound - 1:#x})")
        out.append(x)
    return out


def _bits(type_name: str) -> tuple[int, str]:
    from ptxconf.isa.ptxtypes import TYPES

    bits = TYPES[type_name].bits if type_name in TYPES else 64
    return 1 << bits, f"the {bits} bits of .{type_name}"


def _variant(specs, vid: str):
    from ptxconf.tools.numerics.harness import variant_of

    try:
        return variant_of(specs, vid)
    except (KeyError, ValueError) as exc:
        raise SystemExit(f"ptxconf: {exc.args[0]}") from None


def cmd_dot(args) -> int:
    from ptxconf.isa.sparse import is_sparse
    from ptxconf.tools.numerics.harness import k_of, path_of
    from ptxconf.tools.numerics.model import Types, dot_bits, explain

    specs, spec, _ = _setup(args)
    v = _variant(specs, args.variant)
    p = path_of(spec, v)
    k = k_of(v)
    ka = k // 2 if is_sparse(v) else k
    types = Types.of(v)
    a, b = _ints(args.a, "--a", *_bits(types.a)), _ints(args.b, "--b", *_bits(types.b))
    a, b = a + [0] * (ka - len(a)), b + [0] * (k - len(b))
    if len(a) != ka or len(b) != k:
        raise SystemExit(f"ptxconf: {v.id} takes {ka} values in --a and {k} in --b")
    cs = _ints(args.c, "--c", *_bits(types.c))
    if len(cs) != 1:
        raise SystemExit(f"ptxconf numerics dot: --c {args.c}: give one value")
    c = cs[0]
    pos = None
    if is_sparse(v):
        pos = _ints(args.pos, "--pos", k, f"the {k} dense positions")
        if len(pos) != ka:
            raise SystemExit(f"ptxconf: --pos: {v.id} stores {ka} A elements; give their {ka} dense positions")
        if args.explain:
            raise SystemExit("ptxconf: --explain takes dense forms only")
    if args.explain:
        print(explain(p, Types.of(v), a, b, c))
    else:
        d = int(dot_bits(p, Types.of(v), [a], [b], [c], sparse_pos=None if pos is None else [pos])[0])
        print(f"{d:#x}")
    return 0


def _select(variants, globs):
    if not globs:
        return variants
    return [v for v in variants if any(fnmatch.fnmatchcase(v.id, g) or v.id.startswith(g) for g in globs)]


def cmd_measure(args) -> int:
    from ptxconf.tools.numerics.campaign import measure

    specs, spec, _ = _setup(args)
    v = _variant(specs, args.variant)
    backend = _backend(args.backend)
    try:
        m = measure(backend, spec, v)
        info = backend.info()
        m["backend"] = info.get("backend")
    finally:
        backend.close()
    m.pop("observations")
    if args.json:
        print(json.dumps(m, indent=1, default=str))
    else:
        print(f"{v.id}  path {m['path']}  ({m['seconds']} s; {_backend_line(info)})")
        for g in m["groups"]:
            mark = "agrees" if g["agrees"] else "DEPARTS"
            print(f"  {g['group']:17s} {mark:8s} {g['cases']:4d} cases  model {g['model']}  consistent ({g['n_consistent']}): {g['consistent'][:4]}")
            for c in g["mismatches"][:3]:
                print(f"      {c['case']}: observed {c['observed']} model {c['model']}")
    return 0 if all(g["agrees"] for g in m["groups"]) else 1


def cmd_fuzz(args) -> int:
    from ptxconf.tools.numerics.fuzz import fuzz_variant
    from ptxconf.tools.numerics.harness import path_of

    specs, spec, variants = _setup(args, every_form=args.on == "gpu")
    chosen = _select(variants, args.select)
    if not chosen:
        raise SystemExit("ptxconf: --select matches no variant with a numerics path")
    if args.on == "gpu":  # mma.sync on the device alone; wgmma, mma.sp, wgmma.sp through their probes (gpu_campaign.py)
        from ptxconf.tools.numerics.gpu_campaign import fuzz_on_gpu

        return fuzz_on_gpu(spec, chosen, args, lambda: _backend("pycuda" if args.backend == "auto" else args.backend))
    backend = _backend(args.backend)
    info = backend.info()
    t_end = time.time() + args.budget
    total, dots = 0, 0
    try:
        for i, v in enumerate(chosen):  # each variant an equal share of what is left: the whole budget holds
            per = (t_end - time.time()) / (len(chosen) - i)
            if per <= 0:
                print(f"budget spent: {len(chosen) - i} variant(s) not fuzzed")
                break
            st = fuzz_variant(backend, path_of(spec, v), v, per, args.cases, Path(args.out), args.seed)
            st.pop("observations", None)
            total, dots = total + st["mismatches"], dots + st["dots"]
            print(f"{v.id}: {st['launches']} launches, {st['dots']} dots, {st['mismatches']} mismatches {st.get('error', '')}")
            for s in st["saved"]:
                print(f"  saved {s}")
    finally:
        backend.close()
    print(f"total: {dots} dots, {total} mismatches; {_backend_line(info)}")
    return 1 if total else 0


def cmd_campaign(args) -> int:
    from ptxconf.tools.numerics.campaign import findings, measure, report_text, representatives, save_observations
    from ptxconf.tools.numerics.fuzz import fuzz_variant
    from ptxconf.tools.numerics.harness import path_of

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
    print(f"\n{len(measured)} variants measured, {dots} fuzzed dot products in {doc['wall_s']} s -> {out}; "
          f"{_backend_line(info)}")
    return 0 if doc["agrees"] else 1


def _recorded_dirs(dirs: list[str]) -> list[Path]:
    """The runs named, or every recorded run under results/ (designed cases or fuzz mismatches, the GPU fuzzer's too)."""
    from ptxconf.tools.numerics.recorded import is_recorded_run, recorded_runs

    if not dirs:
        found = recorded_runs(Path("results")) if Path("results").is_dir() else []
        if not found:
            raise SystemExit("ptxconf: no recorded numerics run under results/ (name DIRs)")
        return found
    for d in dirs:
        if not Path(d).is_dir() or not is_recorded_run(Path(d)):
            raise SystemExit(f"ptxconf: {d}: not a recorded numerics run (no observations.npz and no mismatches/*.json)")
    return [Path(d) for d in dirs]


def _lowering_notes(spec, run, paths) -> list[str]:
    """Where a run's cases are of a form ptxas builds in software: whether the ptxas that built the run lies in the
    releases the parameters hold for (specs/numerics.yaml ``lowering``)."""
    from ptxconf.tools.numerics.harness import shape_key
    from ptxconf.tools.numerics.lowering import holds_for

    built = run.info.get("ptxas")
    held = {(run.params(vid).name, shape_key(run.variant(vid))) for vid in {x[0] for x in run.designed} | {r.variant for r in run.replays}}
    out = []
    for name in paths:
        for shape, low in spec.lowering.get(name, {}).items():
            if shape is not None and (name, shape) not in held:
                continue
            where = f"{name}{' ' + shape if shape else ''}"
            ok = holds_for(built, low["ptxas"])
            if ok is False:
                out.append(f"  {where}: software-lowered; the parameters hold for ptxas {low['ptxas']}, this run was built by {built}")
            elif ok is None:
                out.append(f"  {where}: software-lowered; the parameters hold for ptxas {low['ptxas']}, the run does not "
                           f"name the release that built it ({built or 'no ptxas recorded'})")
    return out


def cmd_report(args) -> int:
    from ptxconf.tools.numerics.campaign import report_text
    from ptxconf.tools.numerics.recorded import RecordedRun, open_findings, refresh_findings

    specs, spec, _ = _setup(args)
    n_open = 0
    for directory in _recorded_dirs(args.directory):
        run = RecordedRun(directory, specs, spec)
        old = json.loads((directory / "findings.json").read_text()) if (directory / "findings.json").is_file() else {}
        if args.refresh and old:
            doc = refresh_findings(run, old)
            (directory / "findings.json").write_text(json.dumps(doc, indent=1, default=str) + "\n")
            (directory / "findings.txt").write_text(report_text(doc) + "\n")
            old = doc
        of = open_findings(run, run.info)
        if args.write_open:
            (directory / "open_findings.json").write_text(json.dumps(of, indent=1) + "\n")
        if args.json:
            print(json.dumps({"run": str(directory), "findings": old or None, "open": of}, indent=1, default=str))
            continue
        print(f"== {directory} (backend {run.backend}{', ptxas ' + run.info['ptxas'] if run.info.get('ptxas') else ''})")
        if old and not args.write_open:
            print(report_text(old))
        for line in _lowering_notes(spec, run, of["paths"]):
            print(line)
        for name, e in of["paths"].items():
            n_open += e["open"]["designed"] + e["open"]["replay"]
            print(f"{name:13s} recorded {e['recorded']['designed']:6d} designed {e['recorded']['replay']:3d} replays; "
                  f"open {e['open']['designed']:5d} designed {e['open']['replay']:3d} replays {e['open_by_group']}")
    print(f"{n_open} recorded case(s) the model does not reproduce")
    return 0


def cmd_edges(args) -> int:
    from ptxconf.tools.numerics.campaign import edge_variants, edges_campaign

    specs, spec, _ = _setup(args)
    try:
        extra = tuple(int(x) for x in args.wgmma_n.split(",") if x)
    except ValueError:
        raise SystemExit(f"ptxconf: --wgmma-n {args.wgmma_n!r}: give comma-separated widths, e.g. 8,256") from None
    chosen = edge_variants(specs, spec, extra_n=extra)
    if args.select:
        chosen = _select(chosen, args.select)
    if not chosen:
        raise SystemExit("ptxconf: --select matches no variant with a numerics path")
    out = Path(args.out)
    if out.exists() and any(out.iterdir()) and not args.force:
        raise SystemExit(f"ptxconf: --out {out} is not empty (pass --force to write into it)")
    backend = _backend(args.backend)
    try:
        doc = edges_campaign(backend, spec, chosen, out, args.budget, args.cases, args.seed, fuzz=not args.no_fuzz)
    finally:
        backend.close()
    print(f"\n{len(doc['variants'])} variants: {doc['designed_cases']} designed cases in {doc['measure_s']} s; "
          f"{doc['fuzzed_dots']} edge-fuzzed dot products ({doc['mismatching_dots']} differ from the model); "
          f"coverage {'complete' if doc['coverage_complete'] else 'INCOMPLETE (see coverage.md)'}; {doc['wall_s']} s -> {out}")
    if doc["failed"]:
        print(f"{len(doc['failed'])} variant(s) failed: {', '.join(doc['failed'])}")
    info = doc.get("backend", {})
    print(_backend_line(info))
    if info.get("backend") == "emulator":
        print("numerics pin refuses this run as evidence (--accept-emulator to take it anyway)")
    else:
        print(f"analyse offline: ptxconf numerics pin {out} results/h100-numerics results/h100-numerics-wgmma --write-spec --write-open")
    return 1 if doc["failed"] else 0


def _sources_for(spec, runs, key: str, command: str) -> tuple[dict[str, str], dict[str, str]]:
    """Source key of each run (the spec's source naming results/<run>, else ``key``), and the sources to add."""
    sources, new = {}, {}
    for r in runs:
        known = next((k for k, text in spec.sources.items() if f"results/{r.dir.name}:" in text or f"results/{r.dir.name} " in text), None)
        sources[r.dir.name] = known or key
        if not known:
            i = r.info
            dev = ", ".join(str(i[k]) for k in ("gpu", "compute_capability", "driver", "ptxas") if i.get(k))
            new[key] = (new.get(key, "") + "; " if key in new else "") + f"results/{r.dir.name}: {command} --backend {i.get('backend', '?')} on {dev or 'an unnamed device'}"
    return sources, new


def cmd_pin(args) -> int:
    import shutil
    import tempfile

    from ptxconf.isa import load_specs
    from ptxconf.tools.numerics.campaign import report_text
    from ptxconf.tools.numerics.pins import SpecEditError, pin, pins_markdown, write_spec
    from ptxconf.tools.numerics.recorded import RecordedRun, open_findings, refresh_findings
    from ptxconf.tools.numerics.spec import numerics_spec

    if args.out:  # made before the work: a folder that cannot be made is a usage error, not a crash after it
        try:
            Path(args.out).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise SystemExit(f"ptxconf numerics pin: --out {args.out}: {exc.strerror or exc}") from None
    specs, spec, _ = _setup(args)
    runs = [RecordedRun(d, specs, spec) for d in _recorded_dirs(args.directories)]
    emulated = [str(r.dir) for r in runs if r.backend == "emulator"]
    if emulated and not args.accept_emulator:
        raise SystemExit(f"ptxconf: {emulated[0]}: recorded on the emulator, which computes the model itself: no evidence "
                         "of hardware (pass --accept-emulator to pin from it anyway)")
    if emulated and args.source == "H100EDGE":
        args.source = "EMULATOR"  # never labelled as a hardware run
    sources, new = _sources_for(spec, runs, args.source, "ptxconf numerics edges")
    for r in runs:
        print(f"{r.dir}: backend {r.backend}{', ptxas ' + r.info['ptxas'] if r.info.get('ptxas') else ''}, "
              f"{sum(len(x[4]) for x in r.designed)} designed cases, {len(r.replays)} fuzz replays")
    out = Path(args.out) if args.out else runs[0].dir
    try:  # before the work: a place the results cannot go is an error now, not after it
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SystemExit(f"ptxconf: --out {out}: {exc.strerror}") from None
    log = print if args.verbose else (lambda *_: None)
    doc = pin(runs, spec, sources, set(args.path) if args.path else None, log=log)
    (out / "pins.json").write_text(json.dumps(doc, indent=1, default=str) + "\n")
    (out / "pins.md").write_text(pins_markdown(doc))
    counts: dict[str, int] = {}
    for d in doc["decisions"]:
        counts[d["decision"]] = counts.get(d["decision"], 0) + 1
    print(f"{len(doc['decisions'])} parameters: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) + f" -> {out / 'pins.md'}")
    for f in doc["findings"]:
        print(f"  FINDING {f}")
    if args.write_spec:
        spec_file = Path(spec.file)

        def check(text: str) -> None:
            with tempfile.TemporaryDirectory(prefix="ptxconf-pin-") as tmp:
                shutil.copytree(spec_file.parent, tmp, dirs_exist_ok=True)
                (Path(tmp) / spec_file.name).write_text(text)
                numerics_spec(load_specs(tmp))

        written, found = [], list(doc["findings"])
        for _ in range(3):  # a value written can unlock another (f64: the NaN bits, then the NaN rule)
            try:
                changed = write_spec(doc, spec_file, new, check)
                written += changed
            except SpecEditError as exc:
                raise SystemExit(f"ptxconf: {spec_file}: {exc}") from None
            new = {}
            print(f"{spec_file}: {len(changed)} parameter(s) written")
            for line in changed:
                print(f"  {line}")
            specs = load_specs(args.specs)
            spec = numerics_spec(specs)
            runs = [RecordedRun(r.dir, specs, spec) for r in runs]
            doc = pin(runs, spec, sources, set(args.path) if args.path else None, log=log)
            found += [x for x in doc["findings"] if x not in found]
            if not changed:
                break
        doc["written"] = written  # what the spec got, every round; the findings of every round (the first saw the old spec)
        doc["findings"] = found
        (out / "pins.json").write_text(json.dumps(doc, indent=1, default=str) + "\n")
        (out / "pins.md").write_text(pins_markdown(doc))
    if args.write_open:
        for r in runs:
            run = RecordedRun(r.dir, specs, spec)
            if (run.dir / "findings.json").is_file():  # a run of designed cases (a mismatch directory has none)
                fdoc = refresh_findings(run, json.loads((run.dir / "findings.json").read_text()))
                (run.dir / "findings.json").write_text(json.dumps(fdoc, indent=1, default=str) + "\n")
                (run.dir / "findings.txt").write_text(report_text(fdoc) + "\n")
            of = open_findings(run, run.info)
            (run.dir / "open_findings.json").write_text(json.dumps(of, indent=1) + "\n")
            n_open = sum(e["open"]["designed"] + e["open"]["replay"] for e in of["paths"].values())
            print(f"{run.dir}: findings regenerated; {n_open} recorded case(s) open")
    return 0


def cmd_lowering(args) -> int:
    from ptxconf.tools.numerics.campaign import representatives
    from ptxconf.tools.numerics.lowering import markdown, survey

    specs, spec, variants = _setup(args)
    forms = [v for v in variants if v.family == "mma.sync"]
    chosen = representatives(_select(forms, args.select), spec)  # one per types and shape (layouts build alike)
    if not chosen:
        raise SystemExit("ptxconf: --select matches no mma.sync form with a numerics path")
    toolchains = _toolchains(args.ptxas)
    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SystemExit(f"ptxconf: --out {out}: {exc.strerror}") from None
    try:
        doc = survey(chosen, toolchains, args.target, tuple(args.opt or ("-O0", "-O3")), args.jobs)
    except RuntimeError as exc:
        raise SystemExit(f"ptxconf: {exc}") from None
    (out / "lowering.json").write_text(json.dumps(doc, indent=1) + "\n")
    (out / "lowering.md").write_text(markdown(doc))
    lowered = [f for f in doc["forms"] if f["lowered"]]
    print(f"{len(doc['forms'])} forms x {len(toolchains)} releases: {len(lowered)} software-lowered, "
          f"{sum(f['differs'] for f in lowered)} of them built differently by different releases -> {out / 'lowering.md'}")
    return 0


def cmd_compare(args) -> int:
    from ptxconf.tools.numerics.mmasim_compare import MmaSimMissing, compare, markdown
    from ptxconf.tools.numerics.recorded import RecordedRun

    specs, spec, _ = _setup(args)
    runs = [RecordedRun(d, specs, spec) for d in _recorded_dirs(args.runs)]
    try:
        doc = compare(runs)
    except MmaSimMissing as exc:
        raise SystemExit(f"ptxconf: --model mmasim: {exc}") from None
    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
        (out / "compare.json").write_text(json.dumps(doc, indent=1) + "\n")
        (out / "compare.md").write_text(markdown(doc))
    except OSError as exc:
        raise SystemExit(f"ptxconf: --out {out}: {exc.strerror}") from None
    for name, e in doc["paths"].items():
        print(f"{name:24s} {e['cases']:7d} cases  " + "; ".join(f"{k}: {n}" for k, n in sorted(e["outcomes"].items())))
    print(f"-> {out / 'compare.md'}")
    return 0


def cmd_bench(args) -> int:
    from ptxconf.tools.numerics.harness import k_of, path_of
    from ptxconf.tools.numerics.model import Types, dot_bits

    specs, spec, _ = _setup(args)
    v = specs.get(args.variant)
    p = path_of(spec, v)
    from ptxconf.tools.numerics.fuzz import _values

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

    ns = sub.group("numerics", help="tensor-core arithmetic: model, designed experiments, findings")
    s = ns.add_parser("dot", help="D bits of one dot product under the model")
    specs_arg(s)
    s.add_argument("variant")
    s.add_argument("--a", required=True, help="comma-separated A bits along K (missing ones are 0)")
    s.add_argument("--b", required=True)
    s.add_argument("--c", default="0")
    s.add_argument("--pos", help="mma.sp: comma-separated dense positions of the stored A elements given in --a")
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
    s.add_argument("directory", nargs="*", help="recorded runs (default: every one under results/, mismatch directories included)")
    s.add_argument("--refresh", action="store_true", help="re-infer findings.json/.txt from the recorded observations under the current model")
    s.add_argument("--write-open", action="store_true",
                   help="write open_findings.json: every recorded case (designed and replays) the current model does not reproduce")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_report)
    s = ns.add_parser("edges", help="GPU: every designed group of every path (raw), then the coverage-driven edge fuzzer")
    specs_arg(s)
    s.add_argument("--backend", default="auto", choices=["auto", "pycuda", "emulator"])
    s.add_argument("--select", action="append", metavar="GLOB")
    s.add_argument("--budget", type=float, default=240.0, metavar="SECONDS", help="the whole run (designed groups first)")
    s.add_argument("--cases", type=int, default=512, help="MMAs per edge-fuzz launch")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--wgmma-n", default="8,256", metavar="N,N", help="wgmma widths measured besides 64 (one form per path)")
    s.add_argument("--no-fuzz", action="store_true", help="the designed groups only")
    s.add_argument("--force", action="store_true", help="write into a non-empty --out")
    s.add_argument("--out", default="results/numerics-edges")
    s.set_defaults(func=cmd_edges)
    s = ns.add_parser("pin", help="offline: pin every parameter from recorded runs (pins.json/.md); update the spec and findings")
    specs_arg(s)
    s.add_argument("directories", nargs="*", metavar="DIR",
                   help="recorded runs (numerics edges / campaign / fuzz --out; default: every one under results/)")
    s.add_argument("--accept-emulator", action="store_true",
                   help="take runs recorded on the emulator as evidence (it computes the model itself)")
    s.add_argument("--source", default="H100EDGE", help="source key for runs the spec's sources do not name yet")
    s.add_argument("--path", action="append", metavar="PATH", help="only these paths (e.g. f16.f16)")
    s.add_argument("--out", metavar="DIR", help="where pins.json/.md go (default: the first DIR)")
    s.add_argument("--write-spec", action="store_true", help="write the decisions into specs/numerics.yaml")
    s.add_argument("--write-open", action="store_true", help="regenerate findings.json/.txt and open_findings.json of every DIR")
    s.add_argument("-v", "--verbose", action="store_true")
    s.set_defaults(func=cmd_pin)
    s = ns.add_parser("lowering", help="offline: each mma.sync form built by every installed ptxas release; the SASS "
                                       "arithmetic (software-lowered forms, and where releases differ)")
    specs_arg(s)
    s.add_argument("--select", action="append", metavar="GLOB")
    s.add_argument("--ptxas", action="append", metavar="VERSION|PATH|all", help="releases to build with (default: all)")
    s.add_argument("--target", default="sm_90")
    s.add_argument("--opt", action="append", choices=["-O0", "-O1", "-O2", "-O3"], help="levels (default: -O0 and -O3)")
    s.add_argument("--jobs", type=int, default=2, metavar="N", help="ptxas processes at a time (default 2)")
    s.add_argument("--out", default="results/numerics-lowering")
    s.set_defaults(func=cmd_lowering)

    s = ns.add_parser("compare", help="offline: recorded cases through the model and another model (MMA-Sim), per path")
    specs_arg(s)
    s.add_argument("runs", nargs="*", metavar="RUN", help="recorded runs (default: every one under results/)")
    s.add_argument("--model", required=True, choices=["mmasim"], help="the other model (PyPI mmasim, needs torch)")
    s.add_argument("--out", default="results/numerics-mmasim")
    s.set_defaults(func=cmd_compare)

    s = ns.add_parser("bench", help="model throughput: dot products per second")
    specs_arg(s)
    s.add_argument("variant")
    s.add_argument("-n", type=int, default=200000)
    s.set_defaults(func=cmd_bench)



def _toolchains(ptxas: list[str] | None) -> list:
    from ptxconf.backends.ptxas import PtxasNotFound
    from ptxconf.tools.toolchains.resolve import resolve_all

    try:
        return resolve_all(ptxas or ["all"])
    except (PtxasNotFound, ValueError) as exc:
        raise SystemExit(f"ptxconf: --ptxas: {exc}") from None


def cmd_diff_prepare(args) -> int:
    from ptxconf.tools.numerics.campaign import representatives
    from ptxconf.tools.numerics.release_diff import prepare

    specs, spec, variants = _setup(args)
    forms = [v for v in variants if v.family == "mma.sync"]
    chosen = representatives(_select(forms, args.select or ["*e4m3*", "*e5m2*", "*m8n8k4*"]), spec)
    if not chosen:
        raise SystemExit("ptxconf: --select matches no mma.sync form with a numerics path")
    toolchains = _toolchains(args.ptxas)
    out = Path(args.out)
    if out.exists() and any(out.iterdir()):
        raise SystemExit(f"ptxconf: --out {out} is not empty")
    try:
        out.mkdir(parents=True, exist_ok=True)
        doc = prepare(chosen, toolchains, out, args.target)
    except OSError as exc:
        raise SystemExit(f"ptxconf: --out {out}: {exc.strerror}") from None
    except RuntimeError as exc:
        raise SystemExit(f"ptxconf: {exc}") from None
    print(f"{len(doc['forms'])} forms x {len(toolchains)} releases -> {out} (run it on the GPU: ptxconf toolchains "
          f"differential numerics run {out} --out DIR)")
    return 0


def cmd_diff_run(args) -> int:
    from ptxconf.isa import load_specs
    from ptxconf.tools.numerics import gpu
    from ptxconf.tools.numerics.release_diff import run

    bundle = Path(args.bundle)
    if not (bundle / "manifest.json").is_file():
        raise SystemExit(f"ptxconf: {bundle}: no manifest.json (make one with: ptxconf toolchains differential numerics prepare)")
    if args.cases < 1:
        raise SystemExit("ptxconf: --cases must be at least 1")
    ok, why = gpu.available()
    if not ok:
        raise SystemExit(f"ptxconf: the numerics differential runs the builds on a GPU through CuPy: {why}")
    doc = run(bundle, load_specs(args.specs), Path(args.out), args.cases, args.seed, args.select)
    split = [f["variant"] for f in doc["forms"] if len(f["groups"]) > 1]
    print(f"{len(doc['forms'])} forms: {len(split)} computed differently by different builds -> {args.out}")
    return 1 if split else 0


def add_differential_numerics(ds) -> None:
    """``toolchains differential numerics prepare|run``: random, non-exact operands through every release's build."""
    ns = ds.group("numerics", help="random non-exact operands through every release's build of the software-lowered "
                                   "forms: where two releases compute different D, with both SASS")
    s = ns.add_parser("prepare", help="build every form with every release (no GPU): cubins, SASS, manifest.json")
    s.add_argument("--ptxas", action="append", metavar="VERSION|PATH|all", help="releases (default: all installed)")
    s.add_argument("--select", action="append", metavar="GLOB", help="forms (default: fp8 and m8n8k4 mma.sync)")
    s.add_argument("--target", default="sm_90")
    s.add_argument("--specs", metavar="DIR")
    s.add_argument("--out", required=True, metavar="DIR")
    s.set_defaults(func=cmd_diff_prepare)
    s = ns.add_parser("run", help="GPU (CuPy): the same random words into every build; builds grouped by D")
    s.add_argument("bundle", metavar="DIR")
    s.add_argument("--out", required=True, metavar="DIR")
    s.add_argument("--cases", type=int, default=4096, help="MMAs per form")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--select", action="append", metavar="GLOB")
    s.add_argument("--specs", metavar="DIR")
    s.set_defaults(func=cmd_diff_run)


def add_fuzz_numerics(fs) -> None:
    """``ptxconf fuzz numerics`` (the ``fuzz`` verb itself is ptxconf.cli.fuzz's)."""
    s = fs.add_parser("numerics", help="compare hardware with the numerics model bit for bit")
    s.add_argument("--specs", metavar="DIR")
    s.add_argument("--select", action="append", metavar="GLOB")
    s.add_argument("--budget", type=float, default=60.0, metavar="SECONDS")
    s.add_argument("--backend", default="auto", choices=["auto", "pycuda", "emulator"])
    s.add_argument("--cases", type=int, default=4096)
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--out", default="results/numerics-fuzz")
    s.add_argument("--on", default="host", choices=["host", "gpu"],
                   help="gpu: every form of mma.sync, mma.sp, wgmma (N 8 to 256) and wgmma.sp; mma.sync drawn, run, "
                        "modelled and compared on the device through CuPy (--cases MMAs per launch), the others through "
                        "their family's probe on --backend (auto: pycuda) with the model on the device; writes "
                        "OUT/gpu-fuzz.json")
    s.set_defaults(func=cmd_fuzz)
