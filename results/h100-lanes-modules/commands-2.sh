#!/bin/bash
# One GPU: 054311b (old) against 2ce03d9 (X: modules dealt to lanes, GPU worker opened early) and 02dcb88 (Y: X and
# two modules of plans ahead), each with its own module cache, alternated.
set -uo pipefail
for w in new:.whl x:.whlX old:.whl0; do n=${w%%:*}; d=${w#*:}
python3 -m pip install -q --no-index --no-deps --target $TMP/site-$n $(ls .whl/*.whl | grep -v -e ptx_conformance -e py_spy) $d/ptx_conformance*.whl 2>&1 | grep -v WARN; done
export PYTHONUNBUFFERED=1
O=$TMP/o; mkdir -p $O; cd $O
save() { tar czf $OUT/q3b.tgz -C $O --exclude='*/observations' --exclude='*/junit.xml' --exclude='*/results.jsonl' --exclude='*/observed_maps*' . ; }
{ nvidia-smi -L | sed 's/ (UUID.*//'; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; for n in old x new; do PYTHONPATH=$TMP/site-$n python3 -m ptxconf.revision; done; } > machine.txt 2>&1; cat machine.txt
T() { local n=$1; shift; /usr/bin/time -f "$n: wall %e user %U sys %S" -a -o $O/times.txt "$@" > "$O/$n.log" 2>&1; tail -1 $O/times.txt; tail -1 "$O/$n.log" | cut -c1-160; save; }
R() { local n=$1; shift; PTXCONF_CACHE=$TMP/cache-$n T "$@"; }
for n in old x new; do R $n $n-cold env PYTHONPATH=$TMP/site-$n $TMP/site-$n/bin/ptxconf run --backend pycuda --quiet --out $n-c; done
for r in 1 2; do for n in old x new; do R $n $n-warm-$r env PYTHONPATH=$TMP/site-$n $TMP/site-$n/bin/ptxconf run --backend pycuda --quiet --out $n-w$r; done; done
python3 - <<'PY' > stages.txt
import json, glob
for r in sorted(glob.glob("*/summary.json")):
    s = json.load(open(r))
    print(r.split("/")[0], s.get("wall_s"), (s.get("backend_stats") or {}).get("devices"), json.dumps(s.get("stages_s")))
PY
cat stages.txt; save
