"""Replay: re-run the comparators on recorded observations, with today's specs, no GPU.

A recorded run holds, per variant, the exact input and output words of every
case and what the comparators need (selector params, tag alphabets,
surroundings).  Replaying it against edited specs tells at once whether the
hardware still agrees with them.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import numpy as np

from conformance.core.family import compare, run_variants_of
from conformance.run.report import Record, RunLog
from conformance.spec.loader import Specs
from generators.ptx import Surroundings

__all__ = ["replay_dir", "load_observation"]


def load_observation(path: Path) -> tuple[dict, np.ndarray, np.ndarray]:
    with np.load(path, allow_pickle=False) as z:
        return json.loads(str(z["meta"])), z["in_words"], z["out_words"]


def replay_dir(specs: Specs, directory: Path, junit: Path | None = None, quiet: bool = False, out: Path | None = None) -> int:
    """Replay every observation under DIR/observations; writes reports only under ``out`` / ``junit``."""
    if out is None:
        with tempfile.TemporaryDirectory(prefix="ptxconf-replay-") as tmp:
            return _replay(specs, directory, junit, quiet, Path(tmp))
    return _replay(specs, directory, junit, quiet, out)


def _replay(specs: Specs, directory: Path, junit: Path | None, quiet: bool, out: Path) -> int:
    obs_dir = directory / "observations"
    files = sorted(obs_dir.glob("*.npz"))
    if not files:
        print(f"ptxconf replay: no observations under {obs_dir}", file=sys.stderr)
        return 2
    summary_path = directory / "summary.json"
    info = json.loads(summary_path.read_text()).get("device", {}) if summary_path.exists() else {}
    info = {**info, "replayed_from": str(directory)}
    log = RunLog(out, info, -1, junit)
    run_variants_of(specs)  # runnable variants derived from today's documents (e.g. tcgen05)
    for path in files:
        meta, in_words, out_words = load_observation(path)
        vid = meta["variant"]
        if vid not in specs.variants:
            for chk in meta["checks"]:
                log.add(Record(vid, "unknown", str(path), chk["check"], meta["seed"], "error",
                               "variant no longer in specs", f"recorded in {path.name}"))
            continue
        v = specs.variants[vid]
        sur = Surroundings(**meta["surroundings"])
        for chk in meta["checks"]:
            a, b = chk["slice"]
            verdict = compare(v, chk["check"], meta["seed"], in_words[a:b], out_words[a:b], chk["params"], sur, chk["meta"])
            log.add_verdict(specs, verdict, 0.0, "replay")
    log.write_junit()
    log.close()
    c = log.counts()
    if not quiet:
        for r in log.records:
            if r.status in ("fail", "error"):
                print(f"{r.status.upper()} {r.name}\n{r.details}\n")
    gpu = info.get("gpu", "unknown device")
    print(f"replay of {directory} ({gpu}): {c.get('pass', 0)} passed, {c.get('fail', 0)} failed, {c.get('error', 0)} errors")
    return 1 if c.get("fail") or c.get("error") else 0
