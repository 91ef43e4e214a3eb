"""tcgen05: Table 39 enumeration, descriptor round trips, ISA self-check (pinned), ptxas matrix."""

from __future__ import annotations

import shutil

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ptxconf.cli import main
from ptxconf.families.tcgen05.desc import (
    DescriptorError,
    IdescFields,
    SmemDesc,
    UntranscribedDescriptor,
    decode_idesc,
    decode_smem_desc,
    encode_idesc,
    encode_smem_desc,
)
from ptxconf.families.tcgen05.selfcheck import selfcheck
from ptxconf.families.tcgen05.spec import MmaTuple, load_tcgen05
from ptxconf.isa import SpecError, load_specs
from ptxconf.isa.targets import PtxVersion, parse_target

SPEC = load_tcgen05()
# What specs/ can encode: every tuple but f8f6f4's sparse K = 128 (ISA 9.4's Table 51 gives it no K code: errata
# f8f6f4-sparse-k128-code); no row lacks its descriptor encoding since ISA 9.4's Tables 51-53 were read.
TRANSCRIBED = [t for r in SPEC.rows if not r.invalid and not r.descriptor for t in SPEC.row_tuples(r)]
ENCODABLE = [t for t in TRANSCRIBED if not (t.kind == "f8f6f4" and t.sparsity == "sparse" and t.K == 128)]


def _fields(t: MmaTuple, **kw) -> IdescFields:
    return IdescFields(t.kind, t.dtype, t.atype, t.btype, t.M, t.N, t.K, t.ws, t.cta_group, t.sparsity == "sparse", scale=t.scale, **kw)


def test_counts_per_kind_are_pinned():
    # f8f6f4: D .f32 or .f16 x 25 A/B pairs (ISA 9.2 read .f16 as an A/B type: 36 pairs, D .f32 only), plus
    # ISA 9.4's K1 rows (.e4m3/.e5m2 only); the block-scaled kinds gain ISA 9.4's K values; ti16 is new in 9.4.
    # mxf4nvf4: ISA 9.4's .ue5m3 scale type is a third scale (224 tuples more).
    assert SPEC.counts() == {"f16": 621, "tf32": 207, "f8f6f4": 10982, "i8": 476, "mxf8f6f4": 5200, "mxf4": 224,
                             "mxf4nvf4": 672, "ti16": 143}
    assert len(TRANSCRIBED) == len(SPEC.tuples) and len(SPEC.tuples) - len(ENCODABLE) == 304


def test_k96_on_sm_103a_and_sm_107a():
    t = MmaTuple("mxf4nvf4", False, 2, "dense", "f32", "e2m1", "e2m1", 256, 128, 96, "ue4m3")
    assert SPEC.explain(t) is None
    assert SPEC.valid_on(t, "sm_103a", "8.8") is None and SPEC.valid_on(t, "sm_107a", "9.4") is None
    assert "sm_103a" in SPEC.valid_on(t, "sm_100a", "8.8") and SPEC.valid_on(t, "sm_107f", "9.4")
    # ISA 9.4 prints K = 96 for cta_group 1 too; encodable (Table 44's K-dimension bit), on the same targets.
    t1 = MmaTuple("mxf4", False, 1, "dense", "f32", "e2m1", "e2m1", 128, 128, 96, "ue8m0")
    assert SPEC.valid_on(t1, "sm_107a", "9.4") is None and SPEC.valid_on(t1, "sm_103a", "9.3")
    assert encode_idesc(SPEC, _fields(t1)) >> 31 == 1


