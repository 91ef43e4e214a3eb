"""doc-diff on the renderings people have: the real ones in ../shared/isa-renderings, and every format
(HTML, browser copy, markdown, quoted markdown, pdftotext, plain text, odd spellings) generated from
them and from the seeds by tests/docs_renderings.py.  Precision bar: on unchanged sections, zero
``changed`` and zero ``unparseable`` in every format, and the same findings as the source."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from docs_renderings import FORMATS, render, respell, shared_renderings
from ptxconf.docs import extract, read_tree, tree_from_text
from ptxconf.docs.diff import diff
from ptxconf.isa import load_specs

try:  # the CLI entry point, wherever the package keeps it
    from ptxconf.cli.main import main
except ImportError:  # pragma: no cover
    from ptxconf.cli import main

REPO = Path(__file__).resolve().parents[1]
REAL = shared_renderings()  # ../shared/isa-renderings: read there, never copied
SEEDS = REPO / "tests" / "data" / "seeds"
real = pytest.mark.skipif(not (REAL / "m8n8k16.txt").is_file(),
                          reason="../shared/isa-renderings is not here (an installed wheel has no checkout beside it)")
SOURCES = [SEEDS / "000_32dffcae7a8aaf0a.txt", SEEDS / "001_1cbd6daafd0e6ed2.txt", SEEDS / "003_2b0067d5fb2dff82.txt",
           SEEDS / "004_0ed765547a181bb0.txt", REAL / "m8n8k16.txt", REAL / "md-m16n8k8-quoted.md"]


@pytest.fixture(scope="module")
def specs():
    return load_specs()


def findings(tree, specs):
    return diff(extract(tree), specs, tree.line_texts())


def outcome(found) -> list[tuple[str, str, str]]:
    return sorted((f.status, f.subject, f.operand or "") for f in found if f.status != "note")


@real
@pytest.mark.parametrize("name, same, uncovered", [("m8n8k16.txt", 32, 0), ("md-m16n8k8-quoted.md", 15, 5)])
def test_real_renderings_give_only_same(name, same, uncovered, specs):
    found = findings(read_tree(REAL / name), specs)
    counts = Counter(f.status for f in found)
    assert counts == Counter({"same": same, **({"not covered": uncovered} if uncovered else {})})
    assert not any(f.counts_as_difference for f in found)


@real
def test_excerpt_coverage_is_reported_apart(specs, capsys):
    """The excerpt leaves out .f64 and B .tf32: coverage lines, not differences; exit 0."""
    assert main(["doc-diff", str(REAL / "md-m16n8k8-quoted.md")]) == 0
    out = capsys.readouterr().out
    assert "coverage m16n8k8: compared ABCD; not covered: .f64 A (1 variants)" in out and ".tf32 B (1 variants)" in out
    assert "15 same, 0 changed, 0 only in doc, 0 only in specs, 0 unparseable, 5 not covered; 0 difference(s)" in out
    assert main(["doc-diff", str(REAL / "m8n8k16.txt")]) == 0
    assert "32 same, 0 changed, 0 only in doc, 0 only in specs, 0 unparseable; 0 difference(s)" in capsys.readouterr().out


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.name)
def test_every_format_reads_as_its_source(source, fmt, specs):
    if not source.is_file():
        pytest.skip(f"{source} is not here (real renderings are read from ../shared/isa-renderings)")
    tree = read_tree(source)
    want = outcome(findings(tree, specs))
    for how in (None, "unicode", "mojibake", "spaced"):
        text = render(tree, fmt)
        text = respell(text, how) if how else text
        got = findings(tree_from_text(text, f"{source.stem}.{fmt}"), specs)
        assert outcome(got) == want, (fmt, how)
        assert not [f for f in got if f.status in ("changed", "unparseable") and not f.erratum], (fmt, how)


def test_format_is_detected():
    tree = read_tree(SEEDS / "000_32dffcae7a8aaf0a.txt")
    assert {fmt: tree_from_text(render(tree, fmt)).format for fmt in FORMATS} == {
        "html": "html", "markdown": "markdown", "markdown-quoted": "markdown", "browser-copy": "text",
        "pdftotext": "text", "plain": "text"}


@real
def test_glued_headings_become_their_own_blocks():
    tree = read_tree(REAL / "m8n8k16.txt")
    paras = [b.text for b in tree.blocks if b.kind == "para"]
    assert "Multiplicand B:" in paras and "Accumulators (C or D):" in paras
    pre = [[ln.text for ln in b.lines] for b in tree.blocks if b.kind == "pre"]
    assert len(pre) == 3 and all(not any(":" in t for t in block) for block in pre)


@real
def test_quoted_markdown_blocks():
    tree = read_tree(REAL / "md-m16n8k8-quoted.md")
    kinds = Counter(b.kind for b in tree.blocks)
    assert kinds["table"] == 4 and kinds["pre"] == 4 and kinds["caption"] == 4
    assert not any("Copy to clipboard" in b.text or "](" in b.text for b in tree.blocks)
    assert [r[0] for b in tree.blocks if b.kind == "table" for r in b.body] == [".f16 / .bf16", ".tf32", ".f16 / .bf16",
                                                                                 ".f16", ".f32"]


def test_table_39_in_every_format():
    """The ISA 9.2 seed against the transcription made from it (specs/ itself now holds ISA 9.4's additions: the
    9.2 tcgen05 document is kept in tests/data/specs-isa92), in every rendering format."""
    specs = load_specs(Path(__file__).parent / "data" / "specs-isa92")
    tree = read_tree(SEEDS / "002_00bc72c80baf5276.txt")
    want = outcome(findings(tree, specs))
    assert want and {s for s, _, _ in want} == {"same"}
    for fmt in ("html", "markdown", "markdown-quoted", "browser-copy"):
        assert outcome(findings(tree_from_text(render(tree, fmt)), specs)) == want, fmt
