"""``--devices``: several GPUs as one backend give the same verdicts as one.

In one process (no workers: ``--jobs 1``) modules go to whichever device is free, and verdicts come in the order of
one device; with workers, each device gets a lane (a process with the whole pipeline) and verdicts come as the lanes
finish them.  The device set is tested here with emulator members standing in for GPUs; the real two-GPU run is
recorded under results/ when a machine with two GPUs is at hand.
"""

from __future__ import annotations

import multiprocessing
import threading
import time

import pytest
from ptxconf.backends.devices import DeviceSet, parse_devices
from ptxconf.backends.emulator import EmulatorBackend
from ptxconf.cli.main import main
from ptxconf.core.family import run_variants_of
from ptxconf.isa import load_specs
from ptxconf.oracle import mma
from ptxconf.run import runner

SPECS = load_specs()
run_variants_of(SPECS)


class _Device(EmulatorBackend):
    """An emulator that records which thread ran what, and at what overlap: a stand-in GPU."""

    def __init__(self, ordinal: int, busy: list, together=None):
        super().__init__(mma)
        self.ordinal, self.busy, self.modules, self.together = ordinal, busy, 0, together

    def run(self, module, launches):
        self.busy.append(+1)
        self.modules += 1
        if self.together is not None and self.modules == 1:  # every device's first module waits for the others'
            self.together.wait(timeout=60)
        try:
            time.sleep(0.01)  # long enough for the other device to take the next module meanwhile
            return super().run(module, launches)
        finally:
            self.busy.append(-1)

    def info(self) -> dict:
        return {**super().info(), "device": self.ordinal}

    def stats(self) -> dict:
        return {"modules": self.modules}


def _variants():
    return [v for v in SPECS.variants.values() if v.family in ("mma.sync", "ldmatrix")][:24]


def _verdicts(backend, jobs=1):
    got = []
    runner.MODULE_PLANS, saved = 2, runner.MODULE_PLANS  # several modules, so both devices get some
    try:
        runner.run_variants(backend, _variants(), runner.RunRequest(7, value_cases=2, jobs=jobs),
                            on_outcome=lambda o: got.extend((d.variant, d.check, d.status, d.message)
                                                            for d in o.verdicts))
    finally:
        runner.MODULE_PLANS = saved
    return got


def test_two_devices_in_one_process_give_the_verdicts_of_one_in_the_same_order():
    one = _verdicts(EmulatorBackend(mma))
    busy: list = []
    devices = [_Device(0, busy), _Device(1, busy)]
    two = DeviceSet(devices)
    assert two.parallel == 2
    assert _verdicts(two, 1) == one and {s for *_, s, _ in one} == {"pass"}
    assert all(d.modules > 0 for d in devices)  # both devices worked
    running = [sum(busy[: i + 1]) for i in range(len(busy))]
    assert max(running) == 2  # and at the same time
    assert [d["device"] for d in two.info()["devices"]] == [0, 1]


def test_two_devices_in_lanes_give_the_verdicts_of_one():
    """Each device's lane runs every other variant in a process of its own, at the same time as the other."""
    one = _verdicts(EmulatorBackend(mma))
    together = multiprocessing.get_context("fork").Barrier(2)  # each lane's first module waits for the other's
    two = DeviceSet([_Device(0, [], together), _Device(1, [], together)])
    got = _verdicts(two, 2)
    assert sorted(got) == sorted(one) and len(got) == len(one) and {s for *_, s, _ in one} == {"pass"}
    per = two.stats()["per_device"]
    assert len(per) == 2 and all(d["modules"] > 0 for d in per), "both devices worked, at the same time"


def test_devices_of_different_compute_capability_are_refused():
    class Other(EmulatorBackend):
        def info(self):
            return {**super().info(), "compute_capability": "8.0"}

    with pytest.raises(Exception, match="differ in compute capability"):
        DeviceSet([EmulatorBackend(mma), Other(mma)]).info()


def test_a_device_is_used_by_one_module_at_a_time():
    lock, seen = threading.Lock(), []

    class Exclusive(EmulatorBackend):
        inside = 0

        def run(self, module, launches):
            with lock:
                self.inside += 1
                seen.append(self.inside)
            try:
                time.sleep(0.005)
                return super().run(module, launches)
            finally:
                with lock:
                    self.inside -= 1

    _verdicts(DeviceSet([Exclusive(mma), Exclusive(mma)]))
    assert seen and max(seen) == 1


