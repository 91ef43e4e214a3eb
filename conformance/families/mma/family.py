"""mma.sync and mma.sp (§9.7.14.5-6) as a family: warp-wide register fragments, A·B + C -> D."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from ptxconf.core.family import Family
from ptxconf.core.plan import (
    Expected,
    Plan,
    expected_of,
    launches_by_probe,
    split_launches,
    stack_slices,
    variant_rng,
    without_kernels,
)
from ptxconf.core.verdict import Verdict
from ptxconf.generators.ptx import Surroundings, checksum
from ptxconf.isa.packing import pack, unpack
from ptxconf.isa.sparse import is_sparse, sparsity
from ptxconf.isa.targets import PtxVersion, Target
from ptxconf.oracle import mma

from . import bulk, spec
from . import undefined as ud
from .cases import CHECKS, SPARSE_CHECKS, make_checks
from .compare import compare
from .probe import Probe, buffer_layout, chainable, module_source


class MmaFamily(Family):
    name = "mma"
    spec_families = ("mma.sync", "mma.sp")
    checks = CHECKS
    known_checks = CHECKS + SPARSE_CHECKS
    undefined_checks = ud.UNDEFINED_CHECKS  # mma.sp only

    def checks_of(self, v, requested: Iterable[str] | None) -> tuple[str, ...]:
        """Dense forms have no metadata: none of its checks; a sparse form's default adds its metadata map (as its
        plan does); ``undefined.selector`` is one verdict per value."""
        mine = self.checks_for(requested)
        if not is_sparse(v):
            return tuple(c for c in mine if c not in SPARSE_CHECKS + ud.UNDEFINED_CHECKS)
        return mine + SPARSE_CHECKS if requested is None else mine

    def check_variant(self, v, path: tuple, src) -> None:
        spec.check_shapes(v, path, src)

    def plan(self, v, seed: int, cc: tuple[int, int], max_ptx: PtxVersion, checks: Iterable[str] = CHECKS,
             value_cases: int = 8, cases_per_launch: int | None = None) -> Plan:
        case_sets = make_checks(v, seed, self.checks_for(tuple(checks)), value_cases=value_cases)
        rng = variant_rng(v, seed)
        target, version = self.build(v, seed, cc, max_ptx)
        surroundings = _surroundings(v, rng)
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
        kernels = [Probe(v, cs.params, surroundings, cs.check.startswith("undefined.")) for cs in case_sets]
        expected = _expected(v, case_sets, surroundings)
        # A kernel with an out-of-range selector stays a kernel of its own: ``settle`` asks ptxas whether it runs.
        selector = any(cs.check.startswith("undefined.selector") for cs in case_sets)
        names = [k.name for k in kernels]  # (each a hash of the kernel's key: taken once)
        if len(set(names)) == 1 and not selector:
            launches = [order[i : i + per_launch] for i in range(0, pos, per_launch)]
            return Plan(v, seed, version, target, probe, case_sets, in_words, slices, launches, wpb, layout.out_words,
                        expected=expected)
        # Selector immediates differ between checks (or inputs are undefined): one kernel each, launches never mix them.
        probes: list[Probe] = []
        index: dict[str, int] = {}  # kernel name -> its place in probes
        of_case = np.full(pos, -1, dtype=np.int64)
        for cs, kernel, name in zip(case_sets, kernels, names):
            if name not in index:
                index[name] = len(probes)
                probes.append(kernel)
            a, b = slices[cs.check]
            of_case[a:b] = index[name]
        launches, launch_probe = launches_by_probe(order, of_case, len(probes), per_launch)
        return Plan(v, seed, version, target, probes[0], case_sets, in_words, slices, launches, wpb, layout.out_words,
                    probes, launch_probe, expected)

    def settle(self, plan: Plan, cc: tuple[int, int]) -> Plan:
        """A kernel with an out-of-range selector joins the module only where ptxas took it alone."""
        v, surroundings = plan.variant, plan.probe.surroundings
        refused = [Probe(v, cs.params, surroundings, True) for cs in plan.case_sets
                   if cs.check.startswith("undefined.selector") and not self._assembles(v, cs, surroundings, plan.target, cc)]
        if not refused:
            return plan
        # With nothing left to launch the module still needs a kernel that assembles: the value check's.
        legal = Probe(v, make_checks(v, plan.seed, ("value",), 1)[0].params, surroundings)
        return without_kernels(plan, refused, legal)

    @staticmethod
    def _assembles(v, cs, surroundings, target: Target, cc: tuple[int, int]) -> bool:
        """Assemble the kernel of an out-of-range selector alone, as the GPU's module would be (at the lowest
        .version the form takes); the answer goes into the check's meta, where the comparator and a replay read it."""
        version = max(v.min_ptx, target.min_ptx)
        source = module_source([Probe(v, cs.params, surroundings)], version, target)
        cs.meta["assembler"] = ud.assembled(source, version, cc)
        return bool(cs.meta["assembler"].get("accepted"))

    def bulk_cases(self, v, seed: int, cc: tuple[int, int], max_ptx: PtxVersion):
        return bulk.bulk_cases(v, seed, cc, max_ptx, _surroundings)

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
        out[self._undefined_cases(v, probe.params, bits), :, : d.words] = ud.NOT_MODELLED
        return out

    @staticmethod
    def _undefined_cases(v, params: dict, bits: dict) -> np.ndarray:
        """``bool[case]``: inputs the ISA leaves undefined (an out-of-range selector, an undefined index pair)."""
        cases = len(next(iter(bits.values())))
        if not is_sparse(v):
            return np.zeros(cases, dtype=bool)
        legal = [c["selector"] for c in v.operands["metadata"].param_combinations()]
        if params.get("metadata", {}).get("selector", 0) not in legal:
            return np.ones(cases, dtype=bool)
        sp = sparsity(v)
        fields = bits["metadata"].reshape(cases, -1)
        return ud.undefined_chunks(sp, fields, sp.ordered).any(axis=-1)

    def compare(self, v, rec):
        return compare(v, rec)

    def passed(self, v, rec):
        """A value check whose D elements and checksum word are the predicted ones: the comparator's pass."""
        return Verdict(v.id, rec.check, rec.seed, "pass", elements=len(rec.in_words) * _d_elements(v))


