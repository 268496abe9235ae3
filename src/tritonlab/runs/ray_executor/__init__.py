"""Runs on a Ray cluster (`--executor ray`): one worker actor per GPU, or per `tritonlab_interpreter` unit, each
with a warm local zygote and the same sandbox as a local run, taking several runs at once (docs/scale.md).

Modules:
- `actor.py`: the worker actor on a cluster node (`Worker`): its self-check, its zygote, the runs it is given,
  live output and Stop while a run is busy.
- `driver.py`: the driver's side in the server or the CLI: joining the cluster (`connect`) and the pool of
  usable workers (`RayPool`), which looks like a Zygote to the grader.
- `remote.py`: one job on a worker, driven from here (`RemoteRun`; a whole check: `RemoteCheck`): shipped, its output streamed, tried once
  more on another worker when its node is lost, landed.
- `slots.py`: which waiting run gets which worker's slot (`grant`): arrival order, the least loaded worker first,
  a run that times the GPU on a worker alone (no ray import).
- `versions.py`: the course and code versions a worker must share with its driver (hashes of the course's
  exercise files and of the package), reported at its self-check; a worker that differs is refused.
- `transfer.py`: what crosses the wire, data only both ways, and how each end checks it (no ray import).

Imported only when the ray executor is chosen (`Service.remote`), and this `__init__` imports only `config`, so
the CLI's start-up never imports ray. May import: `tritonlab.config` and the rest of `tritonlab.runs`.
"""

from tritonlab import config

# A Ray worker process first meets tritonlab here, when it unpickles the actor, before `actor.py` loads numpy:
# its CPU thread pools sleep when idle, as the CLI's and every run's do (config.thread_wait_env).
config.quiet_thread_pools()
