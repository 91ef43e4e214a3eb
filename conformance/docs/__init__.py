"""PTX ISA documents as data: extract fragment formulas and tables, diff them against specs/.

Sits beside ``conformance.spec`` (it imports it, nothing higher), so a new ISA
version is checked by meaning, lane map by lane map, not by text.
"""

from .extract import DocFragment, DocLayout, DocMention, DocSection, Extraction, extract, extract_file
from .formula import DocFormula, translate_block
from .source import DocError, Line, read_doc
from .tables import DocTable

__all__ = ["DocError", "DocFormula", "DocFragment", "DocLayout", "DocMention", "DocSection", "DocTable", "Extraction",
           "Line", "extract", "extract_file", "read_doc", "translate_block"]
