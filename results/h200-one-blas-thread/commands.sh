#!/bin/bash
# One GPU, diagnostics of a warm run's start: NumPy's import with and without one BLAS thread (four at once), the
# warm suite with OPENBLAS_NUM_THREADS=1 against without (alternated), import times of the run and its GPU workers,
# and a sampled profile of every process of one warm run.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --target $TMP/site-new $(ls .whl/*.whl) 2>&1 | grep -v WARN
python3 -m pip install -q --no-index --no-deps --target $TMP/spy .whlX/py_spy*.whl 2>&1 | grep -v WARN
export PYTHONUNBUFFERED=1 PYTHONPATH=$TMP/site-new PTXCONF_CACHE=$TMP/cache
O=$TMP/o; mkdir -p $O; cd $O
save() { tar czf $OUT/d1.tgz -C $O --exclude='*/observations' --exclude='*/junit.xml' --exclude='*/results.jsonl' --exclude='*/observed_maps*' . ; }
{ nvidia-smi -L | sed 's/ (UUID.*//'; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; lscpu | grep -e "Model name" -e "Thread(s) per core"; python3 -m ptxconf.revision; python3 -c "import numpy; numpy.show_config()" 2>&1 | grep -i -A3 blas | head -12; } > machine.txt 2>&1; cat machine.txt
imp() { for i in 1 2 3 4; do python3 -c "import time;t=time.perf_counter();import numpy;print(round(time.perf_counter()-t,3))" & done; wait; }
for r in 1 2 3; do echo "default: $(imp | tr '\n' ' ')"; echo "one-thread: $(OPENBLAS_NUM_THREADS=1 imp | tr '\n' ' ')"; done > numpy-import.txt 2>&1; cat numpy-import.txt
T() { local n=$1; shift; /usr/bin/time -f "$n: wall %e user %U sys %S" -a -o $O/times.txt "$@" > "$O/$n.log" 2>&1; tail -1 $O/times.txt; save; }
T cold $TMP/site-new/bin/ptxconf run --backend pycuda --quiet --out cold
T w0 $TMP/site-new/bin/ptxconf run --backend pycuda --quiet --out w0
for r in 1 2 3; do
  T def-$r $TMP/site-new/bin/ptxconf run --backend pycuda --quiet --out def-$r
  T one-$r env OPENBLAS_NUM_THREADS=1 $TMP/site-new/bin/ptxconf run --backend pycuda --quiet --out one-$r
done
PYTHONPROFILEIMPORTTIME=1 $TMP/site-new/bin/ptxconf run --backend pycuda --quiet --out imp > imp.log 2> importtime.txt; grep -c . importtime.txt
$TMP/spy/bin/py-spy record --subprocesses -r 100 -f raw -o spy.txt -- $TMP/site-new/bin/ptxconf run --backend pycuda --quiet --out spy > spy.log 2>&1; tail -3 spy.log; ls -la spy.txt
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
