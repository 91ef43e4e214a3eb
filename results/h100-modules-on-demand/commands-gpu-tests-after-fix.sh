#!/bin/bash
# One GPU: the GPU tests again after the test fix (a worker per lane).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --target $TMP/site-new $(ls .whl/*.whl | grep -v -e py_spy) 2>&1 | grep -v WARN
PYTHONPATH=$TMP/site-new python3 -m ptxconf.revision
PYTHONPATH=$TMP/site-new timeout 300 python3 -m pytest -q -rs -p no:cacheprovider tests/run/test_gpu.py tests/run/test_cuda_worker.py 2>&1 | tail -8 | tee $OUT/gpu-tests-after-fix.txt
