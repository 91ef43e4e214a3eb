"""Numerics at the edges of each format: per-shape parameters, the f16 underflow case, sparse and f64 rounding
experiments, the edge fuzzer's coverage, and pinning parameters from recorded runs (all on the emulator, no GPU)."""

from __future__ import annotations

import json
import math
import shutil
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from ptxconf.backends.emulator import EmulatorBackend
from ptxconf.backends.pycuda_backend import gpu_available
from ptxconf.cli.main import main
from ptxconf.isa import SpecError, load_specs
from ptxconf.isa.ptxtypes import ptx_type
from ptxconf.tools.numerics import pins
from ptxconf.tools.numerics.campaign import edges_campaign
from ptxconf.tools.numerics.edges import (
    PathCoverage,
    coverage_markdown,
    fuzz_edges,
    result_bucket_names,
    result_buckets,
    shift_buckets,
)
from ptxconf.tools.numerics.experiments import design, group_bits, infer
from ptxconf.tools.numerics.harness import (
    alternatives,
    diagonal,
    first_positions,
    metadata_fields,
    path_of,
    place,
    rounding_variant,
    run_mma,
    variant_of,
)
from ptxconf.tools.numerics.model import Types, dot_bits, f64_round, mma_semantics
from ptxconf.tools.numerics.recorded import RecordedRun
from ptxconf.tools.numerics.spec import applies, numerics_spec

ROOT = Path(__file__).resolve().parents[2]
F16F16 = "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16"
F16F32 = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
M8_F32 = "mma.sync.aligned.m8n8k4.row.row.f32.f16.f16.f32"
SP_F16 = "mma.sp.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
SP_ORD = "mma.sp::ordered_metadata.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
F64 = "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64"
_GPU, _WHY = gpu_available()


def _f16(x: float) -> int:
    return int(ptx_type("f16").encode(np.array([x]))[0])


def _emulate(spec, hardware=None):
    """An emulator whose arithmetic is the spec's model, or ``hardware(v) -> PathParams`` (a machine that differs)."""
    return EmulatorBackend(mma_semantics(hardware or (lambda v: path_of(spec, v))), cc=(9, 0))


def _group(spec, specs, vid: str, name: str, backend, p=None):
    """Design, run and infer one group of ``vid`` on ``backend``: its inference against the spec's (or ``p``) model."""
    v = variant_of(specs, vid)
    p = p or path_of(spec, v)
    g = next(g for g in design(v, p, alternatives(spec, v)) if g.name == name)
    a, b, c = group_bits(v, g)
    bits, where = place(v, a, b, c, pos=g.pos_bits)
    obs = diagonal(run_mma(backend, v, bits), where)
    return infer(v, p, g, a, b, c, obs)


# --- the f16 underflow case of issue 17 ------------------------------------------------------------------------------


def test_f16_underflow_case_is_explained_by_a_parameter(spec, specs):
    """2^-25 (half of f16's smallest subnormal, a tie) plus a much smaller 2^-40: the spec's model keeps the small term
    (0x0001); a floor on the grid at f16's emin (exp_floor -14) cuts it (0x0000) and keeps one a few binades larger;
    so does a first rounding toward zero at 26 bits within f16's range.  A negative far term tells the two apart."""
    v = specs.get(F16F16)
    p = path_of(spec, v)
    t = Types.of(v)

    def d(q, pairs):
        a = [_f16(x) for x, _ in pairs] + [0] * (16 - len(pairs))
        b = [_f16(y) for _, y in pairs] + [0] * (16 - len(pairs))
        return int(dot_bits(q, t, [a], [b], [0])[0])

    far, near = [(2.0**-12, 2.0**-13), (2.0**-20, 2.0**-20)], [(2.0**-12, 2.0**-13), (2.0**-18, 2.0**-18)]
    floor, twice = replace(p, exp_floor=-14), replace(p, exp_floor=None, final_rounding="rz", out_precision=26)
    assert d(p, far) == 0x0001
    assert d(floor, far) == 0x0000 and d(floor, near) == 0x0001
    assert d(twice, far) == 0x0000 and d(twice, near) == 0x0001
    tie_minus = [(2.0**-12, 1.5 * 2.0**-12), (-(2.0**-22), 2.0**-23)]  # 1.5 * 2^-24 - 2^-45
    assert d(floor, tie_minus) == 0x0002 and d(twice, tie_minus) == 0x0001


