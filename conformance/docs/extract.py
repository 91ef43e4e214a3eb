"""Extract fragment descriptions, lane formulas and shape tables from a PTX ISA section's block tree.

The walk keeps the context the ISA's prose sets up (section heading -> shape and
type group, "Multiplicand A:" -> operand, "Fragment layout for Row Major ..." ->
orientation, "when .ctype is .f16" -> type) and attaches it to every ``row =
... col = ...`` formula.  It reads blocks (:mod:`.tree`), never a rendering, so
every reader's output is extracted by this one walk.  Everything is data: no
spec is consulted here.
"""

from __future__ import annotations

import re
from pathlib import Path

from .examples import Example, examples_in
from .family import DENSE, prose_family, section_family
from .formula import FORMULA_START, translate_block
from .fragments import fragment_rows, is_fragment_header
from .model import ISA_BINDINGS, SHAPE, DocFragment, DocLayout, DocMention, DocSection, Extraction, doc_types
from .readers import parse_tree, read_tree
from .readers.common import ISA_BINDING_NAMES, is_formula_start
from .source import DocError, Line
from .tables import DocTable, merge_columns
from .tree import CAPTION, HEADING, PARA, PRE, TABLE, Block, DocTree

__all__ = ["DocSection", "DocFragment", "DocLayout", "DocMention", "Extraction", "extract", "extract_file",
           "ISA_BINDINGS"]

_SHAPE = SHAPE  # older name, kept for importers
_OPERAND = re.compile(r"^(Multiplicand\s+([AB])\b[^:]{0,30}|Accumulators?\b[^:]*|Metadata)\s*:", re.I)
_REFERENCE = re.compile(
    r"^Matrix fragments for ((?:multiplicand B|accumulators? C and D)(?: and (?:multiplicand B|accumulators? C and D))?)"
    r" are the same as (?:in case of |for )?(.*?)\.?$", re.I)
_COMPUTATION = re.compile(r"MMA computation (\d+)\D+%laneid (\d+)-(\d+) \(low group\) and (\d+)-(\d+)")


