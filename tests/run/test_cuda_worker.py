"""The GPU worker's batched launches, against a stand-in driver: the rows it gathers, the order it launches them in,
and where their out words land (the run's shared buffer, or back by value).  The real driver runs it in the GPU tests.
Then the worker as its own interpreter (a stand-in ``pycuda``), and its first answer as the run's check of a GPU:
the run's process starts no CUDA of its own."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from ptxconf.backends import _cuda_worker
from ptxconf.backends.base import Launch
from ptxconf.backends.pycuda_backend import _wire
from ptxconf.core import shared


class _Buf:
    def __init__(self, n: int):
        self.mem = np.zeros(n, dtype=np.uint8)
        self.freed = False

    def free(self) -> None:
        self.freed = True


class _Pool:
    def __init__(self):
        self.bufs: list[_Buf] = []

    def allocate(self, n: int) -> _Buf:
        self.bufs.append(_Buf(n))
        return self.bufs[-1]


class _Driver:
    """memcpy/memset on byte buffers; the kernel writes, for warp slot s, its case's input words + 1 where the case
    is ``order[s]`` (what a probe does with its order buffer), into the case's own row."""

    def __init__(self):
        self.synced = 0
        self.sources: list[np.ndarray] = []

    def memcpy_htod(self, dst: _Buf, src: np.ndarray) -> None:
        self.sources.append(src)
        dst.mem[: src.nbytes] = np.frombuffer(np.ascontiguousarray(src).tobytes(), dtype=np.uint8)

    @staticmethod
    def memcpy_dtoh(dst: np.ndarray, src: _Buf) -> None:
        dst.reshape(-1).view(np.uint8)[:] = src.mem[: dst.nbytes]

    @staticmethod
    def memset_d32(dst: _Buf, value: int, count: int) -> None:
        dst.mem[: 4 * count].view(np.uint32)[:] = value


class _Kernel:
    def __init__(self, row_shape, out_words: int):
        self.row_shape, self.out_words = row_shape, out_words  # (lanes, in words) of a row

    def __call__(self, d_in, d_out, d_order, ncases, block, grid) -> None:
        words = d_in.mem.view(np.uint32).reshape(-1, *self.row_shape)  # as many rows as the buffer holds
        out = d_out.mem.view(np.uint32).reshape(-1, self.row_shape[0], self.out_words)
        order = d_order.mem[: 4 * int(ncases)].view(np.uint32)
        for slot in range(int(ncases)):
            case = order[slot]
            out[case, :, :] = words[case, :, : self.out_words] + 1


class _Module:
    def __init__(self, kernels):
        self.kernels = kernels

    def get_function(self, name):
        return self.kernels[name]


@pytest.mark.parametrize("out_words", [64, 3])  # out buffers large enough to share, and small ones (back by value)
def test_batched_launches_send_their_rows_and_land_their_out_words_where_the_run_reads_them(out_words):
    rng = np.random.default_rng(3)
    words = rng.integers(0, 2**31, size=(48, 32, 64), dtype=np.uint32)
    # rows here and there; a range in order; a range shuffled
    launches_rows = [np.array([7, 1, 30, 2]), np.array([40, 3]), np.arange(8, 20), np.array([23, 21, 24, 20, 22])]
    with shared.arena():
        in_shared = shared.share(words)
        into = shared.zeros((48, 32, out_words), np.uint32)
        assert shared.is_shared(into) == (out_words == 64)
        assert shared.is_shared(in_shared)
        probes = [type("P", (), {"name": f"k{i}"})() for i in range(len(launches_rows))]
        launches = []
        for probe, rows in zip(probes, launches_rows):
            order = np.arange(len(rows), dtype=np.uint32)[np.argsort(np.argsort(rows))]
            launches.append(Launch(probe, in_shared, out_words, order, 1, rows=rows, into=into))
        batch, made = _wire(launches)
        module = _Module({p.name: _Kernel((32, 64), out_words) for p in probes})
        pool, driver = _Pool(), _Driver()
        got = _cuda_worker._launch_all(driver, type("Ctx", (), {"synchronize": lambda self: None})(), np, module, batch,
                                       pool)
        assert made == [] and all(b.freed for b in pool.bufs)
        words_sent = [src for src in driver.sources if src.ndim == 3]
        if shared.is_shared(into):  # the plan's words once, from where they lie; each launch its rows as its order
            assert len(words_sent) == 1 and np.shares_memory(words_sent[0], in_shared)
            orders = [src for src in driver.sources if src.ndim == 1]
            assert [sorted(o.tolist()) for o in orders] == [sorted(r.tolist()) for r in launches_rows]
        else:  # each launch's own rows, gathered here
            assert [np.shares_memory(src, in_shared) for src in words_sent] == [False] * 4
            for src, rows in zip(words_sent, launches_rows):
                np.testing.assert_array_equal(src, words[rows])
        for (out, info), rows in zip(got, launches_rows):
            assert info["kernel_s"] >= 0 and set(info) >= {"gather_s", "copy_in_s", "wait_s", "copy_out_s"}
            if shared.is_shared(into):
                assert out is None
                np.testing.assert_array_equal(into[rows], words[rows][:, :, :out_words] + 1)
            else:
                np.testing.assert_array_equal(out, words[rows][:, :, :out_words] + 1)
        if shared.is_shared(into):
            untouched = np.setdiff1d(np.arange(48), np.concatenate(launches_rows))
            assert not into[untouched].any()


