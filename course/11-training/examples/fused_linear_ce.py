"""Linear layer + cross-entropy, chunked over the vocabulary: same loss and gradients, far less memory.

The peak is counted by a TorchDispatchMode (live bytes of tensors created inside the block); on a GPU the
script also reports torch.cuda.max_memory_allocated at a larger size.
"""

import math
import weakref

import torch
import triton
import triton.language as tl
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def lse_update_kernel(
    logits_ptr, target_ptr, m_ptr, s_ptr, picked_ptr, v_start, n_cols, stride_l, BLOCK_V: tl.constexpr
):
    row = tl.program_id(0).to(tl.int64)
    m = tl.load(m_ptr + row)
    s = tl.load(s_ptr + row)
    t = tl.load(target_ptr + row) - v_start  # the target's column inside this chunk (maybe outside)
    picked = tl.load(picked_ptr + row)
    for start in range(0, n_cols, BLOCK_V):
        cols = start + tl.arange(0, BLOCK_V)
        ok = cols < n_cols
        x = tl.load(logits_ptr + row * stride_l + cols, mask=ok, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
        picked += tl.sum(tl.where((cols == t) & ok, x, 0.0), axis=0)
    tl.store(m_ptr + row, m)
    tl.store(s_ptr + row, s)
    tl.store(picked_ptr + row, picked)


@triton.jit
def ce_grad_kernel(
    logits_ptr, target_ptr, lse_ptr, grad_ptr, v_start, n_cols, stride_l, inv_bt, BLOCK_V: tl.constexpr
):
    row = tl.program_id(0).to(tl.int64)
    lse = tl.load(lse_ptr + row)
    t = tl.load(target_ptr + row) - v_start
    scale = tl.load(grad_ptr) * inv_bt  # the upstream gradient, loaded here: no .item()
    for start in range(0, n_cols, BLOCK_V):
        cols = start + tl.arange(0, BLOCK_V)
        ok = cols < n_cols
        x = tl.load(logits_ptr + row * stride_l + cols, mask=ok, other=0.0).to(tl.float32)
        g = tl.where(cols == t, tl.exp(x - lse) - 1.0, tl.exp(x - lse)) * scale
        tl.store(logits_ptr + row * stride_l + cols, g.to(logits_ptr.dtype.element_ty), mask=ok)


class ChunkedLinearCE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, h, W, target, chunk):
        BT, V = h.shape[0], W.shape[0]
        m = torch.full((BT,), float("-inf"), device=h.device)
        s = torch.zeros(BT, device=h.device)
        picked = torch.zeros(BT, device=h.device)
        buf = torch.empty((BT, min(chunk, V)), device=h.device, dtype=h.dtype)
        for v0 in range(0, V, chunk):
            logits = buf[:, : min(chunk, V - v0)]
            torch.matmul(h, W[v0 : v0 + chunk].t(), out=logits)
            lse_update_kernel[(BT,)](
                logits,
                target,
                m,
                s,
                picked,
                v0,
                logits.shape[1],
                logits.stride(0),
                BLOCK_V=min(1024, triton.next_power_of_2(logits.shape[1])),
            )
        lse = m + torch.log(s)
        ctx.save_for_backward(h, W, target, lse)
        ctx.chunk = chunk
        return (lse - picked).mean()

    @staticmethod
    def backward(ctx, grad):
        h, W, target, lse = ctx.saved_tensors
        BT, V = h.shape[0], W.shape[0]
        dh = torch.zeros(h.shape, device=h.device, dtype=torch.float32)
        dW = torch.empty_like(W)
        buf = torch.empty((BT, min(ctx.chunk, V)), device=h.device, dtype=h.dtype)
        for v0 in range(0, V, ctx.chunk):
            Wc = W[v0 : v0 + ctx.chunk]
            logits = buf[:, : Wc.shape[0]]
            torch.matmul(h, Wc.t(), out=logits)
            ce_grad_kernel[(BT,)](
                logits,
                target,
                lse,
                grad,
                v0,
                logits.shape[1],
                logits.stride(0),
                1.0 / BT,
                BLOCK_V=min(1024, triton.next_power_of_2(logits.shape[1])),
            )
            dh += (logits @ Wc).float()
            torch.matmul(logits.t(), h, out=dW[v0 : v0 + ctx.chunk])
        return dh.to(h.dtype), dW, None, None


class PeakBytes(TorchDispatchMode):
    """Peak bytes of live tensors created by operators inside the block (storages counted once)."""

    def __init__(self):
        super().__init__()
        self.live, self.peak, self.refs = 0, 0, {}

    def _release(self, key, nbytes):
        self.refs[key] -= 1
        if self.refs[key] == 0:
            del self.refs[key]
            self.live -= nbytes

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in tree_leaves(out):
            if isinstance(t, torch.Tensor):
                key = t.untyped_storage().data_ptr()
                nbytes = t.untyped_storage().nbytes()
                if key not in self.refs:
                    self.refs[key] = 0
                    self.live += nbytes
                    self.peak = max(self.peak, self.live)
                self.refs[key] += 1
                weakref.finalize(t, self._release, key, nbytes)
        return out


BT, D, V = 64, 32, 4000
h = torch.randn(BT, D, device=DEVICE, requires_grad=True)
W = (torch.randn(V, D, device=DEVICE) / math.sqrt(D)).requires_grad_()
target = torch.randint(0, V, (BT,), device=DEVICE)

with PeakBytes() as eager_mem:
    loss_eager = torch.nn.functional.cross_entropy((h @ W.t()).float(), target)
    loss_eager.backward()
grads_eager = (h.grad.clone(), W.grad.clone())
h.grad, W.grad = None, None
with PeakBytes() as chunked_mem:
    loss_chunked = ChunkedLinearCE.apply(h, W, target, 500)
    loss_chunked.backward()
torch.testing.assert_close(loss_chunked, loss_eager, rtol=1e-5, atol=1e-5)
torch.testing.assert_close(h.grad, grads_eager[0], rtol=1e-4, atol=1e-5)
torch.testing.assert_close(W.grad, grads_eager[1], rtol=1e-4, atol=1e-5)
print(
    f"peak temporary bytes: eager {eager_mem.peak / 1e3:.0f} kB, chunked {chunked_mem.peak / 1e3:.0f} kB "
    f"({100 * chunked_mem.peak / eager_mem.peak:.0f} %)"
)


if DEVICE == "cuda":
    BT, D, V = 8192, 1024, 128256
    h = torch.randn(BT, D, device=DEVICE, dtype=torch.bfloat16, requires_grad=True)
    W = (torch.randn(V, D, device=DEVICE, dtype=torch.bfloat16) / math.sqrt(D)).requires_grad_()
    target = torch.randint(0, V, (BT,), device=DEVICE)
    for name, fn in (
        ("eager", lambda: torch.nn.functional.cross_entropy((h @ W.t()).float(), target)),
        ("chunked", lambda: ChunkedLinearCE.apply(h, W, target, 8192)),
    ):
        h.grad, W.grad = None, None
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        fn().backward()
        torch.cuda.synchronize()
        print(f"{name}: peak {(torch.cuda.max_memory_allocated() - base) / 1e9:.2f} GB above the inputs")
