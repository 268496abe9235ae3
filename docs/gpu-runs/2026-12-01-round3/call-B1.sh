#!/bin/bash
# GPU call B1 (round 3): make gpu-verify (scripts/gpu_verify.py) on the merged tree, hardened layer available (bubblewrap .deb)
T0=$(date +%s); O=$OUT; export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
mkdir -p /tmp/bw && for f in .deb/*.deb; do dpkg -x $f /tmp/bw; done
export PATH=/tmp/bw/usr/bin:$PATH LD_LIBRARY_PATH=/tmp/bw/lib/x86_64-linux-gnu:/tmp/bw/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
export PYTHONPATH=/tmp/site:$PWD/src TRITONLAB_COMMIT=${COMMIT}
echo "setup $(( $(date +%s)-T0 ))s"
python3 scripts/gpu_verify.py --out $O/gv --home /tmp/gv-home --budget $(( 575 - ($(date +%s)-T0) )); echo "gpu-verify rc=$? $(( $(date +%s)-T0 ))s"
