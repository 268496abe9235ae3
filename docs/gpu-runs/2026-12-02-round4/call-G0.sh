#!/bin/bash
# GPU call G0 (2026-12-02): compile caches under each sandbox layer (cache_probe.py); stops by 200 s.
T0=$(date +%s); O=$OUT; export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl-f/*.whl > $O/install.txt 2>&1 || { cat $O/install.txt; exit 1; }
mkdir -p /tmp/bw && for f in .deb/*.deb; do dpkg -x $f /tmp/bw; done
export PATH=/tmp/bw/usr/bin:$PATH LD_LIBRARY_PATH=/tmp/bw/lib/x86_64-linux-gnu:/tmp/bw/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
export PYTHONPATH=/tmp/site:$PWD/src
P=docs/gpu-runs/2026-12-02-round4/cache_probe.py
TRITONLAB_HOME=/tmp/hA timeout 110 python3 $P $O/cache-auto.json > $O/auto.log 2>&1; echo "auto rc=$? $(( $(date +%s)-T0 ))s"
TRITONLAB_HOME=/tmp/hB TRITONLAB_SANDBOX=basic timeout $(( 190 - ($(date +%s)-T0) )) python3 $P $O/cache-basic.json > $O/basic.log 2>&1; echo "basic rc=$? $(( $(date +%s)-T0 ))s"
grep -h '"exercise"' $O/auto.log $O/basic.log | python3 -c "
import sys, json
for l in sys.stdin:
    d = json.loads(l); t = d['timings']
    print(d['exercise'], d['passed'], d['wall_s'], {k: t.get(k) for k in ('check_child_s','check_run_s','replay_child_s','replay_run_s','judge_s','speed_s')}, d['caches'])
"
tail -3 $O/auto.log
