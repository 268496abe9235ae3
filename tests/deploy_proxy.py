"""The shipped reverse-proxy configurations (deploy/nginx/tritonlab.conf, deploy/caddy/Caddyfile) run for real
on loopback: a self-signed certificate made here with openssl, the file's ports and certificate paths changed,
nothing else. Each change is made only where the shipped file has the text the test expects, so a file that
changed shape fails here instead of being tested half-changed.

nginx and caddy are Debian packages (`make system-deps` installs them); a test that needs one is skipped with
the reason where it is missing."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NGINX_CONF = ROOT / "deploy" / "nginx" / "tritonlab.conf"
CADDYFILE = ROOT / "deploy" / "caddy" / "Caddyfile"
SHIPPED_CERT = "/etc/letsencrypt/live/class.example.org/fullchain.pem"
SHIPPED_KEY = "/etc/letsencrypt/live/class.example.org/privkey.pem"


def nginx_binary() -> str:
    found = shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx",) if os.path.exists(p)), None)
    if found is None:
        pytest.skip("needs nginx (Debian package nginx: make system-deps)")
    return found


def caddy_binary() -> str:
    found = shutil.which("caddy")
    if found is None:
        pytest.skip("needs caddy (Debian package caddy: make system-deps)")
    return found


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def make_certificate(folder: Path) -> tuple[Path, Path]:
    """A self-signed certificate for localhost and 127.0.0.1, valid for a day."""
    if shutil.which("openssl") is None:
        pytest.skip("needs openssl to make a test certificate")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
            "-keyout", str(key), "-out", str(cert), "-subj", "/CN=localhost",
            "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
        ],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return cert, key


def replace_exactly(text: str, old: str, new: str, count: int = 1) -> str:
    assert text.count(old) == count, f"the shipped file should hold {old!r} {count} time(s): update this test"
    return text.replace(old, new)


def nginx_site(cert: Path, key: Path, upstream: int, https: int, http: int) -> str:
    """deploy/nginx/tritonlab.conf on loopback ports with the test certificate (IPv6 listeners left out)."""
    text = NGINX_CONF.read_text()
    text = replace_exactly(text, "server 127.0.0.1:8000;", f"server 127.0.0.1:{upstream};")
    text = replace_exactly(text, "    listen 80;\n    listen [::]:80;\n", f"    listen 127.0.0.1:{http};\n")
    text = replace_exactly(
        text,
        "    listen 443 ssl http2;\n    listen [::]:443 ssl http2;\n",
        f"    listen 127.0.0.1:{https} ssl http2;\n",
    )
    text = replace_exactly(text, SHIPPED_CERT, str(cert))
    return replace_exactly(text, SHIPPED_KEY, str(key))


def nginx_main(folder: Path, site: str) -> Path:
    """A main nginx.conf around `site` (what /etc/nginx/nginx.conf's http {} gives it), all under `folder`."""
    (folder / "site.conf").write_text(site)
    user = "user root root;\n" if os.geteuid() == 0 else ""  # workers must reach the temp folders here
    conf = folder / "nginx.conf"
    conf.write_text(
        f"{user}pid {folder}/nginx.pid;\nerror_log stderr warn;\nworker_processes 1;\nevents {{}}\n"
        "http {\n    access_log off;\n"
        + "".join(
            f"    {kind}_temp_path {folder}/{kind};\n"
            for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
        )
        + f"    include {folder}/site.conf;\n}}\n"
    )
    return conf


def wait_for_port(port: int, proc: subprocess.Popen, what: str, log: Path, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"{what} exited: {log.read_text()}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    pytest.fail(f"{what} did not listen on {port}: {log.read_text()}")


@dataclass
class Proxy:
    name: str
    https: int
    http: int
    proc: subprocess.Popen

    @property
    def base(self) -> str:
        return f"https://localhost:{self.https}"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def start_nginx(folder: Path, upstream: int, https: int | None = None) -> Proxy:
    binary = nginx_binary()
    folder.mkdir(parents=True, exist_ok=True)
    cert, key = make_certificate(folder)
    https, http = https or free_port(), free_port()
    conf = nginx_main(folder, nginx_site(cert, key, upstream, https, http))
    log = folder / "nginx.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [binary, "-p", str(folder), "-e", "stderr", "-c", str(conf), "-g", "daemon off;"],
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    wait_for_port(https, proc, "nginx", log)
    return Proxy("nginx", https, http, proc)


def caddy_site(cert: Path, key: Path, upstream: int, https: int, http: int, data: Path) -> str:
    """deploy/caddy/Caddyfile on loopback ports with the test certificate, under global options that keep it
    there (no admin endpoint, no certificate authority, its data in `data`)."""
    text = CADDYFILE.read_text()
    text = replace_exactly(text, "class.example.org {\n", f"localhost {{\n\ttls {cert} {key}\n")
    text = replace_exactly(text, "reverse_proxy 127.0.0.1:8000 {", f"reverse_proxy 127.0.0.1:{upstream} {{")
    options = (
        f"{{\n\tadmin off\n\thttp_port {http}\n\thttps_port {https}\n\tdefault_bind 127.0.0.1\n"
        f"\tauto_https disable_certs\n\tstorage file_system {data}\n}}\n\n"
    )
    return options + text


def start_caddy(folder: Path, upstream: int) -> Proxy:
    binary = caddy_binary()
    cert, key = make_certificate(folder)
    https, http = free_port(), free_port()
    caddyfile = folder / "Caddyfile"
    caddyfile.write_text(caddy_site(cert, key, upstream, https, http, folder / "data"))
    env = dict(os.environ, HOME=str(folder), XDG_DATA_HOME=str(folder / "data"), XDG_CONFIG_HOME=str(folder))
    log = folder / "caddy.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [binary, "run", "--config", str(caddyfile), "--adapter", "caddyfile"],
            stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True,
        )  # fmt: skip
    wait_for_port(https, proc, "caddy", log)
    return Proxy("caddy", https, http, proc)
