#!/bin/bash
# GPU call H (2026-12-02, final): `make gpu-verify` from the final code (budget 450 s), then 20 checks through a
# one-node Ray cluster with hardened workers (ray_gpu_verify.py, budget 115 s). At most 8 files come back from a
# call: the reports only (homes and run folders stay in /tmp). Carry: .whl .ray-wheels .deb
T0=$(date +%s); O=$OUT; export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl .ray-wheels/*.whl > /tmp/install.txt 2>&1 || { cat /tmp/install.txt; exit 1; }
mkdir -p /tmp/bw && for f in .deb/*.deb; do dpkg -x $f /tmp/bw; done
export PATH=/tmp/site/bin:/tmp/bw/usr/bin:$PATH LD_LIBRARY_PATH=/tmp/bw/lib/x86_64-linux-gnu:/tmp/bw/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
export PYTHONPATH=/tmp/site:$PWD/src TRITONLAB_COMMIT=${COMMIT}
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; python3 -c "import torch,triton,ray;print('torch',torch.__version__,'triton',triton.__version__,'ray',ray.__version__)"; } > $O/log.txt 2>&1
timeout -s INT 470 make gpu-verify PYTHON=python3 GPU_VERIFY_OUT=/tmp/gv GPU_VERIFY_ARGS="--budget 450" >> $O/log.txt 2>&1
echo "== gpu-verify rc=$? $(( $(date +%s)-T0 ))s" >> $O/log.txt
cp /tmp/gv/gpu-verify.json /tmp/gv/gpu-verify.md $O/ 2>/dev/null; cp /tmp/gv/bench-all.json $O/ 2>/dev/null
L=$(( 590 - ($(date +%s)-T0) )); [ $L -gt 125 ] && L=125
timeout -s TERM $L env TRITONLAB_SANDBOX=hardened TRITONLAB_HOME=/tmp/hR python3 scripts/ray_gpu_verify.py --out /tmp/ray --checks 20 --budget $(( L - 8 )) > /tmp/ray-log.txt 2>&1
echo "== ray rc=$? $(( $(date +%s)-T0 ))s" >> $O/log.txt
cp /tmp/ray/ray-gpu-verify.json /tmp/ray/throughput-ray.json $O/ 2>/dev/null; tail -c 20000 /tmp/ray-log.txt > $O/ray-log.txt
grep "^== \|\[gpu-verify\]" $O/log.txt; grep -A40 "^## Targets" /tmp/gv/gpu-verify.md | head -45
