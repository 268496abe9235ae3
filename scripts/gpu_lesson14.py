#!/usr/bin/env python3
"""Lesson 14's GPU measurements (issue 39): what the sentences of course/14-hopper/lesson.en.md that wait for a
recorded run need. Refuses to run without a CUDA GPU.

    python scripts/gpu_lesson14.py --out docs/gpu-runs/<date>-lesson14        # everything (a few minutes)
    python scripts/gpu_lesson14.py --out /tmp/l14 --quick                     # one shape per part

Parts (each result also says how it was measured; every kernel is checked against torch before it is timed):

1. compile — what THIS machine's Triton (3.6 on the course's H200) compiles the lesson's kernels to for this
   GPU: instruction counts (TMA loads/stores, wgmma, mma.sync, setmaxnreg, warp-specialized regions, pointer
   loads) and registers of the lesson's pointer and TMA copies and of `specialized_dot_kernel` with
   SPECIALIZE False/True and 4/8 warps (the lesson states what Triton 3.9 does for sm_90; this records 3.6).
2. gemm — TFLOP/s (median of triton.testing.do_bench) of lesson 9's matmul (one program per tile), the
   persistent-matmul solution, the tma-matmul solution and torch.matmul (cuBLAS), fp16 and bf16, square
   shapes and a decode shape (M = 16): the lesson's "speed difference between the two forms".
3. warp_specialize — `specialized_dot_kernel` timed with SPECIALIZE False and True (4 warps).
4. fp8 — the fp8-matmul solution (block-scaled e4m3) against the bf16 tma-matmul solution, torch.matmul bf16
   and torch._scaled_mm (per-tensor scales, where this torch has it): the "twice the rate" sentence.
5. profile — `tritonlab profile softmax --solution --json` (issue 39's "Done when"), its output kept.

Writes OUT/lesson14.json (every number, the environment) and OUT/lesson14.md (a table per part).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
LESSON = ROOT / "course" / "14-hopper"
SOLUTIONS = {
    "matmul (lesson 9, one program per tile)": ROOT / "course/09-matmul-fusion/exercises/matmul/solution.py",
    "persistent-matmul": LESSON / "exercises/persistent-matmul/solution.py",
    "tma-matmul": LESSON / "exercises/tma-matmul/solution.py",
    "fp8-matmul": LESSON / "exercises/fp8-matmul/solution.py",
}


def load(path: Path, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def median_ms(fn: Any, rep: int = 100) -> float:
    from triton.testing import do_bench

    return float(do_bench(fn, warmup=25, rep=rep, return_mode="median"))


def environment(torch: Any) -> dict:
    import triton

    props = torch.cuda.get_device_properties(0)
    try:
        driver = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout.strip()
    except OSError:
        driver = "?"
    return {
        "gpu": torch.cuda.get_device_name(),
        "sms": props.multi_processor_count,
        "capability": f"{props.major}.{props.minor}",
        "driver": driver,
        "torch": torch.__version__,
        "triton": triton.__version__,
        "python": platform.python_version(),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %z"),
    }


# ---- 1. compile ----------------------------------------------------------------------------------------


def compile_part(torch: Any, kernels: Any) -> dict:
    """Launch each lesson kernel once on this GPU and read what Triton compiled (the launch's CompiledKernel)."""
    from tritonlab.grading import kernel_inspect

    out: dict[str, Any] = {}

    def record(label: str, compiled: Any) -> None:
        asm = {k: v for k, v in compiled.asm.items() if isinstance(v, str)}
        out[label] = {"registers": getattr(compiled, "n_regs", None), **kernel_inspect.features(asm)}

    m, n = 1024, 1024
    x = torch.randn(m, n, device="cuda", dtype=torch.float16)
    y = torch.empty_like(x)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    record(
        "pointer copy 128x128",
        kernels.persistent_scale_kernel[(sms,)](
            x, y, m, n, x.stride(0), y.stride(0), 2.0, BLOCK_M=128, BLOCK_N=128, GROUP_M=8
        ),
    )
    record(
        "TMA copy 128x128",
        kernels.tma_scale_kernel[(sms,)](x, y, m, n, x.stride(0), y.stride(0), 2.0, BLOCK_M=128, BLOCK_N=128),
    )
    a = torch.randn(2048, 2048, device="cuda", dtype=torch.float16)
    b = torch.randn(2048, 2048, device="cuda", dtype=torch.float16)
    c = torch.empty(2048, 2048, device="cuda", dtype=torch.float32)
    for specialize in (False, True):
        for warps in (4, 8):
            label = f"specialized_dot SPECIALIZE={specialize} num_warps={warps}"
            try:
                compiled = kernels.specialized_dot_kernel[(16, 16)](
                    a, b, c, 2048, 2048, 2048, a.stride(0), b.stride(0), c.stride(0),
                    BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, SPECIALIZE=specialize,
                    num_warps=warps, num_stages=3,
                )  # fmt: skip
                record(label, compiled)
                torch.cuda.synchronize()
                err = (c - a.float() @ b.float()).abs().max().item()
                out[label]["max_error"] = err
            except Exception as exc:  # noqa: BLE001 - what this Triton refuses is a result too
                out[label] = {"error": f"{type(exc).__name__}: {str(exc)[:400]}"}
    return out


# ---- 2./3./4. timing -----------------------------------------------------------------------------------


def tflops(m: int, n: int, k: int, ms: float) -> float:
    return 2 * m * n * k / (ms * 1e-3) / 1e12


def gemm_part(torch: Any, shapes: list[tuple[int, int, int]]) -> list[dict]:
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    mods = {
        name: load(path, f"sol_{i}") for i, (name, path) in enumerate(SOLUTIONS.items()) if "fp8" not in name
    }
    calls = {
        "matmul (lesson 9, one program per tile)": lambda a, b: mods["matmul (lesson 9, one program per tile)"].matmul(a, b),
        "persistent-matmul": lambda a, b: mods["persistent-matmul"].persistent_matmul(a, b, sms),
        "tma-matmul": lambda a, b: mods["tma-matmul"].tma_matmul(a, b, sms),
        "torch.matmul (cuBLAS)": torch.matmul,
    }  # fmt: skip
    rows = []
    for dtype in (torch.float16, torch.bfloat16):
        for m, n, k in shapes:
            a = torch.randn(m, k, device="cuda", dtype=dtype)
            b = torch.randn(k, n, device="cuda", dtype=dtype)
            ref = (a.float() @ b.float()).to(dtype)
            row: dict[str, Any] = {
                "shape": [m, n, k],
                "dtype": str(dtype).removeprefix("torch."),
                "impls": {},
            }
            for name, fn in calls.items():
                try:
                    got = fn(a, b)
                    torch.cuda.synchronize()
                    err = ((got.float() - ref.float()).abs().max() / ref.float().abs().max()).item()
                    if err > 2e-2:
                        row["impls"][name] = {"error": f"wrong result (max relative error {err:.3g})"}
                        continue
                    ms = median_ms(lambda fn=fn, a=a, b=b: fn(a, b))
                    row["impls"][name] = {"ms": ms, "tflops": tflops(m, n, k, ms)}
                except Exception as exc:  # noqa: BLE001
                    row["impls"][name] = {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}
            rows.append(row)
            print(json.dumps(row))
    return rows


def warp_specialize_part(torch: Any, kernels: Any, size: int) -> list[dict]:
    import triton

    a = torch.randn(size, size, device="cuda", dtype=torch.float16)
    b = torch.randn(size, size, device="cuda", dtype=torch.float16)
    c = torch.empty(size, size, device="cuda", dtype=torch.float32)
    grid = (triton.cdiv(size, 128), triton.cdiv(size, 128))
    rows = []
    for specialize in (False, True):

        def run(specialize: bool = specialize) -> None:
            kernels.specialized_dot_kernel[grid](
                a, b, c, size, size, size, a.stride(0), b.stride(0), c.stride(0),
                BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, SPECIALIZE=specialize, num_warps=4, num_stages=3,
            )  # fmt: skip

        try:
            run()
            torch.cuda.synchronize()
            err = ((c - a.float() @ b.float()).abs().max() / (a.float() @ b.float()).abs().max()).item()
            ms = median_ms(run)
            rows.append({"specialize": specialize, "size": size, "ms": ms, "tflops": tflops(size, size, size, ms),
                         "max_relative_error": err})  # fmt: skip
        except Exception as exc:  # noqa: BLE001
            rows.append(
                {"specialize": specialize, "size": size, "error": f"{type(exc).__name__}: {exc}"[:400]}
            )
        print(json.dumps(rows[-1]))
    return rows


def fp8_part(torch: Any, shapes: list[tuple[int, int, int]]) -> list[dict]:
    fp8 = load(SOLUTIONS["fp8-matmul"], "sol_fp8")
    tma = load(SOLUTIONS["tma-matmul"], "sol_tma")
    rows = []
    for shape in shapes:
        rows.append(fp8_row(torch, fp8, tma, shape))
        print(json.dumps(rows[-1]))
    return rows


def fp8_row(torch: Any, fp8: Any, tma: Any, shape: tuple[int, int, int]) -> dict:
    """One shape: the block-scaled fp8 solution next to bf16 GEMMs and torch's per-tensor fp8 GEMM."""
    import triton

    m, n, k = shape
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    x = torch.randn(m, k, device="cuda")
    w = torch.randn(n, k, device="cuda")
    qa, sa = fp8.quantize_rows(x)
    _, sw_rows = fp8.quantize_rows(w)  # per row; b's 128x128 blocks take each block's largest row scale
    blocks = triton.cdiv(n, 128)
    sb = torch.stack([sw_rows[i * 128 : (i + 1) * 128].amax(dim=0) for i in range(blocks)])
    scale_full = sb.repeat_interleave(128, dim=0)[:n].repeat_interleave(128, dim=1)[:, :k]
    qb = (w / scale_full).to(torch.float8_e4m3fn)
    exact = x.double() @ w.double().t()
    row: dict[str, Any] = {"shape": [m, n, k], "impls": {}}
    xb, wbt = x.to(torch.bfloat16), w.to(torch.bfloat16).t().contiguous()
    calls = {
        "fp8-matmul (block-scaled e4m3)": lambda: fp8.fp8_matmul(qa, qb, sa, sb),
        "tma-matmul bf16": lambda: tma.tma_matmul(xb, wbt, sms),
        "torch.matmul bf16": lambda: torch.matmul(xb, wbt),
    }
    if hasattr(torch, "_scaled_mm"):
        sta, stw = (x.abs().max() / 448).float(), (w.abs().max() / 448).float()
        ta, tw = (x / sta).to(torch.float8_e4m3fn), (w / stw).to(torch.float8_e4m3fn)
        calls["torch._scaled_mm (per-tensor e4m3)"] = lambda: torch._scaled_mm(
            ta, tw.t(), scale_a=sta, scale_b=stw, out_dtype=torch.bfloat16
        )
    for name, fn in calls.items():
        try:
            got = fn()
            torch.cuda.synchronize()
            rel = ((got.double() - exact).norm() / exact.norm()).item()
            ms = median_ms(fn)
            row["impls"][name] = {"ms": ms, "tflops": tflops(m, n, k, ms), "relative_error": rel}
        except Exception as exc:  # noqa: BLE001
            row["impls"][name] = {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}
    return row


def profile_part(out: Path) -> dict:
    # src first, then what the caller had (a GPU machine's carried packages live on PYTHONPATH too)
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")])),
    )
    done = subprocess.run(
        [sys.executable, "-m", "tritonlab", "profile", "softmax", "--solution", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    text = subprocess.run(
        [sys.executable, "-m", "tritonlab", "profile", "softmax", "--solution"],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    (out / "profile-softmax.txt").write_text(text.stdout + text.stderr)
    try:
        data = json.loads(done.stdout)
    except ValueError:
        data = {"stdout": done.stdout[-4000:]}
    return {
        "exit": done.returncode,
        "stderr": done.stderr[-4000:],
        "result": data,
        "text_exit": text.returncode,
    }


# ---- the report --------------------------------------------------------------------------------------------


def markdown(result: dict) -> str:
    env = result["environment"]
    lines = [
        f"# Lesson 14 on {env['gpu']} ({env['date']})",
        "",
        f"{env['sms']} SMs, capability {env['capability']}, driver {env['driver']}, torch {env['torch']}, "
        f"Triton {env['triton']}, Python {env['python']}. Written by scripts/gpu_lesson14.py.",
        "",
        "## What this Triton compiles the lesson's kernels to",
        "",
        "| kernel | registers | TMA loads | TMA stores | wgmma | mma.sync | setmaxnreg | ws regions | pointer loads |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for label, f in result.get("compile", {}).items():
        if "error" in f:
            lines.append(f"| {label} | {f['error']} |||||||| ")
            continue
        lines.append(
            f"| {label} | {f.get('registers')} | {f.get('tma_loads')} | {f.get('tma_stores')} | {f.get('wgmma')} | "
            f"{f.get('mma_sync')} | {f.get('setmaxnreg')} | {f.get('warp_specialize')} | {f.get('pointer_loads')} |"
        )
    for part in ("gemm", "fp8"):
        lines += ["", f"## {part}: TFLOP/s (median of do_bench)", ""]
        for row in result.get(part, []):
            cells = ", ".join(
                f"{name} {v['tflops']:.0f}" if "tflops" in v else f"{name}: {v['error']}"
                for name, v in row["impls"].items()
            )
            lines.append(f"- {row.get('dtype', 'e4m3')} {'x'.join(map(str, row['shape']))}: {cells}")
    lines += ["", "## warp_specialize (specialized_dot_kernel, 4 warps)", ""]
    for row in result.get("warp_specialize", []):
        lines.append(f"- {json.dumps(row)}")
    prof = result.get("profile")
    if prof:
        lines += [
            "",
            "## tritonlab profile softmax --solution",
            "",
            f"exit {prof['exit']} (text: profile-softmax.txt)",
        ]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, required=True, help="folder for lesson14.json and lesson14.md")
    parser.add_argument("--quick", action="store_true", help="one shape per part")
    parser.add_argument(
        "--only",
        choices=["compile", "gemm", "warp_specialize", "fp8", "profile"],
        action="append",
        default=None,
    )
    args = parser.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("error: gpu_lesson14.py measures an NVIDIA GPU; none is visible", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    kernels = load(LESSON / "examples" / "hopper_kernels.py", "hopper_kernels")
    import triton

    triton.set_allocator(lambda size, alignment, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
    parts = args.only or ["compile", "gemm", "warp_specialize", "fp8", "profile"]
    shapes = (
        [(4096, 4096, 4096)]
        if args.quick
        else [(4096, 4096, 4096), (8192, 8192, 8192), (2048, 2048, 512), (16, 4096, 4096)]
    )
    result: dict[str, Any] = {"environment": environment(torch)}
    if "compile" in parts:
        result["compile"] = compile_part(torch, kernels)
    if "gemm" in parts:
        result["gemm"] = gemm_part(torch, shapes)
    if "warp_specialize" in parts:
        result["warp_specialize"] = warp_specialize_part(torch, kernels, 4096 if args.quick else 8192)
    if "fp8" in parts:
        result["fp8"] = fp8_part(torch, shapes)
    if "profile" in parts:
        result["profile"] = profile_part(args.out)
    (args.out / "lesson14.json").write_text(json.dumps(result, indent=1, default=str))
    (args.out / "lesson14.md").write_text(markdown(result))
    print(f"wrote {args.out / 'lesson14.json'} and {args.out / 'lesson14.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
