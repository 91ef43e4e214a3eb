"""Starting a GPU worker's process, as early as a command may: this module imports the standard library only.

A run's first step waits for its first GPU worker to have CUDA ready (about 0.9 s on the H100 host when a run's four
lanes start theirs at once), and a worker was started only once the command's own modules were imported (0.36 s
there) and its backend was made.  ``ptxconf run`` on a likely GPU (:func:`gpu_likely`) starts device 0's first worker
before it imports anything else (:func:`start_early`); the backend that would start it takes it instead
(:func:`claim`).  One that no backend takes is ended when the command exits.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import os
import re
import subprocess
import sys
from multiprocessing.connection import Connection, Pipe

__all__ = ["DRIVER_NODES", "Worker", "start", "start_early", "claim", "gpu_likely", "visible_gpus", "parse_devices"]

# The NVIDIA driver's control node (Linux, and a container given GPUs) and WSL's GPU node: where one is there and
# PyCUDA is installed, a GPU is worth a worker's try.
DRIVER_NODES = ("/dev/nvidiactl", "/dev/dxg")


def gpu_likely(nodes: tuple[str, ...] | None = None) -> bool:
    """PyCUDA installed and a driver node there (``nodes``, default :data:`DRIVER_NODES`), found without importing
    PyCUDA or starting CUDA (a cuInit is 0.5 s of a process, on a GPU host)."""
    nodes = DRIVER_NODES if nodes is None else nodes
    try:
        found = importlib.util.find_spec("pycuda") is not None
    except (ImportError, ValueError):  # a broken install: the full check says how
        return False
    return found and any(os.path.exists(node) for node in nodes)


def visible_gpus(dev: str = "/dev") -> int | None:
    """How many GPUs CUDA will see, told without starting it (``--devices all`` started CUDA in the run's own process
    to count them, 0.4 s before any GPU worker started, on a two-GPU host): the driver's GPU nodes (``/dev/nvidia0``,
    ...).  None where they cannot tell: ``CUDA_VISIBLE_DEVICES`` set (it chooses among them), or no node (WSL).  A
    guess: the first GPU worker's answer (its ``cuda_devices``) checks it."""
    if os.environ.get("CUDA_VISIBLE_DEVICES") is not None:
        return None
    try:
        names = os.listdir(dev)
    except OSError:
        return None
    return sum(1 for name in names if re.fullmatch(r"nvidia\d+", name)) or None


def parse_devices(text: str, count: int) -> list[int]:
    """``all``, ``N`` (the first N) or ``0,2`` -> CUDA ordinals; ValueError naming what is wrong."""
    text = text.strip()
    if count <= 0:
        raise ValueError("no CUDA device is visible")
    if text == "all":
        return list(range(count))
    if text.isdigit() and "," not in text and int(text) > 1:
        ids = list(range(int(text)))
    else:
        try:
            ids = [int(x) for x in text.split(",") if x.strip()]
        except ValueError:
            raise ValueError(f"{text!r}: give all, a count, or device ordinals such as 0,1") from None
    bad = [i for i in ids if not 0 <= i < count]
    if not ids or bad:
        raise ValueError(f"{text!r}: {count} device(s) visible (ordinals 0..{count - 1})")
    return ids


class Worker:
    """The GPU worker: a fresh interpreter that imports only what it runs (:mod:`._cuda_worker`), on one end of a
    pipe.  Not a ``multiprocessing`` spawn: that imports the parent's main module and this package's whole
    ``__init__`` chain first, and the worker began serving 1.3 s after it was started on a busy 32-core host (0.6 s
    more to start CUDA).  ``kill``, ``join`` and ``is_alive`` as a process object has them."""

    def __init__(self, conn: Connection, device: int):
        code = "import sys; from ptxconf.backends._cuda_worker import main; main(*map(int, sys.argv[1:]))"
        self._popen = subprocess.Popen([sys.executable, "-c", code, str(conn.fileno()), str(device), str(os.getpid())],
                                       pass_fds=(conn.fileno(),), stdin=subprocess.DEVNULL)
        self.pid = self._popen.pid

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            self._popen.kill()

    def join(self, timeout: float | None = None) -> None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._popen.wait(timeout)

    def is_alive(self) -> bool:
        return self._popen.poll() is None


def start(device: int) -> tuple[Worker, Connection]:
    """A worker for ``device`` and this process's end of its pipe."""
    parent, child = Pipe()
    worker = Worker(child, device)
    child.close()
    return worker, parent


_EARLY: dict[int, tuple[Worker, Connection]] = {}  # started before a backend asked (:func:`start_early`)


def start_early(device: int = 0) -> bool:
    """Start ``device``'s worker now, for the backend that will ask (:func:`claim`); whether one was started (only
    where a GPU is likely)."""
    if device in _EARLY or not gpu_likely():
        return False
    if not _EARLY:
        atexit.register(_end_unclaimed)
    _EARLY[device] = start(device)
    return True


def claim(device: int) -> tuple[Worker, Connection] | None:
    """The worker started early for ``device``, taken (once), or None."""
    return _EARLY.pop(device, None)


def _end_unclaimed() -> None:
    """Workers no backend took (the command stopped before it made one): ended with the command."""
    while _EARLY:
        worker, conn = _EARLY.popitem()[1]
        conn.close()
        worker.kill()
        worker.join(5)
