"""Probes for the data-movement families: ldmatrix, stmatrix, movmatrix.

Buffer contract (same kernel signature as the mma probes: in, out, order, ncases; one warp
per case; ``[case][lane][word]``):

* words 0..15 of every lane, concatenated lane by lane, are the case's 2048-byte
  shared-memory image (128 rows of 16 bytes); the kernel copies it into its warp's
  shared memory first;
* word 16 is the lane's row address, a byte offset into the image (16-byte aligned);
  lanes the instruction must ignore get a poison offset (misaligned and far outside
  shared memory: it faults if it is ever used);
* stmatrix: words 17.. are the lane's source registers;
* movmatrix: word 0 is ``a``, nothing else.

Out: ldmatrix / movmatrix store their destination registers; stmatrix stores the
image read back from shared memory after the store (so bytes it must not touch are
checked too).

:func:`apply` executes a variant as its spec says (the emulator and the comparator
both use it); nothing here assumes a layout beyond the spec's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from ptxconf.core.plan import CaseSet, variant_rng
from ptxconf.generators.ptx import KeyedProbe, case_prologue
from ptxconf.generators.ptx import module_source as probe_module_source
from ptxconf.spec.arrays import namespace
from ptxconf.spec.model import Variant
from ptxconf.spec.targets import PtxVersion, Target

CASE_STREAM = 0x1D3A  # variant_rng purpose of the case draws

FAMILIES = ("ldmatrix", "stmatrix", "movmatrix")
IMAGE_WORDS = 16  # per lane
IMAGE_BYTES = 32 * IMAGE_WORDS * 4
ROW_BYTES = 16
SLOTS = IMAGE_BYTES // ROW_BYTES
ADDR_WORD = IMAGE_WORDS
POISON = 0x00FFFF08  # misaligned and outside any shared window
SPACES = ("", ".shared", ".shared::cta")


def is_movement(v: Variant) -> bool:
    return v.family in FAMILIES


# --- what the spec says ---------------------------------------------------------------------


def mem_bits(v: Variant) -> int:
    """Width of one element in a memory row (16, 8, 6 or 4)."""
    return v.operands["rowaddr"].type.bits


def registers(v: Variant) -> int:
    op = v.operands["fragment" if "fragment" in v.operands else "d"]
    return op.registers


def in_words(v: Variant) -> int:
    if v.family == "movmatrix":
        return 2
    n = IMAGE_WORDS + 1 + (registers(v) if v.family == "stmatrix" else 0)
    return n + n % 2


def out_words(v: Variant) -> int:
    if v.family == "stmatrix":
        return IMAGE_WORDS
    r = registers(v)
    return r + r % 2


def row_lanes(v: Variant) -> np.ndarray:
    """``int64[matrix, row]``: the lane that supplies each row address."""
    lay = v.operands["rowaddr"].layout
    m = lay.map()[:, 0, :]
    out = np.full((lay.matrices, lay.rows), -1, dtype=np.int64)
    for lane in range(32):
        if m[lane, 0] >= 0:
            out[m[lane, 0], m[lane, 1]] = lane
    return out


def image_bytes(words: Any) -> Any:
    """``uint32[case, lane, >=16]`` -> ``uint8[case, 2048]`` (on the words' array module)."""
    xp = namespace(words)
    w = xp.ascontiguousarray(words[:, :, :IMAGE_WORDS]).astype(xp.uint32)
    return w.reshape(len(w), -1).view(xp.uint8).copy()


def image_words(img: Any) -> Any:
    xp = namespace(img)
    return xp.ascontiguousarray(img).view(xp.uint32).reshape(len(img), 32, IMAGE_WORDS).astype(xp.uint32)


def _read_elem(img: np.ndarray, byte0: np.ndarray, col: Any, bits: int) -> np.ndarray:
    """Element ``col`` (``bits`` wide) of the row starting at ``byte0`` per case (``byte0``, ``col``: ``[case, k]``
    or broadcastable; an address outside the image raises, as an unchecked one would read another case)."""
    xp = namespace(img)
    bit = xp.asarray(col) * bits
    at = byte0 + bit // 8
    lo = xp.take_along_axis(img, at.reshape(len(img), -1), axis=1).astype(xp.uint32)
    hi = xp.take_along_axis(img, xp.minimum(at + 1, IMAGE_BYTES - 1).reshape(len(img), -1), axis=1).astype(xp.uint32)
    val = ((lo | (hi << xp.uint32(8))) >> (bit % 8).reshape(1, -1).astype(xp.uint32)) & xp.uint32((1 << bits) - 1)
    return val.reshape(at.shape)


@dataclass(frozen=True)
class Motion:
    """Where every element of a form comes from, as index tables over (lane, element): what :func:`apply` gathers.

    ``lane``/``col``: for ldmatrix / stmatrix the lane whose row address starts the element's memory row and its
    column in that row; for movmatrix the source lane and source element.  ``reg``/``shift``: the register word
    of the element and its bit offset there (container and value shift)."""

    family: str
    lane: np.ndarray  # int64[32 * elements]
    col: np.ndarray
    reg: np.ndarray
    shift: np.ndarray
    registers: int
    container_bits: int
    mem_bits: int
    out_words: int


def motion(v: Variant) -> Motion:
    op = v.operands["d" if v.family == "movmatrix" else "fragment"]
    E, per, cb = op.layout.elements, op.fragment.per_register, op.fragment.container_bits
    fm = op.layout.map()
    e = np.arange(E)
    reg = np.broadcast_to(e // per, (32, E)).ravel()
    shift = np.broadcast_to(cb * (e % per) + (0 if v.family == "movmatrix" else op.fragment.value_shift), (32, E)).ravel()
    if v.family == "movmatrix":
        am = v.operands["a"].layout.map()
        src = {tuple(am[ln, k]): (ln, k) for ln in range(32) for k in range(v.operands["a"].layout.elements)}
        pairs = np.array([src[tuple(fm[ln, k])] for ln in range(32) for k in range(E)], dtype=np.int64)
        lane, col, bits = pairs[:, 0], pairs[:, 1], cb
    else:
        rl = row_lanes(v)
        lane, col, bits = rl[fm[..., 0], fm[..., 1]].ravel(), fm[..., 2].ravel().astype(np.int64), mem_bits(v)
    return Motion(v.family, lane, col, reg, shift, registers(v), cb, bits, out_words(v))


def _registers(xp: Any, mo: Motion, val: Any, out: Any) -> None:
    """Element values ``[case, 32 * elements]`` into their register words of ``out`` (disjoint bits: a sum is an OR)."""
    n = len(val)
    per = len(mo.reg) // (32 * mo.registers)
    shifted = val.astype(xp.uint32) << xp.asarray(mo.shift, dtype=xp.uint32)
    out[:, :, : mo.registers] = shifted.reshape(n, 32, mo.registers, per).sum(axis=-1, dtype=xp.uint32)


def apply(v: Variant, inw: Any, mo: Motion | None = None) -> Any:
    """Expected out words ``uint32[case, lane, out_words]`` for input words, by the spec, on ``inw``'s array
    module (NumPy, or CuPy for the bulk fuzzer); ``mo``: :func:`motion` of ``v``, where the caller keeps it."""
    xp = namespace(inw)
    mo = mo or motion(v)
    n = len(inw)
    out = xp.zeros((n, 32, mo.out_words), dtype=xp.uint32)
    lane, col = xp.asarray(mo.lane), xp.asarray(mo.col)
    if mo.family == "movmatrix":
        word, half = col // 2, (col % 2) * mo.container_bits
        val = (inw[:, lane, word] >> half.astype(xp.uint32)) & xp.uint32((1 << mo.container_bits) - 1)
        _registers(xp, mo, val, out)
        return out
    start = inw[:, :, ADDR_WORD].astype(xp.int64)[:, lane]  # [case, 32 * elements]
    img = image_bytes(inw)
    if mo.family == "ldmatrix":
        _registers(xp, mo, _read_elem(img, start, col[None, :], mo.mem_bits), out)
        return out
    # stmatrix: each element's bytes into its row (rows are distinct: no two elements write one byte)
    reg = xp.asarray(mo.reg) + (ADDR_WORD + 1)
    shift = xp.asarray(mo.shift, dtype=xp.uint32)
    val = (inw[:, xp.arange(32).repeat(len(mo.lane) // 32), reg] >> shift) & xp.uint32((1 << mo.container_bits) - 1)
    at = start + col[None, :] * (mo.mem_bits // 8) + xp.arange(n, dtype=xp.int64)[:, None] * IMAGE_BYTES
    flat = img.reshape(-1)
    for k in range(mo.mem_bits // 8):
        flat[(at + k).ravel()] = ((val >> xp.uint32(8 * k)) & xp.uint32(0xFF)).astype(xp.uint8).ravel()
    out[:] = image_words(img)
    return out


# --- inputs ----------------------------------------------------------------------------------


def _addresses(v: Variant, rng: np.random.Generator) -> np.ndarray:
    """Per lane: a random distinct 16-byte slot per (matrix, row); poison for ignored lanes."""
    rl = row_lanes(v)
    slots = rng.permutation(SLOTS)[: rl.size].reshape(rl.shape)
    addr = np.full(32, POISON, dtype=np.uint32)
    for (m, r), ln in np.ndenumerate(rl):
        addr[ln] = slots[m, r] * ROW_BYTES
    return addr


def tag_digits(v: Variant) -> tuple[int, int, int]:
    """(tag space, digit bits, digits) of the map check."""
    if v.family == "ldmatrix":
        bits = mem_bits(v)
        space = SLOTS * (8 if bits == 16 else 16)  # every element of the image
    elif v.family == "stmatrix":
        bits = v.operands["fragment"].type.bits
        space = 32 * v.operands["fragment"].layout.elements
    else:
        bits, space = 16, 32 * 2
    digits = max(1, -(-int(np.ceil(np.log2(space))) // bits))
    return space, bits, digits


def make_cases(v: Variant, seed: int, checks: tuple[str, ...], value_cases: int = 8) -> list[CaseSet]:
    rng = variant_rng(v, seed, CASE_STREAM)
    out = []
    want_map = any(c.startswith("map") for c in checks)
    if "value" in checks:
        w = rng.integers(0, 2**32, size=(value_cases, 32, in_words(v)), dtype=np.uint64).astype(np.uint32)
        if v.family != "movmatrix":
            for k in range(value_cases):
                w[k, :, ADDR_WORD] = _addresses(v, rng)
        out.append(CaseSet("value", w))
    if want_map:
        space, bits, digits = tag_digits(v)
        target = "d" if v.family == "movmatrix" else "fragment"
        w = rng.integers(0, 2**32, size=(digits, 32, in_words(v)), dtype=np.uint64).astype(np.uint32)
        tags = np.arange(space, dtype=np.int64)
        mask = (1 << bits) - 1
        if v.family == "ldmatrix":
            addr = _addresses(v, rng)
            nper = space // SLOTS
            for k in range(digits):
                img = image_bytes(w[k : k + 1])
                digit = (tags >> (bits * k)) & mask
                _put_tags(img, nper, bits, digit)
                w[k, :, :IMAGE_WORDS] = image_words(img)[0]
                w[k, :, ADDR_WORD] = addr
        elif v.family == "stmatrix":
            addr = _addresses(v, rng)
            op = v.operands["fragment"]
            per, cb = op.fragment.per_register, op.fragment.container_bits
            for k in range(digits):
                w[k, :, ADDR_WORD] = addr
                w[k, :, ADDR_WORD + 1 :] = 0
                for ln in range(32):
                    for e in range(op.layout.elements):
                        dg = ((ln * op.layout.elements + e) >> (bits * k)) & mask
                        w[k, ln, ADDR_WORD + 1 + e // per] |= np.uint32(dg << (cb * (e % per)))
        else:
            w[:] = 0
            for ln in range(32):
                for e in range(2):
                    w[0, ln, 0] |= np.uint32(((ln * 2 + e) & 0xFFFF) << (16 * e))
        out.append(CaseSet(f"map.{target}", w, meta={"digits": digits, "digit_bits": bits}))
    return out


def _put_tags(img: np.ndarray, nper: int, bits: int, digit: np.ndarray) -> None:
    """Slot s's tag c (``digit[s * nper + c]``, ``bits`` wide) at bit ``c * bits`` of row s (low bit first), the
    other bits of the image kept: every bit in one scatter."""
    b = np.arange(bits)
    at = ((np.arange(SLOTS)[:, None] * ROW_BYTES * 8 + np.arange(nper)[None, :] * bits)[..., None] + b).ravel()
    vals = ((digit[: SLOTS * nper].reshape(SLOTS, nper)[..., None] >> b) & 1).ravel()
    flat = np.unpackbits(img[0], bitorder="little")
    flat[at] = vals
    img[0] = np.packbits(flat, bitorder="little")


# --- kernels ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class MoveProbe(KeyedProbe):
    variant: Variant
    space: str  # "", ".shared", ".shared::cta"

    def key(self) -> str:
        return f"{self.variant.id}|{self.space}"

    @property
    def instruction(self) -> str:
        parts = self.variant.id.split(".")
        if self.variant.family == "movmatrix":
            return self.variant.id
        k = next(i for i, p in enumerate(parts) if i > 3 and p[:1] == "b" and p[1:2].isdigit())
        return ".".join(parts[:k]) + self.space + "." + ".".join(parts[k:])

    def source(self) -> str:
        return kernel_source(self)


def pick_space(v: Variant, rng: np.random.Generator, version: PtxVersion) -> str:
    if v.family == "movmatrix":
        return ""
    spaces = [s for s in SPACES if s != ".shared::cta" or version >= PtxVersion(7, 8)]
    return spaces[int(rng.integers(len(spaces)))]


def kernel_source(p: MoveProbe) -> str:
    v = p.variant
    iw, ow = in_words(v), out_words(v)
    R = registers(v)
    regs = ", ".join(f"%r{i}" for i in range(R))
    L = [
        f".visible .entry {p.name}(",
        "    .param .u64 p_in, .param .u64 p_out, .param .u64 p_order, .param .u32 p_ncases",
        ")",
        "{",
        f"    .reg .b32 %r<{max(R, 1)}>;",
        "    .reg .b32 %t<12>;",
        "    .reg .b64 %q<8>;",
        "    .reg .pred %p0;",
    ]
    if v.family != "movmatrix":
        L.append(f"    .shared .align 16 .b8 smem[{8 * IMAGE_BYTES}];")
    L += case_prologue(32)
    L += [
        f"    mul.wide.u32 %q3, %t6, {iw * 4};",
        "    add.s64 %q2, %q2, %q3;",
        "    ld.param.u64 %q4, [p_out];",
        "    cvta.to.global.u64 %q4, %q4;",
        f"    mul.wide.u32 %q5, %t6, {ow * 4};",
        "    add.s64 %q4, %q4, %q5;",
    ]
    if v.family == "movmatrix":
        L += ["    ld.global.b32 %t7, [%q2];", f"    {v.id} %r0, %t7;", "    st.global.b32 [%q4], %r0;"]
        L += ["$L_done:", "    ret;", "}"]
        return "\n".join(L)
    # warp base in shared memory, this lane's slice of the image
    L += [
        "    mov.u32 %t9, smem;",
        f"    mad.lo.u32 %t9, %t2, {IMAGE_BYTES}, %t9;",
        f"    mad.lo.u32 %t10, %t1, {IMAGE_WORDS * 4}, %t9;",
    ]
    for k in range(IMAGE_WORDS):
        L += [f"    ld.global.b32 %t7, [%q2+{4 * k}];", f"    st.shared.b32 [%t10+{4 * k}], %t7;"]
    L.append("    bar.warp.sync 0xffffffff;")
    L += [f"    ld.global.b32 %t11, [%q2+{ADDR_WORD * 4}];", "    add.u32 %t11, %t9, %t11;"]
    if p.space:
        addr = "%t11"
    else:
        L += ["    cvt.u64.u32 %q6, %t11;", "    cvta.shared.u64 %q6, %q6;"]
        addr = "%q6"
    if v.family == "ldmatrix":
        L.append(f"    {p.instruction} {{{regs}}}, [{addr}];")
        for i in range(R):
            L.append(f"    st.global.b32 [%q4+{4 * i}], %r{i};")
    else:
        for i in range(R):
            L.append(f"    ld.global.b32 %r{i}, [%q2+{(ADDR_WORD + 1 + i) * 4}];")
        L.append(f"    {p.instruction} [{addr}], {{{regs}}};")
        L.append("    bar.warp.sync 0xffffffff;")
        for k in range(IMAGE_WORDS):
            L += [f"    ld.shared.b32 %t7, [%t10+{4 * k}];", f"    st.global.b32 [%q4+{4 * k}], %t7;"]
    L += ["$L_done:", "    ret;", "}"]
    return "\n".join(L)


def module_source(probes: list[MoveProbe], version: PtxVersion, target: Target) -> str:
    return probe_module_source(probes, version, target, kernel_source)
