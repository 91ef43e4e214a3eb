"""The family interface: what an instruction family gives the generic layers.

A family (``conformance/families/<name>/``) owns everything specific to its instructions:
its spec documents and invariants, its cases and probe kernels, the emulation of its
semantics, its comparator and its CLI verbs.  The run loop, the emulator, replay, bench and
the CLI shell reach a family only through this interface and :mod:`conformance.registry`,
so they never ask which family they hold.  A method a family does not need keeps the
default here; the contract test in ``tests/core`` runs every registered family through it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from conformance import registry
from conformance.core.plan import Plan
from conformance.core.verdict import Verdict
from conformance.spec.targets import PtxVersion, Target

__all__ = ["Family", "family_of", "compare", "known_checks", "run_variants_of"]


class Family:
    """Base class of the family objects (one instance per family, ``FAMILY`` in its package)."""

    name: str = "?"
    spec_families: tuple[str, ...] = ()  # the ``family`` values of the spec variants it owns
    documents: dict[str, str] = {}  # spec document schema name -> "module:function" loader
    emulated_cc: tuple[int, int] | None = None  # the GPU the emulator stands in for (None: the emulator's own)
    checks: tuple[str, ...] = ("value",)  # the checks a run makes by default
    known_checks: tuple[str, ...] = ()  # every check ``--check`` may name for it (default: ``checks``)

    def checks_for(self, requested: Iterable[str] | None) -> tuple[str, ...]:
        """The checks this family makes when a run asks for ``requested`` (None: its default)."""
        if requested is None:
            return self.checks
        known = self.known_checks or self.checks
        return tuple(c for c in requested if c in known)

    # --- specs ---------------------------------------------------------------------------
    def check_variant(self, v: Any, path: tuple, src: Any) -> None:
        """Family invariants of one variant loaded from a variant file (raise ``src.error(...)``)."""

    def run_variants(self, specs: Any) -> list[Any]:
        """Runnable variants derived from the family's documents (added to ``specs`` for a run)."""
        return []

    # --- probes ----------------------------------------------------------------------------
    def plan(self, v: Any, seed: int, cc: tuple[int, int], max_ptx: PtxVersion, checks: Iterable[str],
             value_cases: int, cases_per_launch: int | None) -> Plan:
        """Everything random about ``v``'s probes at ``seed``: a function of (seed, variant) alone."""
        raise NotImplementedError(f"family {self.name} has no runnable probes")

    def module_source(self, probes: list[Any], version: PtxVersion, target: Target) -> str:
        """One PTX module holding every kernel in ``probes``."""
        raise NotImplementedError(f"family {self.name} has no probe kernels")

    def assembly_probe(self, v: Any) -> Any | None:
        """A kernel for assemble-only checks of ``v`` (``ptxconf assemble``), or None where the family has none."""
        return None

    # --- oracle ----------------------------------------------------------------------------
    def emulate(self, probe: Any, rows: np.ndarray, out_words: int, emulator: Any) -> np.ndarray:
        """What the kernel ``probe`` would write for input rows (in slot order), per the spec.

        ``emulator`` carries the injected semantics (``semantics``, ``arithmetic``)."""
        raise NotImplementedError(f"family {self.name} cannot be emulated")

    def compare(self, v: Any, check: str, seed: int, in_words: np.ndarray, out_words: np.ndarray,
                params: dict, surroundings: Any, meta: dict | None) -> Verdict:
        """One check's verdict from recorded words, through the current spec."""
        raise NotImplementedError(f"family {self.name} has no comparator")

    # --- command line ----------------------------------------------------------------------
    def add_cli(self, sub: Any) -> None:
        """Add the family's own ``ptxconf`` verbs."""


def family_of(v: Any) -> Family:
    return registry.family_of(v)


def compare(v: Any, check: str, seed: int, in_words: np.ndarray, out_words: np.ndarray, params: dict,
            surroundings: Any, meta: dict | None = None) -> Verdict:
    """The verdict of the family that owns ``v``."""
    return family_of(v).compare(v, check, seed, in_words, out_words, params, surroundings, meta)


def known_checks() -> tuple[str, ...]:
    """Every check name some registered family makes, in registration order."""
    seen: dict[str, None] = {}
    for fam in registry.families():
        for c in fam.known_checks or fam.checks:
            seen.setdefault(c, None)
    return tuple(seen)


def run_variants_of(specs: Any) -> list[Any]:
    """Add every family's derived runnable variants to ``specs`` (this object only); returns them."""
    added = []
    for fam in registry.families():
        for v in fam.run_variants(specs):
            specs.variants.setdefault(v.id, v)
            added.append(v)
    return added
