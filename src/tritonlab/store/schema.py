"""The classroom database's tables, as SQLAlchemy Core metadata (SQLite or PostgreSQL).

The tables are created and changed only by the Alembic migrations in `store/migrations/`; this module is
what the code reads and writes through. Learner tables carry `user_id` on every row, and every query of one
learner's view (store/learner_progress.py, store/learner_code.py) filters on it; only the class-wide summaries
(store/classroom.py for the teacher, store/leaderboard.py) read every learner's rows.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
)

metadata = MetaData()

settings = Table(
    "classroom_settings",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("value", Text, nullable=False),
)

classes = Table(
    "classes",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("name", String(200), nullable=False),
    Column("join_code", String(64), nullable=False, unique=True),
    Column("join_open", Boolean, nullable=False),
    Column("created_at", Float, nullable=False),
)

users = Table(
    "users",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("username", String(64), nullable=False, unique=True),
    Column("display_name", String(200), nullable=False),
    Column("role", String(16), nullable=False),  # learner | teacher
    Column("password_hash", Text),  # argon2id; NULL: cannot log in until a password is set
    Column("disabled", Boolean, nullable=False),
    Column("created_at", Float, nullable=False),
    Column("leaderboard_name", String(64)),  # chosen by the learner; NULL: not on the leaderboard (0002)
    Column("email", String(254)),  # lower case; the roster's e-mail a provider log-in matches (0003)
    Index("users_email", "email", unique=True),
)

sessions = Table(
    "sessions",
    metadata,
    Column("id_hash", String(64), primary_key=True),  # sha256 of the cookie's session id
    Column("user_id", Integer, ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    Column("csrf", String(64), nullable=False),
    Column("created_at", Float, nullable=False),
    Column("last_seen", Float, nullable=False),
    Column("expires_at", Float, nullable=False),
)

login_failures = Table(
    "login_failures",
    metadata,
    Column("username", String(64), primary_key=True),
    Column("address", String(64), primary_key=True),
    Column("failures", Integer, nullable=False),
    Column("last_at", Float, nullable=False),
)

attempts = Table(
    "learner_attempts",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("user_id", Integer, ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    Column("exercise", String(128), nullable=False),
    Column("at", Float, nullable=False),
    Column("backend", String(32), nullable=False),
    Column("passed", Boolean, nullable=False),
    Column("duration_s", Float, nullable=False),
    Column("seed", BigInteger),
    Column("failure_kind", String(64)),
    Column("verdict", Text, nullable=False),
    Column(
        "speed_ms", Float
    ),  # a passing GPU check's measured time (verdict["speed"]["ms"]), else NULL (0002)
    Column("speed_gpu", String(128)),
    Index("learner_attempts_by_user", "user_id", "exercise", "at"),
    Index("learner_attempts_speed", "exercise", "speed_ms"),
)

hints = Table(
    "learner_hints",
    metadata,
    Column("user_id", Integer, ForeignKey("users.id", ondelete="CASCADE"), primary_key=True),
    Column("exercise", String(128), primary_key=True),
    Column("hint_index", Integer, primary_key=True),
    Column("at", Float, nullable=False),
)

quiz_answers = Table(
    "learner_quiz_answers",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("user_id", Integer, ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    Column("lesson", String(128), nullable=False),
    Column("question", String(128), nullable=False),
    Column("answer", Text, nullable=False),
    Column("score", Float, nullable=False),
    Column("at", Float, nullable=False),
)

quiz_results = Table(
    "learner_quiz_results",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("user_id", Integer, ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    Column("lesson", String(128), nullable=False),
    Column("score", Float, nullable=False),
    Column("passed", Boolean, nullable=False),
    Column("at", Float, nullable=False),
)

state = Table(
    "learner_state",
    metadata,
    Column("user_id", Integer, ForeignKey("users.id", ondelete="CASCADE"), primary_key=True),
    Column("key", String(64), primary_key=True),
    Column("value", Text, nullable=False),
)

code = Table(
    "learner_code",
    metadata,
    Column("user_id", Integer, ForeignKey("users.id", ondelete="CASCADE"), primary_key=True),
    Column("exercise", String(128), primary_key=True),
    Column("text", Text, nullable=False),
    Column("version", String(32), nullable=False),
    Column("updated_at", Float, nullable=False),
)

code_backups = Table(
    "learner_code_backups",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("user_id", Integer, ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    Column("exercise", String(128), nullable=False),
    Column("why", String(32), nullable=False),
    Column("text", Text, nullable=False),
    Column("at", Float, nullable=False),
)

identities = Table(
    "user_identities",  # an OpenID provider's account linked to a user (store/identities.py, 0003)
    metadata,
    Column("issuer", String(512), primary_key=True),
    Column("subject", String(255), primary_key=True),
    Column("user_id", Integer, ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    Column("email", String(254)),  # the verified e-mail the provider last asserted
    Column(
        "teacher_by_provider", Boolean, nullable=False
    ),  # the teacher role came from the provider's groups
    Column("created_at", Float, nullable=False),
    Column("last_login_at", Float, nullable=False),
    Index("user_identities_by_user", "user_id"),
)

sso_pending = Table(
    "sso_pending",  # log-ins sent to the provider and not back yet: single use, minutes long (0003)
    metadata,
    Column("state_hash", String(64), primary_key=True),  # sha256 of the `state` sent to the provider
    Column("browser_hash", String(64), nullable=False),  # sha256 of the cookie that binds it to one browser
    Column("nonce", String(128), nullable=False),
    Column("code_verifier", String(128), nullable=False),
    Column("next_path", String(512), nullable=False),
    Column("created_at", Float, nullable=False),
    Index("sso_pending_by_age", "created_at"),
)
