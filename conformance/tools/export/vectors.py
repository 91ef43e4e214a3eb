"""``export vectors``: the measured truth as neutral data (NPZ arrays plus a JSON manifest).

Numerics: every recorded dot-product case of a numerics directory (``numerics campaign``/``edges``
runs: the designed cases of each measured variant, ``edge`` where the run is the edges campaign,
and the shrunk fuzz mismatches under ``mismatches/``; GPU fuzz directories hold mismatches only),
as input bits A [n, K], B [n, K], C [n], the hardware's D bits [n], mma.sp's dense positions of the
stored A elements, and each case's label.  The whole-matrix batches a campaign keeps of its fuzz
launches (``observations.npz`` ``f*``) are left out: only their mismatches are cases.

Lane maps: every ``observed_maps.npz`` of a recorded conformance run, the wmma observations
(``observed_wmma.npz``: the maps the ISA leaves unspecified) and the maps a discovery inferred,
``[lane, element, 3]`` of (matrix, row, col), -1 where the run could not decide.

Each group names the directory, GPU, driver and ptxas that produced it (``not recorded`` where the
run did not keep one), and numerics groups carry the parameters of this project's model for the
variant's path, so another model can be compared with it case by case.  Schema: ``vectors.schema.json``.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
from ptxconf.run.diff import RunDir, _load_maps

from . import FORMATS

__all__ = ["VectorsError", "export_vectors", "validate", "MANIFEST", "SCHEMA_FILE"]

MANIFEST = "manifest.json"
SCHEMA_FILE = Path(__file__).with_name("vectors.schema.json")
_DEVICE_KEYS = ("gpu", "compute_capability", "driver", "ptxas", "cuda_driver_api")
NOT_RECORDED = "not recorded"


class VectorsError(ValueError):
    """A path that holds nothing to export: one line naming it."""


def _narrow(x: np.ndarray) -> np.ndarray:
    """Bits in the smallest unsigned dtype that holds them (the arrays compress to a fraction)."""
    x = np.asarray(x, dtype=np.uint64)
    top = int(x.max()) if x.size else 0
    for dt in (np.uint8, np.uint16, np.uint32):
        if top <= np.iinfo(dt).max:
            return x.astype(dt)
    return x


def _device(info: dict) -> dict:
    """The producing device's fields, ``not recorded`` where the run kept none."""
    if "device" in info and isinstance(info["device"], str) and "gpu" not in info:
        info = {**info, "gpu": info["device"]}
    return {k: str(info[k]) if k in info else NOT_RECORDED for k in _DEVICE_KEYS}


def _types(v: Any) -> dict:
    from ptxconf.tools.numerics.model import Types

    t = Types.of(v)
    return {"a": t.a, "b": t.b, "c": t.c, "d": t.d, "satfinite": t.satfinite, "bitop": t.bitop, "rnd": t.rnd}


def _model(p: Any) -> dict:
    return {"path": p.name, **p.describe(), "nan_bits": {k: int(x) for k, x in (p.nan_bits or {}).items()}}


class _Writer:
    def __init__(self):
        self.arrays: dict[str, np.ndarray] = {}
        self.numerics: list[dict] = []
        self.maps: list[dict] = []
        self.devices: dict[str, dict] = {}
        self.models: dict[str, dict] = {}
        self._maps: dict[bytes, str] = {}  # identical maps of several runs are stored once

    @staticmethod
    def _key(table: dict[str, dict], prefix: str, value: dict) -> str:
        for key, known in table.items():
            if known == value:
                return key
        key = f"{prefix}{len(table)}"
        table[key] = value
        return key

    def device(self, info: dict) -> str:
        return self._key(self.devices, "device", _device(info))

    def map_array(self, arr: np.ndarray) -> str:
        arr = np.asarray(arr, dtype=np.int16)
        digest = arr.tobytes() + str(arr.shape).encode()
        if digest not in self._maps:
            key = self._maps[digest] = f"m{len(self._maps)}"
            self.arrays[key] = arr
        return self._maps[digest]

    def cases(self, run: str, device: str, source: str, v: Any, params: Any, labels: list[str], a, b, c, d,
              pos=None) -> None:
        key = f"n{len(self.numerics)}"
        self.arrays[f"{key}_a"] = _narrow(a)
        self.arrays[f"{key}_b"] = _narrow(b)
        self.arrays[f"{key}_c"] = _narrow(c)
        self.arrays[f"{key}_d"] = _narrow(d)
        self.arrays[f"{key}_case"] = np.asarray(labels, dtype=str)
        entry = {"key": key, "run": run, "device": device, "source": source, "variant": v.id, "family": v.family,
                 "cases": len(labels), "k": int(np.shape(b)[1]), "types": _types(v),
                 "model": self._key(self.models, "model", _model(params)),
                 "sparse": pos is not None}
        if pos is not None:
            self.arrays[f"{key}_pos"] = np.asarray(pos, dtype=np.int16)
        self.numerics.append(entry)


