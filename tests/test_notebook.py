"""The notebook interface: verdict HTML (escaped, cell lines), lesson notebooks, quizzes, the CLI command, and
two notebooks executed by nbclient in a real ipykernel kernel on the interpreter (lesson 5, and `%%check`
with the course's solution and its starter)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import has_cuda

from tritonlab.models import CaseResult, Failure, Verdict

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def nb_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A throw-away TRITONLAB_HOME and the interpreter, for this process and the kernels it starts."""
    home = tmp_path / "home"
    monkeypatch.setenv("TRITONLAB_HOME", str(home))
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setenv("TRITONLAB_BACKEND", "interpreter")
    monkeypatch.setenv("TRITONLAB_LANG", "en")
    monkeypatch.delenv("TRITONLAB_WORKSPACE", raising=False)
    return home


# ---- HTML ------------------------------------------------------------------------------------------------


def test_verdict_html_escapes_learner_text_and_names_the_cell_line(tmp_path: Path) -> None:
    from tritonlab.notebook.render import verdict_html
    from tritonlab.notebook.session import Source

    code = "import triton\n\n@triton.jit\ndef k(x_ptr):\n    tl.store(x_ptr, 1)  # <b>mine</b>\n"
    path = tmp_path / "vector_add.py"
    path.write_text(code)
    source = Source(path, code, offset=1, from_cell=True)
    failures = [
        Failure(
            "n=7 <script>",
            "out-of-bounds-write",
            f"wrote <img src=x> past the end in {path}",
            "no mask?",
            f"{path}:5",
        ),
        Failure("n=9", "out-of-bounds-write", "wrote past the end", "no mask?", f"{path}:5"),
    ]
    verdict = Verdict(
        "vector-add",
        "interpreter",
        42,
        str(path),
        [CaseResult("n=7", False), CaseResult("n=9", False)],
        failures,
        output="<script>alert(1)</script>",
    )
    html = verdict_html(verdict, source)
    assert "<script>" not in html and "<img" not in html and "<b>mine" not in html
    assert "&lt;script&gt;" in html and "&lt;img src=x&gt;" in html
    assert "cell line 6" in html  # file line 5 + the %%check line
    assert "tl.store(x_ptr, 1)" in html  # the code on that line
    assert str(path) not in html and "&lt;cell&gt;" in html  # the temporary file's path is not shown
    assert "no mask?" in html and "the same in 1 more case(s): n=9" in html  # grouped like print_verdict
    assert 'data-passed="false"' in html and "--seed 42" in html


def test_passing_verdict_html() -> None:
    from tritonlab.notebook.render import verdict_html

    verdict = Verdict("vector-add", "interpreter", 1, "f.py", [CaseResult("a", True)])
    html = verdict_html(verdict, sandbox_note="basic <sandbox>")
    assert 'data-passed="true"' in html and "passed" in html and "&lt;sandbox&gt;" in html


def test_a_verdicts_display_has_a_text_version(tmp_path: Path) -> None:
    """`%%check` shows its verdict with a text/plain version (a console, nbconvert to markdown, a text-only
    reader), not `<IPython.core.display.HTML object>`: the verdict in words, learner text unescaped."""
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    from tritonlab.notebook import magics
    from tritonlab.notebook.render import verdict_html

    InteractiveShell.instance()
    failing = Verdict("vector-add", "interpreter", 42, "f.py", [CaseResult("n=7", False)],
                      [Failure("n=7", "wrong-result", "x <b> & y differ")])  # fmt: skip
    passing = Verdict("vector-add", "interpreter", 1, "f.py", [CaseResult("a", True)])
    for verdict, words in ((failing, ("fail", "wrong-result\nx <b> & y differ")), (passing, ("passed",))):
        with capture_output() as cap:
            magics.show_html(verdict_html(verdict))
        (shown,) = cap.outputs
        text = shown.data["text/plain"]
        assert shown.data["text/html"].startswith("<") and "IPython" not in text and "<div" not in text
        assert "vector-add" in text and all(w in text for w in words), text


