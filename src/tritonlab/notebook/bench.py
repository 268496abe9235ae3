"""`%bench EXERCISE`: time the learner's kernel on a GPU, next to the course's reference kernel and torch.

The one module of `notebook/` that imports `perf/` (listed in docs/architecture.md): it reuses
`perf.bench_learner.run`, which runs the learner's file in the sandbox through `Service.run_job`, like
`tritonlab bench EXERCISE`. On a machine without a GPU it times nothing and says why.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tritonlab.notebook.session import Session


def gpu_problem() -> str:
    """ "" when real GPU timing is possible here, else the reason in words."""
    from tritonlab.perf import bench

    ok, why = bench.gpu_status()
    if ok:
        return ""
    return (
        f"%bench needs an NVIDIA GPU: {why}. Timings on the CPU interpreter measure NumPy and say nothing "
        "about GPU speed. In Colab: Runtime → Change runtime type → a GPU, then run the notebook again. "
        "%%check and %viz work without a GPU."
    )


def bench_exercise(session: Session, exercise_id: str, file: Path | None) -> dict:
    """Rows of perf.bench_learner for the exercise (or {"problems": [why]} when it has no benchmark)."""
    from tritonlab.perf import bench_learner
    from tritonlab.perf.peaks import get_peaks

    if exercise_id not in bench_learner.EXERCISE_KERNELS:
        known = ", ".join(sorted(bench_learner.EXERCISE_KERNELS))
        return {"rows": [], "problems": [f"{exercise_id} has no benchmark; these do: {known}"]}
    exercise = session.exercise(exercise_id)
    service = session.service
    if service.backend != "gpu":
        return {"rows": [], "problems": ["the notebook's backend is not the GPU (TRITONLAB_BACKEND)"]}
    target = file or session.last_file.get(exercise.id) or service.learner_file(exercise)
    return bench_learner.run(service, exercise, target, get_peaks())
