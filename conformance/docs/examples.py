"""The ISA's own example instructions (``mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {d0,...}, ...;``).

Collected per section from code blocks so they can be checked against specs/
(:mod:`.example_check`): an example that disagrees with its own section's tables
is an ISA erratum, like the ones the tcgen05 self-check finds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .source import Line

__all__ = ["Example", "examples_in"]

_INSTR = re.compile(r"^\s*(?:@!?%?\w+\s+)?((?:mma|wmma|wgmma|ldmatrix|tcgen05)\.[\w.:]+)\s+(.*?);")


@dataclass
class Example:
    """One instruction of an example block: its opcode with modifiers and its operand list."""

    section: str
    shape: str | None
    family: str
    line: int
    opcode: str
    operands: list[str]
    text: str


def _split_operands(text: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def examples_in(lines: list[Line], section: str, shape: str | None, family: str) -> list[Example]:
    """The instructions in a code block (``//`` comments dropped; one instruction per statement)."""
    text = "\n".join(re.sub(r"//.*$", "", ln.text) for ln in lines)
    out = []
    starts = [ln.number for ln in lines]
    offsets, pos = [], 0
    for ln in lines:
        offsets.append(pos)
        pos += len(re.sub(r"//.*$", "", ln.text)) + 1
    for m in re.finditer(r"(?:^|(?<=[;\n]))[^;]*?;", text):
        stmt = " ".join(m.group(0).split())
        im = _INSTR.match(stmt)
        if not im:
            continue
        k = max(i for i, o in enumerate(offsets) if o <= m.start() + len(m.group(0)) - len(m.group(0).lstrip()))
        out.append(Example(section, shape, family, starts[k], im.group(1), _split_operands(im.group(2)), stmt))
    return out
