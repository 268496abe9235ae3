"""The learner's launch, seen two ways, over JSON: Visualize (`POST .../viz`: a picture of which program
touched which element, drawn on the interpreter like `tritonlab viz`, with its description in words for the
alt text) and Inspect (`POST .../inspect`: what the compiler made of the kernel for a GPU target, like
`tritonlab inspect`). Both run in the sandbox and share VIZ_MAX_ACTIVE slots with the Profile tab (profile_api.py),
at most one of them per classroom learner (a second request while one is being made: 429), so no learner can take
them all; each run then waits in the service's run queue like every run (service/gate.py).
"""

from __future__ import annotations

import base64
import contextlib
import threading
from collections.abc import Iterator

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import JSONResponse
from pydantic import Field

from tritonlab.i18n import t
from tritonlab.web import lang as weblang
from tritonlab.web.api import RunBody, find_exercise, save_before_run, service_of

router = APIRouter(prefix="/api")


class VizBody(RunBody):
    case: str | None = Field(default=None, max_length=500)  # a case name from a verdict, or an index
    seed: int | None = Field(default=None, ge=0, le=2**63 - 1)  # the verdict's seed, to redraw that case


class InspectBody(RunBody):
    target: str = Field(default="cuda:90", max_length=32)


VIZ_MAX_ACTIVE = 4  # pictures, reports and profiles made at once (each also waits for the service's gate)
_viz_lock = threading.Lock()


class VizSlots:
    """The VIZ_MAX_ACTIVE slots of a server, and whose: an owner (a classroom learner, `run_owner`) holds at
    most one; requests without an owner (the single-user server) are limited by the total only."""

    def __init__(self, size: int = VIZ_MAX_ACTIVE) -> None:
        self.size = size
        self._lock = threading.Lock()
        self._active = 0
        self._owners: set = set()

    def take(self, owner: object) -> str:
        """ "" when a slot was taken; else why not: "busy" (all taken) or "yours" (this owner holds one)."""
        with self._lock:
            if owner is not None and owner in self._owners:
                return "yours"
            if self._active >= self.size:
                return "busy"
            self._active += 1
            if owner is not None:
                self._owners.add(owner)
            return ""

    def give(self, owner: object) -> None:
        with self._lock:
            self._active -= 1
            self._owners.discard(owner)


def _viz_slots(request: Request) -> VizSlots:
    with _viz_lock:
        slots = getattr(request.app.state, "viz_slots", None)
        if slots is None:
            slots = request.app.state.viz_slots = VizSlots()
        return slots


@contextlib.contextmanager
def viz_slot(request: Request, service: object, lang: str) -> Iterator[None]:
    """One of the server's picture slots for this request's learner, or 429 saying why not."""
    slots, owner = _viz_slots(request), getattr(service, "run_owner", None)
    refused = slots.take(owner)
    if refused == "yours":
        raise HTTPException(429, t("web.viz.yours", lang), headers={"Retry-After": "5"})
    if refused:
        raise HTTPException(429, t("web.viz.busy", lang, count=VIZ_MAX_ACTIVE))
    try:
        yield
    finally:
        slots.give(owner)


def _listed(values: list[int], limit: int = 4) -> str:
    shown = ", ".join(str(v) for v in values[:limit])
    return shown + (", …" if len(values) > limit else "")


def _out_of_bounds(access_log: dict) -> list[tuple[str, int, list[int], bool]]:
    """Per op of the drawn launch: (op, out-of-bounds lanes, distinct offsets, on a plain 1-D tensor)."""
    from tritonlab.viz import logview as lv

    launch = lv.main_launch(access_log)
    if launch is None:
        return []
    found: dict[str, tuple[int, set[int], bool]] = {}
    for program in launch["programs"]:
        for access in program["accesses"]:
            ln = lv.lanes(access)
            if not ln.oob.any():
                continue
            tensor = launch["tensors"][access["tensor"]] if access["tensor"] is not None else {}
            flat = len(tensor.get("shape", ())) <= 1 and list(tensor.get("strides") or [1]) == [1]
            count, offsets, plain = found.get(access["op"], (0, set(), True))
            found[access["op"]] = (
                count + int(ln.oob.sum()),
                offsets | set(ln.offsets[ln.oob].tolist()),
                plain and flat,
            )
    order = {"load": 0, "store": 1}
    return [
        (op, n, sorted(offs), plain)
        for op, (n, offs, plain) in sorted(found.items(), key=lambda kv: order.get(kv[0], 2))
    ]


