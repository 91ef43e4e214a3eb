"""Seeded, dtype-aware probe inputs: one place decides every value a probe sees.

Two kinds of check, each a set of cases (one warp per case):

``value``
    A, B, C (and scale factors) all random at once, drawn so that the exact
    result of D = A*B + C is representable in D's type: every check is then
    bit-exact, with tolerance 0 (the derivation is in :func:`float_grid`).
    Integer forms also get accumulators near the s32 limits, so ``.satfinite``
    and wrap-around are both exercised.  Slots a layout leaves unheld (scale
    factors of unselected lanes) get random garbage.

``map.A`` / ``map.B`` / ``map.C``
    The operand under test carries *tags*: element ``t`` (its linear index over
    matrix, row, col) is written in base ``R`` over several cases, one digit per
    case, with digits drawn from an alphabet of values exact in both the
    operand's and D's type.  The other multiplicand is a 0/1 selection matrix
    and the rest are zero, so D is a permutation of the tagged operand.  Across
    its cases every element is told apart from every other, whatever the type
    (even ``.b1``), and the comparator can read back where each element went.

``undefined.metadata`` / ``undefined.selector[S]`` (mma.sp, only when asked for: ``--undefined``)
    Inputs the ISA leaves undefined (:mod:`ptxconf.families.mma.undefined`): tagged A under
    undefined index pairs, or value inputs under an out-of-range selector with every lane's
    metadata legal and its own.

How inputs simplify: the value check shrinks toward zero matrices with C only;
the map checks are fully determined by the variant (the seed only picks the
garbage in unheld slots and the selector immediates).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from functools import cache

import numpy as np
from ptxconf.isa.model import Operand, Variant
from ptxconf.isa.ptxtypes import PtxType, ptx_type
from ptxconf.isa.sparse import compress, is_sparse, sparsity

from .undefined import SUM_EXACT, UNDEFINED_CHECKS, out_of_range, selector_check, undefined_pairs

__all__ = ["OperandCases", "make_checks", "case_rng", "alphabet", "float_grid", "CHECKS", "UNDEFINED_CHECKS"]

CHECKS = ("value", "map.A", "map.B", "map.C")
# mma.sp only: tagged A through metadata that changes from case to case (a value check on D).
SPARSE_CHECKS = ("map.metadata",)
METADATA_ROUNDS = 4
VALUE_CASES = 8
MAX_ALPHABET = 4096
C_SPREAD = 1 << 20  # integer accumulators of the value check: uniform in [-C_SPREAD, C_SPREAD) away from the limits

# mma's random streams by purpose, each keyed by (variant id, KEY).  They are the streams mma's recorded runs drew from,
# kept byte for byte: ``variant_rng``'s seeding would draw other cases, and the seeds of the runs in results/ (and the
# ``ptxconf run --seed`` replay commands they print) would then name cases that never ran.
_STREAMS = {
    "cases": lambda vid, seed: [seed, vid],  # every case set of make_checks, and the selector immediates
    "bulk params": lambda vid, seed: [seed, vid, 0xB17],  # the bulk fuzzer's selector immediates
    "map metadata": lambda vid, cases: [vid, 0x5A, cases],  # the sparse map checks' metadata: the same at every seed
}


def case_rng(v: Variant, purpose: str, key: int) -> np.random.Generator:
    """The generator of ``purpose`` (a key of ``_STREAMS``) for variant ``v``: ``key`` is the seed, or for
    ``"map metadata"`` the case count."""
    vid = int.from_bytes(hashlib.sha256(v.id.encode()).digest()[:8], "little")
    return np.random.default_rng(_STREAMS[purpose](vid, key))


@dataclass
class OperandCases:
    """The cases of one check of one variant as operand bits (before they are packed into the input words of a
    ``ptxconf.core.plan.CaseSet``), plus how to read them."""

    variant: Variant
    check: str
    seed: int
    bits: dict[str, np.ndarray]  # operand -> uint64[case, matrix, row, col] container bits
    filler: dict[str, np.ndarray]  # operand -> uint64[case, lane, element] garbage for unheld slots
    params: dict[str, dict[str, int]]  # operand -> selector values (immediates of the probe)
    meta: dict = field(default_factory=dict)  # map checks: digits, blocks, alphabet
    expected: np.ndarray | None = None  # uint32[case, lane, out_words]: the out words predicted (value check)

    @property
    def cases(self) -> int:
        return next(iter(self.bits.values())).shape[0]


def _tile(op: Operand, cases: int) -> tuple[int, int, int, int]:
    lay = op.layout
    return (cases, lay.matrices, lay.rows, lay.cols)


# ---------------------------------------------------------------------------
# Exact value distributions
# ---------------------------------------------------------------------------

_SIGNIFICAND = {"f16": 11, "bf16": 8, "tf32": 11, "f32": 24, "f64": 53}
# Accumulation precision the check relies on: the ISA promises "at least single
# precision" (fp8 and narrower: measured Hopper accumulators keep about 14 bits
# below the largest term), so results stay within 12 significant bits except f64.
_ACC_BITS = 12


@cache
def float_grid(type_name: str, vmax: float, frac_bits: int) -> np.ndarray:
    """Values of the type that are multiples of 2**-frac_bits with |v| <= vmax.

    Products of two such values are multiples of 2**-(2*frac_bits); a sum of K
    of them plus C stays exact when K * vmax_a * vmax_b * 2**(fa+fb) fits the
    accumulation precision, which :func:`_value_params` ensures.
    """
    t = ptx_type(type_name)
    if t.bits <= 16:
        vals = t.finite_values()
    else:
        step = 2.0**-frac_bits
        vals = np.arange(-vmax, vmax + step / 2, step)
    vals = vals[(np.abs(vals) <= vmax) & (np.mod(vals * 2.0**frac_bits, 1.0) == 0)]
    # One zero, +0.0: ``np.unique`` keeps whichever of -0.0 and +0.0 its sort puts first, which NumPy 2.4 and 2.5 order
    # differently (a seed drew other bits on another machine: an H200's run then did not replay here).
    return np.unique(vals + 0.0)


def _value_params(v: Variant) -> tuple[dict[str, tuple[float, int]], float]:
    """(vmax, frac_bits) per float multiplicand, and |C| bound, keeping D exact."""
    m, n, k = v.shape
    dtype = v.operands["D"].type.name
    acc_bits = 50 if dtype == "f64" else min(_ACC_BITS, _SIGNIFICAND.get(dtype, 24) - 1)
    params = {}
    for name in ("A", "B"):
        t = v.operands[name].type
        vmax = 8.0 if t.name not in ("e2m1",) else 6.0
        params[name] = (vmax, 1 if t.name != "f64" else 3)
    while True:
        (va, fa), (vb, fb) = params["A"], params["B"]
        units = k * va * vb * 2.0 ** (fa + fb)
        if 2 * units < 2.0**acc_bits or (fa == 0 and fb == 0 and va <= 2 and vb <= 2):
            break
        if fa or fb:
            params = {n_: (vv, max(ff - 1, 0)) for n_, (vv, ff) in params.items()}
        else:
            params = {n_: (max(vv / 2, 1.0), ff) for n_, (vv, ff) in params.items()}
    return params, units * 2.0 ** -(fa + fb) if units else 1.0


def _max_product_sum(v: Variant) -> int:
    """About two standard deviations of sum_k a*b for uniform integer inputs (at least 16)."""
    k = v.shape[2]
    mags = []
    for name in ("A", "B"):
        lo, hi = v.operands[name].type.int_range() if v.operands[name].type.kind != "bits" else (0, 1)
        mags.append(max(abs(lo), abs(hi)))
    return max(16, int(2 * k**0.5 * mags[0] * mags[1] / 3))


def _random_values(rng: np.random.Generator, t: PtxType, shape, vmax: float, frac: int) -> np.ndarray:
    grid = float_grid(t.name, vmax, frac)
    return rng.choice(grid, size=shape)


def _value_case_bits(v: Variant, rng: np.random.Generator, cases: int) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    ops = v.operands
    fparams, cbound = _value_params(v)
    for name in ("A", "B"):
        op = ops[name]
        t = op.type
        shape = _tile(op, cases)
        if t.kind == "float":
            vals = _random_values(rng, t, shape, *fparams[name])
        elif t.kind == "bits":
            vals = rng.integers(0, 2, size=shape)
        else:
            lo, hi = t.int_range()
            vals = rng.integers(lo, hi + 1, size=shape)
        out[name] = t.encode(vals)
    c = ops["C"]
    shape = _tile(c, cases)
    if c.type.kind == "float":
        frac = fparams["A"][1] + fparams["B"][1]
        step = 2.0**-frac
        vals = rng.integers(-int(cbound / step), int(cbound / step) + 1, size=shape) * step
    else:
        vals = rng.integers(-C_SPREAD, C_SPREAD, size=shape)
        # Half of the cases sit within one full product sum of the s32 limits: sums then
        # wrap, or saturate under .satfinite, about half of the time.
        reach = _max_product_sum(v)
        edge = rng.integers(2**31 - reach, 2**31, size=shape) * rng.choice([-1, 1], size=shape)
        pick = (np.arange(cases) % 2 == 1)[:, None, None, None]
        vals = np.where(pick, np.clip(edge, -(2**31), 2**31 - 1), vals)
    out["C"] = c.type.encode(vals)
    if is_sparse(v):  # random legal index patterns, chunk by chunk and case by case
        out["metadata"] = _random_metadata(v, rng, cases)
    for name in ("scale_A", "scale_B"):
        if name in ops:
            op = ops[name]
            # Scale factors 2**-2 .. 2**2 (ue8m0) or 0.5 .. 4 (ue4m3): exact, and products stay exact.
            choices = np.array([0.25, 0.5, 1.0, 2.0, 4.0]) if op.type.name == "ue8m0" else np.array([0.5, 1.0, 1.5, 2.0])
            out[name] = op.type.encode(rng.choice(choices, size=_tile(op, cases)))
    return out


# ---------------------------------------------------------------------------
# Tags
# ---------------------------------------------------------------------------


@cache
def alphabet(type_name: str, dtype_name: str) -> tuple[float, ...]:
    """Non-negative integers exact in both the operand type and D's type (at most 4096)."""
    t, d = ptx_type(type_name), ptx_type(dtype_name)
    if t.kind == "bits":
        return (0.0, 1.0)
    if t.kind in ("sint", "uint"):
        hi = min(t.int_range()[1], MAX_ALPHABET - 1)
        return tuple(float(x) for x in range(hi + 1))
    cand = t.finite_values() if t.bits <= 16 else np.arange(MAX_ALPHABET, dtype=np.float64)
    cand = cand[(cand >= 0) & (np.mod(cand, 1.0) == 0)]
    cand = cand[t.decode(t.encode(cand, exact=False)) == cand]  # tf32: 4096 candidates, only 11 significant bits
    if d.kind == "float":
        cand = cand[d.decode(d.encode(cand, exact=False)) == cand]
    return tuple(float(x) for x in cand[:MAX_ALPHABET])


