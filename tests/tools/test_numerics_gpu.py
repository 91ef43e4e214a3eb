"""The GPU numerics model (gpu.py) against model.py, the reference, bit for bit; the GPU fuzzer (gpu_fuzz.py).

GPU tests (marked ``gpu``) need CuPy and a CUDA device and are skipped with the reason otherwise: every path
and every parameter value on CPU-drawn batches, the recorded H100 cases, and the fuzzer end to end (device-drawn
inputs through the real mma.sync).  CPU tests check what runs on the host: the parameter refusals, the generated
model source (compiled for the host with g++ where present and run against model.py), the inline-asm operand lists
against the spec's registers (and through nvcc where present), the replay of GPU-found mismatches, and the CLI flag.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from ptxconf.isa.ptxtypes import ptx_type
from ptxconf.tools.numerics import gpu
from ptxconf.tools.numerics import gpu_fuzz as gf
from ptxconf.tools.numerics.fuzz import _values
from ptxconf.tools.numerics.harness import k_of, numeric_variants, path_of, rounding_variants
from ptxconf.tools.numerics.model import PathParams, Types, dot_bits

ROOT = Path(__file__).resolve().parents[2]
RUNS = [d for d in (ROOT / "results" / "h100-numerics", ROOT / "results" / "h100-numerics-wgmma")
        if (d / "observations.npz").exists()]
F16F32 = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
# one mma.sync form per path: the GPU fuzz's smoke set (no recorded open finding on these shapes)
MAIN = {"f16.f16": "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16", "f16.f32": F16F32,
        "bf16.f32": "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
        "tf32.f32": "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",
        "fp8.f32": "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32",
        "fp8.f16": "mma.sync.aligned.m16n8k32.row.col.f16.e5m2.e4m3.f16",
        "int": "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.u8.s32",
        "b1": "mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.xor.popc",
        "f64": "mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64"}
# every implemented value of every float parameter, alone and in combinations that reach the rarer branches
FLOAT_CHANGES = ([{"frac_bits": f} for f in (0, 3, 13, 24, 30, 40)] + [{"final_rounding": r} for r in gpu._ROUNDING]
                 + [{"out_precision": o} for o in (2, 8, 11, 14, 25, 50)]
                 + [{"align": a} for a in ("truncate", "rne", "sticky")] + [{"c_entry": c} for c in ("fused", "late", "add_rne")]
                 + [{"k_order": k} for k in ("natural", "pairs")] + [{"exp_floor": e} for e in (None, -20, 5)]
                 + [{"in_subnormals": "flush"}, {"out_subnormals": "flush"}, {"overflow": "saturate"}, {"overflow": "ieee"},
                    {"neg_zero": "ieee"}, {"input_conversion": "rna"}, {"input_conversion": "rne"}]
                 + [{"block": b} for b in (1, 2, 3, 5)] + [{"nan_propagation": n} for n in gpu._NAN if n not in gpu._NAN_F64_ONLY]
                 + [{"underflow_sign": "positive"}, {"underflow_sign": "positive", "c_entry": "add_rne", "block": 1},
                    {"underflow_sign": "positive", "out_precision": 30, "final_rounding": "rne"}]
                 + [{"block": 2, "c_entry": "late", "final_rounding": "ru", "out_precision": 25},
                    {"block": 3, "k_order": "pairs", "c_entry": "add_rne", "align": "rne", "overflow": "ieee",
                     "final_rounding": "rd", "neg_zero": "ieee"},
                    {"block": 4, "overflow": "saturate", "out_subnormals": "flush", "final_rounding": "rne", "frac_bits": 10,
                     "out_precision": 12},
                    {"block": 2, "align": "sticky", "frac_bits": 3, "out_precision": 14, "overflow": "ieee",
                     "final_rounding": "ru", "nan_propagation": "payload_a_first"},
                    {"align": "sticky", "c_entry": "late", "exp_floor": None, "in_subnormals": "flush",
                     "nan_propagation": "payload_c_first", "out_precision": 40}]
                 + [{"c_entry": "block_add"}, {"acc_type": "f32"}, {"acc_type": "f32", "out_precision": 11, "final_rounding": "rz"},
                    {"c_entry": "block_add", "acc_type": "f32", "block": 2, "align": "sticky", "frac_bits": 26,
                     "out_precision": 24, "final_rounding": "rne", "exp_floor": None},
                    {"c_entry": "block_add", "block": 3, "k_order": "pairs", "final_rounding": "rd", "overflow": "ieee",
                     "neg_zero": "ieee", "underflow_sign": "positive"}])
F64_CHANGES = [{}, {"f64_mode": "reverse_fma"}, {"f64_rnd": "ignored"}, {"nan_propagation": "payload_c_first"},
               {"nan_propagation": "payload_a_first"}, {"nan_propagation": "payload_c_b_a"}, {"nan_propagation": "payload_b_c_a"}]

_OK, _WHY = gpu.available()


def _combos(specs, spec) -> list[tuple[PathParams, Types, int]]:
    """Every (path parameters, types, K) a numerics variant of the specs takes (f64 rounding forms included)."""
    out = {}
    for v in numeric_variants(specs) + rounding_variants(specs):
        p = path_of(spec, v)
        out.setdefault((p, Types.of(v), k_of(v)), None)
    return list(out)


def _specials(t: str) -> np.ndarray:
    """Encodings at the edges of a type: zeros, infinities, NaNs with payloads, the extreme finite values."""
    pt = ptx_type(t)
    if pt.kind != "float":
        lo, hi = pt.int_range()
        return pt.encode(np.array(sorted({lo, hi, 0, 1, -1 if lo < 0 else hi // 2})))
    w = pt.bits
    sign = 1 << (w - 1)
    ones = pt.mask >> 1
    vals = [0, sign, 1, sign | 1, ones, ones - 1, ones ^ (ones >> 3), sign | ones, 0x7F800000 if w == 32 else ones >> 1]
    if t in ("f16", "bf16", "f32", "tf32", "e5m2", "f64"):
        mb = {"f16": 10, "bf16": 7, "f32": 23, "tf32": 23, "e5m2": 2, "f64": 52}[t]
        inf = ones ^ ((1 << mb) - 1)
        vals += [inf, sign | inf, inf | 1, inf | (1 << (mb - 1)), sign | inf | 3, inf - 1, 1 << mb, (1 << mb) - 1]
        if t == "tf32":
            vals += [inf | 0x1FFF, 0x3F801000, 0x3F803000, 0x3F800FFF]
    return np.array([v & pt.mask for v in vals], dtype=np.uint64)


def _batch(t: Types, k: int, n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """CPU-drawn dot products: fuzz.py's value recipes, cancellations, and edge encodings mixed in."""
    rng = np.random.default_rng(seed)
    parts = []
    for spread, sub, special in ((1, 0.0, 0.0), (3, 0.1, 0.0), (20, 0.02, 0.02), (60, 0.1, 0.05), (200, 0.3, 0.0),
                                 (1100, 0.1, 0.1)):
        parts.append([_values(rng, t.a, (n, k), spread, sub, special), _values(rng, t.b, (n, k), spread, sub, special),
                      _values(rng, t.c, (n,), spread, sub, special)])
    a, b, c = (x.copy() for x in parts[2])
    if ptx_type(t.a).kind == "float" and k > 1:  # exact cancellation of the first two products
        a[:, 1] = a[:, 0] ^ np.uint64(1 << (ptx_type(t.a).bits - 1))
        b[:, 1] = b[:, 0]
        parts.append([a, b, c])
    edge = [_specials(x) for x in (t.a, t.b, t.c)]
    a, b, c = (x.copy() for x in parts[1])
    for arr, pool in ((a, edge[0]), (b, edge[1]), (c, edge[2])):
        hit = rng.random(arr.shape) < 0.15
        arr[hit] = rng.choice(pool, size=int(hit.sum()))
    parts.append([a, b, c])
    return tuple(np.concatenate(x) for x in zip(*parts))


