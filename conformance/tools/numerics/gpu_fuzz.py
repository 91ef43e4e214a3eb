"""Model-vs-hardware fuzzing that stays on the GPU: draw, mma, model and compare on the device.

Why: the host fuzzer (fuzz.py) is bounded by NumPy (about 2e5 model dot products/s) and by copying every
operand through the host.  Here each round draws the operands of thousands of MMAs on the device
(counter-based hash, recipe varied per round as fuzz.py's Hypothesis recipes are), runs the real
``mma.sync`` on those buffers (inline PTX, one warp per MMA, the operand placement read from the spec's
lane maps), evaluates gpu.py's model kernel on the same buffers (one thread per dot product) and compares
bit for bit on the device.  Only counts, the first few mismatching dot products (with their inputs) and a
small audit sample come back.  Every mismatch is replayed through model.py, the reference, before it is
reported: a mismatch model.py confirms is a hardware departure (saved replayable, as fuzz.py saves them);
one model.py does not confirm is an error of the GPU model and fails the run.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from ptxconf.isa.model import Variant
from ptxconf.isa.ptxtypes import ptx_type

from . import gpu
from .harness import dims
from .model import FORMATS, PathParams, Types, dot_bits

SCHEMA = "numerics-gpu-fuzz/1"
WARPS_PER_BLOCK = 8
MAX_RECORDED = 8  # mismatching dot products whose inputs come back per round
MAX_REPLAYS = 512  # per variant: after these, mismatches are counted on the device only (the rate stays the GPU's)
AUDIT_DOTS = 2048  # dot products per audit: GPU model vs model.py on the host
AUDIT_EVERY_S = 5.0


# ---------------------------------------------------------------------------
# the hardware kernel: one mma.sync per warp, operands gathered through the spec's lane maps
# ---------------------------------------------------------------------------

_CONSTRAINT = {"f32": ("f", "float", "__uint_as_float", "__float_as_uint"),
               "f64": ("d", "double", "__longlong_as_double", "__double_as_longlong")}


def support_reason(v: Variant) -> str | None:
    """Why ``v`` cannot run as a GPU fuzz kernel here, or None."""
    if v.family != "mma.sync":
        return f"{v.family}: the device-only loop takes mma.sync (probe_fuzz.py takes mma.sp, wgmma and wgmma.sp)"
    if set(v.operands) != {"A", "B", "C", "D"}:
        return "only dense A, B, C, D forms (no metadata or scale factors)"
    for name, op in v.operands.items():
        if op.layout.params or op.fragment.register_bits not in (32, 64):
            return f"operand {name}: layout parameters or {op.fragment.register_bits}-bit registers"
    return None


def storage_index(v: Variant, name: str) -> np.ndarray:
    """``int32[32 * elements]``: for each lane and register element, the element's index in one case's storage.

    Storage: A ``[mat, M, K]``, B ``[mat, N, K]`` (K contiguous, as the model kernel reads it), C and D ``[mat, M, N]``;
    -1 where the layout holds nothing."""
    op = v.operands[name]
    mats, m, k, n = dims(v)
    lm = op.layout.map()  # [lane, element, (matrix, row, col)]
    mat, row, col = lm[..., 0], lm[..., 1], lm[..., 2]
    if name == "A":
        idx = (mat * m + row) * k + col
    elif name == "B":
        idx = (mat * n + col) * k + row
    else:
        idx = (mat * m + row) * n + col
    return np.where(lm[..., 0] >= 0, idx, -1).astype(np.int32).reshape(-1)


def _gather(name: str, op, var: str, table: str) -> list[str]:
    frag = op.fragment
    rt = "u64" if frag.register_bits == 64 else "u32"
    mask = f"{op.type.mask:#x}ull"
    e, per = op.layout.elements, frag.per_register
    return [f"  {rt} r{var}[{op.registers}];",
            f"#pragma unroll\n  for (int r = 0; r < {op.registers}; r++) r{var}[r] = 0;",
            f"#pragma unroll\n  for (int i = 0; i < {e}; i++) {{",
            f"    int ix = {table}[lane * {e} + i];",
            f"    u64 x = ix >= 0 ? ((u64){var}[ix] & {mask}) : 0ull;",
            f"    r{var}[i / {per}] |= ({rt})(x << ((i % {per}) * {frag.container_bits} + {frag.value_shift}));",
            "  }"]


def _asm_operands(op, var: str, out: bool) -> tuple[list[str], list[str]]:
    """(declarations, constraint strings) of one operand's registers in the inline asm."""
    reg = op.fragment.register
    if reg in _CONSTRAINT:
        letter, ctyp, to_f, _ = _CONSTRAINT[reg]
        decl = [f"  {ctyp} f{var}[{op.registers}];"]
        if not out:
            conv = "(i64)" if reg == "f64" else ""
            decl.append(f"#pragma unroll\n  for (int r = 0; r < {op.registers}; r++) f{var}[r] = {to_f}({conv}r{var}[r]);")
        name = f"f{var}"
    else:
        letter = "l" if op.fragment.register_bits == 64 else "r"
        rt = "u64" if op.fragment.register_bits == 64 else "u32"
        decl, name = ([f"  {rt} r{var}[{op.registers}];"] if out else []), f"r{var}"
    cons = [f'"{"=" if out else ""}{letter}"({name}[{r}])' for r in range(op.registers)]
    return decl, cons


