"""The Profile tab's route: POST /api/exercises/{id}/profile runs `tritonlab profile` on the saved file.

Same rules as the inspect route (web/api.py): the Guard middleware checks the token or the classroom session,
Host and Origin (CSRF) before the route runs; the request body is size-capped and validated by pydantic; the
text, when sent, is saved first (a stale `base_version` gives 409); at most VIZ_MAX_ACTIVE pictures, reports
and profiles are made at once, one per classroom learner (429 beyond: viz_api.viz_slot), and each waits for the service's run gate like every run. The
profile itself comes from Service.profile: on a GPU a sandboxed child under Proton, validated by the parent
(profiling/report.py); without a GPU the static inspect view.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from tritonlab.service import profile_report
from tritonlab.web import lang as weblang
from tritonlab.web.api import RunBody, find_exercise, save_before_run, service_of
from tritonlab.web.viz_api import viz_slot

router = APIRouter(prefix="/api")


@router.post("/exercises/{exercise_id}/profile", response_model=None)
def profile_kernel(exercise_id: str, request: Request, body: RunBody | None = None) -> dict | JSONResponse:
    """The plain-text report (the page shows it escaped, in a <pre>) and its data."""
    service = service_of(request)
    lang = weblang.request_lang(request)
    exercise = find_exercise(service, exercise_id, lang)
    conflict = save_before_run(service, exercise, body, lang)
    if conflict is not None:
        return conflict
    with viz_slot(request, service, lang):
        data = service.profile(exercise)
    return {"gpu": bool(data.get("gpu")), "report": profile_report(data), "data": data}