# ---------------------------------------------------------------------------
# CPU: refusals, sources, replay, CLI
# ---------------------------------------------------------------------------


def test_every_spec_path_is_implemented_on_the_gpu(specs, spec):
    """The shipped spec needs nothing the kernel lacks (a new parameter value there must be added to gpu.py)."""
    for p, t, k in _combos(specs, spec):
        gpu.check(p, t, k)


def test_check_refuses_what_the_kernel_does_not_implement(specs, spec):
    p = path_of(spec, specs.get(F16F32))
    t = Types.of(specs.get(F16F32))
    for change in ({"align": "nearest"}, {"frac_bits": gpu.MAX_FRAC_BITS + 1}, {"out_precision": 60},
                   {"final_rounding": "stochastic"}, {"nan_propagation": "first"}, {"f64_mode": "exact_dot"},
                   {"exp_floor": 5000}):
        with pytest.raises(gpu.NotOnGpu, match=next(iter(change))):
            gpu.check(replace(p, **change), t, 16)
    with pytest.raises(gpu.NotOnGpu, match="e2m1"):
        gpu.check(p, replace(t, a="e2m1"), 16)
    with pytest.raises(gpu.NotOnGpu, match="kind"):
        gpu.check(replace(p, kind="posit"), t, 16)


def test_check_refuses_a_parameter_added_later_unless_it_keeps_its_default(specs, spec):
    """A parameter model.py gains after gpu.py was written: its default is today's arithmetic, any other value is not."""

    @dataclasses.dataclass(frozen=True)
    class Later(PathParams):
        sub_window: str = "none"

    p = path_of(spec, specs.get(F16F32))
    t = Types.of(specs.get(F16F32))
    base = {f.name: getattr(p, f.name) for f in dataclasses.fields(p)}
    gpu.check(Later(**base), t, 16)
    with pytest.raises(gpu.NotOnGpu, match="sub_window='sticky'.*default 'none'"):
        gpu.check(Later(**base, sub_window="sticky"), t, 16)


