"""The suite's value checks drawn, run and compared on the device (``ptxconf run --values device``).

Why: planned on the host, a variant's value check is most of what the host spends on it (drawing and packing
its matrices, predicting the words, comparing, saving every word of every case), per case; the device does all
of that for its family's bulk cases (:mod:`ptxconf.core.bulk`), whose cost is per check (each draw is many small
kernels), not per case: a run checks far more cases (on one H200, the whole suite 1.2 million against 88 thousand,
in 11.6 s against the host's 5.1-5.3 s).  The value check of a variant whose family draws bulk cases is then the
bulk stream's cases ``0 .. n-1`` at the run's seed: drawn, launched and compared where the device's array module
runs (CuPy on a GPU, NumPy for the emulator), in worker processes of their own beside the run's pipeline.

What stays of a case is what a replay needs to trust it: a digest of its defined out words
(:func:`~ptxconf.core.bulk.case_digests`), one for all the cases' input words, and the words of the first cases
that differ.  ``ptxconf replay`` draws the cases again on the host and checks every digest against today's
prediction; ``ptxconf fuzz case`` runs any one case again, alone, on any backend.  A worker that dies or hangs
makes the variant it ran one error, and a fresh worker goes on after it.
"""

from __future__ import annotations

import base64
import multiprocessing as mp
import os
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from multiprocessing.connection import wait
from typing import Any

import numpy as np
from ptxconf.core.bulk import bulk_record, case_digests
from ptxconf.core.family import Family, family_of
from ptxconf.core.lifetime import die_with_parent, ignore_stop_signals, name_process
from ptxconf.core.plan import support_reason
from ptxconf.core.verdict import Verdict
from ptxconf.isa.targets import PtxVersion

from .bulkfuzz import batch_for, cases_differ, launch_drawn, replay_case_command
from .observations import why

__all__ = ["CHECK", "DeviceValue", "DeviceValues", "drawn_on_device", "replay_record", "replay_records", "value_check",
           "SHOWN", "HANG_S"]

CHECK = "value"  # the verdict the device's cases make: the host's value check, made elsewhere
SHOWN = 4  # differing cases whose words are kept (the first ones): the comparator explains them in a replay
HANG_S = 120.0  # a worker silent this long is killed: the variant it ran is an error
_PASSED = "{n} cases drawn, run and compared on the device"


def drawn_on_device(v: Any) -> bool:
    """Whether ``v``'s family draws bulk cases at all (a variant may still have none: its worker says why)."""
    return type(family_of(v)).bulk_cases is not Family.bulk_cases


@dataclass
class DeviceValue:
    """One variant's value check as the device made it: the verdict, and what a replay needs to check it again."""

    verdict: Verdict
    cases: int = 0
    record: dict | None = None  # its line of the device value records (None: nothing ran, an error before a launch)
    seconds: float = 0.0
    cpu: float = 0.0  # the worker's CPU seconds since its last variant (drawing, launching, building meanwhile)


def _b64(a: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(a, dtype="<u4").tobytes()).decode()


def _words(text: str, shape: list[int]) -> np.ndarray:
    return np.frombuffer(base64.b64decode(text), dtype="<u4").reshape(shape).astype(np.uint32)


def _failed(v: Any, seed: int, why: str, backend: str) -> Verdict:
    return Verdict(v.id, CHECK, seed, "error", message=why, replay=replay_case_command(v.id, seed, 0, backend))


def _explained(bc: Any, nbad: int, n: int, first: int, in_rows: np.ndarray, out_rows: np.ndarray,
               backend: str) -> Verdict:
    """The family comparator's verdict on the first differing case, counted over all of them."""
    v = bc.variant
    vd = family_of(v).compare(v, bulk_record(bc, in_rows, out_rows))
    head = f"{nbad} of {n} cases differ on the device (case {first}, shown below as case 0)"
    if vd.status == "pass":
        vd.message = f"{head}: words differ from the bulk prediction that the comparator passes"
    else:
        vd.message = f"{head}: {vd.message}"
    vd.status = "fail" if vd.status == "pass" else vd.status
    vd.check, vd.seed, vd.replay = bc.check, bc.seed, replay_case_command(v.id, bc.seed, first, backend, bc.check)
    return vd


