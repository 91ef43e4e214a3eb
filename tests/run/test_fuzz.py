"""``ptxconf fuzz layouts``: fresh seeds until the budget ends; a wrong output is a failure with its replay command."""

from __future__ import annotations

import numpy as np
import ptxconf.backends
from ptxconf.backends.base import LaunchResult
from ptxconf.backends.emulator import EmulatorBackend
from ptxconf.cli.main import main

V = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"


def test_fuzz_runs_seed_after_seed_and_passes(capsys):
    assert main(["fuzz", "layouts", "--backend", "emulator", "--select", V, "--budget", "1.5"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert " passed, 0 failed over " in last and "verified cases/s" in last
    assert int(last.split(" over ")[1].split()[0]) >= 2  # several seeds in the budget


def test_a_wrong_word_is_a_failure_named_with_its_seed_and_replay(monkeypatch, capsys):
    class Corrupting(EmulatorBackend):
        def run(self, module, launches):
            out = super().run(module, launches)
            bad = out[0].out.copy()
            bad[0, 0, 0] ^= np.uint32(0x1)
            return [LaunchResult(bad), *out[1:]]

    monkeypatch.setattr(ptxconf.backends, "get_backend", lambda name, **kw: Corrupting(kw["semantics"]))
    assert main(["fuzz", "layouts", "--backend", "emulator", "--select", V, "--budget", "0.5", "--seed", "7"]) == 1
    out = capsys.readouterr().out
    fails = [line for line in out.splitlines() if line.startswith("FAIL ")]
    assert fails and f"{V}:" in fails[0] and ":seed=7:" in fails[0]
    assert f"replay: ptxconf run --backend emulator --select {V} --check " in fails[0] and "--seed 7" in fails[0]
