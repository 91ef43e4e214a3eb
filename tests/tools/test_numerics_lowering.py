"""Toolchain-aware numerics: the SASS arithmetic of software-lowered forms, the release ranges the spec gives them,
the numerics mode of the differential campaign, and what recorded runs say about the ptxas that built them."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from ptxconf.backends.ptxas import installed_toolchains
from ptxconf.cli.main import main
from ptxconf.tools.numerics import gpu, lowering, release_diff
from ptxconf.tools.numerics.harness import path_of

FP8 = "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32"
M8_F32 = "mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32"
_OK, _WHY = gpu.available()
GPU_RUN = str(Path(__file__).resolve().parents[2] / "results" / "h100-numerics-gpu")
_NVDISASM = lowering.nvdisasm()

SASS = """
        /*0170*/                   FMUL R15, R2, R13 ;                    /* 0x0000000d020f7220 */
        /*01d0*/                   FFMA R2, R2, R7, R5 ;                  /* 0x0000000702027223 */
        /*0270*/                   HFMA2.MMA R9, -RZ, RZ, 0, 0 ;          /* 0x00000000ff097435 */
        /*0280*/               @P0 FADD R13, R13, R7.reuse ;              /* 0x000000070d0d7221 */
        /*0290*/                   HMMA.16816.F32 R4, R8, R12, RZ ;       /* 0x0000000c0804723c */
        /*02a0*/                   STG.E desc[UR4][R2.64+0x20], R5 ;      /* 0x0000200502007986 */
"""


def test_arithmetic_of_a_disassembly():
    ops, lines = lowering.arithmetic(SASS)
    assert dict(ops) == {"FMUL": 1, "FFMA": 1, "FADD": 1, "HMMA.16816.F32": 1}  # the zero move and the store are not
    assert lines[0] == "FMUL R15, R2, R13" and lines[-1] == "HMMA.16816.F32 R4, R8, R12, RZ"
    one = lowering.Build("13.0.88", "-O3", ops=__import__("collections").Counter({"HMMA.16816.F32": 1}))
    assert not one.lowered and lowering.Build("13.0.88", "-O3", ops=ops).lowered
    assert lowering.Build("12.0.76", "-O3", refused="x").signature == "refused: x"


@pytest.mark.parametrize(("ptxas", "span", "holds"), [
    ("Cuda compilation tools, release 13.0, V13.0.88", "12.8.61-", True),
    ("12.5.82", "12.8.61-", False), ("12.6.85", "12.4.99-12.6.85", True), ("12.8.61", "12.4.99-12.6.85", False),
    ("NVRTC 13.2 (built in)", "12.8.61-", None), (None, "12.0.140-", None),
])
def test_holds_for(ptxas, span, holds):
    assert lowering.holds_for(ptxas, span) is holds


def test_spec_names_the_releases_of_every_software_lowered_path(spec):
    """fp8 mma.sync and m8n8k4 with .f16 A/B are lowered by ptxas on sm_90: their parameters hold for a release range."""
    for path, shape in (("fp8.f32", None), ("fp8.f16", None), ("f16.f16", "m8n8k4"), ("f16.f32", "m8n8k4")):
        low = spec.lowering_of(path, shape)
        assert low and lowering.holds_for("13.0.88", low["ptxas"]) and low["sass"], (path, shape)
    assert not lowering.holds_for("12.5.82", spec.lowering_of("fp8.f32")["ptxas"])  # two independent HMMAs there
    assert spec.lowering_of("f16.f32", "m16n8k16") is None and spec.lowering_of("bf16.f32") is None
    for path in ("f16.f16", "f16.f32"):  # the window is the FFMA's: no longer assumed
        assert spec.status_of(path, "frac_bits", "m8n8k4")["status"] == "measured"
        assert spec.status_of(path, "align", "m8n8k4")["status"] == "moot"


def test_group_outputs_and_their_differences():
    a = np.arange(2 * 32 * 4, dtype=np.uint64).reshape(2, 32, 4)
    b = a.copy()
    b[1, 7, 2] ^= np.uint64(1)
    groups = release_diff.group_outputs({"12.4.99 -O0": b, "13.0.88 -O0": a, "13.0.88 -O3": a.copy()})
    assert [g["builds"] for g in groups] == [["13.0.88 -O0", "13.0.88 -O3"], ["12.4.99 -O0"]]
    (d,) = release_diff.compare_groups(groups)
    assert d["words_differ"] == 1 and d["examples"][0] == {"case": 1, "lane": 7, "register": 2, "d": hex(int(b[1, 7, 2])),
                                                          "against": hex(int(a[1, 7, 2]))}


def test_register_words_pack_finite_non_exact_elements(specs):
    v = specs.get(FP8)
    w = release_diff.register_words(v, 16, 3)
    regs = {n: op.registers for n, op in v.operands.items() if n != "D"}
    assert w.shape == (16, 32, sum(regs.values()))
    a = w[..., : regs["A"]]
    assert int(a.max()) < 1 << 32 and len(np.unique(a)) > 100
    el = (a[..., None] >> (np.arange(4, dtype=np.uint64) * np.uint64(8))) & np.uint64(0xFF)
    assert not ((el & np.uint64(0x7F)) == np.uint64(0x7F)).any()  # no .e4m3 NaN
    assert (release_diff.register_words(v, 16, 3) == w).all()  # the seed names the words


@pytest.mark.ptxas
@pytest.mark.skipif(shutil.which("ptxas") is None or _NVDISASM is None, reason="needs ptxas on PATH and nvdisasm")
def test_survey_reads_the_lowered_arithmetic(specs):
    from ptxconf.tools.toolchains.resolve import resolve_all

    doc = lowering.survey([specs.get(M8_F32), specs.get("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32")],
                          resolve_all(None), "sm_90", ("-O3",), log=lambda *a, **k: None)
    m8, bf16 = doc["forms"]
    assert m8["lowered"] and "FFMA" in m8["groups"][0]["signature"] and "FADD" in m8["groups"][0]["signature"]
    assert not bf16["lowered"] and bf16["groups"][0]["signature"].startswith("HMMA.16816.F32")
    assert "software-lowered" in lowering.markdown(doc)


@pytest.mark.ptxas
@pytest.mark.skipif(_NVDISASM is None or not {"12.4.99", "13.0.88"} <= set(installed_toolchains()),
                    reason="needs nvdisasm and ptxas 12.4.99 and 13.0.88 installed (ptxconf toolchains install)")
def test_differential_numerics_prepare_tells_the_fp8_lowerings_apart(tmp_path, capsys):
    out = tmp_path / "bundle"
    assert main(["toolchains", "differential", "numerics", "prepare", "--select", FP8, "--ptxas", "12.4.99,13.0.88",
                 "--out", str(out)]) == 0
    doc = json.loads((out / "manifest.json").read_text())
    ops = {b["build"]: b["ops"] for b in doc["forms"][0]["builds"]}
    assert "FADDx8" in ops["12.4.99 -O3"] and "FADDx4" in ops["13.0.88 -O3"]
    assert all((out / "cubins" / f"{b['cubin']}.cubin").is_file() for b in doc["forms"][0]["builds"])


@pytest.mark.parametrize(("argv", "says"), [
    (["toolchains", "differential", "numerics", "run", "/nowhere", "--out", "/tmp/never"], "no manifest.json"),
    (["numerics", "lowering", "--select", "nothing*"], "--select matches no mma.sync form"),
    (["numerics", "report", "/nowhere"], "/nowhere: not a recorded numerics run"),
])
def test_cli_bad_input_exits_2(argv, says, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err


def test_report_names_the_ptxas_of_lowered_paths(capsys):
    """The GPU fuzzer's run (CuPy, NVRTC) does not name a ptxas release: its fp8 cases say so."""
    assert main(["numerics", "report", GPU_RUN]) == 0
    said = capsys.readouterr().out
    assert "backend cupy" in said and "fp8.f16: software-lowered; the parameters hold for ptxas 12.8.61-" in said
    assert "0 recorded case(s) the model does not reproduce" in said


