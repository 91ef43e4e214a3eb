"""A signal at any moment of a run: start-up, planning, mid-run, the final reports, after the last report.

SIGINT, SIGTERM and SIGHUP (a closed terminal, handled as SIGTERM) each land in one phase of a real
``ptxconf run`` (a child process on the emulator, slowed by ``fault_driver.py`` where a phase is too short
to aim at).  Every time: exit 130 (SIGINT) or 143 (SIGTERM, SIGHUP), no traceback, the lock is gone, and no
process of the run is left (``Child.wait``).  Before the run touches its directory (start-up) it leaves at
once and writes nothing; after, summary.json says ``interrupted`` or ``complete`` (never ``running``) and
counts no verdict results.jsonl lacks.  A reader of stdout that goes away (``| head -1``)
stops the printing, not the run.
"""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest
from faultkit import (
    REPO,
    Child,
    child_env,
    line_count,
    read_results,
    read_summary,
    run_args,
    signals_as_at_a_terminal,
    wait_until,
)
from faultkit import verdicts as as_verdicts

CODE = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGHUP: 143}
# phase -> (what the driver slows, the file or lines to wait for before the signal)
PHASES = {
    "start-up": {"PTXCONF_FAULT_START_DELAY": "1.0"},
    "planning": {"PTXCONF_FAULT_PLAN_DELAY": "0.3"},
    "mid-run": {"PTXCONF_FAULT_VERDICT_DELAY": "0.1", "PTXCONF_FAULT_MODULE_PLANS": "2"},
    "final reports": {"PTXCONF_FAULT_REPORT_DELAY": "1.0"},
    "after the last report": {"PTXCONF_FAULT_REPORT_DELAY": "1.0"},
}
SWEEP = [("start-up", signal.SIGINT), ("start-up", signal.SIGHUP), ("planning", signal.SIGTERM),
         ("mid-run", signal.SIGHUP), ("final reports", signal.SIGINT), ("after the last report", signal.SIGTERM)]


def _arm(phase: str, tmp_path) -> dict[str, str]:
    env = child_env(**PHASES[phase], PTXCONF_FAULT_READY=str(tmp_path / "ready"))
    if "REPORT" in "".join(PHASES[phase]):
        env["PTXCONF_FAULT_REPORT_MARK"] = str(tmp_path / "mark")
    return env


def _aim(phase: str, child: Child, tmp_path, out) -> None:
    """Wait until the child is in ``phase``."""
    if phase == "start-up":
        wait_until(lambda: (tmp_path / "ready").exists(), 30, child, "the run to take its signals")
    elif phase == "planning":
        wait_until(lambda: (out / "summary.json").exists(), 30, child, "summary.json")
    elif phase == "mid-run":
        wait_until(lambda: line_count(out / "results.jsonl") >= 4, 30, child, "4 results lines")
    elif phase == "final reports":
        wait_until(lambda: (tmp_path / "mark.reports").exists(), 60, child, "the final reports")
    else:
        wait_until(lambda: (tmp_path / "mark.printed").exists(), 60, child, "the outcome being printed")


@pytest.mark.parametrize("phase,signum", SWEEP, ids=[f"{p}-{signal.Signals(s).name}" for p, s in SWEEP])
def test_a_signal_in_any_phase_stops_the_run_cleanly(phase, signum, tmp_path, reference, tally):
    out = tmp_path / "run"
    child = Child(run_args(out), tmp_path / "logs", _arm(phase, tmp_path))
    _aim(phase, child, tmp_path, out)
    child.signal(signum)
    rc = child.wait()  # also: no process of the run is left
    err = child.stderr()
    assert rc == CODE[signum], f"exit {rc}; stderr:\n{err}"
    assert "Traceback" not in err, err
    assert not (out / ".ptxconf.lock").exists(), "the lock outlived the run"
    if phase == "start-up":  # nothing begun, nothing written
        assert not out.exists() or not any(out.iterdir()), sorted(p.name for p in out.iterdir())
        tally.check(lost=0, false_passes=0, injected=1)
        return
    summary = read_summary(out)
    assert summary["status"] in ("interrupted", "complete"), summary["status"]
    records, cut = read_results(out / "results.jsonl")
    recorded = as_verdicts(records)
    assert sum(summary["counts"].values()) == len(recorded) and not cut
    false_passes = sum(1 for k, s in recorded.items() if s == "pass" and reference.get(k) != "pass")
    if summary["status"] == "complete":
        assert sorted(recorded) == sorted(reference)
    else:
        assert summary["variants_done"] + len(summary["variants_not_run"]) == summary["variants_selected"]
    if phase in ("final reports", "after the last report"):
        assert summary["status"] == "complete", "every variant ran before the signal"
    tally.check(lost=0, false_passes=false_passes, injected=1)


