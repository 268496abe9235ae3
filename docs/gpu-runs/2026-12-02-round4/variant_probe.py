"""GPU call G1 (2026-12-02): a repeated check's child spends seconds more under the hardened layer than under
layer 1 with the same (hit) compile cache (call G0). A program run in the sandbox launches 8 variants of one
small kernel, twice per Service (the second run finds them cached), under cProfile: per-variant seconds and
the functions that took the time."""

import json
import os
import sys
import time
from pathlib import Path

from tritonlab.service import Service

PROBE = '''
import cProfile, io, json, os, pstats, time
import torch, triton, triton.language as tl
@triton.jit
def probe_copy(x, y, n, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y + o, tl.load(x + o, mask=o < n), mask=o < n)
x = torch.randn(1 << 16, device="cuda"); y = torch.empty_like(x)
torch.cuda.synchronize()
times = []
prof = cProfile.Profile()
prof.enable()
for b in (64, 128, 256, 512, 1024, 2048, 4096, 8192):
    s = time.perf_counter(); probe_copy[(x.numel() // b,)](x, y, x.numel(), BLOCK=b); torch.cuda.synchronize()
    times.append(round(time.perf_counter() - s, 3))
prof.disable()
out = io.StringIO(); pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(14)
lines = [l for l in out.getvalue().splitlines() if l.strip()][-16:]
print(json.dumps({"variant_s": times, "top": lines}))
'''


def main() -> None:
    home = Path(os.environ["TRITONLAB_HOME"])
    s = Service(backend="gpu")
    s.warm_up()
    report = {"layer": os.environ.get("TRITONLAB_SANDBOX", "auto"), "hardened": s.hardened, "runs": []}
    prog = home / "variant_prog.py"
    prog.write_text(PROBE)
    for _ in range(2):
        t = time.perf_counter()
        result, _ = s.run_job({"mode": "run", "file": str(prog)}, "none.json", timeout=90)
        last = (result.output or "").strip().splitlines()[-1:]
        report["runs"].append({"wall_s": round(time.perf_counter() - t, 2), "out": last, "code": result.exit_code})
        print(json.dumps(report["runs"][-1])[:3000], flush=True)
    s.close()
    Path(sys.argv[1]).write_text(json.dumps(report, indent=1))


main()
