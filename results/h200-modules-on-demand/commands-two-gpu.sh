#!/bin/bash
# Two GPUs: this tree (new) against the round's start (old, 2274fc1) on both GPUs, alternated, one module cache; then
# the bench of this tree (both GPUs against the first alone, cold and warm, in one invocation).
set -uo pipefail
for w in new:.whl old:.whl0; do n=${w%%:*}; d=${w#*:}
python3 -m pip install -q --no-index --no-deps --target $TMP/site-$n $(ls .whl/*.whl | grep -v -e ptx_conformance -e py_spy) $d/ptx_conformance*.whl 2>&1 | grep -v WARN; done
export PYTHONUNBUFFERED=1
O=$TMP/o; mkdir -p $O; cd $O
save() { tar czf $OUT/u2.tgz -C $O --exclude='*/observations' --exclude='*/junit.xml' --exclude='*/results.jsonl' --exclude='*/observed_maps*' . ; }
{ nvidia-smi -L | sed 's/ (UUID.*//'; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; lscpu | grep -e "Model name" -e "Thread(s) per core"; ptxas --version | tail -1; for n in old new; do echo "$n $(PYTHONPATH=$TMP/site-$n python3 -m ptxconf.revision)"; done; } > machine.txt 2>&1; cat machine.txt
PYTHONPATH=$TMP/site-new python3 -c "
import time; t=time.perf_counter(); import ptxconf.cli.main; t1=time.perf_counter(); import pycuda.driver as c; t2=time.perf_counter(); c.init(); t3=time.perf_counter()
print(f'import ptxconf.cli {t1-t:.3f} s, import pycuda.driver {t2-t1:.3f} s, cuInit {t3-t2:.3f} s')" > start.txt 2>&1; cat start.txt
T() { local n=$1; shift; /usr/bin/time -f "$n: wall %e user %U sys %S" -a -o $O/times.txt "$@" > "$O/$n.log" 2>&1; tail -1 $O/times.txt; save; }
export PTXCONF_CACHE=$TMP/cache
P() { local n=$1 d=$2 out=$3; T $out env PYTHONPATH=$TMP/site-$n $TMP/site-$n/bin/ptxconf run --backend pycuda --quiet --devices $d --out $out; }
P new all cold-all
for r in 1 2; do for n in new old; do P $n all $n-all-$r; done; done
T bench env PYTHONPATH=$TMP/site-new $TMP/site-new/bin/ptxconf bench --backend pycuda --suite-only --devices all -o bench-suite-2gpu.json
python3 - <<'PY' > timeline.txt
import json, glob
for r in sorted(glob.glob("*/summary.json")):
    s = json.load(open(r))
    t = s.get("timeline_s") or {}
    lanes = sorted({k.split(".")[0] for k in t if k.startswith("lane") and "." in k})
    g = lambda m: [t[f"{l}.{m}"] for l in lanes if f"{l}.{m}" in t]
    rng = lambda m: f"{min(g(m)):.2f}-{max(g(m)):.2f}" if g(m) else "-"
    print(r.split("/")[0], s.get("wall_s"), "lanes", len(lanes), *(f"{m} {rng(m)}" for m in
          ("gpu_worker_ready", "pipeline", "first_module", "first_launched", "compared")), "dealt", t.get("modules_dealt", t.get("shares_dealt")), "ran", t.get("ran"), "reported", t.get("reported"))
PY
cat timeline.txt; python3 -c "
import json; s=json.load(open('bench-suite-2gpu.json'))['suite']
for k in ('cold','warm','warm_no_observations','one_gpu_cold','one_gpu_warm'):
    if k in s: print(k, s[k]['run_wall_s'], s[k]['process_wall_s'], s[k]['cpu_s'], {n: (round(v['user_s'],1), round(v['sys_s'],1)) for n, v in s[k]['cpu_by_process'].items()})
"; save
