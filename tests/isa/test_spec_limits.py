"""Hostile spec files are refused quickly, with one line and exit status 2.

Spec directories come from users and ``doc-import`` drafts, so loading bounds its
work: formula length and nesting, YAML nesting, node count and alias expansion,
and file size.  Each case writes a small valid spec (``BASE``) with one hostile
edit into ``tmp_path`` and runs ``ptxconf specs list --specs DIR`` in a
subprocess with a timeout, so that a regression fails instead of hanging.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from ptxconf.isa import SpecError, load_file
from ptxconf.isa.expr import MAX_FORMULA_DEPTH, MAX_FORMULA_LENGTH, ExprError, evaluate, parse
from ptxconf.isa.yamlsrc import MAX_ALIAS_NODES, MAX_SPEC_BYTES, MAX_YAML_DEPTH, MAX_YAML_NODES

REPO = Path(__file__).resolve().parents[2]
CLI = "import sys\nfrom ptxconf.cli import main\nsys.exit(main(sys.argv[1:]))"

BASE = """\
schema: 1
family: movmatrix
document: test
section: "9.7"
bindings:
  groupID: "%laneid >> 2"
fragments:
  b16: {register: b32, per_register: 2}
layouts:
  t.A:
    maps: "(lane 32, element 2) -> (row 8, col 8)"
    section: "9.7"
    shape: [8, 8]
    elements: 2
    row: "groupID"
    col: "(%laneid % 4) * 2 + i"
variants:
  - instruction: "movmatrix.sync.aligned.m8n8.trans.b16"
    section: "9.7"
    min_ptx: "7.8"
    min_target: sm_75
    operands:
      a: {type: b16, layout: t.A, fragment: b16}
      d: {type: b16, layout: t.A, fragment: b16}
"""
ROW = 'row: "groupID"'
ROW_LINE = BASE.splitlines().index(f"    {ROW}") + 1


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(text)
    return path


def with_row(formula: str) -> str:
    return BASE.replace(ROW, f'row: "{formula}"')


def refused(path: Path, where: str, *gist: str) -> str:
    """Run the CLI on ``path``'s directory: exit 2, one line ``ptxconf: FILE[:LINE][: FIELD]: ...``."""
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", CLI, "specs", "list", "--specs", str(path.parent)],
        cwd=REPO, capture_output=True, text=True, timeout=20,
    )
    elapsed = time.perf_counter() - start
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr[-2000:]
    assert lines[0].startswith(f"ptxconf: {path}{where}"), lines[0]
    for part in gist:
        assert part in lines[0], lines[0]
    assert elapsed < 10, f"{elapsed:.2f}s"  # generous (interpreter start, busy machines): the refusals take ms
    return lines[0]


def test_base_is_valid(tmp_path):
    path = write(tmp_path, BASE)
    assert list(load_file(path).variants) == ["movmatrix.sync.aligned.m8n8.trans.b16"]
    proc = subprocess.run([sys.executable, "-c", CLI, "specs", "list", "--specs", str(tmp_path)],
                          cwd=REPO, capture_output=True, text=True, timeout=20)
    assert proc.returncode == 0, proc.stderr


# -- formulas ------------------------------------------------------------------


def test_formula_5000_parentheses_deep(tmp_path):
    path = write(tmp_path, with_row("(" * 5000 + "groupID" + ")" * 5000))
    msg = refused(path, f":{ROW_LINE}: layouts.t.A.row: ", f"limit of {MAX_FORMULA_LENGTH}")
    assert len(msg) < 300  # the formula is not quoted back


def test_formula_nested_past_depth_limit(tmp_path):
    depth = MAX_FORMULA_DEPTH + 1
    path = write(tmp_path, with_row("(" * depth + "groupID" + ")" * depth))
    refused(path, f":{ROW_LINE}: layouts.t.A.row: ", f"deeper than the limit of {MAX_FORMULA_DEPTH}",
            f"column {depth}")


@pytest.mark.parametrize("formula", [
    "- " * (MAX_FORMULA_DEPTH + 1) + "groupID",  # unary chain
    "not " * (MAX_FORMULA_DEPTH + 1) + "groupID",
    "groupID" + " + 0" * (MAX_FORMULA_DEPTH + 1),  # flat text, deep tree
    "0 if i else " * (MAX_FORMULA_DEPTH + 1) + "groupID",
], ids=["unary", "not", "flat-sum", "else-chain"])
def test_formula_deep_without_parentheses(tmp_path, formula):
    path = write(tmp_path, with_row(formula))
    refused(path, f":{ROW_LINE}: layouts.t.A.row: ", f"deeper than the limit of {MAX_FORMULA_DEPTH}")


def test_formula_too_long(tmp_path):
    formula = "groupID" + " + 0 * 0" * 20000
    path = write(tmp_path, with_row(formula))
    refused(path, f":{ROW_LINE}: layouts.t.A.row: ", f"formula of {len(formula)} characters",
            f"limit of {MAX_FORMULA_LENGTH}")


def test_formula_limits_at_the_boundary():
    d = MAX_FORMULA_DEPTH
    assert int(evaluate(parse("(" * (d - 1) + "x" + ")" * (d - 1)), {"x": 3})) == 3
    assert int(evaluate(parse("- " * (d - 1) + "x"), {"x": 3})) == (-3 if (d - 1) % 2 else 3)
    assert int(evaluate(parse("x" + " + 1" * (d - 1)), {"x": 3})) == 3 + d - 1
    long = "x if x in {" + ", ".join(["7"] * 200) + "} else 0"
    long += " " * (MAX_FORMULA_LENGTH - len(long))
    assert len(long) == MAX_FORMULA_LENGTH and int(evaluate(parse(long), {"x": 7})) == 7
    with pytest.raises(ExprError, match=f"limit of {MAX_FORMULA_LENGTH}"):
        parse(long + " ")


