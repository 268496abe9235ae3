#!/bin/bash
# GPU call H2 (2026-12-02, commit f3d57b8): `scripts/gpu_verify.py --budget 420`, run directly on the machine that
# call H had left warm (call H's `make gpu-verify` had fallen back to installing: its import check failed because
# the carried fastapi 0.165 needs opentelemetry-api, which scripts/gpu_carry.sh did not fetch then). Carry: .whl .deb
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl > /tmp/i2.txt 2>&1
mkdir -p /tmp/bw && for f in .deb/*.deb; do dpkg -x $f /tmp/bw; done
export PATH=/tmp/site/bin:/tmp/bw/usr/bin:$PATH LD_LIBRARY_PATH=/tmp/bw/lib/x86_64-linux-gnu:/tmp/bw/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-} PYTHONPATH=/tmp/site:$PWD/src TRITONLAB_COMMIT=f3d57b8 PYTHONUNBUFFERED=1
python3 -c "import tritonlab, torch, triton, fastapi, typer" > $OUT/importcheck.txt 2>&1; echo "import rc=$?" >> $OUT/importcheck.txt
timeout -s INT 440 python3 scripts/gpu_verify.py --out /tmp/gv --budget 420 > $OUT/log.txt 2>&1; echo "rc=$?" >> $OUT/log.txt
cp /tmp/gv/gpu-verify.json /tmp/gv/gpu-verify.md /tmp/gv/bench-all.json $OUT/ 2>/dev/null
