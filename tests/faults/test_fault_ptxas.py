"""A ``ptxas`` that crashes, hangs or prints garbage, and corrupt entries in the compile caches.

Fake ``ptxas`` scripts (a tmp dir put first on PATH, or named by ``--ptxas``) answer ``--version`` as
CUDA 13.0 does and then misbehave.  ``ptxconf assemble --select <one mma.sync variant> --arch sm_80
--no-cache`` must give a row that names ptxas's failure (a rejection, or untestable when not even the
version can be read), exit as documented (1 for a disagreement, 2 when ptxas cannot run at all, 0
when every row is untestable), print no traceback and stop within the timeout (the hang test passes
1 s to ``assemble_report``; the default is ``DEFAULT_TIMEOUT_S``).

A garbage entry in ``$PTXCONF_CACHE/ptxas/`` (not JSON, the wrong types), a poisoned one (a lie with a content
hash anyone can make), or a cubin entry that is truncated, cut or another module's is not trusted: the result is
computed again and the entry replaced.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from pathlib import Path

import pytest
from ptxconf import cache, cli
from ptxconf.backends import ptxas as px
from ptxconf.cli import assemble as assemble_cli

VARIANT = "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
VERSION = 'echo "Cuda compilation tools, release 13.0, V13.0.48"'
# Each body runs for anything but --version; $0 is the script, "$@" ptxas's arguments.
BEHAVIOURS = {
    "crash": ("kill -SEGV $$", "ptxas crashed (signal 11)"),
    "abort": ("echo 'free(): invalid pointer' >&2; kill -ABRT $$", "ptxas crashed (signal 6)"),
    "hang": ("exec sleep 30", "ptxas timed out after 1 s"),
    "garbage": ("printf '\\377\\376\\001\\033[31m\\300garbage\\n' >&2; exit 3", "garbage"),
    "silent": ("exit 7", "ptxas exited 7 with no message"),
}


def fake_ptxas(directory: Path, body: str, version: str = VERSION) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    exe = directory / "ptxas"
    exe.write_text(f'#!/bin/sh\nif [ "$1" = "--version" ]; then {version}; exit 0; fi\n{body}\n')
    exe.chmod(0o755)
    return exe


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("PTXCONF_CACHE", str(tmp_path / "cache"))
    px._version_output.cache_clear()
    yield
    px._version_output.cache_clear()


def _assemble(capsys, *extra: str) -> tuple[int, dict, str]:
    rc = cli.main(["assemble", "--select", VARIANT, "--arch", "sm_80", "--no-cache", "--json", *extra])
    cap = capsys.readouterr()
    doc = json.loads(cap.out) if cap.out.strip() else {}
    return rc, doc, cap.err


@pytest.mark.parametrize("how", sorted(BEHAVIOURS))
@pytest.mark.parametrize("via", ["PATH", "--ptxas"])
def test_a_misbehaving_ptxas_is_a_named_rejection(how, via, tmp_path, monkeypatch, capsys, tally):
    body, named = BEHAVIOURS[how]
    exe = fake_ptxas(tmp_path / "bin", body)
    monkeypatch.setenv("PATH", f"{exe.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(assemble_cli, "assemble_report", functools.partial(px.assemble_report, timeout=1.0))
    rc, doc, err = _assemble(capsys, *(["--ptxas", str(exe)] if via == "--ptxas" else []))  # a hang: the 1 s timeout
    assert rc == 1 and "Traceback" not in err
    (row,) = doc["rows"]
    assert row["variant"] == VARIANT and row["actual"] == "rejected" and row["status"] == "rejected-but-spec-valid"
    assert named in row["actual_reason"], row
    tally.check(lost=0, false_passes=int(row["actual"] == "assembles"), injected=1)


def test_a_ptxas_whose_version_is_garbage_makes_rows_untestable(tmp_path, capsys, tally):
    exe = fake_ptxas(tmp_path / "bin", "exit 0", version="printf '\\001\\002 no release here'")
    rc, doc, err = _assemble(capsys, "--ptxas", str(exe))
    assert rc == 0 and "Traceback" not in err
    (row,) = doc["rows"]
    assert row["status"] == "untestable" and "this ptxas accepts up to 6.0" in row["actual_reason"]
    assert "could not read a CUDA release" in doc["note"]
    tally.check(lost=0, false_passes=int(row["actual"] == "assembles"), injected=1)


def test_a_ptxas_that_crashes_on_version_is_a_usage_error(tmp_path, capsys, tally):
    exe = fake_ptxas(tmp_path / "bin", "exit 0", version="kill -SEGV $$")
    rc, doc, err = _assemble(capsys, "--ptxas", str(exe))
    assert rc == 2 and not doc
    assert len(err.strip().splitlines()) == 1 and "--version" in err and "Traceback" not in err
    tally.check(lost=0, false_passes=0, injected=1)


def _counting_ptxas(directory: Path) -> tuple[Path, Path]:
    """Accepts everything, writes a small ELF file to -o, and counts its runs."""
    runs = directory / "runs"
    body = (f'echo run >> "{runs}"\n'
            'out=""; while [ $# -gt 0 ]; do if [ "$1" = "-o" ]; then out="$2"; shift; fi; shift; done\n'
            'if [ "$out" != /dev/null ]; then printf "\\177ELF-fake-cubin" > "$out"; fi\nexit 0')
    return fake_ptxas(directory, body), runs


def _runs(counter: Path) -> int:
    return len(counter.read_text().splitlines()) if counter.exists() else 0


def _entry(kind: str) -> Path:
    (entry,) = [p for p in (cache.cache_root() / kind).rglob("*") if p.is_file()]
    return entry


def _with_payload(entry: Path, payload: bytes) -> bytes:
    """The entry's bytes with its payload replaced and its header kept (size, key, MAC as they were)."""
    header = entry.read_bytes().split(b"\n", 2)
    return header[0] + b"\n" + header[1] + b"\n" + payload