def test_isa94_rows_and_targets():
    """ISA 9.4 Table 48: .kind::ti16, f8f6f4's .f16 accumulator and K1 = 64, the sm_107 targets."""
    ti16 = MmaTuple("ti16", False, 1, "dense", "s32", "s1z4m11", "s1z4m11", 128, 16, 16)
    assert SPEC.valid_on(ti16, "sm_107a", "9.4") is None and SPEC.valid_on(ti16, "sm_107f", "9.5") is None
    assert SPEC.valid_on(ti16, "sm_100a", "9.4") and "9.4" in SPEC.valid_on(ti16, "sm_107a", "9.3")
    assert "N = 8" in SPEC.explain(MmaTuple("ti16", False, 1, "dense", "s32", "s1z4m11", "s1z4m11", 128, 8, 16))
    assert SPEC.explain(MmaTuple("f8f6f4", False, 1, "dense", "f16", "e2m1", "e4m3", 64, 8, 32)) is None
    assert "atype/btype" in SPEC.explain(MmaTuple("f8f6f4", False, 1, "dense", "f32", "f16", "f16", 64, 8, 32))
    k1 = MmaTuple("f8f6f4", False, 1, "dense", "f32", "e4m3", "e5m2", 128, 16, 64)
    assert SPEC.valid_on(k1, "sm_107f", "9.4") is None and SPEC.valid_on(k1, "sm_100a", "9.4")
    assert SPEC.explain(MmaTuple("f8f6f4", False, 1, "dense", "f32", "e2m1", "e2m1", 128, 16, 64))  # the footnote
    sparse = MmaTuple("mxf4", False, 1, "sparse", "f32", "e2m1", "e2m1", 128, 64, 128, "ue8m0")
    assert SPEC.valid_on(sparse, "sm_107a", "9.4") is None and SPEC.valid_on(sparse, "sm_107f", "9.4")
    i8 = MmaTuple("i8", False, 1, "dense", "s32", "s8", "s8", 128, 64, 32)
    assert SPEC.valid_on(i8, "sm_107a", "9.4") and SPEC.valid_on(i8, "sm_107f", "9.4")
    cb = SPEC.collector_b
    assert cb.valid_on(parse_target("sm_107f"), PtxVersion(9, 4)) is None
    assert cb.valid_on(parse_target("sm_100a"), PtxVersion(9, 4)) and cb.valid_on(parse_target("sm_107a"), PtxVersion(9, 3))


def test_isa94_descriptor_codes():
    """ISA 9.4 Tables 51-53: the K field (bit 29; bit 31; bits 31 and 3), ti16, .ue5m3, scale-A layout, sparsity version."""
    ti16 = encode_idesc(SPEC, IdescFields("ti16", "s32", "s1z4m11", "s1z4m11", 128, 16, negate_a=True), "sm_107f", "9.4")
    assert ti16 == 2 << 4 | 3 << 7 | 3 << 10 | 1 << 13 | 2 << 17 | 8 << 24
    with pytest.raises(DescriptorError, match="transpose_a"):  # errata ti16-transpose: Table 51 has no code
        encode_idesc(SPEC, IdescFields("ti16", "s32", "s1z4m11", "s1z4m11", 128, 16, transpose_a=True))
    k64 = IdescFields("f8f6f4", "f16", "e4m3", "e5m2", 128, 16, K=64)
    assert encode_idesc(SPEC, k64, "sm_107f", "9.4") == 1 << 29 | 0 << 4 | 1 << 10 | 2 << 17 | 8 << 24
    assert encode_idesc(SPEC, IdescFields("f8f6f4", "f16", "e4m3", "e5m2", 128, 16, K=32)) >> 29 & 1 == 0
    with pytest.raises(DescriptorError, match="sm_107f"):
        encode_idesc(SPEC, k64, "sm_100a", "9.4")
    with pytest.raises(DescriptorError, match="sparse_k128"):  # errata f8f6f4-sparse-k128-code
        encode_idesc(SPEC, IdescFields("f8f6f4", "f32", "e4m3", "e4m3", 128, 16, K=128, sparse=True))
    mx = IdescFields("mxf8f6f4", "f32", "e2m1", "e2m1", 128, 64, K=128, sparse=True, scale_a_layout=128)
    assert encode_idesc(SPEC, mx, "sm_107f", "9.4") >> 31 == 1 and encode_idesc(SPEC, mx) >> 26 & 1 == 1
    with pytest.raises(DescriptorError, match="scale_a_layout"):
        encode_idesc(SPEC, IdescFields("mxf8f6f4", "f32", "e4m3", "e4m3", 128, 64, scale_a_layout=128), "sm_100a", "9.4")
    # mxf4's two-bit K: bit 31 low, bit 3 high.  Dense 128 = 2 (bit 3 alone), 96 = 1, 64 = 0.
    for k, code in ((64, 0), (96, 1), (128, 2)):
        f = IdescFields("mxf4", "f32", "e2m1", "e2m1", 256, 64, K=k, cta_group=2)
        v = encode_idesc(SPEC, f)
        assert (v >> 31 & 1) | (v >> 3 & 1) << 1 == code
        back, raw, problems = decode_idesc(SPEC, v, "mxf4", cta_group=2)
        assert back.K == k and not problems and raw["k_dim"] == f"dense_k{k}"
    nv = IdescFields("mxf4nvf4", "f32", "e2m1", "e2m1", 128, 64, sparse=True, scale="ue5m3", K=192)
    v = encode_idesc(SPEC, nv, "sm_107a", "9.4")  # the sparsity version follows the target: v1 on sm_107a
    assert v >> 23 & 3 == 2 and v >> 12 & 1 == 1 and (v >> 31 & 1, v >> 3 & 1) == (1, 0)
    assert decode_idesc(SPEC, v, "mxf4nvf4")[0].sparsity_version == "v1"
    sp = IdescFields("mxf4", "f32", "e2m1", "e2m1", 128, 64, sparse=True, K=128)
    assert encode_idesc(SPEC, sp, "sm_100a", "9.4") >> 12 & 1 == 0
    with pytest.raises(DescriptorError, match="sparsity_version"):
        encode_idesc(SPEC, IdescFields(**{**sp.as_dict(), "sparsity_version": "v1"}), "sm_100a", "9.4")
    with pytest.raises(DescriptorError, match="ue5m3"):  # .ue5m3 needs sm_107f (§9.7.18.10.7.1)
        encode_idesc(SPEC, IdescFields("mxf4nvf4", "f32", "e2m1", "e2m1", 128, 64, scale="ue5m3"), "sm_100a", "9.4")


