"""The family interface: what an instruction family gives the generic layers.

A family (``conformance/families/<name>/``) owns everything specific to its instructions:
its spec documents and invariants, its cases and probe kernels, the emulation of its
semantics, its comparator and its CLI verbs.  The run loop, the emulator, replay, bench and
the CLI shell reach a family only through this interface and :mod:`ptxconf.registry`,
so they never ask which family they hold.  A method a family does not need keeps the
default here; the contract test in ``tests/core`` runs every registered family through it.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from typing import Any

import numpy as np
from ptxconf import registry
from ptxconf.core.plan import Kernel, Plan, RunVariant, pick_build, variant_rng
from ptxconf.core.record import CheckRecord
from ptxconf.core.verdict import UNDEFINED, Verdict
from ptxconf.isa.targets import PtxVersion, Target

__all__ = ["Family", "family_of", "compare", "known_checks", "run_variants_of", "select_checks", "default_checks"]


class Family:
    """Base class of the family objects (one instance per family, ``FAMILY`` in its package)."""

    name: str = "?"
    spec_families: tuple[str, ...] = ()  # the ``family`` values of the spec variants it owns
    documents: dict[str, str] = {}  # spec document schema name -> "module:function" loader
    emulated_cc: tuple[int, int] | None = None  # the GPU the emulator stands in for (None: the emulator's own)
    checks: tuple[str, ...] = ("value",)  # the checks a run makes by default
    known_checks: tuple[str, ...] = ()  # every check ``--check`` may name for it (default: ``checks``)
    # Checks that feed inputs the ISA leaves undefined: known, never in the default set (``run --undefined``
    # adds them); their verdicts are ``undefined`` observations, never a pass or a failure.
    undefined_checks: tuple[str, ...] = ()

    def checks_for(self, requested: Iterable[str] | None) -> tuple[str, ...]:
        """The checks this family makes when a run asks for ``requested`` (None: its default)."""
        if requested is None:
            return self.checks
        known = (self.known_checks or self.checks) + self.undefined_checks
        return tuple(c for c in requested if c in known)

    def checks_of(self, v: RunVariant, requested: Iterable[str] | None) -> tuple[str, ...]:
        """The checks a run makes of ``v`` (those of :meth:`checks_for` that ``v`` has): one verdict name each,
        or several named ``check[...]``."""
        return self.checks_for(requested)

    # --- specs ---------------------------------------------------------------------------
    def check_variant(self, v: RunVariant, path: tuple, src: Any) -> None:
        """Family invariants of one variant loaded from a variant file (raise ``src.error(...)``)."""

    def run_variants(self, specs: Any) -> list[RunVariant]:
        """Runnable variants derived from the family's documents (added to ``specs`` for a run)."""
        return []

    # --- probes ----------------------------------------------------------------------------
    def build(self, v: RunVariant, seed: int, cc: tuple[int, int], max_ptx: PtxVersion) -> tuple[Target, PtxVersion]:
        """The ``.target`` and ``.version`` of ``v``'s plan at ``seed`` (its own stream, drawn first by ``plan``): a
        module holds plans of one of each, so a run can say which variants share modules before planning them."""
        return pick_build(v, variant_rng(v, seed, "build"), cc, max_ptx)

    def plan(self, v: RunVariant, seed: int, cc: tuple[int, int], max_ptx: PtxVersion, checks: Iterable[str],
             value_cases: int, cases_per_launch: int | None) -> Plan:
        """Everything random about ``v``'s probes at ``seed``: a function of (seed, variant) alone."""
        raise NotImplementedError(f"family {self.name} has no runnable probes")

    def settle(self, plan: Plan, cc: tuple[int, int]) -> Plan:
        """``plan`` as the assembler takes it: what ptxas says of kernels the ISA leaves undefined (an out-of-range
        selector), asked once the plan is made and before its module is built, so that :meth:`plan` stays a
        function of (seed, variant).  The answer goes into the checks' meta (where the comparator and a replay read
        it); a kernel ptxas refuses leaves the plan, its cases recorded, never run.  Default: nothing to ask."""
        return plan

    def module_source(self, probes: list[Kernel], version: PtxVersion, target: Target) -> str:
        """One PTX module holding every kernel in ``probes``."""
        raise NotImplementedError(f"family {self.name} has no probe kernels")

    def assembly_probe(self, v: RunVariant) -> Kernel | None:
        """A kernel for assemble-only checks of ``v`` (``ptxconf assemble``), or None where the family has none."""
        return None

    def bulk_cases(self, v: RunVariant, seed: int, cc: tuple[int, int], max_ptx: PtxVersion) -> Any:
        """``v``'s fresh cases at ``seed`` for the bulk fuzzer (:class:`ptxconf.core.bulk.BulkCases`).

        Raise ``NotImplementedError`` saying why where the family (or this variant) has no array-code
        prediction of its probe's output; the fuzzer reports that and goes on."""
        raise NotImplementedError(f"family {self.name} draws no bulk cases")

    def bulk_value_cases(self, v: RunVariant, seed: int, cc: tuple[int, int], max_ptx: PtxVersion) -> list:
        """The checks of ``v``'s value check at ``seed`` as bulk cases (``ptxconf run --values device``): one for
        each kernel the plan's value check builds, named as its check is (``value[...]``), so that a run covers what
        it covers on the host.  Default: the one of :meth:`bulk_cases`."""
        return [self.bulk_cases(v, seed, cc, max_ptx)]

    # --- oracle ----------------------------------------------------------------------------
    def emulate(self, probe: Kernel, rows: np.ndarray, out_words: int, emulator: Any) -> np.ndarray:
        """What the kernel ``probe`` would write for input rows (in slot order), per the spec.

        ``emulator`` carries the injected semantics (``semantics``, ``arithmetic``)."""
        raise NotImplementedError(f"family {self.name} cannot be emulated")

    def compare(self, v: RunVariant, rec: CheckRecord) -> Verdict:
        """One check's verdict from its recorded words, through the current spec (``v``: today's variant of
        ``rec.variant``); each family reads the fields of ``rec`` it needs."""
        raise NotImplementedError(f"family {self.name} has no comparator")

    def passed(self, v: RunVariant, rec: CheckRecord) -> Verdict:
        """The verdict of a check whose out words are, on every defined bit, those its plan predicted
        (:class:`~ptxconf.core.plan.Expected`): what :meth:`compare` says of them, made without computing them
        again.  Only checks a family predicts come here; default: the comparator's own verdict."""
        return self.compare(v, rec)

    def failed(self, v: RunVariant, rec: CheckRecord, error: str) -> Verdict:
        """The verdict of a check whose cases did not run to the end (a fault, a hang, a module that did not load):
        an error, but for undefined inputs what the GPU did with them, an observation."""
        if rec.check.split("[", 1)[0] in self.undefined_checks:
            return Verdict(v.id, rec.check, rec.seed, UNDEFINED, message=f"the probe did not finish: {error}")
        return Verdict(v.id, rec.check, rec.seed, "error", message=error)

    # --- discovery -------------------------------------------------------------------------
    def discover(self, backend: Any, v: RunVariant, use_spec: bool = True) -> dict | None:
        """Learn ``v``'s register lane maps from ``backend``, assuming none, where the family has its own way.

        None: the generic discovery (``ptxconf.tools.discover``) applies.  Otherwise a dict:
        ``maps`` (name -> int64[lane, element, 3] (matrix, row, col), -1 where unobserved), ``spec`` (the
        spec's maps by the same names), ``relabeling`` (list of str: how labels the hardware cannot fix were
        chosen), ``diffs`` (name -> one line per slot where observation and spec differ), ``cases`` (int),
        ``document`` (the observed layouts as a spec-format document) and ``unfit`` (names whose formulas did
        not fit)."""
        return None

    # --- command line ----------------------------------------------------------------------
    def add_cli(self, sub: Any) -> None:
        """Add the family's own ``ptxconf`` verbs."""


