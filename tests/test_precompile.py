"""The replay's compile taken off a check's critical path (issue 40; grading/check/precompile.py,
grading/replay/precompile.py, grading/replay/variants.py): the stored variants are bounded and validated, the
precompile child never imports the learner's file, what it compiles is exactly the cache entry the replay's own
launch looks up (proved here for `GPUTarget("cuda", 90, 32)`, through Triton's launch path, without a GPU), and a
check keeps its replay's variants so that the next check precompiles them. The time saved is measured on a GPU
(`make gpu-verify`, its edited_kernel step)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tritonlab.grading import contracts
from tritonlab.grading.check import pipeline
from tritonlab.grading.check.precompile import Precompile, VariantStore
from tritonlab.grading.replay import variants
from tritonlab.models import Exercise
from tritonlab.runs import caches, hardening, sandbox

ROOT = Path(__file__).resolve().parent.parent
MATMUL = ROOT / "course/09-matmul-fusion/exercises/matmul/solution.py"
GOOD = {
    "kernel": "copy_kernel",
    "args": [
        ["ptr", "float32", True],
        ["ptr", "float16", False],
        ["int", 1000],
        ["none"],
        ["float", "0x1.0p+0"],
    ],
    "kwargs": {"BLOCK": ["int", 128], "ACC": ["dtype", "fp32"], "MODE": ["str", "ieee"], "F": ["bool", True]},
    "options": {"num_warps": 4, "num_stages": 3},
}


def with_(**change: object) -> dict:
    return {**GOOD, **change}


@pytest.mark.parametrize(
    "hostile",
    [
        "not a list",
        [GOOD] * (variants.MAX_VARIANTS + 1),
        [with_(kernel="../../etc")],
        [with_(kernel="x" * 65)],
        [with_(extra=1)],
        [with_(args=[["ptr", "complex128", True]])],
        [with_(args=[["ptr", "float32", 1]])],
        [with_(args=[["int", 1 << 80]])],
        [with_(args=[["int", True]])],
        [with_(args=[["float", "nan-ish"]])],
        [with_(args=[["str", "s" * 65]])],
        [with_(args=[["dtype", "torch.float32"]])],
        [with_(args=[["eval", "__import__('os')"]])],
        [with_(args=[[["int", 1]]])],
        [with_(args=[["int", 1]] * (variants.MAX_ARGS + 1))],
        [with_(kwargs={"not an identifier": ["int", 1]})],
        [with_(options={"num_warps": 1 << 20})],
        [with_(options={"num_warps": True})],
        [with_(options={"debug": True})],
        [with_(args=[["str", "x" * 60]] * 60, kwargs={})] * 30,  # over MAX_BYTES as JSON
    ],
)
def test_hostile_variants_are_refused(hostile: object) -> None:
    with pytest.raises(ValueError):
        variants.validate(hostile)


def test_good_variants_pass_once_each() -> None:
    assert variants.validate([GOOD, json.loads(json.dumps(GOOD))]) == [GOOD]


def test_the_store_keeps_validated_variants_per_learner_and_exercise_and_drops_a_bad_file(
    tmp_path: Path,
) -> None:
    store = VariantStore(tmp_path / "v")
    assert store.load("learner", "matmul") == []
    assert store.save("learner-7", "matmul", [GOOD] * 3 + [with_(kernel=f"k{i}") for i in range(40)]) == 32
    assert len(store.load("learner-7", "matmul")) == 32  # bounded: the first MAX_VARIANTS, no duplicate
    assert store.load("learner", "matmul") == [] and store.load("learner-7", "softmax") == []
    assert store.save("learner", "matmul", [with_(kernel="a;b")]) == 0  # refused whole, nothing written
    with pytest.raises(ValueError):
        store.path("learner", "../../x")
    with pytest.raises(ValueError):
        store.path("../learner", "matmul")
    path = store.path("learner-7", "matmul")
    for planted in (b"[" * 100_000, b"{" * 50, json.dumps([with_(options={"debug": 1})]).encode()):
        path.write_bytes(planted)  # what a learner's run could write there (layer 1: the user's rights)
        assert store.load("learner-7", "matmul") == [] and not path.exists()
    target = tmp_path / "elsewhere.json"
    target.write_text(json.dumps([GOOD]))
    path.symlink_to(target)
    assert store.load("learner-7", "matmul") == []  # never read through a link


KEY_MATCH = r"""
import glob, json, os, sys
from pathlib import Path
import torch
from tritonlab.grading.replay import precompile, variants
from tritonlab.grading.replay.source import build_kernels

