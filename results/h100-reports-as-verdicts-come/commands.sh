#!/bin/bash
# One GPU: this tree (new: JUnit testcases made as records come; the timeline's plan_workers_ready and first_plan)
# against ded72e1 (base), alternated, one module cache, each install with an untimed first run; then a profile of the
# run's own process (its start before the run) on new; the GPU tests on new.
set -uo pipefail
for w in new:.whl base:.whl0; do n=${w%%:*}; d=${w#*:}
python3 -m pip install -q --no-index --no-deps --target $TMP/site-$n $(ls .whl/*.whl | grep -v -e ptx_conformance) $d/ptx_conformance*.whl 2>&1 | grep -v WARN; done
export PYTHONUNBUFFERED=1 PTXCONF_CACHE=$TMP/cache
R=$PWD
O=$TMP/o; mkdir -p $O; cd $O
save() { tar czf $OUT/d3.tgz -C $O --exclude='*/observations' --exclude='*/junit.xml' --exclude='*/results.jsonl' --exclude='*/observed_maps*' . ; }
{ nvidia-smi -L | sed 's/ (UUID.*//'; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; lscpu | grep -e "Model name" -e "Thread(s) per core"; ptxas --version | tail -1; for n in base new; do echo "$n $(PYTHONPATH=$TMP/site-$n python3 -m ptxconf.revision)"; done; } > machine.txt 2>&1; cat machine.txt
T() { local n=$1; shift; /usr/bin/time -f "$n: wall %e user %U sys %S" -a -o $O/times.txt "$@" > "$O/$n.log" 2>&1; tail -1 $O/times.txt; save; }
P() { local n=$1 out=$2; shift 2; T $out env PYTHONPATH=$TMP/site-$n "$@" $TMP/site-$n/bin/ptxconf run --backend pycuda --quiet --out $out; }
P new cold
P new new-w0; P base base-w0
for r in 1 2 3 4; do P base base-w$r; P new new-w$r; done
PYTHONPATH=$TMP/site-new python3 -m cProfile -o start.prof $TMP/site-new/bin/ptxconf run --backend pycuda --quiet --out prof > prof.log 2>&1
python3 - <<'PY' > start-profile.txt
import pstats, io
s = io.StringIO(); st = pstats.Stats("start.prof", stream=s); st.sort_stats("cumulative").print_stats(60); print(s.getvalue().replace("$TMP/site-new/", ""))
PY
(cd $R && PYTHONPATH=$TMP/site-new timeout 300 python3 -m pytest -q -rs -p no:cacheprovider tests/run/test_gpu.py tests/run/test_cuda_worker.py tests/run/test_run_start.py 2>&1 | tail -4) > gpu-tests.txt; cat gpu-tests.txt
python3 - <<'PY' > timeline.txt
import json, glob
for r in sorted(glob.glob("*/summary.json")):
    s = json.load(open(r))
    t = s.get("timeline_s") or {}
    lanes = sorted({k.split(".")[0] for k in t if k.startswith("lane") and "." in k})
    g = lambda m: [t[f"{l}.{m}"] for l in lanes if f"{l}.{m}" in t]
    rng = lambda m: f"{min(g(m)):.2f}-{max(g(m)):.2f}" if g(m) else "-"
    print(r.split("/")[0], s.get("wall_s"), "process_start", t.get("process_start"), "lanes", len(lanes), *(f"{m} {rng(m)}" for m in
          ("gpu_worker_ready", "pipeline", "plan_workers_ready", "first_plan", "first_module", "first_launched", "compared")),
          "lanes_ended", t.get("lanes_ended"), "reported", t.get("reported"), "end", round(t["reported"] - t["lanes_ended"], 3))
PY
cat timeline.txt; save