def _error_text(err: dict) -> str:
    return f"{err.get('type')}: {err.get('message')}"


def describe_viz(log: dict, access_log: dict | None, exercise_id: str, lang: str) -> str:
    """The picture in words, for its alt text: "…: grid of 3 programs; 2 masked lanes; 1 out-of-bounds store
    at index 10"."""
    if log.get("import_error"):
        err = log["import_error"]
        return t("web.viz.alt_import_error", lang, id=exercise_id, error=_error_text(err))
    s = log.get("summary")
    if not s:
        why = (log.get("process_failure") or {}).get("message") or t("web.viz.nothing_recorded", lang)
        return t("web.viz.alt_nothing", lang, id=exercise_id, why=why)
    if not s.get("programs"):
        text = t("web.viz.alt_no_launch", lang, id=exercise_id, case=s.get("case"))
        if s.get("exception"):
            text += " " + t("web.viz.alt_raised", lang, error=_error_text(s["exception"]))
        return text
    if s.get("drawn") is False:  # e.g. attention's 4-D tensors: the picture only says why it is empty
        dims = "/".join(str(d) for d in s.get("dims", [])) or "?"
        return t(
            "web.viz.alt_not_drawn",
            lang,
            id=exercise_id,
            case=s.get("case"),
            kernel=s.get("kernel"),
            dims=dims,
        )
    grid = [g for g in s.get("grid", [s["programs"]]) if g > 1]
    if len(grid) > 1:
        parts = [t("web.viz.grid_nd", lang, count=s["programs"], shape="×".join(map(str, grid)))]
    else:
        key = "web.viz.grid_one" if s["programs"] == 1 else "web.viz.grid_other"
        parts = [t(key, lang, count=s["programs"])]
    masked = s.get("masked_lanes", 0)
    parts.append(
        t(
            "web.viz.masked_none"
            if masked == 0
            else "web.viz.masked_one"
            if masked == 1
            else "web.viz.masked_other",
            lang,
            count=masked,
        )
    )
    for op, count, offsets, plain in _out_of_bounds(access_log or {}):
        one = len(offsets) == 1
        place = t(
            ("web.viz.at_index" if one else "web.viz.at_indices")
            if plain
            else ("web.viz.at_offset" if one else "web.viz.at_offsets"),
            lang,
            where=_listed(offsets),
        )
        key = f"web.viz.oob_{op if op in ('load', 'store') else 'access'}_{'one' if count == 1 else 'other'}"
        parts.append(t(key, lang, count=count, place=place))
    return t(
        "web.viz.alt",
        lang,
        id=exercise_id,
        kernel=s.get("kernel", "?"),
        case=s.get("case"),
        details="; ".join(parts),
    )


def viz_response(data: bytes, log: dict, exercise_id: str, lang: str, note: str | None) -> dict:
    access_log = log.pop("access_log", None)  # the raw recording can be megabytes: never sent
    answer: dict = {
        "exercise": exercise_id,
        "image": "data:image/png;base64," + base64.b64encode(data).decode("ascii"),
        "filename": f"viz-{exercise_id}.png",
        "alt": describe_viz(log, access_log, exercise_id, lang),
        "summary": log.get("summary"),
        "cases_tried": log.get("cases_tried", []),
        "output": log.get("output", ""),
        "note": note,
        "problem": None,
    }
    for key in ("import_error", "process_failure"):
        if log.get(key):
            answer[key] = log[key]
    if log.get("import_error"):
        answer["problem"] = t("web.viz.import_error", lang, error=_error_text(log["import_error"]))
    elif log.get("process_failure"):
        message = log["process_failure"].get("message", "")
        answer["problem"] = t("web.viz.process_failure", lang, message=message)
    elif not log.get("summary"):
        answer["problem"] = t("web.viz.nothing_recorded", lang)
    elif not log["summary"].get("programs") or log["summary"].get("drawn") is False:
        # that case launched no kernel (a starter, an early raise, n = 0), or touched nothing a picture draws
        answer["problem"] = answer["alt"]
    return answer


