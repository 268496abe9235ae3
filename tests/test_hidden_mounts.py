"""As root every run folder is its own tmpfs, mounted on the runs folder's shared bind (runs/runfolder.py). A
tmpfs mounted below that bind, before it was made, is hidden by it: nothing can unmount it by its path, and
whatever it holds stays in memory until the last tritonlab process exits. The sandbox probe mounted its folder
so when the server's first worker started beside it and made the bind meanwhile (seen: one `probe-*` tmpfs left
hidden while the server ran); the test makes that order certain."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

WORK = r"""
import json, os, sys
from tritonlab import config
from tritonlab.runs import hardening, runfolder, sandbox
from tritonlab.runs.limits import default_limits
real_cap = runfolder.cap
def cap_then_share(path, *args, **kwargs):
    capped = real_cap(path, *args, **kwargs)
    if path.name.startswith("probe-"):  # a worker starting beside the probe shares the folder now (workers.py)
        runfolder.share(config.runs_dir())
    return capped
runfolder.cap = cap_then_share
report = hardening.probe("interpreter")
if not report["hardened"]:
    print(json.dumps({"skip": report["reason"]})); sys.exit(0)
z = sandbox.Zygote("interpreter", hardened=True, pool=1)
z.wait_ready()
for i in range(2):
    run_dir = z.new_run_dir()[0]
    (run_dir / "job.json").write_text(json.dumps({"mode": "run", "file": str(run_dir / "p.py")}))
    (run_dir / "p.py").write_text("print('ran')")
    z.start(run_dir, default_limits("interpreter", 30)).wait()
    runfolder.remove_run_dir(run_dir)
inside = str(config.runs_dir()) + os.sep
mounted = sorted(m for m in runfolder.mount_points() if m.startswith(inside))
print(json.dumps({"mounted": mounted, "hidden": [m for m in mounted if not os.path.ismount(m)]}))
z.close()
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="run folders are mounts only as root")
def test_no_run_folder_mount_is_hidden_under_the_runs_folder_bind(tmp_path: Path) -> None:
    from conftest import detach_mounts_under

    env = dict(os.environ, TRITONLAB_HOME=str(tmp_path / "home"))
    env.pop("TRITONLAB_SANDBOX", None)
    try:
        done = subprocess.run(
            [sys.executable, "-c", WORK], capture_output=True, text=True, env=env, timeout=300
        )
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
        report = json.loads(done.stdout.strip().splitlines()[-1])
        if "skip" in report:
            pytest.skip(f"needs the hardened layer: {report['skip']}")
        assert report["mounted"], "as root the runs folder is a bind and the warm child's folder a tmpfs"
        assert not report["hidden"], report
        assert not [m for m in report["mounted"] if "/probe-" in m], report
    finally:
        detach_mounts_under(tmp_path)