@pytest.mark.parametrize("text, count, want", [("all", 3, [0, 1, 2]), ("2", 4, [0, 1]), ("0,2", 3, [0, 2]),
                                               ("1", 2, [1]), ("0", 1, [0])])
def test_parse_devices(text, count, want):
    assert parse_devices(text, count) == want


@pytest.mark.parametrize("text, count, why", [("0,5", 2, "2 device"), ("x", 2, "ordinals"), ("all", 0, "no CUDA")])
def test_parse_devices_refuses(text, count, why):
    with pytest.raises(ValueError, match=why):
        parse_devices(text, count)


def test_devices_with_the_emulator_is_a_usage_error(tmp_path, capsys):
    rc = main(["run", "--backend", "emulator", "--devices", "all", "--select", "mma.sync*", "--out", str(tmp_path / "r")])
    assert rc == 2 and "--devices" in capsys.readouterr().err


@pytest.fixture
def fake_gpus(monkeypatch) -> list:
    """``get_backend`` making stand-ins that remember their device and the backend they build from, in order."""
    import ptxconf.backends as backends

    made = []

    class _Gpu:
        def __init__(self, name, device=0, builds_from=None, **kw):
            self.name, self.device, self.builds_from = name, device, builds_from
            made.append(self)

    monkeypatch.setattr(backends, "get_backend", lambda name, **kw: _Gpu(name, **kw))
    return made


@pytest.mark.parametrize("cores, jobs, name, lanes", [(16, 16, "pycuda", 4), (64, 8, "pycuda", 4), (15, 15, "pycuda", 1),
                                                     (16, 1, "pycuda", 1), (16, 16, "emulator", 1)])
def test_a_gpu_without_devices_runs_lanes_on_a_host_with_cores_for_them(monkeypatch, fake_gpus, cores, jobs, name,
                                                                        lanes):
    """Without --devices, a GPU of a host with LANES_FROM_CORES cores or more is DEFAULT_LANES lanes on GPU 0 (the
    run's own process bounds one lane); fewer cores, --jobs 1 or the emulator keep one backend."""
    import argparse

    from ptxconf.cli import run as cli_run

    made = fake_gpus
    monkeypatch.setattr(cli_run.os, "cpu_count", lambda: cores)
    args = argparse.Namespace(build="auto", no_cache=False, ptxas=None, devices=None, backend=name)
    backend = cli_run._run_backend(args, mma, jobs)
    if lanes == 1:
        assert backend is made[0] and len(made) == 1
    else:
        assert cli_run.DEFAULT_LANES == lanes
        assert isinstance(backend, DeviceSet) and backend.members == made and len(made) == lanes
        assert all(m.device == 0 for m in made) and all(m.builds_from is made[0] for m in made[1:]), \
            "one GPU, builds shared"


@pytest.mark.parametrize("cores, devices, lanes, members", [
    (32, "all", None, [0, 1, 0, 1, 0, 1, 0, 1]),  # 16 cores per GPU: four lanes each
    (16, "all", None, [0, 1]),  # fewer: one each
    (16, "0", None, [0, 0, 0, 0]),
    (8, "1", 3, [1, 1, 1]),  # --lanes asked
    (64, "0,0", None, [0, 0]),  # a GPU named twice: the lanes as named
    (16, None, 2, [0, 0]),
])
def test_every_gpu_of_a_run_gets_the_lanes_its_cores_allow(monkeypatch, fake_gpus, cores, devices, lanes, members):
    """Lanes per GPU, with or without --devices: one lane per GPU would make ``--devices all`` slower than one GPU
    alone.  Each further lane of a GPU takes that GPU's first backend's answer and every lane shares the builds."""
    import argparse

    import ptxconf.backends._spawn as spawn
    import ptxconf.backends.pycuda_backend as pycuda_backend
    from ptxconf.cli import run as cli_run

    made = fake_gpus
    monkeypatch.setattr(spawn, "visible_gpus", lambda: None)  # this host's driver nodes, if any, do not count here
    monkeypatch.setattr(pycuda_backend, "device_count", lambda: 2)
    monkeypatch.setattr(cli_run.os, "cpu_count", lambda: cores)
    args = argparse.Namespace(build="auto", no_cache=False, ptxas=None, devices=devices, backend="pycuda", lanes=lanes)
    backend = cli_run._run_backend(args, mma, cores)
    assert [m.device for m in made] == members
    if len(members) == 1:
        assert backend is made[0]
        return
    assert isinstance(backend, DeviceSet) and backend.members == made
    first_of = {}
    for m in made:
        first_of.setdefault(m.device, m)
    for m in made[1:]:
        want = first_of[m.device] if m is not first_of[m.device] else made[0]
        assert m.builds_from is want


