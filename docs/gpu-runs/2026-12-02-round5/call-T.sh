#!/bin/bash
# GPU call T (2026-12-02, final): the grouped-matmul-order solution's verdict (it failed in call R's dev
# check, message not kept), `make gpu-verify` (budget 400 s), then 20 checks through a one-node Ray cluster
# with hardened workers (ray_gpu_verify.py) in what is left. Reports go straight to $OUT (at most 8 files),
# homes and run folders stay in /tmp. Carry: .whl .ray-wheels .deb
T0=$(date +%s); O=$OUT; export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl .ray-wheels/*.whl > /tmp/install.txt 2>&1 || { cat /tmp/install.txt; exit 1; }
mkdir -p /tmp/bw && for f in .deb/*.deb; do dpkg -x $f /tmp/bw; done
export PATH=/tmp/site/bin:/tmp/bw/usr/bin:$PATH LD_LIBRARY_PATH=/tmp/bw/lib/x86_64-linux-gnu:/tmp/bw/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
export PYTHONPATH=/tmp/site:$PWD/src TRITONLAB_COMMIT=${COMMIT}
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; python3 -c "import torch,triton,numpy,ray;print('torch',torch.__version__,'triton',triton.__version__,'numpy',numpy.__version__,'ray',ray.__version__)"; } > $O/log.txt 2>&1
TRITONLAB_HOME=/tmp/hG timeout 60 python3 - >> $O/log.txt 2>&1 <<'PY'
from tritonlab.service import Service
s = Service(backend="gpu"); e = s.exercise("grouped-matmul-order")
v = s.check(e, file=e.solution, record=False, speed=False)
print("grouped-matmul-order solution:", v.passed, [f"{f.case} [{f.kind}] {f.message[:400]} :: {f.cause[:200]}" for f in v.failures][:4])
s.close()
PY
echo "== grouped $(( $(date +%s)-T0 ))s" >> $O/log.txt
timeout -s INT 420 make gpu-verify PYTHON=python3 GPU_VERIFY_OUT=$O GPU_VERIFY_ARGS="--budget 400" >> $O/log.txt 2>&1
echo "== gpu-verify rc=$? $(( $(date +%s)-T0 ))s" >> $O/log.txt
L=$(( 540 - ($(date +%s)-T0) )); [ $L -gt 110 ] && L=110
mkdir -p $O/ray
timeout -s TERM $L env TRITONLAB_SANDBOX=hardened TRITONLAB_HOME=/tmp/hR python3 scripts/ray_gpu_verify.py --out $O/ray --checks 20 --budget $(( L - 8 )) > /tmp/ray-log.txt 2>&1
echo "== ray rc=$? $(( $(date +%s)-T0 ))s" >> $O/log.txt
tail -c 6000 /tmp/ray-log.txt >> $O/log.txt
ls $O $O/ray >> $O/log.txt
