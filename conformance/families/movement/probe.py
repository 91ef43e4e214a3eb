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

import numpy as np
from ptxconf.core.plan import CaseSet, variant_rng
from ptxconf.generators.ptx import KeyedProbe, case_prologue
from ptxconf.generators.ptx import module_source as probe_module_source
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


def image_bytes(words: np.ndarray) -> np.ndarray:
    """``uint32[case, lane, >=16]`` -> ``uint8[case, 2048]``."""
    w = np.ascontiguousarray(words[:, :, :IMAGE_WORDS], dtype="<u4")
    return w.reshape(len(w), -1).view(np.uint8).copy()


def image_words(img: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(img).view("<u4").reshape(len(img), 32, IMAGE_WORDS).astype(np.uint32)


def _read_elem(img: np.ndarray, byte0: np.ndarray, col: int, bits: int) -> np.ndarray:
    """Element ``col`` (``bits`` wide) of the row starting at ``byte0`` per case."""
    bit = col * bits
    cases = np.arange(len(img))
    lo = img[cases, byte0 + bit // 8].astype(np.uint32)
    hi = img[cases, np.minimum(byte0 + bit // 8 + 1, IMAGE_BYTES - 1)].astype(np.uint32)
    return ((lo | (hi << 8)) >> (bit % 8)) & ((1 << bits) - 1)


def _write_elem(img: np.ndarray, byte0: np.ndarray, col: int, bits: int, val: np.ndarray) -> None:
    assert bits in (8, 16)
    cases = np.arange(len(img))
    for k in range(bits // 8):
        img[cases, byte0 + col * bits // 8 + k] = (val >> (8 * k)) & 0xFF


def _frag(v: Variant):
    op = v.operands["fragment"]
    return op, op.layout.map()


def apply(v: Variant, inw: np.ndarray) -> np.ndarray:
    """Expected out words ``uint32[case, lane, out_words]`` for input words, by the spec."""
    ncase = len(inw)
    out = np.zeros((ncase, 32, out_words(v)), dtype=np.uint32)
    if v.family == "movmatrix":
        a, d = v.operands["a"], v.operands["d"]
        am, dm = a.layout.map(), d.layout.map()
        src = {tuple(am[ln, e]): (ln, e) for ln in range(32) for e in range(a.layout.elements)}
        cb = a.fragment.container_bits
        for ln in range(32):
            for e in range(d.layout.elements):
                sl, se = src[tuple(dm[ln, e])]
                val = (inw[:, sl, se // 2] >> (cb * (se % 2))) & 0xFFFF
                out[:, ln, e // 2] |= (val << (cb * (e % 2))).astype(np.uint32)
        return out
    op, fm = _frag(v)
    rl = row_lanes(v)
    addr = inw[:, :, ADDR_WORD].astype(np.int64)
    img = image_bytes(inw)
    bits = mem_bits(v)
    cb, shift, per = op.fragment.container_bits, op.fragment.value_shift, op.fragment.per_register
    for ln in range(32):
        for e in range(op.layout.elements):
            m, r, c = fm[ln, e]
            start = addr[:, rl[m, r]]
            if v.family == "ldmatrix":
                val = _read_elem(img, start, c, bits)
                out[:, ln, e // per] |= (val << (cb * (e % per) + shift)).astype(np.uint32)
            else:
                val = (inw[:, ln, ADDR_WORD + 1 + e // per] >> (cb * (e % per))) & ((1 << cb) - 1)
                _write_elem(img, start, c, bits, val)
    if v.family == "stmatrix":
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
                for s in range(SLOTS):
                    for c in range(nper):
                        _put(img, s * ROW_BYTES, c, bits, int(digit[s * nper + c]))
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


def _put(img: np.ndarray, byte0: int, col: int, bits: int, val: int) -> None:
    bit = byte0 * 8 + col * bits
    for b in range(bits):
        byte, off = divmod(bit + b, 8)
        if (val >> b) & 1:
            img[0, byte] |= np.uint8(1 << off)
        else:
            img[0, byte] &= np.uint8(0xFF ^ (1 << off))


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
