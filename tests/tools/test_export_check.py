"""``ptxconf check layout`` and the ``export layout`` command line: a user's layout against the spec and the
recorded hardware maps, the first differing lane named; exit 0 / 1 / 2; no traceback on bad input."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
from ptxconf.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
MMA = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
A_CUTE = "((4,8),(2,2,2)):((32,1),(16,8,128))"
WG_RS = "wgmma.mma_async.sync.aligned.m64n24k16.f32.f16.f16/rs"


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_right_cute_layout_agrees_with_spec_and_every_recorded_run(capsys):
    code, out, _ = run(capsys, "check", "layout", "--cute", A_CUTE, MMA, "--operand", "A", "--runs", str(ROOT / "results"))
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "agrees with the spec (256 slots)"
    assert len(lines) >= 2 and all(ln.startswith(("agrees with run h100", "agrees with run h200")) for ln in lines[1:])  # the runs that kept maps


def test_cpp_form_is_read_too(capsys):
    text = "Layout<Shape<Shape<_4,_8>,Shape<_2,_2,_2>>,Stride<Stride<_32,_1>,Stride<_16,_8,_128>>>"
    code, out, _ = run(capsys, "check", "layout", "--cute", text, MMA, "--operand", "A", "--runs", "/nonexistent")
    assert code == 0 and out.strip() == "agrees with the spec (256 slots)"


def test_wrong_cute_layout_is_caught_naming_the_lane(capsys):
    wrong = "((4,8),(2,2,2)):((32,1),(16,128,8))"  # value modes 1 and 2 swapped: element 2 goes wrong first
    code, out, _ = run(capsys, "check", "layout", "--cute", wrong, MMA, "--operand", "A", "--runs", "/nonexistent")
    assert code == 1
    assert "first: A lane 0 element 2 (register 1): spec (row 8, col 0), layout (row 0, col 8)" in out


def test_wrong_linear_layout_is_caught_naming_the_lane(capsys, tmp_path):
    assert main(["export", "layout", WG_RS, "--operand", "A", "--as", "linear"]) == 0
    doc = json.loads(capsys.readouterr().out)
    doc["fragment"]["bases"]["lane"][2] = [3, 0]  # lane bit 2 (lanes 4..7, ...) lands one row too low
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(doc))
    code, out, _ = run(capsys, "check", "layout", "--linear", str(path), WG_RS, "--operand", "A", "--runs", "/x")
    assert code == 1
    assert "first: A lane 4 element 0 (register 0): spec (row 1, col 0), layout (row 3, col 0)" in out
    doc["fragment"]["bases"]["lane"][2] = [1, 0]
    path.write_text(json.dumps(doc))
    assert run(capsys, "check", "layout", "--linear", str(path), WG_RS, "--operand", "A", "--runs", "/x")[0] == 0


def test_a_recorded_map_that_differs_is_named(capsys, tmp_path):
    """A run whose observed map moved one slot: the spec agrees, the recorded run does not."""
    run_dir = tmp_path / "runs" / "gpu-x"
    run_dir.mkdir(parents=True)
    from ptxconf.isa import load_specs

    spec = load_specs().get(MMA).operands["A"].layout.map()
    seen = spec.copy()
    seen[[9, 9], [3, 2]] = seen[[9, 9], [2, 3]]  # lane 9 elements 2 and 3 swapped
    buf = io.BytesIO()
    np.savez_compressed(buf, **{f"{MMA}|A": seen})
    (run_dir / "observed_maps.npz").write_bytes(buf.getvalue())
    (run_dir / "observed_maps.json").write_text(json.dumps({"device": {"gpu": "GPU X", "driver": "1.0"}}))
    code, out, _ = run(capsys, "check", "layout", "--cute", A_CUTE, MMA, "--operand", "A", "--runs",
                       str(tmp_path / "runs"))
    assert code == 1
    assert out.splitlines()[0] == "agrees with the spec (256 slots)"
    assert ("differs from run gpu-x (GPU X, driver 1.0) in 2 slot(s); first: A lane 9 element 2 (register 1): "
            "observed[gpu-x] (row 10, col 3), layout (row 10, col 2)") in out


@pytest.mark.parametrize("argv, says", [
    (["--cute", "((4,8),(2,2)):((32,1),(16,8)", MMA, "--operand", "A"], "--cute: expected )"),
    (["--cute", "((4,8),(2,2)):((32,1),(16,8))", MMA, "--operand", "A"], "(thread 32, value 4); the operand has (thread 32, value 8)"),
    (["--cute", "((4,8),(2,2)):((32,1),(16,8,2))", MMA, "--operand", "A"], "not congruent"),
    (["--cute", A_CUTE, MMA, "--operand", "Q"], "has no operand 'Q'"),
    (["--cute", A_CUTE, "mma.sync.nope", "--operand", "A"], "unknown variant"),
    (["--linear", "/nonexistent.json", MMA, "--operand", "A"], "--linear: /nonexistent.json:"),
    (["--cute", A_CUTE, "wmma.load.a.sync.aligned.col.m16n16k16.bf16", "--operand", "A"], None),
])
def test_bad_input_is_one_line_and_exit_2(capsys, argv, says):
    code, out, err = run(capsys, "check", "layout", *argv, "--runs", "/nonexistent")
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    if says:
        assert says in err, err


def test_bad_linear_document_names_the_field(capsys, tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"bases": {"register": [[0, 1]], "lane": [[0]]}, "out_dims": {"row": 16, "col": 16}}))
    code, _, err = run(capsys, "check", "layout", "--linear", str(path), MMA, "--operand", "A", "--runs", "/x")
    assert code == 2 and ": field bases.lane[0]: expected 2 integers (row, col), found [0]" in err


def test_export_layout_exit_codes_and_reasons(capsys):
    sparse = "mma.sp.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16"
    code, out, err = run(capsys, "export", "layout", sparse, "--operand", "metadata", "--as", "cute")
    assert code == 0 and "# only 128 of 512 (thread, value) slots hold a value: the layout gives each" in out
    assert "((4,8),(8,2)):((0,1),(16,8))" in out.splitlines()  # selector 0: lanes 0, 4, ...; the rest don't-care
    code, _, err = run(capsys, "export", "layout", "wgmma.mma_async.sync.aligned.m64n24k16.f32.f16.f16/ss",
                       "--operand", "D", "--as", "linear")
    assert code == 1 and "register count 12 is not a power of two" in err
    code, out, err = run(capsys, "export", "layout", "wgmma.mma_async.sync.aligned.m64n24k16.f32.f16.f16/ss",
                         "--operand", "A", "--as", "cute")  # A from shared memory: the swizzle atoms
    assert code == 0 and "GMMA::Layout_K_SW128_Atom<16-bit>: Sw<3,4,3> o (8,64):(64,1) over (MN, K)" in out
    code, _, err = run(capsys, "export", "layout", "wmma.load.a.sync.aligned.col.m16n16k16.bf16", "--operand", "A",
                       "--as", "cute")
    assert code == 1 and "the ISA leaves this map unspecified" in err
    code, _, err = run(capsys, "export", "layout", MMA, "--operand", "A", "--as", "cute", "--param", "x=1")
    assert code == 2 and "not a legal assignment" in err
    code, out, _ = run(capsys, "export", "layout", sparse, "--operand", "metadata", "--as", "json", "--param",
                       "selector=1")
    assert code == 0 and json.loads(out)["fragment"]["params"] == {"selector": 1}


WG_SS = "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16/ss"


def test_user_swizzle_atoms_against_the_spec(capsys, tmp_path):
    """B of an /ss form is read from shared memory: a user's swizzle atoms are checked atom by atom."""
    assert main(["export", "layout", WG_SS, "--operand", "B", "--as", "linear"]) == 0
    doc = json.loads(capsys.readouterr().out)
    path = tmp_path / "sw.json"
    path.write_text(json.dumps(doc))
    code, out, _ = run(capsys, "check", "layout", "--linear", str(path), WG_SS, "--operand", "B")
    assert code == 0 and out.count("agrees with the spec") == 8  # K- and MN-major, four swizzles each
    mine = next(a for a in doc["smem"] if a["major"] == "K" and a["swizzle"] == "128B")
    mine["bases"]["offset"][6] = [0, 1]  # a 128-byte swizzle that forgets to XOR row 1's chunks
    path.write_text(json.dumps({"smem": [mine]}))
    code, out, _ = run(capsys, "check", "layout", "--linear", str(path), WG_SS, "--operand", "B")
    assert code == 1
    assert out.strip() == ("smem K-major swizzle 128B: differs from the spec at 256 element offset(s); first: "
                           "offset 64: spec (row 8, col 1), layout (row 0, col 1)")
    mine["swizzle"] = "256B"
    path.write_text(json.dumps({"smem": [mine]}))
    code, _, err = run(capsys, "check", "layout", "--linear", str(path), WG_SS, "--operand", "B")
    assert code == 2 and "smem atom K-major swizzle 256B: the operand has no such layout" in err
    code, _, err = run(capsys, "check", "layout", "--cute", A_CUTE, WG_SS, "--operand", "B")
    assert code == 2 and "is read from shared memory" in err
