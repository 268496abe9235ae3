"""A throw-away PostgreSQL server for the classroom tests: started once per test session as an unprivileged
user (`nobody`) in a folder under /tmp that it owns, listening on a unix socket only, stopped at the end.

It runs with fsync and full-page writes off: nothing the tests prove depends on them (the kill -9 tests kill the
client, never PostgreSQL, and a commit PostgreSQL acknowledged survives its client's death either way; only a
power cut tells them apart, docs/testing.md), and with them on every CREATE DATABASE and the shutdown
checkpoint wait for the disk (stopping the server took 6 s here, 20 s under the shared machine's load; 0.2 s
without). The product's own setting, synchronous_commit, is left as it is and checked.

Skipped, with the reason, when the run is not root (PostgreSQL refuses to run as root, and we need root to
run it as another user) or the server binaries are missing (`make system-deps` installs them)."""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

PG_USER = "nobody"


def pg_bindir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


@dataclass
class Postgres:
    bindir: Path
    folder: Path
    counter: itertools.count

    def new_database(self) -> str:
        """A fresh, empty database on the server; returns its SQLAlchemy URL."""
        import psycopg

        name = f"t{next(self.counter)}_{os.getpid()}"
        with psycopg.connect(f"host={self.folder} dbname=postgres user=tritonlab", autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return f"postgresql+psycopg://tritonlab@/{name}?host={self.folder}"


def start_postgres() -> Iterator[Postgres]:
    if os.geteuid() != 0:
        pytest.skip("PostgreSQL tests need root (to start the server as the unprivileged user nobody)")
    bindir = pg_bindir()
    if bindir is None:
        pytest.skip("PostgreSQL server binaries not found under /usr/lib/postgresql (make system-deps)")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.skip("psycopg is not installed")
    who = pwd.getpwnam(PG_USER)
    folder = Path(tempfile.mkdtemp(prefix="tritonlab-pg-", dir="/tmp"))
    os.chown(folder, who.pw_uid, who.pw_gid)
    data = folder / "data"
    as_pg = {"user": who.pw_uid, "group": who.pw_gid, "extra_groups": [], "cwd": folder}
    env = {"PATH": f"{bindir}:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": str(folder)}
    try:
        subprocess.run(
            [bindir / "initdb", "-D", data, "-U", "tritonlab", "--auth=trust", "-E", "UTF8", "--no-sync"],
            check=True,
            capture_output=True,
            env=env,
            timeout=120,
            **as_pg,
        )
        options = (
            f"-k {folder} -c listen_addresses='' -c max_connections=200 -c fsync=off -c full_page_writes=off"
        )
        subprocess.run(
            [
                bindir / "pg_ctl",
                "-D",
                data,
                "-o",
                options,
                "-l",
                folder / "server.log",
                "-w",
                "-t",
                "60",
                "start",
            ],
            check=True,
            capture_output=True,
            env=env,
            timeout=90,
            **as_pg,
        )
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        log = (folder / "server.log").read_text() if (folder / "server.log").exists() else ""
        shutil.rmtree(folder, ignore_errors=True)
        pytest.fail(f"could not start PostgreSQL: {exc}\n{getattr(exc, 'stderr', b'')!r}\n{log}")
    try:
        yield Postgres(bindir, folder, itertools.count())
    finally:
        subprocess.run(
            [bindir / "pg_ctl", "-D", data, "-m", "fast", "-w", "stop"], capture_output=True, env=env, **as_pg
        )
        shutil.rmtree(folder, ignore_errors=True)