def value_check(device: Any, bc: Any, module: Any, n: int, backend: str, cc: tuple[int, int], max_ptx: PtxVersion
                ) -> DeviceValue:
    """Cases ``0 .. n-1`` of ``bc`` (made for a GPU of ``cc`` and a loader of ``max_ptx``, which pick its build) on
    ``device``: drawn, launched, compared and digested there, in batches."""
    xp = device.xp
    host = (lambda a: a) if xp is np else (lambda a: a.get())
    v = bc.variant
    t0 = time.perf_counter()
    digests, in_digest, differing, shown = [], 0, [], []
    batch = batch_for(bc, n, xp)
    for first in range(0, n, batch):
        k = min(batch, n - first)
        drawn = bc.draw(xp, first, k)
        out = launch_drawn(device, bc, module, drawn, first)
        bad = cases_differ(xp, out.reshape(k, -1), drawn.expected.reshape(k, -1), drawn.defined.reshape(1, -1))
        # One copy back (one wait on the device): the cases' digests, the inputs' digest, how many cases differ.
        packed = host(xp.concatenate([case_digests(xp, out, drawn.defined),
                                      case_digests(xp, drawn.in_words, None).sum(dtype=xp.uint64)[None],
                                      bad.sum(dtype=xp.uint64)[None]]))
        digests.append(packed[:k])
        in_digest += int(packed[k])
        if not packed[k + 1]:
            continue
        idx = host(xp.nonzero(bad)[0])
        differing += [first + int(i) for i in idx]
        room = SHOWN - len(shown)
        if room > 0:
            pick = xp.asarray(idx[:room])
            shown += list(zip([first + int(i) for i in idx[:room]], host(drawn.in_words[pick]), host(out[pick])))
    device.synchronize()
    record = {"variant": v.id, "check": bc.check, "seed": bc.seed, "cases": n, "cc": list(cc), "max_ptx": str(max_ptx),
              "target": bc.target.name,
              "version": str(bc.version), "in_digest": f"{in_digest % (1 << 64):016x}",
              "digests": base64.b64encode(np.concatenate(digests).astype("<u8").tobytes()).decode(),
              "differing": differing[:1000], "differing_count": len(differing),
              "shown": [{"case": c, "in": _b64(i), "out": _b64(o), "in_shape": list(i.shape), "out_shape": list(o.shape)}
                        for c, i, o in shown]}
    if differing:
        c, i, o = shown[0]
        verdict = _explained(bc, len(differing), n, c, i[None], o[None], backend)
    else:
        verdict = Verdict(v.id, bc.check, bc.seed, "pass", message=_PASSED.format(n=n))
    return DeviceValue(verdict, n, record, time.perf_counter() - t0)


# --- the workers -----------------------------------------------------------------------------------------------------


def _prepare(device: Any, v: Any, seed: int, cc: tuple[int, int], max_ptx: PtxVersion) -> tuple[list, Any]:
    """(the value check's bulk cases, one module of their kernels built): in a build thread, so that ptxas runs
    while the device works."""
    fam = family_of(v)
    bcs = fam.bulk_value_cases(v, seed, cc, max_ptx)
    return bcs, device.build(fam.module_source([bc.probe for bc in bcs], bcs[0].version, bcs[0].target))


