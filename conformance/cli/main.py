"""``ptxconf``: list and draw specs, run the suite, replay recorded runs, assemble with ptxas.

The CLI only wires layers together; each command's work lives in its layer.
Errors for people: a bad spec prints ``file:line: field: message``; an unknown
variant prints "did you mean"; exit status 2 for usage errors.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shlex
import sys
import time
from pathlib import Path

import numpy as np
from ptxconf import __version__, registry
from ptxconf.run.exit import ExitStatus
from ptxconf.run.signals import StopSignals
from ptxconf.spec import SpecError, load_specs

EXIT_USAGE = ExitStatus.USAGE

# Tools register their own subcommands: one line here per module (families add theirs through the registry).
EXTENSIONS = (
    "ptxconf.cli.assemble",
    "ptxconf.tools.bench",
    "ptxconf.cli.discover",
    "ptxconf.cli.docs",
    "ptxconf.tools.hgemm.cli",
    "ptxconf.cli.numerics",
    "ptxconf.cli.diff",
    "ptxconf.cli.fuzz",
    "ptxconf.cli.toolchains",
    "ptxconf.cli.programs",
)


def _specs(args):
    return load_specs(args.specs)


def _variant(specs, vid: str):
    try:
        return specs.get(vid)
    except KeyError as exc:
        raise SystemExit(f"ptxconf: {exc.args[0]}") from None


def _operand(v, name: str):
    if name not in v.operands:
        raise SystemExit(f"ptxconf: {v.id} has no operand {name!r}; it has {', '.join(v.operands)}")
    return v.operands[name]


# --- specs ------------------------------------------------------------------


def cmd_specs_list(args) -> int:
    specs = _specs(args)
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
    specs = _specs(args)
    v = _variant(specs, args.variant)
    op = _operand(v, args.operand)
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
    from ptxconf.figures import operand_figure

    specs = _specs(args)
    v = _variant(specs, args.variant)
    _operand(v, args.operand)
    suffix = Path(args.output).suffix.lower()
    if suffix not in (".svg", ".png"):
        raise SystemExit(f"ptxconf: -o {args.output}: the figure must end in .svg or .png")
    if args.operand == "metadata":
        from ptxconf.figures import metadata_figure

        metadata_figure(v, args.output)  # bit fields labelled [hi:lo], as the ISA draws them
    else:
        operand_figure(v, args.operand, args.output)
    print(args.output)
    return 0


# --- run / replay -------------------------------------------------------------


def _run_backend(args, semantics):
    """The run's backend: one device, or with ``--devices`` one backend per GPU behind one interface."""
    from ptxconf.backends import get_backend

    kw = dict(semantics=semantics, build=args.build, use_cache=not args.no_cache, ptxas=_run_ptxas(args))
    if not getattr(args, "devices", None):
        return get_backend(args.backend, **kw)
    if args.backend == "emulator":
        raise SystemExit("ptxconf run: --devices picks GPUs; the emulator runs on this CPU (leave --devices out)")
    from ptxconf.backends.devices import DeviceSet, parse_devices
    from ptxconf.backends.pycuda_backend import device_count

    try:
        ids = parse_devices(args.devices, device_count())
    except ValueError as exc:
        raise SystemExit(f"ptxconf run: --devices {exc}") from None
    first = get_backend("pycuda", device=ids[0], **kw)
    if len(ids) == 1:
        return first
    return DeviceSet([first] + [get_backend("pycuda", device=i, builds_from=first, **kw) for i in ids[1:]])


def cmd_run(args) -> int:
    own = getattr(args, "stop", None) is None  # ``main`` takes the signals before it builds the parser
    stop = StopSignals().install() if own else args.stop
    try:
        status = _cmd_run(args, stop)
        return stop.exit_status if stop.requested else status  # also a signal after the last report
    finally:
        if own:
            stop.release()  # after the last report


