"""Measure and fuzz: designed experiments per variant (one launch), findings, compact observations."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from conformance.spec.model import Variant

from .experiments import design, group_bits, infer
from .harness import diagonal, k_of, path_of, place, run_mma
from .model import Types
from .spec import NumericsSpec


def measure(backend, spec: NumericsSpec, v: Variant) -> dict:
    """All designed groups of ``v`` in one launch; per group: consistent parameter values vs the model."""
    p = path_of(spec, v)
    groups = design(v, p)
    parts = [group_bits(v, g) for g in groups]
    a = np.concatenate([x[0] for x in parts])
    b = np.concatenate([x[1] for x in parts])
    c = np.concatenate([x[2] for x in parts])
    t0 = time.time()
    bits, where = place(v, a, b, c)
    obs = diagonal(run_mma(backend, v, bits), where)
    out = {"variant": v.id, "path": p.name, "model": p.describe(), "groups": [], "seconds": 0.0,
           "observations": {"a": a, "b": b, "c": c, "d": obs}}
    pos = 0
    for g, (ga, gb, gc) in zip(groups, parts):
        n = len(gc)
        r = infer(v, p, g, ga, gb, gc, obs[pos : pos + n])
        pos += n
        out["groups"].append({"group": r.group, "params": list(r.params), "model": r.model, "consistent": r.consistent[:12],
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
    """One variant per (path, A, B, C, D types, satfinite, bitop) and per shape K: the measured set."""
    seen, out = set(), []
    for v in variants:
        t = Types.of(v)
        key = (v.family, path_of(spec, v).name, t, k_of(v), getattr(v, "a_src", None))
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