def test_model_source_names_each_parameter(specs, spec):
    v = specs.get(MAIN["fp8.f32"])
    p = path_of(spec, v)
    src = gpu.model_source(p, Types.of(v), k_of(v))
    for line in ("#define FRAC 25", "#define NHALF 2", "#define C_ENTRY 2", "#define KDIM 32", "#define A_EB 4",
                 "#define B_EB 5", "#define D_MB 23"):
        assert line in src, line
    other = gpu.model_source(replace(p, frac_bits=13, k_order="natural"), Types.of(v), k_of(v))
    assert "#define FRAC 13" in other and "#define NHALF 1" in other


_HOST_SHIM = r"""
#include <cfenv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#define __device__
#define __forceinline__ inline
#define __global__
#define __restrict__
static inline int __clzll(long long x) { return x ? __builtin_clzll((unsigned long long)x) : 64; }
static inline double __longlong_as_double(long long x) { double d; memcpy(&d, &x, 8); return d; }
static inline long long __double_as_longlong(double d) { long long x; memcpy(&x, &d, 8); return x; }
static inline double __dadd_rn(double a, double b) { return a + b; }
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline double fma_in(double a, double b, double c, int mode) {
  std::fesetround(mode); volatile double r = std::fma(a, b, c); std::fesetround(FE_TONEAREST); return r;
}
static inline double __fma_rn(double a, double b, double c) { return fma_in(a, b, c, FE_TONEAREST); }
static inline double __fma_rz(double a, double b, double c) { return fma_in(a, b, c, FE_TOWARDZERO); }
static inline double __fma_ru(double a, double b, double c) { return fma_in(a, b, c, FE_UPWARD); }
static inline double __fma_rd(double a, double b, double c) { return fma_in(a, b, c, FE_DOWNWARD); }
struct Idx { unsigned x; };
static Idx blockIdx, blockDim, threadIdx;
"""
_HOST_MAIN = r"""
template <class T> static T* load(const char* path, long n) {
  T* p = (T*)malloc(sizeof(T) * n + 8); FILE* f = fopen(path, "rb");
  if (fread(p, sizeof(T), n, f) != (size_t)n) exit(3);
  fclose(f); return p;
}
int main(int argc, char** argv) {
  long n = atol(argv[1]);
  AT* a = load<AT>(argv[2], n * KDIM); BT* b = load<BT>(argv[3], n * KDIM); CT* c = load<CT>(argv[4], n);
  DT* d = (DT*)malloc(sizeof(DT) * n + 8);
  blockDim.x = 1; threadIdx.x = 0;
  for (long t = 0; t < n; t++) { blockIdx.x = (unsigned)t; numerics_model(a, b, c, d, n, 1, 1); }
  FILE* f = fopen(argv[5], "wb"); fwrite(d, sizeof(DT), n, f); fclose(f);
  return 0;
}
"""


def _host_model(p, t, a, b, c, work: Path) -> np.ndarray:
    """gpu.py's model source compiled for the host (the CUDA intrinsics as their IEEE host equivalents) and run."""
    src = _HOST_SHIM + gpu.model_source(p, t, a.shape[1]) + _HOST_MAIN
    name = f"m{abs(hash(src)) % 10**12}"
    exe = work / name
    if not exe.exists():
        (work / f"{name}.cpp").write_text(src)
        subprocess.run(["g++", "-O1", "-ffp-contract=off", "-frounding-math", "-w", "-o", str(exe), str(work / f"{name}.cpp")],
                       check=True)
    for x, tn, arr in (("a", t.a, a), ("b", t.b, b), ("c", t.c, c)):
        gpu.to_container(tn, arr).tofile(work / f"{x}.bin")
    subprocess.run([str(exe), str(len(c)), *(str(work / f"{x}.bin") for x in "abcd")], check=True)
    return np.fromfile(work / "d.bin", dtype=gpu.container(t.d)).astype(np.uint64)


