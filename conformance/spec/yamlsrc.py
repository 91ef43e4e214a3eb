"""YAML reading that remembers where every value came from.

Errors about a spec must name file, line and field.  PyYAML's composer keeps a
mark on every node; this module turns the node tree into plain Python values
and a table ``path -> line`` so that later layers (schema, formulas,
invariants) can point at the exact line.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import yaml

__all__ = ["SpecError", "Source", "load_yaml", "schema_validator", "first_schema_error"]

PathT = tuple[Any, ...]


class SpecError(ValueError):
    """A problem in a spec file: one line, ``file:line: field: message``."""

    def __init__(self, file: str, line: int | None, field: str, message: str):
        self.file, self.line, self.field, self.message = file, line, field, message
        where = f"{file}:{line}" if line else file
        super().__init__(f"{where}: {field}: {message}" if field else f"{where}: {message}")


@dataclass
class Source:
    """Where a document's values came from."""

    file: str
    lines: dict[PathT, int] = field(default_factory=dict)

    def line(self, path: PathT) -> int | None:
        """The line of ``path``, or of its nearest ancestor that has one."""
        path = tuple(path)
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return self.lines.get(())

    def error(self, path: PathT, message: str) -> SpecError:
        return SpecError(self.file, self.line(path), field_name(path), message)


def field_name(path: PathT) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def load_yaml(path: str | Path) -> tuple[Any, Source]:
    path = Path(path)
    src = Source(str(path))
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(str(path), None, "", f"cannot read: {exc.strerror}") from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        raise SpecError(str(path), line, "", f"YAML syntax: {exc.problem}") from None
    if node is None:
        raise SpecError(str(path), 1, "", "empty file")
    return _convert(node, (), src), src


def _convert(node: yaml.Node, path: PathT, src: Source) -> Any:
    src.lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = yaml.SafeLoader(stream="").construct_object(key_node)
            if key in out:
                raise SpecError(
                    src.file, key_node.start_mark.line + 1, field_name(path + (key,)), "duplicate key"
                )
            src.lines[path + (key,)] = key_node.start_mark.line + 1
            out[key] = _convert(value_node, path + (key,), src)
            src.lines[path + (key,)] = key_node.start_mark.line + 1
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_convert(child, path + (k,), src) for k, child in enumerate(node.value)]
    return yaml.SafeLoader(stream="").construct_object(node)


@cache
def schema_validator(path: str | Path) -> jsonschema.protocols.Validator:
    """The (checked) JSON Schema validator of a schema file, built once."""
    schema = json.loads(Path(path).read_text())
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def first_schema_error(
    validator: jsonschema.protocols.Validator, doc: Any, src: Source
) -> tuple[PathT, jsonschema.ValidationError] | None:
    """The schema error to report: the earliest in the file, pointing at an unknown key itself."""
    errors = list(validator.iter_errors(doc))
    if not errors:
        return None
    err = min(errors, key=lambda e: (src.line(tuple(e.absolute_path)) or 0, len(e.absolute_path), list(map(str, e.absolute_path))))
    path = tuple(err.absolute_path)
    if err.validator == "additionalProperties" and isinstance(err.instance, dict):
        known = err.schema.get("properties", {})
        path += tuple([k for k in err.instance if k not in known][:1])
    return path, err
