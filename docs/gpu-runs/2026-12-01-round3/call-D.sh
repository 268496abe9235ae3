#!/bin/bash
T0=$(date +%s); O=$OUT; export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD/src TRITONLAB_COMMIT=${COMMIT}
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; python3 -c "import torch,triton;print('torch',torch.__version__,'triton',triton.__version__)"; } > $O/env.txt 2>&1; cat $O/env.txt
timeout 400 python3 scripts/bench_lessons_11_12.py --only rms_norm_backward,fused_linear_ce --out $O > $O/bench-11-12.txt 2>&1; echo "bench rc=$? $(( $(date +%s)-T0 ))s"
grep -E "^(MET|SHORT)" $O/bench-11-12.txt | cut -c1-400
python3 - <<'PY'
import json, glob
r = json.load(open(glob.glob("/root/out/*lessons-11-12.json")[0]) if glob.glob("/root/out/*lessons-11-12.json") else open(glob.glob(__import__("os").environ["OUT"] + "/*lessons-11-12.json")[0]))
for row in r.get("rms_norm_backward", {}).get("rows", []):
    print(row["shape"], "default", round(row["pct_copy"], 1), "best", row["best_of_sweep"])
    for t in sorted([t for t in row["sweep"] if "ms" in t], key=lambda t: t["ms"])[:5]: print("   ", t)
ce = r.get("fused_linear_ce", {})
print({k: v for k, v in ce.items() if not isinstance(v, (list, dict))})
PY
