"""Install ptxas releases side by side, outside every Python environment.

``pip download --no-deps`` fetches a release's wheel into a temporary folder of the toolchains
directory (:func:`ptxconf.backends.ptxas.toolchains_dir`); only its ``bin/ptxas`` is unpacked, into
``<dir>/<version>/ptxas``, with ``toolchain.json`` saying where it came from and what the binary said
about itself.  The folder appears whole (renamed into place) or not at all, and nothing is installed
into site-packages.  ``wheel_dir`` takes wheels already downloaded (a machine with no network, tests).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from ptxconf.backends.ptxas import PtxasNotFound, toolchains_dir

from .facts import learn
from .releases import Release

__all__ = ["InstallError", "install", "installed_record", "MANIFEST"]

MANIFEST = "toolchain.json"


class InstallError(RuntimeError):
    """A release could not be downloaded, unpacked or run."""


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def installed_record(version: str) -> dict | None:
    """The ``toolchain.json`` of an installed release, or None."""
    try:
        return json.loads((toolchains_dir() / version / MANIFEST).read_text())
    except (OSError, ValueError):
        return None


def _download(release: Release, dest: Path, wheel_dir: Path | None) -> Path:
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--quiet",
           "--disable-pip-version-check", "--dest", str(dest), release.requirement]
    if wheel_dir is not None:
        cmd += ["--no-index", "--find-links", str(wheel_dir)]
    proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace")
    wheels = sorted(dest.glob("*.whl"))
    if proc.returncode != 0 or len(wheels) != 1:
        said = " ".join((proc.stderr or proc.stdout).strip().splitlines()[-2:])
        raise InstallError(f"pip download {release.requirement} failed (exit {proc.returncode}): {said}")
    return wheels[0]


def _unpack_ptxas(wheel: Path, dest: Path) -> Path:
    with zipfile.ZipFile(wheel) as zf:
        members = [n for n in zf.namelist() if n.endswith("/bin/ptxas")]
        if len(members) != 1:
            raise InstallError(f"{wheel.name} holds {len(members)} bin/ptxas files, not one")
        dest.mkdir(parents=True, exist_ok=True)
        exe = dest / "ptxas"
        with zf.open(members[0]) as src, open(exe, "wb") as out:
            shutil.copyfileobj(src, out)
    exe.chmod(0o755)
    return exe


def install(release: Release, *, wheel_dir: Path | None = None, force: bool = False) -> tuple[dict, list[str]]:
    """Install ``release`` (unless it is already there and not ``force``); its record and any warnings.

    A warning says where the binary disagrees with the table in :mod:`.releases` (the binary wins:
    the record keeps what it said)."""
    root = toolchains_dir()
    final = root / release.version
    if not force and (final / "ptxas").is_file() and installed_record(release.version):
        return installed_record(release.version), []
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root, prefix=f".{release.version}.") as tmp:
        wheel = _download(release, Path(tmp) / "wheel", wheel_dir)
        tree = Path(tmp) / "tree"
        exe = _unpack_ptxas(wheel, tree)
        try:
            facts = learn(str(exe))
        except (PtxasNotFound, OSError, subprocess.SubprocessError) as exc:
            raise InstallError(f"the ptxas of {wheel.name} does not run here: {exc}") from None
        if facts.release != release.version:
            raise InstallError(f"{wheel.name} holds ptxas {facts.release or '(no version)'}, not {release.version}")
        record = {
            "release": release.version,
            "package": release.package,
            "wheel": wheel.name,
            "wheel_sha256": _sha256(wheel),
            "ptxas_sha256": _sha256(exe),
            "ptxas": facts.version_line,
            "max_ptx": str(facts.max_ptx),
            "targets": list(facts.targets),
        }
        (tree / MANIFEST).write_text(json.dumps(record, indent=1) + "\n")
        warnings = []
        if facts.max_ptx != release.max_ptx:
            warnings.append(f"{release.version}: ptxas takes .version up to {facts.max_ptx}; "
                            f"the release table says {release.max_ptx}")
        if facts.targets != release.targets:
            warnings.append(f"{release.version}: ptxas knows {' '.join(facts.targets)}; "
                            f"the release table says {' '.join(release.targets)}")
        if final.exists():
            shutil.rmtree(final)
        os.replace(tree, final)
    return record, warnings
