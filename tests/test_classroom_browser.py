"""A class in a real browser (Chromium + Playwright) against `serve --classroom` in a subprocess, one server and
one browser for the module: the teacher logs in and adds two learners; learner A passes vector-copy; the
teacher sees it in the matrix and exports the CSV; learner B gets 403/404 on A's code. Then (issue 36) the
teacher's pictures of a class with real checks agree with their tables and with the database; every page
passes axe-core at 1280 and 390 px, and at 390 px none scrolls sideways (screenshots kept as test artifacts:
TRITONLAB_ARTIFACTS=DIR keeps them there, else under pytest's temporary folder)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_web_browser import ARGS, CHROMIUM, course_for_test

ROOT = Path(__file__).resolve().parent.parent
MARKER = "ANNA-PRIVATE-1234"
GOOD = f"# {MARKER}\n" + (ROOT / "tests" / "fixtures" / "learners" / "good.py").read_text()

pytestmark = [pytest.mark.browser, pytest.mark.slow]
if not CHROMIUM.exists():
    pytestmark.append(
        pytest.mark.skip(reason="needs Debian's Chromium at /usr/bin/chromium (make system-deps)")
    )
playwright_api = pytest.importorskip("playwright.sync_api", reason="needs the playwright Python package")


@pytest.fixture(scope="module")
def classroom(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    tmp = tmp_path_factory.mktemp("classroom-browser")
    env = dict(
        os.environ,
        TRITONLAB_HOME=str(tmp / "home"),
        TRITONLAB_COURSE=str(course_for_test(tmp)),
        TRITONLAB_BACKEND="interpreter",
        TRITONLAB_LANG="en",
        PYTHONPATH=str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""),
    )
    env.pop("TRITONLAB_DATABASE_URL", None)
    made = subprocess.run(
        [sys.executable, "-m", "tritonlab", "classroom", "init", "--name", "Browser class", "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    made = json.loads(made.stdout)
    teacher = made["teacher"]
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tritonlab.web",
            "serve",
            "--classroom",
            "--port",
            "0",
            "--no-browser",
            "--allow-unhardened",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    url, seen = None, []
    deadline = time.monotonic() + 90
    assert proc.stdout is not None
    while time.monotonic() < deadline and url is None:
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line)
        match = re.search(r"(http://127\.0\.0\.1:\d+)/login", line)
        url = match.group(1) if match else None
    if url is None:
        proc.kill()
        pytest.fail("serve --classroom did not print its URL: " + "".join(seen) + (proc.stdout.read() or ""))
    db = tmp / "home" / "classroom.db"
    yield {"url": url, "teacher": teacher, "join": made["join_path"], "db": db, "banner": seen, "tmp": tmp}
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=ARGS)
        yield b
        b.close()


def log_in(
    browser: object, url: str, username: str, password: str, errors: list[str], width: int = 1440
) -> object:
    context = browser.new_context(viewport={"width": width, "height": 900}, accept_downloads=True)
    page = context.new_page()
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.set_default_timeout(60_000)
    page.goto(url + "/")  # not logged in: sent to the log-in page
    playwright_api.expect(page).to_have_url(re.compile(r"/login"))
    page.fill("#username", username)
    page.fill("#password", password)
    page.click("#login-button")
    playwright_api.expect(page.locator("#user-pill")).to_contain_text(
        username.title() if username != "teacher" else "Teacher"
    )
    return page


def test_a_class_end_to_end(classroom: dict, browser: object) -> None:
    expect = playwright_api.expect
    url, errors = classroom["url"], []
    teacher = log_in(browser, url, "teacher", classroom["teacher"]["password"], errors)
    teacher.click("#user-pill")  # the account menu
    teacher.click("#teacher-link")
    passwords = {}
    for name in ("anna", "ben"):
        teacher.fill("#new-username", name)
        teacher.fill("#new-display", name.title())
        teacher.click("#add-user")
        out = teacher.locator(f"output.new-password[data-username={name}]")
        expect(out).to_have_count(1)
        passwords[name] = out.text_content()
    teacher.reload()
    expect(teacher.locator("table.matrix tr[data-username=anna]")).to_be_visible()

    anna = log_in(browser, url, "anna", passwords["anna"], errors)
    anna.goto(url + "/lessons/02-environment")
    anna.click(".exercise[data-exercise='vector-copy'] .cm-content")
    anna.keyboard.press("Control+a")
    anna.keyboard.insert_text(GOOD)
    anna.click(".exercise[data-exercise='vector-copy'] [data-action=check]")
    expect(anna.locator(".verdict.pass")).to_be_visible(timeout=180_000)

    teacher.reload()
    cell = teacher.locator("table.matrix tr[data-username=anna] td[data-exercise='vector-copy']")
    expect(cell).to_contain_text("✓")
    with teacher.expect_download() as download:
        teacher.click("#export-csv")
    text = Path(download.value.path()).read_text()
    header, *rows = text.splitlines()
    anna_row = dict(
        zip(header.split(","), next(r for r in rows if r.startswith("anna,")).split(","), strict=True)
    )
    assert anna_row["vector-copy:passed"] == "True" and anna_row["vector-copy:attempts"] == "1"

    ben = log_in(browser, url, "ben", passwords["ben"], errors)
    anna_id = teacher.request.get(url + "/api/classroom/progress.json").json()["learners"]
    anna_id = next(r["id"] for r in anna_id if r["username"] == "anna")
    for path in (
        f"/api/classroom/learners/{anna_id}/code/vector-copy",
        f"/teacher/learners/{anna_id}/code/vector-copy",
    ):
        r = ben.request.get(url + path)
        assert r.status in (403, 404) and MARKER not in r.text()
    own = ben.request.get(url + "/api/exercises/vector-copy/code")
    assert own.status == 200 and MARKER not in own.text()
    ben.goto(url + "/lessons/02-environment")
    expect(ben.locator(".exercise[data-exercise='vector-copy'] .cm-content")).not_to_contain_text(MARKER)
    for page in (teacher, anna, ben):
        page.context.close()
    assert not errors, f"JavaScript errors: {errors}"


# ---- issue 36: the teacher's pictures, axe on every page, no sideways scroll on a phone ----------------------

LEARNERS = ROOT / "tests" / "fixtures" / "learners"
PAGE_NUMBERS = """() => {
  const all = (sel) => [...document.querySelectorAll(sel)];
  const num = (x) => (x === undefined || x === null ? null : parseFloat(x));
  const text = (el, sel) => { const t = el.querySelector(sel); return t ? t.textContent.trim() : ""; };
  const stat = (tr, name) => num((tr.querySelector("[data-stat=" + name + "]") || {dataset: {}}).dataset.value);
  const dots = (pic) => all("svg[data-picture=" + pic + "] circle.dot").map((c) => ({
    ex: c.dataset.exercise, user: c.dataset.user, value: num(c.dataset.value), cx: num(c.getAttribute("cx")) }));
  const medians = (pic) => all("svg[data-picture=" + pic + "] line.median").map((l) => ({
    ex: l.dataset.exercise, value: num(l.dataset.value) }));
  const spreads = (table) => all("table[data-table=" + table + "] tbody tr").map((tr) => ({
    ex: tr.dataset.exercise, n: stat(tr, "n"), min: stat(tr, "min"), median: stat(tr, "median"),
    max: stat(tr, "max"), unplaced: stat(tr, "unplaced") }));
  return {
    heat: all("svg[data-picture=stuck] g.cell").map((g) => ({ ex: g.dataset.exercise, kind: g.dataset.kind,
      value: num(g.dataset.value), text: text(g, "text.heat-count"), link: !!g.closest("a") })),
    heatTable: all("table[data-table=stuck] td[data-kind]").map((td) => ({ ex: td.dataset.exercise,
      kind: td.dataset.kind, value: num(td.dataset.value), text: td.textContent.trim() })),
    timeDots: dots("time"), timeMedians: medians("time"), timeTable: spreads("time"),
    bars: all("svg[data-picture=attempts] g.bars").map((g) => ({ ex: g.dataset.exercise, bucket: g.dataset.bucket,
      value: num(g.dataset.value), text: text(g, "text.bar-count"),
      height: g.querySelector("rect") ? num(g.querySelector("rect").getAttribute("height")) : 0 })),
    barTable: all("table[data-table=attempts] td[data-bucket]").map((td) => ({ ex: td.dataset.exercise,
      bucket: td.dataset.bucket, value: num(td.dataset.value), text: td.textContent.trim() })),
    speedDots: dots("speed"), speedMedians: medians("speed"), speedTable: spreads("speed"),
    named: all("svg.picture").every((svg) => {
      const title = document.getElementById(svg.getAttribute("aria-labelledby"));
      return title && title.textContent.trim().length > 0; }),
    tables: all("figure.insight details.picture-table table caption").length,
  };
}"""


def api_login(
    browser: object, url: str, username: str, password: str, **context: object
) -> tuple[object, str]:
    """A browser profile logged in through the API (cookies set), and its CSRF token."""
    ctx = browser.new_context(**context)
    r = ctx.request.post(url + "/api/login", data={"username": username, "password": password},
                         headers={"Origin": url})  # fmt: skip
    assert r.ok, r.text()
    return ctx, r.json()["csrf"]


def add_learner(teacher: tuple[object, str], url: str, name: str) -> str:
    ctx, csrf = teacher
    r = ctx.request.post(url + "/api/classroom/users", data={"username": name, "display_name": name.title()},
                         headers={"Origin": url, "X-CSRF-Token": csrf})  # fmt: skip
    assert r.ok, r.text()
    return r.json()["password"]


def check(learner: tuple[object, str], url: str, text: str, exercise: str = "vector-copy") -> dict:
    """A real check through the API (the page's own requests): save `text`, check it, read the verdict."""
    ctx, csrf = learner
    headers = {"Origin": url, "X-CSRF-Token": csrf}
    base = ctx.request.get(f"{url}/api/exercises/{exercise}/code").json()["version"]
    r = ctx.request.post(f"{url}/api/exercises/{exercise}/check", data={"text": text, "base_version": base},
                         headers=headers)  # fmt: skip
    assert r.ok, r.text()
    stream = ctx.request.get(url + r.json()["events"], timeout=240_000).text()
    found = re.search(r"event: verdict\ndata: (.*)\n", stream)
    assert found, stream[-2000:]
    return json.loads(found.group(1))


def store_numbers(db: Path) -> dict:
    """The pictures' numbers computed here, straight from the database's rows (the definitions of
    docs/classroom.md: latest failed kind of a learner who never passed; first check to first pass; failed
    checks before it; the fastest timed pass's % of the roof), for enabled learners only."""
    import sqlite3
    import statistics

    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        users = {i: n for i, n, role, off in con.execute("SELECT id, username, role, disabled FROM users")
                 if role == "learner" and not off}  # fmt: skip
        rows = con.execute(
            "SELECT user_id, exercise, at, passed, failure_kind, speed_ms, verdict FROM learner_attempts ORDER BY id"
        ).fetchall()
    per: dict[tuple[str, str], list] = {}
    for user, ex, at, passed, kind, ms, verdict in rows:
        if user in users:
            per.setdefault((users[user], ex), []).append((at, bool(passed), kind, ms, verdict))
    out: dict = {"stuck": {}, "times": {}, "failed_before": {}, "pct": {}}
    for (name, ex), checks in per.items():
        passes = [i for i, c in enumerate(checks) if c[1]]
        if not passes:
            kind = checks[-1][2] or "none"
            out["stuck"][(ex, kind)] = out["stuck"].get((ex, kind), 0) + 1
            out["stuck"][(ex, "*")] = out["stuck"].get((ex, "*"), 0) + 1
            continue
        out["times"][(ex, name)] = checks[passes[0]][0] - checks[0][0]
        out["failed_before"][(ex, name)] = passes[0]
        timed = [c for c in checks if c[1] and c[3] is not None]
        if timed:
            pct = json.loads(min(timed, key=lambda c: c[3])[4])["speed"].get("pct_of_roof")
            if pct is not None:
                out["pct"][(ex, name)] = pct
    for key in ("times", "pct"):
        by_ex: dict[str, list[float]] = {}
        for (ex, _name), value in out[key].items():
            by_ex.setdefault(ex, []).append(value)
        out[key + "_spread"] = {ex: (len(v), min(v), statistics.median(v), max(v)) for ex, v in by_ex.items()}
    return out


def bucket(n: int) -> str:
    return str(n) if n < 5 else ("5-9" if n < 10 else "10+")


def test_the_teachers_pictures_agree_with_their_tables_and_the_store(
    classroom: dict, browser: object, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A class with real checks (graded in the sandbox through the server), plus two GPU passes stored the way
    a GPU check stores them (no GPU here): every number each picture draws equals its table's and the
    database's; a heat-map cell leads to its learners and their numbered, highlighted code; the CSV and PNG
    exports answer."""
    from tritonlab.classroom.room import Classroom
    from tritonlab.perf.bench_learner import LEARNER, speed_summary

    url, errors = classroom["url"], []
    teacher = api_login(browser, url, "teacher", classroom["teacher"]["password"])
    names = ("cara", "dan", "erin", "finn", "gus")
    passwords = {name: add_learner(teacher, url, name) for name in names}
    learner = {name: api_login(browser, url, name, passwords[name]) for name in names}
    good, wrong = (LEARNERS / "good.py").read_text(), (LEARNERS / "wrong_values.py").read_text()
    assert not check(learner["cara"], url, wrong)["passed"]  # stuck: wrong-result
    assert not check(learner["dan"], url, (LEARNERS / "exception.py").read_text())[
        "passed"
    ]  # stuck: exception
    assert not check(learner["erin"], url, wrong)["passed"]
    passing = check(learner["erin"], url, good)  # passes after one failed check
    assert passing["passed"]
    assert check(learner["finn"], url, good)["passed"]  # passes at once
    assert not check(learner["gus"], url, wrong)["passed"]
    room = Classroom(f"sqlite:///{classroom['db']}", adopt=Path("/nonexistent"))
    try:
        room.set_disabled(room.user("gus"), True)  # a disabled account leaves the pictures
        for name, gbps in (("erin", 3200.0), ("finn", 1800.0)):  # GPU passes, as a GPU check stores them
            row = {"kernel": "copy", "dtype": "float32", "shape": [1 << 24], "bound": "memory", "speedup": {},
                   "peaks": {"gpu": "NVIDIA H200", "copy_gbps": 4000.0},
                   "impls": {LEARNER: {"ms": 134.0 / gbps, "gbps": gbps, "tflops": 0.0}}}  # fmt: skip
            verdict = {**passing, "backend": "gpu", "speed": speed_summary({"rows": [row]})}
            room.db.learner(room.user(name).id).record_attempt(verdict)
    finally:
        room.close()
    store = store_numbers(classroom["db"])
    assert (
        store["stuck"][("vector-copy", "wrong-result")] >= 1
        and store["stuck"][("vector-copy", "exception")] >= 1
    )
    assert (
        store["failed_before"][("vector-copy", "erin")] == 1 and store["pct"][("vector-copy", "erin")] == 80.0
    )

    page = teacher[0].new_page()
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(url + "/teacher")
    drawn = page.evaluate(PAGE_NUMBERS)
    assert drawn["named"] and drawn["tables"] == 4
    shots = artifacts(tmp_path_factory)
    page.locator("#insights").screenshot(path=str(shots / "teacher-pictures.png"))

    heat = {(c["ex"], c["kind"]): c for c in drawn["heat"]}
    assert {k: c["value"] for k, c in heat.items() if c["value"]} == store["stuck"]
    for c in heat.values():  # the number written in the cell, and a link to its learners
        assert c["text"] == (str(int(c["value"])) if c["value"] else "") and c["link"] == bool(c["value"])
    assert {(c["ex"], c["kind"]): c["value"] for c in drawn["heatTable"]} == {
        k: c["value"] for k, c in heat.items()
    }
    assert all(c["text"] == str(int(c["value"])) for c in drawn["heatTable"])

    assert {(d["ex"], d["user"]): d["value"] for d in drawn["timeDots"]} == store["times"]
    for ex in {d["ex"] for d in drawn["timeDots"]}:
        placed = sorted((d["value"], d["cx"]) for d in drawn["timeDots"] if d["ex"] == ex)
        assert [cx for _v, cx in placed] == sorted(cx for _v, cx in placed)  # the longer, the further right
    assert {m["ex"]: m["value"] for m in drawn["timeMedians"]} == {
        ex: s[2] for ex, s in store["times_spread"].items()
    }
    assert {r["ex"]: (r["n"], r["min"], r["median"], r["max"]) for r in drawn["timeTable"]} == store[
        "times_spread"
    ]

    buckets: dict[tuple[str, str], int] = {}
    for (ex, _name), n in store["failed_before"].items():
        buckets[(ex, bucket(n))] = buckets.get((ex, bucket(n)), 0) + 1
    bars = {(b["ex"], b["bucket"]): b for b in drawn["bars"]}
    assert {k: b["value"] for k, b in bars.items() if b["value"]} == buckets
    assert all(b["text"] == (str(int(b["value"])) if b["value"] else "") for b in bars.values())
    per_learner = {round(b["height"] / b["value"], 6) for b in bars.values() if b["value"]}
    assert len(per_learner) == 1  # bar heights are proportional to the counts
    assert {(b["ex"], b["bucket"]): b["value"] for b in drawn["barTable"]} == {
        k: b["value"] for k, b in bars.items()
    }

    assert {(d["ex"], d["user"]): d["value"] for d in drawn["speedDots"]} == store["pct"]
    assert {m["ex"]: m["value"] for m in drawn["speedMedians"]} == {
        ex: s[2] for ex, s in store["pct_spread"].items()
    }
    assert {r["ex"]: (r["n"], r["min"], r["median"], r["max"]) for r in drawn["speedTable"]} == store[
        "pct_spread"
    ]

    # a cell of the heat map: its learners, each with the latest failure and their code, numbered and coloured
    page.click("svg[data-picture=stuck] a[href='/teacher/exercises/vector-copy?kind=exception']")
    playwright_api.expect(page.locator("h1")).to_contain_text("exception")
    dan = page.locator("section.drill-learner[data-username=dan]")
    playwright_api.expect(dan).to_be_visible()
    playwright_api.expect(dan.locator(".drill-failure")).to_contain_text("AttributeError")
    lines = (LEARNERS / "exception.py").read_text().count("\n")
    assert dan.locator("pre.numbered .ln").count() == lines
    assert (
        dan.locator("pre.numbered .nf").first.inner_text() == "helper"
    )  # Pygments' classes, coloured by app.css
    assert page.locator("section.drill-learner").count() == store["stuck"][("vector-copy", "exception")]
    page.screenshot(path=str(shots / "teacher-drilldown.png"), full_page=True)

    csv_text = teacher[0].request.get(url + "/api/classroom/insights/time.csv").text()
    csv_rows = {(r[0], r[1]): float(r[2]) for r in (line.split(",") for line in csv_text.splitlines()[1:])}
    assert csv_rows == store["times"]
    png = teacher[0].request.get(url + "/api/classroom/insights/stuck.png")
    assert png.ok and png.body()[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(png.body()[16:20], "big"), int.from_bytes(png.body()[20:24], "big")
    assert 300 < width <= 1000 and 100 < height <= 3000, (width, height)
    for ctx, _csrf in (teacher, *learner.values()):
        ctx.close()
    assert not errors, errors


def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where screenshots go: TRITONLAB_ARTIFACTS (CI keeps it), else pytest's temporary folder."""
    folder = Path(os.environ.get("TRITONLAB_ARTIFACTS") or tmp_path_factory.getbasetemp() / "artifacts")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


AXE = ROOT / "tests" / "vendor" / "axe.min.js"
AXE_RUN = """async () => {
  const result = await axe.run(document, { resultTypes: ["violations"] });
  return result.violations.filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => v.id + " (" + v.impact + "): " + v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join(" | "));
}"""


def test_every_page_passes_axe_and_fits_a_phone(
    classroom: dict, browser: object, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """axe-core finds no serious or critical violation on any page — the log-in and join pages, every lesson,
    the index, the leaderboard, the teacher's page, a drill-down, a learner's code and a learner's 403 — at 1280
    and at 390 px; at 390 px no page is wider than the screen, and the account menu's Log out is on it."""
    url, shots, problems = classroom["url"], artifacts(tmp_path_factory), []
    axe = AXE.read_text(encoding="utf-8")
    lessons = sorted(p.name for p in (classroom["tmp"] / "course").iterdir() if p.is_dir())
    teacher = api_login(browser, url, "teacher", classroom["teacher"]["password"])
    password = add_learner(teacher, url, "hana")
    teacher[0].close()
    hana_id = None
    for width in (1280, 390):
        size = {"viewport": {"width": width, "height": 844}, "is_mobile": width < 500}
        visits = [(browser.new_context(**size), ["/login", classroom["join"]])]
        learner, _ = api_login(browser, url, "hana", password, **size)
        visits.append(
            (learner, ["/", *(f"/lessons/{lesson}" for lesson in lessons), "/leaderboard", "/teacher"])
        )
        boss, _ = api_login(browser, url, "teacher", classroom["teacher"]["password"], **size)
        if hana_id is None:
            hana_id = next(u["id"] for u in boss.request.get(url + "/api/classroom/users").json()["users"]
                           if u["username"] == "hana")  # fmt: skip
        visits.append(
            (
                boss,
                [
                    "/teacher",
                    "/teacher/exercises/vector-copy",
                    f"/teacher/learners/{hana_id}/code/vector-copy",
                ],
            )
        )
        for ctx, paths in visits:
            page = ctx.new_page()
            for path in paths:
                page.goto(url + path)
                page.wait_for_load_state("load")
                page.evaluate(axe)  # the page's CSP forbids an injected <script>
                found = page.evaluate(AXE_RUN)
                problems += [f"{width} px {path}: {v}" for v in found]
                if width < 500:
                    who = "teacher" if ctx is boss else "learner" if ctx is learner else "guest"
                    name = who + "-" + (re.sub(r"[^a-z0-9]+", "-", path.lower()).strip("-") or "index")
                    page.screenshot(path=str(shots / f"phone-{name}.png"))
                    # against the phone's width, not innerWidth: a mobile viewport widens its layout
                    # to the content (a 435 px page reports innerWidth 435 and is shown zoomed out)
                    wide = page.evaluate("Math.max(document.documentElement.scrollWidth, innerWidth)")
                    if wide > width:
                        problems.append(
                            f"{width} px {path} ({name}): the page is {wide} px wide (screenshots in {shots})"
                        )
            if ctx is boss and width < 500:  # the classroom header on a phone: the menu opens on-screen
                page.goto(url + "/teacher")
                page.click("#user-pill")
                page.screenshot(path=str(shots / "phone-classroom-header-menu.png"))
                box = page.locator("#logout").bounding_box()
                assert box and 0 <= box["x"] and box["x"] + box["width"] <= 390, box
            ctx.close()
    assert not problems, "\n".join(problems)


def test_resetting_a_password_or_disabling_asks_first(classroom: dict, browser: object) -> None:
    """Reset password and Disable end a learner's sessions: each opens a dialog naming the learner, and Escape
    or Cancel changes nothing (the old password still logs in); only the dialog's confirming button acts."""
    expect = playwright_api.expect
    url = classroom["url"]
    teacher = api_login(browser, url, "teacher", classroom["teacher"]["password"])
    password = add_learner(teacher, url, "ivy")

    def logs_in(secret: str) -> bool:  # in a browser profile of its own: the teacher's stays logged in
        other = browser.new_context()
        try:
            r = other.request.post(url + "/api/login", data={"username": "ivy", "password": secret},
                                   headers={"Origin": url})  # fmt: skip
            return r.ok
        finally:
            other.close()

    page = teacher[0].new_page()
    page.goto(url + "/teacher")
    row = page.locator("#roster tr[data-username=ivy]")
    dialog = page.locator("#confirm-dialog")
    row.locator("button[data-action=password]").click()
    expect(dialog).to_be_visible()
    expect(dialog.locator("#confirm-text")).to_contain_text("ivy")
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    row.locator("button[data-action=disable]").click()
    expect(dialog).to_be_visible()
    dialog.locator("button:not(#confirm-button)").click()  # Cancel
    expect(dialog).to_be_hidden()
    assert logs_in(password)  # neither the password nor the account changed
    row.locator("button[data-action=password]").click()
    dialog.locator("#confirm-button").click()
    expect(page.locator("#roster-message")).to_contain_text("ivy")
    assert not logs_in(password)  # the old password is gone
    teacher[0].close()
