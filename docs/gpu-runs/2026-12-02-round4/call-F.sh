#!/bin/bash
# GPU call F (2026-12-02): check latency with every isolation layer on after the warm hardened children and the
# compile caches (issue 19), per-phase timings; `inspect` on Triton 3.6 (18); lessons 11-12 figures from one
# run (22); 20 checks through Ray (21); lesson 5's notebook with %bench (23); grouped-order timings (18).
# Every step bounded; the whole call stops by 560 s. Carry: .whl-f .ray-wheels .nb-wheels .deb
T0=$(date +%s); O=$OUT; L=$O/steps.log; export PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl-f/*.whl .ray-wheels/*.whl > $O/install.txt 2>&1 || { cat $O/install.txt; exit 1; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/nbsite .nb-wheels/*.whl >> $O/install.txt 2>&1 || { cat $O/install.txt; exit 1; }
mkdir -p /tmp/bw && for f in .deb/*.deb; do dpkg -x $f /tmp/bw; done
export PATH=/tmp/site/bin:/tmp/bw/usr/bin:$PATH LD_LIBRARY_PATH=/tmp/bw/lib/x86_64-linux-gnu:/tmp/bw/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
export PYTHONPATH=/tmp/site:$PWD/src TRITONLAB_COMMIT=${COMMIT} TRITONLAB_HOME=/tmp/hF TRITONLAB_DAEMON_IDLE=60
left() { echo $(( 560 - ($(date +%s)-T0) )); }
step() { local lim=$1; shift; local l=$(left); [ $l -lt 15 ] && { echo "SKIP (time) $*" >> $L; return; }; [ $lim -gt $l ] && lim=$l
  local s=$(date +%s%N); timeout -s ABRT $lim "$@" >> $L 2>&1; local rc=$?; echo "== rc=$rc $(( ($(date +%s%N)-s)/1000000 )) ms: $*" >> $L; }
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; python3 -c "import torch,triton,ray;print('torch',torch.__version__,'triton',triton.__version__,'ray',ray.__version__)"; } > $O/env.txt 2>&1; cat $O/env.txt
# 1. latency (sandbox auto: hardened + per-run memory cgroups on this host): first check, then repeated checks
step 200 python3 scripts/gpu_verify.py --out $O/latency --only environment,first_check,cli_latency --repeats 3 --budget 195
for i in 1 2 3; do step 30 sh -c "python3 -m tritonlab check vector-copy --solution --backend gpu --json > $O/vc-$i.json"; done
step 30 sh -c "python3 -m tritonlab check softmax --solution --backend gpu --json > $O/sm-1.json"
python3 -m tritonlab daemon status >> $L 2>&1
# 2. inspect on Triton 3.6 (no GPU needed for it; here: the adapter on this Triton)
step 40 sh -c "python3 -m tritonlab inspect vector-add --solution --target cuda:90 > $O/inspect-cuda90.txt 2>&1"
step 30 sh -c "python3 -m tritonlab daemon stop"
# 3. lessons 11-12, one run (attention, RMSNorm backward at three shapes + sweep, fused linear CE)
step 110 python3 scripts/bench_lessons_11_12.py --out $O
# 4. Ray: a one-node cluster on loopback, hardened workers, 20 checks at once
step 130 env TRITONLAB_SANDBOX=hardened python3 scripts/ray_gpu_verify.py --out $O/ray --checks 20 --budget 120
# 5. lesson 5's notebook and the smoke notebook (%%check, %bench) on the GPU
mkdir -p $O/nb; step 70 env PYTHONPATH=/tmp/nbsite:/tmp/site:$PWD/src python3 scripts/run_notebooks.py --gpu --lesson 5 --out $O/nb
# 6. grouped order: timings and the GPU tile-order test
step 40 python3 scripts/bench_grouped_order.py --out $O
step 40 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_grouped_matmul_order.py
echo "total $(( $(date +%s)-T0 ))s" >> $L; grep "^== \|^SKIP\|^total" $L; tail -5 $O/latency/gpu-verify.md 2>/dev/null
