"""Extract fragment descriptions, lane formulas and shape tables from a PTX ISA section.

The walk keeps the context the ISA's prose sets up (section heading -> shape and
type group, "Multiplicand A:" -> operand, "Fragment layout for Row Major ..." ->
orientation, "when .ctype is .f16" -> type) and attaches it to every
``row = ... col = ...`` block.  Everything is data: no spec is consulted here.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .family import DENSE, prose_family, section_family
from .formula import BINDING_LINE, FORMULA_START, DocFormula, translate_block
from .source import DocError, Line, read_doc
from .tables import DocTable, extract_tables

__all__ = ["DocSection", "DocFragment", "DocLayout", "DocMention", "Extraction", "extract", "extract_file", "ISA_BINDINGS"]

# The ISA defines these at every fragment section; a document that omits them means these.
ISA_BINDINGS = {"groupID": "%laneid >> 2", "threadID_in_group": "%laneid % 4"}

_HEADING = re.compile(r"^(\d+(?:\.\d+)+)\.\s+(\S.*)$")
_SHAPE = re.compile(r"\bm(\d+)n(\d+)k(\d+)\b")
_TYPE = re.compile(r"(?<![\w:])\.(f16|bf16|tf32|f32|f64|e4m3|e5m2|e3m2|e2m3|e2m1|s32|s8|u8|s4|u4|b1)\b")
_WORD_TYPES = {"fp16": "f16", "bf16": "bf16", "tf32": "tf32", "fp64": "f64", "fp32": "f32"}
_OPERAND = re.compile(r"^(Multiplicand\s+([AB])|Accumulators?\b[^:]*|Metadata)\s*:", re.I)
_FRAG_HEADER = re.compile(r"^\|?\s*\.(a|b|c)type\b")
_NUMBERS = {"a single": 1, "single": 1, "one": 1, "two": 2, "four": 4, "eight": 8, "sixteen": 16}
_GLUE = re.compile(r"(\d)(Matrix fragments|Multiplicand|Metadata|Accumulators)")
_REFERENCE = re.compile(
    r"^Matrix fragments for ((?:multiplicand B|accumulators? C and D)(?: and (?:multiplicand B|accumulators? C and D))?)"
    r" are the same as (?:in case of |for )?(.*?)\.?$", re.I)
_FIGURE_CAPTION = re.compile(r"^Figure (\d+)\s+\S")
_COMPUTATION = re.compile(r"MMA computation (\d+)\D+%laneid (\d+)-(\d+) \(low group\) and (\d+)-(\d+)")


@dataclass
class DocSection:
    number: str
    title: str
    line: int
    shape: str | None
    types: tuple[str, ...]
    family: str | None  # see :mod:`.family`

    @property
    def sparse(self) -> bool:
        return self.family == "mma.sp"


@dataclass
class DocMention:
    """What a section says of an operand without a formula: a figure, or "the same as <section>"."""

    section: str
    family: str
    shape: str | None
    types: tuple[str, ...]
    operands: tuple[str, ...]
    kind: str  # "figure" | "reference"
    text: str  # "Figure 121" | the referenced section's name as written
    line: int

    def canonical(self) -> dict:
        d = asdict(self)
        d.pop("line")
        return d


@dataclass
class DocFragment:
    """A row of a fragment table: types, registers, elements (low to high)."""

    section: str
    operands: tuple[str, ...]
    types: tuple[str, ...]
    registers: int | None
    register: str | None  # f16x2 -> b32, as the spec's fragments name registers
    elements: tuple[str, ...]
    per_register: int | None
    packing: str | None
    line: int
    text: str

    def canonical(self) -> dict:
        d = asdict(self)
        d.pop("line")
        return d


@dataclass
class DocLayout:
    """One operand's lane formulas, with the context the document gives them."""

    section: str
    shape: str | None
    family: str  # see :mod:`.family`
    operands: tuple[str, ...]
    orientation: str | None  # "row" | "col" | None
    types: tuple[str, ...] | None
    elements: int | None
    figure: str | None
    line: int
    row: DocFormula | None = None
    col: DocFormula | None = None
    bindings: dict[str, str] = field(default_factory=dict)
    computations: tuple[int, ...] | None = None  # per lane: MMA computation index (0-based)

    @property
    def sparse(self) -> bool:
        return self.family == "mma.sp"

    @property
    def name(self) -> str:
        parts = [self.shape or "?", "sp" if self.sparse else "", "/".join(self.operands), self.orientation or ""]
        types = "/".join(self.types) if self.types else ""
        return ".".join(p for p in parts if p) + (f" .{types}" if types else "")

    def canonical(self) -> dict:
        return {
            "section": self.section, "shape": self.shape, "family": self.family, "operands": self.operands,
            "orientation": self.orientation, "types": self.types, "elements": self.elements, "figure": self.figure,
            "row": self.row.canonical() if self.row else None, "col": self.col.canonical() if self.col else None,
            "bindings": dict(sorted(self.bindings.items())), "computations": self.computations,
        }


