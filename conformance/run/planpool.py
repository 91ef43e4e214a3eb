"""Planning and comparing in worker processes.

Each variant's plan is a function of (seed, variant) alone, so the plans can be made on every
core and come back in order; each comparison is a function of the plan and the observed words,
so it can run on another core while the GPU runs the next module.

Workers are forked from the run's process, so they hold the same specs; a plan (or a comparison's
inputs) travels pickled, with every variant named by its id instead of copied (a wgmma variant
carries its whole spec document), and the other side puts its own variant object back in.  What a
pool's workers call, and the variants they name, are handed to them as they start (the pool's
initializer, through the fork): no module global carries them.
"""

from __future__ import annotations

import contextlib
import copyreg
import io
import multiprocessing as mp
import os
import pickle
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import replace
from typing import Any

import numpy.ma  # noqa: F401 - NumPy's first np.unique imports it: here once, before the workers fork, not in each
from ptxconf.core import shared
from ptxconf.core.heap import keep_freed_memory
from ptxconf.core.lifetime import die_with_parent, ignore_stop_signals, name_process
from ptxconf.core.plan import slim
from threadpoolctl import threadpool_limits

__all__ = ["plan_in_parallel", "ComparePool", "PlanBytes", "WorkersUnavailable"]

class _Codec:
    """Pickling with the run's variants named by their id: a reduction per variant class (looked up by type in C),
    not a ``persistent_id`` hook, which is called for every object pickled (5.7 M calls in the run's process per
    suite on the H100).  Each pool has its own, handed to its workers when they start; nothing of it is global."""

    def __init__(self, variants: dict[str, Any], words_unmapped: bool = False):
        self.variants = dict(variants)
        self.classes: dict[tuple[str, str], Any] = {(__name__, "_variant"): self.variants.__getitem__}
        if words_unmapped:  # shared words come back as references, mapped only if read (the run's own process)
            self.classes[shared._attach.__module__, shared._attach.__name__] = shared.SharedRef
        kinds = {type(v) for v in self.variants.values()}
        self.reductions = {**copyreg.dispatch_table, **{cls: self._reduce for cls in kinds}}

    def __repr__(self) -> str:  # never the variants (a fork or a signal once formatted them: seconds)
        return f"_Codec({len(self.variants)} variants)"

    def _reduce(self, v: Any) -> tuple:
        if self.variants.get(v.id) is v:
            return _variant, (v.id,)
        return v.__reduce_ex__(pickle.HIGHEST_PROTOCOL)  # a variant of no run (a changed copy): by value

    def dumps(self, obj: Any) -> bytes:
        buf = io.BytesIO()
        pickler = pickle.Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL)
        pickler.dispatch_table = self.reductions
        pickler.dump(obj)
        return buf.getvalue()

    def loads(self, data: bytes) -> Any:
        return _Unpickler(io.BytesIO(data), self).load()


class _Unpickler(pickle.Unpickler):
    """Puts this side's own variant object back where the other side wrote its id."""

    def __init__(self, fh: io.BytesIO, codec: _Codec):
        super().__init__(fh)
        self._codec = codec

    def find_class(self, module: str, name: str) -> Any:
        # Looked up once per codec: the standard lookup (import machinery, attribute walk) cost the run's process
        # 0.74 s per whole suite, called for each class of each plan it received (profiled on the H200 host).
        try:
            return self._codec.classes[module, name]
        except KeyError:
            found = self._codec.classes[module, name] = super().find_class(module, name)
            return found


def _variant(vid: str) -> Any:  # only named in pickles: the unpickler resolves it to its codec's variant
    raise RuntimeError(f"variant {vid!r} unpickled without its run's codec")


_Job = tuple[Callable[..., Any], _Codec]
_this_worker: list[_Job] = []  # in a worker process only: its pool's callable and codec, set as it starts


