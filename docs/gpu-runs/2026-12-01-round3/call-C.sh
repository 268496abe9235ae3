#!/bin/bash
# GPU call C (2026-12-01 round 3): Ray on the GPU (20 concurrent checks, hardened), lesson 5 notebook + %%check smoke on the GPU
T0=$(date +%s); O=$OUT; export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl .ray-wheels/*.whl > $O/install.txt 2>&1 || { cat $O/install.txt; exit 1; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/nbsite .nb-wheels/*.whl >> $O/install.txt 2>&1 || { cat $O/install.txt; exit 1; }
mkdir -p /tmp/bw && for f in .deb/*.deb; do dpkg -x $f /tmp/bw; done
export PATH=/tmp/site/bin:/tmp/bw/usr/bin:$PATH LD_LIBRARY_PATH=/tmp/bw/lib/x86_64-linux-gnu:/tmp/bw/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
export PYTHONPATH=/tmp/site:$PWD/src TRITONLAB_COMMIT=${COMMIT}
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; python3 -c "import torch,triton,ray;print('torch',torch.__version__,'triton',triton.__version__,'ray',ray.__version__)"; } > $O/env.txt 2>&1; cat $O/env.txt
TRITONLAB_SANDBOX=hardened timeout 330 python3 scripts/ray_gpu_verify.py --out $O --checks 20 --skip-tests > $O/ray-log.txt 2>&1; echo "ray rc=$? $(( $(date +%s)-T0 ))s"
grep -h '"code"' $O/ray-log.txt | cut -c1-220
mkdir -p $O/nb
PYTHONPATH=/tmp/nbsite:/tmp/site:$PWD/src timeout $(( 560 - ($(date +%s)-T0) )) python3 scripts/run_notebooks.py --gpu --lesson 5 --out $O/nb > $O/nb-log.txt 2>&1; echo "notebooks rc=$? $(( $(date +%s)-T0 ))s"; tail -5 $O/nb-log.txt; ls $O/nb
