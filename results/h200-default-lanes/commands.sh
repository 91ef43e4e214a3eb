#!/bin/bash
# One GPU: 87315a3 (words unmapped in the run's process; two lanes by default) against 0a465cf, alternated.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --target $TMP/site .whl/*.whl 2>&1 | grep -v WARN
python3 -m pip install -q --no-index --no-deps --target $TMP/site0 $(ls .whl/*.whl | grep -v -e ptx_conformance -e py_spy) .whl0/*.whl 2>&1 | grep -v WARN
export PATH=$TMP/site/bin:$PATH PYTHONUNBUFFERED=1
O=$TMP/o; mkdir -p $O; cd $O
save() { tar czf $OUT/p2.tgz -C $O --exclude='*/observations' . ; }
{ nvidia-smi -L | sed 's/ (UUID.*//'; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nproc; PYTHONPATH=$TMP/site python3 -m ptxconf.revision; PYTHONPATH=$TMP/site0 python3 -m ptxconf.revision; } > machine.txt 2>&1; cat machine.txt
T() { local n=$1; shift; local s=$(date +%s.%N); "$@" > "$O/$n.log" 2>&1; local rc=$?; echo "$n: rc=$rc wall=$(python3 -c "print(round($(date +%s.%N)-$s,2))") :: $*" | tee -a $O/times.txt; tail -1 "$O/$n.log" | cut -c1-200; save; }
NEW() { PYTHONPATH=$TMP/site $TMP/site/bin/ptxconf run --backend pycuda --quiet "$@"; }
OLD() { PYTHONPATH=$TMP/site0 $TMP/site0/bin/ptxconf run --backend pycuda --quiet "$@"; }
T new-one-cold NEW --devices 0 --out n1c
T new-default-cold NEW --out ndc
for r in 1 2; do
T old-one-warm-$r OLD --devices 0 --out o1w$r
T new-one-warm-$r NEW --devices 0 --out n1w$r
T new-default-warm-$r NEW --out ndw$r
done
python3 - <<'PY' > stages.txt
import json, glob
for r in sorted(glob.glob("*/summary.json")):
    s = json.load(open(r)); print(r.split("/")[0], s.get("status"), s.get("wall_s"), s.get("counts"), len(s.get("devices", []) or []), json.dumps(s.get("stages_s")))
PY
cat stages.txt; save
