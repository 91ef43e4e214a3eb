"""wmma (§9.7.14.4) as a family: every load, store and mma form, run load -> mma -> store in memory.

specs/wmma.yaml states what the ISA specifies (shapes, types, layouts, fragment register
counts, strides, state spaces); the fragment distribution it leaves unspecified is observed,
not checked (``ptxconf wmma-observe``).  Checks: ``value`` (random A, B, C on grids where D is
exact) and ``map.A``/``map.B``/``map.C`` (one matrix tagged, the other a selection matrix, so D
says where each element went), all memory to memory with per-case strides, offsets and C/D
layouts, and a per-kernel state space.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from ptxconf.core.family import Family
from ptxconf.core.plan import Expected, Plan, pick_build, split_launches, stack_slices, variant_rng
from ptxconf.isa.targets import PtxVersion, Target

from . import bulk
from . import probe as wm
from .cases import CHECKS, make_cases
from .compare import companion_of, compare_wmma, passed
from .memory import apply, sizes


class WmmaFamily(Family):
    name = "wmma"
    spec_families = ("wmma",)
    documents = {"wmma/1": "ptxconf.families.wmma.spec:load_document"}
    checks = CHECKS

    def build(self, v, seed: int, cc: tuple[int, int], max_ptx: PtxVersion) -> tuple[Target, PtxVersion]:
        """A load or store is built with its mma form (the plan's first draw), whose targets and versions it takes."""
        return pick_build(v, variant_rng(v, seed, "build"), cc, max_ptx, _companion(v, variant_rng(v, seed)))

    def plan(self, v, seed: int, cc: tuple[int, int], max_ptx: PtxVersion, checks: Iterable[str] = (),
             value_cases: int = 8, cases_per_launch: int | None = None) -> Plan:
        rng = variant_rng(v, seed)
        mv = _companion(v, rng)
        target, version = self.build(v, seed, cc, max_ptx)
        size = sizes(v.doc, mv)
        spaces = [s for s in v.doc.spaces_for(version) if not s.startswith(".shared") or 128 * (size.in_words + size.out_words) <= wm.SHARED_BUDGET]
        probe = wm.WmmaProbe(v, mv, wm.routes_for(v), spaces[int(rng.integers(len(spaces)))], size)
        case_sets = make_cases(probe, seed, checks, value_cases, rng)
        in_words = np.concatenate([cs.words for cs in case_sets])
        slices, pos = stack_slices(case_sets)
        order, per_launch, wpb = split_launches(rng, pos, cases_per_launch)
        if probe.shared:
            wpb = max(w for w in (1, 2, 4, 8) if w <= wpb and w * probe.warp_bytes <= wm.SHARED_BUDGET)
        launches = [order[i : i + per_launch] for i in range(0, pos, per_launch)]
        # Every check's out image (D where the case stores it, zero elsewhere) in one pass over the plan's words.
        words = apply(v.doc, mv, probe.routes, in_words, size.out_words)
        expected = Expected(words, np.full(words.shape[1:], 0xFFFFFFFF, dtype=np.uint32), tuple(cs.check for cs in case_sets))
        return Plan(v, seed, version, target, probe, case_sets, in_words, slices, launches, wpb, size.out_words,
                    expected=expected)

    def passed(self, v, rec):
        return passed(v, rec)

    def bulk_cases(self, v, seed: int, cc: tuple[int, int], max_ptx: PtxVersion):
        return bulk.bulk_cases(v, seed, cc, max_ptx)

    def module_source(self, probes: list, version: PtxVersion, target: Target) -> str:
        return wm.module_source(probes, version, target)

    def assembly_probe(self, v):
        mv = wm.companions(v)[0]
        return wm.WmmaProbe(v, mv, wm.routes_for(v), ".global", sizes(v.doc, mv))

    def emulate(self, probe, rows: np.ndarray, out_words: int, emulator) -> np.ndarray:
        return apply(probe.variant.doc, probe.mma, probe.routes, rows, out_words)

    def compare(self, v, rec):
        return compare_wmma(v, rec)

    def add_cli(self, sub) -> None:
        from .cli import add_parser

        add_parser(sub)


__all__ = ["FAMILY", "WmmaFamily", "companion_of"]

FAMILY = WmmaFamily()


def _companion(v, rng):
    """The mma form a load or store is run with: the first draw of the plan's stream ``rng``."""
    options = wm.companions(v)
    return options[int(rng.integers(len(options)))]
