"""doc-diff on a corpus of public renderings of the ISA's matrix sections (tests/data/isa-corpus, ISA 9.0-9.4).

Each rendering is read as its author left it (markdown from four converters, a browser text copy, raw HTML
tables inside markdown); PROVENANCE.yaml says where each comes from.  Precision: every unchanged section
reads with no difference but the real ones listed here (and in PROVENANCE.yaml).  Recall: a copy with one
formula term moved is caught, naming the operand whose formula moved.  Versions: ``--base`` between the
oldest and newest rendering of one section reports no lane map as changed.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
import yaml
from ptxconf.cli.main import main
from ptxconf.docs import extract, read_tree, tree_from_text
from ptxconf.docs.diff import diff
from ptxconf.docs.example_check import module_version
from ptxconf.docs.versions import compare_versions
from ptxconf.isa import load_specs
from ptxconf.isa.targets import PtxVersion

from tests.docs_renderings import shared_renderings

CORPUS = Path(__file__).parent / "data" / "isa-corpus"
PROVENANCE = yaml.safe_load((CORPUS / "PROVENANCE.yaml").read_text())["renderings"]
FILES = sorted(n for n, p in PROVENANCE.items() if p.get("use") != "doc-examples")  # doc-diff's renderings

# (same, note) per rendering: what reads as it should; any change of these numbers is a reader regression.
EXPECTED = {
    "v90-md-m16n8k16-float.md": (31, 0), "v90-md-m8n8k128.md": (8, 0), "v90-md-m8n8k4.md": (52, 0),
    "v90-md-sparse-m16n8k32-u8s8.md": (64, 1), "v90-md-tcgen05-matrix-shape.md": (0, 0),
    "v90-md-wgmma-register-fragments.md": (0, 8), "v91-md-m16n8k64.md": (52, 0), "v91-md-m16n8k8.md": (20, 0),
    "v91-md-m8n8k4-f16.md": (48, 0), "v91-md-sparse-m16n8k16-tf32.md": (6, 2), "v91-md-tcgen05-matrix-shape.md": (0, 0),
    "v91-md-wgmma-m64n16.md": (0, 2), "v92-md-m16n8k16-float.md": (31, 0), "v92-md-m16n8k64.md": (52, 0),
    "v92-md-sparse-u8s8-fp8.md": (436, 2), "v92-md-tcgen05-matrix-shapes.md": (0, 0), "v92-txt-m8n8k128.txt": (8, 0),
    "v94-md-html-tcgen05-matrix-shape.md": (0, 0), "v94-md-m8n8k4.md": (52, 0), "v94-md-m16n8k32-m16n8k64.md": (548, 0),
}
# The real differences.  specs/ holds ISA 9.4's Table 48 (f8f6f4's .f16 as a D type, as every rendering that kept
# the cells prints it; the K values and .kind::ti16 that 9.4 adds), so the older renderings differ from it in every
# group 9.4 changed.  The 9.2 conversion moved three shape cells into the atype/btype column (unread) and lost
# f8f6f4's .f16 dtype.  Against 9.4 itself what is left are readings specs/ states as errata or pending:
# f8f6f4's "For K = 64, only .e4m3 and .e5m2" (errata f8f6f4-k64-footnote: the reader does not apply it), K1 with
# M = 256 only (the reader pairs "K = 64 / 128" with every M), and the 9.4 Target ISA Note's "sm_107f or higher" K
# rows, which the reader does not take as a target list.  (.ue5m3, once pending, is in specs/: mxf4nvf4 reads "same".)
_F8F6F4 = {f"kind::f8f6f4{ws} cta_group {cta} {sp} dtype .{dt}" for ws, cta in (("", 1), ("", 2), (" .ws", 1))
           for sp in ("dense", "sparse") for dt in ("f16", "f32")}
_MX = {f"kind::{k} cta_group {c} {s} dtype .f32" for k in ("mxf8f6f4", "mxf4", "mxf4nvf4") for c in (1, 2)
       for s in ("dense", "sparse")}
KNOWN = {
    "v90-md-tcgen05-matrix-shape.md": _F8F6F4 | _MX | {"kind::ti16"},
    "v91-md-tcgen05-matrix-shape.md": _F8F6F4 | _MX | {"kind::ti16"},
    "v92-md-tcgen05-matrix-shapes.md": _F8F6F4 | _MX - {f"kind::{k} cta_group 2 sparse dtype .f32" for k in
                                                         ("mxf8f6f4", "mxf4", "mxf4nvf4")} | {
        "Table 39 (Various combinations of .kind and shapes)", "kind::ti16",
        *(f"K = {k} targets" for k in (64, 96, 128, 192))},
    # 9.4's f8f6f4 cta_group 1 rows give N as "{8, ... 256} steps of 8 OR {16, ... 256} steps of 16": unread
    "v94-md-html-tcgen05-matrix-shape.md": _F8F6F4 - {f"kind::f8f6f4 cta_group 1 {s} dtype .{d}" for s in ("dense", "sparse")
                                                      for d in ("f16", "f32")} | {
        "Table 48 (Various combinations of .kind and shapes)", *(f"K = {k} targets" for k in (64, 128, 192))},
}


@pytest.fixture(scope="module")
def specs():
    return load_specs()


def findings(tree, specs):
    return diff(extract(tree), specs, tree.line_texts())


_READ: dict[str, tuple] = {}


def corpus(name: str, specs) -> tuple:
    """(extraction, findings) of a rendering as it is, read once per test process."""
    if name not in _READ:
        tree = read_tree(CORPUS / name)
        ex = extract(tree)
        _READ[name] = ex, diff(ex, specs, tree.line_texts())
    return _READ[name]


def test_provenance_names_every_rendering():
    on_disk = {p.name for p in CORPUS.iterdir() if p.name != "PROVENANCE.yaml"}
    assert on_disk == set(PROVENANCE)
    for name, p in PROVENANCE.items():
        assert ("repository" in p and "path" in p and re.fullmatch(r"[0-9a-f]{40}", p["commit"])) or "address" in p, name
        assert re.fullmatch(r"9\.\d", p["isa"]) and p["format"] and "licence" in p, name
    assert len(FILES) >= 12 and {p["isa"] for p in PROVENANCE.values()} >= {"9.0", "9.1", "9.2", "9.4"}


@pytest.mark.parametrize("name", FILES)
def test_corpus_reads_with_only_real_differences(name, specs):
    found = corpus(name, specs)[1]
    counts = Counter(f.status for f in found)
    assert (counts["same"], counts["note"]) == EXPECTED[name]
    differing = {f.subject for f in found if f.counts_as_difference}
    assert differing == KNOWN.get(name, set())
    unexplained = [f for f in found if f.status in ("changed", "unparseable") and not f.erratum
                   and f.subject not in KNOWN.get(name, set())]
    assert not unexplained


def _perturbed(name: str, specs) -> tuple[str, tuple[str, ...]]:
    """The rendering with one term of a compared formula moved ("groupID" -> "(groupID + 1)"), and the
    operands that formula is for."""
    ex, found = corpus(name, specs)
    same = {(f.section, f.operand) for f in found if f.status == "same"}
    lay = next(x for x in ex.layouts if x.row and x.row.expr and any((x.section, o) in same for o in x.operands))
    lines = (CORPUS / name).read_text().split("\n")
    k = lay.row.line - 1
    head, eq, tail = lines[k].partition("=")
    moved = re.sub(r"(%laneid|threadID_in_group|groupID|\bi\b|\bX\b)", r"(\1 + 1)", tail, count=1)
    assert moved != tail, lines[k]
    lines[k] = head + eq + moved
    return "\n".join(lines), lay.operands


FORMULA_FILES = [n for n in FILES if EXPECTED[n][0]]


@pytest.mark.parametrize("name", FORMULA_FILES)
def test_a_moved_formula_term_is_caught_with_its_operand(name, specs):
    text, operands = _perturbed(name, specs)
    found = findings(tree_from_text(text, name), specs)
    changed = {f.operand for f in found if f.status == "changed"}
    assert changed and changed <= set(operands), (changed, operands)


@pytest.mark.parametrize("name", [n for n in FILES if "tcgen05" in n])
def test_a_changed_shape_is_caught(name, specs):
    text = (CORPUS / name).read_text().replace("K = 16", "K = 48", 1)
    found = findings(tree_from_text(text, name), specs)
    new = {f.subject for f in found if f.counts_as_difference} - KNOWN[name]
    assert new and all(s.startswith("kind::f16") for s in new)


@pytest.mark.parametrize("old, new, same", [
    ("v90-md-m8n8k4.md", "v94-md-m8n8k4.md", 12),
    ("v90-md-m16n8k16-float.md", "v92-md-m16n8k16-float.md", 12),
    ("v90-md-m8n8k128.md", "v92-txt-m8n8k128.txt", 4),
    ("v91-md-m8n8k4-f16.md", "v94-md-m8n8k4.md", 8),
    ("v91-md-m16n8k64.md", "v94-md-m16n8k32-m16n8k64.md", 10),
    ("v92-md-m16n8k64.md", "v94-md-m16n8k32-m16n8k64.md", 10),
])
def test_versions_report_no_false_change(old, new, same):
    found = compare_versions(extract(read_tree(CORPUS / old)), extract(read_tree(CORPUS / new)))
    counts = Counter(f.status for f in found)
    assert counts["same"] == same and not counts["changed"] and not counts["unparseable"] and not counts["removed"]
    # only what the newer excerpt holds beyond the older one (a section the older excerpt left out)
    assert all(f.subject.startswith(("m8n8k4 .f64", "m16n8k32")) for f in found if f.status == "added")


def test_versions_of_the_shape_table_report_only_real_changes():
    """Table 39 (ISA 9.0) against Table 48 (ISA 9.4), matched by columns: the 9.4 additions, nothing else."""
    found = compare_versions(extract(read_tree(CORPUS / "v90-md-tcgen05-matrix-shape.md")),
                             extract(read_tree(CORPUS / "v94-md-html-tcgen05-matrix-shape.md")))
    by = {(f.status, f.subject): f.detail for f in found}
    assert by[("added", "kind::ti16 cta_group 2 dense dtype .s32")].startswith("new: atype/btype {.s1z4m11}")
    assert by[("changed", "kind::mxf4nvf4 cta_group 1 dense dtype .f32")] == (
        "scale {.ue4m3, .ue8m0} -> {.ue4m3, .ue5m3, .ue8m0}; K {64} -> {64, 96}")
    assert by[("changed", "kind::mxf8f6f4 cta_group 2 sparse dtype .f32")] == "K {64} -> {64, 128}"
    assert not [f for f in found if f.status == "removed"]
    assert all(f.status == "same" for f in found if f.subject.startswith(("kind::f16", "kind::tf32", "kind::i8")))
    same = compare_versions(extract(read_tree(CORPUS / "v90-md-tcgen05-matrix-shape.md")),
                            extract(read_tree(CORPUS / "v91-md-tcgen05-matrix-shape.md")))
    assert {f.status for f in same} == {"same"} and len(same) == 68


def test_version_base_catches_a_moved_lane(specs):
    text, operands = _perturbed("v94-md-m8n8k4.md", specs)
    found = compare_versions(extract(read_tree(CORPUS / "v90-md-m8n8k4.md")), extract(tree_from_text(text, "new.md")))
    assert {f.operand for f in found if f.status == "changed"} == set(operands)


def test_latin1_mojibake_reads_as_the_original(specs):
    name = "v90-md-m8n8k128.md"
    text = (CORPUS / name).read_text()
    assert "\u2026" in text
    garbled = text.encode("utf-8").decode("latin-1")
    assert "\u00e2\u0080\u00a6" in garbled
    want = sorted((f.status, f.subject, f.operand) for f in corpus(name, specs)[1])
    assert sorted((f.status, f.subject, f.operand) for f in findings(tree_from_text(garbled, name), specs)) == want


def test_merged_cells_of_table_48_are_kept():
    tree = read_tree(CORPUS / "v94-md-html-tcgen05-matrix-shape.md")
    assert tree.format == "markdown" and tree.version == "9.4"
    table = next(b for b in tree.blocks if b.kind == "table")
    assert table.header[:6] == [".kind::*", "Has .ws", "CTA Group", "Sparsity", "dtype", "atype/btype"]
    assert table.header[6:] == ["Shapes Supported"] * 3
    kinds = [r[0] for r in table.body]
    assert len(table.body) == 67 and kinds.count("kind::f16") == 14 and kinds.count(".kind::ti16") == 8
    first_tf32 = table.body[kinds.index(".kind::tf32")]
    assert first_tf32[4:9] == [".f32", ".tf32", "64xNxK 128xNxK", "N = {8, 16, 24, ... 256} steps of 8", "K = 8"]


def test_a_pipe_table_that_lost_its_rowspans_is_put_back():
    tree = read_tree(CORPUS / "v90-md-tcgen05-matrix-shape.md")
    table = next(b for b in tree.blocks if b.kind == "table")
    rows = {tuple(r[:6]): r[6:] for r in table.body}
    assert rows[("kind::f16", ".ws", "1", "Sparse", ".f32", ".f16, .bf16")] == [
        "32xNxK 64xNxK 128xNxK", "N = {64, 128}", "K = 32"]
    assert rows[(".kind::tf32", "No .ws", "2", "Sparse", ".f32", ".tf32")][2] == "K = 16"


def test_a_batch_reports_every_file(tmp_path, capsys):
    bad = tmp_path / "notes.txt"
    bad.write_text("nothing about matrices here\n")
    good = CORPUS / "v90-md-m8n8k128.md"
    assert main(["doc-diff", str(good), str(bad), str(CORPUS / "v92-txt-m8n8k128.txt")]) == 2
    out = capsys.readouterr()
    assert f"{good}: 8 same, 0 changed" in out.out and "(exit 0)" in out.out
    assert f"{bad}: unreadable: line 1: no PTX ISA fragment table" in out.out
    assert "v92-txt-m8n8k128.txt: 8 same" in out.out and "3 files: 2 without differences, 0 with, 1 unreadable" in out.out


def test_figure_only_sections_are_coverage_not_differences(capsys):
    assert main(["doc-diff", str(CORPUS / "v91-md-wgmma-m64n16.md")]) == 0
    out = capsys.readouterr().out
    assert "drawn only (Figure 148), no formula: not compared; specs/ takes A.m64k16" in out
    assert "0 same, 0 changed, 0 only in doc, 0 only in specs, 0 unparseable, 2 note; 0 difference(s)" in out


def test_example_version_comes_from_the_variant_or_the_document(specs):
    v = next(x for x in specs.variants.values() if x.min_ptx == PtxVersion(8, 7))
    newest = PtxVersion(9, 5)
    assert module_version(v, None, newest) >= PtxVersion(8, 7)
    assert module_version(v, "9.1", newest) == PtxVersion(9, 1)
    assert module_version(None, "9.4", newest) == PtxVersion(9, 4)
    assert module_version(None, None, newest) == newest
    assert read_tree(CORPUS / "v94-md-m8n8k4.md").version == "9.4" and read_tree(CORPUS / "v90-md-m8n8k128.md").version is None


@pytest.mark.parametrize("name", ["m8n8k16.txt", "md-m16n8k8-quoted.md"])
def test_shared_renderings_read_without_differences(name, specs):
    path = shared_renderings() / name
    if not path.is_file():
        pytest.skip(f"{path} is not here (the shared renderings sit beside the checkout)")
    found = findings(read_tree(path), specs)
    assert not any(f.counts_as_difference for f in found) and sum(f.status == "same" for f in found) >= 15


def test_html_tables_without_optional_end_tags_keep_their_grid():
    """HTML lets a rendering omit </td>, </tr> and </p>; the reader (lxml) keeps the same grid."""
    from ptxconf.docs.readers.html import read_html_blocks
    from ptxconf.docs.source import Line

    src = (CORPUS / "v94-md-html-tcgen05-matrix-shape.md").read_text()
    table = src[src.index("<table>"): src.index("</table>") + len("</table>")]

    def grid(text):
        return [b.rows for b in read_html_blocks([Line(n, t) for n, t in enumerate(text.split("\n"), 1)])
                if b.kind == "table"]

    assert grid(re.sub(r"</t[dh]>|</tr>|</p>", "", table)) == grid(table) != []


def test_a_pdf_is_read_by_pypdf_and_a_broken_one_says_why(tmp_path, capsys):
    bad = tmp_path / "isa.pdf"
    bad.write_bytes(b"%PDF-1.7\nnot really a PDF\n")
    assert main(["doc-diff", str(bad)]) == 2
    assert "isa.pdf: cannot read this PDF" in capsys.readouterr().err


def test_a_fragment_table_written_one_cell_per_paragraph(specs):
    """The corpus's 9.4 m8n8k4 with its fragment tables re-written one cell per paragraph (as a converter of
    ISA 9.3 wrote its accumulator tables): the same findings."""
    name = "v94-md-m8n8k4.md"
    lines, out, k = (CORPUS / name).read_text().split("\n"), [], 0
    while k < len(lines):
        if re.match(r"^\.[abcd]type\b", lines[k]) and lines[k + 1].startswith("---|"):
            cells = lines[k].split("|")
            k += 2
            while k < len(lines) and "|" in lines[k]:
                cells += lines[k].split("|")
                k += 1
            out += [x for c in cells for x in ("", c.strip())] + [""]
            continue
        out.append(lines[k])
        k += 1
    text = "\n".join(out)
    assert "\n\n.ctype / .dtype\n\nFragment\n\nElements (low to high)\n\n`.f64`\n\n" in text
    ex = extract(tree_from_text(text, name))
    assert [f.canonical() for f in ex.fragments] == [f.canonical() for f in corpus(name, specs)[0].fragments]
    got = diff(ex, specs, {})
    want = corpus(name, specs)[1]
    assert sorted((f.status, f.subject, f.operand) for f in got) == sorted((f.status, f.subject, f.operand) for f in want)


def test_doc_examples_finds_the_94_ldmatrix_addition(capsys):
    """ISA 9.4's ldmatrix examples: every one but the new .m8n16 .s8.s4 form agrees with specs/ (ISA 9.2)."""
    assert main(["doc-examples", "--no-ptxas", str(CORPUS / "v94-md-ldmatrix-examples.md")]) == 1
    out = capsys.readouterr().out
    assert "(document: PTX ISA 9.4): 7 example(s), 4 syntax line(s); 7 checked, 1 with errata" in out
    assert "ldmatrix.sync.aligned.m8n16.x1.shared::cta.s8.s4: names no variant of specs/" in out
    assert "6 ok, 1 erratum" in out
