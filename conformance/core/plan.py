"""A plan: everything random about one variant's probes at one seed, and the launch split.

Families build plans (their cases, kernels and buffer sizes); the run loop only reads them.
The helpers here are the parts of planning every family shares: picking a build the GPU
loads, stacking the checks' cases, and splitting them into launches.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any, Protocol

import numpy as np
from ptxconf.generators.ptx import Surroundings
from ptxconf.isa.targets import TARGET_MIN_PTX, PtxVersion, Target, parse_target, runs_on

__all__ = ["RunVariant", "Kernel", "Cases", "CaseSet", "CaseSummary", "Expected", "expected_of", "slim", "Plan", "PTX_VERSIONS", "pick_build", "stack_slices", "split_launches", "launches_by_probe", "without_kernels",
           "runnable_targets", "support_reason", "variant_rng", "plan_by_kernel"]

PTX_VERSIONS = [PtxVersion(6, m) for m in range(0, 6)] + [PtxVersion(7, m) for m in range(0, 9)] + [
    PtxVersion(8, m) for m in range(0, 9)
] + [PtxVersion(9, m) for m in range(0, 6)]  # up to 9.5, the newest ptxas (13.5) takes


class RunVariant(Protocol):
    """What the run loop and the generic layers read of a variant (a spec variant, a tcgen05 tuple, ...)."""

    id: str
    family: str  # the spec family (a registry key)
    file: str  # the spec file it came from
    min_ptx: PtxVersion
    requires: Sequence[Target]  # the targets, any of which runs it
    operands: Mapping[str, Any]  # by name: each has ``layout`` (``name``, ``map()``) where maps are observed

    def valid_for(self, target: Target, /) -> str | None:
        """Why ``target`` cannot run it (None: it can)."""
        ...


class Kernel(Protocol):
    """What the run loop reads of a family's probe kernel."""

    name: str
    surroundings: Surroundings


class Cases(Protocol):
    """One check's cases, as a family made them."""

    check: str
    cases: int
    params: dict
    meta: dict


@dataclass
class CaseSet:
    """One check's cases as a family makes them: the verdict name, the input words of each case, the selector
    params its kernel was built with, and what the comparator needs to read them (tags, layouts)."""

    check: str
    words: np.ndarray  # uint32[case, lane, in_words]
    params: dict = field(default_factory=dict)
    meta: dict = field(default_factory=dict)
    expected: np.ndarray | None = None  # uint32[case, lane, out_words]: what the probe must write, where predicted

    @property
    def cases(self) -> int:
        return len(self.words)


@dataclass
class Expected:
    """A plan's out words as the family predicted them while it drew the cases (it knows the matrices it placed,
    so it need not read them back): a check whose every defined bit agrees passes without its comparator, which
    then runs only where the words differ (to explain them).  What a probe writes is predicted once per plan
    and compared in one array expression, instead of per check through unpacking and the oracle again."""

    words: np.ndarray  # uint32[row, lane, out_words], rows as ``Plan.in_words`` (zero in rows of checks not predicted)
    defined: np.ndarray  # uint32[lane, out_words]: the bits the ISA defines (padding and unheld bits are 0)
    checks: tuple[str, ...]  # the checks predicted; the others always go to the comparator

    def agreeing(self, out: np.ndarray) -> np.ndarray:
        """``bool[row]``: every defined bit of the row's out words is the predicted one."""
        return ~((np.asarray(out) ^ self.words) & self.defined).any(axis=(1, 2))


def expected_of(case_sets: Sequence[Any], defined: np.ndarray) -> Expected | None:
    """The plan's :class:`Expected` from the case sets' ``expected`` words (stacked as their input words are);
    None where no case set has them."""
    have = [cs for cs in case_sets if getattr(cs, "expected", None) is not None]
    if not have:
        return None
    shape = have[0].expected.shape[1:]
    words = np.concatenate([cs.expected if getattr(cs, "expected", None) is not None
                            else np.zeros((cs.cases, *shape), dtype=np.uint32) for cs in case_sets])
    return Expected(words, np.asarray(defined, dtype=np.uint32), tuple(cs.check for cs in have))


