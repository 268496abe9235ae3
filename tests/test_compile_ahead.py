"""Compiling ahead when the learner saves (issue 40; service/ahead.py, the gate's background slots in
service/gate.py): a save starts, once the typing settles, the trusted precompiles of the saved text into the
replay's cache and the learner's own, in a free slot only; the check that follows finds every kernel compiled.
It yields to every other run: no free slot, no compile; a run that has to wait stops it; a newer save or the
learner's check stops it. Compiled here for `cuda:90` without a GPU (as tests/test_precompile.py does); the
time it saves on a GPU is measured by `make gpu-verify` (its edited_kernel step, `--save-first`)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tritonlab.grading.check import pipeline
from tritonlab.grading.check.precompile import Precompile, VariantStore
from tritonlab.runs import caches
from tritonlab.service import Service
from tritonlab.service import ahead as ahead_module
from tritonlab.service.gate import FairGate

ROOT = Path(__file__).resolve().parent.parent
SOLUTION = (ROOT / "course/02-environment/exercises/vector-copy/solution.py").read_text()


def edited(tag: str) -> str:
    """The solution with a harmless change inside its kernel: a text Triton has never compiled."""
    marker = "    pid = tl.program_id"
    assert marker in SOLUTION
    return SOLUTION.replace(marker, f"    # edit {tag}\n{marker}", 1)


# ---- the gate's background slots ------------------------------------------------------------------------


def test_a_background_slot_is_taken_only_when_free_and_nobody_waits() -> None:
    gate = FairGate(2)
    first = gate.acquire(owner="a")
    bg = gate.try_background("b")
    assert bg is not None and gate.active == 2
    assert gate.try_background("c") is None  # full
    gate.release(bg)
    assert gate.try_background("b") is not None
    assert gate.try_background("b") is None  # one per owner
    gate.release(first)


def test_a_background_slot_is_not_its_owners_slot() -> None:
    """The learner's own check starts beside their compile ahead (it then stops it: service/ahead.py)."""
    gate = FairGate(2)
    bg = gate.try_background("a")
    assert bg is not None
    got = []
    thread = threading.Thread(target=lambda: got.append(gate.acquire(owner="a")), daemon=True)
    thread.start()
    thread.join(2)
    assert got and got[0].granted
    gate.release(got[0])
    gate.release(bg)


@pytest.mark.parametrize("kind", ["full", "exclusive", "idle-only"])
def test_a_run_that_must_wait_stops_every_background_run(kind: str) -> None:
    gate = FairGate(2)
    held = gate.acquire(owner="x") if kind == "full" else None
    stops: list[str] = []
    bg = gate.try_background("b", preempt=lambda: stops.append("b"))
    assert bg is not None
    got = []
    kwargs = {"exclusive": True} if kind == "exclusive" else {}
    if kind == "idle-only":
        kwargs = {"idle_wait": 10.0}
    thread = threading.Thread(target=lambda: got.append(gate.acquire(owner="y", **kwargs)), daemon=True)
    thread.start()
    deadline = time.monotonic() + 2
    while not stops and time.monotonic() < deadline:
        time.sleep(0.01)
    assert stops == ["b"]  # asked once, at once
    assert not got  # the slot is the background run's until it ends
    gate.release(bg)  # the background run ended: the waiting run starts
    thread.join(2)
    assert got and got[0].granted
    assert stops == ["b"]
    gate.release(got[0])
    if held is not None:
        gate.release(held)


def test_no_background_slot_while_a_run_waits_or_an_exclusive_run_holds_the_machine() -> None:
    gate = FairGate(1)
    held = gate.acquire(owner="a")
    waiter = threading.Thread(target=lambda: gate.release(gate.acquire(owner="b")), daemon=True)
    waiter.start()
    deadline = time.monotonic() + 2
    while gate.waiting == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert gate.try_background("c") is None
    gate.release(held)
    waiter.join(2)
    alone = gate.acquire(exclusive=True)
    assert FairGate(4).try_background("c") is not None and gate.try_background("c") is None
    gate.release(alone)


