"""The compiled model (tools/numerics/compiled.py, numba) against model.py's NumPy arithmetic, bit for bit.

Every path of specs/numerics.yaml, with every type combination and K its variants have (mma.sync, mma.sp on drawn
sparse positions in both metadata orders, wgmma, the f64 forms with each rounding modifier), on random batches of
the fuzzer's recipes: exponents spread and clustered, cancellation, subnormals, specials (raw bit patterns: NaN
payloads, infinities), C far above and below the products.  Skipped where numba is not installed (the extra ``fast``).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from ptxconf.isa import load_specs
from ptxconf.isa.sparse import is_sparse, sparsity
from ptxconf.tools.numerics import compiled
from ptxconf.tools.numerics.fuzz import batch
from ptxconf.tools.numerics.harness import k_of, numeric_variants, path_of, rounding_variants
from ptxconf.tools.numerics.model import PathParams, Types, dot_bits
from ptxconf.tools.numerics.spec import numerics_spec

pytest.importorskip("numba", reason="the compiled model needs numba (pip install 'ptx-conformance[fast]')")

# (spread, cancel, c_scale, sub_rate, special_rate, center): fuzz.batch recipes, the GPU fuzzer's kinds of batch
RECIPES = [
    (20, 0.3, 0, 0.02, 0.0, 0),
    (3, 0.9, 12, 0.1, 0.02, 0),  # clustered exponents, heavy cancellation, C above the products, specials
    (40, 0.5, -30, 0.3, 0.001, -30),  # subnormal-heavy, tiny products
    (8, 0.2, 40, 0.0, 0.05, 40),  # near the top of the range: overflow, Inf and NaN operands
]
DOTS = 128  # per recipe and combination: the reference's NumPy time, not the kernel's, sets the test's time


def _combos():
    """One variant per distinct (path parameters, types, K, family): every path of the spec and shape override."""
    specs = load_specs()
    spec = numerics_spec(specs)
    out = {}
    for v in numeric_variants(specs, families=("mma.sync", "mma.sp", "wgmma")) + rounding_variants(specs):
        p = path_of(spec, v)
        out.setdefault((p, Types.of(v), k_of(v), v.family), v)
    return spec, list(out.values())


SPEC, VARIANTS = _combos()


def _dots(v, seed: int, recipe) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """``DOTS`` rows of a fuzz batch of ``v``; mma.sp: the stored half of each A row at drawn dense positions."""
    spread, cancel, c_scale, sub, special, center = recipe
    with np.errstate(invalid="ignore", over="ignore"):  # C scaled past its range is an Inf or NaN: a case too
        bits = batch(v, seed, 4, spread, cancel, c_scale, sub, special, center)
    a, b, c = bits["A"], bits["B"], bits["C"]
    cs, mats, m, k = a.shape
    n = b.shape[-1]
    ad = np.broadcast_to(a[:, :, :, None, :], (cs, mats, m, n, k)).reshape(-1, k)
    bd = np.broadcast_to(np.swapaxes(b, -1, -2)[:, :, None], (cs, mats, m, n, k)).reshape(-1, k)
    rng = np.random.default_rng(seed)
    rows = rng.permutation(len(ad))[:DOTS]
    ad, bd, cd = ad[rows], bd[rows], c.reshape(-1)[rows]
    if not is_sparse(v):
        return ad, bd, cd, None
    sp = sparsity(v)
    # each chunk keeps nz of its width positions, in a random slot order (the metadata need not be sorted)
    pick = np.argsort(rng.random((len(ad), sp.chunks, sp.width)), axis=-1)[..., : sp.nz]
    pos = (pick + (np.arange(sp.chunks) * sp.width)[:, None]).reshape(len(ad), -1)
    return ad[:, : pos.shape[1]], bd, cd, pos


@pytest.mark.parametrize("v", VARIANTS, ids=lambda v: f"{path_of(SPEC, v).name}:{v.id}")
def test_compiled_model_is_the_model_bit_for_bit(v):
    p, t = path_of(SPEC, v), Types.of(v)
    for i, recipe in enumerate(RECIPES):
        a, b, c, pos = _dots(v, 1000 + i, recipe)
        want = dot_bits(p, t, a, b, c, sparse_pos=pos, compiled=False)
        got = dot_bits(p, t, a, b, c, sparse_pos=pos, compiled=True)
        bad = np.flatnonzero(got != want)
        if len(bad):
            j = bad[0]
            pytest.fail(f"{v.id} path {p.name}, recipe {recipe} (seed {1000 + i}): {len(bad)} of {len(c)} dots differ; "
                        f"first a={[hex(x) for x in a[j]]} b={[hex(x) for x in b[j]]} c={c[j]:#x}"
                        f"{'' if pos is None else f' pos={pos[j].tolist()}'}: compiled {got[j]:#x}, model {want[j]:#x}")


def test_every_path_of_the_spec_is_covered():
    """The combinations above reach every path (and so every parameter set) the spec names."""
    assert {path_of(SPEC, v).name for v in VARIANTS} == set(SPEC.paths)


def _float_path() -> tuple[PathParams, Types]:
    v = next(v for v in VARIANTS if v.id == "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32")
    return path_of(SPEC, v), Types.of(v)


def test_a_parameter_value_not_compiled_is_refused_never_approximated():
    p, t = _float_path()
    a = np.full((2, 16), 0x3C00, dtype=np.uint64)
    c = np.zeros(2, dtype=np.uint64)
    for change in ({"frac_bits": 60}, {"c_entry": "fused_twice"}, {"kind": "complex"}):
        q = dataclasses.replace(p, **change)
        with pytest.raises(compiled.NotCompiled, match=next(iter(change))):
            compiled.check(q, t, 16)
        with pytest.raises(compiled.NotCompiled):
            dot_bits(q, t, a, a, c, compiled=True)
    q = dataclasses.replace(p, frac_bits=60)  # beyond the kernel: the default computes it in NumPy instead
    assert np.array_equal(dot_bits(q, t, a, a, c), dot_bits(q, t, a, a, c, compiled=False))
    exact = dataclasses.replace(SPEC.paths["f64"], f64_mode="exact_dot")
    with pytest.raises(compiled.NotCompiled, match="f64_mode"):
        compiled.check(exact, Types("f64", "f64", "f64", "f64"), 4)


def test_the_reference_is_chosen_by_the_environment(monkeypatch):
    """``PTXCONF_MODEL=numpy`` keeps every caller on model.py's NumPy arithmetic (a kernel that raised would show)."""
    p, t = _float_path()
    monkeypatch.setenv("PTXCONF_MODEL", "numpy")
    monkeypatch.setattr(compiled, "dot_bits", lambda *a, **k: (_ for _ in ()).throw(AssertionError("kernel called")))
    d = dot_bits(p, t, np.full((1, 16), 0x3C00), np.full((1, 16), 0x3C00), [0])
    assert int(d[0]) == 0x41800000  # 16 * 1.0


