"""The run loop: plan probes per variant, batch them into modules, launch, compare, record.

Per variant and seed the plan picks (reproducibly) the ``.version`` and
``.target``, the surroundings, the warps per block, how the cases split into
launches and the case -> warp order.  Variants sharing a ``.version`` and
``.target`` share one PTX module.  Verdicts and raw observations are written as
each module finishes, so a run killed half way keeps what it did.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from conformance.backends.base import Backend, Launch, runnable_targets, support_reason
from conformance.compare import Verdict, compare
from conformance.spec.model import Variant
from conformance.spec.packing import pack
from conformance.spec.targets import PtxVersion, Target
from generators import movement
from generators import tcgen05_run as tc05
from generators.inputs import CHECKS, CaseSet, make_checks
from generators.movement import is_movement
from generators.probe import Probe, Surroundings, buffer_layout, chainable, module_source
from generators.wgmma import is_wgmma

__all__ = ["Plan", "plan_variant", "run_variants", "support_reason", "PTX_VERSIONS", "save_observation"]

PTX_VERSIONS = [PtxVersion(6, m) for m in range(0, 6)] + [PtxVersion(7, m) for m in range(0, 9)] + [
    PtxVersion(8, m) for m in range(0, 9)
] + [PtxVersion(9, m) for m in range(0, 3)]


@dataclass
class Plan:
    variant: Variant
    seed: int
    version: PtxVersion
    target: Target
    probe: Probe
    case_sets: list[CaseSet]
    in_words: np.ndarray  # uint32[case, lane, in_words], every check's cases in order
    slices: dict[str, tuple[int, int]]
    launches: list[np.ndarray]  # per launch: the case indices it runs, in warp order
    warps_per_block: int
    # Checks whose selector immediates differ (mma.sp) need their own kernels: launch i runs
    # probes[launch_probe[i]]; empty: every launch runs ``probe``.
    probes: list[Probe] = field(default_factory=list)
    launch_probe: list[int] = field(default_factory=list)

    def probe_of(self, launch: int) -> Probe:
        return self.probes[self.launch_probe[launch]] if self.launch_probe else self.probe

    @property
    def out_words(self) -> int:
        return buffer_layout(self.variant).out_words


def _pick_build(v: Variant, rng: np.random.Generator, cc: tuple[int, int], max_ptx: PtxVersion) -> tuple[Target, PtxVersion]:
    """A ``.target`` the GPU loads and a ``.version`` from the variant's minimum up to the loader's maximum."""
    targets = [t for t in runnable_targets(v, cc) if max(v.min_ptx, t.min_ptx) <= max_ptx]
    target = targets[int(rng.integers(len(targets)))]
    low = max(v.min_ptx, target.min_ptx)
    versions = [p for p in PTX_VERSIONS if low <= p <= max_ptx]
    return target, versions[int(rng.integers(len(versions)))]


def _slices(case_sets) -> tuple[dict[str, tuple[int, int]], int]:
    """Each check's [start, stop) rows in the stacked input words, and the total."""
    slices, pos = {}, 0
    for cs in case_sets:
        slices[cs.check] = (pos, pos + cs.cases)
        pos += cs.cases
    return slices, pos


def _launches_by_probe(order: np.ndarray, of_case: np.ndarray, probes: int, per_launch: int) -> tuple[list, list]:
    """Split the case order into launches that never mix kernels (probes differ in immediates)."""
    launches, launch_probe = [], []
    for k in range(probes):
        mine = order[of_case[order] == k]
        for i in range(0, len(mine), per_launch):
            launches.append(mine[i : i + per_launch])
            launch_probe.append(k)
    return launches, launch_probe


