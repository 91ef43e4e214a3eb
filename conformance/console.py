"""The ``ptxconf`` console command: signals taken before anything heavy is imported.

The CLI's imports (the spec model, NumPy, YAML, the registry) take about half a second, and until
:mod:`ptxconf.cli.main` takes the signals a Ctrl-C there would be a ``KeyboardInterrupt`` traceback and a
SIGTERM or SIGHUP a death by signal.  This module imports only the standard library first: SIGINT, SIGTERM and
SIGHUP end the command at once (exit 130/143, nothing written: no command has begun) until the CLI is loaded, then
the handlers there were are put back and the CLI takes its own (``run`` first thing).  In-process callers keep
calling :func:`ptxconf.cli.main.main`.
"""

from __future__ import annotations

import os
import signal
import sys

__all__ = ["main", "ONE_BLAS_THREAD"]

_EARLY = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


_left: list[int] = []  # the exit status a signal asked for while the CLI was loading


def _leave(signum: int, frame: object) -> None:
    _left.append(128 + signum if signum == signal.SIGINT else 128 + signal.SIGTERM)  # SIGHUP as SIGTERM
    raise SystemExit(_left[-1])


def _early_devices(argv: list[str]) -> list[int]:
    """The GPUs whose first worker ``ptxconf run`` is worth starting before the CLI is imported, read from the words
    alone (``--backend`` auto or pycuda, no help asked): device 0, or each GPU ``--devices`` names (``all`` as the
    driver's nodes count them, :func:`~ptxconf.backends._spawn.visible_gpus`).  The run waits for the first worker
    of each of its GPUs; their later lanes' workers start with the run.  None where the words say no GPU, or where
    ``--devices`` is not what it takes (the CLI says so)."""
    if not argv or argv[0] != "run" or any(a in ("-h", "--help") for a in argv):
        return []
    backend, devices = "auto", None
    for i, a in enumerate(argv):
        for name in ("--backend", "--devices"):
            if a == name and i + 1 < len(argv):
                value = argv[i + 1]
            elif a.startswith(name + "="):
                value = a.split("=", 1)[1]
            else:
                continue
            if name == "--backend":
                backend = value
            else:
                devices = value.strip()
    if backend not in ("auto", "pycuda"):
        return []
    if devices is None:
        return [0]
    from ptxconf.backends._spawn import parse_devices, visible_gpus

    count = visible_gpus()
    try:  # without the nodes' count: GPU 0 for ``all``, and the ordinals as named
        ids = parse_devices(devices, count or (1 if devices == "all" else 1 << 16))
    except ValueError:
        return []
    return list(dict.fromkeys(ids))


# A run spreads its work over processes, each one core's share (lanes, plan and compare workers, GPU workers); a BLAS
# thread pool in each of them (NumPy's OpenBLAS starts one thread per core) only oversubscribes the cores.  Set before
# NumPy is first imported, and inherited by every process the run starts; a value the user set is kept.  Measured on
# one H200 host with 16 cores, a warm suite alternated three times: process walls 6.49-7.23 s against 7.09-7.78 s,
# 65.8-74.2 user CPU-s against 71.8-83.6, the first module made 0.42-0.57 s into the run against 0.79-1.07 s.
ONE_BLAS_THREAD = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def _one_blas_thread(argv: list[str]) -> None:
    """``ptxconf run``'s processes: one BLAS thread each, unless the environment says otherwise."""
    if argv and argv[0] == "run":
        for name in ONE_BLAS_THREAD:
            os.environ.setdefault(name, "1")


def main() -> int:
    """``ptxconf`` from the shell: the CLI, loaded with the signals already taken.  ``ptxconf run`` on a likely GPU
    starts the first worker of each of its GPUs first (:mod:`ptxconf.backends._spawn`): they start CUDA while the CLI
    is imported and the specs load.  ``ptxconf run``'s processes take one BLAS thread each (:data:`ONE_BLAS_THREAD`)."""
    previous = {s: signal.signal(s, _leave) for s in _EARLY if signal.getsignal(s) is not signal.SIG_IGN}
    _one_blas_thread(sys.argv[1:])  # before the early GPU worker starts, and before NumPy is imported
    for device in _early_devices(sys.argv[1:]):
        from ptxconf.backends._spawn import start_early

        start_early(device)
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
