"""ISA text -> extraction -> semantic diff against specs/, on the seeds in tests/data/seeds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

try:  # the CLI entry point, wherever the package keeps it
    from ptxconf.cli.main import main
except ImportError:  # pragma: no cover
    from ptxconf.cli import main
from ptxconf.docs import DocError, extract_file, read_doc, translate_block
from ptxconf.docs.diff import diff
from ptxconf.docs.family import section_family
from ptxconf.docs.importer import write_draft
from ptxconf.docs.source import Line
from ptxconf.isa import load_file, load_specs

SEEDS = Path(__file__).parent / "data" / "seeds"
TXT = SEEDS / "000_32dffcae7a8aaf0a.txt"
MD = SEEDS / "001_1cbd6daafd0e6ed2.txt"
TABLE = SEEDS / "002_00bc72c80baf5276.txt"
SPARSE = SEEDS / "003_2b0067d5fb2dff82.txt"
TUTORIAL = SEEDS / "004_0ed765547a181bb0.txt"


@pytest.fixture(scope="module")
def specs():
    return load_specs()


def run_diff(path, specs):
    ex = extract_file(path)
    _, lines = read_doc(path)
    return diff(ex, specs, {ln.number: ln.text for ln in lines})


def not_same(findings):
    return [f for f in findings if f.status != "same"]


def edited(tmp_path, src, old, new, count=1):
    text = src.read_text()
    assert text.count(old) >= count, old
    p = tmp_path / src.name
    p.write_text(text.replace(old, new, count))
    return p


def test_text_and_markdown_renderings_extract_identically():
    a, b = extract_file(TXT), extract_file(MD)
    assert (a.format, b.format) == ("text", "markdown")
    ca, cb = a.canonical("9.7.14.5.1"), b.canonical("9.7.14.5.1")
    assert ca == cb
    assert len(ca["layouts"]) == 6 and len(ca["fragments"]) == 4
    f32 = ca["layouts"][-1]
    assert f32["types"] == ("f32",) and f32["row"]["lets"] == {"X": "(%laneid & 0b1) + (i & 0b10)"}
    assert f32["figure"] == "Figure 51, Figure 52" and f32["computations"][16] == 0 and f32["computations"][31] == 3


@pytest.mark.parametrize("seed", [TXT, MD, TUTORIAL])
def test_seeds_diff_clean(seed, specs):
    findings = run_diff(seed, specs)
    assert not_same(findings) == []
    assert len(findings) >= 16


def test_m8n8k4_covers_both_sections(specs):
    same = {(f.subject, f.operand) for f in run_diff(TXT, specs)}
    assert ("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64", "C") in same
    assert ("mma.sync.aligned.m8n8k4.col.row.f32.f16.f16.f16", "A") in same


def test_changed_coefficient_is_reported_exactly(tmp_path, specs):
    doc = edited(tmp_path, TXT, "col = (i & 0b100) + (%laneid & 0b10) + (i & 0b1)",
                 "col = (i & 0b100) + (%laneid & 0b10) * 2 + (i & 0b1)")
    bad = not_same(run_diff(doc, specs))
    assert {f.status for f in bad} == {"changed"}
    assert {f.spec_layout for f in bad} == {"m8n8k4.CD.f32"}
    assert {f.operand for f in bad} == {"C", "D"}
    cells = bad[0].differences
    assert cells and all(c["lane"] % 4 in (2, 3) for c in cells)
    assert all(c["doc"][2] == c["specs"][2] + 2 for c in cells)
    assert len(cells) == 16 * 8


def test_swapped_element_indices(tmp_path, specs):
    doc = edited(tmp_path, TUTORIAL, "row = groupID for ci where i < 2", "row = groupID for ci where i in {0, 2}")
    doc = edited(tmp_path, doc, "groupID + 8 for ci where i >= 2", "groupID + 8 for ci where i in {1, 3}")
    bad = not_same(run_diff(doc, specs))
    assert bad and {f.status for f in bad} == {"changed"} and {f.spec_layout for f in bad} == {"m16n8.CD"}
    assert {c["element"] for c in bad[0].differences} == {1, 2}
    assert "elements 1-2 in lanes 0-31" in bad[0].detail


def test_dropped_shape_is_coverage_against_specs_and_removed_against_base(tmp_path, specs, capsys):
    """An excerpt is not wrong about what it leaves out: against specs/ the .f64 section's operands are
    'not covered' (no difference); against the previous rendering (--base) they are 'removed'."""
    text = TXT.read_text()
    doc = tmp_path / "dropped.txt"
    doc.write_text(text[: text.index("9.7.14.5.2.")])
    bad = not_same(run_diff(doc, specs))
    assert {f.status for f in bad} == {"not covered"} and not any(f.counts_as_difference for f in bad)
    assert {f.subject for f in bad} == {"mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64"}
    assert {f.operand for f in bad} == {"A", "B", "C", "D"} and bad[0].section == "9.7.14.5"
    assert main(["doc-diff", "--base", str(TXT), str(doc)]) == 1
    out = capsys.readouterr().out
    assert "removed       m8n8k4 .f64 A" in out and "removed       m8n8k4 .f64 D" in out and "8 removed" in out


def test_added_type_only_in_doc_and_import(tmp_path, specs):
    row = ".f16 A vector expression containing two .f16x2 registers, with each register containing two .f16 elements from the matrix A. a0, a1, a2, a3"
    doc = edited(tmp_path, TXT, row, row + "\n" + row.replace(".f16 elements", ".bf16 elements").replace(".f16 A", ".bf16 A"))
    bad = not_same(run_diff(doc, specs))
    assert {(f.status, f.subject) for f in bad} == {("only in doc", "m8n8k4 A.row .bf16"), ("only in doc", "m8n8k4 A.col .bf16")}
    path = write_draft(extract_file(doc), specs, tmp_path / "draft")
    loaded = load_file(path)
    assert "mma.sync.aligned.m8n8k4.row.row.f16.bf16.f16.f16" in loaded.variants
    v = loaded.variants["mma.sync.aligned.m8n8k4.row.row.f16.bf16.f16.f16"]
    assert (v.operands["A"].layout.default_map == specs.layouts["m8n8k4.A.row.f16"].default_map).all()


def test_unbalanced_parenthesis_matches_known_erratum(tmp_path, specs):
    doc = tmp_path / "k16f64.txt"
    doc.write_text(
        "9.7.14.5.8. Matrix Fragments for mma.m16n8k16 with .f64 floating point type\n"
        "Multiplicand A:\n"
        "row = groupID for ai where i % 2 = 0\n"
        "      groupID + 8 Otherwise\n"
        "col = (i * 2) + threadID_in_group for ai where i % 2 = 0\n"
        "      (i * 2) - 2 + (threadID_in_group Otherwise\n")
    [f] = [f for f in run_diff(doc, specs) if f.operand == "A"]
    assert f.status == "unparseable" and f.line == 6
    assert "unbalanced" in f.detail and "suspected doc erratum" in f.detail
    assert f.erratum and "parenthesis" in f.erratum["problem"] and not f.counts_as_difference


def test_formula_forms():
    def t(*lines):
        return translate_block([Line(k + 1, s) for k, s in enumerate(lines)])

    assert t("row = groupID for a0 and a1", "groupID + 8 for a2 and a3").expr == "groupID if i in {0, 1} else groupID + 8"
    assert t("row = groupID for ai where 0 <= i < 2 || 4 <= i < 6", "groupID + 8 Otherwise").expr == (
        "groupID if 0 <= i < 2 or 4 <= i < 6 else groupID + 8")
    f = t("col = (i * 2) + 1 for ai where i % 2 = 0", "(i * 2 Otherwise")
    assert f.expr is None and f.error_line == 2 and f.suspected_erratum
    assert t("col = [firstcol ... lastcol] // As per", "Where", "firstcol = threadID_in_group * 4").kind == "range"


def test_table_39_rows():
    [t] = extract_file(TABLE).tables
    assert t.number == 39 and len(t.header) == 7 and len(t.rows) == 56
    rec = t.records()
    assert rec[0][".kind::*"] == ".kind::f16" and rec[0]["Shapes Supported"].startswith("64xNxK, 128xNxK; N = {8, 16, 24, ... 256}")
    sparse_tf32 = [r for r in rec if r[".kind::*"] == ".kind::tf32" and r["Sparsity"] == "Sparse" and r["Has .ws"] == ".ws"]
    assert [r["Shapes Supported"] for r in sparse_tf32] == ["N = {64, 128}; K = 16", "Invalid"]
    assert rec[-1]["CTA Group"] == "1 / 2" and rec[-1]["Shapes Supported"] == "Invalid"


def test_family_decision():
    assert section_family("9.7.14.5.1", "Matrix Fragments for mma.m8n8k4 with .f16 floating point type") == "mma.sync"
    assert section_family("9.7.14.6.2.1", "Matrix Fragments for sparse mma.m16n8k16 with .f16 and .bf16 types") == "mma.sp"
    assert section_family("9.7.14.6.2", "Matrix fragments for multiply-accumulate operation with sparse matrix A") == "mma.sp"
    assert section_family("9.7.14.6.2.9", "Matrix Fragments", "mma.sp") == "mma.sp"
    assert section_family("9.7.14.6.1", "Sparse matrix storage") == "mma.sp"
    # meaning over position: a number alone decides nothing (warp-level mma is 9.7.14 up to ISA 9.2, 9.7.16 in 9.4)
    assert section_family("9.7.14.5", "Matrix Fragments") is None
    assert section_family("9.7.16.5", "Matrix multiply-accumulate operation using mma instruction") == "mma.sync"
    assert section_family("9.7.16.6.2.1", "Matrix Fragments for sparse mma.m16n8k16 with .f16 and .bf16 types") == "mma.sp"
    assert {x.family for x in extract_file(TUTORIAL).layouts} == {"mma.sync"}
    assert {x.family for x in extract_file(SPARSE).layouts} == {"mma.sp"}


@pytest.mark.parametrize("seed", [TXT, MD, TUTORIAL])
def test_dense_seeds_never_speak_for_sparse(seed, specs):
    assert not any(specs.variants[f.subject].family == "mma.sp" for f in run_diff(seed, specs) if f.subject in specs.variants)


def test_sparse_seed_diffs_clean(specs):
    found = run_diff(SPARSE, specs)
    assert [f for f in found if f.status not in ("same", "note")] == []
    assert all(specs.variants[f.subject].family == "mma.sp" for f in found if f.subject in specs.variants)
    # A by meaning (row + [firstcol ... lastcol] against the compressed layouts), every covered variant
    a = {f.spec_layout for f in found if f.operand == "A" and f.status == "same"}
    assert a == {"m16n8k8.A.b16", "m16n8k16.A.b16", "m16n8k8.A.b32", "m16n8k4.A", "m16n8k16.A.b8", "m16n8k32.A.b8",
                 "m16n8k32.A.b4"}
    assert all("agree with compressed A" in f.detail for f in found if f.operand == "A")
    # B/C/D "the same as <dense section>": resolved to the dense variants, compared by map
    refs = [f for f in found if f.operand in ("B", "C", "D") and f.status == "same"]
    assert refs and all(f.detail.startswith("by reference to") for f in refs)
    assert {f.spec_layout for f in refs if f.operand == "C"} == {"m16n8.CD"}
    # what the document only draws: three B figures and the metadata, one note each
    notes = sorted((f.section or "", f.operand) for f in found if f.status == "note")
    assert notes == [("", "metadata"), ("9.7.14.6.2.2", "B"), ("9.7.14.6.2.3", "B"), ("9.7.14.6.2.6", "B")]
    # m16n8k128 (section 9.7.14.6.2.8) is not in the seed: no finding
    assert not any("m16n8k128" in f.subject for f in found)


def test_sparse_firstcol_changed(tmp_path, specs, capsys):
    doc = edited(tmp_path, SPARSE, "firstcol = threadID_in_group * 4\n", "firstcol = threadID_in_group * 2\n")
    bad = [f for f in run_diff(doc, specs) if f.counts_as_difference]
    assert {(f.status, f.operand, f.spec_layout, f.section) for f in bad} == {
        ("changed", "A", "m16n8k8.A.b16", "9.7.14.6.2.1")}
    assert len(bad) == 6  # m16n8k16 .f16 (f16/f32 accumulators) and .bf16, each as mma.sp and ::ordered_metadata
    cells = bad[0].differences
    assert len(cells) == 24 * 4 and all(c["lane"] % 4 != 0 for c in cells)
    t = {c["lane"] % 4 for c in cells}
    assert t == {1, 2, 3}
    for c in cells:
        tig = c["lane"] % 4
        assert c["specs"][1:] == [4 * tig, 4 * tig + 3] and c["doc"][1:] == [2 * tig, 2 * tig + 3]
        assert c["specs"][0] == c["doc"][0]
    assert "differ in firstcol, lastcol" in bad[0].detail and "elements 0-3 in lanes 1-3, 5-7" in bad[0].detail
    assert main(["doc-diff", str(doc)]) == 1
    text = capsys.readouterr().out
    assert "changed       mma.sp.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 A" in text
    assert "lane  1 element 0: specs (0, 4, 7)  doc (0, 2, 5)" in text and "6 difference(s)" in text
    assert main(["doc-diff", "--json", str(doc)]) == 1
    out = json.loads(capsys.readouterr().out)
    changed = [f for f in out["findings"] if f["status"] == "changed"]
    assert out["differences"] == 6 and out["summary"]["changed"] == 6
    assert {(f["operand"], f["spec_layout"], f["line"]) for f in changed} == {("A", "m16n8k8.A.b16", 23)}
    assert changed[0]["differences"][0] == {"lane": 1, "element": 0, "specs": [0, 4, 7], "doc": [0, 2, 5]}


def test_garbage_names_file_and_line(tmp_path, capsys):
    g = tmp_path / "garbage.txt"
    g.write_text("hello\nthis is not a PTX section\n")
    with pytest.raises(DocError, match=r"garbage.txt:1: no PTX ISA"):
        extract_file(g)
    b = tmp_path / "bin.html"
    b.write_bytes(b"<p>ok</p>\nline two\n\xff\xfe\x00")
    assert main(["doc-diff", str(b)]) == 2
    assert "bin.html:3: not UTF-8" in capsys.readouterr().err


def test_cli_text_and_json(tmp_path, capsys):
    assert main(["doc-diff", str(TXT), str(MD)]) == 0
    assert "0 difference(s)" in capsys.readouterr().out
    doc = edited(tmp_path, TUTORIAL, "col = groupID", "col = groupID + 1")
    assert main(["doc-diff", "--json", str(doc)]) == 1
    out = json.loads(capsys.readouterr().out)
    changed = [f for f in out["findings"] if f["status"] == "changed"]
    assert {f["operand"] for f in changed} == {"B"} and out["summary"]["changed"] == len(changed) > 0
    assert main(["doc-diff", str(doc)]) == 1
    text = capsys.readouterr().out
    assert "changed" in text and "lane  0 element 0: specs (0, 0)  doc (0, 1)" in text