def _serve(parent: int, conn: Any, make_device: Callable[[], Any], variants: list[Any], todo: list[int], seed: int,
           cases: int, backend: str, builders: int) -> None:
    """A worker: the variants ``todo`` (indices into ``variants``) in turn; a message to the parent for each."""
    die_with_parent(parent)
    ignore_stop_signals()
    name_process("device")
    try:
        device = make_device()
        conn.send(("info", device.info()))
    except Exception as exc:  # noqa: BLE001 - no CuPy, no GPU, no ptxas: the run says why, once
        conn.send(("fatal", f"{type(exc).__name__}: {exc}"))
        return
    cc, max_ptx = device.compute_capability(), device.max_ptx()
    cc_for = getattr(device, "cc_for", lambda v: cc)  # the emulator stands in for each family's own GPU
    builder = ThreadPoolExecutor(builders)
    ahead: deque = deque()
    rest = iter(todo)
    cpu = [time.process_time()]

    def send(i: int, results: list[DeviceValue]) -> None:
        now = time.process_time()
        results[0].cpu, cpu[0] = now - cpu[0], now
        conn.send(("done", i, results))

    try:
        while True:
            while len(ahead) < 2 * builders + 1 and (i := next(rest, None)) is not None:
                v = variants[i]
                why = support_reason(v, cc_for(v), max_ptx)
                ahead.append((i, why, None if why else builder.submit(_prepare, device, v, seed, cc_for(v), max_ptx)))
            if not ahead:
                break
            i, why, job = ahead.popleft()
            v = variants[i]
            if why:  # this GPU (or loader) cannot run it: skipped, as the run skips the checks it plans
                send(i, [DeviceValue(Verdict(v.id, CHECK, seed, "skip", message=why))])
                continue
            conn.send(("start", i))
            try:
                bcs, image = job.result()
            except NotImplementedError as exc:
                send(i, [DeviceValue(Verdict(v.id, CHECK, seed, "skip", message=(
                    f"no value cases drawn on the device: {exc}; --values host checks it on the host")))])
                continue
            except Exception as exc:  # noqa: BLE001 - a module that does not build is this variant's error
                send(i, [DeviceValue(_failed(v, seed, f"{type(exc).__name__}: {exc}", backend))])
                continue
            try:
                module = device.load(image)
                results = [value_check(device, bc, module, cases, backend, cc_for(v), max_ptx) for bc in bcs]
            except Exception as exc:  # noqa: BLE001 - a launch error may leave the device unusable: report, leave
                send(i, [DeviceValue(_failed(v, seed, f"{type(exc).__name__}: {str(exc)[:500]}", backend))])
                conn.send(("restart",))
                return
            send(i, results)
        conn.send(("end",))
    finally:
        builder.shutdown(wait=False, cancel_futures=True)
        device.close()


@dataclass
class _Worker:
    proc: Any
    device: int  # the GPU it drives (a fresh worker after it drives the same)
    rest: deque  # indices not yet reported, in order
    running: int | None = None
    last: float = field(default_factory=time.monotonic)


