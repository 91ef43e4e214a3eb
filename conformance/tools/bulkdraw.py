"""What a bulk draw costs: per family, the seconds per case of drawing, packing and predicting a batch, and the
array operations it takes, per stage.

Why: on a GPU every array operation is a kernel launch and a temporary, so a draw is bounded by how many passes it
makes over how many bytes, not by its arithmetic.  The timing runs on the array module the backend fuzzes on (NumPy
for the emulator, CuPy for pycuda); the operations are counted on NumPy through :class:`Counted`, an ndarray subclass
that names its own namespace (:func:`ptxconf.isa.arrays.namespace`), so the count is the same code path's on either
module (``device_ops_per_batch`` counts a call CuPy runs as one kernel once).  A stage is the function the operation ran in (``words32``: random bits, ``_registers``: packing, ``product``:
the prediction, ...).

    ptxconf bench --bulk-draw [--backend emulator|pycuda] [--select GLOB] [-o FILE]
"""

from __future__ import annotations

import sys
import time
from collections import defaultdict
from typing import Any

import numpy as np
from ptxconf.core.family import family_of
from ptxconf.isa import arrays as _arrays
from ptxconf.run.bulkfuzz import batch_for

__all__ = ["Counted", "counting", "FORMS", "draw_costs"]

# per family: forms of every kind whose draw differs (small and large N, A from registers and shared memory, every
# element width, .b1, .satfinite; wmma loads, stores and mma)
_W, _SP = "wgmma.mma_async.sync.aligned.", "wgmma.mma_async.sp.sync.aligned."
FORMS = [
    "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
    "mma.sp.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32",
    "ldmatrix.sync.aligned.m8n8.x4.b16",
    _W + "m64n8k16.f32.f16.f16/rs", _W + "m64n8k16.f32.f16.f16/ss", _W + "m64n16k8.f32.tf32.tf32/ss",
    _W + "m64n64k32.f16.e4m3.e5m2/rs", _W + "m64n128k32.satfinite.s32.s8.s8/ss", _W + "m64n256k16.f32.bf16.bf16/ss",
    _W + "m64n256k16.f16.f16.f16/rs", _W + "m64n64k256.s32.b1.b1.and.popc/ss",
    _SP + "m64n8k32.f32.f16.f16/ss", _SP + "m64n64k64.s32.s8.s8/rs", _SP + "m64n256k32.f32.bf16.bf16/ss",
    "wmma.mma.sync.aligned.row.col.m16n16k16.f32.f32", "wmma.load.a.sync.aligned.row.m16n16k16.f16",
    "wmma.store.d.sync.aligned.row.m16n16k16.f32", "wmma.mma.sync.aligned.row.col.m8n8k4.f64.f64.f64.f64",
]

_LOG: list[tuple[str, str, int, float, int | None]] | None = None  # (stage, operation, bytes made, seconds, fused call)


def _stage() -> tuple[str, int | None]:
    """The innermost function outside this module and NumPy that asked for the operation, and the frame of the
    outermost call it is part of that a GPU runs as one kernel (:data:`ptxconf.isa.arrays.DEVICE_FUSED`), if any."""
    f = sys._getframe(2)
    while f is not None and (f.f_code.co_filename == __file__ or "/numpy/" in f.f_code.co_filename):
        f = f.f_back
    if f is None:
        return "?", None
    name, fused, g = f.f_code.co_name, None, f
    while g is not None:
        if g.f_code.co_filename == _arrays.__file__ and g.f_code.co_name in _arrays.DEVICE_FUSED:
            fused = id(g)
        g = g.f_back
    return name, fused


def _plain(x: Any) -> Any:
    if isinstance(x, Counted):
        return x.view(np.ndarray)
    if isinstance(x, (list, tuple)):
        return type(x)(_plain(i) for i in x)
    return x


def _counted(x: Any) -> Any:
    if isinstance(x, np.ndarray) and not isinstance(x, Counted):
        return x.view(Counted)
    if isinstance(x, tuple):
        return tuple(_counted(i) for i in x)
    return x


def _record(name: str, result: Any, t0: float) -> None:
    if _LOG is not None:
        nbytes = result.nbytes if isinstance(result, np.ndarray) else 0
        stage, fused = _stage()
        _LOG.append((stage, name, nbytes, time.perf_counter() - t0, fused))


def _is_gather(idx: Any) -> bool:
    items = idx if isinstance(idx, tuple) else (idx,)
    return any(isinstance(i, (np.ndarray, list)) for i in items)


class Counted(np.ndarray):
    """A NumPy array whose every operation (ufuncs, array functions, gathers and scatters, casts) is logged, as
    the kernel it would be on a GPU; views and reshapes are free, as there."""

    def __array_namespace__(self, api_version: str | None = None) -> Any:
        return NAMESPACE

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if "out" in kwargs:
            kwargs["out"] = _plain(kwargs["out"])
        t0 = time.perf_counter()
        res = getattr(ufunc, method)(*_plain(inputs), **kwargs)
        _record(f"{ufunc.__name__}.{method}" if method != "__call__" else ufunc.__name__, res, t0)
        return _counted(res)

    def __array_function__(self, func, types, args, kwargs):
        t0 = time.perf_counter()
        res = func(*_plain(args), **{k: _plain(v) for k, v in kwargs.items()})
        if func.__name__ not in ("shape", "ndim", "result_type", "may_share_memory", "shares_memory"):
            _record(func.__name__, res, t0)
        return _counted(res)

    def __getitem__(self, idx):
        t0 = time.perf_counter()
        res = np.ndarray.__getitem__(self.view(np.ndarray), _plain(idx))
        if _is_gather(_plain(idx)):
            _record("gather", res, t0)
        return _counted(res)

    def __setitem__(self, idx, value):
        t0 = time.perf_counter()
        np.ndarray.__setitem__(self.view(np.ndarray), _plain(idx), _plain(value))
        _record("scatter" if _is_gather(_plain(idx)) else "copy", np.ndarray.__getitem__(self.view(np.ndarray), _plain(idx)), t0)

    def astype(self, dtype, *args, **kwargs):
        t0 = time.perf_counter()
        res = self.view(np.ndarray).astype(dtype, *args, **kwargs)
        _record("astype", res, t0)
        return _counted(res)

    def copy(self, *args, **kwargs):
        t0 = time.perf_counter()
        res = self.view(np.ndarray).copy(*args, **kwargs)
        _record("copy", res, t0)
        return _counted(res)