def _cmd_run(args, stop) -> int:
    from ptxconf.backends import BackendError
    from ptxconf.core.family import family_of, run_variants_of, select_checks
    from ptxconf.oracle import mma
    from ptxconf.run.report import RunLog, git_revision, specs_hash
    from ptxconf.run.session import RunSession, UsageError, prepare_out_dir, recorded_done, take_lock

    try:
        checks = select_checks(args.check, args.undefined)
    except ValueError as exc:
        raise SystemExit(f"ptxconf: --check {exc}") from None
    specs = _specs(args)
    run_variants_of(specs)  # runnable variants derived from documents (e.g. tcgen05 Table 39 tuples), for this run only
    variants = specs.select(args.select) if args.select else list(specs.variants.values())
    if checks is not None:  # only the variants that make a check asked for
        picked = [v for v in variants if family_of(v).checks_of(v, checks)]
        if variants and not picked:
            raise SystemExit(f"ptxconf: no selected variant makes {', '.join(checks)}")
        variants = picked
    if not variants:
        hint = ""
        if args.select:
            import difflib

            close = difflib.get_close_matches(args.select[0], list(specs.variants), n=2, cutoff=0.5)
            hint = f"; did you mean {' or '.join(close)}?" if close else ""
        raise SystemExit(f"ptxconf: --select {' '.join(args.select or [])} matches no variant{hint}")
    out_dir = Path(args.out)
    stop.writing()  # from here a signal is a request the run finishes cleanly
    try:
        prepare_out_dir(out_dir, args.force, args.resume)
        out_dir.mkdir(parents=True, exist_ok=True)
        lock = take_lock(out_dir)
    except UsageError as exc:
        raise SystemExit(f"ptxconf run: {exc}") from None
    try:
        done = recorded_done(out_dir, args.seed) if args.resume else set()
        try:
            backend = _run_backend(args, mma)
            info = backend.info()
        except BackendError as exc:
            raise SystemExit(f"ptxconf: backend {args.backend}: {exc}") from None
        if info.get("auto"):
            print(f"ptxconf: --backend auto: {info['auto']}", file=sys.stderr)
        header = {
            "command": "ptxconf " + shlex.join(getattr(args, "argv", None) or sys.argv[1:]),
            "git_revision": git_revision(),
            "specs_hash": specs_hash(specs),
        }
        log = RunLog(out_dir, info, args.seed, Path(args.junit) if args.junit else None, label=args.label,
                     flavor=args.junit_flavor, header=header)
        if args.resume:
            log.load_recorded(done)
        session = RunSession(specs, variants, out_dir, log, args.seed, checks,
                             args.cases, save_observations=not args.no_observations, quiet=args.quiet,
                             verbose=args.verbose, skip_done=done, signals=stop,
                             jobs=args.jobs or (os.cpu_count() or 1))
        started = time.time()
        try:
            status = session.run(backend)
        finally:
            backend.close()
            log.close()
        session.print_outcome(time.time() - started)
        return status
    except UsageError as exc:
        raise SystemExit(f"ptxconf run: {exc}") from None
    finally:
        lock.release()


def _run_ptxas(args) -> str | None:
    """``--ptxas VERSION|PATH``: the ptxas that builds the run's cubins (a release installed by ``ptxconf toolchains
    install``, or a path); None: the one on PATH."""
    if not args.ptxas:
        return None
    from ptxconf.backends.ptxas import PtxasNotFound, find_ptxas

    try:
        return find_ptxas(args.ptxas)
    except PtxasNotFound as exc:
        raise SystemExit(f"ptxconf run: --ptxas: {exc}") from None


def cmd_replay(args) -> int:
    from ptxconf.run.replay import replay_dir

    specs = _specs(args)
    return replay_dir(
        specs,
        Path(args.directory),
        junit=Path(args.junit) if args.junit else None,
        quiet=args.quiet,
        out=Path(args.out) if args.out else None,
    )


