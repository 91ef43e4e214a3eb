"""Tensor-core numerics: the model's known values, experiments on the emulator, shrinking, recorded H100 runs."""

from __future__ import annotations

import json
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from ptxconf.backends.emulator import EmulatorBackend
from ptxconf.tools.numerics.campaign import measure
from ptxconf.tools.numerics.fuzz import batch, compare, fuzz_variant, shrink
from ptxconf.tools.numerics.harness import numeric_variants, path_of
from ptxconf.tools.numerics.model import Types, dot_bits, mma_semantics
from ptxconf.tools.numerics.recorded import recorded_runs

ROOT = Path(__file__).resolve().parents[2]
RECORDED = ROOT / "results" / "h100-numerics"
# every recorded run under results/: designed cases or fuzz mismatches (the GPU fuzzer's mismatches/ included)
RUNS = recorded_runs(ROOT / "results") if (ROOT / "results").is_dir() else []
WG_FP8 = "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e5m2/rs"
F16F32 = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
F16F16 = "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16"
TF32 = "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"
FP8 = "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32"


def _dot(spec, specs, vid, a, b, c):
    v = specs.get(vid)
    k = v.operands["A"].layout.cols
    return int(dot_bits(path_of(spec, v), Types.of(v), [a + [0] * (k - len(a))], [b + [0] * (k - len(b))], [c])[0])


def test_spec_paths_and_status(spec):
    from ptxconf.tools.numerics.spec import STATUSES, applies

    assert {"f16.f16", "f16.f32", "bf16.f32", "tf32.f32", "fp8.f32", "fp8.f16", "f64", "int", "b1"} <= set(spec.paths)
    assert spec.paths["f16.f32"].frac_bits == 25 and spec.paths["fp8.f32"].frac_bits == 25
    assert spec.paths["wgmma.fp8.f32"].frac_bits == 13
    for path, params in spec.status.items():
        for name, p in params.items():
            assert p["status"] in STATUSES, (path, name)
            assert p["status"] != "moot" or p.get("note"), (path, name)
        # every parameter that means something on the path says where its value comes from
        assert set(applies(spec.paths[path])) <= set(params), (path, set(applies(spec.paths[path])) - set(params))


def test_known_values(spec, specs):
    # 1 - 2^-24: inside the 25-bit window, RZ keeps 1 - 2^-24 -> 0x3f7fffff
    assert _dot(spec, specs, F16F32, [0xBC00], [0x0001], 0x3F800000) == 0x3F7FFFFF
    # 1 - 2^-26 (a = -2^-13, b = 2^-13): below the window, truncated away -> 1.0
    assert _dot(spec, specs, F16F32, [0x8800], [0x0800], 0x3F800000) == 0x3F800000
    # f16 D: 1 + 2^-11 is a tie -> even (1.0); 1 + 2^-11 + 2^-20 rounds up
    assert _dot(spec, specs, F16F16, [0x3C00, 0x1000], [0x3C00, 0x3C00], 0) == 0x3C00
    assert _dot(spec, specs, F16F16, [0x3C00, 0x1000, 0x0400], [0x3C00, 0x3C00, 0x1C00], 0) == 0x3C01
    # tf32 drops the low 13 bits: 1.0 | 0x1fff reads as 1.0; a NaN with payload only there reads as Inf
    assert _dot(spec, specs, TF32, [0x3F801FFF], [0x3F800000], 0) == 0x3F800000
    assert _dot(spec, specs, TF32, [0x7F800001], [0x3F800000], 0) == 0x7F800000
    # fp8 mma.sync -> f32 is the f16 path: 1 + 2^-15 (k 0 and 1, one half) keeps its 25-bit window
    assert _dot(spec, specs, FP8, [0x38, 0x08], [0x38, 0x08], 0) == 0x3F800800
    assert _dot(spec, specs, FP8, [0x38, 0x08], [0x38, 0x01], 0) == 0x3F800100
    # halves k mod 4 in {0,1} / {2,3}: 2^12 - 2^12 (k0, k1) cancels in the first; 2^-14 (k2) is alone in the second
    assert _dot(spec, specs, FP8, [0x68, 0xE8, 0x08], [0x68, 0x68, 0x02], 0) == 0x38800000
    # ... in one 25-bit block (k0, k1, k4: the same half) 2^-14 falls below the grid 2^-13 -> +0
    assert _dot(spec, specs, FP8, [0x68, 0xE8, 0, 0, 0x08], [0x68, 0x68, 0, 0, 0x02], 0) == 0
    # C enters last with one RNE add: 2^12 + 1.5*2^-12 -> 2^12 + 2^-11 (RZ would give 2^12)
    assert _dot(spec, specs, FP8, [0, 0x0C], [0, 0x08], 0x45800000) == 0x45800001
    # NaN and Inf - Inf give the canonical NaN
    assert _dot(spec, specs, F16F32, [0x7E00], [0x3C00], 0) == 0x7FFFFFFF
    assert _dot(spec, specs, F16F32, [0x7C00, 0xFC00], [0x3C00, 0x3C00], 0) == 0x7FFFFFFF
    # f64: sequential FMA: 1 + 2^-53 + 2^-53 stays 1
    one, tiny = 0x3FF0000000000000, 0x3CA0000000000000
    assert _dot(spec, specs, "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64", [tiny, tiny], [one, one], one) == one