def test_untranscribed_descriptors_are_refused_with_the_row(tmp_path):
    import yaml
    from ptxconf.families.tcgen05.spec import load_tcgen05 as load

    doc = yaml.safe_load(open(SPEC.file))
    row = next(r for r in doc["table39"]["rows"] if r["kind"] == "ti16")
    row["descriptor"] = "not transcribed, for this test"
    (tmp_path / "tcgen05.yaml").write_text(yaml.safe_dump(doc))
    spec = load(tmp_path)
    with pytest.raises(UntranscribedDescriptor, match=r"tcgen05\.yaml:\d+"):
        encode_idesc(spec, IdescFields("ti16", "s32", "s1z4m11", "s1z4m11", 64, 16))


@pytest.mark.parametrize(
    "t, words",
    [
        (MmaTuple("f16", True, 2, "dense", "f32", "f16", "f16", 128, 64, 16), ".ws with CTA group 2"),
        (MmaTuple("i8", False, 1, "dense", "s32", "s8", "s8", 128, 40, 32), "N = 40"),
        (MmaTuple("f16", False, 1, "dense", "f16", "bf16", "bf16", 128, 64, 16), "dtype .f16 takes"),
        (MmaTuple("f16", False, 1, "dense", "f32", "f16", "bf16", 128, 64, 16), "one type for A and B"),
        (MmaTuple("mxf8f6f4", True, 1, "dense", "f32", "e4m3", "e4m3", 128, 64, 32, "ue8m0"), "mxf8f6f4 with .ws"),
        (MmaTuple("mxf8f6f4", False, 2, "sparse", "f32", "e4m3", "e4m3", 128, 64, 64, "ue8m0"), "M = 128"),
    ],
)
def test_invalid_tuples_name_the_rule(t, words):
    assert words in SPEC.explain(t)


def test_i8_not_on_family_or_sm_103a():
    t = MmaTuple("i8", False, 1, "dense", "s32", "s8", "u8", 128, 64, 32)
    assert SPEC.valid_on(t, "sm_100a", "8.6") is None
    assert SPEC.valid_on(t, "sm_103a", "8.8") and SPEC.valid_on(t, "sm_100f", "8.8")


def test_known_descriptor_value():
    # D f32, A/B bf16, M=128, N=256: dtype 1<<4, atype 1<<7, btype 1<<10, N>>3 << 17, M>>4 << 24.
    assert encode_idesc(SPEC, IdescFields("f16", "f32", "bf16", "bf16", 128, 256)) == 0x08400490


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(ENCODABLE), st.booleans(), st.booleans(), st.integers(0, 3), st.integers(0, 3))
def test_idesc_round_trip(t, neg, tr, sel, sid):
    kind = SPEC.kinds[t.kind]
    kw = {}
    if t.kind != "i8":
        kw["negate_a"] = neg
    if t.kind not in ("mxf4", "mxf4nvf4", "ti16"):
        kw["transpose_b"] = tr
    if t.sparsity == "sparse" and not kind.block_scaled:
        kw["sparsity_selector"] = sel
    if kind.block_scaled:
        kw["scale_a_id"] = sid if t.kind == "mxf8f6f4" else (sid & 2)
    f = _fields(t, **kw)
    v = encode_idesc(SPEC, f)
    assert 0 <= v < 1 << 32
    back, raw, problems = decode_idesc(SPEC, v, t.kind, ws=t.ws, cta_group=t.cta_group)
    assert problems == []
    assert raw["M"] == t.M and raw["N"] == t.N and raw["K"] == t.K
    want = f.as_dict()  # K is stored (ISA 9.4's K field), the mxf4 kinds' sparsity version defaults to v0
    if t.kind in ("mxf4", "mxf4nvf4"):
        want["sparsity_version"] = "v0"
    assert back.as_dict() == want