def _numerics_dir(w: _Writer, d: Path, specs: Any, spec: Any) -> int:
    from ptxconf.tools.numerics.harness import path_of, variant_of
    from ptxconf.tools.numerics.recorded import RecordedRun

    n = 0
    if (d / "observations.json").exists() and (d / "measure.json").exists():
        rec = RecordedRun(d, specs, spec)
        device = w.device(rec.info)
        kind = "edge" if (d / "coverage.json").exists() else "designed"
        for (vid, groups, a, b, c, dd), pos in zip(rec.designed, rec.positions):
            labels = [f"{g}#{i}" for i, g in enumerate(groups)]
            w.cases(d.name, device, kind, rec.variant(vid), rec.params(vid), labels, a, b, c, dd, pos)
            n += len(c)
        replays = [(r.variant, r.key, r.a, r.b, r.c, r.observed, r.pos) for r in rec.replays]
    elif (d / "mismatches").is_dir():
        info: dict = {}
        for f in sorted(d.glob("*.json")):
            doc = json.loads(f.read_text())
            if isinstance(doc, dict) and isinstance(doc.get("device"), dict):
                info = doc["device"]
        device = w.device(info)
        replays = []
        for f in sorted((d / "mismatches").glob("*.json")):
            r = json.loads(f.read_text())
            replays.append((r["variant"], f.name, [int(x, 16) for x in r["a"]], [int(x, 16) for x in r["b"]],
                            int(r["c"], 16), int(r["observed"], 16), r.get("pos")))
    else:
        return 0
    by_variant: dict[str, list] = {}
    for row in replays:
        by_variant.setdefault(row[0], []).append(row)
    for vid, rows in by_variant.items():
        v = variant_of(specs, vid)
        pos = [r[6] for r in rows] if rows[0][6] is not None else None
        w.cases(d.name, device, "fuzz", v, path_of(spec, v), [r[1] for r in rows], [r[2] for r in rows],
                [r[3] for r in rows], [r[4] for r in rows], [r[5] for r in rows], pos)
        n += len(rows)
    return n


def _add_map(w: _Writer, run: str, device: str, source: str, variant: str, operand: str, arr, layout: str,
             agrees: bool | None) -> None:
    w.maps.append({"key": w.map_array(arr), "run": run, "device": device, "source": source, "variant": variant,
                   "operand": operand, "layout": layout, "agrees_with_spec": agrees, "shape": list(np.shape(arr))})


def _read_json(path: Path) -> dict:
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _discovered_variant(f: Path, specs: Any) -> str:
    """The variant a discovery's NPZ is of: its YAML names it in its layouts (file names replace ':' and '/')."""
    m = re.search(r"^  observed\.(.+?)\.(?:A|B|C|D|metadata)(?:\.sel\d+)?:\s*$", f.with_suffix(".yaml").read_text(), re.M)
    for cand in filter(None, (m.group(1) if m else None, f.stem)):
        for vid in (cand, cand[::-1].replace("_", "/", 1)[::-1]):
            if vid in specs.variants:
                return vid
    raise VectorsError(f"{f}: names no spec variant")


