"""Matrix programs: every step kind assembles, the emulated path equals the oracle, a failure shrinks, the CLI."""

from __future__ import annotations

import json
import re
import shutil

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ptxconf.backends.ptxas import assemble, find_ptxas
from ptxconf.cli.main import main
from ptxconf.families.wgmma import probe as wg
from ptxconf.isa.packing import pack, unpack
from ptxconf.oracle import mma as oracle_mma
from ptxconf.tools.programs import fuzz as fz
from ptxconf.tools.programs import ops as o
from ptxconf.tools.programs.emit import module_source
from ptxconf.tools.programs.inputs import make_inputs
from ptxconf.tools.programs.interp import IllegalProgram, ProgramEmulator, interpret
from ptxconf.tools.programs.model import LoopStep, MmaStep, PipelineStep, Program, ProgramError, WgmmaStep, variant
from ptxconf.tools.programs.oracle import expected
from ptxconf.tools.programs.strategies import pools, programs

HAVE_PTXAS = shutil.which("ptxas") is not None
F16_F32 = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
BF16_F32 = "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
FP8_F32 = "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32"
F16_F16 = "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16"
F64 = "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64"
S8_SAT = "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.u8.s32"
SPARSE = "mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f16.f16.f16.f16"
WG_RS = "wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16/rs"
WG_SS = "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16/ss"
WG_S8 = "wgmma.mma_async.sync.aligned.m64n16k32.satfinite.s32.s8.u8/rs"

# One program per step kind (and their options), then all of them in one kernel.
KINDS = {
    "mma chain, hoisted, kept": Program((MmaStep((F16_F32, BF16_F32, FP8_F32), hoist=True, keep=True),), pressure=16),
    "mma predicated (f64)": Program((MmaStep((F64, F64), predicated=True),), warps=4),
    "mma predicated (s32 saturating)": Program((MmaStep((S8_SAT,), predicated=True),)),
    "loop (sparse)": Program((LoopStep(SPARSE, 3),)),
    "wgmma A from registers, pipelined": Program((WgmmaStep(WG_RS, 3, pipelined=True, after_issue=16, swizzle="128B",
                                                            imm=(("scale_a", -1), ("scale_b", 1), ("trans_b", 1))),),
                                                 pressure=64),
    "wgmma A from shared, one group": Program((WgmmaStep(WG_SS, 2, swizzle="64B",
                                                         imm=(("scale_a", 1), ("scale_b", -1), ("trans_a", 1))),)),
    "wgmma s32": Program((WgmmaStep(WG_S8, 2, after_issue=4, swizzle="32B"),)),
    "ldmatrix -> mma -> stmatrix": Program((PipelineStep(F16_F16, "row-major", stmatrix=True),), warps=4),
    "ldmatrix -> mma (fp8)": Program((PipelineStep(FP8_F32, "col-major"),)),
}
KINDS["every family in one kernel"] = Program(tuple(s for p in KINDS.values() for s in p.steps
                                                    if not (isinstance(s, WgmmaStep) and s.chain > 2)), pressure=32)


@pytest.fixture(scope="module")
def kernels():
    return {name: o.lower(p) for name, p in KINDS.items()}


@pytest.mark.ptxas
@pytest.mark.skipif(not HAVE_PTXAS, reason="ptxas not on PATH")
def test_every_step_kind_assembles(kernels):
    """ptxas takes every kind of step for sm_90a (one module: one kernel per program)."""
    ok, err = assemble(module_source(list(kernels.values())), "sm_90a", find_ptxas(), use_cache=False)
    assert ok, err


@pytest.mark.parametrize("name", list(KINDS))
def test_emulated_equals_oracle(name, kernels):
    """The interpreter (registers, lane maps, descriptors) writes what the oracle (matrices only) says."""
    k = kernels[name]
    ins = make_inputs(k, seed=3, cases=2)
    exp = expected(k, ins)
    assert np.array_equal(interpret(k, ins.words), exp)
    assert (exp != 0).mean() > 0.3  # the outputs carry values, not zeros everywhere


def test_chained_oracle_equals_step_by_step():
    """A chain's kept D's and final D are the oracle's mma applied step after step, and exact in plain float64."""
    p = KINDS["mma chain, hoisted, kept"]
    k = o.lower(p)
    ins = make_inputs(k, seed=5, cases=3)
    exp = expected(k, ins)
    lay = k.layouts[1]
    acc = ins.values[(0, "C")]
    exact = variant(F16_F32).operands["C"].type.decode(acc)
    for j, vid in enumerate(p.steps[0].chain):
        v = variant(vid)
        a, b = ins.values[(0, f"A{j}")], ins.values[(0, f"B{j}")]
        acc = oracle_mma(v, {"A": a, "B": b, "C": acc})
        exact = v.operands["A"].type.decode(a) @ v.operands["B"].type.decode(b) + exact
        name = "D" if j == len(p.steps[0].chain) - 1 else f"D{j}"
        words = pack(v.operands["D"], acc).reshape(3, 32, -1)
        at = lay.outputs[name]
        assert np.array_equal(exp[:, :, at : at + words.shape[-1]], words), name
    dop = variant(FP8_F32).operands["D"]
    at = lay.outputs["D"]
    assert np.array_equal(dop.type.decode(unpack(dop, exp[:, :, at : at + dop.words])), exact)


