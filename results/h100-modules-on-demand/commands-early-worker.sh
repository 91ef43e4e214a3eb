#!/bin/bash
# One GPU: this tree (new: the first GPU worker started before the CLI is imported) against the commit before it
# (mid, 591e7e7), alternated, one module cache, each with an untimed first run; the GPU tests on new.
set -uo pipefail
for w in new:.whl mid:.whlX; do n=${w%%:*}; d=${w#*:}
python3 -m pip install -q --no-index --no-deps --target $TMP/site-$n $(ls .whl/*.whl | grep -v -e ptx_conformance -e py_spy) $d/ptx_conformance*.whl 2>&1 | grep -v WARN; done
export PYTHONUNBUFFERED=1
R=$PWD
O=$TMP/o; mkdir -p $O; cd $O
save() { tar czf $OUT/u9.tgz -C $O --exclude='*/observations' --exclude='*/junit.xml' --exclude='*/results.jsonl' --exclude='*/observed_maps*' . ; }
{ nvidia-smi -L | sed 's/ (UUID.*//'; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; lscpu | grep -e "Model name" -e "Thread(s) per core"; ptxas --version | tail -1; for n in mid new; do echo "$n $(PYTHONPATH=$TMP/site-$n python3 -m ptxconf.revision)"; done; } > machine.txt 2>&1; cat machine.txt
(cd $R && PYTHONPATH=$TMP/site-new timeout 300 python3 -m pytest -q -rs -p no:cacheprovider tests/run/test_gpu.py tests/run/test_cuda_worker.py 2>&1 | tail -6) > gpu-tests.txt; cat gpu-tests.txt
T() { local n=$1; shift; /usr/bin/time -f "$n: wall %e user %U sys %S" -a -o $O/times.txt "$@" > "$O/$n.log" 2>&1; tail -1 $O/times.txt; save; }
P() { local n=$1 out=$2; PTXCONF_CACHE=$TMP/cache T $out env PYTHONPATH=$TMP/site-$n $TMP/site-$n/bin/ptxconf run --backend pycuda --quiet --out $out; }
P new cold
for n in new mid; do P $n $n-w0; done
for r in 1 2 3 4; do for n in new mid; do P $n $n-w$r; done; done
python3 - <<'PY' > timeline.txt
import json, glob
for r in sorted(glob.glob("*/summary.json")):
    s = json.load(open(r))
    t = s.get("timeline_s") or {}
    lanes = sorted({k.split(".")[0] for k in t if k.startswith("lane") and "." in k})
    g = lambda m: [t[f"{l}.{m}"] for l in lanes if f"{l}.{m}" in t]
    rng = lambda m: f"{min(g(m)):.2f}-{max(g(m)):.2f}" if g(m) else "-"
    print(r.split("/")[0], s.get("wall_s"), "process_start", t.get("process_start"), "lanes", len(lanes), *(f"{m} {rng(m)}" for m in
          ("gpu_worker_entered", "gpu_worker_ready", "first_module", "first_launched", "compared")), "reported", t.get("reported"))
PY
cat timeline.txt; save
