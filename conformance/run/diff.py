"""Run-to-run diff: what changed between two recorded runs (another GPU, driver, toolchain or spec).

A bring-up engineer's first question is "what changed since the last run": this
compares two run directories check by check (statuses, from results.jsonl or,
for older runs, junit.xml), the observed lane maps (observed_maps.npz: which
lanes and elements moved), the raw D words where both runs fed the same inputs
(observations/*.npz: inputs are compared first; when they differ the outputs
are not), the value checks a device made (observations/device_values.jsonl: each case's digest where both runs
drew the same inputs, by their digest), and the header of each summary.json (device, driver, CUDA, toolchain,
spec hash, tool version, git revision, timestamp; absent fields are "not
recorded").

An ``undefined`` record (a check of inputs the ISA leaves undefined) holds an observation, not a
verdict: when the observation differs between the runs it is listed as "undefined by the ISA:
observation changed", a changed fact with both observations, never as a failure.

What counts as a change (exit 1): any status, message, map, input or output
difference, an observation or map present in one run only, a damaged file, and
a device, driver, toolchain or spec-hash difference.  Provenance alone
(timestamp, git revision, tool version, command, wall time) does not: the same
suite run twice on one machine diffs clean.  Nor does how the run was named: ``--backend emulator`` and
``--backend auto`` choosing the emulator, or one GPU and two of the same model, ran the same (diff compares what
ran, not how it was named).
"""

from __future__ import annotations

import base64
import re
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from ptxconf.core.safe_files import (
    FileRefused,
    UntrustedFileError,
    gzip_decompress_bounded,
    loads_json,
)
from ptxconf.core.verdict import UNDEFINED, UNDEFINED_LABEL
from ptxconf.run.observations import (
    DEVICE_VALUES,
    MAX_REPORT,
    Observation,
    latest_device_values,
    observation_files,
    observation_stem,
    read_observation,
    read_observed_maps,
    read_results_bytes,
    read_summary,
    result_record,
    run_file_bytes,
)

__all__ = ["DiffUsageError", "RunDir", "diff_runs", "load_run", "read_results", "render_text"]

NOT_RECORDED = "not recorded"
MAX_WORDS = 1000  # D words listed per observation in the JSON document (the count is always exact)

# Header fields: (label, keys tried in summary.json, then in its "device" block), whether a difference counts.
_HEADER: tuple[tuple[str, tuple[str, ...], bool], ...] = (
    ("gpu", ("gpu", "device_name"), True),
    ("compute capability", ("compute_capability",), True),
    ("backend", ("backend",), True),
    ("driver", ("driver",), True),
    ("CUDA (driver API)", ("cuda_driver_api", "cuda"), True),
    ("CUDA (binding built with)", ("cuda_pycuda_built_with",), True),
    ("binding", ("pycuda", "cuda_bindings"), True),
    ("JIT", ("jit",), True),
    ("ptxas", ("ptxas", "toolchain"), True),
    ("spec hash", ("spec_hash", "specs_hash", "spec_sha256"), True),
    ("seed", ("seed",), False),
    ("backend chosen by", ("auto",), False),  # --backend auto's reason: how the backend was named, not what ran
    ("tool version", ("tool_version",), False),
    ("git revision", ("git_revision", "git_rev", "git_commit"), False),
    ("timestamp", ("timestamp", "started", "started_at"), False),
    ("host", ("hostname",), False),
)
_PROVENANCE = {"replayed_from"}
_DEVICES = ("device", "devices")  # a one-GPU run's ordinal, a multi-GPU run's list: compared as GPU models


class DiffUsageError(Exception):
    """Not something to diff: a missing directory or one that holds no run."""


