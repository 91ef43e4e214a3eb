"""Which revision of the code produced a record, told by the code itself and never typed by hand.

A run records the commit of the tree that ran. Where that tree is a git checkout, git says. Where it was copied
without its history (a GPU machine, a container, an unpacked wheel) a *stamp* says: ``python -m ptxconf.revision
--stamp`` writes ``.ptxconf-revision`` at the tree's root from git, and the wheel's build writes the same stamp into
the package. A stamp carries a digest of the code it was made for; if the code it finds differs, the revision is
reported as ``<commit>+modified``, so a stale stamp cannot pass an edited tree off as a commit.
``PTXCONF_GIT_REVISION`` still overrides all of these (the fault suite sets it to skip a git call per run).

Usage: ``python -m ptxconf.revision`` prints the revision; ``--stamp [DIR]`` writes the stamp at DIR (the tree's
root by default)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

STAMP = ".ptxconf-revision"
PACKAGE = Path(__file__).resolve().parent
# The folders whose bytes a stamp's digest covers, as they sit in a checkout (conformance/ is the package itself).
CODE_DIRS = ("conformance", "generators", "specs")


def _tree_root() -> Path:
    return PACKAGE.parent


def checkout_code(root: Path) -> list[Path]:
    """The folders of a checkout whose code runs."""
    return [root / d for d in CODE_DIRS if (root / d).is_dir()]


def code_digest(bases: list[Path]) -> str:
    """sha256 over the code that runs: every .py, .yaml and .json under *bases* (a checkout's code folders, or an
    installed package). Paths are relative, so the digest is the same on any machine."""
    h = hashlib.sha256()
    for base in bases:
        for f in sorted(base.rglob("*")):
            if f.suffix in (".py", ".yaml", ".json") and f.is_file() and "__pycache__" not in f.parts:
                h.update(f.relative_to(base.parent).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def _git(root: Path, *args: str) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def from_git(root: Path | None = None) -> str | None:
    """The checkout's commit, with ``+dirty`` when tracked files differ from it; None outside a checkout."""
    root = root or _tree_root()
    if not (root / ".git").exists():
        return None
    rev = _git(root, "rev-parse", "HEAD")
    if rev is None:
        return None
    dirty = _git(root, "status", "--porcelain", "--untracked-files=no")
    return rev + ("+dirty" if dirty else "")


def _stamp_paths() -> list[Path]:
    return [_tree_root() / STAMP, PACKAGE / STAMP]


def from_stamp() -> str | None:
    """The stamped commit, checked against the code found here; None when there is no readable stamp."""
    for path in _stamp_paths():
        try:
            if not path.is_file() or path.stat().st_size > 4096:
                continue
            stamp = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(stamp, dict) or not isinstance(stamp.get("revision"), str):
            continue
        bases = checkout_code(_tree_root()) if path.parent == _tree_root() else [PACKAGE]
        same = stamp.get("code_digest") == code_digest(bases)
        return stamp["revision"] + ("" if same else "+modified")
    return None


def git_revision() -> str | None:
    """The revision of the tree that runs: the environment's word, else git's, else the stamp's; else None."""
    return os.environ.get("PTXCONF_GIT_REVISION") or from_git() or from_stamp()


def write_stamp(target_dir: Path, source_root: Path | None = None, code: list[Path] | None = None) -> Path:
    """Write the stamp for the checkout at *source_root* into *target_dir*; refuse outside a checkout.

    *code* is what the digest covers: the checkout's code folders, or a wheel's built package."""
    source_root = source_root or _tree_root()
    rev = from_git(source_root)
    if rev is None:
        raise ValueError(f"{source_root}: not a git checkout, so there is no revision to stamp")
    path = Path(target_dir) / STAMP
    path.write_text(json.dumps({"revision": rev, "code_digest": code_digest(code or checkout_code(source_root))}) + "\n")
    return path


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--stamp"] and len(argv) <= 2:
        try:
            path = write_stamp(Path(argv[1]) if len(argv) == 2 else _tree_root())
        except (ValueError, OSError) as exc:
            print(f"ptxconf.revision: {exc}", file=sys.stderr)
            return 2
        print(f"{path}: {json.loads(path.read_text())['revision']}")
        return 0
    if argv:
        print("usage: python -m ptxconf.revision [--stamp [DIR]]", file=sys.stderr)
        return 2
    print(git_revision() or "unknown")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