def test_measure_on_emulator_agrees(spec, specs):
    backend = EmulatorBackend(mma_semantics(lambda v: path_of(spec, v)), cc=(9, 0))
    for vid in (F16F32, F16F16, TF32, FP8, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"):
        m = measure(backend, spec, specs.get(vid))
        assert all(g["agrees"] for g in m["groups"]), vid
        window = next(g for g in m["groups"] if g["group"] == "alignment_window")
        assert {c["frac_bits"] for c in window["consistent"]} == {path_of(spec, specs.get(vid)).frac_bits}


def test_experiments_detect_a_different_machine(spec, specs):
    """'Hardware' with 24 window bits, or with RNE: the experiments pin each down (one parameter at a time)."""
    v = specs.get(F16F32)
    for change, group, want in ((dict(frac_bits=24), "alignment_window", {"frac_bits": 24, "align": "truncate"}),
                                (dict(final_rounding="rne"), "final_rounding", {"final_rounding": "rne", "out_precision": 24})):
        other = replace(path_of(spec, v), **change)
        backend = EmulatorBackend(mma_semantics(lambda _v, o=other: o), cc=(9, 0))
        groups = {g["group"]: g for g in measure(backend, spec, v)["groups"]}
        assert want in groups[group]["consistent"]
        assert not groups[group]["agrees"]


def test_fuzz_finds_and_shrinks(spec, specs, tmp_path):
    v = specs.get(F16F32)
    p = path_of(spec, v)
    other = replace(p, frac_bits=23)
    backend = EmulatorBackend(mma_semantics(lambda _v: other), cc=(9, 0))
    bits = batch(v, 1, 64)
    obs = backend and __import__("ptxconf.tools.numerics.harness", fromlist=["run_mma"]).run_mma(backend, v, bits)
    bad = compare(p, v, bits, obs)
    assert len(bad)
    stats = fuzz_variant(backend, p, v, budget=3.0, cases=64, out=tmp_path)
    assert stats["mismatches"] and stats["saved"]
    rec = json.loads(Path(stats["saved"][0]).read_text())
    nonzero = sum(int(x, 16) != 0 for x in rec["a"])
    assert rec["observed"] != rec["model"] and nonzero <= 16
    a = np.array([int(x, 16) for x in rec["a"]], dtype=np.uint64)
    b = np.array([int(x, 16) for x in rec["b"]], dtype=np.uint64)
    small, o = shrink(backend, p, v, a, b, np.uint64(int(rec["c"], 16)), rounds=1)
    assert o == int(dot_bits(other, Types.of(v), [small[0]], [small[1]], [small[2]])[0])


def test_every_h100_variant_has_a_path(specs):
    vs = numeric_variants(specs)
    assert len(vs) > 80


def test_wgmma_paths_and_placement(spec, specs):
    """wgmma forms get a path (fp8 its own); operand bits placed through the wgmma spec read back unchanged."""
    from ptxconf.families.wgmma import probe as wg
    from ptxconf.tools.numerics.fuzz import batch
    from ptxconf.tools.numerics.harness import wgmma_imm, wgmma_words

    assert path_of(spec, specs.get(WG_FP8)).name == "wgmma.fp8.f32"
    assert path_of(spec, specs.get(FP8)).name == "fp8.f32"
    assert path_of(spec, specs.get("wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16/ss")).name == "f16.f32"
    ws = [v for v in numeric_variants(specs) if v.family == "wgmma"]
    assert {path_of(spec, v).name for v in ws} == {"f16.f16", "f16.f32", "bf16.f32", "tf32.f32", "wgmma.fp8.f32",
                                                  "wgmma.fp8.f16", "int", "b1"}
    for vid in (WG_FP8, "wgmma.mma_async.sync.aligned.m64n64k16.f16.f16.f16/ss",
                "wgmma.mma_async.sync.aligned.m64n64k256.s32.b1.b1.and.popc/ss"):
        v = specs.get(vid)
        bits = batch(v, 1, 2)
        A, B = wg.matrices(v, wgmma_words(v, bits), wgmma_imm(v), wg.model_of(v))
        assert (A == bits["A"][:, 0]).all() and (B == bits["B"][:, 0]).all(), vid


def test_measure_wgmma_on_emulator_agrees(spec, specs):
    from ptxconf.tools.numerics.harness import wgmma_semantics

    backend = EmulatorBackend(mma_semantics(lambda v: path_of(spec, v)), cc=(9, 0))
    backend.arithmetic = wgmma_semantics(spec)
    m = measure(backend, spec, specs.get(WG_FP8))
    assert m["path"] == "wgmma.fp8.f32" and all(g["agrees"] for g in m["groups"])
    window = next(g for g in m["groups"] if g["group"] == "alignment_window")
    assert {c["frac_bits"] for c in window["consistent"]} == {13}


@pytest.fixture(scope="module", params=RUNS, ids=lambda d: d.name)
def recorded(request, spec, specs):
    from ptxconf.tools.numerics.recorded import RecordedRun

    return RecordedRun(request.param, specs, spec)


@pytest.mark.skipif(not RUNS, reason="no recorded H100 numerics run")
def test_every_recorded_run_has_its_open_findings():
    """No directory of recorded cases falls through: each is replayed below against its open_findings.json."""
    assert RECORDED in RUNS and ROOT / "results" / "h100-numerics-gpu" in RUNS
    missing = [d.name for d in RUNS if not (d / "open_findings.json").is_file()]
    assert not missing, f"recorded runs without open_findings.json (ptxconf numerics report DIR --write-open): {missing}"


def test_an_infinite_term_wins_over_its_block_overflowing(spec, specs):
    """fp8 -> f16 (two f16 halves, C last): a half holding -Inf whose finite products sum past f16's range gives -Inf,
    and a half starting from that -Inf with finite products past +65504 stays -Inf (H100: results/h100-numerics-gpu)."""
    v = specs.get("mma.sync.aligned.m16n8k32.row.col.f16.e5m2.e4m3.f16")
    p, t = path_of(spec, v), Types.of(v)
    big, ninf, one = 0x7B, 0xFC, 0x38  # e5m2 57344, e5m2 -Inf, e4m3 1.0
    a = np.zeros((4, 32), dtype=np.uint64)
    b = np.zeros((4, 32), dtype=np.uint64)
    a[:, [0, 1, 4, 5]] = big  # half 0 (k mod 4 in {0, 1}): 4 * 57344 overflows f16
    b[:, [0, 1, 4, 5]] = one
    a[0, 8], b[0, 8] = ninf, one  # row 0: -Inf in half 0 itself
    a[1, [2, 3, 6, 7]], b[1, [2, 3, 6, 7]] = big, one  # row 1: half 1 overflows too, after a half 0 holding -Inf
    a[1, 8], b[1, 8] = ninf, one
    a[2, [0, 1, 4, 5]] = big | 0x80  # row 2: half 0 overflows to -Inf alone; half 1 finite past +65504 keeps it
    a[2, [2, 3, 6, 7]], b[2, [2, 3, 6, 7]] = big, one
    a[3, 8], b[3, 8] = ninf, one  # row 3: half 0 -Inf, half 1 an explicit +Inf: NaN
    a[3, 10], b[3, 10] = 0x7C, one
    d = dot_bits(p, t, a, b, np.full(4, 0x3C00, dtype=np.uint64))
    assert [hex(int(x)) for x in d] == ["0xfc00", "0xfc00", "0xfc00", "0x7fff"]


@pytest.mark.skipif(not RUNS, reason="no recorded H100 numerics run")
def test_recorded_h100_departures_are_exactly_the_open_findings(recorded):
    """Every recorded case (designed and fuzz replays) the model reproduces must stay reproduced; every one it
    does not must be listed in open_findings.json (regenerate: ptxconf numerics report results/h100-numerics --write-open)."""
    from ptxconf.tools.numerics.recorded import departure_key, listed_keys

    listed = listed_keys(json.loads((recorded.dir / "open_findings.json").read_text()))
    now = {departure_key(d) for d in recorded.departures()}
    fixed, broken = sorted(listed - now), sorted(now - listed)
    assert not broken, f"{len(broken)} recorded case(s) newly departing from the model, e.g. {broken[:5]}"
    assert not fixed, f"{len(fixed)} open finding(s) now reproduced (or answered differently); regenerate open_findings.json: {fixed[:5]}"


@pytest.mark.skipif(not RUNS, reason="no recorded H100 numerics run")
def test_recorded_h100_open_findings_document(recorded, spec):
    doc = json.loads((recorded.dir / "open_findings.json").read_text())
    assert doc["schema"] == "numerics-open-findings/1"
    counts = recorded.counts()
    assert set(doc["paths"]) == set(counts)
    for name, e in doc["paths"].items():
        assert e["recorded"] == counts[name], name
        assert e["model"] == spec.paths[name].describe(), f"{name}: model changed since open_findings.json was generated"
    # the paths every measured shape agrees on stay closed
    # m8n8k4 (per-shape parameters) and the f64 NaN bits are modelled now: every path of the first run is closed
    for name in ("b1", "int", "bf16.f32", "tf32.f32", "f16.f16", "f16.f32", "f64") if recorded.dir == RECORDED else ():
        assert doc["paths"][name]["open"] == {"designed": 0, "replay": 0}, name
    assert len(recorded.replays) == sum(e["recorded"]["replay"] for e in doc["paths"].values())


def test_fuzz_budget_holds_on_the_emulator(spec, specs, tmp_path, capsys, monkeypatch):
    """Launches start small and grow only while they fit what is left (f64 on the emulator through the NumPy model,
    a dot at a time in Python, is the slow case), and the command labels the emulator's run as no evidence of
    hardware."""
    from ptxconf.cli.main import main

    monkeypatch.setenv("PTXCONF_MODEL", "numpy")  # the compiled model (extra fast) is too quick to test the budget

    v = specs.get("mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64")
    st = fuzz_variant(EmulatorBackend(semantics=mma_semantics(lambda x: path_of(spec, x)), cc=(9, 0)), path_of(spec, v), v,
                      3.0, 4096, None)
    assert st["launches"] >= 1 and st["dots"] % (16 * 16 * 8) == 0 and st["dots"] < 4096 * 16 * 8
    assert main(["fuzz", "numerics", "--backend", "emulator", "--select", F16F16, "--budget", "1", "--out", str(tmp_path)]) == 0
    said = capsys.readouterr().out
    assert "backend emulator" in said and "no evidence of hardware" in said


def _rn(x: Fraction, p: int = 24, emin: int = -126) -> Fraction:
    """``x`` rounded to nearest even on a binary grid of ``p`` bits (subnormal below ``emin``); no overflow."""
    if x == 0:
        return Fraction(0)
    ax = abs(x)
    e = ax.numerator.bit_length() - ax.denominator.bit_length()
    e -= Fraction(2) ** e > ax
    q = Fraction(2) ** max(e - p + 1, emin - p + 1)
    n, r = divmod(ax / q, 1)
    n += r > Fraction(1, 2) or (r == Fraction(1, 2) and n % 2)
    return (1 if x > 0 else -1) * n * q


def test_m8n8k4_f16_to_f32_is_the_ffma_chain_ptxas_builds(spec, specs):
    """ptxas builds m8n8k4 .f32.f16.f16.f32 on sm_90 as an FFMA chain from 0 over k and an FADD of C (SASS): the model
    computes exactly that, with exact rationals as the reference, also where a narrower window (32 bits, the value
    before) rounds otherwise: subnormal f16 operands."""
    from ptxconf.isa.ptxtypes import ptx_type

    v = specs.get("mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32")
    p, t = path_of(spec, v), Types.of(v)
    rng = np.random.default_rng(5)
    a = np.concatenate([[[0xC786, 0x44A9, 0x30, 0xF7AD]], rng.integers(0, 0x7C00, (150, 4)) | (rng.integers(0, 2, (150, 4)) << 15)])
    b = np.concatenate([[[0x2F8, 0x382, 0x37F, 0x1]], rng.integers(0, 0x800, (150, 4)) | (rng.integers(0, 2, (150, 4)) << 15)])
    c = np.concatenate([[0x3CF], rng.integers(0, 0x7F800000, 150)]).astype(np.uint64)
    a, b = a.astype(np.uint64), b.astype(np.uint64)
    av, bv, cv = ptx_type("f16").decode(a), ptx_type("f16").decode(b), ptx_type("f32").decode(c)
    want = []
    for i in range(len(c)):
        acc = Fraction(0)
        for k in range(4):
            acc = _rn(Fraction(float(av[i, k])) * Fraction(float(bv[i, k])) + acc)
        want.append(float(_rn(Fraction(float(cv[i])) + acc)))
    want = ptx_type("f32").encode(np.array(want), exact=False).astype(np.uint64)
    assert (dot_bits(p, t, a, b, c) == want).all()
    assert dot_bits(replace(p, frac_bits=32), t, a[:1], b[:1], c[:1])[0] != want[0]  # the old window, on the first row