@dataclass
class RunDir:
    """What a diff needs of one recorded run; ``warnings`` name damaged or missing parts."""

    path: Path
    summary: dict
    records: dict[str, dict] | None  # test name -> {variant, check, seed, status, message}; None when unrecorded
    source: str
    warnings: list[str] = field(default_factory=list)

    @property
    def status(self) -> str | None:
        s = self.summary.get("status")
        return None if s is None else str(s)


# --- reading -----------------------------------------------------------------------------------


def _name(variant: str, check: str, seed: Any) -> str:
    return f"{variant}:{check}:seed={seed}"


def read_results(path: Path) -> tuple[dict[str, dict], list[str]]:
    """results.jsonl: name -> record (the last line of a name wins), and one warning per line that does not parse.

    A cut last line is what an interrupted run leaves; it is reported and skipped, never fatal.  A line that parses
    but is not a result record (``[1,2]``, a status that is an object) was not written by a run: it is the one-line
    error :class:`UntrustedFileError` naming file and line.
    """
    records: dict[str, dict] = {}
    warnings: list[str] = []
    raw = read_results_bytes(path)
    lines = raw.split(b"\n")
    complete_end = raw.endswith(b"\n")
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        last = i == len(lines) and not complete_end
        try:
            rec = loads_json(line, name=f"{path}:{i}")
        except FileRefused:
            raise
        except UntrustedFileError as exc:
            what = "is cut short (the run stopped mid-write)" if last else f"is unreadable ({exc.reason})"
            warnings.append(f"{path}: line {i} {what}; skipped")
            continue
        rec = result_record(rec, f"{path}:{i}")
        name = _name(rec["variant"], rec["check"], rec["seed"])
        records[name] = {k: rec.get(k) for k in ("variant", "check", "seed", "status", "message")}
    return records, warnings


_JUNIT_NAME = re.compile(r"^(?P<rest>.*):seed=(?P<seed>-?\d+)$")
_JUNIT_STATUS = {"failure": "fail", "error": "error", "skipped": "skip"}


def _read_junit(path: Path) -> tuple[dict[str, dict], list[str]]:
    """Statuses from a JUnit file, for runs recorded before results.jsonl was kept."""
    try:
        raw = run_file_bytes(path, MAX_REPORT)
        data = gzip_decompress_bounded(raw, MAX_REPORT, name=path) if path.suffix == ".gz" else raw
        root = ET.fromstring(data)
    except FileRefused:
        raise
    except (UntrustedFileError, ET.ParseError) as exc:
        return {}, [f"{path}: unreadable ({type(exc).__name__}: {exc}); statuses not compared"]
    records: dict[str, dict] = {}
    for tc in root.iter("testcase"):
        m = _JUNIT_NAME.match(tc.get("name", ""))
        if not m or ":" not in m["rest"]:
            continue
        variant, check = m["rest"].rsplit(":", 1)
        status, message = "pass", ""
        for child in tc:
            if child.tag in _JUNIT_STATUS:
                status, message = _JUNIT_STATUS[child.tag], child.get("message", "")
                if status == "skip" and message.startswith(UNDEFINED_LABEL + ":"):
                    status, message = UNDEFINED, message[len(UNDEFINED_LABEL) + 1 :].strip()
                break
        records[_name(variant, check, m["seed"])] = {
            "variant": variant, "check": check, "seed": int(m["seed"]), "status": status, "message": message}
    return records, []


def load_run(path: Path) -> RunDir:
    """Read one run directory; raises DiffUsageError when it is missing or holds no run."""
    if not path.exists():
        raise DiffUsageError(f"{path}: no such directory")
    if not path.is_dir():
        raise DiffUsageError(f"{path}: not a directory")
    parts = ("summary.json", "results.jsonl", "junit.xml", "junit.xml.gz", "observations", "observed_maps.npz")
    if not any((path / p).exists() for p in parts):
        raise DiffUsageError(f"{path}: not a run directory (no summary.json, results.jsonl, junit.xml or observations/)")
    summary, problem = read_summary(path)
    warnings = [problem] if problem else []
    records: dict[str, dict] | None = None
    source = NOT_RECORDED
    for name in ("results.jsonl", "junit.xml", "junit.xml.gz"):
        if (path / name).exists() or (path / name).is_symlink():  # a FIFO or a link is refused by the reader
            reader = read_results if name == "results.jsonl" else _read_junit
            records, more = reader(path / name)
            warnings += more
            source = name
            break
    return RunDir(path, summary, records, source, warnings)


