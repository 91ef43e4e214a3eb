"""Generators: seeded probe inputs (conformance/families/mma/cases.py) and PTX probe kernels (conformance/families/mma/probe.py).

Inputs: reproducible per (seed, variant), exactly representable, exact under
the oracle (checked against a Fraction computation), map checks that tell every
element apart, s32-limit accumulators, legal block-scale selectors and garbage
in unheld scale slots.  Probes: every variant assembles with ptxas for sm_90a
and sm_120a, the PTX text is a function of the seed, chained probes issue the
instruction twice, and the host checksum matches both the PTX and the emulator.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections import defaultdict
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ptxconf.backends.base import Launch
from ptxconf.backends.emulator import EmulatorBackend
from ptxconf.families.mma.cases import CHECKS, alphabet, make_checks
from ptxconf.families.mma.compare import split_inputs
from ptxconf.families.mma.probe import Probe, buffer_layout, chainable, kernel_source, module_source
from ptxconf.generators.ptx import Surroundings, checksum
from ptxconf.isa import load_specs
from ptxconf.isa.packing import lane_words_to_registers, pack
from ptxconf.isa.targets import PtxVersion, parse_target
from ptxconf.oracle import mma
from ptxconf.run.runner import plan_variant

REPO = Path(__file__).resolve().parents[3]
SPECS = load_specs(REPO / "specs")
VARIANTS = [v for v in SPECS.variants.values() if v.family == "mma.sync"]
IDS = [v.id for v in VARIANTS]
BLOCK_SCALE = [v.id for v in VARIANTS if v.instruction.block_scale]
INTEGER = [v.id for v in VARIANTS if v.operands["A"].type.kind in ("sint", "uint")]
EMU_CC, EMU_MAX_PTX = (12, 0), PtxVersion(9, 9)

HAVE_PTXAS = shutil.which("ptxas") is not None
needs_ptxas = [pytest.mark.ptxas, pytest.mark.skipif(not HAVE_PTXAS, reason="ptxas not on PATH")]

# A few variants per multiplicand type, for the exactness check.
EXACT = [
    "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16",
    "mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f16",
    "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32",
    "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
    "mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32",
    "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",
    "mma.sync.aligned.m16n8k4.row.col.f32.tf32.tf32.f32",
    "mma.sync.aligned.m16n8k32.row.col.f16.e4m3.e5m2.f16",
    "mma.sync.aligned.m16n8k16.row.col.f32.e5m2.e4m3.f32",
    "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32",
    "mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4.f16.e2m1.e2m1.f16",
    "mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4.f32.e3m2.e2m1.f32",
    "mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4.f16.e5m2.e2m3.f16",
    "mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64",
    "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64",
    "mma.sync.aligned.m16n8k32.row.col.kind::mxf8f6f4.block_scale.f32.e2m3.e4m3.f32.ue8m0",
    "mma.sync.aligned.m16n8k64.row.col.kind::mxf4.block_scale.f32.e2m1.e2m1.f32.ue8m0",
    "mma.sync.aligned.m16n8k64.row.col.kind::mxf4nvf4.block_scale.scale_vec::4X.f32.e2m1.e2m1.f32.ue4m3",
]


def _same(a: list, b: list) -> bool:
    """Two make_checks results hold the same inputs, filler, params and meta."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if (x.check, x.seed, x.params, x.meta) != (y.check, y.seed, y.params, y.meta):
            return False
        if x.bits.keys() != y.bits.keys() or x.filler.keys() != y.filler.keys():
            return False
        if not all(np.array_equal(x.bits[k], y.bits[k]) for k in x.bits):
            return False
        if not all(np.array_equal(x.filler[k], y.filler[k]) for k in x.filler):
            return False
    return True


# ---------------------------------------------------------------------------
# Reproducibility
# ---------------------------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(vid=st.sampled_from(IDS), seed=st.integers(0, 2**32 - 1))
def test_make_checks_is_deterministic_per_seed_and_variant(vid, seed):
    v = SPECS.variants[vid]
    first, second = make_checks(v, seed), make_checks(v, seed)
    assert [cs.check for cs in first] == list(CHECKS)
    assert _same(first, second)


