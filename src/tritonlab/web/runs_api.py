"""Runs and checks over JSON and server-sent events: start a run of the learner's file or of a lesson's
example, start a check (the verdict first, then, for a passing GPU check, its speed line), stop a job, and
stream a job's events (resumable with Last-Event-ID). Jobs are web/jobs.py's: at most MAX_ACTIVE at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import JSONResponse, StreamingResponse

from tritonlab.i18n import t, translate_verdict
from tritonlab.models import Verdict
from tritonlab.service import Service, speed_line
from tritonlab.web import lang as weblang
from tritonlab.web.api import RunBody, find_exercise, jobs_of, save_before_run, service_of
from tritonlab.web.jobs import MAX_ACTIVE, Busy, Job

router = APIRouter(prefix="/api")
Work = Callable[[Job], None]


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
            # what the two timing runs used (their CPU seconds, faults, switches), for scripts/load_gpu.py
            used = {k: v for k, v in verdict.timings.items() if k.startswith("speed_")}
            job.emit(
                "speed",
                {
                    "speed_line": line,
                    "speed": verdict.speed,
                    "speed_reason": verdict.speed_reason,
                    "timings": used,
                },
            )

    return start_job(request, "check", exercise.id, work)


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
