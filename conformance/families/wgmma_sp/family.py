"""wgmma.mma_async.sp (§9.7.15.6) as a family: one warpgroup per case, sparse A with metadata.

Built on the dense wgmma family (descriptors, shared-memory reader, D fragment, numerics); what
is sparse (the compressed A, the metadata and its selector) lives here.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from conformance.core.family import Family
from conformance.core.plan import Plan, pick_build, plan_by_kernel, variant_rng
from conformance.spec.targets import PtxVersion, Target

from . import probe as sp
from .cases import immediate_sets, make_cases
from .compare import compare_sp


class WgmmaSpFamily(Family):
    name = "wgmma.sp"
    spec_families = ("wgmma.sp",)
    documents = {"wgmma_sp/1": "conformance.families.wgmma_sp.spec:load_document"}
    emulated_cc = (9, 0)  # every form is sm_90a-specific
    checks = ("value", "map.A", "map.B", "map.metadata")

    def plan(self, v, seed: int, cc: tuple[int, int], max_ptx: PtxVersion, checks: Iterable[str] = (),
             value_cases: int = 8, cases_per_launch: int | None = None) -> Plan:
        rng = variant_rng(v, seed)
        target, version = pick_build(v, variant_rng(v, seed, "build"), cc, max_ptx)
        case_sets = make_cases(v, seed, tuple(checks), min(value_cases, 4))
        return plan_by_kernel(v, seed, version, target, case_sets,
                              lambda cs: sp.SpProbe(v, tuple(sorted(cs.params["imm"].items()))), sp.out_words(v), rng,
                              cases_per_launch)

    def module_source(self, probes: list, version: PtxVersion, target: Target) -> str:
        return sp.module_source(probes, version, target)

    def assembly_probe(self, v):
        return sp.SpProbe(v, tuple(sorted(immediate_sets(v)[-1].items())))

    def emulate(self, probe, rows: np.ndarray, out_words: int, emulator) -> np.ndarray:
        return sp.apply(probe.variant, rows, probe.params["imm"], arithmetic=getattr(emulator, "arithmetic", None))

    def compare(self, v, check, seed, in_words, out_words, params, surroundings, meta):
        return compare_sp(v, check, seed, in_words, out_words, params, meta)


FAMILY = WgmmaSpFamily()
