"""``ptxconf run`` opens its backend first thing (a GPU backend's workers then start CUDA while the run loads the
specs), yet says what it said before, in the same order, and leaves no worker behind where it stops early.

The backend here is a stand-in: an emulator whose ``open`` starts a real process, as a GPU backend starts its worker,
and whose ``close`` ends it.  All in this process through the CLI's ``main``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field

import pytest
from ptxconf.backends.base import BackendError
from ptxconf.backends.emulator import EmulatorBackend
from ptxconf.cli import main as cli_main
from ptxconf.cli import run as cli_run
from ptxconf.oracle import mma

V = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"


class _Starting(EmulatorBackend):
    """An emulator that starts a worker process when opened and ends it when closed; what happened, in order."""

    def __init__(self, events: list[str], info_error: str | None = None):
        super().__init__(mma)
        self.events = events
        self.info_error = info_error
        self.worker: subprocess.Popen | None = None

    def open(self) -> None:
        if self.worker is None:
            self.events.append("open")
            self.worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])

    def info(self) -> dict:
        self.events.append("info")
        if self.info_error:
            raise BackendError(self.info_error)
        return super().info()

    def close(self) -> None:
        self.events.append("close")
        if self.worker is not None:
            self.worker.kill()
            self.worker.wait()
        super().close()


@dataclass
class _Seen:
    """What the stand-in saw: its events in order, the backend made, whether its worker ran while the specs loaded;
    ``fail`` (raised by making the backend) and ``info_error`` (its first answer's) set by a test."""

    events: list[str] = field(default_factory=list)
    made: _Starting | None = None
    worker_alive_at_load: bool | None = None
    fail: BaseException | None = None
    info_error: str | None = None

    def worker_ended(self) -> bool:
        return self.made is not None and self.made.worker is not None and self.made.worker.poll() is not None


@pytest.fixture
def stand_in(monkeypatch):
    """The stand-in as the run's backend (``_run_backend`` replaced), and the specs' loading watched."""
    seen = _Seen()
    real_load = cli_run.load

    def make(args, semantics, jobs, no_gpu=None, counted=None):
        seen.events.append("make")
        if seen.fail is not None:
            raise seen.fail
        seen.made = _Starting(seen.events, seen.info_error)
        return seen.made

    def load(args):
        seen.events.append("load")
        seen.worker_alive_at_load = seen.made is not None and seen.made.worker is not None and \
            seen.made.worker.poll() is None
        return real_load(args)

    monkeypatch.setattr(cli_run, "_run_backend", make)
    monkeypatch.setattr(cli_run, "load", load)
    yield seen
    if seen.made is not None and seen.made.worker is not None and seen.made.worker.poll() is None:
        seen.made.worker.kill()  # left by a regression: ended with its test


def _line(capsys, argv: list[str]) -> str:
    """``ptxconf ARGV`` exits 2 with one line on stderr and no traceback: the line."""
    rc = cli_main(argv)
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert rc == 2 and len(lines) == 1 and "Traceback" not in err, (rc, err)
    return lines[0]


def test_the_backend_starts_before_the_specs_load_and_the_run_passes(stand_in, tmp_path, capsys):
    rc = cli_main(["run", "--backend", "emulator", "--select", V, "--cases", "1", "-q", "--out", str(tmp_path / "r")])
    assert rc == 0, capsys.readouterr().err
    assert stand_in.events[:4] == ["make", "open", "load", "info"] and stand_in.events[-1] == "close"
    assert stand_in.worker_alive_at_load, "the worker runs while the specs load"
    assert stand_in.worker_ended()
    assert (tmp_path / "r" / "results.jsonl").read_text().count(V) >= 1


def test_a_bad_select_says_what_it_said_and_the_started_backend_is_closed(stand_in, capsys, tmp_path):
    line = _line(capsys, ["run", "--backend", "emulator", "--select", "no-such-variant", "--out", str(tmp_path / "r")])
    assert line == "ptxconf: --select no-such-variant matches no variant"
    assert stand_in.events == ["make", "open", "load", "close"] and stand_in.worker_ended()
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("fail", [BackendError("no CUDA device"), SystemExit("ptxconf run: --lanes 0: give 1 or more")],
                         ids=["backend error", "usage error"])
def test_the_run_s_own_errors_come_before_the_backend_s_as_before(stand_in, capsys, tmp_path, fail):
    """Where making the backend failed too, the error the run met first before is the one reported: a bad
    ``--select``, then an output folder that holds another run."""
    stand_in.fail = fail
    assert _line(capsys, ["run", "--select", "nope", "--out", str(tmp_path / "r")]).startswith("ptxconf: --select nope")
    held = tmp_path / "held"
    held.mkdir()
    (held / "results.jsonl").write_text("")
    line = _line(capsys, ["run", "--select", V, "--out", str(held)])
    assert line == f"ptxconf run: --out {held} holds another run; give --force to replace it or --resume to continue it"


@pytest.mark.parametrize("where", ["make", "info"])
def test_a_backend_error_is_the_backend_line_as_before(stand_in, capsys, tmp_path, where):
    """From making the backend or from its first answer: ``ptxconf: backend NAME: ...``, the started worker ended."""
    if where == "make":
        stand_in.fail = BackendError("no CUDA device")
    else:
        stand_in.info_error = "cannot query the GPU: the GPU worker died as it started"
    line = _line(capsys, ["run", "--backend", "auto", "--select", V, "--out", str(tmp_path / "r")])
    why = "no CUDA device" if where == "make" else stand_in.info_error
    assert line == f"ptxconf: backend auto: {why}"
    if where == "info":
        assert stand_in.events == ["make", "open", "load", "info", "close"] and stand_in.worker_ended()


def test_a_usage_error_of_the_backend_is_its_own_line(capsys, tmp_path):
    """The backend's own argument checks (here ``--lanes``), made before the specs load, report as before."""
    line = _line(capsys, ["run", "--backend", "emulator", "--lanes", "0", "--select", V, "--out", str(tmp_path / "r")])
    assert line == "ptxconf run: --lanes 0: give 1 or more"


def test_a_signal_while_the_backend_starts_leaves_at_once(stand_in):
    """A signal before the run writes anything exits with its status (a number): not kept for later like an error."""
    stand_in.fail = SystemExit(130)
    with pytest.raises(SystemExit) as exc:
        cli_main(["run", "--backend", "emulator", "--select", V])
    assert exc.value.code == 130 and stand_in.events == ["make"]


@pytest.mark.parametrize("cores", [1, 2, 16])
def test_the_lanes_need_no_variant_count(monkeypatch, cores):
    """The backend is made before the variants are selected, with ``jobs`` for any count: the lanes come out the
    same as with the run's own ``jobs`` (they ask only whether it is 2 or more)."""
    monkeypatch.setattr(cli_run.os, "cpu_count", lambda: cores)
    for asked in (None, 1, 2, 3, 16, 256):
        early = cli_run._jobs(asked, sys.maxsize)
        for variants in range(1, 40):
            for gpus in (1, 2):
                assert cli_run.lanes_per_gpu(None, gpus, cli_run._jobs(asked, variants)) == \
                    cli_run.lanes_per_gpu(None, gpus, early)


def test_a_plain_emulator_run_passes(tmp_path, capsys):
    rc = cli_main(["run", "--backend", "emulator", "--select", V, "--out", str(tmp_path / "r")])
    assert rc == 0, capsys.readouterr().err
    assert (tmp_path / "r" / "summary.json").exists()


def test_the_timeline_says_when_the_process_began(tmp_path):
    """``timeline_s.process_start``: the process's own beginning (the kernel's record), seconds before the run's first
    step: what imports, the specs and the GPU's start cost a run, which the run's wall leaves out."""
    out = tmp_path / "r"
    code = "import sys; from ptxconf.console import main; sys.argv = ['ptxconf'] + sys.argv[1:]; sys.exit(main())"
    subprocess.run([sys.executable, "-c", code, "run", "--backend", "emulator", "--select", V, "-q", "--out", str(out)],
                   check=True, capture_output=True, timeout=300)
    line = json.loads((out / "summary.json").read_text())["timeline_s"]
    assert -60 < line["process_start"] < 0 == line["start"] < line["reported"]


_BLAS = """
import json, os, sys
from ptxconf.console import main
sys.argv = ['ptxconf'] + sys.argv[1:]
try:
    main()
except SystemExit:
    pass
from threadpoolctl import threadpool_info
blas = [p["num_threads"] for p in threadpool_info() if p.get("user_api") == "blas"]
print(json.dumps({"env": os.environ.get("OPENBLAS_NUM_THREADS"), "blas": blas}))
"""


@pytest.mark.parametrize("argv, env, threads", [
    (["run", "--help"], None, "1"),  # the run's processes: one BLAS thread each
    (["run", "--help"], "2", "2"),  # the user's own setting stands
    (["specs", "--help"], None, None),  # other commands: as NumPy would
])
def test_a_run_s_processes_take_one_blas_thread(argv, env, threads):
    """``ptxconf run`` spreads its work over processes: each takes one BLAS thread, set before NumPy is imported (so
    NumPy's own pool has that many threads), unless the environment says otherwise."""
    import os

    environ = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
    if env is not None:
        environ["OPENBLAS_NUM_THREADS"] = env
    got = json.loads(subprocess.run([sys.executable, "-c", _BLAS, *argv], check=True, capture_output=True, text=True,
                                    env=environ, timeout=120).stdout.splitlines()[-1])
    assert got["env"] == threads
    if threads is not None and got["blas"]:  # a NumPy built without a BLAS that threadpoolctl knows has none to show
        assert set(got["blas"]) == {int(threads)}