@pytest.mark.skipif(shutil.which("g++") is None, reason="no g++ to compile the model source for the host")
def test_model_source_compiled_for_the_host_matches_model_py(specs, spec, tmp_path):
    """The kernel's arithmetic, run on the CPU: bit-identical to model.py per path and per parameter value."""
    seen = set()
    cases = []
    for p, t, k in _combos(specs, spec):  # each distinct parameter set once (per-shape overrides included)
        key = (p, t.rnd if p.kind == "f64" else None, t.c == t.d)
        if key not in seen:
            seen.add(key)
            cases.append((p, t, k))
    v = specs.get(MAIN["fp8.f16"])
    p0, t0 = path_of(spec, v), Types.of(v)
    for change in ({"align": "sticky", "nan_propagation": "payload_a_first", "out_precision": 14, "block": 3},
                   {"operand_cvt": "f16", "underflow_sign": "positive"}, {"operand_cvt": "f16", "in_subnormals": "flush"},
                   {"c_entry": "late", "k_order": "natural", "final_rounding": "ru", "overflow": "ieee", "neg_zero": "ieee"}):
        cases.append((replace(p0, **change), t0, k_of(v)))
    v = specs.get(MAIN["f64"])
    cases += [(replace(path_of(spec, v), **change), Types.of(v), k_of(v)) for change in F64_CHANGES]
    for i, (p, t, k) in enumerate(cases):
        a, b, c = _batch(t, k, 60 if p.kind == "f64" else 300, i)
        want = dot_bits(p, t, a, b, c)
        got = _host_model(p, t, a, b, c, tmp_path)
        bad = np.nonzero(want != got)[0]
        assert not len(bad), (p.name, t, {x: getattr(p, x) for x in p.describe()}, [hex(int(x)) for x in a[bad[0]]],
                              [hex(int(x)) for x in b[bad[0]]], hex(int(c[bad[0]])), hex(int(want[bad[0]])), hex(int(got[bad[0]])))


M8_F16 = "mma.sync.aligned.m8n8k4.row.row.f16.f16.f16.f16"
# c_entry block_add and acc_type f32 with every rounding, the D-range accumulator's Inf/NaN and saturation, zeros' signs
BLOCK_ADD_CHANGES = [{}, {"final_rounding": "rz"}, {"final_rounding": "ru", "out_precision": 11},
                     {"final_rounding": "rd", "acc_type": "d", "overflow": "ieee"}, {"acc_type": "d", "overflow": "saturate"},
                     {"block": 1, "k_order": "pairs", "final_rounding": "rna", "out_precision": 14, "align": "truncate"},
                     {"neg_zero": "positive", "underflow_sign": "positive", "out_subnormals": "flush", "frac_bits": 8},
                     {"out_precision": 50, "final_rounding": "ru", "exp_floor": -30}, {"c_entry": "fused", "out_precision": 11},
                     {"out_precision": 11, "underflow_sign": "positive", "out_subnormals": "flush"}, {"acc_type": "d"},
                     {"c_entry": "late", "final_rounding": "rz"}, {"c_entry": "add_rne", "block": 1}]


def _far_and_zero_rows(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """f16 rows ``_batch`` rarely draws: C near 2^15 with subnormal products (float64's sum is inexact, so the
    round-to-odd step decides a directed rounding), and zeros of random signs (the sign of an exact zero sum)."""
    rng = np.random.default_rng(seed)

    def sign(shape) -> np.ndarray:
        return rng.integers(0, 2, shape, dtype=np.uint64) << np.uint64(15)

    a = rng.integers(1, 0x40, (n, 4), dtype=np.uint64) | sign((n, 4))  # products below 2^-36, C's last float64 bit
    b = rng.integers(1, 0x40, (n, 4), dtype=np.uint64) | sign((n, 4))
    c = rng.integers(0x7400, 0x7C00, n, dtype=np.uint64) | sign(n)
    return np.concatenate([a, sign((n, 4))]), np.concatenate([b, sign((n, 4))]), np.concatenate([c, sign(n)])


@pytest.mark.skipif(shutil.which("g++") is None, reason="no g++ to compile the model source for the host")
def test_block_add_and_acc_type_compiled_for_the_host_match_model_py(specs, spec, tmp_path):
    """The pair-sum chain of m8n8k4 f16 -> f16 (c_entry block_add, acc_type f32) and its neighbours, bit for bit."""
    cases = [(M8_F16, change, i) for i, change in enumerate(BLOCK_ADD_CHANGES)]
    cases += [(MAIN["f16.f16"], {"block": 4}, 90), (MAIN["fp8.f16"], {"c_entry": "block_add", "acc_type": "f32"}, 91)]
    m8 = path_of(spec, specs.get(M8_F16))
    for vid, change, seed in cases:
        v = specs.get(vid)
        base = path_of(spec, v) if vid == M8_F16 else replace(path_of(spec, v), c_entry="block_add", acc_type=m8.acc_type)
        p, t = replace(base, **change), Types.of(v)
        a, b, c = _batch(t, k_of(v), 400, seed)
        if vid == M8_F16:
            a, b, c = (np.concatenate(x) for x in zip((a, b, c), _far_and_zero_rows(100, seed)))
        want, got = dot_bits(p, t, a, b, c), _host_model(p, t, a, b, c, tmp_path)
        bad = np.nonzero(want != got)[0]
        assert not len(bad), (vid, change, [hex(int(x)) for x in a[bad[0]]], [hex(int(x)) for x in b[bad[0]]],
                              hex(int(c[bad[0]])), hex(int(want[bad[0]])), hex(int(got[bad[0]])))


def _mma_forms(specs) -> list:
    return [v for v in numeric_variants(specs, families=("mma.sync",)) + rounding_variants(specs) if gf.support_reason(v) is None]


def test_mma_source_operands_match_the_spec_registers(specs):
    """The inline asm takes D, A, B, C in the spec's register counts and types; every element is placed."""
    forms = _mma_forms(specs)
    assert len(forms) > 80
    letter = {"f32": "f", "f64": "d", "b32": "r", "s32": "r", "u32": "r", "b64": "l"}
    for v in forms:
        src = gf.mma_source(v)
        head = re.search(r'asm volatile\("(\S+) (.*?);"\s*: (.*?)\s*: (.*?)\);', src, re.S)
        assert head and head.group(1) == v.id, v.id
        groups = re.findall(r"\{([^}]*)\}", head.group(2))
        regs = [v.operands[x].registers for x in "DABC"]
        assert [len(g.split(",")) for g in groups] == regs, v.id
        assert re.findall(r"%(\d+)", head.group(2)) == [str(i) for i in range(sum(regs))], v.id
        cons = re.findall(r'"(=?)([a-z])"', head.group(3) + head.group(4))
        want = [("=" if x == "D" else "", letter[v.operands[x].fragment.register]) for x in "DABC"
                for _ in range(v.operands[x].registers)]
        assert cons == want, v.id
        mats, m, k, n = gf.dims(v)
        for x, size in (("A", mats * m * k), ("B", mats * n * k), ("C", mats * m * n), ("D", mats * m * n)):
            idx = gf.storage_index(v, x)
            counts = np.bincount(idx[idx >= 0], minlength=size)
            assert len(counts) == size and (counts == v.operands[x].layout.copies).all(), (v.id, x)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="no nvcc to compile the generated CUDA")