def test_a_reader_that_goes_away_stops_the_printing_not_the_run(tmp_path, reference):
    """``ptxconf run ... | head -1``: the run goes on to the end and writes every file."""
    out = tmp_path / "run"
    args = ["run", "--backend", "emulator", "--out", str(out), *run_args(out)[6:]]  # not --quiet: progress lines
    proc = subprocess.Popen([sys.executable, "-m", "ptxconf.cli.main", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=REPO, env=child_env(), preexec_fn=signals_as_at_a_terminal)
    proc.stdout.readline()  # the first progress line, then the reader is gone
    proc.stdout.close()
    try:
        rc = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    assert rc == 0 and "Traceback" not in err and "Broken pipe" not in err, err
    assert read_summary(out)["status"] == "complete"
    assert sorted(as_verdicts(read_results(out / "results.jsonl")[0])) == sorted(reference)


CONSOLE = [sys.executable, "-c", "import sys; from ptxconf.console import main; sys.exit(main())"]  # the script


def _caught(pid: int) -> int:
    """The signals process ``pid`` has handlers for (``SigCgt`` of /proc), as a bit mask (bit ``signum - 1``)."""
    with open(f"/proc/{pid}/status") as fh:
        return next(int(line.split()[1], 16) for line in fh if line.startswith("SigCgt:"))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the handlers from /proc")
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
def test_a_signal_while_the_cli_is_still_importing_exits_cleanly(signum, tmp_path, tally):
    """The console command takes the signals before it imports the CLI (half a second): a signal aimed at the moment
    its handlers are in place, before ``run`` could take any, exits 130/143 with no traceback and writes nothing."""
    out = tmp_path / "run"
    child = Child(run_args(out), tmp_path / "logs", child_env(), cmd=CONSOLE)
    wanted = (1 << (signal.SIGTERM - 1)) | (1 << (signal.SIGHUP - 1))  # SIGINT is Python's own from its start
    wait_until(lambda: _caught(child.pid) & wanted == wanted, 30, child, "the console to take its signals")
    child.signal(signum)
    rc = child.wait()
    err = child.stderr()
    assert rc == CODE[signum], f"exit {rc}; stderr:\n{err}"
    assert "Traceback" not in err, err
    assert not out.exists() or not any(out.iterdir())
    tally.check(lost=0, false_passes=0, injected=1)


def test_a_signal_whose_exit_the_import_machinery_swallows_still_ends_the_command():
    """The early handler's SystemExit can land inside a callback the import machinery runs (a module lock's weakref
    callback), which swallows it: the command must still exit 143 before running anything, with no traceback."""
    import subprocess
    import textwrap

    code = textwrap.dedent('''
        import builtins, signal, sys, weakref
        from ptxconf import console

        class Held: pass
        real = builtins.__import__
        def importing(name, *args, **kw):
            if name == "ptxconf.cli.main":  # a callback of a dying object raises the handler's exit: swallowed
                held = Held(); ref = weakref.ref(held, lambda _: console._leave(signal.SIGTERM, None)); del held
            return real(name, *args, **kw)
        builtins.__import__ = importing
        sys.argv = ["ptxconf", "specs", "list"]
        sys.exit(console.main())
    ''')
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 143, done.stderr
    assert "Traceback" not in done.stderr and done.stdout == "", "nothing ran, nothing said"
