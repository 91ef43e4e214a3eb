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

import os
import sys
import time


def main() -> int:
    from ptxconf.run import report, runner

    plan_delay = float(os.environ.get("PTXCONF_FAULT_PLAN_DELAY", "0"))
    verdict_delay = float(os.environ.get("PTXCONF_FAULT_VERDICT_DELAY", "0"))
    module_plans = int(os.environ.get("PTXCONF_FAULT_MODULE_PLANS", "0"))
    module_delay = float(os.environ.get("PTXCONF_FAULT_MODULE_DELAY", "0"))
    if module_delay:
        real_module = runner.launch_module

        def slow_module(*args, **kwargs):
            time.sleep(module_delay)
            return real_module(*args, **kwargs)

        runner.launch_module = slow_module
    if plan_delay:
        real_plan = runner.plan_variant

        def slow_plan(*args, **kwargs):
            time.sleep(plan_delay)
            return real_plan(*args, **kwargs)

        runner.plan_variant = slow_plan
    if verdict_delay:
        real_add = report.RunLog.add_verdicts

        def slow_add(self, *args, **kwargs):
            time.sleep(verdict_delay)
            return real_add(self, *args, **kwargs)

        report.RunLog.add_verdicts = slow_add
    if module_plans:
        real_modules = runner.iter_modules

        def small_modules(*args, **kwargs):
            kwargs["max_plans"] = module_plans
            return real_modules(*args, **kwargs)

        runner.iter_modules = small_modules
    _slow_start_and_end()
    from ptxconf.cli.main import main as cli_main

    return cli_main(sys.argv[1:])


def _slow_start_and_end() -> None:
    import importlib
    from pathlib import Path

    from ptxconf.run import report, session, signals

    cli = importlib.import_module("ptxconf.cli.main")  # the module (``ptxconf.cli.main`` is also its function's name)

    ready = os.environ.get("PTXCONF_FAULT_READY")
    if ready:
        real_install = signals.StopSignals.install

        def install(self):
            done = real_install(self)
            Path(ready).touch()
            return done

        signals.StopSignals.install = install
    start_delay = float(os.environ.get("PTXCONF_FAULT_START_DELAY", "0"))
    if start_delay:
        real_specs = cli._specs

        def slow_specs(args):
            time.sleep(start_delay)
            return real_specs(args)

        cli._specs = slow_specs
    mark, report_delay = os.environ.get("PTXCONF_FAULT_REPORT_MARK"), float(os.environ.get("PTXCONF_FAULT_REPORT_DELAY", "0"))
    if mark and report_delay:
        for owner, name, which in ((report.RunLog, "write_junit", ".reports"), (session.RunSession, "print_outcome", ".printed")):
            real = getattr(owner, name)

            def slow(self, *args, _real=real, _which=which, **kwargs):
                Path(mark + _which).touch()
                time.sleep(report_delay)
                return _real(self, *args, **kwargs)

            setattr(owner, name, slow)


if __name__ == "__main__":
    sys.exit(main())
