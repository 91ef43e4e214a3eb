"""ptxas releases side by side: resolution, the cache layout, install from a wheel, the acceptance matrix
(its derivation on synthetic cells, and for real with the ptxas at hand), differential execution on the
emulator, and the command line's exit codes."""

from __future__ import annotations

import csv
import gzip
import json
import shutil
import stat
import tarfile
import zipfile
from pathlib import Path

import pytest
from ptxconf.backends import ptxas as px
from ptxconf.backends.base import LaunchResult
from ptxconf.backends.emulator import EmulatorBackend
from ptxconf.backends.pycuda_backend import PyCudaBackend, gpu_available, ptxas_version
from ptxconf.cli.main import main
from ptxconf.isa import load_specs, parse_target
from ptxconf.isa.targets import PtxVersion
from ptxconf.oracle import mma
from ptxconf.tools.toolchains import differential as diff
from ptxconf.tools.toolchains import matrix as mx
from ptxconf.tools.toolchains.install import MANIFEST
from ptxconf.tools.toolchains.releases import PACKAGES, RELEASES, lookup, select
from ptxconf.tools.toolchains.report import annotate, release_ranges

HAVE_PTXAS = shutil.which("ptxas") is not None
_GPU, _WHY = gpu_available()

F16 = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
BF16 = "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    """Every test gets its own toolchains folder and assemble cache: nothing of this machine's is read or filled."""
    monkeypatch.setenv("PTXCONF_TOOLCHAINS_DIR", str(tmp_path / "toolchains"))
    monkeypatch.setenv("PTXCONF_CACHE", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def specs():
    return load_specs()


FAKE_PTXAS = """#!/bin/sh
case "$1" in
  --version) echo "Cuda compilation tools, release {short}, V{version}"; exit 0;;
  --help) printf -- "--gpu-name <gpu name>   (-arch)\\n    Allowed values for this option:  'compute_90a','sm_90',\\n"
          printf -- "    'sm_90a','sm_100a'.\\n    Default value:  'sm_90'.\\n"; exit 0;;
esac
for last; do :; done
if grep -q '^.version 99' "$last"; then
  echo "ptxas $last, line 1; fatal   : Unsupported .version 99.9; current version is '{max_ptx}'" >&2; exit 255
fi
exit 0
"""


def _fake_ptxas(path: Path, version: str = "13.5.37", max_ptx: str = "9.5") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    short = ".".join(version.split(".")[:2])
    path.write_text(FAKE_PTXAS.format(version=version, short=short, max_ptx=max_ptx))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def _fake_wheel(folder: Path, version: str, holds: str | None = None) -> Path:
    """A minimal wheel of the release's package holding only ``bin/ptxas`` (a script that says ``holds``)."""
    rel = lookup(version)
    dist = rel.package.replace("-", "_")
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / f"{dist}-{version}-py3-none-manylinux2014_x86_64.whl"
    script = _fake_ptxas(folder / "script", holds or version).read_text()
    info = f"{dist}-{version}.dist-info"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("nvidia/cu13/bin/ptxas", script)
        zf.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {rel.package}\nVersion: {version}\n")
        zf.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        zf.writestr(f"{info}/RECORD", "")
    return wheel


# --- the releases as data ---------------------------------------------------------------------------------------


def test_the_release_table():
    cu12 = [r for r in RELEASES if r.package == PACKAGES[12]]
    cu13 = [r for r in RELEASES if r.package == PACKAGES[13]]
    assert (len(cu12), len(cu13)) == (22, 12)
    assert (cu12[0].version, cu12[-1].version, cu13[0].version, cu13[-1].version) == (
        "12.0.76", "12.9.86", "13.0.48", "13.5.37")
    assert [r.key for r in RELEASES] == sorted(r.key for r in RELEASES)
    for r in RELEASES:  # every release knows sm_90a; the table agrees with ptxas.py's own
        assert "sm_90a" in r.targets
        assert r.max_ptx == px.max_ptx_for_release(r.version)[0]
    assert lookup("13.5").requirement == "nvidia-cuda-nvcc==13.5.37"
    assert lookup("12.4").version == "12.4.131"
    assert lookup("12.9").version == "12.9.86"
    assert [r.version for r in select("12.4.99, 12.4,12.4.99")] == ["12.4.99", "12.4.131"]
    with pytest.raises(ValueError, match="unknown ptxas release '11.8'"):
        lookup("11.8")
    with pytest.raises(ValueError, match="not a release version"):
        lookup("latest")


def test_toolchains_dir_honours_the_environment(tmp_path, monkeypatch):
    assert px.toolchains_dir() == tmp_path / "toolchains"
    monkeypatch.delenv("PTXCONF_TOOLCHAINS_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert px.toolchains_dir() == tmp_path / "xdg" / "ptx-conformance" / "toolchains"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert px.toolchains_dir() == Path.home() / ".cache" / "ptx-conformance" / "toolchains"


def test_resolution_by_version_newest_installed_match(tmp_path):
    root = tmp_path / "toolchains"
    for v in ("13.4.59", "13.4.92", "13.5.37"):
        _fake_ptxas(root / v / "ptxas", v)
    (root / "13.3.73").mkdir()  # no ptxas: not installed
    assert list(px.installed_toolchains()) == ["13.4.59", "13.4.92", "13.5.37"]
    assert px.find_ptxas("13.4") == str(root / "13.4.92" / "ptxas")
    assert px.find_ptxas("13.4.59") == str(root / "13.4.59" / "ptxas")
    assert px.find_ptxas("13.5") == str(root / "13.5.37" / "ptxas")
    with pytest.raises(px.PtxasNotFound, match="ptxas 13.3 is not installed.*toolchains install 13.3"):
        px.find_ptxas("13.3")
    exe = str(root / "13.5.37" / "ptxas")
    assert px.find_ptxas(exe) == exe  # a path is still a path
    from ptxconf.tools.toolchains.resolve import resolve_all

    got = resolve_all(["13.5", exe, "13.4.59,13.4"])
    assert [tc.name for tc in got] == ["13.4.59", "13.4.92", "13.5.37"]  # the path is 13.5.37 too: once
    assert got[-1].max_ptx == PtxVersion(9, 5)


# --- install -----------------------------------------------------------------------------------------------------


def test_install_from_a_downloaded_wheel(tmp_path, capsys):
    wheels = tmp_path / "wheels"
    _fake_wheel(wheels, "13.5.37")
    assert main(["toolchains", "install", "13.5", "--wheel-dir", str(wheels)]) == 0
    out, err = capsys.readouterr()
    assert "13.5.37: Cuda compilation tools, release 13.5, V13.5.37 (.version up to 9.5)" in out
    assert "warning: 13.5.37: ptxas knows sm_90 sm_90a sm_100a; the release table says" in err  # the binary wins
    folder = tmp_path / "toolchains" / "13.5.37"
    assert sorted(p.name for p in folder.iterdir()) == ["ptxas", MANIFEST]  # only ptxas, no wheel left, no temp dir
    assert [p.name for p in (tmp_path / "toolchains").iterdir()] == ["13.5.37"]
    record = json.loads((folder / MANIFEST).read_text())
    assert record["package"] == "nvidia-cuda-nvcc" and record["max_ptx"] == "9.5"
    assert record["targets"] == ["sm_90", "sm_90a", "sm_100a"]
    assert len(record["ptxas_sha256"]) == 64
    assert main(["toolchains", "path", "13.5"]) == 0
    assert capsys.readouterr().out.strip() == str(folder / "ptxas")
    assert main(["toolchains", "list", "--json"]) == 0
    rows = {r["release"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["13.5.37"]["installed"] and not rows["13.4.92"]["installed"] and len(rows) == 34
    assert main(["toolchains", "list", "--check"]) == 1  # the fake's targets are not the table's
    assert "mismatch: 13.5.37" in capsys.readouterr().err


def test_install_refuses_a_wheel_holding_another_release(tmp_path, capsys):
    wheels = tmp_path / "wheels"
    _fake_wheel(wheels, "13.4.92", holds="13.4.59")
    assert main(["toolchains", "install", "13.4.92", "--wheel-dir", str(wheels)]) == 1
    assert "holds ptxas 13.4.59, not 13.4.92" in capsys.readouterr().err
    assert not (tmp_path / "toolchains" / "13.4.92").exists()
    assert [p.name for p in (tmp_path / "toolchains").iterdir()] == []  # the temporary folder went too


# --- the matrix, on synthetic cells ---------------------------------------------------------------------------------


def _synthetic() -> mx.Matrix:
    releases = ["12.0.76", "12.4.131", "12.8.93", "13.0.88"]
    mat = mx.Matrix(["f0", "f1", "f2", "f3"], ["mma"] * 4, ["sm_80", "sm_100a"], releases)
    # form x release per target: f0 accepted early then fine, f1 regresses, f2 refused though valid, f3 crashes.
    cols = {"sm_80": ["XAAA", "AARR", "RFFA", "RRRC"], "sm_100a": ["---A", "--AA", "--RR", "--RR"]}
    for t, per_form in cols.items():
        for k, r in enumerate(releases):
            mat.codes[r, t] = "".join(per_form[f][k] for f in range(4))
    mat.message_of["13.0.88", "sm_80"] = {3: mat.message_id("ptxas crashed (signal 11)")}
    mat.message_of["12.8.93", "sm_80"] = {2: mat.message_id("error : no"), 1: mat.message_id("error : gone")}
    return mat


def test_derive_finds_every_kind_of_disagreement():
    mat = _synthetic()
    findings, first = mx.derive(mat)
    got = {(f["kind"], f["form"], f["target"]): f for f in findings}
    assert set(got) == {
        ("accepted-but-spec-invalid", "f0", "sm_80"),
        ("accepted-then-refused", "f1", "sm_80"),
        ("refused-but-spec-valid", "f2", "sm_80"),
        ("ptxas-crashed", "f3", "sm_80"),
    }
    assert got["accepted-but-spec-invalid", "f0", "sm_80"]["releases"] == ["12.0.76"]
    assert got["accepted-then-refused", "f1", "sm_80"]["releases"] == ["12.4.131", "12.8.93"]
    assert got["accepted-then-refused", "f1", "sm_80"]["message"] == "error : gone"
    assert got["refused-but-spec-valid", "f2", "sm_80"]["releases"] == ["12.4.131", "12.8.93"]
    assert got["ptxas-crashed", "f3", "sm_80"]["message"] == "ptxas crashed (signal 11)"
    assert first == {"f0": {"sm_80": "12.0.76", "sm_100a": "13.0.88"}, "f1": {"sm_80": "12.0.76", "sm_100a": "12.8.93"},
                     "f2": {"sm_80": "13.0.88"}}
    assert mx.counts(mat)["-"] == 9
    mat.canonical()  # messages numbered in cell order, whatever order ptxas answered in
    assert mat.messages == ["error : gone", "error : no", "ptxas crashed (signal 11)"]
    assert mat.cell_message("13.0.88", "sm_80", 3) == "ptxas crashed (signal 11)"
    assert release_ranges(["12.0.76", "12.4.131", "13.0.88"], mat.releases) == "12.0.76..12.4.131, 13.0.88"


def test_annotate_gives_each_finding_its_version_spec_and_replay(specs):
    v = specs.get(F16)  # .version 6.4, sm_80
    tcs = [mx.Toolchain("12.0.76", "x", PtxVersion(8, 0), ("sm_80",)), mx.Toolchain("13.0.88", "x", PtxVersion(9, 0),
                                                                                    ("sm_80", "sm_100a"))]
    mat = mx.Matrix([v.id], ["mma"], ["sm_80"], ["12.0.76", "13.0.88"], codes={("12.0.76", "sm_80"): "A",
                                                                               ("13.0.88", "sm_80"): "F"})
    mat.message_of["13.0.88", "sm_80"] = {0: mat.message_id("error : nope")}
    raw, _ = mx.derive(mat)
    (refused, regressed) = sorted(annotate(raw, mat, [v], [parse_target("sm_80")], tcs), key=lambda f: f["kind"])
    assert regressed["kind"] == "refused-but-spec-valid" and regressed["version"] == "7.0"
    assert regressed["replay"] == f"ptxconf assemble --ptxas 13.0.88 --arch sm_80 --select {v.id}"
    assert refused["kind"] == "accepted-then-refused" and refused["releases"] == "12.0.76 -> 13.0.88"
    assert refused["spec"].startswith("valid")
    # a cell whose .version was capped replays through the matrix (assemble calls it untestable)
    assert mx.replay_command(v.id, "sm_120a", "12.4.131", capped=True).startswith(
        "ptxconf toolchains matrix --ptxas 12.4.131 --arch sm_120a --select")


def test_attribute_splits_errors_by_kernel():
    stderr = ("ptxas <input>, line 2; error   : bad target\n"
              "ptxas <input>, line 12; error   : Instruction 'x'   not supported\n"
              "ptxas <input>, line 31; error   : also bad\n"
              "ptxas error   : Entry function 'probe_00ff' uses too much\n"
              "ptxas fatal   : something odd\n"
              "ptxas fatal   : Ptx assembly aborted due to errors\n")
    blamed, header, unplaced = mx.attribute(stderr, [5, 20, 30], ["probe_00aa", "probe_00ff", "probe_0bbb"])
    assert blamed == {0: ["error : Instruction 'x' not supported"], 2: ["error : also bad"],
                      1: ["error : Entry function '<kernel>' uses too much"]}
    assert header == ["error : bad target"] and unplaced == ["fatal : something odd"]


def test_settle_by_lines_and_by_halving(specs):
    forms = [v for v in specs.select(["mma.sync.aligned.m16n8k16*"])][:8]
    bad = {forms[2].id, forms[5].id}
    probes: dict = {}
    target, version = parse_target("sm_80"), PtxVersion(8, 0)
    bad_names = {mx.family_of(v).assembly_probe(v).name for v in forms if v.id in bad}
    calls = []

    def by_lines(text, arch, exe):
        calls.append(text.count(".entry"))
        lines = [no for no, ln in enumerate(text.splitlines(), 1) if any(f".entry {n}" in ln for n in bad_names)]
        return (not lines, "".join(f"ptxas <input>, line {no + 3}; error   : no\n" for no in lines))

    got = mx.settle(forms, version, target, "x", probes, by_lines)
    assert {k for k, (o, _) in got.items() if o == "refused"} == bad and len(got) == 8
    assert calls == [8, 6]  # one module, then the others again: no bisection

    calls.clear()

    def silent(text, arch, exe):  # says nothing about where: only halving finds them
        calls.append(text.count(".entry"))
        hit = any(f".entry {n}" in text for n in bad_names)
        return (not hit, "ptxas fatal   : Ptx assembly aborted due to errors\n" if hit else "")

    got = mx.settle(forms, version, target, "x", {}, silent)
    assert {k for k, (o, _) in got.items() if o == "refused"} == bad
    assert got[forms[2].id][1] == "fatal : Ptx assembly aborted due to errors"
    assert len(calls) < 16

    got = mx.settle(forms[:2], version, target, "x", {}, lambda *a: (False, "ptxas crashed (signal 11)"))
    assert {o for o, _ in got.values()} == {"crashed"}


def test_nothing_after_a_fatal_error_is_believed(specs):
    forms = [v for v in specs.select(["mma.sync.aligned.m16n8k16*"])][:6]
    target, version = parse_target("sm_80"), PtxVersion(8, 0)
    probes = {v.id: mx.family_of(v).assembly_probe(v) for v in forms}
    bad = probes[forms[3].id].name

    def parse_abort(text, arch, exe):  # the 12.0 pattern: a parse abort, then an error on the header's line 3
        lines = [no for no, ln in enumerate(text.splitlines(), 1) if f".entry {bad}" in ln]
        if not lines:
            return True, ""
        return False, (f"ptxas <input>, line {lines[0] + 5}; fatal   : Parsing error near ':': syntax error\n"
                       "ptxas <input>, line 3; error   : Illegal modifier '.sp' for instruction 'and'\n")

    got = mx.settle(forms, version, target, "x", probes, parse_abort)
    assert {k for k, (o, _) in got.items() if o == "refused"} == {forms[3].id}
    assert got[forms[3].id][1] == "fatal : Parsing error near ':': syntax error"

    def header_error(text, arch, exe):  # a real header error: the header alone fails too
        return False, "ptxas <input>, line 2; error   : Unknown target\n"

    got = mx.settle(forms, version, target, "x", probes, header_error)
    assert {o for o, _ in got.values()} == {"refused"} and got[forms[0].id][1] == "error : Unknown target"


def test_a_disagreement_is_confirmed_alone(specs, monkeypatch):
    forms = [specs.get(F16), specs.get(BF16)]

    def neighbours_matter(text, arch, exe, use_cache=True):  # refuses every kernel of a module of two or more
        entries = [no for no, ln in enumerate(text.splitlines(), 1) if ".entry" in ln]
        return len(entries) < 2, "".join(f"ptxas <input>, line {no + 2}; error   : odd\n" for no in entries)

    monkeypatch.setattr(mx, "assemble", neighbours_matter)
    tc = mx.Toolchain("13.0.88", "x", PtxVersion(9, 0), ("sm_80",))
    mat, stats = mx.build_matrix(forms, [parse_target("sm_80")], [tc], jobs=1)
    assert mat.codes["13.0.88", "sm_80"] == "AA"  # the verdict alone is the one recorded
    assert stats.confirmed == 2 and sorted(c[2] for c in stats.context) == sorted(v.id for v in forms)
    assert stats.context[0][3:] == ("refused", "ok")


# --- the matrix, for real ---------------------------------------------------------------------------------------


@pytest.mark.ptxas
@pytest.mark.skipif(not HAVE_PTXAS, reason="ptxas not on PATH")
def test_matrix_agrees_with_assemble_cell_for_cell(specs, tmp_path, capsys):
    exes = [px.find_ptxas()] + ([px.find_pinned_ptxas()] if px.find_pinned_ptxas() else [])
    argv = ["toolchains", "matrix", "--arch", "sm_80,sm_90a,sm_120a", "--select", "mma.sync.aligned.m16n8k32.row.col*",
            "--out", str(tmp_path / "m")]
    for exe in exes:
        argv += ["--ptxas", exe]
    rc = main(argv)
    out = capsys.readouterr().out
    doc = json.loads((tmp_path / "m" / "summary.json").read_text())
    assert rc == (1 if doc["findings"] else 0) and "cells" in out
    assert sorted(p.name for p in (tmp_path / "m").iterdir()) == sorted(
        ["matrix.csv.gz", "messages.json", "findings.json", "summary.md", "summary.json"])
    for name in ("findings.json", "messages.json"):  # no path of this machine (the command names what was typed)
        assert "/tmp" not in (tmp_path / "m" / name).read_text()
    forms = [v for v in specs.select(["mma.sync.aligned.m16n8k32.row.col*"])]
    rows = list(csv.reader(gzip.open(tmp_path / "m" / "matrix.csv.gz", "rt")))
    releases = rows[0][3:]
    want = {"agree": "AR", "assembles-but-spec-invalid": "X", "rejected-but-spec-valid": "F"}
    for k, exe in enumerate(exes):
        cells = {(r[0], r[2]): r[3 + k][0] for r in rows[1:]}
        for row in px.assemble_report(forms, ["sm_80", "sm_90a", "sm_120a"], exe, jobs=2):
            if row.status != "untestable":
                assert cells[row.variant, row.arch] in want[row.status], (releases[k], row)


@pytest.mark.ptxas
@pytest.mark.skipif(not HAVE_PTXAS, reason="ptxas not on PATH")
def test_differential_prepare_then_run_on_the_emulator(tmp_path, capsys):
    bundle = tmp_path / "b.tar.xz"
    assert main(["toolchains", "differential", "prepare", "--ptxas", px.find_ptxas(), "--select", F16,
                 "--select", "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16/ss", "--out", str(bundle)]) == 0
    assert "2 forms in 2 modules" in capsys.readouterr().out
    with tarfile.open(bundle, "r:xz") as tar:
        names = tar.getnames()
        manifest = json.loads(tar.extractfile("manifest.json").read())
    assert names[0] == "manifest.json" and sum(n.endswith(".cubin") for n in names) == manifest["cubins"] == 4
    assert set(manifest["modules"][0]["builds"]) == {f"{manifest['toolchains'][0]['release']}-O{o}" for o in (0, 3)}
    assert main(["toolchains", "differential", "run", str(bundle), "--backend", "emulator", "--out",
                 str(tmp_path / "d")]) == 0
    doc = json.loads((tmp_path / "d" / "differential.json").read_text())
    assert doc["forms"] == 2 and doc["builds_per_form"] == 3 and doc["forms_with_one_output"] == 2


# --- differential execution, no ptxas needed -------------------------------------------------------------------------


class _Flips(EmulatorBackend):
    """The emulator, except that one image's results come back with a bit flipped (a miscompile, as it would look)."""

    def __init__(self, bad: bytes):
        super().__init__(semantics=mma, cc=(9, 0))
        self.bad = bad

    def run(self, module, launches):
        results = super().run(module, launches)
        if module == self.bad:
            for r in results:
                r.out = r.out.copy()
                r.out[0, 0, 0] ^= 1
        return results


def _jit_only_bundle(specs, path: Path, fake_cubin: bytes | None = None) -> dict:
    manifest = diff.prepare([specs.get(F16), specs.get(BF16)], [], [3], path)
    if fake_cubin is not None:  # a bundle whose one release "built" a cubin (no ptxas here)
        with tarfile.open(path, "r:xz") as tar:
            members = {m.name: tar.extractfile(m).read() for m in tar}
        sha = diff._sha(fake_cubin)
        for entry in manifest["modules"]:
            entry["builds"]["99.0.1-O3"] = sha
            members[f"{entry['key']}/{sha}.cubin"] = fake_cubin
        members["manifest.json"] = json.dumps(manifest).encode()
        with tarfile.open(path, "w:xz") as tar:
            for name in ["manifest.json"] + sorted(n for n in members if n != "manifest.json"):
                diff._add(tar, name, members[name])
    return manifest


def test_differential_run_agrees_on_the_emulator(specs, tmp_path):
    _jit_only_bundle(specs, tmp_path / "b.tar.xz", fake_cubin=b"\x7fELF fake")
    doc = diff.run_bundle(tmp_path / "b.tar.xz", EmulatorBackend(semantics=mma), specs, tmp_path / "d")
    assert doc["findings"] == {} and doc["forms"] == 2 and doc["builds_per_form"] == 2
    assert doc["forms_with_one_output"] == 2


def test_differential_run_reports_a_difference_with_its_ptx_and_replay(specs, tmp_path):
    _jit_only_bundle(specs, tmp_path / "b.tar.xz", fake_cubin=b"\x7fELF fake")
    doc = diff.run_bundle(tmp_path / "b.tar.xz", _Flips(b"\x7fELF fake"), specs, tmp_path / "d",
                          bundle_name="b.tar.xz")
    assert doc["findings"]["results-differ"] == 2
    found = json.loads((tmp_path / "d" / "differential.json").read_text())["finding_list"]
    differ = [f for f in found if f["kind"] == "results-differ"]
    assert sorted(differ[0]["builds"]) == ["99.0.1-O3", "jit"]
    assert "words differ; first: check" in differ[0]["difference"]
    assert differ[0]["replay"].startswith("ptxconf toolchains differential run b.tar.xz --select ")
    assert "--build jit --build 99.0.1-O3" in differ[0]["replay"] or "--build 99.0.1-O3 --build jit" in differ[0]["replay"]
    ptx = (tmp_path / "d" / differ[0]["ptx"]).read_text()
    assert ptx.startswith(".version") and ptx.count(".entry") >= 1
    assert any(f["kind"] == "spec-fail" and f["builds"] == ["99.0.1-O3"] for f in found)  # and the spec says which


class _NoLoad(EmulatorBackend):
    """The emulator, except that one image never loads (a cubin this driver refuses)."""

    def __init__(self, bad: bytes):
        super().__init__(semantics=mma, cc=(9, 0))
        self.bad, self.tries = bad, 0

    def run(self, module, launches):
        if module == self.bad:
            self.tries += 1
            return [LaunchResult(None, error="cannot load: device kernel image is invalid") for _ in launches]
        return super().run(module, launches)


def test_a_build_that_never_loads_is_tried_twice(specs, tmp_path):
    manifest = _jit_only_bundle(specs, tmp_path / "b.tar.xz", fake_cubin=b"\x7fELF fake")
    assert len(manifest["modules"]) == 2
    backend = _NoLoad(b"\x7fELF fake")
    doc = diff.run_bundle(tmp_path / "b.tar.xz", backend, specs, tmp_path / "d")
    assert backend.tries == 2 and doc["builds_skipped"] == {"99.0.1-O3": "cannot load: device kernel image is invalid"}
    assert doc["findings"] == {"launch-error": 2} and doc["forms_with_one_output"] == 2  # the JIT still ran


def test_differential_run_catches_a_stale_bundle(specs, tmp_path, monkeypatch):
    _jit_only_bundle(specs, tmp_path / "b.tar.xz")
    monkeypatch.setattr(diff.runner, "module_of", lambda plans: "// edited since\n")
    doc = diff.run_bundle(tmp_path / "b.tar.xz", EmulatorBackend(semantics=mma), specs, tmp_path / "d")
    assert doc["forms"] == 0 and doc["stale_modules"] and doc["findings"]["stale-module"] >= 1


def test_representative_keeps_every_group(specs):
    wg = [v for v in specs.select(["wgmma.mma_async.sync.aligned.m64n*k16.f32.f16.f16/ss"])]
    kept = diff.representative(wg)
    assert [v.id.split(".")[4] for v in kept] == ["m64n8k16", "m64n256k16"]
    wmma = [v for v in specs.select(["wmma.load.a.sync.aligned.*.m16n16k16.f16"])]
    assert len(wmma) == 2 and len(diff.representative(wmma)) == 1  # .row and .col: one group
    assert diff.representative([specs.get(F16)]) == [specs.get(F16)]


@pytest.mark.gpu
@pytest.mark.skipif(not _GPU, reason=f"no GPU: {_WHY}")
def test_differential_run_on_the_gpu(specs, tmp_path):
    _jit_only_bundle(specs, tmp_path / "b.tar.xz")
    assert main(["toolchains", "differential", "run", str(tmp_path / "b.tar.xz"), "--backend", "pycuda",
                 "--out", str(tmp_path / "d")]) == 0


# --- the command line and the run's --ptxas ---------------------------------------------------------------------


@pytest.mark.parametrize(("argv", "says"), [
    (["toolchains", "matrix", "--arch", "sm_99", "--out", "x"], "--arch: unknown target 'sm_99'"),
    (["toolchains", "matrix", "--ptxas", "12.4", "--out", "x"], "--ptxas: ptxas 12.4.131 is not installed"),
    (["toolchains", "matrix", "--ptxas", "11.8", "--out", "x"], "--ptxas: unknown ptxas release '11.8'"),
    (["toolchains", "matrix", "--ptxas", "/nowhere/ptxas", "--out", "x"], "--ptxas: ptxas not found at /nowhere"),
    (["toolchains", "matrix", "--jobs", "0", "--out", "x"], "--jobs must be at least 1"),
    (["toolchains", "install", "11.8"], "VERSION: unknown ptxas release '11.8'"),
    (["toolchains", "install", "13.5", "--wheel-dir", "/nowhere"], "--wheel-dir /nowhere: not a directory"),
    (["toolchains", "path", "13.5"], "VERSION: ptxas 13.5.37 is not installed"),
    (["toolchains", "differential", "prepare", "--opt", "5", "--out", "b.tar.xz"], "--opt 5: expected ptxas -O levels"),
    (["toolchains", "differential", "prepare", "--out", "b.zip"], "--out b.zip: the bundle is one .tar.xz file"),
    (["toolchains", "differential", "run", "/nowhere.tar.xz", "--out", "d"], "BUNDLE /nowhere.tar.xz: no such file"),
    (["run", "--backend", "emulator", "--ptxas", "12.4", "--out", "r"], "ptxconf run: --ptxas: ptxas 12.4 is not"),
    (["assemble", "--ptxas", "12.4"], "--ptxas: ptxas 12.4 is not installed"),
])
def test_usage_errors_exit_2_naming_the_argument(argv, says, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    assert says in capsys.readouterr().err


def test_a_bad_bundle_exits_2(tmp_path, capsys):
    (tmp_path / "b.tar.xz").write_bytes(b"not xz")
    assert main(["toolchains", "differential", "run", str(tmp_path / "b.tar.xz"), "--backend", "emulator",
                 "--out", str(tmp_path / "d")]) == 2
    assert "BUNDLE" in capsys.readouterr().err


def test_the_run_builds_with_the_ptxas_it_was_given(tmp_path):
    exe = _fake_ptxas(tmp_path / "bin" / "ptxas", "12.4.131", "8.4")
    assert ptxas_version(str(exe)) == "Cuda compilation tools, release 12.4, V12.4.131"
    backend = PyCudaBackend(build="auto", ptxas=str(exe))  # no worker starts until asked
    assert backend._ptxas == str(exe)
    with pytest.raises(Exception, match="--ptxas builds cubins"):
        PyCudaBackend(build="jit", ptxas=str(exe))
