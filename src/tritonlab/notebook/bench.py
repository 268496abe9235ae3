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


def gpu_problem(lang: str | None = None) -> str:
    """ "" when real GPU timing is possible here, else the reason in words."""
    from tritonlab.i18n import t, translate_known
    from tritonlab.perf import bench

    ok, why = bench.gpu_status()
    return (
        ""
        if ok
        else t("notebook.bench.needs_gpu", lang, why=translate_known("notebook.gpu_reason", why, lang))
    )


def bench_exercise(session: Session, exercise_id: str, file: Path | None) -> tuple[dict, dict | None]:
    """(rows of perf.bench_learner for the exercise, this GPU's measured ceilings); the rows are
    {"problems": [why]} when the exercise has no benchmark or the notebook is not on the GPU backend."""
    from tritonlab.i18n import t
    from tritonlab.perf import bench_learner

    lang = session.language
    if exercise_id not in bench_learner.EXERCISE_KERNELS:
        known = ", ".join(sorted(bench_learner.EXERCISE_KERNELS))
        return {
            "rows": [],
            "problems": [t("notebook.bench.no_benchmark", lang, exercise=exercise_id, known=known)],
        }, None
    exercise = session.exercise(exercise_id)
    service = session.service
    if service.backend != "gpu":
        return {"rows": [], "problems": [t("notebook.bench.not_gpu_backend", lang)]}, None
    from tritonlab.perf.peaks import get_peaks

    # The roof is measured here, in the notebook's own process, with torch only (no Triton compile): the
    # notebook's Triton cache is left alone, since the learner's own cells compile into it too.
    peaks = get_peaks()
    target = file or session.last_file.get(exercise.id) or service.learner_file(exercise)
    return bench_learner.run(service, exercise, target, peaks), peaks
