#!/bin/bash
# GPU call Q (2026-12-02): a short check of this round's fixes before the full `make gpu-verify`: repeated
# checks through one Service (verdict timings: the zygote's preload, the judge beside the replay), the huge
# cases of pid-map and vector-add (the raised GPU memory cap), a torch.compile example in the hardened sandbox
# (a user name without a passwd entry). Carry: .whl .deb
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl > /tmp/i.txt 2>&1
mkdir -p /tmp/bw && for f in .deb/*.deb; do dpkg -x $f /tmp/bw; done
export PATH=/tmp/site/bin:/tmp/bw/usr/bin:$PATH LD_LIBRARY_PATH=/tmp/bw/lib/x86_64-linux-gnu:/tmp/bw/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-} PYTHONPATH=/tmp/site:$PWD/src PYTHONUNBUFFERED=1 TRITONLAB_HOME=/tmp/homeQ
timeout 250 python3 - > $OUT/call-Q.json 2> $OUT/call-Q-stderr.txt <<'PY'
import json, time
from tritonlab.service import Service
s = Service(backend="gpu"); s.warm_up(); out = {"checks": [], "huge": [], "examples": []}
for ex_id, n in (("vector-copy", 4), ("softmax", 4), ("matmul", 3)):
    ex = s.exercise(ex_id)
    for _ in range(n):
        t = time.perf_counter(); shown = []
        v = s.check(ex, file=ex.solution, record=False, on_verdict=lambda v: shown.append(time.perf_counter() - t))
        out["checks"].append({"exercise": ex_id, "passed": v.passed, "verdict_s": round(shown[0], 3) if shown else None,
            "wall_s": round(time.perf_counter() - t, 3), "speed": v.speed,
            "timings": {k: v2 for k, v2 in v.timings.items() if not isinstance(v2, dict)}})
for ex_id in ("pid-map", "vector-add"):
    ex = s.exercise(ex_id); t = time.perf_counter()
    v = s.check(ex, file=ex.solution, record=False, speed=False, huge=True)
    out["huge"].append({"exercise": ex_id, "passed": v.passed, "s": round(time.perf_counter() - t, 2),
        "failures": [f"{f.case}: {f.kind}: {f.message[:300]}" for f in v.failures][:3]})
for lesson in s.course.lessons:
    for example in lesson.examples:
        if example.file.name in ("fused_linear_ce.py", "compile_graph_breaks.py"):
            t = time.perf_counter(); r, error = s.run_file(example.file, timeout=120)
            out["examples"].append({"file": example.file.name, "s": round(time.perf_counter() - t, 2),
                "exit": r.exit_code, "error": error, "tail": r.output[-600:]})
out["zygote_ready"] = getattr(s.zygote(), "info", None)
s.close(); print(json.dumps(out, indent=1, default=str))
PY
echo "rc=$?" >> $OUT/call-Q-stderr.txt