cache = os.environ["TRITON_CACHE_DIR"]
source = open(sys.argv[1]).read().replace("pid = tl.program_id(0)", "pid = tl.program_id(0)  # " + sys.argv[2])
imported = sys.argv[3] != "replay"  # the check child's kernels (the file imported) rather than the replay's
precompile.use_target("cuda:90")

def launches():
    # the replay's arguments: real tensors at its alignments (a view one element in is not 16-aligned), sizes
    # that specialize differently (1 is a constant, multiples of 16 are marked divisible)
    for dtype, precision in ((torch.float32, "ieee"), (torch.float16, "tf32"), (torch.bfloat16, "tf32")):
        for m, n, k in ((64, 64, 64), (33, 20, 45), (1, 1, 1)):
            a = torch.empty(m * k + 1, dtype=dtype)[1:]
            b, c = torch.empty(k * n, dtype=dtype), torch.empty(m * n, dtype=dtype)
            args = [a, b, c, m, n, k, k, 1, n, 1, n, 1]
            kwargs = dict(BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, GROUP_M=8, UPCAST=False, PRECISION=precision)
            yield args, kwargs, {"num_warps": 4}

wanted = variants.validate([variants.describe("matmul_kernel", a, k, o) for a, k, o in launches()])
kernels, _ = build_kernels(source, "/learner/solution.py")  # the precompile child's way
done, errors, processes, made = precompile.compile_variants(kernels, wanted, 4)
copied = None
if sys.argv[3] == "copied":  # into a learner's cache by the parent, the replay's then gone: only the copies
    import shutil
    from tritonlab.runs import caches
    learner = cache + "-learner"
    os.makedirs(learner)
    copied = caches.copy_entries(Path(cache), Path(learner), made)
    shutil.rmtree(cache)
    os.environ["TRITON_CACHE_DIR"] = cache = learner
def files():  # every file of every entry, by inode: a compile writes its files anew, also in an existing entry
    return {(e.path, os.stat(e.path).st_ino) for d in os.scandir(cache) for e in os.scandir(d.path)}

entries, before = set(os.listdir(cache)), files()
if imported:  # the check child's: the file imported (elsewhere: the snapshot of each check has its own path)
    from tritonlab.grading import harness
    path = os.path.join(os.environ["TRITON_CACHE_DIR"] + "-src", "solution.py")
    os.makedirs(os.path.dirname(path))
    open(path, "w").write(source)
    launched = harness.load_learner(path).matmul_kernel
else:  # the replay child's own kernels, built again
    launched = build_kernels(source, "/learner/solution.py")[0]["matmul_kernel"]
for args, kwargs, options in launches():  # Triton's launch path, up to the launch (no GPU here)
    launched.warmup(*args, grid=(1,), **kwargs, **options)
after, written = set(os.listdir(cache)), files() - before
flipped = [dict(v, args=[["ptr", v["args"][0][1], not v["args"][0][2]]] + v["args"][1:]) for v in wanted[:1]]
precompile.compile_variants(kernels, flipped, 1)
print(json.dumps({"compiled": done, "errors": errors, "variants": len(wanted), "entries": len(entries),
                  "processes": processes, "made": len(made), "copied": copied,
                  "new": len(after - entries), "rewritten": len(written), "flipped_new": len(set(os.listdir(cache)) - after)}))
"""


@pytest.mark.parametrize("child", ["replay", "check", "copied"])
def test_the_precompile_makes_exactly_the_entries_the_childs_launch_looks_up(
    tmp_path: Path, child: str
) -> None:
    """For cuda:90, through Triton's own launch path: the variants compiled from their data form, then the
    child's real arguments warmed up in the same cache (the replay's kernels built from the text; the check
    child's from the file imported): no new entry, a cache hit each. `copied`: the entries the precompile
    reported copied into a learner's cache (runs/caches.py) and the replay's cache removed, then the check
    child's launches in the learner's: a hit each, so one compile serves both. A variant whose alignment is
    flipped makes a new entry: the comparison sees a specialization that differs."""
    env = os.environ | {
        "TRITON_INTERPRET": "0",
        "TRITON_CACHE_DIR": str(tmp_path / "cache"),
    }
    done = subprocess.run(
        [sys.executable, "-c", KEY_MATCH, str(MATMUL), os.urandom(6).hex(), child],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["errors"] == [] and got["compiled"] == got["variants"] == 9 and got["processes"] == 4, got
    assert got["entries"] >= 6 and got["new"] == got["rewritten"] == 0, got  # every launch found its entry
    assert got["made"] == got["entries"], got  # the precompile names every entry it compiled
    if child == "copied":
        assert got["copied"] == got["made"], got
    assert got["flipped_new"] == 1, got


LEARNER = """
import triton
import triton.language as tl