def test_launch_by_launch_after_a_fault_sends_each_launchs_rows_and_its_out_words_back():
    """Alone (the parent's search for the launch that faults), a launch of a shared plan gathers its own rows and
    sends its out words back by value: the plan's whole out words copied back would zero the rows of the launches
    before it."""
    rng = np.random.default_rng(4)
    words = rng.integers(0, 2**31, size=(48, 32, 64), dtype=np.uint32)
    launches_rows = [np.array([5, 0, 39]), np.array([3, 12])]
    with shared.arena():
        in_shared = shared.share(words)
        into = shared.zeros((48, 32, 64), np.uint32)
        assert shared.is_shared(into) and shared.is_shared(in_shared)
        probe = type("P", (), {"name": "k"})()
        launches = [Launch(probe, in_shared, 64, np.arange(len(r), dtype=np.uint32)[::-1].copy(), 1, rows=r, into=into)
                    for r in launches_rows]
        batch, _ = _wire(launches)
        module = _Module({"k": _Kernel((32, 64), 64)})
        ctx = type("Ctx", (), {"synchronize": lambda self: None})()
        for item, rows in zip(batch, launches_rows):
            pool, driver = _Pool(), _Driver()
            (out, _), = _cuda_worker._launch_all(driver, ctx, np, module, [item], pool, by_plan=False)
            assert all(b.freed for b in pool.bufs)
            np.testing.assert_array_equal(out, words[rows] + 1)
        assert not into.any()  # nothing written in place: the parent puts each launch's rows there


# A stand-in ``pycuda`` for a worker's interpreter and for this process alike: every process that starts its CUDA
# notes its pid (FAKE_CUDA_LOG); with FAKE_CUDA_FAIL set, starting it fails as a host without a driver's device does.
_FAKE_DRIVER = '''
import json, os, sys
class Error(Exception):
    pass
def init():
    with open(os.environ["FAKE_CUDA_LOG"], "a") as f:
        f.write(f"{os.getpid()}\\n")
    if "FAKE_CUDA_MODULES" in os.environ:
        with open(os.environ["FAKE_CUDA_MODULES"], "w") as f:
            json.dump(sorted(sys.modules), f)
    if os.environ.get("FAKE_CUDA_FAIL"):
        raise Error("cuInit failed: no CUDA-capable device is detected")
def get_driver_version():
    return 13000
def get_version():
    return (13, 0, 0)
class Device:
    def __init__(self, ordinal):
        pass
    @staticmethod
    def count():
        return 2
    def name(self):
        return "Stand-in GPU"
    def compute_capability(self):
        return (9, 0)
    def make_context(self):
        class Context:
            def pop(self):
                pass
        return Context()
'''


@dataclass
class _FakeCuda:
    """The stand-in ``pycuda`` in place: which processes started its CUDA."""

    log: Path

    def started_in(self) -> list[int]:
        """The pids of the processes that started CUDA, in order."""
        return [int(x) for x in self.log.read_text().split()] if self.log.exists() else []


@pytest.fixture
def fake_cuda(monkeypatch, tmp_path) -> Iterator[_FakeCuda]:
    """The stand-in ``pycuda`` first on this process's path and on its workers', a driver node there (a GPU host as
    this process sees it without starting CUDA); its CUDA starts unless a test sets FAKE_CUDA_FAIL."""
    from ptxconf.backends import _spawn

    root = tmp_path / "site"
    (root / "pycuda").mkdir(parents=True)
    (root / "pycuda" / "__init__.py").write_text("VERSION_TEXT = 'stand-in'\n")
    (root / "pycuda" / "driver.py").write_text(_FAKE_DRIVER)
    (root / "pycuda" / "tools.py").write_text("class DeviceMemoryPool:\n    pass\n")
    for name in [m for m in sys.modules if m == "pycuda" or m.startswith("pycuda.")]:  # a real one imported before
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(root), *sys.path]))
    monkeypatch.setenv("FAKE_CUDA_LOG", str(tmp_path / "cuda-started"))
    monkeypatch.delenv("FAKE_CUDA_FAIL", raising=False)
    node = tmp_path / "nvidiactl"
    node.touch()
    monkeypatch.setattr(_spawn, "DRIVER_NODES", (str(node),))
    yield _FakeCuda(tmp_path / "cuda-started")
    for name in [m for m in sys.modules if m == "pycuda" or m.startswith("pycuda.")]:  # the stand-in, imported here
        del sys.modules[name]


