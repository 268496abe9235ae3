"""The replay's compile, taken off a check's critical path (issue 40), parent side.

On a GPU the replay child (step 6) compiles every kernel variant the check child launched, after the check
child ended, in the replay's own compile cache: the learner's cache is never shared with it (runs/caches.py).
So an edited kernel was compiled twice, one after the other. Now, before the check child starts (step 3), a
trusted child (mode `precompile`, grading/replay/precompile.py: the kernels rebuilt from the graded text, the
learner's file never imported) compiles into the replay's cache the variants that the replay of the learner's
*previous* check of this exercise launched (edited code almost always launches the same ones), and the parent
copies what it compiled into the learner's cache (runs/caches.py `copy_entries`): the check child and the
replay both find those kernels compiled, one compile for both. The check child waits for it at most
FIRST_WAIT_S, the replay at most WAIT_S (then it is stopped); a variant that changed is compiled by the child
that launches it, as before. Nothing here decides a verdict.

`VariantStore`: the last replay's variants, one small JSON file per learner (their compile cache's name) and
exercise under TRITONLAB_HOME/replay-variants/. A run of learner code could write there under layer 1 (it has
the user's rights), so a file is read as hostile: size-capped, never through a link, validated
(replay/variants.py); a bad one is dropped.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
import time
from pathlib import Path

from tritonlab import config
from tritonlab.grading.check.run import usage
from tritonlab.grading.replay import variants as _variants
from tritonlab.models import Exercise
from tritonlab.runs import caches, rundir, runfolder, sandbox
from tritonlab.runs.collect import Run, RunResult
from tritonlab.runs.limits import default_limits

WAIT_S = 30.0  # the longest the replay waits for the precompile before it is stopped
FIRST_WAIT_S = 15.0  # the longest the check child waits for it (then it starts; the precompile goes on)
_EXERCISE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")


def why_not(contract: object, backend: str, target: str | None) -> str:
    """Why a check of `contract` on `backend` compiles nothing ahead ("" when it does): on a GPU, or for the
    compile `target` tests set, when the exercise is replayed and TRITONLAB_PRECOMPILE is on. The check's
    precompile (pipeline.py) and the compile ahead of a save (service/ahead.py) both ask this."""
    if not config.precompile_enabled():
        return "TRITONLAB_PRECOMPILE is off"
    if backend != "gpu" and target is None:
        return f"nothing to compile ahead on the {backend} backend"
    if not getattr(contract, "REPLAY", True):
        return "this exercise is not replayed"
    return ""


class VariantStore:
    """The last replay's variants per learner cache and exercise (see the module docstring)."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root if root is not None else config.home() / "replay-variants"

    def path(self, cache: str, exercise: str) -> Path:
        caches.check_name(cache)
        if not _EXERCISE.match(exercise):
            raise ValueError(f"not an exercise id: {exercise!r}")
        return self.root / cache / f"{exercise}.json"

    def load(self, cache: str, exercise: str) -> list[dict]:
        """The stored variants, or [] when there are none or the file is not what `save` writes."""
        try:
            path = self.path(cache, exercise)
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        except (OSError, ValueError):
            return []
        try:
            with os.fdopen(fd, "rb") as f:
                data = f.read(_variants.MAX_BYTES + 1)
            if len(data) > _variants.MAX_BYTES:
                raise ValueError("too big")
            return _variants.validate(json.loads(data))
        except (OSError, ValueError, RecursionError):
            try:
                path.unlink()
            except OSError:
                pass
            return []

    def save(self, cache: str, exercise: str, found: object) -> int:
        """Keep a replay's variants (validated; the first MAX_VARIANTS); the number kept."""
        if not isinstance(found, list):
            return 0
        try:  # the first MAX_VARIANTS distinct ones (a replay child reports at most that many)
            distinct = _variants.unique(found[: 4 * _variants.MAX_VARIANTS])
            kept = _variants.validate(distinct[: _variants.MAX_VARIANTS])
            path = self.path(cache, exercise)
        except (ValueError, TypeError, RecursionError):
            return 0
        if not kept:
            return 0
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
        tmp.write_text(json.dumps(kept))
        os.replace(tmp, path)
        return len(kept)


