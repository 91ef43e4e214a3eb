"""Fragment tables (".atype | Fragment | Elements (low to high)") read into :class:`DocFragment` rows.

The readers hand over cells; what a cell means -- which types, how many
registers of which kind, how many elements each -- is read from the ISA's own
words here, once for every rendering.  Element lists are accepted in every
spelling the ISA uses: ``a0, a1, a2, a3``, ``a0, a1, ..., a62, a63``,
``b0, b1, ... , b30, b31``, ``a0, a1, ... a30, a31``.
"""

from __future__ import annotations

import re

from .model import DocFragment

__all__ = ["NUMBERS", "fragment_rows", "element_names", "cell_types", "is_fragment_header"]

NUMBERS = {"a single": 1, "single": 1, "one": 1, "two": 2, "three": 3, "four": 4, "eight": 8, "sixteen": 16,
           "thirty two": 32, "thirty-two": 32}
_COUNT = "|".join(sorted(NUMBERS, key=len, reverse=True))


def is_fragment_header(header: list[str]) -> bool:
    return bool(header) and bool(re.match(r"^\.?[abcd]type\b", header[0].strip()))


def cell_types(text: str) -> tuple[str, ...]:
    """``.f16 / .bf16``, ``.e4m3, .e5m2``, ``.s8 or .u8`` -> the type names."""
    return tuple(dict.fromkeys(re.findall(r"\.([a-z][a-z0-9]*)", text)))


def element_names(text: str) -> tuple[str, ...]:
    """The element names a cell lists; an ellipsis stands for every index between its neighbours."""
    names = re.findall(r"\b([abcd])(\d+)\b", text)
    if not names:
        return ()
    letter = names[0][0]
    idx = [int(n) for _, n in names]
    if re.search(r"\.\.", text) and idx == sorted(idx):
        idx = list(range(idx[0], idx[-1] + 1))
    return tuple(f"{letter}{i}" for i in idx)


def fragment_rows(section: str, operands: tuple[str, ...], header: list[str], rows: list[list[str]],
                  lines: list[int], header_line: int) -> list[DocFragment]:
    packing = "low to high" if any("low to high" in h for h in header) else None
    out = []
    above: tuple[str, ...] = ()
    for k, cells in enumerate(rows):
        cells = [*cells, "", ""][:max(3, len(cells))]
        types = cell_types(cells[0])
        if not types:
            continue
        desc = cells[1].strip()
        elements = element_names(cells[2]) if re.search(r"\b[abcd]\d", cells[2]) else ()
        if not elements and not cells[2].strip() and above:
            elements = above  # the ISA's Elements cell spans these rows; the rendering kept it once
        above = elements
        if not elements and cells[2].strip():
            desc = f"{desc} {cells[2].strip()}".strip()
        regs = re.search(rf"({_COUNT})\s+\.(\w+?)(x2)?\s+registers?", desc)
        registers = NUMBERS[regs.group(1)] if regs else None
        register = None
        if regs:
            register = "b32" if regs.group(3) or regs.group(2) in ("b32", "f16", "bf16") else regs.group(2)
        per = re.search(rf"each(?: register)? containing ({_COUNT}) (?:non-zero )?\.\w+", desc)
        per_register = NUMBERS[per.group(1)] if per else None
        if per_register is None and registers and elements:
            per_register = len(elements) // registers if len(elements) % registers == 0 else None
        if per_register is None and registers and not elements and "registers" in desc and "containing" not in desc:
            per_register = 1
        line = lines[k] if k < len(lines) else header_line
        out.append(DocFragment(section, operands, types, registers, register, elements, per_register, packing, line, desc))
    return out
