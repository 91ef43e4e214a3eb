"""wmma in bulk: drawn cases hold the drawn A, B, C where their header says, at strides and offsets the hardware
takes, equal what the emulator computes, replay one by one; a wrong D element or a stray byte comes back as a
failure with its replay command."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from ptxconf.backends.bulk_device import EmulatedDevice, cuda_devices
from ptxconf.cli.main import main as cli_main
from ptxconf.core.bulk import bulk_record
from ptxconf.core.family import family_of, run_variants_of
from ptxconf.families.wmma.memory import SLACK, as_bytes, header, max_stride, read_operands
from ptxconf.run.bulkfuzz import fuzz_bulk
from ptxconf.spec import load_specs
from ptxconf.spec.targets import PtxVersion

SPECS = load_specs()
run_variants_of(SPECS)
CC, MAX_PTX = (12, 0), PtxVersion(9, 2)
SAMPLE = [
    "wmma.mma.sync.aligned.col.row.m32n8k16.f32.f16",
    "wmma.mma.sync.aligned.row.row.m16n16k16.f16.f16.satfinite",
    "wmma.mma.sync.aligned.col.col.m8n32k16.s32.u8.u8.s32.satfinite",
    "wmma.mma.sync.aligned.row.col.m8n8k32.s32.s4.s4.s32",
    "wmma.mma.xor.popc.sync.aligned.row.col.m8n8k128.s32.b1.b1.s32",
    "wmma.mma.sync.aligned.row.col.m8n8k4.rm.f64.f64.f64.f64",
    "wmma.mma.sync.aligned.col.row.m16n16k8.f32.tf32.tf32.f32",
    "wmma.load.b.sync.aligned.col.m8n8k128.b1",
    "wmma.load.a.sync.aligned.row.m8n8k32.u4",
    "wmma.load.c.sync.aligned.col.m16n16k8.f32",
    "wmma.store.d.sync.aligned.row.m8n8k4.f64",
    "wmma.store.d.sync.aligned.col.m8n32k16.f16",
]


@pytest.mark.parametrize("vid", SAMPLE)
def test_drawn_cases_hold_the_drawn_operands_and_are_what_the_emulator_computes(vid):
    v = SPECS.get(vid)
    fam = family_of(v)
    bc = fam.bulk_cases(v, 7, CC, MAX_PTX)
    drawn = bc.draw(np, 500, 16)
    out = fam.emulate(bc.probe, drawn.in_words, bc.out_words, EmulatedDevice(cc=CC)._emulator)
    assert drawn.defined.all() and np.array_equal(out, drawn.expected)
    assert fam.compare(v, bulk_record(bc, drawn.in_words, out)).status == "pass"
    assert (as_bytes(drawn.expected) != 0).any()  # D was stored
    # The loads read back exactly the values drawn for A, B and C.
    mv, spec = bc.mma, v.doc
    ops = read_operands(spec, mv, bc.routes, drawn.in_words)
    values = bc.values.bits(np, 500, 16)
    for m in "ABC":
        assert np.array_equal(ops[m], values[m]), m
    assert len(np.unique(ops["A"])) >= 2 and not np.array_equal(ops["C"][0], ops["C"][1])
    # Strides and offsets are legal, and vary.
    hdr = header(drawn.in_words)
    assert set(hdr[:, 0]) <= set(range(len(bc.routes)))
    for k, m in enumerate("abcd"):
        t, shape = mv.type_of(m), mv.shape_name
        for case in range(16):
            lay = mv.layout_of(m) if m in "ab" else bc.routes[hdr[case, 0]][k - 2]
            assert spec.min_stride(m, t, shape, lay) <= hdr[case, 1 + k] <= max_stride(spec, mv, m, lay)
            assert (hdr[case, 1 + k] - spec.min_stride(m, t, shape, lay)) % spec.stride_unit(m, t, shape, lay) == 0
        align = spec.base_alignment(m, t, shape)
        start = bc.size.slots[k] if m != "d" else 0
        assert ((hdr[:, 5 + k] - start) % align == 0).all() and (hdr[:, 5 + k] <= start + SLACK * align).all()
    assert len({tuple(h) for h in hdr[:, 1:]}) > 1
    alone = bc.draw(np, 509, 1)  # case i is a function of (variant, seed, i) alone
    assert np.array_equal(alone.in_words[0], drawn.in_words[9]) and np.array_equal(alone.expected[0], drawn.expected[9])


def test_every_route_is_drawn():
    v = SPECS.get("wmma.mma.sync.aligned.row.col.m16n16k16.f32.f32")
    bc = family_of(v).bulk_cases(v, 1, CC, MAX_PTX)
    assert set(header(bc.draw(np, 0, 64).in_words)[:, 0]) == set(range(len(bc.routes))) and len(bc.routes) == 4


class _Wrong(EmulatedDevice):
    """Case 3 of one variant: one byte of D flipped, and one byte outside D written."""

    def __init__(self, victim: str):
        super().__init__(cc=(9, 0), max_ptx=MAX_PTX)
        self.victim = victim

    def launch(self, module, probe, in_words, out_words, order, warps_per_block):
        out = super().launch(module, probe, in_words, out_words, order, warps_per_block)
        if probe.variant.id == self.victim and len(out) > 3:
            hdr = header(in_words[3:4])[0]
            img = out[3].reshape(-1).view(np.uint8)
            img[int(hdr[8]) + 1] ^= np.uint8(0x40)
            img[-1] = np.uint8(0x5A)  # past every stride and offset a case draws
        return out


def test_the_fuzzer_reports_wrong_d_and_stray_bytes_with_a_replay_command():
    vs = [SPECS.get(vid) for vid in SAMPLE[:3]]
    res = fuzz_bulk(lambda d: _Wrong(vs[1].id), [0], vs, budget_s=2.0, first_seed=5, cases=32, batch=16,
                    backend_name="emulator")
    assert res.fatal is None and res.runs >= len(vs) and res.by_family.get("wmma", 0) >= 32 * len(vs)
    assert res.failures and all(f.startswith(vs[1].id + ":value:seed=") for f in res.failures)
    first = res.failures[0]
    assert "(first: case 3)" in first and "1 of 256 D elements differ, 1 stray bytes" in first
    assert f"ptxconf fuzz case '{vs[1].id}' --seed 5 --case 3 --backend emulator" in first


def test_the_cli_fuzzes_wmma_in_bulk_and_replays_a_case(capsys):
    rc = cli_main(["fuzz", "layouts", "--bulk", "--backend", "emulator", "--budget", "2", "--cases", "32",
                   "--select", "wmma.load.a.sync.aligned.row.m16n16k16*", "--select", "wmma.store.d.*.m8n8k4.f64"])
    out = capsys.readouterr().out
    assert rc == 0 and "0 failed" in out and "verified cases/s" in out
    form = "wmma.mma.xor.popc.sync.aligned.row.col.m8n8k128.s32.b1.b1.s32"
    rc = cli_main(["fuzz", "case", form, "--seed", "2", "--case", "4096", "--backend", "emulator"])
    assert rc == 0 and capsys.readouterr().out.startswith(f"PASS {form}:value:seed=2:case=4096 ")


@pytest.mark.gpu
def test_bulk_fuzzing_wmma_on_the_gpu_verifies_cases():
    count, why = cuda_devices()
    if not count:
        pytest.skip(f"no GPU for the bulk fuzzer: {why}")
    proc = subprocess.run([sys.executable, "-m", "ptxconf.cli.main", "fuzz", "layouts", "--bulk", "--backend", "pycuda",
                           "--budget", "10", "--select", "wmma*"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert " 0 failed" in proc.stdout and "verified cases/s" in proc.stdout