class DeviceValues:
    """The value checks of ``variants`` at ``seed``, ``cases`` each, run by ``per_device`` workers on each of
    ``devices`` (``make_device(ordinal)`` opens one inside its worker).  Started by :meth:`start`; :meth:`ready`
    gives each variant's results (its value checks, one per kernel of the value check) as they come in (without
    waiting, or until every variant is done); :meth:`close` ends the workers.  Every variant gives its results:
    one that the GPU cannot run, or that has no bulk cases, a skip."""

    def __init__(self, make_device: Callable[[int], Any], devices: list[int], variants: list[Any], seed: int, cases: int,
                 per_device: int, backend: str):
        self.make_device, self.variants, self.seed, self.cases, self.backend = make_device, variants, seed, cases, backend
        self.slots = [d for d in devices for _ in range(max(1, per_device))]
        self.workers: dict[Any, _Worker] = {}
        self.fatal: str | None = None
        self.info: list[dict] = []
        self.restarts = 0
        self._ctx = mp.get_context("fork")
        self._builders = max(1, (os.cpu_count() or 2) // (2 * len(self.slots)))

    def start(self) -> DeviceValues:
        """Fork the workers (from the run's main thread, before anything there starts CUDA), each with its share."""
        for j, d in enumerate(self.slots):
            self._spawn(d, deque(range(j, len(self.variants), len(self.slots))))
        return self

    def _spawn(self, device: int, rest: deque) -> None:
        if not rest:
            return
        parent, child = self._ctx.Pipe()
        proc = self._ctx.Process(target=_serve, args=(os.getpid(), child, lambda: self.make_device(device), self.variants,
                                                      list(rest), self.seed, self.cases, self.backend, self._builders),
                                 daemon=True)
        proc.start()
        child.close()
        self.workers[parent] = _Worker(proc, device, rest)

    def ready(self, wait_all: bool = False, stop: Callable[[], bool] = lambda: False) -> Iterator[list[DeviceValue]]:
        """The results that have come in; with ``wait_all``, every one, until the workers end (or ``stop()``)."""
        while self.workers:
            if wait_all and stop():
                return
            conns = wait(list(self.workers), timeout=0.2 if wait_all else 0)
            for conn in conns:
                yield from self._receive(conn)
            now = time.monotonic()
            for conn, w in list(self.workers.items()):
                if now - w.last > HANG_S:
                    w.proc.kill()
                    yield from self._lost(conn, f"the device worker was silent for {HANG_S:g} s while running it "
                                                "(a hang?); killed")
            if not wait_all:
                return

    def _receive(self, conn: Any) -> Iterator[list[DeviceValue]]:
        w = self.workers[conn]
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            w.proc.join(timeout=5)
            yield from self._lost(conn, f"the device worker died (exit code {w.proc.exitcode}) while running it: the "
                                        "probe faulted or the driver failed")
            return
        w.last = time.monotonic()
        kind = msg[0]
        if kind == "info":
            self.info.append(msg[1])
        elif kind == "fatal":
            self.fatal = msg[1]
            self._end(conn)
            for i in w.rest:  # no device at all: every variant of its share is an error saying why
                yield [DeviceValue(_failed(self.variants[i], self.seed, f"no device for the value check: {msg[1]}",
                                           self.backend))]
        elif kind == "start":
            w.running = msg[1]
        elif kind == "done":
            w.running = None
            if w.rest and w.rest[0] == msg[1]:
                w.rest.popleft()
            yield msg[2]
        elif kind == "restart":  # it reported its error and leaves: its device may be unusable
            self._end(conn)
            self.restarts += 1
            self._spawn(w.device, w.rest)
        elif kind == "end":
            self._end(conn)

    def _lost(self, conn: Any, why: str) -> Iterator[list[DeviceValue]]:
        """A worker gone before its end: the variant it ran is an error; a fresh worker takes the rest of its share."""
        w = self.workers[conn]
        self._end(conn)
        if w.running is not None:
            i = w.rest.popleft() if w.rest and w.rest[0] == w.running else w.running
            yield [DeviceValue(_failed(self.variants[i], self.seed, why, self.backend))]
        self.restarts += 1
        self._spawn(w.device, w.rest)

    def _end(self, conn: Any) -> None:
        w = self.workers.pop(conn)
        w.proc.join(timeout=10)
        if w.proc.is_alive():
            w.proc.kill()
            w.proc.join(timeout=5)
        conn.close()

    def close(self) -> None:
        """End every worker now (a stopped run): what they had not reported is not run."""
        for conn in list(self.workers):
            self.workers[conn].proc.kill()
            self._end(conn)


# --- the records and their replay ------------------------------------------------------------------------------------


def replay_record(specs: Any, rec: dict) -> Verdict:
    """A recorded device value check under today's specs: its cases drawn again on the host, each case's digest
    against the one the device's words gave, the kept words of differing cases through the comparator."""
    v = specs.variants[rec["variant"]]
    fam = family_of(v)
    seed, n = int(rec["seed"]), int(rec["cases"])
    cc = tuple(int(x) for x in rec["cc"])
    bcs = [bc for bc in fam.bulk_value_cases(v, seed, (cc[0], cc[1]), PtxVersion.parse(rec["max_ptx"]))
           if bc.check == rec["check"]]
    if not bcs:
        return Verdict(v.id, rec["check"], seed, "error", message=(
            f"today's value check of the form has no {rec['check']} (its kernels changed): the recorded words cannot "
            "be checked; run the check again"))
    bc = bcs[0]
    if (bc.target.name, str(bc.version)) != (rec["target"], rec["version"]):
        return Verdict(v.id, bc.check, seed, "error", message=(
            f"the build pick no longer gives the recorded {rec['target']}, .version {rec['version']} (now "
            f"{bc.target.name}, .version {bc.version}): the recorded words cannot be checked; run the check again"))
    recorded = np.frombuffer(base64.b64decode(rec["digests"]), dtype="<u8").astype(np.uint64)
    if len(recorded) != n:
        raise ValueError(f"{len(recorded)} digests for {n} cases")
    digests, in_digest = [], 0
    batch = batch_for(bc, n)
    for first in range(0, n, batch):
        k = min(batch, n - first)
        drawn = bc.draw(np, first, k)
        digests.append(case_digests(np, drawn.expected, drawn.defined))
        in_digest += int(case_digests(np, drawn.in_words, None).sum(dtype=np.uint64))
    if f"{in_digest % (1 << 64):016x}" != rec["in_digest"]:
        return Verdict(v.id, bc.check, seed, "error", message=(
            "the bulk stream no longer draws the recorded inputs (their digest differs): the recorded words cannot be "
            "checked against today's prediction; run the check again"))
    differ = np.nonzero(np.concatenate(digests) != recorded)[0]
    if not len(differ):
        return Verdict(v.id, bc.check, seed, "pass", message=_PASSED.format(n=n) + " (replayed from their digests)")
    shown = {int(s["case"]): s for s in rec.get("shown", [])}
    for c in differ:
        if int(c) in shown:
            s = shown[int(c)]
            return _explained(bc, len(differ), n, int(c), _words(s["in"], s["in_shape"])[None],
                              _words(s["out"], s["out_shape"])[None], "auto")
    first = int(differ[0])
    return Verdict(v.id, bc.check, seed, "fail", replay=replay_case_command(v.id, seed, first, "auto", bc.check),
                   message=(
        f"{len(differ)} of {n} cases: the device's words differ from today's prediction (their digests; first: case "
        f"{first}, whose words were not kept): run it again to see them element by element"))



_REPLAYING: list = []  # (specs, records) of the replay that forked the pool: inherited, never pickled


def _replay_one(i: int) -> Verdict | str:
    specs, recs = _REPLAYING[0]
    try:
        return replay_record(specs, recs[i])
    except Exception as exc:  # noqa: BLE001 - a record this variant's draw cannot use: that record's error
        return why(exc)


def _one_blas_thread() -> None:
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)


def replay_records(specs: Any, recs: list[dict], jobs: int) -> list[Verdict | str]:
    """:func:`replay_record` of each of ``recs`` (its verdict, or why it cannot be replayed), in ``jobs`` forked
    processes: drawing a run's cases again and predicting their words is most of a replay (a quarter of a second a
    check at 256 cases of a large wgmma form)."""
    _REPLAYING[:] = [(specs, recs)]
    try:
        if jobs <= 1 or len(recs) < 2:
            return [_replay_one(i) for i in range(len(recs))]
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(min(jobs, len(recs)), mp_context=mp.get_context("fork"),
                                 initializer=_one_blas_thread) as pool:
            return list(pool.map(_replay_one, range(len(recs)), chunksize=4))
    finally:
        _REPLAYING.clear()
