"""The bulk layout fuzzer: cases drawn as array code agree with the emulator and the comparator, replay one
by one, and the fuzzer reports differing cases (every family with bulk cases, explained by its comparator), dead
workers and devices it cannot open as such."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from ptxconf.backends.bulk_device import EmulatedDevice, cuda_devices
from ptxconf.cli.main import main as cli_main
from ptxconf.core.bulk import bulk_record
from ptxconf.core.family import family_of, run_variants_of
from ptxconf.isa import load_specs
from ptxconf.isa.packing import unpack
from ptxconf.isa.targets import PtxVersion
from ptxconf.run.bulkfuzz import fuzz_bulk

SPECS = load_specs()
run_variants_of(SPECS)
MMA = [v for v in SPECS.variants.values() if v.family in ("mma.sync", "mma.sp")]
CC, MAX_PTX = (12, 0), PtxVersion(9, 2)


def _sample() -> list:
    """One variant per (family, A type, D type, shape): every kind of operand the bulk path draws."""
    seen, out = set(), []
    for v in MMA:
        key = (v.family, v.operands["A"].type.name, v.operands["D"].type.name, v.shape, "scale_A" in v.operands)
        if key not in seen:
            seen.add(key)
            out.append(v)
    return out


@pytest.mark.parametrize("v", _sample(), ids=lambda v: v.id)
def test_drawn_cases_are_what_the_emulator_computes_and_the_comparator_passes(v):
    fam = family_of(v)
    bc = fam.bulk_cases(v, 11, CC, MAX_PTX)
    drawn = bc.draw(np, 1000, 5)
    out = fam.emulate(bc.probe, drawn.in_words, bc.out_words, EmulatedDevice(cc=CC)._emulator)
    assert np.array_equal(np.where(drawn.defined[None], out, 0), np.where(drawn.defined[None], drawn.expected, 0))
    assert fam.compare(v, bulk_record(bc, drawn.in_words, out)).status == "pass"
    # Case i is a function of (variant, seed, i) alone: drawn alone, or in another batch, it is the same.
    alone = bc.draw(np, 1003, 1)
    assert np.array_equal(alone.in_words[0], drawn.in_words[3]) and np.array_equal(alone.expected[0], drawn.expected[3])
    # The values differ from case to case and from element to element (a fixed pattern would hide a layout error).
    a = unpack(v.operands["A"], drawn.in_words[:, :, : v.operands["A"].words], bc.params.get("A"))
    assert len(np.unique(a)) >= 2 and not np.array_equal(a[0], a[1])


def test_a_flipped_output_bit_is_explained_lane_by_lane():
    v = SPECS.get("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32")
    fam = family_of(v)
    bc = fam.bulk_cases(v, 2, CC, MAX_PTX)
    drawn = bc.draw(np, 0, 3)
    out = drawn.expected.copy()
    out[1, 5, 2] ^= np.uint32(1 << 7)
    vd = fam.compare(v, bulk_record(bc, drawn.in_words, out))
    assert vd.status == "fail" and "lane 5" in vd.details(v)


class _Tampering(EmulatedDevice):
    """Changes case 3's words of one variant in every launch (``tamper(out, in_words)``), as a wrong GPU would."""

    def __init__(self, victim: str, tamper, cc=CC):
        super().__init__(cc=cc, max_ptx=MAX_PTX)
        self.victim, self.tamper = victim, tamper

    def launch(self, module, probe, in_words, out_words, order, warps_per_block):
        out = super().launch(module, probe, in_words, out_words, order, warps_per_block)
        if probe.variant.id == self.victim and len(out) > 3:
            self.tamper(out, in_words)
        return out


def _flip(lane: int, word: int, bit: int):
    def tamper(out, in_words):
        out[3, lane, word] ^= np.uint32(1 << bit)
    return tamper


