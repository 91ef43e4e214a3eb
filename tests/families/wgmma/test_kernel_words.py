"""The wgmma and wgmma.sp kernels move every register to and from the words the buffer contract names, whatever
vector width the text uses: C's words into D's registers, A's into A's, D's registers out to their words, the
metadata word into %e, and the image (every word of it) into shared memory; each vector move aligned to its width
in a row whose words keep that alignment.  Every form of both families is rendered (no ptxas, no GPU)."""

from __future__ import annotations

import re

import pytest
from ptxconf.core.family import run_variants_of
from ptxconf.families.wgmma import probe as wg
from ptxconf.families.wgmma.cases import immediate_sets
from ptxconf.families.wgmma_sp import probe as sp
from ptxconf.generators.ptx import global_moves
from ptxconf.isa import load_specs

MOVE = re.compile(r"    (ld|st)\.global(?:\.v(\d))?\.(\w+) (?:(\{[^}]*\}|%\w+), \[(%q\d)\+(\d+)\]|\[(%q\d)\+(\d+)\], (\{[^}]*\}|%\w+));")


@pytest.fixture(scope="module")
def forms():
    specs = load_specs()
    run_variants_of(specs)
    return [v for v in specs.variants.values() if v.family in ("wgmma", "wgmma.sp")]


def moves(src: str, row_bytes: dict[str, int]) -> dict[tuple[str, str], int]:
    """(ld|st, register) -> the word it moves, from every global move of ``src`` (checked aligned on the way)."""
    got: dict[tuple[str, str], int] = {}
    for m in MOVE.finditer(src):
        op, width = m.group(1), int(m.group(2) or 1)
        regs, base, off = (m.group(4), m.group(5), m.group(6)) if op == "ld" else (m.group(9), m.group(7), m.group(8))
        off = int(off)
        assert off % (4 * width) == 0 and row_bytes[base] % (4 * width) == 0, m.group(0)
        for j, reg in enumerate(regs.strip("{}").split(", ")):
            assert (op, reg) not in got, f"{reg} moved twice: {m.group(0)}"
            got[(op, reg)] = off // 4 + j
    return got


def probe_of(v):
    imm = tuple(sorted(immediate_sets(v)[0].items()))
    return sp.SpProbe(v, imm) if v.family == "wgmma.sp" else wg.WgProbe(v, imm)


def test_every_register_moves_its_own_word(forms):
    assert len(forms) > 500  # both families, every form
    for v in forms:
        mod = sp if v.family == "wgmma.sp" else wg
        src = probe_of(v).source()
        iw, ow, nd = mod.in_words(v), mod.out_words(v), mod.d_words(v)
        na = v.operands["A"].words if "A" in v.operands else 0
        got = moves(src, {"%q2": 4 * iw, "%q4": 4 * ow})
        want = {("ld", f"%d{i}"): mod.c_off(v) + i for i in range(nd)}
        want |= {("ld", f"%a{i}"): mod.a_off(v) + i for i in range(na)}
        want |= {("st", f"%d{i}"): i for i in range(nd)}
        if v.family == "wgmma.sp":
            want[("ld", "%e")] = sp.META_WORD
        kept = {k: w for k, w in got.items() if k[1][:2] in ("%d", "%a", "%e")}
        assert kept == want, v.id
        # the image: words img_off .. in_words of the lane's row, 16 bytes a turn, into the lane's slice
        imw, start = iw - mod.img_off(v), mod.img_off(v)
        assert imw % 4 == 0 and 4 * imw * wg.LANES == mod.image_bytes(v), v.id
        for line in (f"    mad.lo.u32 %t10, %t1, {4 * imw}, %t9;", f"    add.u32 %t15, %t10, {4 * imw};",
                     f"    add.s64 %q8, %q2, {4 * start};", "$L_image:", '    .pragma "nounroll";',
                     "    ld.global.v4.b32 {%t11, %t12, %t13, %t14}, [%q8];",
                     "    st.shared.v4.b32 [%t10], {%t11, %t12, %t13, %t14};", "    add.s64 %q8, %q8, 16;",
                     "    add.u32 %t10, %t10, 16;", "    setp.lt.u32 %p1, %t10, %t15;", "    @%p1 bra $L_image;"):
            assert line + "\n" in src, (v.id, line)


@pytest.mark.parametrize("first,row,n,widest,widths", [
    (6, 8, 10, 4, [2, 4, 4]),  # C after the 6 head words, a 16-byte-aligned row
    (6, 8, 10, 2, [2, 2, 2, 2, 2]),  # the same, pairs at most
    (0, 10, 10, 4, [2, 2, 2, 2, 2]),  # D out: a row of 10 words is 8-byte aligned only
    (0, 12, 7, 4, [4, 2, 1]),
    (3, 7, 3, 4, [1, 1, 1]),  # an odd row: one word at a time
])
def test_global_moves_widths(first, row, n, widest, widths):
    regs = [f"%r{i}" for i in range(n)]
    lines = global_moves("ld", "b32", regs, "%q2", first, row, widest)
    assert [int(m.group(2) or 1) for m in map(MOVE.fullmatch, lines)] == widths
    assert moves("\n".join(lines), {"%q2": 4 * row}) == {("ld", r): first + i for i, r in enumerate(regs)}
    st = global_moves("st", "f32", regs, "%q4", first, row, widest)
    assert moves("\n".join(st), {"%q4": 4 * row}) == {("st", r): first + i for i, r in enumerate(regs)}
