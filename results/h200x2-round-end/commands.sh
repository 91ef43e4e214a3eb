#!/bin/bash
# Two GPUs: the bench of this round's tree on one GPU and on both (`--devices all`), cold and warm.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --target $TMP/site-new $(ls .whl/*.whl) 2>&1 | grep -v WARN
export PYTHONUNBUFFERED=1 PTXCONF_CACHE=$TMP/cache
O=$TMP/o; mkdir -p $O; cd $O
{ nvidia-smi -L | sed 's/ (UUID.*//'; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; lscpu | grep -e "Model name" -e "Thread(s) per core"; ptxas --version | tail -1; echo "new $(PYTHONPATH=$TMP/site-new python3 -m ptxconf.revision)"; } > machine.txt 2>&1; cat machine.txt
/usr/bin/time -f "bench: wall %e user %U sys %S" -a -o times.txt env PYTHONPATH=$TMP/site-new $TMP/site-new/bin/ptxconf bench --backend pycuda --suite-only --devices all -o bench-suite-devices.json > bench.log 2>&1; tail -5 bench.log
python3 - <<'PY' > summary.txt
import json
d = json.load(open("bench-suite-devices.json"))
def walk(x, path=""):
    if isinstance(x, dict):
        if "run_wall_s" in x:
            print(path, "run", x["run_wall_s"], "process", x.get("process_wall_s"), "cpu", x.get("cpu_s"), "ms/case", (x.get("host") or {}).get("ms_per_case"), {n: round(v["user_s"] + v["sys_s"], 1) for n, v in (x.get("cpu_by_process") or {}).items()})
        for k, v in x.items():
            walk(v, f"{path}/{k}")
walk(d)
PY
cat summary.txt times.txt
tar czf $OUT/e4.tgz machine.txt times.txt summary.txt bench-suite-devices.json bench.log
