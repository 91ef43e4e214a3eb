"""The ISA layer: specs/ (the YAML transcriptions of the ISA's tables), loaded, checked and evaluated."""

from .expr import Expr, ExprError, parse
from .loader import Specs, default_specs_dir, load_file, load_specs
from .model import Fragment, Instruction, Layout, Operand, Variant
from .ptxtypes import TYPES, PtxType, ptx_type
from .targets import PtxVersion, Target, parse_target
from .yamlsrc import SpecError

__all__ = [
    "Expr", "ExprError", "parse", "Specs", "default_specs_dir", "load_file", "load_specs",
    "Fragment", "Instruction", "Layout", "Operand", "Variant", "TYPES", "PtxType", "ptx_type",
    "PtxVersion", "Target", "parse_target", "SpecError",
]
