#!/bin/bash
# GPU call A (2026-12-01 round 3): cgroups facts, doctor (auto + hardened), Ray 20 concurrent checks, lessons 11-12 targets
T0=$(date +%s); O=$OUT; export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
mkdir -p /tmp/bw && for f in .deb/*.deb; do dpkg -x $f /tmp/bw; done
export PATH=/tmp/bw/usr/bin:$PATH LD_LIBRARY_PATH=/tmp/bw/lib/x86_64-linux-gnu:/tmp/bw/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
export PYTHONPATH=/tmp/site:$PWD/src TRITONLAB_COMMIT=${COMMIT}
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; python3 -c "import torch,triton;print('torch',torch.__version__,'triton',triton.__version__)"; } > $O/env.txt 2>&1; cat $O/env.txt
timeout 60 bash .gpuA/cg.sh > $O/cgroups.txt 2>&1; echo "cg rc=$? $(( $(date +%s)-T0 ))s"
( export TRITONLAB_HOME=/tmp/hd; timeout 90 python3 -m tritonlab doctor --json --backend gpu > $O/doctor-auto.json 2>$O/doctor-auto.err; echo "doctor auto rc=$?"
  TRITONLAB_SANDBOX=hardened timeout 90 python3 -m tritonlab doctor --json --backend gpu > $O/doctor-hardened.json 2>>$O/doctor-auto.err; echo "doctor hardened rc=$? $(( $(date +%s)-T0 ))s" )
# Ray: a venv over the system site (torch, triton) with the carried Ray wheels
python3 -m venv --without-pip --system-site-packages /tmp/rv && /tmp/rv/bin/python -m pip install -q --no-index --no-deps --no-compile .ray-wheels/*.whl .whl/*.whl > $O/ray-install.txt 2>&1; echo "ray install rc=$? $(( $(date +%s)-T0 ))s"
export PYTHONPATH=$PWD/src
TRITONLAB_SANDBOX=hardened timeout 300 /tmp/rv/bin/python scripts/ray_gpu_verify.py --out $O --checks 20 --skip-tests > $O/ray-log.txt 2>&1; echo "ray rc=$? $(( $(date +%s)-T0 ))s"
export PYTHONPATH=/tmp/site:$PWD/src
timeout $(( 560 - ($(date +%s)-T0) )) python3 scripts/bench_lessons_11_12.py --out $O > $O/bench-11-12.txt 2>&1; echo "bench 11-12 rc=$? $(( $(date +%s)-T0 ))s"
tail -5 $O/bench-11-12.txt; grep -h '"code"' $O/ray-log.txt | head -20
