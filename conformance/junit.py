"""JUnit XML writer (standard library only) whose output CI servers' schema checks accept.

flavor="jenkins" targets Jenkins (junit and xunit plugins) and other Ant-schema readers: the output
validates against both xunit's junit-10.xsd and Ant's JUnit.xsd; neither lets <testcase> carry
``file=`` or <properties>, so a case's file and properties are dropped.
flavor="gitlab" targets GitLab CI, which reads ``file=`` on <testcase>: it is kept there (neither
schema accepts it); everything else is as for "jenkins".

What the two schemas demand, and so what every document here has:
- Ant: an attribute-less <testsuites>; <testsuite> with id (int), package, name and hostname (non-empty),
  timestamp without timezone or fraction, and children in the order properties, testcase*, system-out,
  system-err (all but testcase required); at most one of failure/error/skipped per case; ``type`` on
  failure and error; time as a plain decimal on every testcase.
- junit-10: suite time with at most three decimals and no exponent; no ``disabled`` attribute anywhere.

A case whose status is ``undefined`` (an observation of inputs the ISA leaves undefined: neither a pass nor a
failure) is written as a skipped testcase whose message starts with "undefined by the ISA:", and the suite gets a
property ``undefined`` with their count, so a CI server counts it as neither passed nor failed; neither schema lets
a testcase carry a property of its own.
"""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from datetime import datetime, timezone
from os import PathLike
from typing import Literal

from ptxconf.core.verdict import UNDEFINED, labelled

__all__ = ["JUnitCase", "RenderedCase", "render_case", "junit_string", "write_junit"]

Status = Literal["pass", "fail", "error", "skip", "undefined"]
Flavor = Literal["jenkins", "gitlab"]

# Characters outside the XML 1.0 Char production; a parser rejects the whole file on one of them.
_NOT_XML_CHAR = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_OUTCOME_TAG = {"fail": "failure", "error": "error", "skip": "skipped", UNDEFINED: "skipped"}


@dataclass
class JUnitCase:
    """One test result; ``file`` and ``properties`` reach the XML only where a flavor allows them."""

    name: str
    classname: str
    time: float = 0.0
    status: Status = "pass"
    message: str = ""
    details: str = ""
    file: str | None = None
    properties: dict = field(default_factory=dict)


def _clean(value: object) -> str:
    """str() of a value minus the characters XML 1.0 forbids."""
    return _NOT_XML_CHAR.sub("", "" if value is None else str(value))


def _seconds(t: float) -> str:
    """Both schemas' time formats: non-negative, no exponent, at most three decimals."""
    try:
        t = float(t)
    except (TypeError, ValueError):
        t = 0.0
    return f"{t:.3f}" if math.isfinite(t) and t > 0 else "0.000"


def _timestamp(ts: datetime | str) -> str:
    """Ant's pattern is YYYY-MM-DDTHH:MM:SS with no zone: aware times are given in UTC first."""
    if isinstance(ts, str):
        text = ts.strip()
        ts = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
    if ts.tzinfo is not None:
        ts = ts.astimezone(timezone.utc).replace(tzinfo=None)
    return ts.strftime("%Y-%m-%dT%H:%M:%S")


def _properties(parent: ET.Element, props: dict) -> None:
    """A <properties> element, always present (Ant requires it); Ant rejects empty names."""
    node = ET.SubElement(parent, "properties")
    for key, value in props.items():
        name = _clean(key).strip()
        if name:
            ET.SubElement(node, "property", name=name, value=_clean(value))


@dataclass(frozen=True)
class RenderedCase:
    """A testcase as its document holds it (:func:`render_case`): made while a run goes on, so that the document at its
    end only joins them (a whole suite's 16,302 testcases took a fifth of a second to build and write there)."""

    text: str  # the <testcase> element, indented for its depth in the document
    status: Status
    time: str  # its time attribute (the suite's time is their sum)


def render_case(case: JUnitCase, flavor: Flavor = "jenkins") -> RenderedCase:
    """``case`` as the document of ``flavor`` writes it."""
    if case.status != "pass" and case.status not in _OUTCOME_TAG:
        raise ValueError(f"unknown JUnit case status {case.status!r}")
    attrs = {"name": _clean(case.name), "classname": _clean(case.classname), "time": _seconds(case.time)}
    if flavor == "gitlab" and case.file:
        attrs["file"] = _clean(case.file)
    node = ET.Element("testcase", attrs)
    tag = _OUTCOME_TAG.get(case.status)
    if tag:
        outcome = ET.SubElement(node, tag, message=_clean(labelled(case.status, case.message)))
        if tag != "skipped":
            outcome.set("type", tag)
        outcome.text = _clean(case.details)
    ET.indent(node, level=_CASE_DEPTH)
    return RenderedCase(ET.tostring(node, encoding="unicode"), case.status, attrs["time"])


_CASE_DEPTH = 2  # testsuites > testsuite > testcase
_CASES_GO_BEFORE = "<system-out />"  # the element after the testcases, in the document without them


def junit_string(
    suite_name: str,
    cases: list[JUnitCase] | list[RenderedCase],
    properties: dict,
    timestamp: datetime | str,
    hostname: str,
    flavor: Flavor = "jenkins",
) -> str:
    """The whole document as text, with its XML declaration (``cases`` as given, or rendered for ``flavor`` first)."""
    if flavor not in ("jenkins", "gitlab"):
        raise ValueError(f"unknown JUnit flavor {flavor!r}")
    name = " ".join(_clean(suite_name).split())
    if not name:
        raise ValueError("a JUnit testsuite needs a non-blank name")
    cases = [c if isinstance(c, RenderedCase) else render_case(c, flavor) for c in cases]
    counts = {s: sum(c.status == s for c in cases) for s in ("fail", "error", "skip", UNDEFINED)}
    root = ET.Element("testsuites")
    suite = ET.SubElement(
        root,
        "testsuite",
        {
            "name": name,
            "tests": str(len(cases)),
            "failures": str(counts["fail"]),
            "errors": str(counts["error"]),
            "skipped": str(counts["skip"] + counts[UNDEFINED]),
            "time": _seconds(sum(float(c.time) for c in cases)),
            "timestamp": _timestamp(timestamp),
            "hostname": " ".join(_clean(hostname).split()) or "localhost",
            "id": "0",
            "package": name,
        },
    )
    if counts[UNDEFINED]:
        properties = {**properties, UNDEFINED: counts[UNDEFINED]}
    _properties(suite, properties)
    ET.SubElement(suite, "system-out")
    ET.SubElement(suite, "system-err")
    ET.indent(root)
    text = ET.tostring(root, encoding="unicode")
    at = text.index(_CASES_GO_BEFORE)  # the testcases between the properties and system-out, as a tree puts them
    indent = "  " * _CASE_DEPTH
    body = "".join(c.text + "\n" + indent for c in cases)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + text[:at] + body + text[at:] + "\n"


def write_junit(
    path: str | PathLike[str],
    suite_name: str,
    cases: list[JUnitCase] | list[RenderedCase],
    properties: dict,
    timestamp: datetime | str,
    hostname: str,
    flavor: Flavor = "jenkins",
) -> None:
    """Write :func:`junit_string` to ``path`` as UTF-8, byte for byte."""
    text = junit_string(suite_name, cases, properties, timestamp, hostname, flavor)
    with open(path, "wb") as fh:
        fh.write(text.encode("utf-8"))
