"""The classroom database on SQLite and on a real PostgreSQL: migrations, adoption of a single-user
progress file, accounts and the log-in back-off, sessions, per-learner isolation, code with conflicts, the
teacher's matrix and its CSV, and durability on SQLite (WAL, synchronous=FULL, kill -9 after the ack)."""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from tritonlab.classroom.auth import FREE_TRIES, LoginRefused, delay_for
from tritonlab.classroom.room import Classroom, csv_safe
from tritonlab.content.course import load_course
from tritonlab.store.accounts import AccountError
from tritonlab.store.classroom import ClassroomDB
from tritonlab.store.database import schema_revision
from tritonlab.store.progress import Store
from tritonlab.store.workspace import ConflictError

ROOT = Path(__file__).resolve().parent.parent
COURSE = ROOT / "tests" / "fixtures" / "course"
NO_LEGACY = Path("/nonexistent/progress.db")


@pytest.fixture
def room(classroom_url: str, home: Path) -> Classroom:
    made = Classroom(classroom_url, adopt=NO_LEGACY)
    yield made
    made.close()


def test_migrations_reach_head_and_are_idempotent(classroom_url: str) -> None:
    db = ClassroomDB(classroom_url, legacy_progress=NO_LEGACY)
    assert schema_revision(db.engine) == "0003"
    names = set(sa.inspect(db.engine).get_table_names())
    assert {"users", "sessions", "classes", "learner_attempts", "learner_code", "alembic_version"} <= names
    db.close()
    again = ClassroomDB(classroom_url, legacy_progress=NO_LEGACY)  # a second upgrade changes nothing
    assert schema_revision(again.engine) == "0003"
    again.close()


def test_a_single_user_progress_file_is_adopted_not_lost(classroom_url: str, tmp_path: Path) -> None:
    legacy = tmp_path / "progress.db"
    old = Store(legacy)
    old.record_attempt(
        {
            "exercise": "vector-copy",
            "passed": False,
            "backend": "interpreter",
            "seed": 3,
            "failures": [{"kind": "wrong_values"}],
        }
    )
    old.record_attempt({"exercise": "vector-copy", "passed": True, "backend": "interpreter", "seed": 4})
    old.record_hint("vector-copy", 0)
    old.record_quiz_result("01-intro", 1.0, True)
    old.set_state("last_lesson", "01-intro")
    before = legacy.read_bytes()
    room = Classroom(classroom_url, adopt=legacy)
    local = room.user("local")
    mine = room.db.learner(local.id)
    assert [a["passed"] for a in mine.attempts()] == [False, True]
    assert mine.passed_exercises() == {"vector-copy"} and mine.hints_shown("vector-copy") == 1
    assert mine.best_quiz()["01-intro"]["passed"] and mine.get_state("last_lesson") == "01-intro"
    assert not local.has_password  # nobody can log in as `local` until a teacher sets a password
    assert Store(legacy).attempts()[-1]["passed"] and legacy.read_bytes()[:100] == before[:100]
    room.close()
    # the migration runs once: opening again does not adopt twice
    room = Classroom(classroom_url, adopt=legacy)
    assert len(room.db.learner(local.id).attempts()) == 2
    room.close()


# Where each table of the single-user progress file goes in the classroom database, and the columns compared.
ADOPTED = {
    "attempts": (
        "learner_attempts",
        ("exercise", "at", "backend", "passed", "duration_s", "seed", "verdict"),
    ),
    "hints_shown": ("learner_hints", ("exercise", "hint_index", "at")),
    "quiz_answers": ("learner_quiz_answers", ("lesson", "question", "answer", "score", "at")),
    "quiz_results": ("learner_quiz_results", ("lesson", "score", "passed", "at")),
    "state": ("learner_state", ("key", "value")),
}


