"""ptxconf.junit: output must pass the schema checks CI servers run (Jenkins xunit, Ant)."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from ptxconf.junit import JUnitCase, junit_string, write_junit

DATA = Path(__file__).resolve().parents[1] / "data" / "junit"
SCHEMAS = {"jenkins-xunit junit-10": DATA / "junit-10.xsd", "ant JUnit": DATA / "JUnit.xsd"}
STAMP = datetime(2024, 5, 6, 7, 8, 9, 123456)
PROPS = {"gpu": "NVIDIA H100", "sm": 90, "driver": "550.54", "seed": 7}


@pytest.fixture(scope="module")
def schemas() -> dict:
    """Both XSDs, loaded; xmlschema missing is a failure with the fix, never a skip."""
    try:
        import xmlschema
    except ImportError:
        pytest.fail("xmlschema is not installed: `pip install 'xmlschema>=3'` (it is in the test extras)")
    return {label: xmlschema.XMLSchema(str(path)) for label, path in SCHEMAS.items()}


def assert_valid(schemas: dict, xml: str) -> None:
    for label, schema in schemas.items():
        errors = [str(e.reason) for e in schema.iter_errors(xml)]
        assert not errors, f"not valid against {label}: {errors[:3]}\n{xml[:2000]}"


def invalid_against(schemas: dict, xml: str) -> set[str]:
    return {label for label, schema in schemas.items() if not schema.is_valid(xml)}


def check_counts(xml: str, cases: list[JUnitCase]) -> ET.Element:
    """The suite's count attributes agree with the cases; every testcase has a time."""
    root = ET.fromstring(xml)
    assert root.tag == "testsuites" and not root.attrib
    (suite,) = list(root)
    want = {
        "tests": len(cases),
        "failures": sum(c.status == "fail" for c in cases),
        "errors": sum(c.status == "error" for c in cases),
        "skipped": sum(c.status in ("skip", "undefined") for c in cases),  # an undefined observation is skipped
    }
    assert {k: int(suite.get(k)) for k in want} == want
    tcs = suite.findall("testcase")
    assert len(tcs) == len(cases)
    assert len(suite.findall("testcase/failure")) == want["failures"]
    assert len(suite.findall("testcase/error")) == want["errors"]
    assert len(suite.findall("testcase/skipped")) == want["skipped"]
    for tc in tcs:
        assert float(tc.get("time")) >= 0
    assert not any("disabled" in el.attrib for el in root.iter())
    assert math.isclose(float(suite.get("time")), sum(float(tc.get("time")) for tc in tcs), abs_tol=1e-6)
    return suite


MULTILINE = "lane 3 reg 1 row 2 col 5\n  expected 0x3c00\n  actual   0x3c01\nreplay: ptxconf run --select x"
SCENARIOS = {
    "pass": [JUnitCase("mma.m16n8k16.f16:map:seed=1", "mma", 0.25)],
    "fail-multiline": [JUnitCase("v:num:seed=2", "mma", 1.5, "fail", "2 lanes differ", MULTILINE, "specs/mma.yaml")],
    "error": [JUnitCase("v:run:seed=3", "wgmma", 0.01, "error", "ptxas failed", "ptxas: error: bad\nline 2")],
    "skip": [JUnitCase("v:run:seed=4", "tcgen05", 0.0, "skip", "needs sm_100a", "no such GPU here")],
    "skip-no-text": [JUnitCase("v:run:seed=4", "tcgen05", status="skip")],
    "undefined": [
        JUnitCase("mma.sp:undefined.metadata:seed=0", "mma", 0.2, "undefined", "as given: (1,0) (2,0)", "(1,0): [s1 s0 . .]"),
        JUnitCase("mma.sp:undefined.selector[2]:seed=0", "mma", 0.0, "undefined", "refused by ptxas: value '2'"),
        JUnitCase("mma.sp:value:seed=0", "mma", 0.1),
        JUnitCase("mma.sp:map.A:seed=0", "mma", 0.1, "skip", "needs sm_120a"),
    ],
    "unicode": [JUnitCase("Δ-μ:αβγ:種子=5 🚀", "ldmatrix·x4", 0.5, "fail", "≠ expected — ½ ulp", "ε=2⁻¹⁰\n中文 ✓")],
    "control-chars": [
        JUnitCase(
            "a\x00b\x1b[31mc\x7f\x85", "fam\x0b  ily\n", 0.1, "fail", "m\x01s\x02g\ufffe\uffff", "d\x00e\r\n\tf\x08"
        ),
        JUnitCase("lone surrogate \ud800 here", "x", 0.1, "error", "\x1f", "\x0c"),
    ],
    "empty-suite": [],
    "odd-times": [JUnitCase(f"t{i}", "c", t) for i, t in enumerate([-1.0, math.nan, math.inf, 1e-7, 12345.6789, 0])],
    "many-mixed": [
        JUnitCase(
            f"variant{i}:check:seed={i}",
            f"family{i % 7}",
            i / 997,
            ("pass", "fail", "error", "skip")[i % 4],
            f"message {i}",
            f"details {i}\nsecond line",
            f"specs/f{i}.yaml",
            {"lane": i},
        )
        for i in range(2000)
    ],
}


