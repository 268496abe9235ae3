"""The web API in-process (FastAPI TestClient): security, the learner's code, runs, checks, quiz, errors."""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tritonlab.service import Service
from tritonlab.web import create_app
from tritonlab.web.security import cookie_name

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
TOKEN = "test-token-0123456789abcdef"
BASE = "http://127.0.0.1:8000"
ORIGIN = {"Origin": BASE}
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d49444154789c63f8ff"
    "ff3f0005fe02fea7d6a4a60000000049454e44ae426082"
)
QUIZ = """pass_mark = 0.5

[[questions]]
id = "mask"
type = "single"
outcomes = ["1.1"]
prompt = "Why does the copy kernel mask its `tl.store`?"
options = ["To go faster", "So the last program does not write past the end"]
answer = 1
explanations = ["Masks are about correctness, not speed.", "Lanes past n are switched off."]

[[questions]]
id = "programs"
type = "numeric"
outcomes = ["1.1"]
prompt = "How many programs copy 2050 elements with BLOCK = 1024?"
answer = 3
answer_code = "triton.cdiv(2050, 1024)"
explanation = "cdiv rounds up: two full blocks and one partial block."
"""


def make_course(root: Path) -> Path:
    """A two-lesson course: a reading lesson with an example, a figure and a quiz; a vector-copy exercise."""
    course = root / "course"
    intro = course / "01-intro"
    (intro / "figures").mkdir(parents=True)
    (intro / "examples").mkdir()
    (intro / "figures" / "dot.png").write_bytes(PNG)
    (intro / "secret.txt").write_text("not a figure")
    (intro / "examples" / "hello.py").write_text("print('\\x1b[32mhello\\x1b[0m from the example')\n")
    (intro / "lesson.toml").write_text(
        '[title]\nen = "Intro"\n\n[[examples]]\nfile = "examples/hello.py"\ntitle.en = "Say hello"\n'
    )
    (intro / "lesson.en.md").write_text(
        "# Intro\n\n## Copying\n\nSome *text*.\n\n![A dot](figures/dot.png)\n\n"
        "```python\nx = 1  # <script>alert(1)</script>\n```\n\n<b>raw html</b>\n"
    )
    (intro / "quiz.en.toml").write_text(QUIZ)
    copy = course / "02-copy"
    shutil.copytree(FIXTURES / "course" / "01-only" / "exercises", copy / "exercises")
    (copy / "lesson.toml").write_text('exercises = ["vector-copy"]\n\n[title]\nen = "Copy"\n')
    (copy / "lesson.en.md").write_text("# Copy\n\nWrite the copy.\n")
    (course / "course.toml").write_text(
        'format_version = 1\nlessons = ["01-intro", "02-copy"]\n\n[title]\n'
        'en = "Fixture course"\n\n[welcome]\nen = "Welcome, *learner*."\n'
    )
    return course


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    root = tmp_path_factory.mktemp("web")
    saved = {k: os.environ.get(k) for k in ("TRITONLAB_HOME", "TRITONLAB_BACKEND", "TRITONLAB_LANG")}
    os.environ["TRITONLAB_HOME"] = str(root / "home")
    os.environ["TRITONLAB_BACKEND"] = "interpreter"
    os.environ.pop("TRITONLAB_LANG", None)
    service = Service(course_dir=make_course(root), workspace_dir=root / "ws", lang="en")
    service.warm_up()
    app = create_app(service, TOKEN)
    with TestClient(app, base_url=BASE) as client:
        client.cookies.set(
            cookie_name(TOKEN),
            client.get(f"/?token={TOKEN}", follow_redirects=False).cookies[cookie_name(TOKEN)],
        )
        yield {"client": client, "service": service, "root": root, "app": app}
    service.close()
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def events(client: TestClient, job: dict, timeout: float = 120) -> list[tuple[str, dict]]:
    out: list[tuple[str, dict]] = []
    with client.stream("GET", job["events"], timeout=timeout) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        name = None
        for line in response.iter_lines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: ") and name:
                out.append((name, json.loads(line[6:])))
    assert out and out[-1][0] == "end"
    return out


def put(client: TestClient, text: str, base: str | None, force: bool = False):  # noqa: ANN201
    return client.put(
        "/api/exercises/vector-copy/code",
        json={"text": text, "base_version": base, "force": force},
        headers=ORIGIN,
    )


