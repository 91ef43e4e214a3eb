"""Broken spec files are refused with one line: ``file:line: field: message``.

Each case edits a small valid spec (``BASE``) or a copy of specs/mma_sync.yaml
by text replacement, and checks the file, the line of the broken text, the
field path and the gist of the message.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from ptxconf.isa import SpecError, default_specs_dir, load_file, load_specs

BASE = """\
schema: 1
family: mma.sync
document: test
section: "9.7"
bindings:
  groupID: "%laneid >> 2"
  threadID_in_group: "%laneid % 4"
fragments:
  f64: {register: f64, per_register: 1}
  f16: {register: b32, per_register: 2}
layouts:
  t.A:
    maps: "(lane 32, element 1) -> (row 8, col 4)"
    section: "9.7"
    shape: [8, 4]
    elements: 1
    row: "groupID"
    col: "threadID_in_group"
  t.B:
    maps: "(lane 32, element 1) -> (row 4, col 8)"
    section: "9.7"
    shape: [4, 8]
    elements: 1
    row: "threadID_in_group"
    col: "groupID"
  t.A.rot:
    maps: "(lane 32, element 1) -> (row 8, col 4)"
    section: "9.7"
    shape: [8, 4]
    elements: 1
    params: [rot]
    row: "groupID"
    col: "(threadID_in_group + rot) % 4"
  t.CD:
    maps: "(lane 32, element 2) -> (row 8, col 8)"
    section: "9.7"
    shape: [8, 8]
    elements: 2
    row: "groupID"
    col: "(threadID_in_group * 2) + i"
variants:
  - instruction: "mma.sync.aligned.m8n8k4.row.col.{t}.f64.f64.f64"
    section: "9.7"
    min_ptx: "7.0"
    min_target: sm_80
    axes: [{t: f64}]
    operands:
      A: {type: f64, layout: t.A}
      B: {type: f64, layout: t.B}
      C: {type: f64, layout: t.CD}
      D: {type: "{t}", layout: t.CD}