@settings(max_examples=25, deadline=None)
@given(vid=st.sampled_from(IDS), seed=st.integers(0, 2**32 - 2))
def test_make_checks_differs_across_seeds(vid, seed):
    v = SPECS.variants[vid]
    a = make_checks(v, seed, ("value",))[0]
    b = make_checks(v, seed + 1, ("value",))[0]
    assert any(not np.array_equal(a.bits[k], b.bits[k]) for k in a.bits)
    assert any(not np.array_equal(a.filler[k], b.filler[k]) for k in a.filler)


def test_make_checks_differs_across_variants_of_one_type():
    # The variant id is hashed into the stream: two variants of identical operand types and shapes differ.
    a = make_checks(SPECS.variants["mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32"], 0, ("value",))[0]
    b = make_checks(SPECS.variants["mma.sync.aligned.m16n8k16.row.col.satfinite.s32.s8.s8.s32"], 0, ("value",))[0]
    assert not np.array_equal(a.bits["A"], b.bits["A"])


def test_unknown_check_is_refused():
    with pytest.raises(ValueError, match="unknown check"):
        make_checks(VARIANTS[0], 0, ("value", "map.Z2"))


# ---------------------------------------------------------------------------
# Value checks: representable and exact
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("vid", IDS)
def test_value_inputs_are_exactly_representable(vid):
    v = SPECS.variants[vid]
    cs = make_checks(v, 7, ("value",))[0]
    assert cs.cases == 8
    for name, bits in cs.bits.items():
        t = v.operands[name].type
        assert bits.dtype == np.uint64
        assert np.all(bits <= np.uint64(t.mask)), f"{name}: bits outside the .{t.name} container"
        vals = t.decode(bits)
        if t.kind == "float":
            assert np.all(np.isfinite(vals)), f"{name}: NaN or infinity drawn"
        assert np.array_equal(t.encode(vals), bits), f"{name}: encode(decode(bits)) != bits"


def _fractions(x: np.ndarray) -> np.ndarray:
    return np.vectorize(lambda f: Fraction(float(f)), otypes=[object])(x)


def _exact_d(v, bits) -> np.ndarray:
    """D = A*B + C (with block scales) in exact rational arithmetic, written independently of the oracle."""
    ops = v.operands
    a = _fractions(ops["A"].type.decode(bits["A"]))
    b = _fractions(ops["B"].type.decode(bits["B"]))
    c = _fractions(ops["C"].type.decode(bits["C"]))
    if "scale_A" in bits:
        sa = _fractions(ops["scale_A"].type.decode(bits["scale_A"]))  # [case, 1, M, SF]
        sb = _fractions(ops["scale_B"].type.decode(bits["scale_B"]))  # [case, 1, SF, N]
        k = a.shape[-1]
        chunk = k // sa.shape[-1]
        col_chunk = np.arange(k) // chunk
        a = a * sa[..., col_chunk]
        b = b * sb[..., col_chunk, :]
    return np.matmul(a, b) + c


