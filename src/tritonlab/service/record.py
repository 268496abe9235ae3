"""Step 7 of a check, `record`: the attempt saved — before the verdict is shown (step 8), so nothing is shown
that is not saved: a timing run that fails, or a server killed while it waits, loses no attempt. A passing GPU
check's speed, timed after it was shown (step 9), is then added to that saved attempt, in place.
tests/test_service_record_first.py (both stores) and tests/test_service_kill9.py (real killed servers) hold it."""

from __future__ import annotations

from tritonlab.models import Verdict
from tritonlab.store.progress import Store


def save(store: Store, verdict: Verdict) -> int:
    """Save the attempt and the learner's last exercise; the attempt's id, for `add_speed`."""
    attempt = store.record_attempt(verdict.to_json())
    store.set_state("last_exercise", verdict.exercise)
    return attempt


def add_speed(store: Store, attempt: int, verdict: Verdict) -> None:
    """The saved attempt gets the verdict's speed (and timings) once it was timed."""
    store.add_speed(attempt, verdict.to_json())
