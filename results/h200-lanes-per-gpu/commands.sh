#!/bin/bash
# One GPU, 87315a3: two, three and four lanes on GPU 0 (alternated), and a sampled warm default run (every process).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --target $TMP/site .whl/*.whl 2>&1 | grep -v WARN
export PATH=$TMP/site/bin:$PATH PYTHONUNBUFFERED=1 PYTHONPATH=$TMP/site
O=$TMP/o; mkdir -p $O; cd $O
save() { tar czf $OUT/p3.tgz -C $O --exclude='*/observations' --exclude='*/junit.xml' --exclude='*/results.jsonl' --exclude='*/observed_maps*' . ; }
{ nvidia-smi -L | sed 's/ (UUID.*//'; nproc; python3 -m ptxconf.revision; } > machine.txt 2>&1; cat machine.txt
T() { local n=$1; shift; local s=$(date +%s.%N); "$@" > "$O/$n.log" 2>&1; local rc=$?; echo "$n: rc=$rc wall=$(python3 -c "print(round($(date +%s.%N)-$s,2))") :: $*" | tee -a $O/times.txt; tail -1 "$O/$n.log" | cut -c1-200; save; }
R() { ptxconf run --backend pycuda --quiet "$@"; }
T l2-cold R --devices 0,0 --out l2c
T l3-cold R --devices 0,0,0 --out l3c
T l4-cold R --devices 0,0,0,0 --out l4c
for r in 1 2; do
T l2-warm-$r R --devices 0,0 --out l2w$r
T l3-warm-$r R --devices 0,0,0 --out l3w$r
T l4-warm-$r R --devices 0,0,0,0 --out l4w$r
done
T spy py-spy record --rate 100 --format raw --subprocesses -o spy-all.txt -- ptxconf run --backend pycuda --devices 0,0 --out sp --quiet
python3 - <<'PY' > stages.txt
import json, glob
for r in sorted(glob.glob("*/summary.json")):
    s = json.load(open(r)); print(r.split("/")[0], s.get("status"), s.get("wall_s"), s.get("counts"), json.dumps(s.get("stages_s")))
PY
cat stages.txt; save
