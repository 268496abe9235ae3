"""Issue 36, item 1, the store side (store/identities.py, migration 0003), on SQLite and the session's real
PostgreSQL: an existing class upgrades without losing anyone, the roster's e-mail addresses are unique
whatever their case, a log-in's state is taken once even by callbacks racing for it, and two first log-ins of
one provider account at once make one user."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
import sqlalchemy as sa

from tritonlab.classroom.room import AccountError, Classroom
from tritonlab.store import identities
from tritonlab.store.classroom import ClassroomDB
from tritonlab.store.database import make_engine, schema_revision, upgrade

NO_LEGACY = Path("/nonexistent/progress.db")
ISSUER = "https://idp.uni.example"


@pytest.fixture
def room(classroom_url: str, home: Path) -> Classroom:
    made = Classroom(classroom_url, adopt=NO_LEGACY)
    yield made
    made.close()


def test_migration_0003_keeps_an_existing_class(classroom_url: str) -> None:
    engine = make_engine(classroom_url)
    upgrade(engine, NO_LEGACY, target="0002")  # a class made before single sign-on
    with engine.begin() as conn:
        conn.execute(
            sa.text(
                "INSERT INTO users (username, display_name, role, disabled, created_at) "
                "VALUES ('old', 'Old', 'learner', false, 0)"
            )
        )
        conn.execute(
            sa.text("INSERT INTO learner_state (user_id, key, value) VALUES (1, 'last_lesson', 'x')")
        )
    engine.dispose()
    db = ClassroomDB(classroom_url, legacy_progress=NO_LEGACY)
    assert schema_revision(db.engine) == "0003"
    old = db.user_by_name("old")
    assert old is not None and identities.email_of(db, old.id) is None
    assert db.learner(old.id).get_state("last_lesson") == "x"  # the upgrade did not cascade anything away
    assert {"user_identities", "sso_pending"} <= set(sa.inspect(db.engine).get_table_names())
    db.close()


def test_roster_emails_are_unique_whatever_their_case(room: Classroom) -> None:
    ben, _ = room.add("ben", email=" Ben@Uni.Example ")
    assert room.email(ben) == "ben@uni.example"
    with pytest.raises(AccountError, match="already belongs"):
        room.add("ben2", email="BEN@uni.example")
    assert room.db.user_by_name("ben2") is None  # refused before the account was made
    anna, _ = room.add("anna")
    with pytest.raises(AccountError, match="belongs to ben"):
        room.set_email(anna, "ben@UNI.example")
    for bad in ("not-an-address", "a@b@c", "x@", "@uni.example", "a b@uni.example", "a@uni..example"):
        with pytest.raises(AccountError, match="not an e-mail address"):
            room.set_email(anna, bad)
    assert room.set_email(ben, None) is None and room.set_email(anna, "ben@uni.example") == "ben@uni.example"


def test_a_roster_with_emails_is_checked_before_any_account_is_made(room: Classroom) -> None:
    made = room.import_csv("username,name,role,password,email\ncarla,Carla,,,carla@uni.example\ndan,Dan\n")
    assert [(m["username"], m["email"]) for m in made] == [("carla", "carla@uni.example"), ("dan", None)]
    before = [u.username for u in room.users()]
    with pytest.raises(AccountError, match="row 2: the e-mail carla@uni.example belongs to another account"):
        room.import_csv("erin,Erin,,,erin@uni.example\nfay,Fay,,,Carla@uni.example\n")
    with pytest.raises(AccountError, match="row 1: 'nope' is not an e-mail address"):
        room.import_csv("gil,Gil,,,nope\n")
    assert [u.username for u in room.users()] == before


def test_a_pending_log_in_is_taken_once_even_by_racing_callbacks(room: Classroom) -> None:
    identities.save_pending(room.db, "the-state", "the-browser", "n", "v" * 43, "/", 600)
    got: list[object] = []
    barrier = threading.Barrier(6)

    def take() -> None:
        barrier.wait()
        got.append(identities.take_pending(room.db, "the-state"))

    threads = [threading.Thread(target=take) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    found = [g for g in got if g is not None]
    assert len(got) == 6 and len(found) == 1
    assert identities.browser_matches(found[0], "the-browser")  # type: ignore[arg-type]
    assert not identities.browser_matches(found[0], "another")  # type: ignore[arg-type]
    assert not identities.browser_matches(found[0], None)  # type: ignore[arg-type]


def test_two_first_log_ins_of_one_account_at_once_make_one_user(room: Classroom) -> None:
    before = len(room.users())
    made: list[int] = []
    barrier = threading.Barrier(4)

    def first_login() -> None:
        barrier.wait()
        user = identities.create_linked(
            room.db, ["zoe", "zoe-2"], "Zoe", "zoe@uni.example", ISSUER, "sub-zoe", teacher=False
        )
        made.append(user.id)

    threads = [threading.Thread(target=first_login) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(made) == 4 and len(set(made)) == 1
    assert len(room.users()) == before + 1
    link = identities.linked(room.db, ISSUER, "sub-zoe")
    assert link is not None and link.user.id == made[0] and link.user.username == "zoe"
