"""Issue 31, row 5: no per-learner write loses its learner filter. Two learners write the same key in turn —
code for the same exercise, the same state key, the same hint, the same quiz question, attempts at the same
exercise, their sessions — and after every write each reads back their own value, never the other's.

The per-learner tables are enumerated from the schema (`store/schema.py`: every table with a `user_id`) and from
the migrated database; the test fails when one exists that it does not exercise. Through the store on SQLite and
PostgreSQL; through the web routes a learner uses (PUT code, backup, reset, hint, lesson page, quiz answer,
leaderboard name) as well, so the per-request binding of the store to the logged-in learner is covered too.
A final check reads every row of every per-learner table: each learner has rows, and none of a learner's rows
holds a value the other wrote."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import sqlalchemy as sa
from classroom_app import ClassServer, class_server, database_url

from tritonlab.classroom.room import Classroom
from tritonlab.content.course import load_course
from tritonlab.models import Course, Exercise
from tritonlab.store import identities, schema
from tritonlab.store.learner_code import LearnerCode
from tritonlab.store.learner_progress import LearnerStore

ROOT = Path(__file__).resolve().parent.parent
COURSE = ROOT / "tests" / "fixtures" / "course"
NO_LEGACY = Path("/nonexistent/progress.db")


def per_learner_tables(engine: sa.Engine | None = None) -> set[str]:
    """Tables whose rows each belong to one learner: every table with a user_id column, and `users` (a learner's
    own row holds what they choose: the leaderboard name). From the schema module, or (with `engine`) from the
    migrated database."""
    if engine is None:
        return {t.name for t in schema.metadata.sorted_tables if "user_id" in t.c} | {schema.users.name}
    found = sa.inspect(engine)
    names = found.get_table_names()
    return {t for t in names if any(c["name"] == "user_id" for c in found.get_columns(t))} | (
        {"users"} & set(names)
    )


def owner_column(table: str) -> str:
    return "id" if table == schema.users.name else "user_id"


@dataclass
class Learner:
    name: str
    id: int
    store: LearnerStore
    code: LearnerCode
    wrote: dict[str, object] = field(default_factory=dict)  # what this learner last wrote, per scenario


@dataclass
class Pair:
    room: Classroom
    course: Course
    exercise: Exercise
    a: Learner
    b: Learner

    def in_turn(
        self, what: str, write: Callable[[Learner, int], object], read: Callable[[Learner], object]
    ) -> None:
        """Two rounds of: a writes, b writes (the first round inserts each learner's row, the second updates
        it); after every write, everyone who wrote reads back exactly what they last wrote."""
        for round_ in range(2):
            for me in (self.a, self.b):
                me.wrote[what] = write(me, round_)
                for who in (self.a, self.b):
                    if what in who.wrote:
                        got = read(who)
                        assert got == who.wrote[what], (
                            f"{what}: after {me.name}'s write {round_}, {who.name} reads {got!r}, "
                            f"not their own {who.wrote[what]!r}"
                        )


def rows_by_sql(pair: Pair, table: str, column: str, me: Learner) -> list:
    t = schema.metadata.tables[table]
    with pair.room.db.engine.connect() as conn:
        query = sa.select(t.c[column]).where(t.c.user_id == me.id).order_by(*t.primary_key.columns)
        return [r[0] for r in conn.execute(query)]


# ---- one scenario per per-learner table: two learners, the same key ---------------------------------------


def code(pair: Pair) -> None:
    def write(me: Learner, round_: int) -> str:
        text = f"# {me.name}'s kernel, version {round_}\n"
        me.code.save(pair.exercise, text, me.code.read(pair.exercise)[1])
        return text

    pair.in_turn("code", write, lambda me: me.code.read(pair.exercise)[0])

    def save_then_reset(me: Learner, round_: int) -> str:  # a saves, b saves, a resets, b resets
        if round_ == 0:
            return write(me, 2)
        me.code.reset(pair.exercise)  # back to the starter; the text before is kept as a backup
        return pair.exercise.starter.read_text(encoding="utf-8")

    pair.in_turn("code and reset", save_then_reset, lambda me: me.code.read(pair.exercise)[0])


def code_backups(pair: Pair) -> None:
    def write(me: Learner, round_: int) -> list[str]:
        me.code.backup(pair.exercise, f"# {me.name}'s discarded text {round_}\n", "discarded")
        return [b["text"] for b in me.code.backups(pair.exercise)]

    pair.in_turn("backups", write, lambda me: [b["text"] for b in me.code.backups(pair.exercise)])

    def overwrite(
        me: Learner, round_: int
    ) -> list[str]:  # a stale editor's forced save backs up the newer text
        me.code.save(pair.exercise, f"# {me.name}'s newer text {round_}\n", None, force=True)
        me.code.save(pair.exercise, f"# {me.name}'s stale editor {round_}\n", "0" * 16, force=True)
        return [b["text"] for b in me.code.backups(pair.exercise)]

    pair.in_turn(
        "backups after a forced save",
        overwrite,
        lambda me: [b["text"] for b in me.code.backups(pair.exercise)],
    )
    assert all(pair.a.name in t for t in pair.a.wrote["backups after a forced save"])  # type: ignore[union-attr]


def state(pair: Pair) -> None:
    for key in ("last_lesson", "last_exercise"):

        def write(me: Learner, round_: int, key: str = key) -> str:
            me.store.set_state(key, f"{me.name}-{key}-{round_}")
            return f"{me.name}-{key}-{round_}"

        pair.in_turn(f"state {key}", write, lambda me, key=key: me.store.get_state(key))


def hints(pair: Pair) -> None:
    def write(me: Learner, round_: int) -> int:  # the same hint of the same exercise: index 0, then 1
        me.store.record_hint(pair.exercise.id, round_)
        me.store.record_hint(pair.exercise.id, round_)  # shown twice: counted once
        return round_ + 1

    pair.in_turn("hints", write, lambda me: me.store.hints_shown(pair.exercise.id))


def attempts(pair: Pair) -> None:
    def write(me: Learner, round_: int) -> list:
        passed = me is pair.a  # a passes, b fails: the same exercise
        me.store.record_attempt(
            {
                "exercise": pair.exercise.id,
                "passed": passed,
                "backend": "interpreter",
                "seed": 1000 * me.id + round_,
                "failures": [] if passed else [{"kind": f"wrong_values_{me.name}"}],
            }
        )
        return read(me)

    def read(me: Learner) -> list:
        mine = me.store.attempts(pair.exercise.id)
        return [(a["seed"], a["passed"]) for a in mine] + [sorted(me.store.passed_exercises())]

    pair.in_turn("attempts", write, read)


def quiz_answers(pair: Pair) -> None:
    def write(me: Learner, round_: int) -> list:
        me.store.record_quiz_answer(
            "01-only", "mask", f"{me.name}'s answer {round_}", 1.0 if me is pair.a else 0.0
        )
        return read(me)

    def read(me: Learner) -> list:
        return list(
            zip(
                rows_by_sql(pair, "learner_quiz_answers", "answer", me),
                rows_by_sql(pair, "learner_quiz_answers", "score", me),
                strict=True,
            )
        )

    pair.in_turn("quiz answers", write, read)


def quiz_results(pair: Pair) -> None:
    def write(me: Learner, round_: int) -> dict:
        me.store.record_quiz_result("01-only", 1.0 if me is pair.a else 0.25 * round_, me is pair.a)
        return me.store.best_quiz()

    pair.in_turn("quiz results", write, lambda me: me.store.best_quiz())
    assert pair.a.store.best_quiz()["01-only"] == {"score": 1.0, "passed": True, "tries": 2}
    assert pair.b.store.best_quiz()["01-only"] == {"score": 0.25, "passed": False, "tries": 2}


def sessions(pair: Pair) -> None:
    made: dict[tuple[str, int], str] = {}

    def write(me: Learner, round_: int) -> tuple[str, str]:  # each round a log-in on another device
        session_id, csrf = pair.room.db.create_session(me.id, 3600)
        made[(me.name, round_)] = session_id
        return me.name, csrf

    def read(me: Learner) -> tuple[str, str] | None:
        latest = max(r for n, r in made if n == me.name)
        found = pair.room.db.session(made[(me.name, latest)], 600)
        return (found[0].username, found[1]) if found else None

    pair.in_turn("sessions", write, read)
    pair.room.db.end_session(made[("anna", 1)])  # anna logs out on one device: only that session ends
    assert pair.room.db.session(made[("anna", 1)], 600) is None
    for other in (("anna", 0), ("ben", 0), ("ben", 1)):
        assert pair.room.db.session(made[other], 600) is not None, other


def users(pair: Pair) -> None:
    def write(me: Learner, round_: int) -> str | None:
        return pair.room.set_leaderboard_name(pair.room.user(me.name), f"{me.name} the fast {round_}")

    pair.in_turn("leaderboard name", write, lambda me: pair.room.leaderboard_name(pair.room.user(me.name)))

    def write_email(me: Learner, round_: int) -> str | None:  # the roster e-mail a provider log-in matches
        return pair.room.set_email(pair.room.user(me.name), f"{me.name}.{round_}@uni.example")

    pair.in_turn("roster e-mail", write_email, lambda me: pair.room.email(pair.room.user(me.name)))


def user_identities(pair: Pair) -> None:
    """Each learner's account at the same provider: linked once, then each log-in records its e-mail."""
    issuer = "https://idp.uni.example"

    def write(me: Learner, round_: int) -> tuple:
        if round_ == 0:
            identities.link(pair.room.db, me.id, issuer, f"sub-{me.name}", f"{me.name}@uni.example")
        identities.logged_in(pair.room.db, issuer, f"sub-{me.name}", f"{me.name}.{round_}@uni.example", None)
        return read(me)

    def read(me: Learner) -> tuple:
        link = identities.linked(pair.room.db, issuer, f"sub-{me.name}")
        return link.user.username if link else None, rows_by_sql(pair, "user_identities", "email", me)

    pair.in_turn("provider accounts", write, read)


