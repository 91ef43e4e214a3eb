"""A run's revision comes from git, or from a stamp checked against the code it finds: never from a hand."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from ptxconf import revision

ROOT = Path(__file__).resolve().parents[2]


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    for d in revision.CODE_DIRS:
        (root / d).mkdir(parents=True)
        (root / d / "a.py").write_text(f"# {d}\n")
    return root


def test_digest_covers_code_and_ignores_caches(tmp_path):
    root = _tree(tmp_path)
    before = revision.code_digest(revision.checkout_code(root))
    (root / "conformance" / "__pycache__").mkdir()
    (root / "conformance" / "__pycache__" / "a.py").write_text("cached")
    (root / "conformance" / "notes.txt").write_text("not code")
    assert revision.code_digest(revision.checkout_code(root)) == before
    (root / "specs" / "a.py").write_text("# changed\n")
    assert revision.code_digest(revision.checkout_code(root)) != before


def test_stamp_is_read_and_an_edited_tree_is_marked_modified(tmp_path, monkeypatch):
    root = _tree(tmp_path)
    digest = revision.code_digest(revision.checkout_code(root))
    (root / revision.STAMP).write_text(json.dumps({"revision": "abc1234", "code_digest": digest}))
    monkeypatch.setattr(revision, "_tree_root", lambda: root)
    monkeypatch.delenv("PTXCONF_GIT_REVISION", raising=False)
    assert revision.git_revision() == "abc1234"
    (root / "conformance" / "a.py").write_text("# edited after stamping\n")
    assert revision.git_revision() == "abc1234+modified"


@pytest.mark.parametrize("content", ["", "not json", "[1, 2]", json.dumps({"revision": 5}), "x" * 10000])
def test_unreadable_stamp_is_no_revision(tmp_path, monkeypatch, content):
    root = _tree(tmp_path)
    (root / revision.STAMP).write_text(content)
    monkeypatch.setattr(revision, "_tree_root", lambda: root)
    monkeypatch.setattr(revision, "PACKAGE", root / "conformance")
    monkeypatch.delenv("PTXCONF_GIT_REVISION", raising=False)
    assert revision.git_revision() is None


def test_environment_overrides(monkeypatch):
    monkeypatch.setenv("PTXCONF_GIT_REVISION", "from-env")
    assert revision.git_revision() == "from-env"


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(), reason="needs a git checkout")
def test_stamp_written_from_git_matches_the_checkout(tmp_path):
    path = revision.write_stamp(tmp_path, source_root=ROOT)
    stamp = json.loads(path.read_text())
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert stamp["revision"].split("+")[0] == head
    assert stamp["code_digest"] == revision.code_digest(revision.checkout_code(ROOT))


def test_stamp_outside_a_checkout_is_refused(tmp_path):
    with pytest.raises(ValueError, match="not a git checkout"):
        revision.write_stamp(tmp_path, source_root=tmp_path)
    assert revision.main(["--stamp", str(tmp_path / "missing"), "extra"]) == 2
