"""Inputs the ISA leaves undefined (``run --undefined``): the ``undefined`` status through everything generic.

An undefined check is known but never in a default run; its verdict is an observation labelled "undefined by the
ISA", never a pass or a failure: in the counts and the total line, results.jsonl, JUnit (tests/run/test_junit.py),
exit codes (it never fails a run, and a run of nothing else still ran), replay (the same observation again), diff
(a changed observation is a changed fact, not a failure) and the pytest plugin (a skip with the label).
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
from ptxconf.cli.main import main
from ptxconf.core.family import default_checks, known_checks, select_checks
from ptxconf.core.verdict import UNDEFINED, Verdict, labelled
from ptxconf.families.mma import undefined as ud
from ptxconf.run.diff import diff_runs, render_text
from ptxconf.run.exit import ExitStatus
from ptxconf.run.session import totals

pytestmark = pytest.mark.e2e  # whole ``ptxconf run`` commands on the emulator

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[2]
SPARSE = "mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.bf16.bf16.f32"
DENSE = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"


@pytest.fixture(autouse=True)
def refused(monkeypatch):
    """ptxas's answer for an out-of-range selector, the same with or without a ptxas here."""
    monkeypatch.setattr(ud, "assembled", lambda source, version, cc: {
        "ptxas": "ptxas 99.9", "accepted": False, "message": "value out of range"})


def _records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def test_selecting_checks():
    assert "undefined.metadata" in known_checks() and "undefined.metadata" not in default_checks()
    assert select_checks(None) is None
    assert select_checks(["undefined.*"]) == ("undefined.metadata", "undefined.selector")
    every = select_checks(None, undefined=True)
    assert every[: len(default_checks())] == default_checks() and every[-2:] == ("undefined.metadata", "undefined.selector")
    assert select_checks(["value"], undefined=True) == ("value", "undefined.metadata", "undefined.selector")
    with pytest.raises(ValueError, match="nope: unknown check"):
        select_checks(["nope"])


def test_label_totals_and_exit_status():
    vd = Verdict("v", "undefined.metadata", 0, UNDEFINED, "as given: (1,0)", map_diff=[f"line {i}" for i in range(12)])
    assert vd.details(None).splitlines()[0] == "undefined by the ISA: as given: (1,0)"
    assert len(vd.details(None).splitlines()) == 13  # an observation is shown whole
    assert labelled("fail", "x") == "x"
    assert totals(Counter({"pass": 3, "skip": 1})) == "3 passed, 0 failed, 0 errors, 1 skipped"
    assert totals(Counter({"pass": 3, UNDEFINED: 2})) == "3 passed, 0 failed, 0 errors, 0 skipped, 2 undefined"