SCENARIOS: dict[str, Callable[[Pair], None]] = {
    "users": users,
    "learner_code": code,
    "learner_code_backups": code_backups,
    "learner_state": state,
    "learner_hints": hints,
    "learner_attempts": attempts,
    "learner_quiz_answers": quiz_answers,
    "learner_quiz_results": quiz_results,
    "sessions": sessions,
    "user_identities": user_identities,
}


RANDOM_COLUMNS = {
    "csrf",
    "id_hash",
    "version",
    "password_hash",
}  # tokens and hashes: any letters, never a learner's text


def assert_rows_are_their_own(
    engine: sa.Engine, ids: dict[str, int], unwritten: set[str] = frozenset()
) -> None:
    """Every row of every per-learner table (but `unwritten`): each learner has some, and no text in a learner's
    row names the other learner (every value the scenarios write names its writer)."""
    meta = sa.MetaData()
    meta.reflect(engine)
    names = {uid: name for name, uid in ids.items()}
    with engine.connect() as conn:
        for table in sorted(per_learner_tables(engine) - unwritten):
            rows = conn.execute(sa.select(meta.tables[table])).mappings().all()
            key = owner_column(table)
            assert {r[key] for r in rows} >= set(names), f"{table}: not every learner has rows"
            for row in rows:
                owner = names.get(row[key])
                texts = " ".join(v for k, v in row.items() if isinstance(v, str) and k not in RANDOM_COLUMNS)
                for other in set(ids) - {owner}:
                    assert other not in texts, f"{table}: {owner}'s row holds {other}'s {texts!r}"


