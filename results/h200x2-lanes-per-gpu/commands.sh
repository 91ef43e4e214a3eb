# Two GPUs of one host, commit e2d39d1; each line as a user types it (PTXCONF_CACHE: one module cache for the runs).
ptxconf bench --backend pycuda --suite-only --devices all -o bench-suite-2gpu.json
export PTXCONF_CACHE=$TMP/cache-r
ptxconf run --backend pycuda --quiet --devices all --out ca      # cold
ptxconf run --backend pycuda --quiet --devices 0,1 --out w01     # warm (the same lanes as --devices all)
ptxconf run --backend pycuda --quiet --devices all --out wall
ptxconf run --backend pycuda --quiet --devices 0,1 --out w01b
ptxconf run --backend pycuda --quiet --devices all --out wall2
