"""Benchmark: the whole run cold and warm, verified cases per second batched vs one case per launch, and the
numerics model's dot products per second.

Speed is measured here, never asserted in tests.  Everything is taken in one invocation, so the ratios compare
like with like:

* ``suite``: ``ptxconf run`` itself, as a user types it, in a fresh process, twice: with an empty compile cache
  (cold) and then with the cache that run filled (warm); wall time and the run's own stage breakdown (plan,
  module, launch, compare, report; compile seconds from the backend) from each summary.json.
* ``batched_*`` / ``baseline_*``: the same plans (same seed, same variants, modules already built by a warm-up
  pass) in this process, batched and one case per launch; "verified" means run *and* compared.
* ``numerics``: the bit-exact arithmetic model, NumPy on the host and (with CuPy and a GPU) on the GPU; ``cpu``:
  per path kind, NumPy against the compiled kernels (numba) on the fuzzer's random batches.

    ptxconf bench --backend pycuda [--suite [--suite-select GLOB]] [--select GLOB] [--baseline-variants 8] [-o bench.json]
    ptxconf bench --numerics-only [--numerics-dots 100000]   # the CPU model alone, no GPU
    ptxconf bench --backend pycuda --suite-only [--devices all]  # only the suite's timing (each section is written to -o as it ends)
    ptxconf bench --bulk-draw [--backend pycuda] [--select GLOB]   # the bulk draw's cost per family (tools/bulkdraw.py)
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from ptxconf.backends.base import Backend
from ptxconf.isa.loader import Specs
from ptxconf.run.files import atomic_write
from ptxconf.run.runner import Plan, plan_groups, run_module
from ptxconf.run.stages import Stages

from .proccpu import run_sampled


def _plans(backend: Backend, variants, seed: int, cases_per_launch: int | None) -> dict[tuple, list[Plan]]:
    """The run's own planning and grouping (every family), with an optional cases-per-launch override."""
    return plan_groups(backend, variants, seed, cases_per_launch=cases_per_launch)


def _timed(backend: Backend, groups: dict[tuple, list[Plan]]) -> dict:
    stages = Stages()
    t0 = time.perf_counter()
    cases = launches = failed = 0
    for plans in groups.values():
        for outcome in run_module(backend, plans, stages):
            cases += len(outcome.plan.in_words)
            launches += len(outcome.plan.launches)
            failed += sum(v.status != "pass" for v in outcome.verdicts)
    wall = time.perf_counter() - t0
    return {"cases": cases, "launches": launches, "wall_s": round(wall, 3),
            "cases_per_s": round(cases / wall, 1), "non_passing_checks": failed,
            "stages_s": stages.rounded()}


def bench(backend: Backend, specs: Specs, variants, seed: int, baseline_variants: int) -> dict:
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


# Host stages (worker CPU seconds, summed over processes) against the GPU's own steps, to say what bounds a run.
HOST_STAGES = ("plan_work", "compare", "save")
# The host's own work per stage in CPU seconds (thread CPU time of the process that did it, summed over processes;
# for value checks drawn on the device, the CPU time of the processes that drive it).
HOST_CPU_STAGES = {"plan": "plan_cpu", "compare": "compare_cpu", "save": "save_cpu", "device": "device_values_cpu"}


def host_cpu(stages: dict | None, cases: int | None) -> dict:
    """CPU seconds of planning, comparing and saving of one run, their sum, and that sum per case in ms: the host's
    cost per case (a run whose summary predates the CPU stages gives none)."""
    stages = stages or {}
    per = {k: stages[name] for k, name in HOST_CPU_STAGES.items() if name in stages}
    total = sum(per.values())
    return {"cpu_s": per, "cpu_total_s": round(total, 3),
            "ms_per_case": round(1e3 * total / cases, 3) if per and cases else None,
            "ms_per_case_by_stage": {k: round(1e3 * s / cases, 3) for k, s in per.items()} if cases else {}}


