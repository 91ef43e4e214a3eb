"""The whole pipeline through the CLI: emulator runs, reports, replays of the recorded H100 run.

``ptxconf run --backend emulator`` end to end (JUnit, summary, observations,
reproducibility), ``ptxconf replay results/h100`` against today's specs and
against deliberately wrong ones (a one-formula typo must fail, naming lanes,
registers and the command that replays it), corrupted observations, usage
errors, ``specs show --json``, and a run that dies or meets a launch error
part way.
"""

from __future__ import annotations

import json
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import ptxconf.backends
import pytest
from ptxconf import cli
from ptxconf.backends.base import LaunchResult
from ptxconf.backends.emulator import EmulatorBackend
from ptxconf.isa import load_specs
from ptxconf.oracle import mma
from ptxconf.run import runner
from ptxconf.run.observations import (
    find_observation,
    load_observation,
    observation_bytes,
    observation_files,
    observation_name,
    open_observation,
)

REPO = Path(__file__).resolve().parents[2]
H100 = REPO / "results" / "h100"
SPECS = load_specs(REPO / "specs")

MMA = "mma.sync.aligned."
RUN_VARIANTS = [
    MMA + "m8n8k4.row.col.f32.f16.f16.f16",  # four computations per warp, not chainable
    MMA + "m16n8k8.row.col.f64.f64.f64.f64",
    MMA + "m16n8k64.row.col.satfinite.s32.s4.u4.s32",
    MMA + "m16n8k128.row.col.s32.b1.b1.s32.xor.popc",
    MMA + "m16n8k32.row.col.kind::f8f6f4.f16.e2m1.e3m2.f16",
    MMA + "m16n8k64.row.col.kind::mxf4nvf4.block_scale.scale_vec::4X.f32.e2m1.e2m1.f32.ue4m3",
]
CHECK_NAMES = ("value", "map.A", "map.B", "map.C")
NAME = re.compile(r"^(?P<variant>\S+):(?P<check>value|map\.[ABC]):seed=(?P<seed>\d+)$")
REPLAY_LINE = re.compile(
    r"^replay: ptxconf run --backend \S+ --select (?P<variant>\S+) --check (?P<check>\S+) --seed (?P<seed>\d+) "
    r"--out (?P<out>ptxconf-replay/\S+)$"
)

pytestmark = pytest.mark.e2e  # whole ``ptxconf run`` / ``replay`` commands on the emulator


def selects(variants) -> list[str]:
    return [arg for vid in variants for arg in ("--select", vid)]


def emulator_run(out: Path, seed: int, variants=RUN_VARIANTS, *extra: str) -> int:
    return cli.main(["run", "--backend", "emulator", "--quiet", "--seed", str(seed), "--out", str(out), *selects(variants), *extra])


def junit_cases(path: Path) -> tuple[list[ET.Element], list[dict[str, str]]]:
    root = ET.parse(path).getroot()
    suites = root.findall("testsuite") if root.tag == "testsuites" else [root]
    cases = [tc for s in suites for tc in s.findall("testcase")]
    props = [{p.get("name"): p.get("value") for p in s.iter("property")} for s in suites]
    return cases, props


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def recorded_variants() -> set[str]:
    return {load_observation(p)[0]["variant"] for p in observation_files(H100 / "observations")}


def replay(directory: Path, tmp_path: Path, specs: Path | None = None) -> int:
    args = ["replay", str(directory), "--out", str(tmp_path / "replay-out"), "--junit", str(tmp_path / "replay.xml")]
    if specs is not None:
        args += ["--specs", str(specs)]
    return cli.main(args)


