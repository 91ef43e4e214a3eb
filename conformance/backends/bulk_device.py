"""Where bulk cases run: a CUDA device through CuPy (arrays stay on the GPU), or the emulator on NumPy.

Both take the family's own probe module and kernel, the words the family drew on the same array
module, and return the words the kernel wrote; the bulk fuzzer compares on that module too.  The
CUDA device runs in a process of its own (the fuzzer forks one per GPU): a fault poisons only it.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from ptxconf.isa.targets import PtxVersion

__all__ = ["CupyDevice", "EmulatedDevice", "BulkDeviceError", "cuda_devices"]


def cuda_devices() -> tuple[int, str]:
    """(CUDA devices CuPy sees, why none), asked of a short-lived process: the fuzzer's own process must not start
    CUDA before it forks its device workers."""
    import subprocess
    import sys

    code = "import cupy; print(cupy.cuda.runtime.getDeviceCount())"
    try:
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError) as exc:
        return 0, str(exc)
    out = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not out or not out[-1].isdigit():
        return 0, "no CuPy or no CUDA driver: " + (proc.stderr.strip().splitlines() or ["no output"])[-1]
    return int(out[-1]), "" if int(out[-1]) else "no CUDA device"


class BulkDeviceError(RuntimeError):
    """The device cannot run bulk cases at all (no CuPy, no GPU, no ptxas)."""


class CupyDevice:
    """One GPU through CuPy: probe modules built by ptxas (cached), loaded as cubins, launched on device arrays."""

    name = "gpu"

    def __init__(self, device: int = 0, ptxas: str | None = None, use_cache: bool = True,
                 max_ptx: PtxVersion | None = None):
        try:
            import cupy as cp
        except Exception as exc:  # noqa: BLE001 - any import failure means no GPU path here
            raise BulkDeviceError(f"CuPy is not importable ({type(exc).__name__}: {exc})") from None
        from .ptxas import PtxasNotFound, find_ptxas, ptxas_info

        try:
            self._ptxas = find_ptxas(ptxas)
            self._ptxas_info = ptxas_info(self._ptxas)
        except PtxasNotFound as exc:
            raise BulkDeviceError(str(exc)) from None
        self.xp = cp
        self.device = device
        cp.cuda.Device(device).use()
        self._use_cache = use_cache
        self._modules: dict[str, Any] = {}
        self._tmp = Path(tempfile.mkdtemp(prefix="ptxconf-bulk-"))
        atexit.register(shutil.rmtree, self._tmp, True)  # a worker process instead calls close()
        self.build_seconds = 0.0
        self._max_ptx = max_ptx  # a run's loader limit, where it holds builds to the one its own backend takes

    def compute_capability(self) -> tuple[int, int]:
        cc = self.xp.cuda.Device(self.device).compute_capability
        return int(cc[:-1]), int(cc[-1])

    def max_ptx(self) -> PtxVersion:
        return min(self._ptxas_info["max_ptx"], self._max_ptx or self._ptxas_info["max_ptx"])

    def info(self) -> dict:
        cp = self.xp
        props = cp.cuda.runtime.getDeviceProperties(self.device)
        drv = cp.cuda.runtime.driverGetVersion()
        return {"gpu": props["name"].decode(), "compute_capability": "{}.{}".format(*self.compute_capability()),
                "cuda_driver_api": f"{drv // 1000}.{(drv % 1000) // 10}", "cupy": cp.__version__,
                "ptxas": self._ptxas_info["ptxas"], "device": self.device}

    def build(self, source: str) -> bytes:
        """The cubin of a probe module (ptxas at ``-arch`` of this GPU), from the cache when it was built before."""
        from .ptxas import compile_cubin

        major, minor = self.compute_capability()
        arch = f"sm_{major}{minor}" + ("a" if major >= 9 else "")
        t0 = time.perf_counter()
        cubin, err = compile_cubin(source, arch, self._ptxas, use_cache=self._use_cache)
        self.build_seconds += time.perf_counter() - t0
        if cubin is None:
            raise RuntimeError(f"ptxas refused the probe module: {err}")
        return cubin

    def load(self, cubin: bytes) -> Any:
        """The loaded module (CuPy loads a path lazily, at the first kernel looked up: the file stays until then,
        and the last few modules stay loaded)."""
        import hashlib

        key = hashlib.sha256(cubin).hexdigest()
        if key not in self._modules:
            path = self._tmp / f"{key[:16]}.cubin"
            path.write_bytes(cubin)
            self._modules[key] = (self.xp.RawModule(path=str(path)), path)
            while len(self._modules) > 64:
                old = next(iter(self._modules))
                _, old_path = self._modules.pop(old)
                old_path.unlink(missing_ok=True)
        return self._modules[key][0]

    def launch(self, module: Any, probe: Any, in_words: Any, out_words: int, order: Any, warps_per_block: int) -> Any:
        cp = self.xp
        n, lanes = in_words.shape[0], in_words.shape[1]
        out = cp.zeros((n, lanes, out_words), dtype=cp.uint32)
        fn = module.get_function(probe.name)
        blocks = (len(order) + warps_per_block - 1) // warps_per_block
        fn((blocks,), (lanes * warps_per_block,), (in_words, out, order.astype(cp.uint32), np.uint32(len(order))))
        return out

    def synchronize(self) -> None:
        self.xp.cuda.Device(self.device).synchronize()

    def close(self) -> None:
        self._modules.clear()
        shutil.rmtree(self._tmp, ignore_errors=True)


class EmulatedDevice:
    """The emulator as a bulk device: the family's ``emulate`` on NumPy words (CPU tests, and replay anywhere)."""

    name = "emulator"

    def __init__(self, semantics: Any = None, cc: tuple[int, int] = (9, 0), max_ptx: PtxVersion | None = None,
                 arithmetic: Any = None):
        from .emulator import EmulatorBackend

        if semantics is None:
            from ptxconf.oracle import mma as semantics
        self._emulator = EmulatorBackend(semantics=semantics, cc=cc, arithmetic=arithmetic)
        self.xp = np
        self._cc, self._max_ptx = cc, max_ptx or PtxVersion(9, 0)
        self.build_seconds = 0.0

    def compute_capability(self) -> tuple[int, int]:
        return self._cc

    def cc_for(self, v: Any) -> tuple[int, int]:
        """The GPU emulated for ``v`` (a family whose every form is one GPU's, as wgmma's sm_90a, emulates that one)."""
        return self._emulator.cc_for(v)

    def max_ptx(self) -> PtxVersion:
        return self._max_ptx

    def info(self) -> dict:
        return {"gpu": "emulator", "compute_capability": "{}.{}".format(*self._cc)}

    def build(self, source: str) -> str:
        return source

    def load(self, module: str) -> str:
        return module

    def launch(self, module: Any, probe: Any, in_words: Any, out_words: int, order: Any, warps_per_block: int) -> Any:
        from ptxconf.core.family import family_of

        return family_of(probe.variant).emulate(probe, in_words, out_words, self._emulator)

    def synchronize(self) -> None:
        pass

    def close(self) -> None:
        pass