# --- comparing ---------------------------------------------------------------------------------


def _lookup(summary: dict, keys: tuple[str, ...]) -> Any:
    device = summary.get("device") if isinstance(summary.get("device"), dict) else {}
    for k in keys:
        if k in summary and k != "device":
            return summary[k]
        if k in device:
            return device[k]
    return None


def _header(base: RunDir, new: RunDir) -> list[dict]:
    rows = []
    known: set[str] = set()
    for label, keys, counts in _HEADER:
        known.update(keys)
        b, n = _lookup(base.summary, keys), _lookup(new.summary, keys)
        rows.append({"field": label, "base": b, "new": n, "changed": b != n, "counts": counts})
    bdev, ndev = (r.summary.get("device") if isinstance(r.summary.get("device"), dict) else {} for r in (base, new))
    if any(k in d for d in (bdev, ndev) for k in _DEVICES):
        (b, bmodels), (n, nmodels) = _gpus(bdev), _gpus(ndev)
        rows.append({"field": "GPUs", "base": b, "new": n, "changed": b != n, "counts": bmodels != nmodels})
    for k in sorted((set(bdev) | set(ndev)) - known - _PROVENANCE - set(_DEVICES)):  # whatever else a backend records
        b, n = bdev.get(k), ndev.get(k)
        rows.append({"field": k, "base": b, "new": n, "changed": b != n, "counts": True})
    return rows


def _gpus(device: dict) -> tuple[str | None, set[str]]:
    """The GPUs a run used, as said (``2 x NVIDIA H200``), and the set of their models: which ordinals and how many
    is provenance (a one-GPU run and a two-GPU run of one model ran the same checks on the same hardware)."""
    listed = device.get("devices")
    if isinstance(listed, list) and listed:
        models = [str(d.get("gpu", device.get("gpu"))) if isinstance(d, dict) else str(device.get("gpu")) for d in listed]
    elif "device" in device:
        models = [str(device.get("gpu"))]
    else:
        return None, set()
    said = ", ".join(f"{models.count(m)} x {m}" for m in dict.fromkeys(models))
    return said, set(models)


def _completeness(run: RunDir) -> dict:
    s = run.status
    complete = None if s is None else s == "complete"
    doc: dict[str, Any] = {"status": s if s is not None else NOT_RECORDED, "complete": complete}
    if isinstance(run.summary.get("variants_not_run"), list):
        doc["variants_not_run"] = len(run.summary["variants_not_run"])
    return doc


_ORDER = ("pass -> fail", "pass -> error", "fail -> pass", "error -> pass")
OBSERVATION_CHANGED = f"{UNDEFINED_LABEL}: observation changed"


def _status_changes(base: RunDir, new: RunDir) -> list[dict]:
    if base.records is None or new.records is None:
        return []
    out = []
    for name in sorted(set(base.records) | set(new.records)):
        b, n = base.records.get(name), new.records.get(name)
        ref = n or b
        row = {"name": name, "variant": ref["variant"], "check": ref["check"], "seed": ref["seed"],
               "base": b["status"] if b else None, "new": n["status"] if n else None,
               "base_message": (b or {}).get("message") or "", "new_message": (n or {}).get("message") or ""}
        if b is None:
            row["change"] = f"new ({n['status']})"
        elif n is None:
            row["change"] = f"gone (was {b['status']})"
        elif b["status"] != n["status"]:
            row["change"] = f"{b['status']} -> {n['status']}"
        elif b["status"] == UNDEFINED and row["base_message"] != row["new_message"]:
            row["change"] = OBSERVATION_CHANGED  # a fact that moved, not a verdict
        elif b["status"] != "pass" and row["base_message"] != row["new_message"]:
            row["change"] = f"{b['status']}, message changed"
        else:
            continue
        out.append(row)
    rank = {c: i for i, c in enumerate(_ORDER)}
    out.sort(key=lambda r: (rank.get(r["change"], len(_ORDER)), r["change"], r["name"]))
    return out