def _wmma_d_and_stray(out, in_words):
    """One byte of D flipped, one byte past every stride and offset a case draws written."""
    from ptxconf.families.wmma.memory import header

    img = out[3].reshape(-1).view(np.uint8)
    img[int(header(in_words[3:4])[0, 8]) + 1] ^= np.uint8(0x40)
    img[-1] = np.uint8(0x5A)


MOVEMENT = ("ldmatrix.sync.aligned.m8n8.x2.b16", "stmatrix.sync.aligned.m8n8.x1.trans.b16", "movmatrix.sync.aligned.m8n8.trans.b16")
WMMA = ("wmma.mma.sync.aligned.col.row.m32n8k16.f32.f16", "wmma.mma.sync.aligned.row.row.m16n16k16.f16.f16.satfinite",
        "wmma.load.b.sync.aligned.col.m8n8k128.b1")
# (forms fuzzed together, the one whose words are changed, how, what the family's comparator says of it)
TAMPERED = {
    "mma.sync": (None, 1, _flip(0, 0, 0), "lane 0"),
    "ldmatrix": (MOVEMENT, 0, _flip(2, 0, 4), "lane 2 register 0"),
    "stmatrix": (MOVEMENT, 1, _flip(2, 0, 4), "shared byte"),
    "wmma": (WMMA, 1, _wmma_d_and_stray, "1 of 256 D elements differ, 1 stray bytes"),
}


class _Dying(EmulatedDevice):
    """Dies (as a faulting kernel takes its process down) on one variant's first launch."""

    def __init__(self, victim: str):
        super().__init__(cc=CC, max_ptx=MAX_PTX)
        self.victim = victim

    def launch(self, module, probe, in_words, out_words, order, warps_per_block):
        if probe.variant.id == self.victim:
            os._exit(9)
        return super().launch(module, probe, in_words, out_words, order, warps_per_block)


def _variants():
    return [v for v in MMA if v.family == "mma.sync" and v.shape == (16, 8, 16)][:4]


@pytest.mark.parametrize("family", TAMPERED)
def test_the_fuzzer_reports_each_differing_variant_seed_with_the_comparators_account_and_a_replay_command(family):
    names, victim, tamper, account = TAMPERED[family]
    vs = _variants() if names is None else [SPECS.get(name) for name in names]
    victim = vs[victim].id
    res = fuzz_bulk(lambda d: _Tampering(victim, tamper), [0], vs, budget_s=3.0, first_seed=5, cases=64, batch=32,
                    backend_name="emulator")
    assert res.fatal is None and res.runs >= len(vs) and res.cases >= 64 * len(vs)
    assert set(res.by_family) == {v.family for v in vs}
    assert res.failures and all(f.startswith(victim + ":value:seed=") for f in res.failures)
    assert "(first: case 3)" in res.failures[0] and account in res.failures[0]
    assert f"ptxconf fuzz case '{victim}' --seed 5 --case 3 --backend emulator" in res.failures[0]
    assert set(res.stages_s) == {"build", "draw", "launch", "compare"}


def test_a_worker_that_dies_is_one_failure_and_a_fresh_worker_goes_on():
    vs = _variants()
    res = fuzz_bulk(lambda d: _Dying(vs[0].id), [0], vs, budget_s=3.0, first_seed=1, cases=32, batch=32,
                    backend_name="emulator")
    died = [f for f in res.failures if "worker died" in f]
    assert died and all(f.startswith(vs[0].id) for f in died) and "exit code 9" in died[0]
    assert len(died) - 1 <= res.restarts <= len(died)  # no fresh worker for a death after the budget
    assert res.runs > 0 and res.by_family.get("mma.sync", 0) > 0  # the other variants ran


def test_a_device_that_cannot_open_stops_the_run_with_the_reason():
    def broken(ordinal):
        raise RuntimeError("no such GPU")

    res = fuzz_bulk(broken, [0], _variants(), budget_s=2.0, first_seed=1, cases=8, batch=8)
    assert res.fatal and "no such GPU" in res.fatal and res.cases == 0


