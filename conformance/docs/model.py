"""What extraction finds in a PTX ISA section, as data: sections, fragment rows, lane formulas, mentions.

Its own module so that the readers' consumers (:mod:`.extract`, :mod:`.diff`,
:mod:`.versions`, :mod:`.importer`) share these types without importing each other.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

from .formula import DocFormula
from .tables import DocTable

__all__ = ["ISA_BINDINGS", "SHAPE", "shape_matches", "DocSection", "DocMention", "DocFragment", "DocLayout", "Extraction", "doc_types"]

# The ISA defines these at every fragment section; a document that omits them means these.
ISA_BINDINGS = {"groupID": "%laneid >> 2", "threadID_in_group": "%laneid % 4"}

SHAPE = re.compile(r"\bm(\d+)n(\d+|N)k(\d+)\b")  # "m64nNk16": the ISA's name for every N of a warpgroup shape


def shape_matches(doc_shape: str | None, spec_shape: str | None) -> bool:
    """Whether a shape the document names (``m16n8k16``; ``m64nNk16`` for any N) is ``spec_shape``."""
    if doc_shape is None or spec_shape is None:
        return False
    if "nN" not in doc_shape:
        return doc_shape == spec_shape
    return re.fullmatch(re.escape(doc_shape).replace("nN", r"n\d+"), spec_shape) is not None
_TYPE = re.compile(r"(?<![\w:])\.(f16|bf16|tf32|f32|f64|e4m3|e5m2|e3m2|e2m3|e2m1|s32|s8|u8|s4|u4|b1)\b")
_WORD_TYPES = {"fp16": "f16", "bf16": "bf16", "tf32": "tf32", "fp64": "f64", "fp32": "f32"}


def doc_types(text: str) -> tuple[str, ...]:
    """PTX types a piece of text names (``.f16``; a tutorial's ``FP16``), in order, once each."""
    out = list(dict.fromkeys(_TYPE.findall(text)))
    if not out:
        out = list(dict.fromkeys(_WORD_TYPES[w.lower()] for w in re.findall(r"\b(FP16|BF16|TF32|FP64|FP32)\b", text)))
    return tuple(out)


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
    examples: list = field(default_factory=list)  # :class:`ptxconf.docs.examples.Example`
    version: str | None = None  # the ISA version the document states of itself

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
