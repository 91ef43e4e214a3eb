"""Fragment figures: SVG keeps labels as text, PNGs are sane, ASCII grid and diff figure."""

from __future__ import annotations

import struct
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

from ptxconf.figures import ascii_grid, map_diff_figure, operand_figure, operand_letter  # noqa: E402
from ptxconf.isa.loader import default_specs_dir, load_specs  # noqa: E402

M16N8K16 = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
M8N8K4 = "mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32"
M16N8K256 = "mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.xor.popc"
M16N8K8 = "mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16"


@pytest.fixture(scope="module")
def specs():
    return load_specs(default_specs_dir())


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_operand_letters() -> None:
    names = ("A", "B", "C", "D", "scale_A", "scale_B")
    assert [operand_letter(n) for n in names] == ["a", "b", "c", "d", "sfa", "sfb"]


def test_svg_keeps_labels_as_text(specs, tmp_path: Path) -> None:
    out = operand_figure(specs.get(M16N8K16), "A", tmp_path / "a.svg")
    root = ET.parse(out).getroot()
    texts = {"".join(e.itertext()) for e in root.iter("{http://www.w3.org/2000/svg}text")}
    assert {"T0: a0", "T31: a7"} <= texts
    assert any(M16N8K16 in t for t in texts) and any("Figure 79" in t for t in texts)
    assert not list(root.iter("{http://www.w3.org/2000/svg}image"))  # no embedded rasters


def test_png_multi_computation(specs, tmp_path: Path) -> None:
    out = operand_figure(specs.get(M8N8K4), "C", tmp_path / "c.png")
    w, h = png_size(out)
    assert out.stat().st_size > 0 and 300 < w < 4000 and 300 < h < 4000


def test_png_large_tile_is_split(specs, tmp_path: Path) -> None:
    out = operand_figure(specs.get(M16N8K256), "A", tmp_path / "b1.png")
    w, h = png_size(out)
    # 256 columns in four 64-column panels stacked: wide, but not one 256-cell strip
    assert out.stat().st_size > 0 and 1000 < w < 8000 and 800 < h < 8000 and w < 4 * h


def test_ascii_grid(specs) -> None:
    lines = ascii_grid(specs.get(M16N8K8).operands["A"].layout).splitlines()
    assert len(lines) == 16
    assert lines[0].startswith("T0:0 T0:1 T1:0 T1:1")
    assert lines[8].startswith("T0:2 T0:3")


def test_ascii_grid_computations(specs) -> None:
    text = ascii_grid(specs.get(M8N8K4).operands["C"].layout)
    assert text.count("computation ") == 4


def test_map_diff_figure(specs, tmp_path: Path) -> None:
    expected = specs.get(M16N8K16).operands["A"].layout.map()
    observed = expected.copy()
    observed[0, 0], observed[1, 0] = expected[1, 0], expected[0, 0]
    out = map_diff_figure(expected, observed, tmp_path / "diff.svg", "swap T0:a0 and T1:a0")
    texts = {"".join(e.itertext()) for e in ET.parse(out).getroot().iter("{http://www.w3.org/2000/svg}text")}
    assert any("2 cell(s) differ" in t for t in texts)
    png = map_diff_figure(expected, observed, tmp_path / "diff.png", "swap")
    assert png.stat().st_size > 0
