"""The backend interface: run launches of one PTX module, one result per launch.

A launch runs ``ncases`` warps; warp ``w`` takes case ``order[w]``.  A result
carries the output words, or the error that stopped that launch (a fault,
a timeout, a JIT failure): one failed launch never ends the run.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from ptxconf.core.plan import runnable_targets, support_reason
from ptxconf.isa.model import Variant
from ptxconf.isa.targets import PtxVersion, Target

__all__ = ["Backend", "BackendError", "NoGpu", "backend_label", "evidence_label", "Launch", "LaunchResult", "native_build", "runnable_targets", "support_reason"]


class BackendError(RuntimeError):
    """A backend cannot run at all (no GPU, no driver, no PyCUDA)."""


class NoGpu(BackendError):
    """A GPU backend's worker found no GPU as it started (no driver, no device; the text says which): what
    :func:`ptxconf.backends.without_gpu` turns into what ``auto`` or ``pycuda`` does then."""


def backend_label(info: dict) -> str:
    """What produced a result, in a few words for the end of a line: ``the emulator``, or ``pycuda (NVIDIA H100 ...)``
    (a backend's ``info()``, or the ``device`` block a run recorded)."""
    if info.get("backend") == "emulator":
        return "the emulator"
    return f"{info.get('backend', '?')} ({info.get('gpu', 'a GPU')})"


def evidence_label(info: dict) -> str:
    """:func:`backend_label` with what the emulator's evidence is worth: it computes from the specs themselves, so
    its "agrees" checks the tool, not the hardware."""
    if info.get("backend") == "emulator":
        return "the emulator (no hardware observed: the maps come from specs/)"
    return backend_label(info)


@dataclass
class Launch:
    probe: Any  # a family's kernel object: ``variant``, ``name``, what its family's emulate reads
    in_words: np.ndarray  # uint32[case, lane, in_words]
    out_words: int
    order: np.ndarray  # uint32[ncases]: warp slot -> case
    warps_per_block: int
    # With ``rows``, ``in_words`` is a whole plan's words and the launch runs those rows (its cases are
    # ``in_words[rows]``); with ``into`` as well, a backend may write the out words there at ``rows`` and return
    # ``LaunchResult(None)`` instead of carrying them back (shared words: nothing crosses a pipe).
    rows: np.ndarray | None = None
    into: np.ndarray | None = None

    def words(self) -> np.ndarray:
        """This launch's input words, one row per case."""
        return np.asarray(self.in_words) if self.rows is None else self.in_words[self.rows]


@dataclass
class LaunchResult:
    out: np.ndarray | None  # uint32[case, lane, out_words]; None without error: written to ``Launch.into``
    error: str | None = None
    seconds: float = 0.0
    info: dict = field(default_factory=dict)
    abandoned: bool = False  # never ran: the run stopped while its module was still being built (no verdict is due)


class Backend(ABC):
    name: str = "?"
    parallel: int = 1  # modules the run may have in flight at once (``run`` called from that many threads)

    @abstractmethod
    def info(self) -> dict:
        """Device, driver and toolkit facts for the run summary and JUnit properties."""

    @abstractmethod
    def compute_capability(self) -> tuple[int, int]:
        """The GPU's (or emulated GPU's) compute capability."""

    def max_ptx(self) -> PtxVersion:
        """Highest ``.version`` the loader accepts."""
        return PtxVersion(9, 0)

    def prefetch(self, module: str) -> None:
        """A module that will be run soon: a backend may start building it (default: nothing)."""

    def stats(self) -> dict:
        """How the backend spent its time (build paths, compile seconds) for the run summary."""
        return {}

    def open(self) -> None:
        """Start what runs the kernels now, so that it is ready when the first module is (default: nothing)."""

    def handed_over(self) -> None:
        """This process forked the process that uses this backend from now on (a lane, after :meth:`open` here): let
        go of what that process took over, without ending it (default: nothing held)."""

    def moments(self) -> dict[str, float]:
        """When this backend's device became ready, and the like: ``time.time()`` by name, for the run's timeline
        (default: none)."""
        return {}

    def set_stop(self, stop) -> None:
        """The run's stop request (a callable), asked while a module waits for its build: a module not built when the
        run stops is not run (its launches come back ``abandoned``).  Default: never asked (nothing waits here)."""

    @abstractmethod
    def run(self, module: str, launches: list[Launch]) -> list[LaunchResult]:
        """Run every launch against ``module`` (PTX text)."""

    def for_lane(self) -> Backend:
        """This backend as a forked process of its own may use it (one device's lane, :mod:`ptxconf.run.lanes`):
        itself where nothing of it lives outside this process."""
        return self

    def close(self) -> None:
        """Release the device."""


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
