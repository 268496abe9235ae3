"""`%bench` in a notebook (notebook/speed.py, notebook/bench.py, the magic): the speed table and the roofline.

- from a learner bench really run through the sandbox (perf.bench_learner.run on the interpreter backend:
  wall-clock timings at tiny sizes, the same code path and row shape as on a GPU, no measured ceilings);
- from the rows `bench.measure_case` recorded on the H200 (docs/gpu-runs/2026-11-29-h200-39df766/h200-results.json), turned into a
  learner's rows by `bench_learner.learner_row`, with that run's measured ceilings: table + SVG roofline;
- from hostile rows (the child writes them): dropped, escaped, never an exception;
- the magic in a real IPython shell without a GPU: a message (translated), never an exception;
- on a GPU (marked `gpu`): `%%check` the solution, then `%bench` shows the table and the roofline.
"""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import pytest
from conftest import has_cuda

ROOT = Path(__file__).resolve().parent.parent
RECORDED = ROOT / "docs" / "gpu-runs" / "2026-11-29-h200-39df766" / "h200-results.json"
SOLUTION = ROOT / "course" / "05-vector-add" / "exercises" / "vector-add" / "solution.py"


def _svg(html: str) -> str:
    found = re.search(r'<img alt="[^"]*" src="data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)"', html)
    assert found, "no embedded SVG roofline"
    return base64.b64decode(found.group(1)).decode("utf-8")


def _shell():  # noqa: ANN202
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "tritonlab")
    return shell


def _shown(shell, magic: str, line: str) -> str:  # noqa: ANN001
    """What a line magic displayed (HTML and text), through IPython's own output capture."""
    from IPython.utils.capture import capture_output

    with capture_output() as captured:
        result = shell.run_line_magic(magic, line)
    assert result is None
    return "\n".join(o.data.get("text/html", "") + o.data.get("text/plain", "") for o in captured.outputs)


