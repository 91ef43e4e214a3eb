"""Layouts in their users' own terms, and the measured truth as a dataset.

``tile``: an operand's spec map as a (thread, value) -> tile index table; ``cute``: that table as
CuTe shape:stride; ``linear``: as linear-layout bases over GF(2); ``smem``: wgmma's shared-memory
swizzle atoms as XOR-linear bases; ``jsonform``: the map as a versioned JSON document; ``check``:
a user's layout against the spec and the recorded hardware map; ``vectors``: recorded numerics
cases and observed lane maps as NPZ plus a JSON manifest.

Every format carries a schema name with its version (``FORMATS``); a change that alters what an
old reader would read bumps the version.
"""

from __future__ import annotations

FORMATS = {
    "cute": "ptxconf-cute/1",
    "linear": "ptxconf-linear/1",
    "json": "ptxconf-layout/1",
    "vectors": "ptxconf-vectors/1",
}

__all__ = ["FORMATS"]