def test_every_valid_tuple_encodes_except_the_sparse_k128_erratum():
    for t in ENCODABLE:
        encode_idesc(SPEC, _fields(t))
    # ISA 9.4 codes f8f6f4's F16 accumulator (Table 51: F16 = 0), which ISA 9.2's Table 42 did not.
    assert encode_idesc(SPEC, IdescFields("f8f6f4", "f16", "e4m3", "e4m3", 128, 64)) >> 4 & 3 == 0


def test_decode_flags_reserved_bits_and_bad_codes():
    v = encode_idesc(SPEC, IdescFields("f16", "f32", "f16", "f16", 128, 64)) | (1 << 23)
    _f, _raw, problems = decode_idesc(SPEC, v, "f16")
    assert any("reserved" in p for p in problems)
    _f, _raw, problems = decode_idesc(SPEC, (7 << 7) | (8 << 24) | (8 << 17), "f8f6f4")
    assert any("no code" in p for p in problems)


@settings(max_examples=300, deadline=None)
@given(
    st.integers(0, 0x3FFF).map(lambda x: x << 4),
    st.integers(0, 0x3FFF).map(lambda x: x << 4),
    st.integers(0, 0x3FFF).map(lambda x: x << 4),
    st.integers(0, 7),
    st.sampled_from(["none", "128B_base32B", "128B", "64B", "32B"]),
)
def test_smem_desc_round_trip(addr, lbo, sbo, base, swz):
    d = SmemDesc(addr, lbo, sbo, base, "relative", swz)
    v = encode_smem_desc(SPEC, d)
    assert (v >> 46) & 7 == 1 and (v >> 53) & 0xFF == 0
    back, _raw, problems = decode_smem_desc(SPEC, v)
    assert problems == [] and back == d


def test_smem_desc_rules():
    with pytest.raises(DescriptorError, match="16-byte aligned"):
        encode_smem_desc(SPEC, SmemDesc(0x408))
    with pytest.raises(DescriptorError, match="sm_103a"):
        encode_smem_desc(SPEC, SmemDesc(0x400, 0x800, 1024, 0, "absolute", "128B"), target="sm_100a", ptx="8.8")
    with pytest.raises(DescriptorError, match="only 128B"):
        encode_smem_desc(SPEC, SmemDesc(0x400, 0x800, 1024, 0, "absolute", "64B"), target="sm_103a", ptx="8.8")
    assert encode_smem_desc(SPEC, SmemDesc(0x400, 0x800, 1024, 0, "absolute", "128B"), target="sm_103a", ptx="8.8") >> 52 & 1
    _d, _raw, problems = decode_smem_desc(SPEC, 3 << 61 | 1 << 46)
    assert any("no valid code" in p for p in problems)


def test_selfcheck_findings_are_pinned():
    ids = sorted(f.id for f in selfcheck(SPEC))
    assert ids == sorted([
        "erratum.f8f6f4-k64-footnote",
        "erratum.mxf4-k-pairs",
        "unencodable.f8f6f4",
        "descriptor-admits.f16",
        "scale-alias.mxf8f6f4.block32",
        "scale-alias.mxf4.block32",
        "scale-alias.mxf4nvf4.block32",
        "scale-alias.mxf4nvf4.block16",
        "erratum.smem-desc-fixed-53-60",
        "erratum.mxf4-family-targets",
        "erratum.table41-mode1",
        "erratum.ld-red-example-order",
        "erratum.ti16-transpose",
    ])
    f = next(f for f in selfcheck(SPEC) if f.id == "unencodable.f8f6f4")
    assert f.count == len(TRANSCRIBED) - len(ENCODABLE) and "sparse_k128" in f.message
    assert "erratum.ti16-transpose" in ids


def test_cli(capsys):
    assert main(["tcgen05", "list", "--counts"]) == 0
    assert "18525" in capsys.readouterr().out
    assert main(["tcgen05", "idesc", "encode", "--kind", "f16", "--atype", "bf16", "--btype", "bf16", "--m", "128", "--n", "256"]) == 0
    assert capsys.readouterr().out.strip() == "0x08400490"
    assert main(["tcgen05", "idesc", "encode", "--kind", "tf32", "--atype", "tf32", "--btype", "tf32", "--m", "128", "--n", "64", "--ws", "--cta-group", "2"]) == 1
    assert ".ws with CTA group 2" in capsys.readouterr().err
    assert main(["tcgen05", "idesc", "decode", "0x08400490", "--kind", "f16"]) == 0
    assert main(["tcgen05", "selfcheck", "--json"]) == 0
    assert "unencodable.f8f6f4" in capsys.readouterr().out


