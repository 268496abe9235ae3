"""The lesson page in a real browser: Debian's Chromium driven by Playwright, against `tritonlab serve`.

The server is the real command (`python -m tritonlab.web serve`, what `tritonlab serve` runs) in a subprocess
on a free loopback port, with private TRITONLAB_HOME and TRITONLAB_WORKSPACE. Set TRITONLAB_WEB_SCREENSHOT to
a path to save a screenshot of the lesson page after a passing check (docs/screenshot-lesson.png is made so).
"""

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
            "(apt-get install chromium, or `make system-deps` as root)"
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
            load_lesson(folder)  # a lesson that does not load is a failure here, never silently left out
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
    expect(failing.locator(".kind")).not_to_be_empty()
    expect(page.locator(".problems .failure-message").first).not_to_be_empty()
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


def test_inspect_tab_shows_ptx_and_a_register_count(page: object, server: str) -> None:
    """The Inspect panel compiles the saved file for a GPU in the sandbox (no GPU here) and shows the report."""
    expect = playwright_api.expect
    page.goto(f"{server}lessons/5")
    replace_code(page, SOLUTION)
    page.click("[data-action=inspect]")
    panel = page.locator("[data-inspect-for='vector-add']")
    kernel = panel.locator("article.inspect-kernel[data-kernel='add_kernel']")
    expect(kernel).to_be_visible(timeout=180_000)
    registers = kernel.locator("dd[data-inspect=registers]")
    assert int(registers.inner_text()) > 0
    expect(kernel.locator("dd[data-inspect=occupancy]")).to_contain_text("programs per SM")
    tabs = kernel.locator("[role=tablist] [role=tab]")
    assert [tabs.nth(i).inner_text() for i in range(tabs.count())] == ["TTIR", "TTGIR", "LLIR", "PTX"]
    kernel.locator("[role=tab][data-stage=ptx]").click()
    ptx = kernel.locator("pre[data-stage=ptx]")
    expect(ptx).to_be_visible()
    expect(ptx).to_contain_text(".entry add_kernel")
    expect(kernel.locator("pre[data-stage=ttir]")).to_be_hidden()
    kernel.locator("[role=tab][data-stage=ptx]").press("ArrowLeft")  # keyboard: the previous stage
    expect(kernel.locator("pre[data-stage=llir]")).to_be_visible()
    panel.locator("[data-role=inspect-target]").select_option("cuda:80")
    panel.locator("[data-action=inspect-again]").click()
    expect(panel.locator(".inspect-report p").first).to_contain_text("cuda:80", timeout=180_000)
    expect(panel.locator("[data-action=inspect-again]")).to_be_enabled()


def test_profile_tab_shows_the_static_view_without_a_gpu(page: object, server: str) -> None:
    """The Profile panel (beside Inspect) runs `tritonlab profile` on the saved file: no GPU here, so it says
    nothing was timed and shows the kernel's compiled resources, as text."""
    expect = playwright_api.expect
    page.goto(f"{server}lessons/5")
    replace_code(page, SOLUTION)
    page.click("[data-action=profile]")
    report = page.locator("[data-profile-for='vector-add'] [data-role=profile-body]")
    expect(report).to_contain_text("nothing was timed", timeout=180_000)
    expect(report).to_contain_text("add_kernel:")
    expect(report).to_contain_text("registers per thread")
    assert (
        page.locator("[data-profile-for='vector-add'] [data-role=profile-body] *").count() == 0
    )  # text only
    expect(page.locator("[data-action=profile-again]")).to_be_enabled()


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


def test_visualize_is_not_offered_without_a_kernel(page: object, server: str) -> None:
    from tritonlab.content.course import load_lesson

    lesson = load_lesson(ROOT / "course" / "06-performance")
    assert "bench-protocol" in [e.id for e in lesson.exercises]
    page.goto(f"{server}lessons/06-performance#ex-bench-protocol")
    section = page.locator(".exercise[data-exercise='bench-protocol']")
    expect = playwright_api.expect
    expect(section).to_be_visible()
    expect(section.locator("[data-action=check]")).to_be_visible()
    expect(section.locator("[data-action=viz]")).to_have_count(0)  # not offered where it cannot work
    assert page.locator("[data-viz-for='bench-protocol']").count() == 0


# ---- issue 15: the rough edges a browser walk found ------------------------------------------------------

