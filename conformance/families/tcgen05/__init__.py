"""tcgen05.mma (Blackwell): specs/tcgen05.yaml (schema tcgen05/1), descriptors, run probes, self-check, assemble."""

from .family import FAMILY
from .spec import LdRed, LdRedForm  # tools/toolchains/ld_red.py: the tcgen05.ld.red forms

__all__ = ["FAMILY", "LdRed", "LdRedForm"]