def mma_source(v: Variant) -> str:
    """CUDA source of ``hw_mma``: warp w runs ``v`` once on case w of the operand buffers (see ``storage_index``)."""
    why = support_reason(v)
    if why:
        raise gpu.NotOnGpu(f"{v.id}: {why}")
    t = Types.of(v)
    ops = v.operands
    mats, m, k, n = dims(v)
    sizes = {"A": mats * m * k, "B": mats * n * k, "C": mats * m * n, "D": mats * m * n}
    lines = [f"/* hardware: {v.id} */"]
    for x, tn in (("AT", t.a), ("BT", t.b), ("CT", t.c), ("DT", t.d)):
        lines.append(f"#define {x} {gpu.ctype(gpu.container(tn))}")
    lines.append(gpu._COMMON)
    lines.append("extern \"C\" __global__ void hw_mma(const AT* __restrict__ A, const BT* __restrict__ B, "
                 "const CT* __restrict__ C, DT* __restrict__ D, const int* __restrict__ TA, const int* __restrict__ TB, "
                 "const int* __restrict__ TC, const int* __restrict__ TD, i64 cases) {")
    lines.append("  i64 w = ((i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;")
    lines.append("  int lane = threadIdx.x & 31;")
    lines.append("  if (w >= cases) return;  /* whole warps: blockDim.x is a multiple of 32 */")
    for name, var in (("A", "a"), ("B", "b"), ("C", "c")):
        lines.append(f"  const {name}T* {var} = {name} + w * {sizes[name]};")
        lines += _gather(name, ops[name], var, f"T{name}")
    decls, cons = {}, {}
    for name, var in (("D", "d"), ("A", "a"), ("B", "b"), ("C", "c")):
        decls[name], cons[name] = _asm_operands(ops[name], var, out=name == "D")
        lines += decls[name]
    pos, groups = 0, []
    for name in ("D", "A", "B", "C"):
        groups.append("{" + ", ".join(f"%{pos + r}" for r in range(ops[name].registers)) + "}")
        pos += ops[name].registers
    lines.append(f'  asm volatile("{v.id} {", ".join(groups)};"')
    lines.append(f"      : {', '.join(cons['D'])}")
    lines.append(f"      : {', '.join(cons['A'] + cons['B'] + cons['C'])});")
    d = ops["D"]
    frag = d.fragment
    rt = "u64" if frag.register_bits == 64 else "u32"
    if frag.register in _CONSTRAINT:
        back = _CONSTRAINT[frag.register][3]
        lines.append(f"  {rt} rd[{d.registers}];")
        lines.append(f"#pragma unroll\n  for (int r = 0; r < {d.registers}; r++) rd[r] = ({rt}){back}(fd[r]);")
    lines.append(f"  DT* dd = D + w * {sizes['D']};")
    e, per = d.layout.elements, frag.per_register
    lines.append(f"#pragma unroll\n  for (int i = 0; i < {e}; i++) {{")
    lines.append(f"    int ix = TD[lane * {e} + i];")
    lines.append(f"    if (ix >= 0) dd[ix] = (DT)(((u64)rd[i / {per}] >> ((i % {per}) * {frag.container_bits} + "
                 f"{frag.value_shift})) & {d.type.mask:#x}ull);")
    lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------
