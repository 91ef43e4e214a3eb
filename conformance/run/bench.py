"""Benchmark: verified cases per second, batched launches vs one case per launch.

Speed is measured here, never asserted in tests.  Both paths run the same
plans (same seed, same variants, modules already JIT-compiled by a warm-up
pass) in one process; "verified" means run *and* compared against the oracle.

    ptxconf bench --backend pycuda --seed 0 [--select GLOB] [--baseline-variants 8]
"""

from __future__ import annotations

import json
import time

from ptxconf.backends.base import Backend
from ptxconf.run.runner import STAGES, Plan, plan_groups, run_module
from ptxconf.spec.loader import Specs


def _plans(backend: Backend, variants, seed: int, cases_per_launch: int | None) -> dict[tuple, list[Plan]]:
    """The run's own planning and grouping (every family), with an optional cases-per-launch override."""
    return plan_groups(backend, variants, seed, cases_per_launch=cases_per_launch)


def _timed(backend: Backend, groups: dict[tuple, list[Plan]]) -> dict:
    STAGES.clear()
    t0 = time.perf_counter()
    cases = launches = failed = 0
    for plans in groups.values():
        for outcome in run_module(backend, plans):
            cases += len(outcome.plan.in_words)
            launches += len(outcome.plan.launches)
            failed += sum(v.status != "pass" for v in outcome.verdicts)
    wall = time.perf_counter() - t0
    return {"cases": cases, "launches": launches, "wall_s": round(wall, 3),
            "cases_per_s": round(cases / wall, 1), "non_passing_checks": failed,
            "stages_s": {k: round(v, 3) for k, v in sorted(STAGES.items())}}


def bench(backend: Backend, specs: Specs, variants, seed: int, baseline_variants: int) -> dict:
    STAGES.clear()
    t0 = time.perf_counter()
    groups = _plans(backend, variants, seed, None)
    planning = {"wall_s": round(time.perf_counter() - t0, 3), "variants": sum(len(p) for p in groups.values())}
    _timed(backend, groups)  # warm-up: JIT every module once
    batched = _timed(backend, groups)
    subset = [p.variant for plans in groups.values() for p in plans][:baseline_variants]
    base_groups = _plans(backend, subset, seed, 1)
    _timed(backend, base_groups)
    baseline = _timed(backend, base_groups)
    sub_groups = _plans(backend, subset, seed, None)
    batched_subset = _timed(backend, sub_groups)
    return {
        "device": backend.info(),
        "seed": seed,
        "planning": planning,
        "backend_stats": backend.stats(),
        "batched_all_variants": batched,
        "baseline_one_case_per_launch": {**baseline, "variants": len(subset)},
        "batched_same_subset": batched_subset,
        "speedup_same_subset": round(batched_subset["cases_per_s"] / baseline["cases_per_s"], 1),
    }


def main(args) -> int:
    from ptxconf.backends import get_backend
    from ptxconf.oracle import mma
    from ptxconf.spec import load_specs

    specs = load_specs(args.specs)
    variants = specs.select(args.select) if args.select else list(specs.variants.values())
    backend = get_backend(args.backend, semantics=mma)
    try:
        result = bench(backend, specs, variants, args.seed, args.baseline_variants)
    finally:
        backend.close()
    text = json.dumps(result, indent=2)
    print(text)
    if args.output:
        with open(args.output, "w") as fh:
            fh.write(text + "\n")
    return 0


def add_parser(sub) -> None:
    b = sub.add_parser("bench", help="measure verified cases/second: batched vs one case per launch")
    b.add_argument("--specs", metavar="DIR")
    b.add_argument("--backend", default="auto", choices=["auto", "pycuda", "emulator"])
    b.add_argument("--select", action="append", metavar="GLOB")
    b.add_argument("--seed", type=int, default=0)
    b.add_argument("--baseline-variants", type=int, default=8, metavar="N",
                   help="variants in the one-case-per-launch baseline (it is slow)")
    b.add_argument("-o", "--output", metavar="FILE", help="also write the JSON here")
    b.set_defaults(func=main)
