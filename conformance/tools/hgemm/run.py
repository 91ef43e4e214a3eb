"""Run the generated HGEMM kernels: exactness and error-bound checks against NumPy, timing beside CuPy.

Two checks per (variant, size):

* **exact**: ``A[i, k] = +-1`` where ``(i + k) % 8 == 0`` else 0, ``B`` integers in [-2, 2].  Every
  product is an integer of magnitude <= 2 and a row of A has at most ceil(K / 8) nonzeros, so every
  partial sum, in any order, is an integer of magnitude <= 2 * ceil(K / 8) <= 2048 for K <= 8192:
  exactly representable in f16 (11-bit significand) and bf16 inputs/f32 accumulators alike.
  The kernel's D must equal ``A @ B`` (NumPy, float64) bit for bit.
* **random**: ``A, B ~ U(-1, 1)`` rounded to the input type; reference ``A @ B`` in float64 from the
  rounded inputs, ``S = |A| @ |B|``.  Bound per element: ``ceil(K / 16) * 2**(2 - p) * S`` with ``p`` the
  accumulator's significand bits (24 for f32, 11 for f16): each of the K/16 mma steps rounds into
  the accumulator once (<= 1 ulp even if it truncates) and sums 16 products plus C inexactly
  (<= 1 more ulp); first-order error analysis adds the steps.  CuPy's error on the same inputs is
  reported beside it as a yardstick.

Sizes that are not block multiples are padded with zeros (and the padded shape is reported).
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import numpy as np
from ptxconf.isa.loader import Specs
from ptxconf.tools.hgemm import kernel as hg

DEFAULT_SIZES = "256x256x256,1000x1000x1000,1536x2560x777,4096x4096x4096"
ACC_BITS = {"f32": 24, "f16": 11}


def parse_sizes(text: str) -> list[tuple[int, int, int]]:
    out = []
    for part in text.split(","):
        try:
            m, n, k = (int(x) for x in part.lower().split("x"))
        except ValueError:
            raise hg.HgemmError(f"size {part!r}: want MxNxK, e.g. 1000x1000x1000") from None
        out.append((m, n, k))
    return out


# --- input types ----------------------------------------------------------------------------


def to_bf16_bits(x: np.ndarray) -> np.ndarray:
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16  # round to nearest even
    return u.astype(np.uint16)


def from_bf16_bits(b: np.ndarray) -> np.ndarray:
    return (b.astype(np.uint32) << 16).view(np.float32)


def encode(x: np.ndarray, typ: str) -> tuple[np.ndarray, np.ndarray]:
    """(bits as uint16, the float64 values those bits hold)."""
    if typ == "f16":
        h = x.astype(np.float16)
        return h.view(np.uint16), h.astype(np.float64)
    b = to_bf16_bits(x)
    return b, from_bf16_bits(b).astype(np.float64)


def exact_inputs(M: int, N: int, K: int, rng) -> tuple[np.ndarray, np.ndarray]:
    if K > 8192:
        raise hg.HgemmError(f"K={K}: the exact check's partial sums stay within 2048 only for K <= 8192")
    i, k = np.ogrid[:M, :K]
    A = np.where((i + k) % 8 == 0, rng.choice([-1.0, 1.0], size=(M, K)), 0.0)
    B = rng.integers(-2, 3, size=(K, N)).astype(np.float64)
    return A, B


# --- devices --------------------------------------------------------------------------------


class CupyDevice:
    """The GPU through CuPy: PTX loaded by the driver JIT (RawModule), baseline cupy.matmul."""

    def __init__(self, work: Path):
        import cupy

        self.cp = cupy
        self.work = work
        dev = cupy.cuda.Device()
        cc = dev.compute_capability
        self.arch = f"sm_{cc}"
        props = cupy.cuda.runtime.getDeviceProperties(dev.id)
        self.name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
        self._kernels: dict[str, object] = {}

    def info(self) -> dict:
        rt = self.cp.cuda.runtime
        drv = rt.driverGetVersion()
        return {
            "device": self.name,
            "arch": self.arch,
            "cupy": self.cp.__version__,
            "cuda_driver_api": f"{drv // 1000}.{(drv % 1000) // 10}",
            "jit": "CUDA driver PTX JIT (cupy.RawModule)",
            "driver": _nvidia_smi_driver(),
        }

    def kernel(self, p: hg.Plan, ptx: str):
        if p.name not in self._kernels:
            path = self.work / f"{p.name}.{self.arch}.ptx"
            path.write_text(ptx)
            self._kernels[p.name] = self.cp.RawModule(path=str(path)).get_function(p.name)
        return self._kernels[p.name]

    def gemm(self, p: hg.Plan, ptx: str, a_bits: np.ndarray, b_bits: np.ndarray, reps: int = 0):
        """D (float64, host) and the mean kernel time in seconds over ``reps`` timed launches."""
        cp = self.cp
        M, K = a_bits.shape
        N = b_bits.shape[1]
        dA = cp.asarray(a_bits if p.a.tile == "row-major" else np.ascontiguousarray(a_bits.T))
        dB = cp.asarray(b_bits if p.b.tile == "row-major" else np.ascontiguousarray(b_bits.T))
        dD = cp.full((M, N), cp.nan, dtype=cp.float16 if p.out_type == "f16" else cp.float32)
        k = self.kernel(p, ptx)
        grid, block = (N // p.config.bn, M // p.config.bm, 1), (p.config.threads, 1, 1)
        args = (dA, dB, dD, np.uint32(M), np.uint32(N), np.uint32(K))
        k(grid, block, args)
        cp.cuda.Device().synchronize()
        D = cp.asnumpy(dD).astype(np.float64)
        return D, self._time(lambda: k(grid, block, args), reps) if reps else None

    def _time(self, fn, reps: int) -> float:
        cp = self.cp
        fn()
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        for _ in range(reps):
            fn()
        stop.record()
        stop.synchronize()
        return cp.cuda.get_elapsed_time(start, stop) / 1e3 / reps

    def baseline(self, a: np.ndarray, b: np.ndarray, reps: int):
        """cupy.matmul on float16 inputs (cuBLAS): D as float64 and mean seconds."""
        cp = self.cp
        dA, dB = cp.asarray(a.astype(np.float16)), cp.asarray(b.astype(np.float16))
        D = cp.asnumpy(cp.matmul(dA, dB)).astype(np.float64)
        return D, self._time(lambda: cp.matmul(dA, dB), reps)


class EmulatedDevice:
    """Stands in for the GPU on a CPU: the kernel is :func:`ptxconf.tools.hgemm.kernel.emulate` of the plan."""

    arch = "sm_80"

    def __init__(self, specs: Specs):
        self.specs = specs

    def info(self) -> dict:
        return {"device": "NumPy emulation of the plan", "arch": self.arch}

    def gemm(self, p, ptx, a_bits, b_bits, reps=0):
        dec = (lambda b: b.view(np.float16).astype(np.float64)) if p.in_type == "f16" else \
            (lambda b: from_bf16_bits(b).astype(np.float64))
        D = hg.emulate(self.specs, p, dec(a_bits), dec(b_bits))
        D = D.astype(np.float16 if p.out_type == "f16" else np.float32).astype(np.float64)
        return D, (1e-3 if reps else None)

    def baseline(self, a, b, reps):
        return (a.astype(np.float16).astype(np.float64) @ b.astype(np.float16).astype(np.float64)), 1e-3


# --- the run --------------------------------------------------------------------------------


def _reps(M: int, N: int, K: int) -> int:
    return int(min(50, max(10, 2e11 / (2 * M * N * K))))  # about 0.2 s at ~100 TFLOP/s, at least 10


def run(specs: Specs, device, variants: list[str], sizes: list[tuple[int, int, int]], out: Path,
        seed: int = 0, pad: bool = True, time_it: bool = True) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    plans = {v: hg.plan(specs, v) for v in variants}
    ptx = {v: hg.generate(p, device.arch) for v, p in plans.items()}
    rows = []
    t_all = time.perf_counter()
    for M, N, K in sizes:
        rng = np.random.default_rng(seed)
        Mp, Np, Kp = hg.check_shape(next(iter(plans.values())), M, N, K, pad=pad)
        shape = {"M": M, "N": N, "K": K, "padded": [Mp, Np, Kp] if (Mp, Np, Kp) != (M, N, K) else None}
        Ae, Be = exact_inputs(M, N, K, rng)
        ref_e = Ae @ Be
        Ar, Br = rng.uniform(-1, 1, (M, K)).astype(np.float32), rng.uniform(-1, 1, (K, N)).astype(np.float32)
        enc = {}
        for typ in {plans[v].in_type for v in variants}:
            a_bits, a_val = encode(Ar, typ)
            b_bits, b_val = encode(Br, typ)
            enc[typ] = (a_bits, b_bits, a_val @ b_val, np.abs(a_val) @ np.abs(b_val))
        base = None
        if time_it:
            Dc, tc = device.baseline(Ar, Br, _reps(M, N, K))
            base = {"op": "cupy.matmul f16 x f16 -> f16", "ms": round(tc * 1e3, 4),
                    "tflops": round(2 * M * N * K / tc / 1e12, 2)}
            if "f16" in enc:
                base["random_max_abs_err"] = float(np.abs(Dc - enc["f16"][2]).max())
        for v in variants:
            p = plans[v]
            enc_e = {k: encode(x, p.in_type)[0] for k, x in (("A", Ae), ("B", Be))}
            De, _ = device.gemm(p, ptx[v], hg.pad_to(enc_e["A"], Mp, Kp), hg.pad_to(enc_e["B"], Kp, Np))
            De = De[:M, :N]
            bad = int((De != ref_e).sum())
            a_bits, b_bits, ref, S = enc[p.in_type]
            Dr, t = device.gemm(p, ptx[v], hg.pad_to(a_bits, Mp, Kp), hg.pad_to(b_bits, Kp, Np),
                                reps=_reps(M, N, K) if time_it else 0)
            Dr = Dr[:M, :N]
            bound = math.ceil(K / 16) * 2.0 ** (2 - ACC_BITS[p.out_type]) * S
            err = np.abs(Dr - ref)
            ratio = float(np.max(err / np.maximum(bound, 1e-300)))
            row = {"variant": v, "instruction": p.variant.id, **shape,
                   "exact": {"ok": bad == 0, "mismatches": bad},
                   "random": {"ok": bool(np.isfinite(Dr).all() and ratio <= 1), "max_abs_err": float(err.max()),
                              "max_err_over_bound": ratio,
                              "bound": f"ceil(K/16) * 2^(2-{ACC_BITS[p.out_type]}) * (|A|@|B|)"}}
            if t is not None:
                row["ms"] = round(t * 1e3, 4)
                row["tflops"] = round(2 * M * N * K / t / 1e12, 2)
                row["vs_cupy"] = base
            rows.append(row)
            print(f"{v:9s} {M}x{N}x{K}{' (padded ' + 'x'.join(map(str, shape['padded'])) + ')' if shape['padded'] else ''}: "
                  f"exact {'ok' if bad == 0 else f'{bad} mismatches'}, random err {err.max():.3g} "
                  f"({ratio:.3g} of bound)"
                  + (f", {row['ms']} ms {row['tflops']} TFLOP/s; cupy {base['ms']} ms {base['tflops']} TFLOP/s"
                     if t is not None else ""), flush=True)
    res = {"device": device.info(), "config": plans[variants[0]].config.__dict__,
           "kernels": {v: plans[v].name for v in variants}, "seconds": round(time.perf_counter() - t_all, 1),
           "ok": all(r["exact"]["ok"] and r["random"]["ok"] for r in rows), "rows": rows}
    (out / "hgemm.json").write_text(json.dumps(res, indent=1))
    return res


def _nvidia_smi_driver() -> str:
    """The display-driver version (e.g. 580.159.04), or "unknown"."""
    import subprocess

    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
        return out.stdout.strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        return "unknown"