@pytest.mark.parametrize("machine", [dict(exp_floor=-14), dict(exp_floor=None, final_rounding="rz", out_precision=26)])
def test_underflow_group_pins_the_mechanism(spec, specs, machine):
    """'Hardware' with either mechanism: the underflow group keeps exactly that candidate."""
    v = specs.get(F16F16)
    other = replace(path_of(spec, v), **machine)
    r = _group(spec, specs, F16F16, "underflow", _emulate(spec, lambda _v: other))
    assert not r.agrees
    assert [{k: c.get(k, getattr(other, k)) for k in machine} for c in r.consistent] == [machine]


# --- per-shape parameters --------------------------------------------------------------------------------------------


def test_shapes_override_the_path(spec, specs):
    p = spec.paths["f16.f32"]
    m8 = path_of(spec, specs.get(M8_F32))
    # m8n8k4 f16 -> f32: a chain of f32 fused multiply-adds from 0 (one product a block, each rounded to nearest), C last
    assert m8.name == "f16.f32" and (m8.block, m8.align, m8.frac_bits, m8.out_precision) == (1, "sticky", 40, 24)
    assert (m8.c_entry, m8.final_rounding) == ("add_rne", "rne")
    assert path_of(spec, specs.get(F16F32)) == p and p.block == 16
    assert p.for_shape("m16n8k16") == p and "block" in p.overridden("m8n8k4")
    assert spec.status_of("f16.f32", "frac_bits", "m8n8k4")["value"] == 40
    # the recorded m8n8k4 case the path's own parameters get wrong: 2^12 - 2^-13 stays 2^12 with the shape's
    t = Types.of(specs.get(M8_F32))
    a, b = [0x5400, 0, 0, 0xA000], [0x5400, 0, 0, 0x2400]
    assert int(dot_bits(m8, t, [a], [b], [0])[0]) == 0x45800000
    assert int(dot_bits(p, t, [a], [b], [0])[0]) == 0x457FFFFF


M8_F16 = "mma.sync.aligned.m8n8k4.row.row.f16.f16.f16.f16"


def _f16s(xs) -> list[int]:
    return [_f16(x) for x in xs]


