"""A check, end to end, as one object: `CheckRun`, whose call takes the steps in this order.

    cases → job → run → read → judge → replay → record → show → speed

1. cases    (cases.py)   the contract's cases for the seed, numpy only, made ahead when they could be
2. job      (job.py)     a run directory: a snapshot of the graded text, the inputs as .npy, job.json
3. run      (run.py)     the check child from the zygote, under the run's limits; the trusted compile
                         (trusted_compile.py) starts beside it for the contracts that have one; on a GPU
                         the precompile of the previous check's kernel variants into the replay's cache,
                         copied into the learner's, goes first (precompile.py)
4. read     (read.py)    result.json, the output arrays and the launch records, read as hostile data
5. judge    (judge.py)   every case against the float64 reference, in the parent; started beside step 6
                         on a copy of the result (`EarlyJudge`) and kept unless the replay changed it
6. replay   (replay.py)  the recorded launches alone, in a fresh child that never imports the learner's file;
                         its launches kept for the next check's precompile
7. record   \
8. show      } the caller's: grading imports neither store/ nor perf/. `CheckRun` leaves them empty; the
9. speed    /  service's check (service/check.py) saves the attempt, then shows it, then times a passing
               GPU check and adds the speed to the saved attempt: nothing is shown that is not saved

Steps 1-6 run inside `queued()`, the caller's place in its queue (the service's fair gate: a check holds one
slot while it is graded, none while it is saved, shown or timed). `check()` is the grading alone, for a caller
with no queue and no store (the tests call it directly; the interfaces go through the service).
"""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Callable
from pathlib import Path

from tritonlab import config
from tritonlab.grading import contracts
from tritonlab.grading.check import cases, job, judge, precompile, read, replay, run
from tritonlab.grading.check.failures import malformed_failure
from tritonlab.grading.check.host import host_policy
from tritonlab.grading.check.trusted_compile import TrustedCompile
from tritonlab.models import CaseResult, Exercise, Verdict
from tritonlab.runs import caches, launchers, rundir, runfolder, sandbox
from tritonlab.runs.collect import Run


