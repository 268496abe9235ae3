#!/bin/bash
# GPU call Z3 (2026-12-03, round 9, after call Z2: the runs folder's bind undone only by its last process, exit
# status 70 named as the harness's): `make gpu-verify` on the final code of the round, every step,
# the GPU-marked tests in parallel files beside the bench's compile warm-up, then `bench --all --runs 3` in
# what is left. Reports go straight to $OUT; homes, caches and run folders stay in /tmp.
# Carry: .whl .nb-wheels .deb (made by scripts/gpu_carry.sh). COMMIT names the commit the tree is.
T0=$(date +%s); O=$OUT; export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl .nb-wheels/*.whl > /tmp/install.txt 2>&1 || { cat /tmp/install.txt; exit 1; }
mkdir -p /tmp/bw && for f in .deb/*.deb; do dpkg -x $f /tmp/bw; done
export PATH=/tmp/site/bin:/tmp/bw/usr/bin:$PATH LD_LIBRARY_PATH=/tmp/bw/lib/x86_64-linux-gnu:/tmp/bw/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
export PYTHONPATH=/tmp/site:$PWD/src TRITONLAB_COMMIT=${COMMIT}
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; python3 -c "import torch,triton,numpy;print('torch',torch.__version__,'triton',triton.__version__,'numpy',numpy.__version__)"; echo "== set-up $(( $(date +%s)-T0 ))s"; } > $O/log.txt 2>&1
B=$(( 585 - ($(date +%s)-T0) ))
timeout -s INT $(( B + 8 )) make gpu-verify PYTHON=python3 GPU_VERIFY_OUT=$O GPU_VERIFY_ARGS="--budget $B" >> $O/log.txt 2>&1
echo "== gpu-verify rc=$? budget ${B}s, $(( $(date +%s)-T0 ))s" >> $O/log.txt
ls -la $O >> $O/log.txt