# drawing on the device, comparing on the device
# ---------------------------------------------------------------------------


def draw_source(type_name: str) -> str:
    """CUDA source of ``draw_elems`` for one element type: each element a function of (seed, stream, index)."""
    pt = ptx_type(type_name)
    box = "f32" if type_name == "tf32" else type_name  # tf32: all 32 bits drawn, the low 13 included
    defs = {"T": gpu.ctype(gpu.container(type_name)), "W": pt.bits, "MASK": f"{pt.mask:#x}ull"}
    if pt.kind == "float":
        f = FORMATS[box]
        defs.update({"IS_FLOAT": 1, "MB": f.p - 1, "BIAS": 1 - f.emin})
    else:
        defs.update({"IS_FLOAT": 0, "MB": 1, "BIAS": 0})
    return f"/* draw: {type_name} */\n" + gpu.defines_text(defs) + gpu._COMMON + _DRAW_BODY


_DRAW_BODY = r"""
__device__ __forceinline__ u64 mix(u64 z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
__device__ __forceinline__ u64 rnd(u64 seed, u32 stream, i64 i, u32 j) {
  return mix(mix(seed ^ ((u64)stream << 58) ^ ((u64)j << 52)) ^ (u64)i);
}
/* one element: raw bits (special rate), +0 (zero rate), a subnormal (sub rate) or a normal of exponent in [elo, ehi] */
__device__ u64 value(u64 seed, u32 stream, i64 i, int elo, int ehi, u32 zero_thr, u32 sub_thr, u32 special_thr) {
  u64 h0 = rnd(seed, stream, i, 0), h1 = rnd(seed, stream, i, 1);
#if IS_FLOAT
  if ((u32)h0 < special_thr) return h1 & MASK;
  if ((u32)(h0 >> 32) < zero_thr) return 0;
  u64 sign = ((h1 >> 63) & 1ull) << (W - 1);
  if ((u32)h1 < sub_thr) return sign | (1ull + ((h1 >> 32) & 0x7FFFFFFFull) % ((1ull << MB) - 1ull));
  int e = elo + (int)(((h1 >> 32) & 0x7FFFFFFFull) % (u64)(ehi - elo + 1));
  u64 m = rnd(seed, stream, i, 2) & ((1ull << MB) - 1ull);
  return sign | ((u64)(e + BIAS) << MB) | m;
#else
  return h1 & MASK;
#endif
}
/* cancel_mode 1 (A): with probability cancel, element k=1 of a row is element k=0 negated; 2 (B): k=1 repeats k=0 */
extern "C" __global__ void draw_elems(T* out, i64 n, int K, u64 seed, u32 stream, int elo, int ehi, u32 zero_thr,
                                      u32 sub_thr, u32 special_thr, u32 cancel_thr, int cancel_mode) {
  i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  i64 src = i;
  u64 flip = 0;
  if (cancel_mode && K > 1 && (i % K) == 1) {
    if (cancel_mode == 2) src = i - 1;
    else if ((u32)rnd(seed, stream, i / K, 7) < cancel_thr) { src = i - 1; flip = 1ull << (W - 1); }
  }
  out[i] = (T)(value(seed, stream, src, elo, ehi, zero_thr, sub_thr, special_thr) ^ flip);
}
"""


