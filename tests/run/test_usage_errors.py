"""Every command's usage errors: exit status 2, one line on stderr, no traceback, before any work.

Every leaf command of the parser is reached (an unknown option), then each case of the audit: ranges (``--cases``,
``--jobs``, ``--seed``, ``--budget``, numerics words), empty ``--select``, paths that cannot be written, ``--force``
over a symlinked ``observations/``, ``replay --out`` on the run itself, a ptxas release that is not installed, and
missing optional packages ("install X").  All in this process through the CLI's ``main``, so the file runs in seconds.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import sys
from pathlib import Path

import pytest
from ptxconf.cli import main as cli_main
from ptxconf.cli.main import build_parser

V = "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
NO_PYCUDA = importlib.util.find_spec("pycuda") is None


def _leaves(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
    if sub is None:
        return [prefix]
    return [leaf for name, p in sub.choices.items() for leaf in _leaves(p, (*prefix, name))]


LEAVES = _leaves(build_parser())


def _usage(capsys, argv: list[str]) -> str:
    """Run ``ptxconf ARGV``; assert exit status 2 and one line on stderr, no traceback; the line."""
    try:
        rc = cli_main(argv)
    except SystemExit as exc:  # argparse's own errors exit
        rc = exc.code
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert rc == 2, f"ptxconf {' '.join(argv)}: exit {rc}, stderr {err!r}"
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_every_command_is_reached():
    assert len(LEAVES) >= 50
    assert {("run",), ("replay",), ("specs", "where"), ("cache", "clear"), ("wgmma", "desc", "encode")} <= set(LEAVES)


@pytest.mark.parametrize("leaf", LEAVES, ids=" ".join)
def test_an_unknown_option_is_one_line_for_every_command(leaf, capsys):
    line = _usage(capsys, [*leaf, "--no-such-option"])
    assert line.startswith(f"ptxconf {' '.join(leaf)}: error:") and "--help" in line


ISSUE_CASES = {
    "cases huge": (["run", "--select", V, "--cases", "10000000"], "--cases must be at most 100000, not 10000000"),
    "cases zero": (["run", "--select", V, "--cases", "0"], "--cases must be at least 1, not 0"),
    "jobs huge": (["run", "--select", V, "--jobs", "1000"], "--jobs must be at most 256, not 1000"),
    "jobs -1": (["run", "--select", V, "--jobs", "-1"], "--jobs must be at least 1, not -1"),
    "seed -5": (["run", "--select", V, "--seed", "-5"], "--seed must be at least 0, not -5"),
    "device cases 0": (["run", "--select", V, "--values", "device", "--device-cases", "0"],
                       "--device-cases must be at least 1, not 0"),
    "device workers 0": (["run", "--select", V, "--values", "device", "--device-workers", "0"],
                         "--device-workers must be at least 1, not 0"),
    "select empty": (["run", "--select", ""], "--select '': an empty pattern"),
    "fuzz budget -1": (["fuzz", "layouts", "--budget", "-1"], "ptxconf fuzz layouts: --budget must be a positive number of seconds, not -1"),
    "fuzz seed -3": (["fuzz", "layouts", "--seed", "-3"], "--seed must be at least 0, not -3"),
    "fuzz case seed": (["fuzz", "case", V, "--seed", "-1", "--case", "0"], "ptxconf fuzz case: --seed must be at least 0, not -1"),
    "numerics budget": (["fuzz", "numerics", "--budget", "-1"], "--budget must be a positive number of seconds, not -1"),
    "edges budget": (["numerics", "edges", "--budget", "nan"], "--budget must be a positive number of seconds, not nan"),
    "programs budget": (["programs", "fuzz", "--budget", "-2", "--out", "p"], "not -2"),
    "diff limit": (["diff", "a", "b", "--limit", "-1"], "--limit must be at least 0, not -1"),
    "dot zz": (["numerics", "dot", V, "--a", "zz", "--b", "0x3c00"], "--a 'zz': not an integer"),
    "dot -1": (["numerics", "dot", V, "--a", "-1", "--b", "0x3c00"], "--a -1: outside the 16 bits of .bf16"),
    "dot masked": (["numerics", "dot", V, "--a", "0x13c00", "--b", "0x3c00"], "--a 0x13c00: outside the 16 bits"),
    "dot c": (["numerics", "dot", V, "--a", "1", "--b", "1", "--c", "0x1ffffffff"], "--c 0x1ffffffff: outside the 32"),
    "figure suffix": (["specs", "figure", V, "--operand", "A", "-o", "a.txt"], "must end in .svg or .png"),
}


@pytest.mark.parametrize("case", ISSUE_CASES)
def test_ranges_and_values_are_checked_before_any_work(case, capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    argv, expected = ISSUE_CASES[case]
    assert expected in _usage(capsys, argv)
    assert not any(tmp_path.iterdir()), "nothing is written before the arguments are checked"


def _unwritable(tmp_path: Path) -> list[str]:
    """Paths nobody can write, root included: under a regular file, and in /proc."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    return [str(blocker / "x"), "/proc/ptxconf-no/x"]


