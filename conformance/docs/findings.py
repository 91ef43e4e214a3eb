"""What doc-diff reports: one :class:`Finding` per compared thing, shared by every comparer.

Kept below :mod:`.diff`, :mod:`.table39` and :mod:`.versions` so that none of them
imports another to build its results (the old diff.py <-> table39.py circle).
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["STATUSES", "Finding"]

STATUSES = ("same", "changed", "only in doc", "only in specs", "unparseable", "note", "not covered")
_MAX_CELLS = 8  # lane cells printed per finding in text output


@dataclass
class Finding:
    status: str
    subject: str  # variant id, or "<shape> <operand> .<type>" for what specs/ lacks
    operand: str | None
    file: str
    line: int | None
    section: str | None
    detail: str = ""
    differences: list[dict] = field(default_factory=list)
    erratum: dict | None = None
    doc_formulas: dict | None = None
    spec_layout: str | None = None
    sides: tuple[str, str] | None = None  # names of the two sides of ``differences`` (default specs, doc)

    @property
    def counts_as_difference(self) -> bool:
        return self.status not in ("same", "note", "not covered") and not (self.erratum and self.status in ("unparseable", "changed"))

    def to_json(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if v not in (None, [], "")}

    def text(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        op = f" {self.operand}" if self.operand else ""
        head = f"{self.status:13s} {self.subject}{op}  [{where}{', §' + self.section if self.section else ''}]"
        lines = [head]
        if self.detail:
            lines.append(f"    {self.detail}")
        for d in [d for d in self.differences if "lane" in d][:_MAX_CELLS]:
            left, right = self.sides or ("specs", "doc")
            lines.append(f"    lane {d['lane']:2d} element {d['element']}: {left} {tuple(d['specs'])}  {right} {tuple(d['doc'])}")
        if "lane" in (self.differences or [{}])[0] and len(self.differences) > _MAX_CELLS:
            lines.append(f"    ... {len(self.differences) - _MAX_CELLS} more")
        if self.erratum:
            lines.append(f"    matches known erratum in specs/ ({self.spec_layout}): {self.erratum['problem']}; "
                         f"specs/ takes: {self.erratum['taken']}")
        return "\n".join(lines)


