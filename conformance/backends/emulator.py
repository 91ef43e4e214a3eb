"""The NumPy emulator: executes a probe as its spec describes, for machines without a GPU.

Each launch's rows go to the owning family's ``emulate`` (its semantics read through the
spec's lane maps and descriptors), with the instruction arithmetic injected by the caller
(the oracle, or the numerics model), so that this layer imports no family and no higher
layer.  It checks the pipeline end to end; it proves nothing about hardware.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
from ptxconf import registry
from ptxconf.isa.model import Variant
from ptxconf.isa.targets import PtxVersion
from threadpoolctl import threadpool_limits

from .base import Backend, Launch, LaunchResult

Semantics = Callable[[Variant, dict[str, np.ndarray]], np.ndarray]


class EmulatorBackend(Backend):
    name = "emulator"

    def __init__(self, semantics: Semantics, cc: tuple[int, int] = (12, 0), auto_reason: str | None = None,
                 arithmetic: Callable | None = None):
        self.semantics = semantics  # A, B, C (bits, dense) -> D bits, for families that take it
        self.arithmetic = arithmetic  # a numerics hook for families that compute D themselves (None: exact)
        self.cc = cc
        self.auto_reason = auto_reason

    def info(self) -> dict:
        out = {"backend": self.name, "gpu": "NumPy emulator", "compute_capability": f"{self.cc[0]}.{self.cc[1]}"}
        if self.auto_reason:
            out["auto"] = self.auto_reason
        return out

    def compute_capability(self) -> tuple[int, int]:
        return self.cc

    def cc_for(self, v: Variant) -> tuple[int, int]:
        """The GPU emulated for ``v``: its family's own where every form is specific to one GPU."""
        return registry.family_of(v).emulated_cc or self.cc

    def max_ptx(self) -> PtxVersion:
        return PtxVersion(9, 9)

    def run(self, module: str, launches: list[Launch]) -> list[LaunchResult]:
        with threadpool_limits(1):  # many small products: a BLAS thread pool woken for each costs more than it saves
            return [self._run_one(launch) for launch in launches]

    def _run_one(self, launch: Launch) -> LaunchResult:
        t0 = time.perf_counter()
        p = launch.probe
        order = np.asarray(launch.order)
        rows = launch.words()[order]
        out = registry.family_of(p.variant).emulate(p, rows, launch.out_words, self)
        result = np.zeros_like(out)
        result[order] = out
        return LaunchResult(result, seconds=time.perf_counter() - t0)
