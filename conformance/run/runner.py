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
import io
import json
import os
import re
import time
import zipfile
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from ptxconf.backends.base import Backend, Launch, LaunchResult
from ptxconf.core import shared
from ptxconf.core.family import compare, family_of
from ptxconf.core.plan import PTX_VERSIONS, Plan, support_reason
from ptxconf.core.verdict import Verdict
from ptxconf.spec.model import Variant
from ptxconf.spec.targets import PtxVersion

from .files import ZSTD_MAGIC, atomic_write, zstd_compress, zstd_decompress

__all__ = ["Plan", "plan_variant", "run_variants", "launch_module", "compare_plan", "support_reason", "PTX_VERSIONS", "save_observation", "plan_groups", "iter_modules"]


def plan_variant(
    v: Variant,
    seed: int,
    cc: tuple[int, int],
    max_ptx: PtxVersion,
    checks: Iterable[str] | None = None,
    value_cases: int = 8,
    cases_per_launch: int | None = None,
) -> Plan:
    """Everything random about a variant's probes, from (seed, variant id) alone."""
    fam = family_of(v)
    return fam.plan(v, seed, cc, max_ptx, fam.checks if checks is None else tuple(checks), value_cases, cases_per_launch)


@dataclass
class VariantOutcome:
    plan: Plan | None
    verdicts: list[Verdict] = field(default_factory=list)
    out_words: np.ndarray | None = None
    seconds: float = 0.0
    saved: bool = False  # the observation file is written, pending (by the worker that compared it)


def run_module(backend: Backend, plans: list[Plan]) -> list[VariantOutcome]:
    """Run plans that share a (.version, .target) as one module."""
    return _run_module(backend, plans)


def module_of(plans: list[Plan]) -> str:
    """The PTX module of plans that share a family, ``.version`` and ``.target``."""
    first = plans[0]
    return family_of(first.variant).module_source([q for p in plans for q in p.kernels], first.version, first.target)


STAGES: dict[str, float] = {}  # seconds per stage of this process's runs: plan, module, launch, compare, report


def _stage(name: str, seconds: float) -> None:
    STAGES[name] = STAGES.get(name, 0.0) + seconds


def launch_module(backend: Backend, plans: list[Plan], module: str) -> list[tuple[np.ndarray, list[tuple[np.ndarray, str]]]]:
    """Every launch of every plan in one call to the backend: per plan, its out words and the failed launches
    (their cases and why)."""
    launches, owner = [], []
    # Out words land in shared memory where a run's arena is open: a backend in another process writes them there.
    outs = [shared.zeros((len(p.in_words), p.in_words.shape[1], p.out_words), np.uint32) for p in plans]
    for k, plan in enumerate(plans):
        for li, cases in enumerate(plan.launches):
            # Each launch runs only its cases (rows of the plan's words), in the order given within them.
            order = np.arange(len(cases), dtype=np.uint32)[np.argsort(np.argsort(cases))]
            launches.append(Launch(plan.probe_of(li), plan.in_words, plan.out_words, order, plan.warps_per_block,
                                   rows=np.asarray(cases), into=outs[k]))
            owner.append((k, cases))
    t1 = time.perf_counter()
    try:
        results = backend.run(module, launches) if launches else []
    except Exception as exc:  # the backend itself failed (a worker gone, a broken pipe): these cases are errors
        why = f"the backend failed: {type(exc).__name__}: {exc}"
        results = [LaunchResult(None, error=why) for _ in launches]
    if len(results) != len(launches):  # a short answer must not leave cases compared against zeros
        why = f"the backend returned {len(results)} results for {len(launches)} launches"
        results = [LaunchResult(None, error=why) for _ in launches]
    _stage("launch", time.perf_counter() - t1)
    errors: list[list[tuple[np.ndarray, str]]] = [[] for _ in plans]
    for (k, cases), result in zip(owner, results):
        if result.error:
            errors[k].append((np.asarray(cases), result.error))
        elif result.out is not None:  # None: the backend wrote them into ``outs[k]`` itself
            outs[k][cases] = result.out
    return list(zip(outs, errors))


def compare_plan(plan: Plan, out: np.ndarray) -> list[Verdict]:
    """Every check of one plan against its observed out words (a pure function: it may run in a worker)."""
    verdicts = []
    for cs in plan.case_sets:
        a, b = plan.slices[cs.check]
        verdicts.append(
            compare(plan.variant, cs.check, plan.seed, plan.in_words[a:b], out[a:b], cs.params, plan.probe.surroundings, cs.meta)
        )
    return verdicts