def test_adoption_keeps_every_row_of_every_table(classroom_url: str, tmp_path: Path) -> None:
    """Every table of the single-user file (read from the file itself, so a table added there later fails this
    test until the migration adopts it) arrives whole: the same rows, value for value, as the learner `local`."""
    import sqlite3

    legacy = tmp_path / "progress.db"
    old = Store(legacy)
    for n in range(3):
        old.record_attempt({"exercise": f"ex-{n}", "passed": n % 2 == 0, "backend": "interpreter", "seed": n})
        old.record_hint(f"ex-{n}", n)
        old.record_quiz_answer("01-intro", f"q{n}", f"answer {n}", n / 2)
        old.record_quiz_result(f"0{n}-lesson", n / 3, n > 0)
        old.set_state(f"key-{n}", f"value {n}")
    with sqlite3.connect(legacy) as conn:
        tables = {
            r[0]
            for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            if not r[0].startswith("sqlite_")
        }
        assert tables <= set(ADOPTED), f"tables the adoption does not know: {tables - set(ADOPTED)}"
        before = {
            name: sorted(conn.execute(f"SELECT {', '.join(ADOPTED[name][1])} FROM {name}").fetchall())
            for name in tables
        }
    room = Classroom(classroom_url, adopt=legacy)
    try:
        uid = room.user("local").id
        with room.db.engine.connect() as conn:
            for name, rows in before.items():
                target, columns = ADOPTED[name]
                got = conn.execute(
                    sa.text(f"SELECT {', '.join(columns)} FROM {target} WHERE user_id = :u"), {"u": uid}
                ).fetchall()
                normal = sorted(tuple(int(v) if isinstance(v, bool) else v for v in r) for r in got)
                assert len(rows) == 3 and normal == rows, f"{name} -> {target}: {normal} != {rows}"
    finally:
        room.close()


def test_init_add_roster_and_formula_safe_export(room: Classroom) -> None:
    made = room.init("GPU 101")
    assert made["teacher"]["username"] == "teacher" and len(made["teacher"]["password"]) >= 12
    assert made["join_path"].startswith("/join/")
    with pytest.raises(AccountError, match="already holds a class"):
        room.init("again")
    user, password = room.add("alice")
    assert room.auth.authenticate("alice", password, "1.2.3.4").id == user.id
    with pytest.raises(AccountError, match="taken"):
        room.add("Alice")
    with pytest.raises(AccountError, match="not a valid username"):
        room.add("../x")
    with pytest.raises(AccountError, match="row 2"):  # checked before anything is made
        room.import_csv("username,display_name\nbob,Bob\nbob,Bob again\n")
    assert room.db.user_by_name("bob") is None
    with pytest.raises(AccountError, match="row 2: the display name"):  # a display name the class cannot show
        room.import_csv("username,display_name\ncleo,Cleo\ndan,Dan\x00Null\n")
    assert room.db.user_by_name("cleo") is None
    rows = room.import_csv('username,display_name,role\nbob,=HYPERLINK("http://x")\ncarol,@SUM(A1),teacher\n')
    assert [r["role"] for r in rows] == ["learner", "teacher"]
    table = list(csv.reader(io.StringIO(room.progress_csv(load_course(COURSE)))))
    names = {r[0]: r[1] for r in table[1:]}
    assert names["bob"] == '\'=HYPERLINK("http://x")' and "carol" not in names  # teachers are not learners
    assert [csv_safe(v) for v in ("+1", "-2", "@x", "=y", "ok", 3)] == ["'+1", "'-2", "'@x", "'=y", "ok", 3]


