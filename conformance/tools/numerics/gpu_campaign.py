"""``ptxconf fuzz numerics --on gpu``: every selected form fuzzed against the model, each by the fuzzer that takes it.

Dense mma.sync runs gpu_fuzz.py's device-only loop (draw, mma, model and compare on the GPU); wgmma, mma.sp and
wgmma.sp run probe_fuzz.py's loop through their family's probe on the backend, with the model on the GPU.  The budget
is shared out as it goes (each form an equal share of what is left, so compile time and slow forms cannot overrun it),
and the record gives dot products and rates per form and per family.
"""

from __future__ import annotations

import json
import os
import time
from collections import defaultdict
from pathlib import Path

from ptxconf.isa.model import Variant

from . import gpu
from .gpu_fuzz import SCHEMA, device_info, fuzz_variant_gpu, support_reason
from .harness import dims, path_of, probe_module
from .model import Types
from .probe_fuzz import PROBE_FAMILIES, fuzz_variant_probe, sparse_model_on_gpu, stored_k

WRITE_EVERY_S = 20.0


def record(info: dict, args, skipped: list, rows: list[dict], complete: bool) -> dict:
    """The campaign's document (gpu-fuzz.json): device, every form's record, totals per family and overall."""
    families = defaultdict(lambda: {"variants": 0, "dots": 0, "seconds": 0.0, "mismatches": 0, "confirmed": 0})
    for r in rows:
        f = families[r["family"]]
        f["variants"] += 1
        f["dots"] += r["dots"]
        f["seconds"] = round(f["seconds"] + r["seconds"], 3)
        f["mismatches"] += r["mismatches"]
        f["confirmed"] += r["confirmed"]
    for f in families.values():
        f["dots_per_s"] = round(f["dots"] / f["seconds"]) if f["seconds"] else 0
    dots = sum(r["dots"] for r in rows)
    wall = sum(r["seconds"] for r in rows)
    return {"schema": SCHEMA, "status": "complete" if complete else "running", "device": info,
            "budget_s": args.budget, "seed": args.seed, "cases_per_launch": args.cases,
            "skipped": [{"variant": vid, "why": why} for vid, why in skipped], "variants": rows,
            "families": dict(families),
            "total": {"dots": dots, "seconds": round(wall, 3), "dots_per_s": round(dots / wall) if wall else 0,
                      "compile_s": round(sum(r.get("compile_s", 0.0) for r in rows), 3),
                      "mismatches": sum(r["mismatches"] for r in rows), "confirmed": sum(r["confirmed"] for r in rows),
                      "gpu_model_errors": sum(r["gpu_model_errors"] for r in rows),
                      "audit_errors": sum(r["audit_errors"] for r in rows)}}


def write(out: Path, doc: dict) -> None:
    """gpu-fuzz.json replaced whole (a temporary file renamed over it)."""
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / "gpu-fuzz.json.tmp"
    tmp.write_text(json.dumps(doc, indent=1, default=str) + "\n")
    os.replace(tmp, out / "gpu-fuzz.json")


def plan(spec, chosen: list[Variant]) -> tuple[list[tuple[str, Variant, object]], list[tuple[str, str]]]:
    """(runnable ``(fuzzer, variant, path)`` rows, skipped ``(variant id, why)`` rows)."""
    runnable, skipped = [], []
    for v in chosen:
        p = path_of(spec, v)
        why = support_reason(v)
        fuzzer = "device" if why is None else "probe" if v.family in PROBE_FAMILIES else None
        if fuzzer is None:
            skipped.append((v.id, why))
            continue
        try:
            if fuzzer == "device" or v.family == "wgmma" or sparse_model_on_gpu(p):
                gpu.check(p, Types.of(v), dims(v)[2] if fuzzer == "device" else stored_k(v))
        except gpu.NotOnGpu as exc:
            skipped.append((v.id, str(exc)))
            continue
        runnable.append((fuzzer, v, p))
    return runnable, skipped


PREFETCH_AHEAD = 32  # probe forms whose modules the backend builds ahead (its ptxas pool: one process per core)


def prefetch(backend, runnable: list, i: int, ahead: int) -> int:
    """Hand the backend the modules of the probe forms after form ``i`` to build while this one runs; the new mark."""
    stop = min(len(runnable), i + 1 + PREFETCH_AHEAD)
    for fuzzer, v, _ in runnable[max(ahead, i + 1) : stop]:
        if fuzzer == "probe":
            backend.prefetch(probe_module(backend, v)[1])
    return max(ahead, stop)


