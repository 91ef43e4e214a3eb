"""GPU tests: the PyCUDA backend on real hardware, fault and hang isolation.

Skipped, with the reason, where PyCUDA or a CUDA device is missing (CI has
neither); CI instead replays the recorded GPU run (tests/run/test_pipeline.py).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from ptxconf.backends.base import Launch
from ptxconf.backends.pycuda_backend import gpu_available

_OK, _WHY = gpu_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not _OK, reason=f"no GPU: {_WHY}")]

_FAULTY = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry good(.param .u64 p_in, .param .u64 p_out, .param .u64 p_order, .param .u32 p_ncases)
{
    .reg .b64 %q<2>; .reg .b32 %t<2>;
    ld.param.u64 %q0, [p_out]; cvta.to.global.u64 %q0, %q0;
    mov.u32 %t0, %tid.x; mul.wide.u32 %q1, %t0, 4; add.s64 %q0, %q0, %q1;
    st.global.u32 [%q0], %t0;
    ret;
}
.visible .entry trap_kernel(.param .u64 p_in, .param .u64 p_out, .param .u64 p_order, .param .u32 p_ncases)
{
    trap;
}
.visible .entry hang_kernel(.param .u64 p_in, .param .u64 p_out, .param .u64 p_order, .param .u32 p_ncases)
{
$L: bra $L;
}
"""


def _launch(name: str) -> Launch:
    return Launch(SimpleNamespace(name=name), np.zeros((1, 32, 2), np.uint32), 1, np.zeros(1, np.uint32), 1)


@pytest.fixture(scope="module")
def backend():
    from ptxconf.backends.pycuda_backend import PyCudaBackend

    b = PyCudaBackend(timeout_s=5)
    yield b
    b.close()


def test_info_names_gpu_and_toolchain(backend):
    info = backend.info()
    for key in ("gpu", "compute_capability", "driver", "cuda_driver_api", "ptxas", "pycuda"):
        assert info[key], key


def test_fault_is_one_error_and_the_next_launch_runs(backend):
    good, trap, good2 = backend.run(_FAULTY, [_launch("good"), _launch("trap_kernel"), _launch("good")])
    assert good.error is None and list(good.out[0, :, 0]) == list(range(32))
    assert trap.error and trap.out is None
    assert good2.error is None and list(good2.out[0, :, 0]) == list(range(32))


def test_hang_times_out_and_the_next_launch_runs(backend):
    backend.timeout_s = 2
    hang, good = backend.run(_FAULTY, [_launch("hang_kernel"), _launch("good")])
    assert "timed out" in hang.error
    assert good.error is None


@pytest.mark.parametrize(
    "variant",
    [
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
        "mma.sync.aligned.m8n8k4.col.row.f32.f16.f16.f16",
        "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.u8.s32",
        "mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.and.popc",
        "mma.sync.aligned.m16n8k32.row.col.f16.e4m3.e5m2.f16",
    ],
)
def test_variant_passes_on_gpu(tmp_path, variant):
    from ptxconf.cli import main

    assert main(["run", "--backend", "pycuda", "--select", variant, "--out", str(tmp_path), "--quiet", "--seed", "7"]) == 0


_RUN_START = """
import json, sys
from ptxconf.cli import run as cli_run
from ptxconf.cli.main import build_parser
from ptxconf.oracle import mma
args = build_parser().parse_args(["run", *sys.argv[1:]])
early = cli_run._EarlyBackend()
early.start(lambda no_gpu: cli_run._run_backend(args, mma, 2, no_gpu))
backend, info = early.answered()
early.close()
print(json.dumps({"backend": info["backend"], "auto": info.get("auto"), "driver_here": "pycuda.driver" in sys.modules}))
"""


@pytest.mark.parametrize("argv", [["--backend", "auto"], ["--backend", "auto", "--lanes", "2"], ["--backend", "pycuda"]],
                         ids=["auto", "auto lanes", "pycuda"])
def test_the_run_s_own_process_starts_no_cuda(argv):
    """A fresh interpreter makes and asks the run's backend as ``ptxconf run`` does: the GPU workers answered, and
    PyCUDA's driver was never imported in that process (no cuInit there); ``auto`` says what this process's check
    says."""
    import json
    import subprocess
    import sys

    from ptxconf.backends._spawn import gpu_likely

    if not gpu_likely():
        pytest.skip("no driver node here (/dev/nvidiactl): the run asks CUDA in its own process, as before")
    out = subprocess.run([sys.executable, "-c", _RUN_START, *argv], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.splitlines()[-1])
    assert got["backend"] == "pycuda" and not got["driver_here"]
    assert got["auto"] == (_WHY if "auto" in argv else None)


_DEVICE_VALUES = ["wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16/ss",
                  "wgmma.mma_async.sp.sync.aligned.m64n32k32.f16.f16.f16/rs",
                  "mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.bf16.bf16.f32",
                  "wmma.mma.sync.aligned.row.col.m16n16k16.f32.bf16.bf16.f32",
                  "stmatrix.sync.aligned.m8n8.x4.trans.b16"]


@pytest.mark.skipif(__import__("importlib").util.find_spec("cupy") is None, reason="no CuPy: --values device needs it")
def test_value_checks_on_the_device_are_the_host_s_checks_and_replay(tmp_path):
    """``--values device`` on the GPU, as a user types it (a fresh process, which starts no CUDA before it forks
    the device's workers): the same checks as the host's, all passing; every record replays from its digests on the
    host (CuPy's digests are NumPy's)."""
    import json
    import subprocess
    import sys

    sel = [a for v in _DEVICE_VALUES for a in ("--select", v)]
    runs = {}
    for values in ("host", "device"):
        out = tmp_path / values
        cmd = [sys.executable, "-m", "ptxconf.console", "run", "--backend", "pycuda", *sel, "--out", str(out), "--quiet",
               "--values", values, "--device-cases", "300"]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        runs[values] = {(r["variant"], r["check"]): r["status"]
                        for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}
    assert runs["host"] == runs["device"] and set(runs["device"].values()) == {"pass"}
    done = subprocess.run([sys.executable, "-m", "ptxconf.console", "replay", str(tmp_path / "device")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and f"{len(runs['device'])} passed, 0 failed, 0 errors" in done.stdout, done.stdout