# --- parser -------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ptxconf", description=__doc__.splitlines()[0])
    p.add_argument("--version", action="version", version=f"ptxconf {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    def specs_arg(sp):
        sp.add_argument("--specs", metavar="DIR", help="spec directory (default: the specs/ shipped with the suite)")

    sp = sub.add_parser("specs", help="list, show and draw spec variants")
    ssub = sp.add_subparsers(dest="specs_command", required=True)
    s = ssub.add_parser("list", help="list every variant")
    specs_arg(s)
    s.add_argument("--select", action="append", metavar="GLOB", help="only variants matching this prefix or glob")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_specs_list)
    s = ssub.add_parser("show", help="one operand's lane map")
    specs_arg(s)
    s.add_argument("variant")
    s.add_argument("--operand", required=True, metavar="A|B|C|D|scale_A|scale_B")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_specs_show)
    s = ssub.add_parser("figure", help="draw an operand's lane/register grid (SVG or PNG)")
    specs_arg(s)
    s.add_argument("variant")
    s.add_argument("--operand", required=True)
    s.add_argument("-o", "--output", required=True, metavar="FILE")
    s.set_defaults(func=cmd_specs_figure)

    r = sub.add_parser("run", help="run the conformance suite")
    specs_arg(r)
    r.add_argument("--backend", default="auto", choices=["auto", "pycuda", "emulator"])
    r.add_argument("--select", action="append", metavar="GLOB", help="variant id, prefix or glob (repeatable)")
    r.add_argument("--check", action="append", metavar="CHECK",
                   help="value, map.A, map.B, map.C, ... or a glob such as 'undefined.*' (repeatable; default each family's)")
    r.add_argument("--undefined", action="store_true",
                   help="also run the checks of inputs the ISA leaves undefined: what the hardware did is recorded "
                        "as 'undefined by the ISA', never as a pass or a failure")
    r.add_argument("--cases", type=int, default=8, metavar="N", help="random cases per variant for the value check")
    r.add_argument("--seed", type=int, default=0, metavar="S")
    r.add_argument("--out", default="ptxconf-results", metavar="DIR")
    r.add_argument("--junit", metavar="FILE", help="JUnit XML path (default DIR/junit.xml)")
    r.add_argument("--no-observations", action="store_true", help="do not save raw inputs/outputs")
    r.add_argument("-q", "--quiet", action="store_true", help="no progress lines or bar")
    r.add_argument("-v", "--verbose", action="store_true", help="list every failure (default: the first 20)")
    r.add_argument("--build", default="auto", choices=["auto", "ptxas", "jit"],
                   help="GPU: assemble modules with ptxas in parallel (cached) or hand PTX to the driver JIT")
    r.add_argument("--ptxas", metavar="VERSION|PATH",
                   help="GPU: the ptxas that builds the cubins: a release (13.5, 12.4.131; see ptxconf toolchains) "
                        "or a path (default: the one on PATH); summary.json names it")
    r.add_argument("--no-cache", action="store_true", help="GPU: neither read nor fill the compiled-module cache")
    r.add_argument("--devices", metavar="all|N|I,J",
                   help="run on several GPUs at once (CUDA ordinals, the first N, or all): modules go to whichever "
                        "device is free; the same verdicts, in the same order, as on one")
    r.add_argument("--jobs", type=int, default=0, metavar="N",
                   help="processes that plan variants, and as many that compare them (default: one per core; 1: "
                        "everything in this process)")
    r.add_argument("--force", action="store_true", help="replace the run already in --out")
    r.add_argument("--resume", action="store_true", help="continue the run in --out, skipping what it recorded")
    r.add_argument("--label", metavar="NAME", help="the run's name in JUnit classnames (default: the --out folder name)")
    r.add_argument("--junit-flavor", default="jenkins", choices=["jenkins", "gitlab"],
                   help="jenkins: valid against junit-10.xsd and Ant's schema; gitlab: adds file= on each testcase")
    r.set_defaults(func=cmd_run)

    r = sub.add_parser("replay", help="re-run the comparators on a recorded run, without a GPU")
    specs_arg(r)
    r.add_argument("directory", metavar="DIR")
    r.add_argument("--junit", metavar="FILE")
    r.add_argument("--out", metavar="OUT", help="write results.jsonl and junit.xml of the replay here")
    r.add_argument("--quiet", action="store_true")
    r.set_defaults(func=cmd_replay)

    for module in EXTENSIONS:
        importlib.import_module(module).add_parser(sub)
    for fam in registry.families():
        fam.add_cli(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    # ``run`` takes its signals first, before the parser (0.6 s of imports): a signal at any moment is a clean stop.
    stop = StopSignals().install() if words[:1] == ["run"] else None
    try:
        return _main(words, stop)
    finally:
        if stop is not None:
            stop.release()  # after the last report


def _main(argv: list[str], stop) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "cases", 1) is not None and getattr(args, "cases", 1) < 1:
        parser.error("--cases must be at least 1")
    args.argv, args.stop = argv, stop
    try:
        return args.func(args)
    except SpecError as exc:
        print(f"ptxconf: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except SystemExit as exc:  # a command's usage or environment error: its one line, exit 2
        if isinstance(exc.code, str):
            print(exc.code, file=sys.stderr)
            return EXIT_USAGE
        raise
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:  # Ctrl-C before a command took the signal (``run`` takes it first thing)
        return ExitStatus.INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
