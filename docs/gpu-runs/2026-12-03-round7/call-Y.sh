#!/bin/bash
# GPU call Y (2026-12-03, round 7): the RMSNorm backward's loop with switches (fused row sums, dw per row of the
# step, next step prefetched), scripts/probe_rms_norm_gaps.py --only backward_variants.
# Carry: .whl
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl > /tmp/install.txt 2>&1 || { cat /tmp/install.txt; exit 1; }
export PYTHONPATH=/tmp/site:$PWD/src PYTHONUNBUFFERED=1 TRITONLAB_HOME=/tmp/hY
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; python3 -c "import torch,triton;print('torch',torch.__version__,'triton',triton.__version__)"; } > $OUT/log.txt 2>&1
timeout 170 python3 scripts/probe_rms_norm_gaps.py --out $OUT/rms-norm-backward-variants.json --only backward_variants --seconds 110 >> $OUT/log.txt 2>&1
echo "== rc=$?" >> $OUT/log.txt
cat $OUT/log.txt | cut -c1-1500