@pytest.mark.parametrize("argv, why", [
    (["--devices", "0,0", "--lanes", "2"], "--lanes and a GPU named more than once"),
    (["--lanes", "0"], "--lanes 0"),
])
def test_lanes_that_cannot_be_given_are_usage_errors(monkeypatch, argv, why):
    import argparse

    import ptxconf.backends as backends
    import ptxconf.backends._spawn as spawn
    import ptxconf.backends.pycuda_backend as pycuda_backend
    from ptxconf.cli import run as cli_run

    monkeypatch.setattr(backends, "get_backend", lambda name, **kw: type("G", (), {"name": name, "device": 0})())
    monkeypatch.setattr(spawn, "visible_gpus", lambda: None)  # this host's driver nodes, if any, do not count here
    monkeypatch.setattr(pycuda_backend, "device_count", lambda: 1)
    ns = argparse.Namespace(build="auto", no_cache=False, ptxas=None, backend="pycuda", devices=None, lanes=None)
    for k, v in zip(argv[::2], argv[1::2]):
        setattr(ns, k.lstrip("-"), int(v) if k == "--lanes" else v)
    with pytest.raises(SystemExit, match=why):
        cli_run._run_backend(ns, mma, 16)


def test_lanes_with_the_emulator_is_a_usage_error(tmp_path, capsys):
    rc = main(["run", "--backend", "emulator", "--lanes", "2", "--select", "mma.sync*", "--out", str(tmp_path / "r")])
    assert rc == 2 and "--lanes" in capsys.readouterr().err


def test_lanes_on_one_gpu_start_one_gpu_worker_to_ask_it_and_a_set_asks_its_devices_at_once(monkeypatch):
    """A backend made for a second lane on the same GPU takes the first one's answer (one GPU worker spawned and
    CUDA started before the run, not one per lane); other GPUs are asked for themselves, all at once."""
    from ptxconf.backends.pycuda_backend import PyCudaBackend

    asked, together = [], threading.Barrier(2, timeout=30)

    def asked_info(self):
        asked.append(self.device)
        together.wait()  # GPUs 0 and 1 are asked at the same time, or this times out
        return {"backend": "pycuda", "device": self.device, "compute_capability": "9.0", "gpu": f"GPU {self.device}"}

    monkeypatch.setattr(PyCudaBackend, "_asked_info", asked_info)
    monkeypatch.setattr(PyCudaBackend, "open", lambda self: None)  # (every lane's worker starts then: none here)
    first = PyCudaBackend(build="jit")
    members = [first, PyCudaBackend(build="jit", builds_from=first), PyCudaBackend(build="jit", device=1, builds_from=first),
               PyCudaBackend(build="jit", device=0, builds_from=first)]
    info = DeviceSet(members).info()
    assert sorted(asked) == [0, 1], "GPU 0 asked once for its three lanes, GPU 1 for itself"
    assert [d["device"] for d in info["devices"]] == [0, 0, 1, 0]


def test_a_gpu_backend_opened_spawns_its_worker_once_before_the_first_launch(monkeypatch):
    """``open`` starts the GPU worker (it starts CUDA while the run plans), once; the first launch then finds it."""
    from ptxconf.backends.pycuda_backend import PyCudaBackend

    started = []
    backend = PyCudaBackend(build="jit")
    here, there = multiprocessing.Pipe()
    monkeypatch.setattr(backend, "_start", lambda: (started.append(1), setattr(backend, "_proc", object()),
                                                    setattr(backend, "_conn", here)))
    DeviceSet([backend]).open()
    backend.open()
    assert started == [1]
    assert there.recv() == ("ping",) and not there.poll(0.1)  # asked once when it became ready