@pytest.fixture
def pair(classroom_url: str, home: Path) -> Iterator[Pair]:
    room = Classroom(classroom_url, adopt=NO_LEGACY)
    course = load_course(COURSE)
    learners = []
    for name in ("anna", "ben"):
        user = room.add(name)[0]
        learners.append(Learner(name, user.id, room.db.learner(user.id), room.db.code(user.id, course)))
    yield Pair(room, course, course.exercise("vector-copy"), *learners)
    room.close()


def test_every_per_learner_table_keeps_each_learners_own_values(pair: Pair) -> None:
    in_schema, in_database = per_learner_tables(), per_learner_tables(pair.room.db.engine)
    assert in_schema == in_database, "store/schema.py and the migrations disagree on the per-learner tables"
    missing = in_schema - set(SCENARIOS)
    assert not missing, (
        f"per-learner tables no scenario here writes: {sorted(missing)} (add one to SCENARIOS)"
    )
    assert set(SCENARIOS) <= in_schema, "a scenario names a table the schema no longer has"
    for table in sorted(SCENARIOS):
        SCENARIOS[table](pair)
    assert_rows_are_their_own(pair.room.db.engine, {"anna": pair.a.id, "ben": pair.b.id})


# ---- the same through the web routes ---------------------------------------------------------------------------


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClassServer]:
    root = tmp_path_factory.mktemp(f"tables-{request.param}")
    with class_server(root, database_url(request.param, root, request)) as made:
        yield made


