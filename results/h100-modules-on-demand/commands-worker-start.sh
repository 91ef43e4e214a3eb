#!/bin/bash
# One GPU: where a GPU worker's start goes (one alone, then four at once, as a run's lanes start them).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --target $TMP/site-new $(ls .whl/*.whl | grep -v -e py_spy) 2>&1 | grep -v WARN
export PYTHONPATH=$TMP/site-new
cat > $TMP/w.py <<'PY'
import time, sys
t0 = time.perf_counter(); marks = []
def m(n): marks.append(f"{n} {time.perf_counter() - t0:.3f}")
import numpy as np; m("numpy")
import pycuda.driver as cuda; m("pycuda.driver")
cuda.init(); m("cuInit")
dev = cuda.Device(0); ctx = dev.make_context(); m("context")
from pycuda.tools import DeviceMemoryPool; m("pycuda.tools")
pool = DeviceMemoryPool(); m("pool")
ctx.pop()
print(sys.argv[1], " ".join(marks), flush=True)
PY
for i in 1 2 3; do python3 $TMP/w.py alone-$i; done
for i in 1 2; do for k in 1 2 3 4; do python3 $TMP/w.py four-$i-$k & done; wait; done
python3 -X importtime -c "import ptxconf.cli.main" 2>&1 | tail -1
python3 -c "import time; t=time.perf_counter(); import ptxconf.cli.main; print('import ptxconf.cli.main', round(time.perf_counter()-t, 3))"
