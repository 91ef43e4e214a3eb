"""The PyCUDA backend: build each module once, launch a module's batches in one round trip.

The CUDA context lives in a child process (:mod:`._cuda_worker`): a kernel
that faults (illegal instruction, misaligned address, trap) or hangs past the
timeout costs one launch, not the run (a batch that faults is re-run launch by
launch).  PyCUDA is imported only in the child, so this module imports on
machines with no CUDA at all.

Two build paths, selectable because checking the JIT is part of the job:
``jit`` hands the PTX to the driver; ``ptxas`` assembles with ptxas for the GPU's
own architecture in a pool of processes while earlier modules run, cached on disk
by (ptxas version, arch, PTX hash), and loads the cubin.  ``auto`` takes ptxas
when one is found.  The run's properties say which path built how many modules.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import signal
import subprocess
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

from ptxconf.core import shared
from ptxconf.isa.targets import PtxVersion

from . import _spawn
from ._cuda_worker import NO_GPU, start_cuda
from .base import Backend, BackendError, Launch, LaunchResult, NoGpu


class _Abandoned(Exception):
    """A module's build was still running when the run stopped."""


LaunchItem = tuple  # (kernel, words, gather rows | None, out words, order, warps per block, into | None, into rows)


def _wire(launches: list[Launch]) -> tuple[list[LaunchItem], list]:
    """What crosses the pipe to the GPU worker, and the shared copies made for it (release them after the call).

    Words the run shares travel as file references (the worker gathers a launch's rows itself) and out words go
    straight into the run's shared buffer; anything else travels by value, as the launch's own rows."""
    batch, made, of = [], [], {}
    for lc in launches:
        words, gather = None, None
        if lc.rows is not None:
            whole = of.get(id(lc.in_words))
            if whole is None:
                whole = of[id(lc.in_words)] = shared.share(lc.in_words)
                if whole is not lc.in_words and shared.is_shared(whole):
                    made.append(whole)
            if shared.is_shared(whole):
                words, gather = whole, lc.rows
        if words is None:  # by value: only then are the launch's rows copied out here
            words = lc.words()
        into = lc.into if lc.rows is not None and shared.is_shared(lc.into) else None
        batch.append((lc.probe.name, words, gather, lc.out_words, lc.order, lc.warps_per_block, into, lc.rows))
    return batch, made


ON_EMULATOR = "; using the NumPy emulator"  # how ``auto``'s reason ends where no GPU answers


def gpu_available() -> tuple[bool, str]:
    """(True, why) when PyCUDA imports and a device answers (CUDA started in this process); never raises."""
    cuda, count = start_cuda()
    return (False, f"{count}{ON_EMULATOR}") if cuda is None else (True, on_pycuda(count))


def on_pycuda(count: int) -> str:
    """``auto``'s reason where a GPU answered: how many devices CUDA sees."""
    return f"{count} CUDA device(s); using PyCUDA"


def device_count() -> int:
    """CUDA devices this process sees (0 without PyCUDA or a driver), CUDA started here."""
    cuda, count = start_cuda()
    return 0 if cuda is None else count


def ptxas_version(exe: str | None = None) -> str:
    """The ``--version`` line of ``exe`` (default: the ptxas on PATH) that names its release."""
    exe = exe or shutil.which("ptxas")
    if not exe:
        return "not on PATH"
    out = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout.strip().splitlines()
    release = [line for line in out if "release" in line]
    return (release or out or ["unknown"])[-1].strip()


