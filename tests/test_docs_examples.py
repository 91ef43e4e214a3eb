"""The ISA's example instructions: extracted from every rendering, checked against specs/ and ptxas.

The example blocks here are written for the tests (instruction strings built from
specs/ variant ids), not copied from any rendering; real renderings are read from
../shared/isa-renderings when present.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from ptxconf.cli.main import main
from ptxconf.docs import read_tree, tree_from_text
from ptxconf.docs.example_check import check_examples, ptxas_check, variant_key
from ptxconf.docs.examples import examples_of
from ptxconf.docs.source import Line
from ptxconf.docs.tree import HEADING, PARA, PRE, Block, DocTree
from ptxconf.isa import load_specs

from tests.docs_renderings import FORMATS, render, shared_renderings

RENDERINGS = shared_renderings()

GOOD = """\
.reg .b32 %xa<4>, %xb<2>;
.reg .f32 %xc<4>, %xd<4>;
mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32
  {%xd0, %xd1, %xd2, %xd3},
  {%xa0, %xa1, %xa2, %xa3},
  {%xb0, %xb1},
  {%xc0, %xc1, %xc2, %xc3};
.reg .b64 p;
.reg .b32 q<2>;
ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {q0, q1}, [p];"""


def _tree(code: str) -> DocTree:
    lines = [Line(10 + k, t) for k, t in enumerate(code.split("\n"))]
    return DocTree("<test>", "text", [Block(HEADING, 1, "Test examples", number="9.99.1"),
                                      Block(PARA, 3, "Examples"), Block(PRE, 10, lines=lines)])


@pytest.fixture(scope="module")
def specs():
    return load_specs()


def _key(exs):
    return [(e.opcode, e.operands) for e in exs]


def test_extracts_examples_with_declarations():
    exs = examples_of(_tree(GOOD))
    assert [e.opcode for e in exs] == ["mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32",
                                       "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16"]
    assert exs[0].operands[1] == "{%xa0, %xa1, %xa2, %xa3}" and exs[0].section == "9.99.1"
    assert exs[0].declaration("%xa3").type == "b32" and exs[0].declaration("%xa4") is None


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_examples_from_every_rendering_format(fmt: str):
    """Every format docs_renderings writes gives the same example instructions back."""
    tree = _tree(GOOD)
    back = examples_of(tree_from_text(render(tree, fmt), f"<{fmt}>"))
    assert _key(back) == _key(examples_of(tree))


def test_good_examples_agree_with_specs(specs):
    fs = check_examples(examples_of(_tree(GOOD)), specs)
    assert [f.status for f in fs] == ["ok", "ok"]


def test_variant_key_is_order_free_where_the_isa_is():
    a = variant_key("mma.sync.aligned.kind::mxf8f6f4.block_scale.m16n8k32.row.col.f32.e4m3.e4m3.f32.ue8m0")
    b = variant_key("mma.sync.aligned.m16n8k32.row.col.kind::mxf8f6f4.block_scale.scale_vec::1X.f32.e4m3.e4m3.f32.ue8m0")
    assert a == b
    assert variant_key("ldmatrix.sync.aligned.m8n8.x1.shared::cta.b16") == variant_key("ldmatrix.sync.aligned.m8n8.x1.b16")


def _perturbed(specs, old: str, new: str):
    fs = check_examples(examples_of(_tree(GOOD.replace(old, new, 1))), specs)
    return [f for f in fs if f.status == "erratum"]


def test_wrong_register_count_caught(specs):
    bad = _perturbed(specs, "{%xb0, %xb1}", "{%xb0}")
    assert [f.check for f in bad] == ["registers.B"]
    assert "B {%xb0} has 1 register(s)" in bad[0].message and "B is 2 .b32 register(s)" in bad[0].message


def test_wrong_type_caught(specs):
    bad = _perturbed(specs, ".reg .b32 %xa<4>, %xb<2>;", ".reg .b32 %xb<2>;\n.reg .f16 %xa<4>;")
    assert [f.check for f in bad] == ["type.A"]
    assert "declared .f16 (16 bits)" in bad[0].message and ".b32 (32-bit)" in bad[0].message
    bad = _perturbed(specs, ".reg .b32 %xa<4>, %xb<2>;", ".reg .b32 %xb<2>;\n.reg .f16x2 %xa<4>;")
    assert [f.check for f in bad] == ["type.A"] and "holds .e4m3" in bad[0].message


def test_too_few_declared_and_no_semicolon_caught(specs):
    bad = _perturbed(specs, ".reg .b32 %xa<4>, %xb<2>;", ".reg .b32 %xa<2> %xb<2>")
    checks = sorted(f.check for f in bad)
    assert checks == ["declared", "syntax", "syntax"]
    assert any("uses %xa2..%xa3" in f.message and "declares only %xa0..%xa1" in f.message for f in bad)


def test_unknown_variant_caught(specs):
    bad = _perturbed(specs, "x2.trans.shared.b16", "x3.trans.shared.b16")
    assert bad and bad[0].check == "variant" and "names no variant of specs/" in bad[0].message


def test_syntax_lines_are_templates(specs):
    fs = check_examples(examples_of(_tree("mma.sync.aligned.m16n8k8.row.col.dtype.f16.f16.ctype d, a, b, c;\n"
                                          "ldmatrix.sync.aligned.m8n8.x1.b16 r, [p];")), specs)
    assert [f.status for f in fs] == ["template", "template"]


def test_pinned_erratum_is_explained(specs):
    code = ".reg .b64 p;\n.reg .b32 q<4>;\nstmatrix.sync.aligned.m16n8.x4.b8 [p], {q0, q1, q2, q3};"
    fs = check_examples(examples_of(_tree(code)), specs)
    assert fs and {f.status for f in fs} == {"explained"} and "example" in fs[0].erratum


@pytest.mark.ptxas
def test_ptxas_accepts_good_and_rejects_perturbed(specs):
    exe = shutil.which("ptxas") or ("/usr/local/bin/ptxas" if Path("/usr/local/bin/ptxas").is_file() else None)
    if exe is None:
        pytest.skip("ptxas not on PATH")
    assert ptxas_check(examples_of(_tree(GOOD)), specs, exe) == []
    bad = ptxas_check(examples_of(_tree(GOOD.replace("%xb<2>", "%xb<1>"))), specs, exe)
    assert len(bad) == 1 and bad[0].check == "ptxas" and "%xb1" in bad[0].message


def test_cli_exit_codes(tmp_path, capsys):
    good = tmp_path / "good.md"
    good.write_text("# 9.99.1. Test examples\n\n```\n" + GOOD + "\n```\n")
    assert main(["doc-examples", "--no-ptxas", str(good)]) == 0
    bad = tmp_path / "bad.md"
    bad.write_text("# 9.99.1. Test examples\n\n```\n" + GOOD.replace("{%xb0, %xb1}", "{%xb0}") + "\n```\n")
    assert main(["doc-examples", "--no-ptxas", str(bad)]) == 1
    assert "registers.B" in capsys.readouterr().out
    assert main(["doc-examples", "--no-ptxas", str(tmp_path / "missing.md")]) == 2


@pytest.mark.parametrize("name", ["m8n8k16.txt", "md-m16n8k8-quoted.md"])
def test_real_renderings_have_no_example_errata(name: str, specs):
    path = RENDERINGS / name
    if not path.is_file():
        pytest.skip(f"{path} absent (third-party renderings are not kept in the project)")
    fs = check_examples(examples_of(read_tree(path)), specs)
    assert not [f for f in fs if f.status == "erratum"]
