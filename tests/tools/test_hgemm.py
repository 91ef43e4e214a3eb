"""HGEMM generated from the specs: assembles, its addressing reproduces A.B, it follows the spec."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest
from ptxconf.cli import main
from ptxconf.isa.loader import default_specs_dir, load_specs
from ptxconf.tools.hgemm import kernel as hg

SPECS = load_specs()
SMALL = hg.Config(64, 64, 32, 2, 2)
HAVE_PTXAS = shutil.which("ptxas") is not None


@pytest.mark.skipif(not HAVE_PTXAS, reason="ptxas not on PATH")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("variant", list(hg.VARIANTS))
def test_assembles(variant, arch, tmp_path):
    for b_tile in hg.TILES:
        src = tmp_path / f"{variant}.{b_tile}.ptx"
        src.write_text(hg.generate(hg.plan(SPECS, variant, b_tile=b_tile), arch))
        r = subprocess.run(["ptxas", f"-arch={arch}", "-v", str(src), "-o", str(tmp_path / "k.cubin")],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        assert "spill" not in r.stderr or "0 bytes spill stores" in r.stderr


@pytest.mark.parametrize("variant", list(hg.VARIANTS))
@pytest.mark.parametrize("tiles", [("row-major", "row-major"), ("col-major", "col-major")])
def test_emulation_exact(variant, tiles):
    rng = np.random.default_rng(1)
    p = hg.plan(SPECS, variant, *tiles, config=SMALL)
    A = rng.integers(-3, 4, (128, 64)).astype(float)
    B = rng.integers(-3, 4, (64, 128)).astype(float)
    assert np.array_equal(hg.emulate(SPECS, p, A, B), A @ B)


def test_addressing_comes_from_compose_and_d_layout():
    from ptxconf.families.movement.compare import compose

    p = hg.plan(SPECS, "f16.f32")
    v = p.variant
    c = compose(SPECS, v, "A", "row-major")
    assert p.a.form == c.form and {ln: p.a.lanes.at(ln) for ln in c.lanes} == c.lanes
    d = v.operands["D"].layout.map()
    assert all(tuple(d[ln, e, 1:]) == tuple(np.add(p.d.lanes.at(ln), p.d.deltas[e]))
               for ln in range(32) for e in range(4))
    ptx = hg.generate(p)
    assert "ldmatrix.sync.aligned.m8n8.x4.shared.b16" in ptx and "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16" in ptx
    assert "st.global.v2.f32" in ptx and v.id in ptx


def _edited_specs(tmp_path):
    """The specs with the mma A column halves swapped and the C/D row halves swapped."""
    d = tmp_path / "specs"
    shutil.copytree(default_specs_dir(), d)
    f = d / "mma_sync.yaml"
    text = f.read_text()
    old_a = 'col: "(threadID_in_group * 2) + (i & 0x1) if i < 4 else (threadID_in_group * 2) + (i & 0x1) + 8"'
    new_a = 'col: "(threadID_in_group * 2) + (i & 0x1) + 8 if i < 4 else (threadID_in_group * 2) + (i & 0x1)"'
    old_d = 'row: "groupID if i < 2 else groupID + 8"\n    col: "(threadID_in_group * 2) + (i & 0x1)"'
    new_d = 'row: "groupID + 8 if i < 2 else groupID"\n    col: "(threadID_in_group * 2) + (i & 0x1)"'
    assert text.count(old_a) == 1 and text.count(old_d) == 1
    f.write_text(text.replace(old_a, new_a).replace(old_d, new_d))
    return load_specs(d)


def test_spec_layout_change_changes_addressing(tmp_path):
    edited = _edited_specs(tmp_path)
    p0, p1 = hg.plan(SPECS, "f16.f16", config=SMALL), hg.plan(edited, "f16.f16", config=SMALL)
    assert p0.a.lanes.table()[0].tolist() == [0, 0] and p1.a.lanes.table()[0].tolist() == [0, 8]
    assert p0.d.deltas[0] == (0, 0) and p1.d.deltas[0] == (0, 0) and p1.d.lanes.base == (8, 0)
    t0, t1 = hg.generate(p0), hg.generate(p1)
    assert t0 != t1
    assert "mov.s32 %r15, 8;" in t1 and "mad.lo.s32 %r15, %lb4, -8, %r15;" in t1  # A col = 8 - 8*bit4
    assert "mov.s32 %r22, 8;" in t1  # D row of element 0 = groupID + 8
    rng = np.random.default_rng(2)
    A, B = rng.integers(-3, 4, (64, 64)).astype(float), rng.integers(-3, 4, (64, 64)).astype(float)
    assert np.array_equal(hg.emulate(edited, p1, A, B), A @ B)  # still a GEMM under the edited spec
    # the old plan under the edited hardware model is not
    assert not np.array_equal(hg.emulate(edited, p0, A, B), A @ B)


def test_refuse_and_pad():
    p = hg.plan(SPECS, "bf16.f32")
    with pytest.raises(hg.HgemmError, match=r"M=1000 is not a multiple of 128.*Pad with zeros to 1024x1024x1024"):
        hg.check_shape(p, 1000, 1000, 1000)
    assert hg.check_shape(p, 1000, 1000, 1000, pad=True) == (1024, 1024, 1024)
    assert hg.check_shape(p, 4096, 4096, 4096) == (4096, 4096, 4096)
    with pytest.raises(hg.HgemmError, match="m16n8k16 kernels only"):
        hg.plan(SPECS, "mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32")
    with pytest.raises(hg.HgemmError, match="16-bit inputs only"):
        hg.plan(SPECS, "mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64")


def test_cli(tmp_path, capsys):
    assert main(["hgemm", "emulate", "f16.f16", "100", "64", "40", "--block", "64x64x32x2x2"]) == 2
    assert "Pad with zeros to 128x64x64" in capsys.readouterr().err
    assert main(["hgemm", "emulate", "f16.f16", "100", "64", "40", "--block", "64x64x32x2x2", "--pad"]) == 0
    assert "reproduces A.B exactly" in capsys.readouterr().out
    out = tmp_path / "k.ptx"
    assert main(["hgemm", "ptx", "bf16.f32", "--arch", "sm_90", "-o", str(out)]) == 0
    assert ".target sm_90" in out.read_text()
    assert main(["hgemm", "run", "--emulate", "--sizes", "130x100x40", "--out", str(tmp_path / "run")]) == 0
    import json

    res = json.loads((tmp_path / "run" / "hgemm.json").read_text())
    assert res["ok"] and len(res["rows"]) == 3 and res["rows"][0]["padded"] == [256, 128, 64]
    assert main(["hgemm", "run", "--emulate", "--no-pad", "--sizes", "130x100x40", "--out", str(tmp_path / "r2")]) == 2
