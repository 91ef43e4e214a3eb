"""Load ``schema: numerics/1`` (specs/numerics.yaml): per-path model parameters with their status."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path

import jsonschema

from conformance.spec.yamlsrc import Source

from .model import PathParams

_SCHEMA_PATH = Path(__file__).with_name("schema.json")
_FIELDS = ("block", "frac_bits", "out_precision", "final_rounding", "input_conversion", "f64_mode", "align",
           "c_entry", "k_order", "exp_floor", "in_subnormals", "out_subnormals", "overflow", "neg_zero", "nan_propagation")


@dataclass
class NumericsSpec:
    family: str
    file: str
    target: str
    sources: dict[str, str]
    notes: list[str]
    paths: dict[str, PathParams]
    status: dict[str, dict[str, dict]] = field(default_factory=dict)  # path -> param -> {value,status,source,note}

    def path_for(self, a_type: str, d_type: str, family: str = "mma.sync") -> PathParams:
        for p in self.paths.values():
            if a_type in p.a_types and d_type in p.d_types and (not p.families or family in p.families):
                return p
        raise KeyError(f"no numerics path for {family} A .{a_type} -> D .{d_type}")


def load_document(doc: dict, src: Source) -> NumericsSpec:
    schema = json.loads(_SCHEMA_PATH.read_text())
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(doc), key=lambda e: src.line(tuple(e.absolute_path)) or 0)
    if errors:
        err = errors[0]
        raise src.error(tuple(err.absolute_path), err.message.replace("Additional properties are not allowed", "unknown key"))
    defaults = doc["defaults"]
    nan_bits = {t: int(str(p["value"]), 0) for t, p in defaults.get("nan_bits", {}).items()}
    paths, status = {}, {}
    for name, body in doc["paths"].items():
        merged = {k: v for k, v in defaults.items() if k != "nan_bits"}
        merged.update({k: v for k, v in body.items() if k in _FIELDS or k == "integer"})
        values = {k: merged[k]["value"] for k in _FIELDS if k in merged}
        p = PathParams(name=name, kind=body["kind"], a_types=tuple(body["a"]), d_types=tuple(body["d"]), nan_bits=nan_bits,
                       families=tuple(body.get("families", ())))
        p = replace(p, **values)
        if p.kind == "float":
            for k in ("block", "frac_bits", "out_precision", "final_rounding"):
                if k not in body:
                    raise src.error(("paths", name), f"a float path needs {k}")
        paths[name] = p
        status[name] = {k: dict(v) for k, v in merged.items()}
    return NumericsSpec(doc["family"], src.file, doc["target"], doc["sources"],
                        list(doc.get("notes") or []), paths, status)


def numerics_spec(specs=None) -> NumericsSpec:
    """The loaded numerics document (from ``specs`` or the shipped specs/)."""
    if specs is None:
        from conformance.spec import load_specs

        specs = load_specs()
    for d in specs.documents.values():
        if isinstance(d, NumericsSpec):
            return d
    raise KeyError("no schema numerics/1 document among the specs")