class CheckRun:
    """One check of one file against one exercise. Call it once: it returns the verdict (also `self.verdict`).

    `source`: the text to grade (what a request sent), else the file's text as read now, graded under the
    file's name. `huge_cases` (GPU only): the contract's ≥ 2³¹-element cases too. `cache`: the learner's compile
    cache, for the run of their code (the replay and the trusted compile use the replay's: runs/caches.py).
    `keep_run_dir`: leave the check child's directory for a test to read.

    `precompile_target`: None compiles the replay's kernels ahead on a GPU only (for the device); a target
    such as "cuda:90" does it on any backend, for that target (tests on a machine without a GPU).
    `compiled_ahead`: the caller's compile ahead of a save already compiled this very text (service/ahead.py):
    no precompile is started."""

    precompile_target: str | None = None
    compiled_ahead = False  # the caller compiled this text's stored variants already (service/ahead.py)

    def __init__(
        self,
        exercise: Exercise,
        file: Path,
        backend: str,
        zygote: sandbox.Zygote,
        *,
        seed: int | None = None,
        timeout: float = 120.0,
        on_output: Callable[[str], None] | None = None,
        on_start: Callable[[Run], None] | None = None,
        keep_run_dir: bool = False,
        source: str | None = None,
        huge_cases: bool = False,
        cache: str = caches.LEARNER,
    ) -> None:
        # the child runs in its own directory: a relative path would not resolve there
        self.exercise, self.file, self.backend, self.zygote = exercise, Path(file).resolve(), backend, zygote
        self.seed = seed
        self.timeout, self.on_output, self.on_start = timeout, on_output, on_start
        self.keep_run_dir, self.source, self.huge_cases, self.cache = keep_run_dir, source, huge_cases, cache
        # set when steps 1-6 ran to the end: only a graded check is recorded, shown and timed
        self.graded = False
        self.verdict: Verdict | None = None

    def __call__(self) -> Verdict:
        with self.queued():
            self.grade()
        if self.graded:
            self.record(self.verdict)
            self.show(self.verdict)
            self.speed(self.verdict)
        return self.verdict

    # ---- the caller's steps (service/check.py fills them in) ---------------------------------------------

    def queued(self) -> contextlib.AbstractContextManager:
        """Wait for a place in the caller's queue; held while steps 1-6 run."""
        return contextlib.nullcontext()

    def record(self, verdict: Verdict) -> None:
        """7. Save the attempt (nothing here: grading has no store)."""

    def show(self, verdict: Verdict) -> None:
        """8. Hand the verdict to whoever shows it, after it was saved."""

    def speed(self, verdict: Verdict) -> None:
        """9. Time a passing GPU check and add the speed to the saved attempt (perf/ is the caller's)."""

    # ---- steps 1-6: the grading ---------------------------------------------------------------------------

    def grade(self) -> Verdict:
        """Steps 1-6: the verdict, in `self.verdict`; `graded` is set once it is complete."""
        self.started = time.monotonic()
        self.make_cases()  # 1
        verdict = self.verdict
        # a warm child may be bound to the run directory already
        self.run_dir, warm = self.zygote.new_run_dir(cache=self.cache)
        verdict.timings["check_warm_child"] = warm
        self.graded_file = self.file  # the file the child imports: the snapshot, when there is a text
        self.compiling: TrustedCompile | None = None
        self.precompiling: precompile.PrecompileAndCopy | None = None
        try:
            self.write_job()  # 2
            self.run_child()  # 3, with the trusted compile beside it
            try:
                self.read_result()  # 4
                early = self.judge_early()  # 5, started beside 6 on a copy of the result ...
                self.replay()  # 6
                self.judge(early)  # ... and settled once 6 is done
            except rundir.Malformed as problem:
                verdict.failures = [malformed_failure(problem)]
                verdict.cases = [CaseResult(c.name, False) for c in self.cases]
                self.result = {}
            self.judge_compile()  # 5, the trusted compile's case
            if self.graded_file != self.file:
                job.rename_in_verdict(verdict, self.graded_file, self.file)
        finally:
            if self.compiling is not None:
                self.compiling.stop()  # a check that raised or was stopped: never leave the compile running
            if self.precompiling is not None:
                self.precompiling.stop()
            if not self.keep_run_dir:
                runfolder.remove_run_dir(self.run_dir)
        verdict.duration_s = time.monotonic() - self.started
        self.graded = True
        return verdict

    def make_cases(self) -> None:
        """1. The text (unless one was given), the seed (drawn unless given), the contract's cases, and the
        verdict they are judged into; `timings` (in the verdict JSON) says where the check's time went."""
        if self.source is None:
            self.source = job.read_source(self.file)
        self.seed = int(self.seed if self.seed is not None else random.SystemRandom().randrange(1, 2**31))
        self.contract = contracts.get(self.exercise.id)
        self.cases = cases.cases(self.contract, self.exercise.id, self.backend, self.seed, self.huge_cases)
        self.verdict = Verdict(
            exercise=self.exercise.id, backend=self.backend, seed=self.seed, file=str(self.file)
        )
        self.verdict.timings["cases_s"] = time.monotonic() - self.started

    def write_job(self) -> None:
        """2. The snapshot of the graded text, the inputs and job.json in the run directory."""
        if self.source is not None:
            self.graded_file = job.snapshot(self.run_dir, self.file, self.source)
        job.write_job(
            self.exercise,
            self.graded_file,
            self.backend,
            self.cases,
            self.run_dir,
            getattr(self.contract, "ARG_NAMES", None),
            search_dir=self.file.parent if self.graded_file != self.file else None,
        )
        timings = self.verdict.timings
        timings["write_job_s"] = time.monotonic() - self.started - timings["cases_s"]

    def run_child(self) -> None:
        """3. The check child; the trusted compile reads only the text, never the check's results, so it runs
        beside it (on the interpreter a second process on another core; judged only when the check ran)."""
        if hasattr(self.contract, "compile_items"):
            self.compiling = TrustedCompile(
                self.contract, self.file, self.source, self.backend, self.zygote, self.timeout
            )

        self.precompile_first()

        def started(handle: Run) -> None:
            if self.on_start:
                self.on_start(handle)

        self.share_launchers()
        limits = run.run_limits(self.backend, self.timeout, self.cases)
        counting = self.precompiles() and (
            self.precompiling is None or not self.precompiling.thread.is_alive()
        )
        before = caches.kernel_count(self.cache, self.zygote.hardened) if counting else None
        self.run_result = run.run(
            self.zygote, self.run_dir, limits, self.verdict.timings, started, self.on_output
        )
        self.verdict.output = self.run_result.output
        if before is not None:  # kernels the check child compiled itself (a precompile that matched: none)
            after = caches.kernel_count(self.cache, self.zygote.hardened)
            if after is not None:
                self.verdict.timings["check_compiled"] = max(0, after - before)

    def share_launchers(self) -> None:
        """3, before the check child: the host launchers trusted runs built in the replay's cache, copied into the
        learner's where it lacks them (runs/launchers.py `share_launchers`), so that the child's first launch of a
        kernel whose argument signature the class met before does not build its launcher with the C compiler.
        A GPU run only: the interpreter launches no compiled kernel."""
        if self.backend != "gpu" or self.cache == caches.REPLAY:
            return
        try:
            shared = launchers.share_launchers(
                caches.folder(caches.REPLAY, self.zygote.hardened),
                caches.folder(self.cache, self.zygote.hardened),
            )
        except (OSError, ValueError):
            return
        self.verdict.timings["launchers_shared"] = shared

    def precompiles(self) -> bool:
        return not precompile.why_not(self.contract, self.backend, self.precompile_target)

    def precompile_first(self) -> None:
        """3, before the check child: the kernels of the variants the replay of the learner's previous check of
        this exercise launched (edited code almost always launches the same ones) compiled into the replay's
        cache by a trusted child, then copied into the learner's own (precompile.py), so that the check child's
        launches and the replay's find them: one compile for both. A first check has no previous variants: the
        child predicts them from the reference solution on this check's cases (replay/predict.py). Waited for
        at most FIRST_WAIT_S; past that the check child starts and the precompile goes on beside it, for the
        replay."""
        if not self.precompiles():
            return
        if self.compiled_ahead:
            self.verdict.timings["precompile_skipped"] = "compiled ahead"
            return
        wanted = precompile.VariantStore().load(self.cache, self.exercise.id)
        first = None
        if not wanted and config.predict_enabled():
            first = precompile.FirstCheck.of(self.exercise, self.run_dir)
        if not wanted and first is None:
            return
        self.precompiling = precompile.PrecompileAndCopy(
            self.zygote,
            self.source,
            self.file,
            wanted,
            self.backend,
            self.timeout,
            self.precompile_target,
            self.cache,
            first,
        )
        mark = time.monotonic()
        self.precompiling.thread.join(precompile.FIRST_WAIT_S)
        self.verdict.timings["precompile_first_wait_s"] = round(time.monotonic() - mark, 3)

    def read_result(self) -> None:
        """4. The child's result and outputs, vetted; the exercise's host policy; the launches to replay."""
        self.result = read.read_result(self.run_dir, read.output_budget(self.cases))
        run.child_seconds(
            self.verdict.timings,
            "check_child",
            [e.get("seconds") for e in self.result.get("cases", []) if isinstance(e, dict)],
        )
        self.policy = host_policy(self.exercise)
        read.attach_replayed_launches(self.contract, self.cases, self.result, self.run_dir)
        self.neighbour_took_the_gpu()

    def neighbour_took_the_gpu(self) -> None:
        """A case whose GPU allocation was refused, while the GPU memory line ended another run of this machine
        (runs/gpu_memory.py: past its line, so it held far more than its share), failed for that run, not for
        this code: the attempt is graded again (grading/retry.py), once. The refusal is the child's report, but
        the other run's end is the parent's own reading, so a file cannot ask for a second attempt alone."""
        if not self.run_result.gpu_neighbour_ended:
            return
        refused = any(
            isinstance(entry, dict)
            and isinstance(entry.get("exception"), dict)
            and entry["exception"].get("type") == "OutOfMemoryError"
            for entry in self.result.get("cases", [])
        )
        fault = getattr(self.zygote, "fault", None)
        if refused and fault is not None:
            fault(
                "a GPU allocation was refused while the GPU memory line ended another run that held the GPU"
            )

    def judge_all(self, into: Verdict, outcome: dict) -> None:
        judge.judge_all(
            into,
            self.contract,
            self.cases,
            outcome,
            self.run_result,
            self.graded_file,
            self.exercise.function,
            self.policy,
        )

    def judge_early(self) -> judge.EarlyJudge | None:
        """5, started before 6: judged on a copy while the replay runs (None when nothing is replayed)."""
        if self.source is None or self.run_result.timed_out:
            return None
        return judge.EarlyJudge(self.judge_all, self.verdict, self.result)

    def replay(self) -> None:
        """6. The recorded launches alone, compared with what the function returned."""
        if self.source is None or self.run_result.timed_out:
            return
        if self.precompiling is not None and self.result.get("import_error"):
            self.precompiling.stop()  # nothing will be replayed
        elif self.precompiling is not None:  # its kernels are the replay's: wait for them, then replay
            self.precompiling.replay_ready(self.verdict.timings)
        mark = time.monotonic()
        launched = replay.replay_cases(
            self.contract,
            self.cases,
            self.result,
            self.run_dir,
            self.source,
            self.file,
            self.backend,
            self.zygote,
            self.timeout,
            self.verdict.timings,
            self.policy,
        )
        self.verdict.timings["replay_s"] = time.monotonic() - mark
        if self.precompiles():
            precompile.VariantStore().save(self.cache, self.exercise.id, launched)

    def judge(self, early: judge.EarlyJudge | None) -> None:
        """5. The early judgement when the replay left what it read alone, else judged again now."""
        mark = time.monotonic()
        if early is None or not early.take(self.verdict, self.result):
            self.judge_all(self.verdict, self.result)
        self.verdict.timings["judge_s"] = time.monotonic() - mark
        if early is not None:
            self.verdict.timings["judged_early"] = early.taken

    def judge_compile(self) -> None:
        """5. The trusted compile's case, when the file could be imported; else it is stopped."""
        if self.compiling is None:
            return
        if self.result and not self.result.get("import_error"):
            self.compiling.finish(self.verdict, self.result.get("cases", []))
            self.verdict.timings["compile_s"] = self.compiling.seconds
            run.usage(self.verdict.timings, "compile", self.compiling.run)
        else:
            self.compiling.stop()


def check(
    exercise: Exercise,
    file: Path,
    backend: str,
    zygote: sandbox.Zygote,
    seed: int | None = None,
    timeout: float = 120.0,
    on_output: Callable[[str], None] | None = None,
    on_start: Callable[[Run], None] | None = None,
    keep_run_dir: bool = False,
    source: str | None = None,
    huge_cases: bool = False,
    cache: str = caches.LEARNER,
) -> Verdict:
    """Grade `file` (steps 1-6 of `CheckRun`): no queue, nothing saved, shown or timed."""
    return CheckRun(
        exercise,
        file,
        backend,
        zygote,
        seed=seed,
        timeout=timeout,
        on_output=on_output,
        on_start=on_start,
        keep_run_dir=keep_run_dir,
        source=source,
        huge_cases=huge_cases,
        cache=cache,
    )()
