"""The shipped proxy configurations, run for real (nginx from deploy/nginx/tritonlab.conf, Caddy from
deploy/caddy/Caddyfile), in front of a small recording server that stands in for tritonlab so that the test
sees exactly what the proxy passes on:

- forwarded headers: the client's X-Forwarded-For, X-Real-IP, X-Forwarded-Proto, Forwarded and
  X-Forwarded-Host are replaced by what the proxy saw (the client's own address, https) or dropped;
- request bodies: 1.5 MiB reaches the server (its own cap is 2 MiB), 2.5 MiB is refused by the proxy (the
  recording server answers 413 to it too, as tritonlab does, but never sees it);
- Server-Sent Events: an event reaches the client while the stream is still open, although the recording
  server, unlike tritonlab, does not send `X-Accel-Buffering: no` (so the configuration alone must do it);
- plain HTTP is redirected to HTTPS.

tests/test_deploy_nginx.py runs nginx in front of the real `serve --classroom`."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
from deploy_proxy import Proxy, start_caddy, start_nginx

MIB = 1024 * 1024
EVENT_GAP_S = 3.0


class Recorder(BaseHTTPRequestHandler):
    """Answers every request with the headers (and body size) it received; streams two events 3 s apart."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def _answer(self, data: dict) -> None:
        body = json.dumps(data).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _seen(self, size: int = 0) -> dict:
        headers: dict[str, list[str]] = {}
        for key, value in self.headers.items():
            headers.setdefault(key.lower(), []).append(value)
        return {"path": self.path, "headers": headers, "received": size}

    def do_GET(self) -> None:  # noqa: N802
        if self.path.startswith("/api/jobs/") and self.path.endswith("/events"):
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-store")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for n, name in enumerate(("first", "second")):
                chunk = f"id: {n}\nevent: {name}\ndata: {{}}\n\n".encode()
                self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                self.wfile.flush()
                if n == 0:
                    time.sleep(EVENT_GAP_S)
            self.wfile.write(b"0\r\n\r\n")
            return
        self._answer(self._seen())

    def do_POST(self) -> None:  # noqa: N802
        size = int(self.headers.get("Content-Length") or 0)
        self.server.posts.append(size)  # type: ignore[attr-defined]
        if size > 2 * MIB:  # as tritonlab does (web/security.py): refused before a byte is read
            self.close_connection = True
            body = b'{"error": "too large"}'
            self.send_response(413)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)
            return
        left = size
        while left:
            left -= len(self.rfile.read(min(left, 65536)))
        self.server.bodies.append(size)  # type: ignore[attr-defined]
        self._answer(self._seen(size))


@pytest.fixture(scope="module")
def recorder() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    server.bodies, server.posts = [], []  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()


@pytest.fixture(scope="module", params=["nginx", "caddy"])
def proxy(
    request: pytest.FixtureRequest, recorder: ThreadingHTTPServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Proxy]:
    folder = tmp_path_factory.mktemp(request.param)
    start = start_nginx if request.param == "nginx" else start_caddy
    made = start(folder, recorder.server_address[1])
    yield made
    made.stop()


def client(proxy: Proxy, address: str = "127.0.0.7") -> httpx.Client:
    transport = httpx.HTTPTransport(local_address=address, verify=False)
    return httpx.Client(base_url=proxy.base, transport=transport, timeout=30)


FORGED = {
    "X-Forwarded-For": "198.51.100.1",
    "X-Real-IP": "198.51.100.2",
    "X-Forwarded-Proto": "http",
    "Forwarded": "for=198.51.100.3;proto=http",
    "X-Forwarded-Host": "evil.example",
}


def test_the_proxy_overwrites_forwarded_headers_with_what_it_saw(proxy: Proxy) -> None:
    for address in ("127.0.0.7", "127.0.0.9"):
        with client(proxy, address) as c:
            seen = c.get("/api/status", headers=FORGED).json()["headers"]
        assert seen["x-forwarded-for"] == [address], seen
        assert seen["x-real-ip"] == [address]
        assert seen["x-forwarded-proto"] == ["https"]
        assert "forwarded" not in seen and "x-forwarded-host" not in seen
        assert seen["host"][0].split(":")[0] == "localhost"


def test_request_bodies_up_to_the_servers_cap_pass_and_larger_ones_stop_at_the_proxy(
    proxy: Proxy, recorder: ThreadingHTTPServer
) -> None:
    recorder.bodies.clear()  # type: ignore[attr-defined]
    recorder.posts.clear()  # type: ignore[attr-defined]
    with client(proxy) as c:
        ok = c.post("/api/exercises/x/code", content=b"x" * (3 * MIB // 2))
        assert ok.status_code == 200 and ok.json()["received"] == 3 * MIB // 2
        big = c.post("/api/exercises/x/code", content=b"x" * (5 * MIB // 2))
    assert big.status_code == 413, big.text[:200]
    assert recorder.bodies == recorder.posts == [3 * MIB // 2]  # type: ignore[attr-defined]


def test_server_sent_events_pass_through_unbuffered(proxy: Proxy) -> None:
    arrived: dict[str, float] = {}
    with client(proxy) as c, c.stream("GET", "/api/jobs/0123abcd/events") as stream:
        assert stream.status_code == 200
        for line in stream.iter_lines():
            if line.startswith("event: "):
                arrived[line[7:]] = time.monotonic()
    assert set(arrived) == {"first", "second"}
    gap = arrived["second"] - arrived["first"]
    assert gap >= EVENT_GAP_S - 1.0, f"the first event arrived only {gap:.2f} s before the second: buffered"


def test_plain_http_is_redirected_to_https(proxy: Proxy) -> None:
    transport = httpx.HTTPTransport(local_address="127.0.0.7")
    with httpx.Client(transport=transport, timeout=30) as c:
        r = c.get(f"http://localhost:{proxy.http}/login?next=/teacher")
    assert r.status_code in (301, 308), r.status_code
    assert r.headers["location"].startswith("https://localhost")
    assert r.headers["location"].endswith("/login?next=/teacher")
