#!/bin/bash
# One GPU: this round's tree (new) against afe7625 (mid: the CRC and the GPU worker's whole plans) and 1fe8e5f (base,
# the last stop), `ptxconf run` alternated, one module cache, each install with an untimed first run; the verdicts
# compared, a new run replayed; the GPU tests and the bench of new.
set -uo pipefail
for w in new:.whl mid:.whlM base:.whl0; do n=${w%%:*}; d=${w#*:}
python3 -m pip install -q --no-index --no-deps --target $TMP/site-$n $(ls .whl/*.whl | grep -v -e ptx_conformance) $d/ptx_conformance*.whl 2>&1 | grep -v WARN; done
export PYTHONUNBUFFERED=1 PTXCONF_CACHE=$TMP/cache
R=$PWD
O=$TMP/o; mkdir -p $O; cd $O
save() { tar czf $OUT/e3.tgz -C $O --exclude='*/observations' --exclude='*/junit.xml' --exclude='*/results.jsonl' --exclude='*/observed_maps*' . ; }
{ nvidia-smi -L | sed 's/ (UUID.*//'; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; lscpu | grep -e "Model name" -e "Thread(s) per core"; ptxas --version | tail -1; for n in base mid new; do echo "$n $(PYTHONPATH=$TMP/site-$n python3 -m ptxconf.revision)"; done; PYTHONPATH=$TMP/site-new python3 -c "from ptxconf.run.files import _crc32; print('crc32 from', _crc32().__module__)"; } > machine.txt 2>&1; cat machine.txt
T() { local n=$1; shift; /usr/bin/time -f "$n: wall %e user %U sys %S" -a -o $O/times.txt "$@" > "$O/$n.log" 2>&1; tail -1 $O/times.txt; save; }
P() { local n=$1 out=$2; shift 2; T $out env PYTHONPATH=$TMP/site-$n $TMP/site-$n/bin/ptxconf run --backend pycuda --quiet --out $out; du -sm $O/$out/observations | sed "s|$O/||" >> $O/sizes.txt; }
P new cold
P new new-w0; P mid mid-w0; P base base-w0
for r in 1 2 3 4; do P base base-w$r; P mid mid-w$r; P new new-w$r; done
python3 - <<'PY' > verdicts.txt
import json, glob
runs = {}
for r in sorted(glob.glob("*-w*/results.jsonl")) + ["cold/results.jsonl"]:
    seen = runs[r.split("/")[0]] = {}
    for line in open(r):
        d = json.loads(line)
        if "check" in d and "variant" in d:
            seen[(d["variant"], d["check"])] = d.get("status")
    print(r.split("/")[0], len(seen), sorted(__import__("collections").Counter(seen.values()).items()))
for n in range(1, 5):
    for other in ("base", "mid"):
        a, b = runs.get(f"{other}-w{n}"), runs.get(f"new-w{n}")
        if a is not None and b is not None:
            print(f"{other}-w{n} against new-w{n}: {sum(a.get(k) != v for k, v in b.items()) + len(a.keys() - b.keys())} verdicts differ")
PY
cat verdicts.txt
/usr/bin/time -f "replay: wall %e user %U sys %S" -a -o times.txt env PYTHONPATH=$TMP/site-new $TMP/site-new/bin/ptxconf replay --quiet new-w1 > replay.txt 2>&1; echo "replay rc $?" >> replay.txt; tail -5 replay.txt
(cd $R && PYTHONPATH=$TMP/site-new timeout 300 python3 -m pytest -q -rs -p no:cacheprovider tests/run/test_gpu.py tests/run/test_cuda_worker.py tests/run/test_run_start.py tests/run/test_devices.py 2>&1 | tail -4) > gpu-tests.txt; cat gpu-tests.txt
/usr/bin/time -f "bench: wall %e user %U sys %S" -a -o times.txt env PYTHONPATH=$TMP/site-new $TMP/site-new/bin/ptxconf bench --backend pycuda --suite-only -o bench-suite.json > bench.log 2>&1
python3 - <<'PY' > timeline.txt
import json, glob
for r in sorted(glob.glob("*/summary.json")):
    s = json.load(open(r)); t = s.get("timeline_s") or {}; st = s.get("stages_s") or {}
    lanes = sorted({k.split(".")[0] for k in t if k.startswith("lane") and "." in k})
    g = lambda m: [t[f"{l}.{m}"] for l in lanes if f"{l}.{m}" in t]
    rng = lambda m: f"{min(g(m)):.2f}-{max(g(m)):.2f}" if g(m) else "-"
    print(r.split("/")[0], s.get("wall_s"), "process_start", t.get("process_start"), "lanes", len(lanes), *(f"{m} {rng(m)}" for m in
          ("gpu_worker_ready", "first_module", "first_launched", "compared")), "end", round(t["reported"] - t["lanes_ended"], 3),
          "plan_cpu", st.get("plan_cpu"), "compare_cpu", st.get("compare_cpu"), "save_cpu", st.get("save_cpu"))
d = json.load(open("bench-suite.json"))["suite"]
for k in ("cold", "warm", "warm_no_observations"): print("bench", k, d[k]["run_wall_s"], d[k]["process_wall_s"], d[k]["cpu_s"], d[k]["host"].get("ms_per_case"), {n: round(v["user_s"] + v["sys_s"], 1) for n, v in d[k]["cpu_by_process"].items()})
PY
cat timeline.txt; cat sizes.txt; save
