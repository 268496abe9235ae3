"""Fused linear cross-entropy: ``loss = mean_i CE(h_i · Wᵀ, target_i)`` without ever holding the (BT, V) logits.

The vocabulary is processed in chunks of C columns. Forward: for each chunk, one GEMM writes the chunk's logits
(BT × C, in h's dtype) into a reused buffer, and a Triton kernel folds them into a running max, a running sum
of exponentials (the online softmax of lesson 8) and the target's logit, row by row; at the end
``lse = m + log(s)`` and ``loss = mean(lse − logit[target])``. Backward: each chunk's logits are recomputed,
a Triton kernel turns them in place into ``(softmax − onehot) · grad / BT``, and two GEMMs add that chunk's
share to ``dh`` and write its rows of ``dW``. Liger-Kernel's version chunks over the tokens instead and
computes the gradients during the forward; both keep the working set at one chunk of logits.

``over="tokens"`` (the default on a GPU) is that second schedule: a chunk of T rows gets its full (T, V) logits
from one GEMM, one Triton kernel turns each row in place into ``(softmax − onehot) / BT`` and writes the row's
loss, and two GEMMs write the chunk's rows of ``dh`` and add its share to ``dW`` — no GEMM is repeated, so the
FLOPs equal eager's; the backward only scales the saved gradients by the incoming one.

Cost model (``over="vocab"``): GEMMs 2·BT·V·D FLOPs in the forward and 3 × that in the backward (one
recompute), versus 1 + 2 for eager: +33 % FLOPs. ``over="tokens"``: 3 × 2·BT·V·D, as eager, plus one extra
read and write of ``dW`` per chunk after the first (the accumulation). Memory beyond the inputs and the gradients themselves: one (BT, C) chunk of logits and
their gradient, plus O(BT) fp32 statistics — instead of the (BT, V) logits, their fp32 copy and the saved
softmax of the eager version.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._common import next_pow2


@triton.jit
def _lse_update_kernel(
    logits_ptr, target_ptr, m_ptr, s_ptr, tgt_ptr, v_start, n_cols, stride_l, BLOCK_V: tl.constexpr
):
    row = tl.program_id(0).to(tl.int64)
    m = tl.load(m_ptr + row)
    s = tl.load(s_ptr + row)
    t = tl.load(target_ptr + row) - v_start
    picked = tl.load(tgt_ptr + row)
    for start in range(0, n_cols, BLOCK_V):
        cols = start + tl.arange(0, BLOCK_V)
        x = tl.load(logits_ptr + row * stride_l + cols, mask=cols < n_cols, other=float("-inf"))
        x = x.to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
        picked += tl.sum(tl.where((cols == t) & (cols < n_cols), x, 0.0), axis=0)
    tl.store(m_ptr + row, m)
    tl.store(s_ptr + row, s)
    tl.store(tgt_ptr + row, picked)


@triton.jit
def _ce_grad_kernel(logits_ptr, target_ptr, lse_ptr, v_start, n_cols, stride_l, scale, BLOCK_V: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    lse = tl.load(lse_ptr + row)
    t = tl.load(target_ptr + row) - v_start
    for start in range(0, n_cols, BLOCK_V):
        cols = start + tl.arange(0, BLOCK_V)
        mask = cols < n_cols
        x = tl.load(logits_ptr + row * stride_l + cols, mask=mask, other=0.0).to(tl.float32)
        g = tl.exp(x - lse)
        g = tl.where(cols == t, g - 1.0, g) * scale
        tl.store(logits_ptr + row * stride_l + cols, g.to(logits_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _ce_row_grad_kernel(logits_ptr, target_ptr, loss_ptr, n_cols, stride_l, scale, BLOCK_V: tl.constexpr):
    """One full row of logits: its loss (lse − logit[target]) out, ``(softmax − onehot)·scale`` in place."""
    row = tl.program_id(0).to(tl.int64)
    t = tl.load(target_ptr + row)
    m = tl.full([], float("-inf"), tl.float32)
    s = tl.zeros([], dtype=tl.float32)
    picked = tl.zeros([], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_V):
        cols = start + tl.arange(0, BLOCK_V)
        x = tl.load(logits_ptr + row * stride_l + cols, mask=cols < n_cols, other=float("-inf"))
        x = x.to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
        picked += tl.sum(tl.where(cols == t, x, 0.0), axis=0)
    lse = m + tl.log(s)
    tl.store(loss_ptr + row, lse - picked)
    for start in range(0, n_cols, BLOCK_V):
        cols = start + tl.arange(0, BLOCK_V)
        mask = cols < n_cols
        x = tl.load(logits_ptr + row * stride_l + cols, mask=mask, other=0.0).to(tl.float32)
        g = tl.exp(x - lse)
        g = tl.where(cols == t, g - 1.0, g) * scale
        tl.store(logits_ptr + row * stride_l + cols, g.to(logits_ptr.dtype.element_ty), mask=mask)


def _block(chunk: int) -> int:
    return min(4096, next_pow2(chunk))


def _logits_into(buf: torch.Tensor, h: torch.Tensor, w_chunk: torch.Tensor) -> torch.Tensor:
    out = buf[:, : w_chunk.shape[0]]
    torch.matmul(h, w_chunk.t(), out=out)
    return out


class _FusedLinearCE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, h, weight, target, chunk):  # noqa: ANN001, ANN205
        bt = h.shape[0]
        v = weight.shape[0]
        dev = h.device
        m = torch.full((bt,), float("-inf"), device=dev, dtype=torch.float32)
        s = torch.zeros((bt,), device=dev, dtype=torch.float32)
        picked = torch.zeros((bt,), device=dev, dtype=torch.float32)
        buf = torch.empty((bt, min(chunk, v)), device=dev, dtype=h.dtype)
        for v0 in range(0, v, chunk):
            logits = _logits_into(buf, h, weight[v0 : v0 + chunk])
            _lse_update_kernel[(bt,)](
                logits, target, m, s, picked, v0, logits.shape[1], logits.stride(0),
                BLOCK_V=_block(logits.shape[1]), num_warps=8,
            )  # fmt: skip
        lse = m + torch.log(s)
        ctx.save_for_backward(h, weight, target, lse)
        ctx.chunk = chunk
        return (lse - picked).mean()

    @staticmethod
    def backward(ctx, grad):  # noqa: ANN001, ANN205
        h, weight, target, lse = ctx.saved_tensors
        chunk = ctx.chunk
        bt, v = h.shape[0], weight.shape[0]
        dh = torch.zeros(h.shape, device=h.device, dtype=torch.float32)
        dw = torch.empty_like(weight)
        buf = torch.empty((bt, min(chunk, v)), device=h.device, dtype=h.dtype)
        scale = float(grad) / bt
        for v0 in range(0, v, chunk):
            w_chunk = weight[v0 : v0 + chunk]
            logits = _logits_into(buf, h, w_chunk)
            _ce_grad_kernel[(bt,)](
                logits, target, lse, v0, logits.shape[1], logits.stride(0), scale,
                BLOCK_V=_block(logits.shape[1]), num_warps=8,
            )  # fmt: skip
            dh += torch.matmul(logits, w_chunk).float()
            torch.matmul(logits.t(), h, out=dw[v0 : v0 + chunk])
        return dh.to(h.dtype), dw, None, None


class _TokenChunkedCE(torch.autograd.Function):
    """Chunks of rows; the gradients are computed in the forward (no GEMM repeated), the backward scales them."""

    @staticmethod
    def forward(ctx, h, weight, target, chunk):  # noqa: ANN001, ANN205
        bt, v = h.shape[0], weight.shape[0]
        losses = torch.empty((bt,), device=h.device, dtype=torch.float32)
        dh = torch.empty_like(h)
        dw = torch.zeros_like(weight)
        buf = torch.empty((min(chunk, bt), v), device=h.device, dtype=h.dtype)
        for t0 in range(0, bt, chunk):
            hc = h[t0 : t0 + chunk]
            logits = buf[: hc.shape[0]]
            torch.matmul(hc, weight.t(), out=logits)
            _ce_row_grad_kernel[(hc.shape[0],)](
                logits, target[t0 : t0 + chunk], losses[t0 : t0 + chunk], v, logits.stride(0), 1.0 / bt,
                BLOCK_V=_block(v), num_warps=8,
            )  # fmt: skip
            torch.matmul(logits, weight, out=dh[t0 : t0 + chunk])
            dw.addmm_(logits.t(), hc)
        ctx.save_for_backward(dh, dw)
        return losses.mean()

    @staticmethod
    def backward(ctx, grad):  # noqa: ANN001, ANN205
        dh, dw = ctx.saved_tensors
        if grad.numel() == 1 and float(grad) == 1.0:  # the usual case: no extra pass over dW
            return dh, dw, None, None
        return dh * grad.to(dh.dtype), dw * grad.to(dw.dtype), None, None


def fused_linear_ce(
    h: torch.Tensor,
    weight: torch.Tensor,
    target: torch.Tensor,
    chunk: int | None = None,
    *,
    over: str | None = None,
) -> torch.Tensor:
    """Mean cross-entropy of ``h @ weight.T`` (BT × V logits, never stored whole) against ``target``.

    ``over``: "vocab" (chunks of ``chunk`` vocabulary columns, logits recomputed in the backward) or "tokens"
    (chunks of ``chunk`` rows, gradients made in the forward); default "tokens" on a GPU, "vocab" elsewhere.
    """
    if h.dim() != 2 or weight.dim() != 2 or h.shape[1] != weight.shape[1] or target.shape != (h.shape[0],):
        raise ValueError(
            f"shapes h {tuple(h.shape)}, weight {tuple(weight.shape)}, target {tuple(target.shape)}"
        )
    over = over or ("tokens" if h.is_cuda else "vocab")
    if over not in ("tokens", "vocab"):
        raise ValueError(f"over must be 'tokens' or 'vocab', not {over!r}")
    h, weight, target = h.contiguous(), weight.contiguous(), target.contiguous()
    if over == "tokens":
        if chunk is None:  # one chunk of logits at most ~2**29 elements (1 GiB in bf16)
            chunk = max(1, min(h.shape[0], (1 << 29) // max(1, weight.shape[0])))
        return _TokenChunkedCE.apply(h, weight, target, int(chunk))
    if chunk is None:
        chunk = 8192 if h.is_cuda else 256
    return _FusedLinearCE.apply(h, weight, target, int(chunk))


def eager_linear_ce(h: torch.Tensor, weight: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """The unfused peer: full logits, upcast to fp32, torch's cross-entropy."""
    return torch.nn.functional.cross_entropy((h @ weight.t()).float(), target)


def flops(bt: int, v: int, d: int, backward: bool = True) -> int:
    """GEMM FLOPs: 2·BT·V·D forward, 3× that in the backward (logits recomputed, dh, dW)."""
    return 2 * bt * v * d * (4 if backward else 1)


def bytes_moved(bt: int, v: int, d: int, elem_size: int) -> int:
    """HBM traffic lower bound of forward + backward: read h and W (twice each pass), write dh and dW."""
    return (3 * bt * d + 3 * v * d) * elem_size


def peak_logit_bytes(bt: int, v: int, chunk: int, elem_size: int) -> dict[str, int]:
    """Bytes of the logit-sized temporaries: eager keeps (BT, V) logits, their fp32 copy and the saved
    log-softmax; the chunked version one (BT, C) buffer in the forward and one in the backward."""
    return {"eager": bt * v * (elem_size + 4 + 4), "chunked": bt * min(chunk, v) * elem_size}
