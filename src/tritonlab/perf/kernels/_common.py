"""Small helpers shared by the reference kernels (host side only)."""

from __future__ import annotations

import functools
import os

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
