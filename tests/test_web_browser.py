"""The lesson page in a real browser: Debian's Chromium driven by Playwright, against `tritonlab serve`.

The server is the real command (`python -m tritonlab.web serve`, what `tritonlab serve` runs) in a subprocess
on a free loopback port, with private TRITONLAB_HOME and TRITONLAB_WORKSPACE. Set TRITONLAB_WEB_SCREENSHOT to
a path to save a screenshot of the lesson page after a passing check (docs/screenshot-lesson.png is made so).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
ROOT = Path(__file__).resolve().parent.parent
TOKEN = "browser-test-token-0123456789"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

pytestmark = [pytest.mark.browser, pytest.mark.slow]
if not CHROMIUM.exists():
    pytestmark.append(
        pytest.mark.skip(
            reason="needs Debian's Chromium at /usr/bin/chromium "
            "(apt-get install chromium, or `make browser-deps`)"
        )
    )
playwright_api = pytest.importorskip("playwright.sync_api", reason="needs the playwright Python package")
playwright_api.expect.set_options(timeout=60_000)  # the first run waits for the worker to import torch

SOLUTION = """import torch
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    a = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    b = tl.load(y_ptr + offsets, mask=mask).to(tl.float32)
    tl.store(out_ptr + offsets, (a + b).to(out_ptr.dtype.element_ty), mask=mask)


def vector_add(x, y):
    if x.shape != y.shape or x.dtype != y.dtype or x.device != y.device:
        raise ValueError(f"vector_add: x is {tuple(x.shape)} {x.dtype} on {x.device}, "
                         f"y is {tuple(y.shape)} {y.dtype} on {y.device}; they must match")
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = out.numel()
    if n == 0:
        return out
    add_kernel[(triton.cdiv(n, BLOCK),)](x.contiguous(), y.contiguous(), out, n, BLOCK=BLOCK)
    return out


if __name__ == "__main__":
    a, b = torch.randn(3000), torch.randn(3000)
    print("first line from my kernel run")
    print("sum matches torch:", torch.allclose(vector_add(a, b), a + b))