def _maps_dir(w: _Writer, d: Path, specs: Any) -> int:
    """Observed maps of a conformance run (observed_maps.npz), a wmma observation (observed_wmma.npz) or a
    discovery (one NPZ of A/B/C/D maps per variant beside its observed YAML)."""
    n = 0
    maps, problem = _load_maps(RunDir(d, {}, None, ""))
    if problem:
        raise VectorsError(problem)
    if maps:
        index = _read_json(d / "observed_maps.json")
        device = w.device(index.get("device", {}))
        for key in sorted(maps):
            variant, _, operand = key.rpartition("|")
            info = index.get("variants", {}).get(variant, {}).get(operand, {})
            if not info:  # wgmma ids were stored with '/' as '_'
                alt = variant[::-1].replace("_", "/", 1)[::-1]
                info = index.get("variants", {}).get(alt, {}).get(operand, {})
                variant = alt if info else variant
            _add_map(w, d.name, device, "run", variant, operand, maps[key], info.get("layout", NOT_RECORDED),
                     info.get("agrees_with_spec"))
            n += 1
    if (d / "observed_wmma.npz").exists():
        doc = _read_json(d / "observed_wmma.json")
        device = w.device(doc.get("device", {}))
        with np.load(d / "observed_wmma.npz", allow_pickle=False) as z:
            for form in sorted(z.files):
                operand = {"load.a": "A", "load.b": "B", "load.c": "C", "store.d": "D"}.get(
                    ".".join(form.split(".")[1:3]), NOT_RECORDED)
                _add_map(w, d.name, device, "wmma-observe", form, operand, z[form], "unspecified by the ISA", None)
                n += 1
    if (d / "summary.json").exists() and any(d.glob("*.yaml")):
        device = w.device(_read_json(d / "summary.json").get("device", {}))
        for f in sorted(d.glob("*.npz")):
            if not f.with_suffix(".yaml").exists():
                continue
            variant = _discovered_variant(f, specs)
            with np.load(f, allow_pickle=False) as z:
                for key in sorted(z.files):
                    operand, _, sel = key.partition(".sel")  # metadata.sel1: the map of selector 1
                    lay = specs.get(variant).operands[operand].layout
                    spec_map = lay.map({"selector": int(sel)} if sel else None)
                    agrees = spec_map.shape == z[key].shape and bool(np.array_equal(z[key], spec_map))
                    _add_map(w, d.name, device, "discover", variant, key, z[key], lay.name, agrees)
                    n += 1
    return n


def export_vectors(paths: list[Path], out: Path, specs: Any = None) -> dict:
    """Write ``vectors.npz`` and ``manifest.json`` under ``out`` from the run directories ``paths``."""
    from ptxconf.isa import load_specs
    from ptxconf.tools.numerics.spec import numerics_spec

    specs = specs or load_specs()
    spec = numerics_spec(specs)
    w = _Writer()
    for p in paths:
        p = Path(p)
        if not p.is_dir():
            raise VectorsError(f"{p}: no such directory")
        found = _numerics_dir(w, p, specs, spec) + _maps_dir(w, p, specs)
        if not found:
            raise VectorsError(f"{p}: holds no numerics cases (observations.npz, mismatches/) and no observed lane "
                               "maps (observed_maps.npz, observed_wmma.npz, a discovery's NPZ files)")
    out.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    np.savez_compressed(buf, **w.arrays)
    (out / "vectors.npz").write_bytes(buf.getvalue())
    manifest = {
        "schema": FORMATS["vectors"],
        "about": "Recorded PTX matrix-instruction results: dot-product cases with the hardware's D bits, and observed "
                 "lane maps. Each numerics entry's model names the parameters of this project's model (models) for its path. Arrays are in vectors.npz under each entry's key (numerics: KEY_a, KEY_b [cases, k], "
                 "KEY_c, KEY_d [cases] with D the hardware's bits, KEY_case labels, KEY_pos [cases, stored] for sparse forms; maps: KEY "
                 "[lane, element, (matrix, row, col)], -1 undecided; runs that saw the same map share a key). Bits are the element encodings, zero-extended.",
        "arrays": "vectors.npz",
        "devices": w.devices,
        "models": w.models,
        "numerics": w.numerics,
        "maps": w.maps,
        "totals": {"numerics_cases": sum(e["cases"] for e in w.numerics), "numerics_groups": len(w.numerics),
                   "maps": len(w.maps), "distinct_maps": len(w._maps)},
    }
    (out / MANIFEST).write_text(json.dumps(manifest, separators=(",", ":")) + "\n")
    return manifest


def validate(manifest: dict) -> list[str]:
    """Schema errors of a vectors manifest, one line each (empty: valid)."""
    from .jsonform import schema_errors

    return schema_errors(SCHEMA_FILE, manifest)
