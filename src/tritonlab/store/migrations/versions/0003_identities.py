"""Log-in through an OpenID provider: the roster's e-mail (`users.email`, unique, lower case), the provider
accounts linked to users (`user_identities`, keyed by the provider's issuer and subject), and the log-ins
sent to the provider and not yet back (`sso_pending`: single use, minutes long).

Never edit this file once shipped; add a new revision instead.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD COLUMN (never batch mode's copy-and-move of `users`: with foreign keys on, SQLite would cascade
    # the drop of the old table to every learner row), and a unique index beside it (NULLs never collide).
    op.add_column("users", sa.Column("email", sa.String(254), nullable=True))
    op.create_index("users_email", "users", ["email"], unique=True)
    op.create_table(
        "user_identities",
        sa.Column("issuer", sa.String(512), primary_key=True),
        sa.Column("subject", sa.String(255), primary_key=True),
        sa.Column("user_id", sa.Integer, sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
        sa.Column("email", sa.String(254)),
        sa.Column("teacher_by_provider", sa.Boolean, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("last_login_at", sa.Float, nullable=False),
    )
    op.create_index("user_identities_by_user", "user_identities", ["user_id"])
    op.create_table(
        "sso_pending",
        sa.Column("state_hash", sa.String(64), primary_key=True),
        sa.Column("browser_hash", sa.String(64), nullable=False),
        sa.Column("nonce", sa.String(128), nullable=False),
        sa.Column("code_verifier", sa.String(128), nullable=False),
        sa.Column("next_path", sa.String(512), nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
    )
    op.create_index("sso_pending_by_age", "sso_pending", ["created_at"])


def downgrade() -> None:
    op.drop_index("sso_pending_by_age", table_name="sso_pending")
    op.drop_table("sso_pending")
    op.drop_index("user_identities_by_user", table_name="user_identities")
    op.drop_table("user_identities")
    op.drop_index("users_email", table_name="users")
    op.execute("ALTER TABLE users DROP COLUMN email")  # SQLite >= 3.35 and PostgreSQL, no copy
