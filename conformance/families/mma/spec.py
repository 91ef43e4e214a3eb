"""The mma.sync / mma.sp documents: what this family checks of each variant on top of :mod:`ptxconf.isa.loader`
(load-time invariants: operand shapes, and the sparse metadata)."""

from __future__ import annotations

import numpy as np
from ptxconf.isa.model import Variant
from ptxconf.isa.yamlsrc import Source


def check_shapes(v: Variant, path: tuple, src: Source) -> None:
    try:
        m, n, k = v.shape
    except ValueError as exc:
        raise src.error(path + ("instruction",), f"{exc} ({v.id})") from None
    want = {"A": (m, k), "B": (k, n), "C": (m, n), "D": (m, n)}
    sv = v.instruction.scale_vec
    if sv is not None:
        want.update({"scale_A": (m, sv), "scale_B": (sv, n)})
    if "metadata" in v.operands or v.instruction.sparse:
        check_sparse(v, path, src)
        want["A"] = (m, k // 2)  # compressed: the stored half of each row
    for name, (rows, cols) in want.items():
        if name not in v.operands:
            raise src.error(path + ("operands",), f"{v.id} needs operand {name}")
        lay = v.operands[name].layout
        if (lay.rows, lay.cols) != (rows, cols):
            raise src.error(
                path + ("operands", name, "layout"),
                f"{lay.name} is {lay.rows}x{lay.cols} but {v.id} needs {name} {rows}x{cols}",
            )


def check_sparse(v: Variant, path: tuple, src: Source) -> None:
    """mma.sp: a metadata operand of 2-bit fields whose chunks tile K at a legal granularity."""
    m, _, k = v.shape
    if v.instruction.sparse is None or "metadata" not in v.operands:
        raise src.error(path + ("operands",), f"{v.id}: an mma.sp instruction needs a metadata operand and vice versa")
    meta = v.operands["metadata"]
    lay = meta.layout
    if meta.type.bits != 2 or lay.rows != m or lay.cols % 2 or lay.params != ("selector",):
        raise src.error(
            path + ("operands", "metadata"),
            f"{v.id}: metadata must be 2-bit fields over {m} rows x (2 per chunk), with the one parameter selector",
        )
    chunks = lay.cols // 2
    if k % chunks or (k // 2) % chunks or (k // 2) // chunks not in (1, 2, 4):
        raise src.error(path + ("operands", "metadata", "layout"), f"{v.id}: {chunks} chunks per row do not split K={k} at 1:2, 2:4 or 4:8")
    if meta.registers != 1:
        raise src.error(path + ("operands", "metadata"), f"{v.id}: the metadata operand is one .b32 register per lane")
    for combo in meta.param_combinations():
        lanes = np.nonzero(lay.held(combo).any(axis=1))[0]
        quads = {int(x) >> 2 for x in lanes}
        if len(quads) != 8 or len(lanes) != 8 * (lay.cols // 8):
            raise src.error(path + ("operands", "metadata"), f"{v.id}: selector {combo['selector']} must pick the same lanes in each of the 8 quads")