def _load_maps(run: RunDir) -> tuple[dict[str, np.ndarray] | None, str | None]:
    path = run.path / "observed_maps.npz"
    if not path.exists():
        return None, None
    try:
        return read_observed_maps(path), None
    except FileRefused:
        raise
    except Exception as exc:  # truncated or foreign: say so, diff the rest
        return None, f"{path}: unreadable ({type(exc).__name__}: {exc}); observed maps not compared"


def _slot(v: np.ndarray) -> list[int]:
    return [int(x) for x in np.atleast_1d(v)]


def _map_changes(base: RunDir, new: RunDir) -> tuple[list[dict], list[str]]:
    (bm, bp), (nm, np_) = _load_maps(base), _load_maps(new)
    notes = [p for p in (bp, np_) if p]
    if bm is None or nm is None:
        if not notes:
            which = "either run" if bm is None and nm is None else "BASE" if bm is None else "NEW"
            notes.append(f"observed maps: not recorded in {which}; not compared")
        return [], notes
    out = []
    for key in sorted(set(bm) | set(nm)):
        variant, _, operand = key.rpartition("|")
        row: dict[str, Any] = {"key": key, "variant": variant, "operand": operand}
        if key not in nm:
            out.append({**row, "change": "only in BASE"})
            continue
        if key not in bm:
            out.append({**row, "change": "only in NEW"})
            continue
        b, n = bm[key], nm[key]
        if b.shape != n.shape:
            out.append({**row, "change": f"shape {list(b.shape)} -> {list(n.shape)}"})
            continue
        moved = np.any(b != n, axis=-1) if b.ndim >= 3 else (b != n)
        if not moved.any():
            continue
        slots = [{"lane": int(idx[0]), "element": int(idx[1]) if len(idx) > 1 else 0,
                  "base": _slot(b[tuple(idx)]), "new": _slot(n[tuple(idx)])} for idx in np.argwhere(moved)]
        out.append({**row, "change": "moved", "slots_moved": len(slots), "slots": int(moved.size), "moved": slots})
    return _by_kind(out), notes


def _check_of(meta: dict | None, case: int) -> tuple[str, int]:
    """Which recorded check a case belongs to, and its index inside that check."""
    for chk in (meta or {}).get("checks", []):
        s = chk.get("slice")
        if isinstance(s, list) and len(s) == 2 and s[0] <= case < s[1]:
            return chk["check"], case - s[0]
    return "?", case


def _cases_text(meta: dict | None, cases: np.ndarray) -> str:
    per: Counter = Counter(_check_of(meta, int(c))[0] for c in cases)
    return ", ".join(f"{k} {v}" for k, v in per.items())


