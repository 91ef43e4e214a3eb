"""A full disk: writes that fail with ENOSPC, injected at the writer, during an emulator run in this process.

Injected at results.jsonl (the k-th append writes half its text, then fails), at an observation, at
JUnit, and at the final ``complete`` summary (``atomic_write`` is replaced where observations, report and
files name it).  The run must stop loudly: exit 2 and one line on stderr naming the error, no
traceback; summary.json must never say ``complete`` nor count a verdict results.jsonl lacks; the
results lines written before stay parseable (only a cut last line); ``--resume`` on a disk with room
again completes the run with each (variant, check) once and the earlier verdicts kept.
"""

from __future__ import annotations

import errno

import pytest
from faultkit import read_results, read_summary, run_args, verdicts
from ptxconf import cli
from ptxconf.run import files, observations, report


def _enospc(what: str) -> OSError:
    return OSError(errno.ENOSPC, "No space left on device", what)


class FullAfter:
    """results.jsonl whose ``k``-th write gets half its text onto the disk, then ENOSPC (and every one after)."""

    def __init__(self, fh, k: int):
        self.fh, self.k, self.n = fh, k, 0

    def write(self, text: str) -> int:
        self.n += 1
        if self.n >= self.k:
            self.fh.write(text[: len(text) // 2])
            self.fh.flush()
            raise _enospc(self.fh.name)
        return self.fh.write(text)

    def flush(self) -> None:
        self.fh.flush()

    def close(self) -> None:
        self.fh.close()


def _inject_results(monkeypatch, k: int) -> None:
    real = report.RunLog.__post_init__

    def post_init(self):
        real(self)
        self._jsonl = FullAfter(self._jsonl, k)

    monkeypatch.setattr(report.RunLog, "__post_init__", post_init)


def _inject_atomic(monkeypatch, fails) -> None:
    real = files.atomic_write

    def atomic_write(path, data, **how):
        if fails(path, data):
            raise _enospc(str(path))
        return real(path, data, **how)

    for module in (files, report, observations):
        monkeypatch.setattr(module, "atomic_write", atomic_write)


def _nth_observation(n: int):
    seen = []

    def fails(path, data):
        if path.name.removesuffix(observations.PENDING).endswith(observations.OBSERVATION_SUFFIX) and path.parent.name == "observations":
            seen.append(path)
            return len(seen) >= n
        return False

    return fails


WHERE = {
    "results.jsonl": lambda mp: _inject_results(mp, 3),
    "observation": lambda mp: _inject_atomic(mp, _nth_observation(2)),
    "junit.xml": lambda mp: _inject_atomic(mp, lambda p, d: p.name == "junit.xml"),
    "summary complete": lambda mp: _inject_atomic(
        mp, lambda p, d: p.name == "summary.json" and '"status": "complete"' in str(d)),
}


@pytest.mark.parametrize("where", sorted(WHERE))
def test_a_full_disk_stops_the_run_loudly_and_never_complete(where, tmp_path, monkeypatch, capsys, reference, tally):
    out = tmp_path / "run"
    with monkeypatch.context() as mp:
        WHERE[where](mp)
        rc = cli.main(run_args(out))
    err = capsys.readouterr().err
    assert rc == 2, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "No space left on device" in lines[0] and "Traceback" not in err, err
    summary = read_summary(out)
    assert summary["status"] in ("running", "interrupted")
    records, _cut = read_results(out / "results.jsonl")
    recorded = verdicts(records)
    false_passes = sum(1 for k, s in recorded.items() if s == "pass" and reference.get(k) != "pass")
    false_passes += max(0, summary["counts"].get("pass", 0) - sum(s == "pass" for s in recorded.values()))
    assert (out / ".ptxconf.lock").exists() is False  # the lock is released

    assert cli.main(run_args(out, "--resume")) == 0, capsys.readouterr().err
    final_records, cut = read_results(out / "results.jsonl")
    assert not cut
    final = verdicts(final_records)
    lost = sum(1 for k, s in recorded.items() if final.get(k) != s) + len(set(reference) - set(final))
    assert read_summary(out)["status"] == "complete"
    assert sorted(final) == sorted(reference)
    tally.check(lost=lost, false_passes=false_passes, injected=1)
