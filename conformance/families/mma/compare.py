"""Comparators: recorded probe words -> element-by-element verdicts with a diagnosis.

Everything is recomputed from the recorded words and the *current* specs:
input registers are unpacked through the spec's lane maps, the oracle gives
the expected D, and the observed D registers are unpacked through D's map.
That one path serves live runs and replays of recorded GPU runs alike, so a
changed spec formula shows up as a replay failure naming the wrong lanes.

A mismatch says whether it looks like *layout* (the observed value is
expected elsewhere in D: the right value in the wrong place) or *numerics*
(found nowhere).  Map checks also read back, from the tags, where each
element of the tagged operand went: the observed lane map, diffed against
the spec slot by slot.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from ptxconf.core.record import CheckRecord
from ptxconf.core.verdict import MAX_LISTED, UNDEFINED, Verdict
from ptxconf.families.mma import undefined as ud
from ptxconf.families.mma.probe import BufferLayout, buffer_layout
from ptxconf.generators.ptx import checksum
from ptxconf.isa.model import Variant
from ptxconf.isa.packing import element_bits, unpack
from ptxconf.isa.sparse import densify, sparsity
from ptxconf.oracle import mma

__all__ = ["Mismatch", "compare", "split_inputs", "observed_map"]

@dataclass
class Mismatch:
    case: int
    lane: int
    register: int
    element: int
    matrix: int
    row: int
    col: int
    expected: int
    actual: int
    found_at: list[tuple[int, int, int]] = field(default_factory=list)

    @property
    def kind(self) -> str:
        return "layout" if self.found_at else "numerics"

    def describe(self, v: Variant) -> str:
        d = v.operands["D"]
        width = (d.type.bits + 3) // 4
        ev = d.type.decode(np.array([self.expected]))[0]
        av = d.type.decode(np.array([self.actual]))[0]
        mat = f"computation {self.matrix} " if d.layout.matrices > 1 else ""
        text = (
            f"case {self.case} lane {self.lane} register d{self.register} (element {self.element}) "
            f"{mat}row {self.row} col {self.col}: expected 0x{self.expected:0{width}x} ({ev:g}) "
            f"actual 0x{self.actual:0{width}x} ({av:g})"
        )
        if self.found_at:
            where = ", ".join(f"row {r} col {c}" for _, r, c in self.found_at[:3])
            text += f" [layout: that value is expected at {where}]"
        else:
            text += " [numerics: that value is expected nowhere in D]"
        return text


def split_inputs(v: Variant, words: np.ndarray, layout: BufferLayout | None = None) -> dict[str, np.ndarray]:
    """``words[case, lane, in_words]`` -> per-operand words."""
    layout = layout or buffer_layout(v)
    return {name: words[:, :, off : off + v.operands[name].words] for name, off in layout.inputs.items()}


def compare(v: Variant, rec: CheckRecord) -> Verdict:
    """Verdict for one check's cases (rows of ``rec.in_words``/``rec.out_words``)."""
    if rec.check.startswith("undefined."):
        return undefined_verdict(v, rec)
    check, seed, params, meta, in_words, out_words = rec.check, rec.seed, rec.params, rec.meta, rec.in_words, rec.out_words
    layout = buffer_layout(v)
    ops = v.operands
    words = split_inputs(v, in_words, layout)
    bits = {name: unpack(ops[name], w, params.get(name)) for name, w in words.items()}
    expected = mma(v, bits)
    d = ops["D"]
    actual = unpack(d, out_words[:, :, : d.words])
    verdict = Verdict(v.id, check, seed, "pass", elements=int(expected.size))
    bad = np.argwhere(expected != actual)
    verdict.mismatch_count = len(bad)
    dmap = d.layout.map()
    for case, mat, r, c in bad[: MAX_LISTED * 4]:
        lane, elem = np.argwhere((dmap[..., 0] == mat) & (dmap[..., 1] == r) & (dmap[..., 2] == c))[0]
        want, got = int(expected[case, mat, r, c]), int(actual[case, mat, r, c])
        found = [tuple(int(x) for x in p) for p in np.argwhere(expected[case] == got)]
        verdict.mismatches.append(
            Mismatch(int(case), int(lane), int(elem) // d.fragment.per_register, int(elem), int(mat), int(r), int(c), want, got, found)
        )
    want_sum = checksum(np.arange(32), rec.surroundings)
    got_sum = out_words[:, :, layout.checksum_offset]
    if np.any(got_sum != want_sum[None, :]):
        verdict.status = "fail"
        verdict.message = "the extra live registers around the instruction were clobbered (checksum word differs)"
    moved = False
    if meta and check.startswith("map.") and v.instruction.bitop != "xor":
        first = slice(None, meta["blocks"] * meta["digits"], meta["digits"])  # each block's first case selects
        sel = _selections(v, {name: b[first] for name, b in bits.items()})
        obs, diff = observed_map(v, meta, actual, words[meta["target"]], bits.get("metadata"), sel)
        verdict.observed = obs
        verdict.map_diff = diff
        spec = v.operands[meta["target"]].layout.map()
        moved = bool(((obs >= 0).all(-1) & (obs != spec).any(-1)).any())  # a slot seen in another place, not lost
        if diff and verdict.status == "pass":  # cannot happen when D matched; kept as a guard
            verdict.status = "fail"
    if len(bad):
        verdict.status = "fail"
        # Elements the observed map shows in other places are a layout difference, whatever the values came to
        # (two A elements swapped change every product they feed); otherwise each value says where it is expected.
        kinds = {"layout"} if moved else {m.kind for m in verdict.mismatches}
        verdict.message = (
            f"{len(bad)} of {expected.size} D elements differ ({' and '.join(sorted(kinds))})"
            + (f"; {verdict.message}" if verdict.message else "")
        )
    return verdict


def _selections(v: Variant, bits: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The multiplicands as the spec reads them (A densified through the metadata for mma.sp)."""
    a = bits["A"]
    if "metadata" in bits:
        a = densify(v, a, bits["metadata"])
    return {"A": v.operands["A"].type.decode(a), "B": v.operands["B"].type.decode(bits["B"])}


def _selected(sel: np.ndarray, axis: int) -> np.ndarray:
    """Index of the single 1 along ``axis`` of a 0/1 selection matrix, -1 where there is none."""
    ones = sel == 1
    idx = np.argmax(ones, axis=axis)
    return np.where(np.count_nonzero(ones, axis=axis) == 1, idx, -1)


def _digit_lookup(alphabet: list) -> Callable[[np.ndarray], np.ndarray]:
    """values -> the index of each in ``alphabet`` (the last where it repeats; -0.0 is 0.0), -1 where absent (NaN
    too): one sorted search over the whole array instead of a dictionary lookup per element."""
    alpha = np.asarray(alphabet, dtype=np.float64).reshape(-1)
    order = np.argsort(alpha, kind="stable")
    ranked = alpha[order]

    def digit_of(values: np.ndarray) -> np.ndarray:
        values = np.asarray(values, dtype=np.float64)
        if not len(ranked):
            return np.full(values.shape, -1, dtype=np.int64)
        at = np.clip(np.searchsorted(ranked, values, side="right") - 1, 0, len(ranked) - 1)
        return np.where(ranked[at] == values, order[at], -1).astype(np.int64)

    return digit_of


def _last_slot_of(tag_of_slot: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The held tags, sorted, and the flat slot of each (the last in (lane, element) order where a tag repeats)."""
    flat = tag_of_slot.reshape(-1)
    slots = np.flatnonzero(flat >= 0)
    order = np.argsort(flat[slots], kind="stable")
    tags, slots = flat[slots][order], slots[order]
    last = np.append(tags[1:] != tags[:-1], True)  # within a run of one tag the stable sort keeps slot order
    return tags[last], slots[last]


def _selected_k(target: str, spec: np.ndarray, held_tag: np.ndarray, pick: np.ndarray | None, k: int) -> np.ndarray:
    """Per slot: did the selection inputs ever pick the k of its spec (matrix, row, col) cell (``pick``: the k of
    each block's D column or row, -1 where none; None: no selections, every k counts)?"""
    if pick is None:
        return np.ones(held_tag.shape, dtype=bool)
    kspec = spec[..., 2] if target == "A" else spec[..., 1]
    picked = np.zeros((max(pick.shape[1], int(spec[..., 0].max()) + 1), max(k, int(kspec.max()) + 1)), dtype=bool)
    mats = np.broadcast_to(np.arange(pick.shape[1])[:, None], pick.shape)
    picked[mats[pick >= 0], pick[pick >= 0]] = True
    inside = held_tag & (spec[..., 0] >= 0) & (kspec >= 0)
    return inside & picked[np.where(inside, spec[..., 0], 0), np.where(inside, kspec, 0)]


def _lookup(keys: np.ndarray, values: np.ndarray, query: np.ndarray) -> np.ndarray:
    """``values`` at each ``query`` in the sorted ``keys``, -1 where absent."""
    if not len(keys):
        return np.full(query.shape, -1, dtype=np.int64)
    at = np.clip(np.searchsorted(keys, query), 0, len(keys) - 1)
    return np.where(keys[at] == query, values[at], -1)


def observed_map(
    v: Variant,
    meta: dict,
    actual_bits: np.ndarray,
    tagged_words: np.ndarray | None = None,
    metadata_bits: np.ndarray | None = None,
    selections: dict[str, np.ndarray] | None = None,
) -> tuple[np.ndarray, list[str]]:
    """Read the tags back: where did each (lane, element) of the tagged operand land?

    ``tagged_words`` (the tagged operand's input words, ``[case, lane, word]``)
    gives the tag each register slot actually held; without them the tags are
    inferred from the spec's map, which cannot see a spec edited after the
    recording (a replay).  ``selections`` (the multiplicands as the spec reads
    them, of each block's first case: ``[block, ...]``) say which k each D
    element shows; without them k is taken as the generator chose it.

    Returns ``int64[lane, element, 3]`` (-1 where undecidable) and one line per
    slot whose observed (matrix, row, col) differs from the spec's.  Where two D
    elements carry one slot's tag, the later in (block, matrix, row, col) order
    names its place; where two slots held one tag, the later slot is the one read.
    """
    target = meta["target"]
    op = v.operands[target]
    d = v.operands["D"]
    m, n, k = v.shape
    radix, digits, blocks = meta["radix"], meta["digits"], meta["blocks"]
    digit_of = _digit_lookup(meta["alphabet"])
    spec = op.layout.map()
    held = op.layout.held()
    lay = op.layout
    tag_of_slot = np.full(spec.shape[:2], -1, dtype=np.int64)
    tag_of_slot[held] = ((spec[..., 0] * lay.rows + spec[..., 1]) * lay.cols + spec[..., 2])[held]
    if tagged_words is not None:  # the tags the slots really held, digit j in case j
        held_digits = digit_of(op.type.decode(element_bits(op, tagged_words[:digits])))
        held_tags = sum(held_digits[j] * radix**j for j in range(digits))
        tag_of_slot = np.where(held & np.all(held_digits >= 0, axis=0), held_tags, -1)
    # D's tags, block by block: digit j of block s in case s * digits + j.
    dig = digit_of(d.type.decode(actual_bits[: blocks * digits]))
    dig = dig.reshape(blocks, digits, *dig.shape[1:])  # [block, digit, matrix, M, N]
    tag = np.zeros((blocks, *dig.shape[2:]), dtype=np.int64)
    for j in range(digits):
        tag += dig[:, j] * radix**j
    keys, slots = _last_slot_of(tag_of_slot)
    slot = _lookup(keys, slots, tag)  # flat (lane, element) slot of each D element's tag, -1: none
    ok = np.all(dig >= 0, axis=1) & (slot >= 0)
    s_, mat, r, c = np.indices(tag.shape, sparse=True)
    # Which k the other multiplicand selects, read from the inputs as the spec reads them
    # (not assumed from the generator): D[m, n] = A[m, k(n)] or B[k(m), n]; per block [block, matrix, N or M].
    pick = None
    if selections is not None and target == "A":
        pick = _selected(selections["B"], axis=-2)
    elif selections is not None and target == "B":
        pick = _selected(selections["A"], axis=-1)
    if target == "A":
        kk = c + n * s_ if pick is None else pick[:, :, None, :]
    elif target == "B":
        kk = r + m * s_ if pick is None else pick[:, :, :, None]
    if target in ("A", "B"):
        kk = np.broadcast_to(kk, tag.shape)
        ok &= (kk >= 0) & (kk < k)
        kk = np.where(ok, kk, 0)
    if target == "A" and metadata_bits is not None:
        # mma.sp map.A: D shows dense columns; the (one) metadata of the check says which stored
        # (compressed) column each dense column holds, -1 for the structural zeros.
        comp = np.arange(lay.rows * lay.cols, dtype=np.uint64).reshape(1, 1, lay.rows, lay.cols) + np.uint64(1)
        stored_col = densify(v, comp, metadata_bits[:1]).astype(np.int64)[0, 0] - 1 - np.arange(lay.rows)[:, None] * lay.cols
        kk = stored_col[np.broadcast_to(r, tag.shape), kk]
        ok &= kk >= 0
    if target == "A":
        cells = (mat, r, kk)
    elif target == "B":
        cells = (mat, kk, c)
    else:
        cells = (mat, r, c)
    cell = np.stack([np.broadcast_to(x, tag.shape) for x in cells], axis=-1)[ok]  # in (block, matrix, row, col) order
    at = slot[ok]
    last = len(at) - 1 - np.unique(at[::-1], return_index=True)[1]  # each slot's last D element
    observed = np.full(spec.shape, -1, dtype=np.int64)
    observed.reshape(-1, 3)[at[last]] = cell[last]
    # A slot seen nowhere counts against the spec only where the inputs selected its k (else: undecidable).
    held_tag = tag_of_slot >= 0
    decided = held_tag & ((observed[..., 0] >= 0) | _selected_k(target, spec, held_tag, pick, k))
    diff = []
    for lane, elem in np.argwhere(decided & (observed != spec).any(-1)):
        o = observed[lane, elem]
        seen = "nowhere in D" if o[0] < 0 else f"(matrix {o[0]}, row {o[1]}, col {o[2]})"
        diff.append(
            f"{target} lane {lane} element {elem} (register {elem // op.fragment.per_register}): "
            f"spec (matrix {spec[lane, elem, 0]}, row {spec[lane, elem, 1]}, col {spec[lane, elem, 2]}), observed {seen}"
        )
    return observed, diff


# --- inputs the ISA leaves undefined (mma.sp) ---------------------------------------------------


def undefined_verdict(v: Variant, rec: CheckRecord) -> Verdict:
    """What the hardware made of undefined inputs: an ``undefined`` verdict (or ``skip`` where nothing ran)."""
    check, seed, params, meta, in_words, out_words = rec.check, rec.seed, rec.params, rec.meta, rec.in_words, rec.out_words
    verdict = Verdict(v.id, check, seed, UNDEFINED)
    decided = ud.assembly_observation(meta) if check.startswith("undefined.selector") else None
    if decided:
        verdict.status, verdict.message = decided
        return verdict
    layout = buffer_layout(v)
    d = v.operands["D"]
    if ud.not_modelled(out_words[:, :, : d.words]):
        verdict.message = ud.NOT_MODELLED_TEXT
        return verdict
    words = split_inputs(v, in_words, layout)
    actual = unpack(d, out_words[:, :, : d.words])
    if check == "undefined.metadata":
        verdict.message, verdict.map_diff = _metadata_observation(v, words, actual, params, meta)
    else:
        verdict.message, verdict.map_diff = _selector_observation(v, words, actual, params, meta)
    elements = int(actual.size)
    verdict.elements = elements
    if np.any(out_words[:, :, layout.checksum_offset] != checksum(np.arange(32), rec.surroundings)[None, :]):
        verdict.message += "; and the extra live registers around the instruction were clobbered"
    return verdict


def _metadata_observation(v: Variant, words: dict, actual: np.ndarray, params: dict, meta: dict) -> tuple[str, list[str]]:
    """Read every chunk's dense positions back from D (B selects dense column n + N*s into column n)."""
    ops = v.operands
    sp = sparsity(v)
    m, n, k = v.shape
    digits, blocks = int(meta["digits"]), int(meta["blocks"])
    a = ops["A"].type.decode(unpack(ops["A"], words["A"], params.get("A")))[:digits, 0]  # [digit, M, K/2]
    slot_vals = np.abs(a.astype(np.float64)).reshape(digits, m, sp.chunks, sp.nz)
    fields = unpack(ops["metadata"], words["metadata"][:1], params.get("metadata"))[0, 0].astype(np.int64)
    b = ops["B"].type.decode(unpack(ops["B"], words["B"], params.get("B")))[:, 0]  # [case, K, N]
    dvals = np.abs(ops["D"].type.decode(actual)[:, 0].astype(np.float64))  # [case, M, N]
    dense = np.full((digits, m, k), np.nan)
    for s in range(blocks):
        for dg in range(digits):
            case = s * digits + dg
            pick = _selected(b[case], axis=0)  # column n of D shows dense column pick[n] of A
            for col, kk in enumerate(pick):
                if kk >= 0:
                    dense[dg, :, kk] = dvals[case, :, col]
    return ud.chunk_readback(sp, slot_vals, dense, fields.reshape(m, sp.chunks, 2))


def _selector_observation(v: Variant, words: dict, actual: np.ndarray, params: dict, meta: dict) -> tuple[str, list[str]]:
    """D against the result under each legal selector (every lane carries legal metadata of its own)."""
    ops = v.operands
    sel = int(meta.get("selector", params.get("metadata", {}).get("selector", -1)))
    asm = meta.get("assembler") or {}
    head = f"selector {sel} assembled ({asm.get('ptxas', 'ptxas')})"
    bits = {name: unpack(ops[name], w, params.get(name)) for name, w in words.items() if name != "metadata"}
    lay = ops["metadata"].layout
    best, lines = None, []
    for combo in ops["metadata"].param_combinations():
        bits["metadata"] = unpack(ops["metadata"], words["metadata"], combo)
        differ = int((mma(v, bits) != actual).sum())
        lanes = np.nonzero(lay.held(combo).any(axis=1))[0]
        lines.append(f"under selector {combo['selector']} (metadata of {ud.lanes_text(lanes)}): "
                     f"{differ} of {actual.size} D elements differ")
        if best is None or differ < best[0]:
            best = (differ, combo["selector"], lanes)
    differ, other, lanes = best
    if differ == 0:
        return f"{head}: D as with selector {other} (the metadata of {ud.lanes_text(lanes)})", lines
    return (f"{head}: D matches no legal selector's metadata (nearest: selector {other}, "
            f"{differ} of {actual.size} elements differ)"), lines
