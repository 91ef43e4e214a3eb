"""The ptxas releases the suite knows, as data: where each comes from and what it accepts.

Every release ships its ptxas in a wheel on the package index (``nvidia-cuda-nvcc-cu12`` for CUDA 12,
``nvidia-cuda-nvcc`` from CUDA 13), so any of them can be installed beside the others without a
toolkit.  The versions were listed with ``pip index versions``; each release's highest ``.version``
and its targets were learned from the binary itself (:func:`ptxconf.tools.toolchains.facts.learn`)
and are checked again on every install.
"""

from __future__ import annotations

from dataclasses import dataclass

from ptxconf.backends.ptxas import RELEASE_VERSION
from ptxconf.isa.targets import PtxVersion

__all__ = ["Release", "RELEASES", "PACKAGES", "lookup", "select"]

# CUDA major -> the package whose wheel carries that release's ptxas.
PACKAGES = {12: "nvidia-cuda-nvcc-cu12", 13: "nvidia-cuda-nvcc"}


@dataclass(frozen=True)
class Release:
    version: str  # "13.5.37"
    max_ptx: PtxVersion  # the highest .version its ptxas accepts
    targets: tuple[str, ...]  # every sm_* its --gpu-name takes

    @property
    def package(self) -> str:
        return PACKAGES[int(self.version.split(".")[0])]

    @property
    def key(self) -> tuple[int, ...]:
        return tuple(int(x) for x in self.version.split("."))

    @property
    def requirement(self) -> str:
        """What ``pip download`` is asked for."""
        return f"{self.package}=={self.version}"


# Targets as each release's --gpu-name lists them (named by the first release that lists exactly these).
_T12_0 = "sm_50 sm_52 sm_53 sm_60 sm_61 sm_62 sm_70 sm_72 sm_75 sm_80 sm_86 sm_87 sm_89 sm_90 sm_90a"
_T12_8 = _T12_0 + " sm_100 sm_100a sm_101 sm_101a sm_120 sm_120a"
_T12_9 = (_T12_0 + " sm_100 sm_100a sm_100f sm_101 sm_101a sm_101f sm_103 sm_103a sm_103f"
          " sm_120 sm_120a sm_120f sm_121 sm_121a sm_121f")
_T13_0 = ("sm_75 sm_80 sm_86 sm_87 sm_88 sm_89 sm_90 sm_90a sm_100 sm_100a sm_100f sm_103 sm_103a sm_103f"
          " sm_110 sm_110a sm_110f sm_120 sm_120a sm_120f sm_121 sm_121a sm_121f")
_T13_4 = _T13_0.replace(" sm_110 ", " sm_107 sm_107a sm_107f sm_110 ")

# version, highest .version, targets: 22 CUDA 12 releases and 12 CUDA 13 releases (learned from each binary).
_TABLE: tuple[tuple[str, str, str], ...] = (
    ("12.0.76", "8.0", _T12_0),
    ("12.0.140", "8.0", _T12_0),
    ("12.1.66", "8.1", _T12_0),
    ("12.1.105", "8.1", _T12_0),
    ("12.2.91", "8.2", _T12_0),
    ("12.2.128", "8.2", _T12_0),
    ("12.2.140", "8.2", _T12_0),
    ("12.3.52", "8.3", _T12_0),
    ("12.3.103", "8.3", _T12_0),
    ("12.3.107", "8.3", _T12_0),
    ("12.4.99", "8.4", _T12_0),
    ("12.4.131", "8.4", _T12_0),
    ("12.5.40", "8.5", _T12_0),
    ("12.5.82", "8.5", _T12_0),
    ("12.6.20", "8.5", _T12_0),
    ("12.6.68", "8.5", _T12_0),
    ("12.6.77", "8.5", _T12_0),
    ("12.6.85", "8.5", _T12_0),
    ("12.8.61", "8.7", _T12_8),
    ("12.8.93", "8.7", _T12_8),
    ("12.9.41", "8.8", _T12_9),
    ("12.9.86", "8.8", _T12_9),
    ("13.0.48", "9.0", _T13_0),
    ("13.0.88", "9.0", _T13_0),
    ("13.1.80", "9.1", _T13_0),
    ("13.1.115", "9.1", _T13_0),
    ("13.2.51", "9.2", _T13_0),
    ("13.2.78", "9.2", _T13_0),
    ("13.2.86", "9.2", _T13_0),
    ("13.3.33", "9.3", _T13_0),
    ("13.3.73", "9.3", _T13_0),
    ("13.4.59", "9.4", _T13_4),
    ("13.4.92", "9.4", _T13_4),
    ("13.5.37", "9.5", _T13_4),
)

RELEASES: tuple[Release, ...] = tuple(
    sorted((Release(v, PtxVersion.parse(p), tuple(t.split())) for v, p, t in _TABLE), key=lambda r: r.key)
)


def lookup(version: str) -> Release:
    """``13.5.37`` exactly, or ``13.5`` as the newest release of that line."""
    if not RELEASE_VERSION.fullmatch(version):
        raise ValueError(f"{version!r} is not a release version (such as 13.5 or 13.5.37)")
    hits = [r for r in RELEASES if r.version == version or r.version.startswith(version + ".")]
    if not hits:
        raise ValueError(f"unknown ptxas release {version!r}; known: {', '.join(r.version for r in RELEASES)}")
    return hits[-1]


def select(spec: str) -> list[Release]:
    """``all``, or comma-separated versions (each resolved by :func:`lookup`), oldest first, no repeats."""
    if spec.strip() == "all":
        return list(RELEASES)
    chosen = {lookup(s.strip()).version: lookup(s.strip()) for s in spec.split(",") if s.strip()}
    if not chosen:
        raise ValueError("names no release")
    return sorted(chosen.values(), key=lambda r: r.key)
