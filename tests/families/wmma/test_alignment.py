"""Every generated case keeps wmma strides and bases where the hardware takes them (specs/wmma.yaml errata).

The rule: each row/column start a multiple of 16 bytes (and of the fragment size where the default
stride allows it), each matrix base a multiple of 32 bytes; strides and bases still vary per case.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from ptxconf.backends.emulator import EmulatorBackend
from ptxconf.families.wmma.memory import as_bytes, header, matrix_span
from ptxconf.families.wmma.observe import forms, words_per_lane
from ptxconf.isa.loader import load_file
from ptxconf.isa.ptxtypes import TYPES
from ptxconf.oracle import mma
from ptxconf.run.runner import plan_variant

SPEC = Path(__file__).resolve().parents[3] / "specs" / "wmma.yaml"
DOC = load_file(SPEC)
FORMS = list(DOC.variants.values())
BACKEND = EmulatorBackend(mma, cc=(9, 0))


def _check_case(spec, mv, routes, hdr, in_bytes: int, out_bytes: int, slots) -> list[str]:
    bad = []
    lay = {"a": mv.layout_of("a"), "b": mv.layout_of("b"), "c": routes[hdr[0]][0], "d": routes[hdr[0]][1]}
    for k, m in enumerate("abcd"):
        t, shape = mv.type_of(m), mv.shape_name
        ld, off, bits = int(hdr[1 + k]), int(hdr[5 + k]), TYPES[t].bits
        row = spec.row_alignment(m, t, shape, lay[m])
        if row < 16 or row % 16:
            bad.append(f"{m}: row alignment {row}")
        if (ld * bits) % (8 * row) or ld < spec.leading(m, lay[m], shape):
            bad.append(f"{m}: stride {ld} ({ld * bits / 8} bytes) is not a {row}-byte multiple >= the leading dimension")
        base = spec.base_alignment(m, t, shape)
        frag = spec.frag(m, t, shape).bytes
        if off % 32 or off % base or off % frag:
            bad.append(f"{m}: base offset {off} is not a multiple of 32 and of the fragment ({frag})")
        end = off + matrix_span(spec, mv, m, lay[m], ld)
        limit = out_bytes if m == "d" else (slots[k + 1] if k < 2 else in_bytes)
        if (m != "d" and off < slots[k]) or end > limit:
            bad.append(f"{m}: bytes {off}..{end} leave its slot")
    return bad


def test_every_case_of_every_form_meets_the_alignment_rule():
    bad, strides, offsets = [], {}, {}
    for v in FORMS:
        for seed in (0, 1):
            plan = plan_variant(v, seed, BACKEND.cc_for(v), BACKEND.max_ptx(), value_cases=2)
            p = plan.probe
            in_bytes, out_bytes = 128 * p.size.in_words, 128 * p.size.out_words
            # regions (global per case, shared per warp) start at multiples of 256 bytes
            assert in_bytes % 256 == 0 and out_bytes % 256 == 0 and p.warp_bytes % 256 == 0
            for hdr in header(plan.in_words):
                bad += [f"{v.id} seed {seed}: {b}" for b in _check_case(v.doc, p.mma, p.routes, hdr, in_bytes, out_bytes,
                                                                       p.size.slots)]
                strides.setdefault(v.id, set()).add(tuple(int(x) for x in hdr[1:5]))
                offsets.setdefault(v.id, set()).add(tuple(int(x) for x in hdr[5:9]))
    assert not bad, bad[:10]
    assert set(strides) == {v.id for v in FORMS}  # every form still covered
    # inputs still vary: strides and bases differ between cases for (nearly) every form
    assert sum(len(s) > 1 for s in strides.values()) >= 0.9 * len(FORMS)
    assert sum(len(s) > 1 for s in offsets.values()) >= 0.9 * len(FORMS)


def test_the_forms_that_faulted_now_take_16_byte_rows():
    spec = FORMS[0].doc
    assert spec.row_alignment("a", "b1", "m8n8k128", "row") == 16
    assert spec.row_alignment("a", "s8", "m8n32k16", "col") == 16
    assert spec.min_stride("a", "s8", "m8n32k16", "col") == 16  # default 8 (8 bytes) is padded to 16
    assert spec.row_alignment("c", "s32", "m8n8k128", "col") == 16  # an 8-byte fragment: 16, not 8
    assert spec.row_alignment("a", "f16", "m16n16k16", "row") == 32  # the fragment size where it fits
    assert {spec.base_alignment(m, v.type_of(m), v.shape_name) for v in FORMS if v.op == "mma" for m in "abcd"} == {32}


@pytest.mark.parametrize("form", forms(FORMS[0].doc), ids=lambda f: f.id)
def test_observation_probes_meet_the_alignment_rule(form):
    for k in range(3):
        pad = k * form.pad_unit()
        stride_bits = form.stride(pad) * form.bits
        assert stride_bits % 128 == 0 and form.stride(pad) >= form.spec.leading(form.frag, form.layout, form.shape)
        row = form.spec.row_alignment(form.frag, form.type, form.shape, form.layout)
        assert stride_bits % (8 * row) == 0
        # each case's image (and so its base) starts at a multiple of 256 bytes
        assert (32 * words_per_lane(form, pad) * 4) % 256 == 0


def test_header_offsets_are_bytes_of_the_in_image():
    plan = plan_variant(FORMS[0], 0, BACKEND.cc_for(FORMS[0]), BACKEND.max_ptx(), value_cases=1)
    img = as_bytes(plan.in_words)
    assert img.shape[1] == 128 * plan.probe.size.in_words
    assert math.gcd(*(int(x) for x in header(plan.in_words)[0, 5:8])) % 32 == 0
    assert np.all(header(plan.in_words)[:, 5:8] < img.shape[1])
