"""JSON and SSE endpoints: the learner's code, runs and checks (streamed), hints, reset, solutions,
progress, and the picture of the learner's launch (Visualize).

Every endpoint calls the same Service the CLI uses. Errors are JSON objects {"error": "..."} with a 4xx status.
"""

from __future__ import annotations

import asyncio
import base64
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, Field

from tritonlab.i18n import t, translate_verdict
from tritonlab.models import Exercise, Verdict
from tritonlab.service import (
    MAX_SOURCE_BYTES,
    BackupRefused,
    ConflictError,
    Service,
    WorkspaceError,
    speed_line,
)
from tritonlab.web import lang as weblang
from tritonlab.web.jobs import MAX_ACTIVE, Busy, Job, Jobs
from tritonlab.web.markdown import highlight_code, render_inline

router = APIRouter(prefix="/api")
Work = Callable[[Job], None]
MAX_TEXT = MAX_SOURCE_BYTES * 2  # characters; the byte limit itself is enforced by the workspace


class SaveBody(BaseModel):
    text: str = Field(max_length=MAX_TEXT)
    base_version: str | None = Field(default=None, max_length=64)
    force: bool = False


class RunBody(BaseModel):
    text: str | None = Field(default=None, max_length=MAX_TEXT)
    base_version: str | None = Field(default=None, max_length=64)


class VizBody(BaseModel):
    text: str | None = Field(default=None, max_length=MAX_TEXT)
    base_version: str | None = Field(default=None, max_length=64)
    case: str | None = Field(default=None, max_length=500)  # a case name from a verdict, or an index
    seed: int | None = Field(default=None, ge=0, le=2**63 - 1)  # the verdict's seed, to redraw that case


class InspectBody(BaseModel):
    text: str | None = Field(default=None, max_length=MAX_TEXT)
    base_version: str | None = Field(default=None, max_length=64)
    target: str = Field(default="cuda:90", max_length=32)


class BackupBody(BaseModel):
    text: str = Field(max_length=MAX_TEXT)


def service_of(request: Request) -> Service:
    # In a classroom (web/classroom.py) the guard put the logged-in learner's own service here.
    return getattr(request.state, "service", None) or request.app.state.service


def jobs_of(request: Request) -> Jobs:
    return request.app.state.jobs


def find_exercise(service: Service, exercise_id: str, lang: str = "en") -> Exercise:
    try:
        return service.exercise(exercise_id)
    except KeyError:
        raise HTTPException(404, t("web.error.no_exercise", lang, id=exercise_id)) from None


def conflict_response(exc: ConflictError, lang: str = "en") -> JSONResponse:
    return JSONResponse(
        status_code=409,
        content={
            "error": t("web.error.conflict", lang),
            "conflict": True,
            "disk_text": exc.disk_text,
            "disk_version": exc.disk_version,
        },
    )


def save(service: Service, exercise: Exercise, text: str, base: str | None, force: bool = False) -> str:
    try:
        return service.save_code(exercise, text, base, force=force)
    except (ConflictError, BackupRefused):  # BackupRefused: web/app.py answers its status
        raise
    except WorkspaceError as exc:
        status = 413 if "larger than" in str(exc) else 400
        raise HTTPException(status, str(exc)) from None


# ---- the learner's code ---------------------------------------------------------------------------------


@router.get("/exercises/{exercise_id}/code")
def get_code(exercise_id: str, request: Request) -> dict:
    service = service_of(request)
    exercise = find_exercise(service, exercise_id, weblang.request_lang(request))
    text, version = service.read_code(exercise)
    return {"text": text, "version": version, "path": str(service.learner_file(exercise))}


@router.put("/exercises/{exercise_id}/code", response_model=None)
def put_code(exercise_id: str, body: SaveBody, request: Request) -> dict | JSONResponse:
    service = service_of(request)
    lang = weblang.request_lang(request)
    exercise = find_exercise(service, exercise_id, lang)
    try:
        version = save(service, exercise, body.text, body.base_version, body.force)
    except ConflictError as exc:
        return conflict_response(exc, lang)
    return {"version": version, "saved_at": time.time()}


@router.post("/exercises/{exercise_id}/backup")
def backup(exercise_id: str, body: BackupBody, request: Request) -> dict:
    """Keep a copy of the editor's text in .backups/ (used before the learner loads the disk version)."""
    service = service_of(request)
    exercise = find_exercise(service, exercise_id, weblang.request_lang(request))
    path = service.workspace.backup(exercise, body.text, "discarded")
    return {"backup": str(path)}


@router.post("/exercises/{exercise_id}/reset")
def reset(exercise_id: str, request: Request) -> dict:
    service = service_of(request)
    exercise = find_exercise(service, exercise_id, weblang.request_lang(request))
    path = service.reset(exercise)
    text, version = service.read_code(exercise)
    return {"text": text, "version": version, "backup": str(path) if path else None}