def test_import_is_cheap() -> None:
    code = (
        "import sys, tritonlab, tritonlab.notebook, tritonlab.notebook.render, tritonlab.cli.serve; "
        "print(sorted(m for m in ('torch', 'triton', 'IPython', 'nbformat') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ---- building notebooks ----------------------------------------------------------------------------------


def test_split_at_headings_ignores_code_fences() -> None:
    from tritonlab.notebook.build import split_at_headings

    text = "# T\nintro\n## A\n```python\n# not a heading\n```\n## B\nend\n"
    assert [c.splitlines()[0] for c in split_at_headings(text)] == ["# T", "## A", "## B"]


def test_lesson_notebook_has_text_examples_check_and_quiz(nb_env: Path) -> None:
    import nbformat

    from tritonlab.content.course import load_course
    from tritonlab.notebook.build import lesson_notebook

    course = load_course()
    lesson = course.lesson(5)
    nb = lesson_notebook(course, lesson, "pt")
    nbformat.validate(nb)
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    md = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert any(s.startswith("%env TRITONLAB_LANG=pt\n%load_ext tritonlab") for s in code)
    assert any(s.startswith("%%check vector-add\n") and "def vector_add" in s for s in code)
    for example in lesson.examples:  # every example, verbatim, as a code cell
        assert example.file.read_text().rstrip() in code
    assert "tritonlab.notebook.quiz(5)" in code
    assert lesson.text_path("pt").read_text().splitlines()[0] in md  # the Portuguese text
    figure = next(c for c in nb.cells if c.get("attachments"))
    assert "attachment:protocol.png" in figure.source and "image/png" in figure.attachments["protocol.png"]


def test_cli_writes_notebooks(nb_env: Path, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from tritonlab.cli.app import app

    runner = CliRunner()
    result = runner.invoke(app, ["notebook", "5", "--out", str(tmp_path / "nb")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "nb" / "05-vector-add.ipynb").is_file()
    assert runner.invoke(app, ["notebook"]).exit_code == 2
    assert runner.invoke(app, ["notebook", "99"]).exit_code == 2


# ---- quizzes -----------------------------------------------------------------------------------------------


def test_quiz_prints_questions_and_answer_grades_and_records(
    nb_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import tritonlab.notebook as nbapi
    from tritonlab.content.quiz import letter, load_bank
    from tritonlab.notebook import session
    from tritonlab.service import Service

    session._SESSION = None
    nbapi.quiz(5)
    shown = capsys.readouterr().out
    bank = load_bank(Service().lesson(5).quiz_path("en"))
    first = bank.questions[0]
    assert first.prompt in shown and "nbapi" not in shown and "tritonlab.notebook.answer(5," in shown
    right = letter(next(iter(first.keyed)))
    wrong = letter((next(iter(first.keyed)) + 1) % len(first.options))
    assert nbapi.answer(5, first.id, right) is True
    assert nbapi.answer(5, first.id, wrong) is False
    assert nbapi.answer(5, first.id, "zz") is False  # unreadable: says why, records nothing
    assert nbapi.answer(5, "no-such-question", "a") is False
    out = capsys.readouterr().out
    assert "✔ right" in out and "✘ not quite" in out and "no-such-question" in out
    store = session.get_session().service.store
    assert store.best_quiz() == {}  # not every question answered yet: no quiz score recorded
    session.get_session().close()
    session._SESSION = None


# ---- executed in a real kernel -----------------------------------------------------------------------------


def _outputs(cell) -> str:  # noqa: ANN001
    parts = []
    for out in cell.get("outputs", []):
        parts.append(out.get("text", ""))
        data = out.get("data", {})
        parts.append(data.get("text/html", "") + data.get("text/plain", ""))
    return "\n".join(parts)


@pytest.mark.slow
def test_notebooks_execute_in_a_real_kernel(
    nb_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    import os

    import nbformat

    from tritonlab.content.course import load_course
    from tritonlab.notebook.build import execute, kernelspec_for_this_python, smoke_notebook, write_lesson

    monkeypatch.setenv("JUPYTER_PATH", os.environ.get("JUPYTER_PATH", ""))  # restored after the test
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    kernel = kernelspec_for_this_python(tmp_path / "jupyter")  # the kernel scripts/run_notebooks.py uses
    course = load_course()
    smoke = tmp_path / "check-smoke.ipynb"
    nbformat.write(smoke_notebook(course, "vector-add"), str(smoke))
    nb = execute(smoke, timeout=300, kernel_name=kernel)
    _, _, passing, viz, bench, failing, plain, hint, env = nb.cells
    shown_env = json.loads(_outputs(env).split("tritonlab-env: ", 1)[1].splitlines()[0])
    assert os.path.realpath(shown_env["executable"]) == os.path.realpath(sys.executable)
    assert shown_env["backend"] == "interpreter"
    assert 'data-exercise="vector-add"' in _outputs(passing) and 'data-passed="true"' in _outputs(passing)
    assert "passed" in _outputs(passing)
    text = _outputs(failing)
    assert 'data-passed="false"' in text and "cell line" in text and "Traceback" not in text
    assert "plain python: vector-add failed" in _outputs(plain)
    assert any("image/png" in o.get("data", {}) for o in viz.outputs) and "programs" in _outputs(viz)
    assert "Hint 1/" in _outputs(hint)
    assert "needs an NVIDIA GPU" in _outputs(bench)  # on the interpreter: a message, no timing

    lesson_nb = execute(
        write_lesson(course, course.lesson(5), tmp_path / "nb"), timeout=300, kernel_name=kernel
    )
    every = "\n".join(_outputs(c) for c in lesson_nb.cells)
    assert "Every bug is caught by the full protocol" in every  # an example ran
    assert 'data-exercise="vector-add"' in every and 'data-passed="false"' in every  # the starter's verdict
    assert "kernel-offsets-line" in every  # the quiz printed
    assert not [o for c in lesson_nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]

    # progress went to the same store as the CLI's: the passing check and the failing ones
    from tritonlab.service import Service

    store = Service().store
    assert "vector-add" in store.passed_exercises() and len(store.attempts("vector-add")) >= 3


def test_check_takes_a_file_or_the_code_itself(nb_env: Path, tmp_path: Path) -> None:
    from tritonlab.notebook.session import Session

    session = Session()
    exercise = session.exercise("vector-add")
    mine = tmp_path / "mine.py"
    mine.write_text("x = 1\n")
    for given in (mine, str(mine)):
        source = session.source_for(exercise, given)
        assert source.path == mine.resolve() and not source.from_cell and source.offset == 0
    code = session.source_for(exercise, "import torch\nx = 1\n", offset=1)
    assert code.from_cell and code.path.read_text() == "import torch\nx = 1\n" and code.offset == 1
    assert code.path.name == "vector_add.py"
    with pytest.raises(FileNotFoundError):
        session.source_for(exercise, str(tmp_path / "missing.py"))
    with pytest.raises(KeyError, match="vector-add"):  # an unknown id lists the known ones
        session.exercise("vector-ad")
    session.close()
    assert not code.path.exists()


# ---- what a notebook shows, in pt and es -------------------------------------------------------------------


def _failing_verdict(tmp_path: Path):  # noqa: ANN202
    from tritonlab.notebook.session import Source

    code = "import triton\n\n@triton.jit\ndef k(x_ptr):\n    tl.store(x_ptr, 1)\n"
    path = tmp_path / "vector_add.py"
    path.write_text(code)
    failure = Failure("n=7", "out-of-bounds-write", "wrote past the end", "no mask?", f"{path}:5")
    verdict = Verdict("vector-add", "interpreter", 3, str(path), [CaseResult("n=7", False)], [failure])
    return verdict, Source(path, code, offset=1, from_cell=True)


@pytest.mark.parametrize(
    ("lang", "phrases"),
    [
        ("pt", ["linha 6 da célula", "ainda não aprovado", "Repita exatamente estes casos", "travou?"]),
        (
            "es",
            ["línea 6 de la celda", "todavía no aprobado", "Repite exactamente estos casos", "¿atascado?"],
        ),
    ],
)
def test_verdict_and_hint_html_are_translated(tmp_path: Path, lang: str, phrases: list[str]) -> None:
    from tritonlab.notebook.render import hint_html, verdict_html

    verdict, source = _failing_verdict(tmp_path)
    html = verdict_html(verdict, source, lang=lang)
    for phrase in phrases:
        assert phrase in html
    assert "cell line" not in html and "not passed yet" not in html and "Replay exactly" not in html
    assert "<code>%%check vector-add --seed 3</code>" in html  # the command itself stays runnable
    hint = hint_html("vector-add", 1, 3, "use a <mask>", lang=lang)
    assert ("Dica 1/3 para" if lang == "pt" else "Pista 1/3 para") in hint and "&lt;mask&gt;" in hint


@pytest.mark.parametrize("lang", ["pt", "es"])
def test_generated_notebook_cells_are_in_the_lessons_language(nb_env: Path, lang: str) -> None:
    from tritonlab import i18n
    from tritonlab.content.course import load_course
    from tritonlab.notebook.build import lesson_notebook

    course = load_course()
    nb = lesson_notebook(course, course.lesson(5), lang)
    text = "\n".join(c.source for c in nb.cells)
    english = i18n.catalog("en")
    for key in [k for k in english if k.startswith("notebook.build.")]:
        # each generated text (up to its first placeholder) is there in this language, and not in English
        assert i18n.template(key, lang).split("{")[0].splitlines()[0][:30] in text, key
        assert english[key].split("{")[0].splitlines()[0][:30] not in text, key
    heading = {"pt": "## Exercício `vector-add`", "es": "## Ejercicio `vector-add`"}[lang]
    assert heading in text and "%pip install tritonlab-0.1.0-py3-none-any.whl" in text
    assert "YOUR-ORG" not in text and "github.com" not in text  # no made-up repository address


def test_quiz_cells_speak_spanish(nb_env: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:  # noqa: ANN001
    import tritonlab.notebook as nbapi
    from tritonlab.content.quiz import letter, load_bank
    from tritonlab.notebook import session
    from tritonlab.service import Service

    monkeypatch.setenv("TRITONLAB_LANG", "es")
    session._SESSION = None
    try:
        nbapi.quiz(5)
        shown = capsys.readouterr().out
        bank = load_bank(Service().lesson(5).quiz_path("es"))
        first = bank.questions[0]
        assert (
            "Cuestionario de la lección 5" in shown and "responde con: tritonlab.notebook.answer(5," in shown
        )
        assert first.prompt in shown  # the Spanish bank's own text
        assert nbapi.answer(5, first.id, letter(next(iter(first.keyed)))) is True
        assert nbapi.answer(5, first.id, "zz") is False
        assert nbapi.answer(5, "nope", "a") is False
        out = capsys.readouterr().out
        assert "✔ correcto" in out and "no tiene la pregunta 'nope'" in out
        assert "is not a choice" not in out and "no es una opción" in out  # the input error, translated
    finally:
        session.get_session().close()
        session._SESSION = None


# ---- Colab's conventions -------------------------------------------------------------------------------------


def _clean_env(tmp_path: Path) -> dict[str, str]:
    """This environment without tritonlab's and Triton's own settings, HOME a fresh folder (a fresh VM)."""
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRITONLAB_", "TRITON_", "XDG_"))}
    env["HOME"] = str(tmp_path / "vm-home")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")]))
    return env


def test_home_defaults_to_a_writable_user_folder(tmp_path: Path) -> None:
    from tritonlab.content.quiz import load_bank

    question = load_bank(ROOT / "course" / "05-vector-add" / "quiz.en.toml").questions[0].id
    code = (
        "import tritonlab.notebook as nb\nfrom tritonlab import config\n"
        f"nb.answer(5, {question!r}, 'a')\nprint('HOME=' + str(config.home()))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=_clean_env(tmp_path), capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    expected = tmp_path / "vm-home" / ".local" / "share" / "tritonlab"
    assert f"HOME={expected}" in out.stdout
    assert (expected / "progress.sqlite3").is_file()  # the answer was recorded there


@pytest.mark.skipif(
    has_cuda() or bool(shutil.which("nvidia-smi")) or Path("/dev/nvidiactl").exists(),
    reason="the no-GPU path",
)
def test_without_a_gpu_the_interpreter_is_chosen(tmp_path: Path) -> None:
    code = (
        "import os, tritonlab.notebook as nb\n"
        "print('NOTE=' + nb.use_interpreter_without_gpu())\n"
        "print('AGAIN=' + nb.use_interpreter_without_gpu())\n"
        "print('INTERPRET=' + os.environ.get('TRITON_INTERPRET', ''))\n"
        "from tritonlab.runs.backend import choose\nprint('BACKEND=' + choose().backend)"
    )
    env = _clean_env(tmp_path)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "NOTE=tritonlab: no GPU here" in out.stdout and "AGAIN=\n" in out.stdout  # said once
    assert "INTERPRET=1" in out.stdout and "BACKEND=interpreter" in out.stdout
    env["TRITON_INTERPRET"] = "0"  # a choice the learner made is left alone
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert "NOTE=\n" in out.stdout and "INTERPRET=0" in out.stdout


def test_a_sandbox_that_cannot_harden_says_so_once(nb_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tritonlab.notebook.render import verdict_html
    from tritonlab.notebook.session import Session

    monkeypatch.setenv("TRITONLAB_SANDBOX", "basic")  # what a hosted notebook without bubblewrap gets
    session = Session(lang="pt")
    try:
        result = session.check("vector-add", "def vector_add(x, y):\n    return x + y\n")  # quick to judge
        assert not result.verdict.passed and result.verdict.cases
        assert (
            "sem a sua camada reforçada" in result.sandbox_note
            and "TRITONLAB_SANDBOX=basic" in result.sandbox_note
        )
        assert "sem a sua camada reforçada" in verdict_html(
            result.verdict, result.source, "pt", result.sandbox_note
        )
        assert session.sandbox_note() == ""  # once per session
    finally:
        session.close()


@pytest.mark.slow
def test_the_documented_commands_run_a_lesson_notebook_clean(tmp_path: Path) -> None:
    """docs/notebooks.md's commands, as a learner types them: `tritonlab notebook 5 --out nb`, then `jupyter
    nbconvert --to notebook --execute nb/*.ipynb`. The lesson runs clean (its starter fails its %%check, as it
    should) and the same notebook with the solution in that cell shows a pass."""
    pytest.importorskip("nbconvert")
    import json
    import os
    import subprocess
    import sys

    bin_dir = Path(sys.executable).parent
    jupyter = bin_dir / "jupyter"
    if not jupyter.exists():
        pytest.skip("jupyter is not installed beside this Python")
    env = dict(
        os.environ,
        PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        TRITONLAB_HOME=str(tmp_path / "home"),
        TRITONLAB_BACKEND="interpreter",
        IPYTHONDIR=str(tmp_path / "ipython"),
        JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
    )
    run = {"cwd": tmp_path, "env": env, "capture_output": True, "text": True, "timeout": 600}
    made = subprocess.run([str(bin_dir / "tritonlab"), "notebook", "5", "--out", "nb"], **run)
    assert made.returncode == 0, made.stderr
    lesson = next((tmp_path / "nb").glob("*.ipynb"))
    nb = json.loads(lesson.read_text())
    cell = next(
        c for c in nb["cells"] if c["cell_type"] == "code" and "".join(c["source"]).startswith("%%check")
    )
    solution = Path(__file__).resolve().parents[1] / "course" / "05-vector-add" / "exercises" / "vector-add"
    cell["source"] = "%%check vector-add\n" + (solution / "solution.py").read_text()
    (tmp_path / "nb" / "solved.ipynb").write_text(json.dumps(nb))
    names = sorted(p.name for p in (tmp_path / "nb").glob("*.ipynb"))
    done = subprocess.run(
        [str(jupyter), "nbconvert", "--to", "notebook", "--execute", *(f"nb/{n}" for n in names)], **run
    )
    assert done.returncode == 0, done.stderr[-3000:]
    import nbformat

    for name, shown in ((lesson.stem, "not passed yet"), ("solved", "All ")):
        executed = nbformat.read(str(tmp_path / "nb" / f"{name}.nbconvert.ipynb"), as_version=4)
        code = [c for c in executed.cells if c.cell_type == "code"]
        assert not [o for c in code for o in c.get("outputs", []) if o.get("output_type") == "error"], name
        check = next(c for c in code if c.source.startswith("%%check"))
        assert shown in _outputs(check) and "passed" in _outputs(check), (name, _outputs(check)[:500])


@pytest.mark.slow
def test_lesson_13_notebook_executes_in_a_real_kernel(
    nb_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lesson 13's notebook, built like every lesson's, runs top to bottom in a real kernel on the interpreter
    (as lesson 5's does above): its five examples print what they check, the three starters' verdicts are
    shown (they fail, as starters do) without a traceback, and the quiz is printed."""
    pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    import os

    from tritonlab.content.course import load_course
    from tritonlab.notebook.build import execute, kernelspec_for_this_python, write_lesson

    monkeypatch.setenv("JUPYTER_PATH", os.environ.get("JUPYTER_PATH", ""))  # restored after the test
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    kernel = kernelspec_for_this_python(tmp_path / "jupyter")
    course = load_course()
    lesson = course.lesson(13)
    nb = execute(write_lesson(course, lesson, tmp_path / "nb"), timeout=600, kernel_name=kernel)
    every = "\n".join(_outputs(c) for c in nb.cells)
    assert not [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"], every[
        -3000:
    ]
    for shown in (
        "every gradient matches float64; two calls gave the same bits",  # examples/attention_backward.py
        "autograd saved 917504 bytes",  # examples/attention_memory.py
        "forward and backward draw the same mask: True",  # examples/attention_dropout.py
        "running max equals torch.cummax: True",  # examples/scan_running_max.py
        "The backward benchmark needs a GPU",  # examples/bench_attention_backward.py, on the interpreter
    ):
        assert shown in every, shown
    for exercise in ("attention-backward", "dropout", "cumsum"):
        assert f'data-exercise="{exercise}"' in every, exercise
    assert every.count('data-passed="false"') == 3 and 'data-passed="true"' not in every
    assert "Traceback" not in every
    assert "softmax-gradient" in every  # the quiz printed its first question
