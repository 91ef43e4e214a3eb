"""Parsed specs kept in the cache as plain data: JSON that names only the project's own dataclasses.

Parsing and checking specs/ takes most of a second in every process, so a loaded :class:`Specs` is stored under
``cache_root()/specs`` and read back when the spec files and the package's code are byte for byte the same.  The
store is data, not code: no pickle.  The JSON holds scalars, lists, tuples, dicts (keys of any of these kinds), sets,
and dataclass instances named ``module:QualName``; reading one imports only ``ptxconf.*`` modules, accepts only
dataclasses with exactly the recorded fields, and builds them without calling any ``__init__``.  What is derived on
demand (a layout's evaluated maps, cached properties) is not stored; it is computed again when first asked for.

The key is a hash of the spec files' names and bytes and of the package's files (relative names and bytes), so it
holds no absolute path: the same specs in another folder are the same entry.  Entries live in the shared cache
store (:mod:`ptxconf.cache`), which checks each one against its key and an HMAC before it is decoded and keeps the
whole cache under its size bound.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import json
import re
import sys
from pathlib import Path
from typing import Any

from ptxconf import cache, registry

__all__ = ["specs_key", "load_stored", "store", "encode", "decode", "StoredFormatError"]

KIND = "specs"
FORMAT = "ptxconf-specs/1"
_MODULE = re.compile(r"ptxconf(\.[A-Za-z]\w*)+")  # no __main__, nothing private to import
_QUALNAME = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


class StoredFormatError(ValueError):
    """A stored entry that is not what this code writes (damaged, foreign, or from other code)."""


def specs_key(files: list[Path]) -> str | None:
    """What a loaded ``Specs`` is a function of: the spec files (names and bytes), and the package's own code and
    schemas (any change to a loader, a variant class or a schema makes a new key).  None where a spec path is not a
    regular file (a FIFO would block the read: the loader refuses it with its own message)."""
    if not all(path.is_file() for path in files):
        return None
    h = hashlib.sha256(f"{FORMAT} {sys.version_info[:2]}".encode())
    package = Path(registry.__file__).resolve().parent
    for path in files:
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    for path in [*sorted(package.rglob("*.py")), *sorted(package.rglob("*.json"))]:
        h.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


# --- encoding -------------------------------------------------------------------------------------------------------
#
# Every dataclass instance is written once, in the document's "objects" table ([class number, field values]), and
# referred to as {"r": n} wherever it is held, so the graph may have cycles (a variant and the document that lists
# it).  Inside values, a list is a JSON array; other containers are JSON objects tagged by one key: "t" tuple, "s"
# set, "f" frozenset, "d" dict (as [key, value] pairs, since keys may be tuples), "p" a path under the spec folder
# (stored relative to it); a container held in several places
# is written once with "i" and then referred to as {"c": n}.  Reading first makes every object empty, then lets
# JSON's own object hook build the values bottom-up (no recursion of ours), then fills the objects' fields.

_SCALARS = (type(None), bool, int, float, str)
_NUMBERS = (type(None), bool, int, float)


class _Encoder:
    def __init__(self, base: str | None) -> None:
        self.base = base  # a path prefix written as {"p": rest}: the entry is the same wherever the folder is
        self.classes: dict[type, int] = {}
        self.table: list[list[Any]] = []
        self.objects: dict[int, int] = {}  # id(dataclass instance) -> its number
        self.order: list[Any] = []  # the instances, by number
        self.count: dict[int, int] = {}  # id(container) -> times met
        self.numbers: dict[int, int] = {}  # id(container) -> reference number, once written
        self.keep: list[Any] = []  # holds what the dicts above name by id
        self.fields: dict[type, list[str]] = {}  # a dataclass's field names, asked once per class

    def _class(self, cls: type) -> int:
        if cls not in self.classes:
            if not cls.__module__.startswith("ptxconf."):
                raise TypeError(f"{cls.__module__}.{cls.__qualname__} is not a class of this package")
            self.classes[cls] = len(self.table)
            self.table.append([f"{cls.__module__}:{cls.__qualname__}", self._names(cls)])
        return self.classes[cls]

    def _names(self, cls: type) -> list[str]:
        names = self.fields.get(cls)
        if names is None:
            names = self.fields[cls] = [f.name for f in dataclasses.fields(cls)]
        return names

    def walk(self, root: Any) -> None:
        """Number every instance and count every container.  (A container inside itself would recurse in
        :meth:`value` until RecursionError, which :func:`store` takes as "not plain data".)"""
        stack: list[Any] = [root]
        containers = (list, tuple, set, frozenset, dict)
        while stack:
            obj = stack.pop()
            t = type(obj)
            i = id(obj)
            if t in containers:
                n = self.count.get(i, 0)
                self.count[i] = n + 1
                if n:
                    continue
                self.keep.append(obj)
                kids: Any = [x for kv in obj.items() for x in kv] if t is dict else obj
            elif t in self.fields or (dataclasses.is_dataclass(obj) and not isinstance(obj, type)):
                if i in self.objects:
                    continue
                self._class(t)
                self.objects[i] = len(self.order)
                self.order.append(obj)
                kids = [getattr(obj, name) for name in self.fields[t]]
            else:
                raise TypeError(f"{t.__module__}.{t.__qualname__} is not plain data")
            stack.extend(k for k in kids if type(k) not in _SCALARS)

    def value(self, obj: Any) -> Any:
        t = type(obj)
        if t in _NUMBERS:
            return obj
        if t is str:
            return {"p": obj[len(self.base):]} if self.base and obj.startswith(self.base) else obj
        i = id(obj)
        if i in self.objects:
            return {"r": self.objects[i]}
        if i in self.numbers:
            return {"c": self.numbers[i]}
        v = self.value
        if t is dict:
            out: Any = {"d": [[k if type(k) in _NUMBERS else v(k), x if type(x) in _NUMBERS else v(x)]
                              for k, x in obj.items()]}
        else:
            items = [x if type(x) in _NUMBERS else v(x) for x in obj]
            if t is list:
                out = {"l": items} if self.count[i] > 1 else items
            else:
                out = {"t" if t is tuple else "s" if t is set else "f": items}
        if self.count[i] > 1:
            self.numbers[i] = out["i"] = len(self.numbers)
        return out


def encode(obj: Any, base: str | None = None) -> bytes:
    """``obj`` as the JSON document described above; TypeError for anything that is not plain data.  Strings
    that start with ``base`` (the spec folder's path and a separator) are stored without it."""
    enc = _Encoder(base)
    enc.walk(obj)
    kinds = [enc.classes[type(o)] for o in enc.order]
    objects = [[enc.value(getattr(o, name)) for name in enc.fields[type(o)]] for o in enc.order]
    head = json.dumps({"format": FORMAT, "classes": enc.table, "kinds": kinds}, separators=(",", ":"))
    body = json.dumps({"objects": objects, "root": enc.value(obj)}, separators=(",", ":"), allow_nan=True)
    return head.encode() + b"\n" + body.encode()


# --- decoding -------------------------------------------------------------------------------------------------------


def _resolve(name: Any, fields: Any) -> type:
    """A class named in the store: a dataclass of this package, with the recorded fields exactly; else refused."""
    if not (isinstance(name, str) and isinstance(fields, list) and all(isinstance(f, str) for f in fields)):
        raise StoredFormatError("bad class table")
    module, _, qual = name.partition(":")
    if not (_MODULE.fullmatch(module) and _QUALNAME.fullmatch(qual)):
        raise StoredFormatError(f"class {name!r} is not of this package")
    try:
        obj: Any = importlib.import_module(module)
        for part in qual.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise StoredFormatError(f"class {name!r}: {exc}") from None
    if not (isinstance(obj, type) and dataclasses.is_dataclass(obj)):
        raise StoredFormatError(f"{name!r} is not a dataclass")
    if [f.name for f in dataclasses.fields(obj)] != fields:
        raise StoredFormatError(f"{name!r} has other fields than stored")
    return obj


def _hook(objects: list[Any], base: str):
    """JSON's object hook: each tagged object becomes its value, children first."""
    containers: dict[int, Any] = {}

    def build(d: dict) -> Any:
        if "p" in d:
            if type(d["p"]) is not str:
                raise StoredFormatError("bad path")
            return base + d["p"]
        if "r" in d:
            n = d["r"]
            if type(n) is not int or not 0 <= n < len(objects):
                raise StoredFormatError("reference to no object")
            return objects[n]
        if "c" in d:
            try:
                return containers[d["c"]]
            except (KeyError, TypeError):
                raise StoredFormatError("reference to nothing written before") from None
        if "t" in d:
            out: Any = tuple(_items(d["t"]))
        elif "d" in d:
            items = _items(d["d"])
            if not all(type(kv) is list and len(kv) == 2 for kv in items):
                raise StoredFormatError("bad dict item")
            out = dict(items)
        elif "l" in d:
            out = _items(d["l"])
        elif "s" in d:
            out = set(_items(d["s"]))
        elif "f" in d:
            out = frozenset(_items(d["f"]))
        elif d.keys() == {"objects", "root"}:  # the document itself
            return d
        else:
            raise StoredFormatError("unknown value tag")
        if "i" in d:
            n = d["i"]
            if type(n) is not int or n in containers:
                raise StoredFormatError("bad reference number")
            containers[n] = out
        return out

    return build


def _items(x: Any) -> list:
    if type(x) is not list:
        raise StoredFormatError("expected a list")
    return x


def decode(data: bytes, base: str = "") -> Any:
    """What :func:`encode` wrote (with ``base`` put back before the paths it took off); :class:`StoredFormatError`
    for anything else."""
    first, sep, body = data.partition(b"\n")
    try:
        head = json.loads(first)
    except ValueError as exc:
        raise StoredFormatError(f"not a stored specs document: {exc}") from None
    if not (sep and isinstance(head, dict) and head.get("format") == FORMAT and isinstance(head.get("classes"), list)
            and isinstance(head.get("kinds"), list)):
        raise StoredFormatError("not a stored specs document")
    classes = []
    for entry in head["classes"]:
        if not (isinstance(entry, list) and len(entry) == 2):
            raise StoredFormatError("bad class table")
        cls = _resolve(*entry)
        classes.append((cls, entry[1], not hasattr(object.__new__(cls), "__dict__")))
    if not all(type(k) is int and 0 <= k < len(classes) for k in head["kinds"]):
        raise StoredFormatError("bad object table")
    objects = [object.__new__(classes[k][0]) for k in head["kinds"]]  # empty: no __init__ runs
    try:
        doc = json.loads(body, object_hook=_hook(objects, base))
    except (ValueError, RecursionError, TypeError, AttributeError) as exc:  # an unhashable key, an unfilled object
        raise StoredFormatError(f"{type(exc).__name__}: {exc}") from None
    if not (isinstance(doc, dict) and isinstance(doc.get("objects"), list) and len(doc["objects"]) == len(objects)):
        raise StoredFormatError("not a stored specs document")
    for obj, k, values in zip(objects, head["kinds"], doc["objects"]):
        _cls, names, slotted = classes[k]
        if type(values) is not list or len(values) != len(names):
            raise StoredFormatError(f"{_cls.__qualname__}: values do not match its fields")
        if slotted:
            for name, v in zip(names, values):
                object.__setattr__(obj, name, v)
        else:
            obj.__dict__.update(zip(names, values))
    return doc["root"]


# --- the store ------------------------------------------------------------------------------------------------------


def _base(directory: Path) -> str:
    return str(directory).rstrip("/") + "/"


def load_stored(key: str, expected: type, directory: Path) -> Any | None:
    """The stored object under ``key`` when there is a valid one of type ``expected``, else None; its paths are
    put under ``directory``, the folder the spec files were read from."""
    data = cache.get(KIND, key)
    if data is None:
        return None
    try:
        obj = decode(data, _base(directory))
    except StoredFormatError:
        return None
    return obj if type(obj) is expected else None


def store(key: str, obj: Any, directory: Path) -> None:
    """Keep ``obj`` under ``key``, its paths relative to ``directory``; nothing happens when it holds something
    that is not plain data."""
    try:
        data = encode(obj, _base(directory))
    except (TypeError, ValueError, RecursionError):
        return
    cache.put(KIND, key, data)
