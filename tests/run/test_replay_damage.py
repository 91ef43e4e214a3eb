"""Replay of a damaged recorded run: each bad observation is error verdicts naming the file, the rest replays.

Both file formats are damaged: the recorded ``.npz`` of older runs and this version's ``.npz.zst``.

A copy of a few recorded H100 ldmatrix/stmatrix observations is damaged one way
at a time (truncated, garbage, empty, meta deleted or not JSON or incomplete,
an array missing or of the wrong shape, a slice past the cases, a corrupt
compressed member); replay must name the file and what is wrong, give one
error per recorded check (one per file when the checks cannot be read), and
still pass every other observation.  A run whose summary says it did not
finish gets a warning line; older runs with no status do not.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from ptxconf import cli
from ptxconf.run.observations import (
    OBSERVATION_SUFFIX,
    load_observation,
    observation_bytes,
    open_observation,
    read_observation,
)
from ptxconf.run.replay import FILE_CHECK

REPO = Path(__file__).resolve().parents[2]
RECORDED = REPO / "results" / "h100-ldmatrix"
FILES = sorted(p.name for p in (RECORDED / "observations").glob("*.npz"))[:4]
VICTIM = FILES[1]


def _checks(path: Path) -> list[str]:
    return [c["check"] for c in load_observation(path)[0]["checks"]]


@pytest.fixture(params=["npz", "zst"])
def fmt(request) -> str:
    """The recorded files as older runs wrote them (.npz), or rewritten as this version writes them (.npz.zst)."""
    return request.param


def _name(name: str, fmt: str) -> str:
    return name if fmt == "npz" else name.removesuffix(".npz") + OBSERVATION_SUFFIX


@pytest.fixture
def run_dir(tmp_path: Path, fmt: str) -> Path:
    """A recorded run of four observation files, copied so it can be damaged."""
    rec = tmp_path / "rec"
    (rec / "observations").mkdir(parents=True)
    shutil.copy(RECORDED / "summary.json", rec / "summary.json")
    for name in FILES:
        if fmt == "npz":
            shutil.copy(RECORDED / "observations" / name, rec / "observations" / name)
        else:
            (rec / "observations" / _name(name, fmt)).write_bytes(observation_bytes(**_arrays(RECORDED / "observations" / name)))
    return rec


@pytest.fixture
def files(fmt: str) -> list[str]:
    return [_name(f, fmt) for f in FILES]


@pytest.fixture
def victim_name(fmt: str) -> str:
    return _name(VICTIM, fmt)


def _replay(rec: Path, out: Path) -> tuple[int, list[dict]]:
    rc = cli.main(["replay", str(rec), "--out", str(out), "--junit", str(out / "replay.xml"), "--quiet"])
    return rc, [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines() if line.strip()]


def _arrays(path: Path) -> dict[str, np.ndarray]:
    with open_observation(path) as z:
        return {k: z[k] for k in z.files}


def _rewrite(path: Path, change: Callable[[dict], None]) -> None:
    """The file with ``change`` made to its arrays, in its own format."""
    arrays = _arrays(path)
    change(arrays)
    if path.name.endswith(OBSERVATION_SUFFIX):
        path.write_bytes(observation_bytes(**arrays))
    else:
        np.savez_compressed(path, **arrays)


def _set_meta(arrays: dict, edit: Callable[[dict], None]) -> None:
    meta = json.loads(str(arrays["meta"]))
    edit(meta)
    arrays["meta"] = np.array(json.dumps(meta))


def _corrupt_member(path: Path) -> None:
    """Flip bytes inside the first compressed member (in_words); the zip directory stays whole.  (In a .npz.zst they
    fall inside the one compressed frame, whose checksum then fails: the whole file is unreadable.)"""
    data = bytearray(path.read_bytes())
    for i in range(120, 160):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))


# name -> (damage, expected words in the message, whether the checks stay readable); for .npz.zst see ZST_DAMAGE
DAMAGE: dict[str, tuple[Callable[[Path], None], str, bool]] = {
    "truncated": (lambda p: p.write_bytes(p.read_bytes()[: p.stat().st_size // 2]), "not a readable .npz", False),
    "garbage": (lambda p: p.write_bytes(b"this is not an archive\n" * 10), "not an .npz archive", False),
    "empty": (lambda p: p.write_bytes(b""), "empty file", False),
    "meta deleted": (lambda p: _rewrite(p, lambda a: a.pop("meta")), "no 'meta' array", False),
    "meta not JSON": (lambda p: _rewrite(p, lambda a: a.update(meta=np.array("{checks: ["))), "meta is not valid JSON",
                      False),
    "meta without checks": (lambda p: _rewrite(p, lambda a: _set_meta(a, lambda m: m.pop("checks"))),
                            "meta lacks checks", False),
    "out_words missing": (lambda p: _rewrite(p, lambda a: a.pop("out_words")), "no 'out_words' array", True),
    "wrong lanes": (lambda p: _rewrite(p, lambda a: a.update(out_words=a["out_words"][:, :7])),
                    "differ in cases or lanes", True),
    "flat words": (lambda p: _rewrite(p, lambda a: a.update(in_words=a["in_words"].reshape(-1))),
                   "must be [case, lane, word]", True),
    "corrupt member": (_corrupt_member, "'in_words' unreadable", True),
}
ZST_DAMAGE = {"corrupt member": (_corrupt_member, "doesn't match checksum", False)}


def test_the_undamaged_copy_replays_clean(run_dir, tmp_path, files):
    rc, records = _replay(run_dir, tmp_path / "out")
    assert rc == 0
    assert {r["status"] for r in records} == {"pass"}
    assert len(records) == sum(len(_checks(run_dir / "observations" / f)) for f in files)


@pytest.mark.parametrize("kind", list(DAMAGE))
def test_a_damaged_observation_is_error_verdicts_naming_the_file(run_dir, tmp_path, capsys, kind, fmt, files,
                                                                victim_name):
    damage, words, checks_readable = (ZST_DAMAGE if fmt == "zst" else DAMAGE).get(kind, DAMAGE[kind])
    victim = run_dir / "observations" / victim_name
    checks = _checks(victim)
    damage(victim)
    assert read_observation(victim).problem, f"{kind}: the damage went unnoticed"

    rc, records = _replay(run_dir, tmp_path / "out")

    assert rc == 1
    errors = [r for r in records if r["status"] == "error"]
    assert errors, kind
    for r in errors:
        assert r["message"].startswith(victim_name + ":") and words in r["message"], r["message"]
        assert str(victim) in r["details"]
    if checks_readable:
        assert sorted(r["check"] for r in errors) == sorted(checks)
    else:
        assert [r["check"] for r in errors] == [FILE_CHECK]
    stem = VICTIM.removesuffix(".seed0.npz")
    assert {r["variant"].replace("/", "_") for r in errors} == {stem}  # the variant named even when meta is lost
    # Everything else replays, and passes.
    others = [r for r in records if r["status"] != "error"]
    expected = sum(len(_checks(run_dir / "observations" / f)) for f in files if f != victim_name)
    assert len(others) == expected and {r["status"] for r in others} == {"pass"}
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    assert f"{len(others)} passed, 0 failed, {len(errors)} errors" in captured.out


def test_a_slice_past_the_recorded_cases_is_an_error_for_that_check_only(run_dir, tmp_path, victim_name):
    victim = run_dir / "observations" / victim_name
    checks = _checks(victim)

    def stretch(meta: dict) -> None:
        meta["checks"][0]["slice"] = [0, 10_000]

    _rewrite(victim, lambda a: _set_meta(a, stretch))
    rc, records = _replay(run_dir, tmp_path / "out")
    assert rc == 1
    errors = [r for r in records if r["status"] == "error"]
    assert [r["check"] for r in errors] == [checks[0]]
    assert errors[0]["message"].startswith(victim_name + ":") and "outside the" in errors[0]["message"]
    mine = [r for r in records if r["variant"] == errors[0]["variant"] and r["status"] == "pass"]
    assert sorted(r["check"] for r in mine) == sorted(checks[1:])


def test_every_file_damaged_still_gives_a_verdict_per_file(run_dir, tmp_path, files):
    for name in files:
        (run_dir / "observations" / name).write_bytes(b"PK\x03\x04 cut")
    rc, records = _replay(run_dir, tmp_path / "out")
    assert rc == 1
    assert sorted(r["message"].split(":")[0] for r in records) == files
    assert {r["status"] for r in records} == {"error"}


@pytest.mark.parametrize("status, warned", [("interrupted", True), ("running", True), ("complete", False), (None, False)])
def test_replay_warns_when_the_run_was_not_complete(run_dir, tmp_path, capsys, status, warned):
    summary = json.loads((run_dir / "summary.json").read_text())
    summary.pop("status", None)
    if status is not None:
        summary["status"] = status
    (run_dir / "summary.json").write_text(json.dumps(summary))
    rc, _ = _replay(run_dir, tmp_path / "out")
    assert rc == 0
    captured = capsys.readouterr()
    lines = [ln for ln in captured.err.splitlines() if "not complete" in ln]
    if warned:
        assert len(lines) == 1 and repr(status) in lines[0] and str(run_dir) in lines[0]
        assert f"[run not complete: status {status!r}]" in captured.out
    else:
        assert lines == [] and "not complete" not in captured.out


def test_an_unreadable_summary_is_a_warning_not_a_crash(run_dir, tmp_path, capsys):
    (run_dir / "summary.json").write_text('{"device": {"gpu": "NVIDIA H1')
    rc, records = _replay(run_dir, tmp_path / "out")
    assert rc == 0 and records
    err = capsys.readouterr().err
    assert "summary.json cannot be read" in err