def _observation_change(name: str, b: Observation, n: Observation) -> dict | None:
    """Inputs first, case by case; outputs only of the cases both runs fed the same words."""
    variant = (b.meta or n.meta or {}).get("variant", name)
    row: dict[str, Any] = {"file": name, "variant": variant}
    bad = [f"{label}: {o.problem}" for label, o in (("BASE", b), ("NEW", n)) if o.problem]
    if bad:
        return {**row, "change": "damaged", "problem": "; ".join(bad)}
    if b.in_words.shape != n.in_words.shape:
        return {**row, "change": "inputs differ", "cases_other_inputs": None,
                "why": f"input shapes {list(b.in_words.shape)} -> {list(n.in_words.shape)}"}
    other = np.any(b.in_words != n.in_words, axis=(1, 2))
    total = int(b.in_words.shape[0])
    if other.all():
        return {**row, "change": "inputs differ", "cases_other_inputs": total, "why": f"all {total} cases"}
    bchecks, nchecks = ([c["check"] for c in o.meta["checks"]] for o in (b, n))
    if (b.meta["variant"], b.meta["seed"], bchecks) != (n.meta["variant"], n.meta["seed"], nchecks):
        # words fed alike but filed under another variant or check (a renamed check): not the same checks
        return {**row, "change": "checks differ",
                "why": f"{b.meta['variant']} seed {b.meta['seed']} checks {', '.join(bchecks)} -> "
                       f"{n.meta['variant']} seed {n.meta['seed']} checks {', '.join(nchecks)}"}
    if b.out_words.shape != n.out_words.shape:
        return {**row, "change": "outputs differ", "why": f"output shapes {list(b.out_words.shape)} -> "
                f"{list(n.out_words.shape)} for the same inputs"}
    differs = (b.out_words != n.out_words) & ~other[:, None, None]
    diff = np.argwhere(differs)
    if other.any():
        row["partial"] = True
        row["cases_other_inputs"] = int(other.sum())
        row["why"] = f"{int(other.sum())} of {total} cases ({_cases_text(n.meta, np.flatnonzero(other))})"
    if not len(diff):
        return {**row, "change": "inputs differ"} if other.any() else None
    per_check: Counter = Counter()
    words = []
    for case, lane, word in diff:
        check, k = _check_of(n.meta, int(case))
        per_check[check] += 1
        if len(words) < MAX_WORDS:
            words.append({"check": check, "case": k, "lane": int(lane), "word": int(word),
                          "base": f"0x{int(b.out_words[case, lane, word]):08x}",
                          "new": f"0x{int(n.out_words[case, lane, word]):08x}"})
    compared = int((~other).sum()) * int(np.prod(b.out_words.shape[1:]))
    return {**row, "change": "outputs differ", "words_differing": int(len(diff)), "words": compared,
            "per_check": dict(per_check), "differing": words}


_KIND_ORDER = ("outputs differ", "moved", "damaged", "checks differ", "inputs differ")


def _by_kind(rows: list[dict]) -> list[dict]:
    rank = {k: i for i, k in enumerate(_KIND_ORDER)}
    return sorted(rows, key=lambda r: rank.get(r["change"], len(_KIND_ORDER)))


def _variant_of_file(path: Path) -> str:
    """The variant id a file records (its meta), else its file name without the seed."""
    meta = read_observation(path).meta
    return meta["variant"] if meta is not None else observation_stem(path.name)


def _observations(base: RunDir, new: RunDir) -> tuple[list[dict], dict, list[str]]:
    bd, nd = base.path / "observations", new.path / "observations"
    if not bd.is_dir() or not nd.is_dir():
        which = "either run" if not bd.is_dir() and not nd.is_dir() else "BASE" if not bd.is_dir() else "NEW"
        return [], {}, [f"observations: not recorded in {which}; D words not compared"]
    bf, nf = {p.name for p in observation_files(bd)}, {p.name for p in observation_files(nd)}
    out = []
    same = 0
    for name in sorted(bf | nf):
        if name not in nf or name not in bf:
            out.append({"file": name, "variant": _variant_of_file((bd if name in bf else nd) / name),
                        "change": "only in BASE" if name not in nf else "only in NEW"})
            continue
        row = _observation_change(name, read_observation(bd / name), read_observation(nd / name))
        if row is None:
            same += 1
        else:
            out.append(row)
    out = _by_kind(out)
    tally = Counter(r["change"] for r in out)
    return out, {"in both": len(bf & nf), "same inputs and outputs": same, **tally}, []