class FirstCheck:
    """What a learner's first check of an exercise hands its precompile to predict the variants from
    (grading/replay/predict.py): the reference solution's text and the check's own cases, whose input files
    the parent wrote into the check's run directory before the check child starts. `hand_over` puts copies in
    the precompile's run directory (runs never see the course's solutions; a run sees only its own folder) and
    returns the job's `predict`. The check's job.json is the parent's own, read back before any run used the
    folder."""

    def __init__(self, exercise: Exercise, check_dir: Path) -> None:
        self.exercise_id = str(exercise.id)
        self.function = str(exercise.function)
        self.reference = Path(exercise.solution).read_bytes()
        self.check_dir = check_dir
        written = json.loads((check_dir / "job.json").read_text())
        self.cases, self.backend = written["cases"], written["backend"]

    @classmethod
    def of(cls, exercise: Exercise, check_dir: Path) -> FirstCheck | None:
        """None when there is nothing to predict from (no reference solution here, or no job yet)."""
        try:
            return cls(exercise, check_dir)
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None

    def files(self) -> list[str]:
        names = []
        for case in self.cases:
            for spec in [*case.get("args", []), *case.get("kwargs", {}).values()]:
                if isinstance(spec, dict) and isinstance(spec.get("tensor"), str):
                    names.append(spec["tensor"])
        return names

    def hand_over(self, run_dir: Path) -> dict:
        from tritonlab.grading.replay.predict import REFERENCE

        (run_dir / REFERENCE).write_bytes(self.reference)
        for name in self.files():
            if "/" in name or name.startswith("."):
                raise ValueError(f"not a case file: {name!r}")
            try:  # the same folder system: a link; each run folder its own tmpfs (as root): a copy
                os.link(self.check_dir / name, run_dir / name, follow_symlinks=False)
            except OSError:
                shutil.copyfile(self.check_dir / name, run_dir / name, follow_symlinks=False)
        return {"exercise": self.exercise_id, "function": self.function, "backend": self.backend,
                "cases": self.cases}  # fmt: skip


class Precompile:
    """The trusted precompile of stored variants into the replay's cache, for a check (PrecompileAndCopy).

    `target` None: the device's own target (a GPU check); `"cuda:90"`: compiled for that target without a GPU
    (the CPU tests). `cache`: the replay's; a learner's own only in tests (what the check child would find
    there). The kernels are built as the check child's import builds them (replay/source.py), so the entries
    it reports can be copied into the learner's cache (`copy_into`)."""

    def __init__(
        self,
        zygote: sandbox.Zygote,
        source: str,
        file: Path,
        wanted: list[dict],
        backend: str,
        timeout: float,
        target: str | None = None,
        cache: str = caches.REPLAY,
        workers: int | None = None,
        predict: FirstCheck | None = None,
    ) -> None:
        self.started = time.monotonic()
        self.report: dict = {}
        self.cache = cache
        self.hardened = zygote.hardened
        self.handle: Run | None = None
        self.run: RunResult | None = None
        self.run_dir: Path | None = zygote.new_run_dir(cache=cache)[0]
        try:
            (self.run_dir / "source.py").write_bytes(source.encode("utf-8", errors="surrogateescape"))
            job = {"mode": "precompile", "source": "source.py", "file": str(file), "variants": wanted}
            if target:
                job["target"] = target
            if workers:
                job["workers"] = workers  # compile processes (default: replay/precompile.py worker_count)
            if predict is not None:
                job["predict"] = predict.hand_over(self.run_dir)
            (self.run_dir / "job.json").write_text(json.dumps(job))
            self.handle = zygote.start(self.run_dir, default_limits(backend, timeout))
        except BaseException:
            self._clean()
            raise
        self._waiter = threading.Thread(target=self._wait, name="precompile", daemon=True)
        self._waiter.start()

    def _wait(self) -> None:
        assert self.handle is not None
        self.run = self.handle.wait()

    def finished(self, timeout: float) -> bool:
        """Whether the child ended, waiting at most `timeout` s for it (`wait` then reads its report)."""
        self._waiter.join(timeout)
        return not self._waiter.is_alive()

    def wait(self, limit: float = WAIT_S) -> float:
        """Wait for the precompile (at most `limit` s, then stop it); the seconds waited. `report` then holds
        what the child said it did (diagnostics only)."""
        mark = time.monotonic()
        self._waiter.join(limit)
        if self._waiter.is_alive():
            self.stop()
            return time.monotonic() - mark
        if self.run_dir is not None:
            try:
                data = rundir.read_json(self.run_dir / "precompile.json")  # capped, depth-checked
            except rundir.Malformed:
                data = None
            if isinstance(data, dict):
                keys = ("compiled", "processes", "seconds", "predicted", "predict_seconds")
                self.report = {k: data.get(k) for k in keys}
                errors = data.get("errors")
                self.report["errors"] = [str(e)[:300] for e in errors[:8]] if isinstance(errors, list) else []
                entries = data.get("entries")
                entries = entries[: 2 * _variants.MAX_VARIANTS] if isinstance(entries, list) else []
                self.report["entries"] = [e for e in entries if isinstance(e, str) and caches.ENTRY.match(e)]
        self._clean()
        return time.monotonic() - mark

    def copy_into(self, learner_cache: str) -> int:
        """After `wait`: copy the entries this precompile compiled or found into `learner_cache` (the learner
        whose text it compiled); the number of entries copied (runs/caches.py `copy_entries`)."""
        names = self.report.get("entries") or []
        if not names:
            return 0
        return caches.copy_entries(
            caches.folder(self.cache, self.hardened), caches.folder(learner_cache, self.hardened), names
        )

    def stop(self) -> None:
        if self.handle is not None and self.run_dir is not None:
            self.handle.stop()
            self._waiter.join()
        self._clean()

    def _clean(self) -> None:
        if self.run_dir is not None:
            runfolder.remove_run_dir(self.run_dir)
            self.run_dir = None


