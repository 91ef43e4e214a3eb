"""tcgen05.mma (Blackwell): specs/tcgen05.yaml (schema tcgen05/1), descriptors, run probes, self-check, assemble."""

from .family import FAMILY

# The transcriptions tools/toolchains/ checks with every release: tcgen05.ld.red (ld_red.py) and
# spcompress/spdecompress (sp_vectors.py).
from .spec import LdRed, LdRedForm, SparseVectors, SpVectorForm

__all__ = ["FAMILY", "LdRed", "LdRedForm", "SparseVectors", "SpVectorForm"]
