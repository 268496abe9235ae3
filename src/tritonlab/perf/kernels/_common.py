"""Small helpers shared by the reference kernels (host side only)."""

from __future__ import annotations

import functools
import os
import struct

import torch

try:  # host-side TMA descriptors (Triton ≥ 3.4)
    from triton.tools.tensor_descriptor import TensorDescriptor
except ImportError:  # pragma: no cover - old Triton
    TensorDescriptor = None  # type: ignore[assignment,misc]


def interpreting() -> bool:
    """True when Triton runs kernels on the CPU interpreter (``TRITON_INTERPRET=1``)."""
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


@functools.cache
def num_sms(device_index: int = 0) -> int:
    """Number of streaming multiprocessors of the GPU (a small stand-in on the interpreter)."""
    if interpreting() or not torch.cuda.is_available():
        return 4
    return torch.cuda.get_device_properties(device_index).multi_processor_count


def next_pow2(n: int) -> int:
    """Smallest power of two >= n (n >= 1)."""
    return 1 << max(0, (int(n) - 1).bit_length())


def check_same(*tensors: torch.Tensor) -> None:
    """Raise ValueError unless all tensors share device and dtype."""
    first = tensors[0]
    for t in tensors[1:]:
        if t.device != first.device or t.dtype != first.dtype:
            raise ValueError(f"tensors differ: {first.dtype}@{first.device} vs {t.dtype}@{t.device}")


#: 2^f ≈ 1 + c1·f + c2·f² + c3·f³ on [0, 1) (relative error at most 8.6e-5; see :func:`exp2_split_asm`)
EXP2_CUBIC = (0.6951165199279785, 0.2276461124420166, 0.07706601917743683)


def exp2_split_asm(pack: int) -> str:
    """PTX for ``pack`` exponentials 2^x: the first on the FMA units, the others with ``ex2.approx`` (the
    special-function unit, 16 results per clock per SM against the tensor cores' 4096 FLOPs: at head dim 64 the
    softmax's exponentials take as long as a block's two products). 2^x = 2^n · 2^f with n = floor(x) from a
    round-down add of 1.5·2^23 (n lands in the sum's low bits) and 2^f, f in [0, 1), from a cubic
    (coefficients fitted here for the least maximum relative error, 8.6e-5: below bf16's 3.9e-3 rounding of
    P). x is clamped to -126 first, so a masked -inf gives 2^-126 instead of 0."""
    c1, c2, c3 = (f"0f{struct.unpack('<I', struct.pack('<f', c))[0]:08X}" for c in EXP2_CUBIC)
    lines = [
        "{",
        ".reg .f32 x, t, j, f, p;",
        ".reg .b32 tb, pb;",
        f"max.f32 x, ${pack}, 0fC2FC0000;",  # -126.0
        "add.rm.f32 t, x, 0f4B400000;",  # 1.5 * 2^23: t's low bits hold floor(x)
        "sub.f32 j, t, 0f4B400000;",
        "sub.f32 f, x, j;",
        f"fma.rn.f32 p, f, {c3}, {c2};",
        f"fma.rn.f32 p, p, f, {c1};",
        "fma.rn.f32 p, p, f, 0f3F800000;",
        "mov.b32 tb, t;",
        "shl.b32 tb, tb, 23;",  # n << 23: the exponent to add (1.5 * 2^23's own bits shift out)
        "mov.b32 pb, p;",
        "add.s32 pb, pb, tb;",
        "mov.b32 $0, pb;",
    ]
    lines += [f"ex2.approx.f32 ${i}, ${pack + i};" for i in range(1, pack)]
    return "\n".join(lines + ["}"])
