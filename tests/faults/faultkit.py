"""Shared pieces of the fault-injection suite: the selection, child runs with timeouts, strict file readers.

Every child process is started with a timeout and killed (by its own pid) if it outlives it, so no
test can hang.  ``read_results`` is the strict reader: every line of results.jsonl must parse, except
a cut last line (a kill in the middle of a write).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DRIVER = Path(__file__).with_name("fault_driver.py")
# Small: 12 mma.sync variants (value and three map checks each) and 6 ldmatrix forms; about 1 s on the emulator.
SELECT = ("mma.sync.aligned.m16n8k16.row.col.f*", "ldmatrix.sync.aligned.m8n8*")
TIMEOUT_S = 60.0
MARK = "PTXCONF_FAULT_RUN_MARK"  # in the environment of a child run and so of every process it starts


def select_args(select=SELECT) -> list[str]:
    return [arg for glob in select for arg in ("--select", glob)]


def run_args(out: Path, *extra: str, select=SELECT) -> list[str]:
    return ["run", "--backend", "emulator", "--quiet", "--out", str(out), *select_args(select), *extra]


def child_env(**delays: str) -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("PTXCONF_GIT_REVISION", "fault-suite")  # no git call per run
    env["PYTHONWARNINGS"] = "ignore::RuntimeWarning"
    env.update(delays)
    return env


def processes_marked(mark: str) -> list[int]:
    """Pids of the live processes whose environment holds ``MARK=mark`` (Linux: read from /proc)."""
    needle = f"{MARK}={mark}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            env = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:  # gone meanwhile, or not ours
            continue
        if needle in env.split(b"\0") and state != "Z":  # a zombie holds no memory: its parent has only to reap it
            found.append(int(entry.name))
    return found


def assert_no_survivors(mark: str, wait_s: float = TIMEOUT_S) -> None:
    """No process of the run marked ``mark`` outlives it: each gets ``wait_s`` to end (a worker finishing the
    task in hand, the kernel delivering the parent-death signal), then the test fails naming them (and kills
    them, by pid, so that one failure leaves nothing behind)."""
    end = time.monotonic() + wait_s
    while (left := processes_marked(mark)) and time.monotonic() < end:
        time.sleep(0.05)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    assert not left, f"{len(left)} process(es) of the run outlived it: pids {left}"


def children_of(pid: int) -> set[int]:
    """Pids of the live (not zombie) processes whose parent is ``pid``."""
    kids = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            kids.add(int(entry.name))
    return kids


def signals_as_at_a_terminal() -> None:
    """In a child, before it runs: SIGINT, SIGTERM and SIGHUP at their defaults, as a run typed at a terminal gets
    them.  A run keeps a signal its parent ignores (``nohup``, ``cmd &`` in a script): the tests that aim signals at
    a run must not depend on how the test session itself was started."""
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)


class Child:
    """A CLI run in a child process; stdout and stderr go to files (no pipe can fill and block it).

    Its environment carries a mark of its own, so that every process the run starts can be found afterwards:
    once the run has ended (:meth:`wait`, :meth:`kill_now`), none of them may be left."""

    def __init__(self, args: list[str], logs: Path, env: dict | None = None, driver: bool = True,
                 cmd: list[str] | None = None):
        logs.mkdir(parents=True, exist_ok=True)
        self.stdout_path, self.stderr_path = logs / "stdout.txt", logs / "stderr.txt"
        if cmd is None:
            cmd = [sys.executable, str(DRIVER)] if driver else [sys.executable, "-m", "ptxconf.cli.main"]
        self.mark = uuid.uuid4().hex
        env = {**(env or child_env()), MARK: self.mark}
        with open(self.stdout_path, "wb") as so, open(self.stderr_path, "wb") as se:
            self.proc = subprocess.Popen(cmd + args, stdout=so, stderr=se, cwd=REPO, env=env,
                                         preexec_fn=signals_as_at_a_terminal)
        self.t0 = time.monotonic()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def signal(self, signum: int) -> None:
        os.kill(self.proc.pid, signum)

    def wait(self, timeout: float = TIMEOUT_S) -> int:
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
            assert_no_survivors(self.mark)
            raise AssertionError(f"the run outlived {timeout} s and was killed; stderr:\n{self.stderr()}") from None
        assert_no_survivors(self.mark)
        return rc

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def stdout(self) -> str:
        return self.stdout_path.read_text(errors="replace")

    def kill_now(self) -> None:
        if self.alive():
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)
        assert_no_survivors(self.mark)


def run_child(args: list[str], logs: Path, env: dict | None = None, driver: bool = False,
              timeout: float = TIMEOUT_S) -> tuple[int, Child]:
    child = Child(args, logs, env, driver)
    return child.wait(timeout), child


def wait_until(cond, timeout: float, child: Child | None = None, what: str = "") -> None:
    """Poll ``cond`` every 10 ms; fail (killing ``child``) when it never holds or the child ends first."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return
        if child is not None and not child.alive():
            if cond():
                return
            raise AssertionError(f"the run ended (rc {child.proc.returncode}) before {what}; stderr:\n{child.stderr()}")
        time.sleep(0.01)
    if child is not None:
        child.kill_now()
    raise AssertionError(f"timed out waiting for {what}")


def line_count(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def read_results(path: Path) -> tuple[list[dict], bool]:
    """Every whole line of results.jsonl parsed; ``cut`` is True when the last line was cut by a kill."""
    if not path.exists():
        return [], False
    text = path.read_bytes().decode("utf-8", errors="strict")
    lines = text.split("\n")
    tail = lines.pop()  # "" when the file ends with a newline
    records = []
    for i, line in enumerate(lines):
        try:
            records.append(json.loads(line))
        except ValueError:
            raise AssertionError(f"{path}: line {i + 1} of {len(lines)} does not parse: {line[:120]!r}") from None
    cut = bool(tail)
    if cut:  # a cut line may only be the last one, and is no verdict
        try:
            json.loads(tail)
        except ValueError:
            pass
        else:
            raise AssertionError(f"{path}: a whole verdict lacks its newline")
    return records, cut


def read_summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())


def verdicts(records: list[dict]) -> dict[tuple[str, str], str]:
    """(variant, check) -> status; fails when a pair is recorded twice."""
    seen = Counter((r["variant"], r["check"]) for r in records)
    twice = [k for k, n in seen.items() if n > 1]
    assert not twice, f"recorded more than once: {twice[:5]}"
    return {(r["variant"], r["check"]): r["status"] for r in records}


def replay_verdicts(run_dir: Path, out: Path, specs: Path | None = None) -> dict[tuple[str, str], str]:
    """``ptxconf replay`` of a run directory (in this process): (variant, check) -> status."""
    from ptxconf import cli

    cli.main(["replay", str(run_dir), "--out", str(out), "--quiet", *(["--specs", str(specs)] if specs else [])])
    records, cut = read_results(out / "results.jsonl")
    assert not cut
    return verdicts(records)
