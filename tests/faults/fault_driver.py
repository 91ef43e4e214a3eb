"""The ptxconf CLI in a child process, slowed down on request so that a test can kill or signal it at a chosen point.

Run as ``python tests/faults/fault_driver.py run ...`` (the arguments of ``ptxconf``).  Environment:

* ``PTXCONF_FAULT_PLAN_DELAY``: seconds slept before each variant is planned (a long planning phase);
* ``PTXCONF_FAULT_VERDICT_DELAY``: seconds slept before each variant's verdicts are written (a slow GPU);
* ``PTXCONF_FAULT_MODULE_PLANS``: variants per module (many small modules, as a whole-suite run has);
* ``PTXCONF_FAULT_MODULE_DELAY``: seconds slept before each module is launched (a slow build or launch);
* ``PTXCONF_FAULT_READY``: a file made once the run has taken its signals (the earliest moment a test can aim at);
* ``PTXCONF_FAULT_START_DELAY``: seconds slept while the specs load (a long start-up);
* ``PTXCONF_FAULT_REPORT_DELAY`` with ``PTXCONF_FAULT_REPORT_MARK``: the file made, then the seconds slept, as the
  final reports begin (JUnit), and again as the outcome is printed (after the last report).

Nothing else changes: the signals, the lock, the files are those of ``ptxconf run``.
"""

from __future__ import annotations

import importlib
import os
import sys
import time
from pathlib import Path


def _slowed(owner, name: str, seconds: float, mark: str | None = None) -> None:
    """``owner.name`` made ``seconds`` slower (after making the file ``mark``, where given)."""
    real = getattr(owner, name)

    def slow(*args, **kwargs):
        if mark:
            Path(mark).touch()
        time.sleep(seconds)
        return real(*args, **kwargs)

    setattr(owner, name, slow)


def main() -> int:
    from ptxconf.run import report, runner, session, signals

    cli = importlib.import_module("ptxconf.cli.main")  # the module (``ptxconf.cli.main`` is also its function's name)
    cli_run = importlib.import_module("ptxconf.cli.run")  # ``run`` loads its specs through this module's ``load``
    env = os.environ.get
    for owner, name, delay in ((runner, "launch_module", "MODULE"), (runner, "plan_variant", "PLAN"),
                               (report.RunLog, "add_verdicts", "VERDICT"), (cli_run, "load", "START")):
        if float(env(f"PTXCONF_FAULT_{delay}_DELAY", "0")):
            _slowed(owner, name, float(env(f"PTXCONF_FAULT_{delay}_DELAY")))
    mark, report_delay = env("PTXCONF_FAULT_REPORT_MARK"), float(env("PTXCONF_FAULT_REPORT_DELAY", "0"))
    if mark and report_delay:
        _slowed(report.RunLog, "write_junit", report_delay, mark + ".reports")
        _slowed(session.RunSession, "print_outcome", report_delay, mark + ".printed")
    module_plans = int(env("PTXCONF_FAULT_MODULE_PLANS", "0"))
    if module_plans:
        real_modules = runner.iter_modules

        def small_modules(*args, **kwargs):
            kwargs["max_plans"] = module_plans
            return real_modules(*args, **kwargs)

        runner.iter_modules = small_modules
    ready = env("PTXCONF_FAULT_READY")
    if ready:
        real_install = signals.StopSignals.install

        def install(self):
            done = real_install(self)
            Path(ready).touch()
            return done

        signals.StopSignals.install = install
    return cli.main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