@pytest.mark.parametrize("option", ["--out", "--junit"])
def test_run_output_paths_that_cannot_be_written_are_refused_before_the_run(option, capsys, tmp_path):
    for path in _unwritable(tmp_path):
        extra = [option, path] if option == "--out" else ["--out", str(tmp_path / "run"), option, path]
        line = _usage(capsys, ["run", "--backend", "emulator", "--select", V, *extra])
        assert f"{option} {path}: cannot write here" in line
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("argv", [["specs", "figure", V, "--operand", "A", "-o"], ["replay", "somewhere", "--out"],
                                  ["discover", V, "-o"], ["numerics", "pin", "somewhere", "--out"],
                                  ["hgemm", "ptx", "mma.m16n8k16.f16", "-o"], ["wgmma", "figures", "-o"]],
                         ids=lambda a: " ".join(a[:2]))
def test_every_output_option_is_checked(argv, capsys, tmp_path):
    path = _unwritable(tmp_path)[0] + (".svg" if argv[0] == "specs" else "")
    assert "cannot write here" in _usage(capsys, [*argv, path])


def test_force_over_a_symlinked_observations_folder_deletes_nothing(capsys, tmp_path):
    run, elsewhere = tmp_path / "run", tmp_path / "elsewhere"
    run.mkdir()
    elsewhere.mkdir()
    (elsewhere / "precious.npz.zst").write_bytes(b"keep")
    (run / "results.jsonl").write_text('{"variant": "v"}\n')
    (run / "observations").symlink_to(elsewhere)
    line = _usage(capsys, ["run", "--backend", "emulator", "--select", V, "--out", str(run), "--force"])
    assert "observations is a symlink" in line
    assert (run / "results.jsonl").exists() and (elsewhere / "precious.npz.zst").read_bytes() == b"keep"


def test_replay_refuses_to_write_into_the_run_it_replays(capsys, tmp_path):
    (tmp_path / "observations").mkdir()
    line = _usage(capsys, ["replay", str(tmp_path), "--out", str(tmp_path / "." / "")])
    assert "is the recorded run itself" in line


def test_numerics_pin_makes_its_out_folder_before_the_work(capsys, tmp_path):
    new = tmp_path / "new" / "dir"
    line = _usage(capsys, ["numerics", "pin", str(tmp_path / "no-run"), "--out", str(new)])
    assert "not a recorded numerics run" in line and new.is_dir()