open(MARK, "w").write("the learner's top level ran")


@triton.jit
def copy_kernel(src, dst, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst + offs, tl.load(src + offs, mask=offs < n), mask=offs < n)
"""


@pytest.fixture(scope="module")
def zygote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sandbox.Zygote]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TRITONLAB_HOME", str(tmp_path_factory.mktemp("home")))
        z = sandbox.Zygote("interpreter")
        z.wait_ready()
        yield z
        z.close()


@pytest.fixture(scope="module", params=["basic", "hardened"])
def any_zygote(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[sandbox.Zygote]:
    """Both layers: hardened, the precompile child forks its compile workers inside bubblewrap and the
    replay's cache is bound at its own path."""
    if request.param == "basic":
        yield request.getfixturevalue("zygote")
        return
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TRITONLAB_HOME", str(tmp_path_factory.mktemp("home")))
        if not hardening.probe("interpreter")["hardened"]:
            pytest.skip(f"needs the hardened layer (bubblewrap): {hardening.probe('interpreter')['reason']}")
        z = sandbox.Zygote("interpreter", hardened=True)
        z.wait_ready()
        yield z
        z.close()


def test_the_precompile_child_never_imports_the_learners_file(
    any_zygote: sandbox.Zygote, tmp_path: Path
) -> None:
    zygote = any_zygote
    mark = tmp_path / "ran"
    text = f"MARK = {str(mark)!r}\n" + LEARNER
    file = tmp_path / "learner.py"
    file.write_text(text)
    wanted = [
        {
            "kernel": "copy_kernel",
            "args": [["ptr", "float32", True], ["ptr", "float32", True], ["int", 100 + k]],
            "kwargs": {"BLOCK": ["int", 64]},
            "options": {},
        }
        for k in (1, 28)  # 101 and 128: two specializations (128 is a multiple of 16)
    ] + [{"kernel": "missing", "args": [], "kwargs": {}, "options": {}}]
    replay_cache = caches.folder(caches.REPLAY, hardened=zygote.hardened)
    before = set(os.listdir(replay_cache))
    pre = Precompile(zygote, text, file, wanted, "interpreter", 120, target="cuda:90", workers=2)
    pre.wait(120)
    assert pre.report.get("processes") == 2, pre.report  # its compile forked, inside the sandbox
    assert not mark.exists(), pre.report  # the file's top level never ran
    assert pre.report.get("compiled") == 2, pre.report
    assert pre.report["errors"] == ["missing: no such kernel in the text"]
    assert len(set(os.listdir(replay_cache)) - before) >= 1  # compiled into the replay's cache


GPU_CHILD_LAUNCH = r"""
import json, os, sys
import torch
from tritonlab.grading.replay import precompile
from tritonlab.grading.replay.source import build_kernels

precompile.use_target("cuda:90")  # the one thing a GPU child has that this machine has not: its driver
kernel = build_kernels(open(sys.argv[1]).read(), sys.argv[1])[0]["copy_kernel"]  # as the replay child does
cache = os.environ["TRITON_CACHE_DIR"]
before = set(os.listdir(cache))
for n in (101, 128):
    src, dst = torch.empty(n), torch.empty(n)
    kernel.warmup(src, dst, n, grid=(1,), BLOCK=64)
print(json.dumps({"new": len(set(os.listdir(cache)) - before)}))
"""


