"""What `scripts/tune_reference_kernels.py` measures: per section the cases (shapes), the peers and our candidate
variants, in the order a short budget should spend its time (the most promising first).

A **case** makes fresh inputs and knows how to check an output against a float64 reference (for attention on
the first two heads, `selfcheck_compute._heads`). A **peer** is an implementation we are judged against (every
SDPA backend, cuBLAS, torch.compile, torch._scaled_mm); a **variant** is one launch configuration of ours, tied
to the configuration dict it would put in the kernel module's CONFIGS (`groups` says which case groups it
is a candidate for). The first variant of every group is the current default, so each run also re-measures
what is shipped.
"""

from __future__ import annotations

from tunekit.core import Impl, Section, TCase, geomean
from tunekit.plan_attention import attention_bwd_section, attention_section
from tunekit.plan_gemm import fp8_section, gemm_section

__all__ = ["BUILD", "PEER_NOTES", "SECTIONS", "Impl", "Section", "TCase", "geomean"]

SECTIONS = ("attention", "attention_bwd", "gemm", "fp8")

BUILD = {"attention": attention_section, "attention_bwd": attention_bwd_section, "gemm": gemm_section,
         "fp8": fp8_section}  # fmt: skip

#: Which peers compute exactly our function with the same inputs (the rest are stricter bars: coarser scales).
PEER_NOTES = {
    "scaled_mm rowwise": "coarser scales than ours (one per row / column): a stricter bar",
    "scaled_mm tensorwise": "one scale per tensor: a stricter bar",
    "torch.compile max-autotune": "timed only where the warm-up processes finished autotuning within the budget",
}
