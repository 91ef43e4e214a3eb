"""ISA Table 39 (tcgen05.mma kinds and shapes) read by meaning and diffed against specs/tcgen05.yaml."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

try:  # the CLI entry point, wherever the package keeps it
    from ptxconf.cli.main import main
except ImportError:  # pragma: no cover
    from ptxconf.cli import main
from ptxconf.docs import extract_file
from ptxconf.docs.table39 import doc_tuples, fmt_values, parse_n, parse_rows
from ptxconf.families.tcgen05.spec import load_tcgen05

SEED = Path(__file__).parent / "data" / "seeds" / "002_00bc72c80baf5276.txt"
# The seed is the ISA 9.2 text copy the first transcription was made from; it is diffed against that transcription
# (specs/ itself now holds ISA 9.4's Table 48: test_seed_against_specs_shows_the_9_4_changes).
ISA92 = Path(__file__).parent / "data" / "specs-isa92"


@pytest.fixture(scope="module")
def spec():
    return load_tcgen05(ISA92)


def edited(tmp_path, old, new, nth=0):
    text = SEED.read_text()
    at = -1
    for _ in range(nth + 1):
        at = text.index(old, at + 1)
    p = tmp_path / SEED.name
    p.write_text(text[:at] + new + text[at + len(old):])
    return p


def run(path, capsys, *flags, specs=ISA92):
    rc = main(["doc-diff", "--specs", str(specs), *flags, str(path)])
    return rc, capsys.readouterr().out


def test_n_sets():
    assert parse_n("{8, 16, 24, ... 256} steps of 8") == tuple(range(8, 257, 8))
    assert parse_n("{16, 32, \u2026 256} steps of 16") == tuple(range(16, 257, 16))
    assert parse_n("{8, 16, 24, 32, 48, ... 256} steps of 16 after N > 32") == (8, 16, 24, 32, *range(48, 257, 16))
    assert parse_n("{64, 128, 256}") == (64, 128, 256)
    with pytest.raises(ValueError, match="no step of 16"):
        parse_n("{8, 16, ... 260} steps of 16")
    assert fmt_values([8, 16, 24, 32, *range(48, 257, 16)]) == "{8..32/8, 48..256/16}"


def test_seed_reads_as_the_spec_tuples(spec):
    [t] = extract_file(SEED).tables
    parsed = parse_rows(t)
    assert parsed.problems == []
    assert doc_tuples(parsed, spec) == set(spec.tuples)
    # carried down: "Sparse | K = 32" takes M and N from the dense row above it
    f16_sp = next(r for r in parsed.rows if r.kind == "f16" and not r.ws and r.sparsities == ("sparse",))
    assert (f16_sp.M, f16_sp.N[-1], f16_sp.K) == ((64, 128), 256, (32,))
    # "128xNxK, 256xNxK, 256xNxK1; ...; K = 64, K1 = 96": two rows, M 256 alone with K 96
    mx = [(r.M, r.K) for r in parsed.rows if r.kind == "mxf4" and r.cta_groups == (2,) and r.sparsities == ("dense",)]
    assert mx == [((128, 256), (64,)), ((256,), (96,))]
    assert parsed.scales[next(r.index for r in parsed.rows if r.kind == "mxf4nvf4")] == ("ue8m0", "ue4m3")


def test_seed_against_specs_shows_the_9_4_changes(capsys):
    """specs/ reads f8f6f4's .f16 as a D type (errata f8f6f4-f16-dtype) and holds ISA 9.4's rows: the 9.2 text copy
    differs in those groups only."""
    rc, out = run(SEED, capsys, specs=Path(__file__).parents[1] / "specs")
    assert rc == 1
    changed = {m.group(2) for m in re.finditer(r"^(changed|only in specs|only in doc) +(.+?) +\[", out, re.M)}
    assert {c for c in changed if c.startswith("kind::f8f6f4")} == {
        f"kind::f8f6f4{ws} cta_group {c} {s} dtype .{d}" for ws, c in (("", 1), ("", 2), (" .ws", 1))
        for s in ("dense", "sparse") for d in ("f16", "f32")}
    assert "kind::ti16" in changed and "K = 96 targets" in changed
    assert all(c.startswith(("kind::f8f6f4", "kind::mx", "kind::ti16", "K = ")) for c in changed)


def test_seed_diffs_clean(capsys):
    rc, out = run(SEED, capsys, "--all")
    assert rc == 0, out
    assert "the same set specs/ enumerates; K = 96 only on {sm_103a} in both" in out
    assert "0 difference(s)" in out


def test_changed_n_range(tmp_path, capsys):
    # the second "N = {64, 128, 256}" row is .kind::f16 .ws cta_group 1 dense .f32
    doc = edited(tmp_path, "N = {64, 128, 256}; K = 16", "N = {64, 128}; K = 16", nth=1)
    rc, out = run(doc, capsys)
    assert rc == 1
    assert "changed       kind::f16 .ws cta_group 1 dense dtype .f32" in out
    assert "N {64, 128, 256} in specs, {64, 128} in doc ({256} only in specs)" in out
    assert "1 difference(s)" in out
    rc, out = run(doc, capsys, "--json")
    [f] = json.loads(out)["findings"]
    assert (f["status"], f["subject"], f["line"]) == ("changed", "kind::f16 .ws cta_group 1 dense dtype .f32", 39)
    assert f["differences"] == [{"field": "N", "specs": [64, 128, 256], "doc": [64, 128]}]


def test_removed_kind(tmp_path, capsys):
    text = SEED.read_text()
    a, b = text.index(".kind::mxf4 |"), text.index(".kind::mxf4nvf4 |")
    doc = tmp_path / SEED.name
    doc.write_text(text[:a] + text[b:])
    rc, out = run(doc, capsys)
    assert rc == 1
    assert "only in specs kind::mxf4 " in out and "removed from doc: specs/ has 128 tuples of .kind::mxf4" in out
    assert "1 difference(s)" in out
    rc, out = run(doc, capsys, "--json")
    res = json.loads(out)
    assert res["differences"] == 1 and res["summary"] == {"only in specs": 1}
    assert res["findings"][0]["subject"] == "kind::mxf4"


def test_changed_k(tmp_path, capsys):
    doc = edited(tmp_path, "steps of 16 after N > 32; K = 32", "steps of 16 after N > 32; K = 64")
    rc, out = run(doc, capsys)
    assert rc == 1
    assert "changed       kind::i8 cta_group 1 dense dtype .s32" in out
    assert "K {32} in specs, {64} in doc ({32} only in specs; {64} only in doc)" in out
    rc, out = run(doc, capsys, "--json")
    [f] = json.loads(out)["findings"]
    assert f["differences"] == [{"field": "K", "specs": [32], "doc": [64]}] and f["line"] == 103


def test_k1_shape_invalid_and_target_note(tmp_path, capsys):
    text = SEED.read_text()
    text = text.replace("128xNxK, 256xNxK, 256xNxK1;", "128xNxK, 256xNxK, 128xNxK1;", 1)
    text = text.replace("- sm_103a.", "- sm_103a.\n- sm_110a.")
    text = text.replace("| 2 | Either | .f16 |\n.f16 |\nInvalid", "| 2 | Either | .f16 |\n.f16 |\n128xNxK; N = {64}; K = 16")
    doc = tmp_path / SEED.name
    doc.write_text(text)
    rc, out = run(doc, capsys, "--json")
    assert rc == 1
    got = {f["subject"]: f for f in json.loads(out)["findings"]}
    mx = got["kind::mxf4 cta_group 2 dense dtype .f32"]
    assert mx["differences"] == [{"field": "MxK", "specs": ["128x64", "256x64", "256x96"], "doc": ["128x64", "128x96", "256x64"]}]
    assert got["K = 96 targets"]["differences"][0] == {"field": "targets", "specs": ["sm_103a"], "doc": ["sm_103a", "sm_110a"]}
    ws2 = got["kind::f16 .ws cta_group 2 dense dtype .f16"]
    assert ws2["status"] == "only in doc" and ws2["line"] == 48
    assert ws2["detail"] == "the document allows 1 tuples; Table 39: .ws with CTA group 2 is Invalid (" + ws2["detail"].split("(")[-1]
    assert set(got) == {"kind::mxf4 cta_group 2 dense dtype .f32", "K = 96 targets", "kind::f16 .ws cta_group 2 dense dtype .f16",
                        "kind::f16 .ws cta_group 2 sparse dtype .f16"}


def test_unreadable_row_is_named(tmp_path, capsys):
    doc = edited(tmp_path, "N = {64, 128}; K = 32", "N = {64, 128} K = 32")
    rc, out = run(doc, capsys)
    assert rc == 1
    assert f"unparseable   Table 39 (Various combinations of .kind and shapes)  [{doc}:42" in out
    assert "N set: cannot read 'K = 32'" in out
