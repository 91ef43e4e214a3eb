"""mma.sync and mma.sp (§9.7.14.5-6) as a family: warp-wide register fragments, A·B + C -> D."""

from __future__ import annotations

import json
from collections.abc import Iterable

import numpy as np

from conformance.core.family import Family
from conformance.core.plan import Plan, launches_by_probe, pick_build, split_launches, stack_slices, variant_rng
from conformance.spec.packing import pack, unpack
from conformance.spec.targets import PtxVersion, Target
from generators.ptx import Surroundings, checksum

from . import checks as spec_checks
from .compare import compare
from .inputs import CHECKS, SPARSE_CHECKS, make_checks
from .probe import Probe, buffer_layout, chainable, module_source


def _params_key(params: dict[str, dict[str, int]]) -> str:
    return json.dumps(params, sort_keys=True)


class MmaFamily(Family):
    name = "mma"
    spec_families = ("mma.sync", "mma.sp")
    checks = CHECKS
    known_checks = CHECKS + SPARSE_CHECKS

    def check_variant(self, v, path: tuple, src) -> None:
        spec_checks.check_shapes(v, path, src)

    def plan(self, v, seed: int, cc: tuple[int, int], max_ptx: PtxVersion, checks: Iterable[str] = CHECKS,
             value_cases: int = 8, cases_per_launch: int | None = None) -> Plan:
        case_sets = make_checks(v, seed, tuple(checks), value_cases=value_cases)
        rng = variant_rng(v, seed)
        target, version = pick_build(v, variant_rng(v, seed, "build"), cc, max_ptx)
        surroundings = Surroundings(
            chain=bool(chainable(v) and rng.integers(2)),
            extra_regs=int(rng.integers(0, 6)),
            salt=int(rng.integers(0, 2**31)),
        )
        probe = Probe(v, case_sets[0].params, surroundings)
        layout = buffer_layout(v)
        blocks = []
        for cs in case_sets:
            words = np.zeros((cs.cases, 32, layout.in_words), dtype=np.uint32)
            for name, off in layout.inputs.items():
                op = v.operands[name]
                words[:, :, off : off + op.words] = pack(op, cs.bits[name], cs.params.get(name), cs.filler.get(name))
            blocks.append(words)
        in_words = np.concatenate(blocks)
        slices, pos = stack_slices(case_sets)
        order, per_launch, wpb = split_launches(rng, pos, cases_per_launch)
        keys = [_params_key(cs.params) for cs in case_sets]
        if len(set(keys)) == 1:
            launches = [order[i : i + per_launch] for i in range(0, pos, per_launch)]
            return Plan(v, seed, version, target, probe, case_sets, in_words, slices, launches, wpb, layout.out_words)
        # Selector immediates differ between checks: one kernel per distinct set, launches never mix them.
        probes: list[Probe] = []
        of_case = np.zeros(pos, dtype=np.int64)
        for cs, key in zip(case_sets, keys):
            if key not in [_params_key(p.params) for p in probes]:
                probes.append(Probe(v, cs.params, surroundings))
            a, b = slices[cs.check]
            of_case[a:b] = [_params_key(p.params) for p in probes].index(key)
        launches, launch_probe = launches_by_probe(order, of_case, len(probes), per_launch)
        return Plan(v, seed, version, target, probes[0], case_sets, in_words, slices, launches, wpb, layout.out_words,
                    probes, launch_probe)

    def module_source(self, probes: list, version: PtxVersion, target: Target) -> str:
        return module_source(probes, version, target)

    def assembly_probe(self, v) -> Probe:
        """The value check's kernel, with its selector immediates."""
        return Probe(v, make_checks(v, 0, ("value",))[0].params)

    def emulate(self, probe, rows: np.ndarray, out_words: int, emulator) -> np.ndarray:
        """Unpack through the lane maps, apply the injected semantics, pack D and the checksum back."""
        v = probe.variant
        layout = buffer_layout(v)
        bits = {}
        for name, off in layout.inputs.items():
            op = v.operands[name]
            bits[name] = unpack(op, rows[:, :, off : off + op.words], probe.params.get(name))
        d_bits = emulator.semantics(v, bits)
        out = np.zeros((len(rows), 32, out_words), dtype=np.uint32)
        d = v.operands["D"]
        out[:, :, : d.words] = pack(d, d_bits)
        out[:, :, layout.checksum_offset] = checksum(np.arange(32), probe.surroundings)[None, :]
        return out

    def compare(self, v, check, seed, in_words, out_words, params, surroundings, meta):
        return compare(v, check, seed, in_words, out_words, params, surroundings, meta)


FAMILY = MmaFamily()
