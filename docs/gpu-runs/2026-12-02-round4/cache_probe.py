"""GPU call G0 (2026-12-02): do compile caches reach hardened runs on the H200's gVisor host, and where does a
repeated check's time go? One Service per sandbox layer: a program run in the sandbox reports its cache folder,
what it holds and the mounts it sees, and times a small kernel's first launch; softmax and matmul are checked
3 times each with per-phase timings; the parent lists the cache folders between checks."""

import json
import os
import sys
import time
from pathlib import Path

from tritonlab.service import Service

PROBE = '''
import json, os, time
cache = os.environ.get("TRITON_CACHE_DIR", "")
entries = sorted(os.listdir(cache)) if os.path.isdir(cache) else None
st = os.stat(cache) if os.path.isdir(cache) else None
mounts = [l.split()[4] + " " + l.split(" - ")[1] for l in open("/proc/self/mountinfo") if "triton" in l or "/runs" in l]
import torch, triton, triton.language as tl
@triton.jit
def probe_copy(x, y, n, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y + o, tl.load(x + o, mask=o < n), mask=o < n)
x = torch.randn(4096, device="cuda"); y = torch.empty_like(x)
s = time.perf_counter(); probe_copy[(4,)](x, y, 4096, BLOCK=1024); torch.cuda.synchronize()
first = time.perf_counter() - s
writable = os.access(cache, os.W_OK)
print(json.dumps({"cache": cache, "entries": len(entries) if entries is not None else None, "uid": os.getuid(),
  "owner": st.st_uid if st else None, "writable": writable, "mounts": mounts[:12], "first_launch_s": round(first, 3),
  "after": len(os.listdir(cache)) if os.path.isdir(cache) else None}))
'''


def listing(home: Path) -> dict:
    out = {}
    for base in (home / "runs" / ".triton", home / "triton-cache", home / "triton-cache-replay"):
        if base.is_dir():
            for p in sorted(base.iterdir()) if base.name == ".triton" else [base]:
                try:
                    out[str(p.relative_to(home))] = {"entries": len(os.listdir(p)), "mount": os.path.ismount(p)}
                except OSError as exc:
                    out[str(p)] = str(exc)
    return out


def main() -> None:
    home = Path(os.environ["TRITONLAB_HOME"])
    report: dict = {"layer": os.environ.get("TRITONLAB_SANDBOX", "auto")}
    s = Service(backend="gpu")
    t = time.perf_counter()
    s.warm_up()
    report["warm_up_s"] = round(time.perf_counter() - t, 2)
    report["hardened"] = s.hardened
    report["pool"] = s.zygote().pool
    prog = home / "probe_prog.py"
    prog.write_text(PROBE)
    report["probe"] = []
    for _ in range(2):
        result, _ = s.run_job({"mode": "run", "file": str(prog)}, "none.json", timeout=60)
        report["probe"].append((result.output or "").strip().splitlines()[-1:] or [result.output])
    report["checks"] = []
    for ex_id in ("softmax", "matmul"):
        ex = s.exercise(ex_id)
        for _ in range(3):
            t = time.perf_counter()
            v = s.check(ex, file=ex.solution, record=False)
            report["checks"].append({"exercise": ex_id, "passed": v.passed, "wall_s": round(time.perf_counter() - t, 2),
                                     "timings": {k: (round(x, 3) if isinstance(x, float) else x) for k, x in v.timings.items()},
                                     "caches": listing(home)})
            print(json.dumps(report["checks"][-1]), flush=True)
    s.close()
    Path(sys.argv[1]).write_text(json.dumps(report, indent=1))


main()
