"""wmma forms run load -> mma -> store on the emulator; wrong strides, layouts and stray writes fail; ptxas agrees."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from ptxconf.backends.emulator import EmulatorBackend
from ptxconf.families.wmma import probe as wm
from ptxconf.families.wmma.compare import compare_wmma
from ptxconf.families.wmma.memory import as_bytes, as_words, d_cells, read_matrix, write_matrix
from ptxconf.isa.loader import load_file
from ptxconf.isa.targets import PtxVersion
from ptxconf.oracle import mma
from ptxconf.run.observations import records
from ptxconf.run.runner import plan_variant, run_module

SPEC = Path(__file__).resolve().parents[3] / "specs" / "wmma.yaml"
FORMS = [v for v in load_file(SPEC).variants.values()]
BY_ID = {v.id: v for v in FORMS}
SAMPLE = [
    "wmma.mma.sync.aligned.col.row.m32n8k16.f32.f16",
    "wmma.mma.sync.aligned.row.row.m16n16k16.f16.f16.satfinite",
    "wmma.mma.sync.aligned.col.col.m8n32k16.s32.u8.u8.s32.satfinite",
    "wmma.mma.sync.aligned.row.col.m8n8k32.s32.s4.s4.s32",
    "wmma.mma.xor.popc.sync.aligned.row.col.m8n8k128.s32.b1.b1.s32",
    "wmma.mma.and.popc.sync.aligned.row.col.m8n8k128.s32.b1.b1.s32",
    "wmma.mma.sync.aligned.row.col.m8n8k4.rm.f64.f64.f64.f64",
    "wmma.mma.sync.aligned.col.row.m16n16k8.f32.tf32.tf32.f32",
    "wmma.mma.sync.aligned.row.row.m32n8k16.f32.bf16.bf16.f32",
    "wmma.load.b.sync.aligned.col.m8n8k128.b1",
    "wmma.load.a.sync.aligned.row.m8n8k32.u4",
    "wmma.load.c.sync.aligned.col.m16n16k8.f32",
    "wmma.store.d.sync.aligned.row.m8n8k4.f64",
    "wmma.store.d.sync.aligned.col.m8n32k16.f16",
]


def _run(v, seed: int = 3, cases: int = 2):
    backend = EmulatorBackend(mma, cc=(9, 0))
    plan = plan_variant(v, seed, backend.cc_for(v), backend.max_ptx(), value_cases=cases)
    (outcome,) = run_module(backend, [plan])
    return plan, outcome


def test_every_form_passes_on_the_emulator():
    bad = []
    for v in FORMS:
        _, outcome = _run(v, seed=1, cases=1)
        bad += [(v.id, vd.check, vd.message) for vd in outcome.verdicts if vd.status != "pass"]
        assert [vd.check for vd in outcome.verdicts] == ["value", "map.A", "map.B", "map.C"]
    assert not bad, bad[:5]


@pytest.mark.parametrize("vid", SAMPLE)
def test_plan_is_reproducible_and_varies_strides_layouts_spaces(vid):
    v = BY_ID[vid]
    a, _ = _run(v)
    b, _ = _run(v)
    assert np.array_equal(a.in_words, b.in_words) and a.probe.name == b.probe.name
    hdr = as_bytes(a.in_words)[:, :36].view("<u4").reshape(len(a.in_words), 9)
    assert len({tuple(r) for r in hdr[:, 1:5]}) > 1, "strides never vary"
    assert len(set(hdr[:, 0])) > 1 or len(a.probe.routes) == 1 or len(hdr) < 4


def test_state_spaces_and_companions_vary_with_the_seed():
    v = BY_ID["wmma.load.c.sync.aligned.row.m16n16k16.f32"]
    backend = EmulatorBackend(mma, cc=(9, 0))
    plans = [plan_variant(v, s, (9, 0), backend.max_ptx(), value_cases=1) for s in range(12)]
    assert {p.probe.space for p in plans} == {"", ".global", ".shared", ".shared::cta"}
    assert len({p.probe.mma.id for p in plans}) > 2
    assert all(p.probe.mma.op == "mma" and p.probe.mma.type_of("c") == "f32" for p in plans)


def test_satfinite_f16_builds_at_version_6_4_at_most():
    v = BY_ID["wmma.mma.sync.aligned.row.col.m16n16k16.f32.f16.satfinite"]
    for s in range(6):
        plan = plan_variant(v, s, (9, 0), PtxVersion(9, 0), value_cases=1)
        assert plan.version <= PtxVersion(6, 4) and plan.target.name in ("sm_70", "sm_72", "sm_75")


@pytest.mark.parametrize("vid", SAMPLE)
def test_corruptions_fail(vid):
    """A flipped bit of D, a stray byte outside D, and D stored transposed each fail."""
    v = BY_ID[vid]
    plan, outcome = _run(v)
    rec = records(plan, outcome.out_words)[0]
    ins, outs = rec.in_words, rec.out_words
    assert compare_wmma(v, rec).status == "pass"
    img = as_bytes(outs)
    hdr = as_bytes(ins)[:, :36].view("<u4").reshape(len(ins), 9)
    flipped = img.copy()
    flipped[0, hdr[0, 8]] ^= 1
    verdict = compare_wmma(v, replace(rec, out_words=as_words(flipped, outs.shape[-1])))
    assert verdict.status == "fail" and "D row 0 col 0" in verdict.details(v)
    _, _, inside = d_cells(v.doc, plan.probe.mma, plan.probe.routes, ins, outs)
    stray = img.copy()
    stray[0, np.flatnonzero(~inside[0])[-1]] = 0x5A
    verdict = compare_wmma(v, replace(rec, out_words=as_words(stray, outs.shape[-1])))
    assert verdict.status == "fail" and "outside D" in verdict.details(v)


def test_wrong_layout_is_named_as_layout():
    v = BY_ID["wmma.mma.sync.aligned.row.col.m16n16k16.f32.f16"]
    plan, outcome = _run(v)
    rec = records(plan, outcome.out_words)[1]  # map.A: D is a permutation of tagged A
    ins, outs = rec.in_words, rec.out_words
    img, hdr = as_bytes(outs), as_bytes(ins)[:, :36].view("<u4").reshape(len(ins), 9)
    routes = plan.probe.routes
    for case in range(len(img)):  # D written with the other layout, same stride
        lay = routes[hdr[case, 0]][1]
        d = read_matrix(img[case], int(hdr[case, 8]), 16, 16, lay, int(hdr[case, 4]), 32)
        img[case, :] = 0
        write_matrix(img[case], int(hdr[case, 8]), d.T.copy(), lay, int(hdr[case, 4]), 32)
    verdict = compare_wmma(v, replace(rec, out_words=as_words(img, outs.shape[-1])))
    assert verdict.status == "fail" and "(layout)" in verdict.details(v)


def test_sub_byte_images_round_trip():
    rng = np.random.default_rng(0)
    for bits in (1, 4, 8, 16, 32, 64):
        img = rng.integers(0, 256, size=4096, dtype=np.uint8)
        vals = rng.integers(0, 2 ** min(bits, 62), size=(8, 32), dtype=np.uint64)
        before = img.copy()
        write_matrix(img, 64, vals, "col", 8 + 64 // bits, bits)
        assert np.array_equal(read_matrix(img, 64, 8, 32, "col", 8 + 64 // bits, bits), vals)
        assert np.array_equal(img[:64], before[:64])  # nothing before the base moved


@pytest.mark.ptxas
def test_ptxas_assembles_sampled_kernels():
    from ptxconf.backends.ptxas import assemble

    exe = shutil.which("ptxas")
    if not exe:
        pytest.skip("no ptxas on PATH")
    for vid in SAMPLE:
        v = BY_ID[vid]
        for space in ("", ".global", ".shared"):
            probe = wm.WmmaProbe(v, wm.companions(v)[0], wm.routes_for(v), space, wm.sizes(v.doc, wm.companions(v)[0]))
            for arch in ("sm_80", "sm_90a"):
                version = max(v.min_ptx, PtxVersion(8, 0) if arch == "sm_90a" else PtxVersion(7, 0))
                ok, err = assemble(wm.module_source([probe], version, _target(arch)), arch, exe)
                if v.max_ptx is not None:
                    assert not ok, f"{vid} assembled at .version {version}, past its last version {v.max_ptx}"
                else:
                    assert ok, f"{vid} {space or 'generic'} {arch}: {err}"
        if v.max_ptx is not None:  # .satfinite on .f16: .version 6.4 for sm_75
            ok, err = assemble(wm.module_source([probe], PtxVersion(6, 4), _target("sm_75")), "sm_75", exe)
            assert ok, err


def _target(name: str):
    from ptxconf.isa.targets import parse_target

    return parse_target(name)
