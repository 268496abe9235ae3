"""A class in a real browser (Chromium + Playwright) against `serve --classroom` in a subprocess: the teacher
logs in and adds two learners; learner A passes vector-copy; the teacher sees it in the matrix and exports
the CSV; learner B gets 403/404 on A's code."""

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
    teacher = json.loads(made.stdout)["teacher"]
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
    yield {"url": url, "teacher": teacher, "tmp": tmp}
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


def log_in(browser: object, url: str, username: str, password: str, errors: list[str]) -> object:
    context = browser.new_context(viewport={"width": 1440, "height": 900}, accept_downloads=True)
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


def test_a_class_end_to_end(classroom: dict) -> None:
    expect = playwright_api.expect
    url, errors = classroom["url"], []
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=ARGS)
        teacher = log_in(browser, url, "teacher", classroom["teacher"]["password"], errors)
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
        browser.close()
    assert not errors, f"JavaScript errors: {errors}"
