"""wgmma's shared-memory layouts under every swizzle, as XOR-linear bases (and CuTe swizzle atoms).

A swizzle atom is the smallest tile a swizzle mode repeats: 8 rows of the swizzle width W bytes
(16 for ``none``), rows along MN for K-major matrices, along K for MN-major ones.  Its input
dimension is ``offset``, the element index from the atom's (repeat-aligned) start; its outputs
are the operand's (row, col), A as M x K and B as K x N like the register fragments.  The
address of each element comes from the spec's own offset and swizzle formulas
(:class:`ptxconf.families.wgmma.spec.SmemSpec`) with the canonical strides, so the bases are the
spec's, not a second statement of it.  Larger tiles repeat the atom at the LBO/SBO strides of
the descriptor; an instruction's K may use only part of an atom's width.

Which operands sit in shared memory, and in which major-ness, is read from the variant (B always;
A unless it comes from registers; MN-major only where the form takes imm-trans).  The family
exposes no hook for this, so the module reads wgmma's public spec objects directly.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from ptxconf.families.wgmma import canonical_strides
from ptxconf.isa.ptxtypes import TYPES

from .linear import LinearLayout, fit_flat

__all__ = ["smem_operands", "atom_coords", "atom_layout", "smem_atoms"]


def smem_operands(v: Any) -> tuple[str, ...]:
    """The operands ``v`` reads from shared memory through a matrix descriptor (none: not a wgmma form)."""
    if getattr(getattr(v, "doc", None), "smem", None) is None:
        return ()
    return ("B",) if v.a_src == "registers" else ("A", "B")


def _majors(v: Any, operand: str) -> tuple[str, ...]:
    smem = v.doc.smem
    return tuple(smem.major_of(t) for t in ((0, 1) if v.can_transpose(operand) else (0,)))


def _bits(v: Any, operand: str) -> int:
    return int(TYPES[v.atype if operand == "A" else v.btype].bits)


def atom_coords(smem: Any, major: str, swizzle: str, bits: int) -> tuple[np.ndarray, tuple[int, int]]:
    """int64[offset, 2] of (mn, k) at each element offset of the atom, and its (mn, k) extents."""
    width = smem.width(swizzle)
    along = width * 8 // bits
    mn_ext, k_ext = (8, along) if major == "K" else (along, 8)
    lbo, sbo = canonical_strides(major, swizzle, width, bits, mn_ext, k_ext)
    mn, k = np.meshgrid(np.arange(mn_ext), np.arange(k_ext), indexing="ij")
    addr = smem.addresses(major, swizzle, 0, mn, k, bits, lbo, sbo, 0)
    inner = (k if major == "K" else mn) * bits % 8  # bit position inside the byte (sub-byte types)
    offset = (addr * 8 + inner) // bits
    n = mn_ext * k_ext
    table = np.full((n, 2), -1, dtype=np.int64)
    if offset.min() < 0 or offset.max() >= n or len(np.unique(offset)) != n:
        raise ValueError(f"{major}-major {swizzle} atom of {bits}-bit elements is not one-to-one onto {n} offsets")
    table[offset.ravel()] = np.stack([mn.ravel(), k.ravel()], axis=1)
    return table, (mn_ext, k_ext)


def atom_layout(smem: Any, operand: str, major: str, swizzle: str, bits: int) -> tuple[LinearLayout, dict]:
    """The atom as ``offset -> (row, col)`` bases, with what describes it."""
    table, (mn_ext, k_ext) = atom_coords(smem, major, swizzle, bits)
    if operand == "B":  # B is K x N: row = k, col = mn
        coords, out = table[:, ::-1].copy(), {"row": k_ext, "col": mn_ext}
    else:
        coords, out = table, {"row": mn_ext, "col": k_ext}
    layout = fit_flat(coords, {"offset": len(coords)}, out, name=lambda x: f"offset {x}")
    width = smem.width(swizzle)
    head = {"major": major, "swizzle": swizzle, "swizzle_bytes": width if swizzle != "none" else 0,
            "element_bits": bits, "bytes": len(coords) * bits // 8,
            "cute": cute_atom(major, swizzle, width, bits)}
    return layout, head


def cute_atom(major: str, swizzle: str, width: int, bits: int) -> str:
    """CuTe's name and text of the same atom (``Swizzle<B,4,3>`` on byte addresses, over the element layout)."""
    b = 0 if swizzle == "none" else (width // 16).bit_length() - 1
    along = width * 8 // bits
    name = {"none": "INTER", "32B": "SW32", "64B": "SW64", "128B": "SW128"}.get(swizzle, swizzle)
    shape = f"(8,{along}):({along},1)" if major == "K" else f"({along},8):(1,{along})"
    return f"GMMA::Layout_{major}_{name}_Atom<{bits}-bit>: Sw<{b},4,3> o {shape} over (MN, K)"


_ATOMS: dict[tuple, tuple[Any, list[dict]]] = {}


def smem_atoms(v: Any, operand: str) -> list[dict]:
    """Every (major-ness, swizzle) atom of ``operand`` of ``v``, as linear-layout documents (one evaluation per
    distinct atom: thousands of forms share a few dozen)."""
    smem = v.doc.smem
    key = (id(smem), operand, _majors(v, operand), _bits(v, operand))
    hit = _ATOMS.get(key)
    if hit is None:
        out = []
        for major in key[2]:
            for swizzle in smem.swizzles:
                layout, head = atom_layout(smem, operand, major, swizzle, key[3])
                out.append(layout.doc(**head))
        hit = _ATOMS[key] = (smem, out)  # the spec object is kept alive, so its id stays its own
    return [dict(a) for a in hit[1]]
