"""wgmma.mma_async: specs/wgmma.yaml (schema wgmma/1), descriptors, probes, comparator, assemble, reuse probe."""

from .cases import layout_choice
from .desc import Desc, encode
from .family import FAMILY
from .probe import A_REGION, WgProbe, b_region, decode_words, fill, immediate_sets, model_of, numerics, read_matrix
from .spec import canonical_strides

# What tools may use of this family (tests/core/test_layers.py: tools import nothing else of it).
__all__ = ["FAMILY", "A_REGION", "Desc", "WgProbe", "b_region", "canonical_strides", "decode_words", "encode", "fill",
           "immediate_sets", "layout_choice", "model_of", "numerics", "read_matrix"]