def test_f16_m8n8k4_is_a_chain_of_f32_pair_sums(spec, specs):
    """m8n8k4 f16 -> f16: t0 = f32(p0 + p1), t1 = f32(p2 + p3), D = f16(f32(f32(C + t0) + t1)), all to nearest even."""
    v = specs.get(M8_F16)
    p, t = path_of(spec, v), Types.of(v)
    assert (p.block, p.c_entry, p.acc_type, p.out_precision, p.final_rounding, p.exp_floor) == (2, "block_add", "f32", 24,
                                                                                                "rne", None)

    def d(q, a, b, c=0.0) -> int:
        return int(dot_bits(q, t, [_f16s(a)], [_f16s(b)], [_f16(c)])[0])

    # 2^-25 (half of f16's smallest subnormal, a tie) + 2^-48: f32's range keeps the small term, the tie breaks up;
    # rounded within f16's range (acc_type d) the small term is cut first and the tie goes to even
    b = [2.0**-13, 2.0**-24, 0, 0]
    assert d(p, [2.0**-12, 2.0**-24, 0, 0], b) == 0x0001
    assert d(replace(p, acc_type="d"), [2.0**-12, 2.0**-24, 0, 0], b) == 0x0000
    assert d(p, [-(2.0**-12), -(2.0**-24), 0, 0], b) == 0x8001
    assert d(p, [-(2.0**-12), 2.0**-24, 0, 0], b) == 0x8000  # -(2^-25 - 2^-48) rounds to -0 (underflow_sign keep)
    # C = 1 and products 2^-11, 2^-24, 2^-24: each add is an f32 tie (1 + 2^-11 + 2^-24) that goes to even, 1 + 2^-11,
    # an f16 tie that goes to even: 1.0; one fused block holds 1 + 2^-11 + 2^-23 exactly, above the f16 tie
    a, b = [2.0**-5, 2.0**-12, 2.0**-12, 0], [2.0**-6, 2.0**-12, 2.0**-12, 0]
    assert d(p, a, b, 1.0) == 0x3C00
    assert d(replace(p, block=4, c_entry="fused"), a, b, 1.0) == 0x3C01
    # signed zeros as IEEE: -0 plus pair sums of -0 stays -0; a +0 product makes its pair +0; a cancellation is +0
    assert d(p, [-0.0] * 4, [1.0] * 4, -0.0) == 0x8000
    assert d(p, [-0.0, 0.0, -0.0, -0.0], [1.0] * 4, -0.0) == 0x0000
    assert d(p, [1.0, 0, 0, 0], [1.0, 0, 0, 0], -1.0) == 0x0000
    # Inf from an operand; Inf - Inf and Inf * 0 give the canonical NaN
    assert d(p, [np.inf, 0, 0, 0], [1.0, 0, 0, 0], 1.0) == 0x7C00
    assert d(p, [np.inf, 0, 1.0, 0], [1.0, 0, -np.inf, 0]) == d(p, [np.inf, 0, 0, 0], [0.0, 0, 0, 0]) == 0x7FFF
    with pytest.raises(ValueError, match="acc_type"):
        d(replace(p, acc_type="f64"), a, b)


def _round(x: Fraction, p: int, emin: int, mode: str) -> Fraction:
    """``x`` rounded to ``p`` significand bits (subnormals below 2^emin), exactly: no overflow here."""
    if x == 0:
        return x
    n, den = abs(x.numerator), x.denominator
    e = n.bit_length() - den.bit_length()
    e -= (n << max(-e, 0)) < (den << max(e, 0))
    q = Fraction(2) ** max(e - p + 1, emin - p + 1)
    m = x / q
    return {"rne": round(m), "rz": int(m), "ru": math.ceil(m), "rd": math.floor(m)}[mode] * q


@pytest.mark.parametrize(("mode", "bits"), [("rne", 24), ("rz", 24), ("ru", 11), ("rd", 14)])
def test_block_add_rounds_each_pair_and_each_add_once(spec, specs, mode, bits):
    """c_entry block_add + acc_type f32 against exact arithmetic: every pair sum and every add correctly rounded
    (to ``bits`` bits by ``mode`` in f32's range), then RNE to f16; C near 2^15 with products near 2^-48 included."""
    v = specs.get(M8_F16)
    p, t = replace(path_of(spec, v), final_rounding=mode, out_precision=bits), Types.of(v)
    rng = np.random.default_rng(bits)
    n = 1500
    far = rng.random((n, 1)) < 0.3  # C near 2^15, products below 2^-36: float64's sum is inexact
    sign = rng.integers(0, 2, (3, n, 4), dtype=np.uint64) << np.uint64(15)
    a, b = (np.where(far, rng.integers(0, 0x40, (n, 4)), np.where(rng.random((n, 4)) < 0.5, rng.integers(0, 0x5800, (n, 4)),
                                                                  rng.integers(0, 0x1000, (n, 4)))).astype(np.uint64) for _ in "ab")
    c = np.where(far[:, 0], rng.integers(0x7000, 0x7800, n), rng.integers(0, 0x5800, n)).astype(np.uint64)
    a, b, c = a | sign[0], b | sign[1], c | sign[2][:, 0]
    got = ptx_type("f16").decode(dot_bits(p, t, a, b, c))
    av, bv, cv = (ptx_type("f16").decode(x) for x in (a, b, c))
    for i in range(n):
        acc = Fraction(float(cv[i]))
        for j in (0, 2):
            pair = sum(Fraction(float(av[i, x])) * Fraction(float(bv[i, x])) for x in (j, j + 1))
            acc = _round(acc + _round(pair, bits, -126, mode), bits, -126, mode)
        assert got[i] == _round(acc, 11, -14, "rne"), (i, [hex(int(x)) for x in a[i]], [hex(int(x)) for x in b[i]], hex(int(c[i])))


