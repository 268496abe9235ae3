"""Per-run resource units (issue 17): each run in its own cgroup, so all its processes share ONE budget
(memory including shared memory and tmpfs pages, pids, a CPU weight below the server's), with each controller
used only after a probe saw it stop something. The parent places each run (sandbox.Zygote._place): the
zygote, an unprivileged user inside bubblewrap, cannot.

Modules:
- `hierarchy.py`: which cgroup hierarchy (v1 or v2) holds each controller, what the host delegated, the shared
  `tritonlab-runs` parents runs nest under (made once, released), TRITONLAB_RUN_CGROUPS.
- `rungroup.py`: one run's cgroup (`RunGroup`: made, the held child placed, limits hit read, removed) and how
  the parent finds a held child's host pid (`host_pid`, `placement_works`).
- `proof.py`: the probes that prove each limit (`probe`, `proven`) and what doctor reports (`report`).
- `sweep.py`: run cgroups named after their installation and maker (`run_name`); those of a server killed
  with SIGKILL are removed when the next process of the installation makes its first one (`sweep`).

May import: `tritonlab.config` (the installation's key, sweep.py); otherwise the standard library only.
"""
