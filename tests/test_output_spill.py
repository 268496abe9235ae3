"""Issue 34, item 3 (run output): web/output_spill.py, the bounds themselves, in-process and small.

A job keeps RAM_PER_JOB bytes of output events in RAM and the rest on disk; the disk is bounded per owner (a
learner) and for the server, finished jobs' output going first; only live output that finds no room is
dropped, with one note in the stream. Streams read spilled events back in order (a resumed stream too); a
forgotten job's file goes, the server's folder goes at close, and a folder left by a dead server is swept.
The real server's memory over 100 checks of 1 MiB each: tests/test_run_output_memory.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tritonlab.web import jobs as jobs_module
from tritonlab.web.jobs import Job, Jobs
from tritonlab.web.output_spill import RAM_PER_JOB, Spill

CHUNK = "z" * 4000  # one output event: ~4 KB of JSON


def run_job(pool: Jobs, owner: object, chunks: int) -> Job:
    """A job of `owner` that printed `chunks` chunks and finished (as the service's callbacks would do)."""
    job = Job("run", "t", owner, pool.spill)
    with pool._lock:
        pool._jobs[job.id] = job
    for _ in range(chunks):
        job.on_output(CHUNK)
    job.finish()
    return job


def text_of(job: Job, since: int = 0) -> str:
    events, _ = job.since(since)
    return "".join(json.loads(data)["text"] for name, data in events if name == "output")


def test_output_past_the_ram_share_is_on_disk_and_streams_back_in_order(tmp_path: Path) -> None:
    pool = Jobs(Spill(tmp_path, per_owner=1 << 20, total=4 << 20))
    job = Job("run", "t", "anna", pool.spill)
    pieces = [f"{i:05d}" + CHUNK for i in range(100)]  # ~400 KB: most of it past the RAM share
    for piece in pieces:
        job.on_output(piece)
    job.finish()
    assert job.ram_output <= RAM_PER_JOB
    assert job.spilled_bytes > 300_000 and pool.spill.used["anna"] == job.spilled_bytes
    in_ram = sum(len(d) for n, d in job.events if isinstance(d, str) and n == "output")
    assert in_ram <= RAM_PER_JOB
    assert text_of(job) == "".join(pieces)  # all of it, in order
    assert text_of(job, since=60) == "".join(pieces[60:])  # a resumed stream (Last-Event-ID 59)
    names = [n for n, _ in job.since(0)[0]]
    assert names[-1] == "end" and names.count("output") == 100


def test_a_learners_disk_share_drops_their_own_oldest_finished_output_first(tmp_path: Path) -> None:
    pool = Jobs(Spill(tmp_path, per_owner=300_000, total=10 << 20))
    bens = run_job(pool, "ben", 60)  # ~180 KB spilled
    annas = [run_job(pool, "anna", 60) for _ in range(4)]
    used = pool.spill.used
    assert used["anna"] <= 300_000
    assert annas[0].spill_dropped and not annas[-1].spill_dropped
    assert not bens.spill_dropped and used["ben"] == bens.spilled_bytes  # a neighbour keeps hers
    assert len(text_of(bens)) == 60 * len(CHUNK)
    assert len(text_of(annas[-1])) == 60 * len(CHUNK)
    dropped = text_of(annas[0])  # the RAM share is still there, the spilled part reads as empty
    assert RAM_PER_JOB // 2 < len(dropped) < 60 * len(CHUNK)
    on_disk = sum(f.stat().st_size for f in pool.spill.folder.iterdir())  # type: ignore[union-attr]
    assert on_disk == sum(used.values())


def test_live_output_that_finds_no_room_is_dropped_with_one_note(tmp_path: Path) -> None:
    pool = Jobs(Spill(tmp_path, per_owner=100_000, total=10 << 20))
    job = Job("run", "t", "anna", pool.spill)
    for _ in range(200):  # 800 KB, live: nothing finished to drop
        job.on_output(CHUNK)
    job.finish()
    text = text_of(job)
    assert text.count("was not kept") == 1 and "97 KiB a learner, 10 MiB in all" in text
    assert pool.spill.used["anna"] <= 100_000


def test_the_servers_total_is_shared_out_oldest_finished_first(tmp_path: Path) -> None:
    pool = Jobs(Spill(tmp_path, per_owner=10 << 20, total=400_000))
    old = [run_job(pool, f"learner{i}", 40) for i in range(6)]
    assert sum(pool.spill.used.values()) <= 400_000
    assert old[0].spill_dropped and not old[-1].spill_dropped


def test_forgotten_jobs_lose_their_file_and_the_folder_goes_at_close(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    pool = Jobs(Spill(tmp_path, per_owner=1 << 20, total=4 << 20))
    job = run_job(pool, None, 30)
    folder = pool.spill.folder
    assert folder is not None and (folder / f"{job.id}.out").exists()
    monkeypatch.setattr(jobs_module, "KEEP_FINISHED_S", -1.0)
    pool._prune()
    assert not (folder / f"{job.id}.out").exists() and pool.spill.used == {}
    pool.close()
    assert not folder.exists()
    late = Job("run", "t", None, pool.spill)  # output after close: dropped, never a new folder
    for _ in range(40):
        late.on_output(CHUNK)
    assert not folder.exists()


def test_a_dead_servers_folder_is_swept(tmp_path: Path) -> None:
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    left = tmp_path / f"{dead.stdout.strip()}-abcd1234"
    left.mkdir()
    (left / "x.out").write_text("old output")
    alive = tmp_path / f"{os.getppid()}-abcd1234"  # a live process's folder is left alone
    alive.mkdir()
    pool = Jobs(Spill(tmp_path, per_owner=1 << 20, total=4 << 20))
    run_job(pool, None, 30)
    assert not left.exists() and alive.exists()
    pool.close()


def test_ram_is_bounded_for_all_jobs_together_and_so_is_their_count(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    """Many small finished runs (a learner running again and again) cannot pile up RAM either: their RAM
    shares have a ceiling for all jobs together (past it, output goes straight to disk), and at most
    KEEP_FINISHED finished jobs are kept at all."""
    from tritonlab.web import output_spill

    monkeypatch.setattr(output_spill, "RAM_TOTAL", 100_000)
    monkeypatch.setattr(jobs_module, "KEEP_FINISHED", 30)
    pool = Jobs(Spill(tmp_path, per_owner=10 << 20, total=100 << 20))
    made = [run_job(pool, "anna", 7) for _ in range(40)]  # 28 KB each: the first three fit in RAM, whole
    assert pool.spill.ram_used <= 100_000
    assert made[0].spilled_bytes == 0 and made[-1].ram_output == 0 and made[-1].spilled_bytes > 0
    assert all(len(text_of(job)) == 7 * len(CHUNK) for job in made)  # none of it lost
    pool._prune()
    assert len(pool._jobs) == 30 and made[0].id not in pool._jobs and made[-1].id in pool._jobs
    assert pool.spill.ram_used == sum(j.ram_output for j in pool._jobs.values())
    assert pool.spill.used["anna"] == sum(j.spilled_bytes for j in pool._jobs.values())