def test_the_precompile_childs_entries_are_those_a_gpu_childs_launches_look_up(
    zygote: sandbox.Zygote, tmp_path: Path
) -> None:
    """The key match across processes, as on a GPU: the precompile child (its own entry, whatever it does to
    its environment) compiles two variants into a cache; then a process with the environment every child of a
    GPU zygote has (limits.child_environment("gpu")) warms up the same launches there: a cache hit each.
    Triton puts the cache-invalidating variables set in a process's environment (TRITON_DEFAULT_FP_FUSION,
    even at its default) into every cache key: a precompile child that set one the GPU children lack made
    entries no launch looked up (on the H200 an edited matmul's replay compiled every kernel again)."""
    from tritonlab.runs import limits

    text = f"MARK = {str(tmp_path / 'ran')!r}\n" + LEARNER
    file = tmp_path / "learner.py"
    file.write_text(text)
    wanted = [
        {
            "kernel": "copy_kernel",
            "args": [["ptr", "float32", True], ["ptr", "float32", True], ["int", n]],
            "kwargs": {"BLOCK": ["int", 64]},
            "options": {},
        }
        for n in (101, 128)
    ]
    cache = caches.learner_name(f"keys-{os.urandom(4).hex()}")
    pre = Precompile(zygote, text, file, wanted, "interpreter", 300, "cuda:90", cache, workers=1)
    pre.wait(300)
    assert pre.report.get("compiled") == 2 and pre.report["errors"] == [], pre.report
    folder = caches.folder(cache, hardened=zygote.hardened)
    assert len(os.listdir(folder)) >= 2
    stored = {f.rsplit(".", 1)[-1] for entry in os.listdir(folder) for f in os.listdir(folder / entry)}
    assert {"cubin", "ptx", "ttgir"} <= stored, stored  # whole: these entries are copied to a learner's cache
    env = limits.child_environment("gpu") | {"TRITON_CACHE_DIR": str(folder)}
    done = subprocess.run(
        [sys.executable, "-c", GPU_CHILD_LAUNCH, str(file)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"new": 0}


PROBE = """

import os as _os

_cache = _os.environ["TRITON_CACHE_DIR"]
_found = [e for e in _os.scandir(_cache) if any(f.name.startswith("__grp__") for f in _os.scandir(e.path))]
print(f"compiled entries at import: {len(_found)}")
"""


def test_a_check_keeps_its_replays_variants_and_the_next_check_precompiles_them(
    any_zygote: sandbox.Zygote, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On the interpreter the replay compiles nothing for a GPU, so the time is not measured here: that the
    pipeline keeps the variants after one check and hands them to the precompile of the next is, and what that
    compiled is in the learner's cache when the check child imports the file (hardened: the sandbox user's
    capped folder, the copies readable there)."""
    zygote = any_zygote
    monkeypatch.setattr(pipeline.CheckRun, "precompile_target", "cuda:90")
    solution = ROOT / "course/02-environment/exercises/vector-copy/solution.py"
    exercise = Exercise(
        "vector-copy", "", solution.parent, contracts.get("vector-copy").FUNCTION, {}, {}, {}, ()
    )
    cache = caches.learner_name("precompile-test")
    monkeypatch.setenv("TRITONLAB_PREDICT", "0")  # a first check compiles nothing ahead without a prediction
    first = pipeline.check(exercise, solution, "interpreter", zygote, seed=4, cache=cache)
    assert first.passed, first.failures
    assert "precompile_wait_s" not in first.timings  # nothing stored before the first check
    monkeypatch.delenv("TRITONLAB_PREDICT")
    kept = VariantStore().load(cache, "vector-copy")
    assert kept and all(v["kernel"] for v in kept)
    # the learner's own module, as it is imported, counts the compiled entries in its cache
    probe = solution.read_text() + PROBE
    second = pipeline.check(exercise, solution, "interpreter", zygote, seed=5, cache=cache, source=probe)
    assert second.passed, second.failures
    assert second.timings["precompiled"] == len(kept) and second.timings["precompile_wait_s"] >= 0
    assert "precompile_predicted" not in second.timings  # its own previous variants, not the reference's
    # what it compiled (distinct keys: fewer than the variants) copied into the learner's own cache, before
    # the check child started: one compile for both
    copied = second.timings["precompile_copied"]
    learner = caches.folder(cache, hardened=zygote.hardened)
    grouped = [
        e for e in os.listdir(learner) if any(f.startswith("__grp__") for f in os.listdir(learner / e))
    ]
    assert 3 <= copied <= len(kept) and len(grouped) == copied, (copied, grouped)
    assert f"compiled entries at import: {copied}" in second.output, second.output[-2000:]
    monkeypatch.setenv("TRITONLAB_PRECOMPILE", "0")  # turned off: nothing compiled ahead
    third = pipeline.check(exercise, solution, "interpreter", zygote, seed=6, cache=cache)
    assert (
        third.passed and "precompile_wait_s" not in third.timings and "precompile_copied" not in third.timings
    )


SCALE = """
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, B: tl.constexpr):
    offs = tl.program_id(0) * B + tl.arange(0, B)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)
