"""YAML reading that remembers where every value came from.

Errors about a spec must name file, line and field.  PyYAML's composer keeps a
mark on every node; this module turns the node tree into plain Python values
and a table ``path -> line`` so that later layers (schema, formulas,
invariants) can point at the exact line.

Spec files come from users and ``doc-import`` drafts, so loading bounds its work:
files over ``MAX_SPEC_BYTES`` are refused before reading, and the composer refuses
more than ``MAX_YAML_NODES`` nodes, nesting deeper than ``MAX_YAML_DEPTH``,
aliases inside anchored values (the "billion laughs" bomb, and cycles) and
aliases copying more than ``MAX_ALIAS_NODES`` nodes in all, before any alias is
expanded.
"""

from __future__ import annotations

import json
import stat
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:
    import jsonschema

__all__ = ["SpecError", "Source", "load_yaml", "schema_validator", "first_schema_error", "check_schema"]

PathT = tuple[Any, ...]

# Limits far above specs/ today (files up to 30 KiB and 2,800 nodes, nesting 9,
# aliases copying 190 nodes) and far below what exhausts time, memory or Python's
# recursion limit.  Pure-Python YAML costs ~25 us a node, hence the node limit.
MAX_SPEC_BYTES = 4 << 20  # 4 MiB
MAX_YAML_NODES = 50_000  # nodes in one file, aliases not counted
MAX_YAML_DEPTH = 64  # nested YAML nodes
MAX_ALIAS_NODES = 10_000  # nodes that aliases make the loader visit again, summed over the file


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


def _read(path: Path) -> str:
    """The file's text, refusing non-regular files and files over MAX_SPEC_BYTES before reading them."""
    too_big = f"file exceeds the limit of {MAX_SPEC_BYTES >> 20} MiB ({MAX_SPEC_BYTES} bytes) for a spec file"
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):  # a FIFO or device would block or never end
            raise SpecError(str(path), None, "", "not a regular file")
        if info.st_size > MAX_SPEC_BYTES:
            raise SpecError(str(path), None, "", too_big)
        with path.open("rb") as f:
            data = f.read(MAX_SPEC_BYTES + 1)  # bounded even if the file grew since stat
    except OSError as exc:
        raise SpecError(str(path), None, "", f"cannot read: {exc.strerror}") from None
    if len(data) > MAX_SPEC_BYTES:
        raise SpecError(str(path), None, "", too_big)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise SpecError(str(path), line, "", f"not UTF-8 text: byte 0x{data[exc.start]:02x}") from None


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader whose composer refuses unbounded documents before building values.

    Composing never expands aliases (it shares nodes); ``_convert`` does, so the
    bounds are checked here, on the events, where a bomb costs nothing yet.
    """

    def __init__(self, text: str, file: str):
        super().__init__(text)
        self.file = file
        self.path: list[Any] = []  # field path of the node being composed (None: a key)
        self.composed = 0  # nodes composed so far
        self.copied = 0  # nodes the aliases so far will copy
        self.sizes: dict[str, int] = {}  # anchor -> nodes in its value
        self.open_anchors: list[str] = []  # anchored values being composed

    def refuse(self, line: int, message: str, part: Any) -> SpecError:
        return SpecError(self.file, line, field_name(tuple(p for p in [*self.path, part] if p is not None)), message)

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        part = index.value if isinstance(index, yaml.ScalarNode) else index if isinstance(index, int) else None
        event = self.peek_event()
        line = event.start_mark.line + 1
        if isinstance(event, yaml.AliasEvent):
            if self.open_anchors:  # an alias in an anchored value multiplies on each use, or loops
                raise self.refuse(line, f"alias *{event.anchor} inside anchored value &{self.open_anchors[-1]}: "
                                  "aliases may not nest", part)
            self.copied += self.sizes.get(event.anchor, 0)
            if self.copied > MAX_ALIAS_NODES:
                raise self.refuse(line, f"aliases copy more than the limit of {MAX_ALIAS_NODES} nodes", part)
            return super().compose_node(parent, index)
        if len(self.path) >= MAX_YAML_DEPTH:
            raise self.refuse(line, f"YAML nests deeper than the limit of {MAX_YAML_DEPTH} levels", part)
        anchor, start = getattr(event, "anchor", None), self.composed
        self.composed += 1
        if self.composed > MAX_YAML_NODES:
            raise self.refuse(line, f"file has more than the limit of {MAX_YAML_NODES} YAML nodes", part)
        self.path.append(part)
        if anchor is not None:
            self.open_anchors.append(anchor)
        node = super().compose_node(parent, index)
        self.path.pop()
        if anchor is not None:
            self.open_anchors.pop()
            self.sizes[anchor] = self.composed - start
        return node


def load_yaml(path: str | Path) -> tuple[Any, Source]:
    path = Path(path)
    src = Source(str(path))
    text = _read(path)
    loader = _BoundedLoader(text, str(path))
    try:
        node = loader.get_single_node()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        raise SpecError(str(path), line, "", f"YAML syntax: {exc.problem}") from None
    finally:
        loader.dispose()
    if node is None:
        raise SpecError(str(path), 1, "", "empty file")
    return _convert(node, (), src), src


def _convert(node: yaml.Node, path: PathT, src: Source) -> Any:
    src.lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise SpecError(src.file, key_node.start_mark.line + 1, field_name(path), "a key must be a plain value")
            key = _scalar(key_node, path, src)
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
    return _scalar(node, path, src)


def _scalar(node: yaml.Node, path: PathT, src: Source) -> Any:
    """A scalar's value; a bad one (unknown tag, 5000-digit int, 31 February) is a SpecError."""
    try:
        return yaml.SafeLoader(stream="").construct_object(node)
    except (ValueError, TypeError, yaml.YAMLError) as exc:
        reason = exc.problem if isinstance(exc, yaml.MarkedYAMLError) else str(exc)
        raise SpecError(src.file, node.start_mark.line + 1, field_name(path), f"bad value: {reason}") from None


@cache
def schema_validator(path: str | Path) -> jsonschema.protocols.Validator:
    """The (checked) JSON Schema validator of a schema file, built once (jsonschema imported here: a run reads its
    specs from the cache and never validates, and the import cost every command's start 0.15 s on a GPU host)."""
    import jsonschema

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


def check_schema(validator: jsonschema.protocols.Validator, doc: Any, src: Source) -> None:
    """Raise the document's first schema error as ``file:line: field: message`` (an unknown key named as such)."""
    found = first_schema_error(validator, doc, src)
    if found:
        path, err = found
        raise src.error(path, err.message.replace("Additional properties are not allowed", "unknown key"))