def test_schema_takes_acc_type_and_block_add(tmp_path):
    """acc_type is a parameter of the path, a shape and the defaults; block_add a c_entry value; a misspelling is refused."""
    text = (ROOT / "specs" / "numerics.yaml").read_text()
    shutil.copytree(ROOT / "specs", tmp_path, dirs_exist_ok=True)
    assert "acc_type: {value: f32" in text and "c_entry: {value: block_add" in text
    one = "{value: 11, status: assumed}"
    new = text.replace("\npaths:\n", f"\npaths:\n  extra:\n    kind: float\n    a: [bf16]\n    d: [f16]\n    block: {one}\n"
                       f"    frac_bits: {one}\n    out_precision: {one}\n    final_rounding: {{value: rne, status: assumed}}\n"
                       "    acc_type: {value: f32, status: assumed}\n    c_entry: {value: block_add, status: assumed}\n", 1)
    assert new != text
    (tmp_path / "numerics.yaml").write_text(new)
    p = numerics_spec(load_specs(tmp_path)).paths["extra"]
    assert (p.acc_type, p.c_entry) == ("f32", "block_add") and p.describe()["acc_type"] == "f32"
    (tmp_path / "numerics.yaml").write_text(new.replace("    acc_type: {value: f32", "    acc_typ: {value: f32", 1))
    with pytest.raises(SpecError, match="acc_typ"):
        load_specs(tmp_path)


def test_spec_refuses_a_bad_shape_override(tmp_path):
    text = (ROOT / "specs" / "numerics.yaml").read_text()
    shutil.copytree(ROOT / "specs", tmp_path, dirs_exist_ok=True)
    bad = text.replace("      m8n8k4:\n        block: {value: 2", "      m8n8k4:\n        blok: {value: 2", 1)
    assert bad != text
    (tmp_path / "numerics.yaml").write_text(bad)
    with pytest.raises(SpecError) as err:
        load_specs(tmp_path)
    msg = str(err.value)
    assert "numerics.yaml:" in msg and "m8n8k4" in msg and "blok" in msg


def test_shape_fit_group_separates_the_joint_fits(spec, specs):
    v = specs.get(M8_F32)
    g = next(g for g in design(v, path_of(spec, v)) if g.name == "shape_fit")
    assert set(g.param) == {"block", "align", "frac_bits", "out_precision", "final_rounding"} and g.rows
    r = _group(spec, specs, M8_F32, "shape_fit", _emulate(spec))
    assert r.agrees and r.consistent and len(r.consistent) < len(g.candidates) / 4


# --- mma.sp ----------------------------------------------------------------------------------------------------------


def test_metadata_fields_invert_the_positions(specs):
    from ptxconf.tools.numerics.model import stored_positions

    for vid in (SP_F16, "mma.sp.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", "mma.sp.sync.aligned.m16n8k64.row.col.s32.s4.s4.s32"):
        v = specs.get(vid)
        pos = np.stack([first_positions(v)] * 16)
        if vid == SP_F16:  # mma.sp takes a chunk's two indices in either order
            pos[3] = [1, 0, 5, 4, 9, 8, 14, 12]
        fields = metadata_fields(v, pos)
        assert (stored_positions(v, fields[None, None])[0, 0] == pos).all(), vid
    with pytest.raises(ValueError, match="no legal pattern"):
        metadata_fields(specs.get(SP_ORD), np.array([1, 0, 4, 5, 8, 9, 12, 13]))  # ::ordered_metadata sorts the indices