def _d_elements(v) -> int:
    lay = v.operands["D"].layout
    return lay.matrices * lay.rows * lay.cols


def _expected(v, case_sets: list, surroundings: Surroundings) -> Expected | None:
    """The value check's out words from the bits it drew (the oracle's D, packed, and the checksum of the extra
    registers), where its comparator would recompute them from the words; the tagged checks' comparators read
    back maps, and what undefined inputs give is an observation: those always go to their comparators."""
    layout, d = buffer_layout(v), v.operands["D"]
    defined = np.zeros((32, layout.out_words), dtype=np.uint32)
    lay = d.layout
    defined[:, : d.words] = pack(d, np.full((1, lay.matrices, lay.rows, lay.cols), d.type.mask, dtype=np.uint64))[0]
    defined[:, layout.checksum_offset] = 0xFFFFFFFF
    for cs in case_sets:
        if cs.check == "value":
            exp = np.zeros((cs.cases, 32, layout.out_words), dtype=np.uint32)
            exp[:, :, : d.words] = pack(d, mma(v, cs.bits))
            exp[:, :, layout.checksum_offset] = checksum(np.arange(32), surroundings)[None, :]
            cs.expected = exp
    return expected_of(case_sets, defined)


def _surroundings(v, rng: np.random.Generator) -> Surroundings:
    """A probe's surroundings: a chained zero-multiplicand mma where C and D match, extra live registers."""
    return Surroundings(
        chain=bool(chainable(v) and rng.integers(2)),
        extra_regs=int(rng.integers(0, 6)),
        salt=int(rng.integers(0, 2**31)),
    )


FAMILY = MmaFamily()
