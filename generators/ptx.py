"""PTX module framing shared by every probe family: one module, many kernels, one case contract.

A probe kernel of any family takes ``in``, ``out``, ``order`` and ``ncases``; group ``w`` of
threads (a warp, a warpgroup, a CTA) takes case ``order[w]``.  The framing, the case prologue
and the harmless surroundings live here so that no family writes them twice.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from ptxconf.isa.targets import PtxVersion, Target

__all__ = ["Surroundings", "KeyedProbe", "case_prologue", "checksum", "global_moves", "module_source", "rendered"]


@dataclass(frozen=True)
class Surroundings:
    """Harmless code around the instruction, chosen by seed."""

    chain: bool = False
    extra_regs: int = 0
    salt: int = 0  # extra register k holds lane * 0x9E3779B1 + salt + k


class KeyedProbe:
    """A probe of another family: kernel name hashed from ``key``, no surroundings."""

    def key(self) -> str:
        raise NotImplementedError

    @property
    def name(self) -> str:
        return "probe_" + hashlib.sha256(self.key().encode()).hexdigest()[:16]

    @property
    def surroundings(self) -> Surroundings:
        return Surroundings()


def case_prologue(lanes: int) -> list[str]:
    """PTX that maps a thread to its case and lane (the probe contract), for groups of ``lanes`` threads.

    Leaves the lane in %t1, the slot in %t8, ``case * lanes + lane`` in %t6, the
    global ``in`` base in %q2; exits the group when its slot is past ``ncases``.
    """
    shift = lanes.bit_length() - 1
    return [
        "    mov.u32 %t0, %tid.x;",
        f"    and.b32 %t1, %t0, {lanes - 1};",
        f"    shr.u32 %t2, %t0, {shift};",
        "    mov.u32 %t3, %ntid.x;",
        f"    shr.u32 %t3, %t3, {shift};",
        "    mov.u32 %t4, %ctaid.x;",
        "    mad.lo.u32 %t8, %t4, %t3, %t2;",
        "    ld.param.u32 %t5, [p_ncases];",
        "    setp.ge.u32 %p0, %t8, %t5;",
        "    @%p0 bra $L_done;",
        "    ld.param.u64 %q0, [p_order];",
        "    cvta.to.global.u64 %q0, %q0;",
        "    mul.wide.u32 %q1, %t8, 4;",
        "    add.s64 %q0, %q0, %q1;",
        "    ld.global.u32 %t6, [%q0];",
        f"    mad.lo.u32 %t6, %t6, {lanes}, %t1;",
        "    ld.param.u64 %q2, [p_in];",
        "    cvta.to.global.u64 %q2, %q2;",
    ]


def global_moves(op: str, ty: str, regs: list[str], base: str, first_word: int, row_words: int,
                 widest: int = 4) -> list[str]:
    """``ld``/``st`` (``op``) of registers ``regs`` to or from consecutive 32-bit words of global memory from
    ``base`` + word ``first_word`` on, as vector moves of up to ``widest`` (4 or 2) registers wherever the address
    is aligned to the vector (the row at ``base`` is aligned to its ``row_words`` words, up to 16 bytes), one
    register at a time elsewhere: the same words in the same registers as one move per register, in a quarter
    to half of the instructions, which ptxas assembles in less time."""
    align = next(w for w in (4, 2, 1) if w <= widest and row_words % w == 0)
    out, i = [], 0
    while i < len(regs):
        word = first_word + i
        w = next(w for w in (4, 2, 1) if w <= align and word % w == 0 and i + w <= len(regs))
        group = regs[i] if w == 1 else "{" + ", ".join(regs[i : i + w]) + "}"
        vec = "" if w == 1 else f".v{w}"
        addr = f"[{base}+{4 * word}]"
        out.append(f"    ld.global{vec}.{ty} {group}, {addr};" if op == "ld" else f"    st.global{vec}.{ty} {addr}, {group};")
        i += w
    return out


def checksum(lanes: np.ndarray, s: Surroundings) -> np.ndarray:
    """The checksum word the probe stores after D, computed on the host."""
    acc = np.zeros_like(lanes, dtype=np.uint64)
    for k in range(s.extra_regs):
        acc ^= (lanes.astype(np.uint64) * np.uint64(0x9E3779B1) + np.uint64(s.salt + k)) & np.uint64(0xFFFFFFFF)
    return acc.astype(np.uint32)


def module_source(probes: list, version: PtxVersion, target: Target, kernel: Callable) -> str:
    """One PTX module holding every probe (duplicates by name emitted once); ``kernel`` renders one probe."""
    seen: dict[str, str] = {}
    for p in probes:
        if p.name not in seen:
            seen[p.name] = rendered(p, kernel)
    head = [f".version {version}", f".target {target.name}", ".address_size 64", ""]
    return "\n".join(head + [src + "\n" for src in seen.values()])


_RENDERED = "_rendered"  # a probe's attribute: (the renderer's name, the kernel text it rendered)


def rendered(p, kernel: Callable) -> str:
    """``kernel(p)``, kept on the probe: a run renders each kernel where its plan is made (a worker process), and the
    text travels with the probe to the process that builds the module (rendering there took a quarter of that
    process's CPU per wgmma plan).  Kept under the renderer's qualified name, so another renderer never reads it."""
    who = f"{getattr(kernel, '__module__', '')}.{getattr(kernel, '__qualname__', '<?>')}"
    kept = getattr(p, "__dict__", {}).get(_RENDERED)
    if kept is not None and kept[0] == who:
        return kept[1]
    text = kernel(p)
    if "<" not in who and hasattr(p, "__dict__"):  # a lambda or a local function: its name names no one renderer
        object.__setattr__(p, _RENDERED, (who, text))
    return text
