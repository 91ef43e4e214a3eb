"""Committed records are what commands wrote: revisions that exist in this history, labels that match their folder,
JUnit that every consumer's schema accepts, and no path of the machine that made them."""

from __future__ import annotations

import gzip
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "results"
SUMMARIES = sorted(p for p in RESULTS.rglob("summary*.json"))
RUN_SUMMARIES = [p for p in SUMMARIES if "label" in json.loads(p.read_text())]
JUNITS = sorted(RESULTS.rglob("junit.xml")) + sorted(RESULTS.rglob("junit.xml.gz"))


def _rel(p: Path) -> str:
    return p.relative_to(ROOT).as_posix()


def _git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, timeout=60)


def _history() -> str | None:
    """Why the ancestry test cannot run here, or None when it can."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        return "not a git checkout"
    if _git("rev-parse", "--is-shallow-repository").stdout.strip() == "true":
        return "a shallow clone has no full history"
    return None


def test_there_are_records():
    assert len(RUN_SUMMARIES) >= 4 and len(JUNITS) >= 8


@pytest.mark.parametrize("path", RUN_SUMMARIES, ids=_rel)
def test_label_matches_folder(path):
    """A run is named by the folder it was written to: `summary.json` carries the folder's name, `summary-X.json`
    (a second run kept beside it) carries `<folder>-X`. A run renamed after the fact fails here."""
    label = json.loads(path.read_text())["label"]
    folder = path.parent.name
    suffix = path.stem.removeprefix("summary").removeprefix("-")
    assert label == (f"{folder}-{suffix}" if suffix else folder), f"{_rel(path)}: label {label!r}"


@pytest.mark.parametrize("path", RUN_SUMMARIES, ids=_rel)
def test_revision_is_in_this_history(path):
    """The recorded revision is a commit that HEAD descends from, as written by the run (never '+modified')."""
    why = _history()
    if why:
        pytest.skip(why)
    rev = json.loads(path.read_text()).get("git_revision")
    assert isinstance(rev, str) and re.fullmatch(r"[0-9a-f]{7,40}", rev), f"{_rel(path)}: revision {rev!r}"
    assert _git("merge-base", "--is-ancestor", rev, "HEAD").returncode == 0, f"{_rel(path)}: {rev} not in history"


@pytest.mark.parametrize("path", JUNITS, ids=_rel)
def test_junit_name_and_package_agree_with_folder(path):
    """The writer names the suite and its package after the run's label; a hand-renamed report disagrees."""
    import xml.etree.ElementTree as ET

    text = gzip.open(path, "rt", encoding="utf-8").read() if path.suffix == ".gz" else path.read_text()
    for suite in ET.fromstring(text).iter("testsuite"):
        assert suite.get("name") == suite.get("package") == f"ptx-conformance {path.parent.name}", _rel(path)


@pytest.mark.parametrize("path", SUMMARIES, ids=_rel)
def test_no_machine_paths(path):
    text = path.read_text()
    assert not re.search(r"(?<![\w.])/(work|tmp|home|root)/", text), f"{_rel(path)} names a machine path"
