"""``ptxconf fuzz layouts|numerics``: fuzzers that draw fresh seeds until a time budget ends."""

from __future__ import annotations

import sys


def cmd_layouts(args) -> int:
    from ptxconf.backends import BackendError, get_backend
    from ptxconf.core.family import run_variants_of
    from ptxconf.oracle import mma
    from ptxconf.run.fuzz import fuzz_layouts
    from ptxconf.spec import load_specs

    specs = load_specs(args.specs)
    run_variants_of(specs)
    variants = specs.select(args.select) if args.select else list(specs.variants.values())
    if not variants:
        raise SystemExit(f"ptxconf fuzz layouts: --select {' '.join(args.select or [])} matches no variant")
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

    f = sub.add_parser("fuzz", help="fuzzers: fresh seeds until a time budget ends")
    fs = f.add_subparsers(dest="fuzz_command", required=True)
    s = fs.add_parser("layouts", help="every runnable variant at seed after seed; failures with their replay command")
    s.add_argument("--specs", metavar="DIR")
    s.add_argument("--select", action="append", metavar="GLOB")
    s.add_argument("--budget", type=float, default=60.0, metavar="SECONDS")
    s.add_argument("--backend", default="auto", choices=["auto", "pycuda", "emulator"])
    s.add_argument("--seed", type=int, default=1, metavar="S", help="the first seed (0 is the default run's)")
    s.add_argument("--cases", type=int, default=8, metavar="N")
    s.add_argument("--jobs", type=int, default=1, metavar="N", help="processes that plan")
    s.set_defaults(func=cmd_layouts)
    add_fuzz_numerics(fs)
