"""Instruction families, one package each; registered in :mod:`ptxconf.registry`.

One role, one file name, in every family (a family has the files of the roles it has; tests/core/test_layers.py
holds every family to this table):

``__init__.py``   what tools may use of the family (``__all__``), and ``FAMILY``
``family.py``     the :class:`ptxconf.core.family.Family`: plan, settle, emulate, compare, its CLI hook
``spec.py``       the family's spec document: loader and load-time checks
``schema.json``   the JSON schema of a spec document of the family's own kind
``cases.py``      the seeded case sets a plan draws (``make_cases``), and how a recorded case reads back
``probe.py``      the probe kernels: the buffer contract, the PTX text ptxas and the GPU see, the spec executed on a case
``bulk.py``       the bulk fuzzer's cases as array code (NumPy or CuPy)
``compare.py``    the comparator: recorded words -> verdicts with a diagnosis
``cli.py``        the family's own ``ptxconf`` verbs
``assemble.py``   ptxas over the family's forms (validity matrix, register reuse)
``desc.py``       descriptors as code: encode and decode, driven by the spec's field tables
``undefined.py``  the inputs the ISA leaves undefined, and how to read what the hardware did with them
``discover.py``   lane maps learnt from the hardware, assuming none
``observe.py``    what the ISA leaves unspecified, measured on a GPU and recorded as a fact
``memory.py``     memory-to-memory forms: a case's matrix images, and the instruction executed on them
``selfcheck.py``  the ISA against itself (one table against another)
"""
