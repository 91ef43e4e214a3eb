"""Many ptxas releases side by side: the releases as data (:mod:`.releases`), what each binary says about itself
(:mod:`.facts`), installing them outside every environment (:mod:`.install`), ``--ptxas VERSION|PATH|all``
(:mod:`.resolve`), the acceptance matrix (:mod:`.matrix`, :mod:`.report`) and differential execution
(:mod:`.differential`).  ``ptxconf toolchains`` is the command line."""