def test_variants_without_bulk_cases_are_listed_with_the_reason():
    # tcgen05 has no bulk cases; the emulator stands in for its sm_100a
    vs = _variants()[:1] + [v for v in SPECS.variants.values() if v.family == "tcgen05.mma"][:1]
    res = fuzz_bulk(lambda d: EmulatedDevice(cc=(10, 0)), [0], vs, budget_s=1.5, first_seed=1, cases=8,
                    batch=8, backend_name="emulator")
    assert list(res.unsupported) == [vs[1].id] and "no bulk cases" in res.unsupported[vs[1].id]


# (forms fuzzed, a form and case replayed): one row per family with bulk cases
CLI = [
    (["mma.sync.aligned.m16n8k16.row.col.f32.bf16*"], "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", 9),
    (["ldmatrix.sync.aligned.m8n8*", "stmatrix.sync.aligned.m8n8.x4*", "movmatrix*"],
     "ldmatrix.sync.aligned.m8n16.x4.b8x16.b6x16_p32", 70000),
    (["wmma.load.a.sync.aligned.row.m16n16k16*", "wmma.store.d.*.m8n8k4.f64"],
     "wmma.mma.xor.popc.sync.aligned.row.col.m8n8k128.s32.b1.b1.s32", 4096),
]


@pytest.mark.parametrize("select, form, case", CLI, ids=lambda x: x[0].split(".")[0] if isinstance(x, list) else None)
def test_the_cli_fuzzes_in_bulk_and_replays_a_case(capsys, tmp_path, select, form, case):
    args = ["fuzz", "layouts", "--bulk", "--backend", "emulator", "--budget", "2", "--cases", "32",
            "--json", str(tmp_path / "b.json")]
    rc = cli_main(args + [x for glob in select for x in ("--select", glob)])
    out = capsys.readouterr().out
    assert rc == 0 and "0 failed" in out and "verified cases/s" in out
    assert (tmp_path / "b.json").is_file()
    rc = cli_main(["fuzz", "case", form, "--seed", "1", "--case", str(case), "--backend", "emulator"])
    assert rc == 0 and capsys.readouterr().out.startswith(f"PASS {form}:value:seed=1:case={case} ")


@pytest.mark.gpu
@pytest.mark.parametrize("select", [["mma.sync.aligned.m16n8k16*"], ["ldmatrix*", "stmatrix*", "movmatrix*"], ["wmma*"],
                                    ["wgmma.mma_async.sync.aligned.m64n8k*", "wgmma.mma_async.sync.aligned.m64n256k*"],
                                    ["wgmma.mma_async.sp.sync.aligned.m64n8k*", "wgmma.mma_async.sp.sync.aligned.m64n256k*"]],
                         ids=lambda s: s[0].split(".")[0].rstrip("*"))
def test_bulk_fuzzing_on_the_gpu_verifies_cases(select):
    count, why = cuda_devices()
    if not count:
        pytest.skip(f"no GPU for the bulk fuzzer: {why}")
    proc = subprocess.run([sys.executable, "-m", "ptxconf.cli.main", "fuzz", "layouts", "--bulk", "--backend", "pycuda",
                           "--budget", "10", *[x for glob in select for x in ("--select", glob)]], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert " 0 failed" in proc.stdout and "verified cases/s" in proc.stdout


def test_variants_this_gpu_cannot_run_are_listed_not_failed():
    scaled = [v for v in MMA if "block_scale" in v.id][:1]  # sm_120a forms, on a GPU of compute capability 9.0
    res = fuzz_bulk(lambda d: EmulatedDevice(cc=(9, 0)), [0], scaled + _variants()[:1], budget_s=1.5, first_seed=1,
                    cases=8, batch=8, backend_name="emulator")
    assert not res.failures and "this GPU has compute capability 9.0" in res.unsupported[scaled[0].id]
