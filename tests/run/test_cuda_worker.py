"""The GPU worker's batched launches, against a stand-in driver: the rows it gathers, the order it launches them in,
and where their out words land (the run's shared buffer, or back by value).  The real driver runs it in the GPU tests."""

from __future__ import annotations

import json
import os
import sys
import time

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
    def __init__(self, words_shape, out_words: int):
        self.shape, self.out_words = words_shape, out_words

    def __call__(self, d_in, d_out, d_order, ncases, block, grid) -> None:
        words = d_in.mem[: int(np.prod(self.shape)) * 4].view(np.uint32).reshape(self.shape)
        out = d_out.mem.view(np.uint32).reshape(self.shape[0], self.shape[1], self.out_words)
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
def test_batched_launches_gather_their_rows_and_land_their_out_words_where_the_run_reads_them(out_words):
    rng = np.random.default_rng(3)
    words = rng.integers(0, 2**31, size=(48, 32, 64), dtype=np.uint32)
    # rows here and there; a range in order; a range shuffled (its words go from where they lie, no gather)
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
        module = _Module({p.name: _Kernel((len(r), 32, 64), out_words) for p, r in zip(probes, launches_rows)})
        pool, driver = _Pool(), _Driver()
        got = _cuda_worker._launch_all(driver, type("Ctx", (), {"synchronize": lambda self: None})(), np, module, batch,
                                       pool)
        assert made == [] and all(b.freed for b in pool.bufs)
        words_sent = [src for src in driver.sources if src.ndim == 3]
        from_place = [np.shares_memory(src, in_shared) for src in words_sent]
        assert from_place == ([False, False, True, True] if shared.is_shared(into) else [False] * 4)
        for (out, info), rows in zip(got, launches_rows):
            assert info["kernel_s"] >= 0 and set(info) >= {"gather_s", "copy_in_s", "wait_s", "copy_out_s", "scatter_s"}
            if shared.is_shared(into):
                assert out is None
                np.testing.assert_array_equal(into[rows], words[rows][:, :, :out_words] + 1)
            else:
                np.testing.assert_array_equal(out, words[rows][:, :, :out_words] + 1)
        if shared.is_shared(into):
            untouched = np.setdiff1d(np.arange(48), np.concatenate(launches_rows))
            assert not into[untouched].any()


_FAKE_DRIVER = '''
import json, os, sys
def init():
    with open(os.environ["FAKE_CUDA_MODULES"], "w") as f:
        json.dump(sorted(sys.modules), f)
class Device:
    def __init__(self, ordinal):
        pass
    def make_context(self):
        class Context:
            def pop(self):
                pass
        return Context()
'''


def test_the_gpu_worker_is_a_small_interpreter_of_its_own(monkeypatch, tmp_path):
    """The worker starts as its own interpreter on one end of a pipe (a stand-in ``pycuda`` here): it answers the
    ping ``open`` sends with when it began and when CUDA was ready, leaves on ``exit``, and imported none of the
    spec model on the way (what made a spawned worker start 1.3 s late on a busy host)."""
    from ptxconf.backends.pycuda_backend import PyCudaBackend

    (tmp_path / "pycuda").mkdir()
    (tmp_path / "pycuda" / "__init__.py").write_text("")
    (tmp_path / "pycuda" / "driver.py").write_text(_FAKE_DRIVER)
    (tmp_path / "pycuda" / "tools.py").write_text("class DeviceMemoryPool:\n    pass\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), *sys.path]))
    monkeypatch.setenv("FAKE_CUDA_MODULES", str(tmp_path / "modules.json"))
    backend = PyCudaBackend(build="jit")
    backend.open()
    assert backend._call(("ping",), 60)[0] == "ok"  # open()'s answer taken first, then this one's
    moments = backend.moments()
    assert moments["gpu_worker_entered"] <= moments["gpu_worker_ready"] <= time.time()
    worker = backend._proc
    backend.close()
    assert not worker.is_alive()
    imported = json.loads((tmp_path / "modules.json").read_text())
    assert "ptxconf.backends._cuda_worker" in imported and "numpy" in imported
    assert not [m for m in imported if m.startswith(("ptxconf.isa", "ptxconf.core.plan", "ptxconf.cli"))], imported