"""


@pytest.mark.usefixtures("interpreted")
def test_the_replays_variants_from_the_records_alone_are_those_its_launches_have() -> None:
    """A GPU replay compiles every launch before the first runs (replay/child.py `compile_ahead`), from the
    records alone: a view's alignment is its offset into a fresh allocation. Those variants must be the ones
    its real launches then have (the buffers made, each view at its address)."""
    from tritonlab.grading.replay.replayer import Replayer
    from tritonlab.grading.replay.source import build_kernels

    def view(buf: int, dtype: str, offset: int) -> dict:
        return {"tensor": {"buf": buf, "dtype": dtype, "offset": offset, "shape": [8], "stride": [1]}}

    launches = [
        (view(0, "float32", 0), view(0, "float32", 1)),  # 4 bytes in: not 16-aligned
        (view(0, "float32", 4), view(1, "float16", 8)),  # 16 bytes in: aligned
        (view(1, "float16", 3), view(1, "float16", 16)),
    ]
    record = {
        "buffers": [
            {"kind": "alloc", "dtype": "float32", "numel": 40, "init": "poison"},
            {"kind": "alloc", "dtype": "float16", "numel": 40, "init": {"bits": 0}},
        ],
        "events": [
            {"op": "launch", "kernel": "scale_kernel", "grid": [1], "args": [x, out, {"int": n}],
             "kwargs": {"B": {"int": 16}, "num_warps": {"int": 2}}}
            for (x, out), n in zip(launches, (1, 16, 7), strict=True)
        ],
        "outputs": [],
    }  # fmt: skip
    run, lowered = build_kernels(SCALE, "<learner>")
    ahead = Replayer("cpu", None, materialize=False)  # type: ignore[arg-type]
    ahead.run_events(record, {}, lowered)
    real = Replayer("cpu", None)  # type: ignore[arg-type]
    real.build_buffers(record, {})
    real.steps(record, run, lowered)
    from_records = [variants.describe(*launch) for launch in ahead.launched]
    from_launches = [variants.describe(*launch) for launch in real.launched]
    assert [[a[2] for a in v["args"][:2]] for v in from_launches] == [
        [True, False],
        [True, True],
        [False, True],
    ]
    assert from_records == from_launches
    assert variants.validate(from_records) == from_records


@pytest.fixture(scope="module")
def gpu_zygote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sandbox.Zygote]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TRITONLAB_HOME", str(tmp_path_factory.mktemp("gpu-home")))
        z = sandbox.Zygote("gpu", pool=2)
        z.wait_ready()
        yield z
        z.close()


@pytest.mark.gpu
def test_on_the_gpu_an_edited_kernels_replay_finds_its_kernels_precompiled(
    gpu_zygote: sandbox.Zygote, tmp_path: Path
) -> None:
    """The key match on the GPU's own Triton and target: after one check of the matmul solution, an edited
    copy's check precompiles the stored variants beside its check child, and its replay compiles nothing
    itself (no new entry in the replay's cache)."""
    exercise = Exercise("matmul", "", MATMUL.parent, contracts.get("matmul").FUNCTION, {}, {}, {}, ())
    first = pipeline.check(exercise, MATMUL, "gpu", gpu_zygote, seed=11, timeout=180)
    assert first.passed, [f.to_json() for f in first.failures[:3]]
    edited = tmp_path / "solution.py"
    marker = "pid = tl.program_id(0)"
    edited.write_text(MATMUL.read_text().replace(marker, marker + "  # " + os.urandom(6).hex()))
    second = pipeline.check(exercise, edited, "gpu", gpu_zygote, seed=11, timeout=180)
    assert second.passed, [f.to_json() for f in second.failures[:3]]
    timings = second.timings
    assert timings.get("precompiled", 0) >= 1 and not timings.get("precompile_problem"), timings
    assert timings.get("replay_compiled") == 0, timings


def test_a_first_check_compiles_the_references_variants_once_for_both_caches(
    any_zygote: sandbox.Zygote, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A learner's first check of an exercise has no previous variants: the precompile child calls the reference
    solution on the check's own cases (replay/predict.py), compiles those variants from the learner's text and
    the parent copies them into the learner's cache before the check child starts, which finds them at import.
    Hardened too: the reference reaches the trusted child only as a copy in its own run folder."""
    zygote = any_zygote
    monkeypatch.setattr(pipeline.CheckRun, "precompile_target", "cuda:90")
    monkeypatch.setenv(
        "TRITONLAB_PREDICT", "1"
    )  # off by default (config.py: under load it cost more than it saved)
    solution = ROOT / "course/05-vector-add/exercises/vector-add/solution.py"
    exercise = Exercise(
        "vector-add", "", solution.parent, contracts.get("vector-add").FUNCTION, {}, {}, {}, ()
    )
    cache = caches.learner_name(f"first-{os.urandom(4).hex()}")
    probe = solution.read_text() + PROBE
    first = pipeline.check(exercise, solution, "interpreter", zygote, seed=7, cache=cache, source=probe)
    assert first.passed, first.failures
    timings = first.timings
    assert timings.get("precompile_predicted", 0) >= 2, timings  # several shapes' specializations
    assert timings["precompiled"] == timings["precompile_predicted"], timings
    assert not timings.get("precompile_problem"), timings
    copied = timings["precompile_copied"]
    assert copied >= 2 and f"compiled entries at import: {copied}" in first.output, first.output[-2000:]
    # the reference's launches are the replay's own: what the replay kept for the next check is what was predicted
    kept = VariantStore().load(cache, "vector-add")
    assert len(kept) == timings["precompile_predicted"], (kept, timings)
    monkeypatch.delenv("TRITONLAB_PREDICT")  # the default: no prediction
    other = caches.learner_name(f"first-{os.urandom(4).hex()}")
    off = pipeline.check(exercise, solution, "interpreter", zygote, seed=7, cache=other, source=probe)
    assert off.passed and "precompile_predicted" not in off.timings and "precompile_copied" not in off.timings
    assert "compiled entries at import: 0" in off.output, off.output[-2000:]


PREDICT = r"""
import json, shutil, sys
from pathlib import Path
from tritonlab.content.course import load_course
from tritonlab.grading import contracts
from tritonlab.grading.check import cases, job
from tritonlab.grading.replay import predict

exercise_id, seed, run_dir = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])
exercise = next(e for e in load_course().exercises() if e.id == exercise_id)
contract = contracts.get(exercise_id)
made = cases.make_cases(contract, seed, "interpreter")
job.write_job(exercise, exercise.solution, "interpreter", made, run_dir, getattr(contract, "ARG_NAMES", None))
shutil.copyfile(exercise.solution, run_dir / predict.REFERENCE)
spec = {"exercise": exercise_id, "function": exercise.function, "backend": "interpreter",
        "cases": json.loads((run_dir / "job.json").read_text())["cases"]}
