"""The backend interface: run launches of one PTX module, one result per launch.

A launch runs ``ncases`` warps; warp ``w`` takes case ``order[w]``.  A result
carries the output words, or the error that stopped that launch (a fault,
a timeout, a JIT failure): one failed launch never ends the run.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numpy as np

from conformance.spec.model import Variant
from conformance.spec.targets import TARGET_MIN_PTX, PtxVersion, Target, parse_target, runs_on
from generators.probe import Probe


class BackendError(RuntimeError):
    """A backend cannot run at all (no GPU, no driver, no PyCUDA)."""


@dataclass
class Launch:
    probe: Probe
    in_words: np.ndarray  # uint32[case, lane, in_words]
    out_words: int
    order: np.ndarray  # uint32[ncases]: warp slot -> case
    warps_per_block: int


@dataclass
class LaunchResult:
    out: np.ndarray | None  # uint32[case, lane, out_words]
    error: str | None = None
    seconds: float = 0.0
    info: dict = field(default_factory=dict)


class Backend(ABC):
    name: str = "?"

    @abstractmethod
    def info(self) -> dict:
        """Device, driver and toolkit facts for the run summary and JUnit properties."""

    @abstractmethod
    def compute_capability(self) -> tuple[int, int]:
        """The GPU's (or emulated GPU's) compute capability."""

    def max_ptx(self) -> PtxVersion:
        """Highest ``.version`` the loader accepts."""
        return PtxVersion(9, 0)

    @abstractmethod
    def run(self, module: str, launches: list[Launch]) -> list[LaunchResult]:
        """Run every launch against ``module`` (PTX text)."""

    def close(self) -> None:
        """Release the device."""


def runnable_targets(v: Variant, cc: tuple[int, int]) -> list[Target]:
    """Targets whose PTX has the variant's features and loads on a GPU of ``cc``."""
    return [t for t in map(parse_target, TARGET_MIN_PTX) if runs_on(t, cc) and v.valid_for(t) is None]


def support_reason(v: Variant, cc: tuple[int, int], max_ptx: PtxVersion) -> str | None:
    """Why this GPU (or emulated GPU) cannot run the variant, or None: decided before anything is built."""
    if v.min_ptx > max_ptx:
        return f"needs .version {v.min_ptx}; the loader here accepts up to {max_ptx}"
    targets = [t for t in runnable_targets(v, cc) if max(v.min_ptx, t.min_ptx) <= max_ptx]
    if not targets:
        need = ", ".join(t.name for t in v.requires)
        return f"needs {need}; this GPU has compute capability {cc[0]}.{cc[1]}"
    return None


def native_build(v: Variant, backend: Backend) -> tuple[Target, PtxVersion]:
    """The newest target this GPU loads for ``v`` and the lowest ``.version`` it needs (for one-off launches).

    Raises ValueError with the reason when the backend cannot run ``v``.
    """
    cc = backend.compute_capability()
    why = support_reason(v, cc, backend.max_ptx())
    if why:
        raise ValueError(f"{v.id}: {why}")
    target = sorted(runnable_targets(v, cc), key=lambda t: (t.cc, t.suffix))[-1]
    return target, max(v.min_ptx, target.min_ptx)