def test_the_gpu_worker_is_a_small_interpreter_of_its_own(monkeypatch, tmp_path, fake_cuda):
    """The worker starts as its own interpreter on one end of a pipe (a stand-in ``pycuda`` here): it answers the
    ping ``open`` sends with when it began and when CUDA was ready, leaves on ``exit``, and imported none of the
    spec model on the way (what made a spawned worker start 1.3 s late on a busy host)."""
    from ptxconf.backends.pycuda_backend import PyCudaBackend

    monkeypatch.setenv("FAKE_CUDA_MODULES", str(tmp_path / "modules.json"))
    backend = PyCudaBackend(build="jit")
    backend.open()
    assert backend._call(("ping",), 60)[0] == "ok"  # open()'s answer taken first, then this one's
    moments = backend.moments()
    assert moments["gpu_worker_entered"] <= moments["gpu_worker_ready"] <= time.time()
    worker = backend._proc
    backend.close()
    assert not worker.is_alive()
    assert fake_cuda.started_in() == [worker.pid]
    imported = json.loads((tmp_path / "modules.json").read_text())
    assert "ptxconf.backends._cuda_worker" in imported and "numpy" in imported
    assert not [m for m in imported if m.startswith(("ptxconf.isa", "ptxconf.core.plan", "ptxconf.cli"))], imported


V = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
NO_DEVICE = "no CUDA driver or device (cuInit failed: no CUDA-capable device is detected)"


def _early(argv: list[str]):
    """The run's backend as ``ptxconf run ARGV`` makes and opens it first thing, and its first answer."""
    from ptxconf.cli import run as cli_run
    from ptxconf.cli.main import build_parser
    from ptxconf.oracle import mma

    args = build_parser().parse_args(["run", *argv])
    early = cli_run._EarlyBackend()
    early.start(lambda no_gpu: cli_run._run_backend(args, mma, 1, no_gpu))
    return early


def test_the_run_starts_no_cuda_of_its_own_its_gpu_worker_answers(fake_cuda):
    """On a host that looks like a GPU host, ``--backend auto`` starts CUDA in its GPU worker only; the worker's info
    says how many devices it sees, and that is ``auto``'s reason."""
    early = _early(["--backend", "auto", "--build", "jit"])
    try:
        backend, info = early.answered()
        worker = backend._proc.pid
    finally:
        early.close()
    assert backend.name == "pycuda" and info["gpu"] == "Stand-in GPU" and info["cuda_devices"] == 2
    assert info["auto"] == "2 CUDA device(s); using PyCUDA"
    assert fake_cuda.started_in() == [worker] and os.getpid() != worker


