"""`tritonlab classroom backup` / `restore` (issue 36, item 2): every table round-trips, on SQLite and PostgreSQL
and from one to the other; a backup taken while a real server writes is one moment of the database; a restore
refuses a database that holds rows (unless forced), a file of another format or revision, and a damaged file,
leaving the database as it was.

The consistency test runs a real `serve --classroom` whose learner saves her code (learner_code) and then her
leaderboard name (users) in a loop, each save carrying its number. The backup's progress callback, called once
the `users` table is written, waits until that learner has saved six more times before the backup goes on to
`learner_code`. One moment of the database has the code's number equal to the name's or one ahead; a backup
that read each table when it came to it would see the code six or more saves ahead."""

from __future__ import annotations

import gzip
import json
import threading
import time
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa
from classroom_app import rows_of
from classroom_server import PASSWORD, ClassroomServer, classroom_env, cli, make_class

from tritonlab.classroom.room import Classroom
from tritonlab.store import identities
from tritonlab.store import schema as s
from tritonlab.store.backup import BackupError, write
from tritonlab.store.database import make_engine
from tritonlab.store.learner_progress import LearnerStore
from tritonlab.store.restore import restore

pytestmark = pytest.mark.slow
NO_LEGACY = Path("/nonexistent/progress.db")


def new_url(kind: str, folder: Path, request: pytest.FixtureRequest, name: str) -> str:
    if kind == "sqlite":
        return f"sqlite:///{folder / name}.db"
    return request.getfixturevalue("postgres").new_database()


@pytest.fixture(params=["sqlite", "postgresql"])
def pair(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str]:
    """Two empty databases of one kind: the class's and a restore target."""
    return new_url(request.param, tmp_path, request, "a"), new_url(request.param, tmp_path, request, "b")


TRICKY = "# ünïcödé ✓ — \"quotes\" 'single' \\backslash\\ \t tab\r\n" + "x = 1  # 🙂\n" * 40_000  # ~600 KiB


def fill_every_table(url: str) -> dict[str, str]:
    """A class with at least one row in every table, values that test a format (unicode, big integers, long
    floats, NULLs, both booleans, a long text); returns the accounts' passwords."""
    room = Classroom(url, adopt=NO_LEGACY)
    try:
        made = room.init("Klasse ü ✓")
        room.db.secret()
        anna, anna_pw = room.add("anna", "Ánna ✓")
        ben, ben_pw = room.add("ben", "")
        room.set_leaderboard_name(anna, "Ánna")
        room.set_disabled(ben, True)
        room.db.create_session(anna.id, 3600)
        room.db.record_failure("ben", "2001:db8::7")
        store = LearnerStore(room.db, anna.id)
        store.record_attempt(
            {
                "exercise": "vector-add",
                "backend": "gpu",
                "passed": True,
                "duration_s": 0.1234567890123,
                "seed": 2**62 + 3,
                "speed": {"ms": 0.0123456789, "gpu": "NVIDIA H200"},
                "failures": [],
            }
        )
        store.record_attempt(
            {"exercise": "vector-add", "passed": False, "seed": None, "failures": [{"kind": "wrong-result"}]}
        )
        store.record_hint("vector-add", 0)
        store.record_quiz_answer("01-intro", "q1", json.dumps([0, 2]), 0.5)
        store.record_quiz_result("01-intro", 1.0 / 3.0, False)
        store.set_state("last_lesson", "05 ✓")
        identities.set_email(room.db, anna.id, "anna@uni.example")  # a provider account linked to anna
        identities.link(
            room.db, anna.id, "https://login.uni.example/realms/ü", "sub-ánna ✓", "anna@uni.example"
        )
        identities.save_pending(room.db, "state ✓", "browser", "nonce ✓", "v" * 43, "/lessons/05 ✓", 600)
        with room.db.engine.begin() as conn:
            conn.execute(
                s.code.insert().values(
                    user_id=anna.id, exercise="vector-add", text=TRICKY, version="v1", updated_at=1.5
                )
            )
            conn.execute(
                s.code_backups.insert().values(
                    user_id=anna.id, exercise="vector-add", why="reset", text=TRICKY[:999], at=2.5
                )
            )
        return {"teacher": made["teacher"]["password"], "anna": anna_pw, "ben": ben_pw}
    finally:
        room.close()


def every_table_has_rows(url: str) -> None:
    engine = make_engine(url)
    try:
        meta = sa.MetaData()
        meta.reflect(engine)
        with engine.connect() as conn:
            empty = [
                t
                for t in meta.tables
                if not conn.execute(sa.select(sa.func.count()).select_from(meta.tables[t])).scalar()
            ]
    finally:
        engine.dispose()
    assert not empty, f"fill_every_table leaves {empty} empty: give them a row, so the round trip covers them"


