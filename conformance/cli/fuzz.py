"""``ptxconf fuzz layouts|numerics``: fuzzers that draw fresh seeds until a time budget ends."""

from __future__ import annotations

import sys


def _bulk(args, variants: list) -> int:
    """``fuzz layouts --bulk``: draw, run and compare on the device (see :mod:`ptxconf.run.bulkfuzz`)."""
    import json

    from ptxconf.backends.bulk_device import CupyDevice, EmulatedDevice, cuda_devices
    from ptxconf.run.bulkfuzz import fuzz_bulk

    if args.backend == "emulator":
        if args.devices:
            raise SystemExit("ptxconf fuzz layouts: --devices picks GPUs; the emulator runs on this CPU (leave --devices out)")
        ids, backend_name = [0], "emulator"

        def make(ordinal: int):
            return EmulatedDevice()
    else:
        from ptxconf.backends.devices import parse_devices

        try:
            ids = parse_devices(args.devices, cuda_devices()[0]) if args.devices else [0]
        except ValueError as exc:
            raise SystemExit(f"ptxconf fuzz layouts: --devices {exc}") from None
        backend_name = "pycuda"

        def make(ordinal: int):
            return CupyDevice(ordinal, ptxas=args.ptxas, use_cache=not args.no_cache)

    def progress(res) -> None:
        print(f"ptxconf fuzz layouts: {res.runs} variant-seeds, {res.cases} cases, {len(res.failures)} failures, "
              f"{res.cases_per_s:.0f} cases/s", flush=True)

    cases = args.cases if args.cases != 8 else 65536
    res = fuzz_bulk(make, ids, variants, args.budget, args.seed, cases=cases, batch=min(args.batch, cases),
                    backend_name=backend_name, on_progress=progress)
    if res.fatal:
        print(f"ptxconf fuzz layouts: the device could not be opened: {res.fatal}", file=sys.stderr)
        return 2
    for line in res.failures:
        print(f"FAIL {line}")
    if res.unsupported:
        print(f"{len(res.unsupported)} variant(s) not fuzzed in bulk here (not runnable on this GPU, or no bulk cases: "
              f"fuzz those without --bulk); e.g. {next(iter(res.unsupported.items()))}")
    stages = ", ".join(f"{k} {v:.1f} s" for k, v in res.stages_s.items())
    print(f"{res.runs - res.failed_runs} passed, {res.failed_runs} failed over {res.seeds} seeds on "
          f"{len(res.devices)} device(s) ({res.cases} cases, {res.cases_per_s:.0f} verified cases/s, {res.seconds:.1f} s; "
          f"{stages})")
    if args.json:
        doc = {"schema": "bulk-fuzz/1", "devices": res.devices, "budget_s": args.budget, "first_seed": args.seed,
               "cases_per_seed": cases, "batch": min(args.batch, cases), "seeds": res.seeds, "variant_seeds": res.runs, "failed_variant_seeds": res.failed_runs,
               "cases": res.cases, "seconds": round(res.seconds, 3), "cases_per_s": round(res.cases_per_s),
               "stages_s": {k: round(v, 3) for k, v in res.stages_s.items()}, "cases_by_family": res.by_family,
               "failures": res.failures, "unsupported": res.unsupported, "restarts": res.restarts,
               "command": "ptxconf fuzz layouts --bulk " + " ".join(sys.argv[3:]).replace("--bulk", "").strip()}
        with open(args.json, "w") as fh:
            json.dump(doc, fh, indent=1)
    return 1 if res.failures else 0


def cmd_case(args) -> int:
    """``fuzz case``: one bulk case, drawn on the host, run through the backend's ordinary launch path."""
    import numpy as np
    from ptxconf.backends import BackendError, Launch, get_backend
    from ptxconf.core.bulk import bulk_record
    from ptxconf.core.family import family_of, run_variants_of
    from ptxconf.isa import load_specs
    from ptxconf.oracle import mma

    specs = load_specs(args.specs)
    run_variants_of(specs)
    try:
        v = specs.get(args.variant)
    except KeyError as exc:
        raise SystemExit(f"ptxconf fuzz case: {exc.args[0]}") from None
    if args.case < 0:
        raise SystemExit("ptxconf fuzz case: --case must be >= 0")
    try:
        backend = get_backend(args.backend, semantics=mma)
        backend.info()
    except BackendError as exc:
        raise SystemExit(f"ptxconf fuzz case: backend {args.backend}: {exc}") from None
    fam = family_of(v)
    try:
        try:
            cc = getattr(backend, "cc_for", lambda _v: backend.compute_capability())(v)
            if args.check:  # one of the value check's kernels, as ``ptxconf run --values device`` ran it
                named = {b.check: b for b in fam.bulk_value_cases(v, args.seed, cc, backend.max_ptx())}
                if args.check not in named:
                    raise SystemExit(f"ptxconf fuzz case: --check {args.check}: {v.id}'s value check has "
                                     f"{', '.join(named)}")
                bc = named[args.check]
            else:
                bc = fam.bulk_cases(v, args.seed, cc, backend.max_ptx())
        except NotImplementedError as exc:
            raise SystemExit(f"ptxconf fuzz case: {exc}") from None
        drawn = bc.draw(np, args.case, 1)
        source = fam.module_source([bc.probe], bc.version, bc.target)
        result = backend.run(source, [Launch(bc.probe, drawn.in_words, bc.out_words, np.zeros(1, np.uint32), 1)])[0]
    finally:
        backend.close()
    if result.error:
        print(f"FAIL {v.id}:{bc.check}:seed={args.seed}:case={args.case}: {result.error}")
        return 1
    vd = fam.compare(v, bulk_record(bc, drawn.in_words, result.out))
    same = bool(((result.out == drawn.expected) | ~drawn.defined[None]).all())
    if vd.status == "pass" and same:
        print(f"PASS {v.id}:{bc.check}:seed={args.seed}:case={args.case} ({backend.name}, {bc.target.name}, .version {bc.version})")
        return 0
    print(f"FAIL {v.id}:{bc.check}:seed={args.seed}:case={args.case}: {vd.message if vd.status != 'pass' else 'words differ from the bulk prediction'}")
    return 1