@dataclass
class Plan:
    variant: RunVariant
    seed: int
    version: PtxVersion
    target: Target
    probe: Kernel  # the kernel of every launch, unless ``probes`` is given
    case_sets: Sequence[Cases]
    in_words: np.ndarray  # uint32[row, lane, in_words], every check's cases in order
    slices: dict[str, tuple[int, int]]
    launches: list[np.ndarray]  # per launch: the rows it runs, in slot order
    warps_per_block: int
    out_words: int  # output words per lane of one row
    # Checks whose immediates differ need their own kernels: launch i runs probes[launch_probe[i]].
    probes: list[Kernel] = field(default_factory=list)
    launch_probe: list[int] = field(default_factory=list)
    expected: Expected | None = None  # the out words the family predicted (None: every check to its comparator)

    def probe_of(self, launch: int) -> Kernel:
        return self.probes[self.launch_probe[launch]] if self.launch_probe else self.probe

    @property
    def kernels(self) -> list[Kernel]:
        """Every kernel this plan launches (for the module)."""
        return self.probes or [self.probe]


@dataclass
class CaseSummary:
    """What comparing and recording need of a check's cases (no input bits: those are in ``Plan.in_words``)."""

    check: str
    cases: int
    params: dict
    meta: dict


def slim(plan: Plan) -> Plan:
    """The plan as it crosses processes: each check's cases summarised (a family's case sets may carry every
    operand's bits again, several times the size of the words)."""
    sets = [cs if isinstance(cs, CaseSummary) else CaseSummary(cs.check, cs.cases, cs.params, cs.meta)
            for cs in plan.case_sets]
    return replace(plan, case_sets=sets)


def variant_rng(v: RunVariant, seed: int, purpose: str | int = "") -> np.random.Generator:
    """A generator of what is random about a variant's probes, from (seed, variant id, purpose) alone.

    ``purpose`` names the stream: ``""`` the plan's own draws (surroundings, launch split), ``"build"`` the
    ``.target``/``.version`` (which depend on what the GPU loads, so the cases, surroundings and launch split of
    a seed are the same test on every device), ``"bulk"`` the bulk fuzzer's; a family's case draws use its own
    number (the stream its recorded runs drew from, so a seed still names the cases they recorded)."""
    head, tail = ((seed, purpose), v.id.encode()) if isinstance(purpose, int) else ((seed, 0x5EED), (v.id + purpose).encode())
    if not all(0 <= x < 1 << 32 for x in head):  # (words of their own in the list's coercion)
        return np.random.default_rng([*head, *tail])
    # The same entropy words as the list ``[*head, *tail]``, as one array: NumPy coerces a list element by element in
    # Python (88 us a generator for a 50-character id, against 22 us; a run makes several per variant).
    return np.random.default_rng(np.concatenate((np.array(head, dtype=np.uint32),
                                                 np.frombuffer(tail, dtype=np.uint8).astype(np.uint32))))


def runnable_targets(v: RunVariant, cc: tuple[int, int]) -> list[Target]:
    """Targets whose PTX has the variant's features and loads on a GPU of ``cc``: asked once per variant and compute
    capability, the answer kept on the variant (a variant never changes; asking every target again for each plan
    cost the run's process 0.4 ms per variant)."""
    kept = getattr(v, "__dict__", None)
    if kept is None:
        return [t for t in _loadable(cc) if v.valid_for(t) is None]
    by_cc = kept.setdefault("_runnable_targets", {})
    if cc not in by_cc:
        by_cc[cc] = tuple(t for t in _loadable(cc) if v.valid_for(t) is None)
    return list(by_cc[cc])


@cache
def _loadable(cc: tuple[int, int]) -> tuple[Target, ...]:
    """Every known target a GPU of ``cc`` loads, in the table's order (parsed once per process)."""
    return tuple(t for t in map(parse_target, TARGET_MIN_PTX) if runs_on(t, cc))


@cache
def _versions(low: PtxVersion, high: PtxVersion) -> tuple[PtxVersion, ...]:
    """The ``.version`` values from ``low`` to ``high``, in order."""
    return tuple(p for p in PTX_VERSIONS if low <= p <= high)


def support_reason(v: RunVariant, cc: tuple[int, int], max_ptx: PtxVersion) -> str | None:
    """Why this GPU (or emulated GPU) cannot run the variant, or None: decided before anything is built."""
    if v.min_ptx > max_ptx:
        return f"needs .version {v.min_ptx}; the loader here accepts up to {max_ptx}"
    targets = [t for t in runnable_targets(v, cc) if max(v.min_ptx, t.min_ptx) <= max_ptx]
    if not targets:
        need = ", ".join(t.name for t in v.requires)
        return f"needs {need}; this GPU has compute capability {cc[0]}.{cc[1]}"
    return None


