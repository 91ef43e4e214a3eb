"""ldmatrix / stmatrix / movmatrix: comparator, observed maps, composition with mma, lookups.

* :func:`compare_movement` checks registers (ldmatrix, movmatrix) or memory (stmatrix)
  element by element against :func:`ptxconf.families.movement.probe.apply`, and for the map check
  reads back where every tagged element went (lane, register, element -> matrix, row, col).
* :func:`compose` answers, from the specs alone, which ldmatrix (stmatrix) form yields an mma
  operand's fragment from a row- or column-major tile, and which row address each lane gives.
* :func:`where` / :func:`who` look up a cell's holder and a holder's cell.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from ptxconf.core.record import CheckRecord
from ptxconf.core.verdict import Verdict
from ptxconf.families.movement import probe as mv
from ptxconf.isa.loader import Specs
from ptxconf.isa.model import Operand, Variant

MAX_LINES = 12


# --- comparison ------------------------------------------------------------------------------


def _cell(m) -> str:
    return f"(matrix {m[0]}, row {m[1]}, col {m[2]})" if m[0] >= 0 else "(nothing the spec names)"


def compare_movement(v: Variant, rec: CheckRecord) -> Verdict:
    check, seed, meta, in_words, out_words = rec.check, rec.seed, rec.meta, rec.in_words, rec.out_words
    exp = mv.apply(v, np.asarray(in_words))
    got = np.asarray(out_words)[:, :, : exp.shape[2]]
    lines: list[str] = []
    count = 0
    if v.family == "stmatrix":
        eb, gb = mv.image_bytes(exp), mv.image_bytes(got)
        bad = np.argwhere(eb != gb)
        count = len(bad)
        listed = bad[:MAX_LINES]
        cases = np.unique(listed[:, 0])  # the owners of the listed bytes only: a failing check may have thousands
        owner = dict(zip(cases.tolist(), _byte_owner(v, np.asarray(in_words)[cases])))
        for case, byte in listed:
            who = owner[case].get(int(byte))
            where = f"cell {_cell(who[0])} stored by lane {who[1]} register {who[2]}" if who else "a byte outside every stored row"
            lines.append(f"case {case} shared byte {byte}: {where}: expected 0x{eb[case, byte]:02x}, got 0x{gb[case, byte]:02x}")
        elements = eb.size
    else:
        op = v.operands["d" if v.family == "movmatrix" else "fragment"]
        per, cb = op.fragment.per_register, op.fragment.container_bits
        fm = op.layout.map()
        for e in range(op.layout.elements):
            r, k = divmod(e, per)
            mask = np.uint32((1 << cb) - 1) if cb < 32 else np.uint32(0xFFFFFFFF)
            ev, gv = (exp[:, :, r] >> np.uint32(cb * k)) & mask, (got[:, :, r] >> np.uint32(cb * k)) & mask
            bad = np.argwhere(ev != gv)
            count += len(bad)
            for case, lane in bad[: MAX_LINES - len(lines)]:
                lines.append(
                    f"case {case} lane {lane} register {r} element {e} {_cell(fm[lane, e])}: "
                    f"expected 0x{int(ev[case, lane]):x}, got 0x{int(gv[case, lane]):x}"
                )
        elements = exp.shape[0] * 32 * op.layout.elements
    observed = None
    map_lines: list[str] = []
    if check.startswith("map."):
        observed = observed_map(v, np.asarray(in_words), got, meta)
        spec = v.operands[check.split(".", 1)[1]].layout.map()
        diff = np.argwhere((observed != spec).any(-1))
        if len(diff):
            lanes = sorted({int(a) for a, _ in diff})
            map_lines.append(f"observed lane map differs from the spec in {len(diff)} (lane, element) slots; lanes {_ranges(lanes)}")
            for lane, e in diff[:MAX_LINES]:
                map_lines.append(f"lane {lane} element {e}: spec {_cell(spec[lane, e])}, observed {_cell(observed[lane, e])}")
    status = "fail" if count or map_lines else "pass"
    msg = "" if status == "pass" else f"{count} of {elements} elements differ"
    if v.family != "movmatrix" and status == "fail" and check == "value":
        msg += "; replay the map check to see where each element went"
    return Verdict(v.id, check, seed, status, msg, mismatch_count=0, elements=int(elements),
                   map_diff=map_lines[:6] + lines, observed=observed)


def _ranges(xs: list[int]) -> str:
    out, start = [], None
    for i, x in enumerate(xs):
        if start is None:
            start = x
        if i + 1 == len(xs) or xs[i + 1] != x + 1:
            out.append(f"{start}" if start == x else f"{start}-{x}")
            start = None
    return ", ".join(out)


def _byte_owner(v: Variant, inw: np.ndarray) -> list[dict]:
    op = v.operands["fragment"]
    fm, rl, bits = op.layout.map(), mv.row_lanes(v), mv.mem_bits(v)
    per = op.fragment.per_register
    res = []
    for case in range(len(inw)):
        d = {}
        for lane in range(32):
            for e in range(op.layout.elements):
                m, r, c = fm[lane, e]
                start = int(inw[case, rl[m, r], mv.ADDR_WORD])
                for k in range(bits // 8):
                    d[start + c * bits // 8 + k] = (fm[lane, e], lane, e // per)
        res.append(d)
    return res


def _slot_cells(v: Variant, addr: np.ndarray) -> dict[int, tuple[int, int]]:
    rl = mv.row_lanes(v)
    return {int(addr[ln]) // mv.ROW_BYTES: (m, r) for (m, r), ln in np.ndenumerate(rl) if int(addr[ln]) % mv.ROW_BYTES == 0}


def observed_map(v: Variant, inw: np.ndarray, got: np.ndarray, meta: dict) -> np.ndarray:
    """``int64[lane, element, 3]``: where each tagged element was observed to go (where two places show one
    element's tag, the later in the order read wins: lane then element, or stored row then column)."""
    digits, dbits = int(meta.get("digits", 1)), int(meta.get("digit_bits", 16))
    mask = (1 << dbits) - 1
    if v.family == "movmatrix":
        a, d = v.operands["a"], v.operands["d"]
        e = np.arange(d.layout.elements)
        tag = (got[0][:32, e // 2].astype(np.int64) >> (16 * (e % 2))) & 0xFFFF  # [lane, element]
        obs = np.full((32, d.layout.elements, 3), -1, dtype=np.int64)
        seen = tag < 64
        obs[seen] = a.layout.map()[tag[seen] // 2, tag[seen] % 2]
        return obs
    op = v.operands["fragment"]
    E = op.layout.elements
    obs = np.full((32, E, 3), -1, dtype=np.int64)
    cells = _slot_cells(v, inw[0, :, mv.ADDR_WORD])
    if v.family == "ldmatrix":
        per, cb, sh = op.fragment.per_register, op.fragment.container_bits, op.fragment.value_shift
        nper = 8 if mv.mem_bits(v) == 16 else 16
        e = np.arange(E)
        words = got[:digits, :32][:, :, e // per].astype(np.int64)  # [digit, lane, element]
        vals = (words >> (cb * (e % per) + sh)) & mask
        tag = (vals << (dbits * np.arange(len(vals)))[:, None, None]).sum(axis=0)
        slots = np.array(sorted(cells), dtype=np.int64)
        at = np.clip(np.searchsorted(slots, tag // nper), 0, max(len(slots) - 1, 0))
        seen = (slots[at] == tag // nper) if len(slots) else np.zeros(tag.shape, dtype=bool)
        rows = np.array([cells[s] for s in slots.tolist()], dtype=np.int64).reshape(-1, 2)  # (matrix, row) of each
        obs[seen] = np.concatenate([rows[at[seen]], (tag % nper)[seen][:, None]], axis=1)
        return obs
    # stmatrix: read the tags back out of the stored rows (all rows and columns of every digit at once)
    img = mv.image_bytes(got)[:digits]
    cols = op.layout.cols
    starts = np.repeat(np.array([slot * mv.ROW_BYTES for slot in cells], dtype=np.int64), cols)
    col = np.tile(np.arange(cols), len(cells))[None, :]
    vals = mv._read_elem(img, np.broadcast_to(starts, (len(img), len(starts))), col, mv.mem_bits(v)).astype(np.int64) & mask
    tag = (vals << (dbits * np.arange(len(vals)))[:, None]).sum(axis=0)  # [row * cols + col], rows in ``cells`` order
    rows = np.array(list(cells.values()), dtype=np.int64).reshape(-1, 2)
    cell = np.concatenate([np.repeat(rows, cols, axis=0), col.reshape(-1, 1)], axis=1)  # (matrix, row, col) of each
    lane, e = tag // E, tag % E
    ok = np.flatnonzero(lane < 32)
    slot = lane[ok] * E + e[ok]
    last = ok[len(ok) - 1 - np.unique(slot[::-1], return_index=True)[1]]  # each (lane, element)'s last place
    obs.reshape(-1, 3)[lane[last] * E + e[last]] = cell[last]
    return obs


# --- lookups ---------------------------------------------------------------------------------


def where(op: Operand, row: int, col: int, matrix: int = 0) -> list[tuple[int, int, int, int]]:
    """(lane, register, element-in-register, element) holding a cell."""
    m = op.layout.map(op.param_combinations()[0])
    per = op.fragment.per_register
    return [
        (int(lane), int(e) // per, int(e) % per, int(e))
        for lane, e in np.argwhere((m[..., 0] == matrix) & (m[..., 1] == row) & (m[..., 2] == col))
    ]


def who(op: Operand, lane: int, element: int) -> tuple[int, int, int]:
    m = op.layout.map(op.param_combinations()[0])
    return tuple(int(x) for x in m[lane, element])


# --- composition -----------------------------------------------------------------------------


@dataclass
class Composition:
    variant: str
    operand: str
    tile: str
    form: str | None
    lanes: dict = field(default_factory=dict)  # lane -> (tile row, tile col) of the row start
    formula: str = ""
    why: str = ""
    memory_format: str = ""


def _bit_formula(vals: dict[int, int], name: str) -> str | None:
    """``vals`` (lane -> int) as a sum of lane-bit terms, or None."""
    base = vals[min(vals)]
    lanes = sorted(vals)
    weights = {}
    for b in range(5):
        lane = lanes[0] | (1 << b)
        if lane in vals and lane != lanes[0]:
            weights[b] = vals[lane] - base
    for lane in lanes:
        pred = base + sum(w for b, w in weights.items() if (lane >> b) & 1 and not (lanes[0] >> b) & 1)
        if pred != vals[lane]:
            return None
    terms, b = [], 0
    while b < 5:
        w = weights.get(b, 0)
        if w == 0:
            b += 1
            continue
        # merge runs of bits whose weights double: w * ((lane >> b) & (2^k - 1))
        k = 1
        while weights.get(b + k, 0) == w << k:
            k += 1
        field_ = f"(({name} >> {b}) & {2**k - 1})" if b else f"({name} & {2**k - 1})"
        terms.append(field_ if w == 1 else f"{w} * {field_}")
        b += k
    if base:
        terms.append(str(base))
    return " + ".join(terms) or "0"


def _forms(specs: Specs, family: str) -> list[Variant]:
    return [v for v in specs.variants.values() if v.family == family]


def compose(specs: Specs, variant: Variant, operand: str, tile: str) -> Composition:
    """Which ldmatrix (A, B) / stmatrix (C, D) form moves ``operand`` between a tile and registers."""
    op = variant.operands[operand]
    family = "stmatrix" if operand in ("C", "D") else "ldmatrix"
    res = Composition(variant.id, operand, tile, None)
    if op.layout.matrices != 1:
        res.why = f"{operand} spans {op.layout.matrices} independent computations; no single-tile form"
        return res
    reasons = []
    for form in _forms(specs, family):
        fo = form.operands["fragment"]
        if fo.registers != op.registers or op.fragment.register != "b32":
            continue
        if mv.mem_bits(form) < 8:  # packed sub-byte source rows: the element format must match
            if (op.type.bits, op.fragment.per_register, op.fragment.value_shift) != (
                mv.mem_bits(form), fo.fragment.per_register, fo.fragment.value_shift
            ):
                continue
        elif fo.fragment.container_bits % op.fragment.container_bits or fo.fragment.value_shift:
            continue
        ok, lanes, why = _fit(form, op, tile)
        if ok:
            res.form, res.lanes = form.id, lanes
            rows = _bit_formula({ln: rc[0] for ln, rc in lanes.items()}, "lane")
            cols = _bit_formula({ln: rc[1] for ln, rc in lanes.items()}, "lane")
            used = sorted(lanes)
            res.formula = (
                f"lanes {_ranges(used)}: address = tile + "
                + ("(row * ld + col)" if tile == "row-major" else "(col * ld + row)")
                + " * sizeof(elem), "
                f"row = {rows or 'see table'}, col = {cols or 'see table'}"
                + (f"; lanes outside {_ranges(used)} are ignored" if len(used) < 32 else "")
            )
            b = mv.mem_bits(form)
            res.memory_format = {6: "tile rows in .b6x16_p32 (16 packed 6-bit elements + 32 bits padding)",
                                 4: "tile rows in .b4x16_p64 (16 packed 4-bit elements + 64 bits padding)"}.get(b, f"{op.fragment.container_bits}-bit elements, moved as .b{b}")
            return res
        reasons.append(f"{form.id}: {why}")
    if not reasons:
        res.why = (f"no {family} form packs .{op.type.name} like {operand} does "
                   f"({op.layout.elements} elements, {op.fragment.per_register} per {op.fragment.register})")
    else:
        res.why = "; ".join(reasons[:3]) + (f"; and {len(reasons) - 3} more" if len(reasons) > 3 else "")
    return res


def _fit(form: Variant, op: Operand, tile: str) -> tuple[bool, dict, str]:
    fo = form.operands["fragment"]
    fm = fo.layout.map()
    om = op.layout.map(op.param_combinations()[0])
    ratio = fo.fragment.container_bits // op.fragment.container_bits if mv.mem_bits(form) >= 8 else 1
    held = om[..., 0] >= 0
    if not held.all():
        return False, {}, "operand has empty slots"
    start: dict[tuple[int, int], tuple[int, int]] = {}
    for lane in range(32):
        for e in range(om.shape[1]):
            m, r, c = (int(x) for x in fm[lane, e // ratio])
            c = c * ratio + e % ratio
            R, C = int(om[lane, e, 1]), int(om[lane, e, 2])
            s = (R, C - c) if tile == "row-major" else (R - c, C)
            if start.setdefault((m, r), s) != s:
                return False, {}, f"lane {lane} element {e} needs memory row ({m},{r}) to start at tile {s}, another element at {start[(m, r)]}"
    rl = mv.row_lanes(form)
    return True, {int(rl[m, r]): s for (m, r), s in start.items()}, ""


def coverage(specs: Specs) -> dict:
    out = {"ldmatrix": [0, 0], "stmatrix": [0, 0], "rows": []}
    for v in specs.variants.values():
        if v.family != "mma.sync":
            continue
        for name in ("A", "B", "C", "D"):
            op = v.operands[name]
            if op.fragment.container_bits not in (8, 16):
                continue
            fam = "stmatrix" if name in ("C", "D") else "ldmatrix"
            for tile in ("row-major", "col-major"):
                c = compose(specs, v, name, tile)
                out[fam][0 if c.form else 1] += 1
                out["rows"].append(c)
    return out