print(json.dumps(predict.predict(spec, run_dir)))
"""


@pytest.mark.parametrize("exercise_id", ["softmax", "rmsnorm-backward", "dropout", "transpose"])
def test_the_predicted_variants_are_the_replays_own(
    zygote: sandbox.Zygote, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, exercise_id: str
) -> None:
    """For a check of the reference solution, the variants predicted from the reference on the check's cases
    (replay/predict.py, in a child with the interpreter off, as the precompile child is) are exactly the
    variants its replay launched: the same kernels, pointer dtypes and alignments, integer values and
    constexprs, several kernels per case included (rmsnorm-backward, dropout)."""
    from tritonlab.content.course import load_course

    monkeypatch.setattr(pipeline.CheckRun, "precompile_target", "cuda:90")
    monkeypatch.setenv("TRITONLAB_PREDICT", "0")  # the replay's variants alone; nothing compiled here
    exercise = next(e for e in load_course().exercises() if e.id == exercise_id)
    cache = caches.learner_name(f"predict-{os.urandom(4).hex()}")
    verdict = pipeline.check(exercise, exercise.solution, "interpreter", zygote, seed=9, cache=cache)
    assert verdict.passed, verdict.failures
    replayed = VariantStore().load(cache, exercise_id)
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"} | {"TRITON_INTERPRET": "0"}
    done = subprocess.run(
        [sys.executable, "-c", PREDICT, exercise_id, "9", str(tmp_path)],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    predicted, problems = json.loads(done.stdout.strip().splitlines()[-1])
    assert problems == []
    key = lambda v: json.dumps(v, sort_keys=True)  # noqa: E731
    assert replayed and sorted(map(key, predicted)) == sorted(map(key, replayed))


@pytest.mark.gpu
def test_on_the_gpu_a_first_check_compiles_each_kernel_once(
    gpu_zygote: sandbox.Zygote, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A learner's first check of matmul on the GPU's own Triton: the variants predicted from the reference are
    compiled once by the precompile and copied into the learner's cache, so neither the check child nor the
    replay compiles a kernel itself (new entries in either cache: none). On CPU tensors the prediction missed
    every kernel (check child 13, replay 12: H100-80GB-HBM3 run 2026-12-06 (2bb25b4)); on the GPU's own, the
    replay compiled none and the check child one (H100-80GB-HBM3 run 2026-12-06 (cb9bcb3)), the harness's bf16
    probe, which a GPU of capability 8.0 or more no longer compiles (not yet run on a GPU since)."""
    monkeypatch.setenv("TRITONLAB_PREDICT", "1")
    exercise = Exercise("matmul", "", MATMUL.parent, contracts.get("matmul").FUNCTION, {}, {}, {}, ())
    learner = tmp_path / "solution.py"
    marker = "pid = tl.program_id(0)"
    learner.write_text(
        MATMUL.read_text().replace(marker, marker + "  # " + os.urandom(6).hex())
    )  # never compiled
    cache = caches.learner_name(f"first-{os.urandom(4).hex()}")
    verdict = pipeline.check(exercise, learner, "gpu", gpu_zygote, seed=12, timeout=180, cache=cache)
    assert verdict.passed, [f.to_json() for f in verdict.failures[:3]]
    timings = verdict.timings
    said = json.dumps(timings, sort_keys=True)  # whole: pytest shortens a dict's repr
    assert timings.get("precompile_predicted", 0) >= 1 and not timings.get("precompile_problem"), said
    assert timings.get("check_compiled") == 0 and timings.get("replay_compiled") == 0, said


