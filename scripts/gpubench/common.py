"""What every benchmark family of `scripts/bench_gpu.py` shares: the smoke switch (CPU interpreter, tiny
sizes), the device, logging, the per-section error guard, the JSON recorder and a timer that never raises."""

from __future__ import annotations

import json
import sys
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT / "src") not in sys.path:
    sys.path.insert(0, str(ROOT / "src"))

from tritonlab.perf import bench  # noqa: E402

LOG: list[str] = []
SMOKE = False  # --smoke (set by bench_gpu.main): CPU interpreter, tiny sizes; tests the plumbing, measures nothing


def dev() -> str:
    return "cpu" if SMOKE else "cuda"


def sz(big, small):
    return small if SMOKE else big


def empty_cache(torch) -> None:
    if not SMOKE:
        torch.cuda.empty_cache()


def sync(torch) -> None:
    if not SMOKE:
        torch.cuda.synchronize()


def log(msg: str) -> None:
    line = f"[{time.strftime('%H:%M:%S')}] {msg}"
    LOG.append(line)
    print(line, flush=True)


class Recorder:
    """Writes each JSON file as soon as its section finishes, so a killed run keeps what it measured."""

    def __init__(self, out: Path, prefix: str, env: dict[str, Any]) -> None:
        self.out, self.prefix, self.env = out, prefix, env
        out.mkdir(parents=True, exist_ok=True)

    def write(self, name: str, payload: dict[str, Any]) -> Path:
        path = self.out / f"{self.prefix}-{name}.json"
        path.write_text(json.dumps({"env": self.env, **payload}, indent=1, default=str) + "\n")
        log(f"wrote {path}")
        return path


def section(fn, name: str = ""):
    """Run one section; log and record its exception instead of aborting the whole run."""
    name = name or fn.__name__

    def wrapper(*a, **k):
        t0 = time.time()
        log(f"--- {name}")
        try:
            return fn(*a, **k)
        except Exception as exc:
            log(f"!!! {name} failed: {type(exc).__name__}: {exc}")
            log(traceback.format_exc()[-3000:])
            return {"error": f"{type(exc).__name__}: {exc}"}
        finally:
            log(f"--- {name} took {time.time() - t0:.1f} s")

    return wrapper


def timed(fn, rep: float = 40, warmup: float = 10) -> dict[str, float] | dict[str, str]:
    try:
        return bench.time_ms(fn, warmup=warmup, rep=sz(rep, 5), gpu=not SMOKE)
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {str(exc)[:200]}"}


def gpu() -> bool:
    return not SMOKE


def versions_env() -> dict:
    return bench.environment()
