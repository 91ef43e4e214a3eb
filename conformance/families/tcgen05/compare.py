"""Comparator for tcgen05.mma run cases: recorded words, read through today's spec, vs the oracle.

Each case is read back with :func:`ptxconf.families.tcgen05.cases.decode_case`: the
recorded instruction descriptor is decoded with the current spec's field table
(what the spec says the hardware computed), A and B are read from the recorded
shared-memory image where the recorded shared-memory descriptors say they are,
and the oracle gives Tensor Memory after the mma.  A spec whose descriptor
fields moved reads a recorded run differently; the diagnosis names the fields
whose decoded values differ from the case's tuple and from this spec's own
encoding of it.
"""

from __future__ import annotations

import numpy as np
from ptxconf.core.record import CheckRecord
from ptxconf.core.verdict import MAX_LISTED, Verdict
from ptxconf.families.tcgen05.cases import ROWS, TcVariant, case_fields, d_rows, decode_case, tmem_operands
from ptxconf.families.tcgen05.desc import DescriptorError, encode_idesc
from ptxconf.isa.ptxtypes import ptx_type
from ptxconf.oracle import tcgen05_mma

__all__ = ["compare_tcgen05", "descriptor_diagnosis"]


def _field_text(v: TcVariant, name: str) -> str:
    return f"field {name} ({v.doc.format_for(v.t.kind).field(name).where})"


def descriptor_diagnosis(v: TcVariant, idesc: int, raw: dict) -> list[str]:
    """What the recorded descriptor means under this spec, where it departs from the case's tuple."""
    t, doc = v.t, v.doc
    fmt = doc.format_for(t.kind)
    lines = []
    for dim, name in (("M", "m"), ("N", "n")):
        got, want = raw.get(dim), getattr(t, dim)
        if got != want:
            fld = fmt.field(name)
            lines.append(
                f"instruction descriptor {idesc:#010x} read with this spec ({fmt.table}) gives {dim} = {got} from "
                f"{_field_text(v, name)} = {fld.get(idesc)}; the case was built for {dim} = {want}"
            )
    for name in ("dtype", "atype", "btype", "sparsity"):
        if name in raw and name in [f.name for f in fmt.fields]:
            want = {"dtype": t.dtype, "atype": t.atype, "btype": t.btype, "sparsity": t.sparsity}[name]
            if raw[name] != want:
                lines.append(f"instruction descriptor {idesc:#010x}: {_field_text(v, name)} reads {raw[name]!r} under this spec; the case was built for {want!r}")
    try:
        mine = encode_idesc(doc, case_fields(v))
    except DescriptorError as exc:
        lines.append(f"this spec cannot encode the case's tuple: {exc}")
        return lines
    if mine != idesc:
        diffs = [f"{f.name} ({f.where}): recorded {f.get(idesc)}, this spec encodes {f.get(mine)}"
                 for f in fmt.fields if f.get(idesc) != f.get(mine)]
        lines.append(f"this spec encodes the case's tuple as {mine:#010x}, the probe carried {idesc:#010x}; fields differing: " + "; ".join(diffs))
    return lines


def layout_diagnosis(v: TcVariant, recorded: dict | None) -> list[str]:
    """Where today's spec places metadata / scale factors differently from the rules the probe followed."""
    if not v.aux or not recorded:
        return []
    now = tmem_operands(v.doc)
    used = ("sparse_metadata",) if v.sparse else ("scale_factor",)
    lines = []
    for op in used:
        a, b = now.get(op, {}), recorded.get(op, {})
        for key in sorted(set(a) | set(b)):
            if a.get(key) != b.get(key):
                lines.append(f"Tensor-Memory {op} layout differs: this spec's tmem_operands.{op}.{key} = {a.get(key)!r}, "
                             f"the probe placed the operand by {key} = {b.get(key)!r} ({v.doc.file})")
    return lines


def compare_tcgen05(v: TcVariant, rec: CheckRecord) -> Verdict:
    check, seed, meta = rec.check, rec.seed, rec.meta
    in_words, out_words = np.asarray(rec.in_words), np.asarray(rec.out_words)
    d_type = ptx_type(v.t.dtype)
    width = (d_type.bits + 3) // 4
    lines: list[str] = []
    notes: list[str] = []
    count = elements = 0
    for c in range(len(in_words) // ROWS):
        rows = slice(c * ROWS, (c + 1) * ROWS)
        view = decode_case(v, in_words[rows])
        actual = d_rows(v, out_words[rows])
        elements += actual.size
        recorded = (meta or {}).get("cases") or []
        case_meta = recorded[c] if c < len(recorded) else {}
        if c == 0 or view.problems:
            for line in (descriptor_diagnosis(v, view.idesc, view.raw) + layout_diagnosis(v, case_meta.get("tmem_operands"))
                         + [f"case {c}: {p}" for p in view.problems]):
                if line not in notes:
                    notes.append(line)
        if view.fields is None or "A" not in view.bits or "B" not in view.bits:
            count += actual.size
            continue
        expected = tcgen05_mma(v, {**view.bits, "fields": view.fields})
        bad = np.argwhere(expected != actual)
        count += len(bad)
        for r, col in bad[: max(0, MAX_LISTED * 2 - len(lines))]:
            want, got = int(expected[r, col]), int(actual[r, col])
            ev, av = d_type.decode(np.array([want]))[0], d_type.decode(np.array([got]))[0]
            found = [tuple(int(x) for x in p) for p in np.argwhere(expected == got)[:3]]
            where = (f" [layout: that value is expected at {', '.join(f'row {a} col {b}' for a, b in found)}]" if found
                     else " [numerics: that value is expected nowhere in D]")
            lines.append(f"case {c} Tensor Memory lane {r} column {col} (D row {r} col {col}, warp {r // 32} lane {r % 32} register {col}): "
                         f"expected 0x{want:0{width}x} ({ev:g}) actual 0x{got:0{width}x} ({av:g}){where}")
    status = "fail" if count or notes else "pass"
    msg = ""
    if status == "fail":
        msg = f"{count} of {elements} D elements differ" + (f"; {notes[0]}" if notes else "")
    return Verdict(v.id, check, seed, status, msg, mismatch_count=0, elements=int(elements), map_diff=notes + lines)
