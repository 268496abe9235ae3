"""GPU and CPU utilisation sampled while the load runs.

GPU: `nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader,nounits` every `period` seconds
when nvidia-smi is on PATH (one line per GPU); otherwise the report says "n/a". CPU: the whole machine's busy
share between two reads of /proc/stat's first line (everything but idle and iowait), every `period` seconds:
on a shared machine that includes other people's work, which the report says.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from pathlib import Path

from ray_throughput import percentile

QUERY = ["--query-gpu=utilization.gpu,memory.used", "--format=csv,noheader,nounits"]


def cpu_times() -> tuple[int, int] | None:
    """(busy, total) jiffies since boot, from /proc/stat's aggregate line; None where it cannot be read."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()
        values = [int(v) for v in fields[1:9]]  # user nice system idle iowait irq softirq steal
    except (OSError, IndexError, ValueError):
        return None
    total = sum(values)
    return total - values[3] - values[4], total


def gpu_sample(nvidia_smi: str) -> list[tuple[float, float]] | None:
    """[(utilisation %, memory used MiB)] per GPU, or None when nvidia-smi failed or said nothing usable."""
    try:
        done = subprocess.run([nvidia_smi, *QUERY], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    rows = []
    for line in done.stdout.splitlines():
        parts = [p.strip() for p in line.split(",")]
        try:
            rows.append((float(parts[0]), float(parts[1])))
        except (IndexError, ValueError):
            continue  # "[N/A]" and the like
    return rows if done.returncode == 0 and rows else None


class Sampler:
    """A daemon thread sampling both every `period` s from start() to stop(); summary() reads the samples."""

    def __init__(self, period: float = 0.5) -> None:
        self.period = period
        self.nvidia_smi = shutil.which("nvidia-smi")
        self.cpu: list[float] = []  # busy % of the whole machine, per interval
        self.gpu: list[list[tuple[float, float]]] = []  # per sample: per GPU (util %, MiB)
        self.gpu_failures = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sampler", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)

    def _run(self) -> None:
        last = cpu_times()
        while not self._stop.wait(self.period):
            now = cpu_times()
            if last and now and now[1] > last[1]:
                self.cpu.append(100.0 * (now[0] - last[0]) / (now[1] - last[1]))
            last = now
            if self.nvidia_smi:
                rows = gpu_sample(self.nvidia_smi)
                if rows is None:
                    self.gpu_failures += 1
                else:
                    self.gpu.append(rows)

    def summary(self) -> dict:
        cpu = {
            "cores": os.cpu_count(),
            "samples": len(self.cpu),
            "busy_mean_pct": _mean(self.cpu),
            "busy_p95_pct": percentile(self.cpu, 95),
            "note": "the whole machine (/proc/stat), other work on it included",
        }
        if not self.nvidia_smi or not self.gpu:
            why = "no nvidia-smi on PATH" if not self.nvidia_smi else "nvidia-smi gave no readable sample"
            return {"cpu": cpu, "gpu": {"available": False, "reason": why, "util_mean_pct": "n/a"}}
        gpus = max(len(rows) for rows in self.gpu)
        util = [[rows[g][0] for rows in self.gpu if g < len(rows)] for g in range(gpus)]
        mem = [[rows[g][1] for rows in self.gpu if g < len(rows)] for g in range(gpus)]
        per_gpu = [
            {
                "util_mean_pct": _mean(util[g]),
                "util_p95_pct": percentile(util[g], 95),
                "util_max_pct": max(util[g]) if util[g] else None,
                "mem_max_mib": max(mem[g]) if mem[g] else None,
            }
            for g in range(gpus)
        ]
        every = [v for u in util for v in u]
        gpu = {
            "available": True,
            "gpus": gpus,
            "samples": len(self.gpu),
            "failed_samples": self.gpu_failures,
            "util_mean_pct": _mean(every),
            "util_max_pct": max(every) if every else None,
            "mem_max_mib": max((g["mem_max_mib"] or 0) for g in per_gpu),
            "per_gpu": per_gpu,
        }
        return {"cpu": cpu, "gpu": gpu}


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 1) if values else None