def test_login_back_off_is_per_account_and_address_and_unlockable(room: Classroom) -> None:
    user, password = room.add("dave")
    for _ in range(FREE_TRIES):
        with pytest.raises(LoginRefused) as refused:
            room.auth.authenticate("dave", "wrong-password", "10.0.0.1")
        assert refused.value.retry_after == 0
    with pytest.raises(LoginRefused) as refused:  # now even the right password waits
        room.auth.authenticate("dave", password, "10.0.0.1")
    assert refused.value.retry_after > 0
    assert room.auth.authenticate("dave", password, "10.0.0.2").id == user.id  # no lockout from elsewhere
    room.unlock(user)
    assert room.auth.authenticate("dave", password, "10.0.0.1").id == user.id
    assert delay_for(FREE_TRIES + 20) == 900.0
    room.set_disabled(user, True)
    with pytest.raises(LoginRefused, match="disabled"):
        room.auth.authenticate("dave", password, "10.0.0.3")
    with pytest.raises(LoginRefused, match="wrong"):
        room.auth.authenticate("nobody-here", password, "10.0.0.3")


def test_an_account_without_a_password_never_opens(room: Classroom, tmp_path: Path) -> None:
    """An account with no password yet (made by `classroom add` without one is impossible, but the adoption of a
    single-user file makes `local` so) refuses every password, the dummy hash's own included: the log-in checks
    unknown names against that dummy hash, so its text must never open an account."""
    from tritonlab.classroom.auth import hasher

    dummy_text = "tritonlab-no-such-user"
    hash_, dummy = hasher()
    assert hash_.verify(dummy, dummy_text)  # the control: this is the text the dummy hash was made from
    user = room.db.add_user("nopass", "No password", "learner", None)
    assert not user.has_password
    for n, guess in enumerate((dummy_text, "", "nopass", "password", dummy)):
        with pytest.raises(LoginRefused, match="wrong"):
            room.auth.authenticate("nopass", guess, f"10.0.1.{n}")


def test_sessions_expire_end_with_disable_and_store_only_hashes(room: Classroom) -> None:
    user, _ = room.add("erin")
    sid, csrf = room.db.create_session(user.id, 3600)
    assert room.db.session(sid, 600) == (room.user("erin"), csrf)
    with room.db.engine.begin() as db:
        stored = [r[0] for r in db.execute(sa.text("SELECT id_hash FROM sessions"))]
    assert sid not in stored and len(stored) == 1
    assert room.db.session(sid, idle_s=-1) is None  # idle too long: gone
    assert room.db.session(sid, 600) is None
    sid, _ = room.db.create_session(user.id, -1)  # past its lifetime
    assert room.db.session(sid, 600) is None
    sid, _ = room.db.create_session(user.id, 3600)
    room.set_disabled(user, True)
    assert room.db.session(sid, 600) is None


def test_learner_data_is_isolated_and_code_conflicts(room: Classroom) -> None:
    course = load_course(COURSE)
    exercise = course.exercise("vector-copy")
    a, _ = room.add("anna")
    b, _ = room.add("ben")
    sa_, sb = room.db.learner(a.id), room.db.learner(b.id)
    sa_.record_attempt({"exercise": "vector-copy", "passed": True, "backend": "interpreter", "seed": 1})
    sa_.record_hint("vector-copy", 0)
    sa_.set_state("last_lesson", "01-x")
    sa_.record_quiz_result("01-x", 1.0, True)
    assert sb.attempts() == [] and sb.passed_exercises() == set() and sb.hints_shown("vector-copy") == 0
    assert sb.get_state("last_lesson") is None and sb.best_quiz() == {}
    ca, cb = room.db.code(a.id, course), room.db.code(b.id, course)
    starter, v0 = cb.read(exercise)
    v1 = ca.save(exercise, "# anna's code\n", v0)
    assert cb.read(exercise) == (starter, v0) and ca.read(exercise)[1] == v1
    with pytest.raises(ConflictError):
        ca.save(exercise, "# stale editor\n", v0)
    ca.save(exercise, "# forced\n", v0, force=True)
    assert [b["why"] for b in ca.backups(exercise)] == ["overwritten"]
    assert ca.reset(exercise) and ca.read(exercise)[0] == starter
    assert cb.backups(exercise) == []
    matrix = room.matrix(course)
    cells = {row["username"]: row["cells"]["vector-copy"] for row in matrix["learners"]}
    assert cells["anna"]["passed"] and cells["ben"] is None


