"""Which backend runs learner code: the Triton interpreter on the CPU, or a real GPU.

`auto` picks `gpu` when torch sees a CUDA device and Triton can compile for it, else `interpreter`.
The probe runs in a subprocess (the CLI never imports torch itself) and only when the machine shows an
NVIDIA device at all, so machines without one decide instantly. The probe imports torch and triton and creates
a CUDA context (seconds): a positive answer is kept in `TRITONLAB_HOME/gpu-probe.json`, keyed by what could
change it (the Python, the torch and triton installs, the driver version, the device nodes,
CUDA_VISIBLE_DEVICES), so a service or check daemon starting again does not pay it; `doctor` always probes.
"""

from __future__ import annotations

import functools
import glob
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tritonlab import config

PROBE = r"""
import json, sys
out = {"cuda": False, "name": None, "capability": None, "driver": None, "triton_backend": None, "error": None}
try:
    import torch
    out["torch"] = torch.__version__
    out["cuda"] = bool(torch.cuda.is_available())
    if out["cuda"]:
        out["name"] = torch.cuda.get_device_name(0)
        out["capability"] = ".".join(map(str, torch.cuda.get_device_capability(0)))
        out["cuda_version"] = torch.version.cuda
        out["total_memory"] = int(torch.cuda.get_device_properties(0).total_memory)
    import triton
    out["triton"] = triton.__version__
    if out["cuda"]:
        target = triton.runtime.driver.active.get_current_target()
        out["triton_backend"] = f"{target.backend} {target.arch}"
except Exception as exc:
    out["error"] = f"{type(exc).__name__}: {exc}"
print(json.dumps(out))
"""


class BackendError(RuntimeError):
    pass


@dataclass(frozen=True)
class Choice:
    backend: str  # "interpreter" | "gpu"
    reason: str
    gpu: dict | None = None


def nvidia_present() -> bool:
    return bool(glob.glob("/dev/nvidia[0-9]*")) or shutil.which("nvidia-smi") is not None


PROBE_CACHE = "gpu-probe.json"


def probe_key() -> str:
    """What a GPU probe's answer depends on, found without importing torch or triton."""
    parts = [sys.executable, os.environ.get("CUDA_VISIBLE_DEVICES", ""), *sorted(glob.glob("/dev/nvidia*"))]
    for name in ("torch", "triton"):
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        origin = Path(spec.origin) if spec and spec.origin else None
        parts.append(f"{name}:{origin}:{origin.stat().st_mtime_ns if origin and origin.exists() else ''}")
    try:
        parts.append(Path("/proc/driver/nvidia/version").read_text()[:400])
    except OSError:
        parts.append("no driver file")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:24]


def _run_probe() -> dict:
    env = dict(os.environ)
    env.pop("TRITON_INTERPRET", None)
    try:
        proc = subprocess.run(
            [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120, env=env
        )
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except (subprocess.TimeoutExpired, json.JSONDecodeError, IndexError) as exc:
        return {"cuda": False, "error": f"GPU probe failed: {exc}"}


@functools.lru_cache(maxsize=1)
def probe_gpu(fresh: bool = False) -> dict:
    """Ask a subprocess whether torch sees a GPU and Triton targets it; a usable GPU's answer is reused from
    the cache file while its key holds (`fresh` probes anyway and refreshes the file)."""
    if not nvidia_present():
        return {"cuda": False, "error": None, "skipped": "no NVIDIA device on this machine"}
    path = config.home() / PROBE_CACHE
    key = probe_key()
    if not fresh:
        try:
            cached = json.loads(path.read_text())
            if (
                isinstance(cached, dict)
                and cached.get("key") == key
                and isinstance(cached.get("result"), dict)
            ):
                return cached["result"]
        except (OSError, ValueError):
            pass
    result = _run_probe()
    if result.get("cuda") and result.get("triton_backend"):
        try:
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps({"key": key, "result": result}))
            tmp.replace(path)
        except OSError:
            pass
    return result


def driver_version() -> str | None:
    if not shutil.which("nvidia-smi"):
        return None
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
        )
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else None
    except (subprocess.TimeoutExpired, OSError, IndexError):
        return None


def choose(requested: str | None = None) -> Choice:
    """Resolve `auto`/`interpreter`/`gpu` (from --backend, else TRITONLAB_BACKEND) to what will run."""
    wanted = (requested or config.default_backend()).lower()
    if wanted not in config.BACKENDS:
        raise BackendError(f"unknown backend {wanted!r}: use one of {', '.join(config.BACKENDS)}")
    if wanted == "interpreter":
        return Choice("interpreter", "asked for the interpreter")
    info = probe_gpu()
    usable = bool(info.get("cuda")) and bool(info.get("triton_backend"))
    if wanted == "gpu":
        if not usable:
            why = info.get("error") or info.get("skipped") or "torch sees no CUDA device"
            raise BackendError(
                f"--backend gpu was asked for, but no usable GPU was found ({why}). "
                "Run `tritonlab doctor` for details, or use --backend interpreter (the default without a GPU)."
            )
        return Choice("gpu", f"asked for the GPU: {info.get('name')}", info)
    if usable:
        return Choice(
            "gpu", f"auto: torch sees {info.get('name')} and Triton targets {info['triton_backend']}", info
        )
    why = info.get("skipped") or info.get("error") or "torch sees no CUDA device"
    return Choice("interpreter", f"auto: {why}, so kernels run on the Triton interpreter (CPU)", info)
