"""Results say what produced them: a result made on the emulator says "emulator" where it is printed and recorded,
since the emulator computes from the specs and its "agrees" checks the tool, not the hardware."""

from __future__ import annotations

import json

from ptxconf.cli.main import main


def test_discover_on_the_emulator_says_so(tmp_path, capsys):
    vid = "mma.sync.aligned.m8n8k4.col.row.f16.f16.f16.f16"
    assert main(["discover", "--backend", "emulator", "-o", str(tmp_path), vid]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("1 agree") and "on the emulator (no hardware observed" in last
    doc = json.loads((tmp_path / "summary.json").read_text())
    assert doc["backend"] == "emulator" and "emulator" in doc["evidence"]


def test_a_run_on_the_emulator_says_so_before_its_verdicts(tmp_path, capsys):
    vid = "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
    assert main(["run", "--backend", "emulator", "--select", vid, "--cases", "1", "--jobs", "1",
                 "--out", str(tmp_path / "r")]) == 0
    err = capsys.readouterr().err
    assert "ptxconf run: on the emulator (NumPy emulator, compute capability 12.0)" in err
    assert json.loads((tmp_path / "r" / "summary.json").read_text())["device"]["backend"] == "emulator"
