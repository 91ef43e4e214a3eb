"""ldmatrix / stmatrix / movmatrix in bulk: drawn cases hold what the value check's cases hold, the expected
words are the ISA's (checked against its literal lane rules), and any case is drawn alike alone or in a batch
(the fuzzing loop itself, failures and replays: tests/run/test_bulkfuzz.py)."""

from __future__ import annotations

import numpy as np
import pytest
from ptxconf.backends.bulk_device import EmulatedDevice
from ptxconf.core.bulk import bulk_record
from ptxconf.core.family import family_of, run_variants_of
from ptxconf.families.movement import probe as mv
from ptxconf.isa import load_specs
from ptxconf.isa.targets import PtxVersion

SPECS = load_specs()
run_variants_of(SPECS)
FORMS = [v for v in SPECS.variants.values() if mv.is_movement(v)]
CC, MAX_PTX = (12, 0), PtxVersion(9, 2)


@pytest.mark.parametrize("v", FORMS, ids=lambda v: v.id)
def test_drawn_cases_are_the_value_checks_and_what_the_emulator_computes(v):
    fam = family_of(v)
    bc = fam.bulk_cases(v, 11, CC, MAX_PTX)
    drawn = bc.draw(np, 1000, 6)
    assert drawn.in_words.shape == (6, 32, mv.in_words(v)) and drawn.expected.shape == (6, 32, bc.out_words)
    out = fam.emulate(bc.probe, drawn.in_words, bc.out_words, EmulatedDevice(cc=CC)._emulator)
    assert np.array_equal(np.where(drawn.defined[None], out, 0), np.where(drawn.defined[None], drawn.expected, 0))
    assert fam.compare(v, bulk_record(bc, drawn.in_words, out)).status == "pass"
    # Case i is a function of (variant, seed, i) alone.
    alone = bc.draw(np, 1004, 1)
    assert np.array_equal(alone.in_words[0], drawn.in_words[4]) and np.array_equal(alone.expected[0], drawn.expected[4])
    assert not np.array_equal(drawn.in_words[0], drawn.in_words[1])
    if v.family != "movmatrix":
        # One distinct aligned row of the image per row address, the poison in every lane the form ignores.
        rl = mv.row_lanes(v).ravel()
        addr = drawn.in_words[:, :, mv.ADDR_WORD]
        assert (addr[:, rl] % mv.ROW_BYTES == 0).all() and (addr[:, rl] < mv.IMAGE_BYTES).all()
        assert all(len(set(a[rl])) == len(rl) for a in addr)
        assert (np.delete(addr, rl, axis=1) == mv.POISON).all()
        assert len({tuple(a[rl]) for a in addr}) == len(addr)  # fresh rows case to case
    # Padding registers are not compared; every register the form writes is.
    assert drawn.defined.all() if v.family == "stmatrix" else drawn.defined[:, : mv.registers(v)].all()


def _bytes(words: np.ndarray, case: int) -> np.ndarray:
    return words[case, :, : mv.IMAGE_WORDS].astype("<u4").reshape(-1).view(np.uint8)


def test_expected_words_follow_the_isa_literal_rules():
    """ldmatrix .x4: lane l's register i holds row l // 4 of matrix i, elements 2 (l % 4) and +1; stmatrix
    stores the same cells; movmatrix .trans: lane l's element e is a's (row 2 (l % 4) + e, col l // 4)."""
    for name in ("ldmatrix.sync.aligned.m8n8.x4.b16", "stmatrix.sync.aligned.m8n8.x4.b16"):
        v = SPECS.get(name)
        bc = family_of(v).bulk_cases(v, 3, CC, MAX_PTX)
        d = bc.draw(np, 77, 2)
        for case in range(2):
            img, out = _bytes(d.in_words, case), _bytes(d.expected, case)
            addr = d.in_words[case, :, mv.ADDR_WORD]
            for lane in range(32):
                for i in range(4):
                    row = int(addr[8 * i + lane // 4]) + 4 * (lane % 4)  # the lane giving matrix i's row
                    if v.family == "ldmatrix":
                        assert int(d.expected[case, lane, i]) == int(img[row : row + 4].view("<u4")[0])
                    else:
                        assert int(out[row : row + 4].view("<u4")[0]) == int(d.in_words[case, lane, mv.ADDR_WORD + 1 + i])
            if v.family == "stmatrix":  # bytes outside every stored row are the image's
                stored = np.zeros(mv.IMAGE_BYTES, dtype=bool)
                for a in addr[addr != mv.POISON]:
                    stored[int(a) : int(a) + 16] = True
                assert np.array_equal(out[~stored], img[~stored])
    v = SPECS.get("movmatrix.sync.aligned.m8n8.trans.b16")
    d = family_of(v).bulk_cases(v, 3, CC, MAX_PTX).draw(np, 5, 1)
    half = d.in_words[0, :, 0:1].view("<u2")  # a: lane 4 r + c / 2 holds (row r, col c), two per register
    got = d.expected[0, :, 0:1].view("<u2")
    for lane in range(32):
        for e in range(2):
            r, c = 2 * (lane % 4) + e, lane // 4
            assert got[lane, e] == half[4 * r + c // 2, c % 2]