def compare_source(type_name: str) -> str:
    """CUDA source of ``compare_bits``: count the differing elements, keep the indices of the first few."""
    return (f"#define DT {gpu.ctype(gpu.container(type_name))}\n" + gpu._COMMON + r"""
extern "C" __global__ void compare_bits(const DT* __restrict__ X, const DT* __restrict__ Y, i64 n,
                                        unsigned long long* count, i64* first, int max_first) {
  i64 t = (i64)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n) return;
  if (X[t] != Y[t]) {
    unsigned long long slot = atomicAdd(count, 1ull);
    if (slot < (unsigned long long)max_first) first[slot] = t;
  }
}
""")


@dataclass(frozen=True)
class Recipe:
    """One round's input distribution (the knobs of fuzz.batch)."""

    spread: int
    cancel: float
    c_scale: int
    sub_rate: float
    special_rate: float
    zero_rate: float = 0.1

    @classmethod
    def draw(cls, rng: np.random.Generator) -> Recipe:
        return cls(int(rng.integers(1, 61)), float(rng.uniform(0, 0.9)), int(rng.integers(-40, 41)),
                   float(rng.choice([0.0, 0.01, 0.1])), float(rng.choice([0.0, 0.0, 0.001, 0.02])))

    def describe(self) -> str:
        return (f"spread={self.spread} cancel={self.cancel:.2f} c_scale={self.c_scale} sub={self.sub_rate} "
                f"special={self.special_rate}")


def _threshold(rate: float) -> np.uint32:
    return np.uint32(min(int(rate * 2**32), 2**32 - 1))


def exponent_range(type_name: str, spread: int, shift: int = 0) -> tuple[int, int]:
    """Exponents drawn for a type: within ``spread`` binades of ``shift``, inside the type's normal range."""
    pt = ptx_type(type_name)
    if pt.kind != "float":
        return 0, 0
    f = FORMATS["f32" if type_name == "tf32" else type_name]
    lo, hi = max(f.emin, shift - spread), min(f.emax, shift + spread)
    if lo > hi:  # the whole window outside the type: its nearest end
        lo = hi = f.emax if shift > 0 else f.emin
    return lo, hi


# ---------------------------------------------------------------------------
# replay through model.py
# ---------------------------------------------------------------------------


def replay(p: PathParams, t: Types, a, b, c, observed, gpu_model) -> list[dict]:
    """GPU-found mismatches through the reference model: each row says whether model.py confirms it.

    ``confirmed``: model.py differs from the hardware too (a departure of the hardware from the model);
    ``gpu_model_ok``: the GPU model gave model.py's answer (otherwise the GPU model is wrong)."""
    a = np.atleast_2d(np.asarray(a, dtype=np.uint64))
    b = np.atleast_2d(np.asarray(b, dtype=np.uint64))
    c = np.atleast_1d(np.asarray(c, dtype=np.uint64))
    observed = np.atleast_1d(np.asarray(observed, dtype=np.uint64))
    gpu_model = np.atleast_1d(np.asarray(gpu_model, dtype=np.uint64))
    ref = dot_bits(p, t, a, b, c) if len(c) else np.zeros(0, dtype=np.uint64)
    return [{"a": [hex(int(x)) for x in a[i]], "b": [hex(int(x)) for x in b[i]], "c": hex(int(c[i])),
             "observed": hex(int(observed[i])), "model": hex(int(ref[i])), "gpu_model": hex(int(gpu_model[i])),
             "confirmed": bool(ref[i] != observed[i]), "gpu_model_ok": bool(ref[i] == gpu_model[i])}
            for i in range(len(c))]


