"""A fuzzer that reaches the edges of each format, and its coverage.

Recipes draw whole dot products aimed at a target: the exponent T of the result (anywhere from below
D's smallest subnormal to above its largest finite, the sum shifted there as a whole), an exact rounding
tie of D at T with a term far below it, a term exactly at the alignment window's boundary, magnitudes
mixed over the whole product range, or an integer accumulator a few units from -2^31 or 2^31 - 1.
Coverage is two histograms per path: the exponent of every D the hardware returned (zero, each
subnormal binade, each normal exponent, Inf, NaN; for s32 the bit length and whether the exact sum
crossed a limit) and the shift of every aligned term below the anchor (0 .. frac_bits + 1, and beyond).
``fuzz_edges`` keeps drawing, aiming at the buckets not hit yet, until every bucket of the format is hit
or the cap is reached.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from ptxconf.isa.model import Variant
from ptxconf.isa.ptxtypes import ptx_type
from ptxconf.isa.sparse import is_sparse, sparsity
from ptxconf.isa.sparse import positions as pattern_positions

from .harness import capacity, diagonal, dims, k_of, path_of, place, run_mma
from .model import FORMATS, BlockTrace, PathParams, Types, dot_bits
from .spec import NumericsSpec

RECIPES = ("scale", "tie", "window", "mixed", "overflow")
SPECIAL_RATE = 0.005
INT_LIMIT = 2**31


# ---------------------------------------------------------------------------
# buckets
# ---------------------------------------------------------------------------


def result_buckets(d_type: str) -> list[str]:
    """Every bucket of D's format: ``zero``, ``sub<e>`` (subnormal with its leading bit at 2^e), ``e<e>``, ``inf``, ``nan``;
    s32: ``zero``, ``+<bits>``/``-<bits>`` (bit length of |D|) and ``crossed+``/``crossed-`` (the exact sum passed a limit)."""
    if d_type == "s32":
        return ["zero"] + [f"+{n}" for n in range(1, 32)] + [f"-{n}" for n in range(1, 33)] + ["crossed+", "crossed-"]
    f = FORMATS[d_type]
    return (["zero"] + [f"sub{e}" for e in range(f.emin - f.p + 1, f.emin)] + [f"e{e}" for e in range(f.emin, f.emax + 1)]
            + ["inf", "nan"])


def result_bucket_names(d_type: str, bits: np.ndarray, exact: np.ndarray | None = None) -> np.ndarray:
    """The bucket of each D (``bits``); for s32 ``exact`` (the unwrapped sums) tells a crossing."""
    bits = np.asarray(bits, dtype=np.uint64).ravel()
    if d_type == "s32":
        v = ptx_type("s32").decode(bits).astype(np.int64)
        n = np.where(v == 0, 0, np.floor(np.log2(np.maximum(np.abs(v), 1))).astype(np.int64) + 1)
        names = np.where(v == 0, "zero", np.char.add(np.where(v > 0, "+", "-"), n.astype(str)))
        if exact is not None:
            ex = np.asarray(exact, dtype=object).ravel()
            names = np.where(np.array([x > INT_LIMIT - 1 for x in ex]), "crossed+", names)
            names = np.where(np.array([x < -INT_LIMIT for x in ex]), "crossed-", names)
        return names
    v = np.abs(ptx_type(d_type).decode(bits).astype(np.float64))
    f = FORMATS[d_type]
    with np.errstate(divide="ignore", invalid="ignore"):
        e = np.floor(np.log2(np.where((v > 0) & np.isfinite(v), v, 1.0))).astype(np.int64)
    names = np.where(e < f.emin, np.char.add("sub", e.astype(str)), np.char.add("e", e.astype(str)))
    names = np.where(v == 0, "zero", names)
    names = np.where(np.isinf(v), "inf", names)
    return np.where(np.isnan(v), "nan", names)


def shift_buckets(p: PathParams) -> list[str]:
    """Shift of an aligned term below the anchor: ``s0`` .. ``s<frac_bits + 1>``, then ``below`` (cut off entirely)."""
    return [f"s{s}" for s in range(p.frac_bits + 2)] + ["below"]


def term_shifts(p: PathParams, trace: list[BlockTrace]) -> list[str]:
    """Shift-bucket names of every non-zero term of every block the model traced."""
    out: list[str] = []
    for bt in trace:
        if bt.exps is None:
            continue
        held = bt.terms != 0
        if bt.mask is not None:
            held[:, : bt.mask.shape[1]] &= bt.mask
        s = (bt.anchor[:, None] - bt.exps)[held]
        out += [f"s{x}" if x <= p.frac_bits + 1 else "below" for x in s.tolist()]
    return out


@dataclass
class PathCoverage:
    path: str
    d_type: str
    result: dict[str, int]
    shift: dict[str, int]
    dots: int = 0
    variants: list[str] = field(default_factory=list)

    @classmethod
    def new(cls, p: PathParams, d_type: str) -> PathCoverage:
        """The buckets the path can reach: a first rounding narrower than D leaves no subnormal below its own grid;
        ``.b1`` sums are never negative, so the exact sum cannot pass -2^31."""
        shift = {b: 0 for b in shift_buckets(p)} if p.kind == "float" else {}
        names = result_buckets(d_type)
        if p.kind == "float" and p.out_precision < FORMATS[d_type].p:
            lowest = FORMATS[d_type].emin - p.out_precision + 1
            names = [b for b in names if not (b.startswith("sub") and int(b[3:]) < lowest)]
        if p.kind == "b1":
            names = [b for b in names if b != "crossed-"]
        return cls(p.name, d_type, {b: 0 for b in names}, shift)

    def add(self, results, shifts) -> None:
        names, counts = np.unique(np.asarray(results, dtype=str), return_counts=True)
        for n, c in zip(names.tolist(), counts.tolist()):
            if n in self.result:
                self.result[n] += c
        self.dots += int(len(results))
        for s in shifts:
            if s in self.shift:
                self.shift[s] += 1

    def missing(self) -> dict[str, list[str]]:
        return {"result": [b for b, n in self.result.items() if not n], "shift": [b for b, n in self.shift.items() if not n]}

    def complete(self) -> bool:
        m = self.missing()
        return not m["result"] and not m["shift"]

    def to_json(self) -> dict:
        return {"path": self.path, "d_type": self.d_type, "dots": self.dots, "variants": self.variants,
                "result_exponent": self.result, "aligned_shift": self.shift, "missing": self.missing()}


def _ranges(names: list[str]) -> str:
    """``e-3, e-2, e-1, e5`` -> ``e-3..e-1, e5`` (runs of consecutive numbered buckets)."""
    out, run = [], []

    def num(n: str) -> tuple[str, int] | None:
        head = n.rstrip("0123456789").rstrip("-")
        tail = n[len(head):]
        return (head, int(tail)) if tail.lstrip("-").isdigit() else None

    def flush():
        if run:
            out.append(run[0] if len(run) == 1 else f"{run[0]}..{run[-1]}")
            run.clear()

    for n in names:
        k = num(n)
        prev = num(run[-1]) if run else None
        if k and prev and k[0] == prev[0] and k[1] == prev[1] + 1:
            run.append(n)
        else:
            flush()
            run.append(n)
    flush()
    return ", ".join(out)


def coverage_markdown(cov: dict[str, PathCoverage]) -> str:
    """A small table per path: buckets hit of each histogram, the ones missed, and the counts by range."""
    lines = ["| path | D | dots | result exponents hit | missed | aligned shifts hit | missed |", "|---|---|---|---|---|---|---|"]
    for name, c in sorted(cov.items()):
        m = c.missing()
        r_hit = sum(1 for n in c.result.values() if n)
        s_hit = sum(1 for n in c.shift.values() if n)
        lines.append(f"| {name} | .{c.d_type} | {c.dots} | {r_hit}/{len(c.result)} | {_ranges(m['result']) or '-'} | "
                     f"{s_hit}/{len(c.shift)} | {_ranges(m['shift']) or '-'} |")
    lines.append("")
    for name, c in sorted(cov.items()):
        lines.append(f"**{name}** result exponents (count per bucket): " + _histogram_line(c.result))
        if c.shift:
            lines.append(f"**{name}** aligned shifts: " + _histogram_line(c.shift))
        lines.append("")
    return "\n".join(lines)


def _histogram_line(h: dict[str, int]) -> str:
    return " ".join(f"{b}:{n}" for b, n in h.items() if n) or "(none)"


# ---------------------------------------------------------------------------
# recipes
# ---------------------------------------------------------------------------


def _factor(rng: np.random.Generator, t: str, e: np.ndarray, exact_pow2: np.ndarray) -> np.ndarray:
    """Values of type ``t`` with exponent ``e`` (clipped to the format): a random significand, or 1 where ``exact_pow2``."""
    f = FORMATS[t]
    e = np.clip(e, f.emin - f.p + 1, f.emax)
    m = 1.0 + rng.integers(0, 2 ** (f.p - 1), e.shape) / 2.0 ** (f.p - 1)
    m = np.where(exact_pow2, 1.0, m)
    return m * np.ldexp(1.0, e)


def _split(rng: np.random.Generator, ta: str, tb: str, target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exponents (ea, eb) of two factors whose product has exponent ``target``, each inside its format where possible."""
    fa, fb = FORMATS[ta], FORMATS[tb]
    lo_a, lo_b = fa.emin - fa.p + 1, fb.emin - fb.p + 1
    lo = np.maximum(lo_a, target - fb.emax)
    hi = np.minimum(fa.emax, target - lo_b)
    ea = np.where(hi >= lo, lo + np.floor(rng.random(target.shape) * (np.maximum(hi - lo, 0) + 1)).astype(np.int64),
                  np.clip(target // 2, lo_a, fa.emax))
    return ea, target - ea


def product_range(t: Types) -> tuple[int, int]:
    """Exponents of the smallest and largest non-zero product."""
    fa, fb = FORMATS[t.a], FORMATS[t.b]
    return fa.emin - fa.p + 1 + fb.emin - fb.p + 1, fa.emax + fb.emax + 1


def _encode(t: str, vals: np.ndarray) -> np.ndarray:
    return ptx_type("f32" if t == "tf32" else t).encode(vals, exact=False).astype(np.uint64)


def float_dots(v: Variant, p: PathParams, rng: np.random.Generator, n: int, recipe: str, targets: np.ndarray) -> tuple:
    """``n`` dot products of ``recipe`` aimed at result exponents ``targets [n]``: (a_bits, b_bits, c_bits)."""
    t = Types.of(v)
    k = k_of(v) if not is_sparse(v) else sparsity(v).k // 2
    fd, fc = FORMATS[t.d], FORMATS[t.c]
    lo, hi = product_range(t)
    T = np.asarray(targets, dtype=np.int64)[:, None]
    pow2 = np.zeros((n, k), dtype=bool)
    sign = np.where(rng.random((n, k)) < 0.25, -1.0, 1.0)
    use = np.ones((n, k), dtype=bool)
    c_val = np.zeros(n)
    if recipe == "scale":  # every term within a few binades below T: the sum shifted there as a whole
        e = T - rng.integers(0, 6, (n, k))
        use = rng.random((n, k)) < 0.7
    elif recipe == "mixed":  # magnitudes spread over the whole product range
        e = rng.integers(lo, hi + 1, (n, k))
        use = rng.random((n, k)) < 0.6
    elif recipe == "window":  # an anchor at T and terms exactly at (or one bit either side of) the window's edge
        e = T - p.frac_bits + rng.integers(-1, 2, (n, k))
        e[:, 0] = T[:, 0]
        pow2 = rng.random((n, k)) < 0.7
        pow2[:, 0] = True
        sign[:, 0] = 1.0
        use = rng.random((n, k)) < 0.5
        use[:, 0] = True
    elif recipe == "tie":  # 2^T, plus half an ulp of D at T (a tie), plus a term j binades further down
        half = np.where(T[:, 0] < fd.emin, fd.emin - fd.p, T[:, 0] - fd.p)
        j = rng.integers(1, p.frac_bits + 6, n)
        e = np.stack([T[:, 0], half, half - j] + [T[:, 0] - 60] * (k - 3), axis=1)[:, :k]
        pow2[:] = True
        sign[:, :2] = 1.0
        use = np.zeros((n, k), dtype=bool)
        use[:, : min(k, 3)] = True
        use[:, 2:3] &= rng.random((n, 1)) < 0.8
    elif recipe == "overflow":  # sums around D's largest finite
        e = np.full((n, k), fd.emax, dtype=np.int64) - rng.integers(0, 3, (n, k))
        sign[:] = 1.0
        use = rng.random((n, k)) < 0.5
        use[:, 0] = True
    else:
        raise ValueError(f"unknown recipe {recipe!r}")
    # beyond the products' reach C carries the target: below it the products are 0, above it they are smaller
    below, above = T[:, 0] < lo + 2, T[:, 0] > hi - 2
    c_val = np.where(below | above | (rng.random(n) < 0.15), np.ldexp(1.0 + rng.random(n), T[:, 0]), c_val)
    c_val = np.where(rng.random(n) < 0.5, c_val, -c_val) if recipe in ("scale", "mixed") else c_val
    use &= ~below[:, None]
    e = np.where(above[:, None], np.minimum(e, hi - 2), e)
    ea, eb = _split(rng, t.a, t.b, e)
    a = _factor(rng, t.a, ea, pow2) * sign
    b = _factor(rng, t.b, eb, pow2)
    a = np.where(use, a, 0.0)
    special = rng.random(n) < SPECIAL_RATE  # an Inf or a NaN now and then: the inf and nan buckets, and their rules
    a[:, 0] = np.where(special, np.where(rng.random(n) < 0.5, np.inf, np.nan), a[:, 0])
    c_lo = fc.emin - fc.p + 1
    c_val = np.where(np.abs(c_val) < 2.0**c_lo, 0.0, c_val)
    with np.errstate(over="ignore"):
        return _encode(t.a, a), _encode(t.b, b), _encode(t.c, c_val)


def int_dots(v: Variant, rng: np.random.Generator, n: int, targets: list[str] | None = None) -> tuple:
    """Integer dots whose accumulator lands a few units either side of -2^31 or 2^31 - 1, or (for ``targets`` such as
    ``+17``/``-3``) at that bit length."""
    t = Types.of(v)
    k = k_of(v) if not is_sparse(v) else sparsity(v).k // 2
    ta, tb = ptx_type(t.a), ptx_type(t.b)
    lo_a, hi_a = ta.int_range() if ta.kind != "bits" else (0, 1)
    lo_b, hi_b = tb.int_range() if tb.kind != "bits" else (0, 1)
    a = rng.integers(lo_a, hi_a + 1, (n, k))
    b = rng.integers(lo_b, hi_b + 1, (n, k))
    if t.bitop == "xor":
        s = (a ^ b).sum(-1)
    elif t.bitop == "and":
        s = (a & b).sum(-1)
    else:
        s = (a * b).sum(-1)
    limit = np.where(rng.random(n) < 0.5, INT_LIMIT - 1, -INT_LIMIT)
    c = limit - s + rng.integers(-4, 5, n)
    lengths = [x for x in targets or [] if (x[0] in "+-" and x[1:].isdigit()) or x == "zero"]
    if lengths:  # a result of each bit length asked for: D = +-(2^(n-1) + r), r < 2^(n-1); "zero": D = 0
        pick = np.array(lengths)[rng.integers(0, len(lengths), n)]
        bl = np.array([int(x[1:]) if x != "zero" else 1 for x in pick], dtype=np.int64)
        sgn = np.where(np.char.startswith(pick, "-"), -1, np.where(pick == "zero", 0, 1))
        mag = (np.int64(1) << (bl - 1)) + (rng.random(n) * (np.int64(1) << (bl - 1))).astype(np.int64)
        want = sgn * np.minimum(mag, INT_LIMIT - 1 + (sgn < 0))
        aim = rng.random(n) < 0.7
        c = np.where(aim, want - s, c)
        lowest = aim & (want == -INT_LIMIT)  # -2^31 itself: C alone (no products) when products cannot be negative
        a = np.where(lowest[:, None], 0, a)
        c = np.where(lowest, -INT_LIMIT, c)
    c = np.where(rng.random(n) < 0.1, rng.integers(-INT_LIMIT, INT_LIMIT, n), c)
    c = np.clip(c, -INT_LIMIT, INT_LIMIT - 1)
    return ta.encode(a).astype(np.uint64), tb.encode(b).astype(np.uint64), (c.astype(np.int64) & 0xFFFFFFFF).astype(np.uint64)


def random_positions(v: Variant, rng: np.random.Generator, n: int) -> np.ndarray:
    """Random legal stored positions ``[n, K/2]`` of a sparse variant."""
    sp = sparsity(v)
    pats = np.array(sp.patterns, dtype=np.int64)
    choice = pats[rng.integers(0, len(pats), (n, sp.chunks))]  # [n, chunk, 2]
    pos = pattern_positions(sp, choice) + (np.arange(sp.chunks) * sp.width)[:, None]
    return pos.reshape(n, -1)


def edge_dots(v: Variant, p: PathParams, rng: np.random.Generator, n: int, targets: list[str] | None = None) -> dict:
    """``n`` edge dots of ``v`` (a mix of every recipe), aimed at the result buckets ``targets`` when given."""
    t = Types.of(v)
    out: dict = {}
    if p.kind in ("int", "b1"):
        a, b, c = int_dots(v, rng, n, targets)
    else:
        fd = FORMATS[t.d]
        lo, _ = product_range(t)
        exps = []
        for name in targets or []:
            if name.startswith("sub"):
                exps.append(int(name[3:]))
            elif name.startswith("e"):
                exps.append(int(name[1:]))
            elif name == "zero":
                exps.append(min(fd.emin - fd.p - 2, lo))
            elif name == "inf":
                exps.append(fd.emax + 1)
        if not exps:
            exps = list(range(min(fd.emin - fd.p, lo), fd.emax + 2))
        tg = np.array(exps, dtype=np.int64)[rng.integers(0, len(exps), n)]
        recipe = np.array(RECIPES)[rng.integers(0, len(RECIPES), n)]
        a = np.zeros((n, k_of(v) if not is_sparse(v) else sparsity(v).k // 2), dtype=np.uint64)
        b = np.zeros_like(a)
        c = np.zeros(n, dtype=np.uint64)
        for r in RECIPES:
            sel = np.nonzero(recipe == r)[0]
            if len(sel):
                a[sel], b[sel], c[sel] = float_dots(v, p, rng, len(sel), r, tg[sel])
    if is_sparse(v):
        pos = random_positions(v, rng, n)
        k = sparsity(v).k
        full = np.zeros((n, k), dtype=np.uint64)
        full[np.arange(n)[:, None], pos] = b
        # the rows the metadata skips get values too: a skip must not see them
        other = _encode(t.b, np.ldexp(1.0 + rng.random((n, k)), rng.integers(-4, 5, (n, k)))) if p.kind == "float" else \
            ptx_type(t.b).encode(rng.integers(0, 2, (n, k))).astype(np.uint64)
        mask = np.ones((n, k), dtype=bool)
        mask[np.arange(n)[:, None], pos] = False
        out["pos"] = pos
        b = np.where(mask, other, full)
    out.update(a=a, b=b, c=c)
    return out


def exact_int_sums(t: Types, a_bits, b_bits, c_bits, pos=None) -> np.ndarray:
    """The unwrapped integer sums (object ints) of integer dots, for the ``crossed`` buckets."""
    a = ptx_type(t.a).decode(a_bits).astype(np.int64)
    b = ptx_type(t.b).decode(b_bits).astype(np.int64)
    if pos is not None:
        b = np.take_along_axis(b, pos, axis=-1)
    c = ptx_type("s32").decode(c_bits).astype(np.int64)
    s = (a ^ b).sum(-1) if t.bitop == "xor" else (a & b).sum(-1) if t.bitop == "and" else (a * b).sum(-1)
    return s + c


# ---------------------------------------------------------------------------
# the coverage-driven loop
# ---------------------------------------------------------------------------


def _observe(backend, v: Variant, dots: dict) -> np.ndarray:
    bits, where = place(v, dots["a"], dots["b"], dots["c"], pos=dots.get("pos"))
    return diagonal(run_mma(backend, v, bits), where)


def fuzz_edges(backend, spec: NumericsSpec, variants: list[Variant], budget: float, cases: int = 2048, out: Path | None = None,
               seed: int = 0, max_launches: int = 12, log=print) -> dict:
    """Edge recipes, one launch per draw, per variant until its path's buckets are all hit, ``max_launches`` or the budget.

    Returns ``{"coverage": {path: PathCoverage json}, "fuzz": [per-variant stats], "complete": bool}``; mismatching dots
    (hardware against the model) are saved under ``out/mismatches`` (three per variant at most)."""
    cov: dict[str, PathCoverage] = {}
    stats = []
    t_end = time.time() + budget
    for vi, v in enumerate(variants):
        p = path_of(spec, v)
        t = Types.of(v)
        c = cov.setdefault(p.name, PathCoverage.new(p, t.d))
        c.variants.append(v.id)
        st = {"variant": v.id, "path": p.name, "launches": 0, "dots": 0, "mismatches": 0, "saved": []}
        per = max(1.0, (t_end - time.time()) / max(1, len(variants) - vi))
        v_end = time.time() + per
        n = cases * capacity(v)
        if p.kind == "f64":
            n = min(n, 2048)  # the f64 model runs one fused multiply-add at a time
        rng = np.random.default_rng([seed, vi])
        while st["launches"] < max_launches and time.time() < v_end:
            missing = c.missing()["result"]
            dots = edge_dots(v, p, rng, n, missing if st["launches"] else None)
            try:
                obs = _observe(backend, v, dots)
            except Exception as exc:  # noqa: BLE001 - a failed launch ends this variant, recorded
                st["error"] = f"{type(exc).__name__}: {exc}"
                break
            trace: list[BlockTrace] = []
            model = dot_bits(p, t, dots["a"], dots["b"], dots["c"], trace if p.kind == "float" else None, sparse_pos=dots.get("pos"))
            exact = exact_int_sums(t, dots["a"], dots["b"], dots["c"], dots.get("pos")) if p.kind in ("int", "b1") else None
            c.add(result_bucket_names(t.d, obs, exact), term_shifts(p, trace) if p.kind == "float" else [])
            st["launches"] += 1
            st["dots"] += int(len(obs))
            bad = np.nonzero(model != obs)[0]
            st["mismatches"] += int(len(bad))
            if len(bad) and out is not None and len(st["saved"]) < 3:
                for i in bad[: 3 - len(st["saved"])]:
                    st["saved"].append(str(save_dot(out / "mismatches", v, p, dots, int(i), int(obs[i]), int(model[i]),
                                                    f"edges seed={seed} launch={st['launches']}")))
            if c.complete():
                break
        stats.append(st)
        log(f"{v.id}: {st['launches']} launches, {st['dots']} dots, {st['mismatches']} mismatches "
            f"(path {p.name}: {len(c.missing()['result'])} result, {len(c.missing()['shift'])} shift buckets unhit) {st.get('error', '')}")
    return {"coverage": {k: x.to_json() for k, x in cov.items()}, "fuzz": stats,
            "complete": all(x.complete() for x in cov.values()), "markdown": coverage_markdown(cov)}


def save_dot(out: Path, v: Variant, p: PathParams, dots: dict, i: int, observed: int, model: int, note: str) -> Path:
    """One mismatching dot as a replayable record (the format of ``fuzz.save_case``, with ``pos`` for mma.sp)."""
    rec = {"variant": v.id, "path": p.name, "seed": i, "note": note, "a": [hex(int(x)) for x in dots["a"][i]],
           "b": [hex(int(x)) for x in dots["b"][i]], "c": hex(int(dots["c"][i])), "observed": hex(observed), "model": hex(model)}
    if "pos" in dots:
        rec["pos"] = [int(x) for x in dots["pos"][i]]
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"edge-{v.id.replace('.', '_').replace('/', '_').replace(':', '_')}-{i}.json"
    path.write_text(json.dumps(rec, indent=1))
    return path


def discriminating_rows(v: Variant, p: PathParams, candidates: list[dict], draws: int = 4000, seed: int = 0,
                        most: int = 64) -> list[tuple]:
    """Edge dots that tell apart the parameter sets ``candidates``: drawn by the recipes, kept greedily while one
    separates pairs of candidates no kept dot separates yet.  Returns rows ``(a_bits, b_bits, c_bits, why)`` (mma.sp:
    ``pos`` as a fifth element)."""
    from dataclasses import replace

    rng = np.random.default_rng(seed)
    dots = edge_dots(v, p, rng, draws)
    t = Types.of(v)
    preds = np.stack([dot_bits(replace(p, **cand), t, dots["a"], dots["b"], dots["c"], sparse_pos=dots.get("pos"))
                      for cand in candidates])  # [cand, dot]
    i, j = np.triu_indices(len(candidates), 1)
    differ = preds[i] != preds[j]  # [pair, dot]
    open_pairs = differ.any(axis=1)  # pairs no dot can separate stay out
    rows = []
    while open_pairs.any() and len(rows) < most:
        gain = open_pairs.astype(np.int64) @ differ
        best = int(np.argmax(gain))
        if gain[best] == 0:
            break
        open_pairs &= ~differ[:, best]
        row = (dots["a"][best], dots["b"][best], dots["c"][best], f"separates {int(gain[best])} candidate pairs")
        rows.append(row + ((dots["pos"][best],) if "pos" in dots else ()))
    return rows


def dims_ok(v: Variant) -> bool:
    """Whether the fuzzer can place ``v``'s dots (every family the harness runs)."""
    return dims(v)[2] > 0
