#!/bin/bash
# GPU calls V and V2 (2026-12-02, round 6): where the short row kernels lose bandwidth (scripts/probe_rms_norm_gaps.py;
# V: all parts, V2: ONLY=variants).
# Carry: .whl
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl > /tmp/install.txt 2>&1 || { cat /tmp/install.txt; exit 1; }
export PYTHONPATH=/tmp/site:$PWD/src PYTHONUNBUFFERED=1 TRITONLAB_HOME=/tmp/hV
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; python3 -c "import torch,triton;print('torch',torch.__version__,'triton',triton.__version__)"; } > $OUT/log.txt 2>&1
timeout 400 python3 scripts/probe_rms_norm_gaps.py --out $OUT/rms-norm-gaps.json ${ONLY:+--only $ONLY} >> $OUT/log.txt 2>&1
echo "== rc=$?" >> $OUT/log.txt