def _worker_answering(conn, ready: float) -> threading.Thread:
    """A stand-in GPU worker on the other end of a pipe: the ping, then ``info``, then it leaves on ``exit``."""

    def serve():
        while True:
            try:
                msg = conn.recv()
            except EOFError:
                return
            if msg[0] == "ping":
                conn.send(("ok", {"gpu_worker_entered": ready - 1.0, "gpu_worker_ready": ready}))
            elif msg[0] == "info":
                conn.send(("ok", {"compute_capability": "9.0", "cuda_driver_api": "13.0", "jit": "JIT"}))
            elif msg[0] == "exit":
                conn.close()
                return

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    return t


def test_the_first_call_takes_the_ping_answer_first_and_keeps_when_the_worker_was_ready(monkeypatch):
    """The ping open() sent is answered before anything else: the first call reads that answer, then its own."""
    from ptxconf.backends.pycuda_backend import PyCudaBackend

    backend = PyCudaBackend(build="jit")
    here, there = multiprocessing.Pipe()
    monkeypatch.setattr(backend, "_start", lambda: (setattr(backend, "_proc", object()), setattr(backend, "_conn", here)))
    _worker_answering(there, 1000.0)
    backend.open()
    assert backend.compute_capability() == (9, 0)
    assert backend.moments() == {"gpu_worker_entered": 999.0, "gpu_worker_ready": 1000.0}


def test_a_worker_handed_over_to_a_forked_lane_is_let_go_here_and_ended_there(monkeypatch):
    """Opened in the run's process, used by the lane forked after: the run lets go of its pipe (the worker lives
    on); the lane, not its parent, tells it to exit and waits for the pipe to close, never joining it."""
    from ptxconf.backends.pycuda_backend import PyCudaBackend

    backend = PyCudaBackend(build="jit")
    here, there = multiprocessing.Pipe()

    class _NotOurs:  # a process object this process may not join (its parent is another process)
        pid = -1

        def join(self, *a):
            raise AssertionError("joined a worker another process started")

    monkeypatch.setattr(backend, "_start", lambda: (setattr(backend, "_proc", _NotOurs()), setattr(backend, "_conn", here),
                                                    setattr(backend, "_owner", -1)))
    worker = _worker_answering(there, 5.0)
    backend.open()
    assert backend.compute_capability() == (9, 0)
    backend.close()  # the lane's close: exit sent, the pipe's end awaited
    worker.join(5)
    assert not worker.is_alive() and backend._conn is None

    run_side = PyCudaBackend(build="jit")
    a, b = multiprocessing.Pipe()
    monkeypatch.setattr(run_side, "_start", lambda: (setattr(run_side, "_proc", object()), setattr(run_side, "_conn", a)))
    run_side.open()
    run_side.handed_over()
    assert a.closed and b.recv() == ("ping",)  # the worker was asked, and nothing ended it


def test_every_lane_worker_starts_with_the_runs_first_question_and_the_lanes_take_them_over(monkeypatch):
    """The run's first question (``info``) starts every lane's GPU worker from the asking thread, all at once; a
    lane then runs on its member itself (its worker taken over), not on a backend that would start another."""
    from ptxconf.backends.pycuda_backend import PyCudaBackend

    members = [PyCudaBackend(build="jit", device=0)]
    members += [PyCudaBackend(build="jit", device=0, builds_from=members[0]) for _ in range(3)]
    started = []
    for m in members:
        monkeypatch.setattr(m, "open", lambda m=m: started.append((m, threading.current_thread())))
    monkeypatch.setattr(members[0], "_asked_info", lambda: {"compute_capability": "9.0", "cuda_driver_api": "13.0"})
    two = DeviceSet(members)
    assert two.info()["compute_capability"] == "9.0"
    assert [m for m, _ in started] == members and {t for _, t in started} == {threading.current_thread()}
    assert two.lane_backends() == members


def test_the_gpus_are_counted_from_the_driver_s_nodes_without_cuda(tmp_path, monkeypatch):
    """``--devices all`` counts the GPUs from ``/dev/nvidia<N>`` (no CUDA started in the run's own process); where
    ``CUDA_VISIBLE_DEVICES`` chooses among them, or there is no node, it cannot tell (None: CUDA counts)."""
    from ptxconf.backends._spawn import visible_gpus

    for name in ("nvidia0", "nvidia1", "nvidia3", "nvidiactl", "nvidia-uvm", "nvidia-caps", "nvme0"):
        (tmp_path / name).touch()
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert visible_gpus(str(tmp_path)) == 3
    assert visible_gpus(str(tmp_path / "none")) is None
    empty = tmp_path / "empty"
    empty.mkdir()
    assert visible_gpus(str(empty)) is None
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert visible_gpus(str(tmp_path)) is None


