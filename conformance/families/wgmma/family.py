"""wgmma.mma_async (§9.7.15) as a family: one warpgroup per case, A/B through matrix descriptors."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

import numpy as np
from ptxconf.core.family import Family
from ptxconf.core.plan import Plan, expected_of, plan_by_kernel, variant_rng
from ptxconf.isa.targets import PtxVersion, Target

from . import bulk
from . import probe as wg
from .cases import make_cases
from .compare import compare_wgmma


class WgmmaFamily(Family):
    name = "wgmma"
    spec_families = ("wgmma",)
    documents = {"wgmma/1": "ptxconf.families.wgmma.spec:load_document"}
    emulated_cc = (9, 0)  # every form is sm_90a-specific: the emulator stands in for that GPU
    checks = ("value", "map.A", "map.B", "map.C")

    def plan(self, v, seed: int, cc: tuple[int, int], max_ptx: PtxVersion, checks: Iterable[str] = (),
             value_cases: int = 8, cases_per_launch: int | None = None) -> Plan:
        rng = variant_rng(v, seed)
        target, version = self.build(v, seed, cc, max_ptx)
        case_sets = make_cases(v, seed, tuple(checks), min(value_cases, 4))
        plan = plan_by_kernel(v, seed, version, target, case_sets,
                              lambda cs: wg.WgProbe(v, tuple(sorted(cs.params["imm"].items()))), wg.out_words(v), rng,
                              cases_per_launch)
        return replace(plan, expected=expected_of(case_sets, wg.defined_words(v)))

    def passed(self, v, rec):
        return wg.passed(v, rec)

    def checks_of(self, v, requested: Iterable[str] | None) -> tuple[str, ...]:
        """A .b1 form's elements are single bits, too few to tag: its value check stands in for the maps (its plan makes
        ``value`` for any of them)."""
        mine = self.checks_for(requested)
        if v.atype != "b1":
            return mine
        return ("value",) if any(c == "value" or c.startswith("map.") for c in mine) else mine

    def bulk_cases(self, v, seed: int, cc: tuple[int, int], max_ptx: PtxVersion):
        return bulk.bulk_cases(v, seed, cc, max_ptx)

    def bulk_value_cases(self, v, seed: int, cc: tuple[int, int], max_ptx: PtxVersion) -> list:
        """One for each immediate set, as the plan's value check runs each."""
        return [bulk.bulk_cases(v, seed, cc, max_ptx, imm) for imm in wg.immediate_sets(v)]

    def module_source(self, probes: list, version: PtxVersion, target: Target) -> str:
        return wg.module_source(probes, version, target)

    def assembly_probe(self, v):
        """The kernel of the form's last immediate set (imm-scale/imm-trans as the run draws them)."""
        return wg.WgProbe(v, tuple(sorted(wg.immediate_sets(v)[-1].items())))

    def emulate(self, probe, rows: np.ndarray, out_words: int, emulator) -> np.ndarray:
        return wg.apply(probe.variant, rows, probe.params["imm"], arithmetic=getattr(emulator, "arithmetic", None))

    def compare(self, v, rec):
        return compare_wgmma(v, rec)

    def add_cli(self, sub) -> None:
        from .cli import add_parser

        add_parser(sub)


FAMILY = WgmmaFamily()