def test_a_worker_without_cuda_gives_the_emulator_under_auto_with_today_s_reason(fake_cuda, monkeypatch, tmp_path,
                                                                                 capsys):
    """The worker's CUDA does not start: the run goes on on the emulator and says why, in the words this process's
    own check gives (:func:`gpu_available`), having started no CUDA itself."""
    from ptxconf.backends.pycuda_backend import gpu_available
    from ptxconf.cli import main as cli_main

    monkeypatch.setenv("FAKE_CUDA_FAIL", "1")
    rc = cli_main(["run", "--backend", "auto", "--select", V, "--cases", "1", "-q", "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert rc == 0, err
    assert f"ptxconf: --backend auto: {NO_DEVICE}; using the NumPy emulator" in err.splitlines()
    assert "Traceback" not in err
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert json.dumps(summary).count('"emulator"') >= 1
    workers = fake_cuda.started_in()
    assert len(workers) == _lanes(None) and os.getpid() not in workers  # each lane's worker (the host's cores say how many)
    for worker in workers:
        with pytest.raises(ProcessLookupError):
            os.kill(worker, 0)  # gone, and reaped
    assert gpu_available() == (False, f"{NO_DEVICE}; using the NumPy emulator")  # this process's check: the same


@pytest.mark.parametrize("argv, line", [
    (["--backend", "pycuda"], f"ptxconf: backend pycuda: {NO_DEVICE}"),
    (["--backend", "auto", "--lanes", "2"], "ptxconf run: --lanes runs pipelines per GPU; the emulator runs on this CPU"),
], ids=["pycuda", "auto with lanes"])
def test_a_worker_without_cuda_is_the_error_of_a_host_without_a_gpu(fake_cuda, monkeypatch, tmp_path, capsys, argv,
                                                                     line):
    """``--backend pycuda``: the backend line a host without a GPU gives; ``--lanes 2`` under auto (two workers, one
    asked): the usage error of lanes on the emulator.  One CUDA start per worker, none here."""
    from ptxconf.cli import main as cli_main

    monkeypatch.setenv("FAKE_CUDA_FAIL", "1")
    rc = cli_main(["run", *argv, "--select", V, "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert rc == 2 and [ln for ln in err.splitlines() if ln.strip()] == [line], err
    workers = fake_cuda.started_in()
    assert len(workers) == _lanes(2 if "--lanes" in argv else None) and os.getpid() not in workers


def _lanes(asked: int | None) -> int:
    """The GPU workers a one-GPU run starts on this host: one per lane (four where the host has the cores, else one)."""
    from ptxconf.cli.run import _jobs, lanes_per_gpu

    return lanes_per_gpu(asked, 1, _jobs(None, 1 << 20))


def test_without_a_driver_node_this_process_asks_as_before(fake_cuda, monkeypatch):
    """No driver node: no worker is started to find out; this process's own check decides, as it always did."""
    from ptxconf.backends import _spawn, get_backend
    from ptxconf.oracle import mma

    monkeypatch.setattr(_spawn, "DRIVER_NODES", ())
    monkeypatch.setenv("FAKE_CUDA_FAIL", "1")
    backend = get_backend("auto", worker_decides=True, semantics=mma)
    assert backend.name == "emulator" and backend.info()["auto"] == f"{NO_DEVICE}; using the NumPy emulator"
    assert fake_cuda.started_in() == [os.getpid()]


def test_a_worker_started_before_the_cli_is_the_one_the_run_s_backend_takes(fake_cuda, monkeypatch):
    """``ptxconf run`` starts device 0's first worker before it imports the CLI; the backend that would start one
    takes that one (its ping answered as from its own), and closing the backend ends it."""
    from ptxconf.backends import _spawn
    from ptxconf.backends.pycuda_backend import PyCudaBackend

    assert _spawn.start_early(0) and not _spawn.start_early(0), "one early worker a device"
    early = _spawn._EARLY[0][0]
    backend = PyCudaBackend(build="jit")
    backend.open()
    assert backend._proc is early and not _spawn._EARLY
    assert backend._call(("ping",), 60)[0] == "ok" and backend.moments()["gpu_worker_ready"] <= time.time()
    backend.close()
    assert not early.is_alive() and fake_cuda.started_in() == [early.pid]


def test_an_early_worker_no_backend_takes_ends_with_the_command(fake_cuda, monkeypatch):
    """The command stopped before it made a backend (a bad ``--check``): the early worker is ended as it exits."""
    from ptxconf.backends import _spawn

    assert _spawn.start_early(0)
    early = _spawn._EARLY[0][0]
    _spawn._end_unclaimed()  # what runs at the command's exit
    assert not early.is_alive() and not _spawn._EARLY


@pytest.mark.parametrize("argv, early", [
    (["run"], [0]), (["run", "--backend", "pycuda", "-q"], [0]), (["run", "--backend=auto"], [0]),
    (["run", "--backend", "emulator"], []), (["run", "--devices", "all"], [0, 1]), (["run", "--devices=1,0,1"], [1, 0]),
    (["run", "--devices", "2"], [0, 1]), (["run", "--devices", "1"], [1]), (["run", "--devices", "x"], []),
    (["run", "--devices", "0,x"], []), (["run", "--backend", "emulator", "--devices", "all"], []),
    (["run", "--help"], []), (["bench", "--backend", "pycuda"], []), ([], []),
])
def test_which_commands_start_gpu_workers_before_the_cli_and_for_which_gpus(monkeypatch, argv, early):
    """``ptxconf run`` on a GPU backend starts the first worker of each of its GPUs before the CLI: device 0, or each
    that ``--devices`` names (``all``: as the driver's nodes count them, two here)."""
    from ptxconf.backends import _spawn
    from ptxconf.console import _early_devices

    monkeypatch.setattr(_spawn, "visible_gpus", lambda: 2)
    assert _early_devices(argv) == early
