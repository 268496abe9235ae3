#!/bin/bash
# GPU call P (2026-12-02): the breakdown of a repeated GPU check (scripts/profile_gpu_check.py: verdict timings,
# the parent's cProfile, the two children's cProfile) and `dev check --backend gpu` with its progress lines.
# Carry: .whl .deb
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl > /tmp/i.txt 2>&1
mkdir -p /tmp/bw && for f in .deb/*.deb; do dpkg -x $f /tmp/bw; done
export PATH=/tmp/site/bin:/tmp/bw/usr/bin:$PATH LD_LIBRARY_PATH=/tmp/bw/lib/x86_64-linux-gnu:/tmp/bw/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-} PYTHONPATH=/tmp/site:$PWD/src PYTHONUNBUFFERED=1 TRITONLAB_HOME=/tmp/home
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/env.txt; python3 -c "import torch, triton, sys; print(torch.__version__, triton.__version__, sys.version.split()[0])" >> $OUT/env.txt 2>&1
timeout 200 python3 scripts/profile_gpu_check.py --out /tmp/prof --repeats 4 > $OUT/profile-log.txt 2>&1; echo "rc=$?" >> $OUT/profile-log.txt
tar czf $OUT/profiles.tgz -C /tmp/prof . 2>/dev/null
timeout -s INT 190 python3 -m tritonlab dev check --backend gpu --json > /tmp/dc.out 2> $OUT/devcheck-progress.txt; echo "rc=$?" >> $OUT/devcheck-progress.txt
tail -c 20000 /tmp/dc.out > $OUT/devcheck-out.txt