@pytest.mark.parametrize("zeros", ["skip", "multiply"])
def test_sparse_zeros_group_tells_skip_from_multiply(spec, specs, zeros):
    hw = replace(path_of(spec, specs.get(SP_F16)), sparse_zeros=zeros)
    r = _group(spec, specs, SP_F16, "sp_zeros", _emulate(spec, lambda _v: hw))
    assert r.consistent == [{"sparse_zeros": zeros}]


def test_sparse_groups_match_the_dense_path_and_order_only_where_allowed(spec, specs):
    v, vo = specs.get(SP_F16), specs.get(SP_ORD)
    names = [g.name for g in design(v, path_of(spec, v), alternatives(spec, v))]
    assert {"sp.alignment_window", "sp.exponent_floor_low", "sp_zeros", "sp_order"} <= set(names)
    assert "sp_order" not in [g.name for g in design(vo, path_of(spec, vo))]  # ::ordered_metadata: one order only
    r = _group(spec, specs, SP_F16, "sp.final_rounding", _emulate(spec))
    assert r.agrees and {"final_rounding": "rz", "out_precision": 24} in r.consistent
    fp8 = specs.get("mma.sp.sync.aligned.m16n8k64.row.col.f32.e4m3.e4m3.f32")
    assert set(alternatives(spec, fp8)) == {"fp8.f32", "wgmma.fp8.f32"}
    assert "sp.path" in [g.name for g in design(fp8, path_of(spec, fp8), alternatives(spec, fp8))]


# --- f64: rounding modifiers and NaN payloads ------------------------------------------------------------------------


def test_f64_rounding_modifiers_in_the_model(specs, spec):
    from fractions import Fraction

    x = Fraction(1) + Fraction(3, 4) * Fraction(2) ** -52
    assert (f64_round(x, "rne"), f64_round(x, "rz"), f64_round(x, "ru"), f64_round(x, "rd")) == (
        1 + 2.0**-52, 1.0, 1 + 2.0**-52, 1.0)
    big = Fraction(np.finfo(np.float64).max) * 2
    assert f64_round(big, "rz") == np.finfo(np.float64).max and f64_round(big, "rne") == np.inf
    assert f64_round(-big, "ru") == -np.finfo(np.float64).max and f64_round(-big, "rd") == -np.inf
    v = rounding_variant(specs.get(F64), "rm")
    assert v.id == "mma.sync.aligned.m8n8k4.row.col.rm.f64.f64.f64.f64" and Types.of(v).rnd == "rm"
    assert variant_of(specs, v.id).id == v.id
    p, one = path_of(spec, v), 0x3FF0000000000000
    t = Types.of(v)
    zero = int(dot_bits(p, t, [[one, 0, 0, 0]], [[one] * 4], [0xBFF0000000000000])[0])
    assert zero == 0x8000000000000000  # 1 - 1 rounded toward -Inf is -0
    with pytest.raises(ValueError, match="rounding modifier"):
        rounding_variant(specs.get(F16F32), "rz")


def test_f64_rounding_group_on_a_modifier_form(spec, specs):
    v = rounding_variant(specs.get(F64), "rz")
    ignored = replace(path_of(spec, v), f64_rnd="ignored")
    r = _group(spec, specs, v.id, "f64_rounding", _emulate(spec, lambda _v: ignored))
    assert {c["f64_rnd"] for c in r.consistent} == {"ignored"}
    r = _group(spec, specs, v.id, "f64_rounding", _emulate(spec))
    assert r.agrees and {c["f64_rnd"] for c in r.consistent} == {"each_fma"}


