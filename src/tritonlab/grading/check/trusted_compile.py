"""The trusted compile: what the compiler makes of the learner's kernel for a GPU, graded from a compile that
never imports the learner's file (contracts with `compile_items`: occupancy, the TMA path). Started beside
the check run (step 3), judged with the other cases (step 5)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from tritonlab.grading.check.failures import process_failure
from tritonlab.models import CaseResult, Verdict
from tritonlab.runs import caches, rundir, runfolder, sandbox
from tritonlab.runs.collect import Run, RunResult
from tritonlab.runs.limits import default_limits


class TrustedCompile:
    """Grade what the compiler makes of the learner's kernel for a GPU (e.g. occupancy) from a compile that
    never imports the learner's file: the parent reads the kernel's source as text, a separate sandboxed child
    (job mode `compile`) compiles only that function, with the signature and constexprs the contract fixes.
    The numbers come from triton and ptxas in that child, not from anything the learner's process reported.

    Started when the check starts (it needs only the text), so that it runs beside the check run; `finish`
    waits for it and adds its case to the verdict, `stop` kills it (a check that was stopped or could not
    import the file: nothing to grade)."""

    def __init__(
        self, contract: object, file: Path, source: str, backend: str, zygote: sandbox.Zygote, timeout: float
    ) -> None:
        self.contract = contract
        self.name = getattr(contract, "COMPILE_CASE", "compiled for the GPU")
        self.items, self.failures = contract.compile_items(source)  # the very text this check grades
        self.started = time.monotonic()
        self.seconds = 0.0
        self.handle: Run | None = None
        self.run: RunResult | None = None
        self.run_dir: Path | None = None
        self._waiter: threading.Thread | None = None
        if not self.items:
            return
        self.run_dir = zygote.new_run_dir(cache=caches.REPLAY)[0]
        try:
            (self.run_dir / "job.json").write_text(
                json.dumps({"mode": "compile", "file": str(file), "items": self.items})
            )
            self.handle = zygote.start(self.run_dir, default_limits(backend, max(timeout, 180.0)))
        except BaseException:
            runfolder.remove_run_dir(self.run_dir)
            self.run_dir = None
            raise
        # drained while the check runs: a child whose output nobody reads could block on a full pipe
        self._waiter = threading.Thread(target=self._wait, name="trusted-compile", daemon=True)
        self._waiter.start()

    def _wait(self) -> None:
        assert self.handle is not None
        self.run = self.handle.wait()

    def finish(self, verdict: Verdict, entries: list | None = None) -> None:
        """Wait for the compile and judge it; `entries` (the check's case entries, with the launches the replay
        ran) let the contract require that the compiled configuration is the one launched (`judge_launched`)."""
        results: list[dict] = []
        if self._waiter is not None and self.run_dir is not None:
            self._waiter.join()
            try:
                data = rundir.read_json(self.run_dir / "inspect.json")  # capped and depth-checked: hostile
            except rundir.Malformed:
                data = None
            results = list(data.get("results", [])) if isinstance(data, dict) else []
            if len(results) != len(self.items):
                assert self.run is not None
                self.failures.append(process_failure(self.name, self.run))
            self._clean()
            if len(results) == len(self.items):
                self.failures += self.contract.judge_compile(results)
            if hasattr(self.contract, "judge_launched"):
                self.failures += self.contract.judge_launched(self.items, entries or [])
        self.seconds = time.monotonic() - self.started
        verdict.failures.extend(self.failures)
        verdict.cases.append(CaseResult(self.name, not self.failures))

    def stop(self) -> None:
        if self.handle is not None and self.run_dir is not None:
            self.handle.stop()
            if self._waiter is not None:
                self._waiter.join()
            self._clean()

    def _clean(self) -> None:
        if self.run_dir is not None:
            runfolder.remove_run_dir(self.run_dir)
            self.run_dir = None
