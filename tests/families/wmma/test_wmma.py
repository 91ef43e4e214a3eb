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

from conformance.families.wmma.observe import build_cases, infer_load, infer_store, summarize
from conformance.families.wmma.probe import _BYTES, forms, module_source

FORMS = forms()
RESULTS = Path(__file__).resolve().parents[3] / "results" / "h100-wmma" / "observed_wmma.json"


def _simulate(f, pad, truth, in_words, digits):
    dt = {1: np.uint8, 2: np.uint16, 4: np.uint32}[_BYTES[f.type]]
    out = np.zeros_like(in_words)
    for d in range(digits):
        if f.op == "load":
            image = in_words[d].reshape(-1).view(np.uint8).view(dt)
            regs = image[f.offset(truth[..., 1], truth[..., 2], pad)].astype(dt)
            out[d, :, : f.registers] = regs.view(np.uint32).reshape(32, f.registers)
        else:
            slots = in_words[d][:, : f.registers].copy().view(dt).reshape(32, f.elements)
            image = out[d].reshape(-1).view(np.uint8).view(dt)
            image[f.offset(truth[..., 1], truth[..., 2], pad).ravel()] = slots.ravel()
    return out


@pytest.mark.parametrize("form", FORMS, ids=lambda f: f.id)
def test_inference_recovers_a_random_layout(form):
    rng = np.random.default_rng(len(form.id))
    rows, cols = form.dims
    pad = 16 // _BYTES[form.type]
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
    src.write_text(module_source([(f, 16 // _BYTES[f.type]) for f in FORMS]))
    r = subprocess.run(["ptxas", "-arch=sm_90", str(src), "-o", str(tmp_path / "o.cubin")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


@pytest.mark.skipif(not RESULTS.exists(), reason="no recorded wmma observation in results/h100-wmma")
def test_recorded_h100_observation_is_complete():
    doc = json.loads(RESULTS.read_text())
    assert doc["device"]["gpu"] and doc["device"]["driver"]
    observed = {f["form"]: f for f in doc["forms"]}
    assert set(observed) == {f.id for f in FORMS}
    for f in FORMS:
        entry = observed[f.id]
        assert "error" not in entry, entry
        cells = {(r, c) for _, _, r, c in entry["map"]}
        assert len(cells) == f.dims[0] * f.dims[1], f.id  # every cell reached a register (or memory)
