#!/bin/bash
# GPU call E (round 3, final): doctor on auto, first and repeated CLI checks, a huge case, GPU-marked adversarial
# and tile-order tests, the RMSNorm-backward default, grouped-order timings. Every step bounded; stops at 235 s.
T0=$(date +%s); O=$OUT; L=$O/steps.log; export PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
mkdir -p /tmp/bw && for f in .deb/*.deb; do dpkg -x $f /tmp/bw; done
export PATH=/tmp/bw/usr/bin:$PATH LD_LIBRARY_PATH=/tmp/bw/lib/x86_64-linux-gnu:/tmp/bw/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
export PYTHONPATH=/tmp/site:$PWD/src TRITONLAB_COMMIT=${COMMIT} TRITONLAB_DAEMON_IDLE=120
left() { echo $(( 235 - ($(date +%s)-T0) )); }
step() { local lim=$1; shift; local l=$(left); [ $l -lt 15 ] && { echo "SKIP (time) $*" >> $L; return; }; [ $lim -gt $l ] && lim=$l
  local s=$(date +%s%N); timeout -s ABRT $lim "$@" >> $L 2>&1; local rc=$?; echo "== rc=$rc $(( ($(date +%s%N)-s)/1000000 )) ms: $*" >> $L; }
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; python3 -c "import torch,triton;print('torch',torch.__version__,'triton',triton.__version__)"; } >> $L 2>&1
export TRITONLAB_HOME=/tmp/hE
s=$(date +%s%N); timeout -s ABRT 70 python3 -m tritonlab doctor --json --backend gpu > $O/doctor-auto.json 2> $O/doctor-auto.err; echo "== doctor rc=$? $(( ($(date +%s%N)-s)/1000000 )) ms" >> $L
step 60 python3 -m tritonlab check vector-add --solution --backend gpu --json
for i in 1 2 3; do step 30 python3 -m tritonlab check vector-copy --solution --backend gpu; done
for i in 1 2; do step 30 python3 -m tritonlab check softmax --solution --backend gpu; done
( export TRITONLAB_HOME=/tmp/hB TRITONLAB_SANDBOX=basic; step 40 python3 -m tritonlab check vector-copy --solution --backend gpu; for i in 1 2; do step 30 python3 -m tritonlab check vector-copy --solution --backend gpu; done )
step 90 python3 -m tritonlab check vector-copy --solution --huge --backend gpu --json
step 90 python3 -m pytest -q -s -p no:cacheprovider -m gpu tests/adversarial/test_gpu_runs.py
step 60 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_grouped_matmul_order.py
step 45 python3 scripts/bench_lessons_11_12.py --only rms_norm_backward --no-sweep --out $O
step 45 python3 scripts/bench_grouped_order.py --out $O

echo "total $(( $(date +%s)-T0 ))s" >> $L; grep "^== \|^SKIP\|^total" $L