def test_nan_payloads(spec, specs):
    v = specs.get(F16F32)
    p = replace(path_of(spec, v), nan_propagation="payload_c_first")
    t = Types.of(v)
    a = [0x7E01] + [0] * 15
    b = [0x3C00] + [0] * 15
    assert int(dot_bits(p, t, [a], [b], [0])[0]) == 0x7FC02000  # f16 payload 1 shifted into f32, quiet
    assert int(dot_bits(p, t, [a], [b], [0xFFC00002])[0]) == 0xFFC00002  # C first
    q = replace(p, nan_propagation="payload_a_first")
    assert int(dot_bits(q, t, [a], [b], [0xFFC00002])[0]) == 0x7FC02000
    assert int(dot_bits(path_of(spec, v), t, [a], [b], [0])[0]) == 0x7FFFFFFF  # the spec: canonical
    f = path_of(spec, specs.get(F64))
    one, inf = 0x3FF0000000000000, 0x7FF0000000000000
    tf = Types.of(specs.get(F64))
    assert int(dot_bits(f, tf, [[inf, 0, 0, 0]], [[0] * 4], [0])[0]) == 0xFFF8000000000000  # measured: Inf*0
    assert int(dot_bits(f, tf, [[0x7FF0000000000001, 0, 0, 0]], [[one] * 4], [0])[0]) == 0x7FF8000000000001  # quieted


def test_sticky_alignment_differs_from_truncation(spec, specs):
    v = specs.get(F16F32)
    p, t = path_of(spec, v), Types.of(v)
    a, b = [_f16(1.0), _f16(-(2.0**-13))], [_f16(4096.0), _f16(1.5 * 2.0**-14)]  # 2^12 - 1.5 * 2^-27: below the grid
    assert int(dot_bits(p, t, [a + [0] * 14], [b + [0] * 14], [0])[0]) == 0x45800000
    assert int(dot_bits(replace(p, align="sticky"), t, [a + [0] * 14], [b + [0] * 14], [0])[0]) == 0x457FFFFF


def test_integer_limits_group(spec, specs):
    vid = "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32"
    r = _group(spec, specs, vid, "int_limits", _emulate(spec))
    assert r.agrees and r.cases >= 16
    g = next(g for g in design(specs.get(vid), path_of(spec, specs.get(vid))) if g.name == "int_limits")
    assert any("past 2147483647" in row[3] for row in g.rows) and any("past -2147483648" in row[3] for row in g.rows)


def test_every_unpinned_parameter_has_an_experiment(spec, specs):
    """On every path, each parameter not yet measured (or moot) is among the parameters of a designed group."""
    from ptxconf.tools.numerics.harness import numeric_variants, rounding_variants

    reps: dict[tuple, object] = {}
    for v in numeric_variants(specs, families=("mma.sync", "mma.sp", "wgmma")) + rounding_variants(specs):
        t = Types.of(v)  # one variant per A/B type pair too: some rows only fit some fp8 pairs
        reps.setdefault((path_of(spec, v).name, v.family == "mma.sp", t.rnd, t.a, t.b), v)
    covered: dict[str, set] = {}
    for (name, *_), v in reps.items():
        for g in design(v, path_of(spec, v), alternatives(spec, v)):
            covered.setdefault(name, set()).update(x.split(".")[0] for x in g.param)
    for name, p in spec.paths.items():
        todo = {k for k in applies(p) if spec.status[name].get(k, {}).get("status") not in ("measured", "moot")}
        todo |= {k for by_shape in spec.shape_status.get(name, {}).values() for k, st in by_shape.items()
                 if st["status"] not in ("measured", "moot")}
        assert todo <= covered.get(name, set()), (name, todo - covered.get(name, set()))


# --- the edge fuzzer and its coverage --------------------------------------------------------------------------------


def test_buckets():
    assert len(result_buckets("f16")) == 1 + 10 + 30 + 2 and "sub-24" in result_buckets("f16")
    assert result_bucket_names("f16", np.array([0, 1, 0x3C00, 0x7C00, 0x7E00])).tolist() == ["zero", "sub-24", "e0", "inf", "nan"]
    assert "crossed+" in result_buckets("s32") and "+32" not in result_buckets("s32") and "-32" in result_buckets("s32")
    names = result_bucket_names("s32", np.array([0, 5, 0xFFFFFFFF], dtype=np.uint64), np.array([0, 5, 2**31], dtype=object))
    assert names.tolist() == ["zero", "+3", "crossed+"]