def save_replay(out: Path, v: Variant, p: PathParams, row: dict, key: str, note: str) -> Path:
    """A confirmed mismatch as fuzz.py saves one (mismatches/*.json, read back by recorded.RecordedRun)."""
    rec = {"variant": v.id, "path": p.name, "seed": key, "note": note, "a": row["a"], "b": row["b"], "c": row["c"],
           "observed": row["observed"], "model": row["model"]}
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"mismatch-{v.id.replace('.', '_')}-{key}.json"
    path.write_text(json.dumps(rec, indent=1))
    return path


def record_replays(stats: dict, rows: list[dict], index, round_seed: int, r: Recipe, out: Path | None, v: Variant,
                   p: PathParams, save: int, prefix: str, note: str) -> None:
    """A round's replayed mismatches into the form's record: counts, a few examples, the first confirmed ones saved."""
    for i, row in zip(index, rows):
        row.update(round_seed=round_seed, index=int(i), recipe=r.describe())
        stats["confirmed"] += row["confirmed"]
        stats["gpu_model_errors"] += not row["gpu_model_ok"]
        if len(stats["examples"]) < 5:
            stats["examples"].append(row)
        if row["confirmed"] and out is not None and len(stats["saved"]) < save:
            key = f"{prefix}{round_seed:x}-{int(i)}"
            stats["saved"].append(str(save_replay(out, v, p, row, key, f"{note} {r.describe()}")))


# ---------------------------------------------------------------------------
# the fuzzer
# ---------------------------------------------------------------------------


