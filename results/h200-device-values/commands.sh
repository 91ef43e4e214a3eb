#!/bin/bash
# What ran, as a user types it, on one NVIDIA H200 (16 host cores); $TMP is a scratch folder, the module cache shared.
# Call 1: host and device alternated after an untimed first run of each (runs w1-w3), verdicts compared, replayed.
ptxconf run --backend pycuda --quiet --out host-w1
ptxconf run --backend pycuda --quiet --out dev-w1 --values device
ptxconf run --backend pycuda --quiet --out dev64-w1 --values device --device-cases 64
ptxconf replay --quiet dev64-w1
ptxconf fuzz case 'wgmma.mma_async.sync.aligned.m64n8k16.f16.f16.f16/ss' --seed 0 --case 255 --check 'value[sa+1,sb+1,ta0,tb0]' --backend pycuda
# Call 2: 4, 8 and 12 device workers, alternated with the host's runs; a 256-case run replayed with 16 processes.
ptxconf run --backend pycuda --quiet --out d4-w1 --values device --device-workers 4
ptxconf run --backend pycuda --quiet --out d8-w1 --values device --device-workers 8
ptxconf run --backend pycuda --quiet --out d12-w1 --values device --device-workers 12
ptxconf replay --quiet d8-w1
# Call 3: the GPU tests and the two benches; call 4 (after the float grid's one zero): the run kept whole in run/.
python3 -m pytest -q -rfs tests/run/test_gpu.py
ptxconf run --backend pycuda --values device --device-cases 64 --select 'wgmma.mma_async.sync.aligned.m64n8k16.*' \
  --select 'wgmma.mma_async.sp.sync.aligned.m64n8k32.*' --select 'mma.sync.aligned.m16n8k16.row.col.*' \
  --select 'mma.sp::ordered_metadata.sync.aligned.m16n8k32.*' --select 'wmma.mma.sync.aligned.row.col.m16n16k16.*' \
  --select 'ldmatrix.*' --select 'stmatrix.*' --select 'movmatrix.*' --out run
ptxconf replay run
ptxconf bench --backend pycuda --suite-only --values device -o bench-device.json
ptxconf bench --backend pycuda --suite-only -o bench-host.json
# Call 5: a sampled profile of a run of value checks only (profile-device-workers.txt, samples summed by process kind).
ptxconf run --backend pycuda --values device --check value --quiet --out warm
py-spy record --subprocesses -r 100 -f raw -o spy.txt -- ptxconf run --backend pycuda --values device --check value --quiet --out spy
# Call 6: one digest kernel and one copy back a check; device and host alternated; the device path's GPU test.
ptxconf run --backend pycuda --quiet --out dev-w1 --values device
ptxconf run --backend pycuda --quiet --out host-w1
python3 -m pytest -q -rfs tests/run/test_gpu.py -k device
