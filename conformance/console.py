"""The ``ptxconf`` console command: signals taken before anything heavy is imported.

The CLI's imports (the spec model, NumPy, YAML, the registry) take about half a second, and until
:mod:`ptxconf.cli.main` takes the signals a Ctrl-C there would be a ``KeyboardInterrupt`` traceback and a
SIGTERM or SIGHUP a death by signal.  This module imports only the standard library first: SIGINT, SIGTERM and
SIGHUP end the command at once (exit 130/143, nothing written: no command has begun) until the CLI is loaded, then
the handlers there were are put back and the CLI takes its own (``run`` first thing).  In-process callers keep
calling :func:`ptxconf.cli.main.main`.
"""

from __future__ import annotations

import signal
import sys

__all__ = ["main"]

_EARLY = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


_left: list[int] = []  # the exit status a signal asked for while the CLI was loading


def _leave(signum: int, frame: object) -> None:
    _left.append(128 + signum if signum == signal.SIGINT else 128 + signal.SIGTERM)  # SIGHUP as SIGTERM
    raise SystemExit(_left[-1])


def main() -> int:
    """``ptxconf`` from the shell: the CLI, loaded with the signals already taken."""
    previous = {s: signal.signal(s, _leave) for s in _EARLY if signal.getsignal(s) is not signal.SIG_IGN}
    hook = sys.unraisablehook

    def unraisable(what) -> None:  # our own exit, raised where it cannot propagate: no traceback for it
        if not (_left and isinstance(what.exc_value, SystemExit)):
            hook(what)

    sys.unraisablehook = unraisable
    try:
        from ptxconf.cli.main import main as cli_main
    finally:
        sys.unraisablehook = hook
        for s, handler in previous.items():
            signal.signal(s, handler)
    if _left:  # the SystemExit was raised inside a callback the import machinery runs (a module lock's), which
        raise SystemExit(_left[0])  # swallows it: seen once in CI, the command then ran to the end and exited 0
    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