"""

VID = "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64"
REAL = default_specs_dir() / "mma_sync.yaml"


def edit(tmp_path: Path, old: str, new: str, base: str = BASE, name: str = "spec.yaml") -> tuple[Path, str]:
    assert base.count(old) == 1, f"{old!r} must occur once"
    text = base.replace(old, new)
    path = tmp_path / name
    path.write_text(text)
    return path, text


def line_of(text: str, needle: str, nth: int = 1) -> int:
    pos = -1
    for _ in range(nth):
        pos = text.index(needle, pos + 1)
    return text.count("\n", 0, pos) + 1


def refused(path: Path, line: int, field: str, *gist: str) -> str:
    with pytest.raises(SpecError) as info:
        load_file(path)
    msg = str(info.value)
    assert "\n" not in msg
    prefix = f"{path}:{line}: {field}: " if field else f"{path}:{line}: "
    assert msg.startswith(prefix), msg
    for part in gist:
        assert part in msg, msg
    return msg


def test_base_loads(tmp_path):
    path, _ = edit(tmp_path, "schema: 1", "schema: 1")
    specs = load_file(path)
    assert list(specs.variants) == [VID]
    assert set(specs.layouts) == {"t.A", "t.B", "t.A.rot", "t.CD"}


def test_yaml_syntax_error(tmp_path):
    path, text = edit(tmp_path, "    shape: [8, 4]\n    elements: 1\n    row", "    shape: [8, 4]]\n    elements: 1\n    row")
    refused(path, line_of(text, "[8, 4]]"), "", "YAML syntax", "']'")


def test_unknown_top_level_key(tmp_path):
    path, text = edit(tmp_path, "family: mma.sync\n", "family: mma.sync\ncolour: red\n")
    refused(path, line_of(text, "colour"), "colour", "unknown key", "'colour'")


def test_unknown_key_in_layout_and_operand(tmp_path):
    path, text = edit(tmp_path, "    shape: [4, 8]\n", "    shape: [4, 8]\n    colour: 1\n")
    refused(path, line_of(text, "colour"), "layouts.t.B.colour", "unknown key")
    path, text = edit(tmp_path, "A: {type: f64, layout: t.A}", "A: {type: f64, layout: t.A, colour: 1}")
    refused(path, line_of(text, "colour"), "variants[0].operands.A.colour", "unknown key")


def test_missing_required_key_in_layout(tmp_path):
    path, text = edit(tmp_path, "    shape: [4, 8]\n    elements: 1\n", "    shape: [4, 8]\n")
    refused(path, line_of(text, "  t.B:"), "layouts.t.B", "'elements' is missing")


def test_unbalanced_paren_in_row(tmp_path):
    path, text = edit(tmp_path, '    row: "groupID"\n    col: "(threadID_in_group * 2) + i"',
                      '    row: "(groupID"\n    col: "(threadID_in_group * 2) + i"')
    refused(path, line_of(text, '"(groupID"'), "layouts.t.CD.row", "unbalanced '('", "column 9")


def test_slash_in_formula(tmp_path):
    path, text = edit(tmp_path, 'col: "threadID_in_group"\n', 'col: "threadID_in_group / 1"\n')
    refused(path, line_of(text, "/ 1"), "layouts.t.A.col", "'//'", "column 19")


def test_unknown_name_in_formula(tmp_path):
    path, text = edit(tmp_path, '"(threadID_in_group * 2) + i"', '"(threadID_in_grup * 2) + i"')
    refused(path, line_of(text, "grup"), "layouts.t.CD.col", "unknown name(s) threadID_in_grup",
            "known: %laneid, groupID, i, threadID_in_group")


def test_cell_held_twice(tmp_path):
    path, text = edit(tmp_path, '    row: "threadID_in_group"\n    col: "groupID"\n',
                      '    row: "threadID_in_group"\n    col: "groupID % 4"\n')
    refused(path, line_of(text, 'row: "threadID_in_group"'), "layouts.t.B.row",
            "cell (matrix 0, row 0, col 0) is held 2 times", "lane 0 element 0, lane 16 element 0", "expected 1")


def test_cell_missed(tmp_path):
    path, text = edit(tmp_path, '    row: "threadID_in_group"\n    col: "groupID"\n',
                      '    row: "threadID_in_group"\n    col: "groupID"\n    where: "%laneid != 31"\n')
    refused(path, line_of(text, 'row: "threadID_in_group"'), "layouts.t.B.row",
            "cell (matrix 0, row 3, col 7) is held 0 times (by nobody)", "1 cell(s) wrong")


def test_cell_outside_tile(tmp_path):
    path, text = edit(tmp_path, '    col: "groupID"\n', '    col: "groupID + 1"\n')
    refused(path, line_of(text, '"groupID + 1"'), "layouts.t.B.col", "lane 28 element 0 gives col 8, outside 0..7")


def test_unknown_layout_did_you_mean(tmp_path):
    path, text = edit(tmp_path, "C: {type: f64, layout: t.CD}", "C: {type: f64, layout: t.CDD}")
    refused(path, line_of(text, "t.CDD"), "variants[0].operands.C.layout", "unknown layout 't.CDD'",
            "did you mean t.CD?", VID)


def test_type_does_not_fit_container(tmp_path):
    path, text = edit(tmp_path, "C: {type: f64, layout: t.CD}", "C: {type: f64, layout: t.CD, fragment: f16}")
    refused(path, line_of(text, "fragment: f16}"), "variants[0].operands.C",
            ".f64 (64 bits) does not fit a 16-bit container")


def test_elements_do_not_fill_registers(tmp_path):
    path, text = edit(tmp_path, "A: {type: f64, layout: t.A}", "A: {type: f64, layout: t.A, fragment: f16}")
    refused(path, line_of(text, "fragment: f16}"), "variants[0].operands.A", "1 elements do not fill whole b32")


def test_tile_shape_against_instruction(tmp_path):
    path, text = edit(tmp_path, "m8n8k4.row.col", "m8n8k8.row.col")
    refused(path, line_of(text, "A: {type"), "variants[0].operands.A.layout", "t.A is 8x4",
            "needs A 8x8")


def test_instruction_without_shape(tmp_path):
    path, text = edit(tmp_path, "aligned.m8n8k4.row", "aligned.row")
    refused(path, line_of(text, "- instruction"), "variants[0].instruction", "names no .mMnNkK shape")


def test_duplicate_key(tmp_path):
    path, text = edit(tmp_path, '    row: "groupID"\n    col: "threadID_in_group"',
                      '    row: "groupID"\n    row: "groupID"\n    col: "threadID_in_group"')
    refused(path, line_of(text, 'row: "groupID"', nth=2), "layouts.t.A.row", "duplicate key")


def test_template_names_undefined_axis(tmp_path):
    path, text = edit(tmp_path, 'D: {type: "{t}"', 'D: {type: "{tt}"')
    refused(path, line_of(text, "{tt}"), "variants[0].operands.D.type", "template names {tt}, which no axis defines")


def test_params_missing_for_parametrised_layout(tmp_path):
    path, text = edit(tmp_path, "A: {type: f64, layout: t.A}", "A: {type: f64, layout: t.A.rot}")
    refused(path, line_of(text, "t.A.rot}"), "variants[0].operands.A.params",
            "layout t.A.rot takes parameters ['rot'], operand gives []")


def test_params_given_to_plain_layout(tmp_path):
    path, text = edit(tmp_path, "A: {type: f64, layout: t.A}", "A: {type: f64, layout: t.A, params: {rot: [0]}}")
    refused(path, line_of(text, "params: {rot"), "variants[0].operands.A.params", "takes parameters []")


def test_params_given_load(tmp_path):
    path, _ = edit(tmp_path, "A: {type: f64, layout: t.A}", "A: {type: f64, layout: t.A.rot, params: {rot: [0, 1, 2, 3]}}")
    op = load_file(path).get(VID).operands["A"]
    assert op.param_combinations() == [{"rot": r} for r in range(4)]
    assert op.layout.map({"rot": 1})[0, 0].tolist() == [0, 0, 1]


def test_both_min_target_and_targets(tmp_path):
    path, text = edit(tmp_path, "    min_target: sm_80\n", "    min_target: sm_80\n    targets: [sm_90]\n")
    refused(path, line_of(text, "- instruction"), "variants[0]", "give exactly one of min_target or targets")


def test_unknown_target(tmp_path):
    path, _ = edit(tmp_path, "min_target: sm_80", "min_target: sm_81")
    with pytest.raises(SpecError, match=r"spec\.yaml:\d+: variants\[0\]\S*: unknown target 'sm_81'"):
        load_file(path)


def test_bad_type_name(tmp_path):
    path, text = edit(tmp_path, "A: {type: f64, layout: t.A}", "A: {type: f65, layout: t.A}")
    refused(path, line_of(text, "f65"), "variants[0].operands.A.type", "'f65' does not match")


def test_layout_defined_in_two_files(tmp_path):
    edit(tmp_path, "schema: 1", "schema: 1", name="a.yaml")
    path, text = edit(tmp_path, "family: mma.sync", "family: test.other", name="b.yaml")
    with pytest.raises(SpecError) as info:
        load_specs(tmp_path)
    assert str(info.value).startswith(f"{path}:{line_of(text, '  t.A:')}: layouts.t.A: layout defined twice")


def test_empty_directory(tmp_path):
    with pytest.raises(SpecError, match="no \\*.yaml spec files"):
        load_specs(tmp_path)


# --- the real transcription, with the ISA's own typos put back ------------------------------------


def test_real_file_with_isa_paren_typo(tmp_path):
    real = REAL.read_text()
    old = 'else (i * 2) - 2 + threadID_in_group"'
    path, text = edit(tmp_path, old, 'else (i * 2) - 2 + (threadID_in_group"', base=real, name="mma_sync.yaml")
    refused(path, line_of(text, "+ (threadID_in_group"), "layouts.m16n8k16.A.f64.col", "unbalanced '('")


def test_real_file_with_isa_k256_column_error(tmp_path):
    real = REAL.read_text()
    old = 'col: "(threadID_in_group * 32) + (i & 0x1F) if i < 64 else'
    path, text = edit(tmp_path, old, 'col: "(threadID_in_group * 32) + i if i < 64 else', base=real, name="mma_sync.yaml")
    # rows g+8 (a32..a63) land on columns 32t+32.., so column 0 of row 8 is held by nobody
    refused(path, line_of(text, 'row: "groupID if 0 <= i < 32 or 64 <= i < 96'), "layouts.m16n8k256.A.b1.row",
            "cell (matrix 0, row 8, col 0) is held 0 times (by nobody)")


def test_real_file_layout_typo(tmp_path):
    real = REAL.read_text()
    path, text = edit(tmp_path, "A: {type: f16, layout: m16n8k16.A.b16}", "A: {type: f16, layout: m16n8k16.A.b61}",
                      base=real, name="mma_sync.yaml")
    refused(path, line_of(text, "m16n8k16.A.b61"), "variants[2].operands.A.layout",
            "unknown layout 'm16n8k16.A.b61'", "did you mean m16n8k16.A.b16?")


def test_get_typo_did_you_mean():
    specs = load_specs()
    with pytest.raises(KeyError) as info:
        specs.get("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f16")
    msg = info.value.args[0]
    assert "unknown variant" in msg and "did you mean" in msg
    assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in msg
    with pytest.raises(KeyError) as info:
        specs.get("wmma.load")
    assert "did you mean" not in info.value.args[0]


def test_unregistered_family_is_refused_with_the_known_ones(tmp_path):
    path, text = edit(tmp_path, "family: mma.sync", "family: mma.dense")
    with pytest.raises(SpecError, match=r"no registered family owns 'mma.dense'.*known: .*mma.sync") as info:
        load_file(path)
    assert str(info.value).startswith(f"{path}:")
