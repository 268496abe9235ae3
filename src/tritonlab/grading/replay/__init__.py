"""CHILD side of the fresh replay: redo a check's recorded launches without ever importing the learner's module.

The parent starts this job (mode `replay`, forked from the zygote like every run; grading/check/replay.py is the
parent's side) after the check child has ended. It reads the learner's file as TEXT, takes the `@triton.jit`
function definitions out of its syntax tree (with the module-level constants they use: literals and
`tl.constexpr(literal)` only) and rebuilds each with `triton.jit` from that source alone, in a namespace that
holds triton, triton.language, math, those constants and the other extracted kernels. No other top-level code
of the learner's file runs here, so nothing the learner wrote can patch this package. Every launched kernel
must also lower to Triton IR for a GPU (`GPUTarget("cuda", 90, 32)`): Python or numpy hidden in a kernel body
runs on the interpreter, not on a GPU.

It then rebuilds the case's inputs from the same `.npy` files, re-creates every allocation as the record says
(poison for `empty*`, the constant for `zeros`/`ones`/`full`), replays the events in order (launches with the
recorded grids, layout copies, fills) and writes the returned tensors' bits. The parent compares them with
what the check child returned. The launch record comes from a process that ran learner code: it is hostile
data, and everything in it is checked before use (types, sizes, bounds, nesting).

Writes `replay.json`: {"cases": {"INDEX": {"outputs": [file, ...]} | {"refused": why}}, "variants": [...],
"compiled_here": n}: the distinct launches as data (variants.py, for the next check's precompile) and how many
kernels this child compiled itself. The speed of a passing
GPU check (perf/speed.py) replays and times the same way.

Modules:
- `child.py`: the job's entry (`run_replay`): every launch lowered first, then each case replayed.
- `source.py`: the learner's kernels rebuilt from the file's text alone, after checking what they name.
- `lower.py`: each launched kernel lowered to Triton IR for a GPU target (the interpreter hides Python).
- `replayer.py`: `Replayer`: a case's buffers re-created from the record, its events replayed, all checked.
- `trust.py`: `HostValues`: which scalar arguments, fill values and constant allocations the host may choose.
- `variants.py`: a launch's specialization as data (`describe`), checked (`validate`), and back
  (`arguments`): what the replay child reports and the next check's precompile compiles.
- `precompile.py`: the precompile job's entry (mode `precompile`, beside the next check child): the kernels
  rebuilt from the text, the stored variants compiled into the replay's cache, in parallel where Triton can.
- `predict.py`: a learner's first check of an exercise: the variants the reference solution launches on
  the check's own cases, for the precompile to compile from the learner's text.

No module here imports torch or triton at its top: they are imported inside the functions, in the child.
"""

from __future__ import annotations


class Refused(Exception):
    """The launches cannot stand on their own: the message is the learner's `host-computed` reason."""
