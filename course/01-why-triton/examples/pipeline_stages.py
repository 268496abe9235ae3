"""Show the stages Triton compiles a kernel through: TTIR -> TTGIR -> LLVM IR -> PTX -> cubin.

This needs a real GPU: the interpreter (TRITON_INTERPRET=1) never compiles anything,
so there it only explains itself and exits.
"""

import os

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def scale_shift_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(y_ptr + offsets, 2.0 * x + 1.0, mask=mask)


def main() -> None:
    if os.environ.get("TRITON_INTERPRET") == "1" or DEVICE != "cuda":
        print("The interpreter runs kernels with NumPy and compiles nothing, so there are no stages to show.")
        print("Run this file on a machine with an NVIDIA GPU and without TRITON_INTERPRET=1.")
        return
    x = torch.randn(4096, device=DEVICE)
    y = torch.empty_like(x)
    compiled = scale_shift_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
    assert torch.allclose(y, 2 * x + 1)
    print(f"kernel {compiled.name}: num_warps={compiled.metadata.num_warps}")
    print("stages kept by the compiled kernel:", list(compiled.asm))
    for stage in ("ttir", "ttgir", "llir", "ptx"):
        text = compiled.asm.get(stage)
        if text is None:
            continue
        lines = [line for line in text.splitlines() if line.strip()]
        print(f"\n===== {stage}: {len(lines)} non-empty lines; the first 12 =====")
        print("\n".join(lines[:12]))
    cubin = compiled.asm.get("cubin")
    if cubin is not None:
        print(f"\ncubin: {len(cubin)} bytes of machine code (disassemble with cuobjdump --dump-sass)")


if __name__ == "__main__":
    main()