# ---- the service: a save compiles ahead --------------------------------------------------------------------


@pytest.fixture
def service(home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Service]:
    """An interpreter service that compiles ahead for cuda:90 (the target a GPU check's children compile for),
    with the typing's pause short; a first check of vector-copy has stored its replay's variants."""
    monkeypatch.setattr(pipeline.CheckRun, "precompile_target", "cuda:90")
    monkeypatch.setattr(ahead_module, "DEBOUNCE_S", 0.3)
    svc = Service(workspace_dir=home / "ws", backend="interpreter", lang="en")
    svc.prefetch_cases = False
    svc.cache_name = caches.learner_name(f"ahead-{os.urandom(3).hex()}")
    try:
        exercise = svc.exercise("vector-copy")
        first = svc.check(exercise, text=SOLUTION, speed=False)
        assert first.passed, first.failures
        assert VariantStore().load(svc.cache_name, "vector-copy")
        yield svc
    finally:
        svc.close()


def entries(service: Service, name: str) -> set[str]:
    return set(os.listdir(caches.folder(name, hardened=service.zygote().hardened)))


def files(service: Service, name: str) -> set[tuple[str, int]]:
    """Every file of every entry with its inode: a compile writes its files anew, also in an existing entry."""
    root = caches.folder(name, hardened=service.zygote().hardened)
    return {(f.path, f.stat().st_ino) for e in os.scandir(root) for f in os.scandir(e.path)}


def test_a_save_compiles_the_saved_texts_kernels_into_both_caches(service: Service) -> None:
    """After the save, the precompile a check of that text starts beside its check child finds every kernel
    in the learner's cache: it adds no entry (what the check child's own compile looks up: test_precompile)."""
    exercise = service.exercise("vector-copy")
    text = edited("one")
    wanted = VariantStore().load(service.cache_name, "vector-copy")
    learner, replay = entries(service, service.cache_name), entries(service, caches.REPLAY)
    _, version = service.read_code(exercise)
    service.save_code(exercise, text, version)
    outcome = service.ahead.wait(service.cache_name, "vector-copy", 300)
    assert outcome is not None and outcome["status"] == "compiled", outcome
    assert outcome["replay"]["compiled"] == len(wanted) and outcome["replay"]["errors"] == [], outcome
    assert outcome["copied"] == len(outcome["replay"]["entries"]) >= 3, outcome  # one compile, copied
    assert entries(service, service.cache_name) - learner and entries(service, caches.REPLAY) - replay
    after = files(service, service.cache_name)
    again = Precompile(
        service.zygote(), text, service.learner_file(exercise), wanted, "interpreter", 300, "cuda:90",
        service.cache_name,
    )  # fmt: skip
    again.wait(300)
    assert again.report.get("compiled") == len(wanted), again.report
    assert files(service, service.cache_name) == after  # nothing left for the check to compile
    verdict = service.check(exercise, text=text, speed=False)
    assert verdict.passed, verdict.failures
    # so the check of that text starts no precompile of its own (one child fewer) ...
    assert verdict.timings.get("precompile_skipped") == "compiled ahead", verdict.timings
    assert "precompile_s" not in verdict.timings
    # ... and a check of any other text does
    other = service.check(exercise, text=edited("other"), speed=False)
    assert other.passed and "precompile_skipped" not in other.timings and other.timings["precompiled"] > 0


def test_saves_in_one_burst_compile_the_last_text_once(service: Service) -> None:
    exercise = service.exercise("vector-copy")
    for k in range(4):
        _, version = service.read_code(exercise)
        service.save_code(exercise, edited(f"burst {k}"), version)
        time.sleep(0.05)
    outcome = service.ahead.wait(service.cache_name, "vector-copy", 300)
    assert outcome is not None and outcome["status"] == "compiled", outcome
    assert outcome["text"] == ahead_module._digest(edited("burst 3"))