def test_generated_cuda_compiles_for_sm90(specs, spec, tmp_path):
    """What NVRTC will compile on the GPU machine, through nvcc and ptxas here (inline-asm constraints included)."""
    srcs = {f"hw{i}": gf.mma_source(specs.get(vid)) for i, vid in enumerate(MAIN.values())}
    f64 = next(v for v in rounding_variants(specs) if ".rz." in v.id)
    srcs["hwf64"] = gf.mma_source(f64)
    for name in ("fp8.f16", "tf32.f32", "b1"):
        v = specs.get(MAIN[name])
        srcs[f"model_{name}"] = gpu.model_source(path_of(spec, v), Types.of(v), k_of(v))
    srcs["model_f64"] = gpu.model_source(path_of(spec, f64), Types.of(f64), k_of(f64))
    srcs["draw"] = gf.draw_source("tf32")
    srcs["compare"] = gf.compare_source("f16")
    for name, src in srcs.items():
        (tmp_path / f"{name}.cu").write_text(src)
        r = subprocess.run(["nvcc", "-arch=sm_90", "-cubin", "-o", str(tmp_path / f"{name}.cubin"), str(tmp_path / f"{name}.cu")],
                           capture_output=True, text=True)
        assert r.returncode == 0, (name, r.stderr[-2000:])


def test_replay_tells_a_departure_from_a_gpu_model_error(specs, spec, tmp_path):
    """A GPU-found mismatch is judged by model.py: hardware departure (confirmed) or GPU-model error."""
    from ptxconf.tools.numerics.recorded import Case

    v = specs.get(F16F32)
    p, t = path_of(spec, v), Types.of(v)
    a, b, c = _batch(t, 16, 4, 7)
    a, b, c = a[:3], b[:3], c[:3]
    ref = dot_bits(p, t, a, b, c)
    observed = ref.copy()
    gpu_model = ref.copy()
    observed[0] ^= np.uint64(1)  # the hardware departs; the GPU model agrees with model.py
    gpu_model[1] ^= np.uint64(1)  # the GPU model is wrong; the hardware agrees with model.py
    rows = gf.replay(p, t, a, b, c, observed, gpu_model)
    assert [(r["confirmed"], r["gpu_model_ok"]) for r in rows] == [(True, True), (False, False), (False, True)]
    path = gf.save_replay(tmp_path, v, p, rows[0], "gpu1-0", "test")
    rec = json.loads(path.read_text())
    case = Case(rec["variant"], rec["path"], "replay", path.name, "fuzz", [int(x, 16) for x in rec["a"]],
                [int(x, 16) for x in rec["b"]], int(rec["c"], 16), int(rec["observed"], 16))
    assert int(dot_bits(p, t, [case.a], [case.b], [case.c])[0]) == int(rec["model"], 16) != case.observed


