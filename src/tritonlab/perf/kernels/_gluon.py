"""What the Gluon kernels (``attention_ws.py``, ``matmul_fp8_ws.py``) share: Gluon's Hopper imports, the names
that differ between the Tritons we support, and the hand-back of a ring slot.

Gluon is experimental: present in the Tritons we support (3.6 on the GPU hosts, 3.9 here), absent before;
``gluon`` is None without it, and a kernel module then defines no kernel.
"""

from __future__ import annotations

try:
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.language.nvidia.hopper import (
        fence_async_shared,
        mbarrier,
        tma,
        warpgroup_mma,
        warpgroup_mma_wait,
    )
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor as GluonDescriptor
except ImportError:  # pragma: no cover - Triton without Gluon
    gluon = gl = mbarrier = tma = warpgroup_mma = warpgroup_mma_wait = fence_async_shared = (
        GluonDescriptor
    ) = None

__all__ = [
    "GluonDescriptor", "fence_async_shared", "gl", "gluon", "mbarrier", "partition_sync", "release", "tma",
    "tma_load", "tma_store", "warpgroup_mma", "warpgroup_mma_wait",
]  # fmt: skip

if gluon is not None:
    # the partition-wide barrier is `thread_barrier` in Triton 3.6 and `barrier` in 3.9
    partition_sync = getattr(gl, "barrier", None) or gl.thread_barrier
    # the TMA copies are `async_copy_global_to_shared` / `async_copy_shared_to_global` in 3.6 and `async_load` /
    # `async_store` in 3.9 (the old load name raises there)
    tma_load = getattr(tma, "async_load", None) or tma.async_copy_global_to_shared
    tma_store = getattr(tma, "async_store", None) or tma.async_copy_shared_to_global

    @gluon.jit
    def release(bar):
        partition_sync()  # the whole warpgroup is past its reads of the slot before it is handed back
        mbarrier.arrive(bar)

else:  # pragma: no cover - Triton without Gluon
    partition_sync = tma_load = tma_store = release = None
