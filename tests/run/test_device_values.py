"""``ptxconf run --values device``: the value checks drawn, run and compared where the bulk cases run (the emulator
here, CuPy on a GPU in test_gpu.py), beside the host's pipeline for the other checks.

The same checks as a host run, each case kept as a digest that replay checks against the host's prediction; a
differing case is explained lane by lane and replays alone through ``ptxconf fuzz case``; a damaged or stale record
is one error naming its line; a worker that dies is its variant's error and a fresh worker goes on; a resumed run
makes only what it had not recorded."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import numpy as np
import pytest
from ptxconf.backends.bulk_device import EmulatedDevice
from ptxconf.cli.main import main as cli_main
from ptxconf.core.bulk import case_digests
from ptxconf.core.family import family_of, run_variants_of
from ptxconf.isa import load_specs
from ptxconf.run.devicevalues import DeviceValues, drawn_on_device
from ptxconf.run.observations import DEVICE_VALUES

SPECS = load_specs()
run_variants_of(SPECS)
# One form of each kind the device draws (wgmma with four immediate sets, wgmma.sp with selectors, dense and sparse
# mma, wmma, ldmatrix) and one it does not (tcgen05: its value check stays on the host).
PICK = ["wgmma.mma_async.sync.aligned.m64n8k16.f16.f16.f16/ss",
        "wgmma.mma_async.sp.sync.aligned.m64n8k32.f16.f16.f16/rs",
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
        "mma.sp.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16",
        "wmma.mma.sync.aligned.row.col.m16n16k16.f32.bf16.bf16.f32",
        "ldmatrix.sync.aligned.m8n8.x2.trans.b16",
        "tcgen05.mma.cta_group::1.kind::f16.f32.bf16.bf16.m128n224k16"]
SELECT = [a for vid in PICK for a in ("--select", vid)]


def _run(tmp_path: Path, name: str, *extra: str) -> tuple[int, Path]:
    out = tmp_path / name
    rc = cli_main(["run", "--backend", "emulator", "--jobs", "1", "--quiet", "--out", str(out), *SELECT, *extra])
    return rc, out


def _results(out: Path) -> dict[tuple[str, str], dict]:
    return {(r["variant"], r["check"]): r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}


def _records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "observations" / DEVICE_VALUES).read_text().splitlines()]


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("values")
    host = _run(tmp, "host")
    device = _run(tmp, "device", "--values", "device", "--device-cases", "24")
    return host, device


def test_picked_forms_exist_and_only_tcgen05_stays_on_the_host():
    assert [drawn_on_device(SPECS.get(vid)) for vid in PICK] == [True] * 6 + [False]


def test_the_device_makes_the_checks_the_host_makes(both):
    (rc_h, host), (rc_d, device) = both
    assert rc_h == rc_d == 0
    h, d = _results(host), _results(device)
    assert h.keys() == d.keys()  # value[...] of every immediate set, named as on the host
    assert {k: r["status"] for k, r in d.items()} == {k: r["status"] for k, r in h.items()}
    assert {r["status"] for k, r in d.items() if not k[0].startswith("tcgen05")} == {"pass"}
    values = {k for k in d if k[1].split("[")[0] == "value"}
    assert len(values) > len(PICK)  # wgmma's and wgmma.sp's immediate sets are checks of their own
    recorded = {(r["variant"], r["check"]) for r in _records(device)}
    tcgen = {k for k in values if k[0].startswith("tcgen05")}
    assert recorded == values - tcgen and tcgen  # tcgen05's value check is the host's (skipped on this emulator)
    for r in _records(device):
        assert r["cases"] == 24 and r["differing_count"] == 0
        assert len(base64.b64decode(r["digests"])) == 8 * 24
    summary = json.loads((device / "summary.json").read_text())
    assert summary["status"] == "complete" and summary["variants_done"] == len(PICK)
    assert summary["stages_s"]["device_values_cpu"] > 0


def test_replay_checks_every_digest(both, capsys):
    _, (_, device) = both
    assert cli_main(["replay", str(device)]) == 0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    ran = [r for r in _results(device).values() if r["status"] != "skip"]
    assert f"{len(ran)} passed, 0 failed, 0 errors" in line


def test_digests_are_positional_and_see_only_defined_words():
    words = np.arange(2 * 32 * 3, dtype=np.uint32).reshape(2, 32, 3)
    defined = np.ones((32, 3), bool)
    defined[:, 2] = False
    base = case_digests(np, words, defined)
    padded = words.copy()
    padded[:, :, 2] ^= 0xFFFF  # undefined words: no difference
    assert np.array_equal(case_digests(np, padded, defined), base)
    swapped = words.copy()
    swapped[0, 0, [0, 1]] = swapped[0, 0, [1, 0]]  # the same words in other places
    assert case_digests(np, swapped, defined)[0] != base[0] and case_digests(np, swapped, defined)[1] == base[1]


class _FlipDevice(EmulatedDevice):
    """The emulator, one bit of D wrong in one case of one form (a hardware or model disagreement)."""

    def __init__(self, variant: str, case: int, **kw):
        super().__init__(**kw)
        self.variant, self.case = variant, case

    def launch(self, module, probe, in_words, out_words, order, warps_per_block):
        out = super().launch(module, probe, in_words, out_words, order, warps_per_block)
        if probe.variant.id == self.variant and len(out) > self.case:
            out = out.copy()
            out[self.case, 5, 0] ^= 1 << 3
        return out


class _DyingDevice(EmulatedDevice):
    """The emulator, whose process dies while it runs one form (a fault that takes the worker down)."""

    def __init__(self, variant: str, **kw):
        super().__init__(**kw)
        self.variant = variant

    def launch(self, module, probe, in_words, out_words, order, warps_per_block):
        if probe.variant.id == self.variant:
            os._exit(9)
        return super().launch(module, probe, in_words, out_words, order, warps_per_block)


def _device_run(monkeypatch, tmp_path: Path, name: str, device_class, *args) -> tuple[int, Path]:
    from ptxconf.cli import run as run_cli

    real = run_cli._device_values

    def patched(cli_args, backend):
        made = real(cli_args, backend)
        if made is None:
            return None

        def values(variants):
            dv = made(variants)
            dv.make_device = lambda _ordinal: device_class(*args, cc=backend.compute_capability(),
                                                           max_ptx=backend.max_ptx())
            return dv
        return values

    monkeypatch.setattr(run_cli, "_device_values", patched)
    return _run(tmp_path, name, "--values", "device", "--device-cases", "16", "--device-workers", "2")


def test_a_differing_case_is_explained_and_replays_alone(monkeypatch, tmp_path, capsys):
    vid = PICK[2]  # mma: one value check
    rc, out = _device_run(monkeypatch, tmp_path, "flip", _FlipDevice, vid, 11)
    assert rc == 1
    r = _results(out)[(vid, "value")]
    assert r["status"] == "fail"
    assert "1 of 16 cases differ on the device (case 11, shown below as case 0)" in r["message"]
    assert "lane 5" in r["details"] and "row" in r["details"] and "col" in r["details"]
    assert f"replay: ptxconf fuzz case '{vid}' --seed 0 --case 11 --backend emulator" in r["details"]
    rec = next(x for x in _records(out) if x["variant"] == vid)
    assert rec["differing"] == [11] and [s["case"] for s in rec["shown"]] == [11]
    # The others are untouched; replay finds the same case from its digest and explains it from the kept words.
    assert {x["status"] for k, x in _results(out).items() if k[0] != vid and k[0] != PICK[-1]} == {"pass"}
    capsys.readouterr()
    assert cli_main(["replay", str(out)]) == 1
    text = capsys.readouterr().out
    assert "1 of 16 cases differ on the device (case 11, shown below as case 0)" in text and "lane 5" in text
    # The case alone, through the ordinary launch path of the emulator, agrees with the spec (the flip was the
    # device's): what ``fuzz case`` says on a backend that computes it right.
    assert cli_main(["fuzz", "case", vid, "--seed", "0", "--case", "11", "--backend", "emulator"]) == 0


def test_a_kernel_of_several_is_named_and_replays_alone(monkeypatch, tmp_path, capsys):
    vid = PICK[0]  # wgmma: a value check per immediate set
    fam = family_of(SPECS.get(vid))
    checks = [bc.check for bc in fam.bulk_value_cases(SPECS.get(vid), 0, (9, 0), EmulatedDevice().max_ptx())]
    assert len(checks) == 4 and len(set(checks)) == 4
    rc, out = _device_run(monkeypatch, tmp_path, "flip", _FlipDevice, vid, 3)
    failed = {k[1] for k, r in _results(out).items() if k[0] == vid and r["status"] == "fail"}
    assert failed == set(checks)
    detail = _results(out)[(vid, checks[1])]["details"]
    assert f"--case 3 --check '{checks[1]}' --backend emulator" in detail
    capsys.readouterr()
    assert cli_main(["fuzz", "case", vid, "--seed", "0", "--case", "3", "--check", checks[1], "--backend", "emulator"]) == 0
    assert f"PASS {vid}:{checks[1]}:seed=0:case=3" in capsys.readouterr().out
    assert cli_main(["fuzz", "case", vid, "--seed", "0", "--case", "3", "--check", "value[nope]",
                     "--backend", "emulator"]) == 2


def test_a_worker_that_dies_is_its_variants_error_and_the_rest_run(monkeypatch, tmp_path):
    vid = PICK[4]  # wmma
    rc, out = _device_run(monkeypatch, tmp_path, "dies", _DyingDevice, vid)
    assert rc == 1
    res = _results(out)
    assert res[(vid, "value")]["status"] == "error"
    assert "the device worker died (exit code 9)" in res[(vid, "value")]["message"]
    assert {r["status"] for k, r in res.items() if k != (vid, "value") and k[0] != PICK[-1]} == {"pass"}
    assert json.loads((out / "summary.json").read_text())["backend_stats"]["device_values"]["restarts"] >= 1


def _rewrite(out: Path, change) -> None:
    path = out / "observations" / DEVICE_VALUES
    recs = [json.loads(line) for line in path.read_text().splitlines()]
    path.write_text("".join(json.dumps(r) + "\n" for r in change(recs)))


def test_replay_tells_a_stale_record_from_a_differing_one(both, tmp_path, capsys):
    import shutil

    _, (_, device) = both
    copy = tmp_path / "copy"
    shutil.copytree(device, copy)

    def tamper(recs):
        digests = np.frombuffer(base64.b64decode(recs[0]["digests"]), "<u8").copy()
        digests[7] ^= 1
        recs[0]["digests"] = base64.b64encode(digests.tobytes()).decode()
        recs[1]["in_digest"] = "0" * 16
        recs[2]["cases"] = 3
        return recs

    _rewrite(copy, tamper)
    with open(copy / "observations" / DEVICE_VALUES, "a") as fh:
        fh.write("{not json\n")
    capsys.readouterr()
    assert cli_main(["replay", str(copy)]) == 1
    text = capsys.readouterr().out
    assert "1 of 24 cases: the device's words differ from today's prediction (their digests; first: case 7" in text
    assert "the bulk stream no longer draws the recorded inputs" in text
    assert "3 digests for 24 cases" not in text and "24 digests for 3 cases" in text
    assert f"{DEVICE_VALUES}:{len(_records(device)) + 1}:" in text


def test_a_resumed_run_makes_only_what_it_had_not_recorded(monkeypatch, tmp_path):
    rc, out = _run(tmp_path, "resume", "--values", "device", "--device-cases", "8")
    assert rc == 0
    before = _results(out)
    lines = (out / "results.jsonl").read_text().splitlines()
    # A kill after the host's verdicts of every form but before the device's value checks of the last form:
    # their records and verdicts are gone.
    gone = {r["variant"] for r in _records(out)[-1:]}
    keep = [line for line in lines if not (json.loads(line)["variant"] in gone and json.loads(line)["check"].startswith("value"))]
    (out / "results.jsonl").write_text("\n".join(keep) + "\n")
    _rewrite(out, lambda recs: [r for r in recs if r["variant"] not in gone])
    made: list = []
    real = DeviceValues.__init__

    def spy(self, make_device, devices, variants, *a, **kw):
        made.append([v.id for v in variants])
        real(self, make_device, devices, variants, *a, **kw)

    monkeypatch.setattr(DeviceValues, "__init__", spy)
    assert cli_main(["run", "--backend", "emulator", "--jobs", "1", "--quiet", "--out", str(out), *SELECT,
                     "--values", "device", "--device-cases", "8", "--resume"]) == 0
    assert made == [sorted(gone)]
    after = _results(out)
    assert {k: r["status"] for k, r in after.items()} == {k: r["status"] for k, r in before.items()}


def test_no_host_plan_makes_a_value_check_the_device_makes():
    """Every family's plan, asked for the checks a device run leaves to the host, makes no value check of its own (a
    .b1 wgmma form's value check stands in for its maps: the device makes it, and its host part is empty)."""
    from ptxconf.core.plan import support_reason
    from ptxconf.isa.targets import PtxVersion
    from ptxconf.run.runner import RunRequest, plan_variant

    cc, max_ptx = (9, 0), PtxVersion(9, 0)
    every = [v for v in SPECS.variants.values() if drawn_on_device(v) and support_reason(v, cc, max_ptx) is None]
    sample = [v for i, v in enumerate(every) if i % 12 == 0 or getattr(v, "atype", "") == "b1"]
    request = RunRequest(0, None, values_elsewhere=frozenset(v.id for v in sample))
    host_less = 0
    for v in sample:
        checks = request.checks_for(v)
        if not family_of(v).checks_of(v, checks):
            host_less += 1
            continue
        made = [cs.check for cs in plan_variant(v, 0, cc, max_ptx, checks).case_sets]
        assert made and not [c for c in made if c.split("[")[0] == "value"], (v.id, made)
    assert host_less >= 36  # the .b1 wgmma forms


