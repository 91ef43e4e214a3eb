"""The neighbourhood of the specs (forms one step from a spec form), the SASS reader, the must-reject cases of
specs/refuse.yaml and the ``refuse`` check, the matrix's "lowered to", and tcgen05.ld.red's transcription."""

from __future__ import annotations

import csv
import gzip
import io
import json
import shutil

import pytest
from ptxconf.cli.main import main
from ptxconf.isa import load_specs, parse_target
from ptxconf.isa.targets import PtxVersion
from ptxconf.isa.yamlsrc import SpecError, load_yaml
from ptxconf.tools.toolchains import neighbourhood as nb
from ptxconf.tools.toolchains import neighbourhood_report as nr
from ptxconf.tools.toolchains import refuse as rf
from ptxconf.tools.toolchains import sass
from ptxconf.tools.toolchains.matrix import Stats

HAVE_PTXAS = shutil.which("ptxas") is not None
M8N8K4 = "mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32"
E4M3 = "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32"


def _have_sass() -> bool:
    try:
        sass.find_cuobjdump()
    except sass.SassUnavailable:
        return False
    return True


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("PTXCONF_CACHE", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def specs():
    return load_specs()


def test_token_classes_and_steps_down():
    assert [nb.token_class(t) for t in ("m16n8k16", "m8n8", "bf16", "e4m3", "b8x16", "b4x16_p64", "row", "satfinite",
                                        "kind::f8f6f4")] == ["shape", "shape", "type", "type", "type", "type", "layout",
                                                             "qualifier", "qualifier"]
    assert nb.version_below(PtxVersion(8, 0)) == PtxVersion(7, 8)
    assert nb.version_below(PtxVersion(9, 0)) == PtxVersion(8, 8)
    assert nb.version_below(PtxVersion(6, 0)) is None
    known = ("sm_75", "sm_80", "sm_89", "sm_90", "sm_90a", "sm_100a")
    assert nb.target_below(parse_target("sm_90a"), known) == "sm_90"
    assert nb.target_below(parse_target("sm_80"), known) == "sm_75"
    assert nb.target_below(parse_target("sm_75"), known) is None


def test_neighbours_are_one_step_and_never_a_spec_form(specs):
    forms = [specs.variants[M8N8K4], specs.variants["mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f16"],
             specs.variants["mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"]]
    mma = [v for v in specs.variants.values() if v.family == "mma.sync"]
    ns = nb.neighbours(forms, ("sm_62", "sm_70", "sm_75", "sm_80", "sm_90", "sm_90a"), universe=mma)
    ids = {n.id: n for n in ns}
    assert not set(ids) & set(specs.variants)
    # m8n8k4 with one bf16 operand, one type step away
    bf16 = ids["mma.sync.aligned.m8n8k4.row.col.f32.bf16.f16.f32"]
    assert (bf16.step, bf16.change, bf16.base) == ("type", "f16->bf16", M8N8K4)
    assert ids["mma.sync.m8n8k4.row.col.f32.f16.f16.f32"].step == "drop"
    assert ids["mma.aligned.sync.m8n8k4.row.col.f32.f16.f16.f32"].step == "reorder"
    assert ids["mma.sync.aligned.m16n8k16.row.col.f32.f16.bf16.f32"].step == "type"
    assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" not in ids  # a spec form, though not among the bases
    assert f"{M8N8K4} @.version 6.3" in ids and ids[f"{M8N8K4} @.version 6.3"].version == PtxVersion(6, 3)
    assert ids[f"{M8N8K4} @sm_62"].target == "sm_62"  # m8n8k4 needs sm_70
    steps = {n.step for n in ns}
    assert steps == set(nb.STEPS) - {"add"} or steps == set(nb.STEPS)
    every_other = nb.neighbours(forms, ("sm_75", "sm_80"), reorders=3, universe=mma)
    assert 0 < sum(n.step == "reorder" for n in every_other) < sum(n.step == "reorder" for n in ns)


def test_a_neighbour_kernel_holds_the_changed_instruction(specs):
    v = specs.variants[M8N8K4]
    text, name = nb.kernel_of(v, PtxVersion(8, 0), parse_target("sm_90a"))
    i, op = nb.instruction_line(text, v)
    assert op == M8N8K4 and name in text and op in text.splitlines()[i]


def test_matrix_ops_reads_matrix_instructions_only():
    text = """
        /*0050*/                   HFMA2.MMA R3, -RZ, RZ, 0, 0 ;
        /*0060*/                   HMMA.16816.F32 R4, R8, R12, R4 ;
        /*0070*/              @!P0 HMMA.16816.F32 R4, R8, R12, R4 ;
        /*0080*/                   LDSM.16.M88.4 R8, [R2] ;
        /*0090*/                   STG.E desc[UR4][R2.64], R5 ;
        /*00a0*/                   UTCQMMA.2CTA gdesc[UR4], gdesc[UR6], tmem[UR8], tmem[UR10], idesc[UR11], UPT ;
    """
    assert sass.matrix_ops(text) == ("HMMA.16816.F32", "LDSM.16.M88.4", "UTCQMMA.2CTA")
    assert sass.lowered(()) == "none" and sass.lowered(("A", "B")) == "A+B"


def _campaign() -> nb.Campaign:
    ns = [nb.Neighbour("mma.sync.aligned.m8n8k4.row.col.f32.bf16.f16.f32", "mma.sync.aligned.m8n8k4.row.col.f32.bf16.f16.f32",
                       M8N8K4, "type", "f16->bf16", "mma.sync"),
          nb.Neighbour("mma.sync.m8n8k4.row.col.f32.f16.f16.f32", "mma.sync.m8n8k4.row.col.f32.f16.f16.f32", M8N8K4,
                       "drop", "-.aligned", "mma.sync"),
          nb.Neighbour(f"{M8N8K4} @.version 6.3", M8N8K4, M8N8K4, "version", "6.4->6.3", "mma.sync",
                       version=PtxVersion(6, 3))]
    camp = nb.Campaign(ns, ["sm_80", "sm_90a"], ["13.0.88", "13.5.37"], stats=Stats())
    for r in camp.releases:
        camp.cells[r, "sm_80", 0] = nb.Cell("E", sass="none", version="8.0")
        camp.cells[r, "sm_90a", 0] = nb.Cell("E", sass="none", version="8.0")
        camp.cells[r, "sm_80", 1] = nb.Cell("R", message="Illegal modifier '.m8n8k4' for instruction 'mma'")
        camp.cells[r, "sm_90a", 1] = nb.Cell("U" if r == "13.5.37" else "R", sass="HMMA.884.F32.STEP0",
                                             message="" if r == "13.5.37" else "Unknown modifier '.x'")
        camp.cells[r, "sm_70", 2] = nb.Cell("R", message="Feature '.m8n8k4' requires PTX ISA .version 6.4 or later")
    return camp


def test_report_files_and_the_pinned_refusals(tmp_path, specs):
    doc = nr.write_outputs(tmp_path, _campaign(), command="ptxconf toolchains neighbourhood", wall_s=1.0, forms=1,
                           forms_note="test")
    assert set(nr.FILES) <= {p.name for p in tmp_path.iterdir()}
    assert doc["codes"]["E"] == 4 and doc["codes"]["U"] == 1 and doc["findings"] == {
        "accepted-and-emptied": 2, "accepted-but-unspecified": 1}
    rows = list(csv.DictReader(io.StringIO(gzip.decompress((tmp_path / "cells.csv.gz").read_bytes()).decode())))
    assert {(r["neighbour"], r["target"]) for r in rows} >= {(f"{M8N8K4} @.version 6.3", "sm_70")}
    words = json.loads((tmp_path / "words.json").read_text())
    emptied = next(r for r in rows if r["step"] == "type" and r["target"] == "sm_90a")
    assert emptied["13.0.88"][0] == "E" and words[int(emptied["13.0.88"][1:])] == "none"
    assert "silently" in (tmp_path / "summary.md").read_text()
    text = rf.pin(tmp_path, source="test")
    path = tmp_path / "refuse.yaml"
    path.write_text(text)
    got = rf.load_document(*load_yaml(path))
    by = {(c.instruction, c.step): c for c in got.cases}
    bf16 = by["mma.sync.aligned.m8n8k4.row.col.f32.bf16.f16.f32", "type"]
    assert bf16.accepted_by == {"13.0.88/sm_80": "none", "13.0.88/sm_90a": "none", "13.5.37/sm_80": "none",
                                "13.5.37/sm_90a": "none"}
    drop = by["mma.sync.m8n8k4.row.col.f32.f16.f16.f32", "drop"]  # refused on sm_80 for the form, accepted on sm_90a
    assert drop.targets == ("sm_80", "sm_90a") and drop.accepted_by == {"13.5.37/sm_90a": "HMMA.884.F32.STEP0"}
    version = by[M8N8K4, "version"]
    assert version.version == "6.3" and version.targets == ("sm_70",) and "PTX ISA notes" in version.rule


def test_pinning_keeps_what_is_pinned_and_only_forms_a_release_can_judge(tmp_path, capsys):
    nr.write_outputs(tmp_path / "c", _campaign(), command="x", wall_s=1.0, forms=1, forms_note="t")
    first = rf.load_document(*_yaml_of(tmp_path / "a.yaml", rf.pin(tmp_path / "c", source="a"))).cases
    kept = first[:1]
    again = rf.load_document(*_yaml_of(tmp_path / "b.yaml", rf.pin(tmp_path / "c", source="b", keep=kept))).cases
    assert again[0] == kept[0] and len(again) == len(first)  # kept first, never twice
    none = rf.load_document(*_yaml_of(tmp_path / "n.yaml", rf.pin(tmp_path / "c", source="n", keep=kept,
                                                                    base_ok=lambda base: False))).cases
    assert none == kept
    # m8n8k4 is PTX 6.4: a ptxas taking .version 6.3 cannot judge its neighbours
    assert main(["toolchains", "pin-refusals", str(tmp_path / "c"), "--max-ptx", "6.3", "--out", str(tmp_path / "o.yaml")]) == 0
    assert "0 cases" in capsys.readouterr().out
    assert main(["toolchains", "pin-refusals", str(tmp_path / "c"), "--max-ptx", "9", "--out", str(tmp_path / "o.yaml")]) == 2


def _yaml_of(path, text: str):
    path.write_text(text)
    return load_yaml(path)


def test_a_bad_refuse_document_names_file_line_and_field(tmp_path):
    path = tmp_path / "refuse.yaml"
    path.write_text("schema: refuse/1\nfamily: refuse\ndocument: x\nsource: y\ncases:\n"
                    "  - {instruction: a, base: b, step: jump, change: c, targets: [sm_90a], rule: r}\n")
    with pytest.raises(SpecError, match=r"refuse.yaml:6.*step"):
        rf.load_document(*load_yaml(path))


def test_the_shipped_refuse_cases_name_spec_forms(specs):
    spec = rf.refuse_spec(specs)
    assert len(spec.cases) > 50
    assert all(c.base in specs.variants and c.instruction not in specs.variants or c.step in ("target", "version")
               for c in spec.cases)
    assert {c.step for c in spec.cases} >= {"drop", "type", "shape", "target", "version"}


@pytest.mark.ptxas
@pytest.mark.skipif(not HAVE_PTXAS, reason="needs ptxas on PATH")
def test_ci_assembles_the_must_reject_cases(specs, capsys):
    """Every pinned case through the installed ptxas: a release the campaign ran must refuse what it refused and
    accept only what it recorded; any other release only must not crash on them."""
    from ptxconf.tools.toolchains.resolve import resolve_all

    tc = resolve_all(None)[0]
    spec = rf.refuse_spec(specs)
    ran = {k.split("/")[0] for c in spec.cases for k in c.accepted_by}
    rows = rf.check(spec, specs, spec.cases, None, tc, use_cache=False)
    assert rows and not [r for r in rows if r.status == "crashed"]
    if tc.name in ran:
        assert not [r for r in rows if r.status in ("new-finding", "fixed")], [
            (r.case.instruction, r.target, r.status, r.said) for r in rows if r.status in ("new-finding", "fixed")]
    code = main(["assemble", "--check", "refuse", "--select", "mma.sync.aligned.m8n8k4*"])
    out = capsys.readouterr().out
    assert "must-reject case(s)" in out and code in (0, 1)


@pytest.mark.ptxas
@pytest.mark.skipif(not HAVE_PTXAS or not _have_sass(), reason="needs ptxas on PATH and cuobjdump")
def test_matrix_says_what_fp8_mma_is_lowered_to(specs):
    from ptxconf.tools.toolchains.matrix import build_matrix
    from ptxconf.tools.toolchains.report import lowering_history
    from ptxconf.tools.toolchains.resolve import resolve_all

    tcs = resolve_all(None)
    mat, _ = build_matrix([specs.variants[E4M3]], [parse_target("sm_89"), parse_target("sm_90a")], tcs, jobs=1,
                          sass=True)
    assert lowering_history(mat, "sm_90a", 0).endswith("HMMA.16816.F32")  # fp8 in software: f16 HMMA on sm_90
    assert "QMMA" in lowering_history(mat, "sm_89", 0)


@pytest.mark.ptxas
@pytest.mark.skipif(not HAVE_PTXAS or not _have_sass(), reason="needs ptxas on PATH and cuobjdump")
def test_a_small_campaign_classifies_by_the_sass(specs):
    from ptxconf.tools.toolchains.resolve import resolve_all

    tc = resolve_all(None)[0]
    camp = _campaign()
    camp = nb.run_campaign(camp.neighbours, {M8N8K4: specs.variants[M8N8K4]}, ["sm_80"], [tc], use_cache=False)
    codes = {camp.neighbours[i].step: c.code for (_, _, i), c in camp.cells.items()}
    assert codes.get("version", "R") == "R"  # m8n8k4 is PTX 6.4 (asked only where the release knows sm_70)
    assert codes["type"] in ("R", "U", "E") and codes["drop"] in ("R", "U", "E")


def test_ld_red_transcription():
    from ptxconf.families.tcgen05.spec import load_tcgen05
    from ptxconf.tools.toolchains.ld_red import kernel

    r = load_tcgen05().ld_red
    forms = r.forms()
    assert len(forms) == 2 * 7 * 2 * (4 + 2)  # shapes x .num x2..x128 x redOp x (f32 with .abs/.NaN or not, u32, s32)
    names = {f.instruction for f in forms}
    assert "tcgen05.ld.red.sync.aligned.16x32bx2.x8.max.abs.NaN.f32" in names
    assert not any(".x1." in n for n in names)
    assert r.valid_on("sm_103a") is None and r.valid_on("sm_107a") is None and r.valid_on("sm_110f") is None
    assert r.valid_on("sm_100a") and r.valid_on("sm_120a") and r.valid_on("sm_103a", PtxVersion(8, 7))
    assert all(len(s["commit"]) == 40 for s in r.sources)
    k = kernel(forms[-1], "probe_x")
    assert "[%ta], 16;" in k and "%r127" in k


def test_a_pair_of_one_type_is_swapped_together(specs):
    mma = [v for v in specs.variants.values() if v.family == "mma.sync"]
    ns = {n.id: n for n in nb.neighbours([specs.variants[M8N8K4]], ("sm_80",), universe=mma)}
    both = ns["mma.sync.aligned.m8n8k4.row.col.f32.bf16.bf16.f32"]  # the public report: accepted, nothing emitted
    assert (both.step, both.change) == ("type", "f16.f16->bf16.bf16")
    assert "mma.sync.aligned.m8n8k4.row.col.f32.tf32.tf32.f32" in ns


def test_an_earlier_campaign_narrows_the_next(tmp_path):
    """--prior: what some earlier cell did not refuse, every target/.version step, a seeded share of the rest."""
    camp = _campaign()
    refused = [nb.Neighbour(f"mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.x{i}", f"mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.x{i}",
                            M8N8K4, "sibling", f"f32->x{i}", "mma.sync") for i in range(10)]
    camp.neighbours += refused
    for k in range(3, 13):
        for r in camp.releases:
            camp.cells[r, "sm_80", k] = nb.Cell("R", message="Unknown modifier")
    nr.write_outputs(tmp_path, camp, command="ptxconf toolchains neighbourhood", wall_s=1.0, forms=1, forms_note="t")
    prior = nr.prior_codes([tmp_path])
    assert prior[camp.neighbours[0].id] == {"E"} and prior[camp.neighbours[1].id] == {"R", "U"}
    back = nr.load_campaign(tmp_path)[0].neighbours
    kept, note = nb.narrowed(back, prior, 0.3, seed=34)
    ids = [n.id for n in kept]
    assert ids[:3] == [n.id for n in camp.neighbours[:3]]  # E, U somewhere, the .version step
    assert len(ids) == 6 and ids == [n.id for n in nb.narrowed(back, prior, 0.3, seed=34)[0]]
    assert ids != [n.id for n in nb.narrowed(back, prior, 0.3, seed=35)[0]]  # another seed, another sample
    assert "3 of the 10 refused everywhere" in note and "seed 34" in note
    assert len(nb.narrowed(back, prior, 0.0, seed=1)[0]) == 3 and len(nb.narrowed(back, prior, 1.0, seed=1)[0]) == 13


def test_prior_needs_a_share(tmp_path, capsys):
    nr.write_outputs(tmp_path, _campaign(), command="x", wall_s=1.0, forms=1, forms_note="t")
    assert main(["toolchains", "neighbourhood", "--prior", str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    assert "--refused-share" in capsys.readouterr().err
    assert main(["toolchains", "neighbourhood", "--prior", str(tmp_path / "none"), "--refused-share", "0.1",
                 "--out", str(tmp_path / "o")]) == 2
    assert "no cells.csv.gz" in capsys.readouterr().err


def test_acceptance_history_says_which_releases_took_a_form(tmp_path, capsys):
    nr.write_outputs(tmp_path / "c", _campaign(), command="x", wall_s=1.0, forms=1, forms_note="t")
    hist = {(h["neighbour"], h["target"]): h for h in nr.acceptance_history(nr.load_campaign(tmp_path / "c")[0])}
    bf16 = hist["mma.sync.aligned.m8n8k4.row.col.f32.bf16.f16.f32", "sm_90a"]
    assert bf16["accepted_by"] == "13.0.88..13.5.37" and bf16["refused_by"] == "" and bf16["emptied"]
    drop = hist["mma.sync.m8n8k4.row.col.f32.f16.f16.f32", "sm_90a"]
    assert (drop["accepted_by"], drop["refused_by"], drop["emptied"]) == ("13.5.37", "13.0.88", False)
    assert drop["sass"] == ["HMMA.884.F32.STEP0"] and len(hist) == 3
    assert main(["toolchains", "neighbourhood-summary", str(tmp_path / "c")]) == 0
    out = capsys.readouterr().out
    assert "| c | 13.5.37 | 13.0.88 | 1 | 0 |" in out and "| c | 13.0.88..13.5.37 | none | 2 | 2 |" in out
    assert main(["toolchains", "neighbourhood-summary", str(tmp_path / "c"), "--root", str(tmp_path),
                 "--json", str(tmp_path / "s.json")]) == 0
    doc = json.loads((tmp_path / "s.json").read_text())
    assert doc["campaigns"][0]["campaign"] == "c" and doc["campaigns"][0]["cells"] == 10
    assert {(r["accepted_by"], r["refused_by"], r["pairs"]) for r in doc["history"]} == {
        ("13.5.37", "13.0.88", 1), ("13.0.88..13.5.37", "none", 2)}
    assert main(["toolchains", "neighbourhood-summary", str(tmp_path / "nothing")]) == 2


def _older(camp: nb.Campaign, releases: list[str]) -> nb.Campaign:
    """The same neighbours asked of other releases: the newer campaign's cells, renamed."""
    out = nb.Campaign(camp.neighbours, camp.targets, releases, stats=Stats())
    for (r, t, i), cell in camp.cells.items():
        out.cells[releases[camp.releases.index(r)], t, i] = cell
    return out


def test_campaigns_of_other_releases_merge_into_one_history(tmp_path, capsys):
    newer = _campaign()
    older = _older(newer, ["12.0.76", "12.9.86"])
    older.neighbours = older.neighbours[:2]  # a narrowed older campaign did not ask the .version step
    older.cells = {k: c for k, c in older.cells.items() if k[2] < 2}
    nr.write_outputs(tmp_path / "new", newer, command="n", wall_s=2.0, forms=1, forms_note="new")
    nr.write_outputs(tmp_path / "old", older, command="o", wall_s=3.0, forms=1, forms_note="old")
    assert main(["toolchains", "neighbourhood-merge", str(tmp_path / "old"), str(tmp_path / "new"),
                 "--out", str(tmp_path / "all")]) == 0
    doc = json.loads((tmp_path / "all" / "summary.json").read_text())
    assert doc["releases"] == ["12.0.76", "12.9.86", "13.0.88", "13.5.37"] and doc["wall_s"] == 5.0
    assert doc["neighbours"] == 3 and doc["cells"] == 2 * 4 + 2 * 4 + 2
    assert "(`o`)" in doc["forms_note"] and "(`n`)" in doc["forms_note"]
    hist = {(h["neighbour"], h["target"]): h for h in nr.acceptance_history(nr.load_campaign(tmp_path / "all")[0])}
    drop = hist["mma.sync.m8n8k4.row.col.f32.f16.f16.f32", "sm_90a"]
    assert (drop["accepted_by"], drop["refused_by"]) == ("12.9.86, 13.5.37", "12.0.76, 13.0.88")
    rows = list(csv.DictReader(io.StringIO(gzip.decompress((tmp_path / "all" / "cells.csv.gz").read_bytes()).decode())))
    step = next(r for r in rows if r["step"] == "version")
    assert step["12.0.76"] == "-" and step["13.0.88"].startswith("R")  # not asked: neither accepted nor refused


def test_a_merge_refuses_campaigns_that_disagree(tmp_path, capsys):
    camp = _campaign()
    nr.write_outputs(tmp_path / "a", camp, command="a", wall_s=1.0, forms=1, forms_note="a")
    camp.cells["13.5.37", "sm_80", 1] = nb.Cell("U", sass="HMMA.884.F32.STEP0")
    nr.write_outputs(tmp_path / "b", camp, command="b", wall_s=1.0, forms=1, forms_note="b")
    assert main(["toolchains", "neighbourhood-merge", str(tmp_path / "a"), str(tmp_path / "b"),
                 "--out", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err
    assert "mma.sync.m8n8k4.row.col.f32.f16.f16.f32 on sm_80 with 13.5.37: R in one campaign, U in another" in err
    assert main(["toolchains", "neighbourhood-merge", str(tmp_path / "none"), "--out", str(tmp_path / "c")]) == 2
    assert "no summary.json" in capsys.readouterr().err


def test_fresh_asks_only_what_the_earlier_campaign_never_tried(tmp_path, specs, capsys):
    """--fresh: the generator's neighbours now, less those an earlier campaign holds (the specs grew since)."""
    base = [v for v in specs.variants.values() if v.id == M8N8K4]
    made = nb.neighbours(base, ("sm_80",), universe=[v for v in specs.variants.values() if v.family == "mma.sync"])
    assert len(made) > 5
    camp = nb.Campaign(made[:5], ["sm_80"], ["13.5.37"], stats=Stats())
    for i in range(5):
        camp.cells["13.5.37", "sm_80", i] = nb.Cell("R", message="Unknown modifier")
    nr.write_outputs(tmp_path / "p", camp, command="p", wall_s=1.0, forms=1, forms_note="p")
    assert main(["toolchains", "neighbourhood", "--fresh", "--out", str(tmp_path / "o")]) == 2
    assert "--fresh needs --prior" in capsys.readouterr().err
    mma = [v for v in specs.variants.values() if v.family == "mma.sync"]
    ns, note = nb.fresh(base, ("sm_80",), set(nr.prior_codes([tmp_path / "p"])), universe=mma)
    assert [n.id for n in ns] == [n.id for n in made[5:]] and f"the {len(made) - 5} of their {len(made)}" in note


@pytest.mark.ptxas
def test_the_sass_of_an_old_sm_90a_cubin_is_read():
    """cuobjdump 13 says a ptxas 12.0.76 sm_90a cubin "does not contain device code"; nvdisasm reads it."""
    from ptxconf.backends.ptxas import compile_cubin, toolchains_dir

    exe = toolchains_dir() / "12.0.76" / "ptxas"
    if not exe.is_file() or not _have_sass():
        pytest.skip("needs ptxas 12.0.76 (ptxconf toolchains install 12.0.76) and cuobjdump/nvdisasm")
    text = (".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k(.param .u64 p)\n{\n .reg .b64 %a;\n"
            " .reg .f64 %d<3>;\n ld.param.u64 %a, [p];\n ld.global.f64 %d0, [%a];\n"
            " mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%d1,%d2}, {%d0}, {%d0}, {%d0,%d0};\n"
            " st.global.f64 [%a], %d1;\n st.global.f64 [%a+8], %d2;\n ret;\n}\n")
    cubin, err = compile_cubin(text, "sm_90a", str(exe), use_cache=False)
    assert cubin is not None, err
    assert sass.kernel_ops(cubin, use_cache=False) == {"k": ("DMMA.8",)}
