"""Model-vs-hardware fuzzing of the forms that reach the tensor cores through their family's own probe.

Why: gpu_fuzz.py's device-only loop gathers mma.sync operands through lane maps.  wgmma (a warpgroup, A and B in
shared memory through descriptors, or A in registers), mma.sp and wgmma.sp (a compressed A and its metadata) need
what their families' probes already build and the suite has run on the H100.  Each round draws random operands
(gpu_fuzz.Recipe's knobs; for the sparse forms random legal metadata, row by row and chunk by chunk), runs them
through the family's probe on the backend, evaluates the model for every D element (on the GPU with gpu.py's model
kernel where CuPy is there, else model.py itself) and compares bit for bit.  Every mismatch (up to a bound) and an
audit sample are replayed through model.py, as gpu_fuzz.py does: a mismatch model.py confirms is a departure of the
hardware, one it does not confirm is an error of the GPU model.

A sparse dot is its stored products: the stored A elements with the B rows the metadata selects, in the order
``sparse_order`` says (model.sparse_dots).  Under ``sparse_zeros: skip`` that is a dense dot of K/2 terms for the GPU
kernel whenever the blocks do not depend on the dense positions (``k_order: natural``, or ``sparse_order: slot``);
other parameter sets are evaluated by model.py on the host.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from ptxconf.isa.model import Variant
from ptxconf.isa.ptxtypes import ptx_type
from ptxconf.isa.sparse import Sparsity, is_sparse, positions

from . import gpu
from .gpu_fuzz import AUDIT_DOTS, AUDIT_EVERY_S, MAX_RECORDED, MAX_REPLAYS, Recipe, exponent_range, record_replays
from .harness import dims, run_mma
from .model import FORMATS, PathParams, Types, dot_bits

TARGET_DOTS = 1 << 18  # D elements per launch: one launch of any form carries about this many dot products
PROBE_FAMILIES = ("mma.sp", "wgmma", "wgmma.sp")


def sparsity_of(v: Variant) -> Sparsity:
    """The chunk geometry of a sparse form (mma.sp from its metadata layout; wgmma.sp from its dense K)."""
    if v.family == "wgmma.sp":
        from ptxconf.families.wgmma_sp import sparsity as wgmma_sp_sparsity

        return wgmma_sp_sparsity(v)
    from ptxconf.isa.sparse import sparsity

    return sparsity(v)


def stored_k(v: Variant) -> int:
    """Columns of A as stored: K/2 for a sparse form."""
    k = dims(v)[2]
    return k // 2 if is_sparse(v) else k


def element_bits(rng: np.random.Generator, type_name: str, shape: tuple[int, ...], exponents: tuple[int, int],
                 r: Recipe) -> np.ndarray:
    """Random container bits of one type, drawn as gpu_fuzz's device kernel draws them (raw bits at the special
    rate, +0 at the zero rate, a subnormal at the subnormal rate, else a normal of exponent in ``exponents``):
    built from fields, never through float64, so drawing stays a small part of a round."""
    pt = ptx_type(type_name)
    count = int(np.prod(shape))
    raw = rng.integers(0, 2**63, count, dtype=np.uint64) ^ (rng.integers(0, 2, count, dtype=np.uint64) << np.uint64(63))
    if pt.kind != "float":
        return (raw & np.uint64(pt.mask)).reshape(shape)
    f = FORMATS["f32" if type_name == "tf32" else type_name]  # tf32: all 32 bits drawn, the low 13 included
    mb, bias = f.p - 1, 1 - f.emin
    lo, hi = exponents
    sign = (raw >> np.uint64(63)) << np.uint64(pt.bits - 1)
    mant = raw & np.uint64((1 << mb) - 1)
    e = rng.integers(lo, hi + 1, count).astype(np.uint64) + np.uint64(bias)
    bits = sign | (e << np.uint64(mb)) | mant
    u = rng.random((3, count))
    sub = sign | (np.uint64(1) + rng.integers(0, (1 << mb) - 1, count, dtype=np.uint64))
    bits = np.where(u[0] < r.sub_rate, sub, bits)
    bits = np.where(u[1] < r.zero_rate, np.uint64(0), bits)
    bits = np.where(u[2] < r.special_rate, rng.integers(0, 2**63, count, dtype=np.uint64) & np.uint64(pt.mask), bits)
    return bits.reshape(shape)


def draw(v: Variant, rng: np.random.Generator, cases: int, r: Recipe) -> tuple[dict[str, np.ndarray], np.ndarray | None]:
    """Operand bits of ``cases`` random MMAs of ``v`` (harness storage: A ``[case, mat, M, K or K/2]``, B ``[case,
    mat, K, N]``, C ``[case, mat, M, N]``; sparse: ``metadata`` fields ``[case, 1, M, 2 * chunks]``), and for a sparse
    form the dense position of every stored A element ``[case, mat, M, K/2]``."""
    t = Types.of(v)
    mats, m, k, n = dims(v)
    ka = stored_k(v)
    A = element_bits(rng, t.a, (cases, mats, m, ka), exponent_range(t.a, r.spread), r)
    B = element_bits(rng, t.b, (cases, mats, k, n), exponent_range(t.b, r.spread), r)
    C = element_bits(rng, t.c, (cases, mats, m, n), exponent_range(t.c, r.spread + abs(r.c_scale), r.c_scale), r)
    pos = None
    bits = {"A": A, "B": B, "C": C}
    if is_sparse(v):
        sp = sparsity_of(v)
        pats = np.asarray(sp.patterns, dtype=np.int64)
        fields = pats[rng.integers(0, len(pats), (cases, 1, m, sp.chunks))]  # [case, 1, M, chunk, 2]
        pos = positions(sp, fields) + (np.arange(sp.chunks) * sp.width)[:, None]
        pos = pos.reshape(cases, 1, m, sp.chunks * sp.nz)
        bits["metadata"] = fields.reshape(cases, 1, m, 2 * sp.chunks).astype(np.uint64)
    if ptx_type(t.a).kind == "float" and r.cancel and ka > 1:
        # cancellation: a row's second stored element is its first negated, over equal B rows (the first chunk's
        # rows of B all equal the first: whichever two positions the metadata names, the two products cancel)
        sel = rng.random((cases, mats, m)) < r.cancel
        A[..., 1] = np.where(sel, A[..., 0] ^ np.uint64(1 << (ptx_type(t.a).bits - 1)), A[..., 1])
        width = sparsity_of(v).width if pos is not None else 2
        B[..., 1:width, :] = B[..., :1, :]
    return bits, pos


def sparse_model_on_gpu(p: PathParams) -> bool:
    """Whether a sparse dot is a dense dot of its stored products for the GPU kernel (see the module's docstring)."""
    return p.sparse_zeros == "skip" and (p.k_order == "natural" or p.sparse_order == "slot")


def dot_rows(v: Variant, bits: dict[str, np.ndarray], pos: np.ndarray | None, index=None):
    """Every D element (or the flat D positions ``index``) as a dot product: ``(a [n, K'], b [n, K], c [n], pos)``
    in model.py's arguments (a sparse dot: its stored A elements, the whole B column and their dense positions)."""
    A, B, C = bits["A"], bits["B"], bits["C"]
    cases, mats, m, ka = A.shape
    n = B.shape[-1]
    idx = np.arange(cases * mats * m * n) if index is None else np.asarray(index, dtype=np.int64)
    g, rest = np.divmod(idx, m * n)
    row, col = np.divmod(rest, n)
    cs, mat = np.divmod(g, mats)
    a = A[cs, mat, row]
    b = np.swapaxes(B, -1, -2)[cs, mat, col]
    c = C[cs, mat, row, col]
    return a, b, c, (None if pos is None else pos[cs, 0, row])


class ModelOnGpu:
    """The model of one variant on the GPU (gpu.py's kernel); ``__call__(bits, pos)`` gives D ``[case, mat, M, N]``."""

    def __init__(self, v: Variant, p: PathParams):
        self.cp, self.v, self.p, self.t = gpu.cupy(), v, p, Types.of(v)
        self.sparse = is_sparse(v)
        k = stored_k(v)
        gpu.check(p, self.t, k)
        self.kernel = gpu.model_kernel(p, self.t, k)

    def __call__(self, bits: dict[str, np.ndarray], pos: np.ndarray | None) -> np.ndarray:
        cp, t = self.cp, self.t
        A, B, C = bits["A"], bits["B"], bits["C"]
        cases, mats, m, _ = A.shape
        n = B.shape[-1]
        d = cp.zeros(C.size, dtype=gpu.container(t.d))
        c = cp.asarray(gpu.to_container(t.c, C.reshape(-1)))
        if self.sparse:  # one dot per D element: its stored products, B's rows gathered (as model.sparse_dots)
            a, b = self.stored_products(bits, pos)
            self.kernel(a, b, c, d, 1, 1)
        else:
            bt = np.ascontiguousarray(np.swapaxes(B, -1, -2))
            self.kernel(cp.asarray(gpu.to_container(t.a, A)), cp.asarray(gpu.to_container(t.b, bt)), c, d, m, n)
        return cp.asnumpy(d).astype(np.uint64).reshape(cases, mats, m, n)


    def stored_products(self, bits: dict[str, np.ndarray], pos: np.ndarray):
        """Device arrays ``a, b [case * M * N, K/2]``: each D element's stored A elements and the B elements they
        meet, in ``sparse_order`` (model.sparse_dots on the device: the gather of a million dots is the round's
        largest host cost otherwise)."""
        cp, t = self.cp, self.t
        A, B = bits["A"], bits["B"]
        cases, mats, m, s = A.shape
        n = B.shape[-1]
        a = cp.asarray(gpu.to_container(t.a, A[:, 0]))  # [case, M, S] (sparse forms hold one matrix)
        bt = cp.asarray(gpu.to_container(t.b, np.swapaxes(B[:, 0], -1, -2)))  # [case, N, K]
        at = cp.asarray(pos[:, 0])  # [case, M, S]
        if self.p.sparse_order == "position":
            order = cp.argsort(at, axis=-1)
            at, a = cp.take_along_axis(at, order, axis=-1), cp.take_along_axis(a, order, axis=-1)
        ci = cp.arange(cases)[:, None, None, None]
        ni = cp.arange(n)[None, None, :, None]
        b = bt[ci, ni, at[:, :, None, :]]  # [case, M, N, S]
        a = cp.broadcast_to(a[:, :, None, :], (cases, m, n, s))
        return cp.ascontiguousarray(a).reshape(-1, s), cp.ascontiguousarray(b).reshape(-1, s)


def model_on_host(v: Variant, p: PathParams) -> Callable:
    """model.py itself as the evaluator (no CuPy, or a parameter set the GPU kernel does not take)."""
    t = Types.of(v)

    def evaluate(bits: dict[str, np.ndarray], pos: np.ndarray | None) -> np.ndarray:
        a, b, c, pd = dot_rows(v, bits, pos)
        return dot_bits(p, t, a, b, c, sparse_pos=pd).reshape(bits["C"].shape)

    return evaluate


def evaluator(v: Variant, p: PathParams, on: str) -> tuple[Callable, str]:
    """(the model's evaluator, where it runs): ``on`` is ``gpu`` (refused when the kernel cannot) or ``host``."""
    if on == "gpu":
        if is_sparse(v) and not sparse_model_on_gpu(p):
            return model_on_host(v, p), "host (sparse parameters the GPU kernel does not take)"
        return ModelOnGpu(v, p), "gpu"
    return model_on_host(v, p), "host"


def replay(v: Variant, p: PathParams, bits, pos, observed: np.ndarray, modelled: np.ndarray, index) -> list[dict]:
    """D elements ``index`` through model.py: whether it confirms the hardware's departure, and the evaluator's value."""
    t = Types.of(v)
    a, b, c, pd = dot_rows(v, bits, pos, index)
    ref = dot_bits(p, t, a, b, c, sparse_pos=pd)
    obs, mod = observed.reshape(-1)[index], modelled.reshape(-1)[index]
    rows = []
    for i in range(len(c)):
        row = {"a": [hex(int(x)) for x in a[i]], "b": [hex(int(x)) for x in b[i]], "c": hex(int(c[i])),
               "observed": hex(int(obs[i])), "model": hex(int(ref[i])), "gpu_model": hex(int(mod[i])),
               "confirmed": bool(ref[i] != obs[i]), "gpu_model_ok": bool(ref[i] == mod[i])}
        if pd is not None:
            row["pos"] = [int(x) for x in pd[i]]
        rows.append(row)
    return rows


def fuzz_variant_probe(backend, v: Variant, p: PathParams, budget: float, cases: int = 4096, out: Path | None = None,
                       seed: int = 0, save: int = 3, model_on: str = "gpu") -> dict:
    """Rounds of ``v`` through its family's probe until ``budget`` seconds are spent (at least one round); the same
    record as gpu_fuzz.fuzz_variant_gpu."""
    t0 = time.perf_counter()
    evaluate, where = evaluator(v, p, model_on)
    mats, m, _, n = dims(v)
    per_case = mats * m * n
    cases = max(1, min(int(cases), TARGET_DOTS // per_case))
    rng = np.random.default_rng([seed, 0x5EED, len(v.id)])
    stats = {"variant": v.id, "family": v.family, "path": p.name, "model": p.describe(), "model_on": where,
             "cases_per_launch": cases, "dots_per_launch": cases * per_case, "launches": 0, "dots": 0, "mismatches": 0,
             "replayed": 0, "confirmed": 0, "gpu_model_errors": 0, "audited": 0, "audit_errors": 0, "saved": [],
             "examples": []}
    stages = {"draw": 0.0, "hardware": 0.0, "model": 0.0, "compare": 0.0}
    start = None
    next_audit, timed = 0.0, 0
    while start is None or time.perf_counter() - start < budget:
        round_seed = int(rng.integers(2**63))
        r = Recipe.draw(rng)
        s0 = time.perf_counter()
        bits, pos = draw(v, np.random.default_rng(round_seed), cases, r)
        s1 = time.perf_counter()
        observed = run_mma(backend, v, bits)
        s2 = time.perf_counter()
        modelled = evaluate(bits, pos)
        s3 = time.perf_counter()
        bad = np.flatnonzero(observed.reshape(-1) != modelled.reshape(-1))
        s4 = time.perf_counter()
        if start is None:  # the first round builds and loads the kernels: its time is compile time, not the rate's
            stats["compile_s"] = round(s4 - t0, 3)
            start = time.perf_counter()
        else:
            for k_, x in zip(stages, (s1 - s0, s2 - s1, s3 - s2, s4 - s3)):
                stages[k_] += x
            timed += int(observed.size)
        stats["launches"] += 1
        stats["dots"] += int(observed.size)
        stats["mismatches"] += len(bad)
        if len(bad) and stats["replayed"] < MAX_REPLAYS:
            rows = replay(v, p, bits, pos, observed, modelled, bad[:MAX_RECORDED])
            stats["replayed"] += len(rows)
            record_replays(stats, rows, bad[:MAX_RECORDED], round_seed, r, out, v, p, save, "probe", "probe fuzz round")
        if time.perf_counter() >= next_audit:  # the evaluator against model.py on a sample, matching or not
            idx = np.random.default_rng(round_seed).integers(0, observed.size, min(AUDIT_DOTS, observed.size))
            rows = replay(v, p, bits, pos, observed, modelled, idx)
            stats["audited"] += len(rows)
            stats["audit_errors"] += sum(not row["gpu_model_ok"] for row in rows)
            next_audit = time.perf_counter() + AUDIT_EVERY_S
    wall = time.perf_counter() - start
    busy = sum(stages.values())
    stats["seconds"] = round(wall, 3)
    stats["stages_s"] = {k_: round(x, 4) for k_, x in stages.items()} | {"host": round(max(wall - busy, 0.0), 4)}
    stats["dots_per_s"] = round(timed / wall) if timed and wall else 0  # rounds after the first
    device = stages["hardware"] + stages["model"]
    stats["gpu_dots_per_s"] = round(timed / device) if timed and device else 0
    return stats


__all__ = ["PROBE_FAMILIES", "draw", "dot_rows", "evaluator", "fuzz_variant_probe", "replay",
           "sparse_model_on_gpu", "sparsity_of", "stored_k"]