def test_a_ptxas_release_that_is_not_installed_is_one_line(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("PTXCONF_TOOLCHAINS_DIR", str(tmp_path / "none"))
    for argv in (["wgmma", "assemble"], ["run", "--select", V], ["assemble"], ["programs", "fuzz", "--out", "p"]):
        line = _usage(capsys, [*argv, "--ptxas", "13.5"])
        assert "--ptxas: ptxas 13.5 is not installed" in line, line


@pytest.mark.skipif(not NO_PYCUDA, reason="PyCUDA is installed here: --backend pycuda would run")
@pytest.mark.parametrize("argv", [["bench"], ["discover", V], ["wgmma", "reuse"], ["wmma-observe"],
                                  ["run", "--select", V], ["numerics", "measure", V], ["fuzz", "layouts"]],
                         ids=lambda a: a[0])
def test_backend_pycuda_without_pycuda_says_install_it(argv, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert "--backend pycuda needs pycuda: install pycuda" in _usage(capsys, [*argv, "--backend", "pycuda"])


@pytest.mark.skipif(not NO_PYCUDA, reason="a GPU backend may be picked by --backend auto here")
def test_wmma_observe_on_the_emulator_is_one_line(capsys, tmp_path):
    line = _usage(capsys, ["wmma-observe", "-o", str(tmp_path / "w")])
    assert "observes the hardware" in line


@pytest.mark.skipif(importlib.util.find_spec("cupy") is not None, reason="CuPy is installed here")
def test_hgemm_run_without_cupy_says_install_it(capsys, tmp_path):
    assert "install cupy" in _usage(capsys, ["hgemm", "run", "--out", str(tmp_path / "h")])
    assert not (tmp_path / "h").exists()


def test_values_on_the_device_without_cupy_says_install_it(capsys, tmp_path, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "cupy" else real("numpy"))
    line = _usage(capsys, ["run", "--select", V, "--backend", "pycuda", "--values", "device", "--out", str(tmp_path / "r")])
    assert "--values device on a GPU needs cupy: install cupy" in line
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("argv", [["specs", "figure", V, "--operand", "A", "-o", "{}/a.svg"],
                                  ["wgmma", "figures", "-o", "{}/w"]], ids=lambda a: a[0])
def test_drawing_without_matplotlib_says_install_it(argv, capsys, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now fails as in a bare install
    line = _usage(capsys, [a.format(tmp_path) for a in argv])
    assert "needs matplotlib: install matplotlib" in line


def test_run_starts_no_more_workers_than_variants():
    from ptxconf.cli.run import _jobs

    assert _jobs(32, 5) == 5 and _jobs(32, 1) == 2 and _jobs(1, 50) == 1 and _jobs(4, 50) == 4


LDM = "ldmatrix.sync.aligned.m8n8.x1.b16"


@pytest.mark.parametrize("args, words", [
    (["--row", "99", "--col", "0"], "--row 99: " + LDM + " operand fragment has rows 0..7"),
    (["--row", "0", "--col", "99"], "has cols 0..7"),
    (["--row", "0", "--col", "0", "--matrix", "3"], "has matrices 0..0"),
    (["--row", "-1", "--col", "0"], "--row -1"),
    (["--lane", "40"], "has lanes 0..31"),
    (["--lane", "0", "--element", "9"], "has elements 0..1"),
    (["--row", "1"], "give --row and --col"),
])
def test_specs_where_out_of_range_is_one_line(args, words, capsys):
    assert words in _usage(capsys, ["specs", "where", LDM, "--operand", "fragment", *args])


def test_specs_where_unknown_variant_or_operand_is_one_line(capsys):
    assert "unknown variant 'nosuch'" in _usage(capsys, ["specs", "where", "nosuch", "--operand", "A", "--row", "0",
                                                         "--col", "0"])
    assert "has no operand 'Q'; it has rowaddr, fragment" in _usage(
        capsys, ["specs", "where", LDM, "--operand", "Q", "--row", "0", "--col", "0"])


def test_specs_where_in_range_answers(capsys):
    assert cli_main(["specs", "where", LDM, "--operand", "fragment", "--lane", "3", "--element", "1"]) == 0
    assert "matrix 0, row 0, col 7" in capsys.readouterr().out


def test_commands_are_registered_one_way():
    """Every group of verbs is made by ``Commands.group`` (ptxconf.cli.main), whichever module adds to it: no other
    module makes argparse subparsers of its own."""
    root = Path(__file__).resolve().parents[2] / "conformance"
    makers = sorted(str(path.relative_to(root)) for path in root.rglob("*.py")
                    for node in ast.walk(ast.parse(path.read_text()))
                    if isinstance(node, ast.Attribute) and node.attr == "add_subparsers")
    assert makers == ["cli/main.py", "cli/main.py"], makers