AXE = ROOT / "tests" / "vendor" / "axe.min.js"
CSP_WATCH = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__csp.push(e.violatedDirective + " on " + String(e.target && e.target.nodeName));
});
"""


def bearer(server: str) -> dict:
    return {"Authorization": f"Bearer {TOKEN}"}


def test_stop_on_a_queued_run_frees_the_page_at_once(page: object, server: str) -> None:
    expect = playwright_api.expect
    page.goto(f"{server}lessons/5")
    replace_code(page, ENDLESS)
    page.keyboard.press("Control+s")
    expect(page.locator("[data-role=save-state]")).to_have_text("Saved")
    ahead = []  # two endless runs take the interpreter's pool of 2
    try:
        for _ in range(2):
            r = page.request.post(f"{server}api/exercises/vector-add/run", headers=bearer(server))
            assert r.ok, r.text()
            ahead.append(r.json())
        page.click("[data-action=run]")
        out = page.locator("[data-term=out]")
        expect(out).to_contain_text("Waiting for a free worker")
        expect(page.locator("[data-term=queue]")).to_be_visible()
        started = time.monotonic()
        page.click("[data-term=stop]")
        expect(out).to_contain_text("Stopped before it started", timeout=5_000)
        expect(page.locator("[data-action=run]")).to_be_enabled(timeout=5_000)
        expect(page.locator("[data-action=check]")).to_be_enabled()
        assert time.monotonic() - started < 5
        expect(page.locator("[data-term=queue]")).to_be_hidden()
    finally:
        for job in ahead:
            page.request.post(server + job["stop"].lstrip("/"), headers=bearer(server))


def test_a_refused_check_says_why_in_the_results(page: object, server: str) -> None:
    expect = playwright_api.expect
    page.goto(f"{server}lessons/5")
    busy = "16 runs are already in flight or waiting; wait for one to finish"
    page.route(
        "**/api/exercises/vector-add/check",
        lambda route: route.fulfill(status=429, json={"error": busy}),
    )
    page.click("[data-action=check]")
    results = page.locator("[data-results-for='vector-add']")
    expect(results).to_contain_text("The check could not start: " + busy)
    expect(results).not_to_contain_text("Checking…")
    expect(page.locator("[data-term=out]")).to_contain_text("Could not start")
    expect(page.locator("[data-action=check]")).to_be_enabled()
    expect(page.locator("[data-action=run]")).to_be_enabled()


def test_phone_layout_has_no_horizontal_scroll(browser: object, server: str, tmp_path: Path) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    pg = context.new_page()
    pg.set_default_timeout(60_000)
    try:
        pg.goto(f"{server}?token={TOKEN}")
        views = {
            "index": ("", None),
            "index-menu": ("", ".menu > summary"),
            "lesson": ("lessons/5", None),
            "lesson-menu": ("lessons/5", ".menu > summary"),
            "quiz": ("lessons/5#quiz", None),
        }
        for name, (path, click) in views.items():
            pg.goto(server + path)
            pg.wait_for_load_state("load")
            if click:
                pg.click(click)
            pg.screenshot(path=str(tmp_path / f"phone-{name}.png"))
            width = pg.evaluate("document.scrollingElement.scrollWidth")
            assert width <= 390, f"{name}: the page is {width} px wide at 390 px (screenshots in {tmp_path})"
            if click:
                box = pg.locator(".menu-list").bounding_box()
                assert box and box["x"] >= 0 and box["x"] + box["width"] <= 390, (name, box)
        pg.goto(server)
        box = pg.locator("a.continue").bounding_box()
        assert box and box["x"] + box["width"] <= 390, box
    finally:
        context.close()


def focused(pg: object) -> str:
    return pg.evaluate(
        """() => { const a = document.activeElement;
        if (!a) return "";
        if (a.closest(".cm-editor")) return "editor";
        if (a.dataset && a.dataset.action) return "action:" + a.dataset.action;
        if (a.closest(".prose")) return "prose";
        if (a.closest("#quiz")) return "quiz";
        return a.tagName.toLowerCase(); }"""
    )


def test_tab_moves_past_the_editor_until_enter_starts_editing(page: object, server: str) -> None:
    expect = playwright_api.expect
    page.goto(f"{server}lessons/5")
    path = Path(page.locator(".exercise .filepath code").inner_text())
    before = path.read_text()
    page.locator("body").focus()
    seen = []
    for _ in range(40):
        page.keyboard.press("Tab")
        seen.append(focused(page))
    assert "action:run" in seen and "editor" in seen, seen
    run_at = seen.index("action:run")
    assert "action:check" in seen[run_at : run_at + 3]
    for later in ("prose", "quiz"):
        assert later not in seen[:run_at], f"{later} comes before Run in tab order: {seen}"
    assert seen.count("editor") == 1, f"Tab stayed in the editor: {seen}"
    page.wait_for_timeout(1500)  # past the autosave delay
    assert path.read_text() == before
    assert page.evaluate("TLWorkbench.exercises[0].editor.getText()") == before

    mode = page.locator("[data-role=editor-mode]")
    expect(mode).to_contain_text("Tab moves past the editor")
    page.locator("body").focus()
    for _ in range(40):
        page.keyboard.press("Tab")
        if focused(page) == "editor":
            break
    assert focused(page) == "editor"
    page.keyboard.press("Control+Home")
    page.keyboard.press("Enter")  # edit mode; no newline is typed
    expect(mode).to_contain_text("Editing: Tab indents")
    page.keyboard.press("Tab")
    text = page.evaluate("TLWorkbench.exercises[0].editor.getText()")
    assert text == "    " + before, text[:40]
    page.keyboard.press("Escape")
    expect(mode).to_contain_text("Tab moves past the editor")
    page.keyboard.press("Tab")
    assert focused(page) != "editor"
    page.keyboard.press("Shift+Tab")
    assert focused(page) == "editor"
    page.keyboard.press("Shift+Tab")
    assert focused(page) != "editor"  # Shift+Tab leaves too, without outdenting
    assert page.evaluate("TLWorkbench.exercises[0].editor.getText()") == text


def test_text_inserted_over_a_selection_breaks_no_csp_rule(page: object, server: str) -> None:
    page.add_init_script(CSP_WATCH)
    messages: list[str] = []
    page.on("console", lambda m: messages.append(m.text))
    page.goto(f"{server}lessons/5")
    replace_code(page, SOLUTION)  # Ctrl+A, then insert_text as an IME or a dictation tool would
    replace_code(page, SOLUTION)  # again, now over a selection of many lines
    page.keyboard.press("Control+a")
    page.keyboard.type("z")
    cdp = page.context.new_cdp_session(page)
    cdp.send("Input.imeSetComposition", {"text": "に", "selectionStart": 1, "selectionEnd": 1})
    cdp.send("Input.imeSetComposition", {"text": "にほ", "selectionStart": 2, "selectionEnd": 2})
    cdp.send("Input.insertText", {"text": "にほん"})
    page.keyboard.press("Shift+Home")
    page.keyboard.insert_text(SOLUTION)
    page.wait_for_timeout(500)
    assert page.evaluate("window.__csp") == []
    assert not [m for m in messages if "Content Security Policy" in m], messages
    assert page.evaluate("TLWorkbench.exercises[0].editor.getText()") == SOLUTION


def test_the_verdict_names_the_backend_in_the_pages_language(page: object, server: str) -> None:
    expect = playwright_api.expect
    page.context.add_cookies([{"name": "tritonlab_lang", "value": "pt", "url": server}])
    verdict = {
        "exercise": "vector-add", "passed": True, "backend": "interpreter", "seed": 7, "duration_s": 1.5,
        "cases": [{"name": "n=1000", "passed": True}], "failures": [], "notes": [], "stopped": False,
        "solution_available": False,
    }  # fmt: skip
    fake_check_stream(page, [("verdict", verdict)], backend="interpreter")
    page.goto(f"{server}lessons/5")  # the page's context (and its cookie) ends with the test
    page.click("[data-action=check]")
    expect(page.locator(".verdict-head")).to_contain_text("interpretador · seed 7")
    expect(page.locator("[data-term=backend]")).to_have_text("interpretador")


@pytest.mark.parametrize("path", ["", "lessons/5", "lessons/1"])
def test_axe_finds_no_serious_accessibility_violations(page: object, server: str, path: str) -> None:
    page.goto(server + path)
    page.wait_for_load_state("load")
    if path:
        page.locator("#quiz").scroll_into_view_if_needed()
    page.evaluate(AXE.read_text(encoding="utf-8"))  # the page's CSP forbids an injected <script>
    found = page.evaluate(
        """async () => {
          const result = await axe.run(document, { resultTypes: ["violations"] });
          return result.violations
            .filter((v) => v.impact === "serious" || v.impact === "critical")
            .map((v) => ({ id: v.id, impact: v.impact, help: v.help,
                           nodes: v.nodes.slice(0, 5).map((n) => n.target.join(" ") + " :: " + n.failureSummary) }));
        }"""
    )
    assert not found, json.dumps(found, indent=1)


SMALL_GRID = SOLUTION.replace(
    "add_kernel[(triton.cdiv(n, BLOCK),)]", "grid = (n // BLOCK,)\n    add_kernel[grid]"
)


def cursor_line(page: object) -> int:
    return page.evaluate(
        "(() => { const v = TLWorkbench.exercises[0].editor.view;"
        " return v.state.doc.lineAt(v.state.selection.main.head).number; })()"
    )


def test_failures_are_grouped_and_file_line_moves_the_editor(page: object, server: str) -> None:
    """Issue 16: one entry per problem ("N cases — kind"), its `file:line` a link that puts the editor's
    cursor on that line (here the line computing a too-small grid), inline code shown as <code>."""
    expect = playwright_api.expect
    page.goto(f"{server}lessons/5")
    replace_code(page, SMALL_GRID)
    grid_line = SMALL_GRID.splitlines().index("    grid = (n // BLOCK,)") + 1
    page.click("[data-action=check]")
    expect(page.locator(".verdict.fail")).to_be_visible(timeout=120_000)
    problem = page.locator(".problems li.problem[data-kind='unwritten-output']").first
    expect(problem).to_be_visible()
    cases = int(problem.get_attribute("data-cases") or "0")
    assert cases > 1
    expect(problem.locator(".problem-title")).to_have_text(f"{cases} cases — unwritten-output")
    failing = page.locator("table.cases tbody tr.fail").count()
    assert page.locator(".problems li.problem").count() < failing  # each problem said once, not per case
    expect(problem.locator(".problem-cases")).to_contain_text("also in: ")
    cause = problem.locator(".failure-cause")
    expect(cause.locator("code").first).to_have_text("triton.cdiv(n, 1024)")
    assert "`" not in cause.inner_text()
    link = problem.locator("a.where-link")
    expect(link).to_have_text(re.compile(rf"\.py:{grid_line}$"))
    page.click(".exercise .cm-content")
    page.keyboard.press("Control+Home")
    assert cursor_line(page) == 1
    link.click()
    page.wait_for_function("document.activeElement.closest('.cm-editor') !== null")
    assert cursor_line(page) == grid_line


def fake_check_stream(page: object, events: list[tuple[str, dict]], backend: str = "gpu") -> None:
    """The check button's request and its event stream answered by the test (what a server would send)."""
    begin = {"kind": "check", "backend": backend, "command": "tritonlab check x"}
    stream = f"event: begin\ndata: {json.dumps(begin)}\n\n"
    stream += "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)
    stream += "event: end\ndata: {}\n\n"
    page.route(
        "**/api/exercises/vector-add/check",
        lambda route: route.fulfill(
            json={"job": "fake", "events": "/api/jobs/fake/events", "stop": "/api/jobs/fake/stop"}
        ),
    )
    page.route(
        "**/api/jobs/fake/events",
        lambda route: route.fulfill(status=200, content_type="text/event-stream", body=stream),
    )