def _worker(parent: int, job: _Job, role: str) -> None:
    """A worker's set-up: ``job`` (the pool's callable and codec, inherited through the fork, never pickled).  It
    ends with the run's process (``parent``), and its signals are the parent's: a Ctrl-C reaches the whole process
    group, and the parent decides.  BLAS runs on one thread: the run already puts a worker on every core, and a BLAS
    thread pool in each of them only oversubscribes the cores (on the 16-core H100 host the warm suite took 18.2 s
    and 17.4 s with one BLAS thread per worker, 19.0 s and 18.2 s with the default pools)."""
    die_with_parent(parent)
    name_process(role)
    ignore_stop_signals()
    threadpool_limits(1)
    keep_freed_memory()
    _this_worker[:] = [job]


def _plan(item: tuple[str, tuple[int, int]]) -> tuple[bytes, float, float]:
    t0, c0 = time.perf_counter(), time.thread_time()
    (plan_of, codec), = _this_worker
    vid, cc = item
    plan = slim(plan_of(codec.variants[vid], cc))
    exp = plan.expected
    if exp is None:  # file references where the run shares words
        plan = replace(plan, in_words=shared.share(plan.in_words, recycle=True))
    else:  # one file for the plan's words, predicted words and defined bits (those otherwise travel by value)
        in_words, words, defined = shared.share_together(plan.in_words, exp.words, exp.defined, recycle=True)
        plan = replace(plan, in_words=in_words, expected=replace(exp, words=words, defined=defined))
    return codec.dumps(plan), time.perf_counter() - t0, time.thread_time() - c0


def _compare(plan: bytes | None, rest: bytes) -> bytes:
    t0 = time.perf_counter()
    (compare, codec), = _this_worker
    args = codec.loads(rest) if plan is None else (codec.loads(plan), *codec.loads(rest))
    verdicts = compare(*args)
    return codec.dumps((verdicts, time.perf_counter() - t0))


class PlanBytes:
    """The bytes each plan arrived in, kept until its comparison is submitted: a plan the run did not change goes to
    the comparing worker in those same bytes instead of being pickled again (which cost the run's process 0.9 s of
    a 16 s warm suite on the H200 host: pickling, and finding each shared array's file again).  Entries hold their
    plan, so an id is never reused while its entry lives."""

    def __init__(self) -> None:
        self._by_id: dict[int, tuple[Any, bytes]] = {}

    def keep(self, plan: Any, raw: bytes) -> None:
        self._by_id[id(plan)] = (plan, raw)

    def take(self, plan: Any) -> bytes | None:
        """The bytes ``plan`` arrived in (once), or None for a plan made or changed here."""
        kept = self._by_id.get(id(plan))
        if kept is None or kept[0] is not plan:
            return None
        del self._by_id[id(plan)]
        return kept[1]

    def drop(self, plan: Any) -> None:
        """Forget ``plan`` (done without a comparison in a worker)."""
        self.take(plan)


class WorkersUnavailable(RuntimeError):
    """No worker processes here (no usable /dev/shm for multiprocessing's semaphores, a process limit): the run
    plans and compares in its own process instead."""


def _pool(jobs: int, job: _Job, role: str) -> ProcessPoolExecutor:
    """``jobs`` forked workers (named after ``role``: ``plan``, ``compare``), all started now (before the run starts
    threads of its own).

    Why not ``multiprocessing.Pool``: its worker-handler thread wakes whenever results wait in the pipe and
    polls every worker's exit status each time; under a run's result traffic that spun through about a
    million polls, holding this process's GIL for a fifth of the run (profiled on the H100)."""
    try:
        pool = ProcessPoolExecutor(jobs, mp_context=mp.get_context("fork"), initializer=_worker,
                                   initargs=(os.getpid(), job, role))
    except OSError as exc:  # the pool's semaphores live in /dev/shm
        raise WorkersUnavailable(f"no worker processes: multiprocessing cannot make its semaphores ({exc}); "
                                 "/dev/shm must be a writable directory with room") from None
    try:
        for job in [pool.submit(int) for _ in range(jobs)]:  # fork every worker now
            job.result()
    except (OSError, BrokenProcessPool) as exc:
        pool.shutdown(wait=False, cancel_futures=True)
        raise WorkersUnavailable(f"no worker processes: {type(exc).__name__}: {exc}") from None
    return pool


