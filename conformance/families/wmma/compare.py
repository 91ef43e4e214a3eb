"""wmma comparator: recorded words -> an element-by-element verdict on D, memory to memory.

The expected ``out`` image is recomputed from the recorded ``in`` words through the current
spec (:func:`memory.apply`), so live runs and replays share one path.  Each D element that
differs is listed with its row and column, the expected and actual values, and where in D the
actual value was expected (a value in the wrong place: layout or stride; found nowhere:
numerics).  A byte outside D that is not zero means the store wrote outside the matrix.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from ptxconf.core.record import CheckRecord
from ptxconf.core.verdict import MAX_LISTED, Verdict

from .memory import d_cells
from .spec import WmmaSpec, WmmaVariant

__all__ = ["Mismatch", "compare_wmma", "companion_of", "passed"]


@dataclass
class Mismatch:
    case: int
    row: int
    col: int
    expected: int
    actual: int
    dtype: str
    found_at: list[tuple[int, int]] = field(default_factory=list)

    def describe(self, v: WmmaVariant) -> str:
        from ptxconf.isa.ptxtypes import ptx_type

        t = ptx_type(self.dtype)
        w = (t.bits + 3) // 4
        ev, av = t.decode(np.array([self.expected]))[0], t.decode(np.array([self.actual]))[0]
        text = (f"case {self.case} D row {self.row} col {self.col}: expected 0x{self.expected:0{w}x} ({ev:g}) "
                f"actual 0x{self.actual:0{w}x} ({av:g})")
        if self.found_at:
            text += " -- expected at " + ", ".join(f"({r}, {c})" for r, c in self.found_at[:3]) + " (layout)"
        return text


@dataclass
class Stray:
    case: int
    byte: int
    value: int

    def describe(self, v: WmmaVariant) -> str:
        return f"case {self.case}: byte {self.byte} of out, outside D, is 0x{self.value:02x} (the store wrote outside the matrix)"


def companion_of(v: WmmaVariant, params: dict) -> WmmaVariant:
    spec: WmmaSpec = v.doc  # type: ignore[assignment]
    mid = params.get("mma", v.id)
    for x in spec.variants:
        if x.id == mid:
            return x
    raise LookupError(f"{v.id}: companion form {mid!r} is not in the current spec")


def compare_wmma(v: WmmaVariant, rec: CheckRecord) -> Verdict:
    check, seed, params, in_words, out_words = rec.check, rec.seed, rec.params, rec.in_words, rec.out_words
    from .memory import apply

    try:
        mv = companion_of(v, params)
        routes = tuple(tuple(r) for r in params["routes"])
        expected_words = apply(v.doc, mv, routes, in_words, out_words.shape[-1])
    except (LookupError, ValueError, KeyError) as exc:
        return Verdict(v.id, check, seed, "error", message=f"cannot recompute the expected D: {exc}")
    exp, _, _ = d_cells(v.doc, mv, routes, in_words, expected_words)
    act, img, inside = d_cells(v.doc, mv, routes, in_words, out_words)
    mismatches: list = []
    bad = np.argwhere(exp != act)
    for case, r, c in bad:
        if len(mismatches) >= MAX_LISTED:
            break
        where = np.argwhere(exp[case] == act[case, r, c])
        mismatches.append(Mismatch(int(case), int(r), int(c), int(exp[case, r, c]), int(act[case, r, c]),
                                   mv.type_of("d"), [(int(a), int(b)) for a, b in where]))
    stray = np.argwhere((img != 0) & ~inside)
    for case, byte in stray[: max(0, MAX_LISTED - len(mismatches))]:
        mismatches.append(Stray(int(case), int(byte), int(img[case, byte])))
    count = len(bad) + len(stray)
    via = "" if mv is v else f" (through {mv.id})"
    if count:
        msg = f"{len(bad)} of {exp.size} D elements differ, {len(stray)} stray bytes{via}"
        return Verdict(v.id, check, seed, "fail", message=msg, mismatches=mismatches, mismatch_count=count,
                       elements=int(exp.size))
    return _passed(v, mv, rec, int(exp.size))


def passed(v: WmmaVariant, rec: CheckRecord) -> Verdict:
    """The verdict of a check whose out words are the spec's (every D element exact, no byte outside D written),
    made without reading them."""
    mv = companion_of(v, rec.params)
    rows, cols = v.doc.dims("d", mv.shape_name)
    return _passed(v, mv, rec, len(rec.in_words) * rows * cols)


def _passed(v: WmmaVariant, mv: WmmaVariant, rec: CheckRecord, elements: int) -> Verdict:
    via = "" if mv is v else f" (through {mv.id})"
    return Verdict(v.id, rec.check, rec.seed, "pass", message=f"{elements} D elements exact{via}", elements=elements)
