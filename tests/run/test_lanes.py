"""Lanes: a run on several devices runs a whole pipeline per device in a process of its own, and the run's process
records what they send: every verdict once, observations published only after their verdicts, a stop honoured by
every lane, a lane that dies named (and what it sent kept)."""

from __future__ import annotations

import os
import threading
import time

import pytest
from ptxconf.backends.devices import DeviceSet
from ptxconf.backends.emulator import EmulatorBackend
from ptxconf.core.family import run_variants_of
from ptxconf.isa import load_specs
from ptxconf.oracle import mma
from ptxconf.run import runner
from ptxconf.run.observations import PENDING, observation_files, observation_name

SPECS = load_specs()
run_variants_of(SPECS)


def _variants():
    return [v for v in SPECS.variants.values() if v.family in ("mma.sync", "ldmatrix")][:16]


class _Dies(EmulatorBackend):
    """A device whose lane ends abruptly at its second module (a crash of the whole lane process)."""

    modules = 0

    def run(self, module, launches):
        self.modules += 1
        if self.modules == 2:
            os._exit(3)
        return super().run(module, launches)


def _run(backend, tmp_path, stop=None, stages=None, seen=None):
    seen = [] if seen is None else seen

    def on_outcome(o):  # recorded here first: its observation is still pending, published only after
        name = observation_name(o.variant.id, 7)
        assert (tmp_path / "obs" / (name + PENDING)).exists() and not (tmp_path / "obs" / name).exists()
        seen.append(o.variant.id)

    runner.MODULE_PLANS, saved = 2, runner.MODULE_PLANS
    try:
        runner.run_variants(backend, _variants(), runner.RunRequest(7, value_cases=2, jobs=2, observations=tmp_path / "obs"),
                            on_outcome=on_outcome, stop=stop, stages=stages)
    finally:
        runner.MODULE_PLANS = saved
    return seen


def test_every_variant_recorded_once_and_its_observation_published(tmp_path):
    two = DeviceSet([EmulatorBackend(mma), EmulatorBackend(mma)])
    seen = _run(two, tmp_path)
    assert sorted(seen) == sorted(v.id for v in _variants())
    files = list((tmp_path / "obs").iterdir())
    assert not [f for f in files if f.name.endswith(PENDING)], "every observation published"
    assert len(observation_files(tmp_path / "obs")) == len(seen)


def test_the_timeline_says_when_each_lane_did_what(tmp_path):
    """Each lane's moments reach the run under the lane's name, in the order a pipeline makes them."""
    stages = runner.Stages()
    stages.mark("start")
    _run(DeviceSet([EmulatorBackend(mma), EmulatorBackend(mma)]), tmp_path, stages=stages)
    line = stages.timeline(stages.marks()["start"])
    assert list(line)[:2] == ["start", "lanes_start"] and list(line)[-1] == "lanes_ended"
    assert line["lanes_start"] <= line["modules_dealt"] <= line["lanes_ended"], "dealt out while the lanes start"
    for lane in ("lane0", "lane1"):
        order = [line[f"{lane}.{m}"] for m in ("pipeline", "plan_workers_ready", "first_plan", "first_module",
                                               "first_launch", "first_launched", "last_launched", "launches_done",
                                               "compared") if f"{lane}.{m}" in line or m != "plan_workers_ready"]
        assert order == sorted(order) and line["lanes_start"] <= order[0] and order[-1] <= line["lanes_ended"]


def test_a_stop_reaches_every_lane_and_nothing_recorded_is_lost(tmp_path):
    seen: list = []
    two = DeviceSet([EmulatorBackend(mma), EmulatorBackend(mma)])
    got = _run(two, tmp_path, stop=lambda: len(seen) > 0, seen=seen)  # asked once the first outcome is recorded
    assert got and len(got) == len(set(got)) and len(got) < len(_variants())
    published = observation_files(tmp_path / "obs")
    assert len(published) == len(got), "the recorded ones published, none other"


