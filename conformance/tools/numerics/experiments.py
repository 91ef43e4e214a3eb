"""Designed experiments (in the style of Fasi et al. and Khattak & Mikaitis) and parameter inference.

Each group is a list of dot products built to be sensitive to one model parameter:
the parameter is inferred by evaluating the model with every candidate value on the
group's cases and keeping the candidates that reproduce every observed D bit pattern.
All groups of a variant run in one launch.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from conformance.spec.model import Variant
from conformance.spec.ptxtypes import ptx_type

from .harness import k_of
from .model import FORMATS, PathParams, Types, dot_bits


@dataclass
class Group:
    name: str
    param: tuple[str, ...]  # parameters fitted jointly
    candidates: list[dict]
    rows: list[tuple[list[float] | list[int], list[float] | list[int], float | int, str]] = field(default_factory=list)
    raw: bool = False  # rows are bits, not values


def _enc(t: str, vals) -> list[int]:
    return [int(x) for x in ptx_type(t).encode(np.asarray(vals, dtype=np.float64))]


class _Designer:
    def __init__(self, v: Variant, p: PathParams):
        self.t = Types.of(v)
        self.k = k_of(v)
        self.fa, self.fb = FORMATS.get(self.t.a), FORMATS.get(self.t.b)
        self.fc, self.fd = FORMATS.get(self.t.c), FORMATS.get(self.t.d)
        self.p = p

    def ok(self, t: str, x: float) -> bool:
        try:
            _enc("f32" if t == "tf32" else t, [x])
            return t != "tf32" or (x == 0 or abs(x) >= 2.0**-126) and abs(x) < 2.0**128
        except ValueError:
            return False

    def pair(self, e: int, sign: float = 1.0, mant: float = 1.0):
        """(a, b) with a*b = sign * mant * 2^e, both exactly representable (or None)."""
        for ea in sorted(range(self.fa.emin - self.fa.p, self.fa.emax + 1), key=lambda x: abs(x - e / 2)):
            a, b = sign * mant * 2.0**ea, 2.0 ** (e - ea)
            if self.ok(self.t.a, a) and self.ok(self.t.b, b):
                return a, b
        return None

    def mid_pair(self, e: int, sign=1.0, mant=1.0):
        """Like pair, but splits the exponent evenly when possible (both normal)."""
        return self.pair(e, sign, mant)

    def row(self, terms: dict[int, tuple[float, float]], c: float = 0.0):
        a = [0.0] * self.k
        b = [0.0] * self.k
        for k, (x, y) in terms.items():
            a[k], b[k] = x, y
        return a, b, c

    def e0(self) -> int:
        hi = min(self.fa.emax + self.fb.emax - 2, self.fd.emax - 3, self.fc.emax - 3, 12)
        return hi


def design(v: Variant, p: PathParams) -> list[Group]:
    if p.kind == "f64":
        return _design_f64(v, p)
    if p.kind in ("int", "b1"):
        return _design_int(v, p)
    d = _Designer(v, p)
    groups: list[Group] = []
    k, e0 = d.k, d.e0()
    # C pass-through: A = B = 0
    g = Group("c_passthrough", ("nan_bits",), [{}])
    cf = d.fc
    for c in [1.0, -1.5, 2.0 ** (cf.emin - cf.p + 1), -(2.0 ** (cf.emin - cf.p + 1)), 2.0**cf.emin, -0.0, 0.0,
              (2 - 2.0 ** (1 - cf.p)) * 2.0**cf.emax, 3.0 * 2.0**-5, np.inf, -np.inf]:
        g.rows.append(([0.0] * k, [0.0] * k, c, f"C={c!r}"))
    groups.append(g)
    # alignment window: anchor 2^e0, second term -2^(e0-j) (RZ-visible) and tie-breakers (RNE-visible)
    g = Group("alignment_window", ("frac_bits",), [{"frac_bits": f} for f in range(4, 45)])
    half = d.fd.p if d.fd else 24
    for j in range(1, 48):
        small = d.pair(e0 - j, -1.0)
        if small is None:
            continue
        g.rows.append(d.row({0: d.mid_pair(e0), k - 1: small}) + (f"2^{e0} - 2^{e0 - j}",))
        tie = d.pair(e0 - half, 1.0)
        tiny = d.pair(e0 - j, 1.0)
        if tie is not None and tiny is not None and j > half and k >= 3:
            g.rows.append(d.row({0: d.mid_pair(e0), 1: tie, k - 1: tiny}) + (f"2^{e0} + 2^{e0 - half} + 2^{e0 - j}",))
        if d.fc and e0 - j >= 2 * min(d.fa.emin, d.fb.emin) - 10:
            g.rows.append(d.row({k // 2: small}, c=2.0**e0) + (f"C=2^{e0} - 2^{e0 - j}",))
    groups.append(g)
    # final rounding: anchor +- r ulps at out_precision candidates
    g = Group("final_rounding", ("final_rounding", "out_precision"),
              [{"final_rounding": r, "out_precision": q} for r in ("rz", "rne", "rna", "ru", "rd") for q in range(8, 27)])
    for s in range(1, 28):
        for mant in (1.0, 1.5):
            for sign in (1.0, -1.0):
                add = d.pair(e0 - s, 1.0, mant)
                if add is None:
                    continue
                x = d.mid_pair(e0, sign)
                g.rows.append(d.row({0: x, 1: (add[0] * sign, add[1])}) + (f"{sign:+}(2^{e0} + {mant}*2^{e0 - s})",))
                g.rows.append(d.row({1: (add[0] * sign, add[1])}, c=sign * 2.0**e0) + (f"C={sign:+}2^{e0} + {mant}*2^{e0 - s}",))
    groups.append(g)
    # block size: C = 2^e0 and two terms of half an output ulp at positions i, j
    g = Group("block", ("block",), [{"block": b} for b in (1, 2, 4, 8, 16, 32, 64) if b <= max(k, 1) * 2])
    q = p.out_precision
    for i in range(k):
        for j in range(i + 1, k):
            x, y = d.pair(e0 - q, 1.0), d.pair(e0 - q, 1.0)
            if x is None:
                continue
            if j - i in (1, 2, 3, 4, 7, 8, 15, 16, 31) or (i, j) == (0, k - 1):
                g.rows.append(d.row({i: x, j: y}, c=2.0**e0) + (f"C=2^{e0}, k={i} and k={j} half ulp each",))
    groups.append(g)
    # normalisation: carries out of the anchor's position and massive cancellation
    g = Group("normalisation", ("frac_bits",), [{"frac_bits": f} for f in range(4, 45)])
    rng = np.random.default_rng(1)
    big = (2 - 2.0 ** (1 - d.fa.p))
    for n in (2, 3, 4, k):
        big_b = (2 - 2.0 ** (1 - d.fb.p))
        terms = {i: (big * 2.0 ** (e0 // 2 - 2), big_b * 2.0 ** (e0 - e0 // 2 - 2)) for i in range(min(n, k))}
        tail = d.pair(e0 - 4 - 20, -1.0)
        if tail is not None and k > n:
            terms[k - 1] = tail
        g.rows.append(d.row(terms) + (f"{n} products of (2-ulp)^2 (carry)",))
    for s in range(1, 30, 2):
        x = d.mid_pair(e0)
        y = d.pair(e0, -1.0)
        z = d.pair(e0 - s, 1.0, 1.5)
        if z is not None and y is not None and k >= 3:
            g.rows.append(d.row({0: x, 1: y, 2: z}) + (f"2^{e0} - 2^{e0} + 1.5*2^{e0 - s} (cancellation)",))
    for _ in range(8):
        row = {i: d.mid_pair(int(rng.integers(e0 - 12, e0)), float(rng.choice([-1, 1])), 1.0 + 0.5 * int(rng.integers(0, 2))) for i in range(k)}
        row = {i: t for i, t in row.items() if t is not None}
        g.rows.append(d.row(row) + ("random spread of 12 binades",))
    groups.append(g)
    # subnormals in (A or B subnormal) and out (result below the D type's normal range)
    g = Group("subnormals", ("in_subnormals", "out_subnormals"),
              [{"in_subnormals": i, "out_subnormals": o} for i in ("keep", "flush") for o in ("keep", "flush")])
    for s in range(1, d.fa.p):
        a_sub = 2.0 ** (d.fa.emin - s)
        g.rows.append(d.row({0: (a_sub, 1.0)}) + (f"a=2^{d.fa.emin - s} (subnormal) * 1",))
        g.rows.append(d.row({0: (a_sub, 1.0)}, c=1.0) + (f"1 + 2^{d.fa.emin - s}",))
    for e in range(d.fd.emin - 12, d.fd.emin + 2):
        x = d.pair(e, 1.0, 1.5) or d.pair(e)
        if x is not None:
            g.rows.append(d.row({0: x}) + (f"1.5*2^{e} (D subnormal range)",))
            g.rows.append(d.row({0: x}, c=-(2.0 ** d.fd.emin)) + (f"1.5*2^{e} - 2^{d.fd.emin}",))
    groups.append(g)
    # exponent floor: all terms tiny
    lo = 2 * min(d.fa.emin, d.fb.emin)
    g = Group("exponent_floor", ("exp_floor",), [{"exp_floor": None}] + [{"exp_floor": f} for f in range(-100, -170, -1)])
    for e1 in range(max(lo + 30, -160), -100, 4):
        for j in (5, 10, 15, 20, 24, 28):
            y = d.pair(e1 - j, -1.0)
            x = d.mid_pair(e1)
            if y is not None and x is not None:
                g.rows.append(d.row({0: x, 1: y}) + (f"2^{e1} - 2^{e1 - j}",))
    groups.append(g)
    # specials
    g = Group("specials", ("overflow", "neg_zero"),
              [{"overflow": o, "neg_zero": z} for o in ("inf", "saturate", "ieee") for z in ("ieee", "positive")])
    one = d.mid_pair(0)
    inf = np.inf if d.t.a not in ("e4m3",) else None
    if inf is not None:
        g.rows += [d.row({0: (inf, 1.0)}) + ("inf*1",), d.row({0: (inf, 0.0)}) + ("inf*0",),
                   d.row({0: (inf, 1.0), 1: (-inf, 1.0)}) + ("inf-inf",), d.row({0: (inf, 1.0)}, c=-np.inf) + ("inf + C=-inf",),
                   d.row({0: (-inf, 1.0)}, c=1.0) + ("-inf + 1",)]
    g.rows += [d.row({0: (np.nan, 1.0)}) + ("nan*1",), d.row({0: (1.0, np.nan)}, c=1.0) + ("1*nan + 1",),
               d.row({0: one}, c=np.nan) + ("1 + C=nan",),
               d.row({}, c=-0.0) + ("+0 products, C=-0",), d.row({0: (-0.0, 1.0)}, c=-0.0) + ("-0 product, C=-0",),
               d.row({i: (-0.0, 1.0) for i in range(k)}, c=-0.0) + ("all -0",),
               d.row({0: one, 1: (-one[0], one[1])}) + ("1 - 1",), d.row({0: one}, c=-1.0) + ("1 + C=-1",),
               d.row({0: (-one[0], one[1])}, c=1.0) + ("-1 + C=1",)]
    top = d.fd.emax
    for n in (1, 2, 4, k):
        x = d.pair(top, 1.0, 1.5)
        if x is not None:
            g.rows.append(d.row({i: x for i in range(min(n, k))}) + (f"{n} x 1.5*2^{top} (overflow)",))
            g.rows.append(d.row({i: (-x[0], x[1]) for i in range(min(n, k))}) + (f"{n} x -1.5*2^{top} (overflow)",))
    cmax = (2 - 2.0 ** (1 - d.fc.p)) * 2.0**d.fc.emax
    x = d.pair(d.fc.emax - d.fc.p + 2, 1.0)
    if x is not None:
        g.rows.append(d.row({0: x}, c=cmax) + ("C=max + 2 ulp",))
    groups.append(g)
    # raw bit patterns: NaN payloads, tf32 low bits
    g = Group("raw_bits", ("input_conversion",), [{"input_conversion": m} for m in ("truncate", "rna", "rne")], raw=True)
    ta = ptx_type(d.t.a)
    one_a = int(ta.encode(np.array([1.0]))[0]) if d.t.a != "tf32" else 0x3F800000
    one_b = int(ptx_type(d.t.b).encode(np.array([1.0]))[0]) if d.t.b != "tf32" else 0x3F800000
    zero_c = 0
    patterns = []
    if d.t.a == "tf32":
        for low in (0x1, 0xFFF, 0x1000, 0x1001, 0x1FFF, 0x2000 | 0x1000, 0x3000):
            patterns.append((0x3F800000 | low, f"1.0 | low bits {low:#x}"))
            patterns.append((0x3FFFE000 | (low & 0x1FFF), f"1.99.. | low bits {low & 0x1FFF:#x}"))
        patterns += [(0x7F800001, "NaN payload only in the low 13 bits"), (0x7FC00000, "quiet NaN"),
                     (0x7F7FF000, "max | 0x1000 (rounds to Inf under rna)"), (0x00001FFF, "subnormal below tf32 grid")]
    else:
        nan_bits = {"f16": [0x7E01, 0x7C01, 0xFE00], "bf16": [0x7FC1, 0x7F81], "e4m3": [0x7F, 0xFF], "e5m2": [0x7D, 0x7E, 0xFF, 0x7C, 0xFC]}
        patterns += [(x, f"raw {x:#x}") for x in nan_bits.get(d.t.a, [])]
    for bits_a, why in patterns:
        a = [0] * k
        b = [0] * k
        a[0], b[0] = bits_a, one_b
        g.rows.append((a, b, zero_c, why))
        a2 = list(a)
        a2[1] = one_a
        b2 = list(b)
        b2[1] = one_b
        g.rows.append((a2, b2, zero_c, why + " + 1"))
    groups.append(g)
    return [grp for grp in groups if grp.rows]


def _design_f64(v: Variant, p: PathParams) -> list[Group]:
    k = k_of(v)
    g = Group("f64_mode", ("f64_mode",), [{"f64_mode": m} for m in ("sequential_fma", "exact_dot")])
    for j in range(1, k):
        a = [0.0] * k
        a[0], a[j] = 2.0**-53, 2.0**-53
        g.rows.append((a, [1.0] * k, 1.0, f"1 + 2^-53 (k=0) + 2^-53 (k={j})"))
        a2 = [0.0] * k
        a2[0], a2[j] = 2.0**60, -(2.0**60)
        g.rows.append((a2, [1.0] * k, 1.0, f"1 + 2^60 (k=0) - 2^60 (k={j})"))
    rng = np.random.default_rng(2)
    for _ in range(16):
        g.rows.append((list(rng.standard_normal(k) * 2.0 ** rng.integers(-30, 30, k)), list(rng.standard_normal(k)), float(rng.standard_normal()), "random"))
    sp = Group("specials", ("nan_bits",), [{}])
    sp.rows += [([np.nan] + [0.0] * (k - 1), [1.0] * k, 0.0, "nan"), ([np.inf] + [0.0] * (k - 1), [0.0] * k, 0.0, "inf*0"),
                ([-0.0] * k, [1.0] * k, -0.0, "all -0"), ([1.0] + [0.0] * (k - 1), [1.0] * k, -1.0, "1 - 1"),
                ([1e308] * k, [10.0] * k, 0.0, "overflow"), ([2.0**-540] + [0.0] * (k - 1), [2.0**-540] + [0.0] * (k - 1), 0.0, "underflow")]
    return [g, sp]


def _design_int(v: Variant, p: PathParams) -> list[Group]:
    t = Types.of(v)
    k = k_of(v)
    ta, tb = ptx_type(t.a), ptx_type(t.b)
    lo_a, hi_a = ta.int_range() if ta.kind != "bits" else (0, 1)
    lo_b, hi_b = tb.int_range() if tb.kind != "bits" else (0, 1)
    g = Group("integer", (), [{}])
    g.raw = True
    rng = np.random.default_rng(3)
    for c in (0, 2**31 - 1, -(2**31), 2**31 - 2, -(2**31) + 1, 12345):
        for a_v, b_v in ((hi_a, hi_b), (lo_a, hi_b), (lo_a, lo_b), (hi_a, lo_b)):
            g.rows.append(([int(x) for x in ta.encode(np.full(k, a_v))], [int(x) for x in tb.encode(np.full(k, b_v))],
                           int(c) & 0xFFFFFFFF, f"all {a_v}*{b_v} + {c}"))
    for _ in range(16):
        a = ta.encode(rng.integers(lo_a, hi_a + 1, k))
        b = tb.encode(rng.integers(lo_b, hi_b + 1, k))
        g.rows.append(([int(x) for x in a], [int(x) for x in b], int(rng.integers(0, 2**32)), "random"))
    return [g]


def group_bits(v: Variant, g: Group):
    """(a_bits [N, K], b_bits [N, K], c_bits [N]) of a group."""
    t = Types.of(v)
    if g.raw:
        a = np.array([r[0] for r in g.rows], dtype=np.uint64)
        b = np.array([r[1] for r in g.rows], dtype=np.uint64)
        c = np.array([r[2] for r in g.rows], dtype=np.uint64)
        return a, b, c
    enc_a = (lambda vals: _enc("f32", vals)) if t.a == "tf32" else (lambda vals: _enc(t.a, vals))
    enc_b = (lambda vals: _enc("f32", vals)) if t.b == "tf32" else (lambda vals: _enc(t.b, vals))
    rows, enc = [], []
    for r in g.rows:
        try:
            enc.append((enc_a(r[0]), enc_b(r[1]), _enc(t.c, [r[2]])[0]))
            rows.append(r)
        except ValueError:
            continue  # not representable in this path's types: the design skips it
    g.rows = rows
    a = np.array([e[0] for e in enc], dtype=np.uint64)
    b = np.array([e[1] for e in enc], dtype=np.uint64)
    c = np.array([e[2] for e in enc], dtype=np.uint64)
    return a, b, c


@dataclass
class Inference:
    group: str
    params: tuple[str, ...]
    model: dict
    consistent: list[dict]
    agrees: bool
    cases: int
    mismatches: list[dict]  # the model's mismatches: case, inputs, observed, predicted


def infer(v: Variant, p: PathParams, g: Group, a, b, c, observed) -> Inference:
    t = Types.of(v)
    predicted = dot_bits(p, t, a, b, c)
    consistent = []
    for cand in g.candidates:
        try:
            q = replace(p, **cand) if cand else p
            if np.array_equal(dot_bits(q, t, a, b, c), observed):
                consistent.append(cand)
        except (ValueError, FloatingPointError):
            continue
    bad = np.nonzero(predicted != observed)[0]
    mism = [{"case": g.rows[i][3], "a": [hex(int(x)) for x in a[i]], "b": [hex(int(x)) for x in b[i]], "c": hex(int(c[i])),
             "observed": hex(int(observed[i])), "model": hex(int(predicted[i]))} for i in bad[:20]]
    model_vals = {k: getattr(p, k, None) for k in g.param}
    return Inference(g.name, g.param, model_vals, consistent, len(bad) == 0, len(g.rows), mism)