@pytest.fixture
def fresh_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # noqa: ANN201
    from tritonlab.notebook import session

    monkeypatch.setenv("TRITONLAB_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("TRITONLAB_WORKSPACE", raising=False)
    session._SESSION = None
    yield session
    if session._SESSION is not None:
        session._SESSION.close()
    session._SESSION = None


def test_table_from_a_real_sandboxed_bench_run(home: Path) -> None:
    from tritonlab.notebook.speed import bench_html
    from tritonlab.perf import bench_learner
    from tritonlab.service import Service

    service = Service(backend="interpreter", lang="en")
    try:
        data = bench_learner.run(service, service.exercise("vector-add"), SOLUTION, None)
    finally:
        service.close()
    assert data["rows"] and not data.get("problems"), data
    html = bench_html("vector-add", data, None, "en")
    table = html.split('<table class="tritonlab-speed">', 1)[1].split("</table>", 1)[0]
    for impl in ("your kernel", "course reference", "torch"):
        assert f"<td>{impl}</td>" in table
    ms = [float(m) for m in re.findall(r"<td>(\d+\.\d{4})</td>", table)]
    assert len(ms) >= 3 * len(data["rows"]) and all(m > 0 for m in ms)  # every implementation timed, per row
    assert "<img" not in html and "not measured yet" in html  # no measured ceilings: no roofline, says why


def test_table_and_roofline_from_the_recorded_h200_rows() -> None:
    from tritonlab.notebook.speed import bench_html
    from tritonlab.perf.bench_learner import LEARNER, learner_row

    recorded = json.loads(RECORDED.read_text())
    peaks = {**recorded["peaks"], "gpu": recorded["env"]["gpu"]}
    rows = [learner_row(dict(r), peaks) for r in recorded["rows"] if r["kernel"] == "softmax"]
    assert rows and all(LEARNER in r["impls"] for r in rows)
    html = bench_html("softmax", {"rows": rows, "problems": []}, peaks, "en")
    first = rows[0]
    assert f"<td>{first['impls'][LEARNER]['ms']:.4f}</td>" in html  # the recorded time, in the table
    speedup = next(iter(first["speedup"].values()))
    assert f"<td>{speedup:.2f}</td>" in html
    # one "% of the roof" line per row: softmax is memory-bound, so GB/s against the measured copy bandwidth
    for row in rows:
        gbps = row["bytes"] / (row["impls"][LEARNER]["ms"] / 1e3) / 1e9
        assert f"= {100 * gbps / peaks['copy_gbps']:.0f}% of the roof" in html
    svg = _svg(html)
    assert svg.lstrip().startswith("<?xml") and "</svg>" in svg
    assert f"Roofline of {recorded['env']['gpu']}" in svg and "your kernel" in svg  # title and legend
    assert "<script" not in svg


def test_hostile_rows_are_dropped_or_escaped_never_raised() -> None:
    from tritonlab.notebook.speed import bench_html

    good = {
        "kernel": "$\\frac{<script>",
        "dtype": "fp32",
        "shape": [1024, "x"],
        "bytes": 12288,
        "flops": 1024,
        "bound": "memory",
        "impls": {"your kernel": {"ms": 0.01}, "<b>peer</b>": {"error": "<img src=x onerror=1>"}},
        "speedup": {"your kernel": "fast"},
    }
    data = {
        "rows": [good, "row", {"impls": []}, {"impls": {"your kernel": {"ms": float("nan")}}}, None, 7],
        "problems": ["<script>alert(1)</script>"],
        "import_error": {"type": "<i>", "message": "m"},
    }
    peaks = {"copy_gbps": 1000.0, "matmul_bf16_tflops": 100.0, "gpu": "$x$ <GPU>"}
    html = bench_html("vector-add", data, peaks, "en")
    assert "<script>" not in html and "<img src=x" not in html and "<b>peer" not in html and "<i>" not in html
    assert "&lt;script&gt;alert(1)" in html and "5 malformed row(s)" in html
    assert "<td>your kernel</td>" in html and "error: &lt;img src=x" in html
    svg = _svg(html)
    assert "Roofline of ?x? ?GPU?" in svg and "$x$" not in svg  # no mathtext from outside text
    for junk in (None, [], {"rows": "x"}, {"rows": [{}] * 500}, {"problems": "not a list"}):
        assert "Nothing was timed." in bench_html("vector-add", junk, peaks, "en")
    no_roof = bench_html("vector-add", {"rows": [good]}, {"copy_gbps": "fast"}, "en")
    assert "<img" not in no_roof and "<td>your kernel</td>" in no_roof


@pytest.mark.skipif(has_cuda(), reason="the no-GPU path")
def test_bench_magic_without_a_gpu_says_so_in_the_learners_language(
    fresh_session, monkeypatch: pytest.MonkeyPatch
) -> None:
    shell = _shell()
    monkeypatch.setenv("TRITONLAB_LANG", "pt")
    shown = _shown(shell, "bench", "vector-add")
    assert 'data-kind="warning"' in shown and "%bench precisa de uma GPU NVIDIA" in shown
    assert "so kernels run" not in shown and "no CUDA GPU" not in shown  # the reason is translated too
    monkeypatch.setenv("TRITONLAB_LANG", "en")
    assert "needs an NVIDIA GPU" in _shown(shell, "bench", "vector-add")
    usage = _shown(shell, "bench", "")
    assert 'data-kind="error"' in usage and "usage: %bench EXERCISE" in usage
    assert 'data-kind="error"' in _shown(shell, "bench", "vector-add --nope")


@pytest.mark.gpu
def test_bench_magic_on_a_gpu_shows_table_and_roofline(fresh_session) -> None:
    shell = _shell()
    from IPython.utils.capture import capture_output

    with capture_output() as captured:
        shell.run_cell_magic("check", "vector-add", SOLUTION.read_text())
    assert 'data-passed="true"' in captured.outputs[-1].data["text/html"]
    shown = _shown(shell, "bench", "vector-add")
    assert '<table class="tritonlab-speed">' in shown and "<td>your kernel</td>" in shown, shown[:2000]
    assert "% of the roof" in shown and "</svg>" in _svg(shown)
    unknown = _shown(shell, "bench", "vector-copy")  # an exercise without a benchmark: says which have one
    assert "has no benchmark" in unknown and "vector-add" in unknown
