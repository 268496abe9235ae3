"""Compile caches between runs (runs/caches.py): a learner's runs share theirs, no run of learner code reaches
the replay's, and a run holding the replay's serves only the modes that import no learner file. Real
bubblewrap for the hardened layer (interpreter backend: the cache is a folder either way)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tritonlab.runs import caches, hardening, launchers, runfolder, sandbox
from tritonlab.runs.limits import default_limits

ROOT = Path(__file__).resolve().parent.parent

PROGRAM = """
import json, os
cache = os.environ["TRITON_CACHE_DIR"]
seen = sorted(os.listdir(cache))
with open(os.path.join(cache, MARK), "w") as f:
    f.write("planted")
reach = {}
for path in OTHERS:
    try:
        with open(path) as f:
            reach[path] = f.read()
    except OSError as exc:
        reach[path] = type(exc).__name__
try:
    caches_seen = sorted(os.listdir(os.path.dirname(cache)))
except OSError:
    caches_seen = None
print(json.dumps({"cache": cache, "seen": seen, "reach": reach, "caches_seen": caches_seen}))
"""


def run_program(z: sandbox.Zygote, cache: str, mark: str, others: list[str] = ()) -> dict:
    run_dir, _warm = z.new_run_dir(cache=cache)
    try:
        text = f"MARK = {mark!r}\nOTHERS = {list(others)!r}\n" + PROGRAM
        (run_dir / "prog.py").write_text(text)
        (run_dir / "job.json").write_text(json.dumps({"mode": "run", "file": str(run_dir / "prog.py")}))
        result = z.start(run_dir, default_limits("interpreter", 30)).wait()
        assert result.exit_code == 0, result.output
        return json.loads(result.output.strip().splitlines()[-1])
    finally:
        runfolder.remove_run_dir(run_dir)


@pytest.fixture(scope="module", params=["hardened", "basic"])
def zygote(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    os.environ["TRITONLAB_HOME"] = str(tmp_path_factory.mktemp("home"))
    hardened = request.param == "hardened"
    if hardened and not hardening.probe("interpreter")["hardened"]:
        pytest.skip(f"needs the hardened layer (bubblewrap): {hardening.probe('interpreter')['reason']}")
    z = sandbox.Zygote("interpreter", hardened=hardened, pool=2)  # warm: one learner's and the replay's
    z.wait_ready()
    yield z
    z.close()


def test_a_learners_runs_share_one_cache_and_no_one_elses(zygote: sandbox.Zygote) -> None:
    first = run_program(zygote, caches.LEARNER, "first")
    second = run_program(zygote, caches.LEARNER, "second")
    assert "first" in second["seen"]  # what one run compiled, the next run of the same learner finds
    # the same path in every run: Triton 3.6 writes absolute paths into its entries (jail.isolate_run)
    assert second["cache"] == first["cache"] == str(caches.folder(caches.LEARNER, zygote.hardened))
    if zygote.hardened:  # and of the caches, the run sees its own alone
        assert first["caches_seen"] == [caches.LEARNER]
    other = run_program(zygote, caches.learner_name(7), "other")
    assert "first" not in other["seen"] and "second" not in other["seen"]  # another learner starts empty
    again = run_program(zygote, caches.LEARNER, "third")
    assert "other" not in again["seen"]


def test_only_the_replays_and_the_trusted_timings_compiles_store_the_binary_alone(
    zygote: sandbox.Zygote, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The replay and the trusted timing run store compiled kernels without their IR stages
    (TRITON_STORE_BINARY_ONLY: ~70 % of an entry's bytes, in the replay's capped cache); every other mode keeps
    every stage, whatever its environment held: a learner's code may read `compiled.asm["ptx"]` (lesson 1's
    example does), and the precompile's entries are copied into a learner's cache. Through a real zygote for a
    learner's run (the variable set in the zygote's environment is dropped); every mode through `run_job`."""
    from tritonlab.runs import zygote as zygote_module

    run_dir, _warm = zygote.new_run_dir(cache=caches.LEARNER)
    try:
        (run_dir / "prog.py").write_text(
            "import os\nprint(repr(os.environ.get('TRITON_STORE_BINARY_ONLY')))\n"
        )
        (run_dir / "job.json").write_text(json.dumps({"mode": "run", "file": str(run_dir / "prog.py")}))
        result = zygote.start(run_dir, default_limits("interpreter", 30)).wait()
    finally:
        runfolder.remove_run_dir(run_dir)
    assert result.exit_code == 0 and result.output.strip().splitlines()[-1] == "None", result.output

    (tmp_path / "mode_probe.py").write_text(
        "import os\ndef entry(job, run_dir):\n    return os.environ.get('TRITON_STORE_BINARY_ONLY')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(zygote_module, "ENTRIES", dict.fromkeys(zygote_module.ENTRIES, "mode_probe:entry"))
    seen = {}
    for mode in zygote_module.ENTRIES:
        monkeypatch.setenv("TRITON_STORE_BINARY_ONLY", "1")
        (tmp_path / "job.json").write_text(json.dumps({"mode": mode}))
        seen[mode] = zygote_module.run_job(tmp_path)
    assert {m for m, v in seen.items() if v == "1"} == {"replay", "speed"}, seen
    assert all(v is None for m, v in seen.items() if m not in ("replay", "speed")), seen


def test_an_entry_stored_binary_only_is_never_copied_into_a_learners_cache(tmp_path: Path) -> None:
    """A learner's code may read any stage of a kernel it compiled: an entry the replay stored without them
    is left for the learner's run to compile; a whole one is copied."""
    source, dest = tmp_path / "replay", tmp_path / "learner"
    dest.mkdir()
    for name, stages in (
        ("A" * 20, ("cubin", "json", "source")),
        ("B" * 20, ("cubin", "json", "source", "ptx")),
    ):
        entry = source / name
        entry.mkdir(parents=True)
        for stage in stages:
            (entry / f"k.{stage}").write_text(stage)
        group = {f"k.{stage}": str(entry / f"k.{stage}") for stage in stages}
        (entry / "__grp__k.json").write_text(json.dumps({"child_paths": group}))
    assert caches.copy_entries(source, dest, ["A" * 20, "B" * 20]) == 1
    assert sorted(os.listdir(dest)) == ["B" * 20]
    assert "k.ptx" in os.listdir(dest / ("B" * 20))


def test_no_learner_run_sees_or_reaches_the_replay_cache(zygote: sandbox.Zygote) -> None:
    replay = caches.folder(caches.REPLAY, zygote.hardened)
    (replay / "trusted-entry").write_text("compiled by a replay child")
    try:
        seen = run_program(zygote, caches.LEARNER, "attempt", [str(replay / "trusted-entry")])
        assert "trusted-entry" not in seen["seen"]
        if zygote.hardened:  # a wall: the replay's folder is not in the run's view at all
            assert seen["reach"][str(replay / "trusted-entry")] in ("FileNotFoundError", "PermissionError")
        assert not (replay / "attempt").exists()  # the learner's entry went to the learner's cache only
        assert (caches.folder(caches.LEARNER, zygote.hardened) / "attempt").exists()
    finally:
        (replay / "trusted-entry").unlink()


def test_a_run_with_the_replay_cache_serves_no_learner_code(zygote: sandbox.Zygote) -> None:
    run_dir, warm = zygote.new_run_dir(cache=caches.REPLAY)
    assert warm == (zygote.hardened or bool(zygote.pool))  # the replay's child was warming up ahead
    try:
        (run_dir / "prog.py").write_text("print('learner code ran')\n")
        (run_dir / "job.json").write_text(json.dumps({"mode": "run", "file": str(run_dir / "prog.py")}))
        result = zygote.start(run_dir, default_limits("interpreter", 30)).wait()
    finally:
        runfolder.remove_run_dir(run_dir)
    assert result.exit_code != 0
    assert "learner code ran" not in result.output
    assert "not in a run with the replay cache" in result.output


def test_warm_children_wait_for_the_learners_and_the_replays_cache(zygote: sandbox.Zygote) -> None:
    if not zygote.hardened:
        pytest.skip("layer 1's warm children take any cache: it is an environment variable there")
    for name in (caches.LEARNER, caches.REPLAY, caches.LEARNER):
        run_dir, warm = zygote.new_run_dir(cache=name)
        runfolder.remove_run_dir(run_dir)
        assert warm, name


def test_a_nearly_full_cache_is_emptied_and_names_are_checked(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setitem(caches.CACHE_BYTES, caches.LEARNER, 10_000)
    folder = tmp_path / "learner"
    (folder / "abc").mkdir(parents=True)
    (folder / "abc" / "kernel.cubin").write_bytes(b"x" * 5_000)
    assert not caches.nearly_full(folder)
    (folder / "abc" / "kernel.ptx").write_bytes(b"x" * 4_000)
    assert caches.nearly_full(folder)
    outside = tmp_path / "outside.txt"
    outside.write_text("keep")
    (folder / "link").symlink_to(outside)
    caches.empty(folder)
    assert folder.is_dir() and list(folder.iterdir()) == [] and outside.read_text() == "keep"
    for bad in ("", "../x", "learner-" + "a" * 65, "replay/..", "trusted"):
        with pytest.raises(ValueError):
            caches.check_name(bad)
    assert caches.kind(caches.learner_name("a/b")) == caches.LEARNER


def test_warm_children_are_shared_out_between_the_replay_and_recent_learners() -> None:
    plan = caches.warm_plan
    assert plan([caches.LEARNER, caches.REPLAY], 2) == {caches.REPLAY: 1, caches.LEARNER: 1}
    assert plan([caches.LEARNER, caches.REPLAY], 1) == {
        caches.LEARNER: 1
    }  # one child: the cache asked for last
    assert plan([caches.REPLAY, "learner-3"], 1) == {caches.REPLAY: 1}
    assert plan([caches.REPLAY, caches.LEARNER], 5) == {caches.LEARNER: 3, caches.REPLAY: 2}  # dev check
    assert plan(["learner-3", caches.LEARNER, caches.REPLAY], 3) == {
        caches.REPLAY: 1,
        "learner-3": 1,
        caches.LEARNER: 1,
    }
    # a class: more recent learners than warm places; only those announced (waiting for a slot) get one
    many = [f"learner-{k}" for k in range(12)] + [caches.REPLAY]
    assert plan(many, 17) == {caches.REPLAY: 17}
    assert plan(many, 17, ["learner-40", "learner-2", "learner-40"]) == {
        caches.REPLAY: 15,
        "learner-40": 1,
        "learner-2": 1,
    }
    assert plan(many, 4, [f"learner-{k}" for k in range(5)]) == {
        caches.REPLAY: 2,
        "learner-0": 1,
        "learner-1": 1,
    }
    # a few learners: in turn as before, the announced ones first
    assert plan(["learner-1", caches.REPLAY, "learner-2"], 6, ["learner-9"]) == {
        caches.REPLAY: 3,
        "learner-9": 1,
        "learner-1": 1,
        "learner-2": 1,
    }


def test_a_classs_checks_leave_few_warm_children_unused() -> None:
    """A real hardened zygote fed a class's pattern (30 learners in random order, 8 warm children, two checks
    waiting in the queue, each announced: benchmarks/warm_plan.py). Warming a child for each recent learner in
    turn dropped about one unused child a check (1.02 here), and so did dropping the replay's children over
    its share whenever an announcement came (1.07); warming only for announced learners and keeping the
    replay's leaves the few of the start (0.13), and most runs still find their child ready."""
    if not hardening.probe("interpreter")["hardened"]:
        pytest.skip(f"needs the hardened layer (bubblewrap): {hardening.probe('interpreter')['reason']}")
    args = ["--learners", "30", "--checks", "60", "--pool", "8", "--queue", "2"]
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks/warm_plan.py"), *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["dropped_unused_per_check"] <= 0.3, got
    assert got["ready_ahead_per_check"] >= 0.75 * got["taken_per_check"], got
    # the zygote's own counts (what /api/status shows a load) agree with what this run saw it do
    counted = got["zygote_counts"]
    assert counted["dropped_unused"] == got["dropped_unused"] and counted["taken"] == got["taken"], got


def test_a_cluster_worker_takes_the_cache_the_server_named_but_never_the_replays_for_learner_code() -> None:
    from tritonlab.runs.ray_executor.transfer import CACHE_KEY, worker_cache  # no ray needed

    named = caches.learner_name(42)
    job = {"mode": "check", CACHE_KEY: named}
    assert worker_cache(job) == named and CACHE_KEY not in job  # taken out: the child never sees it
    assert worker_cache({"mode": "check", CACHE_KEY: caches.REPLAY}) is None  # learner code: not the replay's
    assert worker_cache({"mode": "run", CACHE_KEY: "../../etc"}) is None
    assert worker_cache({"mode": "check"}) is None  # a server that names none: nothing shared
    for trusted in caches.TRUSTED_MODES:  # the grader's own children: the replay's, whatever the job says
        assert worker_cache({"mode": trusted, CACHE_KEY: named}) == caches.REPLAY


def test_a_full_cache_is_emptied_though_a_warm_child_is_bound_to_it(zygote: sandbox.Zygote) -> None:
    """The pool keeps a warm child bound to a learner's cache: a nearly full cache must still be emptied when no
    run is running with it, or it stays full (on the GPU, where compiled kernels fill 128 MiB, every later run
    of that learner failed for want of space)."""
    if not zygote.hardened:
        pytest.skip("warm children are bound to a cache ahead only on the hardened layer")
    run_program(zygote, caches.LEARNER, "first")
    zygote.expect(caches.LEARNER)  # their next check waits in the queue: a child is warm for their cache
    assert any(c == caches.LEARNER for _, c in zygote._warm_dirs), "the test needs a warm child bound"
    folder = caches.folder(caches.LEARNER, zygote.hardened)
    filler = folder / "filler.bin"
    with open(filler, "wb") as f:
        f.write(b"\0" * int(caches.CACHE_BYTES[caches.LEARNER] * 0.9))
    assert caches.nearly_full(folder)
    assert zygote.cache_folder(caches.LEARNER) == folder  # what start() asks before the learner's next run
    assert not filler.exists()
    got = run_program(zygote, caches.LEARNER, "after")
    assert "filler.bin" not in got["seen"], got["seen"]


# ---- one compile for both: the replay's entries copied into a learner's cache ----------------------------


ENTRY = "A" * 52


def compiled_entry(cache: Path, name: str = ENTRY) -> Path:
    """An entry as Triton writes it: each stage's file and a group file naming them by absolute path."""
    folder = cache / name
    folder.mkdir(parents=True)
    files = {"k.ttir": b"ir", "k.cubin": os.urandom(64), "k.json": b'{"name": "k"}'}
    for file, data in files.items():
        (folder / file).write_bytes(data)
    group = {"child_paths": {file: str(folder / file) for file in files}}
    (folder / "__grp__k.json").write_text(json.dumps(group))
    return folder


def test_copied_entries_name_their_copies_and_never_replace_a_learners_file(tmp_path: Path) -> None:
    replay, learner = tmp_path / "replay", tmp_path / "learner"
    source = compiled_entry(replay)
    other = compiled_entry(replay, "B" * 52)
    learner.mkdir()
    (learner / other.name).mkdir()
    (learner / other.name / "k.cubin").write_bytes(b"the learner's own")  # theirs to write: left as it is
    assert caches.copy_entries(replay, learner, [ENTRY, other.name, ENTRY]) == 2
    for entry in (source, other):
        group = json.loads((learner / entry.name / "__grp__k.json").read_text())["child_paths"]
        assert group == {f: str(learner / entry.name / f) for f in ("k.ttir", "k.cubin", "k.json")}
    assert (learner / ENTRY / "k.cubin").read_bytes() == (source / "k.cubin").read_bytes()
    assert (learner / other.name / "k.cubin").read_bytes() == b"the learner's own"
    kept = json.loads((source / "__grp__k.json").read_text())["child_paths"]
    assert kept["k.ttir"] == str(source / "k.ttir")  # the replay's own entry unchanged
    assert caches.copy_entries(replay, learner, [ENTRY]) == 0  # compiled there already
    assert not [p for p in learner.rglob(".copy-*")]


def test_the_copy_never_follows_a_link_in_the_learners_cache(tmp_path: Path) -> None:
    """What a learner's run planted in their cache (a link where an entry or a file goes) is never written
    through; names that are not an entry's, and group files naming other files, are refused."""
    replay, learner, outside = tmp_path / "replay", tmp_path / "learner", tmp_path / "outside"
    compiled_entry(replay)
    compiled_entry(replay, "C" * 52)
    bad = compiled_entry(replay, "D" * 52)
    (bad / "__grp__k.json").write_text(json.dumps({"child_paths": {"../../etc/passwd": "/etc/passwd"}}))
    (compiled_entry(replay, "E" * 52) / "__grp__k.json").write_text("{not json")  # skipped, not fatal
    learner.mkdir()
    outside.mkdir()
    (outside / "keep").write_bytes(b"x")
    (learner / ENTRY).symlink_to(outside)  # the entry's folder is a link
    (learner / ("C" * 52)).mkdir()
    (learner / ("C" * 52) / "k.cubin").symlink_to(outside / "keep")  # one file is a link
    names = [ENTRY, "E" * 52, "C" * 52, "D" * 52, "../outside", "x/y", "short"]
    assert caches.copy_entries(replay, learner, names) == 1  # only C's entry, its linked file left alone
    assert sorted(os.listdir(outside)) == ["keep"] and (outside / "keep").read_bytes() == b"x"
    assert (learner / ("C" * 52) / "k.cubin").is_symlink()
    assert not (learner / ("D" * 52) / "__grp__k.json").exists()


def test_the_copy_stops_at_its_budget(tmp_path: Path) -> None:
    replay, learner = tmp_path / "replay", tmp_path / "learner"
    names = [compiled_entry(replay, c * 52).name for c in "EFGH"]
    # an entry's bytes (± the length of its group's paths)
    one = sum(f.stat().st_size for f in (replay / names[0]).iterdir())
    learner.mkdir()
    assert caches.copy_entries(replay, learner, names, budget=one * 3 // 2) == 1
    assert len([n for n in os.listdir(learner) if (learner / n / "__grp__k.json").exists()]) == 1


@pytest.mark.skipif(os.geteuid() != 0, reason="gives the copies another user: needs root")
def test_copies_belong_to_the_learners_cache_owner(tmp_path: Path) -> None:
    replay, learner = tmp_path / "replay", tmp_path / "learner"
    compiled_entry(replay)
    learner.mkdir()
    os.chown(learner, 54321, 54321)
    assert caches.copy_entries(replay, learner, [ENTRY]) == 1
    for path in [learner / ENTRY, *(learner / ENTRY).iterdir()]:
        assert (path.stat().st_uid, path.stat().st_gid) == (54321, 54321), path


# ---- host launchers: built by trusted runs, shared into a learner's cache ------------------------------------

SO = "__triton_launcher.cpython-312-x86_64-linux-gnu.so"


def launcher_entry(
    cache: Path, name: str, file: str = SO, data: bytes | None = None, mtime: float = 0
) -> Path:
    """An entry as Triton 3.6's compile_module_from_src leaves it: one shared object in the folder of its key."""
    folder = cache / name
    folder.mkdir(parents=True)
    (folder / file).write_bytes(os.urandom(256) if data is None else data)
    if mtime:
        os.utime(folder / file, (mtime, mtime))
    return folder


def test_launchers_that_trusted_runs_built_reach_a_learners_cache_and_nothing_else_does(
    tmp_path: Path,
) -> None:
    replay, learner, outside = tmp_path / "replay", tmp_path / "learner", tmp_path / "outside"
    launcher = launcher_entry(replay, "a" * 64)
    utils = launcher_entry(replay, "b" * 64, "cuda_utils.cpython-312-x86_64-linux-gnu.so")
    compiled_entry(replay, "K" * 52)  # a kernel: copied only by copy_entries, and only when asked for
    launcher_entry(replay, "c" * 64).joinpath("k.cubin").write_bytes(b"x")  # two files: not a launcher
    launcher_entry(replay, "d" * 64, "k.cubin")  # one file, not a launcher's name
    launcher_entry(replay, "e" * 64, data=b"\0" * (launchers.LAUNCHER_BYTES + 1))  # too large for one
    outside.mkdir()
    (outside / SO).write_bytes(b"not the replay's")
    (replay / ("f" * 64)).mkdir()
    (replay / ("f" * 64) / SO).symlink_to(outside / SO)  # a link: never read
    (replay / ("g" * 64)).mkdir()  # being written: nothing in it yet
    planted = launcher_entry(replay, "h" * 64)
    linked = launcher_entry(replay, "i" * 64)
    learner.mkdir()
    (learner / planted.name).mkdir()
    (learner / planted.name / SO).write_bytes(b"the learner's own")  # theirs: left as it is
    (learner / linked.name).symlink_to(outside)  # a link where the entry goes: never written through

    assert launchers.share_launchers(replay, learner) == 2
    assert (learner / launcher.name / SO).read_bytes() == (launcher / SO).read_bytes()
    assert (learner / utils.name / "cuda_utils.cpython-312-x86_64-linux-gnu.so").exists()
    assert sorted(os.listdir(learner)) == sorted([launcher.name, utils.name, planted.name, linked.name])
    assert (learner / planted.name / SO).read_bytes() == b"the learner's own"
    assert sorted(os.listdir(outside)) == [SO] and (outside / SO).read_bytes() == b"not the replay's"
    assert not [p for p in learner.rglob(".copy-*")]
    assert launchers.share_launchers(replay, learner) == 0  # there already

    later = launcher_entry(replay, "g" * 64 + "0")  # built since the last call
    (replay / ("g" * 64) / SO).write_bytes(b"done")  # the entry being written is finished
    assert launchers.share_launchers(replay, learner) == 2
    assert (learner / later.name / SO).exists() and (learner / ("g" * 64) / SO).read_bytes() == b"done"


def test_launchers_are_shared_newest_first_within_the_limits_and_an_emptied_cache_is_read_again(
    tmp_path: Path,
) -> None:
    replay = tmp_path / "replay"
    names = [launcher_entry(replay, c * 64, mtime=1_000_000 + i).name for i, c in enumerate("pqrst")]
    first, second = tmp_path / "one", tmp_path / "two"
    first.mkdir()
    second.mkdir()
    assert launchers.share_launchers(replay, first, limit=2) == 2
    assert sorted(os.listdir(first)) == sorted(names[-2:])  # the newest
    assert launchers.share_launchers(replay, second, budget=256 + 1) == 1  # one 256-byte file fits, not two
    for name in names:  # the replay's cache emptied; a kernel's entry now has a launcher's old name
        for file in (replay / name).iterdir():
            file.unlink()
        (replay / name).rmdir()
    compiled_entry(replay, names[0])
    third = tmp_path / "three"
    third.mkdir()
    assert launchers.share_launchers(replay, third) == 0
    assert launchers.launchers_in(replay) == []


@pytest.mark.parametrize("backend", ["gpu", "interpreter"])
def test_a_gpu_check_starts_its_child_with_the_classs_launchers_in_the_learners_cache(
    zygote: sandbox.Zygote, backend: str
) -> None:
    """The check's step before its child (grading/check/pipeline.py `share_launchers`), with the caches a real
    zygote gives its runs: a learner's run then finds the launcher a trusted run built; the interpreter, which
    launches no compiled kernel, copies nothing."""
    from tritonlab.content.course import load_course
    from tritonlab.grading.check.pipeline import CheckRun
    from tritonlab.models import Verdict

    exercise = load_course().exercise("vector-copy")
    key = "e" * 63 + ("g" if backend == "gpu" else "i")
    launcher_entry(caches.folder(caches.REPLAY, zygote.hardened), key)
    learner = f"learner-launch{backend}{int(zygote.hardened)}"
    check = CheckRun(exercise, exercise.starter, backend, zygote, cache=learner)
    check.verdict = Verdict(exercise.id, backend, 1, str(exercise.starter))
    check.share_launchers()
    seen = run_program(zygote, learner, "mark")["seen"]
    if backend == "gpu":
        assert check.verdict.timings["launchers_shared"] >= 1 and key in seen
        assert os.listdir(caches.folder(learner, zygote.hardened) / key) == [SO]
    else:
        assert "launchers_shared" not in check.verdict.timings and key not in seen


# Triton's own build of a host module into TRITON_CACHE_DIR (the launcher's path: compile_module_from_src), or its
# load from there; CC=/bin/false makes any build fail, so a load that succeeds found the module in the cache
BUILD_MODULE = r"""
import sys
from triton.runtime.build import compile_module_from_src
src = '''#include <Python.h>
static struct PyModuleDef m = {PyModuleDef_HEAD_INIT, "__triton_launcher", NULL, -1, NULL};
PyMODINIT_FUNC PyInit___triton_launcher(void) { return PyModule_Create(&m); }
'''
module = compile_module_from_src(src, "__triton_launcher")
print(module.__file__)
"""


def build_module(cache: Path, compiler: str | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, TRITON_CACHE_DIR=str(cache))
    if compiler:
        env["CC"] = compiler
    return subprocess.run(
        [sys.executable, "-c", BUILD_MODULE], env=env, capture_output=True, text=True, timeout=120
    )


def test_triton_loads_a_shared_launcher_from_the_learners_cache_without_building_it(tmp_path: Path) -> None:
    """With Triton's own cache layout: a host module Triton built in the replay's cache, once copied by
    share_launchers, is what Triton loads in a process whose cache is the learner's, with no C compiler to
    build it again (without the copy that process fails)."""
    replay, learner, empty = tmp_path / "replay", tmp_path / "learner", tmp_path / "empty"
    for folder in (learner, empty):
        folder.mkdir()
    built = build_module(replay)
    assert built.returncode == 0, built.stderr[-2000:]
    assert len(launchers.launchers_in(replay)) == 1
    assert launchers.share_launchers(replay, learner) == 1
    loaded = build_module(learner, "/bin/false")
    assert loaded.returncode == 0, loaded.stderr[-2000:]
    assert loaded.stdout.strip().startswith(str(learner))
    # the same load with nothing copied: a build, refused
    assert build_module(empty, "/bin/false").returncode != 0
