"""The adversarial suite: each file in learners/ with its expected outcome, run through the real grader and
sandbox. Shared by tests/adversarial/test_adversarial.py (CI) and scripts/adversarial_report.py (docs).

Every bomb is bounded on its own (small caps, short timeouts), so a failed containment cannot take the machine
down. For each case: the verdict, the time it took, the time until the next check with the reference solution
passes (recovery), that no process outlived it and that no file outside the run directory changed.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tritonlab.models import Verdict
from tritonlab.runs import runfolder, sandbox, zygote
from tritonlab.runs.collect import RunResult
from tritonlab.runs.limits import Limits
from tritonlab.service import Service

HERE = Path(__file__).resolve().parent
LEARNERS = HERE / "learners"
ROOT = HERE.parent.parent
FIXTURE_COURSE = ROOT / "tests" / "fixtures" / "course"
SECRET = "canary-7f3a9c-secret"


@dataclass
class Outcome:
    verdict: Verdict | None = None
    run: RunResult | None = None
    error: str = ""  # an exception out of the service: never acceptable
    output: str = ""

    def kinds(self) -> set[str]:
        return {f.kind for f in self.verdict.failures} if self.verdict else set()

    def messages(self) -> str:
        return " | ".join(f"{f.kind}: {f.message}" for f in self.verdict.failures) if self.verdict else ""

    def summary(self) -> str:
        if self.error:
            return f"service error: {self.error}"
        if self.verdict is not None:
            if self.verdict.passed:
                return "passed"
            first = self.verdict.failures[0] if self.verdict.failures else None
            return f"fail: {first.kind}" if first else "fail (cases missing)"
        run = self.run
        assert run is not None
        if run.limits_hit:
            return f"stopped: {' and '.join(run.limits_hit)} limit ({run.folder_full or 'per-run cgroup'})"
        if run.timed_out:
            return "stopped: wall-clock timeout"
        if run.output_truncated:
            return "stopped: output cap"
        return f"exit {run.exit_code}" if run.signal is None else f"killed by signal {run.signal}"


Expect = Callable[[Outcome, "Bench"], str | None]  # a problem, or None when the outcome is as expected


def failed_with(*kinds: str) -> Expect:
    def expect(o: Outcome, bench: Bench) -> str | None:
        if o.verdict is None or o.verdict.passed:
            return f"expected a failing verdict ({'/'.join(kinds) or 'any'}), got {o.summary()}"
        if kinds and not o.kinds() & set(kinds):
            return f"expected {'/'.join(kinds)}, got {o.messages()}"
        return None

    return expect


def no_leak(base: Expect | None = None) -> Expect:
    def expect(o: Outcome, bench: Bench) -> str | None:
        if "LEAK" in o.output or SECRET in o.output:
            return "containment failed: " + next(
                line for line in o.output.splitlines() if "LEAK" in line or SECRET in line
            )
        if "refused" not in o.output:
            return "the attack did not run (no 'refused' line in its output)"
        return base(o, bench) if base else None

    return expect


def stopped(o: Outcome, bench: Bench) -> str | None:
    return (
        None if o.run is not None and o.run.timed_out else f"expected the wall-clock stop, got {o.summary()}"
    )


def fork_bomb(o: Outcome, bench: Bench) -> str | None:
    if (problem := stopped(o, bench)) is not None:
        return problem
    if bench.hardened and "refused 1" not in o.output:
        return "RLIMIT_NPROC should have refused forks inside the hardened sandbox"
    return None


def no_secret(base: Expect) -> Expect:
    def expect(o: Outcome, bench: Bench) -> str | None:
        if SECRET in o.output or (o.verdict and SECRET in json.dumps(o.verdict.to_json())):
            return "the server read a file through a planted link"
        return base(o, bench)

    return expect


def limit_hit(name: str, refused: str = "") -> Expect:
    """The run was stopped by one of its per-run limits (cgroup memory/pids, or its capped folder)."""

    def expect(o: Outcome, bench: Bench) -> str | None:
        if o.run is None:
            return f"expected a run, got {o.summary()}"
        if name not in o.run.limits_hit:
            return f"expected the {name} limit to stop it, got {o.summary()}"
        if refused and refused in o.output:
            return f"not contained: {refused!r} in its output"
        return None

    return expect


HARDENED = "needs the hardened layer (bubblewrap + unprivileged user), which this machine lacks"
NEEDS = {
    "cgroups": "needs per-run cgroups (root, or a delegated cgroup subtree), which this machine lacks",
    "run folder cap": "needs a per-run tmpfs (root), which this machine lacks",
}


@dataclass(frozen=True)
class Case:
    name: str
    file: str
    layer: str
    expect: Expect
    mode: str = "check"  # check: through Service.check and the grader; run: a program through the zygote
    timeout: float = 30.0
    needs_hardened: bool = False
    limits: dict = field(default_factory=dict)
    known_limit: str = ""  # the containment holds, but the verdict is not what it should be: why
    needs: str = ""  # a key of NEEDS: skipped (with the reason) where the machine lacks it


FORKED_MEMORY = Case(
    "three forked children past the run's memory limit (bounded: 3 × 320 MiB, limit 768 MiB)",
    "forked_memory.py",
    "per-run cgroup: one memory limit for all the run's processes",
    limit_hit("memory", refused="ALL HELD"),
    "run",
    30,
    limits={"memory_bytes": 768 << 20},
    needs="cgroups",
)
FORK_LOOP = Case(
    "fork loop (bounded: 200 processes, pids.max 24)",
    "fork_loop.py",
    "per-run cgroup: pids.max",
    limit_hit("processes", refused="refused: never"),
    "run",
    20,
    limits={"pids": 24, "processes": 4096},  # RLIMIT_NPROC far above: only pids.max can stop it
    needs="cgroups",
)
FILE_FLOOD = Case(
    "300k files in the run folder (bounded)",
    "file_flood.py",
    "capped run folder: its own tmpfs (nr_inodes, size); the parent stops a run whose folder is full",
    limit_hit("run folder", refused="refused: never"),
    "run",
    30,
    needs="run folder cap",
)

KERNEL_NEVER_RETURNS = Case(
    "a kernel that never returns (spins on a flag nothing sets)",
    "kernel_spins_forever.py",
    "wall-clock timeout; the run's whole process tree is killed (on a GPU that frees its context)",
    failed_with("timeout"),
    timeout=3,
)
GPU_MEMORY_HOG = Case(
    "4 GiB of GPU memory under a 2 GiB soft cap",
    "gpu_memory_hog.py",
    "soft GPU memory cap: torch's allocator (set_per_process_memory_fraction)",
    failed_with(),
    timeout=60,
)
GPU_MEMORY_RAW = Case(
    "6 GiB of GPU memory from the CUDA driver, around torch's 2 GiB soft cap",
    "gpu_memory_raw.py",
    "the GPU memory line: the driver's count per run's process tree (runs/gpu_memory.py)",
    failed_with("crash"),
    timeout=60,
)

CASES = [
    Case(
        "fork bomb (bounded: 2^7 processes)",
        "fork_bomb.py",
        "hardened: RLIMIT_NPROC per run; always: wall clock + whole-tree kill",
        fork_bomb,
        "run",
        5,
        limits={"processes": 32},
    ),
    Case("infinite loop", "infinite_loop.py", "wall-clock timeout", failed_with("timeout"), timeout=3),
    KERNEL_NEVER_RETURNS,
    Case(
        "memory bomb (bounded: 6 GiB)",
        "memory_bomb.py",
        "address-space limit (RLIMIT_AS)",
        failed_with("exception", "crash"),
    ),
    Case(
        "gigabytes of output (bounded: 2 GiB)", "output_flood.py", "output cap (1 MiB)", failed_with("crash")
    ),
    Case(
        "filling the disk (bounded: 1 GiB)",
        "disk_flood.py",
        "file-size limit (RLIMIT_FSIZE)",
        failed_with("exception", "crash"),
    ),
    Case(
        "reading outside the run dir (progress DB, ~/.ssh)",
        "read_outside.py",
        "hardened: private mount namespace, unprivileged user",
        no_leak(),
        needs_hardened=True,
    ),
    Case(
        "writing outside the run dir",
        "write_outside.py",
        "hardened: read-only binds, per-run mount namespace",
        no_leak(),
        needs_hardened=True,
    ),
    Case(
        "planting symlinks and FIFOs (CVE-2024-28185)",
        "plant_symlinks.py",
        "parent reads its own log fd; run dir sanitized; rmtree never follows",
        no_secret(failed_with()),
    ),
    Case(
        "socket to the local server",
        "socket_to_server.py",
        "hardened: network namespace",
        no_leak(),
        "run",
        10,
        needs_hardened=True,
    ),
    Case(
        "grandchild escaping with setsid",
        "setsid_escape.py",
        "child subreaper + kill_tree by /proc links",
        stopped,
        "run",
        3,
    ),
    Case(
        "killing the parent (the zygote)",
        "kill_parent.py",
        "PID namespace per run: its parent is its own init, which takes no signal from it (else: the "
        "server restarts the worker, and checks in flight are graded again)",
        # In a PID namespace of its own the run cannot reach the zygote: it finishes and is judged like any
        # file that launches nothing. Without one it dies with its worker (crash/exception). Either way it
        # never passes, and the next case proves the server has a working worker.
        failed_with("crash", "exception", "no-kernel-launch"),
    ),
    Case(
        "killing the server",
        "kill_server.py",
        "hardened: PID namespace (server invisible)",
        no_leak(),
        needs_hardened=True,
    ),
    Case("os._exit mid-check", "exit_mid_check.py", "verdict from missing cases", failed_with()),
    Case("SIGSEGV", "segfault.py", "separate process per run", failed_with("crash")),
    Case(
        "out-of-bounds store (heap corruption)",
        "oob_store.py",
        "separate process per run",
        failed_with("crash", "wrong-result", "out-of-bounds-write", "exception"),
    ),
    Case(
        "kernel that never returns",
        "kernel_never_returns.py",
        "wall-clock timeout",
        failed_with("timeout"),
        timeout=4,
    ),
    Case(
        "patching the grader from inside", "patch_grader.py", "judging happens in the parent", failed_with()
    ),
    Case("NaN/Inf outputs", "nan_inf.py", "float64 reference comparison", failed_with("wrong-result")),
    Case(
        "returning the inputs",
        "return_inputs.py",
        "contract: output must be a new tensor + launch check",
        failed_with(),
    ),
    Case("monkeypatching torch", "patch_torch.py", "judging happens in the parent", failed_with()),
    Case(
        "reading the reference solution (open, import by path)",
        "read_solution.py",
        "hardened: solution.py covered by an empty bind; basic: audit hook refuses Python opens",
        no_leak(),
        "run",
        20,
    ),
    FORKED_MEMORY,
    FORK_LOOP,
    FILE_FLOOD,
    Case(
        "forging the harness telemetry",
        "forge_result.py",
        "none: telemetry comes from the learner's process",
        failed_with(),
        known_limit="the launch/torch-op telemetry is recorded inside the learner's own process, "
        "so a run can forge it (values are still checked against the parent's reference): a host-computed "
        "answer with forged telemetry passes",
    ),
]


@dataclass
class Record:
    case: Case
    outcome: Outcome
    seconds: float
    recovery_s: float
    recovered: bool
    changed: list[str]
    leftover: int
    problem: str | None

    @property
    def ok(self) -> bool:
        return (
            self.problem is None
            and self.recovered
            and not self.changed
            and not self.outcome.error
            and not self.leftover
        )

    def problems(self) -> list[str]:
        out = [self.problem] if self.problem else []
        out += [f"service raised {self.outcome.error}"] if self.outcome.error else []
        out += [] if self.recovered else ["the next check with the reference solution did not pass"]
        out += [f"files outside the run dir changed: {self.changed}"] if self.changed else []
        out += [f"{self.leftover} process(es) outlived the run"] if self.leftover else []
        return out


class Bench:
    """A Service on the fixture course, with canaries outside every run dir and a listening loopback port."""

    def __init__(self, root: Path, backend: str = "interpreter") -> None:
        self.root = root
        self.token = secrets.token_hex(3)  # names and keys of this bench's own (IPC) objects: `__TOKEN__`
        self.canary_dir = root / "canary"
        self.canary_dir.mkdir(parents=True)
        self.canary = self.canary_dir / "secret.txt"
        self.canary.write_text(SECRET + "\n")
        self.canary.chmod(0o644)
        self.service = Service(course_dir=FIXTURE_COURSE, workspace_dir=root / "ws", backend=backend)
        self.exercise = self.service.exercise("vector-copy")
        self.service.learner_file(self.exercise)  # the workspace exists, and is protected
        self.service.store.record_attempt(
            {"exercise": "vector-copy", "passed": False, "backend": "interpreter"}
        )
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(8)
        self.zygote = self.service.zygote()
        self.zygote.wait_ready()
        self.hardened = bool(self.service.hardened)

    def close(self) -> None:
        self.listener.close()
        self.service.close()

    def materialize(self, case: Case) -> Path:
        text = (LEARNERS / case.file).read_text()
        for token, value in {
            "__DATABASE__": self.service.store.path,
            "__CANARY__": self.canary,
            "__CANARY_DIR__": self.canary_dir,
            "__COURSE__": FIXTURE_COURSE,
            "__WORKSPACE__": self.service.workspace.root,
            "__RUNS__": sandbox.config.runs_dir(),
            "__PORT__": self.listener.getsockname()[1],
            "__SERVER_PID__": os.getpid(),
            "__TOKEN__": self.token,
            "__HOME__": Path.home(),
            "__SOLUTION__": self.exercise.solution,
            "__COURSE_SOLUTION__": next(iter(sorted(sandbox.config.course_dir().rglob("solution.py"))), ""),
        }.items():
            text = text.replace(token, str(value))
        target = self.root / "learners" / case.file
        target.parent.mkdir(exist_ok=True)
        target.write_text(text)
        return target

    def snapshot(self) -> dict[str, str]:
        found = {}
        for top in (
            self.canary_dir,
            FIXTURE_COURSE,
            self.service.workspace.root,
            self.service.store.path.parent,
        ):
            paths = [top] if top.is_file() else [p for p in top.rglob("*") if "runs" not in p.parts]
            for path in paths:
                if path.is_file() and not path.is_symlink() and "triton-cache" not in path.parts:
                    data = path.read_bytes() if path.stat().st_size < 50 << 20 else b""
                    found[str(path)] = hashlib.sha256(data).hexdigest()
                elif path.is_symlink():
                    found[str(path)] = "symlink"
        return found

    def missing(self, case: Case) -> str:
        """Why this machine cannot run `case` ("" when it can)."""
        from tritonlab.runs import runfolder

        if case.needs_hardened and not self.hardened:
            return f"{HARDENED} ({self.service.hardened_reason})"
        if case.needs == "cgroups" and not self.zygote.run_cgroups:
            return NEEDS["cgroups"]
        if case.needs == "run folder cap" and not runfolder.wanted():
            return NEEDS["run folder cap"]
        return ""

    def processes(self) -> int:
        z = self.service.zygote()
        return len(zygote.descendants(z.proc.pid))

    def attack(self, case: Case, file: Path) -> Outcome:
        outcome = Outcome()
        try:
            if case.mode == "check":
                outcome.verdict = self.service.check(
                    self.exercise, file=file, record=False, seed=7, timeout=case.timeout
                )
                outcome.output = outcome.verdict.output
            else:
                limits = Limits(wall_seconds=case.timeout, cpu_seconds=int(case.timeout) + 5, **case.limits)
                run_dir = runfolder.new_run_dir()
                try:
                    (run_dir / "job.json").write_text(
                        json.dumps({"mode": "run", "file": str(file), "argv": []})
                    )
                    outcome.run = self.service.zygote().start(run_dir, limits).wait()
                finally:
                    runfolder.remove_run_dir(run_dir)
                outcome.output = outcome.run.output
        except Exception as exc:  # noqa: BLE001 - recorded as a failure of the case
            outcome.error = f"{type(exc).__name__}: {exc}"
        return outcome

    def run(self, case: Case) -> Record:
        file = self.materialize(case)
        baseline = self.processes()
        before = self.snapshot()
        started = time.monotonic()
        outcome = self.attack(case, file)
        seconds = time.monotonic() - started
        problem = case.expect(outcome, self)
        recovered = False
        try:
            check = self.service.check(self.exercise, file=self.exercise.solution, record=False, timeout=60)
            recovered = check.passed
        except Exception:  # noqa: BLE001 - not recovered
            pass
        recovery = time.monotonic() - started - seconds
        deadline = time.monotonic() + 10
        while (leftover := max(0, self.processes() - baseline)) and time.monotonic() < deadline:
            time.sleep(0.2)
        after = self.snapshot()
        changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
        return Record(case, outcome, seconds, recovery, recovered, changed, leftover, problem)


MODES = ("basic", "auto")  # TRITONLAB_SANDBOX values every attack runs under (docs/testing.md)


def bench_in_mode(mode: str, root: Path) -> Iterator[Bench]:
    """A Bench whose service runs with TRITONLAB_SANDBOX=`mode` (basic: what a machine without bubblewrap gets;
    auto: hardened where the probe passes) and a home under `root`; the environment is restored after."""
    keys = ("TRITONLAB_HOME", "TRITONLAB_BACKEND", "TRITONLAB_WORKSPACE", "TRITONLAB_SANDBOX")
    saved = {k: os.environ.get(k) for k in keys}
    os.environ["TRITONLAB_HOME"] = str(root / "home")
    os.environ["TRITONLAB_BACKEND"] = "interpreter"
    os.environ["TRITONLAB_SANDBOX"] = mode
    os.environ.pop("TRITONLAB_WORKSPACE", None)
    try:
        bench = Bench(root)
        try:
            yield bench
        finally:
            bench.close()
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
