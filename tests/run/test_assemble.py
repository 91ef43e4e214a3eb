"""The assemble-only backend: ptxas verdicts against the spec's validity rules."""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import stat
import subprocess
import textwrap

import pytest
from ptxconf.backends import ptxas as px
from ptxconf.cli import assemble as cli_assemble
from ptxconf.isa import PtxVersion, load_specs, parse_target

HAVE_PTXAS = shutil.which("ptxas") is not None
_skip_no_ptxas = pytest.mark.skipif(not HAVE_PTXAS, reason="ptxas not on PATH")


def needs_ptxas(fn):
    return pytest.mark.ptxas(_skip_no_ptxas(fn))


F16 = (
    "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16",
    "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
)
F64 = "mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64"
F8F6F4 = "mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4.f32.e4m3.e2m1.f32"
FP8_K32_F16 = "mma.sync.aligned.m16n8k32.row.col.f16.e4m3.e4m3.f16"  # .version 8.7, sm_89

TRIVIAL = textwrap.dedent(
    """\
    .version 7.0
    .target sm_80
    .address_size 64
    .visible .entry k(.param .u64 p)
    {
        .reg .b64 %r<2>;
        ld.param.u64 %r0, [p];
        ret;
    }
    """
)


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PTXCONF_CACHE", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def specs():
    s = load_specs()  # mma.sync only: the movement forms are assembled in tests/families/movement/test_movement.py
    s.variants = {k: v for k, v in s.variants.items() if v.family == "mma.sync"}
    return s


@pytest.fixture(scope="module")
def exe():
    return px.find_ptxas() if HAVE_PTXAS else None


def _fake_ptxas(tmp_path, body: str, release: str = "13.0") -> str:
    path = tmp_path / "fake-ptxas"
    path.write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = "--version" ]; then echo "Cuda compilation tools, release {release}, V{release}.1"; exit 0; fi\n'
        + body
        + "\n"
    )
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


# --- no ptxas needed ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("release", "want", "guessed"),
    [
        ("13.0", "9.0", False),
        ("13.5", "9.5", False),
        ("12.0", "8.0", False),
        ("12.6", "8.5", False),
        ("12.8", "8.7", False),
        ("12.9", "8.8", False),
        ("12.7", "8.5", True),
        ("14.2", "9.0", True),
    ],
)
def test_max_ptx_for_release(release, want, guessed):
    got, note = px.max_ptx_for_release(release)
    assert got == PtxVersion.parse(want)
    assert (note is not None) == guessed
    if guessed:
        assert "not in the table" in note and want in note


def test_ptxas_info_of_unknown_release_says_so(tmp_path):
    info = px.ptxas_info(_fake_ptxas(tmp_path, "exit 0", release="14.1"))
    assert info["release"] == "14.1"
    assert info["max_ptx"] == PtxVersion(9, 0)
    assert "conservatively" in info["note"]


def test_find_ptxas_bad_path_is_clear(tmp_path):
    with pytest.raises(px.PtxasNotFound, match="not found"):
        px.find_ptxas(tmp_path / "nope")


def test_timeout_and_crash_are_failures_not_exceptions_and_not_cached(tmp_path):
    slow = _fake_ptxas(tmp_path, "sleep 5")
    ok, err = px.assemble(TRIVIAL, "sm_80", slow, timeout=0.5)
    assert not ok and "timed out" in err
    crash = tmp_path / "crash"
    crash.mkdir()
    crasher = _fake_ptxas(crash, "kill -SEGV $$")
    ok, err = px.assemble(TRIVIAL, "sm_80", crasher)
    assert not ok and "crashed" in err
    assert not any(p.is_file() for p in px.cache_dir().rglob("*"))


def test_untestable_when_version_exceeds_ptxas(specs, monkeypatch):
    # A ptxas that accepts up to 8.5: the fp8 k32 .f16 form (8.7) on sm_89 cannot be tested,
    # and sm_120a (.version 8.7) cannot be named at all.  No ptxas runs for these rows.
    monkeypatch.setattr(px, "ptxas_info", lambda exe: {"ptxas": "fake", "release": "12.5", "max_ptx": PtxVersion(8, 5)})
    monkeypatch.setattr(px, "assemble", lambda *a, **k: pytest.fail("ptxas should not run"))
    rows = px.assemble_report([specs.get(FP8_K32_F16)], ["sm_89", "sm_120a"], "fake", jobs=1)
    by_arch = {r.arch: r for r in rows}
    assert by_arch["sm_89"].status == "untestable"
    assert by_arch["sm_89"].actual_reason == "needs .version 8.7; this ptxas accepts up to 8.5"
    assert by_arch["sm_120a"].status == "untestable"
    assert "sm_120a needs .version 8.7" in by_arch["sm_120a"].actual_reason


def _args(**kw):
    base = dict(arch=cli_assemble.DEFAULT_ARCHS, select=None, specs=None, ptxas=None, json=False, jobs=None)
    base.update(kw)
    return argparse.Namespace(**base)


def test_cli_bad_arch_names_it(capsys):
    assert cli_assemble.run(_args(arch="sm_80,sm_99x")) == 2
    assert "'sm_99x'" in capsys.readouterr().err


def test_cli_no_ptxas_is_a_usage_error(tmp_path, capsys):
    assert cli_assemble.run(_args(ptxas=str(tmp_path / "missing-ptxas"))) == 2
    assert "ptxas not found" in capsys.readouterr().err


