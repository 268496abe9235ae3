"""This GPU's measured ceilings: device-to-device copy bandwidth and dense bf16 matmul rate.

Datasheet numbers are leads, not limits: a kernel is judged against what this card actually does. The two
ceilings are measured once per GPU (keyed by its name) and cached in ``peaks.json`` in tritonlab's data
directory (``$TRITONLAB_HOME`` or the platform's user data dir):

* ``copy_gbps`` — a 2 GiB device-to-device copy (``dst.copy_(src)``), counting bytes read plus written;
* ``matmul_bf16_tflops`` — ``torch.matmul`` on random 8192×8192 bf16 matrices (cuBLAS), 2·8192³ FLOPs,
  after a one-second warm-up (a cold card times about 10% low while its clocks ramp up).

Nothing here imports torch at module import; measuring needs a CUDA GPU.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

CACHE_FILE = "peaks.json"


def data_dir() -> Path:
    """tritonlab's data directory (``$TRITONLAB_HOME``, else the platform's user data dir)."""
    try:
        from tritonlab.config import home

        return home()
    except ImportError:  # platformdirs missing (bare GPU images): the XDG default
        env = os.environ.get("TRITONLAB_HOME")
        if env:
            return Path(env).expanduser()
        return Path(os.environ.get("XDG_DATA_HOME", Path.home() / ".local" / "share")) / "tritonlab"


def cache_path() -> Path:
    return data_dir() / CACHE_FILE


def load_cache(path: Path | None = None) -> dict[str, dict[str, Any]]:
    """All cached peaks, ``{gpu_name: {...}}``; an absent or unreadable file gives ``{}``."""
    path = path or cache_path()
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def save_peaks(gpu_name: str, peaks: dict[str, Any], path: Path | None = None) -> Path:
    """Store ``peaks`` for ``gpu_name``, keeping the other GPUs' entries; returns the file written."""
    path = path or cache_path()
    data = load_cache(path)
    data[gpu_name] = peaks
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    tmp.replace(path)
    return path


def cached_peaks(gpu_name: str, path: Path | None = None) -> dict[str, Any] | None:
    """The cached peaks of ``gpu_name``, or None."""
    entry = load_cache(path).get(gpu_name)
    return entry if isinstance(entry, dict) and "copy_gbps" in entry else None


def measure_peaks() -> dict[str, Any]:
    """Measure copy bandwidth and bf16 matmul rate on the current CUDA device (takes a few seconds)."""
    import torch
    from triton.testing import do_bench

    n = 2**28  # 2^28 fp32 = 1 GiB per buffer, far beyond L2

    def copy_ms() -> float:
        src = torch.randn(n, device="cuda")
        dst = torch.empty_like(src)
        return do_bench(lambda: dst.copy_(src), warmup=100, rep=500, return_mode="median")

    def matmul_ms() -> float:
        a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
        return do_bench(lambda: torch.matmul(a, b), warmup=1000, rep=1000, return_mode="median")

    c_ms, mm_ms = copy_ms(), matmul_ms()
    torch.cuda.empty_cache()
    return {
        "copy_gbps": 2 * n * 4 / (c_ms * 1e-3) / 1e9,
        "copy_method": "torch dst.copy_(src), 2^28 fp32 (1 GiB), bytes read + written, do_bench median",
        "matmul_bf16_tflops": 2 * 8192**3 / (mm_ms * 1e-3) / 1e12,
        "matmul_method": "torch.matmul bf16 8192^3 on randn inputs, do_bench median",
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def get_peaks(refresh: bool = False, path: Path | None = None) -> dict[str, Any]:
    """Peaks of the current GPU: from the cache, or measured now (and cached) if absent or ``refresh``."""
    import torch

    name = torch.cuda.get_device_name()
    if not refresh:
        hit = cached_peaks(name, path)
        if hit is not None:
            return {**hit, "gpu": name, "cached": True}
    peaks = measure_peaks()
    save_peaks(name, peaks, path)
    return {**peaks, "gpu": name, "cached": False}