def test_verdict_text_from_the_grader_is_never_html(page: object, server: str) -> None:
    """Messages quote the learner's names: a message holding markup shows it as text, backticks as <code>."""
    expect = playwright_api.expect
    evil = "<img src=x onerror=window.__pwned=1>"
    verdict = {
        "exercise": "vector-add", "passed": False, "backend": "interpreter", "seed": 7, "duration_s": 1.5,
        "cases": [{"name": "a", "passed": False}, {"name": "b", "passed": False}],
        "failures": [
            {"case": c, "kind": "exception", "message": f"NameError: `{evil}` is not defined",
             "cause": f"define `{evil}` first <b>bold</b>", "where": "/w/vector_add.py:3"}
            for c in ("a", "b")
        ],
        "notes": [], "stopped": False, "solution_available": False,
    }  # fmt: skip
    fake_check_stream(page, [("verdict", verdict)], backend="interpreter")
    page.goto(f"{server}lessons/5")
    page.click("[data-action=check]")
    problem = page.locator(".problems li.problem")
    expect(problem).to_have_count(1)
    expect(problem.locator(".problem-title")).to_have_text("2 cases — exception")
    expect(problem.locator(".failure-message code")).to_have_text(evil)
    expect(problem.locator(".failure-cause")).to_contain_text("<b>bold</b>")
    assert page.locator(".problems img, .problems b").count() == 0
    assert page.evaluate("window.__pwned") is None


