#!/bin/bash
# Two GPUs: the bench of this tree (both GPUs against the first alone, cold and warm, in one invocation).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --target $TMP/site-new $(ls .whl/*.whl | grep -v -e py_spy) 2>&1 | grep -v WARN
export PYTHONUNBUFFERED=1 PYTHONPATH=$TMP/site-new
O=$TMP/o; mkdir -p $O; cd $O
{ nvidia-smi -L | sed 's/ (UUID.*//'; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; ptxas --version | tail -1; python3 -m ptxconf.revision; } > machine.txt 2>&1; cat machine.txt
/usr/bin/time -f "bench: wall %e user %U sys %S" -o times.txt $TMP/site-new/bin/ptxconf bench --backend pycuda --suite-only --devices all -o bench-suite-2gpu.json > bench.log 2>&1
cat times.txt; tail -3 bench.log
python3 -c "
import json; d=json.load(open('bench-suite-2gpu.json'))
s=d['suite']
for k in ('cold','warm','warm_no_observations','one_gpu_cold','one_gpu_warm'): print(k, s[k]['run_wall_s'], s[k]['process_wall_s'], s[k]['cpu_s'])
print({k: v for k, v in d.items() if k not in ('suite',)})
" 2>&1 | cut -c1-600
tar czf $OUT/t7.tgz -C $O .
