"""`tritonlab classroom …`: set up a class and manage its accounts from the terminal; and the `--oidc-*`
options `serve --classroom` takes for a class that logs in through its OpenID provider.

The database is TRITONLAB_DATABASE_URL (PostgreSQL: `postgresql+psycopg://user@host/db`), else
TRITONLAB_HOME/classroom.db. Passwords are printed once, when made; only their argon2id hashes are stored.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Annotated

import typer

classroom_app = typer.Typer(
    help="Teach a class: accounts, the join link, progress exports.", no_args_is_help=True
)


def _open():  # type: ignore[no-untyped-def]
    from tritonlab.classroom.room import Classroom

    try:
        return Classroom()
    except Exception as exc:  # an unreachable server, a bad URL: say which database, never its password
        from tritonlab.classroom.room import database_url, redact

        typer.secho(f"cannot open the classroom database {redact(database_url())}: {exc}", fg="red", err=True)
        raise typer.Exit(1) from None


def _fail(exc: Exception) -> None:
    typer.secho(str(exc), fg="red", err=True)
    raise typer.Exit(1)


def _emit(data: object, as_json: bool, text: str) -> None:
    typer.echo(json.dumps(data, indent=2) if as_json else text)


@classroom_app.command("init")
def init(
    name: str = typer.Option(..., "--name", help="The class's name."),
    teacher: str = typer.Option("teacher", "--teacher", help="The first teacher's username."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Create the class and its first teacher; prints the teacher's password and the join path."""
    from tritonlab.classroom.room import AccountError

    room = _open()
    try:
        made = room.init(name, teacher)
    except AccountError as exc:
        _fail(exc)
    finally:
        room.close()
    _emit(
        made,
        as_json,
        f"Class {made['class']['name']!r} created in {room.where}.\n"
        f"Teacher: {made['teacher']['username']}  password: {made['teacher']['password']}\n"
        f"Learners join at {made['join_path']} (on the server's address).",
    )


