"""Layout discovery: learn an instruction's lane maps from the hardware, assuming none.

Inputs are written straight into register slots ``(lane, element)``, never
through a layout.  Three kinds of case reveal everything a matrix product can:

* **C -> D**: A = B = 0, every C slot a distinct tag (digits over cases): D
  is a permutation of C, so each D slot names the C slot it came from.
* **one-hot**: the multiplicand with fewer slots (say B) is zero but for one
  slot p, set to 1; the other (A) is all ones: the D slots that light up form
  one column n(p) of D.
* **tags**: the same one-hot p, with A carrying tags: each lit D slot at row m
  receives A[m, k(p)], naming the A slot that holds row m, column k(p).

A family may discover in its own way (``Family.discover``: wgmma.mma_async.sp, whose warpgroup
operands partly sit in shared memory); :func:`discover` asks it first.

A product fixes layouts only up to a consistent relabeling of M, N and K.
M and N are read from D's labels: the spec's D map when the variant has one,
else a canonical labeling (rows and columns numbered in order of first
appearance).  K classes (the slots of the one-hot operand that reveal the same
set of A slots) are numbered to agree with the spec where a consistent
bijection exists; the result says which relabeling it used, and lists every
slot where no relabeling makes observation and spec agree.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
from ptxconf.backends.base import Backend, Launch, native_build
from ptxconf.core.family import family_of
from ptxconf.families.mma import Probe, alphabet, buffer_layout, module_source
from ptxconf.isa.fit import fit_formula
from ptxconf.isa.model import Variant
from ptxconf.isa.packing import element_bits, slots_to_words
from ptxconf.isa.targets import PtxVersion, parse_target

__all__ = ["Discovery", "plan_cases", "infer", "discover", "fit_formula"]


@dataclass
class Discovery:
    variant: str
    maps: dict[str, np.ndarray]  # operand -> int64[lane, element, 3] (matrix, row, col)
    relabeling: list[str]
    diffs: dict[str, list[str]] = field(default_factory=dict)
    cases: int = 0
    seconds: float = 0.0
    # Where the owning family discovers on its own (Family.discover): the spec's maps by the same names,
    # the observed layouts as a spec-format document, and the maps whose formulas did not fit.
    spec_maps: dict[str, np.ndarray] | None = None
    document: dict | None = None
    unfit: list[str] = field(default_factory=list)

    @property
    def agrees(self) -> bool:
        return not any(self.diffs.values())


@dataclass
class CasePlan:
    variant: Variant
    one_hot: str  # "A" or "B": the operand set one slot at a time
    tagged: str  # the other multiplicand
    in_words: np.ndarray
    c_digits: int
    t_digits: int
    c_alpha: list[float]
    t_alpha: list[float]
    patterns: int = 1  # mma.sp: uniform metadata patterns, each covering half of every chunk


def _slots(v: Variant, name: str) -> int:
    return v.operands[name].layout.lanes * v.operands[name].layout.elements


def _digits(count: int, radix: int) -> int:
    return max(1, math.ceil(math.log(count, radix))) if count > 1 else 1


def _tag_bits(v: Variant, name: str, alpha: list[float], digit: int) -> np.ndarray:
    op = v.operands[name]
    n = _slots(v, name)
    radix = len(alpha)
    vals = np.array(alpha)[(np.arange(n) // radix**digit) % radix]
    return op.type.encode(vals).reshape(op.layout.lanes, op.layout.elements)


# mma.sp: every metadata field of every lane set alike, so the (unknown) metadata layout does
# not matter; (0, 1) makes the first half of each chunk non-zero, (2, 3) the second half
# (1:2 .tf32 and 4:8 pairs read the same pairs the same way; conformance/isa/sparse.py).
SPARSE_PATTERNS = ((0, 1), (2, 3))


def plan_cases(v: Variant) -> CasePlan:
    """Every structured case of a variant, as raw input words ``[case, lane, word]``.

    For ``mma.sp`` every case is run once per uniform metadata pattern; this
    assumes only that a metadata field's slot is its index's parity (two
    2-bit fields per chunk), which every layout in the ISA's figures has.
    """
    if v.family not in ("mma.sync", "mma.sp"):
        raise ValueError(f"{v.id}: discovery covers mma.sync and mma.sp ({v.family} moves data: its map checks observe it directly)")
    if v.instruction.bitop == "xor":
        raise ValueError(f"{v.id}: discovery uses the .and.popc form of the same shape (xor does not select)")
    if any(n.startswith("scale_") for n in v.operands):
        raise ValueError(f"{v.id}: discovery of scale-factor operands is not supported yet")
    ops = v.operands
    sparse = "metadata" in ops
    one_hot = "B" if sparse or _slots(v, "B") <= _slots(v, "A") else "A"
    tagged = "A" if one_hot == "B" else "B"
    d_type = ops["D"].type.name
    c_alpha = list(alphabet(ops["C"].type.name, d_type))
    t_alpha = [x for x in alphabet(ops[tagged].type.name, d_type)]
    c_digits = _digits(_slots(v, "C"), len(c_alpha))
    t_digits = _digits(_slots(v, tagged), len(t_alpha))
    per_p = 1 + t_digits
    n_p = _slots(v, one_hot)
    patterns = len(SPARSE_PATTERNS) if sparse else 1
    cases = c_digits + n_p * patterns * per_p
    names = ("A", "B", "C", "metadata") if sparse else ("A", "B", "C")
    slot_bits = {n: np.zeros((cases, 32, ops[n].layout.elements), dtype=np.uint64) for n in names}
    for d in range(c_digits):
        slot_bits["C"][d] = _tag_bits(v, "C", c_alpha, d)
        if sparse:  # A = 0 here, but metadata the ISA leaves undefined (0b0000) is still not fed
            slot_bits["metadata"][d] = np.array(SPARSE_PATTERNS[0], dtype=np.uint64)[
                np.arange(ops["metadata"].layout.elements) % 2][None, :]
    one = {n: int(ops[n].type.encode(np.array([1.0]))[0]) for n in ("A", "B")}
    tag = [_tag_bits(v, tagged, t_alpha, d) for d in range(t_digits)]
    e_p = ops[one_hot].layout.elements
    for p in range(n_p):
        lane, elem = divmod(p, e_p)
        for j in range(patterns):
            base = c_digits + (p * patterns + j) * per_p
            slot_bits[one_hot][base : base + per_p, lane, elem] = one[one_hot]
            slot_bits[tagged][base] = one[tagged]
            for d in range(t_digits):
                slot_bits[tagged][base + 1 + d] = tag[d]
            if sparse:
                fields = np.array(SPARSE_PATTERNS[j], dtype=np.uint64)[np.arange(ops["metadata"].layout.elements) % 2]
                slot_bits["metadata"][base : base + per_p] = fields[None, None, :]
    layout = buffer_layout(v)
    words = np.zeros((cases, 32, layout.in_words), dtype=np.uint32)
    for name, off in layout.inputs.items():
        words[:, :, off : off + ops[name].words] = slots_to_words(ops[name], slot_bits[name])
    return CasePlan(v, one_hot, tagged, words, c_digits, t_digits, c_alpha, t_alpha, patterns)


def _decode_digits(values: np.ndarray, alpha: list[float]) -> np.ndarray:
    lookup = {float(x): i for i, x in enumerate(alpha)}
    flat = [lookup.get(float(x), -1) for x in values.reshape(-1)]
    return np.array(flat, dtype=np.int64).reshape(values.shape)


def _canonical_labels(v: Variant, lit: list[np.ndarray], t_at: list[np.ndarray], one_hot: str) -> np.ndarray:
    """(matrix 0, row, col) per D slot from the experiments alone, in order of first appearance."""
    n_d = _slots(v, "D")
    parent = list(range(n_d))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    line_of = np.full(n_d, -1)  # the D line (column if one_hot is B) each slot lies on
    for slots in lit:
        line_of[slots] = min(slots) if len(slots) else -1
    seen: dict[int, list[int]] = {}
    for slots, ts in zip(lit, t_at):
        for x, t in zip(slots, ts):
            if t >= 0:
                seen.setdefault(int(t), []).append(int(x))
    for xs in seen.values():  # the same tagged slot lands on one cross line
        for x in xs[1:]:
            parent[find(x)] = find(xs[0])
    cross = np.array([find(x) for x in range(n_d)])
    lines = {k: i for i, k in enumerate(sorted(set(line_of.tolist())))}
    crosses = {k: i for i, k in enumerate(sorted(set(cross.tolist())))}
    out = np.zeros((n_d, 3), dtype=np.int64)
    for x in range(n_d):
        a, b = crosses[int(cross[x])], lines[int(line_of[x])]
        out[x] = (0, a, b) if one_hot == "B" else (0, b, a)
    return out


def _stored_columns(plan: CasePlan, revealed: dict, spec_a: np.ndarray, use_spec: bool, relabel: list[str]) -> dict:
    """mma.sp: number the stored (compressed) columns of A, one per set of A slots a column reveals."""
    sets = sorted({r for r in revealed.values() if r}, key=min)
    if use_spec:
        chosen = {r: Counter(int(spec_a[t, 2]) for t in r).most_common(1)[0][0] for r in sets}
        if len(set(chosen.values())) == len(chosen):
            relabel.append("stored columns of A numbered to agree with the spec's compressed A map")
            return chosen
    relabel.append("stored columns of A numbered canonically")
    return {r: i for i, r in enumerate(sets)}


def _canonical_k(classes: list, mat_of_class: dict) -> dict:
    """K classes numbered 0.. within each matrix, in order of first appearance."""
    count: Counter = Counter()
    out = {}
    for c in classes:
        m = mat_of_class.get(c, -1)
        out[c] = count[m]
        count[m] += 1
    return out


def infer(plan: CasePlan, out_words: np.ndarray, use_spec: bool = True) -> Discovery:
    """Observed lane maps of A, B, C (and D's labels) from the outputs of :func:`plan_cases`."""
    v = plan.variant
    ops = v.operands
    d = ops["D"]
    d_vals = d.type.decode(element_bits(d, out_words[:, :, : d.words]))  # [case, lane, elem]
    d_vals = d_vals.reshape(len(d_vals), -1)
    n_d = d_vals.shape[1]
    # C -> D
    c_dig = _decode_digits(d_vals[: plan.c_digits], plan.c_alpha)
    c_of_d = np.where(np.all(c_dig >= 0, axis=0), sum(c_dig[j] * len(plan.c_alpha) ** j for j in range(plan.c_digits)), -1)
    # one-hot experiments
    per_p = 1 + plan.t_digits
    n_p = _slots(v, plan.one_hot)
    lit: list[np.ndarray] = []
    t_at: list[np.ndarray] = []
    radix = len(plan.t_alpha)
    pattern_of_p: list[int] = []
    for p in range(n_p):
        # mma.sp: of the metadata patterns, the one under which this slot's k is non-zero lights D
        for j in range(plan.patterns):
            base = plan.c_digits + (p * plan.patterns + j) * per_p
            slots = np.nonzero(d_vals[base] != 0)[0]
            if len(slots) or j == plan.patterns - 1:
                break
        dig = _decode_digits(d_vals[base + 1 : base + per_p][:, slots], plan.t_alpha)
        t = np.where(np.all(dig >= 0, axis=0), sum(dig[jj] * radix**jj for jj in range(plan.t_digits)), -1)
        lit.append(slots)
        t_at.append(np.asarray(t, dtype=np.int64))
        pattern_of_p.append(j)
    relabel: list[str] = []
    if use_spec:
        d_label = d.layout.map().reshape(n_d, 3)
        relabel.append("M and N (and the computation index) follow the spec's D map")
    else:
        d_label = _canonical_labels(v, lit, t_at, plan.one_hot)
        relabel.append("M and N numbered canonically: in order of first appearance over lanes and elements")
    # K classes: one-hot slots that reveal the same set of tagged slots
    # (mma.sp: the same stored column under another metadata pattern is another k.)
    revealed = {p: frozenset(int(t) for t in ts if t >= 0) for p, ts in enumerate(t_at)}
    cls_of_p = {p: (revealed[p], pattern_of_p[p]) for p in revealed}
    classes = sorted(set(cls_of_p.values()), key=lambda c: (min(c[0]) if c[0] else -1, c[1]))
    spec_maps = {n: ops[n].layout.map().reshape(-1, 3) for n in ("A", "B", "C")}
    k_axis = 2 if plan.one_hot == "A" else 1  # where k sits in the one-hot operand's (matrix, row, col)
    # Each class lies in one matrix (computation): number K within it.
    mat_of_class = {}
    for p, c in cls_of_p.items():
        if len(lit[p]):
            mat_of_class[c] = int(d_label[lit[p][0], 0])
    if use_spec:
        votes: dict[tuple, Counter] = {c: Counter() for c in classes}
        for p, c in cls_of_p.items():
            votes[c][int(spec_maps[plan.one_hot][p, k_axis])] += 1
        chosen = {c: votes[c].most_common(1)[0][0] for c in classes if votes[c]}
        keys = [(mat_of_class.get(c, -1), k) for c, k in chosen.items()]
        if len(set(keys)) == len(keys):
            k_of_class = chosen
            relabel.append("K numbered to agree with the spec's " + plan.one_hot + " map (a consistent bijection exists)")
        else:
            relabel.append("K: no bijection agrees with the spec; numbered canonically")
            k_of_class = _canonical_k(classes, mat_of_class)
    else:
        relabel.append("K numbered canonically")
        k_of_class = _canonical_k(classes, mat_of_class)
    col_of_set = _stored_columns(plan, revealed, spec_maps["A"], use_spec, relabel) if plan.patterns > 1 else None
    maps = {n: np.full((32 * ops[n].layout.elements, 3), -1, dtype=np.int64) for n in ("A", "B", "C", "D")}
    maps["D"] = d_label.copy()
    for x in range(n_d):
        if c_of_d[x] >= 0 and c_of_d[x] < len(maps["C"]):
            maps["C"][c_of_d[x]] = d_label[x]
    for p in range(n_p):
        slots, ts = lit[p], t_at[p]
        if not len(slots):
            continue
        k = k_of_class.get(cls_of_p[p], -1)
        mat, _, _ = d_label[slots[0]]
        if plan.one_hot == "B":
            n = d_label[slots[0], 2]
            maps["B"][p] = (mat, k, n)
            a_col = k if col_of_set is None else col_of_set.get(revealed[p], -1)
            for x, t in zip(slots, ts):
                if 0 <= t < len(maps["A"]):
                    maps["A"][t] = (d_label[x, 0], d_label[x, 1], a_col)
        else:
            m = d_label[slots[0], 1]
            maps["A"][p] = (mat, m, k)
            for x, t in zip(slots, ts):
                if 0 <= t < len(maps["B"]):
                    maps["B"][t] = (d_label[x, 0], k, d_label[x, 2])
    shaped = {n: maps[n].reshape(32, ops[n].layout.elements, 3) for n in maps}
    diffs = {}
    if use_spec:
        for n in ("A", "B", "C"):
            spec = ops[n].layout.map()
            bad = np.argwhere(np.any(shaped[n] != spec, axis=-1))
            diffs[n] = [
                f"{n} lane {lane} element {e}: spec {tuple(int(x) for x in spec[lane, e])}, observed {tuple(int(x) for x in shaped[n][lane, e])}"
                for lane, e in bad
            ]
    return Discovery(v.id, shaped, relabel, diffs, cases=len(plan.in_words))


def discover(backend: Backend, v: Variant, use_spec: bool = True, version: str | None = None) -> Discovery:
    """Run every structured case of ``v`` in one launch and infer its maps (the owning family's own
    discovery where it has one: :meth:`Family.discover`)."""
    t0 = time.perf_counter()
    own = family_of(v).discover(backend, v, use_spec)
    if own is not None:
        return Discovery(v.id, own["maps"], own["relabeling"], own["diffs"], own["cases"], time.perf_counter() - t0,
                         own["spec"], own["document"], own["unfit"])
    plan = plan_cases(v)
    target, ptx = native_build(v, backend)
    ptx = PtxVersion.parse(version) if version else ptx
    # Selector immediates: any legal value (every lane's metadata is the same pattern).
    params = {name: op.param_combinations()[0] for name, op in v.operands.items() if op.params}
    probe = Probe(v, params)
    module = module_source([probe], ptx, parse_target(target.name))
    n = len(plan.in_words)
    out_words = buffer_layout(v).out_words
    result = backend.run(module, [Launch(probe, plan.in_words, out_words, np.arange(n, dtype=np.uint32), 8)])[0]
    if result.error:
        raise RuntimeError(f"{v.id}: launch failed: {result.error}")
    disc = infer(plan, result.out, use_spec)
    disc.seconds = time.perf_counter() - t0
    return disc


# ---------------------------------------------------------------------------
# Formula fitting: bit-linear forms in the ISA's words
# ---------------------------------------------------------------------------