def test_a_lane_that_dies_is_named_and_what_it_sent_is_kept(tmp_path):
    """The lane that dies takes no more modules; the other takes the rest.  Outcomes leave a lane module by module, so
    what was recorded is whole modules, each once."""
    two = DeviceSet([EmulatorBackend(mma), _Dies(mma)])
    seen: list = []
    runner.MODULE_PLANS, saved = 2, runner.MODULE_PLANS
    try:
        dealt = [[v.id for v in m] for m in runner.dealt_modules(two, _variants(), 7)]
        with pytest.raises(RuntimeError, match="exit status 3"):
            runner.run_variants(two, _variants(), runner.RunRequest(7, value_cases=2, jobs=2),
                                on_outcome=lambda o: seen.append(o.variant.id))
    finally:
        runner.MODULE_PLANS = saved
    assert len(seen) == len(set(seen)) and 0 < len(seen) < len(_variants())
    whole = [m for m in dealt if set(m) <= set(seen)]
    assert sorted(v for m in whole for v in m) == sorted(seen), "whole modules recorded, nothing else"


@pytest.mark.parametrize("lanes", [2, 3])
def test_lanes_make_the_modules_one_pipeline_makes(monkeypatch, lanes):
    """Whole modules are dealt to the lanes, so a module cache filled by one run serves another with any number of
    lanes or GPUs (every n-th variant per lane made each number of lanes its own modules).  A lane takes them as a
    stream, in any share."""
    monkeypatch.setattr(runner, "MODULE_PLANS", 3)
    picked = [v for v in SPECS.variants.values() if v.family in ("mma.sync", "ldmatrix", "wmma", "wgmma")]
    variants = picked[::max(1, len(picked) // 40)]
    backend = EmulatorBackend(mma)
    request = runner.RunRequest(5, value_cases=2)

    def modules(vs):
        return {tuple(p.variant.id for p in plans)
                for plans in runner.iter_modules(backend, vs, request, max_plans=runner.MODULE_PLANS)}

    one = modules(variants)
    dealt = [[v.id for v in m] for m in runner.dealt_modules(backend, variants, 5)]
    assert sorted(v for m in dealt for v in m) == sorted(v.id for v in variants)
    known = {v.id: v for v in variants}
    shares = [runner.VariantStream(iter(dealt[k::lanes]), known) for k in range(lanes)]
    assert set().union(*(modules(share) for share in shares)) == one
    assert len(one) > 2 * lanes, "several modules"


class _Counts(EmulatorBackend):
    """A device that notes how many modules had been handed to it (``prefetch``) when it was first asked to run one.
    A second module handed over waits (up to 10 s) for that first run: a pipeline that launches only once its
    lookahead is planned is then still planning, and the count says so."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.handed, self.at_first_run = 0, None
        self.first_run = threading.Event()

    def prefetch(self, module):
        if self.handed == 1:
            self.first_run.wait(10)
        self.handed += 1

    def run(self, module, launches):
        if self.at_first_run is None:
            self.at_first_run = self.handed
            self.first_run.set()
        return super().run(module, launches)


def test_a_free_device_takes_the_first_module_made(tmp_path):
    """The first launch does not wait for the lookahead to be planned: one module made, one module run."""
    device = _Counts(mma)
    runner.MODULE_PLANS, saved = 2, runner.MODULE_PLANS
    try:
        runner.run_variants(device, _variants(), runner.RunRequest(7, value_cases=2, jobs=1))
    finally:
        runner.MODULE_PLANS = saved
    assert device.handed >= 4 and device.at_first_run == 1


class _SlowToLeave(EmulatorBackend):
    """A device whose lane takes 1.5 s to take it down, and writes down when it is gone."""

    gone = None

    def close(self):
        time.sleep(1.5)
        self.gone.write_text(repr(time.time()))


def test_a_lane_says_done_before_it_takes_its_workers_down(tmp_path):
    """The run records a lane's last verdicts and goes on (to its reports) while the lane is still leaving."""
    stages = runner.Stages()
    stages.mark("start")
    lanes = [_SlowToLeave(mma), _SlowToLeave(mma)]
    for k, lane in enumerate(lanes):
        lane.gone = tmp_path / f"gone{k}"
    seen = _run(DeviceSet(lanes), tmp_path, stages=stages)
    ended = stages.marks()["lanes_ended"]
    assert sorted(seen) == sorted(v.id for v in _variants())
    deadline = time.time() + 30
    while not all(lane.gone.exists() for lane in lanes) and time.time() < deadline:
        time.sleep(0.1)
    assert all(float(lane.gone.read_text()) > ended + 1.0 for lane in lanes)
