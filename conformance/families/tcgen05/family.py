"""tcgen05.mma (§9.7.16) as a family: Table 39 tuples, descriptors in the case data, one CTA per case."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
from ptxconf.core.family import Family
from ptxconf.core.plan import PTX_VERSIONS, Plan, runnable_targets, variant_rng
from ptxconf.isa.targets import PtxVersion, Target

from . import cases as tc05
from .compare import compare_tcgen05


@dataclass
class TcCases:
    check: str
    cases: int
    params: dict = field(default_factory=dict)
    meta: dict = field(default_factory=dict)


class Tcgen05Family(Family):
    name = "tcgen05"
    spec_families = (tc05.FAMILY,)
    documents = {"tcgen05/1": "ptxconf.families.tcgen05.spec:load_document"}

    def run_variants(self, specs) -> list:
        doc = specs.documents.get(tc05.FAMILY)
        return tc05.run_variants(doc) if doc is not None else []

    def build(self, v, seed: int, cc: tuple[int, int], max_ptx: PtxVersion) -> tuple[Target, PtxVersion]:
        return tc05.pick_build(v, variant_rng(v, seed, "build"), runnable_targets(v, cc), max_ptx, PTX_VERSIONS)

    def plan(self, v, seed: int, cc: tuple[int, int], max_ptx: PtxVersion, checks: Iterable[str] = (),
             value_cases: int = 8, cases_per_launch: int | None = None) -> Plan:
        """Only the value check (tcgen05 operands have no lane map to tag); launches hold whole CTAs."""
        rng = variant_rng(v, seed)
        target, version = self.build(v, seed, cc, max_ptx)
        in_words, metas = tc05.make_cases(v, seed, value_cases)
        rows = len(in_words)
        cs = TcCases("value", rows, {}, {"cases": metas})
        order = rng.permutation(value_cases)
        per_launch = int(rng.integers(max(1, value_cases // 4), value_cases + 1)) if cases_per_launch is None else cases_per_launch
        launches = []
        for i in range(0, value_cases, per_launch):
            cases = order[i : i + per_launch]
            launches.append((cases[:, None] * tc05.ROWS + np.arange(tc05.ROWS)[None, :]).reshape(-1))
        return Plan(v, seed, version, target, tc05.TcProbe(v), [cs], in_words, {"value": (0, rows)}, launches,
                    tc05.ROWS, tc05.geometry(v).out_words)

    def module_source(self, probes: list, version: PtxVersion, target: Target) -> str:
        return tc05.module_source(probes, version, target)

    def emulate(self, probe, rows: np.ndarray, out_words: int, emulator) -> np.ndarray:
        """Rows in slot order, 4 per CTA (case): read each case through the spec, run the semantics.

        A case whose descriptors the spec cannot read (or that the model does not cover) leaves
        Tensor Memory as C: what a kernel that issued nothing would read back.
        """
        v = probe.variant
        out = np.zeros((len(rows), 32, out_words), dtype=np.uint32)
        for c in range(0, len(rows), tc05.ROWS):
            view = tc05.decode_case(v, rows[c : c + tc05.ROWS])
            d = view.bits["C"]
            if view.fields is not None and "A" in view.bits and "B" in view.bits:
                d = emulator.semantics(v, {**view.bits, "fields": view.fields})
            out[c : c + tc05.ROWS] = tc05.pack_d(v, d)
        return out

    def compare(self, v, rec):
        return compare_tcgen05(v, rec)

    def add_cli(self, sub) -> None:
        from .cli import add_parser

        add_parser(sub)


FAMILY = Tcgen05Family()