def gpu_verdict(**extra: object) -> dict:
    return {
        "exercise": "vector-add", "passed": True, "backend": "gpu", "seed": 7, "duration_s": 1.2,
        "cases": [{"name": "n=1 float32", "passed": True}], "failures": [], "notes": [], "stopped": False,
        "solution_available": False, **extra,
    }  # fmt: skip


def test_a_passing_gpu_check_draws_its_roofline_point_beside_the_references(
    page: object, server: str
) -> None:
    """Issue 19: the results panel shows the speed line and a small roofline plot with the learner's point and
    the course reference's. The verdict comes first; the speed event replaces the "timing" line with both."""
    expect = playwright_api.expect
    plot = {"intensity": 1.25, "copy_gbps": 4212.3, "peak_tflops": 678.9,
            "learner": {"gbps": 3900.0, "tflops": 4.875}, "reference": {"gbps": 4100.0, "tflops": 5.125}}  # fmt: skip
    speed = {"case": "softmax fp32 65536x1024", "unit": "GB/s", "achieved": 3900.0, "ms": 0.1, "roof": 4212.3,
             "pct_of_roof": 92.6, "vs_reference": 0.95, "goal_vs_reference": None, "gpu": "NVIDIA H200",
             "plot": plot}  # fmt: skip
    line = (
        "speed on softmax fp32 65536x1024: 3900 GB/s (93% of the measured roof), 0.95× the course reference"
    )
    fake_check_stream(
        page,
        [("verdict", gpu_verdict(speed_pending=True, speed_line="")),
         ("speed", {"speed_line": line, "speed": speed, "speed_reason": ""})],
    )  # fmt: skip
    page.goto(f"{server}lessons/5")
    page.click("[data-action=check]")
    results = page.locator("[data-results-for='vector-add']")
    figure = results.locator("[data-role=speed-plot]")
    expect(figure).to_have_count(1)
    expect(results.locator(".speed").first).to_have_text(line)
    expect(results).not_to_contain_text("Timing your kernel")
    assert figure.locator("polyline.roof").count() == 1
    me, ref = figure.locator("[data-role=plot-learner]"), figure.locator("[data-role=plot-reference]")
    assert me.count() == 1 and ref.count() == 1
    # same intensity, so the same x; the reference is faster here, so it sits higher (smaller y)
    assert me.get_attribute("cx") == ref.get_attribute("cx")
    assert float(ref.get_attribute("cy")) < float(me.get_attribute("cy"))
    expect(figure.locator("figcaption")).to_contain_text("4212 GB/s")


