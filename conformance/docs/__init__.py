"""PTX ISA documents as data: read any rendering, extract fragment formulas and tables, diff them.

Sits beside ``ptxconf.isa`` (it imports it, nothing higher), so a new ISA
version is checked by meaning, lane map by lane map, not by text.  Every
rendering (markdown, HTML, the PDF, text copied from any of them) is read into
one block tree (:mod:`.tree`, :mod:`.readers`) before anything is extracted.
"""

from .extract import extract, extract_file
from .formula import DocFormula, translate_block
from .model import DocFragment, DocLayout, DocMention, DocSection, Extraction
from .readers import parse_tree, read_tree, tree_from_text
from .source import DocError, Line, read_doc
from .tables import DocTable
from .tree import Block, DocTree

__all__ = ["Block", "DocError", "DocFormula", "DocFragment", "DocLayout", "DocMention", "DocSection", "DocTable",
           "DocTree", "Extraction", "Line", "extract", "extract_file", "parse_tree", "read_doc", "read_tree",
           "translate_block", "tree_from_text"]
