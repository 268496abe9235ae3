"""Right: one kernel for both passes (a constexpr picks forward or backward), the threshold as `r > p`."""

import torch
import triton
import triton.language as tl


@triton.jit
def dropout_kernel(
    a_ptr,
    b_ptr,
    out_ptr,
    n,
    n_cols,
    sar,
    sac,
    sbr,
    sbc,
    p,
    seed,
    offset,
    FORWARD: tl.constexpr,
    BLOCK: tl.constexpr,
):
    idx = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ok = idx < n
    r = idx // n_cols
    c = idx % n_cols
    a = tl.load(a_ptr + r * sar + c * sac, mask=ok, other=0.0).to(tl.float32)
    keep = tl.rand(seed, offset + idx) > p
    scaled = tl.where(keep, a * (1.0 / (1.0 - p)), 0.0)
    if FORWARD:
        scaled += tl.load(b_ptr + r * sbr + c * sbc, mask=ok, other=0.0).to(tl.float32)
    tl.store(out_ptr + idx, scaled.to(out_ptr.dtype.element_ty), mask=ok)


def _launch(a, b, p, seed, offset, forward):
    if not (0.0 <= p < 1.0):
        raise ValueError(f"dropout probability must be in [0, 1), got {p}")
    M, N = a.shape
    out = torch.empty((M, N), device=a.device, dtype=a.dtype)
    n = M * N
    if n:
        dropout_kernel[(triton.cdiv(n, 2048),)](
            a, b, out, n, N, *a.stride(), *b.stride(), p, seed, offset, FORWARD=forward, BLOCK=2048
        )
    return out


def dropout_add(x, residual, p, seed, offset=0):
    return _launch(x, residual, p, seed, offset, True)


def dropout_add_backward(grad, p, seed, offset=0):
    return _launch(grad, grad, p, seed, offset, False)