@router.post("/exercises/{exercise_id}/viz", response_model=None)
def visualize(exercise_id: str, request: Request, body: VizBody | None = None) -> dict | JSONResponse:
    """Draw the learner's launch on the interpreter (the same path as `tritonlab viz`): a PNG as a data URL,
    its description and the summary. With `case` and `seed` (a verdict's), exactly that case of the check."""
    from tritonlab.viz.run import VizError, candidate_cases
    from tritonlab.viz.run import visualize as draw

    service = service_of(request)
    lang = weblang.request_lang(request)
    exercise = find_exercise(service, exercise_id, lang)
    conflict = save_before_run(service, exercise, body, lang)
    if conflict is not None:
        return conflict
    case = body.case if body is not None else None
    seed = body.seed if body is not None and body.seed is not None else 0
    note = None
    with viz_slot(request, service, lang):
        try:
            try:
                data, log = draw(service, exercise.id, case=case, seed=seed)
            except VizError as exc:
                try:
                    kernel_cases = candidate_cases(exercise.id, None, seed)
                except Exception:  # no contract at all: nothing to draw either
                    kernel_cases = []
                if not kernel_cases:
                    raise HTTPException(422, t("web.viz.no_kernel", lang, id=exercise.id)) from None
                if case is None:
                    raise HTTPException(422, str(exc)) from None
                # that case is not among the interpreter's cases (a check on a GPU has others): draw a small one
                note = t("web.viz.case_not_found", lang, case=case)
                data, log = draw(service, exercise.id, seed=seed)
        except HTTPException:
            raise
        except Exception as exc:  # the recorder or the drawing failed: say so in JSON, like every other error
            raise HTTPException(
                500, t("web.viz.failed", lang, error=f"{type(exc).__name__}: {exc}")
            ) from None
    return viz_response(data, log, exercise.id, lang, note)


@router.post("/exercises/{exercise_id}/inspect", response_model=None)
def inspect_kernel(
    exercise_id: str, request: Request, body: InspectBody | None = None
) -> dict | JSONResponse:
    """Compile the learner's kernel for a GPU target in a sandboxed child (the path of `tritonlab inspect`):
    the plain-text report (the page shows it escaped, in a <pre>) and the data: stages, registers, occupancy."""
    from tritonlab.cli.inspect import format_report
    from tritonlab.service import INSPECT_TARGETS

    service = service_of(request)
    lang = weblang.request_lang(request)
    exercise = find_exercise(service, exercise_id, lang)
    target = body.target if body is not None else "cuda:90"
    if target not in INSPECT_TARGETS:
        raise HTTPException(422, f"unknown target {target!r}; use one of {', '.join(INSPECT_TARGETS)}")
    conflict = save_before_run(service, exercise, body, lang)
    if conflict is not None:
        return conflict
    with viz_slot(request, service, lang):
        data = service.inspect(exercise, target=target)
    report = format_report(data)
    return {"target": target, "report": report, "data": cap_stages(data)}


MAX_STAGE_LINES = 4000  # per stage in the page; `tritonlab inspect --stage NAME` prints every line


def cap_stages(data: dict) -> dict:
    """The inspect result with each stage cut to MAX_STAGE_LINES lines (a kernel's LLIR or PTX can run to
    many thousands); `truncated[stage]` counts the lines left out."""
    kernels = []
    for kernel in data.get("kernels", []) if isinstance(data.get("kernels"), list) else []:
        if not isinstance(kernel, dict) or not isinstance(kernel.get("stages"), dict):
            kernels.append(kernel)
            continue
        stages, cut = {}, {}
        for stage, text in kernel["stages"].items():
            lines = str(text).splitlines()
            stages[stage] = "\n".join(lines[:MAX_STAGE_LINES])
            if len(lines) > MAX_STAGE_LINES:
                cut[stage] = len(lines) - MAX_STAGE_LINES
        kernels.append({**kernel, "stages": stages, "truncated": cut})
    return {**data, "kernels": kernels}