@dataclass
class Extraction:
    file: str
    format: str
    sections: list[DocSection]
    fragments: list[DocFragment]
    layouts: list[DocLayout]
    tables: list[DocTable]
    mentions: list[DocMention] = field(default_factory=list)

    def canonical(self, section_prefix: str | None = None) -> dict:
        """Line-free content (optionally of one section and its subsections), format-independent."""

        def keep(sec: str) -> bool:
            return section_prefix is None or sec == section_prefix or sec.startswith(section_prefix + ".")

        return {
            "fragments": [f.canonical() for f in self.fragments if keep(f.section)],
            "layouts": [x.canonical() for x in self.layouts if keep(x.section)],
            # figure captions are rendering-dependent (a text copy may drop one); references are content
            "mentions": [x.canonical() for x in self.mentions if keep(x.section) and x.kind == "reference"],
            "tables": [t.canonical() for t in self.tables if section_prefix is None],
        }


def _types(text: str) -> tuple[str, ...]:
    out = list(dict.fromkeys(_TYPE.findall(text)))
    if not out:
        out = list(dict.fromkeys(_WORD_TYPES[w.lower()] for w in re.findall(r"\b(FP16|BF16|TF32|FP64|FP32)\b", text)))
    return tuple(out)


def _is_prose(t: str) -> bool:
    s = t.strip()
    if re.match(r"^(Figure|Table|Fragment|Multiplicand|Accumulator|Metadata|The |Matrix |MMA |A warp|Elements|Note)", s):
        return True
    if _HEADING.match(s) or re.match(r"^\d+\s+[A-Z]", s):
        return True
    core = re.split(r"\s+(?:for|if)\s+|\s*\botherwise\b", s, flags=re.I)[0]
    # two words side by side with no operator between them is English, not a formula
    return bool(re.search(r"[A-Za-z_]\w*\s+[A-Za-z_]\w*", core)) and not re.match(r"^where\b", s, re.I)


def _fragment_rows(section: str, operands: tuple[str, ...], header: Line, body: list[Line]) -> list[DocFragment]:
    text = " ".join(ln.text for ln in [header, *body])
    packing = "low to high" if "low to high" in text else None
    text = re.sub(r"\|?\s*-{3}[-|\s]*", " ", text).replace("|", " ")
    text = re.sub(r"^\s*\.(a|b|c)type(\s*/\s*\.dtype)?\s+Fragment\s+Elements(\s*\(low to high\))?", "", text)
    starts = list(re.finditer(r"((?:\.[a-z0-9]+\s*/\s*)*\.[a-z0-9]+)\s+A vector expression", text))
    rows = []
    for k, m in enumerate(starts):
        end = starts[k + 1].start() if k + 1 < len(starts) else len(text)
        desc = text[m.end() - len("A vector expression"): end].strip()
        types = tuple(t.strip().lstrip(".") for t in m.group(1).split("/"))
        regs = re.search(r"(a single|single|one|two|four|eight|sixteen)\s+\.(\w+?)(x2)?\s+registers?", desc)
        registers = _NUMBERS[regs.group(1)] if regs else None
        register = None
        if regs:
            register = "b32" if regs.group(3) or regs.group(2) in ("b32", "f16", "bf16") else regs.group(2)
        elems_m = re.search(r"([abcd]\d+(?:\s*,\s*(?:[abcd]\d+|\.\.\.))*)\s*$", desc)
        elements: tuple[str, ...] = ()
        if elems_m:
            names = [e.strip() for e in elems_m.group(1).split(",")]
            if "..." in names:
                last = int(names[-1][1:])
                names = [f"{names[0][0]}{i}" for i in range(last + 1)]
            elements = tuple(names)
            desc = desc[: elems_m.start()].strip()
        per = re.search(r"each(?: register)? containing (one|two|four|eight|sixteen) (?:non-zero )?\.\w+", desc)
        per_register = _NUMBERS[per.group(1)] if per else None
        if per_register is None and registers and elements:
            per_register = len(elements) // registers if len(elements) % registers == 0 else None
        if per_register is None and registers and not elements and "registers" in desc and "containing" not in desc:
            per_register = 1
        line = header.number
        for ln in body:
            if m.group(1).split("/")[0].strip() in ln.text:
                line = ln.number
                break
        rows.append(DocFragment(section, operands, types, registers, register, elements, per_register, packing, line, desc))
    return rows


