"""`tritonlab classroom backup FILE` and `tritonlab classroom restore FILE [--force]` (docs/deploy.md)."""

from __future__ import annotations

import json
from pathlib import Path

import typer


def _fail(exc: Exception) -> None:
    typer.secho(str(exc), fg="red", err=True)
    raise typer.Exit(1)


def register(classroom_app: typer.Typer) -> None:
    """Add `backup` and `restore` to `tritonlab classroom`."""

    @classroom_app.command("backup")
    def backup(
        file: Path = typer.Argument(..., help="Where to write the backup (gzip-compressed JSON lines)."),
        as_json: bool = typer.Option(False, "--json", help="Print a JSON summary."),
    ) -> None:
        """Write the whole class database to FILE, consistent while the server runs (SQLite or PostgreSQL)."""
        from tritonlab.classroom.backup import BackupError, backup
        from tritonlab.classroom.room import database_url, redact

        def shown(table: str, rows: int) -> None:
            if not as_json:
                typer.echo(f"  {table}: {rows} rows")

        if not as_json:
            typer.echo(f"Backing up {redact(database_url())} to {file}")
        try:
            done = backup(file, progress=shown)
        except (BackupError, OSError) as exc:
            _fail(exc)
        except Exception as exc:  # an unreachable server, a bad URL: say which database, never its password
            _fail(RuntimeError(f"cannot read the classroom database {redact(database_url())}: {exc}"))
        if as_json:
            typer.echo(json.dumps(done, indent=2))
        else:
            typer.echo(
                f"Wrote {file} ({done['bytes']} bytes, schema revision {done['schema_revision']}, "
                f"{sum(done['rows'].values())} rows). It holds password hashes: keep it private."
            )

    @classroom_app.command("restore")
    def restore(
        file: Path = typer.Argument(..., help="A file written by `tritonlab classroom backup`."),
        force: bool = typer.Option(
            False, "--force", help="Replace everything a database that is not empty holds."
        ),
        as_json: bool = typer.Option(False, "--json", help="Print a JSON summary."),
    ) -> None:
        """Restore FILE into the class database: an empty one, unless --force. Stop the server first."""
        from tritonlab.classroom.backup import BackupError, restore
        from tritonlab.classroom.room import database_url, redact

        def shown(table: str, rows: int) -> None:
            if not as_json:
                typer.echo(f"  {table}: {rows} rows")

        if not as_json:
            typer.echo(f"Restoring {file} into {redact(database_url())}")
        try:
            done = restore(file, force=force, progress=shown)
        except (BackupError, OSError) as exc:
            _fail(exc)
        except Exception as exc:
            _fail(RuntimeError(f"cannot restore into {redact(database_url())}: {exc}"))
        if as_json:
            typer.echo(json.dumps(done, indent=2))
        else:
            typer.echo(
                f"Restored {file} into {done['database']} (revision {done['schema_revision']}, now "
                f"{done['upgraded_to']}; {sum(done['rows'].values())} rows)."
            )