def pick_build(v: RunVariant, rng: np.random.Generator, cc: tuple[int, int], max_ptx: PtxVersion,
               *also: RunVariant) -> tuple[Target, PtxVersion]:
    """A ``.target`` the GPU loads and a ``.version`` valid for ``v`` and the forms ``also`` in the same kernel (a
    wmma load's mma): from their highest minimum up to the lowest of the loader's maximum and theirs."""
    forms = (v, *also)
    low = max(f.min_ptx for f in forms)
    high = min([max_ptx] + [f.max_ptx for f in forms if getattr(f, "max_ptx", None) is not None])
    targets = [t for t in runnable_targets(forms[-1], cc)
               if all(f.valid_for(t) is None for f in forms[:-1]) and max(low, t.min_ptx) <= high]
    if not targets:
        raise ValueError(f"{v.id}: no target of compute capability {cc[0]}.{cc[1]} takes .version {low}..{high}")
    target = targets[int(rng.integers(len(targets)))]
    versions = _versions(max(low, target.min_ptx), high)
    return target, versions[int(rng.integers(len(versions)))]


def stack_slices(case_sets: Sequence[Cases]) -> tuple[dict[str, tuple[int, int]], int]:
    """Each check's [start, stop) rows in the stacked input words, and the total."""
    slices, pos = {}, 0
    for cs in case_sets:
        slices[cs.check] = (pos, pos + cs.cases)
        pos += cs.cases
    return slices, pos


def split_launches(rng: np.random.Generator, cases: int, cases_per_launch: int | None) -> tuple[np.ndarray, int, int]:
    """The case -> slot order, cases per launch and warps per block."""
    order = rng.permutation(cases)
    per_launch = int(rng.integers(max(1, cases // 4), cases + 1))
    wpb = int(rng.choice([1, 2, 4, 8]))
    if cases_per_launch is not None:  # the one-case-per-launch baseline of the benchmark
        per_launch, wpb = cases_per_launch, 1
    return order, per_launch, wpb


def plan_by_kernel(v: RunVariant, seed: int, version: PtxVersion, target: Target, case_sets: Sequence[Any],
                   kernel_of: Callable[[Any], Kernel], out_words: int, rng: np.random.Generator,
                   cases_per_launch: int | None, warps_per_block: int = 1) -> Plan:
    """A plan whose checks carry their input words (``cs.words``) and may need different kernels
    (``kernel_of(cs)``: immediates differ): one kernel per distinct one, launches never mix them."""
    probes: list[Kernel] = []
    of_set = []
    for cs in case_sets:
        p = kernel_of(cs)
        if p not in probes:
            probes.append(p)
        of_set.append(probes.index(p))
    in_words = np.concatenate([cs.words for cs in case_sets])
    slices, pos = stack_slices(case_sets)
    of_case = np.zeros(pos, dtype=np.int64)
    for cs, k in zip(case_sets, of_set):
        a, b = slices[cs.check]
        of_case[a:b] = k
    order, per_launch, _ = split_launches(rng, pos, cases_per_launch)
    launches, launch_probe = launches_by_probe(order, of_case, len(probes), per_launch)
    return Plan(v, seed, version, target, probes[0], case_sets, in_words, slices, launches, warps_per_block, out_words,
                probes, launch_probe)


def without_kernels(plan: Plan, kernels: list, fallback: Any) -> Plan:
    """``plan`` less the launches (and the kernels) of ``kernels``: their cases stay recorded, never run.
    A plan left with no kernel keeps ``fallback``, unlaunched, so its module still has one that assembles."""
    have = plan.kernels
    of_launch = plan.launch_probe or [0] * len(plan.launches)
    keep = [k for k, p in enumerate(have) if p not in kernels]
    index = {old: new for new, old in enumerate(keep)}
    launches = [cases for cases, k in zip(plan.launches, of_launch) if k in index]
    launch_probe = [index[k] for k in of_launch if k in index]
    probes = [have[k] for k in keep] or [fallback]
    return replace(plan, probe=probes[0], probes=probes, launches=launches, launch_probe=launch_probe)


def launches_by_probe(order: np.ndarray, of_case: np.ndarray, probes: int, per_launch: int) -> tuple[list, list]:
    """Split the case order into launches that never mix kernels (probes differ in immediates)."""
    launches, launch_probe = [], []
    for k in range(probes):
        mine = order[of_case[order] == k]
        for i in range(0, len(mine), per_launch):
            launches.append(mine[i : i + per_launch])
            launch_probe.append(k)
    return launches, launch_probe