@pytest.mark.parametrize(("backend", "has_gpu", "device"), [
    ("gpu", True, "cuda"), ("gpu", False, "cpu"), ("interpreter", True, "cpu"),
])  # fmt: skip
def test_a_gpu_checks_prediction_runs_the_reference_on_the_gpus_tensors(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, backend: str, has_gpu: bool, device: str
) -> None:
    """A course file's host code may branch on the device (matmul's solution: another BLOCK_K and no upcast
    when `a.is_cuda`), so a GPU check's launches are predicted on the GPU's tensors where the precompile child
    has a GPU: on CPU tensors the prediction gave the interpreter's variants, none of which the GPU check
    launched (H100-80GB-HBM3 run 2026-12-06 (2bb25b4)). The GPU itself is what the GPU test above runs on."""
    import torch

    from tritonlab.grading.replay import predict

    seen: list[str] = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: has_gpu)
    monkeypatch.setattr(predict, "record_case", lambda *a: (seen.append(a[5]), ([], ""))[1])
    (tmp_path / predict.REFERENCE).write_text("def copy(x):\n    return x\n")
    job = {"exercise": "vector-copy", "function": "copy", "backend": backend,
           "cases": [{"name": "a", "args": [], "kwargs": {}}]}  # fmt: skip
    assert predict.predict(job, tmp_path) == ([], [])
    assert seen == [device]


COUNT_COMPILES = r"""
import json, os, subprocess, sys
import torch
from tritonlab.grading.replay import precompile, variants
from tritonlab.grading.replay.source import build_kernels
from tritonlab.runs.caches import kernels_in

SOURCE = '''
import triton
import triton.language as tl

@triton.jit
def scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)
'''
cache = os.environ["TRITON_CACHE_DIR"]
precompile.use_target("cuda:90")
kernels, _ = build_kernels(SOURCE, "/learner/solution.py")
x = torch.empty(64)
def wanted(blocks):
    return variants.validate([variants.describe("scale_kernel", [x, x, 64], {"BLOCK": b}, {"num_warps": 4})
                              for b in blocks])
if sys.argv[1] == "other":  # another check compiling into the same cache
    precompile.compile_variants(kernels, wanted([1024]), 1)
    sys.exit()
precompile.count_compiles()
counts, errors = [], []
errors += precompile.compile_variants(kernels, wanted([32, 64, 128]), 2)[1]  # two forks share three out
counts.append(precompile.compiled_here())
errors += precompile.compile_variants(kernels, wanted([32, 64, 128]), 1)[1]  # all three found: no compile
counts.append(precompile.compiled_here())
entries = kernels_in(cache)
subprocess.run([sys.executable, __file__, "other"], check=True)  # meanwhile, another process compiles one
kernels["scale_kernel"].warmup(x, x, 64, BLOCK=256, grid=(1,))  # and this process one more, in its own launch
counts.append(precompile.compiled_here())
print(json.dumps({"counts": counts, "errors": errors, "entries_before": entries, "entries_after": kernels_in(cache)}))
"""


