"""Narrow operands packed into 64-bit words (formats.pack_words) through model.dot_bits: ``.b1`` 64 elements a word,
fp8 8.  The NumPy reference unpacks them; the compiled model reads ``.b1`` words (popcounts, b1_rows) and unpacks
the others first; every way gives the D of the unpacked containers, bit for bit: every ``.b1`` form and dense fp8
path of the spec, both ``.b1`` operations, ``.satfinite`` or not, K not a multiple of a word, words holding stray
bits past K.  The packing tests and the reference run without numba; the kernels' skip without it."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from ptxconf.isa import load_specs
from ptxconf.isa.ptxtypes import ptx_type
from ptxconf.tools.numerics.formats import WORD, n_words, pack_words, unpack_words
from ptxconf.tools.numerics.fuzz import batch
from ptxconf.tools.numerics.harness import k_of, numeric_variants, path_of
from ptxconf.tools.numerics.model import Types, dot_bits
from ptxconf.tools.numerics.spec import numerics_spec

SPECS = load_specs()
SPEC = numerics_spec(SPECS)
DENSE = numeric_variants(SPECS, families=("mma.sync", "wgmma"))
B1_VARIANTS = [v for v in DENSE if path_of(SPEC, v).kind == "b1"]
KS = (1, 63, 64, 65, 130, 256)  # a part word alone, one word exactly, a word and a bit, the spec's longest


def _fp8_variants():
    """One dense fp8 variant per (path, A, B, D types, K)."""
    out = {}
    for v in DENSE:
        t = Types.of(v)
        if {t.a, t.b} <= {"e4m3", "e5m2"}:
            out.setdefault((path_of(SPEC, v).name, t.a, t.b, t.d, k_of(v)), v)
    return list(out.values())


FP8_VARIANTS = _fp8_variants()
# the spec's values (the product table's rows), and a NaN payload reaching D (the general rows)
FP8_CHANGES = [{}, {"nan_propagation": "payload_a_first"}]
# (spread, cancel, c_scale, sub_rate, special_rate, center): fuzz.batch recipes (test_numerics_compiled.RECIPES)
RECIPES = [(20, 0.3, 0, 0.02, 0.0, 0), (3, 0.9, 12, 0.1, 0.02, 0), (40, 0.5, -30, 0.3, 0.001, -30),
           (8, 0.2, 40, 0.0, 0.05, 40)]


def _numba() -> None:
    pytest.importorskip("numba", reason="the compiled model needs numba (pip install 'ptx-conformance[fast]')")


def _b1_rows(seed: int, n: int, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Containers with stray high bits (only the low one is the element), C across s32 and at its ends (.satfinite
    clamps, the wrap)."""
    rng = np.random.default_rng(seed)
    dense = rng.random((n, 1)) < 0.5  # half the rows mostly ones: sums near K
    a = rng.integers(0, 1 << 8, (n, k), dtype=np.uint64) | np.where(dense, np.uint64(1), np.uint64(0))
    b = rng.integers(0, 1 << 8, (n, k), dtype=np.uint64)
    c = rng.integers(0, 1 << 32, n, dtype=np.uint64)
    ends = rng.integers(0, 3, n)
    c = np.where(ends == 1, np.uint64(0x7FFFFFFF) - rng.integers(0, 2 * k + 1, n, dtype=np.uint64), c)
    c = np.where(ends == 2, np.uint64(0x80000000) + rng.integers(0, 8, n, dtype=np.uint64), c)
    return a, b, c


def _stray(words: np.ndarray, k: int, width: int) -> np.ndarray:
    """The words with every bit past element ``k`` set: never read as an element."""
    used = (k * width) % WORD
    if used:
        words = words.copy()
        words[..., -1] |= ~np.uint64(0) << np.uint64(used)
    return words


