"""A spec directory edited under a running run.

specs/ is copied to a tmp dir and a run (a child process, slowed) is started with ``--specs`` on the
copy; once its first verdicts are written, the m16n8k16 A (.b16) row formula is changed in the copy
(rows swapped: still a valid layout, but a different one).  The run must finish without a crash, its
verdicts all from the specs it loaded (all pass; its observations replay clean against the original
specs and fail against the edited ones), and its summary's ``specs_hash`` that of the specs at start.
"""

from __future__ import annotations

import shutil

from faultkit import (
    REPO,
    Child,
    child_env,
    line_count,
    read_results,
    read_summary,
    replay_verdicts,
    run_args,
    wait_until,
)
from faultkit import verdicts as as_verdicts
from ptxconf.isa import load_specs
from ptxconf.run.report import specs_hash

OLD_ROW = 'row: "groupID if 0 <= i < 2 or 4 <= i < 6 else groupID + 8"'
NEW_ROW = 'row: "groupID + 8 if 0 <= i < 2 or 4 <= i < 6 else groupID"'


def test_specs_edited_mid_run_do_not_reach_the_run(tmp_path, reference, tally):
    specs_dir = tmp_path / "specs"
    shutil.copytree(REPO / "specs", specs_dir)
    start_hash = specs_hash(load_specs(specs_dir))
    out = tmp_path / "run"
    child = Child(run_args(out, "--specs", str(specs_dir)), tmp_path / "logs",
                  child_env(PTXCONF_FAULT_VERDICT_DELAY="0.08", PTXCONF_FAULT_MODULE_PLANS="2"))
    wait_until(lambda: line_count(out / "results.jsonl") >= 1, 30, child, "the first verdicts")
    yaml = specs_dir / "mma_sync.yaml"
    text = yaml.read_text()
    assert text.count(OLD_ROW) == 1
    yaml.write_text(text.replace(OLD_ROW, NEW_ROW))
    assert child.alive(), "the edit should land while the run goes on"
    assert child.wait() == 0, child.stderr()
    assert "Traceback" not in child.stderr()
    records, cut = read_results(out / "results.jsonl")
    assert not cut
    got = as_verdicts(records)
    summary = read_summary(out)
    assert summary["status"] == "complete" and summary["specs_hash"] == start_hash
    assert specs_hash(load_specs(specs_dir)) != start_hash
    lost = len(set(reference) - set(got)) + sum(1 for k, s in got.items() if reference.get(k) != s)
    # Observations are those of the specs at start: clean against them, caught by the edited ones.
    edited = replay_verdicts(out, tmp_path / "replay-edited", specs_dir)
    yaml.write_text(text)
    original = replay_verdicts(out, tmp_path / "replay-original", specs_dir)
    assert original == got
    assert any(s == "fail" for (v, c), s in edited.items() if c == "map.A" and ".bf16." in v)
    tally.check(lost=lost, false_passes=0, injected=1)