def test_a_copy_kernels_speed_is_drawn_against_the_bandwidth_and_bad_numbers_draw_nothing(
    page: object, server: str
) -> None:
    """A kernel with no FLOPs is drawn against the copy bandwidth alone; a plot whose numbers are not
    numbers (the timing run executed learner code) draws nothing and breaks nothing."""
    expect = playwright_api.expect
    plot = {"intensity": 0, "copy_gbps": 4212.3, "peak_tflops": 678.9,
            "learner": {"gbps": 2000.0, "tflops": 0}, "reference": {"gbps": 4000.0, "tflops": 0}}  # fmt: skip
    speed = {"case": "transpose fp32 8192x8192", "unit": "GB/s", "achieved": 2000.0, "plot": plot}
    fake_check_stream(
        page, [("verdict", gpu_verdict(speed_line="speed on transpose: 2000 GB/s", speed=speed))]
    )
    page.goto(f"{server}lessons/5")
    page.click("[data-action=check]")
    figure = page.locator("[data-results-for='vector-add'] [data-role=speed-plot]")
    expect(figure).to_have_count(1)
    me, ref = figure.locator("[data-role=plot-learner]"), figure.locator("[data-role=plot-reference]")
    assert float(me.get_attribute("cx")) < float(ref.get_attribute("cx"))  # half the reference's GB/s
    expect(figure.locator("figcaption")).to_contain_text("only moves data")
    page.unroute("**/api/exercises/vector-add/check")
    page.unroute("**/api/jobs/fake/events")
    bad = {**plot, "copy_gbps": "<img src=x onerror=window.__pwned=1>", "learner": {"gbps": "NaN"}}
    fake_check_stream(page, [("verdict", gpu_verdict(speed_line="speed: ?", speed={**speed, "plot": bad}))])
    page.goto(f"{server}lessons/5")
    page.click("[data-action=check]")
    expect(page.locator("[data-results-for='vector-add'] .speed")).to_have_text("speed: ?")
    assert page.locator("[data-role=speed-plot]").count() == 0
    assert page.evaluate("window.__pwned") is None


