"""Fixtures the numerics tests share: the loaded specs and the arithmetic model's spec, once per module."""

from __future__ import annotations

import pytest
from ptxconf.isa import load_specs
from ptxconf.tools.numerics.spec import numerics_spec


@pytest.fixture(scope="module")
def specs():
    return load_specs()


@pytest.fixture(scope="module")
def spec(specs):
    return numerics_spec(specs)
