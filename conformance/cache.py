"""Where the suite keeps what it can make again: compiled modules, parsed specs.

Everything under it is keyed by the inputs that made it, so a stale entry is never read; deleting
the folder costs only time.  ``$PTXCONF_CACHE`` moves it (a benchmark's cold run points it at an
empty folder).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_root"]


def cache_root() -> Path:
    root = os.environ.get("PTXCONF_CACHE")
    return Path(root) if root else Path.home() / ".cache" / "ptx-conformance"
