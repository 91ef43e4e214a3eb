"""wgmma.mma_async.sp: specs/wgmma_sp.yaml (schema wgmma_sp/1), sparse probes, emulation, comparator."""

from .cases import meta_words
from .family import FAMILY
from .probe import (
    META_WORD,
    SpProbe,
    compressed_a,
    densify,
    fields_of,
    image_bytes,
    in_words,
    model_of,
    module_source,
    out_words,
    put_image,
    sparsity,
)

# What tools may use of this family (tests/core/test_layers.py: tools import nothing else of it): the probe's buffer
# contract, so a tool can put its own operands through the family's kernel (tools/numerics/harness.py).
__all__ = ["FAMILY", "META_WORD", "SpProbe", "compressed_a", "densify", "fields_of", "image_bytes", "in_words",
           "meta_words", "model_of", "module_source", "out_words", "put_image", "sparsity"]