def _device_records(run: RunDir) -> tuple[dict[tuple, dict], list[str]]:
    """A run's device value records by (variant, check, seed), the last of each, and what could not be read."""
    try:
        last, bad = latest_device_values(run.path / "observations")
    except (UntrustedFileError, OSError) as exc:
        return {}, [f"{DEVICE_VALUES}: {exc}"]
    return {key: rec for key, (_number, rec) in last.items()}, bad


def _digests(rec: dict) -> np.ndarray | None:
    try:
        return np.frombuffer(base64.b64decode(rec["digests"]), dtype="<u8")
    except (ValueError, TypeError):
        return None


def _device_values(base: RunDir, new: RunDir) -> tuple[list[dict], dict]:
    """The value checks both runs' devices made: where both drew the same inputs (their digest and count), the cases
    whose out words' digests differ; else that the inputs differ (outputs not compared)."""
    (b, bbad), (n, nbad) = _device_records(base), _device_records(new)
    rows: list[dict] = [{"variant": DEVICE_VALUES, "check": "", "seed": None, "change": "damaged",
                         "problem": f"{label}: {why}"} for label, bad in (("BASE", bbad), ("NEW", nbad)) for why in bad]
    same = 0
    for key in sorted(b.keys() | n.keys(), key=str):
        vid, check, seed = key
        row: dict[str, Any] = {"variant": vid, "check": check, "seed": seed}
        if key not in b or key not in n:
            rows.append({**row, "change": "only in BASE" if key not in n else "only in NEW"})
            continue
        rb, rn = b[key], n[key]
        if (rb.get("in_digest"), rb.get("cases")) != (rn.get("in_digest"), rn.get("cases")):
            rows.append({**row, "change": "inputs differ", "why": f"{rb.get('cases')} -> {rn.get('cases')} cases, "
                                                                  "inputs' digest " + ("same" if rb.get("in_digest") ==
                                                                                       rn.get("in_digest") else "differs")})
            continue
        db, dn = _digests(rb), _digests(rn)
        if db is None or dn is None or db.shape != dn.shape:
            rows.append({**row, "change": "damaged", "problem": "digests unreadable or of other counts"})
            continue
        differ = np.flatnonzero(db != dn)
        if not len(differ):
            same += 1
            continue
        rows.append({**row, "change": "outputs differ", "cases_differing": int(len(differ)), "cases": int(len(db)),
                     "first": [int(c) for c in differ[:8]]})
    rows = _by_kind(rows)
    return rows, ({"in both": len(b.keys() & n.keys()), "same inputs and outputs": same,
                   **Counter(r["change"] for r in rows)} if b or n or rows else {})


def diff_runs(base_dir: Path, new_dir: Path) -> dict:
    """The whole comparison as one JSON-able document; ``changed`` decides the exit status."""
    base, new = load_run(base_dir), load_run(new_dir)
    header = _header(base, new)
    statuses = _status_changes(base, new)
    maps, map_notes = _map_changes(base, new)
    observations, obs_tally, obs_notes = _observations(base, new)
    device, device_tally = _device_values(base, new)
    notes = [f"BASE {w}" for w in base.warnings] + [f"NEW {w}" for w in new.warnings] + map_notes + obs_notes
    if base.records is None or new.records is None:
        which = " and ".join(n for n, r in (("BASE", base), ("NEW", new)) if r.records is None)
        notes.append(f"statuses: no results.jsonl or junit.xml in {which}; not compared")
    damaged = bool(base.warnings or new.warnings or [n for n in map_notes if "unreadable" in n])
    changed = (any(r["changed"] and r["counts"] for r in header) or bool(statuses) or bool(maps)
               or bool(observations) or bool(device) or damaged)
    counts = {label: dict(Counter(r["status"] for r in run.records.values())) if run.records is not None else None
              for label, run in (("base", base), ("new", new))}
    return {
        "base": str(base.path), "new": str(new.path), "changed": changed,
        "runs": {"base": {**_completeness(base), "statuses_from": base.source, "counts": counts["base"]},
                 "new": {**_completeness(new), "statuses_from": new.source, "counts": counts["new"]}},
        "header": header,
        "status_changes": statuses,
        "map_changes": maps,
        "observations": {"summary": obs_tally, "changes": observations},
        "device_values": {"summary": device_tally, "changes": device},
        "notes": notes,
    }