def compare_and_save(plan: Plan, out: np.ndarray, observations: Path | None) -> tuple[list[Verdict], str | None, float]:
    """A worker's task: the verdicts and, with ``observations``, the observation file written there under its pending
    name (the run's process then compresses nothing, and publishes it once the verdicts are recorded); a write that
    failed comes back as its error text, for the run to stop on; and the seconds that writing took (a stage of its
    own)."""
    verdicts = compare_plan(plan, out)
    if observations is None:
        return verdicts, None, 0.0
    t0 = time.perf_counter()
    try:
        save_observation(observations, VariantOutcome(plan, out_words=out), pending=True)
    except OSError as exc:
        return verdicts, f"{exc}", time.perf_counter() - t0
    return verdicts, None, time.perf_counter() - t0


def _after_failed_launches(plan: Plan, out: np.ndarray, errs: list[tuple[np.ndarray, str]]) -> list[Verdict]:
    """A check with a case in a failed launch gets its family's verdict for that (an error, or for undefined
    inputs an observation); the others compare as usual."""
    fam, verdicts = family_of(plan.variant), []
    for cs in plan.case_sets:
        a, b = plan.slices[cs.check]
        why = next((msg for cases, msg in errs if ((cases >= a) & (cases < b)).any()), None)
        if why is None:
            verdicts.append(compare(plan.variant, cs.check, plan.seed, plan.in_words[a:b], out[a:b], cs.params,
                                    plan.probe.surroundings, cs.meta))
        else:
            verdicts.append(fam.failed(plan.variant, cs.check, plan.seed, why))
    return verdicts


def _error_verdicts(plan: Plan, why: str) -> list[Verdict]:
    return [Verdict(plan.variant.id, cs.check, plan.seed, "error", message=why) for cs in plan.case_sets]


def _compared_here(plans: list[Plan], launched: list, share: float) -> Iterator[VariantOutcome]:
    """Each launched plan's outcome, compared in this process."""
    for plan, (out, errs) in zip(plans, launched):
        t3 = time.perf_counter()
        outcome = VariantOutcome(plan, out_words=None if errs else out)
        outcome.verdicts = _after_failed_launches(plan, out, errs) if errs else compare_plan(plan, out)
        _stage("compare", time.perf_counter() - t3)
        outcome.seconds = share + time.perf_counter() - t3
        yield outcome


def _run_module(backend: Backend, plans: list[Plan], module: str | None = None) -> list[VariantOutcome]:
    """Every launch of every plan in one call to the backend, then each plan's comparisons, here."""
    t0 = time.perf_counter()
    launched = launch_module(backend, plans, module if module is not None else module_of(plans))
    return list(_compared_here(plans, launched, (time.perf_counter() - t0) / max(1, len(plans))))


COMPARE_TIMEOUT_S = 600.0  # one variant's comparison in a worker; past it (a worker killed) its checks are errors


class _Comparisons:
    """Comparisons running in worker processes while the GPU runs the next module; outcomes leave in order."""

    def __init__(self, pool, observations: Path | None = None):
        self.pool = pool
        self.observations = observations
        self.pending: deque[tuple[VariantOutcome, object, float]] = deque()

    def submit(self, plans: list[Plan], launched: list, share: float) -> None:
        for plan, (out, errs) in zip(plans, launched):
            outcome = VariantOutcome(plan, out_words=None if errs else out, seconds=share)
            if errs:
                outcome.verdicts = _after_failed_launches(plan, out, errs)
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
                    (outcome.verdicts, unsaved, saving), seconds = self.pool.result(job, COMPARE_TIMEOUT_S)
                except Exception as exc:  # noqa: BLE001 - a comparator that raised, or a worker that died
                    (outcome.verdicts, unsaved, saving), seconds = (_error_verdicts(
                        outcome.plan, f"comparing failed: {type(exc).__name__}: {exc}"), None, 0.0), 0.0
                else:
                    if unsaved is not None:  # the disk refused the observation: the run stops on it, as on any write
                        raise OSError(unsaved)
                    outcome.saved = self.observations is not None
                _stage("compare", seconds - saving)
                _stage("save", saving)
                _stage("compare_wait", time.perf_counter() - t0)
                outcome.seconds += seconds
            yield outcome


MODULE_PLANS = 64  # plans per module at most: the first module runs while later variants are still unplanned
LOOKAHEAD = min(4, os.cpu_count() or 1)  # modules planned and handed to the backend to build ahead of the one running


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
    for plans in iter_modules(backend, variants, seed, checks, value_cases, cases_per_launch, on_skip, max_plans=None):
        first = plans[0]
        groups.setdefault((family_of(first.variant).name, str(first.version), first.target.name), []).extend(plans)
    return groups