# ---- security --------------------------------------------------------------------------------------------


def test_token_is_exchanged_for_a_strict_cookie(env: dict) -> None:
    fresh = TestClient(env["app"], base_url=BASE)
    assert fresh.get("/").status_code == 401
    assert fresh.get("/api/progress").json()["reason"] == "token needed"
    assert fresh.get("/?token=wrong").status_code == 401
    r = fresh.get(f"/lessons/1?token={TOKEN}&x=1", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/lessons/1?x=1"
    cookie = r.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and TOKEN not in cookie
    assert fresh.get("/").status_code == 200  # the cookie now authenticates
    bearer = TestClient(env["app"], base_url=BASE)
    assert bearer.get("/api/progress", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200


def test_host_and_origin_checks(env: dict) -> None:
    client = env["client"]
    assert client.get("/", headers={"Host": "evil.example:8000"}).status_code == 403
    assert client.get("/", headers={"Host": "localhost:8000"}).status_code == 200
    assert client.post("/api/exercises/vector-copy/hint").status_code == 403  # no Origin at all
    evil = client.post("/api/exercises/vector-copy/hint", headers={"Origin": "http://evil.example"})
    assert evil.status_code == 403 and "Origin" in evil.json()["error"]
    other_port = client.post("/api/exercises/vector-copy/hint", headers={"Origin": "http://127.0.0.1:9999"})
    assert other_port.status_code == 403
    bearer = TestClient(env["app"], base_url=BASE)
    status = bearer.get("/api/status", headers={"Authorization": f"Bearer {TOKEN}"}).json()
    assert status["backend"] == "interpreter"
    # the run pool's counts, or None before the worker started (scripts/load_gpu.py reads them)
    warm = status["warm_children"]
    assert warm is None or set(warm) == {"made", "taken", "ready_ahead", "dropped_unused"}, warm


def test_no_cors_and_strict_headers(env: dict) -> None:
    client = env["client"]
    r = client.get("/api/progress", headers={"Origin": "http://evil.example"})
    assert "access-control-allow-origin" not in r.headers
    pre = client.options(
        "/api/exercises/vector-copy/code",
        headers={"Origin": "http://evil.example", "Access-Control-Request-Method": "PUT"},
    )
    assert "access-control-allow-origin" not in pre.headers and pre.status_code >= 400
    page = client.get("/lessons/1")
    assert re.search(r"script-src 'self';", page.headers["content-security-policy"])
    assert page.headers["x-frame-options"] == "DENY"


# ---- pages -----------------------------------------------------------------------------------------------


def test_pages_render_safely(env: dict) -> None:
    client = env["client"]
    index = client.get("/").text
    assert "Fixture course" in index and "/lessons/01-intro" in index and "<em>learner</em>" in index
    page = client.get("/lessons/01-intro").text
    assert 'src="/lessons/01-intro/figures/dot.png"' in page
    assert "<script>alert" not in page and "&lt;b&gt;raw html&lt;/b&gt;" in page
    assert 'data-example="0"' in page and 'id="quiz"' in page
    assert client.get("/lessons/99").status_code == 404
    assert client.get("/lessons/01-intro/figures/dot.png").content == PNG
    for bad in ("..%2Fsecret.txt", "..%2F..%2Fcourse.toml", "secret.txt", "%2Fetc%2Fpasswd"):
        assert client.get(f"/lessons/01-intro/figures/{bad}").status_code == 404


def test_language_switch_marks_the_fallback(env: dict) -> None:
    client, service = env["client"], env["service"]
    r = client.post(
        "/settings/lang", content="lang=pt&next=/lessons/2", headers=ORIGIN, follow_redirects=False
    )
    assert r.status_code == 303 and r.headers["location"] == "/lessons/2"
    try:
        assert "Not translated yet" in client.get("/lessons/2").text
        assert client.post("/settings/lang", content="lang=xx", headers=ORIGIN).status_code == 400
        r = client.post(
            "/settings/lang", content="lang=en&next=//evil.example", headers=ORIGIN, follow_redirects=False
        )
        assert r.headers["location"] == "/"
    finally:
        service.lang = "en"


# ---- the learner's code ----------------------------------------------------------------------------------


def test_save_conflict_and_reload(env: dict) -> None:
    client, service = env["client"], env["service"]
    first = client.get("/api/exercises/vector-copy/code").json()
    r = put(client, first["text"] + "\n# mine\n", first["version"])
    assert r.status_code == 200
    mine = r.json()["version"]
    Path(first["path"]).write_text("# edited in another editor\n")  # e.g. while `tritonlab watch` runs
    clash = put(client, "# newer in the browser\n", mine)
    assert clash.status_code == 409
    assert clash.json()["disk_text"] == "# edited in another editor\n" and clash.json()["conflict"] is True
    assert Path(first["path"]).read_text() == "# edited in another editor\n"  # nothing was overwritten
    assert put(client, "# newer in the browser\n", mine, force=True).status_code == 200
    backups = list((service.workspace.root / ".backups").glob("vector-copy-*-overwritten-*.py"))
    assert any(b.read_text() == "# edited in another editor\n" for b in backups)
    assert "# newer in the browser" in client.get("/lessons/2").text  # a reload shows the saved code
    kept = client.post(
        "/api/exercises/vector-copy/backup", json={"text": "# discarded"}, headers=ORIGIN
    ).json()
    assert Path(kept["backup"]).read_text() == "# discarded"


def test_bad_requests_get_clear_errors(env: dict) -> None:
    client = env["client"]
    broken = client.put(
        "/api/exercises/vector-copy/code",
        content=b"{not json",
        headers=ORIGIN | {"Content-Type": "application/json"},
    )
    assert broken.status_code == 422 and "not valid JSON" in broken.json()["error"]
    missing = client.put("/api/exercises/vector-copy/code", json={"base_version": None}, headers=ORIGIN)
    assert missing.status_code == 422 and "`text`" in missing.json()["error"]
    assert client.get("/api/exercises/nope/code").json()["error"].startswith("there is no exercise")
    huge = client.put(
        "/api/exercises/vector-copy/code",
        content=b"x" * (3 << 20),
        headers=ORIGIN | {"Content-Type": "application/json"},
    )
    assert huge.status_code == 413
    big = put(client, "#" * (600 * 1024), None)
    assert big.status_code == 413 and "larger than" in big.json()["error"]


# ---- runs, checks, hints, reset, solution ----------------------------------------------------------------


def test_run_streams_output_and_errors(env: dict) -> None:
    client = env["client"]
    program = (
        "import sys\nfor i in range(3):\n    print(f'line {i}', flush=True)\nprint('\\x1b[31mred\\x1b[0m')\n"
    )
    code = client.get("/api/exercises/vector-copy/code").json()
    job = client.post(
        "/api/exercises/vector-copy/run",
        json={"text": program, "base_version": code["version"]},
        headers=ORIGIN,
    ).json()
    got = events(client, job)
    names = [n for n, _ in got]
    assert names[0] == "begin" and "start" in names and names[-2:] == ["exit", "end"]
    output = "".join(d["text"] for n, d in got if n == "output")
    assert "line 0\nline 1\nline 2\n" in output and "\x1b[31mred" in output
    assert got[-2][1]["exit_code"] == 0 and got[0][1]["backend"] == "interpreter"
    code = client.get("/api/exercises/vector-copy/code").json()
    assert put(client, "def f(:\n", code["version"]).status_code == 200
    failed = events(client, client.post("/api/exercises/vector-copy/run", headers=ORIGIN).json())[-2][1]
    assert failed["exit_code"] == 1 and failed["error"]["type"] == "SyntaxError"
    example = events(client, client.post("/api/lessons/1/examples/0/run", headers=ORIGIN).json())
    assert "hello" in "".join(d["text"] for n, d in example if n == "output")
    assert client.post("/api/lessons/1/examples/5/run", headers=ORIGIN).status_code == 404


def wait_for(condition: object, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:  # type: ignore[operator]
        time.sleep(0.05)
    assert condition(), "timed out waiting"  # type: ignore[operator]


def test_stop_kills_endless_loops_and_the_queue_shows(env: dict) -> None:
    client, app = env["client"], env["app"]
    code = client.get("/api/exercises/vector-copy/code").json()
    put(client, "while True:\n    pass\n", code["version"])
    jobs = [client.post("/api/exercises/vector-copy/run", headers=ORIGIN).json() for _ in range(3)]
    handles = [app.state.jobs.get(j["job"]) for j in jobs]
    wait_for(
        lambda: handles[0].run is not None and handles[1].run is not None
    )  # a pool of 2 on the interpreter
    wait_for(lambda: any(name == "queue" for name, _ in handles[2].events))
    assert handles[2].run is None
    started = time.monotonic()
    for job in jobs:
        assert client.post(job["stop"], headers=ORIGIN).json()["stopping"] is True
    for job in jobs:
        got = events(client, job)
        assert [d for n, d in got if n == "exit"][0]["stopped"] is True
    assert ("queue", {"position": 1}) in events(client, jobs[2])
    assert time.monotonic() - started < 15
    assert client.post(jobs[0]["stop"], headers=ORIGIN).json()["stopping"] is False  # already over


def test_check_hint_reset_and_solution(env: dict) -> None:
    client, service = env["client"], env["service"]
    assert client.get("/api/exercises/vector-copy/solution").status_code == 403
    code = client.get("/api/exercises/vector-copy/code").json()
    wrong = (FIXTURES / "learners" / "wrong_values.py").read_text()
    put(client, wrong, code["version"])
    verdict = [
        d
        for n, d in events(client, client.post("/api/exercises/vector-copy/check", headers=ORIGIN).json())
        if n == "verdict"
    ][0]
    assert verdict["passed"] is False and verdict["failures"][0]["message"]
    assert client.get("/api/exercises/vector-copy/solution").status_code == 403
    hints = [client.post("/api/exercises/vector-copy/hint", headers=ORIGIN).json()]
    while not hints[-1]["done"] and len(hints) < 20:
        hints.append(client.post("/api/exercises/vector-copy/hint", headers=ORIGIN).json())
    assert hints[0]["number"] == 1 and hints[0]["text"] and hints[-1]["number"] == hints[-1]["total"] >= 2
    assert client.post("/api/exercises/vector-copy/hint", headers=ORIGIN).json()["text"] is None
    reset = client.post("/api/exercises/vector-copy/reset", headers=ORIGIN).json()
    assert Path(reset["backup"]).read_text() == wrong
    assert reset["text"] == (FIXTURES / "course/01-only/exercises/vector-copy/starter.py").read_text()
    solution = (FIXTURES / "course/01-only/exercises/vector-copy/solution.py").read_text()
    job = client.post(
        "/api/exercises/vector-copy/check",
        json={"text": solution, "base_version": reset["version"]},
        headers=ORIGIN,
    ).json()
    verdict = [d for n, d in events(client, job) if n == "verdict"][0]
    assert verdict["passed"] is True and all(c["passed"] for c in verdict["cases"])
    assert verdict["solution_available"] is True
    shown = client.get("/api/exercises/vector-copy/solution").json()
    assert shown["text"] == solution and "<span" in shown["html"]
    progress = client.get("/api/progress").json()
    assert progress["exercises_passed"] == 1 and progress["last_exercise"] == "vector-copy"
    assert "vector-copy" in service.store.passed_exercises()


# ---- Visualize -------------------------------------------------------------------------------------------


def viz(client: TestClient, body: dict | None = None):  # noqa: ANN201
    return client.post("/api/exercises/vector-copy/viz", json=body, headers=ORIGIN)


def test_visualize_draws_the_learners_launch_and_a_failing_case(env: dict) -> None:
    import base64

    client = env["client"]
    solution = (FIXTURES / "course/01-only/exercises/vector-copy/solution.py").read_text()
    code = client.get("/api/exercises/vector-copy/code").json()
    answer = viz(client, {"text": solution, "base_version": code["version"]})
    assert answer.status_code == 200, answer.text
    drawn = answer.json()
    assert drawn["image"].startswith("data:image/png;base64,")
    assert base64.b64decode(drawn["image"].split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
    assert (
        "access_log" not in drawn and drawn["problem"] is None and drawn["filename"] == "viz-vector-copy.png"
    )
    summary = drawn["summary"]
    assert summary["kernel"] == "copy_kernel" and summary["programs"] >= 2 and summary["oob_lanes"] == 0
    assert (
        f"grid of {summary['programs']} programs" in drawn["alt"] and "switched off by masks" in drawn["alt"]
    )
    assert "out-of-bounds" not in drawn["alt"]
    assert client.get("/api/exercises/vector-copy/code").json()["text"] == solution  # saved first

    # the off-by-one mask: the store (and load) at index n is out of bounds, and the words say where
    off_by_one = solution.replace("offsets < n", "offsets <= n")
    code = client.get("/api/exercises/vector-copy/code").json()
    drawn = viz(client, {"text": off_by_one, "base_version": code["version"]}).json()
    n = int(re.search(r"\d+", drawn["summary"]["case"]).group())
    assert drawn["summary"]["oob_lanes"] >= 1
    assert f"1 out-of-bounds store at index {n}" in drawn["alt"], drawn["alt"]

    # a failing check's case, redrawn exactly from its name and the verdict's seed
    wrong = (FIXTURES / "learners" / "wrong_values.py").read_text()
    code = client.get("/api/exercises/vector-copy/code").json()
    job = client.post(
        "/api/exercises/vector-copy/check",
        json={"text": wrong, "base_version": code["version"]},
        headers=ORIGIN,
    ).json()
    verdict = [d for name, d in events(client, job) if name == "verdict"][0]
    failing = [c["name"] for c in verdict["cases"] if not c["passed"]]
    assert failing
    drawn = viz(client, {"case": failing[-1], "seed": verdict["seed"]}).json()
    assert drawn["summary"]["case"] == failing[-1] and drawn["note"] is None
    assert f"case {failing[-1]}:" in drawn["alt"]
    other = viz(client, {"case": "no such case", "seed": verdict["seed"]}).json()
    assert "no such case" in other["note"] and other["summary"]["programs"] >= 1

    # a file that does not import: a picture that says so, and the problem in words
    code = client.get("/api/exercises/vector-copy/code").json()
    broken = viz(client, {"text": "def vector_copy(:\n", "base_version": code["version"]}).json()
    assert broken["import_error"]["type"] == "SyntaxError" and "does not import" in broken["problem"]
    assert broken["image"].startswith("data:image/png;base64,") and "does not import" in broken["alt"]

    # the starter launches no kernel: said in words, above a picture that says so too
    starter = (FIXTURES / "course/01-only/exercises/vector-copy/starter.py").read_text()
    code = client.get("/api/exercises/vector-copy/code").json()
    empty = viz(client, {"text": starter, "base_version": code["version"]}).json()
    assert "launched no kernel" in empty["problem"] and empty["problem"] == empty["alt"]

    # state-changing: the Origin check applies
    assert client.post("/api/exercises/vector-copy/viz").status_code == 403
    assert client.post("/api/exercises/nope/viz", headers=ORIGIN).status_code == 404


def test_visualize_says_when_there_is_no_kernel(env: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    from tritonlab.viz import run as viz_run

    monkeypatch.setattr(viz_run, "candidate_cases", lambda *args, **kwargs: [])  # as for bench-protocol
    answer = viz(env["client"])
    assert answer.status_code == 422
    assert answer.json()["error"].startswith("vector-copy has no kernel to draw")


def test_the_workbench_offers_visualize(env: dict) -> None:
    page = env["client"].get("/lessons/02-copy").text
    assert 'data-action="viz"' in page and 'data-viz="true"' in page and 'data-viz-for="vector-copy"' in page


# ---- quiz ------------------------------------------------------------------------------------------------


def test_quiz_feedback_and_saved_score(env: dict) -> None:
    client, service = env["client"], env["service"]
    page = client.get("/lessons/01-intro").text
    attempt = re.search(r'data-attempt="([^"]+)"', page).group(1)
    url = f"/api/quiz/{attempt}/answer"
    assert client.post(url, json={"question": "mask", "response": 9}, headers=ORIGIN).status_code == 400
    wrong = client.post(url, json={"question": "mask", "response": 0}, headers=ORIGIN).json()
    assert wrong["correct"] is False and wrong["keyed"] == [1] and wrong["result"] is None
    assert any("correctness" in f["html"] for f in wrong["feedback"])
    again = client.post(url, json={"question": "mask", "response": 1}, headers=ORIGIN)
    assert again.status_code == 409
    right = client.post(url, json={"question": "programs", "response": "3"}, headers=ORIGIN).json()
    assert right["correct"] is True and "rounds up" in right["note_html"]
    assert right["result"] == {"score": 0.5, "passed": True, "pass_mark": 0.5}
    assert service.store.best_quiz()["01-intro"]["passed"] is True
    assert (
        client.post(
            "/api/quiz/unknown/answer", json={"question": "mask", "response": 1}, headers=ORIGIN
        ).status_code
        == 404
    )
    assert "best 50%" in client.get("/").text


def test_serve_refuses_open_hosts_without_a_token() -> None:
    import typer

    from tritonlab.cli import serve as cli_serve

    with pytest.raises(typer.Exit):
        cli_serve.check_host("0.0.0.0", None)
    with pytest.raises(typer.Exit):
        cli_serve.check_host("192.168.1.5", "short")
    cli_serve.check_host("0.0.0.0", "a-long-enough-explicit-token")
    cli_serve.check_host("127.0.0.1", None)
    cli_serve.check_host("::1", None)
    sock = cli_serve.bind("127.0.0.1", 0)
    try:
        assert sock.getsockname()[1] > 0
    finally:
        sock.close()


# ---- issue 15: rough edges found by a browser walk -------------------------------------------------------


def test_host_header_is_parsed_strictly(env: dict) -> None:
    from tritonlab.web.security import host_name

    client = env["client"]
    for bad in (
        "127.0.0.1:8801@evil.com",
        "127.0.0.1@evil.com",
        "127.0.0.1:80:80",
        "127.0.0.1:abc",
        "127.0.0.1:",
        "127.0.0.1 evil.com",
        "127.0.0.1/evil",
        "evil.com#127.0.0.1",
        "localhost:99999",
        "[::1]evil",
        "[::1]:80@evil.com",
        "[127.0.0.1]",
    ):
        assert host_name(bad) is None, bad
        r = client.get("/api/status", headers={"Host": bad})
        assert r.status_code == 403 and r.json()["reason"] == "host not allowed", bad
    for good, name in (
        ("127.0.0.1:8000", "127.0.0.1"),
        ("LOCALHOST:8000", "localhost"),
        ("localhost", "localhost"),
        ("[::1]:8000", "::1"),
    ):
        assert host_name(good) == name
        assert client.get("/api/status", headers={"Host": good}).status_code == 200, good


def test_chunked_and_deeply_nested_bodies_get_clear_json_errors(env: dict) -> None:
    client = env["client"]

    def fifty_mib() -> Iterator[bytes]:  # a generator body: sent chunked, without Content-Length
        chunk = b"x" * (1 << 16)
        for _ in range(50 * 16):
            yield chunk

    r = client.put(
        "/api/exercises/vector-copy/code",
        content=fifty_mib(),
        headers=ORIGIN | {"Content-Type": "application/json"},
    )
    assert r.status_code == 413, r.text
    error = r.json()["error"]
    assert "2048 KiB" in error and "512 KiB" in error and "split" in error

    nested = b"[" * 100_000 + b"]" * 100_000
    r = client.put(
        "/api/exercises/vector-copy/code",
        content=nested,
        headers=ORIGIN | {"Content-Type": "application/json"},
    )
    assert r.status_code == 422, r.text
    assert "64 levels" in r.json()["error"]
    # brackets inside strings are not nesting: a file full of them saves as usual
    code = client.get("/api/exercises/vector-copy/code").json()
    text = code["text"] + "\n# " + "[" * 500 + "\n"
    assert put(client, text, code["version"]).status_code == 200


def test_stop_on_a_queued_run_leaves_the_queue_at_once(env: dict) -> None:
    client, app, service = env["client"], env["app"], env["service"]
    code = client.get("/api/exercises/vector-copy/code").json()
    put(client, "while True:\n    pass\n", code["version"])
    busy = [client.post("/api/exercises/vector-copy/run", headers=ORIGIN).json() for _ in range(2)]
    handles = [app.state.jobs.get(j["job"]) for j in busy]
    try:
        wait_for(lambda: all(h.run is not None for h in handles))  # the pool of 2 is taken
        for kind in ("run", "check"):
            queued = client.post(f"/api/exercises/vector-copy/{kind}", headers=ORIGIN).json()
            handle = app.state.jobs.get(queued["job"])
            wait_for(lambda handle=handle: any(name == "queue" for name, _ in handle.events))
            started = time.monotonic()
            assert client.post(queued["stop"], headers=ORIGIN).json()["stopping"] is True
            got = events(client, queued, timeout=10)
            assert time.monotonic() - started < 3, "the stream waited for the runs ahead"
            assert got[-2] == ("cancelled", {"kind": kind, "reason": "stopped before it started"})
            assert "start" not in [name for name, _ in got]
            wait_for(lambda: service.gate().waiting == 0, 3)  # it left the service's queue too
            assert not any(h.done for h in handles)  # the runs ahead go on
    finally:
        for job in busy:
            client.post(job["stop"], headers=ORIGIN)
        for job in busy:
            events(client, job)


def test_a_fresh_start_begins_at_lesson_1(env: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRITONLAB_HOME", str(tmp_path / "home"))
    service = Service(course_dir=env["root"] / "course", workspace_dir=tmp_path / "ws", lang="en")
    with TestClient(create_app(service, TOKEN), base_url=BASE) as client:
        page = client.get(f"/?token={TOKEN}").text
        link = re.search(r'<a class="continue[^"]*" href="([^"]*)"', page)
        assert link and link.group(1) == "/lessons/01-intro", link and link.group(1)
        assert "Start the course" in page
    service.close()


def test_visualize_is_not_offered_without_a_kernel(env: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    from tritonlab.web import pages

    monkeypatch.setattr(pages, "has_kernel", lambda exercise_id: False)  # as for bench-protocol
    page = env["client"].get("/lessons/02-copy").text
    assert 'data-action="viz"' not in page and 'data-viz-for="vector-copy"' not in page
    assert 'data-action="check"' in page


# ---- Inspect ---------------------------------------------------------------------------------------------


def test_inspect_compiles_the_learners_kernel_for_a_gpu_without_one(env: dict) -> None:
    client = env["client"]
    solution = (FIXTURES / "course/01-only/exercises/vector-copy/solution.py").read_text()
    code = client.get("/api/exercises/vector-copy/code").json()
    body = {"text": solution, "base_version": code["version"], "target": "cuda:90"}
    answer = client.post("/api/exercises/vector-copy/inspect", json=body, headers=ORIGIN)
    assert answer.status_code == 200, answer.text
    data = answer.json()
    kernel = data["data"]["kernels"][0]
    assert "ptx" in kernel["stages"] and kernel["resources"]["registers"] > 0
    assert "registers per thread" in data["report"] and "programs per SM" in data["report"]
    bad = client.post("/api/exercises/vector-copy/inspect", json={"target": "cuda:1"}, headers=ORIGIN)
    assert bad.status_code == 422
    assert client.post("/api/exercises/vector-copy/inspect").status_code == 403


def test_inspect_refuses_hostile_requests_with_clear_errors(env: dict) -> None:
    client = env["client"]
    url = "/api/exercises/vector-copy/inspect"
    for body in (
        {"target": 90},
        {"target": "cuda:90; rm -rf /"},
        {"target": "x" * 10_000},
        {"target": ["cuda:90"]},
        {"text": 5},
        {"base_version": "v" * 100},
    ):
        answer = client.post(url, json=body, headers=ORIGIN)
        assert answer.status_code == 422, (body, answer.status_code)
        assert answer.json()["error"]
    huge = client.post(url, json={"text": "x" * 3_000_000}, headers=ORIGIN)
    assert huge.status_code == 413 and huge.json()["error"]
    raw = client.post(url, content=b"\xff{not json", headers=ORIGIN | {"Content-Type": "application/json"})
    assert raw.status_code in (400, 422) and raw.json()["error"]
    missing = client.post("/api/exercises/no-such/inspect", json={}, headers=ORIGIN)
    assert missing.status_code == 404 and missing.json()["error"]
    assert client.post(url, json={}, headers={"Origin": "http://evil.example"}).status_code == 403


def test_inspect_result_written_by_the_learner_is_cleaned_never_a_500(env: dict) -> None:
    """The inspect child imports the learner's file, which can write inspect.json itself and exit."""
    client = env["client"]
    forged = {
        "kernels": [
            {"kernel": 5, "stages": "x", "resources": [], "occupancy": {"limits": 3}},
            {
                "kernel": "k",
                "stages": {"ptx": 7, "evil": "x", "ttir": "module"},
                "resources": {"registers": -4},
            },
            "not a kernel",
        ],
        "problems": "a string",
        "import_error": ["no"],
        "case": {"x": 1},
    }
    text = f"import json, os\nopen('inspect.json', 'w').write(json.dumps({forged!r}))\nos._exit(0)\n"
    code = client.get("/api/exercises/vector-copy/code").json()
    body = {"text": text, "base_version": code["version"], "target": "cuda:80"}
    answer = client.post("/api/exercises/vector-copy/inspect", json=body, headers=ORIGIN)
    assert answer.status_code == 200, answer.text
    data = answer.json()["data"]
    assert data["target"] == "cuda:80" and data["problems"] == [] and "case" not in data
    first, second, third = data["kernels"]
    assert first["kernel"] == "kernel" and first["stages"] == {} and first["occupancy"]["limits"] == {}
    assert second["stages"] == {"ptx": "", "ttir": "module"} and "registers" not in second["resources"]
    assert third["kernel"] == "kernel"
    assert "== kernel k ==" in answer.json()["report"]


def test_inspect_cuts_long_stages_for_the_page() -> None:
    from tritonlab.web.viz_api import MAX_STAGE_LINES, cap_stages

    long = "\n".join(f"line {i}" for i in range(MAX_STAGE_LINES + 25))
    capped = cap_stages(
        {"kernels": [{"kernel": "k", "stages": {"ptx": long, "ttir": "a\nb"}}, {"error": "x"}]}
    )
    kernel = capped["kernels"][0]
    assert kernel["truncated"] == {"ptx": 25} and kernel["stages"]["ttir"] == "a\nb"
    assert kernel["stages"]["ptx"].splitlines()[-1] == f"line {MAX_STAGE_LINES - 1}"


def test_a_gpu_check_shows_its_verdict_before_its_speed_line(
    env: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a GPU a passing check is timed after it was judged: the page gets the verdict first (with a
    placeholder for the speed line) and the speed line in a `speed` event after it (issue 19)."""
    from tritonlab.models import CaseResult, Verdict
    from tritonlab.service import speed_line

    client, service = env["client"], env["service"]
    speed = {"case": "vector_add fp32 268435456", "unit": "GB/s", "achieved": 4368.5, "ms": 0.737,
             "roof": 4212.3, "pct_of_roof": 103.7, "vs_reference": 1.007, "goal_vs_reference": 0.8,
             "gpu": "NVIDIA H200"}  # fmt: skip
    order: list[str] = []

    def gpu_check(exercise, on_verdict=None, **_: object) -> Verdict:  # noqa: ANN001
        verdict = Verdict(exercise=exercise.id, backend="gpu", seed=7, file="f.py")  # passed: every case
        verdict.cases = [CaseResult("n=1 float32", True)]
        on_verdict(verdict)
        order.append("judged")
        time.sleep(0.2)  # the timing run
        verdict.speed = speed
        verdict.timings |= {"speed_record_cpu_s": 1.25, "speed_time_cpu_s": 0.5, "replay_cpu_s": 2.0}
        return verdict

    monkeypatch.setattr(Service, "backend", property(lambda self: "gpu"))
    monkeypatch.setattr(service, "check", gpu_check)
    job = client.post("/api/exercises/vector-copy/check", headers=ORIGIN).json()
    got = events(client, job)
    names = [(n, d) for n, d in got if n in ("verdict", "speed")]
    assert names, got
    assert [n for n, _ in names] == ["verdict", "speed"] and order == ["judged"]
    shown, timed = names[0][1], names[1][1]
    assert shown["passed"] is True and shown["speed_pending"] is True and shown["speed_line"] == ""
    assert timed["speed_line"] == speed_line(speed) and "4368 GB/s" in timed["speed_line"]
    # what the two timing runs used (scripts/load_gpu.py reads it), and nothing else of the timings
    assert timed["timings"] == {"speed_record_cpu_s": 1.25, "speed_time_cpu_s": 0.5}
