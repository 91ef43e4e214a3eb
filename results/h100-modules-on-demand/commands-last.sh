#!/bin/bash
# One GPU: the bench of this tree (the last code change), cold and warm.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --target $TMP/site-new $(ls .whl/*.whl | grep -v -e py_spy) 2>&1 | grep -v WARN
export PYTHONUNBUFFERED=1 PYTHONPATH=$TMP/site-new
O=$TMP/o; mkdir -p $O; cd $O
{ nvidia-smi -L | sed 's/ (UUID.*//'; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; lscpu | grep -e "Model name" -e "Thread(s) per core"; ptxas --version | tail -1; python3 -m ptxconf.revision; } > machine.txt 2>&1; cat machine.txt
/usr/bin/time -f "bench: wall %e user %U sys %S" -o times.txt $TMP/site-new/bin/ptxconf bench --backend pycuda --suite-only -o bench-suite.json > bench.log 2>&1
cat times.txt
python3 -c "
import json; d=json.load(open('bench-suite.json'))['suite']
for k in ('cold','warm','warm_no_observations'): print(k, d[k]['run_wall_s'], d[k]['process_wall_s'], d[k]['cpu_s'], d[k]['host'].get('ms_per_case'), {n: round(v['user_s'] + v['sys_s'], 1) for n, v in d[k]['cpu_by_process'].items()}, (d[k].get('timeline_s') or {}).get('process_start'))
" | tee walls.txt
tar czf $OUT/u10.tgz machine.txt times.txt walls.txt bench-suite.json
