"""Host launchers shared from the replay's compile cache into a learner's (see `share_launchers`).

Triton 3.6, the GPU hosts' Triton, builds a small C module with the host's C compiler at a kernel's first launch,
one per argument signature (and its driver's `cuda_utils` once per cache), and keeps it in the compile cache in a
folder named by the hash of the C text it generated from the signature: nothing a learner writes goes into it.
Every fresh learner cache used to build them again (runs/caches.py says whose cache is whose).
"""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path

from tritonlab.runs import caches

# A host launcher's entry: the one shared object Triton built with the host's C compiler (Triton 3.6 builds one per
# argument signature at a kernel's first launch, and its driver's `cuda_utils` once per cache; its key is the hash
# of the C text Triton generated, never of anything a learner wrote)
LAUNCHER_FILE = re.compile(r"^(__triton_launcher|cuda_utils|hip_utils)(\.[A-Za-z0-9_-]{1,64}){0,4}\.so$")
LAUNCHER_BYTES = 4 << 20  # one launcher's file (about 20-40 kB); anything larger is not one
SHARE_ENTRIES, SHARE_BYTES = 256, 16 << 20  # at most this many launchers, and bytes, copied before one run
# replay folder -> entry -> ((folder inode, folder mtime), (mtime, file) of a launcher or None for any other
# entry); checks run in threads
_launcher_index: dict[str, dict] = {}
_launcher_lock = threading.Lock()


def launchers_in(path: Path) -> list[tuple[str, str]]:
    """The host launchers in the cache folder `path` (the replay's), newest first: (entry, file). Which entries
    are launchers is remembered per folder in this process, so a call reads only the entries that are new since
    the last (an entry still being written is looked at again next time)."""
    with _launcher_lock:
        return _launchers_in(path, _launcher_index.setdefault(str(path), {}))


def _launchers_in(path: Path, index: dict) -> list[tuple[str, str]]:
    # entry -> (its folder's inode and mtime, (mtime, file) of a launcher or None): a folder made again, or
    # changed since, is read again
    folders = {
        e.name: (e.inode(), e.stat(follow_symlinks=False).st_mtime_ns)
        for e in os.scandir(path)
        if caches.ENTRY.match(e.name) and e.is_dir(follow_symlinks=False)
    }
    for gone in [name for name, (seen, _) in index.items() if folders.get(name) != seen]:
        del index[gone]  # the cache was emptied, or the folder made again or changed
    for name in folders.keys() - index.keys():
        try:
            files = [e for e in os.scandir(path / name) if caches.ENTRY_FILE.match(e.name)]
            if not files:
                continue  # being written: not decided yet
            only = files[0]
            launcher = (
                len(files) == 1
                and LAUNCHER_FILE.match(only.name) is not None
                and only.is_file(follow_symlinks=False)
                and only.stat(follow_symlinks=False).st_size <= LAUNCHER_BYTES
            )
            index[name] = (
                folders[name],
                (only.stat(follow_symlinks=False).st_mtime, only.name) if launcher else None,
            )
        except OSError:
            continue
    found = [(name, entry[1], entry[0]) for name, (_, entry) in index.items() if entry is not None]
    return [(name, file) for name, file, _ in sorted(found, key=lambda item: -item[2])]


def share_launchers(source: Path, dest: Path, limit: int = SHARE_ENTRIES, budget: int = SHARE_BYTES) -> int:
    """Copy into `dest` (a learner's cache: theirs to write, so hostile) the host launchers Triton built in
    `source` (the replay's: only trusted runs write it) that `dest` lacks, newest first, at most `limit` of them
    and `budget` bytes; the number copied. A launcher is Triton's own C text for an argument signature, compiled
    by a trusted run: the learner's run would build the same file (the same key) with the host's C compiler
    (14 % of the check children's wall time under the lessons 2-8 load, H100-80GB-HBM3 run 2026-12-07 (4d5eeba),
    py-spy).
    Nothing goes the other way; an entry already in `dest` (whatever it holds), a link there, or a full
    cache stop that one entry."""
    try:
        found = launchers_in(source)
    except OSError:
        return 0
    if not found:
        return 0
    try:
        dest_fd = caches.open_entry(dest)
    except OSError:
        return 0
    copied = 0
    try:
        owner = os.fstat(dest_fd)
        present = set(os.listdir(dest_fd))
        for name, file in found:
            if copied >= limit or budget <= 0:
                break
            if name in present:
                continue
            try:
                data = caches.read_plain(source / name / file, min(budget, LAUNCHER_BYTES))
                os.mkdir(name, 0o755, dir_fd=dest_fd)
            except OSError:  # over the budget, or there already (made meanwhile)
                continue
            try:
                entry_fd = caches.open_entry(name, dest_fd)
                try:
                    caches.own(entry_fd, owner)
                    caches.write_new(entry_fd, file, data, owner)
                finally:
                    os.close(entry_fd)
            except OSError:  # the learner's cache full, or the folder replaced meanwhile: leave no empty one
                try:
                    os.rmdir(name, dir_fd=dest_fd)
                except OSError:
                    pass
                continue
            copied += 1
            budget -= len(data)
    finally:
        os.close(dest_fd)
    return copied
