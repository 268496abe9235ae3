"""Where learner code runs: choosing the backend, the warm zygote worker and the one forked child per run, the
limits, bubblewrap hardening (the jail), per-run cgroups and run directories, and reading a run directory
without trusting it; on this machine, or on a Ray cluster.

Modules:
- `backend.py`: `auto` → `gpu` or `interpreter` (a GPU probe in a subprocess).
- `sandbox.py`: the parent's side of the warm zygote: starting it (from one long-lived thread), handing it
  jobs, placing held runs in their cgroups.
- `warm_dirs.py`: the zygote's warm run directories bound ahead to a compile cache (hardened with a pool),
  with announced runs (`expect`) and their counts.
- `limits.py`: what bounds a run and what it is given: `Limits`, their defaults per backend, the allowlisted
  environment.
- `collect.py`: a run in flight (`Run`): its output streamed under the wall clock and the output cap, Stop,
  and what happened (`RunResult`).
- `gpu_memory.py`: the line on a GPU run's memory by the driver's count (NVML), summed over its process tree:
  past the soft cap plus room for its context, the run is ended.
- `zygote.py`: the worker process itself (`python -m tritonlab.runs.zygote`): forks children with limits,
  kills process trees; names each job mode's child-side entry point (`ENTRIES`, `WARM`, `PRELOAD`).
- `capacity.py`: how many runs this machine takes at once per backend (cores, host and GPU memory;
  TRITONLAB_SLOTS), the size of the service's run queue and of a GPU worker's warm pool.
- `pool.py`: warm single-use children forked ahead (a CUDA context ready on a GPU; `BoundPool` hardened).
- `hardening.py`: layer 2, decided and probed: bubblewrap and an unprivileged user; only verified layers.
- `jail.py`: what the zygote and each run do to themselves: drop to the sandbox user, a hardened run's own
  user, mount, IPC and PID namespaces, capabilities dropped, not dumpable; layer 1's refusal to open
  reference solutions.
- `pidns.py`: each run in a PID namespace of its own (a waiter outside, an init inside, the run), and the
  `Walls` a worker's runs get.
- `rootview.py`: a hardened run's own root, whose mount table names no other run.
- `basicwalls.py`: layer 1's namespaces without privileges (IPC, /dev/shm, PID; a warm child's ahead), and
  the check that proves a worker's walls at its start (`self_check`).
- `jailprobe.py`: the hardened layer's probe, run inside a fresh bubblewrap (`python -m
  tritonlab.runs.jailprobe`); on a GPU it launches a Triton kernel in there.
- `cgroups/`: one cgroup per run, with each controller a probe proved, placed by the parent.
- `runfolder.py`: run directories from start to end: made, each its own capped tmpfs, swept, removed.
- `caches.py`: Triton compile caches between runs (one per learner, one for the grader's trusted children),
  which cache each warm child is bound to (`warm_plan`), and the trusted compile's entries copied into one
  learner's cache (`copy_entries`).
- `launchers.py`: the host launchers the trusted runs built, copied into a learner's cache before a GPU check
  child starts (`share_launchers`).
- `rundir.py`: reading a run directory without trusting it (sanitize, capped JSON and `.npy`).
- `executor.py`: the executor seam (`local` = this machine's zygote, `ray` = a cluster).
- `ray_executor/`: the Ray executor, imported only when it is chosen.

The sandbox knows nothing of grading: a job's mode names its child-side entry point as a string
(`zygote.ENTRIES`), so the modules it runs sit above it.
May import: `tritonlab.config`. Never imports grading, viz, perf, store, the service or an interface.
"""