def _split_launches(rng: np.random.Generator, cases: int, cases_per_launch: int | None) -> tuple[np.ndarray, int, int]:
    """The case -> warp order, cases per launch and warps per block."""
    order = rng.permutation(cases)
    per_launch = int(rng.integers(max(1, cases // 4), cases + 1))
    wpb = int(rng.choice([1, 2, 4, 8]))
    if cases_per_launch is not None:  # the one-case-per-launch baseline of the benchmark
        per_launch, wpb = cases_per_launch, 1
    return order, per_launch, wpb


def plan_variant(
    v: Variant,
    seed: int,
    cc: tuple[int, int],
    max_ptx: PtxVersion,
    checks: Iterable[str] = CHECKS,
    value_cases: int = 8,
    cases_per_launch: int | None = None,
) -> Plan:
    """Everything random about a variant's probes, from (seed, variant id) alone."""
    if is_movement(v):
        return _plan_movement(v, seed, cc, max_ptx, checks, value_cases, cases_per_launch)
    if is_wgmma(v):
        return _plan_wgmma(v, seed, cc, max_ptx, checks, value_cases, cases_per_launch)
    if tc05.is_tcgen05(v):
        return _plan_tcgen05(v, seed, cc, max_ptx, value_cases, cases_per_launch)
    case_sets = make_checks(v, seed, tuple(checks), value_cases=value_cases)
    rng = np.random.default_rng([seed, 0x5EED, *v.id.encode()])
    target, version = _pick_build(v, rng, cc, max_ptx)
    surroundings = Surroundings(
        chain=bool(chainable(v) and rng.integers(2)),
        extra_regs=int(rng.integers(0, 6)),
        salt=int(rng.integers(0, 2**31)),
    )
    probe = Probe(v, case_sets[0].params, surroundings)
    blocks = []
    for cs in case_sets:
        words = np.zeros((cs.cases, 32, buffer_layout(v).in_words), dtype=np.uint32)
        for name, off in buffer_layout(v).inputs.items():
            op = v.operands[name]
            words[:, :, off : off + op.words] = pack(op, cs.bits[name], cs.params.get(name), cs.filler.get(name))
        blocks.append(words)
    in_words = np.concatenate(blocks)
    slices, pos = _slices(case_sets)
    order, per_launch, wpb = _split_launches(rng, pos, cases_per_launch)
    keys = [_params_key(cs.params) for cs in case_sets]
    if len(set(keys)) == 1:
        launches = [order[i : i + per_launch] for i in range(0, pos, per_launch)]
        return Plan(v, seed, version, target, probe, case_sets, in_words, slices, launches, wpb)
    # Selector immediates differ between checks: one kernel per distinct set, launches never mix them.
    probes: list[Probe] = []
    of_case = np.zeros(pos, dtype=np.int64)
    for cs, key in zip(case_sets, keys):
        if key not in [_params_key(p.params) for p in probes]:
            probes.append(Probe(v, cs.params, surroundings))
        a, b = slices[cs.check]
        of_case[a:b] = [_params_key(p.params) for p in probes].index(key)
    launches, launch_probe = _launches_by_probe(order, of_case, len(probes), per_launch)
    return Plan(v, seed, version, target, probes[0], case_sets, in_words, slices, launches, wpb, probes, launch_probe)


def _params_key(params: dict[str, dict[str, int]]) -> str:
    return json.dumps(params, sort_keys=True)


class MovePlan(Plan):
    """A Plan for ldmatrix / stmatrix / movmatrix (generators.movement buffers)."""

    @property
    def out_words(self) -> int:
        return movement.out_words(self.variant)


def _plan_movement(v, seed, cc, max_ptx, checks, value_cases, cases_per_launch) -> Plan:
    rng = np.random.default_rng([seed, 0x5EED, *v.id.encode()])
    target, version = _pick_build(v, rng, cc, max_ptx)
    probe = movement.MoveProbe(v, movement.pick_space(v, rng, version))
    case_sets = movement.make_cases(v, seed, tuple(checks), value_cases)
    in_words = np.concatenate([cs.words for cs in case_sets])
    slices, pos = _slices(case_sets)
    order, per_launch, wpb = _split_launches(rng, pos, cases_per_launch)
    launches = [order[i : i + per_launch] for i in range(0, pos, per_launch)]
    return MovePlan(v, seed, version, target, probe, case_sets, in_words, slices, launches, wpb)


class WgPlan(Plan):
    """A Plan for wgmma.mma_async (generators.wgmma buffers; one warpgroup per case)."""

    @property
    def out_words(self) -> int:
        from generators import wgmma

        return wgmma.out_words(self.variant)


def _plan_wgmma(v, seed, cc, max_ptx, checks, value_cases, cases_per_launch) -> Plan:
    from generators import wgmma

    rng = np.random.default_rng([seed, 0x5EED, *v.id.encode()])
    target, version = _pick_build(v, rng, cc, max_ptx)
    case_sets = wgmma.make_cases(v, seed, tuple(checks), min(value_cases, 4))
    probes, of_set = [], []
    for cs in case_sets:
        p = wgmma.WgProbe(v, tuple(sorted(cs.params["imm"].items())))
        if p not in probes:
            probes.append(p)
        of_set.append(probes.index(p))
    in_words = np.concatenate([cs.words for cs in case_sets])
    slices, pos = _slices(case_sets)
    of_case = np.zeros(pos, dtype=np.int64)
    for cs, k in zip(case_sets, of_set):
        a, b = slices[cs.check]
        of_case[a:b] = k
    order, per_launch, _ = _split_launches(rng, pos, cases_per_launch)
    launches, launch_probe = _launches_by_probe(order, of_case, len(probes), per_launch)
    return WgPlan(v, seed, version, target, probes[0], case_sets, in_words, slices, launches, 1, probes, launch_probe)


class TcPlan(Plan):
    """A Plan for tcgen05.mma: one case is 4 buffer rows (the 4 warps of its CTA), one CTA per case."""

    @property
    def out_words(self) -> int:
        return tc05.geometry(self.variant).out_words


@dataclass
class _TcCases:
    check: str
    cases: int
    params: dict = field(default_factory=dict)
    meta: dict = field(default_factory=dict)


def _plan_tcgen05(v, seed, cc, max_ptx, value_cases, cases_per_launch) -> Plan:
    """Only the value check (tcgen05 operands have no lane map to tag); launches hold whole CTAs."""
    rng = np.random.default_rng([seed, 0x5EED, *v.id.encode()])
    target, version = tc05.pick_build(v, rng, runnable_targets(v, cc), max_ptx, PTX_VERSIONS)
    in_words, metas = tc05.make_cases(v, seed, value_cases)
    rows = len(in_words)
    cs = _TcCases("value", rows, {}, {"cases": metas})
    order = rng.permutation(value_cases)
    per_launch = int(rng.integers(max(1, value_cases // 4), value_cases + 1)) if cases_per_launch is None else cases_per_launch
    launches = []
    for i in range(0, value_cases, per_launch):
        cases = order[i : i + per_launch]
        launches.append((cases[:, None] * tc05.ROWS + np.arange(tc05.ROWS)[None, :]).reshape(-1))
    return TcPlan(v, seed, version, target, tc05.TcProbe(v), [cs], in_words, {"value": (0, rows)}, launches, tc05.ROWS)


@dataclass
class VariantOutcome:
    plan: Plan | None
    verdicts: list[Verdict] = field(default_factory=list)
    out_words: np.ndarray | None = None
    seconds: float = 0.0


def run_module(backend: Backend, plans: list[Plan]) -> list[VariantOutcome]:
    """Run plans that share a (.version, .target) as one module."""
    return _run_module(backend, plans)


def _run_module(backend: Backend, plans: list[Plan]) -> list[VariantOutcome]:
    if is_movement(plans[0].variant):
        module = movement.module_source([p.probe for p in plans], plans[0].version, plans[0].target)
    elif is_wgmma(plans[0].variant):
        from generators import wgmma

        module = wgmma.module_source([q for p in plans for q in p.probes], plans[0].version, plans[0].target)
    elif tc05.is_tcgen05(plans[0].variant):
        module = tc05.module_source([p.probe for p in plans], plans[0].version, plans[0].target)
    else:
        module = module_source([q for p in plans for q in (p.probes or [p.probe])], plans[0].version, plans[0].target)
    outcomes = []
    for plan in plans:
        t0 = time.perf_counter()
        out = np.zeros((len(plan.in_words), plan.in_words.shape[1], plan.out_words), dtype=np.uint32)
        errors = []
        launches = []
        for li, cases in enumerate(plan.launches):
            # Each launch gets only its cases: a compact buffer and the order within it.
            launches.append(Launch(plan.probe_of(li), plan.in_words[cases], plan.out_words, np.arange(len(cases), dtype=np.uint32)[np.argsort(np.argsort(cases))], plan.warps_per_block))
        for cases, result in zip(plan.launches, backend.run(module, launches)):
            if result.error:
                errors.append(result.error)
            else:
                out[cases] = result.out
        outcome = VariantOutcome(plan, out_words=None if errors else out, seconds=time.perf_counter() - t0)
        for cs in plan.case_sets:
            if errors:
                outcome.verdicts.append(Verdict(plan.variant.id, cs.check, plan.seed, "error", message=errors[0]))
                continue
            a, b = plan.slices[cs.check]
            outcome.verdicts.append(
                compare(plan.variant, cs.check, plan.seed, plan.in_words[a:b], out[a:b], cs.params, plan.probe.surroundings, cs.meta)
            )
        outcomes.append(outcome)
    return outcomes


def run_variants(
    backend: Backend,
    variants: list[Variant],
    seed: int,
    checks: Iterable[str] = CHECKS,
    value_cases: int = 8,
    on_outcome: Callable[[VariantOutcome], None] | None = None,
    on_skip: Callable[[Variant, str], None] | None = None,
    progress=None,
) -> None:
    """Plan, group by (.version, .target), run module by module, report each outcome."""
    cc, max_ptx = backend.compute_capability(), backend.max_ptx()
    groups: dict[tuple[str, str], list[Plan]] = {}
    cc_for = getattr(backend, "cc_for", lambda v: cc)
    for v in variants:
        why = support_reason(v, cc_for(v), max_ptx)
        if why:
            if on_skip:
                on_skip(v, why)
            if progress:
                progress.update(1)
            continue
        plan = plan_variant(v, seed, cc_for(v), max_ptx, checks, value_cases)
        groups.setdefault((str(plan.version), plan.target.name, is_movement(v), tc05.is_tcgen05(v), is_wgmma(v)), []).append(plan)
    for plans in groups.values():
        for outcome in _run_module(backend, plans):
            if on_outcome:
                on_outcome(outcome)
            if progress:
                progress.update(1)


def observation_name(variant_id: str, seed: int) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", variant_id) + f".seed{seed}.npz"


def save_observation(directory: Path, outcome: VariantOutcome) -> Path:
    """Inputs and outputs per lane, and everything needed to re-run the comparators."""
    plan = outcome.plan
    directory.mkdir(parents=True, exist_ok=True)
    meta = {
        "variant": plan.variant.id,
        "seed": plan.seed,
        "version": str(plan.version),
        "target": plan.target.name,
        "warps_per_block": plan.warps_per_block,
        "surroundings": vars(plan.probe.surroundings),
        "checks": [
            {"check": cs.check, "slice": list(plan.slices[cs.check]), "params": cs.params, "meta": cs.meta}
            for cs in plan.case_sets
        ],
    }
    path = directory / observation_name(plan.variant.id, plan.seed)
    np.savez_compressed(path, in_words=plan.in_words, out_words=outcome.out_words, meta=json.dumps(meta))
    return path
