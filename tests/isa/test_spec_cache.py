"""Parsed specs are read back from the cache only for the same spec files under the same code; anything else is
parsed (and checked) again.  The cache is data, not code: a pickle put there runs nothing, an entry is checked
against its key and its HMAC, keys hold no absolute path, and the cache stays under its size bound."""

from __future__ import annotations

import os
import pickle
import shutil
import time
from pathlib import Path

import pytest
from ptxconf import cache as cache_store
from ptxconf.isa import SpecError, load_specs, loader, stored

SPECS = Path(__file__).resolve().parents[2] / "specs"


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("PTXCONF_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache" / "specs"


@pytest.fixture
def specs_copy(tmp_path) -> Path:
    """Three spec files: a variant file, a document whose variants refer back to it (a cycle), and tcgen05's
    tables; loading them takes a third of the whole folder's time."""
    d = tmp_path / "specs"
    d.mkdir()
    for name in ("ldmatrix.yaml", "wgmma.yaml", "tcgen05.yaml"):
        shutil.copy(SPECS / name, d)
    return d


def _entries(cache: Path) -> list[Path]:
    return sorted(p for p in cache.rglob("*") if p.is_file())


def _parses(monkeypatch) -> list[Path]:
    seen: list[Path] = []
    real = loader._load_layouts
    monkeypatch.setattr(loader, "_load_layouts", lambda path, specs: seen.append(path) or real(path, specs))
    return seen


def test_a_second_load_reads_the_cache_and_gives_the_same_specs(cache, tmp_path, monkeypatch):
    specs_copy = tmp_path / "all"
    shutil.copytree(SPECS, specs_copy)
    first = load_specs(specs_copy)
    assert len(_entries(cache)) == 1
    seen = _parses(monkeypatch)
    again = load_specs(specs_copy)
    assert seen == []  # nothing parsed
    assert list(again.variants) == list(first.variants)
    for vid in list(first.variants)[::97]:
        assert again.variants[vid] == first.variants[vid]
        assert again.variants[vid].operands.keys() == first.variants[vid].operands.keys()
        for name, op in first.variants[vid].operands.items():  # the layouts evaluate to the same maps
            if not op.layout.params:
                assert (again.variants[vid].operands[name].layout.default_map == op.layout.default_map).all()
    assert again.documents.keys() == first.documents.keys()
    assert again.documents == first.documents


def test_the_same_specs_in_another_folder_are_the_same_entry(cache, specs_copy, tmp_path, monkeypatch):
    """The key holds names and bytes, no absolute path: a temporary copy of specs/ adds no entry."""
    load_specs(specs_copy)
    other = tmp_path / "elsewhere" / "specs"
    shutil.copytree(specs_copy, other)
    seen = _parses(monkeypatch)
    load_specs(other)
    assert seen == [] and len(_entries(cache)) == 1
    assert str(tmp_path).encode() not in _entries(cache)[0].read_bytes()
    again = load_specs(other)  # and what it reads names the files where they are now
    assert again.files and all(f.startswith(str(other)) for f in again.files)
    assert all(v.file.startswith(str(other)) for v in again.variants.values())


def test_an_edited_spec_file_is_parsed_and_checked_again(cache, specs_copy, monkeypatch):
    load_specs(specs_copy)
    victim = specs_copy / "ldmatrix.yaml"
    victim.write_text(victim.read_text() + "\nbogus_top_level_field: 1\n")
    seen = _parses(monkeypatch)
    with pytest.raises(SpecError) as err:
        load_specs(specs_copy)
    assert seen and "ldmatrix.yaml" in str(err.value)


@pytest.mark.parametrize("damage", ["not an entry", "truncated", "one byte changed", "another key's entry"])
def test_a_damaged_cache_entry_is_parsed_over(damage, cache, specs_copy, monkeypatch):
    first = load_specs(specs_copy)
    (entry,) = _entries(cache)
    whole = entry.read_bytes()
    if damage == "another key's entry":
        cache_store.put("specs", "f" * 64, whole.split(b"\n", 2)[2])
        whole = (cache / "ff" / ("f" * 64)).read_bytes()
    forged = {"not an entry": b"not an entry", "truncated": whole[: len(whole) // 2],
              "one byte changed": whole[:-10] + bytes([whole[-10] ^ 1]) + whole[-9:],
              "another key's entry": whole}[damage]
    entry.write_bytes(forged)
    seen = _parses(monkeypatch)
    assert list(load_specs(specs_copy).variants) == list(first.variants)
    assert seen  # parsed, not read
    assert entry.read_bytes() != forged  # written again


def test_a_pickle_in_the_spec_cache_runs_no_code(cache, specs_copy, tmp_path):
    """The old format was a pickle: one put where the entry (or the old entry) lives is never unpickled."""
    load_specs(specs_copy)
    (entry,) = _entries(cache)
    marker = tmp_path / "pwned"

    class Payload:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    bomb = pickle.dumps(Payload())
    entry.write_bytes(bomb)
    (cache / f"{entry.name}.pickle").write_bytes(bomb)
    assert load_specs(specs_copy).variants
    assert not marker.exists()
    assert stored.load_stored(entry.name, loader.Specs, specs_copy) is not None  # the entry was made again, as data


def test_a_stored_document_names_only_dataclasses_of_the_package():
    with pytest.raises(stored.StoredFormatError, match="not of this package"):
        stored.decode(b'{"format":"ptxconf-specs/1","classes":[["os:system",[]]],"kinds":[0]}\n'
                      b'{"objects":[[]],"root":{"r":0}}')
    with pytest.raises(stored.StoredFormatError, match="not of this package"):
        stored.decode(b'{"format":"ptxconf-specs/1","classes":[["ptxconf.__main__:main",[]]],"kinds":[]}\n{}')
    with pytest.raises(stored.StoredFormatError, match="not a dataclass"):
        stored.decode(b'{"format":"ptxconf-specs/1","classes":[["ptxconf.cache:Path",[]]],"kinds":[]}\n{}')


def test_the_size_bound_evicts_the_least_recently_used(cache, monkeypatch):
    monkeypatch.setenv("PTXCONF_CACHE_MAX", "10K")
    keys = [f"{i:064x}" for i in range(1, 5)]
    for i, key in enumerate(keys):
        cache_store.put("specs", key, bytes(3000))
        os.utime(cache / key[:2] / key, (time.time() - 100 + i, time.time() - 100 + i))
        if i == 2:
            assert cache_store.get("specs", keys[0]) is not None  # used again: now the newest
    assert cache_store.usage().total <= 10 * 1024
    kept = {p.name for p in _entries(cache)}
    assert keys[0] in kept and keys[3] in kept and keys[1] not in kept


def test_an_unwritable_cache_still_loads(tmp_path, monkeypatch, specs_copy):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("PTXCONF_CACHE", str(blocker))  # a file where the folder should be
    assert load_specs(specs_copy).variants


def test_cache_info_and_clear(cache, capsys):
    from ptxconf.cli import main

    cache_store.put("cubin", "a" * 64, b"\x7fELF" + bytes(100))
    cache_store.put("specs", "b" * 64, b"{}")
    assert main(["cache", "info"]) == 0
    out = capsys.readouterr().out
    assert "cubin       1 files" in out and "specs       1 files" in out
    assert main(["cache", "clear", "cubin"]) == 0
    assert cache_store.get("cubin", "a" * 64) is None and cache_store.get("specs", "b" * 64) == b"{}"
    assert main(["cache", "clear"]) == 0
    assert "deleted 1 files" in capsys.readouterr().out and not _entries(cache)


def test_the_secret_is_made_once_private_and_a_key_others_can_read_is_not_trusted(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    key = tmp_path / "config" / "ptx-conformance" / "cache.key"
    cache_store._secret.cache_clear()
    try:
        made = cache_store._secret(key)
        assert key.read_bytes() == made and key.stat().st_mode & 0o777 == 0o600
        cache_store._secret.cache_clear()
        assert cache_store._secret(key) == made  # read back, not made again
        key.chmod(0o644)
        cache_store._secret.cache_clear()
        assert cache_store._secret(key) != made  # readable by others: this process keys with its own secret
    finally:
        cache_store._secret.cache_clear()
