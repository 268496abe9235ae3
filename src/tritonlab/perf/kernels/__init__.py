"""Production-tier Triton reference kernels, tuned for Hopper (H100/H200).

Nothing here is imported when ``tritonlab`` is imported: each module imports torch and triton at its top, so
load a kernel module only when you need it (``tritonlab.perf.kernels.load("softmax")``).

Every module holds the kernel(s), a host function with the same name as the module and a docstring with its
cost model (bytes moved and FLOPs done), which ``tritonlab.perf.bench`` uses to turn times into GB/s and TFLOP/s.
Kernels are portable to Triton 3.6 and 3.9 and run on the interpreter (``TRITON_INTERPRET=1``) at small sizes.

Beside the kernel modules (one per name in ``NAMES``): helpers with a leading underscore (``_common.py``,
``_matmul_ptr.py``: matmul's pointer/split-K path), the benchmark cases (``case_base.py``, ``cases.py`` the
list, ``cases_memory.py``, ``cases_compute.py``), the launch-parameter sweeps (``sweeps.py``), the SDPA
peers (``sdpa.py``), the lowering for cuda:90 without a GPU (``lowering.py``) and the interpreter self-check
(``selfcheck.py``, ``selfcheck_compute.py``).
"""

from __future__ import annotations

import importlib
from types import ModuleType

NAMES: tuple[str, ...] = (
    "vector_add",
    "copy_2d",
    "transpose",
    "softmax",
    "rms_norm",
    "matmul",
    "matmul_bias_gelu",
    "rms_norm_backward",
    "attention",
    "fused_linear_ce",
    "attention_backward",
    "matmul_tma",
    "matmul_fp8",
)


def load(name: str) -> ModuleType:
    """Import and return the reference kernel module ``name`` (one of :data:`NAMES`)."""
    if name not in NAMES and name != "elementwise_chain":
        raise KeyError(f"unknown reference kernel {name!r}; choose from {', '.join(NAMES)}")
    return importlib.import_module(f"{__name__}.{name}")