def _f64_extremes(rng: np.random.Generator, n: int, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """f64 rows across the whole range: a third with exponent fields drawn over every binade (some subnormal), a
    third with products and C at the bottom (subnormal results), a third at the top (overflow); C in two of five
    rows the negated rounded product of the first pair plus a few ulps (cancellation)."""
    zone = rng.integers(0, 3, (n, 1))  # 0 anywhere, 1 bottom, 2 top
    target = np.where(zone == 1, rng.integers(-1110, -1000, (n, k)), rng.integers(990, 1030, (n, k)))
    lo, hi = np.maximum(1, target), np.minimum(2046, target + 2046)  # fa + fb - 2046 = target, both fields valid
    fa = np.where(zone == 0, rng.integers(1, 2047, (n, k)), lo + (rng.random((n, k)) * (hi - lo)).astype(np.int64))
    fb = np.where(zone == 0, rng.integers(0, 2047, (n, k)), target - fa + 2046)
    fa = np.where((zone == 0) & (rng.random((n, k)) < 0.3), 0, fa)
    fc = np.where(zone[:, 0] == 0, rng.integers(0, 2047, n),
                  np.where(zone[:, 0] == 1, rng.integers(0, 40, n), rng.integers(2000, 2047, n)))

    def bits(field):
        low = rng.integers(0, 1 << 52, field.shape, dtype=np.uint64)
        sign = rng.integers(0, 2, field.shape, dtype=np.uint64) << np.uint64(63)
        return sign | (field.astype(np.uint64) << np.uint64(52)) | low

    a, b, c = bits(fa), bits(fb), bits(fc)
    near = rng.random(n) < 0.4
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        first = -(a[:, 0].view(np.float64) * b[:, 0].view(np.float64))
    nudged = first.view(np.uint64) + rng.integers(0, 4, n, dtype=np.uint64)
    return a, b, np.where(near & np.isfinite(first), nudged, c)


@pytest.mark.parametrize("rnd", ["rz", "rm", "rp", "rn"])
def test_f64_directed_rounding_is_exact_over_the_whole_range(rnd):
    """Each fused multiply-add of the f64 chain rounded in the kernel, subnormal and overflowing results included
    (model.py rounds exact rationals)."""
    p, t = SPEC.paths["f64"], Types("f64", "f64", "f64", "f64", rnd=rnd)
    a, b, c = _f64_extremes(np.random.default_rng(7), 301, 4)  # odd: a row left over by the pairs run together
    want = dot_bits(p, t, a, b, c, compiled=False)
    got = dot_bits(p, t, a, b, c, compiled=True)
    bad = np.flatnonzero(got != want)
    assert not len(bad), (f"{len(bad)} of {len(c)} rows differ; first a={[hex(x) for x in a[bad[0]]]} "
                          f"b={[hex(x) for x in b[bad[0]]]} c={c[bad[0]]:#x}: compiled {got[bad[0]]:#x}, "
                          f"model {want[bad[0]]:#x}")


@pytest.mark.parametrize("conversion", ["rna", "rne"])
def test_tf32_input_conversions_not_in_the_spec_are_compiled_too(conversion):
    """``input_conversion`` rna/rne (the spec measures truncate): the kernel's branch-free conversion of the 32-bit
    container is model.convert_tf32's."""
    v = next(v for v in VARIANTS if v.id == "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32")
    p, t = dataclasses.replace(path_of(SPEC, v), input_conversion=conversion), Types.of(v)
    for i, recipe in enumerate(RECIPES):
        a, b, c, _ = _dots(v, 2000 + i, recipe)
        rng = np.random.default_rng(i)  # the bits the conversion reads, a third of them exact ties
        low = np.where(rng.random(a.shape) < 0.3, np.uint64(0x1000), rng.integers(0, 1 << 13, a.shape, dtype=np.uint64))
        a = (a & np.uint64(0xFFFFE000)) | low
        want = dot_bits(p, t, a, b, c, compiled=False)
        assert np.array_equal(dot_bits(p, t, a, b, c, compiled=True), want), f"recipe {recipe}"


def test_rows_over_threads_are_the_rows_on_one_thread_and_a_forked_child_gets_its_own_pool():
    """A batch past ``CHUNK`` rows runs in chunks over the thread pool: the same D bits as on the calling thread; a
    child forked after the pool started computes on threads of its own (its parent's do not exist there)."""
    import multiprocessing

    p, t = _float_path()
    a, b, c, _ = _dots(next(v for v in VARIANTS if v.id == "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"), 5, RECIPES[1])
    reps = -(-2 * compiled.CHUNK // len(c)) + 1
    a, b, c = np.tile(a, (reps, 1)), np.tile(b, (reps, 1)), np.tile(c, reps)
    one = compiled.dot_bits(p, t, a, b, c, n_threads=1)
    assert np.array_equal(compiled.dot_bits(p, t, a, b, c, n_threads=2), one)
    if "fork" not in multiprocessing.get_all_start_methods():
        return
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(1) as pool:
        got = pool.apply_async(compiled.dot_bits, (p, t, a, b, c, None, 2)).get(timeout=120)
    assert np.array_equal(got, one)


def _fp8(family: str, path: str, k: int | None = None):
    return next(v for v in VARIANTS if v.family == family and path_of(SPEC, v).name == path
                and Types.of(v).a != Types.of(v).b and (k is None or k_of(v) == k))


# the product table's rows (compiled.ptab_rows) under parameter values the spec's fp8 paths do not take: NaN payloads
# (left to the general rows), other alignments, flushed subnormals, zero signs, no exponent floor, saturation; and
# blocks shorter than a half (the general rows)
FP8_CHANGES = [{"nan_propagation": "payload_c_first"}, {"nan_propagation": "payload_a_first"}, {"align": "rne"},
               {"align": "sticky"}, {"in_subnormals": "flush"}, {"neg_zero": "ieee", "underflow_sign": "keep"},
               {"exp_floor": None}, {"overflow": "saturate", "final_rounding": "ru"}, {"block": 4}]


@pytest.mark.parametrize("change", FP8_CHANGES, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()))
def test_fp8_rows_by_the_product_table_are_the_model_under_other_parameters(change):
    for v in (_fp8("mma.sync", "fp8.f32", 32), _fp8("mma.sync", "fp8.f16", 32), _fp8("wgmma", "wgmma.fp8.f32"),
              _fp8("mma.sp", "fp8.f32")):
        p, t = dataclasses.replace(path_of(SPEC, v), **change), Types.of(v)
        for i, recipe in enumerate(RECIPES):
            a, b, c, pos = _dots(v, 3000 + i, recipe)
            want = dot_bits(p, t, a, b, c, sparse_pos=pos, compiled=False)
            got = dot_bits(p, t, a, b, c, sparse_pos=pos, compiled=True)
            assert np.array_equal(got, want), f"{v.id} {change} recipe {recipe}: {int((got != want).sum())} dots differ"


def test_every_fp8_path_reads_the_product_table():
    """The spec's fp8 paths (both operands 8-bit) get the table, an entry for every pair of elements; others none."""
    for v in VARIANTS:
        p, t = path_of(SPEC, v), Types.of(v)
        if p.kind != "float":
            continue
        table = compiled._prepared(p, t, k_of(v))[3]
        assert table.size == (1 << 16 if {t.a, t.b} <= {"e4m3", "e5m2"} else 1), v.id


def test_a_single_sparse_fp8_row_is_its_row_of_the_batch():
    """One mma.sp row alone (its labels stand for the whole batch, not 0..K-1: the product table's rows take their
    halves from them) gives the D of the same row in a batch, and model.py's."""
    v = _fp8("mma.sp", "fp8.f32")
    p, t = path_of(SPEC, v), Types.of(v)
    a, b, c, pos = _dots(v, 4000, RECIPES[1])
    batch_d = dot_bits(p, t, a, b, c, sparse_pos=pos, compiled=True)
    for j in range(0, len(c), 7):
        one = dot_bits(p, t, a[j:j + 1], b[j:j + 1], c[j:j + 1], sparse_pos=pos[j:j + 1], compiled=True)
        assert one[0] == batch_d[j] == dot_bits(p, t, a[j:j + 1], b[j:j + 1], c[j:j + 1], sparse_pos=pos[j:j + 1],
                                                 compiled=False)[0], f"row {j}"


@pytest.mark.parametrize("d, dtype", [("f16", np.float16), ("f32", np.float32)])
def test_a_float64_in_the_normal_range_of_d_is_rounded_as_numpy_converts_it(d, dtype):
    """``_d_of_double`` (a late D in D's normal range, one binade short of overflow): rounding the float64's bits to
    nearest even is NumPy's conversion; ties and carries into the exponent drawn on purpose."""
    from ptxconf.tools.numerics.formats import FORMATS

    f, width = FORMATS[d], np.dtype(dtype).itemsize * 8
    mb = f.p - 1
    dp = (width - 1 - mb, mb, 1 - f.emin, f.emin, f.emax)
    rng = np.random.default_rng(5)
    n, drop = 3000, 53 - f.p
    frac = rng.integers(0, 1 << 52, n, dtype=np.uint64)
    kind = rng.integers(0, 3, n)  # 0 any bits, 1 a tie at D's precision, 2 D's significand all ones (a carry)
    low = np.uint64((1 << drop) - 1)
    frac = np.where(kind == 1, (frac & ~low) | np.uint64(1 << (drop - 1)), frac)
    frac = np.where(kind == 2, frac | np.uint64(((1 << 52) - 1) & ~((1 << drop) - 1)), frac)
    exp = rng.integers(f.emin, f.emax, n).astype(np.uint64) + np.uint64(1023)
    x = (rng.integers(0, 2, n, dtype=np.uint64) << np.uint64(63)) | (exp << np.uint64(52)) | frac
    kern = compiled._kernels()
    got = np.array([kern._d_of_double(dp, f.p, v) for v in x.view(np.int64)], dtype=np.uint64)
    want = x.view(np.float64).astype(dtype).view(f"u{width // 8}").astype(np.uint64)
    assert np.array_equal(got, want), f"{int((got != want).sum())} of {n} differ"


@pytest.mark.parametrize("path", ["fp8.f32", "fp8.f16"])
@pytest.mark.parametrize("overflow", ["inf", "saturate"])
def test_a_d_that_c_meets_last_is_the_model_at_the_edges_of_d(path, overflow):
    """add_rne rows (the product table's rows): one or two products a row beside a C at the edges of D's range
    (its largest values, the top of its subnormals, the smallest normals) and C with all-ones significands (the
    sum rounds up into the next binade): through the normal range's rounding and around it, as model.py; and
    with ``overflow: saturate`` (a sum past D's largest value is that value)."""
    v = _fp8("mma.sync", path, 32)
    p, t = dataclasses.replace(path_of(SPEC, v), overflow=overflow), Types.of(v)
    rng = np.random.default_rng(13)
    n = 2048
    a = np.where(rng.random((n, 32)) < 2 / 32, rng.integers(0, 256, (n, 32)), 0).astype(np.uint64)
    b = rng.integers(0, 256, (n, 32)).astype(np.uint64)
    eb, mb = (5, 10) if t.d == "f16" else (8, 23)
    top, ones = (1 << eb) - 2, (1 << mb) - 1
    edges = np.array([top << mb | ones, top << mb, (top - 1) << mb | ones, 1 << mb, ones, 1 << mb | 1, 2 << mb,
                      2 << mb | ones], dtype=np.uint64)
    carry = (rng.integers(1, top + 1, n).astype(np.uint64) << np.uint64(mb)) | np.uint64(ones) - rng.integers(0, 4, n).astype(np.uint64)
    c = np.where(rng.random(n) < 0.5, edges[rng.integers(0, len(edges), n)], carry)
    c |= rng.integers(0, 2, n).astype(np.uint64) << np.uint64(eb + mb)
    want = dot_bits(p, t, a, b, c, compiled=False)
    got = dot_bits(p, t, a, b, c, compiled=True)
    bad = np.flatnonzero(got != want)
    assert not len(bad), f"{len(bad)} of {n} rows differ; first c={c[bad[0]]:#x}: {got[bad[0]]:#x} against {want[bad[0]]:#x}"
    exp = (want >> np.uint64(mb)) & np.uint64(top + 1)
    assert (exp == 0).any() and (exp == top).any(), "the rows reach D's subnormals and its top binade"
