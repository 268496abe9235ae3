"""scripts/load_gpu.py (issue 37): its plan, its accounting, and one short run against a real classroom server.

The smoke run is the script as the lead runs it on the H200, made small: the interpreter, the local executor,
3 classroom learners and 6 checks (right files and one wrong file) through the web API. Its report is read
against its own per-check records, so a broken count, percentile or verdict test in the script fails here.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from gpuload import plan, verify  # noqa: E402
from gpuload.report import expected_ok, summarize  # noqa: E402
from ray_throughput import percentile  # noqa: E402


def test_the_mixes_hold_the_lessons_they_name() -> None:
    every = plan.exercises()
    early = plan.mix_exercises("l2-8")
    assert {e.id for e in early} == {e.id for e in every if 2 <= e.lesson <= 8}
    assert {"vector-copy", "vector-add", "softmax"} <= {e.id for e in early}
    assert not {"matmul", "attention-forward"} & {e.id for e in early}
    assert [e.id for e in plan.mix_exercises("course")] == [e.id for e in every]
    # every exercise that has deliberately wrong files gets them (tests/wrong/<id with _>/)
    with_wrong = {p.name.replace("_", "-") for p in plan.WRONG.iterdir() if p.is_dir()}
    assert {e.id for e in every if e.wrong} == with_wrong & {e.id for e in every}


def test_the_plan_mixes_right_wrong_and_one_timeout_in_fifty() -> None:
    chosen = plan.mix_exercises("l2-8")
    items = plan.build(chosen, 200, 0.5, 50, seed=3)
    assert [i.index for i in items] == list(range(200))
    timeouts = [i for i in items if i.kind == "timeout"]
    assert [i.index for i in timeouts] == [49, 99, 149, 199]
    assert all("while True" in i.text for i in timeouts)
    wrong = [i for i in items if i.kind == "wrong"]
    assert all(i.file.startswith("tests/wrong/") for i in wrong)
    assert all(i.text == (ROOT / i.file).read_text() for i in wrong)
    right = [i for i in items if i.kind == "right"]
    assert all(i.file.endswith("/solution.py") for i in right)
    # half of each exercise's uses are wrong files where it has some (vector-copy has none: always right)
    assert 0.35 < len(wrong) / len(items) < 0.5
    assert {i.exercise for i in items} == {e.id for e in chosen}
    assert plan.build(chosen, 200, 0.5, 50, seed=3) == items  # deterministic for a seed


def test_a_verdict_unlike_its_file_is_a_mismatch_and_the_counts_add_up() -> None:
    def rec(index: int, kind: str, passed: bool | None, kinds: tuple[str, ...] = (), **more: object) -> dict:
        r = {
            "index": index,
            "exercise": "vector-add",
            "kind": kind,
            "file": "f",
            "submitted_at": 100.0 + index,
        }
        if passed is not None:
            r |= {"passed": passed, "kinds": list(kinds), "latency_s": 1.0 + index, "queue_wait_s": 0.5}
        return r | more

    good = [
        rec(0, "right", True),
        rec(1, "wrong", False, ("wrong-result",)),
        rec(2, "timeout", False, ("timeout",)),
    ]
    assert all(expected_ok(r) for r in good)
    bad = [
        rec(3, "right", False, ("wrong-result",)),
        rec(4, "wrong", True),
        rec(5, "timeout", False, ("crash",)),
        rec(6, "right", False, ("worker-lost",)),
    ]
    assert not any(expected_ok(r) for r in bad)
    cut = rec(7, "right", None, unfinished=True, error="cut")
    broken = rec(8, "right", None, error="check answered 500")
    s = summarize([*good, *bad, cut, broken], planned=10)
    assert (s["submitted"], s["verdicts"], s["unfinished"], s["errors"], s["mismatches"]) == (9, 7, 1, 1, 4)
    assert s["accounted"] and not s["ok"]
    assert s["by_kind"] == {
        "right": {"passed": 1, "failed": 2},
        "wrong": {"passed": 1, "failed": 1},
        "timeout": {"passed": 0, "failed": 2},
    }
    assert sum(s["verdict_kinds"].values()) >= s["verdicts"]
    assert summarize(good, planned=3)["ok"]


@pytest.mark.slow
def test_a_short_run_through_the_web_api_reports_consistent_figures(tmp_path: Path) -> None:
    out, doc = tmp_path / "report.json", tmp_path / "capacity.md"
    doc.write_text("# capacity\n")
    argv = [sys.executable, str(ROOT / "scripts" / "load_gpu.py"), "--backend", "interpreter"]
    argv += [
        "--executor",
        "local",
        "--learners",
        "3",
        "--checks",
        "6",
        "--exercises",
        "vector-copy,vector-add",
    ]
    argv += ["--warmup", "0", "--max-seconds", "90", "--out", str(out), "--write", str(doc), "--distinct"]
    # one hostile learner beside them: a file that fails at once here (it asks for the CUDA driver), submitted
    # again as soon as each check of it ends; its checks are reported on their own, never in the figures
    hostile = ROOT / "tests" / "adversarial" / "learners" / "gpu_memory_raw.py"
    argv += ["--hostile", f"{hostile}:vector-copy"]
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=150)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads(out.read_text())
    printed = json.loads(done.stdout.splitlines()[-1])
    s, records = report["summary"], report["records"]
    assert printed["summary"] == s and report["ok"] and not report["failure"]
    assert report["config"]["distinct"] is True  # every text its own (plan.distinct): verdicts as the files'

    # the hostile learner checked and failed again and again, apart from the planned checks
    h, hostile_records = report["hostile"], report["hostile_records"]
    assert report["config"]["hostile"] == [f"{hostile}:vector-copy"]
    assert h["checks"] == len(hostile_records) >= 2 and h["verdicts"] >= 1, h
    assert "passed" not in h["verdict_kinds"] and all(not r.get("passed") for r in hostile_records), h
    assert all(r.get("learner", "gpuhostile0") == "gpuhostile0" for r in hostile_records)
    assert not any(r.get("learner") == "gpuhostile0" for r in records)

    # every check submitted got exactly one verdict, and it is what its file must give
    assert s["planned"] == s["submitted"] == s["verdicts"] == len(records) == 6
    assert s["unfinished"] == s["errors"] == s["mismatches"] == 0
    assert sorted(r["index"] for r in records) == list(range(6))
    assert {r["kind"] for r in records} == {"right", "wrong"}
    for r in records:
        assert r["passed"] is (r["kind"] == "right"), r
        assert r["kinds"] if r["kind"] == "wrong" else not r["kinds"], r
    assert s["by_kind"]["right"] == {"passed": sum(r["kind"] == "right" for r in records), "failed": 0}
    assert s["by_kind"]["wrong"] == {"passed": 0, "failed": sum(r["kind"] == "wrong" for r in records)}
    assert s["verdict_kinds"]["passed"] == s["by_kind"]["right"]["passed"]

    # the figures are those of the records
    latencies = [r["latency_s"] for r in records]
    assert (
        s["latency_s"]["p50"]
        == percentile(latencies, 50)
        <= s["latency_s"]["p95"]
        == percentile(latencies, 95)
    )
    assert s["latency_s"]["max"] == max(latencies)
    waits = [r["queue_wait_s"] for r in records]
    assert all(0 <= w <= lat for w, lat in zip(waits, latencies, strict=True)), records
    assert s["queue_wait_reported"] == 6 and s["queue_wait_s"]["p95"] == percentile(waits, 95)
    first = min(r["submitted_at"] for r in records)
    last = max(r["submitted_at"] + r["latency_s"] for r in records)
    assert s["window_s"] == pytest.approx(last - first, abs=0.01)
    assert s["checks_per_minute"] == pytest.approx(60 * 6 / (last - first), rel=0.01)
    assert s["checks_per_minute"] > 0

    util = report["utilisation"]
    assert util["cpu"]["samples"] > 0 and 0 <= util["cpu"]["busy_mean_pct"] <= 100
    assert util["gpu"]["available"] or util["gpu"]["util_mean_pct"] == "n/a"
    split = util["cpu"]["split_core_s"]  # the runs happen below the server: their CPU is counted there
    assert split["tree"] > 0 and split["server"] > 0 and split["client"] >= 0, split
    assert split["machine"] >= split["server"] + split["tree"] + split["client"] - 1.0, split
    assert all(r["timings"]["check_cpu_s"] > 0 for r in records), records
    # each child's reaped usage, and their medians in the summary
    for child in ("check", "replay"):
        for figure in ("cpu_s", "faults"):
            values = [r["timings"][f"{child}_{figure}"] for r in records]
            assert all(v > 0 for v in values), (child, figure, values)
            assert s["children"][f"{child}_{figure}"] == percentile(values, 50), s["children"]
        assert s["children"][f"{child}_switches"] >= 0, s["children"]
    # the interpreter launches no compiled kernel: no check copies host launchers (runs/launchers.py)
    assert s["children"]["launchers_shared"] is None and not any(
        "launchers_shared" in r["timings"] for r in records
    )
    # each kind of run's CPU per check, as the verdicts report it: no more than the runs below the server used
    runs = s["runs_cpu_per_check"]
    assert runs["check"] == round(sum(r["timings"]["check_cpu_s"] for r in records) / 6, 3), runs
    assert runs["replay"] > 0 and runs["speed_time"] == 0, runs  # the interpreter times nothing
    assert runs["all"] <= split["tree"] / 6 + 0.01, (runs, split)
    # the server's warm children over the load, from its /api/status (none on the interpreter without a pool)
    warm = s["warm_children_per_check"]
    assert warm is not None and set(warm) == {"made", "taken", "ready_ahead", "dropped_unused"}, warm
    assert 0 <= warm["ready_ahead"] <= warm["taken"] and warm["dropped_unused"] <= warm["made"], warm

    # `make gpu-verify`'s load steps keep the figures the goals name, read from this very report
    kept = verify.figures(report)
    assert kept["summary"]["verdicts"] == 6 and kept["summary"]["mismatches"] == 0, kept
    assert kept["summary"]["checks_per_minute"] == s["checks_per_minute"]
    assert kept["summary"]["latency_s"]["p95"] == s["latency_s"]["p95"]
    assert kept["cpu_busy_mean_pct"] == util["cpu"]["busy_mean_pct"]

    # it stopped what it started: the server (and its runs) and the class's folder
    with pytest.raises(ProcessLookupError):
        os.kill(report["server"]["pid"], 0)
    assert not Path(report["server"]["home"]).exists()

    # the markdown section, between its markers, says the same
    text = doc.read_text()
    assert text.startswith("# capacity\n")
    section = text.split("<!-- gpu-load-l2-8-local-interpreter:begin -->")[1].split(
        "<!-- gpu-load-l2-8-local-interpreter:end -->"
    )[0]
    assert f"**{s['checks_per_minute']}**" in section and "| 6 / 6 / 0 / 0 |" in section
    assert "every check's text unlike any other's (`--distinct`)" in section
    assert f"{s['children']['check_cpu_s']:.2f} s, {s['children']['check_faults']:.0f} faults" in section
    assert f"check {runs['check']:.2f}, precompile" in section and f"({runs['all']:.2f} in all)" in section
    assert f"| hostile learners (`{hostile}:vector-copy`), not in the figures above" in section
    assert f"| {h['checks']} / {h['verdicts']} / {h['unfinished']} / {h['errors']};" in section


def test_gpu_samples_are_read_per_gpu_and_unreadable_ones_dropped(tmp_path: Path) -> None:
    """The parser of `nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader,nounits` output
    (no GPU here: a stand-in executable prints what nvidia-smi prints on a two-GPU machine, then junk)."""
    from gpuload import sampler

    two = tmp_path / "two-gpus"
    two.write_text("#!/bin/sh\nprintf '37, 1024\\n 0, 512\\n'\n")
    junk = tmp_path / "junk"
    junk.write_text("#!/bin/sh\nprintf '[N/A], [N/A]\\n'\n")
    failing = tmp_path / "failing"
    failing.write_text("#!/bin/sh\necho 'NVIDIA-SMI has failed' >&2\nexit 9\n")
    for exe in (two, junk, failing):
        exe.chmod(0o755)
    assert sampler.gpu_sample(str(two)) == [(37.0, 1024.0), (0.0, 512.0)]
    assert sampler.gpu_sample(str(junk)) is None
    assert sampler.gpu_sample(str(failing)) is None
    s = sampler.Sampler(0.05)
    s.nvidia_smi = str(two)
    s.gpu = [[(37.0, 1024.0), (0.0, 512.0)], [(63.0, 2048.0), (10.0, 512.0)]]
    gpu = s.summary()["gpu"]
    assert gpu["gpus"] == 2 and gpu["util_mean_pct"] == 27.5 and gpu["util_max_pct"] == 63.0
    assert gpu["mem_max_mib"] == 2048.0 and gpu["per_gpu"][0]["util_mean_pct"] == 50.0
    none = sampler.Sampler()
    none.nvidia_smi = None  # a machine without nvidia-smi
    assert none.summary()["gpu"] == {
        "available": False,
        "reason": "no nvidia-smi on PATH",
        "util_mean_pct": "n/a",
    }


def test_the_cpu_split_counts_a_servers_whole_process_tree(tmp_path: Path) -> None:
    """A stand-in server (a real process) whose child spins 0.8 s of CPU in a grandchild it reaps, then idles:
    the sampler puts that time below the server (`tree`), not on the server's own process, and the split is
    only given once both ends were read."""
    from gpuload import sampler

    go = tmp_path / "go"
    code = (
        "import os, sys, time\n"
        "while not os.path.exists(sys.argv[1]):\n"
        "    time.sleep(0.02)\n"
        "if os.fork() == 0:\n"
        "    if os.fork() == 0:\n"
        "        end = time.process_time() + 0.8\n"
        "        while time.process_time() < end:\n"
        "            pass\n"
        "        os._exit(0)\n"
        "    os.wait()\n"
        "    time.sleep(30)\n"
        "    os._exit(0)\n"
        "time.sleep(30)\n"
    )
    server = subprocess.Popen([sys.executable, "-c", code, str(go)])
    try:
        s = sampler.Sampler(0.05, server_pid=server.pid)
        assert s.cpu_split() is None
        time.sleep(0.3)  # the stand-in's interpreter start is not part of the measured window
        s.start()
        go.touch()
        time.sleep(2.0)
        s.stop()
        split = s.cpu_split()
    finally:
        server.kill()
        server.wait()
    assert split is not None and split["tree"] >= 0.7 and split["server"] < 0.3, split
    assert split["machine"] >= split["tree"] + split["server"] - 0.1, split
    assert s.summary()["cpu"]["split_core_s"] == split


def test_warm_children_per_check_are_the_loads_difference() -> None:
    from gpuload.report import warm_cell, warm_per_check

    before = {"made": 17, "taken": 0, "ready_ahead": 0, "dropped_unused": 0}
    after = {"made": 317, "taken": 300, "ready_ahead": 250, "dropped_unused": 12}
    got = warm_per_check({"before": before, "after": after}, 100)
    assert got == {"made": 3.0, "taken": 3.0, "ready_ahead": 2.5, "dropped_unused": 0.12}
    assert warm_cell(got) == "3.00 / 3.00 / 2.50 / 0.12"
    assert warm_per_check({"before": None, "after": after}, 100) is None  # the server keeps none
    assert warm_per_check({"before": before, "after": {"made": "x"}}, 100) is None
    assert warm_per_check({"before": before, "after": after}, 0) is None


def test_rechecks_are_one_learners_edited_checks_in_order() -> None:
    """`--rechecks 3`: each planned check becomes three of one learner, the file then the file edited (every
    kernel on another line: compiled anew, with the previous check's launches), sent one after the other by
    the same learner; the plan's other rules (timeouts alone) hold."""
    import threading

    from gpuload.load import Deadline, Load

    chosen = plan.mix_exercises("l2-8")
    items = plan.build(chosen, 20, 0.5, 7, seed=3, rechecks=3)
    assert len(items) == 20 and [i.index for i in items] == list(range(20))
    groups: dict[int, list] = {}
    for item in items:
        if item.kind == "timeout":
            assert item.group == -1
        else:
            groups.setdefault(item.group, []).append(item)
    for members in groups.values():
        first = members[0]
        assert {(m.exercise, m.kind, m.file) for m in members} == {(first.exercise, first.kind, first.file)}
        assert [m.text for m in members] == [first.text] + [
            f"# load_gpu.py: edit {n}\n" + first.text for n in range(1, len(members))
        ]
    assert max(len(m) for m in groups.values()) == 3

    seen: list[tuple[str, int]] = []

    class Fake:
        def __init__(self, name: str) -> None:
            self.name = name

        def check(self, item, read_timeout: float) -> dict:  # noqa: ANN001
            seen.append((self.name, item.index))
            time.sleep(0.01)
            return {"index": item.index, "exercise": item.exercise, "kind": item.kind, "file": item.file}

    load = Load([Fake(f"l{k}") for k in range(4)], 0.0, Deadline(60.0), threading.Event())
    load.run(items)
    records = load.collect()
    assert [r["index"] for r in records] == list(range(20))
    who = dict((index, name) for name, index in seen)
    for members in groups.values():
        indices = [m.index for m in members]
        assert len({who[i] for i in indices}) == 1, indices  # one learner per group ...
        mine = [i for name, i in seen if name == who[indices[0]]]
        assert [i for i in mine if i in indices] == indices  # ... in order


def test_the_cpu_below_the_server_is_split_by_kind(tmp_path: Path) -> None:
    """A stand-in server starts a stand-in zygote (a real process with the zygote's module in its command
    line) and another helper process; the zygote spins 0.3 s itself, reaps a run that spun 0.8 s and keeps a
    second run alive after it spun 0.5 s; the helper spins 0.6 s. The split puts each where it belongs."""
    from gpuload import sampler
    from gpuload.report import below_cell

    go = tmp_path / "go"
    spin = "def spin(s):\n    end = time.process_time() + s\n    while time.process_time() < end:\n        pass\n"
    wait_go = "while not os.path.exists(sys.argv[1]):\n    time.sleep(0.02)\n"
    zygote = (
        "import os, sys, time\n" + spin + wait_go + "if os.fork() == 0:\n    spin(0.8)\n    os._exit(0)\n"
        "os.wait()\n"
        "if os.fork() == 0:\n    spin(0.5)\n    time.sleep(30)\n    os._exit(0)\n"
        "spin(0.3)\n"
        "time.sleep(30)\n"
    )
    helper = "import os, sys, time\n" + spin + wait_go + "spin(0.6)\ntime.sleep(30)\n"
    server_code = (
        "import subprocess, sys, time\n"
        "z = subprocess.Popen([sys.executable, '-c', sys.argv[2], sys.argv[1], '-m', 'tritonlab.runs.zygote'])\n"
        "h = subprocess.Popen([sys.executable, '-c', sys.argv[3], sys.argv[1]])\n"
        "time.sleep(30)\n"
    )
    server = subprocess.Popen(
        [sys.executable, "-c", server_code, str(go), zygote, helper], start_new_session=True
    )
    try:
        time.sleep(1.0)  # the three interpreters' start is not part of the measured window
        s = sampler.Sampler(0.05, server_pid=server.pid)
        s.start()
        go.touch()
        time.sleep(3.0)
        s.stop()
        split = s.cpu_split()
    finally:
        os.killpg(server.pid, signal.SIGKILL)  # the stand-ins and the run left alive with them
        server.wait()
    assert split is not None, split
    below = split["below"]
    assert 0.2 <= below["zygote"] < 0.6, split
    assert 0.7 <= below["runs_ended"] < 1.1, split
    assert 0.4 <= below["runs_alive"] < 0.8, split
    assert 0.5 <= below["other"] < 0.9, split
    assert list(below["other_by_command"])[0].startswith("python"), split
    assert abs(sum(below[k] for k in ("zygote", "runs_ended", "runs_alive", "other")) - split["tree"]) <= 0.3
    # bubblewrap's command line names the zygote's module too: it is not the zygote (it counts as other)
    bwrap = "/usr/bin/bwrap --die-with-parent --unshare-pid /venv/bin/python3 -m tritonlab.runs.zygote gpu"
    assert not sampler.is_zygote(bwrap) and sampler.short_command(bwrap) == "bwrap"
    assert sampler.is_zygote("/venv/bin/python3 -m tritonlab.runs.zygote gpu --drop 65534:65534")
    assert below_cell(split, 2).startswith(f"{below['zygote'] / 2:.2f} / {below['runs_ended'] / 2:.2f} / ")


def test_distinct_checks_share_no_kernel_line_and_keep_their_code() -> None:
    """`--distinct`: each check's text is its file with lines on top, a count no other check has (with
    `--rechecks` edits too), so no kernel starts on the line another check's does (Triton's compile key has
    the kernel's text and first line) while the code itself is the file's."""
    chosen = plan.mix_exercises("l2-8")
    for rechecks in (1, 3):
        base = plan.build(chosen, 40, 0.5, 7, seed=5, rechecks=rechecks)
        items = plan.distinct(base, rechecks)
        assert [(i.index, i.exercise, i.kind, i.file, i.group) for i in items] == [
            (i.index, i.exercise, i.kind, i.file, i.group) for i in base
        ]
        first_lines = []
        for old, new in zip(base, items, strict=True):
            assert new.text.endswith(old.text) and new.text != old.text
            shift = new.text[: len(new.text) - len(old.text)]
            assert shift.startswith("# load_gpu.py --distinct") and shift.strip("\n").count("\n") == 0
            kernel = old.text.split("\n").index("@triton.jit") if "@triton.jit" in old.text.split("\n") else 0
            first_lines.append((old.file, shift.count("\n") + kernel))
        assert len(set(first_lines)) == len(first_lines), rechecks