def failure_blocks(stdout: str) -> dict[str, list[str]]:
    """``FAIL name`` / ``ERROR name`` blocks of the CLI's output: name -> detail lines."""
    blocks: dict[str, list[str]] = {}
    current = None
    for line in stdout.splitlines():
        m = re.match(r"^(FAIL|ERROR) (\S+:\S+:seed=\d+)$", line)
        if m:
            current = m.group(2)
            blocks[current] = []
        elif current is not None:
            if not line.strip() or line.startswith("replay of "):
                current = None
            else:
                blocks[current].append(line)
    return blocks


# ---------------------------------------------------------------------------
# Emulator runs
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two runs with seed 3 and one with seed 4, over RUN_VARIANTS."""
    base = tmp_path_factory.mktemp("runs")
    out = {}
    for name, seed in (("a", 3), ("b", 3), ("c", 4)):
        out[name] = base / name
        assert emulator_run(out[name], seed) == 0
    return out


def test_emulator_run_passes_and_writes_junit(runs):
    cases, props = junit_cases(runs["a"] / "junit.xml")
    assert len(cases) == len(RUN_VARIANTS) * len(CHECK_NAMES)
    seen = set()
    for tc in cases:
        m = NAME.match(tc.get("name"))
        assert m, tc.get("name")
        v = SPECS.variants[m["variant"]]
        # Jenkins splits at the last dot: package ptxconf.<run label>, class <family>.
        assert v.family == "mma.sync" and tc.get("classname") == "ptxconf.a.mma_sync"
        assert m["seed"] == "3"
        assert tc.get("file") is None  # junit-10.xsd forbids it (--junit-flavor gitlab keeps it)
        assert not list(tc), f"{tc.get('name')} did not pass: {[c.tag for c in tc]}"
        seen.add((m["variant"], m["check"]))
    assert seen == {(vid, c) for vid in RUN_VARIANTS for c in CHECK_NAMES}
    assert props
    for p in props:
        assert p["gpu"] == "NumPy emulator"
        assert p["compute_capability"] == "12.0"
        assert p["seed"] == "3"


def test_emulator_run_writes_summary_results_and_observations(runs):
    out = runs["a"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["seed"] == 3
    assert summary["counts"] == {"pass": len(RUN_VARIANTS) * len(CHECK_NAMES)}
    assert summary["failures"] == []
    assert summary["device"]["backend"] == "emulator"
    assert summary["variants_selected"] == len(RUN_VARIANTS)
    records = jsonl(out / "results.jsonl")
    assert len(records) == len(RUN_VARIANTS) * len(CHECK_NAMES)
    assert {r["status"] for r in records} == {"pass"}
    files = [p.name for p in observation_files(out / "observations")]
    assert files == sorted(observation_name(vid, 3) for vid in RUN_VARIANTS)
    for vid in RUN_VARIANTS:
        meta, in_words, out_words = load_observation(out / "observations" / observation_name(vid, 3))
        assert meta["variant"] == vid and meta["seed"] == 3
        assert [c["check"] for c in meta["checks"]] == list(CHECK_NAMES)
        assert in_words.shape[:2] == out_words.shape[:2] and in_words.shape[1] == 32
        assert meta["checks"][-1]["slice"][1] == len(in_words)


def test_same_seed_writes_identical_observations(runs):
    for vid in RUN_VARIANTS:
        name = observation_name(vid, 3)
        ma, ia, oa = load_observation(runs["a"] / "observations" / name)
        mb, ib, ob = load_observation(runs["b"] / "observations" / name)
        assert ma == mb
        assert np.array_equal(ia, ib) and np.array_equal(oa, ob)
    # A different seed draws different inputs.
    _, i3, _ = load_observation(runs["a"] / "observations" / observation_name(RUN_VARIANTS[1], 3))
    _, i4, _ = load_observation(runs["c"] / "observations" / observation_name(RUN_VARIANTS[1], 4))
    assert i3.shape != i4.shape or not np.array_equal(i3, i4)


def test_replay_of_an_emulator_run_passes(runs, tmp_path, capsys):
    assert replay(runs["a"], tmp_path) == 0
    assert f"{len(RUN_VARIANTS) * 4} passed, 0 failed, 0 errors" in capsys.readouterr().out


# ---------------------------------------------------------------------------
# Replays of the recorded H100 run
# ---------------------------------------------------------------------------


def test_replay_of_the_recorded_h100_run_passes(tmp_path, capsys):
    assert (H100 / "observations").is_dir(), f"recorded H100 run missing under {H100}"
    files = observation_files(H100 / "observations")
    assert len(files) >= 90
    assert replay(H100, tmp_path) == 0
    out = capsys.readouterr().out
    assert "H100" in out and "0 failed, 0 errors" in out
    cases, props = junit_cases(tmp_path / "replay.xml")
    assert len(cases) == 4 * len(files)
    failing = [tc.get("name") for tc in cases if list(tc)]
    assert failing == []
    assert {NAME.match(tc.get("name"))["variant"] for tc in cases} == recorded_variants()
    assert all("H100" in p["gpu"] and p["compute_capability"] == "9.0" for p in props)
    summary = json.loads((H100 / "summary.json").read_text())
    assert summary["counts"]["pass"] == len(cases)
    # Replaying writes nothing into the recorded run.
    assert not (H100 / "replay").exists()


def _wrong_spec(tmp_path: Path, layout: str, old: str, new: str) -> Path:
    """specs/ copied with ONE formula of ``layout`` edited."""
    specs = tmp_path / "specs"
    shutil.copytree(REPO / "specs", specs)
    path = specs / "mma_sync.yaml"
    text = path.read_text()
    head, sep, tail = text.partition(f"\n  {layout}:\n")
    assert sep, f"layout {layout} not found"
    body, nxt, rest = tail.partition("\n  m16n8k16.")  # the next layout starts a new block
    assert body.count(old) == 1, f"{old!r} not once in {layout}"
    path.write_text(head + sep + body.replace(old, new) + nxt + rest)
    assert load_specs(specs).layouts[layout] != SPECS.layouts[layout]
    return specs


def _check_wrong_spec_replay(tmp_path, capsys, specs: Path, operand: str, layout: str, registers: set[int]):
    assert replay(H100, tmp_path, specs) == 1
    out = capsys.readouterr().out
    blocks = failure_blocks(out)
    affected = {vid for vid in recorded_variants() if SPECS.variants[vid].operands[operand].layout.name == layout}
    assert affected, f"no recorded variant uses {layout}"
    assert {NAME.match(n)["variant"] for n in blocks} == affected
    for vid in affected:  # map.C has zero multiplicands: the typo cannot show there
        assert f"{vid}:map.C:seed=0" not in blocks
        assert f"{vid}:value:seed=0" in blocks and f"{vid}:map.{operand}:seed=0" in blocks
    for k in ("lane", "register", "expected 0x", "layout"):
        assert k in out
    for name, lines in blocks.items():
        m, r = NAME.match(name), REPLAY_LINE.match(lines[-1])
        assert r, f"{name}: failure text ends with {lines[-1]!r}"
        assert (r["variant"], r["check"], r["seed"]) == (m["variant"], m["check"], m["seed"])
        assert any(re.search(r"lane \d+ register d\d+ .*expected 0x[0-9a-f]+ .* actual 0x[0-9a-f]+", ln) for ln in lines)
    # The map check names the very slots of the edited operand whose formula changed.
    slot = re.compile(rf"^{operand} lane (\d+) element (\d+) \(register (\d+)\): spec \(.*\), observed \(.*\)$")
    named = [slot.match(ln) for lines in blocks.values() for ln in lines]
    named = [m for m in named if m]
    assert named, f"no {operand} lane named in the map diff"
    assert {int(m[3]) for m in named} <= registers
    # The JUnit failure text ends with the same replay command.
    cases, _ = junit_cases(tmp_path / "replay.xml")
    failures = [f for tc in cases for f in tc.findall("failure")]
    assert len(failures) == len(blocks)
    assert all(REPLAY_LINE.match((f.text or "").strip().splitlines()[-1]) for f in failures)


def test_replay_with_a_wrong_a_formula_fails_naming_lanes(tmp_path, capsys):
    specs = _wrong_spec(
        tmp_path,
        "m16n8k16.A.b16",
        "else (threadID_in_group * 2) + (i & 0x1) + 8",
        "else (threadID_in_group * 2) + (1 - (i & 0x1)) + 8",
    )
    _check_wrong_spec_replay(tmp_path, capsys, specs, "A", "m16n8k16.A.b16", registers={2, 3})


def test_replay_with_a_wrong_b_formula_fails_too(tmp_path, capsys):
    specs = _wrong_spec(
        tmp_path,
        "m16n8k16.B.b16",
        "else (threadID_in_group * 2) + (i & 0x1) + 8",
        "else (threadID_in_group * 2) + (1 - (i & 0x1)) + 8",
    )
    _check_wrong_spec_replay(tmp_path, capsys, specs, "B", "m16n8k16.B.b16", registers={1})


def _copy_one_observation(tmp_path: Path, vid: str) -> tuple[Path, Path]:
    rec = tmp_path / "rec"
    (rec / "observations").mkdir(parents=True)
    shutil.copy(H100 / "summary.json", rec / "summary.json")
    name = find_observation(H100 / "observations", vid, 0).name
    shutil.copy(H100 / "observations" / name, rec / "observations" / name)
    return rec, rec / "observations" / name


@pytest.mark.parametrize("what", ["D bit", "checksum"])
def test_replay_of_a_corrupted_observation_fails(tmp_path, capsys, what):
    vid = MMA + "m16n8k16.row.col.f32.f16.f16.f32"
    rec, path = _copy_one_observation(tmp_path, vid)
    assert replay(rec, tmp_path) == 0  # the untouched copy passes
    capsys.readouterr()
    with open_observation(path) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(str(arrays["meta"]))
    (a, _), = [c["slice"] for c in meta["checks"] if c["check"] == "value"]
    case, lane = 2, 13
    out_words = arrays["out_words"].copy()
    word = 1 if what == "D bit" else SPECS.variants[vid].operands["D"].words  # d1, or the checksum word
    out_words[a + case, lane, word] ^= np.uint32(1)
    path.write_bytes(observation_bytes(**{**arrays, "out_words": out_words}))
    assert replay(rec, tmp_path / "again") == 1
    out = capsys.readouterr().out
    blocks = failure_blocks(out)
    assert list(blocks) == [f"{vid}:value:seed=0"]
    text = "\n".join(blocks[f"{vid}:value:seed=0"])
    if what == "D bit":
        assert "1 of 1024 D elements differ" in text
        assert re.search(rf"case {case} lane {lane} register d1 \(element 1\) row \d+ col \d+: expected 0x", text)
        assert "[numerics:" in text or "[layout:" in text
    else:
        assert "checksum word differs" in text
    assert REPLAY_LINE.match(blocks[f"{vid}:value:seed=0"][-1])


# ---------------------------------------------------------------------------
# Usage errors and specs show
# ---------------------------------------------------------------------------


def test_select_matching_nothing_is_a_clear_error(tmp_path, capsys):
    assert cli.main(["run", "--backend", "emulator", "--quiet", "--out", str(tmp_path / "o"), "--select", "nonsense"]) == 2
    assert "--select nonsense matches no variant" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_select_with_a_typo_suggests_the_variant(tmp_path, capsys):
    assert cli.main(["run", "--backend", "emulator", "--quiet", "--out", str(tmp_path / "o"), "--select",
                     MMA + "m16n8k16.row.col.f32.f16.f16.f33"]) == 2
    err = capsys.readouterr().err
    assert "matches no variant" in err
    assert "did you mean " + MMA + "m16n8k16.row.col.f32.f16.f16.f32" in err


def test_specs_show_typo_suggests_the_right_id(capsys):
    assert cli.main(["specs", "show", MMA + "m16n8k16.row.col.f32.f16.f16.f33", "--operand", "A"]) == 2
    msg = capsys.readouterr().err
    assert "unknown variant" in msg and "did you mean" in msg
    assert MMA + "m16n8k16.row.col.f32.f16.f16.f32" in msg


def test_specs_show_json_gives_the_documented_map(capsys):
    vid = MMA + "m16n8k16.row.col.f32.f16.f16.f32"
    assert cli.main(["specs", "show", vid, "--operand", "A", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc) == {"variant", "operand", "shape", "map"}
    assert doc["variant"] == vid and doc["operand"] == "A" and doc["shape"] == [16, 16]
    assert len(doc["map"]) == 256
    cells = set()
    for entry in doc["map"]:
        assert len(entry) == 4 and all(isinstance(x, int) for x in entry)
        lane, i, row, col = entry
        group, thread = lane >> 2, lane % 4  # Figure 79 / the ISA's formulas for .f16 A
        assert row == (group if i in (0, 1, 4, 5) else group + 8), entry
        assert col == thread * 2 + (i & 1) + (8 if i >= 4 else 0), entry
        cells.add((row, col))
    assert cells == {(r, c) for r in range(16) for c in range(16)}
    assert sorted((e[0], e[1]) for e in doc["map"]) == [(lane, i) for lane in range(32) for i in range(8)]


# ---------------------------------------------------------------------------
# Runs that die or meet launch errors
# ---------------------------------------------------------------------------


def test_a_run_killed_half_way_keeps_what_it_did(tmp_path, monkeypatch):
    variants = [
        MMA + "m8n8k4.row.col.f64.f64.f64.f64",
        MMA + "m16n8k16.row.col.f32.bf16.bf16.f32",
        MMA + "m16n8k32.row.col.kind::f8f6f4.f32.e4m3.e2m1.f32",
        MMA + "m16n8k64.row.col.s32.u4.s4.s32",
    ]
    # A seed that spreads them over at least two modules (.version/.target groups).
    for seed in range(50):
        groups = {
            (str(p.version), p.target.name)
            for p in (runner.plan_variant(SPECS.variants[v], seed, (12, 0), EmulatorBackend(mma).max_ptx(), ("value",)) for v in variants)
        }
        if len(groups) >= 2:
            break
    assert len(groups) >= 2
    real = runner.launch_module
    done: list[str] = []

    def dies_after_the_first_module(backend, plans, *rest):
        if done:
            raise KeyboardInterrupt("killed")
        outcomes = real(backend, plans, *rest)
        done.extend(p.variant.id for p in plans)
        return outcomes

    monkeypatch.setattr(runner, "launch_module", dies_after_the_first_module)
    out = tmp_path / "run"
    assert emulator_run(out, seed, variants, "--check", "value") == 130  # one exit status, no traceback
    assert 1 <= len(done) < len(variants)
    assert json.loads((out / "summary.json").read_text())["status"] == "interrupted"
    records = jsonl(out / "results.jsonl")
    assert [(r["variant"], r["check"], r["status"]) for r in records] == [(v, "value", "pass") for v in done]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["counts"] == {"pass": len(done)}
    cases, _ = junit_cases(out / "junit.xml")
    assert sorted(tc.get("name") for tc in cases) == sorted(f"{v}:value:seed={seed}" for v in done)
    assert [p.name for p in observation_files(out / "observations")] == sorted(observation_name(v, seed) for v in done)


def test_a_launch_error_becomes_an_error_verdict_and_the_run_goes_on(tmp_path, monkeypatch, capsys):
    failed: list[str] = []
    seen: list[str] = []

    class FaultyBackend(EmulatorBackend):
        """The first variant it meets faults; the rest run normally."""

        def run(self, module, launches):
            vid = launches[0].probe.variant.id
            if vid not in seen:
                seen.append(vid)
            if not failed or vid == failed[0]:
                failed[:] = [vid]
                return [LaunchResult(None, error="CUDA_ERROR_ILLEGAL_INSTRUCTION (injected)") for _ in launches]
            return super().run(module, launches)

    monkeypatch.setattr(ptxconf.backends, "get_backend", lambda name, **kw: FaultyBackend(kw["semantics"]))
    variants = RUN_VARIANTS[:4]
    out = tmp_path / "run"
    assert emulator_run(out, 0, variants) == 1
    (bad,) = failed
    assert seen[0] == bad and len(seen) == len(variants)  # the run went on after the fault
    records = jsonl(out / "results.jsonl")
    assert len(records) == 4 * len(variants)
    for r in records:
        if r["variant"] == bad:
            assert r["status"] == "error" and "CUDA_ERROR_ILLEGAL_INSTRUCTION (injected)" in r["message"]
        else:
            assert r["status"] == "pass", r
    summary = json.loads((out / "summary.json").read_text())
    assert summary["counts"] == {"pass": 4 * (len(variants) - 1), "error": 4}
    assert sorted(summary["failures"]) == sorted(f"{bad}:{c}:seed=0" for c in CHECK_NAMES)
    cases, _ = junit_cases(out / "junit.xml")
    errors = [tc.get("name") for tc in cases if tc.find("error") is not None]
    assert sorted(errors) == sorted(f"{bad}:{c}:seed=0" for c in CHECK_NAMES)
    saved = [p.name for p in observation_files(out / "observations")]
    assert saved == sorted(observation_name(v, 0) for v in variants if v != bad)
    stdout = capsys.readouterr().out
    blocks = failure_blocks(stdout)
    assert set(blocks) == {f"{bad}:{c}:seed=0" for c in CHECK_NAMES}
    assert all(REPLAY_LINE.match(lines[-1]) for lines in blocks.values())


def test_a_module_the_run_stops_before_it_is_built_is_not_run_and_loses_nothing(tmp_path, monkeypatch):
    """A stop while a module still waits for its build (the backend hands back its launches ``abandoned``): the run
    ends as interrupted, the modules launched before keep their verdicts, and the abandoned ones are listed as not run
    (``--resume`` runs them), never recorded as errors."""
    import os
    import signal

    stopped: list[str] = []

    class StoppedWhileBuilding(EmulatorBackend):
        def run(self, module, launches):
            if not self.resumed and (stopped or len(self.ran) >= 2):  # the third module: stopped while being built
                if not stopped:
                    os.kill(os.getpid(), signal.SIGTERM)
                stopped.append(launches[0].probe.variant.id)
                return [LaunchResult(None, error="not run: stopped", abandoned=True) for _ in launches]
            self.ran.append(launches[0].probe.variant.id)
            return super().run(module, launches)

    def make(name, **kw):
        b = StoppedWhileBuilding(kw["semantics"])
        b.ran, b.resumed = [], bool(stopped)  # the backend of the --resume run abandons nothing
        return b

    monkeypatch.setattr(ptxconf.backends, "get_backend", make)
    monkeypatch.setattr(runner, "MODULE_PLANS", 1)
    variants = RUN_VARIANTS[:5]
    out = tmp_path / "run"
    assert emulator_run(out, 0, variants, "--jobs", "1") == 143
    records = jsonl(out / "results.jsonl")
    assert records and {r["status"] for r in records} == {"pass"}
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "interrupted" and stopped
    assert set(stopped) <= set(summary["variants_not_run"]) and not {r["variant"] for r in records} & set(stopped)
    assert emulator_run(out, 0, variants, "--jobs", "1", "--resume") == 0
    assert {r["variant"] for r in jsonl(out / "results.jsonl")} == set(variants)
