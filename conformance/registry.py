"""Where instruction families and spec document kinds are registered, by import string.

The one list a new family is added to.  It names families only as strings, so this module
imports nothing of the project and every layer may read it; a family's code is imported the
first time it is asked for.  Outside packages add families through the ``ptxconf.families``
entry-point group (value ``module:ATTRIBUTE``), without editing this file.
"""

from __future__ import annotations

import importlib
from functools import cache
from importlib.metadata import entry_points
from typing import Any

FAMILIES: dict[str, str] = {
    "mma": "ptxconf.families.mma:FAMILY",
    "movement": "ptxconf.families.movement:FAMILY",
    "wgmma": "ptxconf.families.wgmma:FAMILY",
    "wgmma.sp": "ptxconf.families.wgmma_sp:FAMILY",
    "tcgen05": "ptxconf.families.tcgen05:FAMILY",
    "wmma": "ptxconf.families.wmma:FAMILY",
}

# Spec documents that belong to a tool rather than to a family (schema name -> "module:function").
TOOL_DOCUMENTS: dict[str, str] = {
    "numerics/1": "ptxconf.tools.numerics.spec:load_document",
    "refuse/1": "ptxconf.tools.toolchains.refuse:load_document",
}

ENTRY_POINT_GROUP = "ptxconf.families"
OBSERVED = "observed."


def resolve(ref: str) -> Any:
    """``"package.module:ATTRIBUTE"`` -> the object."""
    module, _, attr = ref.partition(":")
    return getattr(importlib.import_module(module), attr)


@cache
def families() -> tuple[Any, ...]:
    """Every registered family object: the built-in ones, then those of installed plugins."""
    found = [resolve(ref) for ref in FAMILIES.values()]
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        fam = ep.load()
        if fam.name not in {f.name for f in found}:
            found.append(fam)
    return tuple(found)


@cache
def _by_spec_family() -> dict[str, Any]:
    table: dict[str, Any] = {}
    for fam in families():
        for name in fam.spec_families:
            if name in table:
                raise RuntimeError(f"spec family {name!r} is claimed by both {table[name].name} and {fam.name}")
            table[name] = fam
    return table


def family_of(variant: Any) -> Any:
    """The family that owns a variant (by the variant's ``family`` field, as its spec file says)."""
    try:  # layouts learnt from hardware (``ptxconf discover``) keep their family under "observed."
        return _by_spec_family()[variant.family.removeprefix(OBSERVED)]
    except KeyError:
        known = ", ".join(sorted(_by_spec_family()))
        raise LookupError(f"no registered family owns {variant.family!r} (variant {variant.id}); known: {known}") from None


def get(name: str) -> Any:
    """A family by its registered name."""
    for fam in families():
        if fam.name == name:
            return fam
    raise LookupError(f"no family {name!r}; registered: {', '.join(f.name for f in families())}")


def document_kinds() -> dict[str, str]:
    """Spec document schema name -> loader import string, from every family and tool."""
    kinds = dict(TOOL_DOCUMENTS)
    for fam in families():
        kinds.update(fam.documents)
    return kinds
