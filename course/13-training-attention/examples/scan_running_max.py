"""tl.associative_scan: the running maximum of every row, and a running log-sum-exp carried as a pair.

Both kernels take one block per row and are checked against torch (cummax, logcumsumexp). The second scans two
tensors at once: the combine function receives (m1, l1, m2, l2) and returns the pair for the joined range —
the online softmax's (max, sum) update of lesson 8, which is associative, so a scan may group it in any tree.
"""

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def larger(a, b):
    return tl.maximum(a, b)


@triton.jit
def join_softmax_sums(m1, l1, m2, l2):
    # (m1, l1) summarises a range as max m1 and Σ exp(x − m1) = l1; so does (m2, l2) for the range after it
    m = tl.maximum(m1, m2)
    return m, l1 * tl.exp(m1 - m) + l2 * tl.exp(m2 - m)


@triton.jit
def running_max_kernel(x_ptr, y_ptr, n_cols, sxr, syr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    ok = cols < n_cols
    x = tl.load(x_ptr + row * sxr + cols, mask=ok, other=float("-inf")).to(tl.float32)
    tl.store(y_ptr + row * syr + cols, tl.associative_scan(x, 0, larger), mask=ok)


@triton.jit
def running_lse_kernel(x_ptr, y_ptr, n_cols, sxr, syr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    ok = cols < n_cols
    x = tl.load(x_ptr + row * sxr + cols, mask=ok, other=0.0).to(tl.float32)
    m, l = tl.associative_scan((x, tl.full([BLOCK], 1.0, tl.float32)), 0, join_softmax_sums)
    tl.store(y_ptr + row * syr + cols, m + tl.log(l), mask=ok)


def by_rows(kernel, x):
    M, N = x.shape
    y = torch.empty((M, N), device=x.device, dtype=torch.float32)
    kernel[(M,)](x, y, N, x.stride(0), y.stride(0), BLOCK=triton.next_power_of_2(N))
    return y


x = torch.randn(5, 100, device=DEVICE) * 4
y = by_rows(running_max_kernel, x)
print("running max equals torch.cummax:", torch.equal(y, torch.cummax(x, dim=1).values))
assert torch.equal(y, torch.cummax(x, dim=1).values)
lse = by_rows(running_lse_kernel, x)
err = (lse.double() - torch.logcumsumexp(x.double(), dim=1)).abs().max().item()
print(f"running log-sum-exp: max |error| against torch.logcumsumexp {err:.1e}")
assert err < 1e-4
