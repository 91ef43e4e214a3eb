"""Planning in worker processes: each variant's plan is a function of (seed, variant) alone, so
the plans can be made on every core and come back in order.

Workers are forked from the run's process, so they hold the same specs; a plan travels back
pickled, with every variant named by its id instead of copied (a wgmma variant carries its
whole spec document), and the parent puts its own variant object back in.
"""

from __future__ import annotations

import io
import multiprocessing as mp
import pickle
import signal
from collections.abc import Callable, Iterable, Iterator
from typing import Any

__all__ = ["plan_in_parallel"]

_STATE: dict[str, Any] = {}


class _Pickler(pickle.Pickler):
    def persistent_id(self, obj: Any) -> str | None:
        vid = getattr(obj, "id", None)
        if isinstance(vid, str) and _STATE["variants"].get(vid) is obj:
            return vid
        return None


class _Unpickler(pickle.Unpickler):
    def __init__(self, data: bytes, variants: dict[str, Any]):
        super().__init__(io.BytesIO(data))
        self.variants = variants

    def persistent_load(self, pid: str) -> Any:
        return self.variants[pid]


def _quiet() -> None:
    """Signals are the parent's: a Ctrl-C reaches the whole process group, and the parent decides."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


def _plan(item: tuple[str, tuple[int, int]]) -> bytes:
    vid, cc = item
    plan = _STATE["plan"](_STATE["variants"][vid], cc)
    buf = io.BytesIO()
    _Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL).dump(plan)
    return buf.getvalue()


def plan_in_parallel(jobs: int, plan: Callable[[Any, tuple[int, int]], Any], variants: dict[str, Any],
                     items: Iterable[tuple[str, tuple[int, int]]]) -> Iterator[Any]:
    """``plan(variant, cc)`` of each of ``items`` ((variant id, compute capability)), in order, made by
    ``jobs`` forked workers (which inherit ``plan`` and the variants: nothing of them is pickled)."""
    _STATE.update(plan=plan, variants=variants)
    with mp.get_context("fork").Pool(jobs, initializer=_quiet) as pool:
        for data in pool.imap(_plan, items, chunksize=4):
            yield _Unpickler(data, variants).load()
