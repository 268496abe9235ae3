"""Compile a kernel for an NVIDIA GPU on a machine without one, and print every stage it passes through.

Triton's compiler is an ordinary program: give it a kernel, the argument types and a target (here an
H100-class GPU: CUDA, compute capability 9.0, 32 threads per warp) and it lowers the kernel
TTIR -> TTGIR -> LLVM IR -> PTX -> cubin. The PTX-to-cubin step uses the `ptxas` that ships inside the
triton wheel, so no GPU, driver or CUDA toolkit is needed. Nothing is launched: we only look at the text.

The file works with or without TRITON_INTERPRET=1. The interpreter only changes what `@triton.jit` returns,
so the kernel is wrapped in a compilable `JITFunction` explicitly instead of with the decorator.
"""

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from triton.runtime.jit import JITFunction


def scale_shift(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(y_ptr + offsets, 2.0 * x + 1.0, mask=mask)


def main() -> None:
    kernel = JITFunction(scale_shift)
    # Argument types in Triton's notation: "*fp32" is a pointer to float32, "i32" a 32-bit integer. The
    # constexpr is listed in the signature too and its value given separately (the form Triton 3.3+ expects).
    source = ASTSource(
        fn=kernel,
        signature={"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
        constexprs={"BLOCK": 1024},
    )
    target = GPUTarget("cuda", 90, 32)
    compiled = triton.compile(source, target=target)

    print(f"target: {target.backend}, compute capability {target.arch}, warp size {target.warp_size}")
    print(f"kernel {compiled.name}: num_warps={compiled.metadata.num_warps}")
    print("stages:", " -> ".join(compiled.asm))
    for stage in ("ttir", "ttgir", "llir", "ptx"):
        lines = [line for line in compiled.asm[stage].splitlines() if line.strip()]
        shown = [line for line in lines if not line.startswith("#loc")]  # skip MLIR source-location lines
        print(f"\n===== {stage}: {len(lines)} non-empty lines; the first 8 without #loc =====")
        print("\n".join(shown[:8]))
    ptx_lines = compiled.asm["ptx"].splitlines()
    entry = [line for line in ptx_lines if line.strip().startswith((".version", ".target", ".visible .entry"))]
    print("\n===== ptx header lines =====")
    print("\n".join(entry))
    print(f"\ncubin: {len(compiled.asm['cubin'])} bytes of sm_90 machine code, assembled by the bundled ptxas")


if __name__ == "__main__":
    main()