@pytest.mark.parametrize("flavor", ["jenkins", "gitlab"])
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_valid_against_both_schemas(schemas, tmp_path, scenario, flavor):
    cases = SCENARIOS[scenario]
    if flavor == "gitlab":  # file= is GitLab-only and outside both schemas: covered below
        cases = [JUnitCase(c.name, c.classname, c.time, c.status, c.message, c.details) for c in cases]
    path = tmp_path / "junit.xml"
    write_junit(path, "ptx-conformance", cases, PROPS, STAMP, "gpu-host-1", flavor=flavor)
    xml = path.read_bytes().decode("utf-8")
    assert xml.startswith('<?xml version="1.0" encoding="UTF-8"?>')
    assert_valid(schemas, xml)
    suite = check_counts(xml, cases)
    assert not any("file" in tc.attrib for tc in suite.iter("testcase"))
    undefined = sum(c.status == "undefined" for c in cases)
    assert {p.get("name"): p.get("value") for p in suite.findall("properties/property")} == {
        k: str(v) for k, v in PROPS.items()
    } | ({"undefined": str(undefined)} if undefined else {})
    for tc, case in zip(suite.iter("testcase"), cases):
        if case.status == "undefined":  # neither passed nor failed, labelled for people and for diff
            assert tc.find("skipped").get("message") == f"undefined by the ISA: {_clean_text(case.message)}"


def test_text_is_kept_apart_from_forbidden_characters():
    xml = junit_string(
        "s", SCENARIOS["fail-multiline"] + SCENARIOS["unicode"] + SCENARIOS["control-chars"], {}, STAMP, "h"
    )
    tcs = ET.fromstring(xml).findall("testsuite/testcase")
    assert tcs[0].find("failure").text == MULTILINE
    assert tcs[0].find("failure").get("type") == "failure"
    assert tcs[1].get("name") == "Δ-μ:αβγ:種子=5 🚀"
    assert tcs[1].find("failure").text == "ε=2⁻¹⁰\n中文 ✓"
    assert tcs[2].get("name") == "ab[31mc\x7f\x85"  # C1 controls are legal XML 1.0 characters
    assert tcs[2].find("failure").get("message") == "msg"
    assert tcs[2].find("failure").text == "de\n\tf"  # the parser folds CR LF to LF
    assert tcs[3].get("name") == "lone surrogate  here"


def test_timestamp_has_no_zone_or_fraction():
    def stamp(ts):
        return ET.fromstring(junit_string("s", [], {}, ts, "h")).find("testsuite").get("timestamp")

    assert stamp(STAMP) == "2024-05-06T07:08:09"
    assert stamp(datetime(2024, 1, 1, 1, 0, tzinfo=timezone(timedelta(hours=2)))) == "2023-12-31T23:00:00"
    assert stamp("2024-05-06T07:08:09.5Z") == "2024-05-06T07:08:09"
    assert stamp("2024-05-06 07:08:09") == "2024-05-06T07:08:09"


def test_blank_hostname_becomes_localhost_and_suite_gets_id_package(schemas):
    xml = junit_string("ptx  conformance\n", [], {}, STAMP, " \x00 ")
    assert_valid(schemas, xml)
    suite = ET.fromstring(xml).find("testsuite")
    assert (suite.get("hostname"), suite.get("name"), suite.get("package"), suite.get("id")) == (
        "localhost",
        "ptx conformance",
        "ptx conformance",
        "0",
    )


def test_gitlab_keeps_file_which_neither_schema_allows(schemas):
    case = JUnitCase("v:map:seed=1", "mma", 0.2, "fail", "m", "d", "specs/mma.yaml", {"lane": 3})
    gitlab = junit_string("s", [case], {}, STAMP, "h", flavor="gitlab")
    assert ET.fromstring(gitlab).find("testsuite/testcase").get("file") == "specs/mma.yaml"
    assert invalid_against(schemas, gitlab) == set(SCHEMAS)
    jenkins = junit_string("s", [case], {}, STAMP, "h")
    assert_valid(schemas, jenkins)
    assert "specs/mma.yaml" not in jenkins and "lane" not in jenkins


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="status"):
        junit_string("s", [JUnitCase("n", "c", status="passed")], {}, STAMP, "h")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="flavor"):
        junit_string("s", [], {}, STAMP, "h", flavor="circle")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="name"):
        junit_string(" \x01 ", [], {}, STAMP, "h")


