"""``ptxconf assemble``: check the spec's validity rules against ptxas, no GPU needed.

Exit status: 0 when ptxas and the spec agree everywhere (untestable rows do not
count), 1 when they disagree somewhere, 2 for usage errors (bad arch, no ptxas,
no variant selected, spec errors).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter

from ptxconf.backends.ptxas import STATUSES, PtxasNotFound, assemble_report, find_ptxas, ptxas_info
from ptxconf.core.family import family_of
from ptxconf.isa.targets import parse_target

__all__ = ["add_parser", "run", "DEFAULT_ARCHS"]

DEFAULT_ARCHS = "sm_80,sm_89,sm_90a,sm_100a,sm_120a"


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "assemble",
        help="assemble every variant with ptxas and compare with the spec's validity rules",
        description=(
            "For each arch and variant: does ptxas accept the probe kernel, and does the spec say it should? "
            "Exit 0 when they agree everywhere, 1 on any disagreement, 2 on usage errors."
        ),
    )
    p.add_argument("--arch", default=None, help=f"comma-separated targets (default {DEFAULT_ARCHS}; with --check refuse, "
                                                "every case's pinned targets)")
    p.add_argument("--select", action="append", metavar="GLOB", help="variant id glob or prefix (repeatable)")
    p.add_argument("--specs", metavar="DIR", default=None, help="spec directory (default: the tree's specs/)")
    p.add_argument("--ptxas", action="append", metavar="VERSION|PATH", default=None,
                   help="ptxas: a release installed by `ptxconf toolchains install` (13.5, 12.4.131) or a path "
                        "(default: from PATH); repeat it to check several releases one after another")
    p.add_argument("--check", default="validity", choices=["validity", "refuse"],
                   help="validity: every spec form against the spec's rules (default); refuse: the must-reject forms "
                        "of specs/refuse.yaml, each on its pinned targets (those among --arch where given)")
    p.add_argument("--json", action="store_true", help="print all rows as JSON")
    p.add_argument("--jobs", type=int, default=None, metavar="N", help="parallel ptxas processes (default: CPUs)")
    p.add_argument("--no-cache", action="store_true", help="ignore and do not fill the on-disk result cache")
    p.set_defaults(func=run)
    return p


def _bad_arch(archs: list[str], jobs: int | None) -> str | None:
    """What is wrong with ``--arch`` or ``--jobs``, or None."""
    for a in archs:
        try:
            parse_target(a)
        except ValueError as exc:
            return f"--arch: {a!r} is not a valid target: {exc}"
    if jobs is not None and jobs < 1:
        return "--jobs must be at least 1"
    return None


def _usage(msg: str) -> int:
    print(f"ptxconf assemble: error: {msg}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace) -> int:
    from ptxconf.isa import SpecError, load_specs

    if getattr(args, "check", "validity") == "refuse":
        return _refuse(args)
    archs = [a.strip() for a in (args.arch or DEFAULT_ARCHS).split(",") if a.strip()]
    if not archs:
        return _usage("--arch names no target")
    bad = _bad_arch(archs, args.jobs)
    if bad:
        return _usage(bad)
    try:
        given = [args.ptxas] if isinstance(args.ptxas, str) else (args.ptxas or [None])  # one path, or --ptxas repeated
        exes = [find_ptxas(p) for p in given]
        for exe in exes:
            ptxas_info(exe)
    except PtxasNotFound as exc:
        return _usage(f"--ptxas: {exc}")
    try:
        specs = load_specs(args.specs)
    except SpecError as exc:
        return _usage(f"spec error: {exc}")
    variants = [v for v in specs.select(args.select) if family_of(v).assembly_probe(v) is not None]
    if not variants:
        return _usage(f"--select {' '.join(args.select or [])} matches no variant")
    status = 0
    for k, exe in enumerate(dict.fromkeys(exes)):  # one release after another, each reported as when alone
        if k:
            print()
        status = max(status, _report(args, archs, exe, variants))
    return status


def _refuse(args: argparse.Namespace) -> int:
    """The must-reject forms: refused = pinned; accepted = a finding (known where specs/refuse.yaml records it).
    Exit 1 on a new finding or a crash."""
    import fnmatch

    from ptxconf.isa import SpecError, load_specs
    from ptxconf.tools.toolchains.refuse import check, refuse_spec
    from ptxconf.tools.toolchains.resolve import resolve_all

    archs = None
    if args.arch:
        archs = [a.strip() for a in args.arch.split(",") if a.strip()]
    bad = _bad_arch(archs or [], args.jobs)
    if bad:
        return _usage(bad)
    try:
        specs = load_specs(args.specs)
        spec = refuse_spec(specs)
    except SpecError as exc:
        return _usage(f"spec error: {exc}")
    except KeyError as exc:
        return _usage(f"--specs: {exc.args[0]}")
    pats = args.select or []
    cases = [c for c in spec.cases if not pats or any(
        fnmatch.fnmatchcase(x, p) or x.startswith(p) for p in pats for x in (c.instruction, c.base))]
    if not cases:
        return _usage(f"--select {' '.join(pats)} matches no must-reject case")
    try:
        given = [args.ptxas] if isinstance(args.ptxas, str) else (args.ptxas or [None])
        toolchains = resolve_all(given)
    except (PtxasNotFound, ValueError) as exc:
        return _usage(f"--ptxas: {exc}")
    status = 0
    for tc in toolchains:
        t0 = time.monotonic()
        try:
            rows = check(spec, specs, cases, archs, tc, use_cache=not args.no_cache, jobs=args.jobs or 1, sass=True)
        except KeyError as exc:
            return _usage(str(exc.args[0]))
        counts = Counter(r.status for r in rows)
        bad = [r for r in rows if r.status in ("new-finding", "crashed")]
        if args.json:
            json.dump({"release": tc.name, "cases": len(cases), "counts": dict(counts), "rows": [
                {"instruction": r.case.instruction, "step": r.case.step, "target": r.target, "status": r.status,
                 "said": r.said} for r in rows]}, sys.stdout, indent=1)
            print()
        else:
            print(f"ptxas {tc.name}: {len(cases)} must-reject case(s), {len(rows)} (case, target) cells: "
                  + ", ".join(f"{k} {counts[k]}" for k in ("pinned", "known-finding", "new-finding", "fixed", "crashed")
                              if counts[k]) + f" ({time.monotonic() - t0:.1f} s)")
            for r in rows:
                if r.status != "pinned":
                    print(f"  {r.status}: {r.case.instruction} on {r.target} ({r.case.step} {r.case.change}): {r.said}")
        status = max(status, 1 if bad else 0)
    return status


def _report(args: argparse.Namespace, archs: list[str], exe: str, variants: list) -> int:
    """One ptxas against the spec: the table (or JSON) and 1 on any disagreement."""
    info = ptxas_info(exe)
    t0 = time.monotonic()
    rows = assemble_report(variants, archs, exe, jobs=args.jobs, use_cache=not getattr(args, "no_cache", False))
    elapsed = time.monotonic() - t0
    bad = [r for r in rows if r.disagrees]

    if args.json:
        doc = {
            "ptxas": info["ptxas"],
            "release": info["release"],
            "max_ptx": str(info["max_ptx"]),
            "note": info.get("note"),
            "archs": archs,
            "variants": len(variants),
            "seconds": round(elapsed, 3),
            "disagreements": len(bad),
            "rows": [r.as_dict() for r in rows],
        }
        json.dump(doc, sys.stdout, indent=2)
        print()
        return 1 if bad else 0

    print(f"{info['ptxas']} (accepts .version up to {info['max_ptx']}); {len(variants)} variant(s) x {len(archs)} arch(s)")
    if info.get("note"):
        print(f"note: {info['note']}")
    counts: dict[str, Counter] = {a: Counter() for a in archs}
    for r in rows:
        counts[r.arch][r.status] += 1
    width = max(len(a) for a in archs + ["arch"])
    header = f"{'arch':<{width}}  " + "  ".join(f"{s:>{max(len(s), 5)}}" for s in STATUSES)
    print(header)
    for a in archs:
        print(f"{a:<{width}}  " + "  ".join(f"{counts[a][s]:>{max(len(s), 5)}}" for s in STATUSES))
    untestable = sum(c["untestable"] for c in counts.values())
    if untestable:
        reasons = Counter(r.actual_reason for r in rows if r.status == "untestable")
        for why, n in reasons.most_common():
            print(f"untestable ({n}): {why}")
    if bad:
        print()
        print(f"{len(bad)} disagreement(s):")
        vwidth = max(len(r.variant) for r in bad)
        for r in bad:
            print(f"{r.arch:<{width}}  {r.variant:<{vwidth}}  {r.describe()}")
    else:
        print("ptxas and the spec agree on every testable (arch, variant).")
    print(f"({elapsed:.1f} s)")
    return 1 if bad else 0