@pytest.mark.parametrize(
    ("source", "target"),
    [("sqlite", "sqlite"), ("postgresql", "postgresql"), ("sqlite", "postgresql"), ("postgresql", "sqlite")],
    ids=["sqlite-to-sqlite", "postgresql-to-postgresql", "sqlite-to-postgresql", "postgresql-to-sqlite"],
)
def test_every_table_round_trips_through_the_command_line(
    source: str, target: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    src, dst = new_url(source, tmp_path, request, "src"), new_url(target, tmp_path, request, "dst")
    passwords = fill_every_table(src)
    every_table_has_rows(src)
    file = tmp_path / "class.jsonl.gz"
    made = cli(classroom_env(tmp_path / "home", src), "classroom", "backup", str(file), "--json")
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout)["schema_revision"] == "0003" and file.stat().st_mode & 0o077 == 0
    back = cli(classroom_env(tmp_path / "home", dst), "classroom", "restore", str(file))
    assert back.returncode == 0, back.stderr
    engines = [make_engine(src), make_engine(dst)]
    try:
        before, after = (rows_of(e) for e in engines)
    finally:
        for e in engines:
            e.dispose()
    assert set(after) == set(before) and after == before
    room = Classroom(dst, adopt=NO_LEGACY)  # the restored class works: log-in, and new rows get new ids
    try:
        assert room.auth.authenticate("anna", passwords["anna"], "127.0.0.1").username == "anna"
        carl, _ = room.add("carl", "Carl")
        assert carl.id > max(u.id for u in room.users() if u.username != "carl")
        LearnerStore(room.db, carl.id).record_attempt({"exercise": "vector-add", "passed": True})
    finally:
        room.close()


def test_a_database_that_holds_rows_is_refused_unless_forced(pair: tuple[str, str], tmp_path: Path) -> None:
    src, dst = pair
    fill_every_table(src)
    file = tmp_path / "b.gz"
    write(src, file)
    room = Classroom(dst, adopt=NO_LEGACY)
    try:
        room.init("Another class")
    finally:
        room.close()
    engine = make_engine(dst)
    try:
        held = rows_of(engine)
        with pytest.raises(BackupError, match=r"is not empty: classes \(1 rows\).*--force"):
            restore(dst, file)
        assert rows_of(engine) == held
        restore(dst, file, force=True)
        source = make_engine(src)
        assert rows_of(engine) == rows_of(source)
        source.dispose()
    finally:
        engine.dispose()


def damaged(file: Path, out: Path, edit) -> Path:  # noqa: ANN001
    lines = gzip.decompress(file.read_bytes()).decode().splitlines(keepends=True)
    out.write_bytes(gzip.compress("".join(edit(lines)).encode()))
    return out