def test_a_check_that_the_value_check_stands_in_for_is_made_on_the_device(tmp_path):
    """``--check map.A`` of a .b1 wgmma form is its value check (its elements are too few to tag), on the host or on
    the device alike."""
    b1 = "wgmma.mma_async.sync.aligned.m64n8k256.s32.b1.b1.and.popc/ss"
    got = {}
    for values in ("host", "device"):
        out = tmp_path / values
        assert cli_main(["run", "--backend", "emulator", "--jobs", "1", "--quiet", "--out", str(out), "--select", b1,
                         "--check", "map.A", "--values", values, "--device-cases", "8"]) == 0
        got[values] = {k: r["status"] for k, r in _results(out).items()}
    assert got["host"] == got["device"] == {(b1, "value"): "pass"}


def test_diff_compares_the_device_s_cases_by_their_digests(both, tmp_path, capsys):
    """Two runs whose devices made the value checks: a case whose out words differ is named (the same inputs, by their
    digest), a check whose inputs differ is not compared, a check in one run only is listed."""
    import shutil

    _, (_, device) = both
    copy = tmp_path / "copy"
    shutil.copytree(device, copy)
    assert cli_main(["diff", str(device), str(copy)]) == 0
    recs = _records(device)

    def tamper(recs):
        digests = np.frombuffer(base64.b64decode(recs[0]["digests"]), "<u8").copy()
        digests[[2, 9]] ^= 1
        recs[0]["digests"] = base64.b64encode(digests.tobytes()).decode()
        recs[1]["in_digest"] = "0" * 16
        return recs[:-1]

    _rewrite(copy, tamper)
    capsys.readouterr()
    assert cli_main(["diff", str(device), str(copy)]) == 1
    text = capsys.readouterr().out
    first, second, last = (f"{r['variant']}:{r['check']}" for r in (recs[0], recs[1], recs[-1]))
    assert f"{first}:seed=0: 2 of 24 cases' out words differ for the same inputs (their digests; cases 2, 9)" in text
    assert f"{second}:seed=0: inputs differ" in text
    assert "only in BASE" in text and last in text
