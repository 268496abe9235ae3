"""The files under deploy/ are valid for the tools that read them, and agree with each other and with the server:
`nginx -t` on the shipped site (only the certificate paths changed), `caddy validate` on the Caddyfile,
`systemd-analyze verify` on the units (only the path of the tritonlab command changed; any warning fails),
and the keys the server needs in its unit (Delegate=yes for per-run cgroups, enough file descriptors, none
of the hardening options that would take its cgroups or bubblewrap's namespaces away). The ports, addresses
and host name in the unit, the nginx site and the Caddyfile are the same ones."""

from __future__ import annotations

import configparser
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from deploy_proxy import (
    CADDYFILE,
    NGINX_CONF,
    SHIPPED_CERT,
    SHIPPED_KEY,
    caddy_binary,
    make_certificate,
    nginx_binary,
    nginx_main,
    replace_exactly,
)

ROOT = Path(__file__).resolve().parent.parent
UNITS = ROOT / "deploy" / "systemd"
SHIPPED_COMMAND = "/opt/tritonlab/.venv/bin/tritonlab"


def unit(name: str) -> configparser.ConfigParser:
    """A unit file's keys (systemd's syntax is close enough to INI for the keys checked here)."""
    parser = configparser.ConfigParser(strict=False, interpolation=None, delimiters=("=",))
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string((UNITS / name).read_text())
    return parser


def test_nginx_accepts_the_shipped_site(tmp_path: Path) -> None:
    binary = nginx_binary()
    cert, key = make_certificate(tmp_path)
    site = replace_exactly(
        replace_exactly(NGINX_CONF.read_text(), SHIPPED_CERT, str(cert)), SHIPPED_KEY, str(key)
    )
    conf = nginx_main(tmp_path, site)
    done = subprocess.run(
        [binary, "-t", "-p", str(tmp_path), "-e", "stderr", "-c", str(conf)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and "test is successful" in done.stderr, done.stderr
    assert "warn" not in done.stderr, done.stderr


def test_caddy_accepts_the_shipped_caddyfile(tmp_path: Path) -> None:
    binary = caddy_binary()
    env = {
        "HOME": str(tmp_path),
        "XDG_DATA_HOME": str(tmp_path),
        "XDG_CONFIG_HOME": str(tmp_path),
        "PATH": "/usr/bin:/bin",
    }
    done = subprocess.run(
        [binary, "validate", "--config", str(CADDYFILE), "--adapter", "caddyfile"],
        capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip
    assert done.returncode == 0 and "Valid configuration" in done.stdout + done.stderr, done.stderr
    formatted = subprocess.run(
        [binary, "fmt", str(CADDYFILE)], capture_output=True, text=True, timeout=60, env=env
    )
    assert formatted.stdout == CADDYFILE.read_text(), "caddy fmt would change the shipped Caddyfile"


def test_systemd_accepts_the_units_without_a_warning(tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip(
            "needs systemd-analyze (Debian package systemd); the unit's keys are checked below anyway"
        )
    command = Path(sys.executable).parent / "tritonlab"
    assert command.exists(), command
    names = sorted(p.name for p in UNITS.iterdir())
    assert names == ["tritonlab-backup.service", "tritonlab-backup.timer", "tritonlab.service"]
    for name in names:
        (tmp_path / name).write_text((UNITS / name).read_text().replace(SHIPPED_COMMAND, str(command)))
    done = subprocess.run(
        [analyze, "verify", *(str(tmp_path / n) for n in names)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert not (done.stdout + done.stderr).strip(), (
        done.stdout + done.stderr
    )  # an unknown key is only a warning


def test_the_server_unit_gives_what_the_server_needs() -> None:
    service = unit("tritonlab.service")["Service"]
    assert service["Delegate"] == "yes"  # per-run cgroups (runs/cgroups.py)
    assert int(service["LimitNOFILE"]) >= 16384
    for taken in (
        "ProtectControlGroups",
        "RestrictNamespaces",
        "PrivateUsers",
        "SystemCallFilter",
        "MemoryDenyWriteExecute",
    ):
        assert taken not in service, f"{taken}= would take away the cgroups or namespaces the runs need"
    assert service["User"] != "root" and service["ReadWritePaths"] == "/var/lib/tritonlab"
    assert "TRITONLAB_HOME=/var/lib/tritonlab" in service["Environment"].split()
    command = service["ExecStart"].split()
    assert command[:3] == [SHIPPED_COMMAND, "serve", "--classroom"] and "--allow-unhardened" not in command
    backup = unit("tritonlab-backup.service")["Service"]
    assert backup["User"] == service["User"] and backup["Environment"] == service["Environment"]
    assert f"{SHIPPED_COMMAND} classroom backup" in backup["ExecStart"]
    assert unit("tritonlab-backup.timer")["Timer"]["Persistent"] == "true"


def test_the_unit_the_nginx_site_and_the_caddyfile_agree() -> None:
    command = unit("tritonlab.service")["Service"]["ExecStart"].split()

    def option(name: str) -> str:
        return command[command.index(name) + 1]

    nginx, caddy = NGINX_CONF.read_text(), CADDYFILE.read_text()
    upstream = f"{option('--host')}:{option('--port')}"
    assert f"server {upstream};" in nginx and f"reverse_proxy {upstream} {{" in caddy
    assert option("--trusted-proxy") == "127.0.0.1" == option("--host")  # nginx and Caddy connect from there
    host = option("--public-url").removeprefix("https://")
    assert re.findall(r"server_name (\S+);", nginx) == [host, host]
    assert caddy.count(f"\n{host} {{\n") == 1