def test_a_damaged_or_foreign_file_is_refused_and_changes_nothing(
    pair: tuple[str, str], tmp_path: Path
) -> None:
    src, dst = pair
    fill_every_table(src)
    file = tmp_path / "good.gz"
    write(src, file)
    header = json.loads(gzip.decompress(file.read_bytes()).decode().splitlines()[0])

    def with_header(**changes: object):  # noqa: ANN202
        return lambda lines: [json.dumps({**header, **changes}) + "\n", *lines[1:]]

    cases = {
        "ends before its last line": lambda lines: lines[:-1],
        "ends inside table": lambda lines: lines[: len(lines) // 2],
        "wrong row count": lambda lines: [
            ln for ln in lines if not ln.startswith("[1,") or '"Klasse' not in ln
        ],
        "format version 2": with_header(version=2),
        "newer tritonlab": with_header(schema_revision="9999"),
        "not a tritonlab classroom backup": with_header(format="something-else"),
        "not JSON": lambda lines: [*lines[:3], "{oops\n", *lines[3:]],
        "does not have": lambda lines: [
            ln.replace('"table":"learner_state"', '"table":"evil"') for ln in lines
        ],
        "columns of users": lambda lines: [
            ln.replace(
                '"table":"users","columns":["id","username"', '"table":"users","columns":["id","is_admin"'
            )
            for ln in lines
        ],
        "is not a row": lambda lines: [ln.replace('[1,"Klasse', '[1,"Klasse",7,"') for ln in lines],
    }
    for i, (message, edit) in enumerate(cases.items()):
        bad = damaged(file, tmp_path / f"bad{i}.gz", edit)
        with pytest.raises(BackupError, match=message):
            restore(dst, bad)
    truncated = tmp_path / "cut.gz"
    truncated.write_bytes(file.read_bytes()[: file.stat().st_size // 2])
    with pytest.raises(BackupError, match="damaged"):
        restore(dst, truncated)
    (tmp_path / "plain.txt").write_text("hello\n")
    with pytest.raises(BackupError, match="damaged"):
        restore(dst, tmp_path / "plain.txt")
    engine = make_engine(dst)
    try:
        meta = sa.MetaData()
        meta.reflect(engine)
        with engine.connect() as conn:  # nothing was restored by any of them
            assert all(
                not conn.execute(sa.select(sa.func.count()).select_from(t)).scalar()
                for name, t in meta.tables.items()
                if name != "alembic_version"
            )
    finally:
        engine.dispose()
    restore(dst, file)  # the control: the good file restores into that same database


def test_a_database_at_another_revision_is_refused(pair: tuple[str, str], tmp_path: Path) -> None:
    from tritonlab.store.database import upgrade

    src, dst = pair
    engine = make_engine(src)
    upgrade(engine, None, target="0001")  # an older class: its backup carries revision 0001
    engine.dispose()
    file = tmp_path / "old.gz"
    assert write(src, file)["schema_revision"] == "0001"
    Classroom(dst, adopt=NO_LEGACY).close()  # a database at the newest revision
    with pytest.raises(BackupError, match="revision 0003 and the backup at 0001"):
        restore(dst, file)
    fresh = dst.replace("/b.db", "/c.db") if dst.startswith("sqlite") else None
    if fresh:  # an empty database is brought to 0001, filled, then upgraded
        assert restore(fresh, file)["upgraded_to"] == "0003"


# ---- consistency while a real server writes ---------------------------------------------------------------


class Writer(threading.Thread):
    """anna saving her code (# save N), then her leaderboard name (nN), N = 1, 2, … until stopped."""

    def __init__(self, base: str) -> None:
        super().__init__(daemon=True)
        self.base, self.saves, self.errors = base, 0, []
        self.halt = threading.Event()

    def run(self) -> None:
        with httpx.Client(base_url=self.base, headers={"Origin": self.base}, timeout=60) as client:
            r = client.post("/api/login", json={"username": "anna", "password": PASSWORD})
            client.headers["X-CSRF-Token"] = r.json()["csrf"]
            version = client.get("/api/exercises/vector-copy/code").json()["version"]
            while not self.halt.is_set():
                n = self.saves + 1
                r = client.put(
                    "/api/exercises/vector-copy/code", json={"text": f"# save {n}\n", "base_version": version}
                )
                r2 = client.put("/api/leaderboard/name", json={"name": f"n{n}"})
                if r.status_code != 200 or r2.status_code != 200:
                    self.errors.append((r.status_code, r.text, r2.status_code, r2.text))
                    return
                version, self.saves = r.json()["version"], n


def moment(file: Path) -> tuple[int, int]:
    """(number of anna's saved code, number of her leaderboard name) in a backup file."""
    code = name = None
    table, columns = "", []
    for line in gzip.decompress(file.read_bytes()).decode().splitlines():
        item = json.loads(line)
        if isinstance(item, dict):
            table, columns = item.get("table", table), item.get("columns", columns)
            continue
        row = dict(zip(columns, item, strict=True))
        if table == "users" and row["username"] == "anna":
            name = int(row["leaderboard_name"][1:])
        if table == "learner_code" and row["exercise"] == "vector-copy":
            code = int(row["text"].split()[-1])
    assert code is not None and name is not None
    return code, name


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_a_backup_taken_while_the_server_writes_is_one_moment(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = new_url(kind, tmp_path, request, "class")
    env = classroom_env(tmp_path / "home", url)
    make_class(env, ("anna",), tmp_path)
    server = ClassroomServer(env).start()
    writer = Writer(server.base)
    try:
        writer.start()
        deadline = time.monotonic() + 60
        while writer.saves < 3 and time.monotonic() < deadline and not writer.errors:
            time.sleep(0.05)
        waited: list[int] = []

        def after(table: str, rows: int) -> None:
            if table == "users":  # the next tables are read while anna saves six more times
                start, until = writer.saves, time.monotonic() + 60
                while writer.saves < start + 6 and time.monotonic() < until and not writer.errors:
                    time.sleep(0.02)
                waited.append(writer.saves - start)

        file = tmp_path / "live.gz"
        write(url, file, progress=after)
        assert waited and waited[0] >= 6, (
            f"the server did not go on writing during the backup: {writer.errors}"
        )
        code, name = moment(file)
        assert code - name in (0, 1), f"code at save {code}, name at save {name}: not one moment"
        # the file of a live backup restores, and the restored class is the same moment
        target = new_url(kind, tmp_path, request, "restored")
        restore(target, file)
        again = tmp_path / "again.gz"
        write(target, again)
        assert moment(again) == (code, name)
    finally:
        writer.halt.set()
        writer.join(timeout=30)
        server.stop()
    assert not writer.errors, writer.errors
