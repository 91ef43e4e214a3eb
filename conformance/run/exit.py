"""The exit statuses of ``ptxconf`` commands, defined once (the CLI and the run both read them)."""

from __future__ import annotations

import enum
import signal

__all__ = ["ExitStatus"]


class ExitStatus(enum.IntEnum):
    """Why a command ended, as its exit status."""

    OK = 0  # every check passed (or the command did what it was asked)
    FAIL = 1  # a check failed or erred
    USAGE = 2  # a usage or environment problem, said in one line
    NOTHING_RAN = 5  # as pytest: every selected variant was skipped (no GPU, no target)
    INTERRUPTED = 128 + signal.SIGINT  # 130: SIGINT (Ctrl-C)
    TERMINATED = 128 + signal.SIGTERM  # 143: SIGTERM, and SIGHUP (a closed terminal), which is handled as SIGTERM

    @classmethod
    def of_signal(cls, signum: int) -> ExitStatus:
        return cls.INTERRUPTED if signum == signal.SIGINT else cls.TERMINATED
