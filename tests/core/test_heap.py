"""A worker keeps its freed memory: a large block freed and made again comes from its heap, no pages faulted in."""

from __future__ import annotations

import subprocess
import sys

import pytest

CHILD = """
import resource, sys
import numpy as np
from ptxconf.core.heap import keep_freed_memory
try:
    from numpy._core.multiarray import _set_madvise_hugepage
except ImportError:  # NumPy 1.x
    from numpy.core.multiarray import _set_madvise_hugepage
_set_madvise_hugepage(False)  # 4 KiB pages, so the faults count the pages
kept = keep_freed_memory() if sys.argv[1] == "keep" else None
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
rounds = []
for _ in range(3):
    f0 = faults()
    a = np.ones(48 << 17)  # 48 MiB: above the C library's largest threshold of its own (32 MiB)
    del a
    rounds.append(faults() - f0)
print(kept, *rounds)
"""


def _rounds(mode: str) -> tuple[str, list[int]]:
    out = subprocess.run([sys.executable, "-c", CHILD, mode], capture_output=True, text=True, check=True).stdout.split()
    return out[0], [int(x) for x in out[1:]]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mallopt is the GNU C library's (Linux)")
def test_a_large_block_made_again_comes_from_the_heap():
    kept, keep = _rounds("keep")
    _, plain = _rounds("plain")
    pages = (48 << 20) // 4096
    assert kept == "True"
    assert all(n > pages // 2 for n in plain), f"the C library's own thresholds fault every round in: {plain}"
    assert keep[0] > pages // 2 and max(keep[1:]) < pages // 20, f"kept: faulted once, then reused: {keep}"