def test_edge_fuzzer_covers_every_bucket_and_finds_a_different_machine(spec, specs, tmp_path):
    v = specs.get(F16F16)
    p = path_of(spec, v)
    out = fuzz_edges(_emulate(spec), spec, [v], budget=20, cases=64, out=tmp_path, log=lambda *_: None)
    cov = out["coverage"]["f16.f16"]
    assert out["complete"] and not cov["missing"]["result"] and not cov["missing"]["shift"]
    assert set(cov["aligned_shift"]) == set(shift_buckets(p)) and cov["result_exponent"]["sub-24"] > 0
    assert "| f16.f16 | .f16 |" in out["markdown"] and out["fuzz"][0]["mismatches"] == 0
    floor = replace(p, exp_floor=-14)
    bad = fuzz_edges(_emulate(spec, lambda _v: floor), spec, [v], budget=10, cases=64, out=tmp_path, max_launches=3,
                     log=lambda *_: None)
    st = bad["fuzz"][0]
    assert st["mismatches"] and st["saved"]
    rec = json.loads(Path(st["saved"][0]).read_text())
    assert rec["observed"] != rec["model"] and rec["variant"] == F16F16


def test_coverage_markdown_names_missed_ranges(spec):
    c = PathCoverage.new(spec.paths["f16.f16"], "f16")
    c.add(np.array(["e0", "e1"]), ["s0"])
    md = coverage_markdown({"f16.f16": c})
    assert "2/43" in md and "sub-24..sub-15" in md and "s1..s26" in md


# --- pinning from recorded runs --------------------------------------------------------------------------------------


def test_pin_a_recorded_run_and_write_the_spec(spec, specs, tmp_path):
    """A recorded run of a machine with exp_floor -14 on f16 -> f16: the pin finds it, names the groups, writes it."""
    v = specs.get(F16F16)
    hw = replace(path_of(spec, v), exp_floor=-14)
    edges_campaign(_emulate(spec, lambda _v: hw), spec, [v], tmp_path / "run", budget=30, fuzz=False, log=lambda *_: None)
    run = RecordedRun(tmp_path / "run", specs, spec)
    assert run.departures(), "the spec's model must miss some of this machine's cases"
    doc = pins.pin([run], spec, {"run": "TESTRUN"}, {"f16.f16"}, log=lambda *_: None)
    d = next(x for x in doc["decisions"] if x["param"] == "exp_floor" and x["shape"] is None)
    assert d["decision"] == "change" and d["value"] == -14 and d["finding"] and "underflow" in " ".join(d["groups"]) + d["note"]
    shutil.copytree(ROOT / "specs", tmp_path / "specs")
    changed = pins.write_spec(doc, tmp_path / "specs" / "numerics.yaml", {"TESTRUN": "an emulated run"},
                              lambda text: None)
    assert any("exp_floor: -21 (measured) -> -14 (measured)" in c for c in changed)
    new = numerics_spec(load_specs(tmp_path / "specs"))
    assert new.paths["f16.f16"].exp_floor == -14 and new.status["f16.f16"]["exp_floor"]["source"] == "TESTRUN"
    assert "TESTRUN" in new.sources


def test_spec_editor(tmp_path):
    text = "sources:\n  A: x\npaths:\n  p1:\n    kind: float\n    block: {value: 16, status: published}\n  p2:\n    kind: int\n"
    out = pins.set_param(text, "p1", "block", {"value": 8, "status": "measured", "source": "A", "note": "n"})
    assert "    block: {value: 8, status: measured, source: A, note: \"n\"}" in out
    out = pins.set_param(out, "p1", "exp_floor", {"value": None, "status": "assumed"})
    out = pins.set_param(out, "p1", "block", {"value": 2, "status": "assumed"}, shape="m8n8k4")
    assert out.index("exp_floor: {value: null") < out.index("    shapes:\n      m8n8k4:\n        block: {value: 2") < out.index("  p2:")
    assert "  B: \"new\"" in pins.set_source(out, "B", "new")
    with pytest.raises(pins.SpecEditError, match="no path"):
        pins.set_param(text, "p9", "block", {"value": 1, "status": "assumed"})
    with pytest.raises(pins.SpecEditError, match="one-line"):
        pins.set_param(text.replace("status: published}", "status: published,\n      note: x}"), "p1", "block", {"value": 1, "status": "assumed"})