def test_wgmma_chain_oracle_equals_numerics_step_by_step():
    p = KINDS["wgmma A from registers, pipelined"]
    s = p.steps[0]
    k = o.lower(p)
    ins = make_inputs(k, seed=9, cases=2)
    v = variant(WG_RS)
    acc = ins.values[(0, "C")]
    for j in range(s.chain):
        scale = ins.values[(0, "scale")]
        acc = np.stack([wg.numerics(v, ins.values[(0, f"A{j}")][c], ins.values[(0, f"B{j}")][c], acc[c],
                                    bool(scale[c]) or j > 0, dict(s.imm)) for c in range(2)])
    at = k.layouts[1].outputs["D"]
    assert np.array_equal(expected(k, ins)[:, :, at : at + 8], pack(v.operands["D"], acc[:, None]))


def test_interpreter_sees_a_changed_program():
    """Dropping the predicated xor, or moving a load by one word, changes what the program writes."""
    k = o.lower(KINDS["mma predicated (s32 saturating)"])
    ins = make_inputs(k, seed=1, cases=4)
    exp = expected(k, ins)
    dropped = o.Kernel(**{**k.__dict__, "ops": tuple(op for op in k.ops if not isinstance(op, o.XorIf))})
    assert not np.array_equal(interpret(dropped, ins.words), exp)
    moved = tuple(o.Load(op.dst, op.word + 1) if isinstance(op, o.Load) and op.word else op for op in k.ops)
    assert not np.array_equal(interpret(o.Kernel(**{**k.__dict__, "ops": moved}), ins.words), exp)


def test_touching_wgmma_registers_in_flight_is_illegal():
    """A's registers written between the issue and wait_group: the program the ISA forbids is refused."""
    k = o.lower(Program((WgmmaStep(WG_RS, 1, after_issue=4),)))
    ops = list(k.ops)
    issue = next(i for i, op in enumerate(ops) if isinstance(op, o.Wgmma))
    ops.insert(issue + 1, o.Load(ops[issue].a, 0))
    bad = o.Kernel(**{**k.__dict__, "ops": tuple(ops)})
    with pytest.raises(IllegalProgram, match="in flight"):
        interpret(bad, make_inputs(k, seed=0, cases=1).words)


def test_lowering_refuses_what_the_specs_do_not_define():
    with pytest.raises(ProgramError, match="cannot be"):
        o.lower(Program((MmaStep((F16_F16, F64)),)))
    with pytest.raises(ProgramError, match="accumulates in place"):
        o.lower(Program((MmaStep(("mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f16",), predicated=True),)))
    with pytest.raises(ProgramError, match="shared memory"):
        o.lower(Program(tuple(WgmmaStep("wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16/ss", 4) for _ in range(2))))
    with pytest.raises(ProgramError, match="needs target"):
        o.lower(Program((WgmmaStep(WG_RS),), arch="sm_80"))


@settings(max_examples=15, deadline=None)
@given(st.deferred(programs))  # the pools are built when the test runs, not when it is collected
def test_drawn_programs_round_trip_and_agree(p):
    assert Program.from_json(p.to_json()) == p
    k = o.lower(p)
    ins = make_inputs(k, seed=0, cases=1)
    assert np.array_equal(interpret(k, ins.words), expected(k, ins))


def test_a_batch_is_the_same_every_time():
    assert [p.to_json() for p in fz.draw_batch(7)] == [p.to_json() for p in fz.draw_batch(7)]


# --- shrinking and the command line ------------------------------------------------------------


class _LoopsGoWrong(ProgramEmulator):
    """A backend with an injected fault: every output word of a kernel with a loop has its low bit flipped."""

    def _run_one(self, launch):
        res = super()._run_one(launch)
        if res.out is not None and any(isinstance(op, o.Loop) for op in launch.probe.ops):
            res.out ^= np.uint32(1)
        return res


class _LoopRunner(fz.EmulatorRunner):
    def __init__(self, arch: str = "sm_90a", cases: int = 2):
        super().__init__(arch, cases)
        self.backend = _LoopsGoWrong(semantics=oracle_mma)


def _first_loop(batch: int) -> Program:
    return next(p for p in fz.draw_batch(batch) if any(isinstance(s, LoopStep) for s in p.steps))


