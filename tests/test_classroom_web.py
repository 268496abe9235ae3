"""`serve --classroom` in-process (FastAPI TestClient): log-in, cookies and CSRF, the join link, back-off,
per-learner state through the unchanged routes, no cross-learner access by ANY route (enumerated from the
app), runs owned by their learner with a fair queue and a rate limit, and the teacher's view and exports.
Every test runs on SQLite and on the test session's PostgreSQL."""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from classroom_app import database_url
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from test_web_api import make_course

from tritonlab.classroom.room import Classroom
from tritonlab.service import Service
from tritonlab.web import create_app

ROOT = Path(__file__).resolve().parent.parent
LEARNERS = ROOT / "tests" / "fixtures" / "learners"
BASE = "http://127.0.0.1:8000"
MARKER = "SECRET-ANNA-MARKER-7731"
GOOD = f"# {MARKER}\n" + (LEARNERS / "good.py").read_text()


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def env(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    """The whole file runs once on SQLite and once on the test session's PostgreSQL (issue 31)."""
    root = tmp_path_factory.mktemp(f"classroom-web-{request.param}")
    saved = {k: os.environ.get(k) for k in ("TRITONLAB_HOME", "TRITONLAB_BACKEND", "TRITONLAB_LANG")}
    os.environ["TRITONLAB_HOME"] = str(root / "home")
    os.environ["TRITONLAB_BACKEND"] = "interpreter"
    os.environ.pop("TRITONLAB_LANG", None)
    service = Service(course_dir=make_course(root), workspace_dir=root / "ws", lang="en")
    service.warm_up()
    room = Classroom(database_url(request.param, root, request), adopt=Path("/nonexistent"))
    made = room.init("Test class")
    accounts = {"teacher": made["teacher"]["password"]}
    for name in ("anna", "ben"):
        accounts[name] = room.add(name, name.title())[1]
    app = create_app(service, "unused-token-0123456789", classroom=room)
    with TestClient(app, base_url=BASE) as client:
        yield {
            "app": app,
            "service": service,
            "room": room,
            "accounts": accounts,
            "made": made,
            "root": root,
            "client": client,
        }
    service.close()
    room.close()
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


class As:
    """A browser logged in as one account: its cookies, and the headers a page sends on a POST."""

    def __init__(self, env: dict, username: str) -> None:
        self.client = TestClient(env["app"], base_url=BASE)
        r = self.client.post(
            "/api/login",
            json={"username": username, "password": env["accounts"][username]},
            headers={"Origin": BASE},
        )
        assert r.status_code == 200, r.text
        self.me = r.json()
        self.headers = {"Origin": BASE, "X-CSRF-Token": self.me["csrf"]}

    def get(self, path: str, **kw):  # noqa: ANN003, ANN201
        return self.client.get(path, **kw)

    def post(self, path: str, **kw):  # noqa: ANN003, ANN201
        return self.client.post(path, headers=self.headers, **kw)

    def put(self, path: str, **kw):  # noqa: ANN003, ANN201
        return self.client.put(path, headers=self.headers, **kw)


def events(who: As, job: dict, timeout: float = 120) -> list[tuple[str, dict]]:
    out: list[tuple[str, dict]] = []
    with who.client.stream("GET", job["events"], timeout=timeout) as response:
        name = None
        for line in response.iter_lines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: ") and name:
                out.append((name, json.loads(line[6:])))
    return out


# ---- log-in, cookies, CSRF ------------------------------------------------------------------------------


def test_everything_but_login_needs_a_session(env: dict) -> None:
    fresh = TestClient(env["app"], base_url=BASE)
    r = fresh.get("/", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/login?next=/"
    assert fresh.get("/api/progress").status_code == 401
    assert fresh.get("/api/exercises/vector-copy/code").status_code == 401
    assert fresh.get("/?token=unused-token-0123456789", follow_redirects=False).status_code == 303  # no token
    assert fresh.get("/login").status_code == 200
    assert fresh.get("/static/classroom.js").status_code == 200


def test_login_sets_a_signed_httponly_lax_cookie_and_a_readable_csrf_cookie(env: dict) -> None:
    fresh = TestClient(env["app"], base_url=BASE)
    bad = fresh.post(
        "/api/login", json={"username": "anna", "password": "nope-nope"}, headers={"Origin": BASE}
    )
    assert bad.status_code == 401 and "password" in bad.json()["error"]
    r = fresh.post(
        "/api/login", json={"username": "anna", "password": env["accounts"]["anna"]}, headers={"Origin": BASE}
    )
    body = r.json()
    assert r.status_code == 200 and body["username"] == "anna" and body["role"] == "learner" and body["csrf"]
    cookies = r.headers.get_list("set-cookie")
    session = next(c for c in cookies if c.startswith("tritonlab_session_"))
    csrf = next(c for c in cookies if c.startswith("tritonlab_csrf="))
    assert "HttpOnly" in session and "SameSite=Lax" in session and "Secure" not in session
    assert "HttpOnly" not in csrf and body["csrf"] in csrf
    assert env["accounts"]["anna"] not in r.text
    assert fresh.get("/api/me").json()["username"] == "anna"
    # a forged cookie (right format, wrong signature) authenticates nothing
    name, value = session.split(";")[0].split("=", 1)
    forged = TestClient(env["app"], base_url=BASE)
    forged.cookies.set(name, value[:-4] + "0000")
    assert forged.get("/api/me").status_code == 401
    assert (
        fresh.post("/api/logout", headers={"Origin": BASE, "X-CSRF-Token": body["csrf"]}).status_code == 200
    )
    assert fresh.get("/api/me").status_code == 401


def test_secure_cookies_behind_an_https_public_url(env: dict) -> None:
    app = create_app(
        env["service"],
        "unused-token-0123456789",
        classroom=env["room"],
        public_url="https://class.example.org",
    )
    client = TestClient(app, base_url="https://class.example.org")
    r = client.post(
        "/api/login",
        json={"username": "ben", "password": env["accounts"]["ben"]},
        headers={"Origin": "https://class.example.org"},
    )
    assert r.status_code == 200
    assert all("Secure" in c for c in r.headers.get_list("set-cookie"))


def test_state_changes_need_the_csrf_header_and_the_origin(env: dict) -> None:
    anna = As(env, "anna")
    url = "/api/exercises/vector-copy/hint"
    assert anna.client.post(url, headers={"Origin": BASE}).status_code == 403
    assert anna.client.post(url, headers={"Origin": BASE, "X-CSRF-Token": "wrong"}).json()["reason"] == "csrf"
    assert anna.client.post(url, headers={"X-CSRF-Token": anna.me["csrf"]}).status_code == 403  # no Origin
    evil = {"Origin": "http://evil.example", "X-CSRF-Token": anna.me["csrf"]}
    assert anna.client.post(url, headers=evil).status_code == 403
    assert (
        anna.client.post(
            "/api/login",
            json={"username": "anna", "password": "x" * 9},
            headers={"Origin": "http://evil.example"},
        ).status_code
        == 403
    )
    assert anna.post(url).status_code == 200


def test_login_backs_off_per_account_and_address(env: dict) -> None:
    room = env["room"]
    user, password = room.add("gus")
    client = TestClient(env["app"], base_url=BASE)
    for _ in range(5):
        assert (
            client.post(
                "/api/login", json={"username": "gus", "password": "wrong-pass"}, headers={"Origin": BASE}
            ).status_code
            == 401
        )
    r = client.post("/api/login", json={"username": "gus", "password": password}, headers={"Origin": BASE})
    assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1
    teacher = As(env, "teacher")
    assert teacher.post(f"/api/classroom/users/{user.id}/unlock").status_code == 200
    assert (
        client.post(
            "/api/login", json={"username": "gus", "password": password}, headers={"Origin": BASE}
        ).status_code
        == 200
    )


def test_join_link_registers_learners_until_the_teacher_closes_it(env: dict) -> None:
    code = env["made"]["join_path"].rsplit("/", 1)[1]
    client = TestClient(env["app"], base_url=BASE)
    assert client.get(f"/join/{code}").status_code == 200
    assert client.get("/join/not-the-code").status_code == 404
    r = client.post(
        f"/api/join/{code}",
        headers={"Origin": BASE},
        json={"username": "hana", "display_name": "<script>alert(1)</script>", "password": "pw-hana-123"},
    )
    assert r.status_code == 200 and r.json()["role"] == "learner"
    hana = r.json()["username"]  # the name chosen and a number (issue 34: no answer says a name is taken)
    assert re.fullmatch(r"hana-\d{3,4}", hana) and client.get("/api/me").json()["username"] == hana
    again = TestClient(env["app"], base_url=BASE).post(
        f"/api/join/{code}", headers={"Origin": BASE}, json={"username": "hana", "password": "pw-hana-123"}
    )
    assert again.status_code == 200 and again.json()["username"] not in (hana, "hana")
    teacher = As(env, "teacher")
    assert teacher.post("/api/classroom/join", json={"value": False}).json()["join_open"] is False
    late = TestClient(env["app"], base_url=BASE)
    r = late.post(
        f"/api/join/{code}", headers={"Origin": BASE}, json={"username": "ivan", "password": "pw-ivan-123"}
    )
    assert r.status_code == 403 and "closed" in r.json()["error"]
    assert teacher.post("/api/classroom/join", json={"value": True}).status_code == 200
    page = teacher.get("/teacher").text  # the learner-chosen name is escaped, never markup
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script>alert(1)" not in page


# ---- per-learner data ----------------------------------------------------------------------------------


def test_each_learner_has_their_own_code_runs_and_progress(env: dict) -> None:
    anna, ben = As(env, "anna"), As(env, "ben")
    code = anna.get("/api/exercises/vector-copy/code").json()
    assert (
        anna.put(
            "/api/exercises/vector-copy/code", json={"text": GOOD, "base_version": code["version"]}
        ).status_code
        == 200
    )
    job = anna.post("/api/exercises/vector-copy/check").json()
    verdict = [d for n, d in events(anna, job) if n == "verdict"][0]
    assert verdict["passed"], verdict
    assert anna.get("/api/progress").json()["exercises_passed"] == 1
    assert ben.get("/api/progress").json()["exercises_passed"] == 0
    assert MARKER not in ben.get("/api/exercises/vector-copy/code").text
    assert ben.get("/api/exercises/vector-copy/solution").status_code == 403
    assert anna.get("/api/exercises/vector-copy/solution").status_code == 200
    teacher = As(env, "teacher")
    matrix = teacher.get("/api/classroom/progress.json").json()
    cells = {row["username"]: row["cells"]["vector-copy"] for row in matrix["learners"]}
    assert cells["anna"]["passed"] and cells["anna"]["attempts"] == 1 and cells["ben"] is None
    csv_text = teacher.get("/api/classroom/progress.csv").text
    assert csv_text.splitlines()[0].startswith("username,") and "anna,Anna" in csv_text
    anna_id = next(r["id"] for r in matrix["learners"] if r["username"] == "anna")
    assert MARKER in teacher.get(f"/api/classroom/learners/{anna_id}/code/vector-copy").json()["text"]
    page = teacher.get(f"/teacher/learners/{anna_id}/code/vector-copy").text
    assert MARKER in page
    env["anna_id"] = anna_id


def api_routes(routes: list) -> Iterator[APIRoute]:
    """Every APIRoute of the app, through included routers (newer FastAPI keeps them nested)."""
    for route in routes:
        if isinstance(route, APIRoute):
            yield route
        elif hasattr(route, "original_router"):
            yield from api_routes(route.original_router.routes)


def fill(path: str, values: dict[str, str]) -> str:
    return re.sub(r"\{(\w+)(?::\w+)?\}", lambda m: values.get(m.group(1), "x"), path)


def test_no_route_lets_a_learner_reach_another_learners_data(env: dict) -> None:
    """Every route of the app, every method, as ben, aimed at anna's code, run, quiz attempt and account."""
    anna, ben = As(env, "anna"), As(env, "ben")
    if "anna_id" not in env:
        test_each_learner_has_their_own_code_runs_and_progress(env)
    # anna's things: a run in flight (an endless loop) and a quiz attempt
    code = anna.get("/api/exercises/vector-copy/code").json()
    anna.put(
        "/api/exercises/vector-copy/code",
        json={"text": f"# {MARKER}\nprint('{MARKER}')\nwhile True: pass\n", "base_version": code["version"]},
    )
    job = anna.post("/api/exercises/vector-copy/run").json()
    attempt = re.search(r'data-attempt="([^"]+)"', anna.get("/lessons/01-intro").text).group(1)
    values = {
        "exercise_id": "vector-copy",
        "job_id": job["job"],
        "attempt_id": attempt,
        "user_id": str(env["anna_id"]),
        "lesson_key": "01-intro",
        "key": "01-intro",
        "index": "0",
        "code": "x",
        "name": "dot.png",
        "path": "x",
    }
    bodies = {
        "PUT": {"text": "# ben overwrites\n", "base_version": None, "force": True},
        "POST": {"question": "mask", "response": 1, "value": True, "text": "# ben\n"},
    }
    owned = ("{job_id}", "{attempt_id}")
    teacher_only = ("/teacher", "/api/classroom/")
    tried = 0
    for route in api_routes(env["app"].routes):
        if route.path in (
            "/api/logout",
            "/auth/logout",
        ):  # would end ben's own session; tested above, test_oidc
            continue
        for method in route.methods - {"HEAD"}:
            url = fill(route.path, values)
            r = ben.client.request(
                method, url, json=bodies.get(method), headers=ben.headers, follow_redirects=False
            )
            assert ben.get("/api/me").status_code == 200  # still ben, still logged in
            tried += 1
            assert MARKER not in r.text, (method, route.path)
            if any(o in route.path for o in owned):
                assert r.status_code == 404, (method, route.path, r.status_code)
            if route.path.startswith(teacher_only):
                assert r.status_code == 403, (method, route.path, r.status_code)
            if "/stream" not in url and r.headers.get("content-type", "").startswith("application/json"):
                body = r.json()
                if isinstance(body, dict) and body.get("job"):  # ben's own run: let it end
                    ben.post(body["stop"])
                    events(ben, body)
    assert tried >= 25
    # anna's run was not stopped by ben, and her code is still hers
    assert not env["app"].state.jobs.get(job["job"]).done
    assert anna.post(job["stop"]).json() == {"stopping": True}
    assert [n for n, _ in events(anna, job)][-1] == "end"
    assert MARKER in anna.get("/api/exercises/vector-copy/code").text
    assert MARKER not in ben.get("/api/exercises/vector-copy/code").text


def test_one_run_per_learner_fifo_across_learners_and_a_rate_limit(env: dict) -> None:
    anna, ben = As(env, "anna"), As(env, "ben")
    loop = "import time\nwhile True: time.sleep(0.1)\n"
    for who in (anna, ben):
        code = who.get("/api/exercises/vector-copy/code").json()
        who.put("/api/exercises/vector-copy/code", json={"text": loop, "base_version": code["version"]})
    first = anna.post("/api/exercises/vector-copy/run").json()
    second = anna.post("/api/exercises/vector-copy/run")
    assert second.status_code == 429 and "already have a run" in second.json()["error"]
    other = ben.post("/api/exercises/vector-copy/run")
    assert other.status_code == 200  # another learner is not blocked by anna
    assert ben.post(first["stop"]).status_code == 404  # ben cannot stop anna's run
    for who, job in ((anna, first), (ben, other.json())):
        who.post(job["stop"])
        events(who, job)
    jobs = env["app"].state.jobs
    saved, jobs.per_minute = jobs.per_minute, 0
    try:
        limited = anna.post("/api/exercises/vector-copy/run")
        assert limited.status_code == 429 and "runs in the last minute" in limited.json()["error"]
        assert int(limited.headers["retry-after"]) >= 1
    finally:
        jobs.per_minute = saved


def test_the_run_limit_lets_exactly_its_number_through_a_minute(env: dict) -> None:
    """The per-minute limit is exact: with it set to 3, a learner who never ran starts three runs (each ended
    before the next, so the one-in-flight rule never answers) and the fourth is refused with 429 and Retry-After."""
    user, password = env["room"].add("rita")
    env["accounts"]["rita"] = password
    rita = As(env, "rita")
    code = rita.get("/api/exercises/vector-copy/code").json()
    saved = rita.put(
        "/api/exercises/vector-copy/code", json={"text": "print(1)\n", "base_version": code["version"]}
    )
    assert saved.status_code == 200, saved.text
    jobs = env["app"].state.jobs
    limit, jobs.per_minute = jobs.per_minute, 3
    try:
        for n in range(3):
            started = rita.post("/api/exercises/vector-copy/run")
            assert started.status_code == 200, (n, started.text)
            assert [name for name, _ in events(rita, started.json())][-1] == "end"
        refused = rita.post("/api/exercises/vector-copy/run")
        assert refused.status_code == 429 and "3 runs in the last minute" in refused.json()["error"], (
            refused.text
        )
        assert int(refused.headers["retry-after"]) >= 1
    finally:
        jobs.per_minute = limit


def test_teacher_manages_the_roster(env: dict) -> None:
    teacher, ben = As(env, "teacher"), As(env, "ben")
    made = teacher.post("/api/classroom/users", json={"username": "jo", "display_name": "Jo"}).json()
    assert made["username"] == "jo" and len(made["password"]) >= 12
    assert teacher.post("/api/classroom/users", json={"username": "jo"}).status_code == 400
    assert ben.post("/api/classroom/users", json={"username": "mallory"}).status_code == 403
    env["accounts"]["jo"] = made["password"]
    jo = As(env, "jo")
    new = teacher.post(f"/api/classroom/users/{made['id']}/password").json()["password"]
    assert jo.get("/api/me").status_code == 401  # a reset ends the old sessions
    env["accounts"]["jo"] = new
    jo = As(env, "jo")
    assert (
        teacher.post(f"/api/classroom/users/{made['id']}/disabled", json={"value": True}).status_code == 200
    )
    assert jo.get("/api/me").status_code == 401
    refused = TestClient(env["app"], base_url=BASE).post(
        "/api/login", json={"username": "jo", "password": new}, headers={"Origin": BASE}
    )
    assert refused.status_code == 401 and "disabled" in refused.json()["error"]
    me = teacher.me
    own_id = next(
        u["id"]
        for u in teacher.get("/api/classroom/users").json()["users"]
        if u["username"] == me["username"]
    )
    assert teacher.post(f"/api/classroom/users/{own_id}/disabled", json={"value": True}).status_code == 400
    assert time.time() > 0


# ---- the opt-in leaderboard ---------------------------------------------------------------------------------


def test_leaderboard_api_page_escaping_and_the_teachers_switch(env: dict) -> None:
    anna, ben, teacher = As(env, "anna"), As(env, "ben"), As(env, "teacher")
    room = env["room"]
    hostile = '<img src=x onerror="alert(1)">'
    for name, ms in (("anna", 0.5), ("ben", 0.25)):  # the store API the GPU check path records through
        user = room.user(name)
        room.db.learner(user.id).record_attempt(
            {
                "exercise": "vector-copy",
                "backend": "gpu",
                "passed": True,
                "seed": 3,
                "speed": {"ms": ms, "achieved": 10.0, "unit": "GB/s", "gpu": "NVIDIA H200"},
            }
        )
    assert anna.get("/api/leaderboard").json()["exercises"]["vector-copy"] == []  # nobody opted in yet
    assert anna.put("/api/leaderboard/name", json={"name": hostile}).json() == {"name": hostile}
    assert ben.put("/api/leaderboard/name", json={"name": hostile.upper()}).status_code == 400  # taken
    assert ben.put("/api/leaderboard/name", json={"name": "Ben \u0007"}).status_code == 400
    assert ben.put("/api/leaderboard/name", json={"name": "Speedy Ben"}).status_code == 200
    data = ben.get("/api/leaderboard").json()
    assert data["enabled"] and data["me"] == {"name": "Speedy Ben"}
    assert [(r["name"], r["ms"]) for r in data["exercises"]["vector-copy"]] == [
        ("Speedy Ben", 0.25),
        (hostile, 0.5),
    ]
    page = ben.get("/leaderboard")
    assert page.status_code == 200 and hostile not in page.text
    assert "&lt;img src=x onerror=&#34;alert(1)&#34;&gt;" in page.text and "Speedy Ben" in page.text
    teacher_page = teacher.get("/teacher").text
    assert 'id="leaderboard-toggle" data-on="true"' in teacher_page
    assert ben.post("/api/classroom/leaderboard", json={"value": False}).status_code == 403  # teachers only
    assert teacher.post("/api/classroom/leaderboard", json={"value": False}).json() == {"enabled": False}
    off = anna.get("/api/leaderboard").json()
    assert off["enabled"] is False and off["exercises"] == {}
    assert (
        'id="leaderboard-off"' in anna.get("/leaderboard").text
        and hostile not in anna.get("/leaderboard").text
    )
    teacher.post("/api/classroom/leaderboard", json={"value": True})
    anna.put("/api/leaderboard/name", json={"name": None})  # leave: off the board again
    assert [r["name"] for r in anna.get("/api/leaderboard").json()["exercises"]["vector-copy"]] == [
        "Speedy Ben"
    ]


# ---- the classroom pages in pt and es ---------------------------------------------------------------------


def test_classroom_pages_speak_the_browsers_language(env: dict) -> None:
    from tritonlab import i18n

    teacher = As(env, "teacher")
    fresh = TestClient(env["app"], base_url=BASE)
    join_path = env["made"]["join_path"]
    for lang in ("pt", "es"):
        switched = fresh.post(
            "/settings/lang",
            data={"lang": lang, "next": "/login"},
            headers={"Origin": BASE},
            follow_redirects=False,
        )
        assert switched.status_code == 303  # public: a visitor can choose before logging in
        login = fresh.get("/login").text
        assert f'<html lang="{lang}">' in login and i18n.t("classroom_ui.login.password", lang) in login
        assert i18n.t("classroom_ui.join.display_name", lang) in fresh.get(join_path).text
        teacher.client.cookies.set("tritonlab_lang", lang)
        page = teacher.get("/teacher").text
        for key in (
            "classroom_ui.teacher.roster_title",
            "classroom_ui.teacher.matrix_caption",
            "classroom_ui.teacher.reset_password",
        ):
            assert i18n.t(key, lang) in page, (lang, key)
        assert i18n.t("classroom_ui.teacher.roster_title", "en") not in page
        strings = json.loads(re.search(r'id="tl-strings">(.*?)</script>', page).group(1))["strings"]
        assert strings["js.classroom.logout"] == i18n.t("js.classroom.logout", lang)
    teacher.client.cookies.set("tritonlab_lang", "en")


# ---- issue 36: refusals and the classroom's own messages are pages and sentences in the page's language ------


def test_a_learner_opening_the_teachers_page_gets_a_page_not_json(env: dict) -> None:
    from tritonlab import i18n

    anna = As(env, "anna")
    for lang in ("en", "pt", "es"):
        anna.client.cookies.set("tritonlab_lang", lang)
        for path in ("/teacher", "/teacher/exercises/vector-copy", "/teacher/learners/1/code/vector-copy"):
            r = anna.get(path)
            assert r.status_code == 403 and r.headers["content-type"].startswith("text/html"), (
                path,
                r.text[:200],
            )
            assert f'<html lang="{lang}">' in r.text and 'href="/"' in r.text  # the way back to the course
            assert i18n.t("web.guard.teacher_only", lang).replace("'", "&#39;") in r.text
        api = anna.get("/api/classroom/progress.json")  # a program still gets JSON, with the stable reason
        assert api.status_code == 403 and api.json() == {
            "error": i18n.t("web.guard.teacher_only", lang),
            "reason": "teacher only",
        }
    anna.client.cookies.set("tritonlab_lang", "en")


def test_the_classrooms_messages_follow_the_page_language(env: dict) -> None:
    """What the classroom says in English at its source (a refused log-in, a taken or invalid username, a
    closed join link, the run limits) reaches a Portuguese or Spanish page in that language."""
    from tritonlab import i18n

    code = env["made"]["join_path"].rsplit("/", 1)[1]
    for lang in ("pt", "es"):
        fresh = TestClient(env["app"], base_url=BASE, cookies={"tritonlab_lang": lang})
        wrong = fresh.post(
            "/api/login", json={"username": "anna", "password": "not-hers-1"}, headers={"Origin": BASE}
        )
        assert wrong.status_code == 401 and wrong.json()["error"] == i18n.t(
            "classroom_text.wrong_password", lang
        )
        teacher = As(env, "teacher")  # a join never says a name is taken (issue 34); the roster does
        teacher.client.cookies.set("tritonlab_lang", lang)
        taken = teacher.post("/api/classroom/users", json={"username": "anna"})
        assert taken.status_code == 400
        assert taken.json()["error"] == i18n.t("classroom_text.taken", lang, name="'anna'"), taken.text
        bad = fresh.post(
            f"/api/join/{code}",
            json={"username": "A!", "password": "long-enough-1"},
            headers={"Origin": BASE},
        )
        assert bad.status_code == 400 and bad.json()["error"].startswith("'a!' ")
        assert bad.json()["error"] != i18n.t("classroom_text.bad_username", "en", name="'a!'")
        short = fresh.post(
            f"/api/join/{code}", json={"username": "zed", "password": "x"}, headers={"Origin": BASE}
        )
        assert short.json()["error"] == i18n.t("classroom_text.short_password", lang, count=8)
        nowhere = fresh.get("/join/not-the-code")
        assert nowhere.status_code == 404 and i18n.t("classroom_ui.errors.no_join_link", lang) in nowhere.text
        csrf = fresh.get("/api/progress")
        assert csrf.status_code == 401 and csrf.json()["error"] == i18n.t("web.guard.login_needed", lang)


def test_a_cell_of_the_pictures_shows_its_learners_and_the_exports_are_bounded(
    env: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stuck learner whose failure message and code are hostile HTML: the heat-map cell's drill-down lists
    them with the message and code escaped, the code numbered with the failure's line marked; an unknown kind
    or exercise is a 404 page; the CSV is spreadsheet-safe; the PNG refuses an unknown picture and a teacher
    past the per-minute limit (429 with Retry-After); learners get none of it."""
    from tritonlab.web.classroom import exports

    room = env["room"]
    user, env["accounts"]["iris"] = room.add("iris", "=cmd|' /C calc'!A0")
    iris = As(env, "iris")
    code = iris.get("/api/exercises/vector-copy/code").json()
    hostile = "import triton\n\n\ndef f():\n    return '</pre><script>alert(1)</script>'\n"
    saved = iris.put(
        "/api/exercises/vector-copy/code", json={"text": hostile, "base_version": code["version"]}
    )
    assert saved.status_code == 200, saved.text
    failure = {
        "kind": "exception",
        "message": "<img src=x onerror=alert(2)>",
        "where": "/tmp/run/solution.py:5",
    }
    room.db.learner(user.id).record_attempt(
        {"exercise": "vector-copy", "passed": False, "backend": "interpreter", "failures": [failure]}
    )
    teacher = As(env, "teacher")
    page = teacher.get("/teacher")
    assert page.status_code == 200 and 'href="/teacher/exercises/vector-copy?kind=exception"' in page.text
    drill = teacher.get("/teacher/exercises/vector-copy?kind=exception")
    assert drill.status_code == 200
    section = re.search(
        r'<section class="drill-learner" data-username="iris"[^>]*>.*?</section>', drill.text, re.S
    )
    assert section, drill.text[-3000:]
    html = section.group(0)
    assert "<script>" not in html and "<img" not in html and "&lt;img src=x onerror=alert(2)&gt;" in html
    assert f'<span class="line mark" id="u{user.id}-L5">' in html and html.count('class="ln"') == 5
    assert f'href="#u{user.id}-L5"' in html  # the failure's place links to the marked line
    for bad in ("/teacher/exercises/vector-copy?kind=%3Cb%3E", "/teacher/exercises/no-such-exercise"):
        r = teacher.get(bad)
        assert (
            r.status_code == 404 and "<b>" not in r.text and r.headers["content-type"].startswith("text/html")
        )

    stuck_csv = teacher.get("/api/classroom/insights/stuck.csv")
    assert stuck_csv.status_code == 200 and stuck_csv.headers["content-type"].startswith("text/csv")
    rows = {tuple(line.split(",")[:2]): line for line in stuck_csv.text.splitlines()[1:]}
    assert "iris" in rows[("vector-copy", "exception")]
    assert teacher.get("/api/classroom/insights/nope.csv").status_code == 404
    assert teacher.get("/api/classroom/insights/nope.png").status_code == 404
    for path in (
        "/api/classroom/insights.json",
        "/api/classroom/insights/time.csv",
        "/api/classroom/insights/stuck.png",
    ):
        assert iris.get(path).status_code == 403

    monkeypatch.setattr(exports, "PNG_PER_MINUTE", 2)
    monkeypatch.setattr(exports, "_recent", exports.collections.defaultdict(exports.collections.deque))
    monkeypatch.setattr(exports, "_cache", exports.collections.OrderedDict())
    first = teacher.get("/api/classroom/insights/stuck.png")
    assert first.status_code == 200 and first.content[:8] == b"\x89PNG\r\n\x1a\n"
    assert teacher.get("/api/classroom/insights/stuck.png").content == first.content  # kept: not counted
    assert teacher.get("/api/classroom/insights/attempts.png").status_code == 200
    refused = teacher.get("/api/classroom/insights/time.png")
    assert refused.status_code == 429 and 1 <= int(refused.headers["retry-after"]) <= 61
    room.set_disabled(user, True)  # out of the class's pictures for the tests that follow


def test_serve_prints_the_full_log_in_and_join_urls_and_no_token(env: dict) -> None:
    """`serve --classroom`'s banner: whole URLs a person can open (the public URL behind a proxy, else the
    bound address), the join link in full while it is open, in the chosen language, and no token."""
    import socket

    from tritonlab import i18n
    from tritonlab.cli.serve_banner import base_url, classroom_banner

    room = env["room"]
    assert base_url("127.0.0.1", 8123) == "http://127.0.0.1:8123"
    assert base_url("::1", 8123) == "http://[::1]:8123"
    assert base_url("0.0.0.0", 8123) == f"http://{socket.gethostname()}:8123"
    assert base_url("0.0.0.0", 8123, "https://class.example.org/") == "https://class.example.org"
    was_open = room.the_class()["join_open"]
    try:
        for is_open in (True, False):
            room.set_join_open(is_open)
            code = room.the_class()["join_code"]
            login, lines = classroom_banner(room, "https://class.example.org", "pt")
            assert login == "https://class.example.org/login" and lines[1:3] == [
                i18n.t("serve.classroom_login", "pt"),
                "    https://class.example.org/login",
            ]
            state = "serve.classroom_join_open" if is_open else "serve.classroom_join_closed"
            assert lines[3:] == [i18n.t(state, "pt"), f"    https://class.example.org/join/{code}"]
            assert not any("token" in line for line in lines)
    finally:
        room.set_join_open(was_open)
