"""The child process that owns the CUDA context (its interpreter imports this module and what it runs only).

A faulting kernel leaves a sticky error that poisons its context; running the
GPU in a child process lets the parent kill it, start a fresh one, and go on.
Modules are JIT-compiled by the driver from PTX and cached by the PTX's hash.
Where CUDA does not start here (no driver, no device), the first answer says why
(:data:`NO_GPU`): a run starts no CUDA in its own process to find that out.
"""

from __future__ import annotations

import time
from typing import Any

NO_GPU = "no-gpu"  # the first answer of a worker whose CUDA did not start: ``(NO_GPU, why, False)``


def start_cuda() -> tuple[Any, int] | tuple[None, str]:
    """PyCUDA's driver with CUDA started and how many devices it sees, or None and why not (no binding, no driver,
    no device): the one check of a GPU, in the worker (:func:`serve`) and in a process that asks before it starts one
    (:func:`ptxconf.backends.pycuda_backend.gpu_available`).  Never raises."""
    try:
        import pycuda.driver as cuda
    except Exception as exc:  # ImportError, or a broken CUDA install
        return None, f"PyCUDA not importable ({type(exc).__name__}: {exc})"
    try:
        cuda.init()
        n = cuda.Device.count()
    except Exception as exc:
        return None, f"no CUDA driver or device ({exc})"
    if n == 0:
        return None, "no CUDA device"
    return cuda, n


def main(fd: int, device: int, parent: int) -> None:  # pragma: no cover - runs on GPU machines only
    """The worker's interpreter: the pipe's end it was given (file descriptor ``fd``), then :func:`serve`."""
    entered = time.time()
    from multiprocessing.connection import Connection

    serve(Connection(fd), device, parent, entered)


def serve(conn, device: int = 0, parent: int | None = None, entered: float | None = None) -> None:  # pragma: no cover
    entered = time.time() if entered is None else entered
    from ptxconf.core.heap import keep_freed_memory
    from ptxconf.core.lifetime import die_with_parent, ignore_stop_signals, name_process

    # The parent decides when this process ends, and it ends with the parent: Ctrl-C in a terminal reaches the
    # whole process group, and the parent finishes the module in flight before it stops.
    if parent is not None:
        die_with_parent(parent)
    name_process("gpu")
    ignore_stop_signals()
    keep_freed_memory()  # each launch's gathered words and out words: megabytes made and dropped

    import numpy as np

    cuda, count = start_cuda()  # (count: why not, where cuda is None)
    if cuda is None:  # the first question (open()'s ping, or whatever comes first) answered with why, then gone
        try:
            if conn.recv()[0] != "exit":
                conn.send((NO_GPU, count, False))
        except (EOFError, OSError):
            pass
        return
    dev = cuda.Device(device)
    ctx = dev.make_context()
    modules: dict[str, object] = {}
    from pycuda.tools import DeviceMemoryPool

    pool = DeviceMemoryPool()  # a module's buffers come back to it: no allocation or free (which waits) per launch
    ready = time.time()
    try:
        while True:
            try:
                msg = conn.recv()
            except EOFError:  # the pipe's other end is closed: the run is gone
                return
            if msg[0] == "exit":
                return
            if msg[0] == "ping":  # asked as the worker starts: when it began, and when CUDA was ready
                conn.send(("ok", {"gpu_worker_entered": entered, "gpu_worker_ready": ready}))
                continue
            if msg[0] == "info":
                conn.send(("ok", {**_info(cuda, dev), "cuda_devices": count}))
                continue
            if msg[0] == "load":
                _, key, ptx = msg
                try:
                    t0 = time.perf_counter()
                    modules[key] = cuda.module_from_buffer(ptx if isinstance(ptx, bytes) else ptx.encode())  # PTX text or a cubin
                    conn.send(("ok", time.perf_counter() - t0))
                except cuda.CompileError as exc:
                    conn.send(("error", f"JIT compile failed: {str(exc).strip()[:2000]}", False))
                continue
            if msg[0] == "launches":  # every launch of one module in one round trip
                _, key, batch = msg
                try:
                    conn.send(("ok", _launch_all(cuda, ctx, np, modules[key], batch, pool)))
                except (cuda.LaunchError, cuda.LogicError, cuda.RuntimeError) as exc:
                    conn.send(("error", f"{type(exc).__name__}: {exc}", True))
                    return
                continue
            _, key, *item = msg  # one launch alone (after a batch faulted): which one faults
            try:
                conn.send(("ok", *_launch_all(cuda, ctx, np, modules[key], [item], pool, by_plan=False)[0]))
            except (cuda.LaunchError, cuda.LogicError, cuda.RuntimeError) as exc:
                # A fault leaves a sticky error in the context: report it and let the parent restart us.
                conn.send(("error", f"{type(exc).__name__}: {exc}", True))
                return
    finally:
        try:
            ctx.pop()
        except Exception:
            pass


