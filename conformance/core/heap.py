"""How a worker process of a run keeps its freed memory.

A plan or a comparison makes and drops arrays of megabytes, hundreds of times a second per worker.  With the C
library's defaults each one is a fresh mapping from the kernel, its pages faulted in and zeroed, and each free gives
them back: system time spent on the same memory again and again.  A worker raises the thresholds once, so large
blocks come from its heap and stay there once freed.
"""

from __future__ import annotations

import ctypes
import sys

__all__ = ["keep_freed_memory", "MMAP_THRESHOLD", "TRIM_THRESHOLD"]

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # <malloc.h>
MMAP_THRESHOLD = 256 << 20  # blocks below this come from the heap
TRIM_THRESHOLD = 1 << 30  # free memory at the heap's top kept up to this


def keep_freed_memory() -> bool:
    """Large blocks from the heap, kept once freed (glibc's ``mallopt``); whether the C library took it.  Measured on
    the 2-core host, planning 1/6 of the wgmma forms in two workers: system time 0.84-0.94 -> 0.62-0.75 s, the whole
    3-11% less CPU."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # a C library without it (musl): its own defaults stay
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
