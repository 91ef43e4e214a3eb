"""Load ``schema: numerics/1`` (specs/numerics.yaml): per-path model parameters with their status, and per-shape overrides."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path

from ptxconf.isa.yamlsrc import Source

from .model import PathParams

_SCHEMA_PATH = Path(__file__).with_name("schema.json")
FIELDS = ("block", "frac_bits", "out_precision", "final_rounding", "input_conversion", "f64_mode", "align",
          "c_entry", "acc_type", "k_order", "exp_floor", "in_subnormals", "out_subnormals", "overflow", "neg_zero",
          "underflow_sign", "operand_cvt", "nan_propagation", "f64_rnd", "sparse_zeros", "sparse_order", "integer")
_FIELDS = FIELDS  # the name earlier callers used
STATUSES = ("published", "assumed", "measured", "moot")
_FLOAT = ("block", "frac_bits", "out_precision", "final_rounding", "align", "c_entry", "acc_type", "k_order", "exp_floor",
          "in_subnormals", "out_subnormals", "overflow", "neg_zero", "underflow_sign", "nan_propagation")
APPLIES = {"float": _FLOAT, "f64": ("f64_mode", "f64_rnd", "nan_propagation"), "int": ("integer",), "b1": ("integer",)}
SPARSE = ("sparse_zeros", "sparse_order")


def applies(p: PathParams) -> tuple[str, ...]:
    """The parameters that mean something on path ``p`` (a default of another kind's parameter does not)."""
    out = APPLIES[p.kind]
    if p.kind == "float" and (not p.families or "mma.sp" in p.families):
        out += SPARSE
    if "tf32" in p.a_types:
        out += ("input_conversion",)
    if {"e4m3", "e5m2"} & set(p.a_types):
        out += ("operand_cvt",)
    return out


@dataclass
class NumericsSpec:
    family: str
    file: str
    target: str
    sources: dict[str, str]
    notes: list[str]
    paths: dict[str, PathParams]
    status: dict[str, dict[str, dict]] = field(default_factory=dict)  # path -> param -> {value,status,source,note}
    shape_status: dict[str, dict[str, dict[str, dict]]] = field(default_factory=dict)  # path -> shape -> param -> {...}
    # path -> shape (None: the path) -> {ptxas, sass, ...}: forms ptxas builds in software, the releases the parameters hold for
    lowering: dict[str, dict[str | None, dict]] = field(default_factory=dict)

    def path_for(self, a_type: str, d_type: str, family: str = "mma.sync", shape: str | None = None) -> PathParams:
        """The path of an A type, D type and instruction family; with ``shape`` (``"m8n8k4"``), that shape's parameters."""
        for p in self.paths.values():
            if a_type in p.a_types and d_type in p.d_types and (not p.families or family in p.families):
                return p.for_shape(shape)
        raise KeyError(f"no numerics path for {family} A .{a_type} -> D .{d_type}")

    def status_of(self, path: str, param: str, shape: str | None = None) -> dict:
        """``{value, status, source, note}`` of a parameter (the shape's override when it has one), or {}."""
        if shape and param in self.shape_status.get(path, {}).get(shape, {}):
            return self.shape_status[path][shape][param]
        return self.status.get(path, {}).get(param, {})

    def lowering_of(self, path: str, shape: str | None = None) -> dict | None:
        """``{ptxas, sass, ...}`` where ptxas builds the path's form (the shape's, else the path's) in software, or None."""
        by = self.lowering.get(path, {})
        return by.get(shape) or by.get(None)


def load_document(doc: dict, src: Source) -> NumericsSpec:
    schema = json.loads(_SCHEMA_PATH.read_text())
    import jsonschema  # only where a file is checked

    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(doc), key=lambda e: src.line(tuple(e.absolute_path)) or 0)
    if errors:
        err = errors[0]
        raise src.error(tuple(err.absolute_path), err.message.replace("Additional properties are not allowed", "unknown key"))
    defaults = doc["defaults"]
    nan_bits = {t: int(str(p["value"]), 0) for t, p in defaults.get("nan_bits", {}).items()}
    paths, status, shape_status, lowering = {}, {}, {}, {}
    for name, body in doc["paths"].items():
        merged = {k: v for k, v in defaults.items() if k != "nan_bits"}
        merged.update({k: v for k, v in body.items() if k in FIELDS})
        values = {k: merged[k]["value"] for k in FIELDS if k in merged}
        shapes = []
        if "lowering" in body:
            lowering.setdefault(name, {})[None] = dict(body["lowering"])
        for shape, over in (body.get("shapes") or {}).items():
            if "lowering" in over:
                lowering.setdefault(name, {})[shape] = dict(over["lowering"])
            over = {k: v for k, v in over.items() if k != "lowering"}
            shapes.append((shape, tuple((k, v["value"]) for k, v in over.items())))
            shape_status.setdefault(name, {})[shape] = {k: dict(v) for k, v in over.items()}
        p = PathParams(name=name, kind=body["kind"], a_types=tuple(body["a"]), d_types=tuple(body["d"]), nan_bits=nan_bits,
                       families=tuple(body.get("families", ())), shapes=tuple(shapes))
        p = replace(p, **values)
        if p.kind == "float":
            for k in ("block", "frac_bits", "out_precision", "final_rounding"):
                if k not in body:
                    raise src.error(("paths", name), f"a float path needs {k}")
        paths[name] = p
        status[name] = {k: dict(v) for k, v in merged.items() if k in applies(p) or k in body}
        status[name].update({f"nan_bits.{t}": dict(v) for t, v in defaults.get("nan_bits", {}).items() if t in p.d_types})
    return NumericsSpec(doc["family"], src.file, doc["target"], doc["sources"],
                        list(doc.get("notes") or []), paths, status, shape_status, lowering)


def numerics_spec(specs=None) -> NumericsSpec:
    """The loaded numerics document (from ``specs`` or the shipped specs/)."""
    if specs is None:
        from ptxconf.isa import load_specs

        specs = load_specs()
    for d in specs.documents.values():
        if isinstance(d, NumericsSpec):
            return d
    raise KeyError("no schema numerics/1 document among the specs")
