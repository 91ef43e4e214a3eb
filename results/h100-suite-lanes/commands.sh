#!/bin/bash
# One GPU, final: cfb2414 (this round) against 0a465cf (its start), alternated; the bench; the CPU model on two cores.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --target $TMP/site .whl/*.whl 2>&1 | grep -v WARN
python3 -m pip install -q --no-index --no-deps --target $TMP/site0 $(ls .whl/*.whl | grep -v -e ptx_conformance -e py_spy) .whl0/*.whl 2>&1 | grep -v WARN
export PYTHONUNBUFFERED=1
O=$TMP/o; mkdir -p $O; cd $O
save() { tar czf $OUT/p5.tgz -C $O --exclude='*/observations' --exclude='*/junit.xml' --exclude='*/results.jsonl' --exclude='*/observed_maps*' . ; }
{ nvidia-smi -L | sed 's/ (UUID.*//'; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; lscpu | grep "Model name"; PYTHONPATH=$TMP/site python3 -m ptxconf.revision; PYTHONPATH=$TMP/site0 python3 -m ptxconf.revision; python3 -c "import numba, numpy; print('numba', numba.__version__, 'numpy', numpy.__version__)"; } > machine.txt 2>&1; cat machine.txt
T() { local n=$1; shift; local s=$(date +%s.%N); "$@" > "$O/$n.log" 2>&1; local rc=$?; local e=$(date +%s.%N); echo "$n: rc=$rc wall=$(python3 -c "print(round($e-$s,2))") start=$s end=$e :: $*" | tee -a $O/times.txt; tail -1 "$O/$n.log" | cut -c1-200; save; }
NEW() { PYTHONPATH=$TMP/site $TMP/site/bin/ptxconf run --backend pycuda --quiet "$@"; }
OLD() { PYTHONPATH=$TMP/site0 $TMP/site0/bin/ptxconf run --backend pycuda --quiet "$@"; }
C() { export PTXCONF_CACHE=$TMP/cache-$1; }
C old; T old-cold OLD --out oc
C new4; T new-cold NEW --out nc
C new1; T new-one-cold NEW --devices 0 --out n1c
for r in 1 2; do
C old; T old-warm-$r OLD --out ow$r
C new4; T new-warm-$r NEW --out nw$r
C new1; T new-one-warm-$r NEW --devices 0 --out n1w$r
done
C new4; T spy-parent env PYTHONPATH=$TMP/site $TMP/site/bin/py-spy record --idle --rate 50 --format raw -o spy-parent.txt -- $TMP/site/bin/ptxconf run --backend pycuda --quiet --out sp
unset PTXCONF_CACHE
T bench env PYTHONPATH=$TMP/site $TMP/site/bin/ptxconf bench --backend pycuda --suite-only -o bench-suite.json
python3 - <<'PY' > stages.txt
import json, glob
for r in sorted(glob.glob("*/summary.json")):
    s = json.load(open(r)); b = s.get("backend_stats", {})
    print(r.split("/")[0], s.get("status"), s.get("wall_s"), s.get("started"), s.get("updated"), s.get("counts"), "ptxas_s", b.get("ptxas_seconds"), json.dumps(s.get("stages_s")))
PY
cat stages.txt; save
T numerics-new taskset -c 0,1 env NUMBA_NUM_THREADS=2 PYTHONPATH=$TMP/site $TMP/site/bin/ptxconf bench --numerics-only --numerics-dots 1000000 -o numerics-2cores-new.json
T numerics-old taskset -c 0,1 env NUMBA_NUM_THREADS=2 PYTHONPATH=$TMP/site0 $TMP/site0/bin/ptxconf bench --numerics-only --numerics-dots 1000000 -o numerics-2cores-old.json
save