@router.post("/exercises/{exercise_id}/hint")
def hint(exercise_id: str, request: Request) -> dict:
    service = service_of(request)
    lang = weblang.request_lang(request)
    exercise = find_exercise(service, exercise_id, lang)
    found = weblang.next_hint(service, exercise, lang)
    total = len(exercise.hint_list(lang))
    if found is None:
        return {"number": None, "total": total, "text": None, "done": True}
    number, total, text = found
    return {
        "number": number,
        "total": total,
        "text": text,
        "html": render_inline(text),
        "done": number >= total,
    }


@router.get("/exercises/{exercise_id}/solution")
def solution(exercise_id: str, request: Request) -> dict:
    service = service_of(request)
    lang = weblang.request_lang(request)
    exercise = find_exercise(service, exercise_id, lang)
    if exercise.id not in service.store.passed_exercises():
        raise HTTPException(403, t("web.error.solution_locked", lang))
    text = exercise.solution.read_text(encoding="utf-8")
    return {"text": text, "html": highlight_code(text, "python")}


@router.get("/progress")
def progress(request: Request) -> dict:
    return weblang.progress(service_of(request), weblang.request_lang(request))


@router.get("/status")
def status(request: Request) -> dict:
    service = service_of(request)
    return {
        "backend": service.backend,
        "reason": service.choice.reason,
        "waiting": service.gate().waiting,
        "active_jobs": jobs_of(request).active,
        "lang": weblang.request_lang(request),
    }


# ---- runs and checks ------------------------------------------------------------------------------------


def start_job(request: Request, kind: str, label: str, work: Work) -> dict:
    try:
        job = jobs_of(request).start(kind, label, work)
    except Busy:
        raise HTTPException(429, weblang.tr(request, "web.error.busy", count=MAX_ACTIVE)) from None
    return {"job": job.id, "events": f"/api/jobs/{job.id}/events", "stop": f"/api/jobs/{job.id}/stop"}


def run_work(service: Service, file: Path, label: str, text: str | None = None) -> Work:
    def work(job: Job) -> None:
        job.emit("begin", {"kind": "run", "backend": service.backend, "command": f"python {label}"})
        result, error = service.run_file(
            file, on_output=job.on_output, on_start=job.on_start, on_wait=job.on_wait, text=text
        )
        job.emit(
            "exit",
            {
                "exit_code": result.exit_code,
                "signal": result.signal,
                "timed_out": result.timed_out,
                "stopped": result.stopped or job.stop_requested,
                "seconds": round(result.seconds, 3),
                "truncated": result.output_truncated,
                "error": error,
            },
        )

    return work


def save_before_run(
    service: Service, exercise: Exercise, body: RunBody | InspectBody | None, lang: str = "en"
) -> JSONResponse | None:
    if body is not None and body.text is not None:
        try:
            save(service, exercise, body.text, body.base_version)
        except ConflictError as exc:
            return conflict_response(exc, lang)
    return None


@router.post("/exercises/{exercise_id}/run", response_model=None)
def run(exercise_id: str, request: Request, body: RunBody | None = None) -> dict | JSONResponse:
    service = service_of(request)
    lang = weblang.request_lang(request)
    exercise = find_exercise(service, exercise_id, lang)
    conflict = save_before_run(service, exercise, body, lang)
    if conflict is not None:
        return conflict
    file = service.learner_file(exercise)
    text = body.text if body is not None else None  # run exactly the text sent, never a later save
    return start_job(request, "run", exercise.id, run_work(service, file, file.name, text))


@router.post("/exercises/{exercise_id}/check", response_model=None)
def check(exercise_id: str, request: Request, body: RunBody | None = None) -> dict | JSONResponse:
    service = service_of(request)
    lang = weblang.request_lang(request)
    exercise = find_exercise(service, exercise_id, lang)
    conflict = save_before_run(service, exercise, body, lang)
    if conflict is not None:
        return conflict
    # Grade exactly the text this request sent (saved above); without a text, the file as it is now.
    text = body.text if body is not None and body.text is not None else service.read_code(exercise)[0]

    def verdict_event(verdict: Verdict, job: Job, speed_pending: bool = False) -> dict:
        data = translate_verdict(verdict.to_json(), lang)  # messages and causes in the page's language
        data["stopped"] = job.stop_requested
        data["speed_line"] = "" if speed_pending else speed_line(verdict.speed)  # one line (GPU only)
        data["speed_pending"] = speed_pending  # a `speed` event follows with it
        data["solution_available"] = verdict.passed or exercise.id in service.store.passed_exercises()
        return data

    def work(job: Job) -> None:
        job.emit(
            "begin",
            {"kind": "check", "backend": service.backend, "command": f"tritonlab check {exercise.id}"},
        )
        timed = []  # a passing GPU check is timed after its verdict was shown (Service.check's on_verdict)

        def judged(verdict: Verdict) -> None:
            timed.append(service.backend == "gpu" and verdict.passed)
            job.emit("verdict", verdict_event(verdict, job, speed_pending=timed[0]))

        verdict = service.check(
            exercise,
            on_output=job.on_output,
            on_start=job.on_start,
            on_wait=job.on_wait,
            text=text,
            on_verdict=judged,
        )
        if not timed:  # ended without judging (a lost worker): its verdict now
            job.emit("verdict", verdict_event(verdict, job))
        elif timed[0]:
            line = speed_line(verdict.speed)  # the results panel adds this one line
            job.emit(
                "speed", {"speed_line": line, "speed": verdict.speed, "speed_reason": verdict.speed_reason}
            )

    return start_job(request, "check", exercise.id, work)


