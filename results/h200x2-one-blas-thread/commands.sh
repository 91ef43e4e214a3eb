#!/bin/bash
# Two GPUs: this tree (new) against c1b73de (base, the last stop), `ptxconf run --devices all` alternated, one module
# cache, each install with an untimed first run; then the bench of new on both GPUs against the first alone.
set -uo pipefail
for w in new:.whl base:.whl0; do n=${w%%:*}; d=${w#*:}
python3 -m pip install -q --no-index --no-deps --target $TMP/site-$n $(ls .whl/*.whl | grep -v -e ptx_conformance) $d/ptx_conformance*.whl 2>&1 | grep -v WARN; done
export PYTHONUNBUFFERED=1 PTXCONF_CACHE=$TMP/cache
O=$TMP/o; mkdir -p $O; cd $O
save() { tar czf $OUT/d4.tgz -C $O --exclude='*/observations' --exclude='*/junit.xml' --exclude='*/results.jsonl' --exclude='*/observed_maps*' . ; }
{ nvidia-smi -L | sed 's/ (UUID.*//'; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; lscpu | grep -e "Model name" -e "Thread(s) per core"; ptxas --version | tail -1; for n in base new; do echo "$n $(PYTHONPATH=$TMP/site-$n python3 -m ptxconf.revision)"; done; } > machine.txt 2>&1; cat machine.txt
T() { local n=$1; shift; /usr/bin/time -f "$n: wall %e user %U sys %S" -a -o $O/times.txt "$@" > "$O/$n.log" 2>&1; tail -1 $O/times.txt; save; }
P() { local n=$1 out=$2; shift 2; T $out env PYTHONPATH=$TMP/site-$n $TMP/site-$n/bin/ptxconf run --backend pycuda --devices all --quiet --out $out; }
P new cold
P new new-w0; P base base-w0
for r in 1 2 3; do P base base-w$r; P new new-w$r; done
/usr/bin/time -f "bench: wall %e user %U sys %S" -a -o times.txt env PYTHONPATH=$TMP/site-new $TMP/site-new/bin/ptxconf bench --backend pycuda --suite-only --devices all -o bench-suite-2gpu.json > bench.log 2>&1
python3 - <<'PY' > walls.txt
import json, glob
for r in sorted(glob.glob("*/summary.json")):
    s = json.load(open(r)); t = s.get("timeline_s") or {}
    print(r.split("/")[0], s.get("wall_s"), "process_start", t.get("process_start"), "end", round(t["reported"] - t["lanes_ended"], 3))
s = json.load(open("bench-suite-2gpu.json"))["suite"]
for k in ("cold", "warm", "warm_no_observations", "one_gpu_cold", "one_gpu_warm"):
    if k in s: print("bench", k, s[k]["run_wall_s"], s[k]["process_wall_s"], s[k]["cpu_s"], {n: round(v["user_s"] + v["sys_s"], 1) for n, v in s[k]["cpu_by_process"].items()})
PY
cat walls.txt; save
