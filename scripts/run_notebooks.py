"""Build the lesson notebooks and the `%%check` smoke notebook, execute each in a real IPython kernel.

    .venv/bin/python scripts/run_notebooks.py [--lesson 5 ...] [--lang pt] [--out DIR] [--gpu]

Without --gpu the run uses Triton's CPU interpreter (TRITON_INTERPRET=1, TRITONLAB_BACKEND=interpreter) and a
throw-away TRITONLAB_HOME, so your own progress is untouched. Prints each notebook's time; exits 1 when any
notebook raised in a cell (the first error is printed).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lesson", action="append", help="only these lessons (repeatable); default: all")
    parser.add_argument("--lang", default="en")
    parser.add_argument("--out", type=Path, help="keep the executed notebooks here")
    parser.add_argument("--gpu", action="store_true", help="use the GPU (default: the CPU interpreter)")
    parser.add_argument("--timeout", type=int, default=900, help="seconds per cell")
    args = parser.parse_args()

    home = tempfile.mkdtemp(prefix="tritonlab-nb-home-")
    os.environ["TRITONLAB_HOME"] = home
    if not args.gpu:
        os.environ["TRITON_INTERPRET"] = "1"
        os.environ["TRITONLAB_BACKEND"] = "interpreter"
    sys.path.insert(0, str(ROOT / "src"))
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

    failed = 0
    for path in paths:
        start = time.monotonic()
        try:
            execute(path, timeout=args.timeout)
            status = "ok"
        except CellExecutionError as exc:
            failed += 1
            status = "FAILED\n" + str(exc)[-3000:]
        print(f"{path.name:40s} {time.monotonic() - start:7.1f} s  {status}", flush=True)
    print(f"{len(paths) - failed}/{len(paths)} notebooks ran clean; executed copies in {out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