def test_the_learners_check_stops_their_compile_ahead(service: Service) -> None:
    exercise = service.exercise("vector-copy")
    text = edited("checked")
    _, version = service.read_code(exercise)
    service.save_code(exercise, text, version)
    verdict = service.check(exercise, text=text, speed=False)  # within the pause: the compile never starts
    assert verdict.passed
    outcome = service.ahead.wait(service.cache_name, "vector-copy", 30)
    assert outcome is not None and outcome["status"] == "stopped", outcome


def test_no_free_slot_no_compile_ahead(service: Service) -> None:
    exercise = service.exercise("vector-copy")
    gate = service.gate()
    held = [gate.acquire() for _ in range(gate.size)]
    try:
        _, version = service.read_code(exercise)
        service.save_code(exercise, edited("busy"), version)
        outcome = service.ahead.wait(service.cache_name, "vector-copy", 30)
    finally:
        for ticket in held:
            gate.release(ticket)
    assert outcome is not None and outcome["status"] == "no-slot", outcome


def test_a_queued_run_stops_a_compile_ahead_at_once(
    service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The compile ahead holds the one free slot (its children made never to end: without the stop the run
    would wait LIMIT_S, 30 s here); a run that arrives stops it and starts as soon as its children are gone
    (starting two sandboxed children and killing them: about 0.3 s here when idle, 3 s on a loaded CI)."""
    exercise = service.exercise("vector-copy")
    gate = service.gate()
    held = [gate.acquire() for _ in range(gate.size - 1)]
    monkeypatch.setattr(Precompile, "finished", lambda self, timeout: time.sleep(timeout) or False)
    monkeypatch.setattr(ahead_module, "LIMIT_S", 30.0)
    try:
        _, version = service.read_code(exercise)
        service.save_code(exercise, edited("preempted"), version)
        deadline = time.monotonic() + 30
        while gate.active < gate.size:  # the compile ahead took the free slot
            assert time.monotonic() < deadline
            time.sleep(0.05)
        asked = time.monotonic()
        ticket = gate.acquire(owner="neighbour")
        waited = time.monotonic() - asked
        gate.release(ticket)
        outcome = service.ahead.wait(service.cache_name, "vector-copy", 30)
    finally:
        for t in held:
            gate.release(t)
    assert outcome is not None and outcome["status"] == "stopped", outcome
    assert waited < 10, waited


def test_nothing_is_compiled_ahead_where_checks_do_not_compile(home: Path) -> None:
    svc = Service(workspace_dir=home / "ws", backend="interpreter", lang="en")
    try:
        exercise = svc.exercise("vector-copy")
        assert (
            svc.ahead.saved(svc, exercise, SOLUTION) == "nothing to compile ahead on the interpreter backend"
        )
        _, version = svc.read_code(exercise)
        svc.save_code(exercise, edited("cpu"), version)
        assert svc.ahead.outcome(svc.cache_name, "vector-copy") is None
    finally:
        svc.close()


def test_the_web_editors_save_compiles_ahead(service: Service) -> None:
    """The route the editor's autosave calls (PUT /api/exercises/ID/code) starts it."""
    from fastapi.testclient import TestClient

    from tritonlab.web import create_app
    from tritonlab.web.security import cookie_name

    token, base = "ahead-token-0123456789abcdef", "http://127.0.0.1:8000"
    with TestClient(create_app(service, token), base_url=base) as client:
        cookie = client.get(f"/?token={token}", follow_redirects=False).cookies[cookie_name(token)]
        client.cookies.set(cookie_name(token), cookie)
        version = client.get("/api/exercises/vector-copy/code").json()["version"]
        text = edited("web")
        saved = client.put(
            "/api/exercises/vector-copy/code",
            json={"text": text, "base_version": version},
            headers={"Origin": base},
        )
        assert saved.status_code == 200, saved.text
    outcome = service.ahead.wait(service.cache_name, "vector-copy", 300)
    assert outcome is not None and outcome["status"] == "compiled", outcome
    assert outcome["text"] == ahead_module._digest(text)


def test_in_a_class_each_learners_compile_ahead_is_their_own(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two learners of one class share the server's compile-ahead state, not their caches or variants: the
    learner who checked before gets their saved text compiled into their own cache only; the other, who never
    checked, has no variants stored, so nothing is compiled for them (and nothing reaches the first's cache)."""
    from tritonlab.classroom.room import Classroom
    from tritonlab.web import create_app

    monkeypatch.setattr(pipeline.CheckRun, "precompile_target", "cuda:90")
    monkeypatch.setattr(ahead_module, "DEBOUNCE_S", 0.3)
    base = Service(workspace_dir=home / "ws", backend="interpreter", lang="en")
    room = Classroom(f"sqlite:///{home / 'classroom.db'}", adopt=Path("/nonexistent"))
    room.init("Ahead")
    create_app(base, "unused-token-0123456789", classroom=room)
    try:
        ada = room.learner_service(base, room.add("ada")[0])
        bob = room.learner_service(base, room.add("bob")[0])
        assert ada.cache_name != bob.cache_name and ada.ahead is bob.ahead is base.ahead
        exercise = ada.exercise("vector-copy")
        assert ada.check(exercise, text=SOLUTION, speed=False).passed
        bob_before = entries(bob, bob.cache_name)
        ada_before = entries(ada, ada.cache_name)
        for learner, tag in ((ada, "ada"), (bob, "bob")):
            _, version = learner.read_code(exercise)
            learner.save_code(exercise, edited(tag), version)
        ada_out = base.ahead.wait(ada.cache_name, "vector-copy", 300)
        bob_out = base.ahead.wait(bob.cache_name, "vector-copy", 60)
        assert ada_out is not None and ada_out["status"] == "compiled", ada_out
        assert ada_out["text"] == ahead_module._digest(edited("ada"))
        assert bob_out is not None and bob_out["status"] == "no-variants", bob_out
        assert entries(ada, ada.cache_name) - ada_before
        assert entries(bob, bob.cache_name) == bob_before
    finally:
        base.close()
        room.close()


def test_a_save_right_after_a_stop_is_compiled(service: Service, monkeypatch: pytest.MonkeyPatch) -> None:
    """A save that arrives while a stopped compile ahead is still ending (its thread slowed here) starts a
    compile of its own: it is not folded into the stopped one."""
    exercise = service.exercise("vector-copy")
    real = ahead_module.AheadCompiles._ended

    def slow_end(self: ahead_module.AheadCompiles, job: object, outcome: dict) -> None:
        time.sleep(0.5)
        real(self, job, outcome)

    monkeypatch.setattr(ahead_module.AheadCompiles, "_ended", slow_end)
    _, version = service.read_code(exercise)
    service.save_code(exercise, edited("first"), version)
    service.ahead.stop(service.cache_name, "vector-copy")  # as the learner's check does
    _, version = service.read_code(exercise)
    service.save_code(exercise, edited("second"), version)
    time.sleep(0.6)  # the stopped one has ended by now
    outcome = service.ahead.wait(service.cache_name, "vector-copy", 300)
    assert outcome is not None and outcome["status"] == "compiled", outcome
    assert outcome["text"] == ahead_module._digest(edited("second"))


def test_a_check_announces_its_learners_run_before_it_waits_for_a_slot(
    service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check tells the zygote whose run comes (sandbox.Zygote.expect) before it queues, so that in a class
    a warm child is bound to that learner's cache while the check waits (caches.warm_plan), and asks for the
    run directory only after: the announcement comes first."""
    zygote = service.zygote()
    order: list[tuple[str, str]] = []
    expect, new_run_dir = zygote.expect, zygote.new_run_dir
    monkeypatch.setattr(
        zygote, "expect", lambda cache, *a: (order.append(("expect", cache)), expect(cache, *a))
    )
    monkeypatch.setattr(
        zygote,
        "new_run_dir",
        lambda cache=caches.LEARNER: (order.append(("run", cache)), new_run_dir(cache))[1],
    )
    verdict = service.check(service.exercise("vector-copy"), text=SOLUTION, speed=False)
    assert verdict.passed
    assert order[0] == ("expect", service.cache_name) and ("run", service.cache_name) in order, order