def test_run_records_replays_and_diffs_undefined_observations(tmp_path, capsys):
    out = tmp_path / "base"
    argv = ["run", "--backend", "emulator", "--undefined", "--select", SPARSE, "--select", DENSE, "--out", str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    recs = _records(out)
    by = {r["check"]: r for r in recs if r["variant"] == SPARSE}
    assert by["undefined.metadata"]["status"] == UNDEFINED
    assert by["undefined.metadata"]["message"] == ud.NOT_MODELLED_TEXT
    assert by["undefined.selector[2]"]["message"] == "refused by ptxas: value out of range"
    assert not any(r["check"].startswith("undefined") for r in recs if r["variant"] == DENSE)
    assert f"{SPARSE}:undefined.selector[3]:seed=0: undefined by the ISA: refused by ptxas" in printed
    last = printed.strip().splitlines()[-1]
    assert last.startswith("9 passed, 0 failed, 0 errors, 0 skipped, 3 undefined in ")
    summary = json.loads((out / "summary.json").read_text())
    assert summary["counts"] == {"pass": 9, UNDEFINED: 3} and summary["failures"] == []
    # replay: the same observations, and no failure
    assert main(["replay", str(out), "--out", str(tmp_path / "replay")]) == 0
    assert "9 passed, 0 failed, 0 errors, 3 undefined" in capsys.readouterr().out
    again = {r["check"]: r["message"] for r in _records(tmp_path / "replay") if r["variant"] == SPARSE}
    assert again == {c: r["message"] for c, r in by.items()}
    # diff: an observation that moved is a changed fact, listed with both observations, not as a failure
    new = tmp_path / "new"
    shutil.copytree(out, new)
    lines = (new / "results.jsonl").read_text().replace(ud.NOT_MODELLED_TEXT, "as given: (1,0)")
    (new / "results.jsonl").write_text(lines)
    doc = diff_runs(out, new)
    (row,) = doc["status_changes"]
    assert row["change"] == "undefined by the ISA: observation changed" and row["new_message"] == "as given: (1,0)"
    text = render_text(doc)
    assert "undefined by the ISA: observation changed: 1 check(s)" in text and "new:  as given: (1,0)" in text
    assert "fail" not in row["change"] and doc["changed"]


def test_undefined_checks_alone_ran_something(tmp_path):
    out = tmp_path / "run"
    argv = ["run", "--backend", "emulator", "-q", "--check", "undefined.*", "--select", SPARSE, "--select", DENSE,
            "--out", str(out)]
    assert main(argv) == ExitStatus.OK  # not NOTHING_RAN: observations were made
    assert {r["variant"] for r in _records(out)} == {SPARSE}  # the dense form makes none of them: not selected
    assert main(["run", "--backend", "emulator", "-q", "--check", "undefined.*", "--select", DENSE,
                 "--out", str(tmp_path / "none")]) == 2
    assert ExitStatus.NOTHING_RAN == 5


def test_pytest_plugin_skips_with_the_label(pytester: pytest.Pytester, tmp_path: Path):
    specs = tmp_path / "specs"
    specs.mkdir()
    for name in ("mma_sync.yaml", "mma_sp.yaml"):
        shutil.copy(REPO / "specs" / name, specs)
    res = pytester.runpytest("-p", "ptxconf.pytest_plugin", "-p", "no:cacheprovider", "-p", "no:benchmark",
                             "-W", "ignore::pytest.PytestAssertRewriteWarning", "--ptxconf-backend", "emulator",
                             "--ptxconf-specs", str(specs), "--ptxconf-select", SPARSE, "--ptxconf-undefined", "-rs")
    res.assert_outcomes(passed=5, skipped=2)  # value, map.A, map.B, map.C, map.metadata; the two undefined
    res.stdout.fnmatch_lines(["*undefined by the ISA: not modelled by the emulator*",
                              "*undefined by the ISA: undefined.selector[[]2]: refused by ptxas*"])


def test_pytest_plugin_makes_one_item_of_a_check_made_per_kernel(pytester: pytest.Pytester, tmp_path: Path):
    """wgmma.sp names its verdicts ``value[<immediates>]``: the item ``value`` stands for all of them."""
    specs = tmp_path / "specs"
    specs.mkdir()
    shutil.copy(REPO / "specs" / "wgmma_sp.yaml", specs)
    res = pytester.runpytest("-p", "ptxconf.pytest_plugin", "-p", "no:cacheprovider", "-p", "no:benchmark",
                             "-W", "ignore::pytest.PytestAssertRewriteWarning", "--ptxconf-backend", "emulator",
                             "--ptxconf-specs", str(specs), "--ptxconf-undefined", "-rs",
                             "--ptxconf-select", "wgmma.mma_async.sp.sync.aligned.m64n8k32.f16.f16.f16/rs")
    res.assert_outcomes(passed=4, skipped=2)
    res.stdout.fnmatch_lines(["*undefined by the ISA: undefined.selector[[]sa+1,sb+1,tb0,sel2[]]: refused by ptxas*"])


@pytest.mark.parametrize("vid", [SPARSE, "wgmma.mma_async.sp.sync.aligned.m64n8k32.f32.f16.f16/ss"])
def test_plan_asks_no_assembler_and_settle_does(vid, monkeypatch):
    """A family's ``plan`` is a function of (seed, variant): ptxas is not asked there.  The run's planning then asks
    it through the family's ``settle``: a selector kernel ptxas refuses leaves the plan (its cases recorded, not
    launched), one it takes stays, and the answer is in the check's meta either way."""
    from ptxconf.core.family import family_of
    from ptxconf.isa.loader import load_specs
    from ptxconf.isa.targets import PtxVersion
    from ptxconf.run.runner import plan_variant

    v = load_specs(None).get(vid)
    fam = family_of(v)
    checks = (*fam.checks, "undefined.selector")
    asked: list[str] = []

    def answer(accepted: bool):
        def assembled(source, version, cc):
            asked.append(source)
            return {"ptxas": "stub", "accepted": accepted, "message": "" if accepted else "stub: refused"}
        return assembled

    def refuse_to_be_asked(*args):
        raise AssertionError("plan() asked ptxas")

    monkeypatch.setattr(ud, "assembled", refuse_to_be_asked)
    plain = fam.plan(v, 3, (9, 0), PtxVersion(9, 0), checks, 8, None)
    selector = [cs for cs in plain.case_sets if cs.check.startswith("undefined.selector")]
    assert selector and all("assembler" not in cs.meta for cs in selector)
    for accepted in (False, True):
        monkeypatch.setattr(ud, "assembled", answer(accepted))
        asked.clear()
        plan = plan_variant(v, 3, (9, 0), PtxVersion(9, 0), checks)
        assert asked
        sel = [cs for cs in plan.case_sets if cs.check.startswith("undefined.selector")]
        assert all(cs.meta["assembler"]["accepted"] is accepted for cs in sel)
        launched = {int(c) for cases in plan.launches for c in cases}
        sel_cases = {c for cs in sel for c in range(*plan.slices[cs.check])}
        assert (sel_cases <= launched) is accepted and (not sel_cases & launched) is not accepted
