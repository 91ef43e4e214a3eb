"""Replay: re-run the comparators on recorded observations, with today's specs, no GPU.

A recorded run holds, per variant, the exact input and output words of every
case and what the comparators need (selector params, tag alphabets,
surroundings).  Replaying it against edited specs tells at once whether the
hardware still agrees with them.

Recorded runs get copied, truncated and half-written: one damaged observation
file must not hide the rest.

A check of inputs the ISA leaves undefined replays to the same ``undefined`` observation (its
comparator reads it back from the recorded words and, for a refused immediate, the recorded
assembler message); it never makes a replay fail.  A file that cannot be read becomes one ``error``
verdict per recorded check (or one for the file when even its checks cannot be
read), naming the file and what is wrong, and every other file replays.
"""

from __future__ import annotations

import json
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from ptxconf.core.family import compare, run_variants_of
from ptxconf.core.verdict import UNDEFINED
from ptxconf.generators.ptx import Surroundings
from ptxconf.run.report import Record, RunLog
from ptxconf.run.runner import (
    ZSTD_MAGIC,
    observation_files,
    observation_name,
    observation_seed,
    observation_stem,
    open_observation,
)
from ptxconf.spec.loader import Specs

__all__ = ["Observation", "load_observation", "read_observation", "read_summary", "replay_dir", "run_status_warning"]

FILE_CHECK = "observation"  # the check name of a verdict about a whole unreadable file


def load_observation(path: Path) -> tuple[dict, np.ndarray, np.ndarray]:
    """Meta, input and output words of one observation file; raises on any damage (see ``read_observation``)."""
    with open_observation(path) as z:
        return json.loads(str(z["meta"])), z["in_words"], z["out_words"]


@dataclass
class Observation:
    """What could be read of one observation file.

    ``meta`` is None when the checks cannot be read; ``problem`` says what is wrong with the
    file as a whole (None when the words are whole and consistent).
    """

    path: Path
    meta: dict | None
    in_words: np.ndarray | None
    out_words: np.ndarray | None
    problem: str | None

    @property
    def seed(self) -> int | None:
        if self.meta is not None:
            return self.meta["seed"]
        return observation_seed(self.path.name)


