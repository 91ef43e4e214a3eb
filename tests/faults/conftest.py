"""The fault-injection suite's tally and its one summary line.

Each test injects its faults and reports, through the ``tally`` fixture, how many it injected, how
many recorded verdicts it found lost and how many false passes (a pass for a case that did not run, or
a summary claiming more than was recorded); every test also asserts the last two are zero.  At the end
pytest prints ``faults: N injected, L verdicts lost, P false passes`` (summed over xdist workers).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_TALLY = {"injected": 0, "lost": 0, "false_passes": 0}
_KEYS = tuple(_TALLY)


class Tally:
    def add(self, injected: int = 0, lost: int = 0, false_passes: int = 0) -> None:
        _TALLY["injected"] += injected
        _TALLY["lost"] += lost
        _TALLY["false_passes"] += false_passes

    def check(self, lost: int, false_passes: int, injected: int = 0) -> None:
        """Record, then assert that nothing recorded was lost and nothing passed that did not run."""
        self.add(injected, lost, false_passes)
        assert lost == 0, f"{lost} recorded verdict(s) lost"
        assert false_passes == 0, f"{false_passes} false pass(es)"


def pytest_collection_modifyitems(config, items):
    """Every fault test runs ``ptxconf`` end to end (most in a child process): all are ``e2e``."""
    here = str(Path(__file__).parent)
    for item in items:
        if str(item.path).startswith(here):
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(autouse=True)
def no_worker_outlives_its_run():
    """A run inside the test's own process (a backend that fails, a full disk) leaves no worker behind it either:
    every process it forked has ended by the end of the test (each gets a bounded time to)."""
    import os
    import time

    from faultkit import TIMEOUT_S, children_of

    before = children_of(os.getpid())
    yield
    end = time.monotonic() + TIMEOUT_S
    while (left := children_of(os.getpid()) - before) and time.monotonic() < end:
        time.sleep(0.05)
    assert not left, f"{len(left)} worker process(es) outlived the run: pids {sorted(left)}"


@pytest.fixture(scope="session")
def tally() -> Tally:
    return Tally()


@pytest.fixture(scope="session")
def reference(tmp_path_factory) -> dict[tuple[str, str], str]:
    """(variant, check) -> status of an undisturbed run of the suite's selection: what every damaged run must reach."""
    from faultkit import read_results, run_args, verdicts
    from ptxconf import cli

    out = tmp_path_factory.mktemp("reference") / "run"
    assert cli.main(run_args(out)) == 0
    records, cut = read_results(out / "results.jsonl")
    assert not cut and records
    ref = verdicts(records)
    assert set(ref.values()) == {"pass"}
    return ref


def _line(t: dict) -> str:
    return f"faults: {t['injected']} injected, {t['lost']} verdicts lost, {t['false_passes']} false passes"


def pytest_sessionfinish(session):
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: hand the tally to the controller
        workeroutput["fault_tally"] = dict(_TALLY)


if importlib.util.find_spec("xdist") is not None:

    def pytest_testnodedown(node, error):
        got = getattr(node, "workeroutput", {}).get("fault_tally")
        if got:
            for k in _KEYS:
                _TALLY[k] += got[k]


def pytest_terminal_summary(terminalreporter):
    if any(_TALLY.values()):
        terminalreporter.write_line(_line(_TALLY))
