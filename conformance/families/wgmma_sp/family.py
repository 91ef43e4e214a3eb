"""wgmma.mma_async.sp (§9.7.15.6) as a family: one warpgroup per case, sparse A with metadata.

Built on the dense wgmma family (descriptors, shared-memory reader, D fragment, numerics); what
is sparse (the compressed A, the metadata and its selector) lives here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

import numpy as np
from ptxconf.core.family import Family
from ptxconf.core.plan import Plan, expected_of, plan_by_kernel, variant_rng, without_kernels
from ptxconf.families.mma import undefined as ud
from ptxconf.families.wgmma import probe as wg
from ptxconf.isa.targets import PtxVersion, Target

from . import probe as sp
from .cases import immediate_sets, make_cases
from .compare import compare_sp


def _kernel(v, cs) -> sp.SpProbe:
    return sp.SpProbe(v, tuple(sorted(cs.params["imm"].items())), cs.check.startswith("undefined."))


class WgmmaSpFamily(Family):
    name = "wgmma.sp"
    spec_families = ("wgmma.sp",)
    documents = {"wgmma_sp/1": "ptxconf.families.wgmma_sp.spec:load_document"}
    emulated_cc = (9, 0)  # every form is sm_90a-specific
    checks = ("value", "map.A", "map.B", "map.metadata")
    undefined_checks = ud.UNDEFINED_CHECKS

    def plan(self, v, seed: int, cc: tuple[int, int], max_ptx: PtxVersion, checks: Iterable[str] = (),
             value_cases: int = 8, cases_per_launch: int | None = None) -> Plan:
        rng = variant_rng(v, seed)
        target, version = self.build(v, seed, cc, max_ptx)
        case_sets = make_cases(v, seed, tuple(checks), min(value_cases, 4))
        plan = plan_by_kernel(v, seed, version, target, case_sets, lambda cs: _kernel(v, cs), sp.out_words(v), rng,
                              cases_per_launch)
        return replace(plan, expected=expected_of(case_sets, wg.defined_words(v)))

    def passed(self, v, rec):
        return wg.passed(v, rec)

    def settle(self, plan: Plan, cc: tuple[int, int]) -> Plan:
        v = plan.variant
        refused = [_kernel(v, cs) for cs in plan.case_sets
                   if cs.check.startswith("undefined.selector") and not self._assembles(v, cs, plan.target, cc)]
        legal = sp.SpProbe(v, tuple(sorted(immediate_sets(v)[0].items())))
        return without_kernels(plan, refused, legal) if refused else plan

    @staticmethod
    def _assembles(v, cs, target: Target, cc: tuple[int, int]) -> bool:
        """Assemble the kernel of an out-of-range selector alone, as the GPU's module would be (at the form's
        lowest .version); the answer goes into the check's meta, where the comparator and a replay read it."""
        version = max(v.min_ptx, target.min_ptx)
        cs.meta["assembler"] = ud.assembled(sp.module_source([_kernel(v, cs)], version, target), version, cc)
        return bool(cs.meta["assembler"].get("accepted"))

    def bulk_cases(self, v, seed: int, cc: tuple[int, int], max_ptx: PtxVersion):
        from .bulk import bulk_cases

        return bulk_cases(v, seed, cc, max_ptx)

    def bulk_value_cases(self, v, seed: int, cc: tuple[int, int], max_ptx: PtxVersion) -> list:
        """One for each immediate set and selector, as the plan's value check runs each."""
        from .bulk import bulk_cases

        return [bulk_cases(v, seed, cc, max_ptx, imm) for imm in immediate_sets(v)]

    def module_source(self, probes: list, version: PtxVersion, target: Target) -> str:
        return sp.module_source(probes, version, target)

    def assembly_probe(self, v):
        return sp.SpProbe(v, tuple(sorted(immediate_sets(v)[-1].items())))

    def emulate(self, probe, rows: np.ndarray, out_words: int, emulator) -> np.ndarray:
        """The spec's semantics; a case whose inputs the ISA leaves undefined gets the not-modelled marker."""
        v, imm = probe.variant, probe.params["imm"]
        sel = int(imm.get("sel", 0))
        if sel not in v.selectors:
            undefined = np.ones(len(rows), dtype=bool)
        else:
            fields = sp.fields_of(v, rows[:, :, sp.META_WORD], sel)
            undefined = ud.undefined_chunks(sp.sparsity(v), fields, order_required=False).any(axis=(1, 2))
        out = np.zeros((len(rows), sp.LANES, out_words), dtype=np.uint32)
        if (~undefined).any():
            out[~undefined] = sp.apply(v, rows[~undefined], imm, arithmetic=getattr(emulator, "arithmetic", None))
        out[undefined, :, : sp.d_words(v)] = ud.NOT_MODELLED
        return out

    def discover(self, backend, v, use_spec: bool = True) -> dict:
        """D, the register A (``/rs``) and the metadata of each selector, learnt from the hardware (:mod:`.discover`)."""
        from .discover import discover

        return discover(backend, v, use_spec)

    def compare(self, v, rec):
        return compare_sp(v, rec)


FAMILY = WgmmaSpFamily()


