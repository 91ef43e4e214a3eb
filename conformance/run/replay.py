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

import sys
import tempfile
from pathlib import Path

from ptxconf.core.family import compare, run_variants_of
from ptxconf.core.verdict import UNDEFINED, Verdict
from ptxconf.isa.loader import Specs
from ptxconf.run.devicevalues import CHECK as DEVICE_CHECK
from ptxconf.run.devicevalues import replay_records
from ptxconf.run.observations import (
    DEVICE_VALUES,
    Observation,
    latest_device_values,
    observation_files,
    observation_name,
    observation_stem,
    read_observation,
    read_summary,
    recorded_checks,
    why,
)
from ptxconf.run.report import Record, RunLog

__all__ = ["replay_dir", "replay_file", "run_status_warning", "FILE_CHECK"]

FILE_CHECK = "observation"  # the check name of a verdict about a whole unreadable file


def replay_file(specs: Specs, path: Path) -> list[Verdict]:
    """The verdicts of one whole observation file under ``specs`` (a test's or a tool's replay of one variant);
    raises ValueError naming what is wrong with a damaged file."""
    obs = read_observation(path)
    if obs.problem is not None or obs.meta is None:
        raise ValueError(f"{path}: {obs.problem or 'no meta'}")
    v = specs.get(obs.meta["variant"])
    verdicts = []
    for name, rec, bad in recorded_checks(obs):
        if rec is None:
            raise ValueError(f"{path}: {name}: {bad}")
        verdicts.append(compare(v, rec))
    return verdicts


def run_status_warning(directory: Path, summary: dict) -> str | None:
    """A line when the run says it did not finish; older runs record no status, which is not a warning."""
    status = summary.get("status")
    if status is None or status == "complete":
        return None
    return f"{directory}: the recorded run is not complete (summary.json status {status!r}); it replays what was recorded"


def _variant_by_file(specs: Specs) -> dict[str, str]:
    """Observation file stem (sanitised variant id) -> variant id, to name a file whose meta is lost."""
    return {observation_stem(observation_name(vid, 0)): vid for vid in specs.variants}


def replay_dir(specs: Specs, directory: Path, junit: Path | None = None, quiet: bool = False, out: Path | None = None,
               jobs: int = 1) -> int:
    """Replay every observation under DIR/observations; writes reports only under ``out`` / ``junit``."""
    if out is None:
        with tempfile.TemporaryDirectory(prefix="ptxconf-replay-") as tmp:
            return _replay(specs, directory, junit, quiet, Path(tmp), jobs)
    return _replay(specs, directory, junit, quiet, out, jobs)


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
    for name, rec, bad in recorded_checks(obs):
        if rec is None:
            _damaged(log, specs, obs, bad or "unreadable", [name])
            continue
        try:
            verdict = compare(v, rec)
        except Exception as exc:  # words of the wrong shape for this variant, or a meta the comparator cannot use
            _damaged(log, specs, obs, f"the comparator cannot use it ({why(exc)})", [name])
            continue
        log.add_verdict(specs, verdict, 0.0, "replay")


def _replay_device_values(log: RunLog, specs: Specs, obs_dir: Path, jobs: int) -> None:
    """The value checks the device made: each (variant, check, seed) once, its last record; a line that cannot be read
    or used is one error naming the file and line."""
    last, bad = latest_device_values(obs_dir)
    for problem in bad:
        log.add(Record("unknown", "unknown", str(obs_dir / DEVICE_VALUES), DEVICE_CHECK, -1, "error", problem,
                       f"{problem}\nthe other records replay"))
    known = []
    for (vid, check, seed), (number, rec) in last.items():
        if vid in specs.variants:
            known.append((number, rec))
            continue
        where = f"{DEVICE_VALUES}:{number}"
        log.add(Record(vid, "unknown", where, check, seed, "error", "variant no longer in specs", f"recorded in {where}"))
    for (number, rec), verdict in zip(known, replay_records(specs, [r for _, r in known], jobs)):
        if isinstance(verdict, str):  # a record this variant's draw cannot use: that record's error
            v, where = specs.variants[rec["variant"]], f"{DEVICE_VALUES}:{number}"
            log.add(Record(v.id, v.family, v.file, rec.get("check", DEVICE_CHECK), rec["seed"], "error",
                           f"{where}: {verdict}", f"{where}: the record cannot be replayed ({verdict}); the other "
                           "records replay"))
            continue
        log.add_verdict(specs, verdict, 0.0, "replay")


def _replay(specs: Specs, directory: Path, junit: Path | None, quiet: bool, out: Path, jobs: int) -> int:
    obs_dir = directory / "observations"
    files = observation_files(obs_dir)
    device = (obs_dir / DEVICE_VALUES).exists()
    if not files and not device:
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
    _replay_device_values(log, specs, obs_dir, jobs)
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