class _Namespace:
    """NumPy, whose array-making functions make :class:`Counted` arrays (each one operation: an allocation that is
    filled, or a host table moved to the device)."""

    _MAKERS = ("zeros", "empty", "ones", "full", "arange", "asarray", "array", "ascontiguousarray", "stack",
               "concatenate", "take", "where", "einsum", "matmul", "clip", "meshgrid", "nonzero", "zeros_like",
               "full_like", "roll")

    def __getattr__(self, name: str) -> Any:
        attr = getattr(np, name)
        if name not in self._MAKERS:
            return attr

        def made(*args, **kwargs):
            plain = _plain(args)
            if name in ("asarray", "ascontiguousarray") and isinstance(args[0], Counted) and (
                    kwargs.get("dtype") is None or np.dtype(kwargs["dtype"]) == args[0].dtype):
                return args[0]
            t0 = time.perf_counter()
            res = attr(*plain, **{k: _plain(v) for k, v in kwargs.items()})
            _record(name if name != "empty" else "empty (no pass)", res, t0)
            return _counted(res)
        return made


NAMESPACE = _Namespace()


def counting(fn, *args) -> tuple[Any, list[tuple[str, str, int, float, int | None]]]:
    """``fn(NAMESPACE, *args)`` with every array operation logged: (result, log)."""
    global _LOG
    _LOG = []
    try:
        return fn(NAMESPACE, *args), _LOG
    finally:
        _LOG = None


def _module(backend_name: str) -> tuple[Any, Any]:
    """(array module, synchronise) of the backend's bulk fuzzer."""
    if backend_name != "pycuda":
        return np, lambda: None
    import cupy

    return cupy, lambda: cupy.cuda.Device().synchronize()


def draw_costs(specs: Any, forms: list[str], backend_name: str, seed: int = 1, max_cases: int | None = None,
               repeats: int = 3) -> dict:
    """Per form: the draw's seconds per case on the backend's array module (the best of ``repeats`` batches of the
    fuzzer's size, at most ``max_cases``), and its operations per batch by stage (counted on NumPy, one batch of
    the same size: operations, milliseconds per 1e4 cases there, and bytes of the arrays they make per case)."""
    from ptxconf.isa.targets import PtxVersion

    xp, sync = _module(backend_name)
    max_cases = max_cases or (65536 if xp is not np else 2048)
    rows = []
    for vid in forms:
        v = specs.get(vid)
        cc = (9, 0) if v.family.startswith("wgmma") else (12, 0)
        fam = family_of(v)
        bc = fam.bulk_cases(v, seed, cc, PtxVersion(9, 2))
        n = min(batch_for(bc, 65536, xp), max_cases)
        drawn = bc.draw(xp, 0, n)  # tables and index maps moved to the module once
        sync()
        best = float("inf")
        for r in range(repeats):
            t0 = time.perf_counter()
            bc.draw(xp, (r + 1) * n, n)
            sync()
            best = min(best, time.perf_counter() - t0)
        counting(bc.draw, 0, 4)  # first call: per-seed tables
        _, log = counting(bc.draw, n, n)
        stages: dict[str, list] = defaultdict(lambda: [0, 0.0, 0])
        for stage, _name, nbytes, s, _ in log:
            stages[stage][0] += 1
            stages[stage][1] += s
            stages[stage][2] += nbytes
        rows.append({
            "variant": vid, "family": v.family, "batch": n, "ms_per_1e4_cases": round(best / n * 1e7, 2),
            "cases_per_s": round(n / best), "array_ops_per_batch": len(log),
            "device_ops_per_batch": sum(f is None for *_, f in log) + len({f for *_, f in log if f is not None}),
            "bytes_made_per_case": sum(b for _, _, b, _, _ in log) // n,
            # per stage: operations, NumPy milliseconds per 1e4 cases, bytes the operations make per case
            "by_stage": {k: [c, round(s / n * 1e7, 1), b // n] for k, (c, s, b) in sorted(stages.items(),
                                                                                        key=lambda kv: -kv[1][1])},
            "in_and_expected_bytes_per_case": (drawn.in_words.nbytes + drawn.expected.nbytes) // n,
        })
    families: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        families[r["family"]].append(r)
    by_family = {f: {"forms": len(rs), "ms_per_1e4_cases": round(sum(r["ms_per_1e4_cases"] for r in rs) / len(rs), 2),
                     "device_ops_per_batch": round(sum(r["device_ops_per_batch"] for r in rs) / len(rs), 1)}
                 for f, rs in families.items()}  # means over the family's forms
    return {"module": xp.__name__, "seed": seed, "by_family": by_family, "forms": rows}
