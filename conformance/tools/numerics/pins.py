"""Pin each model parameter from recorded hardware runs (offline, no GPU).

For every path (and every shape with overrides) and every parameter the path has, each candidate value
(with the rest of the model as the spec has it) is run over every recorded case of the path: designed groups
and fuzz replays of every run given.  The values that reproduce all of them form the consistent set.
Values that no input of the path can tell apart are one class (a block at least as long as every K; an
exponent floor below every term's grid; ``overflow: ieee`` and ``inf`` under round-to-nearest; ``acc_type`` where
D is f32), and a rule no input of the path can reach is ``moot``.  A set of one class pins the parameter
(``measured``); a pinned value other than the spec's is a finding, and one where the spec cited a published value
(KM2025) is that publication disagreeing with the hardware.  ``write_spec`` applies the decisions to specs/numerics.yaml.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from .experiments import ALIGN, F64_MODES, F64_NAN_RULES, F64_NANS, NAN_RULES, ROUNDINGS
from .harness import k_of, shape_key
from .model import FORMATS, PathParams, Types, dot_bits
from .recorded import RecordedRun
from .spec import NumericsSpec, applies

SCHEMA = "numerics-pins/1"
MOOT = {"overflow": "no finite input of this path reaches D's overflow threshold (the largest sum of products is below half "
                    "of D's last ulp), so the rule never applies",
        "sparse_order": "the order cannot change a D: .tf32 keeps one element of every two (1:2), so slot order is dense "
                        "order, and elsewhere every stored product of a dot falls in one fused block (k_order natural); the sp_order group "
                        "checks the hardware agrees (rows that differ only in the metadata's slot order give one D)",
        "underflow_sign": "no non-zero sum of this path rounds to zero: every product and C has its last bit on or above "
                          "the grid D's subnormal range keeps, so the sign rule never decides a D",
        "neg_zero": "C enters last (c_entry add_rne): every block starts from +0 and the final RNE add never sees a -0 sum, "
                    "so the rule never decides a D"}


@dataclass
class Batch:
    """The recorded cases of one variant and one group of one run."""

    run: str
    source: str
    vid: str
    shape: str
    k: int
    types: Types
    group: str
    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    d: np.ndarray
    pos: np.ndarray | None = None
    params: tuple[str, ...] = ()  # the parameters the group was designed for


def collect(runs: list[RecordedRun], sources: dict[str, str]) -> dict[str, list[Batch]]:
    """Every recorded case, per path, split by (run, variant, group)."""
    out: dict[str, list[Batch]] = {}
    for run in runs:
        src = sources.get(run.dir.name, run.dir.name)
        for (vid, groups, a, b, c, d), pos, m in zip(run.designed, run.positions, run.measured):
            v = run.variant(vid)
            p = run.params(vid)
            g = np.asarray(groups)
            designed_for = {x["group"]: tuple(x.get("params", ())) for x in m["groups"]}
            for name in dict.fromkeys(groups):
                sel = np.nonzero(g == name)[0]
                out.setdefault(p.name, []).append(Batch(run.dir.name, src, vid, shape_key(v), k_of(v), Types.of(v), name,
                                                        a[sel], b[sel], c[sel], d[sel], None if pos is None else pos[sel],
                                                        designed_for.get(name, ())))
        for r in run.replays:
            v = run.variant(r.variant)
            p = run.params(r.variant)
            out.setdefault(p.name, []).append(Batch(
                run.dir.name, src, r.variant, shape_key(v), k_of(v), Types.of(v), "fuzz replay",
                np.array([r.a], dtype=np.uint64), np.array([r.b], dtype=np.uint64), np.array([r.c], dtype=np.uint64),
                np.array([r.observed], dtype=np.uint64), None if r.pos is None else np.array([r.pos], dtype=np.int64)))
    return out


# ---------------------------------------------------------------------------
# candidates, classes, reach
# ---------------------------------------------------------------------------


def _nan_rules(p: PathParams) -> tuple[str, ...]:
    """The NaN rules of a path: the f64 chain has three operands per step to order, a block has the first NaN."""
    return F64_NAN_RULES if p.kind == "f64" else NAN_RULES


def _nan_bits_cands(p: PathParams, t: str) -> list[dict]:
    pats = {"f16": (0x7FFF, 0x7E00, 0xFE00, 0xFFFF), "f32": (0x7FFFFFFF, 0x7FC00000, 0xFFC00000, 0xFFFFFFFF), "f64": F64_NANS}[t]
    return [{"nan_bits": {**p.nan_bits, t: x}} for x in pats]


UNITS: list[tuple[tuple[str, ...], Callable[[PathParams], list[dict]]]] = [
    (("block",), lambda p: [{"block": b} for b in (1, 2, 4, 8, 16, 32, 64)]),
    # Past 40 bits only for blocks of one or two products: their aligned sums still fit float64's 53 bits, and a
    # subnormal input's raw exponent (its format's emin) can sit 10 bits above its value, 20 for a product of two.
    (("frac_bits", "align"), lambda p: [{"frac_bits": f, "align": a} for f in range(8, 49 if p.block <= 2 else 41)
                                        for a in ALIGN]),
    (("final_rounding", "out_precision"), lambda p: [{"final_rounding": r, "out_precision": q} for r in ROUNDINGS
                                                      for q in range(8, FORMATS[p.d_types[0]].p + 17)]),
    (("exp_floor",), lambda p: [{"exp_floor": f} for f in [None, *range(-180, 3)]]),
    (("c_entry", "k_order"), lambda p: [{"c_entry": c, "k_order": o} for c in ("fused", "late", "add_rne", "block_add")
                                         for o in ("natural", "pairs")]),
    (("acc_type",), lambda p: [{"acc_type": a} for a in ("d", "f32")]),
    (("in_subnormals", "out_subnormals"), lambda p: [{"in_subnormals": i, "out_subnormals": o} for i in ("keep", "flush")
                                                      for o in ("keep", "flush")]),
    (("overflow",), lambda p: [{"overflow": o} for o in ("inf", "saturate", "ieee")]),
    (("neg_zero",), lambda p: [{"neg_zero": z} for z in ("ieee", "positive")]),
    (("underflow_sign",), lambda p: [{"underflow_sign": z} for z in ("keep", "positive")]),
    (("operand_cvt",), lambda p: [{"operand_cvt": c} for c in ("none", "f16")]),
    (("nan_propagation",), lambda p: [{"nan_propagation": n} for n in _nan_rules(p)]),
    (("input_conversion",), lambda p: [{"input_conversion": m} for m in ("truncate", "rna", "rne")]),
    (("sparse_zeros",), lambda p: [{"sparse_zeros": z} for z in ("skip", "multiply")]),
    (("sparse_order",), lambda p: [{"sparse_order": o} for o in ("position", "slot")]),
    (("f64_mode",), lambda p: [{"f64_mode": m} for m in F64_MODES]),
    (("f64_rnd",), lambda p: [{"f64_rnd": r} for r in ("each_fma", "ignored")]),
    (("integer",), lambda p: [{"integer": "exact"}]),
]


def units_for(p: PathParams) -> list[tuple[tuple[str, ...], list[dict]]]:
    """The scan units of path ``p``: its parameters (and one ``nan_bits.<D>`` unit per D type, joint with the NaN rule)."""
    have = set(applies(p))
    out = [(u, gen(p)) for u, gen in UNITS if set(u) <= have or (u == ("frac_bits", "align") and "frac_bits" in have)]
    for t in p.d_types:
        if t in ("f16", "f32", "f64"):
            out.append(((f"nan_bits.{t}", "nan_propagation"),
                        [dict(c, nan_propagation=n) for c in _nan_bits_cands(p, t) for n in _nan_rules(p)]))
    return out


@dataclass
class PathInfo:
    """What the path's recorded variants are: products per dot per shape, the types, products per sparse dot."""

    ks: dict[str, int]
    types: set[Types]
    sparse_terms: set[int] = field(default_factory=set)  # per half under k_order pairs