def test_recipes_and_exponent_windows():
    r1 = gf.Recipe.draw(np.random.default_rng([3, 1]))
    assert r1 == gf.Recipe.draw(np.random.default_rng([3, 1]))
    assert 1 <= r1.spread <= 60 and -40 <= r1.c_scale <= 40
    assert gf.exponent_range("f16", 5) == (-5, 5)
    assert gf.exponent_range("e4m3", 60) == (-6, 8)
    assert gf.exponent_range("f16", 3, 40) == (15, 15)  # the window above the type: its largest binade
    assert gf.exponent_range("tf32", 60, -100) == (-126, -40)
    assert gf._threshold(1.0) == 2**32 - 1 and gf._threshold(0.0) == 0


@pytest.mark.skipif(_OK, reason="CuPy and a GPU are present (the GPU test runs the flag)")
def test_cli_on_gpu_without_cupy_is_one_line_exit_2(tmp_path, capsys):
    from ptxconf.cli.main import main

    rc = main(["fuzz", "numerics", "--on", "gpu", "--select", F16F32, "--budget", "1", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2 and "--on gpu" in err and ("CuPy" in err or "device" in err), err


# ---------------------------------------------------------------------------
# GPU
# ---------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.skipif(not _OK, reason=f"no GPU for the CuPy model: {_WHY}")
@pytest.mark.parametrize("kind", ["float", "f64", "int", "b1"])
def test_gpu_model_matches_model_py_on_every_path(specs, spec, kind):
    for i, (p, t, k) in enumerate(c for c in _combos(specs, spec) if c[0].kind == kind):
        a, b, c = _batch(t, k, 40 if kind == "f64" else 2000, i)
        want, got = dot_bits(p, t, a, b, c), gpu.dot_bits_gpu(p, t, a, b, c)
        bad = np.nonzero(want != got)[0]
        assert not len(bad), (p.name, t, k, [hex(int(x)) for x in a[bad[0]]], [hex(int(x)) for x in b[bad[0]]],
                              hex(int(c[bad[0]])), hex(int(want[bad[0]])), hex(int(got[bad[0]])))


@pytest.mark.parametrize("vid", [MAIN["f16.f32"], MAIN["f16.f16"], MAIN["bf16.f32"], MAIN["tf32.f32"], MAIN["fp8.f16"],
                                 "mma.sync.aligned.m8n8k4.row.row.f32.f16.f16.f16"])
@pytest.mark.gpu
@pytest.mark.skipif(not _OK, reason=f"no GPU for the CuPy model: {_WHY}")
def test_gpu_model_matches_model_py_for_every_parameter_value(specs, spec, vid):
    v = specs.get(vid)
    p0, t, k = path_of(spec, v), Types.of(v), k_of(v)
    a, b, c = _batch(t, k, 400, 11)
    for change in FLOAT_CHANGES:
        p = replace(p0, **change)
        want, got = dot_bits(p, t, a, b, c), gpu.dot_bits_gpu(p, t, a, b, c)
        assert (want == got).all(), (vid, change, int((want != got).sum()))


@pytest.mark.gpu
@pytest.mark.skipif(not _OK, reason=f"no GPU for the CuPy model: {_WHY}")
def test_gpu_model_matches_model_py_for_every_f64_parameter_value(specs, spec):
    for v in [v for v in rounding_variants(specs) if "m8n8k4" in v.id]:  # each rounding modifier once
        p0, t, k = path_of(spec, v), Types.of(v), k_of(v)
        a, b, c = _batch(t, k, 60, 5)
        for change in F64_CHANGES:
            p = replace(p0, **change)
            want, got = dot_bits(p, t, a, b, c), gpu.dot_bits_gpu(p, t, a, b, c)
            assert (want == got).all(), (v.id, change, int((want != got).sum()))


@pytest.mark.gpu
@pytest.mark.skipif(not _OK, reason=f"no GPU for the CuPy model: {_WHY}")
@pytest.mark.skipif(not RUNS, reason="no recorded H100 numerics run")
@pytest.mark.parametrize("run_dir", RUNS, ids=lambda d: d.name)
def test_gpu_model_matches_model_py_on_the_recorded_h100_cases(specs, spec, run_dir):
    """Every recorded case (designed and fuzz replays): the GPU model's D is model.py's, so its departures are too."""
    from ptxconf.tools.numerics.recorded import RecordedRun

    run = RecordedRun(run_dir, specs, spec)
    checked = 0
    for (vid, _groups, a, b, c, _d), pos in zip(run.designed, run.positions):
        if pos is not None:  # mma.sp: the GPU model takes dense dot products only
            continue
        v = run.variant(vid)
        p, t = run.params(vid), Types.of(v)
        got = gpu.dot_bits_gpu(p, t, a, b, c)
        assert (got == dot_bits(p, t, a, b, c)).all(), vid
        checked += len(c)
    for r in run.replays:
        if getattr(r, "pos", None) is not None:
            continue
        v = run.variant(r.variant)
        p, t = run.params(r.variant), Types.of(v)
        assert int(gpu.dot_bits_gpu(p, t, [r.a], [r.b], [r.c])[0]) == int(dot_bits(p, t, [r.a], [r.b], [r.c])[0]), r.key
        checked += 1
    assert checked > 1000


# one mma.sync form per (shape, A type, D type) family of fragment layouts
PLACEMENT = [*MAIN.values(), "mma.sync.aligned.m8n8k4.row.row.f16.f16.f16.f16", "mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f16",
             "mma.sync.aligned.m8n8k4.row.row.f32.f16.f16.f32", "mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16",
             "mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32", "mma.sync.aligned.m16n8k4.row.col.f32.tf32.tf32.f32",
             "mma.sync.aligned.m16n8k16.row.col.f32.e4m3.e4m3.f32", "mma.sync.aligned.m8n8k16.row.col.s32.u8.s8.s32",
             "mma.sync.aligned.m8n8k32.row.col.s32.s4.u4.s32", "mma.sync.aligned.m16n8k64.row.col.satfinite.s32.u4.s4.s32",
             "mma.sync.aligned.m8n8k128.row.col.s32.b1.b1.s32.and.popc", "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64"]


@pytest.mark.gpu
@pytest.mark.skipif(not _OK, reason=f"no GPU for the CuPy model: {_WHY}")
@pytest.mark.parametrize("vid", PLACEMENT)
def test_mma_kernel_places_every_element(specs, spec, vid):
    """The hardware kernel alone, on dot products every arithmetic gets exact (small integers): D must be the exact
    A.B + C in the storage layout, so each operand's lane map is applied as the spec states it."""
    v = specs.get(vid)
    fz = gf.GpuFuzzer(v, path_of(spec, v), cases=64)
    t = fz.t
    mats, m, k, n = gf.dims(v)
    rng = np.random.default_rng(0)
    shape_a, shape_b, shape_c = (64, mats, m, k), (64, mats, n, k), (64, mats, m, n)
    if ptx_type(t.a).kind == "float":
        av, bv, cv = rng.integers(-3, 4, shape_a), rng.integers(-3, 4, shape_b), rng.integers(-8, 9, shape_c)
        a, b, c = (ptx_type(x).encode(y.astype(np.float64)) for x, y in ((t.a, av), (t.b, bv), (t.c, cv)))
        want = ptx_type(t.d).encode(np.einsum("xgmk,xgnk->xgmn", av, bv) + cv)
    else:
        a, b, c = (_values(rng, x, s, 1, 0.0, 0.0) for x, s in ((t.a, shape_a), (t.b, shape_b), (t.c, shape_c)))
        rows = (np.broadcast_to(a[:, :, :, None, :], (64, mats, m, n, k)).reshape(-1, k),
                np.broadcast_to(b[:, :, None, :, :], (64, mats, m, n, k)).reshape(-1, k))
        want = dot_bits(path_of(spec, v), t, *rows, c.reshape(-1)).reshape(shape_c)  # integer paths are exact
    got = fz.hardware(a, b, c)
    assert (got == want).all(), (vid, int((got != want).sum()))


@pytest.mark.gpu
@pytest.mark.skipif(not _OK, reason=f"no GPU for the CuPy model: {_WHY}")
@pytest.mark.parametrize("path", sorted(MAIN))
def test_gpu_fuzz_hardware_agrees_with_the_model(specs, spec, path, tmp_path):
    """End to end on the device: drawn operands, the real mma.sync, the model, the comparison.  Normal operands
    within 8 binades (no special, subnormal or overflowing value, where recorded departures live) match bit for bit,
    which pins the operand placement; the audit sample is bit-identical to model.py."""
    v = specs.get(MAIN[path])
    tame = gf.Recipe(spread=8, cancel=0.3, c_scale=0, sub_rate=0.0, special_rate=0.0)
    st = gf.fuzz_variant_gpu(v, path_of(spec, v), budget=0.5, cases=4096, out=tmp_path, seed=1, recipe=tame)
    assert st["dots"] >= 4096 * 128 and st["audited"] > 0
    assert st["gpu_model_errors"] == 0 and st["audit_errors"] == 0, st["examples"]
    assert st["mismatches"] == 0, st["examples"]


@pytest.mark.gpu
@pytest.mark.skipif(not _OK, reason=f"no GPU for the CuPy model: {_WHY}")
def test_gpu_fuzz_finds_and_replays_a_departure(specs, spec, tmp_path):
    """A model one window bit short of the hardware: mismatches on the device, each confirmed by model.py and saved."""
    v = specs.get(F16F32)
    p = replace(path_of(spec, v), frac_bits=23)
    st = gf.fuzz_variant_gpu(v, p, budget=1.0, cases=4096, out=tmp_path, seed=2)
    assert st["mismatches"] > 0 and st["replayed"] > 0
    assert st["confirmed"] == st["replayed"] and st["gpu_model_errors"] == 0
    rec = json.loads(Path(st["saved"][0]).read_text())
    got = dot_bits(p, Types.of(v), [[int(x, 16) for x in rec["a"]]], [[int(x, 16) for x in rec["b"]]], [int(rec["c"], 16)])
    assert hex(int(got[0])) == rec["model"] != rec["observed"]


@pytest.mark.gpu
@pytest.mark.skipif(not _OK, reason=f"no GPU for the CuPy model: {_WHY}")
def test_cli_fuzz_numerics_on_gpu(tmp_path, capsys):
    from ptxconf.cli.main import main

    rc = main(["fuzz", "numerics", "--on", "gpu", "--select", MAIN["bf16.f32"], "--select", "wgmma*m64n64k16.f32.bf16*",
               "--budget", "1", "--cases", "4096", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    doc = json.loads((tmp_path / "gpu-fuzz.json").read_text())
    assert rc == (1 if doc["total"]["mismatches"] else 0), out  # a confirmed departure fails the run, as the host fuzz does
    assert doc["total"]["gpu_model_errors"] == 0 and doc["total"]["audit_errors"] == 0
    assert doc["schema"] == gf.SCHEMA and doc["total"]["dots"] > 0 and doc["total"]["dots_per_s"] > 0
    # the mma.sync form on the device-only loop, the wgmma forms through their family's probe: every family is fuzzed
    assert {r["variant"]: r["fuzzer"] for r in doc["variants"]}[MAIN["bf16.f32"]] == "device"
    assert {r["fuzzer"] for r in doc["variants"] if r["family"] == "wgmma"} == {"probe"} and not doc["skipped"]
    assert set(doc["families"]) == {"mma.sync", "wgmma"}
    assert "dots/s" in out


def _overflow_rows(t: Types, k: int, n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """fp8 rows whose halves sum past f16's range, with infinities of either sign among the products and C."""
    rng = np.random.default_rng(seed)
    top = {"e5m2": 0x7B, "e4m3": 0x7E}
    a = rng.integers(top[t.a] - 12, top[t.a] + 1, (n, k), dtype=np.uint64) | (rng.integers(0, 2, (n, k), dtype=np.uint64) << 7)
    b = rng.integers(top[t.b] - 12, top[t.b] + 1, (n, k), dtype=np.uint64) | (rng.integers(0, 2, (n, k), dtype=np.uint64) << 7)
    inf = rng.random((n, k)) < 0.03
    a[inf] = np.where(rng.random(int(inf.sum())) < 0.5, 0x7C, 0xFC)  # e5m2 +-Inf (e4m3 has none: NaN there)
    c = rng.integers(0, 0x7C00, n, dtype=np.uint64) | (rng.integers(0, 2, n, dtype=np.uint64) << 15)
    c[rng.random(n) < 0.05] = 0xFC00
    return a, b, c


@pytest.mark.skipif(shutil.which("g++") is None, reason="no g++ to compile the model source for the host")
def test_infinities_and_half_overflow_compiled_for_the_host_match_model_py(specs, spec, tmp_path):
    """The blocks' infinities (a block holding one gives it; only a block without one overflows): the recorded fp8 -> f16
    replays of the GPU fuzzer and drawn overflow rows, kernel source against model.py."""
    for i, vid in enumerate(("mma.sync.aligned.m16n8k32.row.col.f16.e5m2.e4m3.f16", "mma.sync.aligned.m16n8k16.row.col.f16.e5m2.e5m2.f16")):
        v = specs.get(vid)
        p, t = path_of(spec, v), Types.of(v)
        a, b, c = _overflow_rows(t, k_of(v), 600, i)
        want, got = dot_bits(p, t, a, b, c), _host_model(p, t, a, b, c, tmp_path)
        assert (want == 0xFC00).any() and (want == 0x7C00).any() and (want == 0x7FFF).any()
        bad = np.nonzero(want != got)[0]
        assert not len(bad), (vid, [hex(int(x)) for x in a[bad[0]]], [hex(int(x)) for x in b[bad[0]]], hex(int(c[bad[0]])),
                              hex(int(want[bad[0]])), hex(int(got[bad[0]])))
    for f in sorted((ROOT / "results" / "h100-numerics-gpu" / "mismatches").glob("*e5m2*f16-*.json")):
        rec = json.loads(f.read_text())
        v = specs.get(rec["variant"])
        p, t = path_of(spec, v), Types.of(v)
        a, b = (np.array([[int(x, 16) for x in rec[n]]], dtype=np.uint64) for n in "ab")
        got = _host_model(p, t, a, b, np.array([int(rec["c"], 16)], dtype=np.uint64), tmp_path)
        assert int(got[0]) == int(rec["observed"], 16), f.name
