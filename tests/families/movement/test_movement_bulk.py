"""ldmatrix / stmatrix / movmatrix in bulk: drawn cases hold what the value check's cases hold, the expected
words are the ISA's (checked against its literal lane rules), cases replay one by one, and a differing word
comes back as a failure with its replay command."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from ptxconf.backends.bulk_device import EmulatedDevice, cuda_devices
from ptxconf.cli.main import main as cli_main
from ptxconf.core.bulk import bulk_record
from ptxconf.core.family import family_of, run_variants_of
from ptxconf.families.movement import probe as mv
from ptxconf.run.bulkfuzz import fuzz_bulk
from ptxconf.spec import load_specs
from ptxconf.spec.targets import PtxVersion

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


class _Flipping(EmulatedDevice):
    """Flips one bit of case 3's first word in every launch of one variant."""

    def __init__(self, victim: str):
        super().__init__(cc=(9, 0), max_ptx=MAX_PTX)
        self.victim = victim

    def launch(self, module, probe, in_words, out_words, order, warps_per_block):
        out = super().launch(module, probe, in_words, out_words, order, warps_per_block)
        if probe.variant.id == self.victim and len(out) > 3:
            out[3, 2, 0] ^= np.uint32(1 << 4)
        return out


def test_the_fuzzer_reports_a_differing_word_with_the_comparators_account_and_a_replay_command():
    vs = [SPECS.get(name) for name in ("ldmatrix.sync.aligned.m8n8.x2.b16", "stmatrix.sync.aligned.m8n8.x1.trans.b16",
                                       "movmatrix.sync.aligned.m8n8.trans.b16")]
    for victim, where in ((vs[0].id, "lane 2 register 0"), (vs[1].id, "shared byte")):
        res = fuzz_bulk(lambda d, victim=victim: _Flipping(victim), [0], vs, budget_s=2.0, first_seed=5, cases=64,
                        batch=32, backend_name="emulator")
        assert res.fatal is None and res.runs >= len(vs) and set(res.by_family) == {"ldmatrix", "stmatrix", "movmatrix"}
        assert res.failures and all(f.startswith(victim + ":value:seed=") for f in res.failures)
        assert "(first: case 3)" in res.failures[0] and where in res.failures[0]
        assert f"ptxconf fuzz case '{victim}' --seed 5 --case 3 --backend emulator" in res.failures[0]


def test_the_cli_fuzzes_movement_in_bulk_and_replays_a_case(capsys, tmp_path):
    rc = cli_main(["fuzz", "layouts", "--bulk", "--backend", "emulator", "--budget", "2", "--cases", "64",
                   "--select", "ldmatrix.sync.aligned.m8n8*", "--select", "stmatrix.sync.aligned.m8n8.x4*",
                   "--select", "movmatrix*"])
    out = capsys.readouterr().out
    assert rc == 0 and "0 failed" in out and "verified cases/s" in out
    for form in ("stmatrix.sync.aligned.m8n8.x2.trans.b16", "ldmatrix.sync.aligned.m8n16.x4.b8x16.b6x16_p32"):
        rc = cli_main(["fuzz", "case", form, "--seed", "4", "--case", "70000", "--backend", "emulator"])
        assert rc == 0 and capsys.readouterr().out.startswith(f"PASS {form}:value:seed=4:case=70000 ")


@pytest.mark.gpu
def test_bulk_fuzzing_movement_on_the_gpu_verifies_cases():
    count, why = cuda_devices()
    if not count:
        pytest.skip(f"no GPU for the bulk fuzzer: {why}")
    proc = subprocess.run([sys.executable, "-m", "ptxconf.cli.main", "fuzz", "layouts", "--bulk", "--backend", "pycuda",
                           "--budget", "10", "--select", "ldmatrix*", "--select", "stmatrix*", "--select", "movmatrix*"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert " 0 failed" in proc.stdout and "verified cases/s" in proc.stdout
