"""The built distribution works where a user puts it: sdist -> wheel -> a fresh venv, run from another directory.

An editable install reads specs/ and the schemas from the checkout, so it hides a wheel that leaves them out
(every spec command then failed with "no *.yaml spec files here").  Here the sources are copied aside, an sdist is
built and a wheel from it (offline: ``--no-build-isolation``), the wheel goes into a venv that sees this Python's
packages for its dependencies (``--system-site-packages``, or the running venv's through a .pth; ``--no-deps``: no
network), and the commands run from a directory that is not the checkout, with no PYTHONPATH.  Whatever
``import ptxconf`` finds there must be the wheel's.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import xml.etree.ElementTree as ET
import zipfile
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e  # builds, installs and runs the wheel in a fresh environment

REPO = Path(__file__).resolve().parents[2]
M16 = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
SOURCES = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "conformance", "generators", "specs")


@dataclass
class Installed:
    wheel: Path
    sdist: Path
    venv: Path
    cwd: Path  # not the checkout
    env: dict[str, str]

    @property
    def bin(self) -> Path:
        return self.venv / "bin"

    def run(self, *cmd: str | Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(c) for c in cmd], cwd=self.cwd, env=self.env, capture_output=True, text=True,
                              timeout=timeout)


def _check(proc: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert proc.returncode == 0, f"{proc.args}: exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def _offline_build() -> bool:
    """setuptools >= 70.1 (or the wheel package) builds a wheel with no download."""
    try:
        major, minor = (int(x) for x in version("setuptools").split(".")[:2])
    except Exception:  # noqa: BLE001 - no or odd setuptools: let pip fetch one
        return False
    if (major, minor) >= (70, 1):
        return True
    try:
        version("wheel")
    except Exception:  # noqa: BLE001
        return False
    return True


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    root = tmp_path_factory.mktemp("pkg")
    src, dist, venv, cwd = root / "src", root / "dist", root / "venv", root / "elsewhere"
    src.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build")
    for name in SOURCES:
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=ignore)
        elif path.exists():
            shutil.copy2(path, src / name)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    build_sdist = "import sys; from setuptools import build_meta as b; print(b.build_sdist(sys.argv[1]))"
    _check(subprocess.run([sys.executable, "-c", build_sdist, str(dist)], cwd=src, env=env, capture_output=True,
                          text=True, timeout=300))
    (sdist,) = dist.glob("*.tar.gz")
    offline = ["--no-build-isolation", "--no-index"] if _offline_build() else []  # else pip fetches setuptools
    _check(subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", *offline, str(sdist), "-w", str(dist)],
                          cwd=root, env=env, capture_output=True, text=True, timeout=300))
    (wheel,) = dist.glob("*.whl")
    _check(subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)],
                          env=env, capture_output=True, text=True, timeout=300))
    if sys.prefix != sys.base_prefix:  # run from a venv: --system-site-packages sees the base Python, not this one
        site = _check(subprocess.run([venv / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                                     env=env, capture_output=True, text=True, timeout=60)).stdout.strip()
        ours = dict.fromkeys([sysconfig.get_path("purelib"), sysconfig.get_path("platlib")])
        Path(site, "_outer_env.pth").write_text("".join(f"{p}\n" for p in ours))  # after the wheel's own
    _check(subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q",
                           "--no-deps", "--no-index", str(wheel)], env=env, capture_output=True, text=True, timeout=300))
    cwd.mkdir()
    return Installed(wheel, sdist, venv, cwd, env)


def test_wheel_carries_every_spec_and_schema(installed: Installed) -> None:
    with zipfile.ZipFile(installed.wheel) as z:
        names = set(z.namelist())
        entry_points = next(z.read(n).decode() for n in names if n.endswith(".dist-info/entry_points.txt"))
    specs = sorted(p.name for p in (REPO / "specs").glob("*.yaml"))
    assert specs and {f"ptxconf/specdata/{s}" for s in specs} <= names
    schemas = ["ptxconf/" + p.relative_to(REPO / "conformance").as_posix() for p in (REPO / "conformance").rglob("*.json")]
    assert "ptxconf/isa/schema.json" in schemas and any("/families/" in s for s in schemas)
    assert set(schemas) <= names
    assert any(n.startswith("ptxconf/generators/") for n in names)
    # One import namespace: nothing outside ptxconf/ (no top-level conformance/, generators/, specs/, tests/).
    tops = {n.split("/", 1)[0] for n in names if "/" in n and not n.split("/", 1)[0].endswith((".dist-info", ".data"))}
    assert tops == {"ptxconf"}, tops
    assert "ptxconf = ptxconf.console:main" in entry_points
    assert "ptxconf.pytest_plugin = ptxconf.pytest_plugin" in entry_points
    import tarfile

    with tarfile.open(installed.sdist) as t:
        members = {m.name.split("/", 1)[1] for m in t.getmembers() if "/" in m.name}
    assert {f"specs/{s}" for s in specs} | {"setup.py", "pyproject.toml", "README.md"} <= members


def test_the_wheel_is_what_runs(installed: Installed) -> None:
    code = "import ptxconf.isa.loader as l; print(l.__file__); print(l.default_specs_dir())"
    out = _check(installed.run(installed.bin / "python", "-c", code)).stdout.split()
    assert all(Path(p).resolve().is_relative_to(installed.venv.resolve()) for p in out), out
    assert out[1].endswith("ptxconf/specdata")
    # The distribution claims no top-level name but its own (``conformance`` and ``generators`` belong to others).
    code = "import importlib.util as u; print(u.find_spec('conformance'), u.find_spec('generators'))"
    assert _check(installed.run(installed.bin / "python", "-c", code)).stdout.split() == ["None", "None"]


def test_specs_list_from_another_directory(installed: Installed) -> None:
    rows = json.loads(_check(installed.run(installed.bin / "ptxconf", "specs", "list", "--json")).stdout)
    ids = [r["id"] for r in rows]
    assert len(ids) > 0 and M16 in ids
    assert any(i.startswith("wgmma.mma_async") for i in ids)
    assert all(not Path(r["file"]).resolve().is_relative_to(REPO) for r in rows if r.get("file"))


def test_specs_show_with_specs_dir_and_no_matplotlib(installed: Installed) -> None:
    """``--specs DIR`` reads the schemas from the package; ``specs show`` draws nothing, so needs no matplotlib."""
    code = ("import sys; sys.modules['matplotlib'] = None; from ptxconf.cli.main import main; "
            f"sys.exit(main(['specs', 'show', {M16!r}, '--operand', 'A', '--json', '--specs', sys.argv[1]]))")
    out = _check(installed.run(installed.bin / "python", "-c", code, REPO / "specs")).stdout
    doc = json.loads(out)
    assert doc["variant"] == M16 and doc["operand"] == "A" and len(doc["map"]) == 16 * 16


def test_emulator_run_from_another_directory(installed: Installed) -> None:
    out = installed.cwd / "results"
    proc = _check(installed.run(installed.bin / "ptxconf", "run", "--backend", "emulator", "--select", M16, "--out", out))
    assert "4 passed, 0 failed" in proc.stdout
    names = {tc.get("name") for tc in ET.parse(out / "junit.xml").getroot().iter("testcase")}
    assert names == {f"{M16}:{c}:seed=0" for c in ("value", "map.A", "map.B", "map.C")}


def test_pytest_pyargs_through_the_entry_point(installed: Installed) -> None:
    """The installed plugin loads by itself: ``pytest --pyargs ptxconf`` runs the suite's items."""
    proc = installed.run(installed.bin / "python", "-m", "pytest", "--pyargs", "ptxconf", "-p", "no:cacheprovider",
                         "--ptxconf-backend", "emulator", "--ptxconf-select", M16, "--ptxconf-check", "value", "-q")
    _check(proc)
    assert "1 passed" in proc.stdout