def iter_modules(
    backend: Backend,
    variants: list[Variant],
    seed: int,
    checks: Iterable[str] | None = None,
    value_cases: int = 8,
    cases_per_launch: int | None = None,
    on_skip: Callable[[Variant, str], None] | None = None,
    max_plans: int | None = MODULE_PLANS,
    stop: Callable[[], bool] | None = None,
    jobs: int = 1,
) -> Iterator[list[Plan]]:
    """Plans grouped into modules, yielded as soon as a group is full (then the rest at the end).

    Planning is lazy so that a long run writes its first verdicts within seconds, and ``stop``
    (a pending interrupt) is asked before each variant is planned.  ``jobs`` > 1 plans in that
    many forked processes (the same plans, in the same order).
    """
    cc, max_ptx = backend.compute_capability(), backend.max_ptx()
    cc_for = getattr(backend, "cc_for", lambda v: cc)
    groups: dict[tuple[str, str, str], list[Plan]] = {}
    runnable = []
    for v in variants:
        why = support_reason(v, cc_for(v), max_ptx)
        if why:
            if on_skip:
                on_skip(v, why)
            continue
        runnable.append(v)
    if jobs > 1 and len(runnable) > 1:
        from .planpool import plan_in_parallel

        made = plan_in_parallel(
            jobs, lambda v, vcc: plan_variant(v, seed, vcc, max_ptx, checks, value_cases, cases_per_launch),
            {v.id: v for v in runnable}, [(v.id, cc_for(v)) for v in runnable], lambda s: _stage("plan_work", s))
    else:
        made = (plan_variant(v, seed, cc_for(v), max_ptx, checks, value_cases, cases_per_launch) for v in runnable)
    for v in runnable:
        if stop and stop():
            return
        t0 = time.perf_counter()
        plan = next(made)
        _stage("plan", time.perf_counter() - t0)
        key = (family_of(v).name, str(plan.version), plan.target.name)
        groups.setdefault(key, []).append(plan)
        if max_plans and len(groups[key]) >= max_plans:
            yield groups.pop(key)
    yield from groups.values()


def run_variants(
    backend: Backend,
    variants: list[Variant],
    seed: int,
    checks: Iterable[str] | None = None,
    value_cases: int = 8,
    on_outcome: Callable[[VariantOutcome], None] | None = None,
    on_skip: Callable[[Variant, str], None] | None = None,
    progress=None,
    stop: Callable[[], bool] | None = None,
    jobs: int = 1,
    observations: Path | None = None,
) -> None:
    """Plan, group by module, run module by module, report each outcome; ``stop`` ends it between modules.

    With workers (``jobs`` > 1) and ``observations``, each outcome's observation file is written there by the
    worker that compared it (``outcome.saved``) and published (renamed) after ``on_outcome`` recorded its verdicts;
    otherwise saving is the caller's."""

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
        if outcome.saved and observations is not None:
            publish_observation(observations, outcome.plan)
        if progress:
            progress.update(1)
        shared.release(outcome.plan.in_words, outcome.out_words)  # compared (and saved): no process attaches again

    recording = [False]  # an error while recording verdicts stops the run with nothing more written
    with shared.arena():  # words cross processes as shared files (the workers forked below inherit the arena)
        _run_variants(backend, variants, seed, checks, value_cases, emit, skipped, stop, jobs, observations,
                      lambda: recording[0])


def _run_variants(backend: Backend, variants: list[Variant], seed: int, checks: Iterable[str] | None, value_cases: int,
                  emit: Callable[[VariantOutcome], None], skipped: Callable[[Variant, str], None],
                  stop: Callable[[], bool] | None, jobs: int, observations: Path | None,
                  recording: Callable[[], bool]) -> None:
    # With workers, comparing runs in them (forked now, before the compile threads start), overlapped with launches.
    pool = None
    if jobs > 1 and len(variants) > 1:
        from .planpool import ComparePool

        pool = ComparePool(jobs, compare_and_save, {v.id: v for v in variants})
    comparisons = _Comparisons(pool, observations) if pool else None
    # With several devices, that many modules are in flight at once (each launch call blocks on its own device).
    slots = max(1, getattr(backend, "parallel", 1))
    launcher = ThreadPoolExecutor(slots, thread_name_prefix="ptxconf-launch") if slots > 1 else None

    def launch(plans: list[Plan], source: str) -> tuple[list, float]:
        t0 = time.perf_counter()
        launched = launch_module(backend, plans, source)
        return launched, (time.perf_counter() - t0) / max(1, len(plans))

    def finish(plans: list[Plan], launched: list, share: float) -> None:
        if comparisons is None:
            for outcome in _compared_here(plans, launched, share):
                emit(outcome)
        else:
            comparisons.submit(plans, launched, share)
            for outcome in comparisons.ready():
                emit(outcome)

    try:  # module by module: build ahead, launch (on every device), compare; outcomes emitted in module order
        modules = iter_modules(backend, variants, seed, checks, value_cases, on_skip=skipped, stop=stop, jobs=jobs)
        ahead: deque[tuple[list[Plan], str]] = deque()
        inflight: deque[tuple[list[Plan], Future]] = deque()
        while True:
            # Keep the next modules built in the background (ptxas pool) while this one runs.
            while len(ahead) < LOOKAHEAD + slots and (plans := next(modules, None)) is not None:
                t0 = time.perf_counter()
                source = module_of(plans)
                backend.prefetch(source)
                _stage("module", time.perf_counter() - t0)
                ahead.append((plans, source))
            stopping = bool(stop and stop())
            if launcher is None:
                if not ahead or stopping:
                    break
                plans, source = ahead.popleft()
                finish(plans, *launch(plans, source))
                continue
            while ahead and not stopping and len(inflight) < slots:
                plans, source = ahead.popleft()
                inflight.append((plans, launcher.submit(launch, plans, source)))
            if not inflight:
                break
            plans, running = inflight.popleft()  # outcomes leave in module order, whichever device finishes first
            finish(plans, *running.result())
        if comparisons is not None:  # every launched module's verdicts, also when stopping early
            for outcome in comparisons.ready(wait=True):
                emit(outcome)
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
        if launcher is not None:
            launcher.shutdown(wait=True)
        if pool is not None:
            pool.close()


