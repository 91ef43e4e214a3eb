"""PTX targets and versions: which ``.target`` a variant may name, and where it runs.

One rule per function, each naming the ISA note it encodes (PTX ISA 9.2 §10,
"Target ISA notes"; §12 release notes for the version that introduced a target).

* A plain target ``sm_XY`` names a minimum: code for it runs on any GPU of
  compute capability >= X.Y.
* An ``a`` target (``sm_90a``, ``sm_100a``) names arch-specific features: code
  runs only on that exact compute capability.
* An ``f`` target (``sm_100f``, ``sm_120f``, PTX 8.8) names family-specific
  features: code runs on GPUs of the same major version whose minor is >= Y.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache, lru_cache, total_ordering

__all__ = [
    "Target",
    "PtxVersion",
    "TARGET_MIN_PTX",
    "parse_target",
    "target_satisfies",
    "runs_on",
]

# Lowest .version that accepts each .target (PTX ISA 9.2, "PTX ISA notes" per target).
TARGET_MIN_PTX: dict[str, str] = {
    "sm_53": "4.2",
    "sm_60": "5.0",
    "sm_61": "5.0",
    "sm_62": "5.0",
    "sm_70": "6.0",
    "sm_72": "6.1",
    "sm_75": "6.3",
    "sm_80": "7.0",
    "sm_86": "7.1",
    "sm_87": "7.4",
    "sm_89": "7.8",
    "sm_90": "7.8",
    "sm_88": "9.0",
    "sm_90a": "8.0",
    "sm_100": "8.6",
    "sm_100a": "8.6",
    "sm_100f": "8.8",
    "sm_101": "8.6",
    "sm_101a": "8.6",
    "sm_103": "8.8",
    "sm_103a": "8.8",
    "sm_103f": "8.8",
    "sm_107": "9.4",
    "sm_107a": "9.4",
    "sm_107f": "9.4",
    "sm_110": "9.0",
    "sm_110a": "9.0",
    "sm_110f": "9.0",
    "sm_120": "8.7",
    "sm_120a": "8.7",
    "sm_120f": "8.8",
    "sm_121": "8.8",
    "sm_121a": "8.8",
    "sm_121f": "8.8",
}

_TARGET = re.compile(r"^sm_(\d+?)(\d)([af]?)$")


@total_ordering
@dataclass(frozen=True)
class PtxVersion:
    major: int
    minor: int

    @classmethod
    def parse(cls, text: str) -> PtxVersion:
        m = re.fullmatch(r"(\d+)\.(\d+)", str(text).strip())
        if not m:
            raise ValueError(f"bad PTX version {text!r}; expected MAJOR.MINOR such as 8.0")
        return cls(int(m.group(1)), int(m.group(2)))

    def __lt__(self, other: PtxVersion) -> bool:
        return (self.major, self.minor) < (other.major, other.minor)

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"


@dataclass(frozen=True)
class Target:
    """``sm_90a`` -> major 9, minor 0, suffix 'a'."""

    name: str
    major: int
    minor: int
    suffix: str  # "", "a" or "f"

    @property
    def cc(self) -> tuple[int, int]:
        return (self.major, self.minor)

    @property
    def min_ptx(self) -> PtxVersion:
        return _min_ptx(self.name)


@cache
def _min_ptx(name: str) -> PtxVersion:
    """A target's lowest ``.version``, parsed once (asked for each target of each variant as a run deals them out)."""
    return PtxVersion.parse(TARGET_MIN_PTX[name])


@lru_cache(maxsize=256)  # asked per plan and per kernel; a Target is immutable
def parse_target(name: str) -> Target:
    m = _TARGET.match(name.strip())
    if not m:
        raise ValueError(f"bad target {name!r}; expected sm_XY with optional a/f suffix")
    if name not in TARGET_MIN_PTX:
        known = ", ".join(TARGET_MIN_PTX)
        raise ValueError(f"unknown target {name!r}; known: {known}")
    return Target(name, int(m.group(1)), int(m.group(2)), m.group(3))


def target_satisfies(target: Target, requirement: Target) -> bool:
    """Does PTX for ``target`` have the features that ``requirement`` names?"""
    if requirement.suffix == "a":
        # Arch-specific features exist only on that exact arch-specific target.
        return target.suffix == "a" and target.cc == requirement.cc
    if requirement.suffix == "f":
        # Family features: the 'a' or 'f' target of the same major, minor >= Y.
        return (
            target.suffix in ("a", "f")
            and target.major == requirement.major
            and target.minor >= requirement.minor
        )
    # A plain minimum: any target of at least that compute capability.
    return target.cc >= requirement.cc


def runs_on(target: Target, cc: tuple[int, int]) -> bool:
    """Can the driver load PTX of ``target`` on a GPU of compute capability ``cc``?"""
    if target.suffix == "a":
        return cc == target.cc
    if target.suffix == "f":
        return cc[0] == target.major and cc[1] >= target.minor
    return cc >= target.cc
