#!/bin/bash
# One GPU: how many lanes now that each lane's GPU worker is ready when the run begins: 2, 3, 4 (the default) and
# 6, alternated, one module cache.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --target $TMP/site-new $(ls .whl/*.whl | grep -v -e py_spy) 2>&1 | grep -v WARN
export PYTHONUNBUFFERED=1 PYTHONPATH=$TMP/site-new PTXCONF_CACHE=$TMP/cache
O=$TMP/o; mkdir -p $O; cd $O
{ nvidia-smi -L | sed 's/ (UUID.*//'; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; ptxas --version | tail -1; python3 -m ptxconf.revision; } > machine.txt 2>&1; cat machine.txt
T() { local n=$1; shift; /usr/bin/time -f "$n: wall %e user %U sys %S" -a -o $O/times.txt "$@" > "$O/$n.log" 2>&1; tail -1 $O/times.txt; }
T cold $TMP/site-new/bin/ptxconf run --backend pycuda --quiet --out cold
for r in 1 2; do for l in 4 2 3 6; do T lanes$l-$r $TMP/site-new/bin/ptxconf run --backend pycuda --quiet --lanes $l --out lanes$l-$r; done; done
python3 - <<'PY' > walls.txt
import json, glob
for r in sorted(glob.glob("*/summary.json")):
    s = json.load(open(r)); print(r.split("/")[0], s.get("wall_s"), s.get("counts"))
PY
cat walls.txt
tar czf $OUT/t9.tgz -C $O machine.txt times.txt walls.txt
