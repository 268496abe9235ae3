"""Measure Run -> first streamed line in the browser path and write docs/web-latency.md (never a timed unit test).

Target (issue 6): on the interpreter, a small kernel's first output line reaches the client within 1 s of the
Run request. The server is the real `tritonlab serve` (python -m tritonlab.web serve) in a subprocess on a
free loopback port; the client does what the page does: POST /api/exercises/<id>/run, then reads the SSE
stream until the first `output` event. The clock starts just before the POST.
Usage: python scripts/bench_web.py [--runs N]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "bench-web-token-0123456789abcdef"
TARGET_S = 1.0
PROGRAM = """import torch
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2.0, mask=mask)


x = torch.arange(4096, dtype=torch.float32)
out = torch.empty_like(x)
scale_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
print("doubled:", bool(torch.equal(out, x * 2)), flush=True)
"""


def start_server(tmp: Path) -> tuple[subprocess.Popen, str]:
    course = tmp / "course"
    course.mkdir()
    (course / "02-environment").symlink_to(ROOT / "course" / "02-environment")
    (course / "course.toml").write_text(
        'format_version = 1\nlessons = ["02-environment"]\n[title]\nen = "bench"\n'
    )
    env = dict(
        os.environ,
        TRITONLAB_HOME=str(tmp / "home"),
        TRITONLAB_WORKSPACE=str(tmp / "ws"),
        TRITONLAB_COURSE=str(course),
        TRITONLAB_BACKEND="interpreter",
        PYTHONPATH=str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""),
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "tritonlab.web", "serve", "--port", "0", "--no-browser", "--token", TOKEN],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        match = re.search(r"(http://127\.0\.0\.1:\d+)/\?token=", line)
        if match:
            return proc, match.group(1)
    raise SystemExit("the server did not start: " + proc.stdout.read())


def first_line_latency(client: httpx.Client) -> tuple[float, float]:
    """(seconds to the first output event, seconds to the end of the run)."""
    start = time.perf_counter()
    job = client.post("/api/exercises/vector-copy/run").raise_for_status().json()
    first = None
    with client.stream("GET", job["events"], timeout=60) as response:
        event = None
        for line in response.iter_lines():
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: ") and event == "output" and first is None:
                first = time.perf_counter() - start
                assert "doubled: True" in json.loads(line[6:])["text"], line
            elif event == "end":
                break
    if first is None:
        raise SystemExit("the run printed nothing")
    return first, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    opts = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="tritonlab-bench-web-"))
    proc, base = start_server(tmp)
    try:
        client = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)
        code = client.get("/api/exercises/vector-copy/code").json()
        client.put("/api/exercises/vector-copy/code", json={"text": PROGRAM, "base_version": code["version"]})
        cold = first_line_latency(client)  # the first run after start may still wait for the worker
        samples = [first_line_latency(client) for _ in range(opts.runs)]
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)
    firsts = sorted(s[0] for s in samples)
    totals = [s[1] for s in samples]
    median = statistics.median(firsts)
    p90 = firsts[min(len(firsts) - 1, round(0.9 * (len(firsts) - 1)))]
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    lines = [
        "# Web latency: Run → first streamed line (interpreter)",
        "",
        f"Measured by `python scripts/bench_web.py --runs {opts.runs}` on {dt.date.today().isoformat()}: "
        f"{os.cpu_count()} CPU cores ({cpu}), Python {platform.python_version()}, torch {metadata.version('torch')}, "
        f"triton {metadata.version('triton')}, uvicorn {metadata.version('uvicorn')}.",
        "",
        "The real server (`python -m tritonlab.web serve`, as `tritonlab serve`) runs in a subprocess on a loopback "
        "port. Each sample is what the page does when the learner presses Run: `POST /api/exercises/<id>/run`, "
        "then the SSE stream, timed from just before the POST to the arrival of the first `output` event. The "
        "program launches a small Triton kernel (4096 elements, 4 programs) on the interpreter and prints one "
        "line; the sandboxed child is forked from the warm worker, so torch and triton are already imported.",
        "",
        "| measure | seconds |",
        "|---|---|",
        f"| median, Run → first line ({opts.runs} runs) | **{median:.3f}** |",
        f"| p90 | {p90:.3f} |",
        f"| min / max | {firsts[0]:.3f} / {firsts[-1]:.3f} |",
        f"| median, Run → run finished (exit event) | {statistics.median(totals):.3f} |",
        f"| first run after the server started (not in the median) | {cold[0]:.3f} |",
        "",
        f"Target: ≤ {TARGET_S:g} s. Met: **{'yes' if median <= TARGET_S else 'no'}**.",
    ]
    out = ROOT / "docs" / "web-latency.md"
    out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
