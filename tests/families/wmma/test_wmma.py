"""wmma.load/store observation: probes assemble, and inference recovers a known layout.

No emulator can run wmma (the ISA specifies no layout to follow), so the
inference is checked against a simulated device with a random, duplicating
layout; the real observations come from the GPU (results/h100-wmma).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from ptxconf.families.wmma.memory import read_matrix, write_matrix
from ptxconf.families.wmma.observe import (
    build_cases,
    compare_observations,
    forms,
    infer_load,
    infer_store,
    module_source,
    summarize,
)
from ptxconf.isa.loader import load_file

SPEC = Path(__file__).resolve().parents[3] / "specs" / "wmma.yaml"
FORMS = forms(load_file(SPEC).documents["wmma"])
RESULTS = Path(__file__).resolve().parents[3] / "results" / "h100-wmma" / "observed_wmma.json"


def _simulate(f, pad, truth, in_words, digits):
    """A device with the layout ``truth``: loads gather tagged cells, stores scatter tagged slots."""
    out = np.zeros_like(in_words)
    rows, cols = f.dims
    for d in range(digits):
        if f.op == "load":
            image = np.ascontiguousarray(in_words[d], dtype="<u4").reshape(-1).view(np.uint8)
            cells = read_matrix(image, 0, rows, cols, f.layout, f.stride(pad), f.bits)
            regs = cells[truth[..., 1], truth[..., 2]]
            lanes = np.zeros((32, 4 * in_words.shape[-1]), dtype=np.uint8)
            for lane in range(32):
                write_matrix(lanes[lane], 0, regs[lane : lane + 1], "row", f.elements, f.bits)
            out[d] = lanes.view("<u4").reshape(32, -1)
        else:
            lanes = np.ascontiguousarray(in_words[d], dtype="<u4").view(np.uint8).reshape(32, -1)
            slots = np.stack([read_matrix(lanes[ln], 0, 1, f.elements, "row", f.elements, f.bits)[0] for ln in range(32)])
            cells = np.zeros((rows, cols), dtype=np.uint64)
            cells[truth[..., 1].ravel(), truth[..., 2].ravel()] = slots.ravel()
            image = np.zeros(4 * out[d].size, dtype=np.uint8)
            write_matrix(image, 0, cells, f.layout, f.stride(pad), f.bits)
            out[d] = image.view("<u4").reshape(out[d].shape)
    return out


def test_every_load_store_form_is_observed():
    assert len(FORMS) == 114
    assert {f.type for f in FORMS} >= {"s4", "u4", "b1", "f64", "tf32"}


@pytest.mark.parametrize("form", FORMS, ids=lambda f: f.id)
def test_inference_recovers_a_random_layout(form):
    rng = np.random.default_rng(len(form.id))
    rows, cols = form.dims
    pad = form.pad_unit()
    cells = rng.permutation(np.resize(np.arange(rows * cols), 32 * form.elements))
    truth = np.stack([np.zeros_like(cells), *np.divmod(cells, cols)], -1).reshape(32, form.elements, 3)
    in_words, digits = build_cases(form, pad)
    m = (infer_load if form.op == "load" else infer_store)(form, pad, _simulate(form, pad, truth, in_words, digits))
    held = m[..., 0] >= 0
    if form.op == "load":
        assert held.all() and np.array_equal(m, truth)
    else:  # of duplicated slots only the last writer of a cell is observable
        assert np.array_equal(m[held], truth[held]) and held.sum() >= rows * cols
    assert summarize(form, m)["tile"] == [rows, cols]


@pytest.mark.ptxas
@pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas not on PATH")
def test_every_probe_assembles(tmp_path):
    src = tmp_path / "wmma.ptx"
    src.write_text(module_source([(f, f.pad_unit()) for f in FORMS], "7.0", "sm_80"))
    r = subprocess.run(["ptxas", "-arch=sm_90", str(src), "-o", str(tmp_path / "o.cubin")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


@pytest.mark.skipif(not RESULTS.exists(), reason="no recorded wmma observation in results/h100-wmma")
def test_recorded_h100_observation_is_complete():
    doc = json.loads(RESULTS.read_text())
    assert doc["device"]["gpu"] and doc["device"]["driver"]
    observed = {f["form"]: f for f in doc["forms"]}
    assert set(observed) <= {f.id for f in FORMS}  # recorded before the spec's sub-byte, tf32 and f64 forms
    for f in (f for f in FORMS if f.id in observed):
        entry = observed[f.id]
        assert "error" not in entry, entry
        cells = {(r, c) for _, _, r, c in entry["map"]}
        assert len(cells) == f.dims[0] * f.dims[1], f.id  # every cell reached a register (or memory)


def test_a_changed_distribution_is_reported_not_failed():
    before = {"forms": [{"form": "x", "map": [[0, 0, 0, 0], [1, 0, 0, 1]]}, {"form": "y", "map": [[0, 0, 0, 0]]},
                        {"form": "gone", "map": []}]}
    now = {"forms": [{"form": "x", "map": [[1, 0, 0, 1], [0, 0, 0, 0]]}, {"form": "y", "map": [[0, 0, 1, 0]]},
                     {"form": "new", "map": []}]}
    assert compare_observations(before, now) == {"same": ["x"], "changed": ["y"], "new": ["new"], "missing": ["gone"]}