class GpuFuzzer:
    """Device buffers and kernels for one variant; ``round`` runs draw, mma, model and compare once."""

    def __init__(self, v: Variant, p: PathParams, cases: int):
        cp = gpu.cupy()
        self.cp, self.v, self.p, self.t = cp, v, p, Types.of(v)
        self.mats, self.m, self.k, self.n = dims(v)
        self.cases = int(cases)
        t = self.t
        self.model = gpu.model_kernel(p, t, self.k)
        self.hw = gpu.raw_kernel(mma_source(v), "hw_mma")
        self.draw = {x: gpu.raw_kernel(draw_source(x), "draw_elems") for x in {t.a, t.b, t.c}}
        self.cmp = gpu.raw_kernel(compare_source(t.d), "compare_bits")
        g = self.cases * self.mats
        self.groups = g
        self.A = cp.zeros(g * self.m * self.k, dtype=gpu.container(t.a))
        self.B = cp.zeros(g * self.n * self.k, dtype=gpu.container(t.b))
        self.C = cp.zeros(g * self.m * self.n, dtype=gpu.container(t.c))
        self.D = cp.zeros(g * self.m * self.n, dtype=gpu.container(t.d))
        self.DM = cp.zeros_like(self.D)
        self.tables = [cp.asarray(storage_index(v, x)) for x in "ABCD"]
        self.count = cp.zeros(1, dtype=cp.uint64)
        self.first = cp.zeros(MAX_RECORDED, dtype=cp.int64)
        self.events = [cp.cuda.Event() for _ in range(5)]

    @property
    def dots(self) -> int:
        return int(self.D.size)

    def _draw(self, buf, type_name: str, k: int, seed: int, stream: int, lo: int, hi: int, r: Recipe, cancel: int) -> None:
        n = int(buf.size)
        thr = _threshold(r.cancel) if cancel else np.uint32(0)
        self.draw[type_name](((n + gpu.THREADS - 1) // gpu.THREADS,), (gpu.THREADS,),
                             (buf, np.int64(n), np.int32(k), np.uint64(seed), np.uint32(stream), np.int32(lo), np.int32(hi),
                              _threshold(r.zero_rate), _threshold(r.sub_rate), _threshold(r.special_rate), thr,
                              np.int32(cancel)))

    def round(self, seed: int, r: Recipe) -> dict:
        """One round; returns the GPU stage times (s) and the mismatch count, with the first few mismatching dots."""
        t, ev = self.t, self.events
        fa = ptx_type(t.a).kind == "float" and r.cancel > 0
        ev[0].record()
        self._draw(self.A, t.a, self.k, seed, 1, *exponent_range(t.a, r.spread), r, 1 if fa else 0)
        self._draw(self.B, t.b, self.k, seed, 2, *exponent_range(t.b, r.spread), r, 2 if fa else 0)
        self._draw(self.C, t.c, 1, seed, 3, *exponent_range(t.c, r.spread + abs(r.c_scale), r.c_scale), r, 0)
        ev[1].record()
        threads = 32 * WARPS_PER_BLOCK
        self.hw(((self.cases + WARPS_PER_BLOCK - 1) // WARPS_PER_BLOCK,), (threads,),
                (self.A, self.B, self.C, self.D, *self.tables, np.int64(self.cases)))
        ev[2].record()
        self.model(self.A, self.B, self.C, self.DM, self.m, self.n)
        ev[3].record()
        self.count.fill(0)
        n = self.dots
        self.cmp(((n + gpu.THREADS - 1) // gpu.THREADS,), (gpu.THREADS,),
                 (self.D, self.DM, np.int64(n), self.count, self.first, np.int32(MAX_RECORDED)))
        ev[4].record()
        count = int(self.count.get()[0])  # the round's one synchronisation
        cp = self.cp
        stages = [cp.cuda.get_elapsed_time(ev[i], ev[i + 1]) / 1e3 for i in range(4)]
        out = {"stages": dict(zip(("draw", "hardware", "model", "compare"), stages)), "mismatches": count}
        if count:
            out["index"] = self.first[: min(count, MAX_RECORDED)].get()
        return out

    def hardware(self, a, b, c) -> np.ndarray:
        """The mma alone on host operands in storage layout (``a [cases, mat, M, K]``, ``b [cases, mat, N, K]``,
        ``c [cases, mat, M, N]``, at most ``self.cases`` cases): D bits ``[cases, mat, M, N]``."""
        cp, t = self.cp, self.t
        n = len(c)
        for buf, tn, x in ((self.A, t.a, a), (self.B, t.b, b), (self.C, t.c, c)):
            flat = gpu.to_container(tn, np.asarray(x)).reshape(-1)
            buf[: flat.size] = cp.asarray(flat)
        self.hw(((n + WARPS_PER_BLOCK - 1) // WARPS_PER_BLOCK,), (32 * WARPS_PER_BLOCK,),
                (self.A, self.B, self.C, self.D, *self.tables, np.int64(n)))
        size = n * self.mats * self.m * self.n
        return cp.asnumpy(self.D[:size]).astype(np.uint64).reshape(n, self.mats, self.m, self.n)

    def fetch(self, index) -> tuple[np.ndarray, ...]:
        """(a, b, c, hardware D, GPU model D) of dot products ``index`` (their flat D positions), on the host."""
        cp = self.cp
        idx = cp.asarray(np.asarray(index, dtype=np.int64))
        mn = self.m * self.n
        g, rest = idx // mn, idx % mn
        row, col = rest // self.n, rest % self.n
        a = self.A.reshape(-1, self.k)[g * self.m + row]
        b = self.B.reshape(-1, self.k)[g * self.n + col]
        return tuple(cp.asnumpy(x).astype(np.uint64) for x in (a, b, self.C[idx], self.D[idx], self.DM[idx]))


def fuzz_variant_gpu(v: Variant, p: PathParams, budget: float, cases: int = 65536, out: Path | None = None,
                     seed: int = 0, save: int = 3, recipe: Recipe | None = None) -> dict:
    """Rounds until ``budget`` seconds are spent (each with a fresh recipe, or ``recipe`` throughout); the measured
    rates and every replayed mismatch."""
    t0 = time.perf_counter()
    fz = GpuFuzzer(v, p, cases)
    rng = np.random.default_rng([seed, 0x9E37])
    fz.round(int(rng.integers(2**63)), recipe or Recipe.draw(rng))  # compiles and warms every kernel
    compile_s = time.perf_counter() - t0
    t = fz.t
    stats = {"variant": v.id, "path": p.name, "model": p.describe(), "cases_per_launch": fz.cases,
             "dots_per_launch": fz.dots, "launches": 0, "dots": 0, "mismatches": 0, "replayed": 0, "confirmed": 0,
             "gpu_model_errors": 0, "audited": 0, "audit_errors": 0, "saved": [], "examples": [],
             "compile_s": round(compile_s, 3)}
    stages = {"draw": 0.0, "hardware": 0.0, "model": 0.0, "compare": 0.0}
    start = time.perf_counter()
    next_audit = start
    while stats["launches"] == 0 or time.perf_counter() - start < budget:  # one counted round at least
        round_seed = int(rng.integers(2**63))
        r = recipe or Recipe.draw(rng)
        res = fz.round(round_seed, r)
        stats["launches"] += 1
        stats["dots"] += fz.dots
        for k_, x in res["stages"].items():
            stages[k_] += x
        stats["mismatches"] += res["mismatches"]
        if res["mismatches"] and stats["replayed"] < MAX_REPLAYS:
            rows = replay(p, t, *fz.fetch(res["index"]))
            stats["replayed"] += len(rows)
            record_replays(stats, rows, res["index"], round_seed, r, out, v, p, save, "gpu", "GPU fuzz round")
        if time.perf_counter() >= next_audit:  # the GPU model against model.py on a sample, matching or not
            idx = np.random.default_rng(round_seed).integers(0, fz.dots, AUDIT_DOTS)
            a, b, c, _, dm = fz.fetch(idx)
            bad = dot_bits(p, t, a, b, c) != dm
            stats["audited"] += len(idx)
            stats["audit_errors"] += int(bad.sum())
            next_audit = time.perf_counter() + AUDIT_EVERY_S
    wall = time.perf_counter() - start
    gpu_s = sum(stages.values())
    stats["seconds"] = round(wall, 3)
    stats["stages_s"] = {k_: round(x, 4) for k_, x in stages.items()} | {"host": round(max(wall - gpu_s, 0.0), 4)}
    stats["dots_per_s"] = round(stats["dots"] / wall) if wall else 0
    stats["gpu_dots_per_s"] = round(stats["dots"] / gpu_s) if gpu_s else 0
    return stats


def device_info() -> dict:
    cp = gpu.cupy()
    dev = cp.cuda.Device()
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    drv = cp.cuda.runtime.driverGetVersion()
    rt = cp.cuda.runtime.runtimeGetVersion()
    try:
        nv = ".".join(str(x) for x in cp.cuda.nvrtc.getVersion())
    except Exception:  # noqa: BLE001 - an NVRTC that cannot say its version is named as such
        nv = "unknown"
    try:  # the kernel module's version line names the driver release (580.159.04); absent outside Linux
        line = Path("/proc/driver/nvidia/version").read_text().splitlines()[0]
        driver = next((w for w in line.split() if w[:1].isdigit() and w.count(".") >= 1), "unknown")
    except (OSError, IndexError):
        driver = "unknown"
    # what built the kernels: CuPy's NVRTC (its own ptxas) for this device, the D of a lowered form is that release's
    return {"backend": "cupy", "driver": driver, "device": name, "compute_capability": dev.compute_capability, "cupy": cp.__version__,
            "cuda_driver_api": f"{drv // 1000}.{(drv % 1000) // 10}", "cuda_runtime": f"{rt // 1000}.{(rt % 1000) // 10}",
            "nvrtc": nv, "ptxas": f"NVRTC {nv} (built in)", "build": f"CuPy RawKernel, NVRTC {' '.join(gpu.OPTIONS)}"}
