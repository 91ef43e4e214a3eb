"""The ptxconf CLI in a child process, slowed down on request so that a test can kill or signal it at a chosen point.

Run as ``python tests/faults/fault_driver.py run ...`` (the arguments of ``ptxconf``).  Environment:

* ``PTXCONF_FAULT_PLAN_DELAY``: seconds slept before each variant is planned (a long planning phase);
* ``PTXCONF_FAULT_VERDICT_DELAY``: seconds slept before each variant's verdicts are written (a slow GPU);
* ``PTXCONF_FAULT_MODULE_PLANS``: variants per module (many small modules, as a whole-suite run has);
* ``PTXCONF_FAULT_MODULE_DELAY``: seconds slept before each module is launched (a slow build or launch).

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
    from ptxconf.cli.main import main as cli_main

    return cli_main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