class PyCudaBackend(Backend):
    name = "pycuda"

    def __init__(self, timeout_s: float = 20.0, auto_reason: str | None = None, jit_timeout_s: float = 300.0,
                 build: str = "auto", use_cache: bool = True, ptxas: str | None = None, device: int = 0,
                 builds_from: PyCudaBackend | None = None, auto_from_worker: bool = False):
        self.build = build
        self.device = device  # the CUDA ordinal the worker opens
        self.use_cache = use_cache
        if ptxas and build == "jit":
            raise BackendError("--ptxas builds cubins: give --build auto or ptxas, not jit")
        self._ptxas = (ptxas or shutil.which("ptxas")) if build in ("auto", "ptxas") else None  # ptxas: resolved path
        if build == "ptxas" and not self._ptxas:
            raise BackendError("--build ptxas: no ptxas on PATH")
        self._pool: ThreadPoolExecutor | None = None
        # Backends of one run on several GPUs share the builds: a module is assembled once, for whichever runs it.
        self._builds: dict[str, Future] = builds_from._builds if builds_from is not None else {}
        self._images: dict[str, str | bytes] = {}
        self.built_by: dict[str, int] = {}
        self.compile_seconds = 0.0
        self.timeout_s = timeout_s
        self.jit_timeout_s = jit_timeout_s
        self.jit_seconds = 0.0
        self.auto_reason = auto_reason
        # Made by ``auto`` with no CUDA started in this process: the worker's first answer is the check (NoGpu where
        # it failed), and ``auto``'s reason comes from its info.
        self.auto_from_worker = auto_from_worker
        self._no_gpu: str | None = None  # what a worker answered where it found no GPU: asked again, no new worker
        self._proc = None
        self._conn = None
        self._info: dict | None = None
        # A second backend of the same GPU (a lane more on it) takes the first one's answers: its own worker, started
        # with the others (:meth:`open`), is asked nothing before its lane runs.
        self._info_of = builds_from if builds_from is not None and builds_from.device == device else None
        self._info_lock = threading.Lock()  # a device set asks its members at once
        self.restarts = 0
        self._loaded: set[str] = set()
        self.worker_seconds: dict[str, float] = {}  # the GPU worker's batched launches, by step
        self._should_stop = None  # the run's stop request (set_stop)
        self._pinged = False  # a ping sent whose answer is still in the pipe
        self._moments: dict[str, float] = {}

    def _start(self) -> None:
        # the one ``ptxconf run`` started before anything else (:func:`._spawn.start_early`), else a new one
        self._proc, self._conn = _spawn.claim(self.device) or _spawn.start(self.device)
        self._owner = os.getpid()  # the process that may join it (a lane forked after open() only talks to it)

    def open(self) -> None:
        """The GPU worker started now: it starts CUDA (a second or two of CPU) while the run deals out and plans its
        first modules, not at the first launch.  A run on several lanes opens each lane's backend before it forks
        them (:meth:`handed_over`): opened in the lanes, on two H200s with eight lanes, the first launch waited 1.9-2.0
        s for its worker."""
        if self._proc is None:
            self._start()
            self._conn.send(("ping",))
            self._pinged = True

    def handed_over(self) -> None:
        """A lane forked after :meth:`open` talks to the worker now: this process closes its end of the pipe, and
        the worker ends with the lane's exit message (or with this process, its parent)."""
        if self._conn is not None:
            self._conn.close()
        self._proc = self._conn = None
        self._pinged = False

    def moments(self) -> dict[str, float]:
        return dict(self._moments)

    def _stop(self, kill: bool = False) -> None:
        if self._proc is None:
            return
        if os.getpid() != self._owner:  # the worker is the run's child, ours to use, not to join
            self._stop_handed(kill)
            return
        if kill:
            self._proc.kill()
        else:
            try:
                self._conn.send(("exit",))
            except (OSError, BrokenPipeError):
                pass
        self._proc.join(timeout=10)
        if self._proc.is_alive():
            self._proc.kill()
        self._proc = self._conn = None
        self._pinged = False
        self._loaded.clear()

    def _stop_handed(self, kill: bool) -> None:
        """:meth:`_stop` of a worker another process started: killed by pid, or told to exit and awaited on the pipe."""
        pid = self._proc.pid
        if not kill:
            with contextlib.suppress(OSError, BrokenPipeError):
                self._conn.send(("exit",))
            try:
                while self._conn.poll(10):  # the pipe closes as the worker leaves
                    self._conn.recv()
                kill = True  # still there after 10 s
            except (OSError, EOFError):
                pass
        with contextlib.suppress(OSError):
            if kill:
                os.kill(pid, signal.SIGKILL)
            self._conn.close()
        self._proc = self._conn = None
        self._pinged = False
        self._loaded.clear()

    def _call(self, msg, timeout: float):
        if self._proc is None:
            self._start()
        if self._pinged:  # the answer to open()'s ping first: when the worker was ready
            self._pinged = False
            reply = self._reply(timeout, f"the GPU worker did not start in {timeout:g} s",
                                "the GPU worker died as it started")
            if reply[0] != "ok":
                return self._ended_by(reply)
            self._moments.update(reply[1])
        self._conn.send(msg)
        return self._ended_by(self._reply(timeout, f"timed out after {timeout:g} s (kernel hung?)",
                                          "the GPU worker died (fault in the driver?)"))

    def _ended_by(self, reply):
        """``reply`` as it came, its worker ended where the reply ended it: a fault's (killed: the next call starts
        another) or a worker that found no GPU (it leaves by itself)."""
        if reply[0] == NO_GPU:
            self._stop()
        elif reply[0] == "error" and reply[2]:
            self._stop(kill=True)
            self.restarts += 1
        return reply

    def _reply(self, timeout: float, silent: str, died: str):
        """The worker's next answer; none in ``timeout`` (``silent``) or the pipe gone (``died``: a reset pipe is a
        death too) ends the worker and comes back as an error that restarted it."""
        try:
            if self._conn.poll(timeout):
                return self._conn.recv()
            why = silent
        except (EOFError, OSError):
            why = died
        self._stop(kill=True)
        self.restarts += 1
        return ("error", f"{why}; worker restarted", False)

    def info(self) -> dict:
        with self._info_lock:
            if self._info is None and self._info_of is not None:
                self._info = self._info_of.info()
            if self._info is None:
                self._info = self._asked_info()
        return self._info

    def _asked_info(self) -> dict:
        """What the GPU worker says of its device, with the build and toolkit facts."""
        if self._no_gpu is not None:
            raise NoGpu(self._no_gpu)
        reply = self._call(("info",), 120)
        if reply[0] == NO_GPU:
            self._no_gpu = reply[1]
            raise NoGpu(reply[1])
        if reply[0] != "ok":
            raise BackendError(f"cannot query the GPU: {reply[1]}")
        info = {"backend": self.name, **reply[1], "device": self.device, "ptxas": ptxas_version(self._ptxas),
                "build": "ptxas -arch=<GPU> (parallel, cached)" if self._ptxas else reply[1]["jit"]}
        why = on_pycuda(reply[1]["cuda_devices"]) if self.auto_from_worker else self.auto_reason
        if why:
            info["auto"] = why
        return info

    def compute_capability(self) -> tuple[int, int]:
        major, minor = self.info()["compute_capability"].split(".")
        return int(major), int(minor)

    def max_ptx(self) -> PtxVersion:
        drv = self.info().get("cuda_driver_api", "13.0")
        # CUDA 12.x drivers JIT PTX up to 8.x; CUDA 13.0 up to 9.0 (measured on the H100 here).
        major, minor = (int(x) for x in drv.split("."))
        return PtxVersion(9, 0) if major >= 13 else PtxVersion(8, min(minor, 8))

    @staticmethod
    def _key(module: str | bytes) -> str:
        return hashlib.sha256(module if isinstance(module, bytes) else module.encode()).hexdigest()

    def _load(self, module: str | bytes) -> str | None:
        """Load the module in the worker once (PTX is JIT-compiled; a cubin loads as built); the error text if it fails."""
        key = self._key(module)
        if key in self._loaded and self._proc is not None:
            return None
        reply = self._call(("load", key, module), self.jit_timeout_s)
        if reply[0] != "ok":
            return reply[1]
        self._loaded.add(key)
        self.jit_seconds += reply[1]
        return None

    def _arch(self) -> str:
        major, minor = self.compute_capability()
        return f"sm_{major}{minor}" + ("a" if major >= 9 else "")  # the arch-specific target runs every probe

    def prefetch(self, module: str) -> None:
        """Start building ``module`` in the background (ptxas path); the JIT path builds on first use."""
        if not self._ptxas or not isinstance(module, str):
            return
        key = self._key(module)
        if key in self._builds:
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1))
        from .ptxas import compile_cubin

        arch = self._arch()

        def build():
            t0 = time.perf_counter()
            cubin, err = compile_cubin(module, arch, self._ptxas, use_cache=self.use_cache)
            return cubin, err, time.perf_counter() - t0

        self._builds[key] = self._pool.submit(build)

    def _image(self, module: str | bytes) -> str | bytes:
        """What the worker loads: the cubin ptxas built, or the PTX for the driver's JIT."""
        if isinstance(module, bytes) or not self._ptxas:
            self.built_by["driver JIT" if isinstance(module, str) else "given cubin"] = \
                self.built_by.get("driver JIT" if isinstance(module, str) else "given cubin", 0) + 1
            return module
        self.prefetch(module)
        build = self._builds.pop(self._key(module))
        while True:  # the run may stop meanwhile: a module not built yet is then not run (nothing of it is lost)
            try:
                cubin, err, seconds = build.result(timeout=0.05)
                break
            except FutureTimeout:
                if self._should_stop is not None and self._should_stop():
                    raise _Abandoned from None
        self.compile_seconds += seconds
        if cubin is None:  # ptxas refused what the driver may take: the JIT decides, and the count says so
            self.built_by["driver JIT (ptxas refused)"] = self.built_by.get("driver JIT (ptxas refused)", 0) + 1
            return module
        self.built_by["ptxas"] = self.built_by.get("ptxas", 0) + 1
        return cubin

    def run(self, module: str | bytes, launches: list[Launch]) -> list[LaunchResult]:
        """Every launch of the module in one round trip; after a fault, launch by launch (one failed case each)."""
        key = self._key(module)
        t0 = time.perf_counter()
        if key not in self._loaded or self._proc is None:
            try:
                image = self._image(module)
            except _Abandoned:
                return [LaunchResult(None, error="not run: the run stopped while its module was being built",
                                     seconds=time.perf_counter() - t0, abandoned=True) for _ in launches]
            error = self._load_image(key, image)
            if error:
                return [LaunchResult(None, error=error, seconds=time.perf_counter() - t0) for _ in launches]
        batch, made = _wire(launches)
        try:
            return self._run_batch(key, launches, batch, t0)
        finally:
            shared.release(*made)

    def _run_batch(self, key: str, launches: list[Launch], batch: list[tuple], t0: float) -> list[LaunchResult]:
        reply = self._call(("launches", key, batch), self.timeout_s * max(1, len(batch)))
        if reply[0] == "ok":
            dt = (time.perf_counter() - t0) / max(1, len(batch))
            for _, info in reply[1]:
                for k, v in info.items():
                    if k != "kernel_s":
                        self.worker_seconds[k] = self.worker_seconds.get(k, 0.0) + v
            return [LaunchResult(out, seconds=dt, info=info) for out, info in reply[1]]
        results = []
        for item in batch:  # the batch failed: find the launch that faults, keep the others' results
            t1 = time.perf_counter()
            error = self._load_image(key, self._images[key]) if key not in self._loaded or self._proc is None else None
            if error:
                results.append(LaunchResult(None, error=error, seconds=time.perf_counter() - t1))
                continue
            r = self._call(("launch", key, *item), self.timeout_s)
            dt = time.perf_counter() - t1
            results.append(LaunchResult(r[1], seconds=dt, info=r[2]) if r[0] == "ok" else LaunchResult(None, error=r[1], seconds=dt))
        return results

    def _load_image(self, key: str, image: str | bytes) -> str | None:
        self._images[key] = image  # kept to reload after a fault restarts the worker
        reply = self._call(("load", key, image), self.jit_timeout_s)
        if reply[0] != "ok":
            return reply[1]
        self._loaded.add(key)
        self.jit_seconds += reply[1]
        return None

    def stats(self) -> dict:
        """Which path built how many modules, and the seconds spent building and loading them."""
        return {"modules_built_by": dict(self.built_by), "ptxas_seconds": round(self.compile_seconds, 3),
                "load_seconds": round(self.jit_seconds, 3),
                "launch_steps_s": {k: round(v, 3) for k, v in self.worker_seconds.items()}}

    def set_stop(self, stop) -> None:
        self._should_stop = stop

    def for_lane(self) -> PyCudaBackend:
        """The same device and builds for a lane process: this backend itself while nothing of it runs here but its
        GPU worker (the lane takes that over: :meth:`handed_over`; the worker that answered the run's first questions
        then runs a lane, and every lane's worker started with the run's, at once); else a backend of its own (its own
        GPU worker and compile pool: this one's threads are this process's)."""
        if self._pool is None:
            return self
        lane = PyCudaBackend(self.timeout_s, self.auto_reason, self.jit_timeout_s, self.build, self.use_cache,
                             self._ptxas, self.device, auto_from_worker=self.auto_from_worker)
        lane._info = self._info
        return lane

    def close(self) -> None:
        if self._pool is not None:  # builds ahead that will not be launched: queued ones dropped, running ones ended
            self._pool.shutdown(wait=False, cancel_futures=True)
            from .ptxas import cancel_builds

            cancel_builds()
        # a stopping run does not wait for the worker to leave (its CUDA context ends with it; nothing is in flight)
        self._stop(kill=self._should_stop is not None and self._should_stop())
