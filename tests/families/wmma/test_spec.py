"""specs/wmma.yaml: every form LLVM's wmma generator lists, the ISA's validity rules, and file:line errors."""

from __future__ import annotations

import collections
from pathlib import Path

import pytest
import yaml
from ptxconf.families.wmma.spec import WmmaSpec
from ptxconf.isa.loader import SpecError, load_file
from ptxconf.isa.targets import PtxVersion

SPEC = Path(__file__).resolve().parents[3] / "specs" / "wmma.yaml"


@pytest.fixture(scope="module")
def spec() -> WmmaSpec:
    return load_file(SPEC).documents["wmma"]


def _ids(spec: WmmaSpec, op: str) -> list[str]:
    return [v.id for v in spec.variants if v.op == op]


def test_counts(spec):
    counts = collections.Counter(v.op for v in spec.variants)
    assert counts == {"load": 88, "store": 26, "mma": 186}
    groups = collections.Counter(v.group for v in spec.variants if v.op == "mma")
    assert groups == {"f16": 96, "integer": 48, "f64": 20, "bf16": 12, "tf32": 4, "sub-byte": 4, "single-bit": 2}
    assert len({v.id for v in spec.variants}) == 300


def test_the_four_missing_groups(spec):
    ids = set(_ids(spec, "mma"))
    assert "wmma.mma.sync.aligned.col.row.m16n16k8.f32.tf32.tf32.f32" in ids
    assert "wmma.mma.sync.aligned.row.col.m8n8k32.s32.s4.s4.s32.satfinite" in ids
    assert "wmma.mma.and.popc.sync.aligned.row.col.m8n8k128.s32.b1.b1.s32" in ids
    assert "wmma.mma.sync.aligned.row.row.m8n8k4.rz.f64.f64.f64.f64" in ids
    assert "wmma.mma.sync.aligned.row.row.m8n8k4.f64.f64.f64.f64" in ids
    # sub-byte: row.col only, A loads row-major, B loads column-major
    assert not any("m8n8k32" in i and ".row.col." not in i for i in ids)
    loads = set(_ids(spec, "load"))
    assert "wmma.load.a.sync.aligned.row.m8n8k32.s4" in loads and "wmma.load.a.sync.aligned.col.m8n8k32.s4" not in loads
    assert "wmma.load.b.sync.aligned.col.m8n8k128.b1" in loads and "wmma.load.b.sync.aligned.row.m8n8k128.b1" not in loads


def test_registers_per_fragment(spec):
    v = {x.id: x for x in spec.variants}
    regs = {n: o.registers for n, o in v["wmma.mma.sync.aligned.row.col.m8n32k16.f32.bf16.bf16.f32"].operands.items()}
    assert regs == {"A": 2, "B": 8, "C": 8, "D": 8}
    regs = {n: (o.registers, o.fragment.register) for n, o in v["wmma.mma.sync.aligned.col.col.m8n8k4.rn.f64.f64.f64.f64"].operands.items()}
    assert regs == {"A": (1, "f64"), "B": (1, "f64"), "C": (2, "f64"), "D": (2, "f64")}
    assert v["wmma.load.a.sync.aligned.row.m32n8k16.u8"].operands["A"].registers == 4
    assert v["wmma.store.d.sync.aligned.col.m16n16k16.f16"].operands["D"].registers == 4


def test_versions_and_targets(spec):
    v = {x.id: x for x in spec.variants}
    sat = v["wmma.mma.sync.aligned.row.col.m16n16k16.f32.f16.satfinite"]
    assert sat.valid_for("sm_75", "6.4") is None and "removed" in sat.valid_for("sm_75", "6.5")
    andp = v["wmma.mma.and.popc.sync.aligned.row.col.m8n8k128.s32.b1.b1.s32"]
    assert andp.min_ptx == PtxVersion(7, 1) and andp.valid_for("sm_75") is not None
    # .aligned on wmma needs PTX 6.3 (ptxas says so; at 6.2 the H100 driver's JIT killed the process)
    assert v["wmma.load.c.sync.aligned.row.m16n16k16.f32"].min_ptx == PtxVersion(6, 3)  # f16 block, not bf16 (7.0)
    assert v["wmma.load.a.sync.aligned.row.m8n32k16.f16"].min_ptx == PtxVersion(6, 3)
    assert all(x.min_ptx >= PtxVersion(6, 3) for x in spec.variants)
    assert [t.name for t in v["wmma.load.a.sync.aligned.row.m16n16k8.tf32"].requires] == ["sm_80"]


def test_storage(spec):
    assert spec.leading("a", "row", "m32n8k16") == 16 and spec.leading("a", "col", "m32n8k16") == 32
    # the ISA's alignment rule, where the default stride allows it (see the errata)
    assert spec.row_alignment("a", "f16", "m16n16k16", "row") == 32
    assert spec.row_alignment("b", "f16", "m32n8k16", "row") == 16
    assert [s for _, s, _ in spec.state_spaces] == ["", ".global", ".shared", ".shared::cta"]


def test_listed_by_specs_list(capsys, tmp_path):
    from ptxconf.cli.main import main

    (tmp_path / "wmma.yaml").write_text(SPEC.read_text())
    assert main(["specs", "list", "--specs", str(tmp_path), "--json", "--select", "wmma*"]) == 0
    import json

    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 300 and {r["family"] for r in rows} == {"wmma"}
    mma = next(r for r in rows if r["id"] == "wmma.mma.sync.aligned.row.col.m16n16k16.f16.f32")
    assert mma["operands"]["A"] == {"type": "f16", "layout": "wmma.a.m16n16k16.f16", "registers": 8, "register_type": "b32"}


def _broken(tmp_path, edit) -> SpecError:
    doc = yaml.safe_load(SPEC.read_text())
    edit(doc)
    path = tmp_path / "wmma.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    with pytest.raises(SpecError) as err:
        load_file(path)
    return err.value


@pytest.mark.parametrize("edit, field, words", [
    (lambda d: d["fragments"][0]["registers"].update(m16n16k16=3), "fragments[0].registers.m16n16k16", "whole number"),
    (lambda d: d["fragments"][3].update(per_register=3), "fragments[3].per_register", "does not fill"),
    (lambda d: d["mma"][0]["shapes"].append("m9n9k9"), "mma[0].shapes[3]", "unknown shape"),
    (lambda d: d["mma"][2]["atype"].append("f16"), "mma[2].shapes[0]", "no fragment"),
    (lambda d: d["mma"][5]["layouts"].append(["col", "col"]), "mma[5].layouts", "ldst_layouts"),
    (lambda d: d["mma"][1].update(requires=["sm_81"]), "mma[1].requires[0]", "unknown target"),
    (lambda d: d["shapes"]["m8n8k4"].update(k=8), "shapes.m8n8k4", "disagree"),
    (lambda d: d["storage"].update(stride="bytes"), "storage.stride", ""),
    (lambda d: d["mma"][0].update(satfinite={"max_ptx": "six"}), "mma[0].satfinite.max_ptx", ""),
])
def test_bad_spec_names_file_line_field(tmp_path, edit, field, words):
    err = _broken(tmp_path, edit)
    text = str(err)
    assert text.startswith(f"{tmp_path / 'wmma.yaml'}:") and err.line, text
    assert field in text and words in text, text


def test_bad_spec_exits_2(tmp_path, capsys):
    from ptxconf.cli.main import main

    _broken(tmp_path, lambda d: d["fragments"][0]["registers"].update(m16n16k16=3))
    assert main(["specs", "list", "--specs", str(tmp_path)]) == 2
    assert "registers.m16n16k16" in capsys.readouterr().err