def _mutate(xml: str, old: str, new: str) -> str:
    assert old in xml, old
    return xml.replace(old, new, 1)


BASE = junit_string("s", [JUnitCase("n", "c", 0.5, "fail", "m", "d")], {"k": "v"}, STAMP, "h")
# What each schema rejects, shown on our own valid document: the rules the writer follows.
RULES = {
    "testsuites attribute": (_mutate(BASE, "<testsuites>", '<testsuites tests="1">'), {"ant JUnit"}),
    "disabled on testsuites": (_mutate(BASE, "<testsuites>", '<testsuites disabled="0">'), set(SCHEMAS)),
    "disabled on testsuite": (_mutate(BASE, 'id="0"', 'id="0" disabled="0"'), set(SCHEMAS)),
    "no id/package": (_mutate(BASE, ' id="0" package="s"', ""), {"ant JUnit"}),
    "timestamp with zone": (_mutate(BASE, '09" hostname', '09Z" hostname'), {"ant JUnit"}),
    "timestamp with fraction": (_mutate(BASE, '09" hostname', '09.5" hostname'), {"ant JUnit"}),
    "no hostname": (_mutate(BASE, ' hostname="h"', ""), {"ant JUnit"}),
    "no properties": (
        _mutate(BASE, '<property name="k" value="v" />', "").replace("<properties>", "").replace("</properties>", ""),
        {"ant JUnit"},
    ),
    "no system-out": (_mutate(BASE, "<system-out />", ""), {"ant JUnit"}),
    "system-out first": (
        _mutate(_mutate(BASE, "<system-out />", ""), "<properties>", "<system-out /><properties>"),
        {"ant JUnit"},
    ),
    "failure without type": (_mutate(BASE, ' type="failure"', ""), {"ant JUnit"}),
    "testcase without time": (_mutate(BASE, ' time="0.500">', ">"), {"ant JUnit"}),
    "six-decimal suite time": (_mutate(BASE, 'time="0.500"', 'time="0.500000"'), {"jenkins-xunit junit-10"}),
    "exponent in suite time": (_mutate(BASE, 'time="0.500"', 'time="1e-07"'), set(SCHEMAS)),
    "file on testcase": (_mutate(BASE, 'classname="c"', 'classname="c" file="f.yaml"'), set(SCHEMAS)),
    "properties in testcase": (
        _mutate(BASE, "<failure", '<properties><property name="file" value="f" /></properties><failure'),
        set(SCHEMAS),
    ),
    "failure and skipped": (_mutate(BASE, "</testcase>", "<skipped /></testcase>"), {"ant JUnit"}),
}


def test_base_document_is_valid(schemas):
    assert_valid(schemas, BASE)


@pytest.mark.parametrize("rule", list(RULES))
def test_schema_rules(schemas, rule):
    xml, rejected_by = RULES[rule]
    assert invalid_against(schemas, xml) == rejected_by


def test_junit_xml_library_output_fails_junit10(schemas):
    """The old writer: default attributes plus file= on a testcase; Jenkins xunit rejects it."""
    from junit_xml import TestCase, TestSuite, to_xml_report_string

    tc = TestCase("v:map:seed=1", classname="mma", elapsed_sec=0.1, file="specs/mma.yaml")
    xml = to_xml_report_string([TestSuite("ptx-conformance mma", [tc], properties={"gpu": "x"})])
    assert "jenkins-xunit junit-10" in invalid_against(schemas, xml)
    reasons = " ".join(str(e.reason) for e in schemas["jenkins-xunit junit-10"].iter_errors(xml))
    assert "'disabled' attribute not allowed" in reasons and "'file' attribute not allowed" in reasons
    assert "jenkins-xunit junit-10" not in invalid_against(
        schemas, junit_string("s", [JUnitCase(tc.name, tc.classname, 0.1, file=tc.file)], {"gpu": "x"}, STAMP, "h")
    )


def _clean_text(text: str) -> str:
    from ptxconf.junit import _clean

    return _clean(text)


# --- what ptxconf run and the recorded runs actually write -------------------------------------


def test_a_run_writes_junit_both_schemas_accept(schemas, tmp_path):
    """A real emulator run with passes and skips (tcgen05 needs sm_100a): the file it writes validates,
    and every case has a unique (classname, name)."""
    from ptxconf.cli.main import main

    out = tmp_path / "run"
    sel = ["--select", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "--select", "tcgen05*"]
    assert main(["run", "--backend", "emulator", "-q", "--out", str(out), *sel]) == 0
    xml = (out / "junit.xml").read_text(encoding="utf-8")
    assert_valid(schemas, xml)
    cases = ET.fromstring(xml).iter("testcase")
    names = [(c.get("classname"), c.get("name")) for c in cases]
    assert len(names) == len(set(names)) and all(n for _, n in names)
    assert any(c.find("skipped") is not None for c in ET.fromstring(xml).iter("testcase"))


