"""Benchmark cases of the memory-bound reference kernels: vector add, 2-D copy, transpose, softmax, RMSNorm
forward and backward, the elementwise chain. Each against torch eager and ``torch.compile`` (the peers
registered here), with the bytes it must move counted from the kernel's cost model. cases.py lists them."""

from __future__ import annotations

import torch

from . import load
from .case_base import DT, PEER_FNS, Case, compiled
from .case_base import rand as _r


def _softmax(x):
    return torch.softmax(x, dim=-1)


def _rms(x, w):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()).to(x.dtype)


def _rms_eager(x, w):
    if hasattr(torch.nn.functional, "rms_norm"):
        return torch.nn.functional.rms_norm(x, (x.shape[-1],), w, 1e-6)
    return _rms(x, w)


def _chain(x, y):
    return torch.nn.functional.gelu(x * 1.5 + 0.25, approximate="tanh") * y


PEER_FNS.update({
    "add": torch.add,
    "copy": lambda x: x.contiguous() if not x.is_contiguous() else x.clone(),
    "transpose": lambda x: x.t().contiguous(),
    "softmax": _softmax,
    "rms_norm": _rms,
    "chain": _chain,
})  # fmt: skip


def vector_add_cases(device: str, sizes: list[int] | None = None, dtype: str = "fp32") -> list[Case]:
    mod = load("vector_add")
    dt = DT[dtype]
    out = []
    for n in sizes or [2**28]:
        out.append(
            Case(
                "vector_add",
                dtype,
                (n,),
                lambda n=n: (_r((n,), dt, device), _r((n,), dt, device)),
                mod.vector_add,
                {"torch": torch.add, "torch.compile": lambda x, y: compiled("add")(x, y)},
                mod.bytes_moved(n, dt.itemsize),
                mod.flops(n),
                "memory",
            )
        )
    return out


def copy_2d_cases(device: str, shape: tuple[int, int] = (16384, 16384), pad: int = 64) -> list[Case]:
    mod = load("copy_2d")
    out = []
    m, n = shape
    for dtype in ("fp32", "bf16"):
        dt = DT[dtype]
        out.append(
            Case(
                "copy_2d",
                dtype,
                (m, n),
                lambda dt=dt: (_r((m, n + pad), dt, device)[:, :n],),
                mod.copy_2d,
                {"torch": lambda x: x.contiguous(), "torch.compile": lambda x: compiled("copy")(x)},
                mod.bytes_moved(m, n, dt.itemsize),
                0,
                "memory",
                {"source": f"column slice of a {m}x{n + pad} matrix"},
            )
        )
    return out


def transpose_cases(device: str, shape: tuple[int, int] = (16384, 16384)) -> list[Case]:
    mod = load("transpose")
    out = []
    m, n = shape
    for dtype in ("fp32", "bf16"):
        dt = DT[dtype]
        out.append(
            Case(
                "transpose",
                dtype,
                (m, n),
                lambda dt=dt: (_r((m, n), dt, device),),
                mod.transpose,
                {"torch": PEER_FNS["transpose"], "torch.compile": lambda x: compiled("transpose")(x)},
                mod.bytes_moved(m, n, dt.itemsize),
                0,
                "memory",
            )
        )
    return out


def softmax_cases(
    device: str,
    cols: tuple[int, ...] = (1024, 4096, 16384, 32768),
    dtypes: tuple[str, ...] = ("fp32", "bf16"),
    elements: int = 2**26,
) -> list[Case]:
    mod = load("softmax")
    out = []
    for dtype in dtypes:
        dt = DT[dtype]
        for n in cols:
            m = max(1, elements // n)
            out.append(
                Case(
                    "softmax",
                    dtype,
                    (m, n),
                    lambda m=m, n=n, dt=dt: (_r((m, n), dt, device, 3.0),),
                    mod.softmax,
                    {"torch": _softmax, "torch.compile": lambda x: compiled("softmax")(x)},
                    mod.bytes_moved(m, n, dt.itemsize),
                    mod.flops(m, n),
                    "memory",
                )
            )
    return out


def rms_norm_cases(
    device: str,
    specs: tuple[tuple[str, int], ...] = (("bf16", 4096), ("bf16", 8192), ("fp32", 4096)),
    elements: int = 2**26,
) -> list[Case]:
    mod = load("rms_norm")
    out = []
    for dtype, n in specs:
        dt = DT[dtype]
        m = elements // n
        out.append(
            Case(
                "rms_norm",
                dtype,
                (m, n),
                lambda m=m, n=n, dt=dt: (_r((m, n), dt, device), _r((n,), dt, device) + 1.0),
                lambda x, w: mod.rms_norm(x, w, 1e-6),
                {"torch": _rms_eager, "torch.compile": lambda x, w: compiled("rms_norm")(x, w)},
                mod.bytes_moved(m, n, dt.itemsize),
                mod.flops(m, n),
                "memory",
            )
        )
    return out


def elementwise_chain_cases(device: str, n: int = 2**28) -> list[Case]:
    mod = load("elementwise_chain")
    return [
        Case(
            "elementwise_chain",
            "fp32",
            (n,),
            lambda: (_r((n,), torch.float32, device), _r((n,), torch.float32, device)),
            mod.elementwise_chain,
            {"torch": _chain, "torch.compile": lambda x, y: compiled("chain")(x, y)},
            3 * n * 4,
            12 * n,
            "memory",
            {"eager_bytes": 9 * n * 4},
        )
    ]


def _rms_bwd_formula(x, w, dy):
    """The closed-form RMSNorm backward in torch ops (the same work as the kernel: no forward, no graph)."""
    xf, wf, dyf = x.float(), w.float(), dy.float()
    rstd = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)
    g = dyf * wf
    dx = rstd * g - xf * rstd.pow(3) * (g * xf).mean(-1, keepdim=True)
    return dx.to(x.dtype), (dyf * xf * rstd).sum(0).to(w.dtype)


PEER_FNS["rms_bwd"] = _rms_bwd_formula


def rms_norm_backward_cases(
    device: str,
    specs: tuple[tuple[str, int], ...] = (("bf16", 4096), ("bf16", 8192), ("fp32", 4096)),
    elements: int = 2**26,
) -> list[Case]:
    mod = load("rms_norm_backward")
    out = []
    for dtype, n in specs:
        dt = DT[dtype]
        m = elements // n
        out.append(
            Case(
                "rms_norm_backward",
                dtype,
                (m, n),
                lambda m=m, n=n, dt=dt: (
                    _r((m, n), dt, device),
                    _r((n,), dt, device) + 1.0,
                    _r((m, n), dt, device),
                ),
                lambda x, w, dy: mod.rms_norm_backward(x, w, dy, 1e-6),
                {
                    "torch": _rms_bwd_formula,
                    "torch.compile": lambda x, w, dy: compiled("rms_bwd")(x, w, dy),
                },
                mod.bytes_moved(m, n, dt.itemsize),
                mod.flops(m, n),
                "memory",
            )
        )
    return out
