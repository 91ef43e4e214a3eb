"""The run loop: plan probes per variant, batch them into modules, launch, compare, record.

Per variant and seed the owning family plans (reproducibly) the ``.version`` and
``.target``, the surroundings, the warps per block, how the cases split into
launches and the case -> warp order.  Variants of one family sharing a ``.version``
and ``.target`` share one PTX module.  Verdicts and raw observations are written as
each module finishes, so a run killed half way keeps what it did.  Nothing here asks
which family it holds: every family-specific step goes through :class:`Family`.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from ptxconf.backends.base import Backend, Launch, LaunchResult
from ptxconf.core import shared
from ptxconf.core.family import compare, family_of
from ptxconf.core.plan import PTX_VERSIONS, Plan, support_reason
from ptxconf.core.verdict import Verdict
from ptxconf.isa.model import Variant
from ptxconf.isa.targets import PtxVersion
from threadpoolctl import threadpool_limits

from .observations import publish_observation, records, write_observation
from .stages import Stages
from .stream import VariantStream

if TYPE_CHECKING:
    from .planpool import PlanBytes

__all__ = ["Plan", "RunRequest", "plan_variant", "run_variants", "launch_module", "compare_plan", "support_reason",
           "PTX_VERSIONS", "plan_groups", "iter_modules", "run_module", "module_of", "ModuleGroups", "dealt_modules",
           "VariantStream"]


def plan_variant(
    v: Variant,
    seed: int,
    cc: tuple[int, int],
    max_ptx: PtxVersion,
    checks: Iterable[str] | None = None,
    value_cases: int = 8,
    cases_per_launch: int | None = None,
) -> Plan:
    """Everything random about a variant's probes, from (seed, variant id) alone (the family's ``plan``), then what
    the assembler says of its kernels (the family's ``settle``), before any module of it is built."""
    fam = family_of(v)
    plan = fam.plan(v, seed, cc, max_ptx, fam.checks if checks is None else tuple(checks), value_cases, cases_per_launch)
    return fam.settle(plan, cc)


@dataclass(frozen=True)
class RunRequest:
    """What a run asks of each variant it plans: one value, handed down, instead of the same parameters through
    every function of the loop."""

    seed: int
    checks: tuple[str, ...] | None = None  # None: each family's default checks
    value_cases: int = 8
    cases_per_launch: int | None = None  # the benchmark's one-case-per-launch baseline; None: the plan's own split
    jobs: int = 1  # processes that plan and compare (1: this one)
    observations: Path | None = None  # where observation files go (None: none written)
    # The outcomes' words are not read once ``on_outcome`` returns (a run that records verdicts and observation files
    # only): their shared space goes to later plans and modules.  Else they stay readable for as long as referenced.
    words_done_after_outcome: bool = False
    # Variants whose value check the device makes (``ptxconf run --values device``): planned without it here.
    values_elsewhere: frozenset[str] = frozenset()

    def checks_for(self, v: Variant) -> tuple[str, ...] | None:
        """The checks planned here for ``v``: the run's, less the value check where the device makes it."""
        if v.id not in self.values_elsewhere:
            return self.checks
        return tuple(c for c in family_of(v).checks_of(v, self.checks) if c.split("[", 1)[0] != "value")

    def plan(self, v: Variant, cc: tuple[int, int], max_ptx: PtxVersion) -> Plan:
        plan = plan_variant(v, self.seed, cc, max_ptx, self.checks_for(v), self.value_cases, self.cases_per_launch)
        if self.jobs > 1:  # in a worker: its kernels rendered here, their text travels with the plan
            module_of([plan])
        return plan


@dataclass
class VariantOutcome:
    plan: Plan | None
    verdicts: list[Verdict] = field(default_factory=list)
    out_words: np.ndarray | None = None
    seconds: float = 0.0
    saved: bool = False  # the observation file is written, pending (by the process that compared it)

    @property
    def variant(self) -> Variant:
        return self.plan.variant

    @property
    def cases(self) -> int:
        return len(self.plan.in_words)


def run_module(backend: Backend, plans: list[Plan], stages: Stages | None = None) -> list[VariantOutcome]:
    """Run plans that share a (.version, .target) as one module."""
    return _run_module(backend, plans, stages=stages)


def module_of(plans: list[Plan]) -> str:
    """The PTX module of plans that share a family, ``.version`` and ``.target``."""
    first = plans[0]
    return family_of(first.variant).module_source([q for p in plans for q in p.kernels], first.version, first.target)


def launch_module(backend: Backend, plans: list[Plan], module: str,
                  stages: Stages | None = None) -> list[tuple[np.ndarray, list[tuple[np.ndarray, str]]]] | None:
    """Every launch of every plan in one call to the backend: per plan, its out words and the failed launches
    (their cases and why); None when the backend abandoned the module (the run stopped before it was built)."""
    stages = stages or Stages()
    launches, owner = [], []
    # Out words land in shared memory where a run's arena is open: a backend in another process writes them there;
    # in space released by earlier modules where the run gives theirs back (``RunRequest.words_done_after_outcome``).
    outs = shared.zeros_parts([(len(p.in_words), p.in_words.shape[1], p.out_words) for p in plans], np.uint32,
                              recycle=True)
    for k, plan in enumerate(plans):
        for li, cases in enumerate(plan.launches):
            # Each launch runs only its cases (rows of the plan's words), in the order given within them.
            order = np.arange(len(cases), dtype=np.uint32)[np.argsort(np.argsort(cases))]
            launches.append(Launch(plan.probe_of(li), plan.in_words, plan.out_words, order, plan.warps_per_block,
                                   rows=np.asarray(cases), into=outs[k]))
            owner.append((k, cases))
    with stages("launch"):
        try:
            results = backend.run(module, launches) if launches else []
        except Exception as exc:  # the backend itself failed (a worker gone, a broken pipe): these cases are errors
            why = f"the backend failed: {type(exc).__name__}: {exc}"
            results = [LaunchResult(None, error=why) for _ in launches]
        if len(results) != len(launches):  # a short answer must not leave cases compared against zeros
            why = f"the backend returned {len(results)} results for {len(launches)} launches"
            results = [LaunchResult(None, error=why) for _ in launches]
    if any(r.abandoned for r in results):  # the run stopped before the module was built: none of it ran
        shared.release(*outs)
        return None
    errors: list[list[tuple[np.ndarray, str]]] = [[] for _ in plans]
    for (k, cases), result in zip(owner, results):
        if result.error:
            errors[k].append((np.asarray(cases), result.error))
        elif result.out is not None:  # None: the backend wrote them into ``outs[k]`` itself
            outs[k][cases] = result.out
    return list(zip(outs, errors))


def compare_plan(plan: Plan, out: np.ndarray) -> list[Verdict]:
    """Every check of one plan against its observed out words (a pure function: it may run in a worker).

    Where the family predicted the out words (``plan.expected``), every row is compared in one expression and a
    predicted check whose rows all agree gets the family's pass verdict; every other check (one that differs,
    or one not predicted) goes to the family's comparator, which explains it."""
    recs = records(plan, out)
    exp = plan.expected
    if exp is None:
        return [compare(plan.variant, rec) for rec in recs]
    fam, agree = family_of(plan.variant), exp.agreeing(out)
    predicted = set(exp.checks)
    verdicts = []
    for rec in recs:
        a, b = plan.slices[rec.check]
        same = rec.check in predicted and bool(agree[a:b].all())
        verdicts.append(fam.passed(plan.variant, rec) if same else fam.compare(plan.variant, rec))
    return verdicts


def compare_and_save(plan: Plan, out: np.ndarray, observations: Path | None
                     ) -> tuple[list[Verdict], str | None, float, dict[str, float]]:
    """What the process that compares a plan does, in every mode: the verdicts and, with ``observations``, the
    observation file written there under its pending name (the run publishes it once the verdicts are recorded); a
    write that failed comes back as its error text, for the run to stop on; the seconds that writing took (a
    stage of its own); and the CPU seconds of comparing and of saving (``compare_cpu``, ``save_cpu``: what the
    host spends per case, apart from waiting on the disk or on other processes)."""
    c0 = time.thread_time()
    verdicts = compare_plan(plan, out)
    cpu = {"compare_cpu": time.thread_time() - c0}
    if observations is None:
        return verdicts, None, 0.0, cpu
    t0, c0 = time.perf_counter(), time.thread_time()
    try:
        write_observation(observations, plan, out, pending=True)
    except OSError as exc:
        return verdicts, f"{exc}", time.perf_counter() - t0, cpu
    cpu["save_cpu"] = time.thread_time() - c0
    return verdicts, None, time.perf_counter() - t0, cpu


def _after_failed_launches(plan: Plan, out: np.ndarray, errs: list[tuple[np.ndarray, str]]) -> list[Verdict]:
    """A check with a case in a failed launch gets its family's verdict for that (an error, or for undefined
    inputs an observation); the others compare as usual."""
    fam, verdicts = family_of(plan.variant), []
    for rec in records(plan, out):
        a, b = plan.slices[rec.check]
        why = next((msg for cases, msg in errs if ((cases >= a) & (cases < b)).any()), None)
        verdicts.append(compare(plan.variant, rec) if why is None else fam.failed(plan.variant, rec, why))
    return verdicts


def _error_verdicts(plan: Plan, why: str) -> list[Verdict]:
    return [Verdict(plan.variant.id, cs.check, plan.seed, "error", message=why) for cs in plan.case_sets]


def _compared_here(plans: list[Plan], launched: list, share: float, observations: Path | None,
                   stages: Stages) -> Iterator[VariantOutcome]:
    """Each launched plan's outcome, compared (and with ``observations``, its observation written pending) in this
    process, BLAS on one thread as in the workers (a thread pool woken for each small product costs several times
    the product's own CPU)."""
    with threadpool_limits(1):
        yield from _compared(plans, launched, share, observations, stages)


def _compared(plans: list[Plan], launched: list, share: float, observations: Path | None,
              stages: Stages) -> Iterator[VariantOutcome]:
    for plan, (out, errs) in zip(plans, launched):
        t3 = time.perf_counter()
        outcome = VariantOutcome(plan, out_words=None if errs else out)
        saving = 0.0
        if errs:
            outcome.verdicts = _after_failed_launches(plan, out, errs)
            shared.release(out)  # read here only (its outcome carries none)
        else:
            outcome.verdicts, unsaved, saving, cpu = compare_and_save(plan, out, observations)
            if unsaved is not None:  # the disk refused the observation: the run stops on it, as on any write
                raise OSError(unsaved)
            outcome.saved = observations is not None
            for name, seconds in cpu.items():
                stages.add(name, seconds)
        stages.add("compare", time.perf_counter() - t3 - saving)
        stages.add("save", saving)
        outcome.seconds = share + time.perf_counter() - t3
        yield outcome


def _run_module(backend: Backend, plans: list[Plan], module: str | None = None,
                stages: Stages | None = None) -> list[VariantOutcome]:
    """Every launch of every plan in one call to the backend, then each plan's comparisons, here."""
    stages = stages or Stages()
    t0 = time.perf_counter()
    launched = launch_module(backend, plans, module if module is not None else module_of(plans), stages)
    if launched is None:
        return []
    return list(_compared_here(plans, launched, (time.perf_counter() - t0) / max(1, len(plans)), None, stages))


COMPARE_TIMEOUT_S = 600.0  # one variant's comparison in a worker; past it (a worker killed) its checks are errors


class _Comparisons:
    """Comparisons running in worker processes while the GPU runs the next module; outcomes leave in order."""

    def __init__(self, pool, observations: Path | None, stages: Stages, arrived: PlanBytes | None = None):
        self.pool = pool
        self.observations = observations
        self.stages = stages
        self.arrived = arrived  # the bytes plans came in, forwarded to the comparing worker
        self.pending: deque[tuple[VariantOutcome, object, float]] = deque()

    def submit(self, plans: list[Plan], launched: list, share: float) -> None:
        for plan, (out, errs) in zip(plans, launched):
            outcome = VariantOutcome(plan, out_words=None if errs else out, seconds=share)
            if errs:
                if self.arrived is not None:
                    self.arrived.drop(plan)
                outcome.verdicts = _after_failed_launches(plan, out, errs)
                shared.release(out)  # read here only (its outcome carries none)
                self.pending.append((outcome, None, 0.0))
            else:
                self.pending.append((outcome, self.pool.submit(plan, out, self.observations), time.perf_counter()))

    def ready(self, wait: bool = False) -> Iterator[VariantOutcome]:
        """The outcomes whose comparison is done, oldest first (``wait``: all of them)."""
        while self.pending:
            outcome, job, _ = self.pending[0]
            if job is not None and not (wait or job.done()):
                return
            self.pending.popleft()
            if job is not None:
                t0 = time.perf_counter()
                try:
                    (outcome.verdicts, unsaved, saving, cpu), seconds = self.pool.result(job, COMPARE_TIMEOUT_S)
                except Exception as exc:  # noqa: BLE001 - a comparator that raised, or a worker that died
                    (outcome.verdicts, unsaved, saving, cpu), seconds = (_error_verdicts(
                        outcome.plan, f"comparing failed: {type(exc).__name__}: {exc}"), None, 0.0, {}), 0.0
                else:
                    if unsaved is not None:  # the disk refused the observation: the run stops on it, as on any write
                        raise OSError(unsaved)
                    outcome.saved = self.observations is not None
                for name, cpu_s in cpu.items():
                    self.stages.add(name, cpu_s)
                self.stages.add("compare", seconds - saving)
                self.stages.add("save", saving)
                self.stages.add("compare_wait", time.perf_counter() - t0)
                outcome.seconds += seconds
            yield outcome


def _in_this_process(why: Exception) -> None:
    """Say once per process why the run plans and compares without workers (results are the same, only slower)."""
    if str(why) not in _SAID:
        _SAID.add(str(why))
        print(f"ptxconf run: {why}; planning and comparing in this process instead", file=sys.stderr, flush=True)


_SAID: set[str] = set()
MODULE_PLANS = 64  # plans per module at most: the first module runs while later variants are still unplanned
# Modules planned and handed to the backend to build ahead of the one running: on a cold cache the builds (one ptxas
# each) bound the run, and at most this many run at once.  It was 4: a cold whole suite on one H200 (32 cores) spent
# 21.6 of its 27.8 s waiting on 107 ptxas CPU-s, 8 of 32 cores busy.  Each module ahead holds its plans' words
# (a wgmma module about 120 MB), so the depth stops at 16.  Lanes (several pipelines) share it by their share of
# the workers.
LOOKAHEAD = 16


def lookahead(jobs: int) -> int:
    """Modules one pipeline builds ahead: as many as its workers (a lane's share of ``--jobs``; in one process, the
    cores), at most :data:`LOOKAHEAD`."""
    return min(LOOKAHEAD, (os.cpu_count() or 1) if jobs <= 1 else jobs)


def plan_groups(
    backend: Backend,
    variants: list[Variant],
    seed: int,
    checks: Iterable[str] | None = None,
    value_cases: int = 8,
    cases_per_launch: int | None = None,
    on_skip: Callable[[Variant, str], None] | None = None,
) -> dict[tuple[str, str, str], list[Plan]]:
    """Plan every variant the backend can run; group plans that share a module (family, .version, .target)."""
    groups: dict[tuple[str, str, str], list[Plan]] = {}
    request = RunRequest(seed, None if checks is None else tuple(checks), value_cases, cases_per_launch)
    for plans in iter_modules(backend, variants, request, on_skip, max_plans=None):
        first = plans[0]
        groups.setdefault((family_of(first.variant).name, str(first.version), first.target.name), []).extend(plans)
    return groups


def iter_modules(
    backend: Backend,
    variants: Iterable[Variant],
    request: RunRequest,
    on_skip: Callable[[Variant, str], None] | None = None,
    max_plans: int | None = MODULE_PLANS,
    stop: Callable[[], bool] | None = None,
    stages: Stages | None = None,
    arrived: PlanBytes | None = None,
) -> Iterator[list[Plan]]:
    """Plans grouped into modules, yielded as soon as a group is full (then the rest at the end).

    Planning is lazy so that a long run writes its first verdicts within seconds, and ``stop``
    (a pending interrupt) is asked before each variant is planned.  ``request.jobs`` > 1 plans in that
    many forked processes (the same plans, in the same order).
    """
    stages = stages or Stages()
    cc, max_ptx = backend.compute_capability(), backend.max_ptx()
    cc_for = getattr(backend, "cc_for", lambda v: cc)
    groups = ModuleGroups(max_plans)

    def runnable() -> Iterator[Variant]:  # as the planning reaches them: a stream's variants arrive meanwhile
        for v in variants:
            why = support_reason(v, cc_for(v), max_ptx)
            if why:
                if on_skip:
                    on_skip(v, why)
                continue
            yield v

    made = None
    if request.jobs > 1 and _several(variants):
        from .planpool import WorkersUnavailable, plan_in_parallel

        try:
            made = plan_in_parallel(request.jobs, lambda v, vcc: request.plan(v, vcc, max_ptx), _known(variants),
                                    ((v.id, cc_for(v)) for v in runnable()),
                                    lambda s, c: (stages.add("plan_work", s), stages.add("plan_cpu", c)), arrived)
            stages.mark("plan_workers_ready")
        except WorkersUnavailable as exc:
            _in_this_process(exc)
    if made is None:
        made = (_cpu_timed(stages, "plan_cpu", request.plan, v, cc_for(v), max_ptx) for v in runnable())
    while not (stop and stop()):
        with stages("plan"):
            plan = next(made, None)
        stages.mark("first_plan")
        if plan is None:
            yield from groups.rest()
            return
        full = groups.add((family_of(plan.variant).name, str(plan.version), plan.target.name), plan)
        if full:
            yield full


class ModuleGroups:
    """How a run groups plans into modules: by (family, ``.version``, ``.target``) in the order they come, a group
    given when it holds ``size`` (None: never), the rest at the end."""

    def __init__(self, size: int | None):
        self.size = size
        self._open: dict[tuple, list] = {}

    def add(self, key: tuple, item: Any) -> list | None:
        group = self._open.setdefault(key, [])
        group.append(item)
        return self._open.pop(key) if self.size and len(group) >= self.size else None

    def rest(self) -> list[list]:
        rest, self._open = list(self._open.values()), {}
        return rest


def dealt_modules(backend: Backend, variants: list[Variant], seed: int) -> Iterator[list[Variant]]:
    """The variants as lanes take them: whole modules (those one pipeline would make of all of them, from each
    variant's ``.target`` and ``.version``, known before planning), each as soon as it is full, then the modules left
    part full, then the variants this backend does not run (their lane reports them skipped).  So the modules are the
    same whatever the lanes, and a module cache filled by a run serves a run on any number of lanes or GPUs; every
    n-th variant per lane made each number of lanes its own modules (a first run with six or eight lanes, warm for
    four, was cold again: 15.5-16.5 s against 8.9 s on one H100)."""
    cc, max_ptx = backend.compute_capability(), backend.max_ptx()
    cc_for = getattr(backend, "cc_for", lambda v: cc)
    groups, skipped = ModuleGroups(MODULE_PLANS), []
    for v in variants:
        if support_reason(v, cc_for(v), max_ptx):
            skipped.append(v)
            continue
        fam = family_of(v)
        try:
            target, version = fam.build(v, seed, cc_for(v), max_ptx)
            key = (fam.name, str(version), target.name)
        except ValueError:  # its plan says why, in the lane that gets it
            key = ("", v.id, "")
        full = groups.add(key, v)
        if full:
            yield full
    yield from groups.rest()
    if skipped:
        yield skipped


def _known(variants: Iterable[Variant]) -> dict[str, Variant]:
    """Every variant a run's list or stream may give, by id."""
    return variants.known if isinstance(variants, VariantStream) else {v.id: v for v in variants}


def _several(variants: Iterable[Variant]) -> bool:
    """Worth workers: more than one variant (a stream is a lane's share of a run of several)."""
    return isinstance(variants, VariantStream) or len(variants) > 1  # type: ignore[arg-type]


def _cpu_timed(stages: Stages, name: str, fn: Callable, *args):
    """``fn(*args)``, its CPU seconds (this thread's) added to the stage ``name``."""
    c0 = time.thread_time()
    try:
        return fn(*args)
    finally:
        stages.add(name, time.thread_time() - c0)


def run_variants(
    backend: Backend,
    variants: Iterable[Variant],
    request: RunRequest,
    on_outcome: Callable[[VariantOutcome], None] | None = None,
    on_skip: Callable[[Variant, str], None] | None = None,
    progress=None,
    stop: Callable[[], bool] | None = None,
    stages: Stages | None = None,
    publish: bool = True,
    finished: Callable[[], None] | None = None,
) -> None:
    """Plan, group by module, run module by module, report each outcome; ``stop`` ends it between modules.
    ``finished`` hears that every outcome is out, before the pipeline's workers are taken down (a lane says so to
    its run then: the teardown took 0.5 s of a 6.1 s run on two H200s).

    With ``request.observations``, each compared outcome's observation file is written there, pending, by the
    process that compared it (a worker, or this one: ``outcome.saved``) and published (renamed) after
    ``on_outcome`` recorded its verdicts (``publish`` False: by whoever records them, a lane's run process).
    ``stages`` (the run's) hears the seconds of each stage.  A backend of several devices runs a lane (a process
    with the whole pipeline) per device where workers may be forked (:mod:`ptxconf.run.lanes`)."""
    if request.jobs > 1 and _several(variants):
        from .lanes import lanes_of, run_in_lanes

        lanes = lanes_of(backend)
        if lanes:
            stages = stages or Stages()
            for lane in lanes:  # each lane's device starts while the lanes fork
                lane.open()
            everything = list(variants)
            run_in_lanes(run_variants, backend, lanes, everything, dealt_modules(backend, everything, request.seed),
                         request, on_outcome, on_skip, progress, stop, stages)
            return
    publish_to = request.observations if publish else None  # where this process publishes what was saved

    def skipped(v: Variant, why: str) -> None:
        if on_skip:
            on_skip(v, why)
        if progress:
            progress.update(1)

    def emit(outcome: VariantOutcome) -> None:
        if on_outcome:
            recording[0] = True
            on_outcome(outcome)  # the verdicts recorded first, then the observation the worker wrote
            recording[0] = False
        if outcome.saved and publish_to is not None:
            publish_observation(publish_to, outcome.plan)
        if progress:
            progress.update(1)
        exp = outcome.plan.expected
        # compared (and saved): no process attaches again
        shared.release(outcome.plan.in_words, outcome.out_words, exp.words if exp is not None else None,
                       give_back=request.words_done_after_outcome)

    recording = [False]  # an error while recording verdicts stops the run with nothing more written
    # Words cross processes as shared files (the workers forked below inherit the arena).
    with shared.arena(), _collector_passes_over_what_exists():
        _run_variants(backend, variants, request, emit, skipped, stop, lambda: recording[0], stages or Stages(),
                      finished)


@contextlib.contextmanager
def _collector_passes_over_what_exists() -> Iterator[None]:
    """The objects that exist as a run starts (the specs, the variants: they outlive it) left out of the garbage
    collector's passes until it ends, in this process and the workers it forks (whose pages then stay shared): a full
    pass walked them all again for each plan's garbage."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _run_variants(backend: Backend, variants: Iterable[Variant], request: RunRequest,
                  emit: Callable[[VariantOutcome], None], skipped: Callable[[Variant, str], None],
                  stop: Callable[[], bool] | None, recording: Callable[[], bool], stages: Stages,
                  finished: Callable[[], None] | None = None) -> None:
    # With workers, comparing runs in them (forked now, before the compile threads start), overlapped with launches.
    observations = request.observations
    pool = arrived = None
    if request.jobs > 1 and _several(variants):
        from .planpool import ComparePool, PlanBytes, WorkersUnavailable

        try:
            arrived = PlanBytes()
            pool = ComparePool(request.jobs, compare_and_save, _known(variants), arrived)
        except WorkersUnavailable as exc:
            arrived = None
            _in_this_process(exc)
    comparisons = _Comparisons(pool, observations, stages, arrived) if pool else None
    # A module runs on a device from a launch thread (with several devices, that many at once: each launch call
    # blocks on its own device) while this thread takes the next plans and builds the next modules.  On one GPU the
    # launches used to run on this thread: a warm suite on the H200 host spent 5.3 s of its 14.3 s waiting on them
    # with no plan taken meanwhile.
    slots = max(1, getattr(backend, "parallel", 1))
    depth = lookahead(request.jobs)
    launcher = ThreadPoolExecutor(slots, thread_name_prefix="ptxconf-launch")

    def launch(plans: list[Plan], source: str) -> tuple[list, float]:
        t0 = time.perf_counter()
        stages.mark("first_launch")
        launched = launch_module(backend, plans, source, stages)
        stages.mark("first_launched")
        stages.mark_last("last_launched")
        return launched, (time.perf_counter() - t0) / max(1, len(plans))

    def finish(plans: list[Plan], launched: list | None, share: float) -> None:
        if launched is None:  # abandoned by a stop before it was built: these variants were not run
            if arrived is not None:
                for p in plans:
                    arrived.drop(p)
            shared.release(*(p.in_words for p in plans), *(p.expected.words for p in plans if p.expected is not None),
                           give_back=True)  # never handed to anyone
            return
        if comparisons is None:
            for outcome in _compared_here(plans, launched, share, observations, stages):
                emit(outcome)
        else:
            comparisons.submit(plans, launched, share)
            for outcome in comparisons.ready():
                emit(outcome)

    stages.mark("pipeline")
    backend.open()
    try:  # module by module: build ahead, launch (on every device), compare; outcomes emitted in module order
        modules = iter_modules(backend, variants, request, on_skip=skipped, max_plans=MODULE_PLANS, stop=stop,
                               stages=stages, arrived=arrived)
        ahead: deque[tuple[list[Plan], str]] = deque()
        inflight: deque[tuple[list[Plan], Future]] = deque()
        while True:
            stopping = bool(stop and stop())
            while ahead and not stopping and len(inflight) < slots:  # every free device gets the next module
                plans, source = ahead.popleft()
                inflight.append((plans, launcher.submit(launch, plans, source)))
            while inflight and inflight[0][1].done():  # launched: its comparisons go out now
                plans, running = inflight.popleft()
                finish(plans, *running.result())
            # While they run: the next modules planned and handed to the builders (ptxas pool).  A device with
            # nothing to run takes a module as soon as there is one: the first launch waited for the whole
            # lookahead to be planned (1.3 s of a warm 7.6 s run on one H200, each of four lanes).
            while len(ahead) < depth + slots and (plans := next(modules, None)) is not None:
                stages.mark("first_module")
                with stages("module"):
                    source = module_of(plans)
                    backend.prefetch(source)
                ahead.append((plans, source))
                if (len(inflight) < slots and not stopping) or (inflight and inflight[0][1].done()):
                    # A module that ran is compared at once, not after the lookahead is planned: the comparisons
                    # lagged four modules behind, and every lane's last ones came together after the planning
                    # (compare workers 10-12 of 16 cores for the last 2.5 s of a warm 7.6 s run on one H100).  Spread
                    # out now; the wall did not change there (the run is bound by its CPU)
                    break
            if ahead and len(inflight) < slots and not (stop and stop()):
                continue  # a device free: launch first
            if not inflight:
                break
            plans, running = inflight.popleft()  # outcomes leave in module order, whichever device finishes first
            finish(plans, *running.result())
        stages.mark("launches_done")
        if comparisons is not None:  # every launched module's verdicts, also when stopping early
            for outcome in comparisons.ready(wait=True):
                emit(outcome)
        stages.mark("compared")
        for name, at in backend.moments().items():
            stages.mark(name, at)
        if finished is not None:
            finished()
    except BaseException:
        # Killed from inside (an interrupt, a crash outside recording): the comparisons already running finish
        # (seconds at most) and their verdicts are recorded before the run stops; the first error is the one that
        # stops it.  A failed write of the verdicts themselves (a full disk) stops it with nothing more written.
        if comparisons is not None and not recording():
            with contextlib.suppress(Exception):
                for outcome in comparisons.ready(wait=True):
                    emit(outcome)
        raise
    finally:
        launcher.shutdown(wait=True)
        if pool is not None:
            pool.close()