def test_an_undefined_run_writes_junit_both_schemas_accept(schemas, tmp_path):
    """--undefined: each observation a skipped case labelled "undefined by the ISA:", counted in a suite property."""
    from ptxconf.cli.main import main

    out = tmp_path / "run"
    sel = ["--select", "mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.bf16.bf16.f32"]
    assert main(["run", "--backend", "emulator", "-q", "--undefined", "--out", str(out), *sel]) == 0
    xml = (out / "junit.xml").read_text(encoding="utf-8")
    assert_valid(schemas, xml)
    suite = ET.fromstring(xml).find("testsuite")
    labelled = [c for c in suite.iter("testcase") if c.find("skipped") is not None
                and c.find("skipped").get("message").startswith("undefined by the ISA: ")]
    assert labelled and {c.get("name").split(":")[-2].split("[")[0] for c in labelled} <= {
        "undefined.metadata", "undefined.selector"}
    props = {p.get("name"): p.get("value") for p in suite.findall("properties/property")}
    undefined = sum(1 for c in labelled)
    assert props["undefined"] == str(undefined) and int(suite.get("failures")) == 0


RECORDED = Path(__file__).resolve().parents[2] / "results"
RECORDED_JUNIT = sorted(RECORDED.rglob("junit.xml")) + sorted(RECORDED.rglob("junit.xml.gz"))


@pytest.mark.parametrize("path", RECORDED_JUNIT, ids=lambda p: p.relative_to(RECORDED).as_posix())
def test_recorded_runs_junit_both_schemas_accept(schemas, path):
    """Every committed JUnit, plain or gzipped, as Jenkins (junit-10) and the Ant schema read it."""
    import gzip

    xml = gzip.open(path, "rt", encoding="utf-8").read() if path.suffix == ".gz" else path.read_text(encoding="utf-8")
    assert_valid(schemas, xml)


def test_recorded_runs_have_no_shared_testcase_ids():
    """GitLab drops cases whose (classname, name) repeat across the reports of one pipeline."""
    import gzip

    seen: dict[tuple[str, str], str] = {}
    for path in RECORDED_JUNIT:
        text = gzip.open(path, "rt", encoding="utf-8").read() if path.suffix == ".gz" else path.read_text()
        for c in ET.fromstring(text).iter("testcase"):
            key = (c.get("classname"), c.get("name"))
            assert key not in seen, f"{key} in both {seen[key]} and {path}"
            seen[key] = str(path)


def _record(i: int, status: str):
    from ptxconf.run.report import Record

    return Record(f"v{i % 7}", "mma.sync", "specs/x.yaml", f"check{i}", 3, status, f"m<{i}>", f"d&{i}\x00", i / 7)


@pytest.mark.parametrize("flavor", ["jenkins", "gitlab"])
def test_a_run_log_renders_its_testcases_as_they_come_and_writes_the_same_document(schemas, tmp_path, flavor):
    """A run's log makes each testcase as its record comes (the end only joins them): the document is byte for byte
    the one made from every case at the end, also where the records changed otherwise than appended to."""
    from ptxconf.run.report import RunLog

    log = RunLog(tmp_path / "run", {"backend": "emulator"}, 3, flavor=flavor)
    statuses = ["pass", "fail", "error", "skip", "undefined"]
    for i in range(12):
        log.add(_record(i, statuses[i % 5]))
        if i % 4 == 3:
            log.write_junit()  # a partial document between records (as an interrupted run writes one)

    def whole() -> str:
        return junit_string(f"ptx-conformance {log.label}", log.junit_cases(), {**{k: str(v) for k, v in log.info.items()},
                            "seed": "3"}, log.started, __import__("socket").gethostname(), flavor)

    log.write_junit()
    xml = (tmp_path / "run" / "junit.xml").read_text(encoding="utf-8")
    assert xml == whole() and xml.count("<testcase ") == 12
    assert_valid(schemas, xml) if flavor == "jenkins" else check_counts(xml, log.junit_cases())
    log.records[5] = _record(99, "fail")  # replaced, not appended: rendered again from there
    log.write_junit()
    xml = (tmp_path / "run" / "junit.xml").read_text(encoding="utf-8")
    assert xml == whole() and "check99" in xml and xml.count("<testcase ") == 12
    del log.records[9:]
    log.add(_record(100, "pass"))
    log.write_junit()
    xml = (tmp_path / "run" / "junit.xml").read_text(encoding="utf-8")
    assert xml == whole() and "check100" in xml and "check10:seed" not in xml and xml.count("<testcase ") == 10
    log.close()
