"""Run directories made ahead, each with a warm child bound to it and to one compile cache (hardened with a
pool: runs/pool.py `BoundPool`), for `sandbox.Zygote`, whose state they use (`_warm_dirs`, `_handed`,
`_cache_of`, `_recent`, `_expected`, `warm_counts`, `_lock`, `_refilling`, `pool`, `hardened`, `send`,
`cache_folder`).

Which caches get one is caches.warm_plan's answer: the replay's half, and the learners' half for the recent
learners in turn while they fit, else (a class) only for those announced by `expect` (a check waiting for its
slot). `warm_counts` counts the children made, taken by a run, taken ready ahead (made before the request
that took it) and dropped unused (benchmarks/warm_plan.py; /api/status).
"""

from __future__ import annotations

import time
from pathlib import Path

from tritonlab.runs import caches, hardening, runfolder

# How long a run announced by `expect` keeps its warm child (a check waiting in the run queue is given its
# slot within about this long; one stopped while it waited leaves a child that is then dropped)
EXPECT_S = 300.0


class WarmDirs:
    """The warm run directories of a Zygote (see the module docstring); a mixin."""

    def _take_warm(self, cache: str) -> tuple[Path, str] | None:
        with self._lock:
            found = next(((p, c) for p, c in self._warm_dirs if c == cache), None)
            if found is not None:
                self._warm_dirs.remove(found)
                self._handed.add(found[0])
                self._cache_of[found[0]] = cache
                self.warm_counts["taken"] += 1
                self.warm_counts["ready_ahead"] += 1
            return found

    def _warm_for(self, cache: str) -> tuple[Path, str]:
        """A child forked now for one run with `cache`, handed at once: outside the plan, so that it takes no
        other cache's warm child's place (a class's learners each come seldom: caches.warm_plan)."""
        return self._fork_warm(cache, handed=True), cache

    def _fork_warm(self, cache: str, handed: bool) -> Path:
        """A new run directory with a child forked into it, bound to `cache`: handed out now (`_warm_for`) or
        kept warm for the plan (`_refill_now`)."""
        folder = self.cache_folder(cache)
        path = runfolder.new_run_dir()
        hardening.prepare_run_dir(path)
        with self._lock:
            if handed:
                self._handed.add(path)
                self._cache_of[path] = cache
                self.warm_counts["taken"] += 1
            else:
                self._warm_dirs.append((path, cache))
            self.warm_counts["made"] += 1
        self.send({"op": "warm", "run_dir": str(path), "cache": str(folder)})
        return path

    def _refill(self) -> None:
        """Hardened with a pool: make run directories ahead, each with a child warming up in it, bound to the
        compile cache caches.warm_plan() gives it; warm children of caches the plan no longer wants make way."""
        if not (self.hardened and self.pool):
            return
        with self._refilling:  # the reader thread (worker ready) and callers: one plan at a time
            self._refill_now()

    def _refill_now(self) -> None:
        with self._lock:
            for gone in [d for d in self._handed if not d.exists()]:
                self._handed.discard(gone)  # given up without a run: its warm child must not wait forever
                self._cache_of.pop(gone, None)
                self.send({"op": "drop", "run_dir": str(gone)})
            now = time.monotonic()
            for name in [n for n, until in self._expected.items() if until < now]:
                del self._expected[name]  # announced, never asked for: no longer kept warm
            wanted = caches.warm_plan(self._recent, self.pool, list(self._expected))
            for path, name in list(self._warm_dirs):
                if wanted[name] > 0:
                    wanted[name] -= 1
                    continue
                if name == caches.REPLAY:  # over its share only while learners are announced: every check
                    continue  # replays, so it is taken soon (dropping it would waste its start)
                self._warm_dirs.remove((path, name))  # a cache nobody asked for lately: its child makes way
                self.warm_counts["dropped_unused"] += 1
                self.send({"op": "drop", "run_dir": str(path)})
                runfolder.remove_run_dir(path)
            missing = [name for name, count in wanted.items() for _ in range(count)]
        for name in missing:
            if self.dead:
                return
            self._fork_warm(name, handed=False)

    def expect(self, cache: str, within: float = EXPECT_S) -> None:
        """A run with compile cache `cache` will probably be asked for within `within` seconds (a check waiting
        for its slot in the run queue): hardened with a pool, a warm child is bound to it now, if the plan has
        room (caches.warm_plan), so that the run finds it ready. Its next new_run_dir() ends the announcement."""
        if not (self.hardened and self.pool):
            return
        caches.check_name(cache)
        with self._lock:
            self._expected.pop(cache, None)
            self._expected[cache] = time.monotonic() + within  # in the order announced
        self._refill()