def family_of(v: RunVariant) -> Family:
    return registry.family_of(v)


def compare(v: RunVariant, rec: CheckRecord) -> Verdict:
    """The verdict of the family that owns ``v``."""
    return family_of(v).compare(v, rec)


def known_checks() -> tuple[str, ...]:
    """Every check name some registered family makes, in registration order."""
    seen: dict[str, None] = {}
    for fam in registry.families():
        for c in (fam.known_checks or fam.checks) + fam.undefined_checks:
            seen.setdefault(c, None)
    return tuple(seen)


def default_checks() -> tuple[str, ...]:
    """Every registered family's default checks, in registration order."""
    return tuple(dict.fromkeys(c for fam in registry.families() for c in fam.checks))


def select_checks(requested: Iterable[str] | None, undefined: bool = False) -> tuple[str, ...] | None:
    """The check names a run hands every family: ``requested`` (names or globs over :func:`known_checks`;
    None: each family's default) plus, with ``undefined``, every family's undefined checks.

    One tuple serves every family (each keeps the names it knows), so ``undefined`` with nothing
    requested is the defaults of every family plus the undefined checks.  Raises ValueError
    naming a name or glob that matches no known check."""
    known = known_checks()
    names: list[str] = []
    for pattern in requested or ():
        hits = [c for c in known if fnmatch.fnmatchcase(c, pattern)]
        if not hits:
            raise ValueError(f"{pattern}: unknown check; choose from {', '.join(known)}")
        names += hits
    if undefined:
        names = (names or list(default_checks())) + [c for fam in registry.families() for c in fam.undefined_checks]
    return tuple(dict.fromkeys(names)) or None


def run_variants_of(specs: Any) -> list[RunVariant]:
    """Add every family's derived runnable variants to ``specs`` (this object only); returns them."""
    added = []
    for fam in registry.families():
        for v in fam.run_variants(specs):
            specs.variants.setdefault(v.id, v)
            added.append(v)
    return added