def _bound(entry: dict) -> dict:
    """Host CPU-seconds per stage against the GPU worker's seconds (all devices) of one run."""
    stages = entry.get("stages_s") or {}
    stats = entry.get("backend_stats") or {}
    gpu_s = sum((stats.get("launch_steps_s") or {}).values())
    host = {k: stages.get(k) for k in HOST_STAGES if k in stages}
    return {"host_cpu_s": host, "host_cpu_total_s": round(sum(v for v in host.values() if v), 1),
            "gpu_worker_s": round(gpu_s, 3), "run_wall_s": entry.get("run_wall_s"), "cpu_s": entry.get("cpu_s")}


def suite(backend_name: str, select: list[str] | None, seed: int, devices: str | None = None, values: str = "host"
          ) -> dict:
    """``ptxconf run`` cold, then warm, then warm without observation files, each in a fresh process: what each
    summary.json says of its time, and the CPU seconds of the run's processes (``cores_busy``: CPU over wall; near
    the machine's cores, the run is bound by the host's work, not the GPU's; ``cpu_by_process``: user and system
    seconds by kind of process, read from ``/proc`` while it ran); ``host``: the CPU seconds of planning,
    comparing and saving, and their sum per case in ms.

    With *devices* (``--devices`` of ``ptxconf run``) the three runs use those GPUs, and the first of them alone is
    timed too, cold and warm with its own empty cache, in the same invocation: ``scaling`` is then the speed-up from
    the extra GPUs and what bounds each run."""
    out: dict = {}
    dev = (["--devices", devices] if devices else []) + (["--values", values] if values != "host" else [])
    configs = [("cold", dev), ("warm", dev), ("warm_no_observations", [*dev, "--no-observations"])]
    if devices:
        one = ["--devices", "0"] + (["--values", values] if values != "host" else [])
        configs += [("one_gpu_cold", one), ("one_gpu_warm", one)]
    with tempfile.TemporaryDirectory(prefix="ptxconf-bench-") as tmp:
        sel = [a for g in select or () for a in ("--select", g)]
        for label, extra in configs:
            cache = "cache-one" if label.startswith("one_gpu") else "cache"  # empty: each cold run fills its own
            env = {**os.environ, "PTXCONF_CACHE": str(Path(tmp) / cache)}
            run_dir = Path(tmp) / label
            # The ``ptxconf`` command itself (its console entry): what a user's run does before the CLI is imported
            # (a GPU run's first worker started) counts in the process wall too.
            cmd = [sys.executable, "-m", "ptxconf.console", "run", "--backend", backend_name, "--seed", str(seed),
                   "--quiet", "--out", str(run_dir), *extra, *sel]
            r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            started = time.time()
            with tempfile.TemporaryFile("w+") as err:  # a file, not a pipe: nobody reads it while the run runs
                proc, tree = run_sampled(cmd, env=env, stdout=subprocess.DEVNULL, stderr=err, text=True)
                err.seek(0)
                stderr = err.read()
            wall = time.perf_counter() - t0
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
            summary = json.loads((run_dir / "summary.json").read_text()) if (run_dir / "summary.json").exists() else {}
            out[label] = {"exit": proc.returncode, "process_wall_s": round(wall, 3), "run_wall_s": summary.get("wall_s"),
                          "cpu_s": round(cpu, 1), "cores_busy": round(cpu / wall, 1), "cores": os.cpu_count(),
                          "cpu_by_process": tree.by_kind(), "cores_busy_over_time": tree.busy(started),
                          "counts": summary.get("counts"), "cases": summary.get("cases"),
                          "stages_s": summary.get("stages_s"), "timeline_s": summary.get("timeline_s"),
                          "backend_stats": summary.get("backend_stats"),
                          "host": host_cpu(summary.get("stages_s"), summary.get("cases"))}
            if proc.returncode not in (0, 1):
                out[label]["stderr_tail"] = stderr[-2000:]
            print(f"ptxconf bench: suite {label}: {wall:.1f} s, exit {proc.returncode}", file=sys.stderr, flush=True)
    cold, warm = out["cold"].get("run_wall_s"), out["warm"].get("run_wall_s")
    out["command"] = ("ptxconf run --backend " + backend_name + (f" --devices {devices}" if devices else "")
                      + (f" --values {values}" if values != "host" else "")
                      + "".join(f" --select '{g}'" for g in select or ()))
    out["cold_over_warm"] = round(cold / warm, 2) if cold and warm else None
    if devices:
        ratio = {}
        for temp in ("cold", "warm"):
            one, many = out[f"one_gpu_{temp}"].get("run_wall_s"), out[temp].get("run_wall_s")
            ratio[f"speedup_{temp}"] = round(one / many, 2) if one and many else None
        out["scaling"] = {**ratio, "devices": devices,
                          "bound": {label: _bound(out[label]) for label in ("warm", "one_gpu_warm")}}
    return out


