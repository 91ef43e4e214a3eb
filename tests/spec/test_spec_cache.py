"""Parsed specs are read back from the cache only for the same spec files under the same code; anything else is
parsed (and checked) again."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from ptxconf.spec import SpecError, load_specs, loader

SPECS = Path(__file__).resolve().parents[2] / "specs"


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("PTXCONF_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache" / "specs"


@pytest.fixture
def specs_copy(tmp_path) -> Path:
    d = tmp_path / "specs"
    shutil.copytree(SPECS, d)
    return d


def _parses(monkeypatch) -> list[Path]:
    seen: list[Path] = []
    real = loader._load_layouts
    monkeypatch.setattr(loader, "_load_layouts", lambda path, specs: seen.append(path) or real(path, specs))
    return seen


def test_a_second_load_reads_the_cache_and_gives_the_same_specs(cache, specs_copy, monkeypatch):
    first = load_specs(specs_copy)
    assert len(list(cache.glob("*.pickle"))) == 1
    seen = _parses(monkeypatch)
    again = load_specs(specs_copy)
    assert seen == []  # nothing parsed
    assert list(again.variants) == list(first.variants)
    for vid in list(first.variants)[::97]:
        assert again.variants[vid] == first.variants[vid]
        assert again.variants[vid].operands.keys() == first.variants[vid].operands.keys()
    assert again.documents.keys() == first.documents.keys()


def test_an_edited_spec_file_is_parsed_and_checked_again(cache, specs_copy, monkeypatch):
    load_specs(specs_copy)
    victim = specs_copy / "ldmatrix.yaml"
    victim.write_text(victim.read_text() + "\nbogus_top_level_field: 1\n")
    seen = _parses(monkeypatch)
    with pytest.raises(SpecError) as err:
        load_specs(specs_copy)
    assert seen and "ldmatrix.yaml" in str(err.value)


def test_a_damaged_cache_entry_is_parsed_over(cache, specs_copy):
    first = load_specs(specs_copy)
    (entry,) = cache.glob("*.pickle")
    entry.write_bytes(b"not a pickle")
    assert list(load_specs(specs_copy).variants) == list(first.variants)
    assert entry.read_bytes() != b"not a pickle"  # written again


def test_an_unwritable_cache_still_loads(tmp_path, monkeypatch, specs_copy):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("PTXCONF_CACHE", str(blocker))  # a file where the folder should be
    assert load_specs(specs_copy).variants
