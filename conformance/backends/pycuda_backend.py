"""The PyCUDA backend: JIT each module with the driver and launch each batch once.

The CUDA context lives in a child process (:mod:`._cuda_worker`): a kernel
that faults (illegal instruction, misaligned address, trap) or hangs past the
timeout costs one launch, not the run.  PyCUDA is imported only in the child,
so this module imports on machines with no CUDA at all.
"""

from __future__ import annotations

import hashlib
import multiprocessing as mp
import shutil
import subprocess
import time

from conformance.spec.targets import PtxVersion

from .base import Backend, BackendError, Launch, LaunchResult


def gpu_available() -> tuple[bool, str]:
    """(True, why) when PyCUDA imports and a device answers; never raises."""
    try:
        import pycuda.driver as cuda  # noqa: F401
    except Exception as exc:  # ImportError, or a broken CUDA install
        return False, f"PyCUDA not importable ({type(exc).__name__}: {exc}); using the NumPy emulator"
    try:
        cuda.init()
        n = cuda.Device.count()
    except Exception as exc:
        return False, f"no CUDA driver or device ({exc}); using the NumPy emulator"
    if n == 0:
        return False, "no CUDA device; using the NumPy emulator"
    return True, f"{n} CUDA device(s); using PyCUDA"


def ptxas_version() -> str:
    exe = shutil.which("ptxas")
    if not exe:
        return "not on PATH"
    out = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout.strip().splitlines()
    release = [line for line in out if "release" in line]
    return (release or out or ["unknown"])[-1].strip()


class PyCudaBackend(Backend):
    name = "pycuda"

    def __init__(self, timeout_s: float = 20.0, auto_reason: str | None = None, jit_timeout_s: float = 300.0):
        self.timeout_s = timeout_s
        self.jit_timeout_s = jit_timeout_s
        self.jit_seconds = 0.0
        self.auto_reason = auto_reason
        self._ctx = mp.get_context("spawn")
        self._proc = None
        self._conn = None
        self._info: dict | None = None
        self.restarts = 0
        self._loaded: set[str] = set()

    def _start(self) -> None:
        from . import _cuda_worker

        parent, child = self._ctx.Pipe()
        self._proc = self._ctx.Process(target=_cuda_worker.serve, args=(child,), daemon=True)
        self._proc.start()
        self._conn = parent

    def _stop(self, kill: bool = False) -> None:
        if self._proc is None:
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
        self._loaded.clear()

    def _call(self, msg, timeout: float):
        if self._proc is None:
            self._start()
        self._conn.send(msg)
        if not self._conn.poll(timeout):
            self._stop(kill=True)
            self.restarts += 1
            return ("error", f"timed out after {timeout:g} s (kernel hung?); worker restarted", True)
        try:
            reply = self._conn.recv()
        except EOFError:
            self._stop(kill=True)
            self.restarts += 1
            return ("error", "the GPU worker died (fault in the driver?); worker restarted", True)
        if reply[0] == "error" and reply[2]:
            self._stop(kill=True)
            self.restarts += 1
        return reply

    def info(self) -> dict:
        if self._info is None:
            reply = self._call(("info",), 120)
            if reply[0] != "ok":
                raise BackendError(f"cannot query the GPU: {reply[1]}")
            self._info = {"backend": self.name, **reply[1], "ptxas": ptxas_version()}
            if self.auto_reason:
                self._info["auto"] = self.auto_reason
        return self._info

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

    def run(self, module: str | bytes, launches: list[Launch]) -> list[LaunchResult]:
        results = []
        key = self._key(module)
        for launch in launches:
            t0 = time.perf_counter()
            error = self._load(module)
            if error:
                results.append(LaunchResult(None, error=error, seconds=time.perf_counter() - t0))
                continue
            reply = self._call(
                ("launch", key, launch.probe.name, launch.in_words, launch.out_words, launch.order, launch.warps_per_block),
                self.timeout_s,
            )
            dt = time.perf_counter() - t0
            if reply[0] == "ok":
                results.append(LaunchResult(reply[1], seconds=dt, info=reply[2]))
            else:
                results.append(LaunchResult(None, error=reply[1], seconds=dt))
        return results

    def close(self) -> None:
        self._stop()
