"""Matrix programs that stress the compiler, not only the instruction (``ptxconf programs``).

A probe runs one instruction between loads and stores; a program runs what compilers get wrong
around it: chained mma with values live across them, wgmma whose register A dies at the issue while
the allocator is short of registers, predication and loops around the instruction, ldmatrix -> mma ->
stmatrix through shared memory, several families in one kernel.  Every program is legal PTX whose
every output word the specs and the oracle define.

* :mod:`.model` -- a program's shape (steps, as data); :mod:`.strategies` -- Hypothesis draws it;
* :mod:`.ops` -- lowering to register-level ops and the rows' layout; :mod:`.emit` -- PTX;
* :mod:`.inputs` -- seeded matrices packed through the specs; :mod:`.oracle` -- what must come out;
* :mod:`.interp` -- the ops in NumPy (the emulated path); :mod:`.fuzz` -- backends, batches, shrinking.
"""