@pytest.mark.parametrize("garbage", [b"\x00\xff not json", b"[1, 2]", b'{"ok": "false", "stderr": 3}', b""])
def test_a_corrupt_assemble_cache_entry_is_recomputed(garbage, tmp_path, tally):
    exe, counter = _counting_ptxas(tmp_path / "bin")
    assert px.assemble(".version 8.0\n", "sm_80", str(exe)) == (True, "")
    entry = _entry("ptxas")
    assert _runs(counter) == 1
    entry.write_bytes(garbage)
    assert px.assemble(".version 8.0\n", "sm_80", str(exe)) == (True, "")
    assert _runs(counter) == 2, "the damaged entry must not be trusted"
    assert json.loads(cache.get("ptxas", entry.name))["ok"] is True  # and it is replaced by a whole one
    tally.check(lost=0, false_passes=0, injected=1)


def test_a_poisoned_assemble_entry_is_checked_again(tmp_path, tally):
    """Someone with write access to a shared cache says a module ptxas rejects assembles: the entry's HMAC, made
    with a secret the writer does not hold, does not match, so ptxas runs again and its verdict is kept."""
    exe = fake_ptxas(tmp_path / "bin", 'echo "ptxas <input>, line 1; error   : bad" >&2; exit 1')
    ok, err = px.assemble(".version 8.0\n", "sm_80", str(exe))
    assert not ok and "error" in err
    entry = _entry("ptxas")
    lie = json.dumps({"ok": True, "stderr": "", "arch": "sm_80"}).encode()
    header = json.loads(entry.read_bytes().split(b"\n", 2)[1])
    header["size"] = len(lie)
    header["mac"] = hashlib.sha256(lie).hexdigest()  # a content hash anyone can make
    entry.write_bytes(cache.MAGIC + json.dumps(header).encode() + b"\n" + lie)
    assert px.assemble(".version 8.0\n", "sm_80", str(exe)) == (ok, err)
    tally.check(lost=0, false_passes=0, injected=1)


@pytest.mark.parametrize("damage", ["garbage", "empty", "cut ELF", "truncated", "another module's"])
def test_a_damaged_or_swapped_cubin_entry_is_a_miss_and_rebuilt(damage, tmp_path, tally):
    exe, counter = _counting_ptxas(tmp_path / "bin")
    cubin, err = px.compile_cubin(".version 8.0\n", "sm_80", str(exe))
    assert cubin == b"\x7fELF-fake-cubin" and not err and _runs(counter) == 1
    entry = _entry("cubin")
    whole = entry.read_bytes()
    if damage == "another module's":  # a whole, valid entry of another module copied over this one
        other, _ = px.compile_cubin(".version 8.1\n", "sm_80", str(exe))
        assert other is not None and _runs(counter) == 2
        (theirs,) = [p for p in entry.parent.parent.rglob("*") if p.is_file() and p != entry]
        entry.write_bytes(theirs.read_bytes())
    else:
        entry.write_bytes({"garbage": b"garbage, not a cubin", "empty": b"", "cut ELF": _with_payload(entry, b"\x7fEL"),
                           "truncated": whole[:-3]}[damage])
    runs = _runs(counter)
    cubin, err = px.compile_cubin(".version 8.0\n", "sm_80", str(exe))
    assert cubin == b"\x7fELF-fake-cubin" and not err
    assert _runs(counter) == runs + 1 and cache.get("cubin", entry.name) == cubin
    tally.check(lost=0, false_passes=0, injected=1)


def test_a_ptxas_that_writes_no_elf_is_an_error_not_a_cached_cubin(tmp_path, tally):
    exe = fake_ptxas(tmp_path / "bin", 'while [ "$1" != -o ]; do shift; done; echo garbage > "$2"; exit 0')
    cubin, err = px.compile_cubin(".version 8.0\n", "sm_80", str(exe))
    assert cubin is None and "no ELF cubin" in err
    assert not (cache.cache_root() / "cubin").exists()
    tally.check(lost=0, false_passes=0, injected=1)
