#!/bin/bash
# GPU call G1 (2026-12-02): per-variant launch cost with a hit cache, hardened vs layer 1 (variant_probe.py).
T0=$(date +%s); O=$OUT; export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl-f/*.whl > $O/install.txt 2>&1 || { cat $O/install.txt; exit 1; }
mkdir -p /tmp/bw && for f in .deb/*.deb; do dpkg -x $f /tmp/bw; done
export PATH=/tmp/bw/usr/bin:$PATH LD_LIBRARY_PATH=/tmp/bw/lib/x86_64-linux-gnu:/tmp/bw/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
export PYTHONPATH=/tmp/site:$PWD/src
P=docs/gpu-runs/2026-12-02-round4/variant_probe.py
TRITONLAB_HOME=/tmp/hA timeout 80 python3 $P $O/variants-auto.json > $O/auto.log 2>&1; echo "auto rc=$? $(( $(date +%s)-T0 ))s"
TRITONLAB_HOME=/tmp/hB TRITONLAB_SANDBOX=basic timeout 60 python3 $P $O/variants-basic.json > $O/basic.log 2>&1; echo "basic rc=$? $(( $(date +%s)-T0 ))s"
cat $O/auto.log $O/basic.log | cut -c1-2500
