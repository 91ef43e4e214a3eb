"""A recorded hardware run (``numerics campaign --out DIR``) checked offline against the current model.

The run directory holds the designed cases of every measured variant with the D bits the
hardware returned (observations.npz ``m{i}_a|b|c|d``, measure.json for the group of each
case) and the shrunk fuzz mismatches (mismatches/*.json).  No GPU is needed: inputs and
outputs are both recorded.  ``departures`` lists every recorded case the model does not
reproduce; ``open_findings`` turns that list into the checked-in, versioned document that CI
compares against (``ptxconf numerics report DIR --write-open``).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .harness import path_of, variant_of
from .model import PathParams, Types, dot_bits
from .spec import NumericsSpec

OPEN_SCHEMA = "numerics-open-findings/1"


@dataclass
class Case:
    variant: str
    path: str
    source: str  # "designed" or "replay"
    key: str  # designed: "<group>#<index in the variant's launch>"; replay: file name
    group: str
    a: list[int]
    b: list[int]
    c: int
    observed: int
    pos: list[int] | None = None  # mma.sp: dense positions of the stored A elements


def _device_info(directory: Path) -> dict:
    """What produced a recorded run: findings.json's backend (campaign, edges) or gpu-fuzz.json's device (fuzz --on gpu)."""
    f, g = directory / "findings.json", directory / "gpu-fuzz.json"
    if f.is_file():
        return json.loads(f.read_text()).get("backend", {})
    if g.is_file():
        doc = json.loads(g.read_text())
        return {"backend": "cupy", **doc.get("device", {})}  # fuzz --on gpu: CuPy (runs before the backend was recorded)
    return {}


def is_recorded_run(directory: Path) -> bool:
    """A directory of recorded cases: designed ones (observations.npz) or fuzz mismatches (mismatches/*.json)."""
    d = Path(directory)
    return (d / "observations.npz").is_file() or any((d / "mismatches").glob("*.json"))


def recorded_runs(root: Path) -> list[Path]:
    """Every recorded run under ``root`` (results/): each directory holding designed cases or fuzz mismatches."""
    return sorted(d for d in Path(root).iterdir() if d.is_dir() and is_recorded_run(d))


class RecordedRun:
    """A run's recorded cases; a directory of fuzz mismatches alone (``fuzz numerics --on gpu --out``) has no designed ones."""

    def __init__(self, directory: Path, specs, spec: NumericsSpec):
        self.dir = Path(directory)
        self.specs, self.spec = specs, spec
        self.designed: list[tuple[str, list[str], np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        self.positions: list[np.ndarray | None] = []  # parallel to designed: mma.sp positions, else None
        self.measured: list[dict] = []
        if (self.dir / "observations.npz").is_file():
            index = json.loads((self.dir / "observations.json").read_text())
            self.measured = json.loads((self.dir / "measure.json").read_text())
            data = np.load(self.dir / "observations.npz")
            for i, vid in enumerate(index["measured"]):
                m = self.measured[i]
                assert m["variant"] == vid, (i, vid, m["variant"])
                groups = [g["group"] for g in m["groups"] for _ in range(g["cases"])]
                a, b, c, d = (np.asarray(data[f"m{i}_{x}"], dtype=np.uint64) for x in "abcd")
                assert len(groups) == len(c), vid
                self.designed.append((vid, groups, a, b, c, d))
                self.positions.append(np.asarray(data[f"m{i}_pos"], dtype=np.int64) if f"m{i}_pos" in data else None)
        self.replays: list[Case] = []
        for f in sorted((self.dir / "mismatches").glob("*.json")) if (self.dir / "mismatches").exists() else []:
            rec = json.loads(f.read_text())
            self.replays.append(Case(rec["variant"], rec["path"], "replay", f.name, "fuzz", [int(x, 16) for x in rec["a"]],
                                     [int(x, 16) for x in rec["b"]], int(rec["c"], 16), int(rec["observed"], 16), rec.get("pos")))
        self.info = _device_info(self.dir)

    @property
    def backend(self) -> str:
        """The backend that recorded the run (``emulator`` computes the model itself: no evidence of hardware)."""
        return str(self.info.get("backend", "unknown"))

    def variant(self, vid: str):
        return variant_of(self.specs, vid)

    def params(self, vid: str, override: dict[str, PathParams] | None = None) -> PathParams:
        p = path_of(self.spec, self.variant(vid))
        return (override or {}).get(p.name, p)

    def departures(self, override: dict[str, PathParams] | None = None, paths: set[str] | None = None) -> list[dict]:
        """Every recorded case the model (or ``override[path]``) does not reproduce."""
        out = []
        for (vid, groups, a, b, c, d), pos in zip(self.designed, self.positions):
            p = self.params(vid, override)
            if paths is not None and p.name not in paths:
                continue
            pred = dot_bits(p, Types.of(self.variant(vid)), a, b, c, sparse_pos=pos)
            for i in np.nonzero(pred != d)[0]:
                out.append(_row(vid, p.name, "designed", f"{groups[i]}#{int(i)}", groups[i], a[i], b[i], c[i], d[i], pred[i]))
        for r in self.replays:
            p = self.params(r.variant, override)
            if paths is not None and p.name not in paths:
                continue
            pos = None if r.pos is None else [r.pos]
            pred = dot_bits(p, Types.of(self.variant(r.variant)), [r.a], [r.b], [r.c], sparse_pos=pos)[0]
            if int(pred) != r.observed:
                out.append(_row(r.variant, p.name, "replay", r.key, "fuzz", r.a, r.b, r.c, r.observed, pred))
        return out

    def counts(self) -> dict[str, dict[str, int]]:
        """Recorded cases per path: designed and replay."""
        n: dict[str, dict[str, int]] = {}
        for vid, _, _, _, c, _ in self.designed:
            e = n.setdefault(self.params(vid).name, {"designed": 0, "replay": 0})
            e["designed"] += len(c)
        for r in self.replays:
            n.setdefault(self.params(r.variant).name, {"designed": 0, "replay": 0})["replay"] += 1
        return n


def _row(vid, path, source, key, group, a, b, c, observed, model) -> dict:
    return {"variant": vid, "path": path, "source": source, "case": key, "group": group,
            "a": [hex(int(x)) for x in a], "b": [hex(int(x)) for x in b], "c": hex(int(c)),
            "observed": hex(int(observed)), "model": hex(int(model))}


def departure_key(d: dict) -> tuple:
    """What CI compares: the case and both answers (a model change that moves a wrong answer shows up too)."""
    return (d["variant"], d["source"], d["case"], d["observed"], d["model"])


def spec_digest(spec_file: str | Path) -> str:
    return hashlib.sha256(Path(spec_file).read_bytes()).hexdigest()[:16]


def open_findings(run: RecordedRun, device: dict | None = None) -> dict:
    """The versioned list of recorded cases the current model does not reproduce, per path."""
    deps = run.departures()
    counts = run.counts()
    paths: dict[str, dict] = {}
    for name in sorted(counts):
        mine = [d for d in deps if d["path"] == name]
        groups: dict[str, int] = {}
        for d in mine:
            groups[d["group"]] = groups.get(d["group"], 0) + 1
        paths[name] = {"recorded": counts[name], "open": {"designed": sum(d["source"] == "designed" for d in mine),
                                                          "replay": sum(d["source"] == "replay" for d in mine)},
                       "open_by_group": dict(sorted(groups.items())),
                       "model": run.spec.paths[name].describe()}
    listed: dict[str, list] = {}
    for d in sorted(deps, key=departure_key):
        listed.setdefault(d["variant"], []).append([d["source"], d["case"], d["observed"], d["model"]])
    return {"schema": OPEN_SCHEMA, "run": run.dir.name, "device": device or {}, "spec_sha256_16": spec_digest(run.spec.file),
            "note": "Generated by `ptxconf numerics report DIR --write-open`; do not edit.  Every recorded case not listed "
                    "here is reproduced bit for bit by the model; tests/test_numerics.py asserts both directions.  "
                    "Rows: [source, case, observed D, model D]; inputs are in observations.npz / mismatches/.",
            "paths": paths, "departures": listed}


def listed_keys(doc: dict) -> set[tuple]:
    """The departure keys of an open-findings document."""
    return {(vid, src, case, obs, mod) for vid, rows in doc["departures"].items() for src, case, obs, mod in rows}


def refresh_findings(run: RecordedRun, old: dict) -> dict:
    """findings.json of the recorded run re-inferred under the current model (hardware fuzz statistics kept as recorded)."""
    from dataclasses import fields, replace

    from .campaign import findings
    from .experiments import design, group_bits, infer
    from .harness import alternatives

    names = {f.name for f in fields(PathParams)}
    measured_doc = json.loads((run.dir / "measure.json").read_text())
    measured = []
    for m, (vid, _groups, a, b, c, d), sp in zip(measured_doc, run.designed, run.positions):
        v = run.variant(vid)
        p = run.params(vid)
        recorded_p = replace(p, **{k: x for k, x in m["model"].items() if k in names and k != "kind"})
        out = {"variant": vid, "path": p.name, "model": p.describe(), "groups": []}
        pos = 0
        for g, gm in zip(design(v, recorded_p, alternatives(run.spec, v)), m["groups"]):
            group_bits(v, g)  # drops rows the types cannot hold, as the run did
            # shape_fit's rows are drawn against the spec's overrides of the day: only its name and candidates must match
            assert g.name == gm["group"] and (len(g.rows) == gm["cases"] or g.name == "shape_fit"), (vid, g.name)
            n = gm["cases"]
            r = infer(v, p, g, a[pos : pos + n], b[pos : pos + n], c[pos : pos + n], d[pos : pos + n],
                      None if sp is None else sp[pos : pos + n])
            pos += n
            out["groups"].append({"group": r.group, "params": list(r.params), "model": r.model, "consistent": r.consistent[:48],
                                  "n_consistent": len(r.consistent), "agrees": r.agrees, "cases": r.cases, "mismatches": r.mismatches})
        measured.append(out)
    replay_bad = {(x["variant"], x["case"]) for x in run.departures() if x["source"] == "replay"}
    fuzzed = []
    for name, e in old["paths"].items():
        for f in e.get("fuzz", []):
            f = dict(f, path=name)
            saved = [s for s in f.get("saved", []) if (f["variant"], Path(s).name) in replay_bad]
            f["saved"] = [str(run.dir.name + "/mismatches/" + Path(s).name) for s in saved]
            fuzzed.append(f)
    doc = findings(run.spec, measured, fuzzed)
    for e in doc["paths"].values():  # a fuzz departure stays only while one of its saved replays is still not reproduced
        e["departures"] = [x for x in e["departures"] if x["group"] != "fuzz" or x["saved"]]
    doc["agrees"] = not any(e["departures"] for e in doc["paths"].values())
    doc.update({k: old[k] for k in ("backend", "wall_s", "variants") if k in old})
    doc["note"] = ("Re-inferred offline from the recorded observations under the current specs/numerics.yaml.  Fuzz: 'dots' and "
                   "'mismatches' are the hardware run's counts against the model of that day; a fuzz departure lists "
                   "the saved, shrunk replays the current model still does not reproduce.")
    return doc