def _one(op: Operand) -> int:
    return _one_of(op.type)


@cache
def _one_of(t: PtxType) -> int:
    """The container bits of 1 in ``t``, once per process and type."""
    return int(t.encode(np.array([1.0]))[0])


def _zero_bits(op: Operand, cases: int) -> np.ndarray:
    return np.zeros(_tile(op, cases), dtype=np.uint64)


def _unit_scales(v: Variant, cases: int) -> dict[str, np.ndarray]:
    return {
        name: np.full(_tile(v.operands[name], cases), _one(v.operands[name]), dtype=np.uint64)
        for name in ("scale_A", "scale_B")
        if name in v.operands
    }


def _map_case_bits(v: Variant, target: str) -> tuple[dict[str, np.ndarray], dict]:
    """Tagged cases for ``map.<target>``; see the module docstring."""
    ops = v.operands
    m, n, k = v.shape
    tagged = ops[target]
    lay = tagged.layout
    alpha = alphabet(tagged.type.name, ops["D"].type.name)
    radix = len(alpha)
    count = lay.matrices * lay.rows * lay.cols
    digits = max(1, math.ceil(math.log(count, radix))) if count > 1 else 1
    blocks = {"A": math.ceil(k / n), "B": math.ceil(k / m), "C": 1}[target]
    cases = digits * blocks
    tags = np.arange(count).reshape(lay.matrices, lay.rows, lay.cols)
    alpha_arr = np.array(alpha)
    bits: dict[str, np.ndarray] = {name: _zero_bits(ops[name], cases) for name in ("A", "B", "C")}
    tag_vals = np.stack([alpha_arr[(tags // radix**d) % radix] for d in range(digits)])
    tag_bits = tagged.type.encode(tag_vals)  # [digit, matrix, row, col]
    other = {"A": "B", "B": "A"}.get(target)
    sparse = is_sparse(v)
    if sparse and target != "A":  # A is built dense (K columns) here and compressed below, or tagged compressed
        bits["A"] = np.zeros((cases, 1, m, k), dtype=np.uint64)
    bits[target][...] = np.tile(tag_bits, (blocks, 1, 1, 1))  # case s * digits + d: digit d in block s
    if other is not None:
        # block s selects with ones at k == i + span * s (i < span: N for B, M for A), the same in each of its digits
        span = n if other == "B" else m
        sel = np.zeros((blocks, *bits[other].shape[1:]), dtype=np.uint64)
        for s in range(blocks):
            kk = np.arange(span) + span * s
            ok = kk < k
            if other == "B":  # B[k, n] = 1 where k == n + N*s: D[m, n] = A[m, n + N*s]
                sel[s][:, kk[ok], np.arange(span)[ok]] = _one(ops["B"])
            else:  # A[m, k] = 1 where k == m + M*s: D[m, n] = B[m + M*s, n]
                sel[s][:, np.arange(span)[ok], kk[ok]] = _one(ops["A"])
        bits[other][...] = np.repeat(sel, digits, axis=0)
    bits.update(_unit_scales(v, cases))
    meta = {"target": target, "radix": radix, "digits": digits, "blocks": blocks, "alphabet": list(alpha)}
    if sparse:
        rng = case_rng(v, "map metadata", cases)
        if target == "A":  # one metadata for every case: the comparator reads tags back through it
            bits["metadata"] = np.repeat(_random_metadata(v, rng, 1), cases, axis=0)
        else:
            bits["A"], bits["metadata"] = compress(v, bits["A"], rng)
    return bits, meta


def _random_metadata(v: Variant, rng: np.random.Generator, cases: int) -> np.ndarray:
    sp = sparsity(v)
    return compress(v, np.zeros((cases, 1, sp.m, sp.k), dtype=np.uint64), rng)[1]


def _metadata_case_bits(v: Variant, rng: np.random.Generator) -> tuple[dict[str, np.ndarray], dict]:
    """``map.metadata``: map.A's tags and selections, repeated under fresh random metadata per case.

    A metadata spec with two fields swapped puts some tagged element at the wrong
    dense column in a case where the two fields differ, so D differs there.
    """
    bits, _ = _map_case_bits(v, "A")
    bits = {name: np.concatenate([b] * METADATA_ROUNDS) for name, b in bits.items()}
    bits["metadata"] = _random_metadata(v, rng, next(iter(bits.values())).shape[0])
    return bits, {}


def _undefined_metadata_bits(v: Variant, rng: np.random.Generator) -> tuple[dict[str, np.ndarray], dict]:
    """``undefined.metadata``: A tagged (compressed index + 1, digits over cases), B selecting dense
    columns block by block, C zero, and every chunk an undefined index pair (the same in every case)."""
    ops = v.operands
    m, n, k = v.shape
    sp = sparsity(v)
    a, d = ops["A"], ops["D"]
    alpha = [x for x in alphabet(a.type.name, d.type.name) if x <= SUM_EXACT]
    radix = len(alpha)
    count = a.layout.rows * a.layout.cols
    digits = max(1, math.ceil(math.log(count + 1, radix)))
    blocks = math.ceil(k / n)
    cases = digits * blocks
    tags = np.arange(count).reshape(1, a.layout.rows, a.layout.cols) + 1
    bits = {name: _zero_bits(ops[name], cases) for name in ("A", "B", "C")}
    for s in range(blocks):
        kk = np.arange(n) + n * s
        ok = kk < k
        for dg in range(digits):
            case = s * digits + dg
            bits["A"][case] = a.type.encode(np.array(alpha)[(tags // radix**dg) % radix])
            bits["B"][case][:, kk[ok], np.arange(n)[ok]] = _one(ops["B"])
    pairs = np.array(undefined_pairs(sp, sp.ordered), dtype=np.uint64)
    # Every pair in turn over the chunks of the tile, from a seeded start: each one is met many times.
    which = (np.arange(m * sp.chunks) + int(rng.integers(len(pairs)))) % len(pairs)
    fields = pairs[which].reshape(1, 1, m, 2 * sp.chunks)
    bits["metadata"] = np.repeat(fields, cases, axis=0)
    bits.update(_unit_scales(v, cases))
    return bits, {"target": "undefined.metadata", "radix": radix, "digits": digits, "blocks": blocks, "alphabet": alpha}


def _legal_metadata_filler(v: Variant, rng: np.random.Generator, cases: int) -> np.ndarray:
    """``uint64[case, lane, element]`` metadata fields of a random legal pair per nibble, in every lane."""
    sp = sparsity(v)
    op = v.operands["metadata"]
    pats = np.array(sp.patterns, dtype=np.uint64)
    pick = pats[rng.integers(len(pats), size=(cases, op.layout.lanes, op.layout.elements // 2))]
    return pick.reshape(cases, op.layout.lanes, op.layout.elements)


# ---------------------------------------------------------------------------


def _params(v: Variant, rng: np.random.Generator) -> dict[str, dict[str, int]]:
    out = {}
    for name, op in v.operands.items():
        combos = op.param_combinations()
        out[name] = combos[int(rng.integers(len(combos)))]
    return out


def _filler(v: Variant, rng: np.random.Generator, cases: int) -> dict[str, np.ndarray]:
    return {
        name: rng.integers(0, 2**32, size=(cases, op.layout.lanes, op.layout.elements), dtype=np.uint64)
        for name, op in v.operands.items()
        if name != "D"
    }


def make_checks(v: Variant, seed: int, checks: tuple[str, ...] = CHECKS, value_cases: int = VALUE_CASES) -> list[OperandCases]:
    """All case sets of a variant for one seed; same seed, same inputs."""
    rng = case_rng(v, "cases", seed)
    params = _params(v, rng)
    sparse = is_sparse(v)
    if sparse and tuple(checks) == CHECKS:
        checks = CHECKS + SPARSE_CHECKS
    if not sparse:
        checks = tuple(c for c in checks if c not in SPARSE_CHECKS + UNDEFINED_CHECKS)
    selectors = v.operands["metadata"].param_combinations() if sparse else []
    out = []
    for ci, check in enumerate(checks):
        if check == "undefined.selector":  # one case set (and kernel) per selector value the form does not allow
            legal = [c["selector"] for c in selectors]
            for value in out_of_range(legal):
                bits = _value_case_bits(v, rng, value_cases)
                filler = _filler(v, rng, value_cases)
                filler["metadata"] = _legal_metadata_filler(v, rng, value_cases)
                bits["metadata"] = np.zeros_like(bits["metadata"])  # no lane is the selector's: all in the filler
                odd = {**params, "metadata": {"selector": value}}
                out.append(OperandCases(v, selector_check(value), seed, bits, filler, odd, {"selector": value}))
            continue
        if check == "value":
            bits = _value_case_bits(v, rng, value_cases)
            meta: dict = {}
        elif check in CHECKS and check.startswith("map."):
            bits, meta = _map_case_bits(v, check[len("map.") :])
        elif check in SPARSE_CHECKS:
            bits, meta = _metadata_case_bits(v, rng)
        elif check == "undefined.metadata":
            bits, meta = _undefined_metadata_bits(v, rng)
        else:
            raise ValueError(f"unknown check {check!r}; known: {', '.join(CHECKS + SPARSE_CHECKS + UNDEFINED_CHECKS)}")
        cases = next(iter(bits.values())).shape[0]
        check_params = params
        if selectors:  # the selector immediate walks through its legal values from check to check
            start = selectors.index(params["metadata"])
            check_params = {**params, "metadata": selectors[(start + ci) % len(selectors)]}
        out.append(OperandCases(v, check, seed, bits, _filler(v, rng, cases), check_params, meta))
    return out