def test_the_replays_compile_count_is_its_own_not_the_shared_caches(tmp_path: Path) -> None:
    """`replay_compiled` counts the kernels the replay child compiled itself (its compile-ahead forks included;
    a cache hit is none), not the entries other checks add meanwhile to the replay's cache, which a class
    shares: the whole-course load at 16 runs at once reported 63 kernels for an attention-forward replay whose
    check child compiled 12 (H100-80GB-HBM3 run 2026-12-06 (92a71f8))."""
    script = tmp_path / "count.py"
    script.write_text(COUNT_COMPILES)
    env = os.environ | {
        "TRITON_INTERPRET": "0",  # the suite's processes interpret: this one compiles, for cuda:90
        "TRITON_CACHE_DIR": str(tmp_path / "cache"),
        "PYTHONPATH": str(ROOT / "src"),
    }
    done = subprocess.run(
        [sys.executable, str(script), "main"], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["errors"] == [] and got["counts"] == [3, 3, 4], got
    assert got["entries_after"] == got["entries_before"] + 2, got  # the other process's entry is in the cache


SAME_KERNEL = r"""
import json, os, sys
import torch
from tritonlab.grading.replay import precompile, variants
from tritonlab.grading.replay.source import build_kernels

SOURCE = '''
import triton
import triton.language as tl

@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)
'''
precompile.use_target("cuda:90")
kernels, _ = build_kernels(SOURCE, "/learner/solution.py")
x = torch.empty(64)
# vector-copy's replay: lengths Triton does not tell apart (7, 127, 1025: neither 1 nor a multiple of 16;
# 1024, 98432: multiples of 16), one kernel each, and BLOCK, a constexpr, that it does
lengths = [7, 1024, 127, 98432, 1025]
wanted = variants.validate(
    [variants.describe("copy_kernel", [x, x, n], {"BLOCK": 256}, {}) for n in lengths]
    + [variants.describe("copy_kernel", [x, x, 7], {"BLOCK": b}, {}) for b in (64, 128)]
)
precompile.count_compiles()
done, errors, processes, entries = precompile.compile_variants(kernels, wanted, 4)
print(json.dumps({"done": done, "errors": errors, "processes": processes, "entries": len(entries),
                  "compiled": precompile.compiled_here(),
                  "classes": len({precompile.compile_class(v, kernels["copy_kernel"]) for v in wanted}),
                  "blind": len({precompile.compile_class(v) for v in wanted})}))
"""


def test_variants_of_one_kernel_are_compiled_once_whatever_the_forks(tmp_path: Path) -> None:
    """A variant records integers by value, so a replay's seven launches of vector-copy's kernel are seven
    variants and four kernels (three lengths neither 1 nor a multiple of 16, two multiples of 16, two other
    BLOCKs). Shared out between four forks by `compile_class`, each kernel is compiled once: the replay of a
    lessons 2–8 check used to compile 14 where its check child compiled 10, one fork compiling what another
    compiled beside it."""
    script = tmp_path / "same.py"
    script.write_text(SAME_KERNEL)
    env = os.environ | {
        "TRITON_INTERPRET": "0",
        "TRITON_CACHE_DIR": str(tmp_path / "cache"),
        "PYTHONPATH": str(ROOT / "src"),
    }
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["errors"] == [] and got["done"] == 7 and got["classes"] == 4, got
    assert got["compiled"] == got["entries"] == 4, got  # one compile a kernel, every entry named
    assert got["processes"] == 4, got  # still shared out: one class a fork
    assert got["blind"] == 2, got  # without the kernel, BLOCK counts as any integer: coarser, never finer