class _Walker:
    def __init__(self, file: str):
        self.file = file
        self.sections: list[DocSection] = []
        self.fragments: list[DocFragment] = []
        self.layouts: list[DocLayout] = []
        self.mentions: list[DocMention] = []
        self.prose_family: str | None = None
        self.section: DocSection | None = None
        self.prose_shape: str | None = None
        self.prose_types: tuple[str, ...] = ()
        self.operands: tuple[str, ...] = ()
        self.orientation: str | None = None
        self.ctypes: tuple[str, ...] | None = None
        self.figure: str | None = None
        self.bindings: dict[str, str] = {}
        self.computations: dict[int, int] = {}
        self.pending: DocLayout | None = None

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

    def new_layout(self, line: int) -> DocLayout:
        number, shape, types, family = self.scope()
        ops = self.operands or ("?",)
        frag_types: list[str] = []
        elements = None
        for fr in self.fragments:
            if fr.section == number and set(fr.operands) & set(ops):
                if self.ctypes is None or set(fr.types) & set(self.ctypes):
                    frag_types += [t for t in fr.types if t not in frag_types]
                    if fr.elements:
                        elements = len(fr.elements)
                    elif fr.registers and fr.per_register:
                        elements = fr.registers * fr.per_register
        ltypes: tuple[str, ...] | None
        if self.ctypes:
            ltypes = self.ctypes
        elif frag_types:
            ltypes = tuple(frag_types)
        elif ops[0] in ("A", "B") and types:
            ltypes = types
        else:
            ltypes = None
        comps = None
        if self.computations and len(self.computations) == 32:
            comps = tuple(self.computations[k] for k in range(32))
        return DocLayout(number, shape, family, ops, self.orientation, ltypes, elements, self.figure, line,
                         bindings=dict(self.bindings), computations=comps)

    # -- lines -----------------------------------------------------------
    def walk(self, lines: list[Line]) -> None:
        k = 0
        while k < len(lines):
            ln = lines[k]
            t = ln.text.strip()
            k += 1
            if not t:
                continue
            h = _HEADING.match(t)
            if h:
                self.heading(h.group(1), h.group(2), ln.number)
                continue
            if self.section is None and not FORMULA_START.match(t):
                self.prose_family = self.prose_family or prose_family(t)
            ref = _REFERENCE.match(t)
            if ref:
                self.flush()
                words = ref.group(1).lower()
                ops = (("B",) if "multiplicand b" in words else ()) + (("C", "D") if "accumulator" in words else ())
                self.mention(ops, "reference", ref.group(2).strip(), ln.number)
                self.operands = ()
                continue
            fc = _FIGURE_CAPTION.match(t)
            if fc and self.operands:
                self.mention(self.operands, "figure", f"Figure {fc.group(1)}", ln.number)
            m = _SHAPE.search(t)
            if m and not FORMULA_START.match(t):
                self.prose_shape = m.group(0)
                self.prose_types = _types(t[m.end():]) or self.prose_types
            op = _OPERAND.match(t)
            if op:
                self.flush()
                word = op.group(1).lower()
                self.operands = (op.group(2).upper(),) if op.group(2) else (("C", "D") if word.startswith("acc") else ("metadata",))
                self.orientation, self.ctypes, self.figure = None, None, None
                continue
            pm = re.search(r"\bmatrix (A|B|C or D|C/D|C|D) fragment\b", t)
            if pm and re.search(r"calculated|computed", t):
                self.flush()
                self.operands = ("C", "D") if len(pm.group(1)) > 1 else (pm.group(1),)
                self.orientation, self.ctypes, self.figure = None, None, None
                continue
            if _FRAG_HEADER.match(t):
                body = []
                while k < len(lines) and not re.match(
                    r"^(The |Fragment layout|Matrix fragments|Metadata|Multiplicand|Accumulator|Figure|!|row\s*=|col\s*=)",
                    lines[k].text.strip(),
                ) and not _HEADING.match(lines[k].text.strip()):
                    if lines[k].text.strip():
                        body.append(lines[k])
                    k += 1
                self.fragments += _fragment_rows(self.scope()[0], self.operands or ("?",), ln, body)
                continue
            cm = _COMPUTATION.search(t)
            if cm:
                q = int(cm.group(1)) - 1
                for lo, hi in ((cm.group(2), cm.group(3)), (cm.group(4), cm.group(5))):
                    for lane in range(int(lo), int(hi) + 1):
                        self.computations[lane] = q
                continue
            if re.match(r"^Fragment layout for\b", t) and not t.endswith(".") and k < len(lines):
                t = f"{t} {lines[k].text.strip()}"  # a sentence wrapped onto the next line
            if re.match(r"^Fragment layout for\b", t) or re.search(r"fragment layout for (row|column)-major", t):
                if t.startswith("Fragment layout for"):
                    self.flush()
                    self.orientation, self.ctypes, self.figure = None, None, None
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
                continue
            b = BINDING_LINE.match(t)
            if b and b.group(1) in ISA_BINDINGS:
                self.bindings[b.group(1)] = b.group(2).strip()
                if self.pending:
                    self.pending.bindings[b.group(1)] = b.group(2).strip()
                continue
            f = FORMULA_START.match(t)
            if f:
                block = [ln]
                while k < len(lines):
                    nxt = lines[k].text.strip()
                    if not nxt:
                        j = k
                        while j < len(lines) and not lines[j].text.strip():
                            j += 1
                        if j < len(lines) and re.match(r"^where\b", lines[j].text.strip(), re.I):
                            k = j
                            continue
                        break
                    if FORMULA_START.match(nxt) or (BINDING_LINE.match(nxt) and BINDING_LINE.match(nxt).group(1) in ISA_BINDINGS):
                        break
                    if nxt.startswith("//"):
                        k += 1
                        continue
                    if _is_prose(nxt):
                        break
                    block.append(lines[k])
                    k += 1
                formula = translate_block(block)
                if self.pending is None or getattr(self.pending, formula.field) is not None:
                    self.flush()
                    self.pending = self.new_layout(ln.number)
                setattr(self.pending, formula.field, formula)
                continue

    def mention(self, operands: tuple[str, ...], kind: str, text: str, line: int) -> None:
        number, shape, types, family = self.scope()
        self.mentions.append(DocMention(number, family, shape, types, operands, kind, text, line))

    def heading(self, number: str, title: str, line: int) -> None:
        if self.section and self.section.number == number:
            return
        self.flush()
        m = _SHAPE.search(title)
        parent = next((s.family for s in reversed(self.sections) if number.startswith(s.number + ".")), None)
        family = section_family(number, title, parent)
        self.section = DocSection(number, title, line, m.group(0) if m else None, _types(title), family)
        self.sections.append(self.section)
        self.operands, self.orientation, self.ctypes, self.figure = (), None, None, None
        self.bindings, self.computations = {}, ({} if m else self.computations)


def extract(lines: list[Line], file: str = "<doc>", fmt: str = "text") -> Extraction:
    split: list[Line] = []
    for ln in lines:
        for part in _GLUE.sub("\\1\n\\2", ln.text).split("\n"):
            split.append(Line(ln.number, part))
    w = _Walker(file)
    w.walk(split)
    w.flush()
    tables = extract_tables(split)
    if not (w.layouts or w.fragments or tables):
        first = next((ln for ln in lines if ln.text.strip()), None)
        raise DocError(file, first.number if first else 1,
                       "no PTX ISA fragment table, 'row = ... col = ...' formula or 'Table N' found "
                       f"(first text: {first.text.strip()[:60]!r})" if first else "empty document")
    return Extraction(file, fmt, w.sections, w.fragments, w.layouts, tables, w.mentions)


def extract_file(path: str | Path) -> Extraction:
    fmt, lines = read_doc(path)
    return extract(lines, str(path), fmt)
