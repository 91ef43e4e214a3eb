"""mma.sync (dense) and mma.sp (sparse): specs/mma_sync.yaml and specs/mma_sp.yaml."""

from .cases import alphabet
from .family import FAMILY
from .probe import LD_FOR_TYPE, REG_DECL, Probe, buffer_layout, module_source, operand_list

# What tools may use of this family (tests/core/test_layers.py: tools import nothing else of it).
__all__ = ["FAMILY", "LD_FOR_TYPE", "REG_DECL", "Probe", "alphabet", "buffer_layout", "module_source", "operand_list"]
