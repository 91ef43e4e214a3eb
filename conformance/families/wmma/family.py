"""wmma (§9.7.13): fragments the ISA leaves unspecified, observed on the GPU (``ptxconf wmma-observe``)."""

from __future__ import annotations

from conformance.core.family import Family


class WmmaFamily(Family):
    name = "wmma"
    spec_families = ()  # no spec document yet: the observation tool only

    def add_cli(self, sub) -> None:
        from .observe import add_parser

        add_parser(sub)


FAMILY = WmmaFamily()
