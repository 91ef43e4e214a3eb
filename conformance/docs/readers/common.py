"""What every reader needs to tell structure from words: debris, glue, prose and fragment rows.

Kept apart from the readers so that text, markdown and HTML agree on what a
"Copy to clipboard" line, a formula line or a fragment-table row is.
"""

from __future__ import annotations

import re

from ..formula import BINDING_LINE, FORMULA_START
from ..source import Line
from ..tree import TABLE, Block

__all__ = ["DEBRIS", "ISA_BINDING_NAMES", "LABEL", "FRAG_HEADER", "is_debris", "is_formula_start", "is_prose",
           "unglue", "split_fragment_text", "fragment_table"]

ISA_BINDING_NAMES = ("groupID", "threadID_in_group")

DEBRIS = re.compile(
    r"^(copy to clipboard|copy|esc|type to search.*|permalink to this.*|ptx isa v?[0-9.]+|"
    r"(?:nvidia )?(?:ptx isa|parallel thread execution(?: isa)?)[ ,]+(?:release|version|v)\s*[0-9.]+|"
    r"chapter \d+\.\s.*|contents|menu|search|next|previous|back to top)$",
    re.I,
)
# "Multiplicand A:", "Accumulators (C or D):", "Accumulator D:", "Metadata:", "Multiplicand A in registers:"
LABEL = re.compile(r"^(Multiplicand\s+[AB]\b[^:]{0,30}|Accumulators?\b[^:]{0,30}|Metadata)\s*:", re.I)
FRAG_HEADER = re.compile(r"^\|?\s*\.?(a|b|c|d)type\b")

_TYPES = r"(?:f16x2|f16|bf16|tf32|f32|f64|e4m3|e5m2|e3m2|e2m3|e2m1|s32|s8|u8|s4|u4|b1)"
_GLUED = re.compile(
    r"(?<=[\w})\]])(?=(?:Multiplicand\s+[AB]\b[^:]{0,30}:|Accumulators?\b[^:]{0,30}:|Metadata\s*:|Matrix [Ff]ragments for\s|Fragment layout for\s))"
    r"|(?<=[\w})\]])(?=\." + _TYPES + r"(?:\s*(?:,|and|or|/)\s*\." + _TYPES + r")*\s*:\s*$)"
    r"|(?<=[^\d\s.])(?=\d+(?:\.\d+){2,}\.\s+[A-Z])"
)


def is_debris(text: str) -> bool:
    return bool(DEBRIS.match(text.strip()))


def unglue(text: str) -> list[str]:
    """A line an HTML-to-text extraction glued onto the next heading or label, split back into both:
    ``... where i = {0,..,3}Multiplicand B:``, ``col = groupIDAccumulators (C or D):``,
    ``lastcol = firstcol + 3Matrix fragments for ...``, ``... i = {0,..,3}.tf32:``."""
    parts = _GLUED.split(text)
    return [p for p in parts if p.strip()] or [text]


def is_formula_start(text: str) -> bool:
    """``row =`` / ``col =`` or one of the ISA's own bindings (``groupID = %laneid >> 2``)."""
    if FORMULA_START.match(text):
        return True
    b = BINDING_LINE.match(text)
    return bool(b and b.group(1) in ISA_BINDING_NAMES)


def is_prose(text: str) -> bool:
    """Whether a line is English rather than a formula line (two words side by side with no operator)."""
    s = text.strip()
    if s.startswith("//"):
        return False
    if re.match(r"^(Figure|Table|Fragment|Multiplicand|Accumulator|Metadata|The |Matrix |MMA |A warp|Elements|Note)", s):
        return True
    if re.match(r"^\d+(?:\.\d+)+\.?\s+[A-Z]", s) or re.match(r"^\d+\s+[A-Z]", s):
        return True
    if re.match(r"^where\b", s, re.I) or BINDING_LINE.match(s):
        return False
    core = re.split(r"\s+(?:for|if)\s+|\s*\botherwise\b|//", s, flags=re.I)[0]
    return bool(re.search(r"[A-Za-z_]\w*\s+[A-Za-z_]\w*", core))


_ROW_START = re.compile(r"((?:\.[a-z0-9]+\s*(?:/|,|or|and)\s*)*\.[a-z0-9]+)\s+(?=A vector expression|A \.b32 register)")
_ELEMENTS = re.compile(r"(?<![\w.])([abcd]\d+(?:[\s,.]+[abcd]\d+)*)\s*$")


def split_fragment_text(text: str) -> list[list[str]]:
    """A fragment table whose cells lost their boundaries (pipes on their own lines, space-separated
    columns, one cell per line) as ``[types, description, elements]`` rows, read from the words."""
    t = re.sub(r"\|?\s*:?-{3,}:?[-|:\s]*", " ", text).replace("|", " ")
    t = re.sub(r"\s+", " ", t)
    t = re.sub(r"^\s*\.?[abcd]type(?:\s*/\s*\.?dtype)?\s+Fragment\s+Elements(?:\s*\(low to high\))?", "", t)
    starts = list(_ROW_START.finditer(t))
    rows = []
    for k, m in enumerate(starts):
        end = starts[k + 1].start() if k + 1 < len(starts) else len(t)
        desc = t[m.end(): end].strip()
        el = _ELEMENTS.search(desc)
        elements = ""
        if el and re.search(r"[abcd]\d", el.group(1)):
            elements, desc = el.group(1).strip(), desc[: el.start()].strip()
        rows.append([m.group(1).strip(), desc, elements])
    return rows


def fragment_table(body: list[Line]) -> Block:
    """A fragment table whose cells lost their boundaries (``body``: its lines or paragraphs, header first)
    as a table block, each row at the line that names its types."""
    text = " ".join(ln.text.strip() for ln in body)
    header_m = re.match(r"^\|?\s*(\.?[abcd]type(?:\s*/\s*\.?dtype)?)", text)
    header = [header_m.group(1) if header_m else ".type", "Fragment", "Elements"]
    if "low to high" in text:
        header[2] = "Elements (low to high)"
    rows = split_fragment_text(text)
    row_lines = []
    for r in rows:
        first = r[0].split("/")[0].strip()
        row_lines.append(next((ln.number for ln in body[1:] if first in ln.text), body[0].number))
    return Block(TABLE, body[0].number, rows=[header, *rows], row_lines=[body[0].number, *row_lines])
