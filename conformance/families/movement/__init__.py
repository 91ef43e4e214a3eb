"""ldmatrix / stmatrix / movmatrix: specs/ldmatrix.yaml, stmatrix.yaml, movmatrix.yaml; composition with mma."""

from .compare import Composition, compose
from .family import FAMILY
from .probe import ADDR_WORD, IMAGE_BYTES, IMAGE_WORDS, MoveProbe, apply, image_bytes, image_words, in_words, row_lanes

# What tools may use of this family (tests/core/test_layers.py: tools import nothing else of it).
__all__ = ["FAMILY", "ADDR_WORD", "IMAGE_BYTES", "IMAGE_WORDS", "Composition", "MoveProbe", "apply", "compose", "image_bytes",
           "image_words", "in_words", "row_lanes"]
