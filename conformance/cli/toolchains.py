"""``ptxconf toolchains list|install|path|matrix|neighbourhood|pin-refusals|ld-red|sp-vectors|differential``: many ptxas releases side by side.

Exit status: 0 done (matrix: no disagreement; differential run: every build agrees and passes), 1 a
disagreement or failure found, 2 a usage or environment error (one line naming the argument).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

__all__ = ["add_parser"]

DEFAULT_ARCHS = "sm_80,sm_89,sm_90a,sm_100a,sm_103a,sm_110a,sm_120a"


def _fail(msg: str) -> SystemExit:
    return SystemExit(f"ptxconf toolchains: {msg}")


def _command(args) -> str:
    return "ptxconf " + shlex.join(getattr(args, "argv", None) or sys.argv[1:])


def _releases(values: list[str]):
    from ptxconf.tools.toolchains.releases import select

    try:
        return select(",".join(values))
    except ValueError as exc:
        raise _fail(f"VERSION: {exc}") from None


def cmd_list(args) -> int:
    from ptxconf.backends.ptxas import installed_toolchains
    from ptxconf.tools.toolchains.install import installed_record
    from ptxconf.tools.toolchains.releases import RELEASES

    installed = installed_toolchains()
    rows = [{"release": r.version, "package": r.package, "installed": r.version in installed,
             "max_ptx": str(r.max_ptx), "targets": list(r.targets)} for r in RELEASES]
    mismatches = []
    if args.check:  # what each installed binary says now, against the table
        from ptxconf.tools.toolchains.facts import learn

        for row in rows:
            if row["installed"]:
                facts = learn(installed[row["release"]])
                if str(facts.max_ptx) != row["max_ptx"] or list(facts.targets) != row["targets"]:
                    mismatches.append(f"{row['release']}: the binary takes .version up to {facts.max_ptx} and knows "
                                      f"{' '.join(facts.targets)}; the table says {row['max_ptx']}, "
                                      f"{' '.join(row['targets'])}")
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        print(f"{'release':<10} {'installed':<9} {'max PTX':<7} targets")
        for row in rows:
            rec = installed_record(row["release"]) if row["installed"] else None
            mark = "yes" if rec else ("yes*" if row["installed"] else "no")
            print(f"{row['release']:<10} {mark:<9} {row['max_ptx']:<7} {' '.join(row['targets'])}")
        n = sum(r["installed"] for r in rows)
        print(f"{len(rows)} releases, {n} installed (ptxconf toolchains install VERSION...|all)", file=sys.stderr)
    for line in mismatches:
        print(f"mismatch: {line}", file=sys.stderr)
    return 1 if mismatches else 0


def cmd_install(args) -> int:
    from ptxconf.backends.ptxas import toolchains_dir
    from ptxconf.tools.toolchains.install import InstallError, install

    if args.wheel_dir and not Path(args.wheel_dir).is_dir():
        raise _fail(f"--wheel-dir {args.wheel_dir}: not a directory")
    releases = _releases(args.versions)
    failed = 0
    for rel in releases:
        t0 = time.monotonic()
        try:
            record, warnings = install(rel, wheel_dir=Path(args.wheel_dir) if args.wheel_dir else None,
                                       force=args.force)
        except InstallError as exc:
            print(f"ptxconf toolchains install: {rel.version}: {exc}", file=sys.stderr)
            failed += 1
            continue
        print(f"{rel.version}: {record['ptxas']} (.version up to {record['max_ptx']}) "
              f"[{time.monotonic() - t0:.1f} s]", flush=True)
        for w in warnings:
            print(f"warning: {w}", file=sys.stderr)
    print(f"{len(releases) - failed} of {len(releases)} installed in {toolchains_dir()}", file=sys.stderr)
    return 1 if failed else 0


def cmd_path(args) -> int:
    from ptxconf.backends.ptxas import PtxasNotFound, installed_ptxas
    from ptxconf.tools.toolchains.releases import lookup

    try:
        print(installed_ptxas(lookup(args.version).version))
    except (ValueError, PtxasNotFound) as exc:
        raise _fail(f"VERSION: {exc}") from None
    return 0


def _toolchains(values: list[str] | None):
    from ptxconf.backends.ptxas import PtxasNotFound
    from ptxconf.tools.toolchains.resolve import resolve_all

    try:
        return resolve_all(values)
    except (PtxasNotFound, ValueError) as exc:
        raise _fail(f"--ptxas: {exc}") from None


def _targets(text: str):
    from ptxconf.isa.targets import parse_target

    names = [a.strip() for a in (text or "").split(",") if a.strip()]
    if not names:
        raise _fail("--arch names no target")
    try:
        return [parse_target(a) for a in names]
    except ValueError as exc:
        raise _fail(f"--arch: {exc}") from None


def _forms(args):
    from ptxconf.core.family import family_of
    from ptxconf.isa import SpecError, load_specs

    try:
        specs = load_specs(args.specs)
    except SpecError as exc:
        raise _fail(f"--specs: {exc}") from None
    forms = [v for v in specs.select(args.select) if family_of(v).assembly_probe(v) is not None]
    if not forms:
        raise _fail(f"--select {' '.join(args.select or [])} matches no form")
    return specs, forms


def cmd_matrix(args) -> int:
    from ptxconf.tools.toolchains.matrix import build_matrix
    from ptxconf.tools.toolchains.report import write_outputs

    if args.jobs < 1:
        raise _fail("--jobs must be at least 1")
    if args.chunk < 1:
        raise _fail("--chunk must be at least 1")
    targets = _targets(args.arch)
    toolchains = _toolchains(args.ptxas)
    _, forms = _forms(args)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise _fail(f"--out {out}: exists and is not a directory")
    print(f"{len(forms)} forms x {len(targets)} targets x {len(toolchains)} releases "
          f"({', '.join(tc.name for tc in toolchains)})", flush=True)
    t0 = time.monotonic()
    progress = _progress(t0, "modules settled")

    mat, stats = build_matrix(forms, targets, toolchains, jobs=args.jobs, chunk=args.chunk,
                              use_cache=not args.no_cache, sass=args.sass, on_progress=progress)
    doc = write_outputs(out, mat, forms, targets, toolchains, command=_command(args),
                        wall_s=time.monotonic() - t0, stats=stats, jobs=args.jobs)
    if args.sass:
        from ptxconf.tools.toolchains.report import lowering_history

        shown = 0
        for t in mat.targets:
            for i, form in enumerate(mat.forms):
                h = lowering_history(mat, t, i)
                if h and shown < 40:
                    print(f"{t} {form}: accepted, and lowered to {h}")
                    shown += 1
        if shown == 40:
            print(f"(every cell in {out / 'lowered.json'})")
        for line in doc.get("sass_missing", []):
            print(f"warning: no SASS read: {line}", file=sys.stderr)
    codes = ", ".join(f"{k} {n}" for k, n in doc["codes"].items() if n)
    print(f"{doc['cells']} cells ({codes}); {doc['ptxas_runs']} ptxas runs in {doc['wall_s']} s")
    for kind, n in doc["findings"].items():
        print(f"{kind}: {n}")
    print(f"wrote {', '.join(str(out / f) for f in ('summary.md', 'findings.json', 'matrix.csv.gz'))}")
    return 1 if doc["findings"] else 0


def cmd_neighbourhood(args) -> int:
    import random

    from ptxconf.tools.toolchains.differential import representative
    from ptxconf.tools.toolchains.neighbourhood import fresh, narrowed, neighbours, run_campaign
    from ptxconf.tools.toolchains.neighbourhood_report import load_campaign, prior_codes, write_outputs

    if args.jobs < 1 or args.chunk < 1:
        raise _fail("--jobs and --chunk must be at least 1")
    if args.sample is not None and args.sample < 1:
        raise _fail("--sample must be at least 1")
    if args.reorders < 1:
        raise _fail("--reorders must be at least 1")
    priors = [Path(p) for p in args.prior or ()]
    for src in priors:
        if not (src / "cells.csv.gz").is_file():
            raise _fail(f"--prior {src}: no cells.csv.gz (run: ptxconf toolchains neighbourhood --out DIR)")
    if priors and args.refused_share is None and not args.fresh:
        raise _fail("--prior needs --refused-share F (which share of the neighbours refused before to ask again)")
    if args.refused_share is not None and not 0 <= args.refused_share <= 1:
        raise _fail("--refused-share must be between 0 and 1")
    targets = [t.name for t in _targets(args.arch)]
    toolchains = _toolchains(args.ptxas)
    _, forms = _forms(args)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise _fail(f"--out {out}: exists and is not a directory")
    bases = representative(forms) if args.forms == "representative" else forms
    known = sorted({t for tc in toolchains for t in tc.targets})
    if args.fresh and not priors:
        raise _fail("--fresh needs --prior CAMPAIGN (the campaigns whose neighbours to leave out)")
    if args.fresh:  # what the generator makes now that the earlier campaigns never asked about
        _, every = _forms(argparse.Namespace(specs=args.specs, select=None))
        ns, said = fresh(bases, known, set(prior_codes(priors)), reorders=args.reorders, universe=every)
        note = f"{args.forms}: {len(bases)} of {len(forms)} selected; {said} ({', '.join(d.name for d in priors)})"
        if args.reorders > 1:
            note += f"; one in {args.reorders} reorder steps"
    elif priors:  # the earlier campaigns' own neighbours (of forms still in the specs), narrowed
        by_id = {v.id: v for v in forms}
        ns = list({n.id: n for d in priors for n in load_campaign(d)[0].neighbours if n.base in by_id}.values())
        ns, said = narrowed(ns, prior_codes(priors), args.refused_share, args.seed)
        note = f"the neighbours of {', '.join(d.name for d in priors)}; " + said
    else:
        _, every = _forms(argparse.Namespace(specs=args.specs, select=None))
        ns = neighbours(bases, known, reorders=args.reorders, universe=every)
        note = f"{args.forms}: {len(bases)} of {len(forms)} selected"
        if args.reorders > 1:
            note += f"; one in {args.reorders} reorder steps"
    if args.sample is not None and args.sample < len(ns):
        ns = sorted(random.Random(args.seed).sample(ns, args.sample), key=ns.index)
        note += f"; a sample of {args.sample} neighbours drawn with seed {args.seed}"
    print(f"{len(ns)} neighbours of {len({n.base for n in ns})} forms x {len(targets)} targets x {len(toolchains)} releases "
          f"({', '.join(tc.name for tc in toolchains)})", flush=True)
    t0 = time.monotonic()
    camp = run_campaign(ns, {v.id: v for v in forms}, targets, toolchains, jobs=args.jobs, chunk=args.chunk,
                        use_cache=not args.no_cache, sass=not args.no_sass,
                        on_progress=_progress(t0, "modules settled"))
    doc = write_outputs(out, camp, command=_command(args), wall_s=time.monotonic() - t0,
                        forms=len({n.base for n in ns}) if priors else len(bases), forms_note=note)
    codes = ", ".join(f"{k} {n}" for k, n in doc["codes"].items() if n)
    print(f"{doc['cells']} cells ({codes}); {doc['ptxas_runs']} ptxas runs in {doc['wall_s']} s")
    for kind, n in doc["findings"].items():
        print(f"{kind}: {n} (neighbour, target) pairs")
    for line in doc["sass_missing"]:
        print(f"warning: no SASS read: {line}", file=sys.stderr)
    print(f"wrote {', '.join(str(out / f) for f in ('summary.md', 'findings.json', 'cells.csv.gz'))}")
    return 1 if doc["findings"] else 0


def cmd_neighbourhood_summary(args) -> int:
    from ptxconf.tools.toolchains.neighbourhood_report import history, overview

    dirs = [Path(c) for c in args.campaign]
    for src in dirs:
        if not (src / "summary.json").is_file() or not (src / "cells.csv.gz").is_file():
            raise _fail(f"CAMPAIGN {src}: no summary.json and cells.csv.gz (run: ptxconf toolchains neighbourhood --out DIR)")
    root = Path(args.root) if args.root else None
    if root is not None and any(not d.resolve().is_relative_to(root.resolve()) for d in dirs):
        raise _fail(f"--root {root}: every CAMPAIGN must lie under it")
    print(overview(dirs, title=args.title, root=root))
    print("## Acceptance history\n")
    print("Each (neighbour, target) pair some release accepted outside the specs, grouped by the releases that accepted "
          "it and the ones that refused it (a release that did not run the cell is neither).\n")
    print(history(dirs, root), end="")
    if args.json:
        from ptxconf.run.files import atomic_write
        from ptxconf.tools.toolchains.neighbourhood_report import history_rows

        doc = {"title": args.title, "campaigns": []}
        for d in dirs:
            one = json.loads((d / "summary.json").read_text())
            doc["campaigns"].append({
                "campaign": d.resolve().relative_to(root.resolve()).as_posix() if root else d.name,
                **{k: one[k] for k in ("command", "releases", "targets", "neighbours", "cells", "codes", "findings",
                                       "forms_note")}})
        doc["history"] = history_rows(dirs, root)
        atomic_write(Path(args.json), (json.dumps(doc, indent=1) + "\n").encode())
    return 0


def cmd_neighbourhood_merge(args) -> int:
    from ptxconf.tools.toolchains.neighbourhood_report import MergeError, load_campaign, merged, write_outputs

    dirs = [Path(c) for c in args.campaign]
    for src in dirs:
        if not all((src / f).is_file() for f in ("summary.json", "cells.csv.gz", "words.json")):
            raise _fail(f"CAMPAIGN {src}: no summary.json, cells.csv.gz and words.json "
                        "(run: ptxconf toolchains neighbourhood --out DIR)")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise _fail(f"--out {out}: exists and is not a directory")
    loaded = [load_campaign(d) for d in dirs]
    try:
        camp = merged([c for c, _ in loaded])
    except MergeError as exc:
        raise _fail(f"CAMPAIGN {' '.join(map(str, dirs))}: {exc}") from None
    note = "merged from " + "; ".join(f"{len(doc['releases'])} releases: {doc['forms_note']} (`{doc['command']}`)"
                                      for _, doc in loaded)
    doc = write_outputs(out, camp, command=_command(args), wall_s=sum(d["wall_s"] for _, d in loaded),
                        forms=len({n.base for n in camp.neighbours}), forms_note=note)
    print(f"{doc['neighbours']} neighbours, {doc['cells']} cells over {len(doc['releases'])} releases; wrote {out}")
    return 0


def cmd_pin_refusals(args) -> int:
    from ptxconf.run.files import atomic_write
    from ptxconf.tools.toolchains.refuse import pin

    dirs = [Path(c) for c in args.campaign]
    for src in dirs:
        if not (src / "cells.csv.gz").is_file() or not (src / "words.json").is_file():
            raise _fail(f"CAMPAIGN {src}: no cells.csv.gz and words.json (run: ptxconf toolchains neighbourhood --out DIR)")
    if args.per_group < 1:
        raise _fail("--per-group must be at least 1")
    keep, base_ok = [], None
    if args.keep or args.max_ptx:
        from ptxconf.isa import SpecError, load_specs
        from ptxconf.isa.targets import PtxVersion
        from ptxconf.tools.toolchains.refuse import refuse_spec

        try:
            specs = load_specs(args.specs)
            keep = refuse_spec(specs).cases if args.keep else []
            limit = PtxVersion.parse(args.max_ptx) if args.max_ptx else None
        except (SpecError, KeyError, ValueError) as exc:
            raise _fail(f"--keep/--max-ptx: {exc}") from None
        if limit is not None:
            def base_ok(base: str) -> bool:
                return base in specs.variants and specs.variants[base].min_ptx <= limit
    text = pin(dirs, per_group=args.per_group, keep=keep, base_ok=base_ok,
               source=args.source or "ptxconf toolchains neighbourhood: " + ", ".join(d.name for d in dirs))
    atomic_write(Path(args.out), text.encode())
    print(f"{args.out}: {text.count(chr(10) + '  - ')} cases")
    return 0


def cmd_ld_red(args) -> int:
    from ptxconf.tools.toolchains.ld_red import check_ld_red

    return _check_transcription(args, "ld_red", check_ld_red, "tcgen05.ld.red")


def cmd_sp_vectors(args) -> int:
    from ptxconf.tools.toolchains.sp_vectors import check_sp_vectors

    return _check_transcription(args, "sparse_vectors", check_sp_vectors, "spcompress/spdecompress", stem="sp_vectors")


def _check_transcription(args, section: str, check, what: str, *, stem: str | None = None) -> int:
    """One section of specs/tcgen05.yaml, every form of it through every release and target asked (``check``)."""
    from ptxconf.families.tcgen05.spec import SpecError, load_tcgen05

    targets = [t.name for t in _targets(args.arch)]
    toolchains = _toolchains(args.ptxas)
    try:
        spec = getattr(load_tcgen05(args.specs), section)
    except SpecError as exc:
        raise _fail(f"--specs: {exc}") from None
    if spec is None:
        raise _fail(f"--specs: the tcgen05 document transcribes no {section}")
    t0 = time.monotonic()
    cells = check(spec, targets, toolchains, use_cache=not args.no_cache)
    return _report_form_cells(args, cells, targets, [tc.name for tc in toolchains], t0, what, stem or section)


def _report_form_cells(args, cells: dict, targets: list[str], order: list[str], t0: float, what: str,
                       stem: str) -> int:
    """Print and (with --out) write a per-form check over releases and targets: ``STEM.json`` (the cells grouped
    by target, code and what ptxas or the spec said, with the releases) and ``cells.json.gz`` (every cell)."""
    import gzip
    from collections import Counter

    from ptxconf.run.files import atomic_write
    from ptxconf.tools.toolchains.report import release_ranges

    per: dict[tuple[str, str, str], list[str]] = {}
    for cs in cells.values():
        for c in cs:
            if c.code != "-":
                per.setdefault((c.target, c.code, c.said), []).append(c.release)
    rows = []
    for (target, code, said), rels in sorted(per.items()):
        rows.append({"target": target, "code": code, "cells": len(rels),
                     "releases": release_ranges(sorted(set(rels), key=order.index), order), "said": said})
    codes = Counter(c.code for cs in cells.values() for c in cs)
    doc = {"command": _command(args), "forms": len(cells), "targets": targets, "releases": order,
           "codes": dict(codes), "wall_s": round(time.monotonic() - t0, 1), "groups": rows}
    shown: dict[tuple[str, str, str], list[str]] = {}
    for r in rows:
        shown.setdefault((r["target"], r["code"], r["releases"]), []).append(r["said"])
    for (target, code, releases), said in shown.items():
        print(f"{target:<8} {code} {releases}: {len(said)} distinct ({'; '.join(said[:3])}{'; ...' if len(said) > 3 else ''})")
    print(f"{len(cells)} {what} forms x {len(targets)} targets x {len(order)} releases: "
          + ", ".join(f"{k} {n}" for k, n in sorted(codes.items())) + f" [{doc['wall_s']} s]")
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        cells_doc = {"command": doc["command"],
                     "cells": {form: [[c.release, c.target, c.version, c.code, c.said] for c in cs]
                               for form, cs in cells.items()}}
        atomic_write(out / f"{stem}.json", (json.dumps(doc, indent=1) + "\n").encode())
        atomic_write(out / "cells.json.gz", gzip.compress(json.dumps(cells_doc).encode(), mtime=0))
        print(f"wrote {out / f'{stem}.json'}, {out / 'cells.json.gz'}")
    return 1 if codes.get("X") or codes.get("F") or codes.get("C") else 0


def _progress(t0: float, what: str):
    """A progress callback ``(done, total)`` that prints a line every 10 s and at the end (CI logs, no terminal)."""
    last = [t0]

    def progress(done: int, total: int) -> None:
        now = time.monotonic()
        if now - last[0] >= 10 or done == total:
            last[0] = now
            print(f"  {done}/{total} {what}, {now - t0:.0f} s", flush=True)

    return progress


def cmd_prepare(args) -> int:
    from ptxconf.core.plan import support_reason
    from ptxconf.isa.targets import PtxVersion
    from ptxconf.run.report import specs_hash
    from ptxconf.tools.toolchains.differential import CC, prepare, representative

    try:
        opts = sorted({int(x) for x in args.opt.split(",") if x.strip()})
    except ValueError:
        raise _fail(f"--opt {args.opt}: expected ptxas -O levels such as 0,3") from None
    if not opts or any(o not in (0, 1, 2, 3) for o in opts):
        raise _fail(f"--opt {args.opt}: expected ptxas -O levels 0 to 3, such as 0,3")
    if args.cases < 1 or args.jobs < 1:
        raise _fail("--cases and --jobs must be at least 1")
    if not args.out.endswith(".tar.xz"):
        raise _fail(f"--out {args.out}: the bundle is one .tar.xz file")
    toolchains = _toolchains(args.ptxas or ["all"])
    specs, forms = _forms(args)
    forms = [v for v in forms if support_reason(v, CC, PtxVersion(9, 0)) is None]  # what an sm_90a GPU runs
    if args.forms == "representative":
        forms = representative(forms)
    if not forms:
        raise _fail(f"--select {' '.join(args.select or [])} matches no form an sm_90a GPU runs")
    t0 = time.monotonic()
    progress = _progress(t0, "builds")

    print(f"{len(forms)} forms x {len(toolchains)} releases x -O{',-O'.join(map(str, opts))}", flush=True)
    manifest = prepare(forms, toolchains, opts, Path(args.out), seed=args.seed, value_cases=args.cases,
                       jobs=args.jobs, command=_command(args), specs_hash=specs_hash(specs),
                       use_cache=not args.no_cache, on_progress=progress)
    failed = sum(isinstance(b, dict) for m in manifest["modules"] for b in m["builds"].values())
    size = Path(args.out).stat().st_size
    print(f"{args.out}: {manifest['forms']} forms in {len(manifest['modules'])} modules, {manifest['cubins']} distinct "
          f"cubins ({manifest['cubin_bytes'] / 1e6:.1f} MB), {failed} builds refused; {size / 1e6:.1f} MB "
          f"[{time.monotonic() - t0:.0f} s]")
    return 0


def cmd_run_bundle(args) -> int:
    from ptxconf.backends import BackendError, get_backend
    from ptxconf.isa import SpecError, load_specs
    from ptxconf.oracle import mma
    from ptxconf.tools.toolchains.differential import run_bundle

    bundle = Path(args.bundle)
    if not bundle.is_file():
        raise _fail(f"BUNDLE {bundle}: no such file (make one with: ptxconf toolchains differential prepare)")
    try:
        specs = load_specs(args.specs)
    except SpecError as exc:
        raise _fail(f"--specs: {exc}") from None
    try:
        backend = get_backend(args.backend, semantics=mma, build="jit", use_cache=False)
        info = backend.info()
    except BackendError as exc:
        raise _fail(f"--backend {args.backend}: {exc}") from None
    if info.get("auto"):
        print(f"ptxconf: --backend auto: {info['auto']}", file=sys.stderr)
    last = [time.monotonic()]

    def progress(done: int, total: int) -> None:
        if time.monotonic() - last[0] >= 10 or done == total:
            last[0] = time.monotonic()
            print(f"  module {done}/{total}", flush=True)

    try:
        doc = run_bundle(bundle, backend, specs, Path(args.out), select=args.select, builds=args.build,
                         bundle_name=args.bundle, on_module=progress)
    except (ValueError, OSError, EOFError) as exc:  # not a bundle, a damaged one, another format
        raise _fail(f"BUNDLE {bundle}: {exc}") from None
    finally:
        backend.close()
    found = ", ".join(f"{k} {n}" for k, n in doc["findings"].items()) or "none"
    print(f"{doc['forms']} forms x up to {doc['builds_per_form']} builds on {doc['device'].get('gpu', '?')}: "
          f"{doc['forms_with_one_output']} with one output for every build; findings: {found} [{doc['wall_s']} s]")
    print(f"wrote {Path(args.out) / 'differential.json'}")
    if doc["forms"] == 0 and doc["stale_modules"]:
        raise _fail(f"BUNDLE {bundle}: every selected module is stale (specs changed since prepare)")
    return 1 if doc["findings"] else 0


def add_differential(ts) -> None:
    ds = ts.group("differential", help="the same probes built by every release at -O0/-O3 and the JIT: "
                                       "bit-identical results that pass the spec")
    s = ds.add_parser("prepare", help="build the bundle (needs the releases installed; no GPU)")
    s.add_argument("--ptxas", action="append", metavar="VERSION|PATH|all", help="releases (default: all)")
    s.add_argument("--opt", default="0,3", metavar="LEVELS", help="ptxas -O levels (default 0,3)")
    s.add_argument("--select", action="append", metavar="GLOB", help="form id, prefix or glob (repeatable)")
    s.add_argument("--forms", default="representative", choices=["representative", "all"],
                   help="representative: of forms differing only in N, the smallest, middle and largest (default)")
    s.add_argument("--specs", metavar="DIR")
    s.add_argument("--seed", type=int, default=0, metavar="S")
    s.add_argument("--cases", type=int, default=8, metavar="N", help="random cases per form for the value check")
    s.add_argument("--jobs", type=int, default=2, metavar="N", help="ptxas processes at a time (default 2)")
    s.add_argument("--no-cache", action="store_true", help="neither read nor fill the cubin cache")
    s.add_argument("--out", required=True, metavar="BUNDLE.tar.xz")
    s.set_defaults(func=cmd_prepare)
    s = ds.add_parser("run", help="run a bundle on the GPU (or the emulator): compare every build's results")
    s.add_argument("bundle", metavar="BUNDLE")
    s.add_argument("--out", required=True, metavar="DIR")
    s.add_argument("--backend", default="auto", choices=["auto", "pycuda", "emulator"])
    s.add_argument("--select", action="append", metavar="GLOB", help="only these forms of the bundle")
    s.add_argument("--build", action="append", metavar="NAME", help="only these builds (jit, 13.0.88-O3, ...)")
    s.add_argument("--specs", metavar="DIR")
    s.set_defaults(func=cmd_run_bundle)
    from .numerics import add_differential_numerics

    add_differential_numerics(ds)


def add_parser(sub) -> None:
    from ptxconf.tools.toolchains.matrix import DEFAULT_CHUNK

    ts = sub.group("toolchains", help="ptxas releases side by side: install them, the acceptance matrix, "
                                      "differential execution")

    s = ts.add_parser("list", help="every known release: installed or not, highest .version, targets")
    s.add_argument("--json", action="store_true")
    s.add_argument("--check", action="store_true", help="ask each installed binary again; exit 1 on a mismatch")
    s.set_defaults(func=cmd_list)

    s = ts.add_parser("install", help="pip download a release's wheel into the toolchains cache and unpack its ptxas")
    s.add_argument("versions", nargs="+", metavar="VERSION", help="13.5, 13.5.37, ... or all")
    s.add_argument("--wheel-dir", metavar="DIR", help="take the wheels from DIR (no index)")
    s.add_argument("--force", action="store_true", help="install again even where present")
    s.set_defaults(func=cmd_install)

    s = ts.add_parser("path", help="the ptxas of an installed release")
    s.add_argument("version", metavar="VERSION")
    s.set_defaults(func=cmd_path)

    s = ts.add_parser("matrix", help="every form x target x release: assembled or refused, against the spec")
    s.add_argument("--ptxas", action="append", metavar="VERSION|PATH|all",
                   help="releases (repeatable, or comma-separated; default: the ptxas on PATH)")
    s.add_argument("--arch", default=DEFAULT_ARCHS, help=f"comma-separated targets (default {DEFAULT_ARCHS})")
    s.add_argument("--select", action="append", metavar="GLOB", help="form id, prefix or glob (repeatable)")
    s.add_argument("--specs", metavar="DIR")
    s.add_argument("--jobs", type=int, default=2, metavar="N", help="ptxas processes at a time (default 2)")
    s.add_argument("--chunk", type=int, default=DEFAULT_CHUNK, metavar="N",
                   help=f"kernels per module (default {DEFAULT_CHUNK})")
    s.add_argument("--no-cache", action="store_true", help="neither read nor fill the assemble cache")
    s.add_argument("--sass", action="store_true", help="build cubins and record which matrix instruction each "
                                                       "assembled cell's SASS holds (lowered.json; needs cuobjdump)")
    s.add_argument("--out", required=True, metavar="DIR")
    s.set_defaults(func=cmd_matrix)

    s = ts.add_parser("neighbourhood", help="every form one step from a spec form, with every release and target: "
                                            "refused, accepted outside the specs (and lowered to what), or emptied")
    s.add_argument("--ptxas", action="append", metavar="VERSION|PATH|all",
                   help="releases (repeatable, or comma-separated; default: the ptxas on PATH)")
    s.add_argument("--arch", default=DEFAULT_ARCHS, help=f"comma-separated targets (default {DEFAULT_ARCHS})")
    s.add_argument("--select", action="append", metavar="GLOB", help="spec forms whose neighbours to try (repeatable)")
    s.add_argument("--forms", default="representative", choices=["representative", "all"],
                   help="representative: of forms differing only in N or .row/.col, the smallest and largest N "
                        "(default)")
    s.add_argument("--sample", type=int, metavar="N", help="only N neighbours, drawn with --seed")
    s.add_argument("--prior", action="append", metavar="CAMPAIGN",
                   help="an earlier campaign's --out folder (repeatable): ask about its neighbours, those it did not "
                        "refuse somewhere, every target and .version step, and --refused-share of the rest")
    s.add_argument("--fresh", action="store_true",
                   help="with --prior: only the neighbours the generator makes now that the earlier campaigns never "
                        "tried (the specs or the generator grew since)")
    s.add_argument("--refused-share", type=float, metavar="F",
                   help="with --prior: the share of the neighbours it refused everywhere to ask again (seeded)")
    s.add_argument("--reorders", type=int, default=1, metavar="N",
                   help="keep one in N reorder steps, the same ones every time (default 1: all)")
    s.add_argument("--seed", type=int, default=0, metavar="S")
    s.add_argument("--specs", metavar="DIR")
    s.add_argument("--jobs", type=int, default=1, metavar="N", help="ptxas processes at a time (default 1)")
    s.add_argument("--chunk", type=int, default=DEFAULT_CHUNK, metavar="N",
                   help=f"kernels per module (default {DEFAULT_CHUNK})")
    s.add_argument("--no-sass", action="store_true", help="do not read the SASS of accepted cells")
    s.add_argument("--no-cache", action="store_true", help="neither read nor fill the assemble cache")
    s.add_argument("--out", required=True, metavar="DIR")
    s.set_defaults(func=cmd_neighbourhood)

    s = ts.add_parser("neighbourhood-summary", help="one table over several neighbourhood campaigns, with the history "
                                                     "of every form accepted outside the specs across their releases")
    s.add_argument("campaign", nargs="+", metavar="CAMPAIGN", help="--out folders of ptxconf toolchains neighbourhood")
    s.add_argument("--title", default="The neighbourhood of specs/", metavar="TEXT")
    s.add_argument("--root", metavar="DIR", help="the folder the table goes into: links are relative to it")
    s.add_argument("--json", metavar="FILE", help="also write the campaigns' totals and the history as JSON")
    s.set_defaults(func=cmd_neighbourhood_summary)

    s = ts.add_parser("neighbourhood-merge", help="one campaign from neighbourhood campaigns of one family that "
                                                   "asked other releases (or neighbours): history across all of them")
    s.add_argument("campaign", nargs="+", metavar="CAMPAIGN", help="--out folders of ptxconf toolchains neighbourhood")
    s.add_argument("--out", required=True, metavar="DIR")
    s.set_defaults(func=cmd_neighbourhood_merge)

    s = ts.add_parser("pin-refusals", help="write the must-reject cases (specs/refuse.yaml) from a neighbourhood "
                                           "campaign's files")
    s.add_argument("campaign", nargs="+", metavar="CAMPAIGN", help="--out folders of ptxconf toolchains neighbourhood")
    s.add_argument("--out", required=True, metavar="FILE")
    s.add_argument("--per-group", type=int, default=6, metavar="N",
                   help="cases per (family, step, change) of refused and of accepted neighbours (default 6)")
    s.add_argument("--source", metavar="TEXT", help="what the file says it was pinned from")
    s.add_argument("--keep", action="store_true",
                   help="keep the cases the specs' refuse document already pins, and add the campaigns' new ones")
    s.add_argument("--max-ptx", metavar="X.Y", help="pin only neighbours of forms a ptxas taking .version X.Y can "
                                                    "assemble (CI's ptxas 13.0: 9.0)")
    s.add_argument("--specs", metavar="DIR")
    s.set_defaults(func=cmd_pin_refusals)

    s = ts.add_parser("ld-red", help="every tcgen05.ld.red form of specs/tcgen05.yaml with every release and target, "
                                     "against the spec, with the LDTM instruction each assembled one became")
    s.add_argument("--ptxas", action="append", metavar="VERSION|PATH|all",
                   help="releases (repeatable, or comma-separated; default: the ptxas on PATH)")
    s.add_argument("--arch", default="sm_100a,sm_100f,sm_103a,sm_103f,sm_107a,sm_107f,sm_110a,sm_110f,sm_120a",
                   help="comma-separated targets")
    s.add_argument("--specs", metavar="DIR")
    s.add_argument("--no-cache", action="store_true", help="neither read nor fill the cubin cache")
    s.add_argument("--out", metavar="DIR", help="write ld_red.json here")
    s.set_defaults(func=cmd_ld_red)

    s = ts.add_parser("sp-vectors", help="every spcompress/spdecompress form (ISA 9.4) with every release and target "
                                         "that takes .version 9.4, against the spec's rules")
    s.add_argument("--ptxas", action="append", metavar="VERSION|PATH|all",
                   help="releases (repeatable, or comma-separated; default: the ptxas on PATH)")
    s.add_argument("--arch", default="sm_100a,sm_103a,sm_107a,sm_107f,sm_110a,sm_120a", help="comma-separated targets")
    s.add_argument("--specs", metavar="DIR")
    s.add_argument("--no-cache", action="store_true", help="neither read nor fill the assemble cache")
    s.add_argument("--out", metavar="DIR", help="write sp_vectors.json here")
    s.set_defaults(func=cmd_sp_vectors)

    add_differential(ts)
