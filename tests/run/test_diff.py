"""``ptxconf diff BASE NEW``: each kind of change is found, named, and decides the exit status.

A small run is cut from the recorded H100 run (two variants: results.jsonl,
observed maps, observations, summary), copied to BASE and NEW, and NEW is
changed one way at a time: a status, a lane in an observed map, a D word, the
inputs, the device header, the run's completeness, a damaged file, a cut
results line.  Two emulator runs with one seed must diff clean; the recorded
runs diff as documented; usage errors exit 2 with one line.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from ptxconf import cli
from ptxconf.run.diff import diff_runs
from ptxconf.run.observations import observation_bytes, observation_name, open_observation

REPO = Path(__file__).resolve().parents[2]
H100 = REPO / "results" / "h100"
MMA = "mma.sync.aligned."
VARIANTS = (MMA + "m16n8k16.row.col.f32.f16.f16.f32", MMA + "m16n8k8.row.col.f32.bf16.bf16.f32")
OBS = {vid: observation_name(vid, 0) for vid in VARIANTS}
CHECKS = ("value", "map.A", "map.B", "map.C")


@pytest.fixture(scope="module")
def small_run(tmp_path_factory) -> Path:
    """Two variants of the recorded H100 run, as a run directory with results.jsonl."""
    run = tmp_path_factory.mktemp("recorded") / "run"
    (run / "observations").mkdir(parents=True)
    summary = json.loads((H100 / "summary.json").read_text())
    summary.update(status="complete", specs_hash="sha256:1111", git_revision="abc123", started="2026-01-01T00:00:00Z")
    (run / "summary.json").write_text(json.dumps(summary))
    with (run / "results.jsonl").open("w") as fh:
        for vid in VARIANTS:
            for check in CHECKS:
                fh.write(json.dumps({"variant": vid, "family": "mma.sync", "file": "specs/mma_sync.yaml", "check": check,
                                     "seed": 0, "status": "pass", "message": "", "details": "", "seconds": 0.0}) + "\n")
    with np.load(H100 / "observed_maps.npz") as z:
        np.savez_compressed(run / "observed_maps.npz", **{k: z[k] for k in z.files if k.split("|")[0] in VARIANTS})
    for name in OBS.values():
        shutil.copy(H100 / "observations" / name, run / "observations" / name)
    return run


@pytest.fixture
def pair(small_run, tmp_path) -> tuple[Path, Path]:
    base, new = tmp_path / "base", tmp_path / "new"
    shutil.copytree(small_run, base)
    shutil.copytree(small_run, new)
    return base, new


def _diff(base: Path, new: Path, capsys, *extra: str) -> tuple[int, str]:
    rc = cli.main(["diff", str(base), str(new), "--limit", "0", *extra])
    return rc, capsys.readouterr().out


def _json(base: Path, new: Path, capsys) -> tuple[int, dict]:
    rc, out = _diff(base, new, capsys, "--json")
    return rc, json.loads(out)


def _edit_summary(run: Path, **changes) -> None:
    doc = json.loads((run / "summary.json").read_text())
    for key, value in changes.items():
        target = doc["device"] if key in doc["device"] or key == "driver" else doc
        if value is None:
            target.pop(key, None)
        else:
            target[key] = value
    (run / "summary.json").write_text(json.dumps(doc))


def _edit_npz(path: Path, **arrays) -> None:
    with open_observation(path) as z:
        doc = {k: z[k] for k in z.files}
    doc.update(arrays)
    path.write_bytes(observation_bytes(**doc))


def _records(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]


def _write_records(run: Path, records: list[dict]) -> None:
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


def test_a_run_against_its_copy_has_no_change(pair, capsys):
    rc, out = _diff(*pair, capsys)
    assert rc == 0
    assert out.rstrip().endswith("no change")
    assert "status changes: none" in out and "observed lane maps changed: none" in out
    assert "2 in both, 2 same inputs and outputs" in out


def test_provenance_alone_is_not_a_change(pair, capsys):
    base, new = pair
    _edit_summary(new, started="2026-02-02T00:00:00Z", git_revision="def456", tool_version="0.2.0")
    rc, out = _diff(base, new, capsys)
    assert rc == 0
    assert "~ git revision: abc123 -> def456" in out and "~ timestamp: 2026-01-01T00:00:00Z -> 2026-02-02T00:00:00Z" in out


def test_a_status_change_is_named(pair, capsys):
    base, new = pair
    recs = _records(new)
    recs[1].update(status="fail", message="3 of 512 D elements differ")
    recs[6].update(status="skip", message="needs sm_120a")
    _write_records(new, recs)
    rc, doc = _json(base, new, capsys)
    assert rc == 1 and doc["changed"]
    got = {(c["name"], c["change"]) for c in doc["status_changes"]}
    assert got == {(f"{VARIANTS[0]}:map.A:seed=0", "pass -> fail"), (f"{VARIANTS[1]}:map.B:seed=0", "pass -> skip")}
    assert doc["status_changes"][0]["change"] == "pass -> fail"  # regressions first
    rc, out = _diff(base, new, capsys)
    assert "pass -> fail: 1 check(s) in 1 variant(s)" in out and "3 of 512 D elements differ" in out
    # ... and back again is a fix.
    rc, doc = _json(new, base, capsys)
    assert {c["change"] for c in doc["status_changes"]} == {"fail -> pass", "skip -> pass"}


def test_new_and_gone_checks(pair, capsys):
    base, new = pair
    recs = _records(new)
    gone = recs.pop(0)
    recs.append({**gone, "check": "map.D", "status": "error", "message": "launch failed"})
    _write_records(new, recs)
    rc, doc = _json(base, new, capsys)
    assert rc == 1
    got = {c["name"]: c["change"] for c in doc["status_changes"]}
    assert got == {f"{VARIANTS[0]}:value:seed=0": "gone (was pass)", f"{VARIANTS[0]}:map.D:seed=0": "new (error)"}


def test_a_failure_whose_message_changed_is_reported(pair, capsys):
    base, new = pair
    for run, msg in ((base, "1 of 512 D elements differ"), (new, "9 of 512 D elements differ")):
        recs = _records(run)
        recs[0].update(status="fail", message=msg)
        _write_records(run, recs)
    rc, doc = _json(base, new, capsys)
    assert rc == 1
    (c,) = doc["status_changes"]
    assert c["change"] == "fail, message changed" and c["new_message"].startswith("9 of 512")


def test_a_cut_last_results_line_is_reported_and_skipped(pair, capsys):
    base, new = pair
    text = (new / "results.jsonl").read_text()
    (new / "results.jsonl").write_text(text[: len(text) - 25])  # the last record loses its end
    rc, doc = _json(base, new, capsys)
    assert rc == 1
    assert any("line 8 is cut short" in n and "skipped" in n for n in doc["notes"])
    assert [c["change"] for c in doc["status_changes"]] == ["gone (was pass)"]
    assert doc["runs"]["new"]["counts"] == {"pass": 7}


def test_a_moved_lane_in_an_observed_map_is_named(pair, capsys):
    base, new = pair
    key = f"{VARIANTS[0]}|A"
    with np.load(new / "observed_maps.npz") as z:
        maps = {k: z[k] for k in z.files}
    m = maps[key].copy()
    m[[3, 5], 1] = m[[5, 3], 1]  # lanes 3 and 5 swap what their element 1 holds
    maps[key] = m
    np.savez_compressed(new / "observed_maps.npz", **maps)
    rc, doc = _json(base, new, capsys)
    assert rc == 1
    (change,) = doc["map_changes"]
    assert (change["variant"], change["operand"], change["change"]) == (VARIANTS[0], "A", "moved")
    assert [(s["lane"], s["element"]) for s in change["moved"]] == [(3, 1), (5, 1)]
    with np.load(base / "observed_maps.npz") as z:
        assert change["moved"][0]["new"] == [int(x) for x in z[key][5, 1]]
    rc, out = _diff(base, new, capsys)
    slots = m.shape[0] * m.shape[1]
    assert f"{VARIANTS[0]} operand A: 2 of {slots} (lane, element) slots moved" in out
    assert "lane 3 element 1: (matrix, row, col)" in out


def test_a_map_only_one_run_has(pair, capsys):
    base, new = pair
    with np.load(new / "observed_maps.npz") as z:
        maps = {k: z[k] for k in z.files if not k.endswith("|C")}
    np.savez_compressed(new / "observed_maps.npz", **maps)
    rc, doc = _json(base, new, capsys)
    assert rc == 1
    assert sorted((c["variant"], c["operand"], c["change"]) for c in doc["map_changes"]) == [
        (vid, "C", "only in BASE") for vid in sorted(VARIANTS)]


def test_a_changed_d_word_for_the_same_inputs_is_named(pair, capsys):
    base, new = pair
    path = new / "observations" / OBS[VARIANTS[0]]
    with open_observation(path) as z:
        out_words, meta = z["out_words"].copy(), json.loads(str(z["meta"]))
    (a, _), = [c["slice"] for c in meta["checks"] if c["check"] == "map.A"]
    old = int(out_words[a + 1, 17, 2])
    out_words[a + 1, 17, 2] ^= np.uint32(0x100)
    _edit_npz(path, out_words=out_words)
    rc, doc = _json(base, new, capsys)
    assert rc == 1
    (o,) = doc["observations"]["changes"]
    assert o["change"] == "outputs differ" and o["variant"] == VARIANTS[0]
    assert o["words_differing"] == 1 and o["per_check"] == {"map.A": 1}
    assert o["differing"] == [{"check": "map.A", "case": 1, "lane": 17, "word": 2,
                               "base": f"0x{old:08x}", "new": f"0x{old ^ 0x100:08x}"}]
    rc, out = _diff(base, new, capsys)
    assert "1 of" in out and "D words differ for the same inputs (map.A 1)" in out
    assert f"map.A case 1 lane 17 word 2: 0x{old:08x} -> 0x{old ^ 0x100:08x}" in out


def test_other_inputs_are_said_and_their_outputs_not_diffed(pair, capsys):
    base, new = pair
    path = new / "observations" / OBS[VARIANTS[1]]
    with open_observation(path) as z:
        in_words, out_words = z["in_words"].copy(), z["out_words"].copy()
    in_words[0, 0, 0] ^= np.uint32(1)
    out_words[0] ^= np.uint32(0xFFFF)  # outputs of the case with other inputs: not to be listed
    _edit_npz(path, in_words=in_words, out_words=out_words)
    rc, doc = _json(base, new, capsys)
    assert rc == 1
    (o,) = doc["observations"]["changes"]
    assert o["change"] == "inputs differ" and o["cases_other_inputs"] == 1 and "differing" not in o
    assert "1 of" in o["why"] and "value 1" in o["why"]
    rc, out = _diff(base, new, capsys)
    assert f"{VARIANTS[1]}: other inputs in 1 of" in out and "those not compared" in out
    # All inputs different: said once, no words compared.
    _edit_npz(path, in_words=in_words ^ np.uint32(1))
    rc, doc = _json(base, new, capsys)
    (o,) = doc["observations"]["changes"]
    assert o["change"] == "inputs differ" and o["why"].startswith("all ")


def test_a_damaged_observation_is_a_change_and_the_rest_is_compared(pair, capsys):
    base, new = pair
    victim = new / "observations" / OBS[VARIANTS[0]]
    victim.write_bytes(victim.read_bytes()[:500])
    rc, doc = _json(base, new, capsys)
    assert rc == 1
    (o,) = doc["observations"]["changes"]
    assert o["change"] == "damaged" and o["file"] == victim.name and o["problem"].startswith("NEW: not a readable")
    assert doc["observations"]["summary"]["same inputs and outputs"] == 1


def test_device_info_changes_are_in_the_header(pair, capsys):
    base, new = pair
    _edit_summary(new, driver="590.10", gpu="NVIDIA H200", ptxas=None, specs_hash="sha256:2222")
    rc, out = _diff(base, new, capsys)
    assert rc == 1
    assert "* gpu: NVIDIA H100 80GB HBM3 -> NVIDIA H200" in out
    assert "* driver: 580.159.04 -> 590.10" in out
    assert "* ptxas: Cuda compilation tools, release 13.0, V13.0.88 -> not recorded" in out
    assert "* spec hash: sha256:1111 -> sha256:2222" in out
    assert "    compute capability: 9.0" in out  # unchanged fields shown once, unmarked


def test_fields_older_runs_lack_are_not_recorded(pair, capsys):
    base, new = pair
    _edit_summary(base, specs_hash=None, git_revision=None, started=None, status=None)
    _edit_summary(new, specs_hash=None, git_revision=None, started=None, status=None)
    rc, out = _diff(base, new, capsys)
    assert rc == 0
    for field in ("spec hash", "git revision", "timestamp"):
        assert f"    {field}: not recorded" in out
    assert "BASE run: status not recorded" in out and "NOT COMPLETE" not in out


@pytest.mark.parametrize("status", ["interrupted", "running"])
def test_a_run_that_is_not_complete_is_said(pair, capsys, status):
    base, new = pair
    _edit_summary(new, status=status, variants_not_run=["x", "y"])
    rc, out = _diff(base, new, capsys)
    assert f"NEW  run: NOT COMPLETE (status {status!r}), 2 variants not run" in out
    assert "BASE run: complete" in out
    doc = diff_runs(base, new)
    assert doc["runs"]["new"]["complete"] is False and doc["runs"]["base"]["complete"] is True


def test_usage_errors_exit_2_with_one_line(tmp_path, pair, capsys):
    base, _ = pair
    assert cli.main(["diff", str(base), str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "nowhere: no such directory" in err
    (tmp_path / "empty").mkdir()
    assert cli.main(["diff", str(tmp_path / "empty"), str(base)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "not a run directory" in err


def _junit_only_copy(run: Path, into: Path) -> Path:
    """A recorded run as runs were kept before results.jsonl: its summary, observations and a junit.xml (today's
    writer's, from the replay kept beside it)."""
    import gzip

    into.mkdir()
    shutil.copy(run / "summary.json", into / "summary.json")
    shutil.copytree(run / "observations", into / "observations")
    (into / "junit.xml").write_bytes(gzip.open(run / f"{run.name}-replay" / "junit.xml.gz").read())
    return into


def test_recorded_runs_read_from_junit(tmp_path, capsys):
    """Committed runs predate results.jsonl: statuses come from junit.xml."""
    wgmma = _junit_only_copy(REPO / "results" / "h100-wgmma", tmp_path / "h100-wgmma")
    base = _junit_only_copy(REPO / "results" / "h100-wgmma-base", tmp_path / "h100-wgmma-base")
    rc, doc = _json(wgmma, base, capsys)
    assert rc == 1
    assert doc["runs"]["base"]["statuses_from"] == "junit.xml" and doc["runs"]["base"]["counts"] == {"pass": 200}
    assert doc["runs"]["base"]["status"] == "not recorded"
    assert doc["observations"]["summary"] == {"in both": 42, "same inputs and outputs": 0, "inputs differ": 42}
    h100 = _junit_only_copy(H100, tmp_path / "h100")
    rc, out = _diff(h100, h100, capsys)
    assert rc == 0 and "376 pass (from junit.xml)" in out


def test_two_emulator_runs_with_one_seed_diff_clean(tmp_path, capsys):
    runs = []
    for name in ("a", "b"):
        out = tmp_path / name
        assert cli.main(["run", "--backend", "emulator", "--quiet", "--seed", "5", "--out", str(out),
                         "--select", VARIANTS[0]]) == 0
        runs.append(out)
    capsys.readouterr()
    rc, out = _diff(*runs, capsys)
    assert rc == 0, out
    assert "4 pass" in out and "1 in both, 1 same inputs and outputs" in out


def test_maps_or_observations_one_run_lacks_are_a_note(pair, capsys):
    base, new = pair
    (new / "observed_maps.npz").unlink()
    shutil.rmtree(new / "observations")
    rc, out = _diff(base, new, capsys)
    assert rc == 0  # nothing comparable changed; what could not be compared is said
    assert "observed lane maps: not compared (see note)" in out
    assert "note: observed maps: not recorded in NEW; not compared" in out
    assert "note: observations: not recorded in NEW; D words not compared" in out
    (base / "observed_maps.npz").write_bytes(b"PK\x03\x04 cut")
    rc, out = _diff(base, new, capsys)
    assert rc == 1 and "observed_maps.npz: unreadable" in out
