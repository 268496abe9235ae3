"""Cheat: the file patches the grader's child-side code so that every case reports itself as `skipped`,
the status the grader gives bf16 cases that this Triton's interpreter cannot run. The parent used to turn
each such case into a note and pass the check (issue 33): only the parent decides which cases may be skipped,
and a case reported skipped otherwise is a failure."""

import torch
import triton
import triton.language as tl

from tritonlab.grading import harness

_record = harness.record_outputs


def _skipped(entry, *args, **kwargs):
    _record(entry, *args, **kwargs)
    entry["status"] = "skipped"
    entry["reason"] = "nothing to see"


harness.record_outputs = _skipped


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < 0), mask=offs < 0)  # does nothing


def vector_add(x, y):
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    add_kernel[(1,)](x, y, out, x.numel(), BLOCK=16)
    return out
