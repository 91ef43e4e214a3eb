"""Several devices, one run: a whole pipeline (planning, building, launching, comparing) per device, each in a
process of its own.

Why: on one device the run's own process is the serial part of the pipeline (it takes every plan, builds every
module, hands out every comparison).  Two GPUs behind that one process ran the whole suite 1.2x as fast as one: the
process, not the GPUs, set the pace.  With a lane per device, each lane's process does that work for its share of
the variants (whole modules dealt in turn: the runner decides the shares), with its share of the cores.

The run's process stays the one writer of the run directory: lanes send each outcome (the verdicts, never words)
and each skip over a pipe, and the run records them as they come, then publishes the observation file the lane's
worker wrote pending (so no observation is published before its verdicts are recorded, as in one process).  A
lane takes no signal: the run's process decides, and tells every lane to stop between modules; a lane ends with
the run's process (the parent-death signal).  The verdicts are those of one device; results.jsonl lists them in
the order the lanes finish them.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import sys
import threading
import traceback
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from ptxconf.core.lifetime import die_with_parent, ignore_stop_signals, name_process
from ptxconf.core.verdict import Verdict

from .observations import publish_observation_of
from .stages import Stages
from .stream import VariantStream

__all__ = ["LaneOutcome", "run_in_lanes", "lanes_of"]

POLL_S = 0.2  # how often the run's process looks at its stop request while the lanes work
LANE_STOP_S = 10.0  # a lane asked to stop finishes its module in flight; past this it is ended


@dataclass
class LaneOutcome:
    """What a lane sends of one variant's outcome: what the run records (the verdicts), not the words."""

    variant: Any
    verdicts: list[Verdict]
    seconds: float
    cases: int
    saved: bool
    seed: int = 0  # the plan itself stayed in the lane


def lanes_of(backend: Any) -> list[Any] | None:
    """The backends of the lanes a backend runs as (one per device, each made for a process of its own), or None
    where it is one device."""
    make = getattr(backend, "lane_backends", None)
    if make is None or getattr(backend, "parallel", 1) < 2:
        return None
    return make()


