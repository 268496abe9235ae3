"""Where the block-scaled fp8 GEMM's time goes (issue 39): the same persistent TMA kernel with and without the
per-block "promotion" (each 128-deep fp32 partial product multiplied by its two scales before it is added).

Times, with `triton.testing.do_bench` (median, L2 flushed), for each shape:
- `block-scaled`: perf/kernels/matmul_fp8.py as `bench` runs it (the promotion one fused multiply-add per
  element: the tile's one weight scale folded into its row scales);
- `block-scaled, a scale per column`: the promotion as the kernel first shipped it (a weight scale loaded per
  column, two multiplies and an add per element): what the fused form gained;
- `block-scaled, next product first`: the fused promotion, each group's product issued before the previous
  one is scaled and added;
- `block-scaled, 64x128, 2 per SM`: the shipped kernel with one-warpgroup tiles and two programs on each SM;
- `one accumulator`: the same kernel with the K loop accumulating in the tensor cores (`tl.dot(a, w.T, acc)`)
  and one scale applied at the end (a per-tensor fp8 GEMM): what the promotion costs;
- `torch._scaled_mm` per tensor (the fastest peer `bench` compares with).

Each block-scaled candidate's result is compared with the shipped kernel's (largest difference over the
largest value; the per-column form rounds differently, so it may differ in the last bits).

    python benchmarks/fp8_promotion.py [--out FILE.json]

Needs a GPU with fp8 tensor cores (sm_89 or later); prints a table and writes the rows as JSON with --out.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

SHAPES = ((4096, 4096, 4096), (8192, 8192, 8192), (4096, 11008, 4096))
# one warpgroup per program, two programs per SM (see matmul_fp8's PER_SM)
TWO_PER_SM = {"BM": 64, "BN": 128, "GROUP_M": 8, "num_warps": 4, "num_stages": 4, "PER_SM": 2}


def time_shape(m: int, n: int, kk: int, sms: int) -> list[dict]:
    """The candidates of one shape (see the module docstring), timed; a candidate that fails is a row with its
    error."""
    import torch
    import triton
    from fp8_promotion_kernels import lookahead, one_acc, per_column
    from triton.tools.tensor_descriptor import TensorDescriptor

    from tritonlab.perf.kernels import matmul_fp8 as k

    a, sa = k.quantize(torch.randn(m, kk, device="cuda", dtype=torch.bfloat16), 1)
    w, sw = k.quantize(torch.randn(n, kk, device="cuda", dtype=torch.bfloat16), k.SCALE_BLOCK)
    out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    cfg = k.CONFIGS["large"]
    bm, bn = int(cfg["BM"]), int(cfg["BN"])
    a_desc = TensorDescriptor.from_tensor(a, [bm, k.SCALE_BLOCK])
    w_desc = TensorDescriptor.from_tensor(w, [bn, k.SCALE_BLOCK])
    c_desc = TensorDescriptor.from_tensor(out, [bm, bn])
    grid = (min(sms, triton.cdiv(m, bm) * triton.cdiv(n, bn)),)
    one = torch.ones((), device="cuda")

    def plain() -> None:
        one_acc[grid](a_desc, w_desc, c_desc, 1.0, m, n, kk, BM=bm, BN=bn, BK=k.SCALE_BLOCK,
                      GROUP_M=int(cfg["GROUP_M"]), NUM_SMS=grid[0], num_warps=int(cfg["num_warps"]),
                      num_stages=int(cfg["num_stages"]))  # fmt: skip

    variants = {}  # name -> the output its own launch writes

    def launcher(kernel):  # noqa: ANN001, ANN202 - a Triton kernel
        own = torch.empty_like(out)
        desc = TensorDescriptor.from_tensor(own, [bm, bn])

        def launch() -> None:
            kernel[grid](a_desc, w_desc, desc, sa, sw, m, n, kk, *sa.stride(), *sw.stride(), BM=bm, BN=bn,
                         BK=k.SCALE_BLOCK, GROUP_M=int(cfg["GROUP_M"]), NUM_SMS=grid[0],
                         num_warps=int(cfg["num_warps"]), num_stages=int(cfg["num_stages"]))  # fmt: skip

        return launch, own

    ahead, variants["next product first"] = launcher(lookahead)
    column, variants["a scale per column"] = launcher(per_column)
    two_out = variants["64x128, 2 per SM"] = torch.empty_like(out)

    candidates = {
        "block-scaled": lambda: k.matmul_fp8(a, sa, w, sw, out),
        "block-scaled, a scale per column": column,
        "block-scaled, next product first": ahead,
        "block-scaled, 64x128, 2 per SM": lambda: k.matmul_fp8(a, sa, w, sw, two_out, config=TWO_PER_SM),
        "one accumulator": plain,
        "scaled_mm per tensor": lambda: torch._scaled_mm(a, w.t(), one, one, out_dtype=torch.bfloat16),
    }
    rows = []
    for name, fn in candidates.items():
        try:
            fn()
            torch.cuda.synchronize()
            ms = triton.testing.do_bench(fn)
            rows.append({"shape": [m, n, kk], "impl": name, "ms": ms, "tflops": 2 * m * n * kk / ms / 1e9})
        except Exception as exc:  # noqa: BLE001 - a peer missing on this torch: said, not fatal
            rows.append({"shape": [m, n, kk], "impl": name, "error": f"{type(exc).__name__}: {exc}"[:300]})
        r = rows[-1]
        timed = f"{r['ms']:.4f} ms {r['tflops']:.0f} TFLOP/s" if "ms" in r else r["error"]
        print(f"{m}x{n}x{kk:<6} {name:<34} {timed}", flush=True)
    k.matmul_fp8(a, sa, w, sw, out)
    ahead()
    column()
    k.matmul_fp8(a, sa, w, sw, two_out, config=TWO_PER_SM)
    torch.cuda.synchronize()
    top = max(out.float().abs().max().item(), 1e-30)
    for name, own in variants.items():
        same = (own.float() - out.float()).abs().max().item() / top
        rows.append({"shape": [m, n, kk], "impl": f"{name} vs block-scaled", "max_rel_diff": same})
        print(f"{m}x{n}x{kk:<6} {name} differs from block-scaled by {same:.2e} (of the max)", flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, help="write the rows here as JSON")
    args = ap.parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        print("needs a GPU", file=sys.stderr)
        return 2

    sms = torch.cuda.get_device_properties(0).multi_processor_count
    rows = []
    for m, n, kk in SHAPES:
        rows += time_shape(m, n, kk, sms)
    if args.out:
        args.out.write_text(json.dumps({"rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
