"""In a classroom, one learner's sandboxed run cannot read another learner's files (docs/classroom.md, "What is
isolated"): with the hardened sandbox, learner B's check tries to open and list learner A's stored-code folder,
A's run directory while A's run is alive, the classroom database and the server's own workspace — and gets
nothing. A positive control in the same file (B reads its own run directory) proves the probe really ran.
Skipped, with the reason, where the hardened sandbox is not available."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_web_api import make_course

from tritonlab.classroom.room import Classroom
from tritonlab.runs import hardening
from tritonlab.service import Service
from tritonlab.web import create_app

ROOT = Path(__file__).resolve().parent.parent
GOOD = (ROOT / "tests" / "fixtures" / "learners" / "good.py").read_text()
MARKER = "ANNA-PRIVATE-8812"

# Learner B's file: at import time (inside B's check, in the sandbox) try every path in PATHS, print one line
# per path, then define a working kernel so that the check itself runs normally.
PROBE = """
import json, os
PATHS = json.loads({paths!r})
for what, path in PATHS:
    try:
        if os.path.isdir(path):
            found = "LIST " + ",".join(sorted(os.listdir(path)))
        else:
            with open(path, "rb") as f:
                found = "READ " + f.read(4096).decode("utf-8", "replace")
    except OSError as exc:
        found = "DENIED " + type(exc).__name__
    print("PROBE", what, found.replace("\\n", " ")[:300], flush=True)
print("PROBE own-run-dir", "LIST " + ",".join(sorted(os.listdir("."))), flush=True)
"""


@pytest.fixture
def classroom(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict]:
    monkeypatch.setenv("TRITONLAB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TRITONLAB_BACKEND", "interpreter")
    hardened, why = hardening.decide("interpreter")
    if not hardened:
        pytest.skip(f"needs the hardened sandbox (layer 2): {why}")
    service = Service(course_dir=make_course(tmp_path), workspace_dir=tmp_path / "ws", lang="en")
    service.init_workspace()  # the server user's own workspace: runs of a class must not see it either
    (tmp_path / "ws" / "02-copy" / "vector-copy.py").write_text(f"# {MARKER} in the server's workspace\n")
    room = Classroom(f"sqlite:///{tmp_path / 'home' / 'classroom.db'}", adopt=Path("/nonexistent"))
    room.init("Isolation")
    users = {name: room.add(name)[0] for name in ("anna", "ben")}
    create_app(service, "unused-token-0123456789", classroom=room)  # what `serve --classroom` builds
    try:
        yield {"service": service, "room": room, "users": users, "ws": tmp_path / "ws"}
    finally:
        service.close()
        room.close()


def test_a_learners_check_cannot_read_another_learners_files(classroom: dict) -> None:
    service, room, users = classroom["service"], classroom["room"], classroom["users"]
    assert not service.sandbox_reads_workspace  # the classroom turned the shared workspace off
    anna = room.learner_service(service, users["anna"])
    ben = room.learner_service(service, users["ben"])
    exercise = service.exercise("vector-copy")

    # anna: her code (with the marker), checked once (so it is written to her folder), and a run kept alive
    # that writes the marker into its own run directory
    text = f"# {MARKER}\n" + GOOD
    anna.save_code(exercise, text, anna.read_code(exercise)[1])
    assert anna.check(exercise, speed=False).passed
    anna_file = anna.learner_file(exercise)
    assert MARKER in anna_file.read_text()
    started: list = []
    runner = threading.Thread(
        target=anna.run_file,
        args=(anna_file,),
        kwargs={
            "on_start": started.append,
            "timeout": 120,
            "text": f"open('secret.txt', 'w').write('{MARKER} in a live run')\nimport time\ntime.sleep(90)\n",
        },
        daemon=True,
    )
    runner.start()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (started and (started[0].run_dir / "secret.txt").exists()):
        time.sleep(0.2)
    assert started and (started[0].run_dir / "secret.txt").exists(), "anna's run did not start"
    anna_run = started[0].run_dir

    try:
        targets = [
            ("anna-file", str(anna_file)),
            ("anna-folder", str(anna_file.parent)),
            ("anna-tag", str(room.run_folder(users["anna"]))),
            ("classroom-folder", str(room.run_folder(users["anna"]).parent)),
            ("anna-run-secret", str(anna_run / "secret.txt")),
            ("anna-run-dir", str(anna_run)),
            ("database", str(Path(os.environ["TRITONLAB_HOME"]) / "classroom.db")),
            ("server-workspace", str(classroom["ws"] / "02-copy" / "vector-copy.py")),
        ]
        probe = PROBE.format(paths=json.dumps(targets)) + GOOD
        ben.save_code(exercise, probe, ben.read_code(exercise)[1])
        out: list[str] = []
        verdict = ben.check(exercise, on_output=out.append, speed=False)
    finally:
        started[0].stop()
        runner.join(timeout=30)

    printed = "".join(out)
    lines = {
        ln.split(" ", 2)[1]: ln.split(" ", 2)[2] for ln in printed.splitlines() if ln.startswith("PROBE ")
    }
    assert lines.get("own-run-dir", "").startswith("LIST "), printed  # the probe ran and could print
    assert "job.json" in lines["own-run-dir"], printed
    for what, _ in targets:
        found = lines.get(what, "")
        # a path that does not exist in B's view, or an empty covering folder: nothing of anna's
        assert found.startswith("DENIED ") or found == "LIST ", (what, found)
    assert MARKER not in printed and MARKER not in json.dumps(verdict.to_json())
    assert verdict.passed  # the probe did not break B's own check
    assert MARKER in anna_file.read_text()  # anna's files were there all along