def test_pins_document_of_the_current_spec(spec):
    """A pins document under results/numerics-* describes the current spec (``spec_state``): what it pinned, the spec
    says measured (regenerate: ptxconf numerics pin results/h100-numerics results/h100-numerics-wgmma
    --out results/numerics-pins --write-spec --write-open, with the edges run first when there is one)."""
    docs = [json.loads(p.read_text()) for p in sorted((ROOT / "results").glob("numerics-*/pins.json"))]
    docs = [d for d in docs if d.get("spec_state") == pins.spec_state(spec)]
    assert docs, "no pins document describes the current specs/numerics.yaml"
    for d in docs[0]["decisions"]:
        if d["decision"] in ("confirm", "change"):
            st = spec.status_of(d["path"], d["param"], d["shape"])
            assert st.get("status") == "measured", (d["path"], d["shape"], d["param"])
        if d["decision"] == "moot":
            assert spec.status_of(d["path"], d["param"], d["shape"]).get("status") == "moot", (d["path"], d["param"])
    f64 = spec.paths["f64"]
    assert f64.nan_bits["f64"] == 0xFFF8000000000000 and spec.status["f64"]["f64_mode"]["status"] == "measured"


# --- the command line ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("argv", "says"), [
    (["numerics", "pin", "/nowhere"], "/nowhere: not a recorded numerics run"),
    (["numerics", "edges", "--backend", "emulator", "--wgmma-n", "x", "--out", "/tmp/never"], "--wgmma-n 'x'"),
    (["numerics", "edges", "--backend", "emulator", "--select", "nothing*", "--out", "/tmp/never"], "--select matches no variant"),
])
def test_cli_bad_input_exits_2(argv, says, capsys):
    assert main(argv) == 2
    assert says in capsys.readouterr().err


def test_cli_edges_then_pin_on_the_emulator(tmp_path, capsys):
    run = tmp_path / "edges"
    assert main(["numerics", "edges", "--backend", "emulator", "--select", F16F32, "--budget", "20", "--cases", "32",
                 "--out", str(run)]) == 0
    said = capsys.readouterr().out
    assert "coverage complete" in said and "backend emulator" in said and "no evidence of hardware" in said
    assert "--write-spec" not in said  # the emulator's own model is never suggested as the spec's
    for name in ("measure.json", "observations.npz", "coverage.json", "coverage.md", "findings.json"):
        assert (run / name).is_file(), name
    assert main(["numerics", "pin", str(run), "--path", "f16.f32"]) == 2  # no evidence unless told
    assert "recorded on the emulator" in capsys.readouterr().err
    assert main(["numerics", "pin", str(run), "--path", "f16.f32", "--accept-emulator"]) == 0
    doc = json.loads((run / "pins.json").read_text())
    assert doc["sources"] == {"edges": "EMULATOR"} and not doc["findings"]  # never labelled as an H100 run
    assert main(["numerics", "edges", "--backend", "emulator", "--select", F16F32, "--out", str(run)]) == 2


@pytest.mark.gpu
@pytest.mark.skipif(not _GPU, reason=f"no GPU: {_WHY}")
def test_edges_on_the_gpu(tmp_path):
    assert main(["numerics", "edges", "--backend", "pycuda", "--select", F16F16, "--select", SP_F16, "--budget", "30",
                 "--out", str(tmp_path / "e")]) in (0, 1)
    assert main(["numerics", "pin", str(tmp_path / "e")]) == 0