@pytest.mark.parametrize("width", [1, 2, 4, 8, 16, 32])
def test_the_words_hold_element_k_at_its_place_and_unpack_to_the_elements(width):
    per = WORD // width
    x = np.random.default_rng(width).integers(0, 1 << 40, (40, 2 * per + 1), dtype=np.uint64)
    k = x.shape[1]
    words = pack_words(x, width)
    mask = np.uint64((1 << width) - 1)
    assert words.shape == (40, n_words(k, width)) == (40, 3) and words.dtype == np.uint64
    for j in (0, 1, per - 1, per, 2 * per, k - 1):
        assert np.array_equal((words[:, j // per] >> np.uint64((j % per) * width)) & mask, x[:, j] & mask)
    assert not (words[:, 2] >> np.uint64(width)).any() if per > 1 else True  # past K: zero
    assert np.array_equal(unpack_words(words, width, k), x & mask)
    assert np.array_equal(unpack_words(pack_words(x.reshape(4, 10, k), width), width, k), (x & mask).reshape(4, 10, k))
    with pytest.raises(ValueError, match=f"k={3 * per + 1}"):
        unpack_words(words, width, 3 * per + 1)


def test_a_width_that_does_not_divide_a_word_is_refused():
    with pytest.raises(ValueError, match="3 bits"):
        pack_words(np.zeros((1, 4), dtype=np.uint64), 3)


@pytest.mark.parametrize("compiled", [False, True], ids=["numpy", "compiled"])
def test_packed_b1_dots_are_the_unpacked_dots_bit_for_bit(compiled):
    if compiled:
        _numba()
    v = B1_VARIANTS[0]
    p = path_of(SPEC, v)
    for bitop in ("xor", "and"):
        for sat in (False, True):
            t = dataclasses.replace(Types.of(v), bitop=bitop, satfinite=sat)
            for k in KS:
                a, b, c = _b1_rows(k, 300, k)
                want = dot_bits(p, t, a, b, c, compiled=False)
                got = dot_bits(p, t, _stray(pack_words(a, 1), k, 1), pack_words(b, 1), c, packed_k=k, compiled=compiled)
                bad = np.flatnonzero(got != want)
                assert not len(bad), f"{bitop} satfinite={sat} K={k}: {len(bad)} of {len(c)} rows differ, first {bad[0]}"


def _packed_batch(v, seed: int, recipe, cases: int = 2):
    """A fuzz batch of ``v`` as rows of containers and as rows of words, packed before the rows are broadcast (as
    the bench hands them)."""
    spread, cancel, c_scale, sub, special, center = recipe
    t, k = Types.of(v), k_of(v)
    with np.errstate(invalid="ignore", over="ignore"):
        bits = batch(v, seed, cases, spread, cancel, c_scale, sub, special, center)
    a, b = bits["A"], np.swapaxes(bits["B"], -1, -2)
    cs, mats, m, _ = a.shape
    rows = (cs, mats, m, b.shape[-2])

    def spread_rows(x_a, x_b):
        w = x_a.shape[-1]
        return (np.broadcast_to(x_a[:, :, :, None, :], rows + (w,)).reshape(-1, w),
                np.broadcast_to(x_b[:, :, None], rows + (w,)).reshape(-1, w))

    wa, wb = ptx_type(t.a).bits, ptx_type(t.b).bits
    words = spread_rows(_stray(pack_words(a, wa), k, wa), _stray(pack_words(b, wb), k, wb))
    return spread_rows(a, b), words, bits["C"].reshape(-1)


@pytest.mark.parametrize("v", B1_VARIANTS, ids=lambda v: v.id)
def test_every_b1_form_of_the_spec_packed_through_the_kernel(v):
    _numba()
    p, t, k = path_of(SPEC, v), Types.of(v), k_of(v)
    (ad, bd), (wa, wb), c = _packed_batch(v, 11, RECIPES[0], 3)
    want = dot_bits(p, t, ad, bd, c, compiled=False)
    assert np.array_equal(dot_bits(p, t, wa, wb, c, packed_k=k, compiled=True), want)


@pytest.mark.parametrize("change", FP8_CHANGES, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()) or "spec")
def test_packed_fp8_dots_are_the_unpacked_dots_bit_for_bit(change):
    """Every dense fp8 path, type pair and K of the spec, on each recipe: the packed rows through model.dot_bits (the
    kernels, and the reference) against the reference on the containers."""
    _numba()
    for v in FP8_VARIANTS:
        p, t, k = dataclasses.replace(path_of(SPEC, v), **change), Types.of(v), k_of(v)
        for i, recipe in enumerate(RECIPES):
            (ad, bd), (wa, wb), c = _packed_batch(v, 5000 + i, recipe)
            want = dot_bits(p, t, ad, bd, c, compiled=False)
            got = dot_bits(p, t, wa, wb, c, packed_k=k, compiled=True)
            bad = np.flatnonzero(got != want)
            assert not len(bad), (f"{v.id} {change} recipe {recipe}: {len(bad)} of {len(c)} dots differ; first "
                                  f"a={[hex(x) for x in ad[bad[0]]]} b={[hex(x) for x in bd[bad[0]]]} c={c[bad[0]]:#x}")
            if i == 0 and not change:
                assert np.array_equal(dot_bits(p, t, wa, wb, c, packed_k=k, compiled=False), want)


def test_packed_operands_are_refused_where_they_do_not_fit():
    v = B1_VARIANTS[0]
    p, t = path_of(SPEC, v), Types.of(v)
    words = pack_words(np.ones((2, 128), dtype=np.uint64), 1)
    sp = next(v for v in numeric_variants(SPECS, families=("mma.sp",)))
    with pytest.raises(ValueError, match="packed_k"):
        dot_bits(path_of(SPEC, sp), Types.of(sp), words, words, [0, 0], sparse_pos=[[0, 1], [0, 1]], packed_k=128)
    _numba()
    with pytest.raises(ValueError, match="packed_k=256"):
        dot_bits(p, t, words, words, [0, 0], packed_k=256, compiled=True)
