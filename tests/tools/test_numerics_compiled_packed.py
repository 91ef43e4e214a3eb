"""``.b1`` operands packed 64 elements a word (formats.pack_b1) through model.dot_bits: the NumPy reference reads
their elements, the compiled kernel (b1_rows) popcounts the words; both give the D of the unpacked containers, bit
for bit, on every ``.b1`` form of the spec, both operations, ``.satfinite`` or not, K not a multiple of 64, and words
holding stray bits past K.  The packing tests and the reference run without numba; the kernel's skip without it."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from ptxconf.isa import load_specs
from ptxconf.tools.numerics.formats import B1_WORD, pack_b1, unpack_b1
from ptxconf.tools.numerics.fuzz import batch
from ptxconf.tools.numerics.harness import k_of, numeric_variants, path_of
from ptxconf.tools.numerics.model import Types, dot_bits
from ptxconf.tools.numerics.spec import numerics_spec

SPECS = load_specs()
SPEC = numerics_spec(SPECS)
B1_VARIANTS = [v for v in numeric_variants(SPECS, families=("mma.sync", "wgmma")) if path_of(SPEC, v).kind == "b1"]
KS = (1, 63, 64, 65, 130, 256)  # a part word alone, one word exactly, a word and a bit, the spec's longest


def _numba() -> None:
    pytest.importorskip("numba", reason="the compiled model needs numba (pip install 'ptx-conformance[fast]')")


def _rows(seed: int, n: int, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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


def test_the_words_hold_element_k_at_bit_k_mod_64_and_unpack_to_the_elements():
    a, _, _ = _rows(1, 40, 130)
    words = pack_b1(a)
    assert words.shape == (40, 3) and words.dtype == np.uint64
    for j in (0, 1, 63, 64, 127, 128, 129):
        assert np.array_equal((words[:, j // B1_WORD] >> np.uint64(j % B1_WORD)) & np.uint64(1), a[:, j] & np.uint64(1))
    assert not (words[:, 2] >> np.uint64(2)).any()  # past K: zero
    assert np.array_equal(unpack_b1(words, 130), a & np.uint64(1))
    assert np.array_equal(unpack_b1(pack_b1(a.reshape(4, 10, 130)), 130), (a & np.uint64(1)).reshape(4, 10, 130))
    with pytest.raises(ValueError, match="k=193"):
        unpack_b1(words, 193)


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
                a, b, c = _rows(k, 300, k)
                want = dot_bits(p, t, a, b, c, compiled=False)
                wa, wb = pack_b1(a), pack_b1(b)
                if k % B1_WORD:  # stray bits past K in the last word: never counted
                    wa[:, -1] |= ~np.uint64(0) << np.uint64(k % B1_WORD)
                got = dot_bits(p, t, wa, wb, c, packed_k=k, compiled=compiled)
                bad = np.flatnonzero(got != want)
                assert not len(bad), f"{bitop} satfinite={sat} K={k}: {len(bad)} of {len(c)} rows differ, first {bad[0]}"


@pytest.mark.parametrize("v", B1_VARIANTS, ids=lambda v: v.id)
def test_every_b1_form_of_the_spec_packed_through_the_kernel(v):
    """The fuzzer's batches of each .b1 form, packed before the rows are broadcast (as the bench hands them)."""
    _numba()
    p, t, k = path_of(SPEC, v), Types.of(v), k_of(v)
    bits = batch(v, 11, 3)
    a, b = bits["A"], np.swapaxes(bits["B"], -1, -2)
    cs, mats, m, _ = a.shape
    n = b.shape[-2]
    rows = (cs, mats, m, n)
    ad = np.broadcast_to(a[:, :, :, None, :], rows + (k,)).reshape(-1, k)
    bd = np.broadcast_to(b[:, :, None], rows + (k,)).reshape(-1, k)
    wa = np.broadcast_to(pack_b1(a)[:, :, :, None, :], rows + (-(-k // B1_WORD),)).reshape(len(ad), -1)
    wb = np.broadcast_to(pack_b1(b)[:, :, None], rows + (-(-k // B1_WORD),)).reshape(len(ad), -1)
    c = bits["C"].reshape(-1)
    want = dot_bits(p, t, ad, bd, c, compiled=False)
    assert np.array_equal(dot_bits(p, t, wa, wb, c, packed_k=k, compiled=True), want)


def test_packed_operands_are_refused_where_they_do_not_fit():
    v = B1_VARIANTS[0]
    p, t = path_of(SPEC, v), Types.of(v)
    words = pack_b1(np.ones((2, 128), dtype=np.uint64))
    f16 = next(v for v in numeric_variants(SPECS, families=("mma.sync",)) if path_of(SPEC, v).kind == "float")
    with pytest.raises(ValueError, match="packed_k"):
        dot_bits(path_of(SPEC, f16), Types.of(f16), words, words, [0, 0], packed_k=128)
    _numba()
    with pytest.raises(ValueError, match="packed_k=256"):
        dot_bits(p, t, words, words, [0, 0], packed_k=256, compiled=True)
