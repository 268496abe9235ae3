#!/bin/bash
# GPU call R (2026-12-02, final): `make gpu-verify` from this round's code (budget 555 s). At most 8 files
# come back from a call: the reports only (homes and run folders stay in /tmp). Carry: .whl .deb
T0=$(date +%s); O=$OUT; export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl > /tmp/install.txt 2>&1 || { cat /tmp/install.txt; exit 1; }
mkdir -p /tmp/bw && for f in .deb/*.deb; do dpkg -x $f /tmp/bw; done
export PATH=/tmp/site/bin:/tmp/bw/usr/bin:$PATH LD_LIBRARY_PATH=/tmp/bw/lib/x86_64-linux-gnu:/tmp/bw/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
export PYTHONPATH=/tmp/site:$PWD/src TRITONLAB_COMMIT=${COMMIT}
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; python3 -c "import torch,triton,numpy;print('torch',torch.__version__,'triton',triton.__version__,'numpy',numpy.__version__)"; } > $O/log.txt 2>&1
timeout -s INT 575 make gpu-verify PYTHON=python3 GPU_VERIFY_OUT=/tmp/gv GPU_VERIFY_ARGS="--budget 555" >> $O/log.txt 2>&1
echo "== gpu-verify rc=$? $(( $(date +%s)-T0 ))s" >> $O/log.txt
cp /tmp/gv/gpu-verify.json /tmp/gv/gpu-verify.md $O/ 2>/dev/null; cp /tmp/gv/bench-all.json $O/ 2>/dev/null
grep "^== " $O/log.txt; grep -A40 "^## Targets" /tmp/gv/gpu-verify.md | head -45