def test_two_learners_writing_the_same_keys_through_the_routes_keep_their_own(server: ClassServer) -> None:
    """Code, backups, reset, hints, the last lesson, quiz answers and results, the leaderboard name: the same
    key in turn, through the routes; each reads back their own through the routes (or their own store)."""
    browsers = {name: server.login(name) for name in ("anna", "ben")}
    last: dict[tuple[str, str], object] = {}

    def check(what: str, read: Callable[[str], object]) -> None:
        for name in browsers:
            if (what, name) in last:
                assert read(name) == last[(what, name)], f"{what}: {name} reads another's value"

    url = "/api/exercises/vector-copy"
    for round_ in range(2):
        for name, me in browsers.items():
            version = me.get(f"{url}/code").json()["version"]
            text = f"# {name}'s kernel {round_}\n"
            assert me.put(f"{url}/code", json={"text": text, "base_version": version}).status_code == 200
            last[("code", name)] = text
            check("code", lambda n: browsers[n].get(f"{url}/code").json()["text"])

            assert (
                me.post(f"{url}/backup", json={"text": f"# {name} discarded {round_}\n"}).status_code == 200
            )
            hint = me.post(f"{url}/hint").json()
            last[("hint", name)] = round_ + 1
            assert hint["number"] == round_ + 1, (name, hint)
            check("hint", lambda n: server.room.db.learner(server.ids[n]).hints_shown("vector-copy"))

            lesson = "01-intro" if round_ == 0 else "02-copy"
            if name == "ben":
                lesson = "02-copy" if round_ == 0 else "01-intro"
            page = me.get(f"/lessons/{lesson}")
            assert page.status_code == 200
            last[("last lesson", name)] = lesson
            check("last lesson", lambda n: server.room.db.learner(server.ids[n]).get_state("last_lesson"))

            if lesson == "01-intro":  # the quiz: the same question, answered differently
                attempt = re.search(r'data-attempt="([^"]+)"', page.text).group(1)
                right = name == "anna"
                for question, response in (("mask", 1 if right else 0), ("programs", 3 if right else 7)):
                    r = me.post(
                        f"/api/quiz/{attempt}/answer", json={"question": question, "response": response}
                    )
                    assert r.status_code == 200, r.text
                last[("quiz", name)] = right
                check(
                    "quiz", lambda n: browsers[n].get("/api/progress").json()["lessons"][0]["quiz"]["passed"]
                )

            board_name = f"{name.title()} {round_}"
            assert me.put("/api/leaderboard/name", json={"name": board_name}).status_code == 200
            last[("leaderboard name", name)] = board_name
            check("leaderboard name", lambda n: browsers[n].get("/api/leaderboard").json()["me"]["name"])

            reset = me.post(f"{url}/reset")
            assert reset.status_code == 200 and reset.json()["text"] != text
            last[("code", name)] = reset.json()["text"]
            check("code", lambda n: browsers[n].get(f"{url}/code").json()["text"])
    for name in browsers:
        backups = server.room.db.code(server.ids[name], server.service.course).backups(
            server.service.exercise("vector-copy")
        )
        assert len(backups) == 4 and all(name in b["text"] for b in backups), (name, backups)
    # attempts need a sandboxed check: the store test above writes them (test_classroom_web checks through a route);
    # provider accounts need an OpenID provider's log-in (tests/test_oidc.py: each learner's own link)
    ids = {name: server.ids[name] for name in browsers}
    assert_rows_are_their_own(server.room.db.engine, ids, unwritten={"learner_attempts", "user_identities"})