@pytest.mark.gpu
@pytest.mark.skipif(not _OK, reason=f"no GPU for CuPy: {_WHY}")
@pytest.mark.skipif(_NVDISASM is None or shutil.which("ptxas") is None, reason="needs ptxas on PATH and nvdisasm")
def test_differential_numerics_run_on_the_gpu(specs, spec, tmp_path):
    from ptxconf.tools.toolchains.resolve import resolve_all

    bundle = tmp_path / "bundle"
    release_diff.prepare([specs.get(FP8)], resolve_all(None), bundle, log=lambda *a: None)
    doc = release_diff.run(bundle, specs, tmp_path / "out", cases=64, log=lambda *a: None)
    (form,) = doc["forms"]
    assert len(form["groups"]) == 1  # one release at two levels: one arithmetic
    assert path_of(spec, specs.get(FP8)).name == "fp8.f32"


_MMASIM = importlib.util.find_spec("mmasim") is not None  # found, not imported: torch loads only where a test runs it


def test_mmasim_form_names(specs):
    from ptxconf.tools.numerics.mmasim_compare import mmasim_form

    assert mmasim_form(specs.get("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32")) == "m16n8k16.f32.bf16.bf16.f32"
    assert mmasim_form(specs.get(FP8)) == "m16n8k32.f32.e4m3.e4m3.f32"  # named; MMA-Sim refuses it on Hopper (no sm_90 fp8 mma)
    assert mmasim_form(specs.get("wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e5m2/rs")) == "m64n64k32.f32.e4m3.e5m2"


@pytest.mark.skipif(_MMASIM, reason="MMA-Sim is installed (the compare test runs it)")
def test_compare_without_mmasim_is_one_line_exit_2(capsys):
    assert main(["numerics", "compare", GPU_RUN, "--model", "mmasim", "--out", "/tmp/never"]) == 2
    assert "pip install mmasim" in capsys.readouterr().err


@pytest.mark.skipif(not _MMASIM, reason="MMA-Sim (pip install mmasim, with torch) is not installed")
def test_compare_with_mmasim_on_the_gpu_fuzz_replays(tmp_path, capsys):
    assert main(["numerics", "compare", GPU_RUN, "--model", "mmasim", "--out", str(tmp_path)]) == 0
    doc = json.loads((tmp_path / "compare.json").read_text())
    assert doc["paths"]["f16.f16 m16n8k16"]["outcomes"] == {"both agree with the hardware": 1}
    assert doc["paths"]["fp8.f16 m16n8k32"]["outcomes"] == {"model agrees (MMA-Sim has no such form)": 3}
