"""ldmatrix / stmatrix / movmatrix: spec invariants, literal maps, emulator runs, replay, composition."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from ptxconf.families.movement import probe as mv
from ptxconf.families.movement.compare import compose, where
from ptxconf.isa.loader import load_specs
from ptxconf.run.replay import replay_dir

SPECS = load_specs()
FORMS = [v for v in SPECS.variants.values() if mv.is_movement(v)]
F16 = "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16"


def test_form_counts():
    fams = [v.family for v in FORMS]
    assert (fams.count("ldmatrix"), fams.count("stmatrix"), fams.count("movmatrix")) == (18, 9, 1)


@pytest.mark.parametrize("v", [v for v in FORMS if v.family != "movmatrix"], ids=lambda v: v.id)
def test_invariants(v):
    rl = mv.row_lanes(v)
    assert (rl >= 0).all() and len(set(rl.ravel())) == rl.size  # one lane per row address
    op = v.operands["fragment"]
    m = op.layout.map()
    cells = {tuple(x) for x in m.reshape(-1, 3)}
    assert len(cells) == 32 * op.layout.elements  # every cell held once
    assert op.registers == {"x1": 1, "x2": 2, "x4": 4}[v.id.split(".")[4]] * (2 if ".m16n16." in v.id else 1)
    assert 16 * 8 == (8 if mv.mem_bits(v) == 16 else 16) * mv.mem_bits(v) + {16: 0, 8: 0, 6: 32, 4: 64}[mv.mem_bits(v)]


def test_literal_m8n8_maps():
    # ISA text: a group of four threads holds one row; thread 0 the first fragment; .trans transposes.
    plain = SPECS.get("ldmatrix.sync.aligned.m8n8.x4.b16").operands["fragment"].layout.map()
    trans = SPECS.get("ldmatrix.sync.aligned.m8n8.x4.trans.b16").operands["fragment"].layout.map()
    for lane in range(32):
        for i in range(8):
            assert tuple(plain[lane, i]) == (i // 2, lane // 4, 2 * (lane % 4) + i % 2)
            assert tuple(trans[lane, i]) == (i // 2, 2 * (lane % 4) + i % 2, lane // 4)
    ra = SPECS.get("ldmatrix.sync.aligned.m8n8.x2.b16").operands["rowaddr"].layout.map()
    assert [tuple(ra[ln, 0]) for ln in (0, 7, 8, 15)] == [(0, 0, 0), (0, 7, 0), (1, 0, 0), (1, 7, 0)]
    assert (ra[16:, 0, 0] == -1).all()
    mov = SPECS.get("movmatrix.sync.aligned.m8n8.trans.b16").operands
    assert tuple(mov["d"].layout.map()[5, 1]) == (0, 3, 1)  # lane 5 gets source row 2*1+1, col 5//4


def test_literal_m8n16_and_m16n16():
    m = SPECS.get("ldmatrix.sync.aligned.m8n16.x1.b8x16.b4x16_p64").operands["fragment"]
    assert tuple(m.layout.map()[6, 3]) == (0, 1, 11)
    assert m.fragment.value_shift == 2
    ra = SPECS.get("ldmatrix.sync.aligned.m16n16.x1.trans.b8").operands["rowaddr"].layout.map()
    assert (ra[:16, 0, 1] == np.arange(16)).all() and (ra[16:, 0, 0] == -1).all()


def test_emulator_run_and_trans_misstated_replay(tmp_path, capsys):
    from ptxconf.cli import main

    out = tmp_path / "run"
    rc = main(["run", "--backend", "emulator", "--select", "ldmatrix*", "--select", "stmatrix*",
               "--select", "movmatrix*", "--out", str(out), "--quiet"])
    assert rc == 0
    assert replay_dir(SPECS, out, quiet=True) == 0
    # mis-state .trans: the plain x4 form given the transposed layout
    bad = tmp_path / "specs"
    shutil.copytree(Path(SPECS.files[0]).parent, bad)
    text = (bad / "ldmatrix.yaml").read_text()
    text = text.replace('fragment: {type: b16, layout: "m8n8{trans}.b16.{num}"', 'fragment: {type: b16, layout: "m8n8.trans.b16.{num}"')
    (bad / "ldmatrix.yaml").write_text(text)
    capsys.readouterr()
    assert replay_dir(load_specs(bad), out, quiet=False, out=tmp_path / "replayed") == 1
    details = capsys.readouterr().out
    assert "ldmatrix.sync.aligned.m8n8.x1.b16" in details and "observed lane map differs" in details and "lane 1 element 0: spec" in details


@pytest.mark.skipif(not (Path("results/h100-ldmatrix") / "observations").exists(), reason="no recorded H100 ldmatrix run yet")
def test_recorded_h100_replays():
    assert replay_dir(SPECS, Path("results/h100-ldmatrix"), quiet=True) == 0


def test_composition_m16n8k16_f16_pinned():
    v = SPECS.get(F16)
    a = compose(SPECS, v, "A", "row-major")
    assert a.form == "ldmatrix.sync.aligned.m8n8.x4.b16"
    assert all(a.lanes[ln] == (ln % 16, 8 * (ln // 16)) for ln in range(32))
    a = compose(SPECS, v, "A", "col-major")
    assert a.form == "ldmatrix.sync.aligned.m8n8.x4.trans.b16"
    assert all(a.lanes[ln] == (8 * ((ln >> 3) & 1), (ln & 7) + 8 * (ln >> 4)) for ln in range(32))
    b = compose(SPECS, v, "B", "row-major")
    assert b.form == "ldmatrix.sync.aligned.m8n8.x2.trans.b16"
    assert b.lanes == {ln: (ln, 0) for ln in range(16)}
    b = compose(SPECS, v, "B", "col-major")
    assert b.form == "ldmatrix.sync.aligned.m8n8.x2.b16"
    assert b.lanes == {ln: (8 * (ln >> 3), ln & 7) for ln in range(16)}
    d = compose(SPECS, v, "D", "row-major")
    assert d.form == "stmatrix.sync.aligned.m8n8.x2.b16" and d.lanes == {ln: (ln, 0) for ln in range(16)}
    assert compose(SPECS, SPECS.get("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"), "D", "row-major").form is None


def test_where_and_inverse():
    op = SPECS.get(F16).operands["A"]
    assert where(op, 9, 3) == [(5, 1, 1, 3)]


@pytest.mark.ptxas
@pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas not on PATH")
def test_probes_assemble(tmp_path):
    from ptxconf.isa.targets import PtxVersion, parse_target

    for v in FORMS:
        tgt = "sm_90" if v.min_target.name in ("sm_75", "sm_90") else "sm_100a"
        for space in mv.SPACES:
            src = mv.module_source([mv.MoveProbe(v, space)], max(v.min_ptx, PtxVersion(7, 8)), parse_target(tgt))
            f = tmp_path / "p.ptx"
            f.write_text(src)
            r = subprocess.run(["ptxas", f"-arch={tgt}", str(f), "-o", str(tmp_path / "p.cubin")], capture_output=True, text=True)
            assert r.returncode == 0, (v.id, space, r.stderr)
