"""Build the lesson notebooks and the `%%check` smoke notebook, execute each in a real IPython kernel.

    python3 scripts/run_notebooks.py [--lesson 5 ...] [--lang pt] [--out DIR] [--gpu] [--timeout S]

Without --gpu the run uses Triton's CPU interpreter (TRITON_INTERPRET=1, TRITONLAB_BACKEND=interpreter); with
--gpu the backend is chosen as a learner's would be (the GPU when one is visible) and `%bench` times the
course solution. Either way a throw-away TRITONLAB_HOME keeps your own progress untouched.

The kernel is this very interpreter: the script writes a kernelspec (`tritonlab-run`) whose argv is
`sys.executable -m ipykernel_launcher`, in a temporary Jupyter data folder put first on JUPYTER_PATH, and the
kernel inherits this process's environment with `<repo>/src` added to PYTHONPATH. So it works where no
kernelspec was ever installed and `python` is not on PATH, for example with Jupyter's packages installed by
`pip install --target DIR` and found through PYTHONPATH. IPYTHONDIR and JUPYTER_RUNTIME_DIR are temporary too.

The executed notebooks and `summary.json` (per notebook: seconds, errors, what each key cell showed; the
kernel's interpreter and backend; `ok`) are written to --out (default: a new temporary folder). Exit status 0
when every notebook ran clean and every expectation of the smoke notebook held, 1 otherwise, 2 when Jupyter's
packages are missing.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
NEEDED = ("nbclient", "nbformat", "ipykernel", "jupyter_client", "IPython")


def kernel_environment(scratch: Path) -> str:
    """The kernelspec on this interpreter (notebook.build.kernelspec_for_this_python, imported from the source
    tree: Jupyter's packages are not needed for it), fresh IPython and runtime folders, and `<repo>/src` on
    the PYTHONPATH the kernel inherits. Returns the kernel's name."""
    sys.path.insert(0, str(ROOT / "src"))
    from tritonlab.notebook.build import kernelspec_for_this_python

    for var, name in (("IPYTHONDIR", "ipython"), ("JUPYTER_RUNTIME_DIR", "runtime")):
        (scratch / name).mkdir(exist_ok=True)
        os.environ[var] = str(scratch / name)
    src = str(ROOT / "src")
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if src not in paths:
        paths.append(src)
    os.environ["PYTHONPATH"] = os.pathsep.join(paths)
    return kernelspec_for_this_python(scratch / "jupyter")


def missing_packages() -> list[str]:
    """Jupyter's packages this interpreter cannot import with this environment (as the kernel will)."""
    code = (
        "import importlib.util, sys; "
        f"print(' '.join(m for m in {NEEDED!r} if importlib.util.find_spec(m) is None))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    return out.stdout.split() if out.returncode == 0 else list(NEEDED)


def outputs_text(cell: Any) -> str:
    parts = []
    for out in cell.get("outputs", []):
        parts.append(str(out.get("text", "")))
        data = out.get("data", {})
        parts.append(str(data.get("text/html", "")) + str(data.get("text/plain", "")))
        if out.get("output_type") == "error":
            parts.append(f"{out.get('ename')}: {out.get('evalue')}")
    return "\n".join(parts)


def describe_cell(cell: Any) -> dict[str, Any]:
    """What a code cell showed, in the terms the summary's expectations use."""
    text = outputs_text(cell)
    errors = [
        f"{o.get('ename')}: {o.get('evalue')}"
        for o in cell.get("outputs", [])
        if o.get("output_type") == "error"
    ]
    return {
        "source": cell.source.splitlines()[0][:80] if cell.source else "",
        "errors": errors,
        "verdict": (
            "passed" if 'data-passed="true"' in text else "failed" if 'data-passed="false"' in text else None
        ),
        "bench_table": 'class="tritonlab-speed"' in text,
        "roofline_svg": 'class="tritonlab-roofline"' in text and "data:image/svg+xml;base64," in text,
        "bench_gpu_message": 'data-kind="warning"' in text and "%bench" in text and "GPU" in text,
        "tritonlab_error": 'data-kind="error"' in text,
        "image": any("image/png" in o.get("data", {}) for o in cell.get("outputs", [])),
        "traceback": "Traceback" in text,
        "excerpt": excerpt(text),
    }


def excerpt(text: str, limit: int = 400) -> str:
    """The start of what a cell showed, as plain text (markup and embedded pictures left out)."""
    text = re.sub(r"<[^>]*>", " ", re.sub(r"data:[^\"']+", "", text))
    return re.sub(r"\s+", " ", html.unescape(text)).strip()[:limit]


def lesson_expectations(cells: list[dict[str, Any]]) -> dict[str, bool]:
    """What every notebook must show: a verdict under each `%%check`, no error box from a magic."""
    checks = [c for c in cells if c["source"].startswith("%%check")]
    return {
        "every_check_shows_a_verdict": all(c["verdict"] for c in checks),
        "no_magic_reported_an_error": not any(c["tritonlab_error"] for c in cells),
    }


def smoke_expectations(cells: list[dict[str, Any]], kernel_env: dict[str, Any], gpu: bool) -> dict[str, bool]:
    """What the smoke notebook must show (its cells are built by notebook.build.smoke_notebook)."""

    def cell(prefix: str, nth: int = 0) -> dict[str, Any]:
        found = [c for c in cells if c["source"].startswith(prefix)]
        return found[nth] if len(found) > nth else {}

    bench = cell("%bench")
    expect = {
        "solution_passes": cell("%%check").get("verdict") == "passed",
        "starter_fails_without_traceback": cell("%%check", 1).get("verdict") == "failed"
        and not cell("%%check", 1).get("traceback"),
        "viz_picture": bool(cell("%viz").get("image")),
        "kernel_is_this_python": os.path.realpath(kernel_env.get("executable", ""))
        == os.path.realpath(sys.executable),
    }
    if gpu:
        expect["backend_gpu"] = kernel_env.get("backend") == "gpu"
        expect["bench_table_and_roofline"] = bool(bench.get("bench_table") and bench.get("roofline_svg"))
    else:
        expect["backend_interpreter"] = kernel_env.get("backend") == "interpreter"
        expect["bench_says_it_needs_a_gpu"] = bool(bench.get("bench_gpu_message"))
    return expect


ENV_LINE = re.compile(r"^tritonlab-env: (\{.*\})$", re.MULTILINE)


def main() -> int:
    scratch = Path(tempfile.mkdtemp(prefix="tritonlab-nb-run-"))
    try:
        return run(scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)  # the throw-away home, kernelspec and Jupyter folders


def run(scratch: Path) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lesson", action="append", help="only these lessons (repeatable); default: all")
    parser.add_argument("--lang", default="en")
    parser.add_argument("--out", type=Path, help="write the executed notebooks and summary.json here")
    parser.add_argument("--gpu", action="store_true", help="use the GPU (default: the CPU interpreter)")
    parser.add_argument("--timeout", type=int, default=900, help="seconds per cell")
    args = parser.parse_args()

    os.environ["TRITONLAB_HOME"] = str(scratch / "home")
    os.environ["TRITONLAB_LANG"] = args.lang
    if args.gpu:
        os.environ.pop("TRITON_INTERPRET", None)
        os.environ.pop("TRITONLAB_BACKEND", None)
    else:
        os.environ["TRITON_INTERPRET"] = "1"
        os.environ["TRITONLAB_BACKEND"] = "interpreter"
    kernel_name = kernel_environment(scratch)
    missing = missing_packages()
    if missing:
        print(
            f"error: {sys.executable} cannot import {', '.join(missing)} with PYTHONPATH="
            f"{os.environ['PYTHONPATH']}. Install them (pip install nbclient ipykernel nbformat, or from wheels: "
            "pip install --no-index --find-links WHEELS --target /tmp/nbsite nbclient ipykernel nbformat, "
            "then PYTHONPATH=/tmp/nbsite:...)",
            file=sys.stderr,
        )
        return 2
    import nbformat
    from nbclient.exceptions import CellExecutionError

    from tritonlab.content.course import load_course
    from tritonlab.notebook.build import execute, smoke_notebook, write_lesson

    course = load_course()
    out = args.out or Path(tempfile.mkdtemp(prefix="tritonlab-notebooks-"))
    out.mkdir(parents=True, exist_ok=True)
    lessons = [course.lesson(k) for k in args.lesson] if args.lesson else list(course.lessons)
    paths = [write_lesson(course, lesson, out, args.lang) for lesson in lessons]
    smoke = out / "check-smoke.ipynb"
    nbformat.write(smoke_notebook(course), str(smoke))
    paths.append(smoke)

    summary: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "python": sys.executable,
        "python_version": sys.version.split()[0],
        "pythonpath": os.environ["PYTHONPATH"],
        "kernel_argv": json.loads(
            (scratch / "jupyter" / "kernels" / kernel_name / "kernel.json").read_text()
        )["argv"],
        "mode": "gpu" if args.gpu else "interpreter",
        "lang": args.lang,
        "notebooks": [],
    }
    ok = True
    for path in paths:
        start = time.monotonic()
        error = ""
        try:
            execute(path, timeout=args.timeout, kernel_name=kernel_name)
        except CellExecutionError as exc:
            error = str(exc)[-3000:]
        except Exception as exc:  # noqa: BLE001 - a kernel that cannot start is a result to report
            error = f"{type(exc).__name__}: {exc}"[-3000:]
        seconds = round(time.monotonic() - start, 1)
        nb = nbformat.read(str(path), as_version=4)
        cells = [describe_cell(c) for c in nb.cells if c.cell_type == "code"]
        entry: dict[str, Any] = {
            "notebook": path.name,
            "seconds": seconds,
            "error": error,
            "cells_with_errors": sum(bool(c["errors"]) for c in cells),
            "cells": cells,
        }
        entry["expectations"] = lesson_expectations(cells)
        if path == smoke:
            found = ENV_LINE.search("\n".join(outputs_text(c) for c in nb.cells if c.cell_type == "code"))
            kernel_env = json.loads(found.group(1)) if found else {}
            entry["kernel"] = kernel_env
            entry["expectations"].update(smoke_expectations(cells, kernel_env, args.gpu))
        entry["ok"] = (
            not error and not entry["cells_with_errors"] and all(entry.get("expectations", {}).values())
        )
        ok = ok and entry["ok"]
        summary["notebooks"].append(entry)
        failed = [k for k, v in entry.get("expectations", {}).items() if not v]
        status = (
            "ok" if entry["ok"] else "FAILED" + (f" (expectations: {', '.join(failed)})" if failed else "")
        )
        print(f"{path.name:40s} {seconds:7.1f} s  {status}", flush=True)
        if error:
            print(error, flush=True)
    summary["ok"] = ok
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    print(
        f"{sum(n['ok'] for n in summary['notebooks'])}/{len(paths)} notebooks ok; executed copies and summary.json in {out}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
