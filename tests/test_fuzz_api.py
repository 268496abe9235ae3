"""Fuzz the web API with schemathesis strategies from the app's own OpenAPI spec (bounded): whatever arrives,
the answer is never a 5xx and never a traceback; errors are JSON {"error": ...}."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

schemathesis = pytest.importorskip(
    "schemathesis", reason="schemathesis is a dev dependency (pip install -e '.[dev]')"
)

from fastapi.testclient import TestClient  # noqa: E402

from tritonlab.service import Service  # noqa: E402
from tritonlab.web import create_app  # noqa: E402

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "course"
TOKEN = "fuzz-token-0123456789abcdef"
SKIP = ("/events", "/run", "/check")  # these start sandboxed jobs: covered by the load test, not fuzzed here


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, list]]:
    root = tmp_path_factory.mktemp("fuzz")
    saved = os.environ.get("TRITONLAB_HOME")
    os.environ["TRITONLAB_HOME"] = str(root / "home")
    service = Service(course_dir=FIXTURE, workspace_dir=root / "ws", backend="interpreter", lang="en")
    app = create_app(service, TOKEN)
    schema = schemathesis.openapi.from_dict(app.openapi())
    operations = [op.ok() for op in schema.get_all_operations()]
    operations = [op for op in operations if not op.path.endswith(SKIP)]
    with TestClient(app, base_url="http://127.0.0.1:8000", raise_server_exceptions=False) as client:
        yield client, operations
    service.close()
    if saved is None:
        os.environ.pop("TRITONLAB_HOME", None)
    else:
        os.environ["TRITONLAB_HOME"] = saved


def test_api_never_answers_5xx(api: tuple[TestClient, list]) -> None:
    client, operations = api
    assert operations, "the OpenAPI spec lists no operations"
    strategy = st.one_of([op.as_strategy() for op in operations])

    @settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
    @given(case=strategy)
    def fuzz(case) -> None:  # noqa: ANN001
        headers = {"Authorization": f"Bearer {TOKEN}", **(case.headers or {})}
        kwargs = {"params": case.query, "headers": headers}
        if type(case.body).__name__ != "NotSet":
            kwargs["json"] = case.body
        response = client.request(case.method, case.formatted_path, **kwargs)
        assert response.status_code < 500, (
            f"{case.method} {case.formatted_path}: {response.status_code} {response.text[:300]}"
        )
        assert "Traceback" not in response.text

    fuzz()


@pytest.mark.parametrize(
    ("body", "status"),
    [
        (b"{not json", 422),
        (b'{"text": 5}', 422),
        (b"\xff\xfe\x00bad", 422),
        (b'{"text": "' + b"a" * (3 << 20) + b'"}', 413),
    ],
)
def test_bad_bodies_get_clear_errors(api: tuple[TestClient, list], body: bytes, status: int) -> None:
    client, _ = api
    r = client.put(
        "/api/exercises/vector-copy/code",
        content=body,
        headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
    )
    assert r.status_code == status and "error" in r.json() and "Traceback" not in r.text


def test_unknown_exercise_and_non_utf8_source(api: tuple[TestClient, list], tmp_path: Path) -> None:
    client, _ = api
    r = client.get("/api/exercises/no-such-thing/code", headers={"Authorization": f"Bearer {TOKEN}"})
    assert r.status_code == 404 and "no-such-thing" in r.json()["error"]
    ws = client.app.state.service.workspace  # type: ignore[attr-defined]
    exercise = client.app.state.service.exercise("vector-copy")  # type: ignore[attr-defined]
    ws.ensure(exercise)
    ws.path_for(exercise).write_bytes(b"def vector_copy(x):\n    return x  # \xff\xfe latin-1 bytes\n")
    r = client.get("/api/exercises/vector-copy/code", headers={"Authorization": f"Bearer {TOKEN}"})
    assert r.status_code == 200 and "\ufffd" in r.json()["text"]
