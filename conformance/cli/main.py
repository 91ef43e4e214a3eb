"""``ptxconf``: list and draw specs, run the suite, replay recorded runs, assemble with ptxas.

The CLI only wires layers together; each command's work lives in its layer.
Errors for people: a bad spec prints ``file:line: field: message``; an unknown
variant prints "did you mean"; a usage or environment error is one line on stderr and
exit status 2, checked before any work where it can be (:mod:`ptxconf.cli.preflight`).

Commands are registered one way: every module of :data:`COMMANDS`, and every family
(``Family.add_cli``), is handed the same :class:`Commands` and adds its verbs to it; every group of verbs, its
own or another module's (``specs where``), is ``commands.group(NAME)`` (no module makes argparse subparsers itself).
"""

from __future__ import annotations

import argparse
import importlib
import sys

from ptxconf import __version__, registry
from ptxconf.isa import SpecError
from ptxconf.run.exit import ExitStatus
from ptxconf.run.signals import StopSignals

from .preflight import OPTIONAL_PACKAGES, leaf_parser, preflight

EXIT_USAGE = ExitStatus.USAGE

# Every module that adds commands: one line each (families add theirs through the registry).
COMMANDS = (
    "ptxconf.cli.specs",
    "ptxconf.cli.run",
    "ptxconf.cli.assemble",
    "ptxconf.tools.bench",
    "ptxconf.cli.discover",
    "ptxconf.cli.docs",
    "ptxconf.tools.hgemm.cli",
    "ptxconf.cli.numerics",
    "ptxconf.cli.diff",
    "ptxconf.cli.fuzz",
    "ptxconf.cli.toolchains",
    "ptxconf.cli.programs",
    "ptxconf.cli.cache",
    "ptxconf.cli.export",
)


class OneLineParser(argparse.ArgumentParser):
    """argparse's errors in one line ("PROG: error: ..., see PROG --help"), exit status 2."""

    def error(self, message: str):
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


class Commands:
    """Where a module or a family adds its commands: ``add_parser`` as argparse's, and ``group(NAME)`` for the
    verbs of a command group (made by the first module that asks, found by every later one)."""

    def __init__(self, action: argparse._SubParsersAction):
        self._action = action
        self._groups: dict[str, Commands] = {}

    def add_parser(self, name: str, **kwargs) -> argparse.ArgumentParser:
        return self._action.add_parser(name, **kwargs)

    def group(self, name: str, **kwargs) -> Commands:
        if name not in self._groups:
            parser = self._action.add_parser(name, **kwargs)
            self._groups[name] = Commands(parser.add_subparsers(dest=f"{name.replace('-', '_')}_command", required=True))
        return self._groups[name]


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="ptxconf", description=__doc__.splitlines()[0])
    p.add_argument("--version", action="version", version=f"ptxconf {__version__}")
    commands = Commands(p.add_subparsers(dest="command", required=True))
    for module in COMMANDS:
        importlib.import_module(module).add_parser(commands)
    for fam in registry.families():
        fam.add_cli(commands)
    return p


def _missing_package(exc: ModuleNotFoundError) -> str | None:
    top = (exc.name or "").partition(".")[0]
    return OPTIONAL_PACKAGES.get(top) and f"ptxconf: this needs {top}: install {OPTIONAL_PACKAGES[top]}"


def main(argv: list[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    # ``run`` takes its signals first, before the parser (0.6 s of imports): a signal at any moment is a clean stop.
    stop = StopSignals().install() if words[:1] == ["run"] else None
    try:
        return _main(words, stop)
    finally:
        if stop is not None:
            stop.release()  # after the last report


def _main(argv: list[str], stop: StopSignals | None) -> int:
    from ptxconf.backends.base import BackendError
    from ptxconf.backends.ptxas import PtxasNotFound
    from ptxconf.core.safe_files import UntrustedFileError

    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # named by the command they were given to, not by the root
        leaf_parser(parser, args).error(f"unrecognized arguments: {' '.join(extra)}")
    args.argv, args.stop = argv, stop
    try:
        preflight(parser, args)
        return args.func(args)
    except SpecError as exc:
        print(f"ptxconf: {exc}", file=sys.stderr)
    except UntrustedFileError as exc:  # a file of a run directory someone handed over
        print(f"ptxconf: {exc}", file=sys.stderr)
    except (BackendError, PtxasNotFound) as exc:
        print(f"ptxconf: {str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__}", file=sys.stderr)
    except ModuleNotFoundError as exc:
        line = _missing_package(exc)
        if line is None:
            raise
        print(line, file=sys.stderr)
    except SystemExit as exc:  # a command's usage or environment error: its one line, exit 2
        if isinstance(exc.code, str):
            print(exc.code, file=sys.stderr)
            return EXIT_USAGE
        raise
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:  # Ctrl-C before a command took the signal (``run`` takes it first thing)
        return ExitStatus.INTERRUPTED
    return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