def test_a_fault_in_loops_shrinks_to_one_loop():
    """A backend that gets loops wrong: the failure found first, of several steps, shrinks to one minimal loop."""
    batch = next(b for b in range(8, 40) if len(_first_loop(b).steps) >= 3)
    res = fz.fuzz(_LoopRunner(), budget_s=0.1, first_seed=batch, shrink_s=60, max_findings=1)
    assert len(res.findings) == 1
    f = res.findings[0]
    assert len(f.original.program.steps) >= 3 and f.original.kind == f.shrunk.kind == "mismatch"
    assert f.shrunk.program == Program((LoopStep(pools("sm_90a").loop[0], 1),))
    assert f.replay == f"ptxconf programs replay {f.original.seed} --backend emulator --cases 2"


def test_shrinking_a_program_hypothesis_does_not_draw():
    """Shrinking ends at the minimal loop also from a program of another batch (the structural pass)."""
    big = KINDS["every family in one kernel"]
    failing = fz.Outcome(big, fz.BATCH * 10**6, "fail", "mismatch")
    small = fz.shrink(_LoopRunner(), failing, {}, seconds=60)
    assert small.program == Program((LoopStep(pools("sm_90a").loop[0], 1),))


def test_cli_fuzz_passes_and_measures(tmp_path, capsys):
    assert main(["programs", "fuzz", "--budget", "0.5", "--cases", "1", "--out", str(tmp_path)]) == 0
    s = json.loads((tmp_path / "summary.json").read_text())
    assert s["programs"] >= 1 and s["cases"] == s["programs"] and s["findings"] == []
    assert "programs/s" in capsys.readouterr().out


def test_cli_fuzz_finding_then_replay(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(fz, "EmulatorRunner", _LoopRunner)
    rc = main(["programs", "fuzz", "--budget", "0.1", "--cases", "2", "--max-findings", "1", "--shrink-s", "20",
               "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 1
    seed = int(re.search(r"FAIL seed (\d+) \(mismatch\)", out).group(1))
    found = tmp_path / "findings" / f"seed-{seed}"
    assert ".entry prog_" in (found / "shrunk.ptx").read_text()
    assert Program.from_json((found / "shrunk.json").read_text()).steps == (LoopStep(pools("sm_90a").loop[0], 1),)
    assert f"replay: ptxconf programs replay {seed} --backend emulator --cases 2" in out
    assert main(["programs", "replay", str(seed), "--cases", "2", "--no-shrink"]) == 1
    assert ".entry prog_" in capsys.readouterr().out  # the failing program's PTX
    monkeypatch.undo()
    assert main(["programs", "replay", str(seed), "--cases", "2"]) == 0


def test_cli_usage_errors(tmp_path, capsys):
    assert main(["programs", "fuzz", "--backend", "ptxas", "--ptxas", str(tmp_path / "none"), "--out", str(tmp_path)]) == 2
    assert "ptxas" in capsys.readouterr().err
    assert main(["programs", "fuzz", "--ptxas", "13.0", "--out", str(tmp_path)]) == 2
    assert "emulator builds nothing" in capsys.readouterr().err


FAKE_PTXAS = """#!/bin/sh
for a; do last=$a; done
case "$*" in *--version*) echo "Cuda compilation tools, release 13.0, V13.0.88"; exit 0;; esac
if grep -q wgmma.wait_group "$last"; then kill -SEGV $$; fi
exit 0
"""


def test_cli_ptxas_crash_is_a_finding_shrunk_to_one_wgmma(tmp_path, capsys):
    """A ptxas (given by path) that crashes on any wgmma: the finding shrinks to the simplest wgmma step."""
    exe = tmp_path / "ptxas"
    exe.write_text(FAKE_PTXAS)
    exe.chmod(0o755)
    rc = main(["programs", "fuzz", "--backend", "ptxas", "--ptxas", str(exe), "--budget", "0.1", "--max-findings", "1",
               "--jobs", "2", "--out", str(tmp_path / "out")])
    out = capsys.readouterr().out
    assert rc == 1 and "(crash): ptxas did not finish a legal program: ptxas crashed (signal 11)" in out
    found = next((tmp_path / "out" / "findings").iterdir())
    form = pools("sm_90a").wgmma[0]
    first_imm = tuple(sorted(wg.immediate_sets(variant(form))[0].items()))
    assert Program.from_json((found / "shrunk.json").read_text()) == Program((WgmmaStep(form, imm=first_imm),))
    assert f"--backend ptxas --ptxas {exe}" in out


@pytest.mark.ptxas
@pytest.mark.skipif(not HAVE_PTXAS, reason="ptxas not on PATH")
def test_ptxas_takes_a_drawn_batch():
    runner = fz.PtxasRunner(jobs=2)
    outcomes = runner.check_many([(p, i) for i, p in enumerate(fz.draw_batch(1)[:6])])
    assert [out.message for out in outcomes if out.failed] == []
