"""GPU and CPU utilisation sampled while the load runs.

GPU: `nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader,nounits` every `period` seconds
when nvidia-smi is on PATH (one line per GPU); otherwise the report says "n/a". CPU: the whole machine's busy
share between two reads of /proc/stat's first line (everything but idle and iowait), every `period` seconds:
on a shared machine that includes other people's work, which the report says.

Where the CPU went (`cpu_split`): at start() and stop() every process's CPU times are read from /proc/PID/stat,
and the difference is split into the server's own process (HTTP, event streams, judging, cases made ahead),
its process tree below it (the zygotes and every run they reaped: check children, replays, compiles, ptxas;
a process's reaped children count in its `cutime`), this script's own process (the learners' clients), and
the rest of the machine (everything else: other work, and a Ray cluster's workers, which are not below the
server). Core-seconds, so dividing by the checks judged gives what one check cost.

The processes below the server are split further by what they are (`below`): `zygote` (the zygotes' own
work: forking, the protocol, reaping), `runs_ended` (what the zygotes reaped: every run that ended, its warm
start ahead of the job included, and warm children that died unused), `runs_alive` (processes below a zygote
still alive at the read: runs in flight, warm children waiting for a job) and `other` (everything else below
the server: bubblewrap's own processes, compile workers), with the commands that used most of it. A run alive
at start() and ended by stop() moves from one kind to another, so the kinds are exact only in sum.
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


def process_table() -> dict[int, tuple[int, float, float]]:
    """{pid: (ppid, own CPU s, reaped children's CPU s)} for every process /proc shows now."""
    tick = os.sysconf("SC_CLK_TCK")
    table = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            raw = Path(entry.path, "stat").read_text()
            rest = raw[raw.rindex(")") + 2 :].split()  # after "pid (comm) ": state ppid ... utime stime ...
            ppid, own = int(rest[1]), (int(rest[11]) + int(rest[12])) / tick
            table[int(entry.name)] = (ppid, own, (int(rest[13]) + int(rest[14])) / tick)
        except (OSError, ValueError, IndexError):
            continue  # it ended while we read
    return table


ZYGOTE = "tritonlab.runs.zygote"  # in a zygote's command line (`python -m tritonlab.runs.zygote BACKEND`)


def command_of(pid: int) -> str:
    """A process's command line, NULs as spaces ("" once it ended)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def is_zygote(command: str) -> bool:
    """A zygote's own process: Python running the zygote's module (not bubblewrap, whose command line names it
    too, and not its forks below it, which are found by where they are)."""
    words = command.split()
    if "-m" not in words[:-1] or not Path(words[0]).name.startswith("python"):
        return False
    return words[words.index("-m") + 1] == ZYGOTE


def short_command(command: str) -> str:
    """What a process is, for a report: its program's name and, for `python -m`, the module."""
    words = command.split()
    if not words:
        return "?"
    name = Path(words[0]).name
    if name.startswith("python") and "-m" in words[:-1]:
        return f"{name} -m {words[words.index('-m') + 1]}"
    return name


def tree_cpu(root: int | None) -> dict:
    """CPU seconds so far: `server` (root's own), `tree` (every live process below it, own and reaped, plus
    what root reaped), `client` (this process), `machine` (every core's busy time since boot), and `below`:
    `tree` by kind (the module's docstring) with `other_by_command`."""
    table = process_table()
    below = 0.0
    kinds = {"zygote": 0.0, "runs_ended": 0.0, "runs_alive": 0.0, "other": 0.0}
    other: dict[str, float] = {}
    if root is not None and root in table:
        children: dict[int, list[int]] = {}
        for pid, (ppid, _own, _reaped) in table.items():
            children.setdefault(ppid, []).append(pid)
        todo = [(pid, False) for pid in children.get(root, [])]  # (pid, below a zygote)
        while todo:
            pid, in_run = todo.pop()
            _ppid, own, reaped = table[pid]
            below += own + reaped
            zygote = not in_run and is_zygote(command_of(pid))
            if zygote:
                kinds["zygote"] += own
                kinds["runs_ended"] += reaped
            elif in_run:
                kinds["runs_alive"] += own + reaped
            else:
                kinds["other"] += own + reaped
                name = short_command(command_of(pid))
                other[name] = other.get(name, 0.0) + own + reaped
            todo += [(child, in_run or zygote) for child in children.get(pid, [])]
        kinds["other"] += table[root][2]  # what the server itself reaped (ended compile workers and the like)
        if table[root][2]:
            other["(ended, reaped by the server)"] = table[root][2]
    own_times = os.times()
    busy = cpu_times()
    return {
        "server": table[root][1] if root in table else 0.0,
        "tree": below + (table[root][2] if root in table else 0.0),
        "client": own_times.user + own_times.system,
        "machine": busy[0] / os.sysconf("SC_CLK_TCK") if busy else 0.0,
        "below": {**kinds, "other_by_command": other},
    }


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

    def __init__(self, period: float = 0.5, server_pid: int | None = None) -> None:
        self.period = period
        self.server_pid = server_pid  # whose process tree cpu_split measures (None: only client and machine)
        self._tree: list[dict[str, float]] = []  # tree_cpu() at start() and at stop()
        self.nvidia_smi = shutil.which("nvidia-smi")
        self.cpu: list[float] = []  # busy % of the whole machine, per interval
        self.gpu: list[list[tuple[float, float]]] = []  # per sample: per GPU (util %, MiB)
        self.gpu_failures = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sampler", daemon=True)

    def start(self) -> None:
        self._tree = [tree_cpu(self.server_pid)]
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)
            self._tree.append(tree_cpu(self.server_pid))

    def cpu_split(self) -> dict | None:
        """Core-seconds from start() to stop(): the server's process, the processes below it, this script, the
        rest of the machine; None unless both ends were read."""
        if len(self._tree) != 2:
            return None
        first, last = self._tree
        split: dict = {k: round(max(0.0, last[k] - first[k]), 1) for k in first if k != "below"}
        split["rest"] = round(
            max(0.0, split["machine"] - split["server"] - split["tree"] - split["client"]), 1
        )
        a, b = first["below"], last["below"]
        below: dict = {k: round(b[k] - a[k], 1) for k in ("zygote", "runs_ended", "runs_alive", "other")}
        commands = {
            name: round(b["other_by_command"].get(name, 0.0) - a["other_by_command"].get(name, 0.0), 1)
            for name in set(a["other_by_command"]) | set(b["other_by_command"])
        }
        below["other_by_command"] = dict(sorted(commands.items(), key=lambda kv: -kv[1])[:6])
        split["below"] = below
        return split

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
            "split_core_s": self.cpu_split(),
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
