"""Measure and fuzz: designed experiments per variant (one launch), findings, compact observations."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
from ptxconf.isa.model import Variant
from ptxconf.isa.sparse import is_sparse

from .experiments import design, group_bits, infer
from .harness import alternatives, diagonal, k_of, path_of, place, run_mma
from .model import Types
from .spec import NumericsSpec


def measure(backend, spec: NumericsSpec, v: Variant, infer_now: bool = True) -> dict:
    """All designed groups of ``v`` in one launch; per group: consistent parameter values vs the model.

    ``infer_now=False`` records the groups and the raw observations only (the inference runs offline:
    ``ptxconf numerics pin``), which keeps a GPU run short."""
    p = path_of(spec, v)
    groups = design(v, p, alternatives(spec, v))
    parts = [group_bits(v, g) for g in groups]
    a = np.concatenate([x[0] for x in parts])
    b = np.concatenate([x[1] for x in parts])
    c = np.concatenate([x[2] for x in parts])
    pos = np.concatenate([g.pos_bits for g in groups]) if is_sparse(v) else None
    t0 = time.time()
    bits, where = place(v, a, b, c, pos=pos)
    obs = diagonal(run_mma(backend, v, bits), where)
    out = {"variant": v.id, "path": p.name, "model": p.describe(), "groups": [], "seconds": 0.0,
           "observations": {"a": a, "b": b, "c": c, "d": obs} | ({"pos": pos} if pos is not None else {})}
    pos_at = 0
    for g, (ga, gb, gc) in zip(groups, parts):
        n = len(gc)
        if not infer_now:
            out["groups"].append({"group": g.name, "params": list(g.param), "cases": n})
            pos_at += n
            continue
        r = infer(v, p, g, ga, gb, gc, obs[pos_at : pos_at + n])
        pos_at += n
        out["groups"].append({"group": r.group, "params": list(r.params), "model": r.model, "consistent": r.consistent[:48],
                              "n_consistent": len(r.consistent), "agrees": r.agrees, "cases": r.cases, "mismatches": r.mismatches})
    out["seconds"] = round(time.time() - t0, 3)
    return out


def findings(spec: NumericsSpec, measured: list[dict], fuzzed: list[dict]) -> dict:
    """Per path: departures of the hardware from the model (and hence from the cited source)."""
    paths: dict[str, dict] = {}
    for m in measured:
        e = paths.setdefault(m["path"], {"variants": [], "departures": [], "inferred": {}, "status": spec.status.get(m["path"], {})})
        e["variants"].append(m["variant"])
        for g in m["groups"]:
            if g["n_consistent"] and len(g["params"]):
                e["inferred"].setdefault(g["group"], g["consistent"][:6])
            if not g["agrees"]:
                e["departures"].append({"variant": m["variant"], "group": g["group"], "model": g["model"],
                                        "consistent": g["consistent"][:6], "cases": g["mismatches"][:5]})
    for f in fuzzed:
        e = paths.setdefault(f["path"], {"variants": [], "departures": [], "inferred": {}, "status": {}})
        e.setdefault("fuzz", []).append({k: f[k] for k in ("variant", "launches", "dots", "mismatches", "saved") if k in f}
                                        | ({"error": f["error"]} if "error" in f else {}))
        if f.get("mismatches"):
            e["departures"].append({"variant": f["variant"], "group": "fuzz", "mismatching_dots": f["mismatches"], "saved": f["saved"]})
    return {"paths": paths, "agrees": not any(p["departures"] for p in paths.values())}


def report_text(doc: dict) -> str:
    lines = []
    for name, e in sorted(doc["paths"].items()):
        lines.append(f"== path {name}: {'AGREES with the model' if not e['departures'] else str(len(e['departures'])) + ' departure(s)'}")
        lines.append(f"   variants: {len(e['variants'])} measured; fuzz: " + ", ".join(
            f"{f['dots']} dots/{f['mismatches']} mismatches" for f in e.get("fuzz", [])))
        for grp, cons in e["inferred"].items():
            lines.append(f"   {grp}: consistent with {cons}")
        for d in e["departures"][:10]:
            lines.append(f"   DEPARTURE {d['variant']} [{d['group']}]: model {d.get('model')} consistent {d.get('consistent')}")
            for c in d.get("cases", [])[:3]:
                lines.append(f"      {c['case']}: observed {c['observed']} model {c['model']}  a={c['a']} b={c['b']} c={c['c']}")
            for s in d.get("saved", []):
                lines.append(f"      replay: {s}")
    return "\n".join(lines)


def representatives(variants: list[Variant], spec: NumericsSpec) -> list[Variant]:
    """One variant per (path, A, B, C, D types, satfinite, bitop, rounding modifier), per shape K, per sparse kind
    and per wgmma N: the measured set."""
    seen, out = set(), []
    for v in variants:
        t = Types.of(v)
        sparse = None if v.family.startswith("wgmma") else v.instruction.sparse
        key = (v.family, path_of(spec, v).name, t, k_of(v), getattr(v, "a_src", None), getattr(v, "N", None), sparse)
        if key not in seen:
            seen.add(key)
            out.append(v)
    return out


def save_observations(out: Path, measured: list[dict], fuzzed: list[dict]) -> None:
    arrays = {}
    for i, m in enumerate(measured):
        for k, x in m.pop("observations").items():
            arrays[f"m{i}_{k}"] = x
    for i, f in enumerate(fuzzed):
        for j, (bits, obs) in enumerate(f.pop("observations", [])[:1]):
            for k, x in bits.items():
                arrays[f"f{i}_{j}_{k}"] = x
            arrays[f"f{i}_{j}_D"] = obs
    np.savez_compressed(out / "observations.npz", **arrays)
    index = {"measured": [m["variant"] for m in measured], "fuzzed": [f["variant"] for f in fuzzed]}
    (out / "observations.json").write_text(json.dumps(index, indent=1))



# ---------------------------------------------------------------------------
# the edges run: every designed group of every path the H100 runs, then the edge fuzzer
# ---------------------------------------------------------------------------

EXTRA_WGMMA_N = (8, 256)  # wgmma widths measured besides WGMMA_N: one form per path each


def edge_variants(specs, spec: NumericsSpec, cc=(9, 0), extra_n=EXTRA_WGMMA_N) -> list[Variant]:
    """What the edges run measures: the representatives of every dense and sparse mma form, every wgmma form of
    N = 64, one wgmma form per path (shared A) for each other N, and the f64 forms with each rounding modifier."""
    from .harness import WGMMA_N, numeric_variants, rounding_variants

    main = numeric_variants(specs, cc, ("mma.sync", "mma.sp", "wgmma"))
    out = representatives(main + rounding_variants(specs, cc), spec)
    seen = set()
    for v in numeric_variants(specs, cc, ("wgmma",), tuple(n for n in extra_n if n != WGMMA_N)):
        key = (path_of(spec, v).name, v.N)
        if v.a_src == "shared" and key not in seen:
            seen.add(key)
            out.append(v)
    return out


def _narrow(x: np.ndarray) -> np.ndarray:
    """The smallest unsigned dtype holding every value (container bits stored compactly)."""
    top = int(x.max(initial=0))
    for dt in (np.uint8, np.uint16, np.uint32):
        if top <= np.iinfo(dt).max:
            return x.astype(dt)
    return x


def edges_campaign(backend, spec: NumericsSpec, variants: list[Variant], out: Path, budget: float, cases: int = 2048,
                   seed: int = 0, fuzz: bool = True, log=print) -> dict:
    """Designed groups of every variant (raw, one launch each; inference offline), then the coverage-driven edge fuzzer
    with what is left of ``budget`` seconds.  Writes measure.json, observations.npz/.json, coverage.json/.md,
    findings.json (device, fuzz statistics) and mismatches/ under ``out``."""
    from .edges import fuzz_edges

    out.mkdir(parents=True, exist_ok=True)
    started = time.time()
    info = backend.info()
    measured, failed = [], {}
    for v in variants:
        try:
            measured.append(measure(backend, spec, v, infer_now=False))
        except Exception as exc:  # noqa: BLE001 - recorded, the run goes on
            failed[v.id] = f"{type(exc).__name__}: {exc}"
            log(f"{v.id}: measure failed: {exc}")
    t_measure = time.time() - started
    cov = {"coverage": {}, "fuzz": [], "complete": None, "markdown": ""}
    if fuzz:
        left = max(1.0, budget - t_measure)
        cov = fuzz_edges(backend, spec, [v for v in variants if v.id not in failed], left, cases, out, seed, log=log)
    arrays = {}
    for i, m in enumerate(measured):
        for k, x in m.pop("observations").items():
            arrays[f"m{i}_{k}"] = _narrow(np.asarray(x)) if k != "pos" else np.asarray(x, dtype=np.uint8)
    np.savez_compressed(out / "observations.npz", **arrays)
    (out / "observations.json").write_text(json.dumps({"measured": [m["variant"] for m in measured], "fuzzed": []}, indent=1))
    (out / "measure.json").write_text(json.dumps(measured, indent=1, default=str))
    paths: dict[str, dict] = {}
    for m in measured:
        paths.setdefault(m["path"], {"variants": [], "departures": [], "inferred": {}})["variants"].append(m["variant"])
    for st in cov["fuzz"]:
        e = paths.setdefault(st["path"], {"variants": [], "departures": [], "inferred": {}})
        e.setdefault("fuzz", []).append(st)
    doc = {"paths": paths, "agrees": None, "backend": info, "wall_s": round(time.time() - started, 1), "measure_s": round(t_measure, 1),
           "variants": [m["variant"] for m in measured], "failed": failed,
           "note": "Raw: no inference on the GPU host.  ptxconf numerics pin DIR (offline) infers, pins and writes findings."}
    (out / "findings.json").write_text(json.dumps(doc, indent=1, default=str))
    (out / "coverage.json").write_text(json.dumps({"complete": cov["complete"], "paths": cov["coverage"]}, indent=1))
    (out / "coverage.md").write_text(cov["markdown"] + "\n")
    return doc | {"coverage_complete": cov["complete"], "designed_cases": sum(sum(g["cases"] for g in m["groups"]) for m in measured),
                  "fuzzed_dots": sum(st["dots"] for st in cov["fuzz"]),
                  "mismatching_dots": sum(st["mismatches"] for st in cov["fuzz"])}