@pytest.mark.parametrize("nodes, devices, cuda, members, guessed", [
    (2, "all", None, [0, 1], 2),  # the nodes tell: CUDA is not started here
    (None, "all", 3, [0, 1, 2], None),  # they cannot: CUDA counts, as before
    (2, "0,2", 3, [0, 2], None),  # an ordinal past the nodes' count: CUDA's count decides (and its message)
])
def test_devices_are_counted_without_cuda_where_the_nodes_tell(monkeypatch, fake_gpus, nodes, devices, cuda, members,
                                                               guessed):
    import argparse

    import ptxconf.backends._spawn as spawn
    import ptxconf.backends.pycuda_backend as pycuda_backend
    from ptxconf.cli import run as cli_run

    def counted_by_cuda() -> int:
        assert cuda is not None, "CUDA started in the run's own process to count the GPUs"
        return cuda

    monkeypatch.setattr(spawn, "visible_gpus", lambda: nodes)
    monkeypatch.setattr(pycuda_backend, "device_count", counted_by_cuda)
    monkeypatch.setattr(cli_run.os, "cpu_count", lambda: 4)  # one lane per GPU
    args = argparse.Namespace(build="auto", no_cache=False, ptxas=None, devices=devices, backend="pycuda", lanes=None)
    backend = cli_run._run_backend(args, mma, 4)
    assert [m.device for m in fake_gpus] == members
    assert getattr(backend, "devices_guessed", None) == guessed


class _Answering:
    """A backend whose first answer counts ``cuda`` GPUs; made for ``made`` of them."""

    name = "pycuda"

    def __init__(self, made: int, cuda: int, guessed: int | None, log: list):
        self.made, self.cuda, self.log = made, cuda, log
        if guessed is not None:
            self.devices_guessed = guessed

    def open(self) -> None:
        self.log.append(("open", self.made))

    def info(self) -> dict:
        return {"cuda_devices": self.cuda, "made_for": self.made}

    def close(self) -> None:
        self.log.append(("close", self.made))


@pytest.mark.parametrize("guess, cuda, made", [(2, 2, [2]), (2, 3, [2, 3]), (None, 3, [None])])
def test_a_wrong_guess_of_the_gpus_is_made_again_with_cuda_s_count(guess, cuda, made):
    """The first worker's answer checks the nodes' count: where CUDA sees other GPUs (``CUDA_VISIBLE_DEVICES``
    entries, MIG), the backend is made again for CUDA's count, the first one closed."""
    from ptxconf.cli.run import _EarlyBackend

    log: list = []
    calls: list = []

    def make(no_gpu, counted=None):
        calls.append(counted if counted is not None else guess)
        return _Answering(calls[-1] or cuda, cuda, None if counted is not None else guess, log)

    early = _EarlyBackend()
    early.start(make)
    backend, info = early.answered()
    assert calls == made and info["made_for"] == (made[-1] or cuda)
    if len(made) > 1:
        assert log == [("open", guess), ("close", guess), ("open", cuda)]
    early.close()


def test_a_gpu_the_nodes_counted_that_does_not_answer_is_made_again_with_cuda_s_count(monkeypatch):
    """Nodes of a GPU CUDA cannot open (its worker's answer is an error): the backend is made again for the GPUs CUDA
    counts here, as before the nodes were read."""
    import ptxconf.backends.pycuda_backend as pycuda_backend
    from ptxconf.backends.base import BackendError
    from ptxconf.cli.run import _EarlyBackend

    class _Failing(_Answering):
        def info(self) -> dict:
            raise BackendError("cannot query the GPU: invalid device ordinal")

    log: list = []
    calls: list = []
    monkeypatch.setattr(pycuda_backend, "device_count", lambda: 1)

    def make(no_gpu, counted=None):
        calls.append(counted)
        return _Failing(2, 1, 2, log) if counted is None else _Answering(counted, 1, None, log)

    early = _EarlyBackend()
    early.start(make)
    _, info = early.answered()
    assert calls == [None, 1] and info["made_for"] == 1 and log == [("open", 2), ("close", 2), ("open", 1)]
    early.close()