@pytest.mark.parametrize("formula, gist", [
    ("groupID if i in {0,..,999999999999} else 0", "limit of 4096 values"),
    ("groupID + 99999999999999999999999", "does not fit 64 bits"),
], ids=["range", "int"])
def test_formula_huge_values(tmp_path, formula, gist):
    path = write(tmp_path, with_row(formula))
    with pytest.raises(SpecError, match=gist) as info:
        load_file(path)
    assert str(info.value).startswith(f"{path}:{ROW_LINE}: layouts.t.A.row: ")


def test_binding_chain_too_deep(tmp_path):
    chain = "".join(f'  b{k}: "{f"b{k - 1}" if k else "groupID"} + 0"\n' for k in range(200))
    text = BASE.replace('  groupID: "%laneid >> 2"\n', '  groupID: "%laneid >> 2"\n' + chain).replace(ROW, 'row: "b199 - 0"')
    path = write(tmp_path, text)
    refused(path, f":{ROW_LINE + 200}: layouts.t.A.row: ", "bindings nest deeper than the limit")


# -- YAML ----------------------------------------------------------------------


def alias_bomb() -> str:
    """The "billion laughs": nine levels of nine aliases, 9**9 strings once expanded."""
    lines = ['lol0: &a0 ["lol"]']
    lines += [f"lol{k}: &a{k} [{', '.join([f'*a{k - 1}'] * 9)}]" for k in range(1, 10)]
    return BASE + "\n".join(lines) + "\n"


def test_alias_bomb(tmp_path):
    text = alias_bomb()
    path = write(tmp_path, text)
    line = text.splitlines().index(next(x for x in text.splitlines() if x.startswith("lol1:"))) + 1
    refused(path, f":{line}: lol1[0]: ", "alias *a0 inside anchored value &a1", "may not nest")


def test_alias_cycle(tmp_path):
    path = write(tmp_path, BASE + "loop: &l [1, *l]\n")
    refused(path, f":{BASE.count(chr(10)) + 1}: loop[1]: ", "alias *l inside anchored value &l")


def test_aliases_copying_too_much(tmp_path):
    size = MAX_ALIAS_NODES // 4
    text = BASE + f"big: &big [{', '.join(['0'] * size)}]\n" + "".join(f"copy{k}: *big\n" for k in range(5))
    path = write(tmp_path, text)
    refused(path, f":{BASE.count(chr(10)) + 5}: copy3: ", f"aliases copy more than the limit of {MAX_ALIAS_NODES} nodes")


def test_shipped_style_aliases_still_load(tmp_path):
    text = BASE.replace('    operands:\n', '    notes: &n ["shared note"]\n    operands:\n', 1)
    text = text.replace('      a: {type: b16, layout: t.A, fragment: b16}',
                        '      a: &op {type: b16, layout: t.A, fragment: b16}').replace(
                        '      d: {type: b16, layout: t.A, fragment: b16}', '      d: *op')
    path = write(tmp_path, text)
    assert "*op" in text and list(load_file(path).variants)


def test_yaml_nested_too_deep(tmp_path):
    path = write(tmp_path, BASE + "deep: " + "[" * 5000 + "]" * 5000 + "\n")
    refused(path, f":{BASE.count(chr(10)) + 1}: deep", f"nests deeper than the limit of {MAX_YAML_DEPTH}")


def test_yaml_too_many_nodes(tmp_path):
    path = write(tmp_path, BASE + "many: [" + "0, " * MAX_YAML_NODES + "0]\n")
    refused(path, f":{BASE.count(chr(10)) + 1}: many[", f"more than the limit of {MAX_YAML_NODES} YAML nodes")


@pytest.mark.parametrize("extra, field, gist", [
    ("? [a, b]\n: 1\n", "", "a key must be a plain value"),
    ("x: !!python/name:os.system ''\n", "x: ", "bad value"),
    ("x: " + "9" * 5000 + "\n", "x: ", "bad value"),
], ids=["list-key", "python-tag", "5000-digit-int"])
def test_bad_yaml_values(tmp_path, extra, field, gist):
    path = write(tmp_path, BASE + extra)
    with pytest.raises(SpecError, match=gist) as info:
        load_file(path)
    assert str(info.value).startswith(f"{path}:{BASE.count(chr(10)) + 1}: {field}")


# -- files ---------------------------------------------------------------------


def test_oversized_file(tmp_path):
    path = write(tmp_path, BASE)
    with path.open("r+b") as f:  # sparse: refused on its size, before a byte is read
        f.truncate(MAX_SPEC_BYTES + 1)
    refused(path, ": ", f"limit of {MAX_SPEC_BYTES >> 20} MiB")


def test_file_at_size_limit_is_read(tmp_path):
    pad = MAX_SPEC_BYTES - len(BASE.encode()) - 1
    path = write(tmp_path, BASE + "#" * pad + "\n")
    assert path.stat().st_size == MAX_SPEC_BYTES
    assert list(load_file(path).variants)


def test_not_utf8(tmp_path):
    path = tmp_path / "spec.yaml"
    path.write_bytes(BASE.encode() + b"x: \xff\n")
    with pytest.raises(SpecError, match="not UTF-8") as info:
        load_file(path)
    assert str(info.value).startswith(f"{path}:{BASE.count(chr(10)) + 1}: ")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs os.mkfifo")
def test_fifo_is_refused_not_read(tmp_path):
    path = tmp_path / "spec.yaml"
    os.mkfifo(path)  # reading it would block forever
    refused(path, ": ", "not a regular file")