def _why(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _meta_problem(meta: Any) -> str | None:
    """What is wrong with a decoded meta document, or None; checked so replay never trips on a KeyError."""
    if not isinstance(meta, dict):
        return f"meta is a JSON {type(meta).__name__}, not an object"
    missing = [k for k in ("variant", "seed", "checks", "surroundings") if k not in meta]
    if missing:
        return f"meta lacks {', '.join(missing)}"
    if not isinstance(meta["variant"], str) or not isinstance(meta["seed"], int):
        return "meta variant or seed has the wrong type"
    if not isinstance(meta["checks"], list) or not isinstance(meta["surroundings"], dict):
        return "meta checks or surroundings has the wrong type"
    for i, chk in enumerate(meta["checks"]):
        if not isinstance(chk, dict) or not isinstance(chk.get("check"), str):
            return f"meta checks[{i}] has no check name"
    return None


def _slice_problem(chk: dict, cases: int) -> str | None:
    s = chk.get("slice")
    if not (isinstance(s, list) and len(s) == 2 and all(isinstance(x, int) for x in s)):
        return f"check {chk['check']}: slice {s!r} is not [start, stop]"
    if not 0 <= s[0] < s[1] <= cases:
        return f"check {chk['check']}: cases {s[0]}..{s[1]} outside the {cases} recorded"
    if not isinstance(chk.get("params", {}), dict):
        return f"check {chk['check']}: params is not an object"
    return None


def read_observation(path: Path) -> Observation:
    """Read one observation file, never raising: damage is described in ``problem``."""
    try:
        with path.open("rb") as fh:
            head = fh.read(4)
    except OSError as exc:
        return Observation(path, None, None, None, f"cannot be read ({_why(exc)})")
    if head not in (b"PK\x03\x04", ZSTD_MAGIC):  # np.load would call foreign bytes "pickled data"
        return Observation(path, None, None, None, "empty file" if not head else f"not an .npz archive (starts {head!r})")
    try:
        z = open_observation(path)
    except Exception as exc:  # BadZipFile, a damaged frame, EOFError, pickled or foreign data, OSError, ...
        return Observation(path, None, None, None, f"not a readable .npz archive ({_why(exc)})")
    problems: list[str] = []
    meta = None
    arrays: dict[str, np.ndarray] = {}
    with z:
        if "meta" not in z.files:
            problems.append("no 'meta' array")
        else:
            try:
                meta = json.loads(str(z["meta"]))
            except Exception as exc:
                problems.append(f"meta is not valid JSON ({_why(exc)})")
            else:
                bad = _meta_problem(meta)
                if bad:
                    problems.append(bad)
                    meta = None
        for name in ("in_words", "out_words"):
            if name not in z.files:
                problems.append(f"no '{name}' array")
                continue
            try:
                arrays[name] = z[name]
            except Exception as exc:  # a truncated or corrupt member: zlib.error, BadZipFile, ValueError
                problems.append(f"'{name}' unreadable ({_why(exc)})")
    iw, ow = arrays.get("in_words"), arrays.get("out_words")
    if iw is not None and ow is not None and not problems:
        if iw.ndim != 3 or ow.ndim != 3:
            problems.append(f"in_words {iw.shape} and out_words {ow.shape} must be [case, lane, word]")
        elif iw.shape[:2] != ow.shape[:2]:
            problems.append(f"in_words {iw.shape} and out_words {ow.shape} differ in cases or lanes")
        elif not (np.issubdtype(iw.dtype, np.integer) and np.issubdtype(ow.dtype, np.integer)):
            problems.append(f"words are {iw.dtype}/{ow.dtype}, not integers")
    return Observation(path, meta, iw, ow, "; ".join(problems) or None)


def read_summary(directory: Path) -> tuple[dict, str | None]:
    """summary.json of a run (empty when absent) and a problem with it, if it cannot be read."""
    path = directory / "summary.json"
    if not path.exists():
        return {}, None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return {}, f"{path} cannot be read ({_why(exc)})"
    if not isinstance(doc, dict):
        return {}, f"{path} is not a JSON object"
    return doc, None


def run_status_warning(directory: Path, summary: dict) -> str | None:
    """A line when the run says it did not finish; older runs record no status, which is not a warning."""
    status = summary.get("status")
    if status is None or status == "complete":
        return None
    return f"{directory}: the recorded run is not complete (summary.json status {status!r}); it replays what was recorded"


def _variant_by_file(specs: Specs) -> dict[str, str]:
    """Observation file stem (sanitised variant id) -> variant id, to name a file whose meta is lost."""
    return {observation_stem(observation_name(vid, 0)): vid for vid in specs.variants}


def replay_dir(specs: Specs, directory: Path, junit: Path | None = None, quiet: bool = False, out: Path | None = None) -> int:
    """Replay every observation under DIR/observations; writes reports only under ``out`` / ``junit``."""
    if out is None:
        with tempfile.TemporaryDirectory(prefix="ptxconf-replay-") as tmp:
            return _replay(specs, directory, junit, quiet, Path(tmp))
    return _replay(specs, directory, junit, quiet, out)


def _damaged(log: RunLog, specs: Specs, obs: Observation, problem: str, checks: list[str] | None) -> None:
    """One error verdict per recorded check of a damaged file (one for the file when its checks are unknown)."""
    if obs.meta is not None:
        vid = obs.meta["variant"]
    else:
        stem = observation_stem(obs.path.name)
        vid = _variant_by_file(specs).get(stem, stem)
    v = specs.variants.get(vid)
    seed = obs.seed if obs.seed is not None else -1
    message = f"{obs.path.name}: {problem}"
    details = f"{message}\nobservation file {obs.path} is damaged; every other observation replays"
    for check in checks or [FILE_CHECK]:
        log.add(Record(vid, v.family if v else "unknown", v.file if v else "", check, seed, "error", message, details))


def _replay_file(log: RunLog, specs: Specs, obs: Observation) -> None:
    if obs.meta is None:
        _damaged(log, specs, obs, obs.problem or "no meta", None)
        return
    meta = obs.meta
    names = [c["check"] for c in meta["checks"]]
    if obs.problem:
        _damaged(log, specs, obs, obs.problem, names)
        return
    vid = meta["variant"]
    if vid not in specs.variants:
        for chk in names:
            log.add(Record(vid, "unknown", str(obs.path), chk, meta["seed"], "error",
                           "variant no longer in specs", f"recorded in {obs.path.name}"))
        return
    v = specs.variants[vid]
    try:
        sur = Surroundings(**meta["surroundings"])
    except TypeError as exc:
        _damaged(log, specs, obs, f"surroundings unreadable ({_why(exc)})", names)
        return
    for chk in meta["checks"]:
        bad = _slice_problem(chk, obs.in_words.shape[0])
        if bad:
            _damaged(log, specs, obs, bad, [chk["check"]])
            continue
        a, b = chk["slice"]
        try:
            verdict = compare(v, chk["check"], meta["seed"], obs.in_words[a:b], obs.out_words[a:b],
                              chk.get("params", {}), sur, chk.get("meta"))
        except Exception as exc:  # words of the wrong shape for this variant, or a meta the comparator cannot use
            _damaged(log, specs, obs, f"the comparator cannot use it ({_why(exc)})", [chk["check"]])
            continue
        log.add_verdict(specs, verdict, 0.0, "replay")


def _replay(specs: Specs, directory: Path, junit: Path | None, quiet: bool, out: Path) -> int:
    obs_dir = directory / "observations"
    files = observation_files(obs_dir)
    if not files:
        print(f"ptxconf replay: no observations under {obs_dir}", file=sys.stderr)
        return 2
    summary, problem = read_summary(directory)
    if problem:
        print(f"ptxconf replay: warning: {problem}", file=sys.stderr)
    warning = run_status_warning(directory, summary)
    if warning:
        print(f"ptxconf replay: warning: {warning}", file=sys.stderr)
    info = summary.get("device", {}) if isinstance(summary.get("device"), dict) else {}
    info = {**info, "replayed_from": str(directory)}
    log = RunLog(out, info, -1, junit)
    run_variants_of(specs)  # runnable variants derived from today's documents (e.g. tcgen05)
    for path in files:
        _replay_file(log, specs, read_observation(path))
    log.write_junit()
    log.close()
    c = log.counts()
    if not quiet:
        for r in log.records:
            if r.status in ("fail", "error"):
                print(f"{r.status.upper()} {r.name}\n{r.details}\n")
    gpu = info.get("gpu", "unknown device")
    status = f" [run not complete: status {summary['status']!r}]" if warning else ""
    undefined = f", {c[UNDEFINED]} undefined" if c.get(UNDEFINED) else ""
    print(f"replay of {directory} ({gpu}): {c.get('pass', 0)} passed, {c.get('fail', 0)} failed, "
          f"{c.get('error', 0)} errors{undefined}{status}")
    return 1 if c.get("fail") or c.get("error") else 0
