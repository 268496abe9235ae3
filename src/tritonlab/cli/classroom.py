"""`tritonlab classroom …`: set up a class and manage its accounts from the terminal.

The database is TRITONLAB_DATABASE_URL (PostgreSQL: `postgresql+psycopg://user@host/db`), else
TRITONLAB_HOME/classroom.db. Passwords are printed once, when made; only their argon2id hashes are stored.
"""

from __future__ import annotations

import json
from pathlib import Path

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
        None, "--csv", help="Import a roster: rows username[,display name[,role[,password]]]."
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
            user, password = room.add(username or "", display_name, role)
            data = {"username": user.username, "role": user.role, "password": password}
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
) -> None:
    """Open or close the join link (self-registration)."""
    room = _open()
    try:
        if open_ is not None:
            room.set_join_open(open_)
        klass = room.the_class()
    finally:
        room.close()
    if klass is None:
        _fail(ValueError("no class yet: tritonlab classroom init --name NAME"))
    typer.echo(f"/join/{klass['join_code']} is {'open' if klass['join_open'] else 'closed'}")


def register(app: typer.Typer) -> None:
    from tritonlab.cli.classroom_backup import register as backup_commands  # backup, restore

    backup_commands(classroom_app)
    app.add_typer(classroom_app, name="classroom")
