"""Discovery for wgmma.mma_async.sp: the register lane maps learnt from the hardware, assuming none.

Register inputs are written straight into (lane, element) slots, never through a layout; what
sits in shared memory (B, and A of the ``/ss`` forms) goes through the spec's canonical layouts
and descriptors (no swizzle, K-major), which the conformance run verifies on their own.
scale-d is 0, so D = A·B.  Three experiments, each a set of warpgroup cases:

* **columns of D**: every stored A element 1, every metadata nibble 0b0100 (indices 0, 1), and
  every row k of B the digits of n + 1 in column n: D(m, n) = K/2 * digit, so each D slot names
  its column.
* **rows of D, and A**: ``/ss``: row m of the compressed A carries the digits of m + 1 and B is
  ones: each D slot names its row.  ``/rs``: A's register slots carry their own tags (slot + 1, in
  digits) and B is one for one dense k (row k of B all ones, k stored under indices 0, 1): every
  D slot of row m shows the tag of the A slot holding (m, k).  D slots showing one tag share a
  row, and that A slot holds that row at k's compressed column; rows are numbered as the spec's D
  map numbers them where one bijection makes them agree (M is not observable apart from A and D
  in registers), else in order of first appearance.
* **metadata, per selector**: every (lane, nibble) of every lane carries its own sequence of
  legal index pairs over the cases (a code), stored slot s of every chunk carries s + 1 (through
  the A map just learnt, or the shared-memory layout) and B selects dense column n + s*N into
  column n: D spells every chunk's pair case by case, and the code names the lane and nibble it
  came from, and which of the nibble's two fields is slot 0.  (With A in registers a nibble whose
  fields are read the other way round looks the same as A's two stored elements of the chunk in
  each other's registers: A is learnt taking field 0 as slot 0's index, as the ISA says.)

The result: the observed maps of D, A (``/rs``) and ``metadata.sel<S>`` per legal selector, the
spec's maps beside them, every slot where they differ, and a layouts-only spec document with
bit-linear formulas fitted over the warpgroup's ``%laneid`` (``where`` for the metadata lanes).
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
from ptxconf.backends.base import Launch
from ptxconf.core.plan import runnable_targets, support_reason
from ptxconf.families.wgmma import cases as wgc
from ptxconf.families.wgmma import probe as wg
from ptxconf.isa.expr import evaluate, parse
from ptxconf.isa.fit import _runs, _term
from ptxconf.isa.packing import element_bits, slots_to_words
from ptxconf.isa.ptxtypes import TYPES
from ptxconf.isa.sparse import positions

from . import cases as spc
from . import probe as sp
from .spec import WgmmaSpVariant

__all__ = ["discover", "fit_lanes"]

UNIFORM = (0, 1)  # the index pair of every chunk while A and D are learnt
CODE_SPACE = sp.LANES * 8  # (lane, nibble) pairs a code must tell apart


def _imm(v: WgmmaSpVariant, sel: int) -> dict:
    """Immediates that leave values alone: scales 1, no transpose."""
    imm: dict[str, int] = {"sel": sel}
    for name in v.immediates:
        imm[name] = 1 if name.startswith("scale") else 0
    return imm


def _nibbles(pairs: np.ndarray) -> np.ndarray:
    """``[..., 8, 2]`` index pairs -> ``uint32[...]`` metadata words (field 0 in a nibble's low bits)."""
    nib = (pairs[..., 0] | pairs[..., 1] << 2).astype(np.uint32) << (4 * np.arange(8, dtype=np.uint32))
    return np.bitwise_or.reduce(nib, axis=-1).astype(np.uint32)


class _Cases:
    """Case words of one discovery, built one case at a time."""

    def __init__(self, v: WgmmaSpVariant):
        self.v, self.model = v, wg.model_of(v)
        self.rows: list[np.ndarray] = []
        rng = np.random.default_rng(0)
        room = sp.image_bytes(v) - sp.b_base(v)
        self.db, _ = spc.layout_choice(v, rng, "B", 0, "none", self.model, sp.b_base(v), room, False)
        self.da = spc.layout_choice(v, rng, "A", 0, "none", self.model, 0, sp.A_REGION, False)[0] \
            if v.a_src == "shared" else None

    def add(self, B: np.ndarray, meta: np.ndarray, regs: np.ndarray | None = None, tile: np.ndarray | None = None) -> int:
        v = self.v
        words = np.zeros((1, sp.LANES, sp.in_words(v)), dtype=np.uint32)
        img = np.zeros((1, sp.image_bytes(v)), dtype=np.uint8)
        words[0, :, 2], words[0, :, 3] = wg._words(self.model, self.db)
        wg.fill(v, img[0], self.db, "B", 0, B, self.model.smem)
        if self.da is not None:
            words[0, :, 0], words[0, :, 1] = wg._words(self.model, self.da)
            wg.fill(v.a_view, img[0], self.da, "A", 0, tile, self.model.smem)
        else:
            aop = v.operands["A"]
            words[0, :, sp.a_off(v) : sp.a_off(v) + aop.words] = slots_to_words(aop, regs[None])[0]
        words[0, :, sp.META_WORD] = meta
        sp.put_image(v, words, img)
        self.rows.append(words[0])
        return len(self.rows) - 1

    def run(self, backend: Any, sel: int) -> np.ndarray:
        """Every case in one launch of the kernel for selector ``sel``; D values ``float64[case, lane, element]``."""
        v = self.v
        probe = sp.SpProbe(v, tuple(sorted(_imm(v, sel).items())))
        target, version = _build(v, backend)
        module = sp.module_source([probe], version, target)
        rows = np.stack(self.rows)
        result = backend.run(module, [Launch(probe, rows, sp.out_words(v), np.arange(len(rows), dtype=np.uint32), 1)])[0]
        if result.error:
            raise RuntimeError(f"{v.id}: launch failed: {result.error}")
        dop = v.operands["D"]
        return TYPES[v.dtype].decode(element_bits(dop, result.out[:, :, : dop.words])).astype(np.float64)


def _build(v: WgmmaSpVariant, backend: Any) -> tuple[Any, Any]:
    """The newest target the GPU (or the GPU the emulator stands in for) loads, at the lowest ``.version`` it needs;
    ValueError with the reason where it cannot run ``v``."""
    cc = backend.cc_for(v) if hasattr(backend, "cc_for") else backend.compute_capability()
    why = support_reason(v, cc, backend.max_ptx())
    if why:
        raise ValueError(f"{v.id}: {why}")
    target = sorted(runnable_targets(v, cc), key=lambda t: (t.cc, t.suffix))[-1]
    return target, max(v.min_ptx, target.min_ptx)


def _digits(count: int, bits: int) -> int:
    return max(1, math.ceil(math.log2(count + 1) / bits))


def _code_of(values: np.ndarray, digits: int, bits: int, scale: float) -> np.ndarray:
    """Integers spelt by ``values[digit, ...]`` (each ``scale`` times a digit); -1 where one is not a digit."""
    d = values / scale
    ok = np.all((d == np.rint(d)) & (d >= 0) & (d < 2**bits), axis=0)
    n = sum(np.rint(d[i]).astype(np.int64) << (bits * i) for i in range(digits))
    return np.where(ok, n, -1)


def _rows_and_cols(v: WgmmaSpVariant, backend: Any, use_spec: bool, relabel: list[str]) -> tuple[dict, int]:
    """D's (row, col) per slot, and (``/rs``) A's; the cases run."""
    spx = sp.sparsity(v)
    cs = _Cases(v)
    at, bt = v.atype, v.btype
    one_a, one_b = wgc._digit(at, np.array(1)), wgc._digit(bt, np.array(1))
    aop = v.operands.get("A")
    a_slots = (sp.LANES, aop.layout.elements) if aop is not None else None
    uniform = np.full(sp.LANES, _nibbles(np.array([UNIFORM] * 8)), dtype=np.uint32)
    kh = v.K // 2  # stored elements per row: D(m, n) = kh * digit
    # columns of D
    dbb = wgc.DIGIT_BITS[bt]
    cd = _digits(v.N, dbb)
    cols = []
    for d in range(cd):
        digit = ((np.arange(v.N) + 1) >> (dbb * d)) & ((1 << dbb) - 1)
        B = np.broadcast_to(wgc._digit(bt, digit)[None, :], (v.K, v.N)).copy()
        cols.append(cs.add(B, uniform, regs=np.full(a_slots, one_a, dtype=np.uint64) if a_slots else None,
                           tile=np.full((64, v.kc), one_a, dtype=np.uint64)))
    dba = wgc.DIGIT_BITS[at]
    ones_b = np.full((v.K, v.N), one_b, dtype=np.uint64)
    rows: list[int] = []
    stored = [int(k) for k in (positions(spx, np.array([UNIFORM] * spx.chunks)) + np.arange(spx.chunks)[:, None] * spx.width).ravel()]
    if v.a_src == "shared":
        rd = _digits(64, dba)
        for d in range(rd):
            digit = ((np.arange(64) + 1) >> (dba * d)) & ((1 << dba) - 1)
            rows.append(cs.add(ones_b, uniform, tile=np.broadcast_to(wgc._digit(at, digit)[:, None], (64, v.kc)).copy()))
    else:
        n_slots = a_slots[0] * a_slots[1]
        rd = _digits(n_slots, dba)
        tags = (np.arange(n_slots) + 1).reshape(a_slots)
        for k in stored:
            B = np.zeros((v.K, v.N), dtype=np.uint64)
            B[k, :] = one_b
            for d in range(rd):
                rows.append(cs.add(B, uniform, regs=wgc._digit(at, (tags >> (dba * d)) & ((1 << dba) - 1))))
    vals = cs.run(backend, v.selectors[0])
    col = _code_of(vals[cols], cd, dbb, kh) - 1
    out: dict[str, Any] = {"col": col}
    if v.a_src == "shared":
        out["row"] = _code_of(vals[rows], rd, dba, kh) - 1
        relabel.append("M and N of D read off the shared-memory A and B (absolute)")
        return out, len(cs.rows)
    per_k = [_code_of(vals[rows[i * rd : (i + 1) * rd]], rd, dba, 1.0) - 1 for i in range(len(stored))]  # A slot seen
    first: dict[int, int] = {}
    row_class = np.full(col.shape, -1, dtype=np.int64)
    for x in zip(*np.nonzero(per_k[0] >= 0)):
        row_class[x] = first.setdefault(int(per_k[0][x]), len(first))
    a_map = np.full(a_slots + (3,), -1, dtype=np.int64)
    cell = {k: (i // spx.nz, i % spx.nz) for i, k in enumerate(stored)}  # dense k -> (chunk, slot)
    for k, seen in zip(stored, per_k):
        chunk, slot = cell[k]
        for x in zip(*np.nonzero(seen >= 0)):
            t = int(seen[x])
            if 0 <= t < a_map.shape[0] * a_map.shape[1]:
                a_map[t // a_slots[1], t % a_slots[1]] = (0, row_class[x], chunk * spx.nz + slot)
    out["row"], out["A"] = _number_rows(v, row_class, a_map, use_spec, relabel)
    return out, len(cs.rows)


def _number_rows(v: WgmmaSpVariant, row_class: np.ndarray, a_map: np.ndarray, use_spec: bool,
                 relabel: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Row classes (``/rs``) numbered as the spec's D map numbers them where one bijection agrees, else as found."""
    spec_row = v.operands["D"].layout.map()[..., 1]
    names = {}
    if use_spec:
        for c in set(row_class[row_class >= 0].tolist()):
            got, count = np.unique(spec_row[row_class == c], return_counts=True)
            names[c] = int(got[np.argmax(count)])
        if len(set(names.values())) == len(names):
            relabel.append("M of D and A numbered to agree with the spec's D map (a consistent bijection exists)")
        else:
            names = {}
    if not names:
        relabel.append("M of D and A numbered in order of first appearance (lane, element)")
        names = {c: c for c in set(row_class[row_class >= 0].tolist())}
    lookup = np.vectorize(lambda c: names.get(int(c), -1), otypes=[np.int64])
    rows = lookup(row_class)
    a_map = a_map.copy()
    a_map[..., 1] = np.where(a_map[..., 1] >= 0, lookup(a_map[..., 1]), -1)
    return rows, a_map


def _metadata(v: WgmmaSpVariant, backend: Any, d_map: np.ndarray, a_map: np.ndarray | None,
              sel: int, notes: list[str]) -> tuple[np.ndarray, int]:
    """``int64[lane, field, 3]`` (0, row, field col) of the metadata the hardware read for ``sel``; cases run."""
    spx = sp.sparsity(v)
    pats = np.array(spx.patterns, dtype=np.int64)
    P = len(pats)
    R = math.ceil(math.log(CODE_SPACE, P))
    code = (np.arange(CODE_SPACE)[None, :] // P ** np.arange(R)[:, None]) % P  # [digit, lane * 8 + nibble]
    shifts = -(-v.K // v.N)
    cs = _Cases(v)
    slot_val = np.arange(v.kc) % spx.nz + 1  # compressed col c holds slot c % nz
    tile = np.broadcast_to(wgc._digit(v.atype, slot_val)[None, :], (64, v.kc)).copy()
    regs = None
    if a_map is not None:
        regs = np.where(a_map[..., 2] >= 0, wgc._digit(v.atype, a_map[..., 2] % spx.nz + 1), 0).astype(np.uint64)
    for r in range(R):
        meta = _nibbles(pats[code[r]].reshape(sp.LANES, 8, 2))
        for s in range(shifts):
            cs.add(spc._selection_b(v, s), meta, regs=regs, tile=tile)
    vals = cs.run(backend, sel)  # [R * shifts, lane, element]
    dense = np.full((R, 64, v.K), -1.0)
    rows, cols = d_map[..., 1], d_map[..., 2]
    for r in range(R):
        for s in range(shifts):
            k = cols + s * v.N
            ok = (rows >= 0) & (k < v.K)
            dense[r, rows[ok], k[ok]] = vals[r * shifts + s][ok]
    chunks = dense.reshape(R, 64, spx.chunks, spx.width)
    index = {tuple(int(x) for x in p): i for i, p in enumerate(pats)}
    out = np.full((sp.LANES, 16, 3), -1, dtype=np.int64)
    swapped = 0
    for m in range(64):
        for j in range(spx.chunks):
            digits, flip = [], False
            for r in range(R):
                at = [np.nonzero(chunks[r, m, j] == s + 1)[0] for s in range(spx.nz)]
                if any(len(a) != 1 for a in at):
                    break
                pair = (2 * int(at[0][0]), 2 * int(at[0][0]) + 1) if spx.nz == 1 else (int(at[0][0]), int(at[1][0]))
                if pair not in index and pair[::-1] in index:
                    pair, flip = pair[::-1], True
                if pair not in index:
                    break
                digits.append(index[pair])
            else:
                u = sum(dg * P**r for r, dg in enumerate(digits))
                lane, nibble = divmod(u, 8)
                for slot in range(2):
                    out[lane, 2 * nibble + slot] = (0, m, 2 * j + (1 - slot if flip else slot))
                swapped += flip
    if swapped:
        notes.append(f"selector {sel}: in {swapped} chunks the nibble's high field holds slot 0's index")
    return out, len(cs.rows)


def fit_lanes(values: np.ndarray, held: np.ndarray | None = None) -> str | None:
    """A bit-linear formula over ``%laneid`` and ``i`` for ``values[lane, element]`` across a warpgroup, in the
    words of specs/wgmma_sp.yaml (``groupID`` is ``(%laneid % 32) >> 2``); where ``held`` is given, over the
    held lanes only (every element of a held lane held).  None where no such formula fits."""
    lanes, elems = values.shape
    lane_ok = np.ones(lanes, dtype=bool) if held is None else held.all(axis=1)
    if not lane_ok.any():
        return None
    base_lane = int(np.argmax(lane_ok))
    base = int(values[base_lane, 0])
    lane_bits = int(math.log2(lanes))
    elem_bits = max(1, math.ceil(math.log2(elems))) if elems > 1 else 0
    lw = []
    for b in range(lane_bits):  # a bit that no held lane flips gets weight 0
        other = base_lane ^ (1 << b)
        lw.append(int(values[other, 0]) - base if lane_ok[other] else 0)
    ew = [int(values[base_lane, 1 << b]) - base if (1 << b) < elems else 0 for b in range(elem_bits)]
    if any(w < 0 for w in lw + ew):
        return None
    offset = base - sum(w for b, w in enumerate(lw) if base_lane >> b & 1)
    terms = [_term("%laneid", f, n, w, lane_bits) for f, n, w in _runs(lw, 0)]
    terms += [_term("i", f, n, w, elem_bits) for f, n, w in _runs(ew, 0)]
    if offset:
        terms.append(str(offset))
    text = " + ".join(terms) if terms else "0"
    env = {"%laneid": np.arange(lanes)[:, None], "i": np.arange(elems)[None, :],
           "groupID": parse("(%laneid % 32) >> 2"), "threadID_in_group": parse("%laneid % 4")}
    got = np.broadcast_to(evaluate(parse(text), env), values.shape)
    return text if np.array_equal(got[lane_ok], values[lane_ok]) else None


def where_lanes(lanes_held: np.ndarray) -> str | None:
    """A ``where`` formula naming exactly the held lanes (fixed bits of ``%laneid``), "" for all, None if none fits."""
    lanes = np.nonzero(lanes_held)[0]
    if len(lanes) == len(lanes_held):
        return ""
    if not len(lanes):
        return None
    n = len(lanes_held)
    fixed = [b for b in range(int(math.log2(n))) if len({(int(x) >> b) & 1 for x in lanes}) == 1]
    mask = sum(1 << b for b in fixed)
    value = int(lanes[0]) & mask
    if len(lanes) != n >> len(fixed):
        return None
    named = {0b11: f"threadID_in_group == {value}", 0b10: f"threadID_in_group >> 1 == {value >> 1}",
             0b01: f"(threadID_in_group & 1) == {value}"}
    return named.get(mask, f"(%laneid & {mask:#x}) == {value:#x}")


def _layout(name: str, m: np.ndarray, spec_name: str, rows: int, cols: int, section: str, gpu: str) -> tuple[dict, bool]:
    """A schema-1 layout entry for an observed map (``where`` from the held lanes); whether the formulas fit."""
    held = m[..., 0] >= 0
    lanes_held = held.any(axis=1)
    where = where_lanes(lanes_held)
    row, col = fit_lanes(m[..., 1], held), fit_lanes(m[..., 2], held)
    entry = {"maps": f"(lane {m.shape[0]}, element {m.shape[1]}) -> (row {rows}, col {cols})", "section": section,
             "lanes": int(m.shape[0]), "shape": [rows, cols], "elements": int(m.shape[1])}
    if where:
        entry["where"] = where
    entry["row"], entry["col"] = row or "0", col or "0"
    entry["notes"] = [f"observed on {gpu}; spec layout {spec_name}"]
    fits = where is not None and row is not None and col is not None
    if not fits:
        entry["notes"].append("no bit-linear formula reproduces this map: the .npz beside this file holds it")
    return entry, fits


def discover(backend: Any, v: WgmmaSpVariant, use_spec: bool = True) -> dict:
    """Every experiment of ``v`` on ``backend``; the observed maps, the spec's, their differences and a YAML document."""
    relabel: list[str] = []
    notes: list[str] = []
    found, cases = _rows_and_cols(v, backend, use_spec, relabel)
    dop = v.operands["D"]
    d_map = np.stack([np.zeros_like(found["row"]), found["row"], found["col"]], axis=-1)
    d_map[(found["row"] < 0) | (found["col"] < 0)] = -1
    maps = {"D": d_map}
    spec = {"D": dop.layout.map()}
    if "A" in found:
        maps["A"], spec["A"] = found["A"], v.operands["A"].layout.map()
    meta = v.operands["metadata"]
    for sel in v.selectors:
        m, n = _metadata(v, backend, d_map, maps.get("A"), sel, notes)
        maps[f"metadata.sel{sel}"], spec[f"metadata.sel{sel}"] = m, meta.layout.map({"selector": sel})
        cases += n
    diffs = {}
    for name, got in maps.items():
        bad = np.argwhere(np.any(got != spec[name], axis=-1))
        diffs[name] = [f"{name} lane {ln} element {e}: spec {tuple(int(x) for x in spec[name][ln, e])}, "
                       f"observed {tuple(int(x) for x in got[ln, e])}" for ln, e in bad]
    doc, unfit = _document(v, maps, relabel + notes, backend.info())
    return {"maps": maps, "spec": spec, "relabeling": relabel + notes, "diffs": diffs, "cases": cases,
            "document": doc, "unfit": unfit}


def _document(v: WgmmaSpVariant, maps: dict[str, np.ndarray], notes: list[str], device: dict) -> tuple[dict, list[str]]:
    """The observed layouts as a schema-1 document (layouts only); the maps whose formulas did not fit."""
    gpu = device.get("gpu", "?")
    layouts, unfit = {}, []
    for name, m in maps.items():
        op = v.operands["metadata" if name.startswith("metadata") else name]
        lay = op.layout
        entry, fits = _layout(name, m, lay.name, lay.rows, lay.cols, lay.section, gpu)
        layouts[f"observed.{re.sub(r'[^A-Za-z0-9_.:-]', '_', v.id)}.{name}"] = entry  # a layout name of the schema
        if not fits:
            unfit.append(name)
    fragments = {op.fragment.name: {"register": op.fragment.register, "per_register": op.fragment.per_register}
                 for op in v.operands.values()}
    doc = {
        "schema": 1,
        "family": f"observed.{v.family}",
        "document": f"observed by ptxconf discover on {gpu} (compute capability {device.get('compute_capability', '?')}, "
                    f"driver {device.get('driver', '?')})",
        "section": v.section,
        "notes": [*notes, "wgmma.mma_async.sp: register maps only (B, and A of /ss forms, sit in shared memory, "
                          "written through the spec's layouts); one metadata layout per legal selector (`where`: the "
                          "lanes that supply it); layouts only, no variant"],
        "bindings": {"warp": "%laneid >> 5", "groupID": "(%laneid % 32) >> 2", "threadID_in_group": "%laneid % 4"},
        "fragments": fragments,
        "layouts": layouts,
    }
    return doc, unfit