class _Walker:
    def __init__(self, file: str):
        self.file = file
        self.sections: list[DocSection] = []
        self.fragments: list[DocFragment] = []
        self.layouts: list[DocLayout] = []
        self.mentions: list[DocMention] = []
        self.tables: list[DocTable] = []
        self.examples: list[Example] = []
        self.prose_family: str | None = None
        self.section: DocSection | None = None
        self.prose_shape: str | None = None
        self.prose_types: tuple[str, ...] = ()
        self.operands: tuple[str, ...] = ()
        self.orientation: str | None = None
        self.ctypes: tuple[str, ...] | None = None
        self.figure: str | None = None
        self.table_rows: list[DocFragment] = []  # the fragment table the next formulas describe
        self.said_types: tuple[str, ...] = ()  # types a figure caption or a ".f16 and .bf16:" item names
        self.bindings: dict[str, str] = {}
        self.computations: dict[int, int] = {}
        self.pending: DocLayout | None = None
        self.table_caption: Block | None = None

    # -- context ---------------------------------------------------------
    def scope(self) -> tuple[str, str | None, tuple[str, ...], str]:
        sec = self.section
        family = (sec.family if sec else None) or self.prose_family or DENSE
        if sec and sec.shape:
            return sec.number, sec.shape, sec.types, family
        return (sec.number if sec else ""), self.prose_shape, self.prose_types, family

    def flush(self) -> None:
        if self.pending and (self.pending.row or self.pending.col):
            self.layouts.append(self.pending)
        self.pending = None

    def reset_operand(self, operands: tuple[str, ...]) -> None:
        self.flush()
        self.operands = operands
        self.orientation, self.ctypes, self.figure = None, None, None
        self.table_rows, self.said_types = [], ()

    def new_layout(self, line: int) -> DocLayout:
        number, shape, types, family = self.scope()
        ops = self.operands or ("?",)
        rows = [fr for fr in self.table_rows if self.ctypes is None or set(fr.types) & set(self.ctypes)]
        frag_types = list(dict.fromkeys(t for fr in rows for t in fr.types))
        elements = None
        for fr in rows:
            if fr.elements:
                elements = len(fr.elements)
            elif fr.registers and fr.per_register:
                elements = fr.registers * fr.per_register
        ltypes: tuple[str, ...] | None
        if self.ctypes:
            ltypes = self.ctypes
        elif frag_types:
            ltypes = tuple(frag_types)
        elif self.said_types:
            ltypes = self.said_types
        elif ops[0] in ("A", "B") and types:
            ltypes = types
        else:
            ltypes = None
        comps = None
        if self.computations and len(self.computations) == 32:
            comps = tuple(self.computations[k] for k in range(32))
        return DocLayout(number, shape, family, ops, self.orientation, ltypes, elements, self.figure, line,
                         bindings=dict(self.bindings), computations=comps)

    def mention(self, operands: tuple[str, ...], kind: str, text: str, line: int) -> None:
        number, shape, types, family = self.scope()
        self.mentions.append(DocMention(number, family, shape, types, operands, kind, text, line))

    # -- blocks ----------------------------------------------------------
    def walk(self, blocks: list[Block]) -> None:
        for b in blocks:
            if b.kind == HEADING:
                self.heading(b.number or "", b.text, b.line)
            elif b.kind == PARA:
                self.para(b.text, b.line)
            elif b.kind == CAPTION:
                self.caption(b)
            elif b.kind == TABLE:
                self.table(b)
            elif b.kind == PRE:
                self.pre(b)

    def heading(self, number: str, title: str, line: int) -> None:
        if self.section and self.section.number == number and (number or self.section.title == title):
            return
        self.flush()
        m = SHAPE.search(title)
        parent = next((s.family for s in reversed(self.sections) if number and number.startswith(s.number + ".")), None)
        family = section_family(number, title, parent)
        self.section = DocSection(number, title, line, m.group(0) if m else None, doc_types(title), family)
        self.sections.append(self.section)
        self.reset_operand(())
        self.bindings, self.computations = {}, ({} if m else self.computations)

    def para(self, t: str, line: int) -> None:
        if self.section is None:
            self.prose_family = self.prose_family or prose_family(t)
        ref = _REFERENCE.match(t)
        if ref:
            words = ref.group(1).lower()
            ops = (("B",) if "multiplicand b" in words else ()) + (("C", "D") if "accumulator" in words else ())
            self.reset_operand(())
            self.mention(ops, "reference", ref.group(2).strip(), line)
            return
        m = SHAPE.search(t)
        if m:
            self.prose_shape = m.group(0)
            self.prose_types = doc_types(t[m.end():]) or self.prose_types
        op = _OPERAND.match(t)
        if op:
            word = op.group(1).lower()
            self.reset_operand((op.group(2).upper(),) if op.group(2) else
                               (("C", "D") if word.startswith("acc") else ("metadata",)))
            return
        pm = re.search(r"\bmatrix (A|B|C or D|C/D|C|D) fragment\b", t)
        if pm and re.search(r"calculated|computed", t):
            self.reset_operand(("C", "D") if len(pm.group(1)) > 1 else (pm.group(1),))
            return
        if re.fullmatch(r"(?:\.\w+\s*(?:,|and|/|or)?\s*)+:", t) and self.operands[:1] in (("A",), ("B",)):
            self.said_types = doc_types(t)  # "+ .f16 and .bf16 :" -- the sub-item the next table belongs to
            self.table_rows = []
        for cm in _COMPUTATION.finditer(t):
            self.computation(cm)
        if re.match(r"^Fragment layout for\b", t) or re.search(r"fragment layout for (row|column)-major", t):
            if t.startswith("Fragment layout for"):
                self.flush()
                self.orientation, self.ctypes, self.figure = None, None, None
            self.layout_words(t)

    def layout_words(self, t: str) -> None:
        if re.search(r"row[- ]major", t, re.I):
            self.orientation = self.orientation or "row"
        elif re.search(r"column[- ]major", t, re.I):
            self.orientation = self.orientation or "col"
        ct = re.search(r"\.(?:c|d)type\s*(?:is|=)\s*\.(\w+)", t)
        if ct and self.ctypes is None:
            self.ctypes = (ct.group(1),)
        fig = re.findall(r"Figure (\d+)", t)
        if fig and self.figure is None:
            self.figure = ", ".join(f"Figure {f}" for f in fig)

    def computation(self, cm: re.Match) -> None:
        q = int(cm.group(1)) - 1
        for lo, hi in ((cm.group(2), cm.group(3)), (cm.group(4), cm.group(5))):
            for lane in range(int(lo), int(hi) + 1):
                self.computations[lane] = q

    def caption(self, b: Block) -> None:
        if b.label == "Table":
            self.table_caption = b
            return
        if b.label == "Figure" and self.operands:
            self.mention(self.operands, "figure", f"Figure {b.number}", b.line)
            if not self.table_rows and self.operands[:1] in (("A",), ("B",)):
                self.said_types = doc_types(b.text.split(" with ")[-1]) or self.said_types
        if re.search(r"fragment layout for (row|column)-major", b.text):
            self.layout_words(f"Figure {b.number} {b.text}")

    def table(self, b: Block) -> None:
        cap, self.table_caption = self.table_caption, None
        if is_fragment_header(b.header):
            self.flush()
            rows = fragment_rows(self.scope()[0], self.operands or ("?",), b.header, b.body, b.row_lines[1:], b.line)
            self.fragments += rows
            self.table_rows = rows
            return
        for row in b.body:
            for cm in _COMPUTATION.finditer(" ".join(row)):
                self.computation(cm)
        if cap is not None and cap.number:
            header, rows = merge_columns(b.header, [list(r) for r in b.body])
            for k in range(1, len(rows)):  # a rendering that leaves rowspan cells empty means "as above"
                rows[k] = [c or (rows[k - 1][j] if j < len(rows[k - 1]) else "") for j, c in enumerate(rows[k])]
            self.tables.append(DocTable(int(cap.number), cap.text, cap.line, header, rows, b.row_lines[1:]))

    def pre(self, b: Block) -> None:
        if not any(is_formula_start(ln.text.strip()) for ln in b.lines):
            number, shape, _, family = self.scope()
            self.examples += examples_in(b.lines, number, shape, family)
            return
        group: list[Line] = []
        for ln in [*b.lines, Line(0, "\0")]:
            t = ln.text.strip()
            starts = is_formula_start(t) or t == "\0"
            if starts and group:
                self.formula(group)
                group = []
            if t == "\0":
                break
            bind = re.match(r"^(\w+)\s*=(?!=)\s*(.*)$", t)
            if bind and bind.group(1) in ISA_BINDING_NAMES:
                self.bindings[bind.group(1)] = bind.group(2).strip()
                if self.pending:
                    self.pending.bindings[bind.group(1)] = bind.group(2).strip()
                continue
            if FORMULA_START.match(t) or group:
                group.append(ln)

    def formula(self, block: list[Line]) -> None:
        formula = translate_block(block)
        if self.pending is None or getattr(self.pending, formula.field) is not None:
            self.flush()
            self.pending = self.new_layout(block[0].number)
        setattr(self.pending, formula.field, formula)


def extract(src: DocTree | list[Line], file: str = "<doc>", fmt: str = "text") -> Extraction:
    """What a document says, from its block tree (or its source lines in format ``fmt``)."""
    tree = src if isinstance(src, DocTree) else parse_tree(src, file, fmt)
    w = _Walker(tree.file)
    w.walk(tree.blocks)
    w.flush()
    if not (w.layouts or w.fragments or w.tables or w.mentions):
        first = next((b for b in tree.blocks if b.text.strip()), None)
        raise DocError(tree.file, first.line if first else 1,
                       "no PTX ISA fragment table, 'row = ... col = ...' formula or 'Table N' found "
                       f"(first text: {first.text.strip()[:60]!r})" if first else "empty document")
    return Extraction(tree.file, tree.format, w.sections, w.fragments, w.layouts, w.tables, w.mentions,
                      examples=w.examples, version=tree.version)


def extract_file(path: str | Path) -> Extraction:
    return extract(read_tree(path))