@pytest.mark.parametrize("vid", EXACT)
@settings(max_examples=3, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_value_check_result_is_exact(vid, seed):
    v = SPECS.variants[vid]
    cs = make_checks(v, seed, ("value",), value_cases=2)[0]
    exact = _exact_d(v, cs.bits)
    # The float64 sum (what the oracle computes before its one rounding) is already exact ...
    ops = v.operands
    a, b, c = (ops[n].type.decode(cs.bits[n]) for n in "ABC")
    if "scale_A" in cs.bits:
        sa = ops["scale_A"].type.decode(cs.bits["scale_A"])
        sb = ops["scale_B"].type.decode(cs.bits["scale_B"])
        chunk = a.shape[-1] // sa.shape[-1]
        a, b = a * np.repeat(sa, chunk, axis=-1), b * np.repeat(sb, chunk, axis=-2)
    f64 = a @ b + c
    assert np.all(_fractions(f64) == exact)
    # ... and so is the oracle's D: the result is representable in D's type.
    d = ops["D"].type.decode(mma(v, cs.bits))
    wrong = np.argwhere(_fractions(d) != exact)
    assert len(wrong) == 0, f"inexact at {wrong[0].tolist()}: oracle {d[tuple(wrong[0])]!r}, exact {exact[tuple(wrong[0])]}"
    # Not trivially zero: the check exercises the multiply.
    assert np.any(np.matmul(_fractions(a), _fractions(b)) != 0)


# ---------------------------------------------------------------------------
# Map checks
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("vid", IDS)
def test_map_checks_tag_every_element_distinctly(vid):
    v = SPECS.variants[vid]
    m, n, k = v.shape
    sets = {cs.check: cs for cs in make_checks(v, 3, ("map.A", "map.B", "map.C"))}
    for target in "ABC":
        cs = sets[f"map.{target}"]
        op = v.operands[target]
        meta = cs.meta
        digits, blocks, radix = meta["digits"], meta["blocks"], meta["radix"]
        assert meta["target"] == target
        assert cs.cases == digits * blocks
        assert radix == len(meta["alphabet"]) >= 2
        assert radix**digits >= op.layout.matrices * op.layout.rows * op.layout.cols
        alpha = np.array(alphabet(op.type.name, v.operands["D"].type.name))
        # Alphabet values are exact in the operand's type and in D's.
        for t in (op.type, v.operands["D"].type):
            assert np.array_equal(t.decode(t.encode(alpha)), alpha)
        vals = op.type.decode(cs.bits[target])  # [case, matrix, row, col]
        assert np.all(np.isin(vals, alpha))
        # Every element of the tagged operand gets its own digit tuple (over one block's cases) ...
        tuples = vals[:digits].reshape(digits, -1).T
        assert len({tuple(t) for t in tuples}) == tuples.shape[0], f"map.{target}: two elements share a tag"
        # ... and every block repeats the same tags.
        for s in range(1, blocks):
            assert np.array_equal(cs.bits[target][s * digits : (s + 1) * digits], cs.bits[target][:digits])
        # The oracle's D is then a selection of the tagged operand (a popc of XOR is not).
        if v.instruction.bitop == "xor":
            continue
        d = v.operands["D"].type.decode(mma(v, cs.bits))
        for s in range(blocks):
            for dd in range(digits):
                case = s * digits + dd
                want = np.zeros(d.shape[1:])
                if target == "A":
                    cols = np.arange(n) + n * s
                    ok = cols < k
                    want[:, :, ok] = vals[case][:, :, cols[ok]]
                elif target == "B":
                    rows = np.arange(m) + m * s
                    ok = rows < k
                    want[:, ok, :] = vals[case][:, rows[ok], :]
                else:
                    want = vals[case]
                assert np.array_equal(d[case], want), f"map.{target} case {case}: D is not the selected tags"


@pytest.mark.parametrize("vid", IDS)
def test_value_check_a_and_b_registers_differ(vid):
    v = SPECS.variants[vid]
    cs = make_checks(v, 11, ("value",))[0]
    regs = {
        name: lane_words_to_registers(v.operands[name], pack(v.operands[name], cs.bits[name], cs.params.get(name), cs.filler.get(name)))
        for name in ("A", "B")
    }
    shared = min(regs["A"].shape[-1], regs["B"].shape[-1])
    for case in range(cs.cases):
        assert not np.array_equal(regs["A"][case, :, :shared], regs["B"][case, :, :shared]), (
            f"case {case}: A and B registers identical, so swapped operands would go unnoticed"
        )


@pytest.mark.parametrize("vid", INTEGER)
def test_integer_value_cases_put_c_near_the_s32_limits(vid):
    v = SPECS.variants[vid]
    cs = make_checks(v, 5, ("value",))[0]
    c = v.operands["C"].type.decode(cs.bits["C"])
    assert c.min() >= -(2**31) and c.max() <= 2**31 - 1
    edge = np.abs(c) >= 2**31 - 2**19
    assert np.all(edge[1::2]), "odd cases should all sit near the s32 limits"
    assert not np.any(edge[0::2]), "even cases should hold small accumulators"
    near = c[1::2]
    assert near.max() > 2**31 - 2**19 and near.min() < -(2**31) + 2**19, "both limits should be approached"


@pytest.mark.parametrize(
    "vid",
    ["mma.sync.aligned.m16n8k16.row.col.satfinite.s32.s8.s8.s32", "mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32"],
)
def test_byte_integer_value_cases_leave_the_s32_range(vid):
    # With 8-bit multiplicands the exact sums do cross the limits: .satfinite clamps, plain forms wrap.
    v = SPECS.variants[vid]
    cs = make_checks(v, 0, ("value",))[0]
    a, b, c = (v.operands[n].type.decode(cs.bits[n]) for n in "ABC")
    acc = a @ b + c
    assert np.any(acc > 2**31 - 1) and np.any(acc < -(2**31))


# ---------------------------------------------------------------------------
# Block scale: selectors and garbage
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("vid", BLOCK_SCALE)
def test_block_scale_selectors_are_legal_and_unheld_slots_hold_filler(vid):
    v = SPECS.variants[vid]
    plan = plan_variant(v, 2, EMU_CC, EMU_MAX_PTX)
    words = split_inputs(v, plan.in_words)
    for cs in plan.case_sets:
        a0, a1 = plan.slices[cs.check]
        for name in ("scale_A", "scale_B"):
            op = v.operands[name]
            params = cs.params[name]
            assert params in op.param_combinations(), f"{name} selector {params} not legal"
            assert set(params) == {"thread_id", "byte_id"}
            assert plan.probe.params[name] == params  # the immediates the probe is built with
            held = op.layout.held(params)
            assert held.any() and (~held).any()
            regs = lane_words_to_registers(op, words[name][a0:a1])  # [case, lane, register]
            e = np.arange(op.layout.elements)
            shift = ((e % op.fragment.per_register) * op.fragment.container_bits).astype(np.uint64)
            slots = (regs[:, :, e // op.fragment.per_register] >> shift) & np.uint64(0xFF)  # container bytes
            filler = cs.filler[name] & np.uint64(0xFF)
            assert np.array_equal(slots[:, ~held], filler[:, ~held]), f"{cs.check}: unheld {name} slots lost the filler"
            assert np.count_nonzero(filler[:, ~held]) > 0.9 * filler[:, ~held].size, "filler should be garbage, not zeros"
            # Held slots decode to the scale factors the check chose.
            m = op.layout.map(params)
            lanes, es = np.nonzero(held)
            want = cs.bits[name][:, m[lanes, es, 0], m[lanes, es, 1], m[lanes, es, 2]]
            assert np.array_equal(slots[:, lanes, es] & np.uint64(op.type.mask), want)
            assert np.array_equal(slots[:, lanes, es] >> np.uint64(op.type.bits), np.zeros_like(want))


@pytest.mark.parametrize("vid", BLOCK_SCALE[:3] + BLOCK_SCALE[-3:])
def test_block_scale_selectors_vary_with_the_seed(vid):
    v = SPECS.variants[vid]
    seen = {name: set() for name in ("scale_A", "scale_B")}
    for seed in range(40):
        params = make_checks(v, seed, ("map.C",))[0].params
        for name in seen:
            seen[name].add(tuple(sorted(params[name].items())))
    for name, combos in seen.items():
        legal = {tuple(sorted(p.items())) for p in v.operands[name].param_combinations()}
        assert combos <= legal
        assert len(combos) > 1 or len(legal) == 1


def test_scale_values_are_exact_scale_factors():
    v = SPECS.variants["mma.sync.aligned.m16n8k64.row.col.kind::mxf4nvf4.block_scale.scale_vec::4X.f32.e2m1.e2m1.f32.ue4m3"]
    cs = make_checks(v, 1, ("value",))[0]
    for name in ("scale_A", "scale_B"):
        vals = v.operands[name].type.decode(cs.bits[name])
        assert set(np.unique(vals)) <= {0.5, 1.0, 1.5, 2.0}
    for cs in make_checks(v, 1, ("map.A", "map.B", "map.C")):
        for name in ("scale_A", "scale_B"):
            assert np.all(v.operands[name].type.decode(cs.bits[name]) == 1.0), "map checks use unit scales"


# ---------------------------------------------------------------------------
# Probes: ptxas accepts them
# ---------------------------------------------------------------------------


def _probes_for(v, seed: int) -> list[Probe]:
    """Two probes per variant: chained with live registers (where chainable), and plain with other selectors."""
    p1 = make_checks(v, seed, ("map.C",))[0].params
    p2 = make_checks(v, seed + 1, ("map.C",))[0].params
    return [
        Probe(v, p1, Surroundings(chain=chainable(v), extra_regs=3, salt=12345 + seed)),
        Probe(v, p2, Surroundings()),
    ]


def _assemble(tmp_path: Path, src: str, arch: str, name: str) -> subprocess.CompletedProcess:
    path = tmp_path / f"{name}.ptx"
    path.write_text(src)
    return subprocess.run(
        ["ptxas", f"-arch={arch}", "-o", str(tmp_path / f"{name}.cubin"), str(path)],
        capture_output=True, text=True, timeout=300,
    )


def _assemble_groups(tmp_path: Path, arch: str, groups: dict[PtxVersion, list]) -> None:
    target = parse_target(arch)
    failures = []
    for version, variants in groups.items():
        probes = [p for v in variants for p in _probes_for(v, 0)]
        res = _assemble(tmp_path, module_source(probes, version, target), arch, f"all_{version}")
        if res.returncode == 0:
            continue
        # Name the culprits: assemble each variant alone.
        for v in variants:
            one = _assemble(tmp_path, module_source(_probes_for(v, 0), version, target), arch, "one")
            if one.returncode:
                failures.append(f"{v.id} (.version {version}): {one.stderr.strip()[:400]}")
        failures = failures or [f"module .version {version}: {res.stderr.strip()[:800]}"]
    assert not failures, "ptxas rejected:\n" + "\n".join(failures)


@pytest.mark.ptxas
@pytest.mark.skipif(not HAVE_PTXAS, reason="ptxas not on PATH")
def test_probes_assemble_for_sm_90a_at_version_9_0(tmp_path):
    target, version = parse_target("sm_90a"), PtxVersion(9, 0)
    variants = [v for v in VARIANTS if v.valid_for(target, version) is None]
    assert len(variants) >= 90  # every dense mma.sync form Hopper has
    assert not any("kind::" in v.id for v in variants)
    _assemble_groups(tmp_path, "sm_90a", {version: variants})


@pytest.mark.ptxas
@pytest.mark.skipif(not HAVE_PTXAS, reason="ptxas not on PATH")
def test_probes_assemble_for_sm_120a_at_their_min_version(tmp_path):
    target, cap = parse_target("sm_120a"), PtxVersion(9, 0)
    groups: dict[PtxVersion, list] = defaultdict(list)
    excluded = []
    for v in VARIANTS:
        if v.valid_for(target) is not None:
            continue
        version = max(v.min_ptx, target.min_ptx)
        if version > cap:
            excluded.append(v.id)
            continue
        assert v.valid_for(target, version) is None
        groups[version].append(v)
    assert all(SPECS.variants[x].min_ptx > cap for x in excluded)
    assert sum(len(g) for g in groups.values()) >= 190
    assert any(v.instruction.block_scale for g in groups.values() for v in g)
    _assemble_groups(tmp_path, "sm_120a", groups)


@pytest.mark.ptxas
@pytest.mark.skipif(not HAVE_PTXAS, reason="ptxas not on PATH")
def test_ptxas_rejects_a_broken_probe(tmp_path):
    # The assembling tests above would be vacuous if ptxas accepted anything.
    v = SPECS.variants["mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"]
    src = module_source(_probes_for(v, 0), PtxVersion(9, 0), parse_target("sm_90a"))
    broken = src.replace(v.id, v.id.replace("m16n8k16", "m16n8k17"), 1)
    assert _assemble(tmp_path, broken, "sm_90a", "broken").returncode != 0


# ---------------------------------------------------------------------------
# Probes: text, chaining, checksum
# ---------------------------------------------------------------------------


@settings(max_examples=20, deadline=None)
@given(vid=st.sampled_from(IDS), seed=st.integers(0, 2**31))
def test_same_seed_gives_the_same_ptx(vid, seed):
    v = SPECS.variants[vid]
    texts = []
    for _ in range(2):
        plan = plan_variant(v, seed, EMU_CC, EMU_MAX_PTX)
        texts.append(module_source([plan.probe], plan.version, plan.target))
    assert texts[0] == texts[1]
    assert texts[0].startswith(f".version {plan.version}\n.target {plan.target.name}\n")
    assert v.id in texts[0]


def test_ptx_varies_with_the_seed():
    v = SPECS.variants["mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"]
    texts = set()
    for seed in range(8):
        plan = plan_variant(v, seed, EMU_CC, EMU_MAX_PTX)
        texts.add(module_source([plan.probe], plan.version, plan.target))
    assert len(texts) > 1


@pytest.mark.parametrize(
    "vid",
    [
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
        "mma.sync.aligned.m8n8k4.row.col.f16.f16.f16.f16",
        "mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64",
        "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32",
        "mma.sync.aligned.m16n8k64.row.col.kind::mxf4nvf4.block_scale.scale_vec::4X.f32.e2m1.e2m1.f32.ue4m3",
    ],
)
def test_chained_probes_contain_the_instruction_twice(vid):
    v = SPECS.variants[vid]
    assert chainable(v)
    params = make_checks(v, 0, ("map.C",))[0].params
    plain = kernel_source(Probe(v, params, Surroundings(chain=False)))
    chained = kernel_source(Probe(v, params, Surroundings(chain=True)))
    assert plain.count(f"    {v.id} ") == 1
    assert chained.count(f"    {v.id} ") == 2
    # The second issue reads C from the first one's D registers.
    second = [ln for ln in chained.splitlines() if ln.startswith(f"    {v.id} ")][1]
    d_regs = "{" + ", ".join(f"%d{r}" for r in range(v.operands["D"].registers)) + "}"
    assert second.count(d_regs) == 2 and "%za0" in second and "%zb0" in second


def test_unchainable_variants_are_never_chained():
    v = SPECS.variants["mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f16"]  # C .f16, D .f32
    assert not chainable(v)
    for seed in range(10):
        assert not plan_variant(v, seed, EMU_CC, EMU_MAX_PTX).probe.surroundings.chain


def _checksum_from_ptx(src: str) -> np.ndarray:
    """Evaluate the probe's own extra-register code (mad.lo.u32 then xor.b32) for every lane."""
    lanes = np.arange(32, dtype=np.uint64)
    acc = np.zeros(32, dtype=np.uint64)
    for mul, add in re.findall(r"mad\.lo\.u32 %x\d+, %t1, (0x[0-9A-Fa-f]+), (\d+);", src):
        acc ^= (lanes * np.uint64(int(mul, 16)) + np.uint64(int(add))) & np.uint64(0xFFFFFFFF)
    return acc


@settings(max_examples=20, deadline=None)
@given(extra=st.integers(0, 5), salt=st.integers(0, 2**31 - 1))
def test_checksum_matches_the_probe_and_the_emulator(extra, salt):
    v = SPECS.variants["mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32"]
    s = Surroundings(chain=False, extra_regs=extra, salt=salt)
    probe = Probe(v, {}, s)
    src = kernel_source(probe)
    assert src.count("xor.b32 %t7") == extra
    want = checksum(np.arange(32), s)
    assert want.dtype == np.uint32
    assert np.array_equal(_checksum_from_ptx(src), want.astype(np.uint64))
    if extra == 0:
        assert not want.any()
    cs = make_checks(v, 0, ("value",), value_cases=2)[0]
    layout = buffer_layout(v)
    words = np.zeros((cs.cases, 32, layout.in_words), dtype=np.uint32)
    for name, off in layout.inputs.items():
        op = v.operands[name]
        words[:, :, off : off + op.words] = pack(op, cs.bits[name])
    emu = EmulatorBackend(mma)
    (res,) = emu.run("", [Launch(probe, words, layout.out_words, np.array([1, 0], dtype=np.uint32), 1)])
    assert res.error is None
    assert np.array_equal(res.out[:, :, layout.checksum_offset], np.broadcast_to(want, (cs.cases, 32)))