def _line(st: dict) -> str:
    sg = st["stages_s"]
    return (f"{st['variant']}: {st['dots']:,} dots in {st['seconds']:.1f} s = {st['dots_per_s']:,.0f} dots/s "
            f"(draw {sg['draw']:.2f} s, hardware {sg['hardware']:.2f} s, model {sg['model']:.2f} s, compare "
            f"{sg['compare']:.2f} s, host {sg['host']:.2f} s); {st['mismatches']} mismatching dots, {st['replayed']} "
            f"replayed through model.py: {st['confirmed']} confirmed, {st['gpu_model_errors']} GPU-model errors; audit "
            f"{st['audit_errors']}/{st['audited']}")


def fuzz_on_gpu(spec, chosen: list[Variant], args, backend_factory=None) -> int:
    """Fuzz ``chosen`` within ``args.budget`` seconds; writes ``args.out``/gpu-fuzz.json; 1 if anything mismatched.

    ``backend_factory()`` gives the backend the probe fuzzer runs the families' probes on (made when first needed)."""
    if args.cases < 1:
        raise SystemExit("ptxconf fuzz numerics --on gpu: --cases must be at least 1 (MMAs per launch)")
    runnable, skipped = plan(spec, chosen)
    for vid, why in skipped:
        print(f"{vid}: skipped: {why}")
    if not runnable:
        raise SystemExit("ptxconf fuzz numerics --on gpu: no selected variant runs on the GPU path")
    try:
        info = device_info()
    except gpu.GpuUnavailable as exc:
        raise SystemExit(f"ptxconf fuzz numerics --on gpu: {exc}") from None
    out = Path(args.out)
    backend = None
    rows, failed, ahead = [], False, 0
    t_end = time.monotonic() + args.budget
    next_write = time.monotonic() + WRITE_EVERY_S
    try:
        for i, (fuzzer, v, p) in enumerate(runnable):
            per = max((t_end - time.monotonic()) / (len(runnable) - i), 0.0)
            try:
                if fuzzer == "device":
                    st = fuzz_variant_gpu(v, p, per, args.cases, out / "mismatches", args.seed)
                    st["family"] = v.family
                else:
                    if backend is None:
                        backend = backend_factory()
                        info["probe_backend"] = backend.info()
                    ahead = prefetch(backend, runnable, i, ahead)
                    st = fuzz_variant_probe(backend, v, p, per, args.cases, out / "mismatches", args.seed)
            except (RuntimeError, gpu.NotOnGpu) as exc:  # a launch that failed: this form's record says so, the rest go on
                st = {"variant": v.id, "family": v.family, "path": p.name, "error": f"{type(exc).__name__}: {exc}",
                      "dots": 0, "seconds": 0.0, "mismatches": 0, "replayed": 0, "confirmed": 0, "gpu_model_errors": 0,
                      "audited": 0, "audit_errors": 0, "saved": [], "examples": [], "dots_per_s": 0,
                      "stages_s": dict.fromkeys(("draw", "hardware", "model", "compare", "host"), 0.0)}
                print(f"{v.id}: ERROR {st['error']}", flush=True)
                failed = True
            st["fuzzer"] = fuzzer
            rows.append(st)
            if "error" not in st:
                print(_line(st), flush=True)
            for s in st["saved"]:
                print(f"  saved {s}")
            for row in st["examples"]:
                if not row["gpu_model_ok"]:
                    print(f"  GPU MODEL ERROR: a={row['a']} b={row['b']} c={row['c']} model.py {row['model']} "
                          f"GPU model {row['gpu_model']}")
            failed |= bool(st["mismatches"] or st["gpu_model_errors"] or st["audit_errors"])
            if time.monotonic() >= next_write:  # a campaign stopped part way keeps what it measured
                write(out, record(info, args, skipped, rows, complete=False))
                next_write = time.monotonic() + WRITE_EVERY_S
    finally:
        if backend is not None:
            backend.close()
    doc = record(info, args, skipped, rows, complete=True)
    write(out, doc)
    families = doc["families"]
    for name, f in sorted(families.items()):
        print(f"family {name}: {f['variants']} forms, {f['dots']:,} dots in {f['seconds']:.1f} s = "
              f"{f['dots_per_s']:,.0f} dots/s; {f['mismatches']} mismatches ({f['confirmed']} confirmed)")
    tot = doc["total"]
    print(f"total: {tot['dots']:,} dots in {tot['seconds']:.1f} s = {tot['dots_per_s']:,.0f} model-vs-hardware dots/s; "
          f"{tot['mismatches']} mismatches ({tot['confirmed']} confirmed by model.py), {tot['gpu_model_errors']} GPU-model "
          f"errors, {tot['audit_errors']} audit errors; backend cupy on {info['device']}, built by {info['ptxas']} "
          f"-> {out / 'gpu-fuzz.json'}")
    return 1 if failed else 0