OBSERVATION_SUFFIX = ".npz.zst"  # an .npz (stored, not deflated) in one Zstandard frame; older runs wrote .npz
_OBSERVATION_SEED = re.compile(r"\.seed(-?\d+)\.npz(?:\.zst)?$")


def observation_name(variant_id: str, seed: int) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", variant_id) + f".seed{seed}{OBSERVATION_SUFFIX}"


def find_observation(directory: Path, variant_id: str, seed: int) -> Path | None:
    """The observation file of (variant, seed) under ``directory``: this version's, or an older run's ``.npz``."""
    name = observation_name(variant_id, seed)
    return next((p for p in (directory / name, directory / name.removesuffix(".zst")) if p.exists()), None)


def has_observation(directory: Path, variant_id: str, seed: int) -> bool:
    return find_observation(directory, variant_id, seed) is not None


def observation_files(directory: Path) -> list[Path]:
    """Every observation file under ``directory``, in name order: this version's and older runs' plain ``.npz``."""
    return sorted([*directory.glob("*.npz"), *directory.glob("*" + OBSERVATION_SUFFIX)])


def observation_stem(name: str) -> str:
    """The file name without its seed and suffix (the sanitised variant id)."""
    return _OBSERVATION_SEED.sub("", name)


def observation_seed(name: str) -> int | None:
    m = _OBSERVATION_SEED.search(name)
    return int(m.group(1)) if m else None


def open_observation(path: Path) -> np.lib.npyio.NpzFile:
    """The arrays of an observation file (``np.load``'s lazy archive), compressed or not; raises on damage."""
    with open(path, "rb") as fh:
        head = fh.read(4)
        if head == ZSTD_MAGIC:
            return np.load(io.BytesIO(zstd_decompress(head + fh.read())), allow_pickle=False)
    return np.load(path, allow_pickle=False)


PENDING = ".pending"  # an observation written before its verdicts are recorded: no reader takes it


def publish_observation(directory: Path, plan: Plan) -> None:
    """The pending observation of ``plan`` under its own name: done once its verdicts are in results.jsonl, so that a
    run killed in between leaves no observation whose verdicts it never recorded (a replay would pass them)."""
    path = directory / observation_name(plan.variant.id, plan.seed)
    os.replace(path.with_name(path.name + PENDING), path)


def save_observation(directory: Path, outcome: VariantOutcome, pending: bool = False) -> Path:
    """Inputs and outputs per lane, and everything needed to re-run the comparators (``pending``: under the name
    :func:`publish_observation` renames)."""
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
    path = directory / (observation_name(plan.variant.id, plan.seed) + (PENDING if pending else ""))
    atomic_write(path, observation_bytes(in_words=plan.in_words, out_words=outcome.out_words, meta=np.array(json.dumps(meta))))
    return path


def observation_bytes(**arrays: np.ndarray) -> bytes:
    """An observation file's bytes: the arrays as an ``.npz`` (what ``np.load`` reads), stored, in one Zstandard
    frame at level 1 (``zstd -d`` gives the ``.npz`` back)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as zf:
        for name, arr in arrays.items():
            with zf.open(name + ".npy", "w", force_zip64=True) as fh:
                np.lib.format.write_array(fh, np.asanyarray(arr), allow_pickle=False)
    return zstd_compress(buf.getbuffer())