def _launch_all(cuda, ctx, np, module, batch, pool, by_plan: bool = True) -> list:  # pragma: no cover - GPU only
    """Every launch of a module queued in order on the context's stream, one wait for all of them, then each one's
    out words back: ``[(out | None, seconds by step)]``.  A fault raises (the parent then goes launch by launch).

    Launches whose words and out words the run shares (``gather`` and ``into`` given) go by plan: the plan's input
    words to the device once, from where they lie, every launch of it given the rows it runs as its order (a probe
    reads and writes case ``order[w]``), and the plan's out words back once, into the run's buffer: no gather or
    scatter copy on the host, one copy each way per plan instead of one per launch.  The plan's out words come back
    whole, so every launch of the plan must be in the batch: launch by launch after a fault (``by_plan`` False), as
    for words not shared, each launch's rows are gathered here and its out words sent back."""
    steps = dict.fromkeys(("gather_s", "copy_in_s", "queue_s", "wait_s", "copy_out_s"), 0.0)
    staged = []
    plans: dict[int, tuple] = {}  # id(in words) -> (device in, device out, the run's out buffer): a plan sent whole
    t = time.perf_counter()
    for kernel, in_words, gather, out_words, order, wpb, into, _rows in batch:
        fn = module.get_function(kernel)
        whole = by_plan and gather is not None and into is not None and in_words.dtype == np.uint32 and in_words.flags.c_contiguous
        if whole:
            order = np.ascontiguousarray(np.asarray(gather)[np.asarray(order)], dtype=np.uint32)  # slot -> plan row
            t, steps["gather_s"] = time.perf_counter(), steps["gather_s"] + time.perf_counter() - t
            if id(in_words) not in plans:
                d_in, d_out = pool.allocate(max(4, in_words.nbytes)), pool.allocate(max(4, into.nbytes))
                cuda.memcpy_htod(d_in, in_words)
                cuda.memset_d32(d_out, 0, into.size)
                plans[id(in_words)] = (d_in, d_out, into)
            d_in, d_out, _ = plans[id(in_words)]
            lanes, ncases = in_words.shape[1], len(order)
            d_order = pool.allocate(max(4, order.nbytes))
            cuda.memcpy_htod(d_order, order)
            bufs, out = (d_order,), None
        else:
            words = np.ascontiguousarray(in_words if gather is None else in_words[gather], dtype=np.uint32)
            order = np.ascontiguousarray(order, dtype=np.uint32)
            lanes, ncases = words.shape[1], len(order)
            out = np.empty((words.shape[0], lanes, out_words), dtype=np.uint32)
            t, steps["gather_s"] = time.perf_counter(), steps["gather_s"] + time.perf_counter() - t
            d_in, d_out, d_order = (pool.allocate(max(4, n)) for n in (words.nbytes, out.nbytes, order.nbytes))
            cuda.memcpy_htod(d_in, words)  # the default stream: each copy follows the kernels queued before it
            cuda.memcpy_htod(d_order, order)
            cuda.memset_d32(d_out, 0, out.size)
            bufs = (d_in, d_out, d_order)
        t, steps["copy_in_s"] = time.perf_counter(), steps["copy_in_s"] + time.perf_counter() - t
        fn(d_in, d_out, d_order, np.uint32(ncases), block=(lanes * wpb, 1, 1), grid=((ncases + wpb - 1) // wpb, 1))
        staged.append((out, bufs))
        t, steps["queue_s"] = time.perf_counter(), steps["queue_s"] + time.perf_counter() - t
    ctx.synchronize()
    t, steps["wait_s"] = time.perf_counter(), steps["wait_s"] + time.perf_counter() - t
    for d_in, d_out, into in plans.values():  # each plan's out words straight into the run's shared buffer
        cuda.memcpy_dtoh(into, d_out)
        d_in.free()
        d_out.free()
    results = []
    for out, bufs in staged:
        if out is not None:
            cuda.memcpy_dtoh(out, bufs[1])
        for buf in bufs:
            buf.free()
        results.append(out)
    t, steps["copy_out_s"] = time.perf_counter(), steps["copy_out_s"] + time.perf_counter() - t
    share = {k: v / max(1, len(batch)) for k, v in steps.items()}
    return [(out, {"kernel_s": share["wait_s"], **share}) for out in results]


def _info(cuda, dev) -> dict:  # pragma: no cover - GPU only
    import subprocess

    import pycuda

    major, minor = dev.compute_capability()
    drv = cuda.get_driver_version()
    out = {
        "gpu": dev.name(),
        "compute_capability": f"{major}.{minor}",
        "cuda_driver_api": f"{drv // 1000}.{(drv % 1000) // 10}",
        "cuda_pycuda_built_with": ".".join(map(str, cuda.get_version())),
        "pycuda": pycuda.VERSION_TEXT,
        "jit": "CUDA driver PTX JIT (module_from_buffer)",
    }
    try:
        smi = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True, text=True, timeout=20
        )
        out["driver"] = smi.stdout.strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        out["driver"] = "unknown"
    return out
