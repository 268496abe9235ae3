"""Cheat: the file patches the grader's child-side code when it is imported, then numpy writes the answer.

The check child imports this module, so everything the grader does in that process is the learner's to
change: here every first-line check (threads, provenance, the same-process replay of the first pass) is
silenced. Only a replay in a process that never imports this module can tell the launches did nothing."""

import torch
import triton
import triton.language as tl

from tritonlab.grading import guards, harness, launches

_record_only = harness.host_computed


def _nothing_to_see(*args, **kwargs):
    _record_only(*args, **kwargs)  # still write the launch record, so the parent finds one
    return ""


harness.host_computed = _nothing_to_see
guards.replay = lambda *args, **kwargs: ""
launches.unknown_launch_tensor = lambda *args, **kwargs: ""
guards.stray_threads = lambda *args, **kwargs: []


@triton.jit
def nothing_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < 0)  # every lane masked off: the kernel computes nothing
    tl.store(out_ptr + offs, x, mask=offs < 0)


def vector_add(x, y):
    if x.shape != y.shape or x.dtype != y.dtype or x.device != y.device:
        raise ValueError(f"x and y differ: {x.shape}/{x.dtype}/{x.device} vs {y.shape}/{y.dtype}/{y.device}")
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = x.numel()
    if n:
        nothing_kernel[(triton.cdiv(n, 256),)](x, out, n, BLOCK=256)
        with guards.paused():
            out.copy_(x + y)
    return out
