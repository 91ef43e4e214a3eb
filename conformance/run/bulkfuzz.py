"""The bulk layout fuzzer: fresh cases drawn, run and compared on the device, seed after seed.

Each device gets a worker process of its own.  The worker goes through the variants seed by seed:
the family gives the variant's :class:`~ptxconf.core.bulk.BulkCases` at that seed, the probe module is
built (ptxas, cached; the next modules build on other cores meanwhile), and batches of cases are drawn,
launched and compared on the device.  Only counts and the few cases that differ come back; those are
explained by the family's own comparator.  A worker that dies or hangs makes the (variant, seed) it
was running one failure, and a fresh worker goes on after it.  Every failure carries the command
that replays exactly that case, on any backend.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from multiprocessing.connection import wait
from typing import Any

import numpy as np
from ptxconf.core.bulk import bulk_record
from ptxconf.core.family import family_of
from ptxconf.core.lifetime import die_with_parent
from ptxconf.core.plan import support_reason

__all__ = ["BulkResult", "fuzz_bulk", "replay_case_command", "STAGES"]

STAGES = ("build", "draw", "launch", "compare")
HANG_S = 120.0  # a worker silent this long is killed: the (variant, seed) it ran failed


def replay_case_command(variant: str, seed: int, case: int, backend: str, check: str | None = None) -> str:
    """``ptxconf fuzz case`` of one case (``check``: which of the variant's value checks, where it has several)."""
    pick = f" --check '{check}'" if check and check != "value" else ""
    return f"ptxconf fuzz case '{variant}' --seed {seed} --case {case}{pick} --backend {backend}"


@dataclass
class BulkResult:
    seeds: int = 0
    runs: int = 0  # (variant, seed) pairs done
    failed_runs: int = 0  # of those, the ones with a failure
    cases: int = 0
    seconds: float = 0.0
    failures: list[str] = field(default_factory=list)
    unsupported: dict[str, str] = field(default_factory=dict)  # variant -> why it has no bulk cases here
    stages_s: dict[str, float] = field(default_factory=dict)  # summed over workers
    by_family: dict[str, int] = field(default_factory=dict)  # cases per spec family
    devices: list[dict] = field(default_factory=list)
    restarts: int = 0
    fatal: str | None = None  # why a device could not be opened at all

    @property
    def cases_per_s(self) -> float:
        return self.cases / self.seconds if self.seconds else 0.0


def _explain(bc: Any, in_rows: np.ndarray, out_rows: np.ndarray) -> str:
    """The family comparator's account of cases the device found different."""
    v = bc.variant
    vd = family_of(v).compare(v, bulk_record(bc, in_rows, out_rows))
    if vd.status == "pass":
        return "the device found differing words that the comparator passes (the bulk prediction and the comparator disagree)"
    lines = vd.details(v).splitlines()  # the summary, then element by element: lane, register, row, col, bits
    return "; ".join(lines[:4]) + (f"; ... ({len(lines) - 4} more lines)" if len(lines) > 4 else "")


_DIFFERS: dict[int, Any] = {}


def cases_differ(xp: Any, out: Any, expected: Any, defined: Any) -> Any:
    """``bool[case]``: a defined word of the case differs.  One reduction kernel where the module makes them (CuPy:
    no ``case x word`` temporaries), else the same expression in NumPy."""
    if not hasattr(xp, "ReductionKernel"):
        return ((out != expected) & defined).any(axis=1)
    if id(xp) not in _DIFFERS:
        _DIFFERS[id(xp)] = xp.ReductionKernel("uint32 o, uint32 e, bool d", "bool y", "d && o != e", "a || b", "y = a",
                                              "false", "ptxconfcases_differ")
    return _DIFFERS[id(xp)](out, expected, xp.broadcast_to(defined, out.shape), axis=1)


BATCH_BYTES = 1 << 30  # a batch's in and out words at most on the host (the draw's temporaries come on top)
DEVICE_BATCH_BYTES = 2 << 30  # the same on a GPU: each array operation a launch, so fewer, larger batches pay


def batch_for(bc: Any, batch: int, xp: Any = np) -> int:
    """Cases per batch for ``bc`` drawn on ``xp``: ``batch``, or fewer where a case is large (a wgmma case at N = 256
    holds about a quarter of a megabyte of words: 65536 of them would not fit a GPU's memory).  The draw's
    temporaries are a few times a batch's words (``ptxconf bench --bulk-draw``: bytes made per case)."""
    per_case = bc.lanes * (getattr(bc, "in_words", 0) + 2 * bc.out_words) * 4
    bound = BATCH_BYTES if xp is np else DEVICE_BATCH_BYTES
    return max(1, min(batch, bound // max(per_case, 1)))


def launch_drawn(device: Any, bc: Any, module: Any, drawn: Any, first: int) -> Any:
    """The out words of drawn cases ``first ..`` of ``bc``, launched with their slots rotated by the seed and the
    batch (a case's outcome must not hang on the slot it runs in)."""
    xp, n = device.xp, drawn.in_words.shape[0]
    order = xp.roll(xp.arange(n, dtype=xp.uint32), (bc.seed * 7919 + first) % n)
    return device.launch(module, bc.probe, drawn.in_words, bc.out_words, order, bc.warps_per_block)


def _run_one(device: Any, bc: Any, module: Any, cases: int, batch: int, stages: dict[str, float],
             backend_name: str) -> tuple[int, list[str]]:
    """Every batch of one (variant, seed): (cases verified, failure lines)."""
    xp = device.xp
    failures: list[str] = []
    done = 0
    v = bc.variant
    batch = batch_for(bc, batch, xp)
    for first in range(0, cases, batch):
        n = min(batch, cases - first)
        t0 = time.perf_counter()
        drawn = bc.draw(xp, first, n)
        device.synchronize()
        t1 = time.perf_counter()
        out = launch_drawn(device, bc, module, drawn, first)
        device.synchronize()
        t2 = time.perf_counter()
        bad = cases_differ(xp, out.reshape(n, -1), drawn.expected.reshape(n, -1), drawn.defined.reshape(1, -1))
        nbad = int(bad.sum())
        if nbad:
            idx = xp.nonzero(bad)[0][:1]  # the first differing case, explained alone (its "case 0")
            host = (lambda a: a.get()) if xp is not np else (lambda a: a)
            in_rows, out_rows, cases_at = host(drawn.in_words[idx]), host(out[idx]), host(idx)
            why = _explain(bc, in_rows, out_rows)
            failures.append(f"{v.id}:{bc.check}:seed={bc.seed}: {nbad} of {n} cases differ (first: case "
                            f"{first + int(cases_at[0])}): {why} | replay: "
                            + replay_case_command(v.id, bc.seed, first + int(cases_at[0]), backend_name))
        t3 = time.perf_counter()
        stages["draw"] += t1 - t0
        stages["launch"] += t2 - t1
        stages["compare"] += t3 - t2
        done += n
    return done, failures


def _prepare(device: Any, v: Any, seed: int, cc: tuple[int, int], max_ptx: Any) -> tuple[Any, Any, float]:
    """(bulk cases, built module, seconds): runs in a build thread."""
    t0 = time.perf_counter()
    why = support_reason(v, cc, max_ptx)
    if why:  # not this GPU's (or this loader's): listed with the variants that have no bulk cases
        raise NotImplementedError(why)
    fam = family_of(v)
    bc = fam.bulk_cases(v, seed, cc, max_ptx)
    image = device.build(fam.module_source([bc.probe], bc.version, bc.target))
    return bc, image, time.perf_counter() - t0


def _serve(parent: int, conn: Any, make_device: Callable[[], Any], variants: list[Any], seeds: range, start: tuple[int, int],
           deadline: float, cases: int, batch: int, backend_name: str, builders: int) -> None:
    """A worker: seed by seed, variant by variant, until the deadline; messages to the parent through ``conn``.
    ``builders``: the module builds it runs at once (its share of the host's cores)."""
    die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        device = make_device()
        conn.send(("info", device.info()))
    except Exception as exc:  # noqa: BLE001 - no CuPy, no GPU, no ptxas: the run cannot go on, and says why
        conn.send(("fatal", f"{type(exc).__name__}: {exc}"))
        return
    cc, max_ptx = device.compute_capability(), device.max_ptx()
    cc_for = getattr(device, "cc_for", lambda v: cc)  # the emulator stands in for each family's own GPU
    builder = ThreadPoolExecutor(builders)

    def walk() -> Iterator[tuple[int, int]]:
        si, vi = start
        while si < len(seeds):
            yield si, vi
            si, vi = (si, vi + 1) if vi + 1 < len(variants) else (si + 1, 0)

    todo, ahead = walk(), deque()
    lookahead = 2 * (builders + 1)
    try:
        while True:
            while len(ahead) < lookahead and (nxt := next(todo, None)) is not None:
                si, vi = nxt
                ahead.append((si, vi, builder.submit(_prepare, device, variants[vi], seeds[si], cc_for(variants[vi]), max_ptx)))
            if not ahead or time.time() >= deadline:
                break
            si, vi, job = ahead.popleft()
            v, seed = variants[vi], seeds[si]
            conn.send(("start", v.id, seed, (si, vi)))
            stages = dict.fromkeys(STAGES, 0.0)
            try:
                bc, image, built = job.result()
            except NotImplementedError as exc:
                conn.send(("unsupported", v.id, str(exc)))
                continue
            except Exception as exc:  # noqa: BLE001 - a module that does not build is this variant's failure
                conn.send(("done", v.id, seed, 0, stages, [f"{v.id}:value:seed={seed}: {type(exc).__name__}: {exc}"]))
                continue
            stages["build"] = built
            try:
                done, failures = _run_one(device, bc, device.load(image), cases, batch, stages, backend_name)
            except Exception as exc:  # noqa: BLE001 - a launch error may leave the device unusable: report, then leave
                why = f"{type(exc).__name__}: {str(exc)[:500]}"
                conn.send(("done", v.id, seed, 0, stages, [f"{v.id}:value:seed={seed}: {why} | replay: "
                                                            + replay_case_command(v.id, seed, 0, backend_name)]))
                conn.send(("restart", (si, vi)))
                return
            conn.send(("done", v.id, seed, done, stages, failures))
        conn.send(("end",))
    finally:
        builder.shutdown(wait=False, cancel_futures=True)
        device.close()


def fuzz_bulk(make_device: Callable[[int], Any], devices: list[int], variants: list[Any], budget_s: float,
              first_seed: int, cases: int = 65536, batch: int = 65536, backend_name: str = "pycuda",
              on_progress: Callable[[BulkResult], None] | None = None) -> BulkResult:
    """Fuzz ``variants`` on every device in ``devices`` (device ``j`` takes seeds ``first_seed + j``, ``+ len(devices)``
    ...) for ``budget_s`` seconds; ``make_device(ordinal)`` opens a device inside its worker."""
    res = BulkResult(stages_s=dict.fromkeys(STAGES, 0.0))
    ctx = mp.get_context("fork")
    t0 = time.time()
    deadline = t0 + budget_s
    rounds = 1 << 20  # seeds per device: more than any budget reaches (ranges: nothing is materialised)
    plan = {j: range(first_seed + j, first_seed + j + rounds * len(devices), len(devices)) for j in range(len(devices))}
    workers: dict[Any, dict] = {}
    family_name = {v.id: v.family for v in variants}
    seeds_seen: set[int] = set()
    # Each worker's share of the host's cores for ptxas, one core each left to drive its GPU: workers that each
    # took every core would starve one another's launches.
    builders = max(1, ((os.cpu_count() or 2) - len(devices)) // len(devices))

    def start(j: int, at: tuple[int, int]) -> None:
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=_serve, args=(os.getpid(), child, lambda: make_device(devices[j]), variants, plan[j], at, deadline,
                                                cases, batch, backend_name, builders), daemon=True)
        proc.start()
        child.close()
        workers[parent] = {"j": j, "proc": proc, "running": None, "at": None, "last": time.time()}

    def lost(conn: Any, why: str | None) -> None:
        """A worker gone before its end: the (variant, seed) it was running failed (``why``); a fresh worker
        goes on after the last one it started."""
        w = workers.pop(conn)
        w["proc"].join(timeout=5)
        if w["proc"].is_alive():
            w["proc"].kill()
            w["proc"].join(timeout=5)
        if w["running"] is not None and why is not None:
            vid, seed, _ = w["running"]
            res.failures.append(f"{vid}:value:seed={seed}: {why} | replay: "
                                + replay_case_command(vid, seed, 0, backend_name))
            res.runs += 1
            res.failed_runs += 1
        if w["at"] is not None and time.time() < deadline:
            res.restarts += 1
            si, vi = w["at"]
            start(w["j"], (si, vi + 1) if vi + 1 < len(variants) else (si + 1, 0))

    for j in range(len(devices)):
        start(j, (0, 0))
    last_progress = time.time()
    while workers:
        ready = wait(list(workers), timeout=1.0)
        now = time.time()
        for conn in ready:
            w = workers[conn]
            try:
                msg = conn.recv()
            except (EOFError, OSError):
                w["proc"].join(timeout=5)
                code = w["proc"].exitcode
                lost(conn, f"the device worker died (exit code {code}) while running it: the probe faulted or the "
                           "driver failed")
                continue
            w["last"] = now
            kind = msg[0]
            if kind == "info":
                if msg[1] not in res.devices:
                    res.devices.append(msg[1])
            elif kind == "fatal":
                res.fatal = msg[1]
                workers.pop(conn)
                w["proc"].join(timeout=10)
            elif kind == "start":
                w["running"] = msg[1:]
                w["at"] = msg[3]
                seeds_seen.add(msg[2])
            elif kind == "restart":  # the worker reported its failure and leaves: its device may be unusable
                w["running"] = None
                lost(conn, None)
            elif kind == "unsupported":
                res.unsupported[msg[1]] = msg[2]
                w["running"] = None
            elif kind == "done":
                _, vid, seed, done, stages, failures = msg
                w["running"] = None
                res.runs += 1
                res.failed_runs += bool(failures)
                res.cases += done
                fam = family_name[vid]
                res.by_family[fam] = res.by_family.get(fam, 0) + done
                for k, s in stages.items():
                    res.stages_s[k] = res.stages_s.get(k, 0.0) + s
                res.failures.extend(failures)
            elif kind == "end":
                workers.pop(conn)
                w["proc"].join(timeout=10)
        for conn, w in list(workers.items()):
            if now - w["last"] > HANG_S:
                w["proc"].kill()
                lost(conn, f"the device worker was silent for {HANG_S:g} s while running it (a hang?); killed")
        res.seconds = time.time() - t0
        if on_progress and now - last_progress >= 5.0:
            last_progress = now
            on_progress(res)
    res.seeds = len(seeds_seen)
    res.seconds = time.time() - t0
    return res
