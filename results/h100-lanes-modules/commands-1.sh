#!/bin/bash
# One GPU, 16 cores: four, six and eight lanes alternated (warm), and CPU by process of a four-lane run.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --target $TMP/site .whl/*.whl 2>&1 | grep -v WARN
export PYTHONUNBUFFERED=1
O=$TMP/o; mkdir -p $O; cd $O
save() { tar czf $OUT/q3a.tgz -C $O --exclude='*/observations' --exclude='*/junit.xml' --exclude='*/results.jsonl' --exclude='*/observed_maps*' . ; }
{ nvidia-smi -L | sed 's/ (UUID.*//'; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; lscpu | grep -e "Model name" -e "Thread(s) per core"; PYTHONPATH=$TMP/site python3 -m ptxconf.revision; ptxas --version | tail -1; } > machine.txt 2>&1; cat machine.txt
T() { local n=$1; shift; /usr/bin/time -f "$n: wall %e user %U sys %S" -a -o $O/times.txt "$@" > "$O/$n.log" 2>&1; tail -1 $O/times.txt; tail -1 "$O/$n.log" | cut -c1-160; save; }
NEW="env PYTHONPATH=$TMP/site $TMP/site/bin/ptxconf run --backend pycuda --quiet"
export PTXCONF_CACHE=$TMP/cache-new
T cold $NEW --out c
for r in 1 2; do
for l in 4 6 8; do T lanes$l-$r $NEW --lanes $l --out l$l-$r; done
done
T procstat python3 procstat.py procstat-lanes4.json $NEW --out ps4
cat procstat.log | grep -v passed
python3 - <<'PY' > stages.txt
import json, glob
for r in sorted(glob.glob("*/summary.json")):
    s = json.load(open(r))
    print(r.split("/")[0], s.get("wall_s"), (s.get("backend_stats") or {}).get("devices"), json.dumps(s.get("stages_s")))
PY
cat stages.txt; save