@classroom_app.command("add")
def add(
    username: str | None = typer.Argument(None, help="The new account's username."),
    role: str = typer.Option("learner", "--role", help="learner or teacher."),
    display_name: str = typer.Option("", "--name", help="The name shown to the teacher."),
    csv_file: Path | None = typer.Option(
        None, "--csv", help="Import a roster: rows username[,display name[,role[,password[,e-mail]]]]."
    ),
    email: str | None = typer.Option(
        None,
        "--email",
        help="The e-mail a single sign-on log-in matches (docs/classroom.md, Single sign-on).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Add an account (or a CSV roster); prints each generated password once."""
    from tritonlab.classroom.room import AccountError

    if (username is None) == (csv_file is None):
        _fail(ValueError("give a USERNAME or --csv FILE (one of them)"))
    room = _open()
    try:
        if csv_file is not None:
            made = room.import_csv(csv_file.read_text(encoding="utf-8-sig"))
            data: object = {"added": made}
            text = "\n".join(f"{m['username']} ({m['role']})  password: {m['password']}" for m in made)
        else:
            user, password = room.add(username or "", display_name, role, email=email)
            data = {"username": user.username, "role": user.role, "password": password, "email": email}
            text = f"{user.username} ({user.role})  password: {password}"
    except (AccountError, OSError) as exc:
        _fail(exc)
    finally:
        room.close()
    _emit(data, as_json, text)


@classroom_app.command("list")
def list_(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """The class and its accounts."""
    room = _open()
    try:
        klass = room.the_class()
        users = [u.to_json() for u in room.users()]
    finally:
        room.close()
    data = {
        "class": {
            "name": klass["name"],
            "join_open": klass["join_open"],
            "join_open_until": klass["join_open_until"],
            "join_path": f"/join/{klass['join_code']}",
        }
        if klass
        else None,
        "users": users,
    }
    lines = [
        f"{u['username']:<20} {u['role']:<8} {'disabled' if u['disabled'] else 'active':<8} {u['display_name']}"
        for u in users
    ]
    _emit(data, as_json, "\n".join(lines) or "no accounts yet (tritonlab classroom init --name NAME)")


@classroom_app.command("export")
def export(
    csv_file: Path = typer.Option(..., "--csv", help="Where to write the progress table."),
) -> None:
    """Write the class's progress (learners × exercises) as CSV, safe to open in a spreadsheet."""
    from tritonlab.content.course import load_course

    room = _open()
    try:
        text = room.progress_csv(load_course())
    finally:
        room.close()
    csv_file.write_text(text, encoding="utf-8")
    typer.echo(f"wrote {csv_file} ({text.count(chr(10)) - 1} learners)")


@classroom_app.command("reset-password")
def reset_password(
    username: str = typer.Argument(..., help="Whose password."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Give an account a new generated password (ends its sessions, clears its log-in back-off)."""
    from tritonlab.classroom.room import AccountError

    room = _open()
    try:
        user = room.user(username)
        password = room.reset_password(user)
    except AccountError as exc:
        _fail(exc)
    finally:
        room.close()
    _emit(
        {"username": user.username, "password": password}, as_json, f"{user.username}  password: {password}"
    )


@classroom_app.command("email")
def email_(
    username: str = typer.Argument(..., help="Whose e-mail."),
    address: str | None = typer.Argument(None, help="The new e-mail; leave out to print the current one."),
    clear: bool = typer.Option(False, "--clear", help="Remove the account's e-mail."),
) -> None:
    """Show or set the e-mail a single sign-on log-in matches to this account (its first log-in only: after
    that, the provider's account stays linked to it)."""
    from tritonlab.classroom.room import AccountError

    if clear and address:
        _fail(ValueError("give an ADDRESS or --clear, not both"))
    room = _open()
    try:
        user = room.user(username)
        if clear or address:
            room.set_email(user, None if clear else address)
        shown = room.email(user)
    except AccountError as exc:
        _fail(exc)
    finally:
        room.close()
    typer.echo(f"{username}: {shown or 'no e-mail'}")


@classroom_app.command("disable")
def disable(
    username: str = typer.Argument(...),
    enable: bool = typer.Option(False, "--enable", help="Enable it again."),
) -> None:
    """Disable an account (its sessions end at once), or enable it again with --enable."""
    from tritonlab.classroom.room import AccountError

    room = _open()
    try:
        room.set_disabled(room.user(username), not enable)
    except AccountError as exc:
        _fail(exc)
    finally:
        room.close()
    typer.echo(f"{username}: {'enabled' if enable else 'disabled'}")


@classroom_app.command("unlock")
def unlock(username: str = typer.Argument(...)) -> None:
    """Clear an account's log-in back-off (after too many wrong passwords)."""
    from tritonlab.classroom.room import AccountError

    room = _open()
    try:
        room.unlock(room.user(username))
    except AccountError as exc:
        _fail(exc)
    finally:
        room.close()
    typer.echo(f"{username} may log in again at once")


@classroom_app.command("join")
def join(
    open_: bool = typer.Option(None, "--open/--close", help="Open or close self-registration."),
    hours: float = typer.Option(
        2.0, "--hours", min=1 / 60, max=168, help="With --open: close it by itself after this many hours."
    ),
) -> None:
    """Open the join link for a while (self-registration; it closes by itself), or close it now."""
    from tritonlab.classroom.room import AccountError

    room = _open()
    try:
        if open_ is not None:
            room.set_join_open(open_, hours * 3600)
        klass = room.the_class()
    except AccountError as exc:
        _fail(exc)
    finally:
        room.close()
    if klass is None:
        _fail(ValueError("no class yet: tritonlab classroom init --name NAME"))
    until = klass.get("join_open_until")
    state = "open until " + time.strftime("%Y-%m-%d %H:%M", time.localtime(until)) if until else "closed"
    typer.echo(f"/join/{klass['join_code']} is {state}")


# ---- `serve --classroom`'s single sign-on options (docs/classroom.md, "Single sign-on") ---------------------------
# Each also a TRITONLAB_OIDC_* variable; `sso_settings` checks what they say once, at start-up.

Issuer = Annotated[
    str | None,
    typer.Option(
        "--oidc-issuer",
        envvar="TRITONLAB_OIDC_ISSUER",
        help="With --classroom: log in through this OpenID provider (its issuer URL); needs --public-url. The "
        "client secret comes from TRITONLAB_OIDC_CLIENT_SECRET or --oidc-secret-file; without one the "
        "class is a public client (PKCE). See docs/classroom.md, Single sign-on.",
    ),
]
ClientId = Annotated[
    str | None,
    typer.Option(
        "--oidc-client-id", envvar="TRITONLAB_OIDC_CLIENT_ID", help="The class's client id at the provider."
    ),
]
SecretFile = Annotated[
    Path | None,
    typer.Option(
        "--oidc-secret-file",
        envvar="TRITONLAB_OIDC_SECRET_FILE",
        help="A file holding the client secret.",
    ),
]
Domains = Annotated[
    list[str] | None,
    typer.Option(
        "--oidc-allowed-domain",
        envvar="TRITONLAB_OIDC_ALLOWED_DOMAINS",
        help="An e-mail domain allowed in (repeat for more; the provider must mark the e-mail verified).",
    ),
]
Groups = Annotated[
    list[str] | None,
    typer.Option(
        "--oidc-allowed-group",
        envvar="TRITONLAB_OIDC_ALLOWED_GROUPS",
        help="A group allowed in (repeat for more; members of any one get in).",
    ),
]
GroupsClaim = Annotated[
    str | None,
    typer.Option(
        "--oidc-groups-claim",
        envvar="TRITONLAB_OIDC_GROUPS_CLAIM",
        help="The claim holding the groups; a dotted path works, e.g. realm_access.roles (default: groups).",
    ),
]
TeacherGroups = Annotated[
    list[str] | None,
    typer.Option(
        "--oidc-teacher-group",
        envvar="TRITONLAB_OIDC_TEACHER_GROUPS",
        help="Members of this group log in as teachers (repeat for more); without it the roster decides.",
    ),
]
Only = Annotated[
    bool,
    typer.Option(
        "--oidc-only",
        envvar="TRITONLAB_OIDC_ONLY",
        help="Log in through the provider only: no password log-in, no password sign-up on the join link.",
    ),
]
Name = Annotated[
    str | None,
    typer.Option(
        "--oidc-name", envvar="TRITONLAB_OIDC_NAME", help="The provider's name on the log-in button."
    ),
]
ConfigFile = Annotated[
    Path | None,
    typer.Option(
        "--oidc-config",
        envvar="TRITONLAB_OIDC_CONFIG",
        help="A TOML file of these settings, in a table named oidc (options and variables win over it).",
    ),
]


def sso_settings(options: dict, config_file: Path | None, public_url: str | None, classroom: bool):  # type: ignore[no-untyped-def]
    """The class's OpenID provider from the --oidc-* options (TRITONLAB_OIDC_*, --oidc-config), or None; a clear
    refusal when they cannot work. Says which URIs to register at the provider, and warns when it cannot be
    reached now (log-ins through it fail until it can; passwords still work unless --oidc-only)."""
    from tritonlab.classroom import oidc

    options = {**options, "client_secret": os.environ.get("TRITONLAB_OIDC_CLIENT_SECRET") or None}
    try:
        found = oidc.settings(options, config_file, public_url)
    except oidc.SettingsError as exc:
        typer.secho(str(exc), fg="red", err=True)
        raise typer.Exit(2) from None
    if found is None:
        return None
    if not classroom:
        typer.secho(
            "the --oidc-* settings need --classroom (single sign-on is for a class)", fg="red", err=True
        )
        raise typer.Exit(2)
    from tritonlab.classroom.oidc_client import OIDCClient

    kind = "confidential client" if found.client_secret else "public client, PKCE"
    typer.echo(
        f"Single sign-on: {found.issuer} (client {found.client_id}, {kind}"
        f"{'; passwords off' if found.only else ''}). At the provider, register the redirect URI "
        f"{found.redirect_uri} and the post-logout redirect URI {found.post_logout_uri}."
    )
    try:
        OIDCClient(found).metadata()
    except oidc.SSOError as exc:
        typer.secho(
            f"warning: {exc}; log-ins through the provider fail until it can be read", fg="yellow", err=True
        )
    return found


def register(app: typer.Typer) -> None:
    from tritonlab.cli.classroom_backup import register as backup_commands  # backup, restore

    backup_commands(classroom_app)
    app.add_typer(classroom_app, name="classroom")
