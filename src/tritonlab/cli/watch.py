"""`tritonlab watch`: re-check the current exercise whenever its file is saved (rustlings-style).

Keys (single key presses on a terminal, or lines on a pipe): h hint, n next exercise, l list, r re-check,
q quit. After a pass it moves on to the next exercise that is not passed yet.
"""

from __future__ import annotations

import os
import select
import sys
import time
from contextlib import contextmanager
from typing import Any

from rich.markup import escape

from tritonlab.i18n import t
from tritonlab.models import HintLocked
from tritonlab.service import Service

POLL_SECONDS = 0.25  # the key letters (h n l r q) are the same in every language


@contextmanager
def keyboard() -> Any:
    """Yield a function returning pending key presses ('' when none). Works on a tty and on a pipe."""
    stream = sys.stdin
    fd = stream.fileno() if stream and not stream.closed else None
    old = None
    if fd is not None and os.isatty(fd):
        import termios
        import tty

        old = termios.tcgetattr(fd)
        tty.setcbreak(fd)
    closed = fd is None

    def read() -> str:
        nonlocal closed
        if closed:
            return ""
        ready, _, _ = select.select([fd], [], [], 0)
        if not ready:
            return ""
        data = os.read(fd, 64)
        if not data:
            closed = True  # stdin ended: keep watching files, stop reading keys
        return data.decode("utf-8", "ignore")

    try:
        yield read
    finally:
        if old is not None:
            import termios

            termios.tcsetattr(fd, termios.TCSADRAIN, old)


def watch_loop(service: Service, out: Any, max_seconds: float | None = None) -> int:
    from tritonlab.cli.common import print_verdict

    lang = service.lang
    exercises = service.course.exercises()
    current = service.current_exercise()
    if current is None:
        out.print(t("watch.all_passed", lang))
        return 0
    index = exercises.index(current)
    service.warm_up()
    started = time.monotonic()

    def announce() -> tuple[Any, float]:
        ex = exercises[index]
        path = service.learner_file(ex)
        out.rule(t("watch.rule", lang, id=ex.id, lesson=ex.lesson_id))
        out.print(t("watch.edit", lang, path=path) + "\n" + t("watch.keys", lang))
        return ex, path.stat().st_mtime

    def run_check(ex: Any) -> bool:
        out.print(t("watch.checking", lang, id=ex.id, backend=service.backend))
        verdict = service.check(ex)
        print_verdict(verdict, ex.id, lang)
        return verdict.passed

    exercise, mtime = announce()
    passed = run_check(exercise)
    with keyboard() as keys:
        while True:
            if max_seconds is not None and time.monotonic() - started > max_seconds:
                return 0
            if passed:
                nxt = service.current_exercise()
                if nxt is None:
                    out.print(t("watch.last", lang))
                    return 0
                index = exercises.index(nxt)
                out.print(t("watch.moving_on", lang, id=nxt.id))
                exercise, mtime = announce()
                passed = run_check(exercise)
                continue
            for key in keys().strip().lower():
                if key == "q":
                    out.print(t("watch.bye", lang))
                    return 0
                if key == "h":
                    hint = service.next_hint(exercise)
                    if isinstance(hint, HintLocked):
                        text = t("watch.hint_locked", lang, number=hint.number, total=hint.total,
                                 needed=hint.needed, failed=hint.failed)  # fmt: skip
                    elif hint:
                        text = t("watch.hint", lang, number=hint[0], total=hint[1], text=hint[2])
                    else:
                        text = t("watch.no_more_hints", lang)
                    out.print(f"[yellow]{escape(text)}[/]")
                elif key == "n":
                    index = (index + 1) % len(exercises)
                    exercise, mtime = announce()
                    passed = run_check(exercise)
                elif key == "l":
                    done = service.store.passed_exercises()
                    for ex in exercises:
                        mark = "✔" if ex.id in done else ("▶" if ex is exercise else "·")
                        out.print(f" {mark} {ex.id}")
                elif key == "r":
                    passed = run_check(exercise)
            try:
                now = service.learner_file(exercise).stat().st_mtime
            except FileNotFoundError:
                now = mtime
            if now != mtime:
                mtime = now
                time.sleep(0.05)  # let the editor finish writing
                passed = run_check(exercise)
            time.sleep(POLL_SECONDS)
