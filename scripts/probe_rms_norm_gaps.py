#!/usr/bin/env python3
"""Where the short row kernels (RMSNorm forward and backward, bf16 softmax) lose their bandwidth, measured on a
GPU (docs/benchmarks.md cites it).

    python scripts/probe_rms_norm_gaps.py --out FILE.json [--only backward,forward,variants,backward_variants]

- backward (16384×4096 and 8192×8192 bf16, 16384×4096 fp32, and 65536×4096 bf16 to separate a fixed cost
  from the per-row rate): the default; the main kernel alone (no second, summing kernel); the same persistent
  loop with the two row reductions taken out (loads x and dy, stores x·dy: what the loop's structure moves);
  registers and spills of each compiled kernel; the launch's num_stages 1–4 and a few configurations.
- forward bf16 8192×8192 (0.9 points short, torch.compile 93 % there): rows × warps × persistent stages, with
  registers and spills, next to torch.compile in the same process.
- variants (bf16 softmax at its four shapes, RMSNorm forward at 8192×8192): the course kernel's one-pass
  program, copied here with switches: the load's eviction policy, the store's cache modifier, and the row
  reductions taken out (same loads and stores, no max/sum): how much of the gap the reductions account for.
- backward_variants (the backward's three shapes): the course's persistent loop, copied here with switches: the
  two row sums in one two-value `tl.reduce` (one cross-warp exchange instead of two), dw kept per row of the
  step and summed over the rows once after the loop (no cross-row reduction per step), and the next step's x
  and dy loaded before this step's reductions (a register double buffer); each checked against the course
  kernel's dx and dw, across programs per SM, warps and rows per step.
Same protocol as `tritonlab bench` (do_bench median, L2 flushed); % of this GPU's measured copy bandwidth.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from tritonlab import config  # noqa: E402
from tritonlab.perf import bench  # noqa: E402
from tritonlab.perf.kernels import rms_norm, rms_norm_backward  # noqa: E402
from tritonlab.perf.kernels._common import next_pow2, num_sms  # noqa: E402
from tritonlab.perf.peaks import get_peaks  # noqa: E402


@triton.jit
def _loop_only_kernel(
    x_ptr, dy_ptr, dx_ptr, M, N, rows_per_program, stride, BLOCK_N: tl.constexpr, ROWS: tl.constexpr
):
    # the backward's persistent loop and memory traffic (read x, dy; write dx) without its row reductions
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    cmask = cols < N
    first = (pid * rows_per_program).to(tl.int64)
    last = tl.minimum(first + rows_per_program, M)
    for start in range(first, last, ROWS):
        rows = start + tl.arange(0, ROWS)
        mask = (rows < last)[:, None] & cmask[None, :]
        offs = rows[:, None] * stride + cols[None, :]
        x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(dy_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        tl.store(dx_ptr + offs, (x * dy).to(dx_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _add_pair(a0, b0, a1, b1):
    return a0 + a1, b0 + b1


@triton.jit
def _rms_bwd_variant_kernel(
    x_ptr,
    w_ptr,
    dy_ptr,
    dx_ptr,
    dw_ptr,
    M,
    N,
    rows_per_program,
    stride,
    eps,
    BLOCK_N: tl.constexpr,
    ROWS: tl.constexpr,
    FUSE: tl.constexpr,
    DW2D: tl.constexpr,
    PREFETCH: tl.constexpr,
):
    # the course's backward loop (perf/kernels/rms_norm_backward.py) with three switches (see the docstring)
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    cmask = cols < N
    w = tl.load(w_ptr + cols, mask=cmask, other=0.0).to(tl.float32)
    first = (pid * rows_per_program).to(tl.int64)
    last = tl.minimum(first + rows_per_program, M)
    if DW2D:
        dw_rows = tl.zeros([ROWS, BLOCK_N], dtype=tl.float32)
    else:
        dw_acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    rows = first + tl.arange(0, ROWS)
    mask = (rows < last)[:, None] & cmask[None, :]
    offs = rows[:, None] * stride + cols[None, :]
    x_next = tl.load(x_ptr + offs, mask=mask, other=0.0)
    dy_next = tl.load(dy_ptr + offs, mask=mask, other=0.0)
    for start in range(first, last, ROWS):
        rows = start + tl.arange(0, ROWS)
        mask = (rows < last)[:, None] & cmask[None, :]
        offs = rows[:, None] * stride + cols[None, :]
        if PREFETCH:
            x = x_next.to(tl.float32)
            dy = dy_next.to(tl.float32)
            rows_n = start + ROWS + tl.arange(0, ROWS)
            mask_n = (rows_n < last)[:, None] & cmask[None, :]
            offs_n = rows_n[:, None] * stride + cols[None, :]
            x_next = tl.load(x_ptr + offs_n, mask=mask_n, other=0.0)
            dy_next = tl.load(dy_ptr + offs_n, mask=mask_n, other=0.0)
        else:
            x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
            dy = tl.load(dy_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        g = dy * w[None, :]
        if FUSE:
            ss, gx = tl.reduce((x * x, g * x), 1, _add_pair)
        else:
            ss = tl.sum(x * x, axis=1)
            gx = tl.sum(g * x, axis=1)
        rstd = 1.0 / tl.sqrt(ss / N + eps)
        c = gx / N
        dx = rstd[:, None] * g - x * (rstd * rstd * rstd * c)[:, None]
        tl.store(dx_ptr + offs, dx.to(dx_ptr.dtype.element_ty), mask=mask)
        if DW2D:
            dw_rows += dy * x * rstd[:, None]
        else:
            dw_acc += tl.sum(dy * x * rstd[:, None], axis=0)
    if DW2D:
        dw_acc = tl.sum(dw_rows, axis=0)
    tl.store(dw_ptr + pid * N + cols, dw_acc, mask=cmask)


@triton.jit
def _rows_variant_kernel(
    x_ptr,
    w_ptr,
    out_ptr,
    M,
    N,
    stride,
    BLOCK_N: tl.constexpr,
    ROWS: tl.constexpr,
    OP: tl.constexpr,
    POLICY: tl.constexpr,
    STORE_CM: tl.constexpr,
    REDUCE: tl.constexpr,
):
    # one tile of ROWS whole rows per program, as the course's one-pass softmax (OP 0) and RMSNorm (OP 1)
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows < M)[:, None] & (cols < N)[None, :]
    offs = rows.to(tl.int64)[:, None] * stride + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0, eviction_policy=POLICY).to(tl.float32)
    if OP == 0:
        if REDUCE:
            x = tl.where(mask, x, -float("inf"))
            e = tl.exp(x - tl.max(x, axis=1)[:, None])
            y = e * (1.0 / tl.sum(e, axis=1))[:, None]
        else:
            y = tl.exp(x)
    else:
        w = tl.load(w_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
        if REDUCE:
            y = x * (1.0 / tl.sqrt(tl.sum(x * x, axis=1) / N + 1e-6))[:, None] * w[None, :]
        else:
            y = x * w[None, :]
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask, cache_modifier=STORE_CM)


VARIANTS = (
    ("", "", True),
    ("evict_first", "", True),
    ("", ".cs", True),
    ("evict_first", ".cs", True),
    ("", "", False),
)


def variants(roof: float) -> list[dict]:
    from tritonlab.perf.kernels import softmax

    cases = [
        ("softmax", m, n, softmax.default_config(n, 2))
        for m, n in ((65536, 1024), (16384, 4096), (4096, 16384), (2048, 32768))
    ]
    cases += [
        ("rms_norm", 8192, 8192, c)
        for c in ({"rows": 2, "num_warps": 16}, {"rows": 2, "num_warps": 8}, {"rows": 1, "num_warps": 8})
    ]
    out = []
    for op, m, n, cfg in cases:
        if cfg.get("kind") == "online":  # the 64 KiB bf16 row: the one-pass program at 32 warps, as fp32 uses
            cfg = {"rows": 1, "num_warps": 32}
        row = variant_case(op, m, n, int(cfg["rows"]), int(cfg["num_warps"]), roof)
        out.append(row)
        print(json.dumps(row), flush=True)
        torch.cuda.empty_cache()
    return out


def variant_case(op: str, m: int, n: int, rows: int, warps: int, roof: float) -> dict:
    from tritonlab.perf.kernels import softmax

    x = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    y = torch.empty_like(x)
    row: dict = {"kernel": op, "shape": [m, n], "config": {"rows": rows, "num_warps": warps}, "timed": []}
    course = (lambda: softmax.softmax(x)) if op == "softmax" else (lambda: rms_norm.rms_norm(x, w))
    row["course_default"] = timed(course, 2 * m * n * 2, roof)
    for policy, cm, reduce in VARIANTS:

        def run(policy: str = policy, cm: str = cm, reduce: bool = reduce) -> None:
            _rows_variant_kernel[(triton.cdiv(m, rows),)](
                x, w, y, m, n, x.stride(0), BLOCK_N=next_pow2(n), ROWS=rows, OP=0 if op == "softmax" else 1,
                POLICY=policy, STORE_CM=cm, REDUCE=reduce, num_warps=warps,
            )  # fmt: skip

        r = timed(run, 2 * m * n * 2, roof) | regs(_rows_variant_kernel)
        row["timed"].append({"load_policy": policy, "store_cm": cm, "reductions": reduce, **r})
    return row


def regs(kernel) -> dict:  # noqa: ANN001 - the newest compiled specialisation of a JITFunction
    try:
        cache = kernel.device_caches[torch.cuda.current_device()][0]
        compiled = list(cache.values())[-1]
        compiled._init_handles()
        return {"n_regs": compiled.n_regs, "n_spills": compiled.n_spills}
    except Exception as exc:  # noqa: BLE001 - reported, not fatal
        return {"regs_error": f"{type(exc).__name__}: {exc}"[:120]}


def timed(fn, nbytes: int, roof: float) -> dict:  # noqa: ANN001
    try:
        t = bench.time_ms(fn, gpu=True)
    except Exception as exc:  # noqa: BLE001
        return {"error": f"{type(exc).__name__}: {exc}"[:200]}
    return {"ms": round(t["ms"], 5), "pct_copy": round(100 * bench.gbps(nbytes, t["ms"]) / roof, 1)}


def backward(roof: float) -> list[dict]:
    out = []
    for m, n, dt in (
        (16384, 4096, torch.bfloat16),
        (8192, 8192, torch.bfloat16),
        (16384, 4096, torch.float32),
        (65536, 4096, torch.bfloat16),
    ):
        row = backward_case(m, n, dt, roof)
        out.append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "sweep"}), flush=True)
        torch.cuda.empty_cache()
    return out


def backward_inputs(m: int, n: int, dt: torch.dtype) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, int]:
    """x, dy, the weight, and the bytes the backward moves."""
    x = torch.randn(m, n, device="cuda", dtype=dt)
    dy = torch.randn(m, n, device="cuda", dtype=dt)
    w = torch.randn(n, device="cuda", dtype=dt)
    return x, dy, w, rms_norm_backward.bytes_moved(m, n, x.element_size())


def backward_case(m: int, n: int, dt: torch.dtype, roof: float) -> dict:
    x, dy, w, nbytes = backward_inputs(m, n, dt)
    base = rms_norm_backward.default_config(m, n, x.device)
    row: dict = {"shape": [m, n], "dtype": str(dt).split(".")[-1], "default": base}
    row["whole"] = timed(lambda: rms_norm_backward.rms_norm_backward(x, w, dy), nbytes, roof)
    row["whole"] |= regs(rms_norm_backward._rms_bwd_kernel)
    # the main kernel alone: the summing kernel and the partials' read-back left out
    rpp = triton.cdiv(m, base["programs"])
    progs = triton.cdiv(m, rpp)
    dx, part = torch.empty_like(x), torch.empty(progs, n, device="cuda", dtype=torch.float32)
    kw = {"BLOCK_N": next_pow2(n), "ROWS": base["rows"], "num_warps": base["num_warps"]}
    prefetch = rms_norm_backward.prefetches(base, n)

    def main_only() -> None:
        rms_norm_backward._rms_bwd_kernel[(progs,)](
            x, w, dy, dx, part, m, n, rpp, x.stride(0), dy.stride(0), dx.stride(0), 1e-6, ATOMIC=False,
            PREFETCH=prefetch, **kw,
        )  # fmt: skip

    def loop_only() -> None:
        _loop_only_kernel[(progs,)](x, dy, dx, m, n, rpp, x.stride(0), **kw)

    row["main_kernel_only"] = timed(main_only, nbytes, roof)
    row["loop_without_reductions"] = timed(loop_only, nbytes, roof) | regs(_loop_only_kernel)
    sweep = []
    sms = num_sms(0)
    for per_sm, warps, rows in ((1, 8, 4), (1, 8, 2), (1, 16, 4), (2, 8, 2), (2, 4, 2), (1, 4, 2)):
        for stages in (1, 2, 3, 4):
            cfg = {"programs": min(m, sms * per_sm), "num_warps": warps, "rows": rows, "num_stages": stages}
            if rows * next_pow2(n) // (warps * 32) > 64:
                continue
            r = timed(lambda cfg=cfg: rms_norm_backward.rms_norm_backward(x, w, dy, config=cfg), nbytes, roof)
            sweep.append({"config": cfg, **r, **regs(rms_norm_backward._rms_bwd_kernel)})
    row["sweep"] = sweep
    return row


DEADLINE = [float("inf")]  # monotonic time after which the variant probe stops timing (--seconds)
BACKWARD_SWITCHES = (  # (FUSE, DW2D, PREFETCH)
    (False, False, False),
    (True, False, False),
    (False, True, False),
    (True, True, False),
    (False, False, True),
    (True, True, True),
)


def backward_variants(roof: float) -> list[dict]:
    out = []
    for m, n, dt in (
        (16384, 4096, torch.bfloat16),
        (8192, 8192, torch.bfloat16),
        (16384, 4096, torch.float32),
    ):
        row = backward_variant_case(m, n, dt, roof)
        print(json.dumps({k: v for k, v in row.items() if k != "variants"} | {"best": row["variants"][:4]}))
        out.append(row)
        torch.cuda.empty_cache()
    return out


def backward_variant_case(m: int, n: int, dt: torch.dtype, roof: float) -> dict:
    x, dy, w, nbytes = backward_inputs(m, n, dt)
    want_dx, want_dw = rms_norm_backward.rms_norm_backward(x, w, dy)
    tol = 2e-2 if dt == torch.bfloat16 else 1e-4
    row: dict = {"shape": [m, n], "dtype": str(dt).split(".")[-1]}
    row["course"] = timed(lambda: rms_norm_backward.rms_norm_backward(x, w, dy), nbytes, roof)
    sms = num_sms(0)
    found = []
    for per_sm, warps, rows in ((1, 8, 4), (1, 8, 2), (1, 16, 4), (1, 8, 1)):  # 2 per SM: slower (call V)
        if rows * next_pow2(n) // (warps * 32) > 64:
            continue
        rpp = triton.cdiv(m, sms * per_sm)
        progs = triton.cdiv(m, rpp)
        dx = torch.empty_like(x)
        part = torch.empty(progs, n, device="cuda", dtype=torch.float32)
        for fuse, dw2d, prefetch in BACKWARD_SWITCHES:
            if time.monotonic() > DEADLINE[0]:
                row["cut"] = "the --seconds budget ran out: variants left untimed"
                break
            launch = functools.partial(
                _rms_bwd_variant_kernel[(progs,)], x, w, dy, dx, part, m, n, rpp, x.stride(0), 1e-6,
                BLOCK_N=next_pow2(n), ROWS=rows, FUSE=fuse, DW2D=dw2d, PREFETCH=prefetch, num_warps=warps,
            )  # fmt: skip
            entry: dict = {"per_sm": per_sm, "num_warps": warps, "rows": rows, "fuse": fuse, "dw2d": dw2d}
            entry["prefetch"] = prefetch
            try:
                launch()
                torch.cuda.synchronize()
            except Exception as exc:  # noqa: BLE001 - reported, not fatal
                found.append(entry | {"error": f"{type(exc).__name__}: {exc}"[:200]})
                continue
            entry["dx_ok"] = bool(torch.allclose(dx.float(), want_dx.float(), rtol=tol, atol=tol))
            entry["dw_ok"] = bool(torch.allclose(part.sum(0), want_dw.float(), rtol=1e-2, atol=1e-2 * m**0.5))
            found.append(entry | timed(launch, nbytes, roof) | regs(_rms_bwd_variant_kernel))
    row["variants"] = sorted(found, key=lambda r: -r.get("pct_copy", 0))
    return row


def forward(roof: float) -> dict:
    m, n = 8192, 8192
    x = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    nbytes = 2 * m * n * 2
    row: dict = {"shape": [m, n], "dtype": "bfloat16", "default": rms_norm.default_config(n, 2)}
    row["default_timed"] = timed(lambda: rms_norm.rms_norm(x, w), nbytes, roof) | regs(
        rms_norm._rms_norm_onepass_kernel
    )

    def peer(x, w):  # noqa: ANN001 - the same recipe as the bench's torch.compile peer
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()).to(x.dtype)

    compiled = torch.compile(peer, dynamic=False)
    row["torch.compile"] = timed(lambda: compiled(x, w), nbytes, roof)
    sweep = []
    for rows in (1, 2, 4):
        for warps in (8, 16, 32):
            for stages, per_sm in ((0, 0), (2, 1), (2, 2), (3, 2), (2, 4)):
                cfg = {
                    "kind": "onepass",
                    "rows": rows,
                    "num_warps": warps,
                    "stages": stages,
                    "per_sm": per_sm,
                }
                r = timed(lambda cfg=cfg: rms_norm.rms_norm(x, w, config=cfg), nbytes, roof)
                sweep.append({"config": cfg, **r, **regs(rms_norm._rms_norm_onepass_kernel)})
    row["sweep"] = sorted(sweep, key=lambda r: -r.get("pct_copy", 0))
    print(json.dumps({k: v for k, v in row.items() if k != "sweep"} | {"best": row["sweep"][:3]}), flush=True)
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument(
        "--only",
        default="",
        help="comma-separated: backward, forward, variants, backward_variants (default: all)",
    )
    ap.add_argument(
        "--seconds", type=float, default=0, help="backward_variants stops timing after this (0: no limit)"
    )
    args = ap.parse_args()
    if args.seconds:
        DEADLINE[0] = time.monotonic() + args.seconds
    if not torch.cuda.is_available():
        print("needs an NVIDIA GPU", file=sys.stderr)
        return 2
    config.use_trusted_triton_cache()
    peaks = get_peaks()
    roof = peaks["copy_gbps"]
    parts = {"backward": backward, "forward": forward, "variants": variants}
    parts["backward_variants"] = backward_variants
    only = [p for p in args.only.split(",") if p] or list(parts)
    report = {"env": bench.environment(), "peaks": peaks} | {name: parts[name](roof) for name in only}
    args.out.write_text(json.dumps(report, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
