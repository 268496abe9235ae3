"""Draw the pictures of lessons 3, 4, 7 and 9 from the reference solutions into docs/viz/ and the lessons.

    python scripts/make_lesson_viz.py [--out docs/viz] [--svg] [--no-lessons]

Every picture is a recording of a reference solution (course/*/exercises/*/solution.py) run on the
interpreter in the sandbox, exactly as `tritonlab viz` records a learner's file; the off-by-one picture runs a
copy of the pid-map reference with its mask changed from `<` to `<=`. The roofline is drawn from the measured
H200 results of the benchmark run in docs/gpu-runs/ (`bench_report.recorded_run`). Lesson authors reference the files by name (see docs/viz/README.md).

The pictures that lessons show are also copied into those lessons' own figures/ folders under the names in
LESSON_COPIES (course/03-grids-and-pointers/figures/viz-pid-map.png, ...), where `lesson.{en,pt,es}.md`
reference them; a copy larger than LESSON_MAX_BYTES is re-encoded with a 256-colour palette (then fewer
colours) until it fits, so the course stays small. `--no-lessons` leaves the course untouched.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from tritonlab.content.course import load_course  # noqa: E402
from tritonlab.grading.contracts import DEVICE, Case, Tensor  # noqa: E402
from tritonlab.runs import sandbox  # noqa: E402
from tritonlab.viz import pictures, roofline  # noqa: E402
from tritonlab.viz.run import candidate_cases, record  # noqa: E402

# docs/viz picture -> its copy in a lesson (relative to course/)
LESSON_COPIES = {
    "l03-pid-map-n10-block4": "03-grids-and-pointers/figures/viz-pid-map.png",
    "l04-masked-lanes-n13-block4": "04-masks-and-constexpr/figures/viz-masked-lanes.png",
    "l04-off-by-one-mask": "04-masks-and-constexpr/figures/viz-off-by-one.png",
    "l07-copy-2d-transposed-input": "07-2d-layout/figures/viz-copy-2d.png",
    "l07-transpose": "07-2d-layout/figures/viz-transpose.png",
    "l07-add-bias": "07-2d-layout/figures/viz-add-bias.png",
    "l09-matmul-grouped-order": "09-matmul-fusion/figures/viz-grouped-order.png",
}
LESSON_MAX_BYTES = 150_000


def copy_small(source: Path, target: Path, limit: int = LESSON_MAX_BYTES) -> Path:
    """Copy a PNG; if it is larger than `limit`, re-encode it with a palette (256, 128, 64 colours) to fit."""
    from PIL import Image

    target.parent.mkdir(parents=True, exist_ok=True)
    data = source.read_bytes()
    if len(data) <= limit:
        target.write_bytes(data)
        return target
    with Image.open(source) as image:
        rgb = image.convert("RGB")
    for colours in (256, 128, 64):
        palette = rgb.quantize(colors=colours, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
        palette.save(target, format="PNG", optimize=True)
        if target.stat().st_size <= limit:
            break
    else:
        print(f"warning: {target} is {target.stat().st_size} bytes, over {limit}", file=sys.stderr)
    return target


def matrix(rng: np.random.Generator, rows: int, cols: int) -> Tensor:
    return Tensor(rng.integers(-4, 5, (rows, cols)).astype(np.float64), "float32")


def plan(rng: np.random.Generator) -> list[tuple[str, str, list[Case], str | None]]:
    """(picture name, exercise, cases, mask mutation) — the mutation turns `offsets < n` into `<=`."""
    return [
        ("l03-pid-map-n10-block4", "pid-map", [Case("n=10, block_size=4", (10, 4, DEVICE))], None),
        ("l04-masked-lanes-n13-block4", "pid-map", [Case("n=13, block_size=4", (13, 4, DEVICE))], None),
        (
            "l04-off-by-one-mask",
            "pid-map",
            [Case("n=10, block_size=4, mask offsets <= n", (10, 4, DEVICE))],
            "offsets <= n",
        ),
        ("l04-vector-copy-n1025", "vector-copy", candidate_cases("vector-copy", "n=1025"), None),
        (
            "l07-copy-2d-transposed-input",
            "copy-2d",
            candidate_cases("copy-2d", "45×70 float32 transposed"),
            None,
        ),
        ("l07-transpose", "transpose", candidate_cases("transpose", "65×63"), None),
        ("l07-add-bias", "add-bias", candidate_cases("add-bias", "65×63"), None),
        (
            "l09-matmul-grouped-order",
            "matmul",
            [Case("M=640 N=640 K=16 float32", (matrix(rng, 640, 16), matrix(rng, 16, 640)), extra={})],
            None,
        ),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "viz")
    parser.add_argument("--svg", action="store_true", help="also write an SVG next to every PNG")
    parser.add_argument(
        "--no-lessons",
        dest="lessons",
        action="store_false",
        help="do not copy the pictures into the lessons' figures/ folders",
    )
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    course = load_course(ROOT / "course")
    zygote = sandbox.Zygote("interpreter")
    written = []
    try:
        zygote.wait_ready()
        for name, exercise_id, cases, mutation in plan(np.random.default_rng(9)):
            exercise = course.exercise(exercise_id)
            with tempfile.TemporaryDirectory() as tmp:
                file = exercise.solution
                if mutation:
                    source = file.read_text()
                    if "offsets < n" not in source:
                        print(f"skip {name}: the reference no longer says `offsets < n`", file=sys.stderr)
                        continue
                    file = Path(tmp) / "solution_off_by_one.py"
                    file.write_text(source.replace("offsets < n", mutation))
                result = record(exercise, file, zygote, cases, timeout=300, max_lanes=4_000_000)
            entry = (result.get("cases") or [None])[0]
            if not entry or entry.get("status") != "returned":
                print(f"FAILED {name}: {json.dumps(result)[:800]}", file=sys.stderr)
                return 1
            for suffix in ("png", "svg") if args.svg else ("png",):
                written.append(pictures.draw(entry, exercise_id, args.out / f"{name}.{suffix}"))
            if args.lessons and name in LESSON_COPIES:
                written.append(copy_small(args.out / f"{name}.png", ROOT / "course" / LESSON_COPIES[name]))
    finally:
        zygote.close()
    sys.path.insert(0, str(ROOT / "scripts"))
    from bench_report import recorded_run  # the benchmark run docs/benchmarks.md is rendered from

    results = json.loads((recorded_run("h200") / "h200-results.json").read_text())
    written.append(roofline.from_bench(results, args.out / "l09-roofline-h200.png", kernel="matmul"))
    for path in written:
        print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
