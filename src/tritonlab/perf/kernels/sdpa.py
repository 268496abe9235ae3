"""PyTorch's own attention, every way it can run: the peers the reference attention kernels are judged against.

``torch.nn.functional.scaled_dot_product_attention`` (SDPA) dispatches to one of several fused backends:
FlashAttention-2 (``flash``), cuDNN's fused attention (``cudnn``), xFormers' memory-efficient kernel
(``efficient``), or an unfused fallback (``math``). Which one a plain call picks depends on the torch build, the
GPU, the dtype and the shape (on an H200 with torch 2.11 the default is cuDNN), so a kernel compared with one
backend chosen by hand may look faster than what a user of the default call gets. Every backend is therefore
timed on its own (``sdpa_kernel`` restricted to it: a backend that cannot run raises, and the bench row
records the error as "unavailable"), the default call is timed as ``sdpa_default`` with the backend it picked
named beside it, and the target compares with the fastest of all of them (``perf/targets.py``).

The backward peers time only the backward pass: the forward runs once per input set (outside the timed
call), and each timed call is ``torch.autograd.grad`` of that graph, so each backend's own backward kernels
(with their Δ = rowsum(dO·O) pre-pass) run, on the same q, k, v and dO as ours.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

#: Bench name -> SDPBackend member name, for the backends that are timed one by one.
BACKENDS: dict[str, str] = {
    "sdpa_cudnn": "CUDNN_ATTENTION",
    "sdpa_flash": "FLASH_ATTENTION",
    "sdpa_efficient": "EFFICIENT_ATTENTION",
}
#: Every SDPA peer name a bench row may carry (the default call last).
PEER_NAMES: tuple[str, ...] = (*BACKENDS, "sdpa_default")
#: SDPBackend's integer values (torch._fused_sdp_choice returns one) -> the short name reports use.
_CHOICE = {0: "math", 1: "flash", 2: "efficient", 3: "cudnn", 4: "overrideable"}


def sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False) -> torch.Tensor:
    """The plain call (what a user gets): SDPA with its default backend choice."""
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)


def run_backend(name: str, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
    """SDPA restricted to backend ``name`` (a key of :data:`BACKENDS`, or "sdpa_default" for the plain call);
    raises RuntimeError where that backend cannot run this input on this build and GPU."""
    if name == "sdpa_default":
        return sdpa(q, k, v, causal)
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel(getattr(SDPBackend, BACKENDS[name])):
        return sdpa(q, k, v, causal)


def default_backend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> str:
    """The backend the plain SDPA call picks for these inputs ("cudnn", "flash", ...; "unknown" where this
    torch does not say)."""
    try:
        choice = int(torch._fused_sdp_choice(q, k, v, None, 0.0, causal))
    except Exception:  # noqa: BLE001 - a private entry point: its absence is not an error of the bench
        return "unknown"
    return _CHOICE.get(choice, f"backend {choice}")


def forward_peer(name: str, causal: bool) -> Callable[..., torch.Tensor]:
    """A bench peer ``fn(q, k, v)`` for SDPA backend ``name``; the default call's peer also reports (through
    ``fn.describe``, read by ``bench.measure_case``) which backend it picked."""

    def fn(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return run_backend(name, q, k, v, causal)

    if name == "sdpa_default":
        fn.describe = lambda q, k, v: {"backend": default_backend(q, k, v, causal)}  # type: ignore[attr-defined]
    return fn


class BackwardPeer:
    """``fn(q, k, v, o, lse, do) -> (dq, dk, dv)`` for one SDPA backend (or the default call, or a compiled
    forward): the backward of that backend's own forward graph on q, k, v, against upstream gradient ``do``.

    The forward runs once per input set (keyed by the tensors' storage) and is kept with its graph; each call
    runs ``torch.autograd.grad(out, (q, k, v), do, retain_graph=True)``, which launches that backend's
    backward kernels only. ``o`` and ``lse`` (our forward's outputs) are not used: each backend saves its own.
    """

    def __init__(self, name: str, causal: bool, forward: Callable[..., torch.Tensor] | None = None) -> None:
        self.name = name
        self.causal = causal
        self.forward = forward or (lambda q, k, v: run_backend(name, q, k, v, causal))
        self._key: tuple[int, ...] | None = None
        self._graph: tuple[torch.Tensor, tuple[torch.Tensor, ...]] | None = None

    #: Peers holding a saved graph, oldest first: at most MAX_LIVE graphs live at once in a process (a caller
    #: that never calls release, e.g. a warm-up loop over every case, does not pile up GPU memory).
    MAX_LIVE = 6
    _live: list[BackwardPeer] = []

    def _prepare(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, do: torch.Tensor) -> None:
        key = (q.data_ptr(), k.data_ptr(), v.data_ptr(), do.data_ptr(), q._version, k._version, v._version)
        if key == self._key and self._graph is not None:
            return
        self.release()  # let the previous graph go before the new one is made
        while len(BackwardPeer._live) >= self.MAX_LIVE:
            BackwardPeer._live[0].release()
        leaves = tuple(t.detach().requires_grad_() for t in (q, k, v))
        with torch.enable_grad():
            out = self.forward(*leaves)
        self._graph = (out, leaves)
        self._key = key
        BackwardPeer._live.append(self)

    def __call__(self, q, k, v, o, lse, do) -> tuple[torch.Tensor, ...]:  # noqa: ANN001
        self._prepare(q, k, v, do)
        assert self._graph is not None
        out, leaves = self._graph
        return torch.autograd.grad(out, leaves, do, retain_graph=True)

    def release(self) -> None:
        """Drop the saved forward graph (bench.measure_case calls this after timing the peer)."""
        self._graph = None
        self._key = None
        if self in BackwardPeer._live:
            BackwardPeer._live.remove(self)

    def describe(self, q, k, v, o, lse, do) -> dict[str, Any]:  # noqa: ANN001
        if self.name == "sdpa_default":
            return {"backend": default_backend(q, k, v, self.causal)}
        return {}


def reference_grads(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, do: torch.Tensor, causal: bool, scale: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(o, dq, dk, dv) of plain attention in float64 through autograd: the correctness reference."""
    leaves = [t.detach().double().requires_grad_() for t in (q, k, v)]
    qd, kd, vd = leaves
    s = (qd @ kd.transpose(-1, -2)) * scale
    if causal:
        n = q.shape[-2]
        mask = torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1)
        s = s.masked_fill(mask, float("-inf"))
    o = torch.softmax(s, -1) @ vd
    dq, dk, dv = torch.autograd.grad(o, leaves, do.double())
    return o.detach(), dq, dk, dv