@pytest.mark.parametrize("kind, scale, table", [("mxf4", "ue8m0", "Table 44"), ("mxf4nvf4", "ue4m3", "Table 44"),
                                                ("mxf8f6f4", "ue8m0", "Table 43")])
def test_block_scaled_refusals_cite_the_isa_table(capsys, kind, scale, table):
    """§9.7.16.4.2: Table 43 is .kind::mxf8f6f4, Table 44 .kind::mxf4/.kind::mxf4nvf4 (scale IDs 0 or 2 only)."""
    scale_id = "1" if kind != "mxf8f6f4" else "4"
    args = ["tcgen05", "idesc", "encode", "--kind", kind, "--atype", "e2m1", "--btype", "e2m1", "--m", "128", "--n", "64",
            "--scale", scale, "--scale-a-id", scale_id]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert f"§9.7.16.4.2 {table} scale_a_id" in err and f"with .kind::{kind}; got {scale_id}" in err
    assert SPEC.format_for(kind).table == table


def test_loader_errors_name_file_line_field(tmp_path):
    src = (load_tcgen05().file and open(SPEC.file).read())
    bad = src.replace("dtype: f16, ab: [f16], M: [64, 128], N: [\"8..256/8\"], K: [16]}", "dtype: f16, ab: [f16], M: [64, 128], N: [\"8..250/8\"], K: [16]}", 1)
    (tmp_path / "tcgen05.yaml").write_text(bad)
    with pytest.raises(SpecError) as exc:
        load_specs(tmp_path)
    assert exc.value.field == "table39.rows[0].N[0]" and exc.value.line and "steps" in exc.value.message
    (tmp_path / "tcgen05.yaml").write_text(src.replace("schema: tcgen05/1", "schema: tcgen05/9"))
    with pytest.raises(SpecError, match="unknown schema"):
        load_specs(tmp_path)
    (tmp_path / "tcgen05.yaml").write_text(src.replace("- {name: reserved6, bits: [6, 6], reserved: true}", "- {name: reserved6, bits: [5, 6], reserved: true}", 1))
    with pytest.raises(SpecError, match="belongs to both") as exc:
        load_specs(tmp_path)
    assert exc.value.field.startswith("idesc.formats.dense_family.fields")


def test_mma_sync_specs_still_load():
    specs = load_specs()
    assert len(specs.variants) > 50 and "tcgen05.mma" in specs.documents


# --- ptxas ----------------------------------------------------------------------------------

HAVE_PTXAS = shutil.which("ptxas") is not None


def _pinned():
    from ptxconf.backends.ptxas import find_pinned_ptxas

    return find_pinned_ptxas()


@pytest.mark.ptxas
@pytest.mark.parametrize("which", ["path", "pinned"])
def test_ptxas_matrix(which):
    from ptxconf.families.tcgen05.assemble import DEFAULT_ARCHS, matrix, summary

    exe = shutil.which("ptxas") if which == "path" else _pinned()
    if exe is None:
        pytest.skip(f"no {which} ptxas (the pinned one comes from pip install nvidia-cuda-nvcc==13.5.37, see .ci/run)")
    rows = matrix(SPEC, DEFAULT_ARCHS.split(","), exe)
    s = summary(rows)
    n = len({r.variant for r in rows})  # 104 qualifier forms, 256 with a .collector::b::* usage
    assert n == 360
    # tcgen05 does not exist before Blackwell datacenter parts: all agree there.
    assert s["sm_90a"] == {"agree": n} and s["sm_120a"] == {"agree": n}
    assert s["sm_100a"] == {"agree": n} and s["sm_100f"] == {"agree": n}
    # Known disagreement: the ISA says .scale_vec::NX "requires sm_100a"; ptxas takes it on sm_103a/sm_110a
    # (and, from 13.4, on sm_107a).  A ptxas before .version 9.4 cannot try sm_107a/sm_107f: "untestable".
    for arch in ("sm_103a", "sm_110a", "sm_107a"):
        bad = [r for r in rows if r.arch == arch and r.disagrees]
        assert all(r.status == "assembles-but-spec-invalid" and ".scale_vec::" in r.variant for r in bad)
        assert len(bad) == (16 if s[arch].get("untestable", 0) == 0 else 0)
    assert set(s["sm_107f"]) <= {"agree", "untestable"}
