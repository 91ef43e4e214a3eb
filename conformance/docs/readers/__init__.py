"""One reader per rendering of the ISA, all producing the same :class:`~ptxconf.docs.tree.DocTree`."""

from __future__ import annotations

from pathlib import Path

from ..source import Line, read_doc, read_text
from ..tree import DocTree
from .html import read_html_blocks
from .markdown import read_markdown_blocks
from .text import read_text_blocks

__all__ = ["FORMATS", "parse_tree", "read_tree", "tree_from_text"]

FORMATS = {"html": read_html_blocks, "markdown": read_markdown_blocks, "text": read_text_blocks}


def parse_tree(lines: list[Line], file: str = "<doc>", fmt: str = "text") -> DocTree:
    """The block tree of a document already split into (normalized) source lines."""
    return DocTree(file, fmt, FORMATS[fmt](lines))


def read_tree(path: str | Path) -> DocTree:
    fmt, lines = read_doc(path)
    return parse_tree(lines, str(path), fmt)


def tree_from_text(text: str, file: str = "<doc>", fmt: str | None = None) -> DocTree:
    """For documents held in memory (tests, perturbations); ``fmt`` overrides the guess."""
    guessed, lines = read_text(text, file)
    return parse_tree(lines, file, fmt or guessed)