def bulk_rate(backend_name: str, budget_s: float, seed: int) -> dict:
    """``ptxconf fuzz layouts --bulk`` for ``budget_s`` seconds in a fresh process: its counts, rate and stages."""
    with tempfile.TemporaryDirectory(prefix="ptxconf-bench-") as tmp:
        out = Path(tmp) / "bulk.json"
        cmd = [sys.executable, "-m", "ptxconf.cli.main", "fuzz", "layouts", "--bulk", "--backend", backend_name,
               "--budget", str(budget_s), "--seed", str(seed + 1), "--json", str(out)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        doc = json.loads(out.read_text()) if out.is_file() else {"stderr_tail": proc.stderr[-2000:]}
    doc["exit"] = proc.returncode
    doc["command"] = f"ptxconf fuzz layouts --bulk --backend {backend_name} --budget {budget_s:g} --seed {seed + 1}"
    return doc


# One variant per path kind the model computes differently (block FMA of each input type, the fp8 halves, the m8n8k4
# pair sums and FMA chain, f64 FMAs, integer, .b1): the rows of the per-path CPU table.
CPU_PATH_VARIANTS = (
    "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16",
    "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
    "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
    "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",
    "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32",
    "mma.sync.aligned.m16n8k32.row.col.f16.e5m2.e4m3.f16",
    "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3/ss",
    "mma.sync.aligned.m8n8k4.row.row.f16.f16.f16.f16",
    "mma.sync.aligned.m8n8k4.row.row.f32.f16.f16.f32",
    "mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64",
    "mma.sync.aligned.m16n8k8.row.col.rz.f64.f64.f64.f64",
    "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32",
    "mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.xor.popc",
)


TARGET_DOTS_PER_S = 1e7  # every path on two cores (issue 36)


def numerics_cpu_paths(specs: Specs, dots: int = 100_000, reference_dots: int = 100_000, seed: int = 0,
                       repeats: int = 3) -> dict:
    """Dot products per second of the model on this host, per path kind: model.py's NumPy arithmetic (the reference)
    and the compiled kernels (tools/numerics/compiled.py, numba, warm), on the fuzzer's random batches (spread
    exponents, cancellation, subnormals and a few specials), and whether the two agree bit for bit on them.

    Each rate is wall-clock (the compiled kernels: the best of ``repeats`` calls) and per CPU-second of this
    process (all its threads): on a host shared with other work the second says what the code costs, the first what
    it got.  The compiled kernels are timed on every thread they take (``threads``) and on one; ``meets_target``:
    the all-thread wall rate reaches ``TARGET_DOTS_PER_S``.  The f64 reference runs in Python, a dot at a time: it
    is timed on at most 5000 dots.  ``.b1`` operands go in packed, 64 elements a word (formats.pack_words), to both."""
    from ptxconf.tools.numerics import compiled
    from ptxconf.tools.numerics.formats import pack_words
    from ptxconf.tools.numerics.fuzz import batch
    from ptxconf.tools.numerics.harness import dims, path_of, variant_of
    from ptxconf.tools.numerics.model import Types, dot_bits
    from ptxconf.tools.numerics.spec import numerics_spec

    spec = numerics_spec(specs)
    ok, why = compiled.available()
    rows = []
    for vid in CPU_PATH_VARIANTS:
        v = variant_of(specs, vid)
        p, t = path_of(spec, v), Types.of(v)
        mats, m, k, n = dims(v)
        # just the cases that hold ``dots`` dots: the rows are broadcast into one array (1e6 wgmma dots drawn from
        # 1e6/64 cases of 64 x 64 dots each would be 16 GB)
        with np.errstate(invalid="ignore", over="ignore"):
            bits = batch(v, seed, -(-dots // (mats * m * n)), sub_rate=0.02, special_rate=0.001)
        a, b, c = bits["A"], bits["B"], bits["C"]
        b = np.swapaxes(b, -1, -2)
        # .b1 operands as the packed words the kernel reads (64 elements a word), packed before they are broadcast
        packed = {"packed_k": k} if p.kind == "b1" else {}
        if packed:
            a, b = pack_words(a, 1), pack_words(b, 1)
        cs, mats, m, words = a.shape
        n = b.shape[-2]
        ad = np.broadcast_to(a[:, :, :, None, :], (cs, mats, m, n, words)).reshape(-1, words)[:dots]
        bd = np.broadcast_to(b[:, :, None], (cs, mats, m, n, words)).reshape(-1, words)[:dots]
        cd = c.reshape(-1)[:dots]
        nref = min(reference_dots, len(cd), 5000 if p.kind == "f64" else len(cd))
        (wall, cpu), want = _timed_call(1, dot_bits, p, t, ad[:nref], bd[:nref], cd[:nref], compiled=False, **packed)
        row = {"path": p.name, "kind": p.kind, "variant": vid, "k": k, "numpy_dots": nref,
               "numpy_dots_per_s": round(nref / wall), "numpy_dots_per_cpu_s": round(nref / cpu),
               "operands": "packed 64 a word" if packed else "one element a container"}
        if ok:
            # compiled (or loaded from numba's cache) once
            dot_bits(p, t, ad[:64], bd[:64], cd[:64], compiled=True, **packed)
            (wall, cpu), got = _timed_call(repeats, dot_bits, p, t, ad, bd, cd, compiled=True, **packed)
            (wall1, cpu1), _ = _timed_call(repeats, compiled.dot_bits, p, t, ad, bd, cd, n_threads=1, **packed)
            row.update({"compiled_dots": len(cd), "compiled_dots_per_s": round(len(cd) / wall),
                        "compiled_dots_per_cpu_s": round(len(cd) / cpu),
                        "compiled_1_thread_dots_per_s": round(len(cd) / wall1),
                        "compiled_1_thread_dots_per_cpu_s": round(len(cd) / cpu1),
                        "meets_target": len(cd) / wall >= TARGET_DOTS_PER_S,
                        "equal_bit_for_bit": bool(np.array_equal(got[:nref], want))})
            row["speedup"] = round(row["compiled_dots_per_s"] / row["numpy_dots_per_s"], 1)
        rows.append(row)
    return {"paths": rows, "compiled": why, "threads": compiled.threads() if ok else None, "cores": os.cpu_count(),
            "target_dots_per_s": TARGET_DOTS_PER_S,
            "load_average_1min": round(os.getloadavg()[0], 2),
            "note": "model.dot_bits uses the compiled kernels where numba is installed (the extra `fast`)"}


def _timed_call(repeats: int, fn, *args, **kwargs):
    """((best wall seconds, best CPU seconds of this process), the last result) of ``repeats`` calls."""
    wall = cpu = float("inf")
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        out = fn(*args, **kwargs)
        wall, cpu = min(wall, time.perf_counter() - w0), min(cpu, max(time.process_time() - c0, 1e-9))
    return (wall, cpu), out


def numerics_rates(specs: Specs, host_dots: int = 20000, gpu_dots: int = 1 << 22, cpu_dots: int = 100_000) -> dict:
    """Dot products per second of the arithmetic model on each main float path: NumPy here, CuPy on a GPU."""
    from ptxconf.tools.numerics import gpu
    from ptxconf.tools.numerics.harness import k_of, numeric_variants, path_of
    from ptxconf.tools.numerics.model import Types, dot_bits
    from ptxconf.tools.numerics.spec import numerics_spec

    spec = numerics_spec(specs)
    on_gpu, why = gpu.available()
    rng = np.random.default_rng(0)
    rows = []
    for v in numeric_variants(specs, families=("mma.sync",)):
        if not v.id.startswith("mma.sync.aligned.m16n8k16.row.col.f32.") or ".f8" in v.id or ".e" in v.id:
            continue
        p, t, k = path_of(spec, v), Types.of(v), k_of(v)

        def draw(n: int, k: int = k) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            # Finite inputs of moderate magnitude (sign, exponent near the bias, random fraction): rates, not edges.
            ab = (rng.integers(0x3000, 0x4400, size=(2, n, k)) | (rng.integers(0, 2, size=(2, n, k)) << 15))
            return ab[0].astype(np.uint64), ab[1].astype(np.uint64), np.zeros(n, dtype=np.uint64)

        a, b, c = draw(host_dots)
        t0 = time.perf_counter()
        want = dot_bits(p, t, a, b, c)
        row = {"variant": v.id, "k": k, "host_dots_per_s": round(host_dots / (time.perf_counter() - t0))}
        if on_gpu:
            got = gpu.dot_bits_gpu(p, t, a, b, c)  # also builds the kernel: timed below on a larger batch
            row["gpu_equals_host"] = bool(np.array_equal(want, got))
            a, b, c = draw(gpu_dots)
            t0 = time.perf_counter()
            gpu.dot_bits_gpu(p, t, a, b, c)
            row["gpu_dots_per_s_with_transfers"] = round(gpu_dots / (time.perf_counter() - t0))
        rows.append(row)
    return {"paths": rows, "gpu": on_gpu or why, "cpu": numerics_cpu_paths(specs, cpu_dots),
            "note": "the model alone; model-vs-hardware on the GPU end to end: ptxconf fuzz numerics --on gpu"}


def _emit(result: dict, output: str | None) -> int:
    text = json.dumps(result, indent=2)
    print(text)
    if output:
        with open(output, "w") as fh:
            fh.write(text + "\n")
    return 0


def main(args) -> int:
    from ptxconf.backends import get_backend
    from ptxconf.isa import load_specs
    from ptxconf.oracle import mma

    specs = load_specs(args.specs)
    if args.bulk_draw:  # the bulk fuzzer's draw alone, on the backend's array module
        from ptxconf.core.family import run_variants_of

        from .bulkdraw import FORMS, draw_costs

        run_variants_of(specs)
        forms = [v.id for v in specs.select(args.select)] if args.select else FORMS
        backend_name = "emulator" if args.backend == "auto" else args.backend
        return _emit(draw_costs(specs, forms, backend_name, args.seed + 1, args.bulk_draw_cases), args.output)
    if args.numerics_only:  # the CPU model alone: no backend, no GPU
        return _emit(numerics_cpu_paths(specs, args.numerics_dots), args.output)
    result: dict = {}

    def done(section: str, value: dict, started: float) -> None:
        """Each section is kept the moment it ends: a bench cut short (a time limit, a signal) loses only the rest."""
        result.update(value)
        if args.output:
            atomic_write(Path(args.output), json.dumps(result, indent=2) + "\n")
        print(f"ptxconf bench: {section} done in {time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)

    name = args.backend  # the backend's name for the runs in processes of their own
    if not args.suite_only:
        variants = specs.select(args.select) if args.select else list(specs.variants.values())
        backend = get_backend(args.backend, semantics=mma)
        name = backend.name
        t0 = time.perf_counter()
        try:
            done("batched", bench(backend, specs, variants, args.seed, args.baseline_variants), t0)
        finally:
            backend.close()
        t0 = time.perf_counter()
        done("numerics", {"numerics": numerics_rates(specs, cpu_dots=args.numerics_dots)}, t0)
    if name == "auto" and (args.suite or args.suite_only or args.bulk):
        name = _auto_backend()
    if args.suite or args.suite_only:  # the whole suite (every family), whatever --select narrowed the comparison to
        t0 = time.perf_counter()
        done("suite", {"suite": suite(name, args.suite_select, args.seed, args.devices, args.values)}, t0)
    if args.bulk:
        t0 = time.perf_counter()
        done("bulk_fuzz", {"bulk_fuzz": bulk_rate(name, args.bulk, args.seed)}, t0)
    print(json.dumps(result, indent=2))
    return 0


def _auto_backend() -> str:
    """The backend ``--backend auto`` picks, by name, without opening it (the suite runs in processes of its own)."""
    from ptxconf.backends import get_backend

    backend = get_backend("auto")
    try:
        return backend.name
    finally:
        backend.close()


def add_parser(sub) -> None:
    b = sub.add_parser("bench", help="measure verified cases/second: batched vs one case per launch")
    b.add_argument("--specs", metavar="DIR")
    b.add_argument("--backend", default="auto", choices=["auto", "pycuda", "emulator"])
    b.add_argument("--select", action="append", metavar="GLOB")
    b.add_argument("--seed", type=int, default=0)
    b.add_argument("--baseline-variants", type=int, default=8, metavar="N",
                   help="variants in the one-case-per-launch baseline (it is slow)")
    b.add_argument("--suite", action="store_true",
                   help="also time the whole `ptxconf run` (every family; --select narrows only the batched "
                        "comparison) cold and warm")
    b.add_argument("--suite-only", action="store_true",
                   help="only the --suite runs (cold, warm, warm without observations): no in-process batched "
                        "comparison, no numerics model")
    b.add_argument("--suite-select", action="append", metavar="GLOB",
                   help="with --suite: time `ptxconf run --select GLOB` (repeatable) instead of the whole suite, e.g. "
                        "a few families' globs on the emulator, where the whole suite takes long on a small machine")
    b.add_argument("--devices", metavar="all|N|I,J",
                   help="with --suite: run the suite on these GPUs and on the first alone, and report the speed-up "
                        "and what bounds it (host CPU-seconds per stage against the GPU's seconds)")
    b.add_argument("--values", default="host", choices=["host", "device"],
                   help="with --suite: `ptxconf run --values` (device: value checks drawn, run and compared on the GPU)")
    b.add_argument("--bulk", type=float, default=0.0, metavar="SECONDS",
                   help="also run the bulk layout fuzzer (every variant with bulk cases) this long and record its rate")
    b.add_argument("--numerics-only", action="store_true",
                   help="only the arithmetic model's dot products per second on this host, per path kind: NumPy "
                        "and compiled (numba, the extra `fast`); needs no GPU")
    b.add_argument("--numerics-dots", type=int, default=100_000, metavar="N",
                   help="dot products per path in the per-path numerics table (default 100000)")
    b.add_argument("--bulk-draw", action="store_true",
                   help="only the bulk fuzzer's draw: per form (default: every family's kinds; --select narrows), ms "
                        "per 1e4 cases on the backend's array module (NumPy; CuPy for pycuda) and its array operations "
                        "per batch by stage")
    b.add_argument("--bulk-draw-cases", type=int, metavar="N",
                   help="with --bulk-draw: at most N cases per batch (default: the fuzzer's batch on a GPU, 2048 on NumPy)")
    b.add_argument("-o", "--output", metavar="FILE", help="also write the JSON here")
    b.set_defaults(func=main)
