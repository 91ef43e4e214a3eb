"""Designed experiments (in the style of Fasi et al. and Khattak & Mikaitis) and parameter inference.

Each group is a list of dot products built to be sensitive to one model parameter (one question):
the parameter is inferred by evaluating the model with every candidate value on the
group's cases and keeping the candidates that reproduce every observed D bit pattern.
All groups of a variant run in one launch.  The groups of the first campaigns keep their rows
(recorded runs stay aligned with their design); the edge groups follow them:

* ``underflow``: a sum at a rounding tie in D's subnormal range plus a term 1..63 binades below it
  (and just under D's smallest normal): the grid's floor (exp_floor) against a first rounding of the
  sum toward zero (final_rounding rz at out_precision bits, then RNE to D); a negative far term tells
  them apart;
* ``exponent_floor_low``: 2^e -/+ 2^(e-j) and ties across the whole product range, anchor a product or C;
* ``c_subnormal``: C in each binade of D's subnormal range: kept or flushed (out_subnormals);
* ``overflow_boundary``: D's largest finite plus 1/4 .. 3/2 of its last ulp, from C or products (overflow);
* ``c_order``: where C enters and the k order (c_entry, k_order);
* ``block_products``: half-ulp pairs and cancellations at every distance (block, where K allows);
* ``carry_rounding``: sums that carry past the anchor with a last bit (or 3/4 of one) at every window
  position (final_rounding, out_precision); ``wide_sum``: the widest sum a block makes, at a tie of D,
  plus the window's last bit (a first rounding narrower than the sum loses it);
* ``alignment_rounding``: a term a fraction of a grid unit past the window (align: truncate, rne, sticky);
* ``nan_payload``: NaN payloads in A, B, C, two NaNs (nan_propagation);
* ``shape_fit`` (shapes with overrides): dots drawn to separate the parameter sets near the overrides;
* f64: ``f64_order`` (ascending, descending, one rounding), ``f64_rounding`` (each .rn/.rz/.rm/.rp form:
  ties, 3/4 ulp, overflow, half the smallest subnormal, the sign of an exact zero), ``f64_nan``;
* integers: ``int_limits`` (C a few units either side of -2^31 and 2^31 - 1, wrap or .satfinite);
* mma.sp: every dense group on sparse positions (``sp.<group>``: does the sparse form follow the dense
  path?), ``sp_zeros`` (Inf/NaN in B rows the metadata leaves out: skipped or multiplied by 0),
  ``sp_order`` (one logical dot under both slot orders), ``sp.path`` (which path of the same types).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace

import numpy as np
from ptxconf.isa.model import Variant
from ptxconf.isa.ptxtypes import ptx_type
from ptxconf.isa.sparse import is_sparse, sparsity
from ptxconf.isa.sparse import positions as pattern_positions

from .edges import discriminating_rows
from .harness import first_positions, k_of, shape_key
from .model import FORMATS, PathParams, Types, dot_bits

ROUNDINGS = ("rz", "rne", "rna", "ru", "rd")
ALIGN = ("truncate", "rne", "sticky")
NAN_RULES = ("canonical", "payload_c_first", "payload_a_first")
F64_NAN_RULES = NAN_RULES + ("payload_c_b_a", "payload_b_c_a")  # f64: orders of one fused multiply-add's NaN operands
F64_MODES = ("sequential_fma", "reverse_fma", "exact_dot")
F64_NANS = (0x7FFFFFFFFFFFFFFF, 0xFFF8000000000000, 0x7FF8000000000000)
# NaN patterns with payloads, per container type: quiet, signalling, negative quiet
NAN_PATTERNS = {"f16": (0x7E01, 0x7C01, 0xFE02), "bf16": (0x7FC1, 0x7F81, 0xFFC2), "tf32": (0x7FC02000, 0x7F802000, 0xFFC04000),
                "f32": (0x7FC00001, 0x7F800001, 0xFFC00002), "e4m3": (0x7F, 0xFF), "e5m2": (0x7D, 0x7E, 0xFF),
                "f64": (0x7FF8000000000123, 0x7FF0000000000001, 0xFFF8000000000456)}


@dataclass
class Group:
    name: str
    param: tuple[str, ...]  # parameters fitted jointly
    candidates: list[dict]
    rows: list[tuple[list[float] | list[int], list[float] | list[int], float | int, str]] = field(default_factory=list)
    raw: bool = False  # rows are bits, not values
    positions: list[list[int]] | None = None  # mma.sp: the dense positions of each row's stored A elements
    pos_bits: np.ndarray | None = None  # the positions of the rows group_bits kept


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


def design(v: Variant, p: PathParams, alternatives: dict[str, PathParams] | None = None) -> list[Group]:
    """Every group of ``v``: the groups of the first campaigns (their rows never change, so a recorded run
    stays aligned with its design), then the edge groups.  ``alternatives``: other paths of the same types,
    whose parameter sets the sparse ``sp.path`` group tries."""
    if is_sparse(v):
        return _design_sparse(v, p, alternatives or {})
    if p.kind == "f64":
        return _design_f64(v, p) + _design_f64_edges(v, p)
    if p.kind in ("int", "b1"):
        return _design_int(v, p) + _design_int_edges(v, p)
    return (_design_float(v, p) + _design_float_edges(v, p) + _design_shape(v, p) + _design_zero_sign(v, p)
            + _design_operand_cvt(v, p) + _design_acc_type(v, p))


def _design_acc_type(v: Variant, p: PathParams) -> list[Group]:
    """acc_type (D narrower than f32): 2^-15 + 2^-24 + 2^-25 - 2^t in one half of the k order.  Held within D's (f16's)
    range the block's sum is cut at 2^-24 before the conversion to D; held within f32's it keeps the small terms and
    the conversion rounds them up.  Several t: a narrow alignment window loses the far ones either way.  Last in the
    design."""
    t = Types.of(v)
    fd = FORMATS[t.d]
    k = k_of(v)
    if fd.emin >= FORMATS["f32"].emin and fd.emax >= FORMATS["f32"].emax or k < 6:
        return []
    g = Group("acc_type", ("acc_type",), [{"acc_type": a} for a in ("d", "f32")])
    for tiny in (-26, -27, -28, -30, -32):
        a, b = [0.0] * k, [0.0] * k
        for slot, e, sign in ((0, -15, 1.0), (1, -24, 1.0), (4, -25, 1.0), (5, tiny, -1.0)):  # k mod 4 in {0, 1}
            a[slot], b[slot] = sign * 2.0 ** (e // 2), 2.0 ** (e - e // 2)
        g.rows.append((a, b, 0.0, f"2^-15 + 2^-24 + 2^-25 - 2^{tiny}"))
    group_bits(v, g)  # keeps the rows the types hold
    return [g] if g.rows else []


def _design_operand_cvt(v: Variant, p: PathParams) -> list[Group]:
    """operand_cvt (fp8 A/B): 2^-7 (an .e4m3 subnormal) * 2^8 - 2^-1 * 2^2 + 2^(1 - frac_bits): the subnormal's raw
    exponent sets the anchor (e4m3's emin: 2, as f16: 1), so the last term is cut or kept.  Last in the design."""
    t = Types.of(v)
    if not {t.a, t.b} <= {"e4m3", "e5m2"}:
        return []
    k = k_of(v)
    if k < 3:
        return []
    g = Group("operand_cvt", ("operand_cvt",), [{"operand_cvt": c} for c in ("none", "f16")])
    e = 1 - p.frac_bits
    for sub_on_a in (True, False):
        a, b = [0.0] * k, [0.0] * k
        a[0], b[0] = (2.0**-7, 2.0**8) if sub_on_a else (2.0**8, 2.0**-7)
        ea = max(FORMATS[t.a].emin - FORMATS[t.a].p + 1, min(e // 2, e - (FORMATS[t.b].emin - FORMATS[t.b].p + 1)))
        a[1], b[1] = 2.0**ea, 2.0 ** (e - ea)  # within both types' subnormal ranges where they reach
        a[2], b[2] = -0.5, 4.0
        g.rows.append((a, b, 0.0, f"2^-7 * 2^8 (subnormal on {'A' if sub_on_a else 'B'}) + 2^{e} - 2"))
    group_bits(v, g)  # keeps the rows the types hold
    return [g] if g.rows else []


def _design_zero_sign(v: Variant, p: PathParams) -> list[Group]:
    """underflow_sign: a negative sum below the last bit D's rounding keeps (D's smallest subnormal) alone (one product, or C alone), which rounds to
    zero: -0 keeps IEEE 754's sign, +0 drops it.  Last in the design, so runs recorded before it stay aligned."""
    t = Types.of(v)
    k = k_of(v)
    fd = FORMATS[t.d]
    g = Group("underflow_sign", ("underflow_sign",), [{"underflow_sign": s} for s in ("keep", "positive")])
    cut = fd.emin - min(p.out_precision, fd.p) + 1  # the last bit the rounding keeps in D's subnormal range
    for e in (cut - 1, cut - 2):  # half and a quarter of it
        ea = e // 2
        a, b = [0.0] * k, [0.0] * k
        a[0], b[0] = -(2.0**ea), 2.0 ** (e - ea)
        g.rows.append((a, b, 0.0, f"-2^{e} (one product)"))
        g.rows.append(([0.0] * k, [0.0] * k, -(2.0**e), f"C = -2^{e} alone"))
    group_bits(v, g)  # keeps the rows the types hold
    return [g] if g.rows else []


SHAPE_GRID = {"block": (1, 2, 4), "align": ("truncate", "rne"), "final_rounding": ("rz", "rne")}


def _design_shape(v: Variant, p: PathParams) -> list[Group]:
    """shape_fit: dots drawn to tell apart the parameter sets near a shape's overrides (where a joint fit over
    recorded cases left several), e.g. m8n8k4's pairwise accumulation."""
    over = sorted(p.overridden(shape_key(v)) & {"block", "align", "frac_bits", "out_precision", "final_rounding"})
    if not over or p.kind != "float":
        return []
    axes = []
    for k in over:
        cur = getattr(p, k)
        if k in SHAPE_GRID:
            axes.append(SHAPE_GRID[k])
        else:
            axes.append(tuple(range(cur - 1, cur + 3)) if k == "out_precision" else (cur - 1, cur, cur + 1))
    cands = [dict(zip(over, vals)) for vals in itertools.product(*axes)]
    g = Group("shape_fit", tuple(over), cands, raw=True)
    g.rows = [(list(a), list(b), int(c), why) for a, b, c, why in discriminating_rows(v, p, cands, draws=2000)]
    return [g] if g.rows else []


def _design_float(v: Variant, p: PathParams) -> list[Group]:
    d = _Designer(v, p)
    groups: list[Group] = []
    k, e0 = d.k, d.e0()
    # C pass-through: A = B = 0
    g = Group("c_passthrough", ("out_subnormals",), [{"out_subnormals": o} for o in ("keep", "flush")])
    cf = d.fc
    for c in [1.0, -1.5, 2.0 ** (cf.emin - cf.p + 1), -(2.0 ** (cf.emin - cf.p + 1)), 2.0**cf.emin, -0.0, 0.0,
              (2 - 2.0 ** (1 - cf.p)) * 2.0**cf.emax, 3.0 * 2.0**-5, np.inf, -np.inf]:
        g.rows.append(([0.0] * k, [0.0] * k, c, f"C={c!r}"))
    groups.append(g)
    # alignment window: anchor 2^e0, second term -2^(e0-j) (RZ-visible) and tie-breakers (RNE-visible)
    g = Group("alignment_window", ("frac_bits", "align"), [{"frac_bits": f, "align": al} for f in range(4, 45) for al in ALIGN])
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
              [{"final_rounding": r, "out_precision": q} for r in ROUNDINGS for q in range(8, 41)])
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
    g = Group("raw_bits", ("input_conversion", "nan_propagation"),
              [{"input_conversion": m, "nan_propagation": n} for m in ("truncate", "rna", "rne") for n in NAN_RULES], raw=True)
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
    g = Group("f64_mode", ("f64_mode",), [{"f64_mode": m} for m in F64_MODES])
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
    sp = Group("specials", ("nan_propagation", "nan_bits"), _nan_candidates(p, "f64"))
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
    g = Group("integer", ("integer",), [{"integer": "exact"}])
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


# ---------------------------------------------------------------------------
# edge groups: each isolates one question at the edges of the formats
# ---------------------------------------------------------------------------


def _float_nans(t: str) -> tuple[int, ...]:
    return NAN_PATTERNS[t]


def _ones(t: str) -> int:
    return 0x3F800000 if t == "tf32" else int(ptx_type(t).encode(np.array([1.0]))[0])


def _min_product_exp(d: _Designer) -> int:
    """The exponent of the smallest non-zero product of two inputs (both smallest subnormals)."""
    return d.fa.emin - d.fa.p + 1 + d.fb.emin - d.fb.p + 1 if d.t.a != "tf32" else 2 * d.fa.emin


def _design_float_edges(v: Variant, p: PathParams) -> list[Group]:
    d = _Designer(v, p)
    k, fd, e0 = d.k, d.fd, d.e0()
    groups: list[Group] = []
    # positions one block run takes (k_order pairs: k mod 4 in {0, 1}), so a row's terms meet in one block
    h = [j for j in range(k) if j % 4 < 2] if p.k_order == "pairs" else list(range(k))
    last = h[-1]

    # underflow: sums in D's subnormal range at a rounding tie, plus a term far below: the floor of the grid
    # (exp_floor) against a first rounding of the sum to a fixed grid (rz to out_precision bits, then RNE to D)
    u = fd.emin - fd.p + 1  # exponent of D's smallest subnormal
    cands = [{"exp_floor": f} for f in [None, *range(fd.emin - 40, fd.emin + 17)]]
    cands += [{"exp_floor": None, "final_rounding": "rz", "out_precision": q} for q in range(fd.p + 1, fd.p + 31)]
    cands += [{"exp_floor": None, "final_rounding": "rne", "out_precision": fd.p}]
    g = Group("underflow", ("exp_floor", "final_rounding", "out_precision"), cands)
    for e, mant, name in ((u - 1, 1.0, "u/2"), (u, 1.5, "3u/2"), (u, 1.25, "5u/4")):
        base = d.pair(e, 1.0, mant)
        if base is None:
            continue
        for j in range(1, 64):
            for sign in (1.0, -1.0):
                tiny = d.pair(u - 1 - j, sign)
                if tiny is not None and k >= 2:
                    g.rows.append(d.row({h[0]: base, last: tiny}) + (f"{name} {'+' if sign > 0 else '-'} 2^{u - 1 - j}",))
    for j in range(1, fd.p + 3):  # just below D's smallest normal
        x, y = d.pair(fd.emin), d.pair(fd.emin - j, -1.0)
        if x is not None and y is not None and k >= 2:
            g.rows.append(d.row({h[0]: x, h[1]: y}) + (f"2^{fd.emin} - 2^{fd.emin - j} (normal boundary)",))
    groups.append(g)

    # c_subnormal: C in each binade of D's subnormal range (no products, or one that carries it to a normal):
    # whether D keeps or flushes subnormals, on the grid the first rounding leaves there
    g = Group("c_subnormal", ("out_subnormals",), [{"out_subnormals": o} for o in ("keep", "flush")])
    fc = d.fc
    for e in range(max(u, fc.emin - fc.p + 1), fd.emin):
        for mant in (1.0, 1.5, 1.75):
            g.rows.append(d.row({}, c=mant * 2.0**e) + (f"C={mant}*2^{e}",))
            g.rows.append(d.row({}, c=-mant * 2.0**e) + (f"C=-{mant}*2^{e}",))
        up = d.pair(fd.emin - 1, 1.0)
        if up is not None:
            g.rows.append(d.row({h[0]: up}, c=2.0**e) + (f"C=2^{e} + 2^{fd.emin - 1}",))
    groups.append(g)

    # exponent_floor_low: 2^e - 2^(e-j) and ties plus 2^(e-j) across the whole product range (down to the
    # smallest product), with the anchor a product or C: where the grid stops getting finer
    lo = max(_min_product_exp(d) + 1, -170)
    g = Group("exponent_floor_low", ("exp_floor",), [{"exp_floor": f} for f in [None, *range(max(lo - 30, -200), 3)]])
    for e1 in range(lo, min(e0, 0) + 1, 3):
        for j in (1, 4, 8, 12, 16, 20, 23, 24, 25, 26, 28):
            x, y = d.pair(e1), d.pair(e1 - j, -1.0)
            if x is not None and y is not None and k >= 2:
                g.rows.append(d.row({h[0]: x, h[1]: y}) + (f"2^{e1} - 2^{e1 - j}",))
                g.rows.append(d.row({h[1]: y}, c=2.0**e1) + (f"C=2^{e1} - 2^{e1 - j}",))
            tie, up = d.pair(e1 - fd.p, 1.0), d.pair(e1 - j, 1.0)
            if x is not None and tie is not None and up is not None and j > fd.p and k >= 3:
                g.rows.append(d.row({h[0]: x, h[1]: tie, last: up}) + (f"2^{e1} + 2^{e1 - fd.p} + 2^{e1 - j} (tie)",))
    groups.append(g)

    # overflow_boundary: D's largest finite plus a fraction of its ulp, under the final rounding
    top = (2 - 2.0 ** (1 - fd.p)) * 2.0**fd.emax
    ulp_e = fd.emax - fd.p + 1
    g = Group("overflow_boundary", ("overflow",), [{"overflow": o} for o in ("inf", "saturate", "ieee")])
    big = d.pair(fd.emax, 1.0, 2 - 2.0 ** (1 - fd.p))
    for frac, name in ((0.25, "ulp/4"), (0.5, "ulp/2"), (0.75, "3ulp/4"), (1.0, "ulp"), (1.5, "3ulp/2")):
        for sign in (1.0, -1.0):
            add = d.pair(ulp_e + int(np.floor(np.log2(frac))), sign, frac / 2.0 ** np.floor(np.log2(frac)))
            if add is None:
                continue
            g.rows.append(d.row({0: add}, c=sign * top) + (f"C={'+' if sign > 0 else '-'}max {'+' if sign > 0 else '-'} {name}",))
            if big is not None and k >= 2:
                g.rows.append(d.row({0: (sign * big[0], big[1]), 1: add}) + (f"{'+' if sign > 0 else '-'}(max + {name}) from products",))
    for n in (2, k):
        x = d.pair(fd.emax, 1.0, 1.0)
        if x is not None and k >= n:
            g.rows.append(d.row({i: x for i in range(n)}) + (f"{n} x 2^{fd.emax}",))
    groups.append(g)

    # c_order: where C enters (fused with the products, after them, or added last with RNE) and the k order
    cands = [{"c_entry": c, "k_order": o} for c in ("fused", "late", "add_rne", "block_add")
             for o in (("natural", "pairs") if k >= 4 else ("natural",))]
    g = Group("c_order", ("c_entry", "k_order"), cands)
    P = fd.p
    for sign in (1.0, -1.0):
        add = d.pair(e0 - P, sign, 1.5)
        if add is not None:
            g.rows.append(d.row({k - 1: add}, c=sign * 2.0**e0) + (f"C={sign:+}2^{e0} + 0.75 ulp",))
        x, y = d.mid_pair(e0), d.pair(e0, -1.0)
        if x is not None and y is not None and k >= 2:
            g.rows.append(d.row({0: x, 1: y}, c=sign * 2.0 ** (e0 - 30)) + (f"2^{e0} - 2^{e0} + C={sign:+}2^{e0 - 30}",))
        if x is not None and y is not None and add is not None and k >= 4:
            g.rows.append(d.row({0: (sign * x[0], x[1]), 1: add, 2: (sign * y[0], y[1])})
                          + (f"{sign:+}(2^{e0} + 0.75 ulp (k0, k1) - 2^{e0} (k2))",))
            g.rows.append(d.row({0: (sign * x[0], x[1]), 3: add, 2: (sign * y[0], y[1])})
                          + (f"{sign:+}(2^{e0} (k0) - 2^{e0} (k2) + 0.75 ulp (k3))",))
    groups.append(g)

    # block_products: the anchor a product at k0 and two half-ulp products at i, j: one block keeps both
    g = Group("block_products", ("block",), [{"block": b} for b in (1, 2, 4, 8, 16, 32, 64) if b <= max(k, 1) * 2])
    x, neg = d.mid_pair(e0), d.pair(e0, -1.0)
    q = min(P, p.out_precision, p.frac_bits)
    half = d.pair(e0 - q, 1.0)
    tiny = d.pair(e0 - p.frac_bits - 5, 1.0)
    for i in range(1, k):
        for j in range(i + 1, k):
            if not (j - i in (1, 2, 3, 4, 7, 8, 15, 16, 31) or j == k - 1):
                continue
            if x is not None and half is not None:
                g.rows.append(d.row({0: x, i: half, j: half}) + (f"2^{e0} (k0), half ulp at k={i} and k={j}",))
            if x is not None and neg is not None and tiny is not None:  # cancels within a block; survives across blocks
                g.rows.append(d.row({0: x, i: neg, j: tiny}) + (f"2^{e0} (k0) - 2^{e0} (k={i}) + 2^{e0 - p.frac_bits - 5} (k={j})",))
                g.rows.append(d.row({i: neg, j: tiny}, c=2.0**e0) + (f"C=2^{e0} - 2^{e0} (k={i}) + 2^{e0 - p.frac_bits - 5} (k={j})",))
    groups.append(g)

    # carry_rounding: equal top terms whose sum carries past the anchor, plus a term near the window's last bit:
    # the sum needs more bits than the window, so its first rounding (mode and precision) shows
    g = Group("carry_rounding", ("final_rounding", "out_precision"),
              [{"final_rounding": r, "out_precision": q_} for r in ROUNDINGS for q_ in range(8, 41)])
    for n in sorted({2, 3, 4, 8, 16, len(h) - 2} & set(range(2, len(h) - 1))):
        for s_ in range(1, p.frac_bits + 1):
            for sign in (1.0, -1.0):
                top, low, lower = d.pair(e0, sign), d.pair(e0 - s_, sign, 1.0), d.pair(e0 - s_ - 1, sign, 1.0)
                if top is None or low is None:
                    continue
                row = {h[i]: top for i in range(n)}
                row[h[n]] = low
                g.rows.append(d.row(row) + (f"{sign:+}({n} x 2^{e0} + 2^{e0 - s_})",))
                if lower is not None and s_ < p.frac_bits:  # 3/4 of a last bit: to nearest and toward zero differ
                    g.rows.append(d.row({**row, h[n + 1]: lower}) + (f"{sign:+}({n} x 2^{e0} + 1.5 * 2^{e0 - s_})",))
    groups.append(g)

    # wide_sum: many products at the largest significands (the widest sum a block makes), plus half an ulp of D
    # (a tie) and the window's last bit: only a first rounding narrower than the sum loses that bit
    g = Group("wide_sum", ("final_rounding", "out_precision"),
              [{"final_rounding": r, "out_precision": q_} for r in ROUNDINGS for q_ in range(8, 41)])
    ma, mb = 2 - 2.0 ** (1 - d.fa.p), 2 - 2.0 ** (1 - d.fb.p)
    for n in range(max(2, len(h) // 2), len(h) - 1):
        grow = int(np.floor(np.log2(n * ma * mb)))
        e = min(e0, fd.emax - 2 - grow)  # the sum stays below D's largest finite
        ea, eb = e // 2, e - e // 2
        lead = grow + e
        tie, low = d.pair(lead - fd.p, 1.0), d.pair(e - p.frac_bits, 1.0)
        if tie is None or low is None or lead - fd.p < e - p.frac_bits or not (
                d.ok(d.t.a, ma * 2.0**ea) and d.ok(d.t.b, mb * 2.0**eb)):
            continue
        for sign in (1.0, -1.0):
            row = {h[i]: (sign * ma * 2.0**ea, mb * 2.0**eb) for i in range(n)}
            row[h[n]] = (sign * tie[0], tie[1])
            name = f"{sign:+}({n} x max^2 * 2^{e} + half ulp"
            g.rows.append(d.row(row) + (name + ")",))
            for below in (1.0, -1.0):  # the window's last bit above or below the tie
                g.rows.append(d.row({**row, h[n + 1]: (sign * below * low[0], low[1])}) + (f"{name} {below:+}2^{e - p.frac_bits})",))
    groups.append(g)

    # alignment_rounding: a term a fraction of a grid unit off the window's edge: truncated, rounded, or sticky
    g = Group("alignment_rounding", ("align",), [{"align": al} for al in ALIGN])
    fb = p.frac_bits
    for s_ in (0, 1, 2):
        for mant in (1.25, 1.5, 1.75):
            for sign in (1.0, -1.0):
                x, y = d.mid_pair(e0), d.pair(e0 - fb - s_, sign, mant)
                tie = d.pair(e0 - fd.p, 1.0)
                if x is None or y is None or k < 2:
                    continue
                g.rows.append(d.row({h[0]: x, last: y}) + (f"2^{e0} {sign:+}{mant}*2^{e0 - fb - s_}",))
                if tie is not None and k >= 3:
                    g.rows.append(d.row({h[0]: x, h[1]: tie, last: y}) + (f"2^{e0} + 2^{e0 - fd.p} (tie) {sign:+}{mant}*2^{e0 - fb - s_}",))
    groups.append(g)

    # nan_payload: which NaN comes out: the D type's own, or an operand's payload (whose first)
    g = Group("nan_payload", ("nan_propagation",), [{"nan_propagation": n} for n in NAN_RULES], raw=True)
    one_a, one_b = _ones(d.t.a), _ones(d.t.b)
    zero = [0] * k
    for na in _float_nans(d.t.a):
        g.rows.append(([na] + zero[1:], [one_b] + zero[1:], 0, f"A={na:#x}"))
        for nc in _float_nans(d.t.c)[:2]:
            g.rows.append(([na] + zero[1:], [one_b] + zero[1:], nc, f"A={na:#x}, C={nc:#x}"))
        if k >= 2:
            other = _float_nans(d.t.a)[-1]
            g.rows.append(([one_a, na] + zero[2:], [one_b, one_b] + zero[2:], 0, f"A k1={na:#x}"))
            g.rows.append(([other, na] + zero[2:], [one_b, one_b] + zero[2:], 0, f"A k0={other:#x}, k1={na:#x}"))
    for nb in _float_nans(d.t.b):
        g.rows.append(([one_a] + zero[1:], [nb] + zero[1:], 0, f"B={nb:#x}"))
        g.rows.append(([_float_nans(d.t.a)[0]] + zero[1:], [nb] + zero[1:], 0, f"A={_float_nans(d.t.a)[0]:#x}, B={nb:#x}"))
    for nc in _float_nans(d.t.c):
        g.rows.append((zero, zero, nc, f"C={nc:#x}"))
        g.rows.append(([one_a] + zero[1:], [one_b] + zero[1:], nc, f"1 + C={nc:#x}"))
    groups.append(g)
    return [grp for grp in groups if grp.rows]


def _design_f64_edges(v: Variant, p: PathParams) -> list[Group]:
    k = k_of(v)
    groups = []
    # f64_order: the order of the fused multiply-adds (ascending k from C, descending, or one rounding)
    g = Group("f64_order", ("f64_mode",), [{"f64_mode": m} for m in F64_MODES])
    big = 2.0**60
    for i, j, m in ((0, 1, 2), (2, 1, 0), (0, k - 1, 1), (k - 1, 0, k - 2)):
        if len({i, j, m}) < 3:
            continue
        a = [0.0] * k
        a[i], a[j], a[m] = big, -big, 1.0
        g.rows.append((a, [1.0] * k, 1.0, f"C=1, 2^60 (k={i}), -2^60 (k={j}), 1 (k={m})"))
    groups.append(g)
    # f64_rounding: each fused multiply-add rounded as the modifier says, ties, overflow, underflow, zero sign
    g = Group("f64_rounding", ("f64_rnd", "f64_mode"), [{"f64_rnd": r, "f64_mode": m} for r in ("each_fma", "ignored") for m in F64_MODES])
    ulp = 2.0**-52
    for sign in (1.0, -1.0):
        for frac in (0.25, 0.5, 0.75, 1.5):
            a = [0.0] * k
            a[0] = sign * frac * ulp
            g.rows.append((a, [1.0] * k, sign, f"{sign:+}(1 + {frac} ulp)"))
        a = [0.0] * k
        a[0], a[1] = sign * 0.75 * ulp, sign * 0.75 * ulp
        g.rows.append((a, [1.0] * k, sign, f"{sign:+}(1 + 0.75 ulp + 0.75 ulp)"))
        a = [0.0] * k
        a[0] = sign * 2.0**1023
        g.rows.append((a, [1.0] * k, sign * float(np.finfo(np.float64).max), f"{sign:+}(max + 2^1023)"))
        a = [0.0] * k
        a[0] = sign * 2.0**-538
        g.rows.append((a, [2.0**-537] + [0.0] * (k - 1), 0.0, f"{sign:+}2^-1075 (half the smallest subnormal)"))
        a = [0.0] * k
        a[0] = sign * 3 * 2.0**-538
        g.rows.append((a, [2.0**-537] + [0.0] * (k - 1), 0.0, f"{sign:+}3 * 2^-1075"))
    a = [0.0] * k
    a[0] = 1.0
    g.rows.append((a, [1.0] * k, -1.0, "1 - 1 (zero sign)"))
    groups.append(g)
    # f64_nan: payloads of NaN operands (quieted?), which wins, the invalid-operation NaN
    g = Group("f64_nan", ("nan_propagation", "nan_bits"), _nan_candidates(p, "f64"), raw=True)
    one = 0x3FF0000000000000
    zero = [0] * k
    ones = [one] * k
    nans = NAN_PATTERNS["f64"]
    for n in nans:
        g.rows.append(([n] + zero[1:], ones, 0, f"A={n:#x}"))
        g.rows.append(([one] + zero[1:], [n] + ones[1:], 0, f"B={n:#x}"))
        g.rows.append((zero, ones, n, f"C={n:#x}"))
    g.rows.append(([nans[0]] + zero[1:], ones, nans[2], "A and C NaN"))
    g.rows.append(([nans[0], nans[2]] + zero[2:], ones, 0, "A k0 and k1 NaN"))
    g.rows.append(([nans[0]] + zero[1:], [nans[2]] + ones[1:], 0, "A and B NaN"))
    g.rows.append(([0x7FF0000000000000, 0xFFF0000000000000] + zero[2:], ones, 0, "Inf - Inf"))
    g.rows.append(([0x7FF0000000000000] + zero[1:], [0x8000000000000000] + ones[1:], 0, "Inf * -0"))
    g.rows.append(([0xFFF0000000000000] + zero[1:], ones, 0x7FF0000000000000, "-Inf + C=Inf"))
    groups.append(g)
    # f64_nan_order: B and C NaN with different payloads.  f64_nan records C over A, B over A and an earlier step's NaN
    # over a later A, which leaves the place of C against B open (payload_c_b_a vs payload_b_c_a); a group of its own,
    # after every recorded one, so runs recorded before it re-infer unchanged
    g = Group("f64_nan_order", ("nan_propagation", "nan_bits"), _nan_candidates(p, "f64"), raw=True)
    g.rows.append(([one] + zero[1:], [nans[0]] + ones[1:], nans[2], "B and C NaN"))
    g.rows.append(([one] + zero[1:], [nans[2]] + ones[1:], nans[0], "B and C NaN, payloads swapped"))
    groups.append(g)
    return groups


def _nan_candidates(p: PathParams, t: str) -> list[dict]:
    return [{"nan_propagation": n, "nan_bits": {**p.nan_bits, t: b}} for n in F64_NAN_RULES for b in F64_NANS]


def _design_int_edges(v: Variant, p: PathParams, n: int | None = None) -> list[Group]:
    """int_limits: accumulators a few units from -2^31 and 2^31 - 1, crossing them by -2..2 (wrap or .satfinite);
    ``n`` non-zero products (all K by default)."""
    t = Types.of(v)
    k = k_of(v)
    n = k if n is None else n
    ta, tb = ptx_type(t.a), ptx_type(t.b)
    lo_a, hi_a = ta.int_range() if ta.kind != "bits" else (0, 1)
    lo_b, hi_b = tb.int_range() if tb.kind != "bits" else (0, 1)
    g = Group("int_limits", ("integer",), [{"integer": "exact"}], raw=True)
    for a_v, b_v in ((hi_a, hi_b), (lo_a, hi_b), (1, 1), (hi_a, 1)):
        a = np.array([a_v] * n + [0] * (k - n))
        b = np.full(k, b_v)
        s = int(_int_dot_value(t, a, b))
        for limit in (2**31 - 1, -(2**31)):
            for delta in (-2, -1, 0, 1, 2):
                c = limit - s + delta
                if -(2**31) <= c < 2**31:
                    g.rows.append(([int(x) for x in ta.encode(a)], [int(x) for x in tb.encode(b)], c & 0xFFFFFFFF,
                                   f"sum {s} + C={c} ({'+' if delta >= 0 else ''}{delta} past {limit})"))
    return [g]


def _int_dot_value(t: Types, a: np.ndarray, b: np.ndarray) -> int:
    if t.bitop == "xor":
        return int((a ^ b).sum())
    if t.bitop == "and":
        return int((a & b).sum())
    return int((a.astype(np.int64) * b.astype(np.int64)).sum())


# ---------------------------------------------------------------------------
# mma.sp
# ---------------------------------------------------------------------------


def sparse_positions(v: Variant, nonzero: list[int]) -> list[int] | None:
    """Stored positions (``K/2``, slot order) covering the dense positions ``nonzero``: per chunk the first legal
    pattern that holds them; None when a chunk holds more than the sparsity allows."""
    sp = sparsity(v)
    out = []
    for ch in range(sp.chunks):
        need = {x - ch * sp.width for x in nonzero if ch * sp.width <= x < (ch + 1) * sp.width}
        for pat in sp.patterns:
            got = [int(x) for x in pattern_positions(sp, np.array([pat]))[0]]
            if need <= set(got):
                out += [ch * sp.width + x for x in got]
                break
        else:
            return None
    return out


def _transplant(v: Variant, g: Group, name: str) -> Group:
    """A dense group's rows as sparse dots: each row's non-zero A elements kept where the sparsity allows them,
    else moved in order onto the first legal positions; rows with more than K/2 non-zeros are dropped."""
    out = Group(name, g.param, g.candidates, raw=g.raw, positions=[])
    first = [int(x) for x in first_positions(v)]
    zero = 0 if g.raw else 0.0
    for a, b, c, why in g.rows:
        nz = [i for i, x in enumerate(a) if x != 0]
        pos = sparse_positions(v, nz)
        a2, b2 = list(a), list(b)
        if pos is None:
            if len(nz) > len(first):
                continue
            a2, b2 = [zero] * len(a), [zero] * len(b)
            for i, j in zip(nz, first):
                a2[j], b2[j] = a[i], b[i]
            pos = first
        keep = set(pos)
        b2 = [x if i in keep or a2[i] != 0 else zero for i, x in enumerate(b2)]  # B rows the metadata skips: 0
        out.rows.append(([a2[i] for i in pos], b2, c, why))
        out.positions.append(pos)
    return out


def _design_sparse(v: Variant, p: PathParams, alternatives: dict[str, PathParams]) -> list[Group]:
    """mma.sp: the dense groups on sparse positions (does the sparse form match the dense path?), whether the
    metadata's zeroed positions are skipped or multiplied by 0, and whether the slot order matters."""
    groups = []
    if p.kind in ("int", "b1"):
        dense = _design_int(v, p) + _design_int_edges(v, p, k_of(v) // 2)
    else:
        dense = _design_float(v, p) + _design_float_edges(v, p)
    for g in dense:
        sg = _transplant(v, g, "sp." + g.name)
        if sg.rows:
            groups.append(sg)
    if p.kind != "float":
        return groups
    sp = sparsity(v)
    t = Types.of(v)
    k = k_of(v)
    first = [int(x) for x in first_positions(v)]
    one_a, one_b = _ones(t.a), _ones(t.b)
    # sp_zeros: an Inf or NaN in a B row the metadata does not select
    g = Group("sp_zeros", ("sparse_zeros",), [{"sparse_zeros": z} for z in ("skip", "multiply")], raw=True, positions=[])
    inf_b = int(ptx_type(_container_of(t.b)).encode(np.array([np.inf]))[0]) if t.b != "e4m3" else None
    specials = [x for x in (inf_b, inf_b and inf_b | (1 << (ptx_type(_container_of(t.b)).bits - 1))) if x] + list(_float_nans(t.b)[:2])
    unselected = [i for i in range(k) if i not in first]
    for bad in specials:
        for where in unselected[:: max(1, len(unselected) // 4)]:
            b = [one_b if i in first else 0 for i in range(k)]
            b[where] = bad
            for c in (0, _enc(t.c, [1.0])[0]):
                g.rows.append(([one_a] * len(first), b, c, f"B k={where} (not selected) = {bad:#x}, C={c:#x}"))
                g.positions.append(first)
        b = [one_b if i in first else 0 for i in range(k)]
        b[first[0]] = bad
        g.rows.append(([0] + [one_a] * (len(first) - 1), b, 0, f"A slot 0 = 0 times B = {bad:#x} (selected)"))
        g.positions.append(first)
    groups.append(g)
    # sp_order: one logical dot with the metadata's two indices of every chunk in either order (mma.sp only)
    if not sp.ordered and sp.nz == 2:
        base = [grp for grp in groups if grp.name in ("sp.alignment_window", "sp.normalisation", "sp.block_products", "sp.c_order")]
        g = Group("sp_order", ("sparse_order",), [{"sparse_order": o} for o in ("position", "slot")], positions=[])
        for grp in base:
            for (a, b, c, why), pos in zip(grp.rows, grp.positions):
                rev = [x for ch in range(sp.chunks) for x in reversed(pos[2 * ch : 2 * ch + 2])]
                a_rev = [x for ch in range(sp.chunks) for x in reversed(a[2 * ch : 2 * ch + 2])]
                g.rows += [(a, b, c, f"{why} | slots ascending"), (a_rev, b, c, f"{why} | slots descending")]
                g.positions += [pos, rev]
        groups.append(g)
    # sp.path: which path's parameters the sparse form follows, where several paths share its types
    if len(alternatives) > 1:
        keys = [k2 for k2 in p.describe() if k2 not in ("kind",)]
        cands = [{k2: getattr(q, k2) for k2 in keys} for q in alternatives.values()]
        rows = [grp for grp in groups if grp.name in ("sp.alignment_window", "sp.final_rounding", "sp.c_order", "sp.normalisation")]
        g = Group("sp.path", tuple(keys), cands, positions=[])
        for grp in rows:
            g.rows += grp.rows
            g.positions += grp.positions
        groups.append(g)
    return groups


def _container_of(t: str) -> str:
    return "f32" if t == "tf32" else t


def group_bits(v: Variant, g: Group):
    """(a_bits [N, K], b_bits [N, K], c_bits [N]) of a group (mma.sp: a_bits [N, K/2]; ``g.pos_bits`` the positions)."""
    t = Types.of(v)
    if g.raw:
        a = np.array([r[0] for r in g.rows], dtype=np.uint64)
        b = np.array([r[1] for r in g.rows], dtype=np.uint64)
        c = np.array([r[2] for r in g.rows], dtype=np.uint64)
        g.pos_bits = None if g.positions is None else np.array(g.positions, dtype=np.int64)
        return a, b, c
    enc_a = (lambda vals: _enc("f32", vals)) if t.a == "tf32" else (lambda vals: _enc(t.a, vals))
    enc_b = (lambda vals: _enc("f32", vals)) if t.b == "tf32" else (lambda vals: _enc(t.b, vals))
    rows, enc, pos = [], [], []
    for i, r in enumerate(g.rows):
        try:
            enc.append((enc_a(r[0]), enc_b(r[1]), _enc(t.c, [r[2]])[0]))
            rows.append(r)
            pos.append(g.positions[i] if g.positions is not None else None)
        except ValueError:
            continue  # not representable in this path's types: the design skips it
    g.rows = rows
    if g.positions is not None:
        g.positions = pos
        g.pos_bits = np.array(pos, dtype=np.int64).reshape(len(pos), -1)
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


def infer(v: Variant, p: PathParams, g: Group, a, b, c, observed, pos=None) -> Inference:
    t = Types.of(v)
    pos = g.pos_bits if pos is None else pos
    predicted = dot_bits(p, t, a, b, c, sparse_pos=pos)
    consistent = []
    for cand in g.candidates:
        try:
            q = replace(p, **cand) if cand else p
            if np.array_equal(dot_bits(q, t, a, b, c, sparse_pos=pos), observed):
                consistent.append(cand)
        except (ValueError, FloatingPointError):
            continue
    bad = np.nonzero(predicted != observed)[0]
    mism = [{"case": g.rows[i][3], "a": [hex(int(x)) for x in a[i]], "b": [hex(int(x)) for x in b[i]], "c": hex(int(c[i])),
             "observed": hex(int(observed[i])), "model": hex(int(predicted[i]))} for i in bad[:20]]
    model_vals = {k: getattr(p, k, None) for k in g.param}
    return Inference(g.name, g.param, model_vals, consistent, len(bad) == 0, len(g.rows), mism)
