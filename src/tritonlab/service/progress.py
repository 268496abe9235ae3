"""Hints and progress: the learner's next hint, the exercises passed, the lesson-by-lesson summary the
interfaces show. Mixed into `Service` (facade.py), whose `store`, `course` and `lang` it reads."""

from __future__ import annotations

from tritonlab.models import Exercise, HintLocked
from tritonlab.store.progress import Store


class Progress:
    """The learner's hints and progress, read from and written to the service's store."""

    def next_hint(self, exercise: Exercise) -> tuple[int, int, str] | HintLocked | None:
        """(number, total, text) of the next hint not yet shown, HintLocked while it waits for more failed
        checks, else None when all were shown."""
        return take_hint(self.store, exercise, self.lang)

    def hints_so_far(self, exercise: Exercise) -> list[str]:
        return list(exercise.hint_list(self.lang)[: self.store.hints_shown(exercise.id)])

    def current_exercise(self) -> Exercise | None:
        """The first exercise, in course order, that has not been passed."""
        passed = self.store.passed_exercises()
        for exercise in self.course.exercises():
            if exercise.id not in passed:
                return exercise
        return None

    def progress(self) -> dict:
        passed = self.store.passed_exercises()
        quizzes = self.store.best_quiz()
        attempts = self.store.attempts()
        lessons = []
        for lesson in self.course.lessons:
            quiz = quizzes.get(lesson.id)
            lessons.append(
                {
                    "id": lesson.id,
                    "number": lesson.number,
                    "title": self.title(lesson),
                    "exercises": [
                        {
                            "id": ex.id,
                            "passed": ex.id in passed,
                            "attempts": sum(1 for a in attempts if a["exercise"] == ex.id),
                        }
                        for ex in lesson.exercises
                    ],
                    "quiz": quiz,
                }
            )
        total = len(self.course.exercises())
        current = self.current_exercise()
        return {
            "exercises_passed": len(passed & {e.id for e in self.course.exercises()}),
            "exercises_total": total,
            "quizzes_passed": sum(1 for q in quizzes.values() if q["passed"]),
            "attempts": len(attempts),
            "current_exercise": current.id if current else None,
            "last_exercise": self.store.get_state("last_exercise"),
            "lessons": lessons,
        }


def take_hint(store: Store, exercise: Exercise, lang: str) -> tuple[int, int, str] | HintLocked | None:
    """The next hint of `exercise` in `lang`, recorded as shown; the one place hints are handed out (CLI, watch,
    web page, notebook). A hint with `hint_after_failures` opens once the learner's failed checks of the
    exercise reach that number, or once it is passed; until then a HintLocked says how far there is to go."""
    hints = exercise.hint_list(lang)
    shown = store.hints_shown(exercise.id)
    if shown >= len(hints):
        return None
    needed = exercise.hint_gate(shown)
    if needed:
        attempts = store.attempts(exercise.id)
        failed = sum(1 for a in attempts if not a["passed"])
        if failed < needed and not any(a["passed"] for a in attempts):
            return HintLocked(shown + 1, len(hints), needed, failed)
    store.record_hint(exercise.id, shown)
    return shown + 1, len(hints), hints[shown]
