"""The hardened layer's probe, run inside a fresh bubblewrap by hardening.probe(): what can learner code
actually do there? `python -m tritonlab.runs.jailprobe SPEC` prints the evidence as one JSON line; the parent
judges it (hardening.judge). On a GPU it also launches a Triton kernel inside (`cuda_check`). Standard library
only, besides torch and triton in `cuda_check`.
"""

from __future__ import annotations

import os

from tritonlab.runs import pidns, rootview
from tritonlab.runs.jail import drop_privileges, isolate_run, uncover_proc


def _can_read(path: str) -> bool:
    try:
        if os.path.isdir(path):
            os.listdir(path)
        else:
            with open(path, "rb") as f:
                f.read(1)
        return True
    except OSError:
        return False


def _can_write(folder: str) -> bool:
    target = os.path.join(folder, ".probe")
    try:
        with open(target, "w") as f:
            f.write("x")
        os.unlink(target)
        return True
    except OSError:
        return False


def _nproc_enforced(limit: int = 4, tries: int = 12) -> bool:
    """Does RLIMIT_NPROC stop forks here? (In a run's own user namespace it counts that run alone.)"""
    import resource
    import time

    before = resource.getrlimit(resource.RLIMIT_NPROC)
    resource.setrlimit(resource.RLIMIT_NPROC, (limit, before[1]))  # soft: restored below (CUDA needs threads)
    children = []
    try:
        for _ in range(tries):
            try:
                pid = os.fork()
            except OSError:
                return True
            if pid == 0:
                time.sleep(5)
                os._exit(0)
            children.append(pid)
        return False
    finally:
        for pid in children:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
        resource.setrlimit(resource.RLIMIT_NPROC, before)


def probe(spec: dict) -> dict:
    """Run inside a fresh sandbox by hardening.probe(): what can learner code actually do here?"""
    import socket
    import time

    out: dict = {}
    if spec["drop"]:
        out["proc_uncovered"] = uncover_proc()
        drop_privileges(spec["drop"])
    out["uid"] = os.getuid()
    try:
        os.setuid(0)
        out["regained_root"] = True
    except OSError:
        out["regained_root"] = False
    neighbour = os.fork()  # a process beside the run, as the zygote and the other runs are
    if neighbour == 0:
        time.sleep(60)
        os._exit(0)
    outer_pids = pidns.namespace("pid")
    try:
        out["walls"] = isolate_run(spec["run_dir"], spec["runs"]).to_json()
        out["isolated"] = True
    except OSError as exc:
        out["isolated"] = str(exc)
    out["pid_namespace"] = pidns.namespace("pid") not in ("", outer_pids)
    try:
        os.kill(neighbour, 0)  # before this run forks anything: its own namespace has pids 1 and 2 only
        out["reaches_neighbour"] = True
    except OSError:
        out["reaches_neighbour"] = False
    out["sees_pids"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
    with open("/proc/self/status") as f:
        out["cap_eff"] = next((line.split()[1] for line in f if line.startswith("CapEff")), "?")
    out["sees_data_dir"] = any(_can_read(p) for p in spec["secret"])
    out["sees_other_run"] = _can_read(spec["other_run"])
    out["mounts_of_other_runs"] = [
        point
        for _id, _parent, point in rootview.mount_table()
        if rootview.inside(point, spec["runs"])
        and point != spec["runs"]
        and not rootview.inside(point, spec["run_dir"])
    ]
    out["writes_course"] = _can_write(spec["course"])
    out["writes_run_dir"] = _can_write(spec["run_dir"])
    elsewhere = ("/", "/usr", spec["runs"], spec["other_run"], spec["home"])
    out["writes_elsewhere"] = [d for d in elsewhere if _can_write(d)]
    out["nproc_enforced"] = _nproc_enforced()
    with socket.socket() as s:
        s.settimeout(2)
        out["network"] = s.connect_ex(("127.0.0.1", spec["port"])) == 0
    out["sees_parent"] = spec["parent"] > 2 and os.path.exists(f"/proc/{spec['parent']}")
    if spec.get("cuda"):
        out["cuda"] = cuda_check(spec["run_dir"])
    return out


def between_runs(ev: dict) -> list[tuple[bool, str]]:
    """The walls between runs in the probe's evidence (issue 34), each (verified, what it is): judged by the
    parent with the hardened layer's others (hardening.judge)."""
    walls = ev.get("walls") or {}
    return [
        (
            bool(walls.get("pid") and walls.get("proc"))
            and ev.get("pid_namespace") is True
            and ev.get("reaches_neighbour") is False
            and ev.get("sees_pids") == [1, 2],
            "each run in a PID namespace of its own, with its own /proc: the worker, the warm children and the "
            "other runs have no pid there, so it can signal, trace or read none of them",
        ),
        (
            bool(walls.get("view")) and ev.get("mounts_of_other_runs") == [],
            "each run in a root of its own: its mount table lists no other run's folder or compile cache",
        ),
    ]


CUDA_PROBE_KERNEL = """
import triton
import triton.language as tl


@triton.jit
def add_one(x_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + 1, mask=mask)
"""


def cuda_check(run_dir: str) -> dict:
    """On a GPU (hardening.probe, backend gpu): after the walls above are up, as the sandbox user, can a run
    use CUDA here? torch must see the device through the bound /dev/nvidia* nodes, and a Triton kernel (compiled
    in the run directory, from a file there, as a learner's is) must launch and compute the right values.
    torch and triton are imported here only (this module is otherwise standard library only)."""
    step = "import torch"
    try:
        import importlib.util

        import torch

        step = "find a CUDA device"
        if not torch.cuda.is_available():
            return {"ok": False, "step": step, "error": "torch sees no CUDA device inside the sandbox"}
        step = "compile and launch a Triton kernel"
        os.environ.setdefault("TRITON_CACHE_DIR", os.path.join(run_dir, ".triton-cache"))
        path = os.path.join(run_dir, "cuda_probe_kernel.py")
        with open(path, "w") as f:
            f.write(CUDA_PROBE_KERNEL)
        spec = importlib.util.spec_from_file_location("cuda_probe_kernel", path)
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        spec.loader.exec_module(module)  # type: ignore[union-attr]
        x = torch.arange(1000, device="cuda", dtype=torch.float32)
        module.add_one[(8,)](x, 1000, BLOCK=128)
        torch.cuda.synchronize()
        ok = bool(torch.equal(x.cpu(), torch.arange(1000, dtype=torch.float32) + 1))
        return {
            "ok": ok,
            "step": "done" if ok else "check the kernel's values",
            "device": torch.cuda.get_device_name(0),
        }
    except Exception as exc:  # noqa: BLE001 - whatever broke, CUDA is not verified inside the sandbox
        return {"ok": False, "step": step, "error": f"{type(exc).__name__}: {exc}"[:600]}


if __name__ == "__main__":
    import json
    import sys

    print(json.dumps(probe(json.loads(sys.argv[1]))))