# --- text --------------------------------------------------------------------------------------


def _show(v: Any) -> str:
    return NOT_RECORDED if v is None else str(v)


def _counts_text(c: dict | None) -> str:
    if c is None:
        return "statuses not recorded"
    order = ("pass", "fail", "error", "skip", UNDEFINED)
    return ", ".join(f"{c[k]} {k}" for k in order if k in c) + "".join(
        f", {v} {k}" for k, v in sorted(c.items()) if k not in order) or "no checks"


def _limited(items: list[str], limit: int) -> list[str]:
    if limit and len(items) > limit:
        return items[:limit] + [f"... and {len(items) - limit} more (--limit 0 lists all)"]
    return items


def render_text(doc: dict, limit: int = 20) -> str:
    """The report a person reads: header, completeness, then each kind of change, most serious first."""
    lines = [f"ptxconf diff: BASE {doc['base']}  ->  NEW {doc['new']}"]
    for label in ("base", "new"):
        r = doc["runs"][label]
        state = ("complete" if r["complete"] else f"NOT COMPLETE (status {r['status']!r})") \
            if r["complete"] is not None else "status not recorded"
        if "variants_not_run" in r:
            state += f", {r['variants_not_run']} variants not run"
        lines.append(f"  {label.upper():4s} run: {state}; {_counts_text(r['counts'])} (from {r['statuses_from']})")
    lines.append("header:")
    for h in doc["header"]:
        if h["changed"]:
            mark = "*" if h["counts"] else "~"
            lines.append(f"  {mark} {h['field']}: {_show(h['base'])} -> {_show(h['new'])}")
        else:
            lines.append(f"    {h['field']}: {_show(h['base'])}")
    lines.append("  (* counts as a change; ~ provenance, does not)")

    changes = doc["status_changes"]
    lines.append(f"status changes: {len(changes) or 'none'}")
    groups: dict[str, dict[str, list[str]]] = defaultdict(dict)
    for r in changes:
        groups[r["change"]].setdefault(r["variant"], []).append(f"{r['check']}@seed{r['seed']}")
    for change, by_variant in groups.items():
        n = sum(len(v) for v in by_variant.values())
        lines.append(f"  {change}: {n} check(s) in {len(by_variant)} variant(s)")
        items = [f"    {vid}: {', '.join(checks[:4])}" + (f" and {len(checks) - 4} more" if len(checks) > 4 else "")
                 for vid, checks in by_variant.items()]
        if change.endswith(("message changed", "observation changed")) or "fail" in change or "error" in change:
            msgs = {r["variant"]: r for r in changes if r["change"] == change}
            items = [f"{it}\n      base: {_first(msgs[vid]['base_message'])}\n      new:  {_first(msgs[vid]['new_message'])}"
                     for it, vid in zip(items, by_variant)]
        lines += _limited(items, limit)

    maps = doc["map_changes"]
    compared = not any(n.startswith("observed maps:") or "observed maps not compared" in n for n in doc["notes"])
    lines.append(f"observed lane maps changed: {len(maps) or 'none'}" if compared
                 else "observed lane maps: not compared (see note)")
    items = []
    for m in maps:
        if m["change"] == "moved":
            head = f"  {m['variant']} operand {m['operand']}: {m['slots_moved']} of {m['slots']} (lane, element) slots moved"
            slots = [f"lane {s['lane']} element {s['element']}: (matrix, row, col) {tuple(s['base'])} -> {tuple(s['new'])}"
                     for s in m["moved"]]
            items.append(head + "\n" + "\n".join("      " + s for s in _limited(slots, 8)))
        elif not m["change"].startswith("only in"):
            items.append(f"  {m['variant']} operand {m['operand']}: {m['change']}")
    lines += _limited(items, limit)
    lines += _only_in([(m["variant"], m["change"]) for m in maps], "maps", limit)

    obs = doc["observations"]
    tally = obs["summary"]
    if tally:
        lines.append("observations: " + ", ".join(f"{v} {k}" for k, v in tally.items()))
        items = []
        for o in obs["changes"]:
            if o["change"] == "outputs differ" and "differing" in o:
                per = ", ".join(f"{k} {v}" for k, v in o["per_check"].items())
                words = [f"{w['check']} case {w['case']} lane {w['lane']} word {w['word']}: {w['base']} -> {w['new']}"
                         for w in o["differing"]]
                also = f"; other inputs in {o['why']}, not compared" if o.get("partial") else ""
                items.append(f"  {o['variant']}: {o['words_differing']} of {o['words']} D words differ for the same "
                             f"inputs ({per}){also}\n" + "\n".join("      " + w for w in _limited(words, 8)))
            elif o["change"] == "inputs differ" and o.get("partial"):
                items.append(f"  {o['variant']}: other inputs in {o['why']}: those not compared; the cases with the "
                             "same inputs have the same outputs")
            elif o["change"] == "inputs differ":
                items.append(f"  {o['variant']}: inputs differ ({o['why']}): outputs not compared")
            elif o["change"] == "damaged":
                items.append(f"  {o['file']}: damaged: {o['problem']}")
            elif not o["change"].startswith("only in"):
                items.append(f"  {o['variant']}: {o['change']}" + (f" ({o['why']})" if "why" in o else ""))
        lines += _limited(items, limit)
        lines += _only_in([(o["variant"], o["change"]) for o in obs["changes"]], "observations", limit)
    dev = doc.get("device_values") or {"summary": {}, "changes": []}
    if dev["summary"]:
        lines.append("value checks made on the device: " + ", ".join(f"{v} {k}" for k, v in dev["summary"].items()))
        items = []
        for o in dev["changes"]:
            name = f"{o['variant']}:{o['check']}:seed={o['seed']}"
            if o["change"] == "outputs differ":
                first = ", ".join(map(str, o["first"]))
                items.append(f"  {name}: {o['cases_differing']} of {o['cases']} cases' out words differ for the same "
                             f"inputs (their digests; cases {first}): `ptxconf fuzz case` runs one on each device")
            elif o["change"] == "damaged":
                items.append(f"  {DEVICE_VALUES}: damaged: {o['problem']}")
            elif not o["change"].startswith("only in"):
                items.append(f"  {name}: {o['change']}" + (f" ({o['why']})" if "why" in o else ""))
        lines += _limited(items, limit)
        lines += _only_in([(f"{o['variant']}:{o['check']}", o["change"]) for o in dev["changes"]],
                          "device value checks", limit)
    for note in doc["notes"]:
        lines.append(f"note: {note}")
    lines.append("changed" if doc["changed"] else "no change")
    return "\n".join(lines)


def _only_in(rows: list[tuple[str, str]], what: str, limit: int) -> list[str]:
    """One line per side for what only one run has (a selection or a skip, usually), then the variants."""
    out = []
    for side in ("only in BASE", "only in NEW"):
        variants = list(dict.fromkeys(v for v, change in rows if change == side))
        if variants:
            n = sum(change == side for _, change in rows)
            out.append(f"  {what} {side}: {n}, of {len(variants)} variant(s)")
            out += _limited([f"    {v}" for v in variants], limit)
    return out


def _first(text: str) -> str:
    first = (text or "").strip().splitlines()
    return first[0][:160] if first else "(no message)"
