"""ldmatrix, stmatrix and movmatrix (§9.7.14.5.15-17) as a family: shared-memory images in, registers or images out."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from ptxconf.core.family import Family
from ptxconf.core.plan import Plan, split_launches, stack_slices, variant_rng
from ptxconf.isa.targets import PtxVersion, Target

from . import bulk
from . import probe as mv
from .cases import make_cases
from .compare import compare_movement

# Operands each form must name.
OPERANDS = {"ldmatrix": ("rowaddr", "fragment"), "stmatrix": ("rowaddr", "fragment"), "movmatrix": ("a", "d")}


class MovementFamily(Family):
    name = "movement"
    spec_families = mv.FAMILIES
    checks = ("value", "map.A", "map.B", "map.C")  # the run's default; each form keeps the checks it has

    def check_variant(self, v, path: tuple, src) -> None:
        for name in OPERANDS[v.family]:
            if name not in v.operands:
                raise src.error(path + ("operands",), f"{v.id} needs operand {name}")

    def plan(self, v, seed: int, cc: tuple[int, int], max_ptx: PtxVersion, checks: Iterable[str] = (),
             value_cases: int = 8, cases_per_launch: int | None = None) -> Plan:
        rng = variant_rng(v, seed)
        target, version = self.build(v, seed, cc, max_ptx)
        probe = mv.MoveProbe(v, mv.pick_space(v, rng, version))
        case_sets = make_cases(v, seed, tuple(checks), value_cases)
        in_words = np.concatenate([cs.words for cs in case_sets])
        slices, pos = stack_slices(case_sets)
        order, per_launch, wpb = split_launches(rng, pos, cases_per_launch)
        launches = [order[i : i + per_launch] for i in range(0, pos, per_launch)]
        return Plan(v, seed, version, target, probe, case_sets, in_words, slices, launches, wpb, mv.out_words(v))

    def bulk_cases(self, v, seed: int, cc: tuple[int, int], max_ptx: PtxVersion):
        return bulk.bulk_cases(v, seed, cc, max_ptx)

    def module_source(self, probes: list, version: PtxVersion, target: Target) -> str:
        return mv.module_source(probes, version, target)

    def assembly_probe(self, v):
        """The generic-address kernel (the run also draws .shared and .shared::cta)."""
        return mv.MoveProbe(v, "")

    def emulate(self, probe, rows: np.ndarray, out_words: int, emulator) -> np.ndarray:
        return mv.apply(probe.variant, rows)

    def compare(self, v, rec):
        return compare_movement(v, rec)

    def add_cli(self, sub) -> None:
        from .cli import add_parser

        add_parser(sub)


FAMILY = MovementFamily()