# ---- the picture of the learner's launch -----------------------------------------------------------------

VIZ_MAX_ACTIVE = 4  # pictures being drawn at once (each also waits for the service's gate)
_viz_lock = threading.Lock()


def _viz_slots(request: Request) -> threading.BoundedSemaphore:
    with _viz_lock:
        slots = getattr(request.app.state, "viz_slots", None)
        if slots is None:
            slots = request.app.state.viz_slots = threading.BoundedSemaphore(VIZ_MAX_ACTIVE)
        return slots


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
    elif not log["summary"].get(
        "programs"
    ):  # that case launched no kernel (a starter, an early raise, n = 0)
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
    slots = _viz_slots(request)
    if not slots.acquire(blocking=False):
        raise HTTPException(429, t("web.viz.busy", lang, count=VIZ_MAX_ACTIVE))
    note = None
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
        raise HTTPException(500, t("web.viz.failed", lang, error=f"{type(exc).__name__}: {exc}")) from None
    finally:
        slots.release()
    return viz_response(data, log, exercise.id, lang, note)


@router.post("/exercises/{exercise_id}/inspect", response_model=None)
def inspect_kernel(
    exercise_id: str, request: Request, body: InspectBody | None = None
) -> dict | JSONResponse:
    """Compile the learner's kernel for a GPU target in a sandboxed child (the path of `tritonlab inspect`):
    the plain-text report (the page shows it escaped, in a <pre>) and the data: stages, registers, occupancy."""
    from tritonlab.cli.viz import format_report
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
    slots = _viz_slots(request)
    if not slots.acquire(blocking=False):
        raise HTTPException(429, t("web.viz.busy", lang, count=VIZ_MAX_ACTIVE))
    try:
        data = service.inspect(exercise, target=target)
    finally:
        slots.release()
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


@router.post("/lessons/{lesson_key}/examples/{index}/run")
def run_example(lesson_key: str, index: int, request: Request) -> dict:
    service = service_of(request)
    lang = weblang.request_lang(request)
    try:
        lesson = service.lesson(lesson_key)
    except KeyError:
        raise HTTPException(404, t("web.error.no_lesson", lang, key=lesson_key)) from None
    if not 0 <= index < len(lesson.examples):
        raise HTTPException(404, t("web.error.no_example", lang, id=lesson.id, index=index))
    file = lesson.examples[index].file
    return start_job(request, "run", f"{lesson.id}/{file.name}", run_work(service, file, file.name))


@router.post("/jobs/{job_id}/stop")
def stop(job_id: str, request: Request) -> dict:
    job = jobs_of(request).get(job_id)
    if job is None:
        raise HTTPException(404, weblang.tr(request, "web.error.no_run"))
    return {"stopping": job.stop()}


@router.get("/jobs/{job_id}/events")
async def events(job_id: str, request: Request) -> StreamingResponse:
    job = jobs_of(request).get(job_id)
    if job is None:
        raise HTTPException(404, weblang.tr(request, "web.error.no_run"))
    last = request.headers.get("last-event-id", "")
    start = int(last) + 1 if last.isdigit() else 0
    return StreamingResponse(
        stream(job, start),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


async def stream(job: Job, index: int) -> AsyncIterator[str]:
    """The job's events from `index` on. Sleeps until the job has news (Job.add_waker), never polls: with a
    class's hundreds of checks queued, polling streams alone kept the server's event loop busy."""
    yield "retry: 1000\n\n"
    loop, news = asyncio.get_running_loop(), asyncio.Event()
    job.add_waker(loop, news)
    quiet = 0.0
    try:
        while True:
            news.clear()  # before reading: news that lands after this read sets it again
            batch, done = job.since(index)
            for name, data in batch:
                yield f"id: {index}\nevent: {name}\ndata: {data}\n\n"
                index += 1
            if done:
                return
            if batch:
                quiet = 0.0
            elif quiet > 10.0:
                yield ": still running\n\n"
                quiet = 0.0
            started = loop.time()
            try:
                await asyncio.wait_for(news.wait(), timeout=1.0)
            except TimeoutError:
                pass
            quiet += loop.time() - started
    finally:
        job.remove_waker(loop, news)
