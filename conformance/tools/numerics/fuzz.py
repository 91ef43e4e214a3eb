"""Fuzz a path against the model in large batches; shrink a mismatch to a minimal dot product.

Hypothesis draws the batch recipe (exponent spread, cancellation, C scale, subnormal and
special rates, seed); each recipe becomes thousands of whole-MMA cases in one launch; every
D element (a dot product) is compared bit for bit.  A mismatching dot is shrunk greedily
(terms zeroed, then significands simplified), each round one launch, and saved replayable.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
from ptxconf.isa.model import Variant
from ptxconf.isa.ptxtypes import ptx_type

from .harness import diagonal, dims, model_mma, place, run_mma
from .model import FORMATS, PathParams, Types, dot_bits


def _values(rng, t: str, shape, spread: int, sub_rate: float, special_rate: float, center: int = 0) -> np.ndarray:
    """Random bits of type ``t``: significands random, exponents within ``spread`` binades of ``center``."""
    pt = ptx_type(t)
    if pt.kind != "float":
        lo, hi = pt.int_range() if pt.kind != "bits" else (0, 1)
        return pt.encode(rng.integers(lo, hi + 1, shape))
    f = FORMATS[t]
    lo, hi = max(f.emin, center - spread), min(f.emax, center + spread)
    e = rng.integers(min(lo, hi), max(lo, hi) + 1, shape)
    m = 1.0 + rng.integers(0, 2 ** (f.p - 1), shape) / 2.0 ** (f.p - 1)
    vals = np.where(rng.random(shape) < 0.5, -1.0, 1.0) * m * 2.0**e
    sub = rng.random(shape) < sub_rate
    vals = np.where(sub, rng.integers(1, 2 ** (f.p - 1), shape) * 2.0 ** (f.emin - f.p + 1), vals)
    vals = np.where(rng.random(shape) < 0.1, 0.0, vals)
    enc = "f32" if t == "tf32" else t
    bits = ptx_type(enc).encode(vals, exact=False)
    if special_rate:
        sp = rng.random(shape) < special_rate
        raw = rng.integers(0, 2**pt.bits, shape, dtype=np.uint64)
        bits = np.where(sp, raw, bits)
    return bits.astype(np.uint64)


def batch(v: Variant, seed: int, cases: int, spread=20, cancel=0.3, c_scale=0, sub_rate=0.02, special_rate=0.0, center=0):
    """Operand bits of ``cases`` random MMAs (A and B exponents around ``center``: the product around 2^(2 center))."""
    rng = np.random.default_rng(seed)
    t = Types.of(v)
    mats, m, k, n = dims(v)
    A = _values(rng, t.a, (cases, mats, m, k), spread, sub_rate, special_rate, center)
    B = _values(rng, t.b, (cases, mats, k, n), spread, sub_rate, special_rate, center)
    C = _values(rng, t.c, (cases, mats, m, n), spread + abs(c_scale), sub_rate, special_rate)
    if ptx_type(t.a).kind == "float" and cancel:
        # cancellation: column j+1 of A repeats column j negated (B rows j and j+1 equal)
        sel = rng.random((cases, mats, m)) < cancel
        neg = A[..., 0] ^ np.uint64(1 << (ptx_type(t.a).bits - 1))
        if k > 1:
            A[..., 1] = np.where(sel, neg, A[..., 1])
            B[..., 1, :] = B[..., 0, :]
    if c_scale and ptx_type(t.c).kind == "float":
        cv = ptx_type(t.c).decode(C) * 2.0**c_scale
        C = ptx_type(t.c).encode(cv, exact=False)
    return {"A": A, "B": B, "C": C}


def compare(p: PathParams, v: Variant, bits, observed) -> np.ndarray:
    """Indices ``(case, mat, m, n)`` where hardware and model differ."""
    return np.argwhere(model_mma(p, v, bits) != observed)


def dot_of(bits, idx):
    cs, mat, m, n = (int(x) for x in idx)
    return bits["A"][cs, mat, m, :].copy(), bits["B"][cs, mat, :, n].copy(), bits["C"][cs, mat, m, n]


def _simpler(t: str, x: int) -> list[int]:
    pt = ptx_type(t)
    if pt.kind != "float" or x == 0:
        return [0] if x else []
    enc = "f32" if t == "tf32" else t
    val = float(pt.decode(np.array([x]))[0])
    out = [0]
    if np.isfinite(val) and val != 0:
        e = np.floor(np.log2(abs(val)))
        for cand in (np.copysign(2.0**e, val), np.copysign(1.0, val)):
            try:
                out.append(int(ptx_type(enc).encode(np.array([cand]))[0]))
            except ValueError:
                pass
    return [y for y in out if y != x]


def shrink(backend, p: PathParams, v: Variant, a, b, c, rounds: int = 6):
    """Greedy shrink of one mismatching dot; each round is one launch of all candidate simplifications."""
    t = Types.of(v)

    def mismatching(rows):
        aa = np.array([r[0] for r in rows], dtype=np.uint64)
        bb = np.array([r[1] for r in rows], dtype=np.uint64)
        cc = np.array([r[2] for r in rows], dtype=np.uint64)
        bits, where = place(v, aa, bb, cc)
        obs = diagonal(run_mma(backend, v, bits), where)
        return obs != dot_bits(p, t, aa, bb, cc), obs

    cur = (a, b, c)
    for _ in range(rounds):
        cands = []
        for k in range(len(cur[0])):
            for y in _simpler(t.a, int(cur[0][k])):
                na = cur[0].copy()
                na[k] = y
                cands.append((na, cur[1], cur[2]))
            for y in _simpler(t.b, int(cur[1][k])):
                nb = cur[1].copy()
                nb[k] = y
                cands.append((cur[0], nb, cur[2]))
        for y in _simpler(t.c, int(cur[2])):
            cands.append((cur[0], cur[1], np.uint64(y)))
        if not cands:
            break
        bad, _ = mismatching(cands)
        if not bad.any():
            break
        cur = cands[int(np.argmax(bad))]
    _, obs = mismatching([cur])
    return cur, int(obs[0])


def save_case(out: Path, v: Variant, p: PathParams, dot, observed: int, seed, note: str) -> Path:
    t = Types.of(v)
    model = int(dot_bits(p, t, [dot[0]], [dot[1]], [dot[2]])[0])
    rec = {"variant": v.id, "path": p.name, "seed": seed, "note": note, "a": [hex(int(x)) for x in dot[0]],
           "b": [hex(int(x)) for x in dot[1]], "c": hex(int(dot[2])), "observed": hex(observed), "model": hex(model)}
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"mismatch-{v.id.replace('.', '_')}-{seed}.json"
    path.write_text(json.dumps(rec, indent=1))
    return path


class _Stop(Exception):
    pass


def fuzz_variant(backend, p: PathParams, v: Variant, budget: float, cases: int = 4096, out: Path | None = None,
                 seed: int = 0, log=print) -> dict:
    """Hypothesis-drawn recipes, one launch each, until ``budget`` seconds are spent.

    Launches start at a few MMAs and double while one takes under an eighth of what is left, up to ``cases``: the
    budget holds on a slow backend (the emulator computes every D with the model, f64 in Python) as on a GPU."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    stats = {"variant": v.id, "path": p.name, "launches": 0, "dots": 0, "mismatches": 0, "saved": []}
    if v.family == "wgmma":  # a warpgroup case holds 64 x N dots: about as many dots per launch as mma.sync
        cases = max(4, cases // 32)
    t_end = time.time() + budget
    observations = []
    size = {"cases": min(cases, 16)}

    @settings(max_examples=10**6, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck), phases=[__import__("hypothesis").Phase.generate])
    @given(st.integers(0, 2**31 - 1), st.integers(1, 60), st.floats(0, 0.9), st.integers(-40, 40),
           st.sampled_from([0.0, 0.01, 0.1]), st.sampled_from([0.0, 0.0, 0.001, 0.02]), st.integers(-70, 70))
    def one(s, spread, cancel, c_scale, sub_rate, special_rate, center):
        t0 = time.time()
        if t0 > t_end:
            raise _Stop
        bits = batch(v, seed * 1_000_003 + s, size["cases"], spread, cancel, c_scale, sub_rate, special_rate, center)
        obs = run_mma(backend, v, bits)
        stats["launches"] += 1
        stats["dots"] += int(obs.size)
        bad = compare(p, v, bits, obs)
        if (time.time() - t0) * 8 < t_end - time.time():
            size["cases"] = min(cases, size["cases"] * 2)
        if stats["launches"] == 1:
            observations.append(({k: x[:64] for k, x in bits.items()}, obs[:64]))
        if len(bad):
            stats["mismatches"] += len(bad)
            if len(stats["saved"]) < 3 and out is not None:
                dot = dot_of(bits, bad[0])
                small, o = shrink(backend, p, v, *dot)
                stats["saved"].append(str(save_case(out, v, p, small, o, int(s), f"recipe spread={spread} cancel={cancel:.2f} c_scale={c_scale}")))

    try:
        one()
    except _Stop:
        pass
    except Exception as exc:  # noqa: BLE001 - a failed launch ends this variant's fuzzing, recorded
        stats["error"] = f"{type(exc).__name__}: {exc}"
    stats["observations"] = observations
    return stats
