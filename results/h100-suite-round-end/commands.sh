#!/bin/bash
# One GPU, final: this round's start (054311b, old) against its end (new) and its end with released shared files
# kept for reuse (kept), each with its own module cache, alternated; then the bench of the end.
set -uo pipefail
for w in new:.whl kept:.whlX old:.whl0; do n=${w%%:*}; d=${w#*:}
python3 -m pip install -q --no-index --no-deps --target $TMP/site-$n $(ls .whl/*.whl | grep -v -e ptx_conformance -e py_spy) $d/ptx_conformance*.whl 2>&1 | grep -v WARN; done
export PYTHONUNBUFFERED=1
O=$TMP/o; mkdir -p $O; cd $O
save() { tar czf $OUT/q5.tgz -C $O --exclude='*/observations' --exclude='*/junit.xml' --exclude='*/results.jsonl' --exclude='*/observed_maps*' . ; }
{ nvidia-smi -L | sed 's/ (UUID.*//'; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; lscpu | grep -e "Model name" -e "Thread(s) per core"; ptxas --version | tail -1; for n in old new kept; do echo "$n $(PYTHONPATH=$TMP/site-$n python3 -m ptxconf.revision)"; done; } > machine.txt 2>&1; cat machine.txt
T() { local n=$1; shift; /usr/bin/time -f "$n: wall %e user %U sys %S" -a -o $O/times.txt "$@" > "$O/$n.log" 2>&1; tail -1 $O/times.txt; tail -1 "$O/$n.log" | cut -c1-160; save; }
R() { local n=$1; shift; PTXCONF_CACHE=$TMP/cache-$n T "$@"; }
for n in old new kept; do R $n $n-cold env PYTHONPATH=$TMP/site-$n $TMP/site-$n/bin/ptxconf run --backend pycuda --quiet --out $n-c; done
for r in 1 2; do for n in old new kept; do R $n $n-warm-$r env PYTHONPATH=$TMP/site-$n $TMP/site-$n/bin/ptxconf run --backend pycuda --quiet --out $n-w$r; done; done
T bench env PYTHONPATH=$TMP/site-new $TMP/site-new/bin/ptxconf bench --backend pycuda --suite-only -o bench-suite.json
python3 - <<'PY' > stages.txt
import json, glob
for r in sorted(glob.glob("*/summary.json")):
    s = json.load(open(r))
    print(r.split("/")[0], s.get("wall_s"), (s.get("backend_stats") or {}).get("devices"), json.dumps(s.get("stages_s")))
PY
cat stages.txt; save
