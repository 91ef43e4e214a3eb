"""The whole suite as recorded on an H100 in one command (results/h100-suite) replays under today's specs.

The recorded observations kept in the repository are those no earlier recorded run covers: sparse
wgmma (the N = 16 forms of each type and A source) here, and a twelfth of the wmma forms in
results/h100-wmma-run (the wmma rerun after its alignment and .version findings: all 300 forms pass).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from ptxconf.isa import load_specs
from ptxconf.run.replay import replay_dir

SUITE = Path(__file__).resolve().parents[2] / "results" / "h100-suite"
WMMA = SUITE.parent / "h100-wmma-run"
pytestmark = pytest.mark.skipif(not (SUITE / "observations").exists(), reason="no recorded whole-suite run")


def test_summary_says_what_ran_where():
    s = json.loads((SUITE / "summary.json").read_text())
    assert s["status"] == "complete" and s["variants_done"] == s["variants_selected"]
    assert s["device"]["gpu"].startswith("NVIDIA H100") and s["device"]["compute_capability"] == "9.0"
    assert s["command"].startswith("ptxconf run --backend pycuda")
    assert "/" not in s["command"].split("--out", 1)[1].strip()  # no machine path in the command
    records = [json.loads(line) for line in gzip.open(SUITE / "results.jsonl.gz", "rt")]
    assert sum(r["status"] == "pass" for r in records) == s["counts"]["pass"]
    assert not [r for r in records if r["status"] in ("fail", "error")]
    first = json.loads((SUITE.parent / "h100-suite-r1" / "summary.json").read_text())
    assert first["counts"]["error"] == 220 and set(first["failures"]) <= {r["variant"] + ":" + r["check"] + ":seed=0"
                                                                         for r in records if r["family"] == "wmma"}


def test_recorded_observations_replay(tmp_path, capsys):
    assert replay_dir(load_specs(), SUITE, quiet=True, out=tmp_path / "replay") == 0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert "0 failed, 0 errors" in line
    families = {json.loads(x)["family"] for x in (tmp_path / "replay" / "results.jsonl").read_text().splitlines()}
    assert families == {"wgmma.sp"}


def test_wmma_rerun_passes_every_form_and_replays(tmp_path):
    s = json.loads((WMMA / "summary.json").read_text())
    assert s["status"] == "complete" and s["counts"] == {"pass": 1200} and s["variants_done"] == 300
    assert replay_dir(load_specs(), WMMA, quiet=True, out=tmp_path / "replay") == 0


DEVICE = SUITE.parent / "h200-device-values" / "run"


def test_value_checks_made_on_an_h200_replay_from_their_digests(tmp_path, capsys):
    """A ``--values device`` run on an H200: its value checks (the device's cases, kept as digests) are drawn again
    and predicted here, every digest against the one the GPU's words gave; its other checks replay from their words."""
    s = json.loads((DEVICE / "summary.json").read_text())
    assert s["status"] == "complete" and s["device"]["gpu"] == "NVIDIA H200"
    assert "--values device --device-cases 64" in s["command"]
    lines = (DEVICE / "observations" / "device_values.jsonl").read_text().splitlines()
    assert len(lines) > 40 and all(json.loads(x)["cases"] == 64 for x in lines)
    assert replay_dir(load_specs(), DEVICE, quiet=True, out=tmp_path / "replay", jobs=2) == 0
    assert f"{s['counts']['pass']} passed, 0 failed, 0 errors" in capsys.readouterr().out