def timings_of(pre: Precompile, waited: float, timings: dict) -> None:
    """A precompile's part of a verdict's timings: how long the replay waited for it (`precompile_wait_s`),
    how long it ran, how many variants it compiled (`precompiled`; the replay's `replay_compiled` says how
    many kernels it still compiled itself, `precompile_copied` how many entries went to the learner's cache)."""
    timings["precompile_wait_s"] = round(waited, 3)
    seconds = pre.report.get("seconds")
    ran = isinstance(seconds, int | float) and not isinstance(seconds, bool) and 0 <= seconds < 1e6
    timings["precompile_s"] = round(float(seconds) if ran else time.monotonic() - pre.started, 3)
    compiled = pre.report.get("compiled")
    if isinstance(compiled, int) and not isinstance(compiled, bool):
        timings["precompiled"] = compiled
    predicted, predict_s = pre.report.get("predicted"), pre.report.get("predict_seconds")
    if isinstance(predicted, int) and not isinstance(predicted, bool) and 0 <= predicted < 1000:
        timings["precompile_predicted"] = predicted  # a first check: the reference's variants (FirstCheck)
    if isinstance(predict_s, int | float) and not isinstance(predict_s, bool) and 0 <= predict_s < 1e6:
        timings["predict_s"] = round(float(predict_s), 3)
    usage(timings, "precompile", pre.run)


class PrecompileAndCopy:
    """The precompile of one check (or of a save, service/ahead.py), in a thread: one trusted child compiles
    the variants into the replay's cache; as soon as it ends, the entries it compiled or found are copied into
    the learner's own cache, where the check child's launches and the learner's next runs find them (one
    compile for both: runs/caches.py). The check waits for the thread (at most FIRST_WAIT_S) before it starts
    its check child; `replay_ready` is what the replay waits for; `stop` ends it early (a check that ended
    early). A precompile that cannot start is only noted: it decides nothing."""

    def __init__(self, zygote: sandbox.Zygote, source: str, file: Path, wanted: list[dict], backend: str,
                 timeout: float, target: str | None, learner_cache: str,
                 predict: FirstCheck | None = None) -> None:  # fmt: skip
        self.replay: Precompile | None = None
        self.copied: int | None = None  # entries copied into the learner's cache, once copied
        self.problem = ""
        self._stopping = threading.Event()

        def start() -> None:
            try:
                self.replay = Precompile(
                    zygote, source, file, wanted, backend, timeout, target, predict=predict
                )
            except Exception as exc:  # noqa: BLE001 - e.g. no run directory left: the check goes on without
                self.problem = f"{type(exc).__name__}: {str(exc)[:200]}"
                return
            while not self._stopping.is_set() and not self.replay.finished(0.2):
                pass
            if self._stopping.is_set():
                return
            self.replay.wait(0)
            try:
                self.copied = self.replay.copy_into(learner_cache)
            except (OSError, ValueError) as exc:  # the learner's cache is only a cache: the check compiles
                self.problem = f"copy: {type(exc).__name__}: {str(exc)[:200]}"

        self.thread = threading.Thread(target=start, name="precompile", daemon=True)
        self.thread.start()

    def replay_ready(self, timings: dict, limit: float = WAIT_S) -> None:
        """Wait for the precompile (at most `limit` s, then it is stopped) and note it in `timings`."""
        mark = time.monotonic()
        self.thread.join(limit)
        if self.thread.is_alive():
            self.stop()
        waited = time.monotonic() - mark
        if self.problem:
            timings["precompile_problem"] = self.problem
        if self.replay is not None:
            timings_of(self.replay, waited, timings)
        if self.copied is not None:
            timings["precompile_copied"] = self.copied

    def stop(self) -> None:
        self._stopping.set()
        self.thread.join()
        if self.replay is not None:
            self.replay.stop()