def _lsb(t: str) -> int:
    """The exponent of the type's smallest subnormal: no value of the type has a bit below it."""
    return FORMATS[t].emin - FORMATS[t].p + 1


def no_effect_floor(p: PathParams, info: PathInfo) -> int:
    """The highest exp_floor that changes no D of this path: the grid it sets (2^(floor - frac_bits), a bit finer
    under align sticky) is no coarser than the last bit of every term (products, and C when it enters the blocks),
    so no term loses a bit."""
    bound = 10**6
    window = p.frac_bits + (1 if p.align == "sticky" else 0)
    for t in info.types:
        bound = min(bound, _lsb(t.a) + _lsb(t.b) + window)
        if p.c_entry == "fused" and t.c in FORMATS:
            c_bound = _lsb(t.c) + window
            fd = FORMATS[t.d]
            below = fd.emin - p.out_precision + 1 + p.frac_bits
            if p.final_rounding == "rz" and p.out_precision <= fd.p and below <= FORMATS[t.a].emin + FORMATS[t.b].emin:
                c_bound = max(c_bound, below)  # a floor under every product only meets C alone: two cuts toward zero
            bound = min(bound, c_bound)
    return bound


def exact_bits(p: PathParams, info: PathInfo) -> int:
    """Bits a block's aligned sum can need: from the window's last bit up to the leading bit of the largest sum
    (every product of the longest block at its largest significand, and C below 2 units of the anchor): a first
    rounding to at least this many bits is exact."""
    n = min(p.block, max(info.ks.values()) // (2 if p.k_order == "pairs" else 1))
    top = max((2 - 2.0 ** (1 - FORMATS[t.a].p)) * (2 - 2.0 ** (1 - FORMATS[t.b].p)) for t in info.types)
    return p.frac_bits + 1 + int(np.floor(np.log2(n * top + (2 if p.c_entry == "fused" else 0))))


def overflow_reachable(p: PathParams, info: PathInfo) -> bool:
    """Whether a D of this path can overflow from finite inputs: the largest sum of products reaches the D type's
    last ulp (RZ keeps the largest finite below 2^(emax+1); with C at the largest finite, half an ulp under RNE)."""
    for t in info.types:
        fa, fb, fd = FORMATS[t.a], FORMATS[t.b], FORMATS[t.d]
        big = max(info.ks.values()) * (2 - 2.0 ** (1 - fa.p)) * 2.0**fa.emax * (2 - 2.0 ** (1 - fb.p)) * 2.0**fb.emax
        ulp = 2.0 ** (fd.emax - fd.p + 1)
        if big >= ulp / 2:
            return True
    return False


def underflow_reachable(p: PathParams, info: PathInfo) -> bool:
    """Whether a non-zero sum of this path can round to zero: some term (a product, or C) has a last bit below the
    grid the rounding in D's subnormal range keeps (2^(emin_D - out_precision + 1)); sums of coarser terms cannot."""
    if p.c_entry == "add_rne":  # the blocks' zero only meets C in an exact D addition, whose zero neg_zero signs
        return False
    for t in info.types:
        cut = FORMATS[t.d].emin - min(p.out_precision, FORMATS[t.d].p) + 1
        if _lsb(t.a) + _lsb(t.b) < cut or (t.c in FORMATS and _lsb(t.c) < cut):
            return True
    return False


def canonical_cand(p: PathParams, info: PathInfo, cand: dict) -> dict:
    """Candidate sets no input tells apart, as one: a first rounding to at least ``exact_bits`` is exact whatever its mode."""
    q, r = cand.get("out_precision"), cand.get("final_rounding")
    if q is None or r is None or cand.get("c_entry", p.c_entry) == "block_add":  # block_add also rounds each add: never exact
        return cand
    d_p = min(FORMATS[t.d].p for t in info.types)
    if q >= exact_bits(replace(p, **{k: v for k, v in cand.items() if k in ("block", "frac_bits")}), info) or (r, q) == ("rne", d_p):
        return dict(cand, final_rounding="exact", out_precision="exact")  # the exact sum, rounded to nearest in D
    return cand


def canonical(p: PathParams, info: PathInfo, param: str, value, shape: str | None = None):
    """The class of ``value``: the value every other member of its class is indistinguishable from on this path."""
    if param == "block":
        k = info.ks.get(shape, max(info.ks.values())) if shape else max(info.ks.values())
        k = k // 2 if p.k_order == "pairs" else k
        return min(int(value), max(k, 1)) if value is not None else value
    if param == "exp_floor":
        return None if value is None or value <= no_effect_floor(p, info) else int(value)
    if param == "acc_type" and all(t.d == "f32" for t in info.types):
        return "d"  # D's exponent range is f32's
    if param == "sparse_order" and p.k_order != "pairs" and (set(p.a_types) <= {"tf32"}
                                                             or p.block >= max(info.sparse_terms, default=0) > 0):
        return "moot"  # one element per chunk (tf32, 1:2), or every stored product in one block: order cannot matter
    if param == "underflow_sign" and not underflow_reachable(p, info):
        return "moot"
    if param == "neg_zero" and p.c_entry == "add_rne":
        return "moot"  # every block starts from +0 and the last add sees no -0 sum: the rule never decides a D
    if param == "overflow":
        if not overflow_reachable(p, info):
            return "moot"
        if value == "ieee" and p.final_rounding in ("rne", "rna"):
            return "inf"
    if param.startswith("nan_bits."):
        return None if value is None else int(value)
    return value


# ---------------------------------------------------------------------------
# the scan
# ---------------------------------------------------------------------------


def _cur_nan(q: PathParams, param: str) -> dict:
    return {"nan_bits": q.nan_bits} if param.startswith("nan_bits.") else {}


def _apply(q: PathParams, cand: dict) -> PathParams:
    upd = {k: v for k, v in cand.items() if not k.startswith("nan_bits")}
    if "nan_bits" in cand:
        upd["nan_bits"] = cand["nan_bits"]
    return replace(q, **upd)


def _value(cand: dict, param: str):
    if param.startswith("nan_bits."):
        return cand["nan_bits"][param.split(".", 1)[1]]
    return cand[param]


@dataclass
class UnitResult:
    path: str
    shape: str | None
    params: tuple[str, ...]
    tried: int
    consistent: list[dict]
    excluded_by: dict[str, int] = field(default_factory=dict)  # group -> candidates it excluded first
    best: list[tuple[int, dict]] = field(default_factory=list)  # when none fits: fewest mismatching cases


def scan_unit(p: PathParams, batches: list[Batch], params: tuple[str, ...], cands: list[dict], shape: str | None = None) -> UnitResult:
    """Which of ``cands`` reproduce every recorded case (early exit per candidate; the first failing group is noted)."""
    names = set(params) - {"nan_propagation"} if params[0].startswith("nan_bits.") else set(params)
    mine = [b for b in batches if (b.shape == shape if shape else not names <= p.overridden(b.shape))]
    wanted = {x.split(".")[0] for x in params}
    first = sorted(mine, key=lambda b: (not wanted & {x.split(".")[0] for x in b.params}, len(b.c)))  # its own groups first
    res = UnitResult(p.name, shape, params, len(cands), [])
    for cand in cands:
        bad_group = None
        for b in first:
            q = p.for_shape(b.shape)
            if not shape:  # a path-level candidate changes no parameter the shape overrides
                cand_b = {k: v for k, v in cand.items() if k not in p.overridden(b.shape)}
            else:
                cand_b = cand
            try:
                pred = dot_bits(_apply(q, cand_b), b.types, b.a, b.b, b.c, sparse_pos=b.pos)
            except (ValueError, FloatingPointError):
                bad_group = b.group
                break
            if not np.array_equal(pred, b.d):
                bad_group = b.group
                break
        if bad_group is None:
            res.consistent.append(cand)
        else:
            res.excluded_by[bad_group] = res.excluded_by.get(bad_group, 0) + 1
    if not res.consistent:
        counts = []
        for cand in cands:
            n = 0
            for b in mine:
                try:
                    n += int((dot_bits(_apply(p.for_shape(b.shape), cand), b.types, b.a, b.b, b.c, sparse_pos=b.pos) != b.d).sum())
                except (ValueError, FloatingPointError):
                    n += len(b.c)
            counts.append((n, cand))
        res.best = sorted(counts, key=lambda x: x[0])[:3]
    return res


@dataclass
class Decision:
    path: str
    shape: str | None
    param: str
    spec_value: object
    spec_status: str
    consistent: list
    decision: str  # confirm | change | moot | open | contradicted | none-fits | unmeasured
    value: object
    groups: list[str]
    note: str
    finding: str | None = None
    source: str = ""
    spec_entry: dict = field(default_factory=dict)  # the spec's {value, status, source, note} before


def decide(spec: NumericsSpec, p: PathParams, info: PathInfo, res: UnitResult, param: str, source: str) -> Decision:
    """What the consistent set of one parameter says about the spec's value."""
    st = spec.status_of(p.name, param, res.shape)
    q = p.for_shape(res.shape)
    cur = q.nan_bits.get(param.split(".", 1)[1]) if param.startswith("nan_bits.") else getattr(q, param)
    cur_c = canonical(q, info, param, _value(canonical_cand(q, info, {k: getattr(q, k) for k in res.params
                                                                    if not k.startswith("nan_bits")} | _cur_nan(q, param)), param)
                      if param in res.params else cur, res.shape)
    rep: dict[str, object] = {}  # class -> its first member, in candidate order
    for c in res.consistent:
        rep.setdefault(json.dumps(canonical(q, info, param, _value(canonical_cand(q, info, c), param), res.shape)), _value(c, param))
    classes = set(rep)
    values = sorted((json.loads(x) for x in classes), key=lambda x: (x is not None, isinstance(x, str), x if x is not None else 0))
    groups = sorted(res.excluded_by, key=lambda g: -res.excluded_by[g])
    where = f"{p.name}" + (f" {res.shape}" if res.shape else "")
    fmt = (lambda x: f"{x:#x}") if param.startswith("nan_bits.") else repr
    d = Decision(p.name, res.shape, param, cur, st.get("status", "default"), values, "", cur, groups, "", None, source, dict(st))
    if not values:
        d.decision = "none-fits"
        best = ", ".join(f"{c} ({n} cases)" for n, c in res.best)
        d.note = f"{source}: no candidate of {res.tried} reproduces every recorded case of {where}; fewest misses: {best}"
        d.finding = d.note
        return d
    if cur_c == "moot":
        d.decision, d.value = "moot", cur
        d.note = MOOT[param]
        return d
    tried = f"{res.tried} candidates" if len(res.params) == 1 else f"{res.tried} candidates of ({', '.join(res.params)})"
    if len(res.consistent) == res.tried and len(values) > 1:
        d.decision = "unmeasured"
        d.note = f"{source}: no recorded case of {where} tells the {tried} apart"
        return d
    excl = f"; excluded first by {', '.join(groups[:4])}" if groups else ""
    if len(values) == 1:
        v = values[0]
        shown = fmt(v) if v is not None else "none (no floor any input of the path can see)"
        d.value = cur if v == cur_c else rep[json.dumps(v)]
        if v == cur_c:
            d.decision = "confirm"
            d.note = f"{source}: the only class of {tried} reproducing every recorded case of {where}: {shown}{excl}"
        else:
            d.decision = "change"
            d.note = f"{source}: the only class of {tried} reproducing every recorded case of {where}: {shown} (was {fmt(cur)}){excl}"
            who = st.get("source", "")
            d.finding = (f"{where} {param}: the hardware gives {shown}, {who or 'the spec'} {st.get('status', '')} {fmt(cur)}"
                         + (" (a published value the H100 contradicts)" if st.get("status") == "published" else ""))
        return d
    shown = ", ".join("none" if x is None else fmt(x) for x in values)
    if cur_c in values:
        d.decision = "open"
        d.note = f"{source}: {len(values)} classes of {tried} reproduce every recorded case of {where}: {{{shown}}}{excl}"
    else:
        d.decision = "contradicted"
        first = next(_value(c, param) for c in res.consistent)
        d.value = first
        d.note = (f"{source}: the spec's {fmt(cur)} is excluded; {{{shown}}} reproduce every recorded case of {where}{excl}; "
                  f"{fmt(first)} taken until an experiment separates them")
        d.finding = f"{where} {param}: {fmt(cur)} is contradicted by the recorded cases; consistent: {{{shown}}}"
    return d


def pin(runs: list[RecordedRun], spec: NumericsSpec, sources: dict[str, str], paths: set[str] | None = None,
        log=print) -> dict:
    """The pins document: per path (and overridden shape) and parameter, the consistent set and the decision."""
    batches = collect(runs, sources)
    decisions: list[Decision] = []
    for name, bs in sorted(batches.items()):
        if paths and name not in paths:
            continue
        p = spec.paths[name]
        half = 2 if p.k_order == "pairs" else 1
        info = PathInfo({b.shape: b.a.shape[1] for b in bs}, {b.types for b in bs},
                        {b.a.shape[1] // half for b in bs if b.pos is not None})
        src = ", ".join(sorted({b.source for b in bs}))
        for params, cands in units_for(p):
            res = scan_unit(p, bs, params, cands)
            for param in params:
                if param == "nan_propagation" and params[0].startswith("nan_bits."):
                    continue
                decisions.append(decide(spec, p, info, res, param, src))
            log(f"{name}: {params}: {len(res.consistent)}/{res.tried} consistent")
        for shape, over in p.shapes:
            if shape not in info.ks:
                continue
            for k, _ in over:
                unit = next(((u, c) for u, c in units_for(p.for_shape(shape)) if k in u and not u[0].startswith("nan_bits")),
                            None)
                if unit is None:
                    continue
                res = scan_unit(p, bs, (k,), _project(unit[1], k), shape)
                decisions.append(decide(spec, p, info, res, k, src))
                log(f"{name} {shape}: {k}: {len(res.consistent)}/{res.tried} consistent")
    order = slot_order_checks(batches)
    findings = [d.finding for d in decisions if d.finding]
    findings += [f"{o['variant']}: {o['differ']} of {o['pairs']} sparse dots change D when only the metadata's slot order changes"
                 for o in order if o["differ"]]
    return {"schema": SCHEMA, "runs": [r.dir.name for r in runs], "sources": sources, "spec_state": spec_state(spec),
            "decisions": [d.__dict__ for d in decisions], "slot_order": order, "findings": findings}


def slot_order_checks(batches: dict[str, list[Batch]]) -> list[dict]:
    """Model-free: the sp_order group's rows come in pairs (the same logical dot, the metadata's indices ascending, then
    descending); does the hardware give both the same D?"""
    out = []
    for bs in batches.values():
        for b in bs:
            if b.group == "sp_order" and len(b.d) >= 2:
                n = len(b.d) // 2
                out.append({"variant": b.vid, "run": b.run, "pairs": n, "differ": int((b.d[0 : 2 * n : 2] != b.d[1 : 2 * n : 2]).sum())})
    return out


def spec_state(spec: NumericsSpec) -> str:
    """A digest of every parameter's value, status and source (not the notes): which spec a pins document describes."""
    import hashlib

    def strip(d: dict) -> dict:
        return {k: {x: y for x, y in v.items() if x != "note"} for k, v in sorted(d.items())}

    state = {name: strip(st) for name, st in sorted(spec.status.items())}
    state["shapes"] = {name: {sh: strip(st) for sh, st in sorted(by.items())} for name, by in sorted(spec.shape_status.items())}
    return hashlib.sha256(json.dumps(state, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _project(cands: list[dict], k: str) -> list[dict]:
    seen, out = set(), []
    for c in cands:
        key = json.dumps(c.get(k))
        if k in c and key not in seen:
            seen.add(key)
            out.append({k: c[k]})
    return out


def pins_markdown(doc: dict) -> str:
    """The decisions as a table (one row per parameter)."""
    lines = ["| path | shape | parameter | spec | consistent classes | decision |", "|---|---|---|---|---|---|"]
    def show(param: str, x) -> str:
        return "none" if x is None else f"{x:#x}" if param.startswith("nan_bits.") and isinstance(x, int) else str(x)

    for d in doc["decisions"]:
        vals = ", ".join(show(d["param"], x) for x in d["consistent"][:8]) + (" ..." if len(d["consistent"]) > 8 else "")
        lines.append(f"| {d['path']} | {d['shape'] or ''} | {d['param']} | {show(d['param'], d['spec_value'])} ({d['spec_status']}) "
                     f"| {vals} | **{d['decision']}** |")
    if doc.get("written"):
        lines += ["", "Written into specs/numerics.yaml:", ""] + [f"* {w}" for w in doc["written"]]
    if doc["findings"]:
        lines += ["", "Findings:", ""] + [f"* {f}" for f in doc["findings"]]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------
# writing the decisions into specs/numerics.yaml
# ---------------------------------------------------------------------------


class SpecEditError(ValueError):
    """The YAML is not in the one-line-per-parameter layout the editor rewrites."""


def _yaml_scalar(x) -> str:
    if x is None:
        return "null"
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, int):
        return str(x)
    return x if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", str(x)) and x not in ("null", "true", "false") else json.dumps(str(x))


def param_line(indent: int, name: str, entry: dict) -> str:
    parts = [f"value: {_yaml_scalar(entry['value'])}", f"status: {entry['status']}"]
    if entry.get("source"):
        parts.append(f"source: {_yaml_scalar(entry['source'])}")
    if entry.get("note"):
        parts.append(f"note: {json.dumps(entry['note'])}")
    return " " * indent + f"{name}: {{{', '.join(parts)}}}"


def _block(lines: list[str], start: int, indent: int) -> int:
    """The end (exclusive) of the block whose header is ``lines[start]`` at ``indent``."""
    i = start + 1
    while i < len(lines) and (not lines[i].strip() or lines[i].startswith(" " * (indent + 1))):
        i += 1
    return i


def _find(lines: list[str], lo: int, hi: int, indent: int, key: str) -> int | None:
    pat = re.compile(rf"^ {{{indent}}}{re.escape(key)}:")
    return next((i for i in range(lo, hi) if pat.match(lines[i])), None)


def set_param(text: str, path: str, param: str, entry: dict, shape: str | None = None) -> str:
    """``text`` with the path's (or the path's shape's) ``param`` line replaced by ``entry`` (inserted if absent)."""
    lines = text.split("\n")
    top = _find(lines, 0, len(lines), 0, "paths")
    if top is None:
        raise SpecEditError("no paths: block")
    end = _block(lines, top, 0)
    at = _find(lines, top + 1, end, 2, path)
    if at is None:
        raise SpecEditError(f"no path {path!r} under paths:")
    pend = _block(lines, at, 2)
    indent = 4
    lo, hi = at + 1, pend
    if shape:
        sh = _find(lines, lo, hi, 4, "shapes")
        if sh is None:
            lines[hi:hi] = ["    shapes:"]
            sh, hi = hi, hi + 1
        shend = _block(lines, sh, 4)
        one = _find(lines, sh + 1, shend, 6, shape)
        if one is None:
            lines[shend:shend] = [f"      {shape}:"]
            one, shend = shend, shend + 1
        lo, hi, indent = one + 1, _block(lines, one, 6), 8
    line = _find(lines, lo, hi, indent, param)
    new = param_line(indent, param, entry)
    if line is not None:
        if not lines[line].rstrip().endswith("}"):
            raise SpecEditError(f"{path} {param}: not a one-line {{...}} entry; edit it by hand")
        lines[line] = new
    else:
        stop = _find(lines, lo, hi, indent, "shapes") if not shape else None
        where = stop if stop is not None else hi
        while where > lo and not lines[where - 1].strip():
            where -= 1
        lines[where:where] = [new]
    return "\n".join(lines)


def set_nan_bits(text: str, t: str, entry: dict) -> str:
    """``defaults.nan_bits.<t>`` replaced by ``entry``."""
    lines = text.split("\n")
    top = _find(lines, 0, len(lines), 0, "defaults")
    nb = _find(lines, top + 1, _block(lines, top, 0), 2, "nan_bits") if top is not None else None
    if nb is None:
        raise SpecEditError("no defaults.nan_bits block")
    line = _find(lines, nb + 1, _block(lines, nb, 2), 4, t)
    if line is None:
        raise SpecEditError(f"no defaults.nan_bits.{t}")
    entry = dict(entry, value=f"{int(entry['value']):#x}")
    lines[line] = param_line(4, t, entry).replace(f"value: {entry['value']}", f"value: \"{entry['value']}\"")
    return "\n".join(lines)


def set_source(text: str, key: str, desc: str) -> str:
    """``sources.<key>`` set to ``desc`` (added when absent)."""
    lines = text.split("\n")
    top = _find(lines, 0, len(lines), 0, "sources")
    if top is None:
        raise SpecEditError("no sources: block")
    end = _block(lines, top, 0)
    new = f"  {key}: {json.dumps(desc)}"
    at = _find(lines, top + 1, end, 2, key)
    if at is None:
        lines[end:end] = [new]
    else:
        lines[at] = new
    return "\n".join(lines)


def write_spec(doc: dict, spec_file: Path, new_sources: dict[str, str], check: Callable[[str], None]) -> list[str]:
    """Apply the pins document's decisions to the spec file; ``check(text)`` must load the result (else nothing is written).
    ``new_sources``: source keys to add or update (key -> what the run was).

    confirm: status measured (a measured note is kept); change: value and status measured; moot: status moot;
    contradicted: the first consistent value, assumed; open/unmeasured: the value stays, and a measured status (which
    claims one class) drops to published (when it cites KM2025) or assumed; none-fits: nothing.
    Returns what changed, one line each."""
    text = spec_file.read_text()
    for key, desc in new_sources.items():
        text = set_source(text, key, desc)
    changed = []
    for d in doc["decisions"]:
        if d["decision"] == "none-fits" or (d["decision"], d["spec_status"]) in (("confirm", "measured"), ("moot", "moot")):
            continue
        if d["decision"] in ("open", "unmeasured"):
            if d["spec_status"] != "measured":
                continue
            cites = "KM2025" in json.dumps(d.get("spec_entry", {}))
            status, source = ("published", "KM2025") if cites else ("assumed", d["source"])
        else:
            status = {"confirm": "measured", "change": "measured", "moot": "moot", "contradicted": "assumed"}[d["decision"]]
            source = d["source"] if status != "moot" else None
        entry = {"value": d["value"], "status": status, "source": source, "note": d["note"]}
        if d["param"].startswith("nan_bits."):
            text = set_nan_bits(text, d["param"].split(".", 1)[1], entry)
        else:
            text = set_param(text, d["path"], d["param"], entry, d["shape"])
        changed.append(f"{d['path']}{' ' + d['shape'] if d['shape'] else ''} {d['param']}: {d['spec_value']} "
                       f"({d['spec_status']}) -> {d['value']} ({status})")
    check(text)
    spec_file.write_text(text)
    return changed