# ---- issue 36: the walk's defects ------------------------------------------------------------------------

ACTIVE = """() => { const a = document.activeElement;
  if (!a || a === document.body) return "body";
  if (a.closest(".results")) return "results";
  if (a.matches("[data-action]")) return "button:" + a.dataset.action;
  if (a.classList.contains("feedback")) return "feedback:" + a.closest("form").dataset.question;
  return a.tagName + "." + a.className; }"""


def test_focus_follows_run_check_and_the_quiz(page: object, server: str) -> None:
    """Run and Check disable their button while the job runs: focus comes back to Run when it ends and moves to
    the verdict after Check, never to the top of the page; a quiz Check moves focus to its feedback. A file
    that does not import offers no per-case Visualize (there is no launch to draw)."""
    expect = playwright_api.expect
    page.goto(f"{server}lessons/5")
    replace_code(page, WRONG)
    page.focus("[data-action=run]")
    page.keyboard.press("Enter")
    expect(page.locator("[data-action=run]")).to_be_disabled()
    expect(page.locator("[data-action=run]")).to_be_enabled(timeout=120_000)
    assert page.evaluate(ACTIVE) == "button:run"
    page.focus("[data-action=check]")
    page.keyboard.press("Enter")
    expect(page.locator(".verdict.fail")).to_be_visible(timeout=120_000)
    expect(page.locator("[data-action=check]")).to_be_enabled()
    assert page.evaluate(ACTIVE) == "results"
    assert (
        page.locator("table.cases tbody tr.fail button[data-viz-case]").count() > 0
    )  # WRONG: each case has one

    replace_code(page, "import triton\n\ndef vector_add(x, y:\n    return x\n")
    page.click("[data-action=check]")
    expect(page.locator(".verdict.fail")).to_be_visible(timeout=120_000)
    expect(page.locator(".problems")).to_contain_text("SyntaxError")
    assert page.locator("button[data-viz-case]").count() == 0

    form = page.locator("#quiz form").first
    form.scroll_into_view_if_needed()
    choice = form.locator("input[type=radio], input[type=checkbox]")
    if choice.count():
        choice.first.check()
    else:
        form.locator("input").first.fill("1")
    form.locator("button[type=submit]").focus()
    page.keyboard.press("Enter")
    expect(form.locator(".feedback")).to_be_visible()
    question = form.get_attribute("data-question")
    assert page.evaluate(ACTIVE) == f"feedback:{question}"


def test_attention_says_why_it_has_no_picture(page: object, server: str) -> None:
    """attention-forward's tensors are all 4-D, which no picture draws: no Visualize button, a sentence saying
    why instead; an exercise with 1-D tensors keeps its button and no such sentence."""
    expect = playwright_api.expect
    page.goto(f"{server}lessons/12-attention")
    section = page.locator(".exercise[data-exercise='attention-forward']")
    expect(section).to_have_count(1)
    assert section.locator("[data-action=viz]").count() == 0
    assert section.locator("[data-action=inspect]").count() == 1  # Inspect still works on it
    expect(section.locator("[data-role=no-viz]")).to_contain_text("4")
    assert page.locator("[data-viz-for='attention-forward']").count() == 0
    page.goto(f"{server}lessons/5")
    vector = page.locator(".exercise[data-exercise='vector-add']")
    assert (
        vector.locator("[data-action=viz]").count() == 1 and vector.locator("[data-role=no-viz]").count() == 0
    )