def plan_in_parallel(jobs: int, plan: Callable[[Any, tuple[int, int]], Any], variants: dict[str, Any],
                     items: Iterable[tuple[str, tuple[int, int]]],
                     on_seconds: Callable[[float, float], None] | None = None,
                     arrived: PlanBytes | None = None) -> Iterator[Any]:
    """``plan(variant, cc)`` of each of ``items`` ((variant id, compute capability)), in order, made by
    ``jobs`` forked workers (which inherit ``plan`` and the variants: nothing of them is pickled);
    ``on_seconds`` hears each plan's seconds in its worker (wall, then CPU).  The workers start now (raises
    :class:`WorkersUnavailable`); the plans come as they are taken."""
    codec = _Codec(variants, words_unmapped=True)
    return _planned(_pool(jobs, (plan, codec), "plan"), codec, jobs, items, on_seconds, arrived)


def _planned(pool: ProcessPoolExecutor, codec: _Codec, jobs: int, items: Iterable[tuple[str, tuple[int, int]]],
             on_seconds: Callable[[float, float], None] | None, arrived: PlanBytes | None) -> Iterator[Any]:
    # At most ``window`` plans ahead of the consumer: an abandoned run (an interrupt) then leaves the workers only
    # that much to finish before they exit.  (Workers ignore SIGTERM, so they are never killed mid-task.)
    window = 8 * jobs
    pending: deque[Future] = deque()
    todo = iter(items)
    try:
        while True:
            while len(pending) < window and (item := next(todo, None)) is not None:
                pending.append(pool.submit(_plan, item))
            if not pending:
                return
            raw, seconds, cpu = pending.popleft().result()
            made = codec.loads(raw)
            if arrived is not None:
                arrived.keep(made, raw)
            if on_seconds:
                on_seconds(seconds, cpu)
            yield made
    except GeneratorExit:  # the run stopped taking plans (a stop request): the plans in flight are never used
        abandon(pool)
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def abandon(pool: ProcessPoolExecutor) -> None:
    """End the workers of a pool whose results nobody will take, without waiting for their tasks.

    Why: planning is pure (a plan is a function of the variant and the seed; nothing is written), so a run that stops
    need not wait for the plans its workers are making, which can take longer than the 2 s a stop may take.  Python
    3.14 has ``ProcessPoolExecutor.kill_workers``; before it the pool's processes are only reachable through its
    ``_processes`` table."""
    kill = getattr(pool, "kill_workers", None)
    if kill is not None:
        kill()
        return
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in list((getattr(pool, "_processes", None) or {}).values()):
        with contextlib.suppress(OSError, ValueError):
            proc.kill()


class ComparePool:
    """``compare(*args)`` in ``jobs`` forked workers, one task per variant; results are taken in submission order.

    Fork it before the run starts threads (the compile pool, the observation writer): the workers
    inherit the variants and ``compare`` and nothing else of the run.
    """

    def __init__(self, jobs: int, compare: Callable[..., Any], variants: dict[str, Any],
                 arrived: PlanBytes | None = None):
        self._codec = _Codec(variants)
        self._pool = _pool(jobs, (compare, self._codec), "compare")
        self._arrived = arrived

    def submit(self, *args: Any) -> Future:
        """``compare(*args)`` in a worker.  A plan as the first argument travels in the bytes it arrived in where it
        is unchanged (see :class:`PlanBytes`), else pickled slim."""
        if not args or not hasattr(args[0], "case_sets"):
            return self._pool.submit(_compare, None, self._codec.dumps(args))
        raw = self._arrived.take(args[0]) if self._arrived is not None else None
        if raw is None:
            raw = self._codec.dumps(slim(args[0]))
        return self._pool.submit(_compare, raw, self._codec.dumps(args[1:]))

    def result(self, pending: Future, timeout: float | None = None) -> tuple[Any, float]:
        """(what ``compare`` returned, its seconds in the worker); raises what the worker raised."""
        return self._codec.loads(pending.result(timeout))

    def close(self) -> None:
        """The workers finish what was submitted (a module's comparisons: seconds at most) and leave."""
        self._pool.shutdown(wait=True)
