"""Round trips of ``export layout``: every variant's every operand, exported as a CuTe layout, as
linear-layout bases and as JSON, is evaluated by the small evaluators written here (not the
exporter's own code) and must give back the spec's map, slot for slot.

Forms share work the way the specs do: variants that hold the same layout object under the same
parameters and operand name have the same tile, so each such group is exported once and every
variant is checked to fall in a group that was.  Maps only some slots hold are compared on those
slots, and the form must say the rest are don't-care; where a form does not exist the reason must be
the documented one (wmma's unspecified maps; a register count that is not a power of two).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from ptxconf.cli.main import main
from ptxconf.tools.export.jsonform import validate
from ptxconf.tools.export.layouts import export_layout, operands_of
from ptxconf.tools.export.linear import validate as validate_linear
from ptxconf.tools.export.smem import smem_operands

from tests.tools.export_eval import cute_table, gf2_eval, spec_index

MMA_A = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
WGMMA_SS = "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16/ss"


# --- the groups -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def groups(specs):
    """(layout, params, operand) -> one (variant, operand, params) that has it; and how many variants share it."""
    reps: dict = {}
    for v in specs.variants.values():
        for name in operands_of(v):
            if name not in v.operands:
                continue
            op = v.operands[name]
            for params in op.param_combinations():
                key = (id(op.layout), tuple(sorted(params.items())), name)
                reps.setdefault(key, [v, name, params, 0])[3] += 1
    return reps


def test_every_variant_and_operand_falls_in_an_exported_group(specs, groups):
    seen = sum(n for *_, n in groups.values())
    want = sum(len(v.operands[o].param_combinations()) for v in specs.variants.values() for o in v.operands)
    assert seen == want and len(groups) > 100


def test_cute_round_trip(groups):
    exported, partial = 0, 0
    for v, name, params, _ in groups.values():
        op = v.operands[name]
        want = spec_index(op, name, params)
        out = export_layout(v, name, "cute", params)
        lines = [ln for ln in out.text.splitlines() if not ln.startswith("#") and not ln.startswith("GMMA::")]
        if not (want >= 0).any():  # wmma: the ISA leaves the map unspecified
            assert not lines and "unspecified" in out.missing[0], v.id
            continue
        assert len(lines) == 2 and not out.missing, (v.id, name, out.missing)
        held = want >= 0
        # some slots hold nothing (metadata, scale factors, row addresses): the form says so and gives the rest
        assert held.all() or "don't-care" in out.text, (v.id, name)
        for text in lines:  # the print form and the C++ type
            got = cute_table(text, *want.shape)
            assert np.array_equal(got[held], want[held]), (v.id, name, text)
        exported += 1
        partial += not held.all()
    assert exported > 100 and partial > 10


def test_linear_round_trip(groups):
    exported = 0
    for v, name, params, _ in groups.values():
        op = v.operands[name]
        m = op.layout.map(params or None)
        out = export_layout(v, name, "linear", params)
        assert validate_linear(out.doc) == [], (v.id, name)
        frag = out.doc.get("fragment")
        held = m[..., 0] >= 0
        if frag is None:
            why = out.doc.get("no_linear_form", "")
            n = op.layout.elements
            assert (not held.any() and "unspecified" in why) or (n & (n - 1) and "not a power of two" in why), \
                (v.id, name, why)
            continue
        assert held.all() or "don't-care" in frag["holds"], (v.id, name)
        keep = slice(0, 3) if "matrix" in frag["out_dims"] else slice(1, 3)
        lane = np.arange(op.layout.lanes)[:, None]
        got = gf2_eval(frag["bases"], {"register": np.arange(op.layout.elements)[None, :], "lane": lane % 32,
                                       "warp": lane // 32}, len(frag["out_dims"]))
        assert np.array_equal(got[held], m[..., keep][held]), (v.id, name)
        exported += 1
    assert exported > 50


def test_json_form_is_todays_map_under_its_schema(groups):
    validated = set()
    by_size = sorted(groups.values(), key=lambda g: g[0].operands[g[1]].layout.map(g[2] or None).size)
    for v, name, params, _ in by_size:
        op = v.operands[name]
        doc = export_layout(v, name, "json", params).doc
        if (v.family, name) not in validated:  # the schema once per family and operand, smallest map first (slow)
            validated.add((v.family, name))
            assert validate(doc) == [], (v.id, name)
        m, held = op.layout.map(params or None), op.layout.held(params or None)
        pick = slice(0, 3) if op.layout.matrices > 1 else slice(1, 3)
        lanes, elems = np.nonzero(held)
        want = np.concatenate([lanes[:, None], elems[:, None], m[lanes, elems][:, pick]], axis=1)
        got = np.asarray(doc["fragment"]["map"], dtype=np.int64).reshape(-1, want.shape[1])
        assert np.array_equal(got, want) and doc["fragment"]["params"] == params, (v.id, name)


def test_json_map_equals_specs_show(capsys):
    assert main(["specs", "show", MMA_A, "--operand", "A", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert main(["export", "layout", MMA_A, "--operand", "A", "--as", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["fragment"]["map"] == shown["map"] and doc["schema"] == "ptxconf-layout/1"


def _isa_swizzled_byte(major: str, width: int, bits: int, row: int, col: int, operand: str) -> int:
    """The byte the ISA puts element (row, col) of a swizzle atom at: 8 rows of ``width`` bytes, then the XOR of
    address bits [7, 7+b) into [4, 4+b) (PTX ISA 9.2 §9.7.15.5.1.2)."""
    mn, k = (col, row) if operand == "B" else (row, col)
    if major == "K":
        byte = mn * width + k * bits // 8
    else:
        byte = k * width + mn * bits // 8
    b = (width // 16).bit_length() - 1
    return byte ^ (((byte >> 7) & ((1 << b) - 1)) << 4)


def test_wgmma_smem_atoms_under_every_swizzle(specs):
    seen = set()
    for v in specs.variants.values():
        for name in smem_operands(v):
            doc = export_layout(v, name, "linear").doc
            if name not in {k[0] for k in seen}:
                assert validate_linear(doc) == [], v.id
            atoms = doc["smem"]
            majors = {a["major"] for a in atoms}
            assert {a["swizzle"] for a in atoms} == {"none", "32B", "64B", "128B"} and "K" in majors
            for a in atoms:
                key = (name, a["major"], a["swizzle"], a["element_bits"])
                if key in seen:
                    continue
                seen.add(key)
                width = a["swizzle_bytes"] or 16
                cells = gf2_eval(a["bases"], {"offset": np.arange(a["in_dims"]["offset"])}, 2)
                for off, (row, col) in enumerate(cells.tolist()):
                    assert _isa_swizzled_byte(a["major"], width, a["element_bits"], row, col, name) == \
                        off * a["element_bits"] // 8, (v.id, key, off)
                assert len({tuple(c) for c in cells.tolist()}) == len(cells)  # one-to-one onto the atom
    # A and B: K-major for the 1-, 8-, 16- and 32-bit types, MN-major for the 16-bit ones (imm-trans), four swizzles
    assert len(seen) == 2 * (4 + 1) * 4


def test_headline_forms_written_literally(specs):
    """The README's worked examples, as data."""
    cute = export_layout(specs.get(MMA_A), "A", "cute").text.splitlines()
    assert cute[2] == "((4,8),(2,2,2)):((32,1),(16,8,128))"
    lin = export_layout(specs.get(MMA_A), "A", "linear").doc["fragment"]["bases"]
    assert lin == {"register": [[0, 1], [8, 0], [0, 8]], "lane": [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]]}
    sw128 = next(a for a in export_layout(specs.get(WGMMA_SS), "A", "linear").doc["smem"]
                 if a["major"] == "K" and a["swizzle"] == "128B")
    assert sw128["bases"]["offset"] == [[0, 1], [0, 2], [0, 4], [0, 8], [0, 16], [0, 32], [1, 8], [2, 16], [4, 32]]
