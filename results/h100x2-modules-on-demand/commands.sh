#!/bin/bash
# Two GPUs: the bench of this tree (both GPUs against the first alone, cold and warm, in one invocation).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --target $TMP/site-new $(ls .whl/*.whl | grep -v -e py_spy) 2>&1 | grep -v WARN
export PYTHONUNBUFFERED=1 PYTHONPATH=$TMP/site-new
O=$TMP/o; mkdir -p $O; cd $O
{ nvidia-smi -L | sed 's/ (UUID.*//'; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; lscpu | grep -e "Model name" -e "Thread(s) per core"; ptxas --version | tail -1; python3 -m ptxconf.revision; } > machine.txt 2>&1; cat machine.txt
/usr/bin/time -f "bench: wall %e user %U sys %S" -o times.txt $TMP/site-new/bin/ptxconf bench --backend pycuda --suite-only --devices all -o bench-suite-2gpu.json > bench.log 2>&1
cat times.txt; tail -3 bench.log
python3 -c "
import json; s=json.load(open('bench-suite-2gpu.json'))['suite']
for k in ('cold','warm','warm_no_observations','one_gpu_cold','one_gpu_warm'):
    if k in s: print(k, s[k]['run_wall_s'], s[k]['process_wall_s'], s[k]['cpu_s'], {n: round(v['user_s'] + v['sys_s'], 1) for n, v in s[k]['cpu_by_process'].items()})
" | tee walls.txt
tar czf $OUT/u8.tgz machine.txt times.txt walls.txt bench-suite-2gpu.json