def run_in_lanes(run_variants: Callable, backend: Any, lanes: list[Any], variants: list, dealt: Iterable[list],
                 request: Any, on_outcome: Callable[[LaneOutcome], None] | None,
                 on_skip: Callable[[Any, str], None] | None, progress: Any, stop: Callable[[], bool] | None,
                 stages: Stages) -> None:
    """``run_variants`` (the runner's pipeline) in a forked process per lane, each given the next module of
    ``dealt`` (lists of ``variants``, the runner's) when its planning asks; the outcomes recorded here as they come.
    Raises RuntimeError when a lane ended without finishing (the variants it had taken and not reported are then
    not run: the run says so)."""
    ctx = mp.get_context("fork")
    stopping = ctx.Event()
    by_id = {v.id: v for v in variants}
    n = len(lanes)
    jobs = max(1, request.jobs // n)
    procs, conns, names, feeds = [], [], {}, {}
    stages.mark("lanes_start")
    for i, lane_backend in enumerate(lanes):
        here, there = ctx.Pipe(duplex=False)
        fed, feed = ctx.Pipe(duplex=False)
        p = ctx.Process(target=_lane, name=f"ptxconf-lane-{i}", daemon=False,
                        args=(os.getpid(), there, fed, lane_backend, by_id, replace(request, jobs=jobs), stopping,
                              run_variants, lanes[i + 1:]))
        p.start()
        lane_backend.handed_over()  # opened here before the fork: the lane talks to its device now
        there.close()
        fed.close()
        procs.append(p)
        conns.append(here)
        names[here], feeds[here] = f"lane{i}", feed
    failures: list[str] = []
    live = dict(zip(conns, procs))
    lane_stats: list[dict] = []
    dealer = _Dealer(dealt, stages, stopping)
    try:
        _take(live, names, feeds, dealer, stopping, stop, by_id, request, on_outcome, on_skip, progress, stages,
              lane_stats, failures)
    except BaseException:  # this process stops recording (a write refused, a crash): the lanes stop, unpublished
        stopping.set()
        for p in procs:
            p.join(LANE_STOP_S)
            if p.is_alive():
                p.kill()
        raise
    # A lane that said "done" has sent everything; its teardown (its workers and GPU worker leaving: 0.3-0.7 s on
    # two H100s) goes on while the run writes its reports, and the lanes are joined in the background.
    threading.Thread(target=_join_all, args=(procs,), name="ptxconf-lane-join", daemon=True).start()
    stages.mark("lanes_ended")
    absorb = getattr(backend, "absorb_lane_stats", None)
    if absorb is not None:
        absorb(lane_stats)
    if failures:
        raise RuntimeError("; ".join(failures))


def _join_all(procs: list) -> None:
    for p in procs:
        p.join()


class _Dealer:
    """The modules, one at a time to the lane that asks, over that lane's own pipe.  Why not one queue all lanes read:
    a queue's reader holds a lock shared by every lane while it waits; a lane that died while it waited kept it, and
    the other lanes waited for ever (the test of a lane that dies found it)."""

    def __init__(self, dealt: Iterable[list], stages: Stages, stopping: Any):
        self._dealt, self._stages, self._stopping = iter(dealt), stages, stopping
        self._left = True

    def next(self) -> list[str] | None:
        """The next module's variant ids; None once every module is out or the run is stopping."""
        if self._left and not self._stopping.is_set():
            module = next(self._dealt, None)
            if module is not None:
                return [v.id for v in module]
            self._left = False
            self._stages.mark("modules_dealt")
        return None


def _take(live: dict, names: dict, feeds: dict, dealer: _Dealer, stopping: Any, stop: Callable[[], bool] | None,
          by_id: dict, request: Any, on_outcome: Callable | None, on_skip: Callable | None, progress: Any,
          stages: Stages, lane_stats: list, failures: list) -> None:
    """What the lanes send, recorded as it comes, and a module to each lane that asks, until every lane has said
    "done" or ended; a stop request passed on to them."""
    while live:
        if stop is not None and not stopping.is_set() and stop():
            stopping.set()
        for conn in wait(list(live), timeout=POLL_S):
            try:
                kind, *body = conn.recv()
            except (EOFError, OSError):
                proc = live.pop(conn)
                feeds[conn].close()
                proc.join()
                if proc.exitcode != 0:
                    failures.append(f"{proc.name} ended with exit status {proc.exitcode} before finishing")
                continue
            if kind == "more":
                with contextlib.suppress(OSError):  # a lane gone meanwhile: its end is read next
                    feeds[conn].send(dealer.next())
            elif kind == "outcome":
                _record(LaneOutcome(by_id[body[0]], *body[1:]), request.observations, on_outcome, progress)
            elif kind == "skip":
                if on_skip:
                    on_skip(by_id[body[0]], body[1])
                if progress:
                    progress.update(1)
            elif kind == "done":  # the lane's last message: it leaves on its own
                live.pop(conn)
                conn.close()
                feeds[conn].close()
                lane_stages, stats, marks = body
                for name, seconds in lane_stages.items():
                    stages.add(name, seconds)
                for name, at in marks.items():
                    stages.mark(f"{names[conn]}.{name}", at)
                lane_stats.append(stats)
            elif kind == "error":
                failures.append(body[0])


def _record(outcome: LaneOutcome, observations: Path | None, on_outcome: Callable | None, progress: Any) -> None:
    if on_outcome:
        on_outcome(outcome)  # the verdicts recorded first, then the observation the lane's worker wrote
    if outcome.saved and observations is not None:
        publish_observation_of(observations, outcome.variant.id, outcome.seed)
    if progress:
        progress.update(1)


def _asked(conn: Connection, fed: Connection) -> Iterator[list[str]]:
    """A lane's modules (variant ids), each asked of the run when the lane's planning reaches it."""
    while True:
        conn.send(("more",))
        try:
            ids = fed.recv()
        except (EOFError, OSError):  # the run's process is gone (this lane ends with it)
            return
        if ids is None:
            return
        yield ids


def _lane(parent: int, conn: Connection, fed: Connection, backend: Any, by_id: dict, request: Any, stopping: Any,
          run_variants: Callable, later: list) -> None:
    """One lane: the pipeline for the modules it asks for (:func:`_asked`), each outcome sent as it is made; the
    run's process publishes.  ``later``: the backends of the lanes forked after this one (their devices' pipes are
    theirs, not this lane's)."""
    die_with_parent(parent)
    name_process("lane")
    ignore_stop_signals()
    for other in later:
        other.handed_over()
    stages = Stages()

    def outcome(o: Any) -> None:
        conn.send(("outcome", o.variant.id, o.verdicts, o.seconds, o.cases, o.saved, o.plan.seed))

    said = []

    def done() -> None:  # everything sent: the run goes on to its reports while this lane takes its workers down
        conn.send(("done", stages.rounded(), backend.stats(), stages.marks()))
        said.append(True)

    try:
        backend.set_stop(stopping.is_set)  # a module still being built when the run stops is not run
        run_variants(backend, VariantStream(_asked(conn, fed), by_id), request, on_outcome=outcome,
                     on_skip=lambda v, why: conn.send(("skip", v.id, why)), stop=stopping.is_set, stages=stages,
                     publish=False, finished=done)
        if not said:
            done()
    except BaseException as exc:  # noqa: BLE001 - the run's process says it (and the variants not run)
        why = f"a device's pipeline failed: {type(exc).__name__}: {exc}\n{traceback.format_exc(limit=4)}"
        if said:  # after everything was recorded (taking its workers down): the run has moved on
            print(f"ptxconf run: {why}", file=sys.stderr, flush=True)
        else:
            conn.send(("error", why))
    finally:
        try:
            backend.close()
        finally:
            conn.close()