def test_cli_parser_registers_assemble():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    cli_assemble.add_parser(sub)
    args = parser.parse_args(["assemble", "--arch", "sm_80", "--select", "a*", "--select", "b", "--jobs", "3", "--json"])
    assert args.func is cli_assemble.run
    assert args.select == ["a*", "b"] and args.jobs == 3 and args.json and args.arch == "sm_80"


# --- with ptxas -------------------------------------------------------------------


@needs_ptxas
def test_ptxas_info_parses_version(exe):
    info = px.ptxas_info(exe)
    assert "release" in info["ptxas"]
    major, minor = (int(x) for x in info["release"].split("."))
    assert isinstance(info["max_ptx"], PtxVersion)
    if major == 13:
        assert info["max_ptx"] == PtxVersion(9, minor)
    assert info["max_ptx"] >= PtxVersion(7, 0)


@needs_ptxas
def test_assemble_accepts_valid_and_rejects_broken(exe):
    ok, err = px.assemble(TRIVIAL, "sm_80", exe)
    assert ok, err
    ok, err = px.assemble(TRIVIAL.replace("ld.param.u64", "ld.param.u65"), "sm_80", exe)
    assert not ok
    assert "error" in err and "<input>" in err
    assert "tmp" not in px.first_error(err)


@needs_ptxas
def test_cache_returns_same_result_without_rerunning(exe, monkeypatch):
    px.ptxas_info(exe)  # the version text is read once per process, before counting
    calls = []
    real_run = subprocess.run

    def counting_run(*a, **k):
        calls.append(a[0])
        return real_run(*a, **k)

    monkeypatch.setattr(px.subprocess, "run", counting_run)
    broken = TRIVIAL.replace("ret;", "bogus;")
    first = [px.assemble(TRIVIAL, "sm_80", exe), px.assemble(broken, "sm_80", exe)]
    assert len(calls) == 2
    second = [px.assemble(TRIVIAL, "sm_80", exe), px.assemble(broken, "sm_80", exe)]
    assert second == first
    assert len(calls) == 2
    px.assemble(TRIVIAL, "sm_90a", exe)  # another arch is another key
    assert len(calls) == 3
    px.assemble(TRIVIAL, "sm_80", exe, use_cache=False)
    assert len(calls) == 4


@needs_ptxas
def test_report_small_selection(specs, exe):
    vs = [specs.get(i) for i in (*F16, F64, F8F6F4)]
    rows = px.assemble_report(vs, ["sm_80", "sm_90a", "sm_120a"], exe, jobs=2)
    assert len(rows) == 12
    got = {(r.arch, r.variant): r for r in rows}
    assert all(r.status == "agree" for r in rows), [r.describe() for r in rows if r.status != "agree"]

    f64_80 = got["sm_80", F64]
    assert (f64_80.expected, f64_80.actual) == ("invalid", "rejected")
    assert "sm_90" in f64_80.expected_reason
    assert f64_80.actual_reason  # ptxas's first error line
    assert f64_80.version == "7.8"  # max(variant 7.8, sm_80 7.0): only the target decides
    assert (got["sm_90a", F64].expected, got["sm_90a", F64].actual) == ("valid", "assembles")
    for arch in ("sm_80", "sm_90a"):
        assert (got[arch, F8F6F4].expected, got[arch, F8F6F4].actual) == ("invalid", "rejected")
    assert (got["sm_120a", F8F6F4].expected, got["sm_120a", F8F6F4].actual) == ("valid", "assembles")
    for vid in F16:
        assert all(got[a, vid].actual == "assembles" for a in ("sm_80", "sm_90a", "sm_120a"))


@needs_ptxas
def test_report_flags_a_wrong_spec(specs, exe):
    wrong = dataclasses.replace(specs.get(F64), requires=(parse_target("sm_75"),))
    (row,) = px.assemble_report([wrong], ["sm_80"], exe, jobs=1)
    assert row.status == "rejected-but-spec-valid"
    assert row.expected == "valid" and row.actual == "rejected"
    assert row.actual_reason
    assert "rejected" in row.describe() and "spec says valid" in row.describe()


@needs_ptxas
def test_report_falls_back_to_one_module_per_variant(specs, exe):
    # One spec-valid variant that ptxas rejects must not take the others down with it.
    wrong = dataclasses.replace(specs.get(F64), requires=(parse_target("sm_75"),))
    vs = [specs.get(F16[0]), wrong, specs.get(F16[1])]
    rows = px.assemble_report(vs, ["sm_80"], exe, jobs=2)
    assert [r.status for r in rows] == ["agree", "rejected-but-spec-valid", "agree"]


@needs_ptxas
def test_cli_json_small_selection(capsys):
    rc = cli_assemble.run(_args(arch="sm_80,sm_90a", select=[F64], json=True, jobs=2))
    doc = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert {r["arch"]: r["status"] for r in doc["rows"]} == {"sm_80": "agree", "sm_90a": "agree"}


@needs_ptxas
def test_full_run_over_all_specs_finishes(specs, exe, capsys):
    """What CI runs: every variant on the five default archs.  Disagreements are findings, printed, not hidden."""
    archs = cli_assemble.DEFAULT_ARCHS.split(",")
    rows = px.assemble_report(specs.select(None), archs, exe)
    assert len(rows) == len(specs.variants) * len(archs)
    assert {r.status for r in rows} <= set(px.STATUSES)
    for r in rows:
        assert r.expected in ("valid", "invalid")
        assert r.actual in ("assembles", "rejected", "untestable")
    findings = [f"  finding: {r.arch}  {r.variant}  {r.describe()}" for r in rows if r.disagrees]
    if findings:
        with capsys.disabled():
            print("\n" + "\n".join(findings))
