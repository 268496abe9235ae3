"""The learner's files: never overwritten, conflicts detected, backups kept, links never followed."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import FIXTURE_COURSE

from tritonlab.content.course import load_course
from tritonlab.store.workspace import MARKER, ConflictError, Workspace, WorkspaceError, locate, version_of


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    w = Workspace(tmp_path / "ws", load_course(FIXTURE_COURSE))
    w.init()
    return w


def test_init_creates_starters_and_marker(ws: Workspace) -> None:
    ex = ws.course.exercise("vector-copy")
    assert (ws.root / MARKER).is_file()
    assert ws.path_for(ex).read_text() == ex.starter.read_text()
    assert locate(ws.root / "01-only") == ws.root


def test_save_detects_changes_on_disk(ws: Workspace) -> None:
    ex = ws.course.exercise("vector-copy")
    text, version = ws.read(ex)
    v2 = ws.save(ex, text + "# edit 1\n", version)
    ws.path_for(ex).write_text("# edited in another editor\n")
    with pytest.raises(ConflictError) as info:
        ws.save(ex, text + "# edit 2\n", v2)
    assert info.value.disk_text == "# edited in another editor\n"
    assert ws.path_for(ex).read_text() == "# edited in another editor\n"
    ws.save(ex, text + "# edit 2\n", v2, force=True)
    backups = list((ws.root / ".backups").iterdir())
    assert [b.read_text() for b in backups] == ["# edited in another editor\n"]
    assert ws.read(ex) == (text + "# edit 2\n", version_of(text + "# edit 2\n"))


def test_never_writes_through_a_symlink(ws: Workspace, tmp_path: Path) -> None:
    ex = ws.course.exercise("vector-copy")
    target = tmp_path / "outside.txt"
    target.write_text("outside")
    path = ws.path_for(ex)
    path.unlink()
    path.symlink_to(target)
    with pytest.raises((WorkspaceError, OSError)):
        ws.save(ex, "x = 1\n", None)
    assert target.read_text() == "outside"


def test_oversized_code_is_refused(ws: Workspace) -> None:
    ex = ws.course.exercise("vector-copy")
    with pytest.raises(WorkspaceError, match="nothing was saved"):
        ws.save(ex, "#" * (600 * 1024), None)


def test_a_file_saved_meanwhile_is_never_replaced_by_the_starter(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ensure()'s cheap existence check can be stale (another request saved in between): the starter must
    only be written after checking again under the lock."""
    ex = ws.course.exercise("vector-copy")
    path = ws.path_for(ex)
    ws.save(ex, "# mine\n", None)
    real_exists = Path.exists
    stale = {"left": 1}

    def exists_as_seen_earlier(self: Path) -> bool:
        if self == path and stale["left"]:
            stale["left"] -= 1
            return False  # what a check that ran before the save would have seen
        return real_exists(self)

    monkeypatch.setattr(Path, "exists", exists_as_seen_earlier)
    ws.ensure(ex)
    assert path.read_text() == "# mine\n"
