"""What a ptxas binary says about itself: its release, the highest ``.version`` it takes, the targets it knows.

Learned from the binary, never from release notes, so the table in :mod:`.releases` can be checked
against every installed release (``ptxconf toolchains list --check``) and an unknown ptxas given by path
is described the same way.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from ptxconf.backends.ptxas import PtxasNotFound, ptxas_info
from ptxconf.isa.targets import PtxVersion

__all__ = ["Facts", "learn", "release_of", "target_key"]

_SM = re.compile(r"^sm_(\d+)([af]?)$")


@dataclass(frozen=True)
class Facts:
    """One ptxas as it describes itself."""

    release: str  # "13.0.88" (from ``--version``: "release 13.0, V13.0.88")
    version_line: str  # the ``--version`` line that names the build
    max_ptx: PtxVersion
    targets: tuple[str, ...]  # real targets (``sm_*``) its ``--gpu-name`` takes, oldest first


def target_key(name: str) -> tuple[int, str]:
    """Order targets as GPUs: ``sm_90`` < ``sm_90a`` < ``sm_100``."""
    m = _SM.match(name)
    return (int(m.group(1)), m.group(2)) if m else (1 << 30, name)


def release_of(exe: str) -> str:
    """``13.0.88`` from ``ptxas --version`` (``V13.0.88``); ``""`` when it names none."""
    m = re.search(r"\bV(\d+\.\d+\.\d+)\b", ptxas_info(exe)["ptxas"])
    return m.group(1) if m else ""


def _targets(exe: str) -> tuple[str, ...]:
    """The ``sm_*`` values ``--help`` lists for ``--gpu-name`` (ptxas has no ``--list-gpu-arch``)."""
    proc = subprocess.run([exe, "--help"], capture_output=True, text=True, errors="replace", timeout=60)
    text = proc.stdout
    start = text.find("--gpu-name")
    allowed = text.find("Allowed values", start)
    end = text.find("Default value", allowed)
    if start < 0 or allowed < 0 or end < 0:
        raise PtxasNotFound(f"{exe} --help lists no values for --gpu-name")
    names = re.findall(r"'([^']+)'", text[allowed:end])
    return tuple(sorted({n for n in names if _SM.match(n)}, key=target_key))


def _stub_ok(exe: str, version: str, target: str) -> tuple[bool, str]:
    """Does ptxas take an empty module at ``.version version``?  ``(ok, its message)``."""
    with tempfile.TemporaryDirectory(prefix="ptxconf-facts-") as tmp:
        src = Path(tmp) / "stub.ptx"
        src.write_text(f".version {version}\n.target {target}\n.address_size 64\n")
        proc = subprocess.run([exe, f"-arch={target}", "-o", str(Path(tmp) / "stub.cubin"), str(src)],
                              capture_output=True, text=True, errors="replace", timeout=60)
    return proc.returncode == 0, proc.stderr + proc.stdout


@cache
def learn(exe: str) -> Facts:
    """Ask ``exe``: ``--version``, ``--help`` for the targets, then stubs for the highest ``.version``.

    ptxas refuses a too-new ``.version`` naming its own maximum ("current version is '9.0'"); that
    answer is confirmed by assembling a stub at it, and where a build words it otherwise, versions
    are tried from 9.9 down."""
    line = ptxas_info(exe)["ptxas"]
    targets = _targets(exe)
    if not targets:
        raise PtxasNotFound(f"{exe} --help names no sm_* target")
    stub_target = targets[0]
    _, said = _stub_ok(exe, "99.9", stub_target)
    m = re.search(r"current version is '(\d+\.\d+)'", said)
    tried = [m.group(1)] if m else []
    tried += [f"{major}.{minor}" for major in (9, 8, 7, 6) for minor in range(9, -1, -1)]
    for version in tried:
        if _stub_ok(exe, version, stub_target)[0]:
            return Facts(release_of(exe), line.strip(), PtxVersion.parse(version), targets)
    raise PtxasNotFound(f"{exe} assembles no stub module at any .version from 6.0 to 9.9")