def test_matrix_lists_stuck_learners_with_their_last_failure(room: Classroom) -> None:
    course = load_course(COURSE)
    user, _ = room.add("fay")
    store = room.db.learner(user.id)
    for kind in ("out_of_bounds", "wrong_values", "wrong_values"):
        store.record_attempt(
            {
                "exercise": "vector-copy",
                "passed": False,
                "backend": "interpreter",
                "seed": 1,
                "failures": [{"kind": kind, "message": "m"}],
            }
        )
    stuck = room.matrix(course)["stuck"]
    assert [(s["username"], s["attempts"], s["last_failure"]) for s in stuck] == [("fay", 3, "wrong_values")]


def test_sqlite_connections_are_wal_and_synchronous_full(tmp_path: Path) -> None:
    db = ClassroomDB(f"sqlite:///{tmp_path / 'c.db'}", legacy_progress=NO_LEGACY)
    with db.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 2  # FULL
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
    db.close()


def test_postgresql_connections_commit_durably(request: pytest.FixtureRequest) -> None:
    """The PostgreSQL counterpart of the test above: the store's connections leave synchronous_commit on (a
    commit is acknowledged only once the server flushed its WAL; the test server itself runs without fsync,
    tests/classroom_pg.py) and do not autocommit half a write."""
    url = request.getfixturevalue("postgres").new_database()
    db = ClassroomDB(url, legacy_progress=NO_LEGACY)
    with db.engine.connect() as conn:
        assert conn.exec_driver_sql("SHOW synchronous_commit").scalar() == "on"
        assert conn.get_isolation_level() != "AUTOCOMMIT"
    db.close()


def test_a_class_writing_at_once_loses_no_write(classroom_url: str) -> None:
    """Eight learners write at the same moment, each from its own thread and connection, as a class's requests do:
    a save of their code (read, compare, write), a state key and a hint (read, then insert or update) and an
    attempt, 20 rounds each. No write may fail — not on another writer's lock, not half-way because another
    writer committed between its read and its write — and every one is stored."""
    import threading

    course = load_course(COURSE)
    exercise = course.exercise("vector-copy")
    db = ClassroomDB(classroom_url, legacy_progress=NO_LEGACY)
    users = [db.add_user(f"w{n}", f"w{n}", "learner", None) for n in range(8)]
    errors: list[str] = []
    start = threading.Barrier(len(users))
    rounds = 20

    def learner(user_id: int) -> None:
        store, code = db.learner(user_id), db.code(user_id, course)
        start.wait()
        for n in range(rounds):
            try:
                code.save(exercise, f"# {user_id} round {n}\n", code.read(exercise)[1])
                store.set_state("round", str(n))
                store.record_hint(f"ex-{n}", 0)
                store.record_attempt(
                    {"exercise": "vector-copy", "passed": False, "backend": "cpu", "seed": n}
                )
            except Exception as exc:  # noqa: BLE001 - every failure is the finding
                errors.append(f"learner {user_id}, round {n}: {type(exc).__name__}: {exc}"[:300])

    threads = [threading.Thread(target=learner, args=(u.id,)) for u in users]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    try:
        assert not errors, f"{len(errors)} writes failed, the first: {errors[0]}"
        for user in users:
            store, code = db.learner(user.id), db.code(user.id, course)
            assert code.read(exercise)[0] == f"# {user.id} round {rounds - 1}\n"
            assert store.get_state("round") == str(rounds - 1)
            assert all(store.hints_shown(f"ex-{n}") == 1 for n in range(rounds))
            assert [a["seed"] for a in store.attempts()] == list(range(rounds))
    finally:
        db.close()


