"""The probe fuzzer (tools/numerics/probe_fuzz.py) on the CPU: its draws, its sparse dot products and its loop.

The emulator computes D from the model itself, so agreement here checks the plumbing (drawing, metadata, the families'
probe words, dot extraction, replay), never the hardware; the GPU run is tests/tools/test_numerics_gpu.py's and
results/'s."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from ptxconf.families import wgmma_sp as wsp
from ptxconf.tools.numerics import probe_fuzz as pf
from ptxconf.tools.numerics.gpu_fuzz import Recipe
from ptxconf.tools.numerics.harness import numeric_variants, path_of, wgmma_words
from ptxconf.tools.numerics.model import Types, dot_bits, sparse_dots
from ptxconf.tools.numerics.spec import numerics_spec

FAMILIES = ("mma.sync", "mma.sp", "wgmma", "wgmma.sp")


@pytest.fixture(scope="module")
def forms(specs):
    return numeric_variants(specs, families=FAMILIES, wgmma_n=(8, 16, 64, 256))


@pytest.fixture(scope="module")
def spec(specs):
    return numerics_spec(specs)


def _one(forms, family, needle):
    return next(v for v in forms if v.family == family and needle in v.id)


@pytest.mark.parametrize("needle", ["m64n8k32.f32.f16.f16/ss", "m64n16k64.s32.s8.s8/rs", "m64n8k16.f32.tf32.tf32/ss",
                                    "m64n8k64.f32.e4m3.e5m2/rs"])
def test_wgmma_sp_metadata_words_read_back_as_the_drawn_fields(forms, needle):
    v = _one(forms, "wgmma.sp", needle)
    bits, pos = pf.draw(v, np.random.default_rng(1), 3, Recipe(10, 0.0, 0, 0.0, 0.0))
    fields = bits["metadata"][:, 0].astype(np.int64)
    words = wsp.meta_words(v, np.random.default_rng(0), fields, 0)
    assert (wsp.fields_of(v, words, 0) == fields).all()
    # the whole probe input: the spec's reader rebuilds the same dense A the drawn positions name
    w = wgmma_words(v, bits)
    dense = wsp.densify(v, wsp.compressed_a(v, w, {}, wsp.model_of(v)), wsp.fields_of(v, w[:, :, wsp.META_WORD], 0))
    rows = np.arange(64)[:, None]
    for c in range(3):
        want = np.zeros((64, v.K), dtype=np.uint64)
        want[rows, pos[c, 0]] = bits["A"][c, 0]
        assert (dense[c] == want).all()


def test_draws_are_named_by_their_seed(forms):
    v = _one(forms, "mma.sp", "m16n8k32.row.col.f32.f16.f16.f32")
    r = Recipe(20, 0.5, 3, 0.01, 0.01)
    a, pa = pf.draw(v, np.random.default_rng(7), 4, r)
    b, pb = pf.draw(v, np.random.default_rng(7), 4, r)
    assert all((a[k] == b[k]).all() for k in a) and (pa == pb).all()
    sp = pf.sparsity_of(v)
    assert pa.shape == (4, 1, 16, 16) and (np.diff(pa.reshape(4, 16, sp.chunks, sp.nz), axis=-1) != 0).all()


def test_a_sparse_dot_is_a_dense_dot_of_its_stored_products_where_the_gpu_kernel_takes_it(forms, spec):
    """What ModelOnGpu hands the kernel (sparse_dots' stored products, K/2 terms) gives model.py's sparse answer."""
    checked = set()
    for v in forms:
        p = path_of(spec, v)
        if v.family not in ("mma.sp", "wgmma.sp") or (p.name, v.family) in checked:
            continue
        checked.add((p.name, v.family))
        t = Types.of(v)
        bits, pos = pf.draw(v, np.random.default_rng(len(checked)), 2, Recipe(30, 0.4, 5, 0.05, 0.02))
        a, b, c, pd = pf.dot_rows(v, bits, pos)
        ref = dot_bits(p, t, a, b, c, sparse_pos=pd)
        if pf.sparse_model_on_gpu(p):
            sa, sb, _ = sparse_dots(p, a, b, pd)
            assert (dot_bits(p, t, sa, sb, c) == ref).all(), (v.id, p.name)
    assert len(checked) >= 8


@pytest.mark.parametrize("family,needle", [("mma.sp", "m16n8k16.row.col.f32.bf16.bf16.f32"),
                                           ("wgmma", "m64n16k16.f32.bf16.bf16/rs"),
                                           ("wgmma.sp", "m64n8k64.s32.u8.s8/ss")])
def test_the_probe_loop_agrees_with_the_model_on_the_emulator(forms, spec, family, needle, tmp_path):
    from ptxconf.cli.numerics import _backend

    v = _one(forms, family, needle)
    backend = _backend("emulator")
    try:
        st = pf.fuzz_variant_probe(backend, v, path_of(spec, v), 0.2, cases=16, out=tmp_path, model_on="host")
    finally:
        backend.close()
    assert st["launches"] >= 1 and st["dots"] == st["launches"] * st["dots_per_launch"] > 0
    assert st["mismatches"] == 0 and st["audit_errors"] == 0 and st["audited"] > 0
    assert st["family"] == family and st["model_on"] == "host"


def test_the_device_gather_of_stored_products_is_model_py_s(forms, spec):
    """ModelOnGpu.stored_products (written against the array API CuPy and NumPy share) run with NumPy: the (a, b)
    rows model.sparse_dots gives, for both sparse orders and both sparse families."""
    for family, needle in (("mma.sp", ".sync.aligned.m16n8k64.row.col.f32.e4m3.e5m2.f32"),
                           ("mma.sp", "m16n8k16.row.col.f32.f16.f16.f32"), ("wgmma.sp", "m64n16k32.f32.f16.f16/ss")):
        v = _one(forms, family, needle)
        p = path_of(spec, v)
        for order in ("position", "slot"):
            q = replace(p, sparse_order=order)
            model = object.__new__(pf.ModelOnGpu)
            model.cp, model.v, model.p, model.t, model.sparse = np, v, q, Types.of(v), True
            bits, pos = pf.draw(v, np.random.default_rng(3), 2, Recipe(10, 0.3, 0, 0.0, 0.0))
            a, b = model.stored_products(bits, pos)
            ra, rb, _, pd = pf.dot_rows(v, bits, pos)
            wa, wb, _ = sparse_dots(q, ra, rb, pd)
            assert (a == wa).all() and (b == wb).all(), (v.id, order)


def test_the_committed_h100_campaign_covers_every_path_of_every_family(specs, spec):
    """results/h100-numerics-gpu-every-family: every (family, path) of the model ran on the H100 with dots compared,
    and nothing mismatched."""
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "results" / "h100-numerics-gpu-every-family"
    ran, total = set(), {"mismatches": 0, "confirmed": 0, "gpu_model_errors": 0, "audit_errors": 0}
    for part in sorted(root.glob("*/gpu-fuzz.json")):
        doc = json.loads(part.read_text())
        assert doc["status"] == "complete" and doc["device"]["device"].startswith("NVIDIA H100"), part
        ran |= {(r["family"], r["path"]) for r in doc["variants"] if r["dots"] > 0}
        for k in total:
            total[k] += doc["total"][k]
    want = {(v.family, path_of(spec, v).name) for v in numeric_variants(specs, families=FAMILIES, wgmma_n=range(8, 257, 8))}
    assert want - ran == set() and {f for f, _ in ran} == set(FAMILIES)
    assert total == dict.fromkeys(total, 0)