def cmd_layouts(args) -> int:
    from ptxconf.backends import BackendError, get_backend
    from ptxconf.core.family import run_variants_of
    from ptxconf.isa import load_specs
    from ptxconf.oracle import mma
    from ptxconf.run.fuzz import fuzz_layouts

    specs = load_specs(args.specs)
    run_variants_of(specs)
    variants = specs.select(args.select) if args.select else list(specs.variants.values())
    if not variants:
        raise SystemExit(f"ptxconf fuzz layouts: --select {' '.join(args.select or [])} matches no variant")
    if args.bulk:
        return _bulk(args, variants)
    try:
        backend = get_backend(args.backend, semantics=mma)
        backend.info()
    except BackendError as exc:
        raise SystemExit(f"ptxconf fuzz layouts: backend {args.backend}: {exc}") from None

    last = [0.0]

    def on_round(res, seed: int) -> None:
        if res.seconds - last[0] < 5.0:  # a line every 5 s at most (CI logs)
            return
        last[0] = res.seconds
        print(f"ptxconf fuzz layouts: seed {seed} done; {res.seeds} seeds, {res.checks} checks, {res.cases} cases, "
              f"{len(res.failures)} failures, {res.cases_per_s:.0f} cases/s", flush=True)

    try:
        res = fuzz_layouts(backend, variants, args.budget, args.seed, value_cases=args.cases, jobs=args.jobs,
                           on_round=on_round)
    finally:
        backend.close()
    for line in res.failures:
        print(f"FAIL {line}")
    print(f"{res.checks - len(res.failures)} passed, {len(res.failures)} failed over {res.seeds} seeds "
          f"({res.cases} cases, {res.cases_per_s:.0f} verified cases/s, {res.seconds:.1f} s)", file=sys.stdout)
    return 1 if res.failures else 0


def add_parser(sub) -> None:
    from ptxconf.cli.numerics import add_fuzz_numerics

    fs = sub.group("fuzz", help="fuzzers: fresh seeds until a time budget ends")
    s = fs.add_parser("layouts", help="every runnable variant at seed after seed; failures with their replay command")
    s.add_argument("--specs", metavar="DIR")
    s.add_argument("--select", action="append", metavar="GLOB")
    s.add_argument("--budget", type=float, default=60.0, metavar="SECONDS")
    s.add_argument("--backend", default="auto", choices=["auto", "pycuda", "emulator"])
    s.add_argument("--seed", type=int, default=1, metavar="S", help="the first seed (0 is the default run's)")
    s.add_argument("--cases", type=int, default=8, metavar="N")
    s.add_argument("--jobs", type=int, default=1, metavar="N", help="processes that plan")
    s.add_argument("--bulk", action="store_true",
                   help="draw, run and compare on the device (GPU through CuPy, or the emulator): millions of cases a "
                        "second; --cases is then per variant and seed (default 65536)")
    s.add_argument("--batch", type=int, default=65536, metavar="N", help="--bulk: cases per launch")
    s.add_argument("--devices", metavar="all|N|I,J", help="--bulk: GPUs to fuzz on at once (one worker each)")
    s.add_argument("--ptxas", metavar="PATH", help="--bulk: the ptxas that builds the probes")
    s.add_argument("--no-cache", action="store_true", help="--bulk: build every probe module afresh")
    s.add_argument("--json", metavar="FILE", help="--bulk: write the counts, rates and stages here")
    s.set_defaults(func=cmd_layouts)
    c = fs.add_parser("case", help="replay one --bulk case on any backend (the line a failure prints)")
    c.add_argument("variant")
    c.add_argument("--seed", type=int, required=True)
    c.add_argument("--case", type=int, required=True)
    c.add_argument("--check", metavar="CHECK",
                   help="the value check's kernel the case ran in (value[...], as a run with --values device names "
                        "it; default: the fuzzer's own draw of the seed)")
    c.add_argument("--backend", default="auto", choices=["auto", "pycuda", "emulator"])
    c.add_argument("--specs", metavar="DIR")
    c.set_defaults(func=cmd_case)
    add_fuzz_numerics(fs)