# A learner's every kind of acknowledged write, in turn, until killed: an attempt, a save of their code, a state
# key, a hint, a quiz answer. Each line is printed only after the call returned, that is after its commit.
WRITER = """
import sys
from pathlib import Path
from tritonlab.content.course import load_course
from tritonlab.store.classroom import ClassroomDB
course = load_course(Path(sys.argv[2]))
exercise = course.exercise("vector-copy")
db = ClassroomDB(sys.argv[1], legacy_progress=None)
user = db.add_user("w", "w", "learner", None)
store, code = db.learner(user.id), db.code(user.id, course)
n = 0
while True:
    kind = ("attempt", "save", "state", "hint", "quiz")[n % 5]
    if kind == "attempt":
        store.record_attempt({"exercise": "vector-copy", "passed": n % 2 == 0, "backend": "interpreter", "seed": n})
    elif kind == "save":
        code.save(exercise, f"# save {n}\\n", code.read(exercise)[1])
    elif kind == "state":
        store.set_state("last_exercise", str(n))
    elif kind == "hint":
        store.record_hint(f"ex-{n}", 0)
    else:
        store.record_quiz_answer("01-only", "mask", str(n), 1.0)
    print(kind, n, flush=True)  # acknowledged: the call returned, so its transaction is committed
    n += 1
"""


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_acknowledged_writes_survive_kill_9(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Every write a learner's actions make (attempt, code save, state, hint, quiz answer) that was acknowledged
    before a SIGKILL is in the database afterwards, on SQLite and on PostgreSQL."""
    url = (
        f"sqlite:///{tmp_path / 'k.db'}"
        if backend == "sqlite"
        else request.getfixturevalue("postgres").new_database()
    )
    child = subprocess.Popen(
        [sys.executable, "-c", WRITER, url, str(COURSE)], stdout=subprocess.PIPE, text=True
    )
    acked: dict[str, list[int]] = {}
    deadline = time.monotonic() + 60
    while sum(map(len, acked.values())) < 40 and time.monotonic() < deadline:
        line = child.stdout.readline().split()
        if line:
            acked.setdefault(line[0], []).append(int(line[1]))
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    assert sum(map(len, acked.values())) >= 40 and len(acked) == 5, acked
    db = ClassroomDB(url, legacy_progress=NO_LEGACY)
    user = db.user_by_name("w")
    store, code = db.learner(user.id), db.code(user.id, load_course(COURSE))
    assert set(acked["attempt"]) <= {a["seed"] for a in store.attempts()}
    text = code.read(load_course(COURSE).exercise("vector-copy"))[0]
    assert text.startswith("# save ") and int(text.split()[2]) >= max(acked["save"]), text
    assert int(store.get_state("last_exercise")) >= max(acked["state"])
    assert all(store.hints_shown(f"ex-{n}") == 1 for n in acked["hint"])
    with db.engine.connect() as conn:
        answers = {int(r[0]) for r in conn.execute(sa.text("SELECT answer FROM learner_quiz_answers"))}
    assert set(acked["quiz"]) <= answers
    db.close()


# ---- the opt-in speed leaderboard (store/leaderboard.py), through the store API the check path uses ---------


def gpu_verdict(exercise: str, ms: float | None, passed: bool = True, **speed: object) -> dict:
    """A verdict as `Service.check` stores it: `speed` is perf/bench_learner.speed_summary's report."""
    report = (
        None if ms is None else {"ms": ms, "achieved": 1.0, "unit": "GB/s", "gpu": "NVIDIA H200", **speed}
    )
    return {"exercise": exercise, "backend": "gpu", "passed": passed, "seed": 1, "speed": report}


def test_leaderboard_ranks_best_passing_gpu_times_of_opted_in_learners(room: Classroom) -> None:
    from tritonlab.store import leaderboard

    course = load_course(COURSE)
    users = {n: room.add(n, n.title())[0] for n in ("anna", "ben", "carl", "dora")}
    store = {n: room.db.learner(u.id) for n, u in users.items()}
    store["anna"].record_attempt(gpu_verdict("vector-copy", 0.050))
    store["anna"].record_attempt(gpu_verdict("vector-copy", 0.020))  # her best
    store["anna"].record_attempt(gpu_verdict("vector-copy", 0.001, passed=False))  # failing: never ranked
    store["ben"].record_attempt(gpu_verdict("vector-copy", 0.030))
    store["ben"].record_attempt({**gpu_verdict("vector-copy", 0.002), "backend": "interpreter"})  # no GPU
    store["ben"].record_attempt(gpu_verdict("vector-copy", 0.003, error="timed out"))  # no time measured
    store["ben"].record_attempt(gpu_verdict("vector-copy", 0.004, pct_of_roof=400.0))  # beyond the roof
    store["carl"].record_attempt(gpu_verdict("vector-copy", 0.010))  # fastest, but never chose a name
    store["dora"].record_attempt(gpu_verdict("vector-copy", 0.015))
    tess, _ = room.add(
        "tess", "Tess", "teacher"
    )  # a teacher trying the exercise is not ranked among learners
    room.db.learner(tess.id).record_attempt(gpu_verdict("vector-copy", 0.005))
    room.set_leaderboard_name(tess, "Tess")
    room.set_leaderboard_name(users["anna"], "  Anna K  ")
    room.set_leaderboard_name(users["ben"], "<b>ben</b>")
    room.set_leaderboard_name(users["dora"], "Dora")
    room.set_disabled(users["dora"], True)  # a disabled account leaves the board

    board = room.leaderboard(course)
    assert board["enabled"]
    rows = board["exercises"]["vector-copy"]
    assert [(r["rank"], r["name"], r["ms"]) for r in rows] == [(1, "Anna K", 0.020), (2, "<b>ben</b>", 0.030)]
    assert rows[0]["gpu"] == "NVIDIA H200"
    assert room.leaderboard_name(users["carl"]) is None

    with pytest.raises(AccountError, match="taken"):  # names are unique, whatever their case
        room.set_leaderboard_name(users["carl"], "anna k")
    with pytest.raises(AccountError, match="control"):
        room.set_leaderboard_name(users["carl"], "carl\u202e")
    with pytest.raises(AccountError, match="at most"):
        room.set_leaderboard_name(users["carl"], "c" * (leaderboard.NAME_MAX + 1))
    room.set_leaderboard_name(users["ben"], "")  # leaving
    assert [r["name"] for r in room.leaderboard(course)["exercises"]["vector-copy"]] == ["Anna K"]

    room.set_leaderboard(False)  # the teacher switches it off: nobody sees anything
    assert room.leaderboard(course) == {"enabled": False, "exercises": {}}
    room.set_leaderboard(True)
    assert room.leaderboard(course)["exercises"]["vector-copy"][0]["name"] == "Anna K"


def test_migration_0002_takes_existing_attempts_speed_from_their_verdicts(classroom_url: str) -> None:
    from tritonlab.store.database import make_engine, upgrade

    engine = make_engine(classroom_url)
    upgrade(engine, NO_LEGACY, target="0001")  # a database made before the leaderboard existed
    with engine.begin() as conn:
        conn.execute(
            sa.text(
                "INSERT INTO users (username, display_name, role, disabled, created_at) "
                "VALUES ('old', 'Old', 'learner', false, 0)"
            )
        )
        for passed, verdict in (
            (True, gpu_verdict("vector-copy", 0.125)),
            (False, gpu_verdict("vector-copy", 0.1)),
        ):
            conn.execute(
                sa.text(
                    "INSERT INTO learner_attempts (user_id, exercise, at, backend, passed, duration_s, verdict) "
                    "VALUES (1, 'vector-copy', 1, 'gpu', :passed, 0, :verdict)"
                ),
                {"passed": passed, "verdict": json.dumps({**verdict, "passed": passed})},
            )
    engine.dispose()
    db = ClassroomDB(classroom_url, legacy_progress=NO_LEGACY)
    assert schema_revision(db.engine) == "0003"
    with db.engine.begin() as conn:
        rows = conn.execute(
            sa.text("SELECT passed, speed_ms, speed_gpu FROM learner_attempts ORDER BY id")
        ).fetchall()
    assert [(bool(p), ms, gpu) for p, ms, gpu in rows] == [(True, 0.125, "NVIDIA H200"), (False, None, None)]
    db.close()


# ---- argon2id cost (config.argon2_cost) --------------------------------------------------------------------


def test_argon2_cost_production_default_test_setting_and_rehash(room: Classroom, monkeypatch) -> None:  # noqa: ANN001
    from tritonlab import config
    from tritonlab.classroom import auth

    monkeypatch.delenv("TRITONLAB_ARGON2")  # production: above OWASP's minimum (docs/classroom.md, issue 34)
    assert config.argon2_cost() == {"t": 2, "m": 32768, "p": 1} and not config.argon2_is_weak(
        config.argon2_cost()
    )
    assert auth.hash_password("correct horse").startswith("$argon2id$v=19$m=32768,t=2,p=1$")
    monkeypatch.setenv("TRITONLAB_ARGON2", "t=1,m=1024,p=1")  # what the tests use (tests/conftest.py)
    assert config.argon2_is_weak(config.argon2_cost())
    user, password = room.add("erin")
    assert room.db.password_hash(user.id).startswith("$argon2id$v=19$m=1024,t=1,p=1$")
    monkeypatch.setenv("TRITONLAB_ARGON2", "t=2,m=2048,p=1")  # the cost changed: upgraded at the next log-in
    assert room.auth.authenticate("erin", password, "10.0.0.9").id == user.id
    assert room.db.password_hash(user.id).startswith("$argon2id$v=19$m=2048,t=2,p=1$")
    assert room.auth.authenticate("erin", password, "10.0.0.9").id == user.id
    for bad in ("t=0", "m=lots", "q=3", "t=1,m=4,p=1"):
        monkeypatch.setenv("TRITONLAB_ARGON2", bad)
        with pytest.raises(ValueError, match="TRITONLAB_ARGON2"):
            config.argon2_cost()


def test_serve_refuses_a_test_argon2_cost_beyond_loopback(home: Path) -> None:
    from conftest import cli

    weak = {"TRITONLAB_ARGON2": "t=1,m=1024,p=1", "TRITONLAB_HOME": str(home)}
    refused = cli("serve", "--classroom", "--host", "10.1.2.3", "--no-browser", env=weak)
    assert refused.returncode == 2 and "refusing to serve a class on 10.1.2.3" in refused.stderr, (
        refused.stderr
    )
    assert "below the minimum" in refused.stderr
    garbled = cli("serve", "--classroom", "--no-browser", env={**weak, "TRITONLAB_ARGON2": "fast"})
    assert garbled.returncode == 2 and "TRITONLAB_ARGON2='fast'" in garbled.stderr
    # on loopback it is only a warning (then: no class here yet)
    local = cli("serve", "--classroom", "--no-browser", env=weak)
    assert "warning: TRITONLAB_ARGON2" in local.stderr and "no class yet" in local.stderr


@pytest.mark.gpu
def test_a_passing_gpu_check_puts_its_measured_time_on_the_leaderboard(
    home: Path, classroom_url: str
) -> None:
    """The real path on a GPU: a learner's check of vector-add through `LearnerService.check` (grade, then the
    sandboxed timing run) records the verdict's speed report, and the board ranks it once they chose a name."""
    from tritonlab.service import Service

    service = Service(course_dir=ROOT / "course", workspace_dir=home / "ws", backend="gpu", lang="en")
    room = Classroom(classroom_url, adopt=NO_LEGACY)
    try:
        room.init("GPU class")
        anna = room.add("anna")[0]
        mine = room.learner_service(service, anna)
        exercise = service.exercise("vector-add")
        mine.save_code(exercise, exercise.solution.read_text(), mine.read_code(exercise)[1])
        verdict = mine.check(exercise)
        assert verdict.passed and verdict.speed and "ms" in verdict.speed, (
            verdict.speed,
            verdict.speed_reason,
        )
        assert room.leaderboard(service.course)["exercises"]["vector-add"] == []  # not opted in yet
        room.set_leaderboard_name(anna, "Anna")
        (row,) = room.leaderboard(service.course)["exercises"]["vector-add"]
        assert row["name"] == "Anna" and row["ms"] == pytest.approx(verdict.speed["ms"])
        assert row["gpu"] == verdict.speed.get("gpu")
    finally:
        service.close()
        room.close()


# ---- every classroom database test runs on both databases (issue 31) -----------------------------------------

# fixtures parametrized over ["sqlite", "postgresql"]: conftest's classroom_url (and `room`, built on it), and the
# module fixtures of the web tests
BOTH_DATABASES = {"classroom_url", "room", "env", "server", "pair"}
ONE_DATABASE = {  # test: why it does not run on both
    "test_sqlite_connections_are_wal_and_synchronous_full": "SQLite's own pragmas (PostgreSQL: the next test)",
    "test_postgresql_connections_commit_durably": "PostgreSQL's own settings",
    "test_serve_refuses_a_test_argon2_cost_beyond_loopback": "the CLI refuses before it opens a database",
    "test_look_alike_origins_are_refused_by_the_classroom": "the Origin check reads no database",
    "test_look_alike_origins_are_refused_behind_a_tls_proxy": "the Origin check reads no database",
    "test_look_alike_origins_are_refused_by_the_single_user_server": "the single-user server",
    "test_next_only_leads_to_a_path_of_the_single_user_server": "the single-user server",
    "test_a_token_beyond_ascii_is_refused_not_a_500": "the single-user server",
}
CLASSROOM_DATABASE_TESTS = (
    "test_classroom_store.py",
    "test_classroom_web.py",
    "test_csrf_origin.py",
    "test_sessions_revoked.py",
    "test_join_link.py",
    "test_per_learner_tables.py",
    "test_classroom_guard.py",
    "test_classroom_inputs.py",
    "test_classroom_backup.py",
    "test_code_backup_bounds.py",
)


def test_every_classroom_database_test_runs_on_sqlite_and_postgresql() -> None:
    """A test added to these files runs on both databases, or is listed above with the reason it cannot."""
    import ast

    def on_both(node: ast.FunctionDef) -> bool:
        """Parametrized over both databases, or takes a fixture that is."""
        decorators = " ".join(ast.unparse(d) for d in node.decorator_list).replace('"', "'")
        return "'sqlite', 'postgresql'" in decorators or bool(
            {a.arg for a in node.args.args} & BOTH_DATABASES
        )

    for name in CLASSROOM_DATABASE_TESTS:
        tree = ast.parse((ROOT / "tests" / name).read_text())
        functions = [node for node in tree.body if isinstance(node, ast.FunctionDef)]
        for node in functions:
            if node.name in BOTH_DATABASES:  # this module's own fixture of that name
                assert on_both(node), f"{name}: the fixture {node.name} is not on both databases"
        for node in functions:
            if node.name.startswith("test_") and node.name not in ONE_DATABASE and node.name != NAME:
                assert on_both(node), (
                    f"{name}::{node.name} runs on one database only: take `classroom_url` or `room`, or "
                    "parametrize it over sqlite and postgresql (or list it in ONE_DATABASE with the reason)"
                )


NAME = test_every_classroom_database_test_runs_on_sqlite_and_postgresql.__name__
