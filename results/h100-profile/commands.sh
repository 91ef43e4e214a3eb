#!/bin/bash
# One GPU: where a warm run's CPU goes now (a sampled profile of every process of one warm run, by kind of process),
# and what NumPy's missing bytecode costs this machine (runs alternated with NumPy compiled once into a cache prefix).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --target $TMP/site-new $(ls .whl/*.whl) 2>&1 | grep -v WARN
python3 -m pip install -q --no-index --no-deps --target $TMP/spy .whlX/py_spy*.whl 2>&1 | grep -v WARN
export PYTHONUNBUFFERED=1 PYTHONPATH=$TMP/site-new PTXCONF_CACHE=$TMP/cache
R=$PWD
O=$TMP/o; mkdir -p $O; cd $O
save() { tar czf $OUT/e5.tgz -C $O --exclude='*/observations' --exclude='*/junit.xml' --exclude='*/results.jsonl' --exclude='*/observed_maps*' --exclude=spy.txt . ; }
{ nvidia-smi -L | sed 's/ (UUID.*//'; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; lscpu | grep -e "Model name" -e "Thread(s) per core"; python3 -m ptxconf.revision; env | grep -E '^PYTHON(DONTWRITEBYTECODE|PYCACHEPREFIX)' ; python3 -c "import numpy, os, glob; d=os.path.dirname(numpy.__file__); print('numpy', numpy.__version__, 'pyc files', len(glob.glob(d+'/**/*.pyc', recursive=True)))"; } > machine.txt 2>&1; cat machine.txt
PYTHONPYCACHEPREFIX=$TMP/pyc python3 -m compileall -q $(python3 -c "import numpy, os; print(os.path.dirname(numpy.__file__))") > /dev/null 2>&1; echo "compiled into the prefix: $(find $TMP/pyc -name '*.pyc' | wc -l) files" >> machine.txt
T() { local n=$1; shift; /usr/bin/time -f "$n: wall %e user %U sys %S" -a -o $O/times.txt "$@" > "$O/$n.log" 2>&1; tail -1 $O/times.txt; save; }
T cold $TMP/site-new/bin/ptxconf run --backend pycuda --quiet --out cold
T w0 $TMP/site-new/bin/ptxconf run --backend pycuda --quiet --out w0
T pyc-w0 env PYTHONPYCACHEPREFIX=$TMP/pyc $TMP/site-new/bin/ptxconf run --backend pycuda --quiet --out pyc-w0
for r in 1 2 3; do
  T plain-$r $TMP/site-new/bin/ptxconf run --backend pycuda --quiet --out plain-$r
  T pyc-$r env PYTHONPYCACHEPREFIX=$TMP/pyc $TMP/site-new/bin/ptxconf run --backend pycuda --quiet --out pyc-$r
done
$TMP/spy/bin/py-spy record --subprocesses -r 100 -f raw -o spy.txt -- $TMP/site-new/bin/ptxconf run --backend pycuda --quiet --out spy > spy.log 2>&1; tail -2 spy.log
python3 $R/results/h100-profile/profile_by_process.py spy.txt 100 > profile-by-process.txt 2>&1; head -60 profile-by-process.txt
python3 - <<'PY' > timeline.txt
import json, glob
for r in sorted(glob.glob("*/summary.json")):
    s = json.load(open(r)); t = s.get("timeline_s") or {}; st = s.get("stages_s") or {}
    print(r.split("/")[0], "run", s.get("wall_s"), "process_start", t.get("process_start"), "plan_cpu", st.get("plan_cpu"), "save_cpu", st.get("save_cpu"))
PY
cat timeline.txt; save