"""
WRONG = SOLUTION.replace("(a + b).to(", "(a - b).to(")
ENDLESS = "print('spinning', flush=True)\nwhile True:\n    pass\n"


def course_for_test(tmp: Path) -> Path:
    """The real course, made of every lesson folder that loads today (lessons are still being written)."""
    from tritonlab.content.course import load_lesson

    course = tmp / "course"
    course.mkdir()
    ids = []
    for folder in sorted((ROOT / "course").iterdir()):
        if (folder / "lesson.toml").is_file():
            try:
                load_lesson(folder)
            except Exception:  # a lesson mid-edit: leave it out of this test course
                continue
            (course / folder.name).symlink_to(folder)
            ids.append(folder.name)
    if "05-vector-add" not in ids:
        pytest.skip("lesson 05-vector-add does not load yet")
    (course / "course.toml").write_text(
        f'format_version = 1\nlessons = {ids!r}\n\n[title]\nen = "tritonlab"\n'
    )
    return course


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("browser")
    env = dict(
        os.environ,
        TRITONLAB_HOME=str(tmp / "home"),
        TRITONLAB_WORKSPACE=str(tmp / "ws"),
        TRITONLAB_COURSE=str(course_for_test(tmp)),
        TRITONLAB_BACKEND="interpreter",
        TRITONLAB_LANG="en",
        PYTHONPATH=str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""),
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "tritonlab.web", "serve", "--port", "0", "--no-browser", "--token", TOKEN],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    url = None
    deadline = time.monotonic() + 90
    assert proc.stdout is not None
    while time.monotonic() < deadline and url is None:
        line = proc.stdout.readline()
        if not line:
            break
        match = re.search(r"(http://127\.0\.0\.1:\d+/)\?token=", line)
        url = match.group(1) if match else None
    if url is None:
        proc.kill()
        pytest.fail("tritonlab serve did not print its URL: " + (proc.stdout.read() or ""))
    yield url
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


@pytest.fixture
def page(browser: object, server: str) -> Iterator[object]:
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.set_default_timeout(60_000)
    pg.goto(f"{server}?token={TOKEN}")
    yield pg
    context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


def replace_code(pg: object, text: str) -> None:
    pg.click(".exercise .cm-content")
    pg.keyboard.press("Control+a")
    pg.keyboard.insert_text(text)


def test_learner_solves_lesson_5(page: object, server: str) -> None:
    expect = playwright_api.expect
    expect(page.locator("#progress-pill")).to_contain_text("0/")
    page.click("a.card-link[href='/lessons/05-vector-add']")
    expect(page.locator(".exercise[data-exercise='vector-add']")).to_be_visible()
    expect(page.locator("[data-term=out]")).to_contain_text("Ready")
    replace_code(page, SOLUTION)
    page.click("[data-action=run]")
    out = page.locator("[data-term=out]")
    expect(out).to_contain_text("first line from my kernel run")
    expect(out).to_contain_text("sum matches torch: True")
    expect(out).to_contain_text("Finished in")
    expect(page.locator("[data-term=backend]")).to_have_text("interpreter")

    page.keyboard.press("Control+Shift+Enter")  # Check, from the editor
    expect(page.locator(".verdict.pass")).to_be_visible(timeout=120_000)
    rows = page.locator("table.cases tbody tr")
    assert rows.count() >= 10 and page.locator("table.cases tbody tr.fail").count() == 0
    expect(out).to_contain_text("cases pass")
    expect(page.locator("[data-progress=passed]")).to_have_text("1")
    expect(page.locator("[data-role=passed-badge]")).to_be_visible()
    if os.environ.get("TRITONLAB_WEB_SCREENSHOT"):
        page.set_viewport_size({"width": 1440, "height": 1280})  # editor, terminal and results in one view
        page.evaluate("document.querySelector('.workbench').scrollTop = 0")
        page.screenshot(path=os.environ["TRITONLAB_WEB_SCREENSHOT"])
        page.set_viewport_size({"width": 1440, "height": 900})

    page.reload()
    expect(page.locator(".exercise .cm-content")).to_contain_text("first line from my kernel run")
    page.click("[data-action=solution]")
    expect(page.locator("#solution-dialog")).to_be_visible()
    expect(page.locator("[data-role=solution-code]")).to_contain_text("def vector_add")
    page.keyboard.press("Escape")

    question = page.locator("form.question").first
    question.locator("input[name=answer]").first.check()
    question.locator("button[type=submit]").click()
    expect(question.locator(".feedback")).to_be_visible()
    expect(question.locator(".option-feedback:visible").first).not_to_be_empty()
    expect(question.locator(".feedback")).to_contain_text(re.compile(r"Correct|Not quite|Partly"))

    page.click("a.brand")
    card = page.locator("li.lesson-card", has=page.locator("a[href='/lessons/05-vector-add']"))
    expect(card).to_contain_text("1/1 exercises passed")
    expect(page.locator("a.continue")).to_have_attribute("href", re.compile(r"^/lessons/05-vector-add"))


def test_wrong_solution_shows_a_failing_case(page: object, server: str) -> None:
    page.goto(f"{server}lessons/5")
    replace_code(page, WRONG)
    page.click("[data-action=check]")
    expect = playwright_api.expect
    expect(page.locator(".verdict.fail")).to_be_visible(timeout=120_000)
    failing = page.locator("table.cases tbody tr.fail").first
    expect(failing.locator(".failure-message")).not_to_be_empty()
    expect(failing.locator(".result")).to_have_text("✗ fail")


def test_stop_kills_an_endless_loop(page: object, server: str) -> None:
    page.goto(f"{server}lessons/5")
    replace_code(page, ENDLESS)
    page.click("[data-action=run]")
    expect = playwright_api.expect
    out = page.locator("[data-term=out]")
    expect(out).to_contain_text("spinning")
    stop = page.locator("[data-term=stop]")
    expect(stop).to_be_enabled()
    started = time.monotonic()
    stop.click()
    expect(out).to_contain_text("Stopped after", timeout=15_000)
    assert time.monotonic() - started < 15
    expect(stop).to_be_disabled()
    expect(page.locator("[data-action=run]")).to_be_enabled()


def test_a_change_on_disk_is_offered_never_overwritten(page: object, server: str) -> None:
    expect = playwright_api.expect
    page.goto(f"{server}lessons/5")
    path = Path(page.locator(".exercise .filepath code").inner_text())
    editor = page.locator(".exercise .cm-content")
    path.write_text("# written by another editor\n")  # nothing unsaved in the page: it just reloads
    expect(editor).to_contain_text("written by another editor", timeout=15_000)
    expect(page.locator("[data-role=save-state]")).to_contain_text("changed on disk")
    editor.click()
    page.keyboard.press("Control+End")
    page.keyboard.type("x = 1")
    path.write_text("# a second outside edit\n")  # before the autosave: the save must not overwrite it
    expect(page.locator("[data-role=conflict]")).to_be_visible(timeout=15_000)
    assert path.read_text() == "# a second outside edit\n"
    page.click("[data-action=load-disk]")
    expect(editor).to_contain_text("a second outside edit")
    expect(page.locator("[data-role=conflict]")).to_be_hidden()
    backups = path.parent.parent / ".backups"
    assert any("x = 1" in b.read_text() for b in backups.glob("vector-add-*-discarded-*.py"))


def test_visualize_shows_the_picture_of_the_launch(page: object, server: str) -> None:
    expect = playwright_api.expect
    page.goto(f"{server}lessons/5")
    replace_code(page, SOLUTION)
    page.click("[data-action=viz]")
    image = page.locator("[data-viz-for='vector-add'] img.viz-image")
    expect(image).to_be_visible(timeout=120_000)
    expect(image).to_have_attribute(
        "alt", re.compile(r"add_kernel \(vector-add\), case .+: grid of \d+ programs")
    )
    assert page.evaluate("document.querySelector('img.viz-image').naturalWidth") > 200
    expect(page.locator("[data-viz-for='vector-add'] figcaption")).to_contain_text("tritonlab viz vector-add")
    expect(page.locator("[data-action=viz]")).to_be_enabled()


def test_a_failing_case_links_to_its_picture(page: object, server: str) -> None:
    expect = playwright_api.expect
    page.goto(f"{server}lessons/5")
    replace_code(page, WRONG)
    page.click("[data-action=check]")
    expect(page.locator(".verdict.fail")).to_be_visible(timeout=120_000)
    failing = page.locator("table.cases tbody tr.fail").first
    name = failing.locator("th").inner_text()
    failing.locator("button[data-viz-case]").click()
    panel = page.locator("[data-viz-for='vector-add']")
    expect(panel.locator(".viz-title")).to_contain_text(name, timeout=120_000)
    expect(panel.locator("img.viz-image")).to_be_visible()
    expect(panel.locator("img.viz-image")).to_have_attribute("alt", re.compile(re.escape(f"case {name}")))


def test_visualize_says_when_an_exercise_has_no_kernel(page: object, server: str) -> None:
    from tritonlab.content.course import load_lesson

    try:
        lesson = load_lesson(ROOT / "course" / "06-performance")
    except Exception:
        pytest.skip("lesson 06-performance does not load yet")
    if "bench-protocol" not in [e.id for e in lesson.exercises]:
        pytest.skip("lesson 6 has no bench-protocol exercise")
    page.goto(f"{server}lessons/06-performance#ex-bench-protocol")
    section = page.locator(".exercise[data-exercise='bench-protocol']")
    expect = playwright_api.expect
    expect(section).to_be_visible()
    section.locator("[data-action=viz]").click()
    error = page.locator("[data-viz-for='bench-protocol'] .viz-error")
    expect(error).to_contain_text("bench-protocol has no kernel to draw")
