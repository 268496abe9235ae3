"""Benchmark the lesson's attention kernel against every backend of torch SDPA, on a GPU.

Times, on the same fresh inputs and with the median of `triton.testing.do_bench`:
- this lesson's kernel (non-causal, as in the lesson);
- `scaled_dot_product_attention` as a user calls it (the default: SDPA picks a backend itself);
- each backend forced with `torch.nn.attention.sdpa_kernel`: cuDNN, flash, efficient and math (math only where
  its S x S matrices fit easily in memory); a backend that refuses these inputs is reported and skipped.
Then it names the backend the default picked (the dispatcher's own choice, and the kernels one call launched)
and the fastest backend, and compares the lesson's kernel with both.

    python examples/bench_attention.py                      # B=4 H=32 S=4096 D=128 bf16
    python examples/bench_attention.py --json RUN.json      # also write the record the lesson quotes

On the interpreter (no GPU) it prints a notice and exits 0: the interpreter's timings measure NumPy.
"""

import argparse
import json
import math
import platform
import sys

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
BACKENDS = ("CUDNN_ATTENTION", "FLASH_ATTENTION", "EFFICIENT_ATTENTION", "MATH")


@triton.jit
def attn_fwd_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    o_ptr,
    lse_ptr,
    H,
    S,
    qk_scale,
    sqb,
    sqh,
    sqs,
    sqd,
    skb,
    skh,
    sks,
    skd,
    svb,
    svh,
    svs,
    svd,
    sob,
    soh,
    sos,
    sod,
    slb,
    slh,
    HEAD_D: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    start_m = tl.program_id(0)  # which block of queries
    bh = tl.program_id(1)  # which (batch, head)
    b = (bh // H).to(tl.int64)
    h = (bh % H).to(tl.int64)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_D)
    q_base = q_ptr + b * sqb + h * sqh
    k_base = k_ptr + b * skb + h * skh
    v_base = v_ptr + b * svb + h * svh
    m_ok = offs_m < S
    q = tl.load(q_base + offs_m[:, None] * sqs + offs_d[None, :] * sqd, mask=m_ok[:, None], other=0.0)
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)  # running max, base-2 units
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)  # running sum of exponentials
    acc = tl.zeros([BLOCK_M, HEAD_D], dtype=tl.float32)  # running, unnormalised output
    for start_n in range(0, S, BLOCK_N):
        cols = start_n + offs_n
        n_ok = cols < S
        k = tl.load(k_base + cols[:, None] * sks + offs_d[None, :] * skd, mask=n_ok[:, None], other=0.0)
        s = tl.dot(q, tl.trans(k)) * qk_scale
        s = tl.where(n_ok[None, :], s, float("-inf"))  # the tail: keys past S do not exist
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_base + cols[:, None] * svs + offs_d[None, :] * svd, mask=n_ok[:, None], other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    o = acc / l_i[:, None]
    o_base = o_ptr + b * sob + h * soh
    tl.store(
        o_base + offs_m[:, None] * sos + offs_d[None, :] * sod,
        o.to(o_ptr.dtype.element_ty),
        mask=m_ok[:, None],
    )
    lse = (m_i + tl.log2(l_i)) * 0.6931471805599453  # base 2 -> natural log
    tl.store(lse_ptr + b * slb + h * slh + offs_m, lse, mask=m_ok)


def attention_forward(q, k, v, sm_scale=None, out_dtype=None):
    B, H, S, D = q.shape
    assert k.shape == q.shape and v.shape == q.shape and D in (16, 32, 64, 128)
    if sm_scale is None:
        sm_scale = 1.0 / math.sqrt(D)
    o = torch.empty((B, H, S, D), device=q.device, dtype=out_dtype or q.dtype)
    lse = torch.empty((B, H, S), device=q.device, dtype=torch.float32)
    BLOCK_M, BLOCK_N = (128, 64) if q.is_cuda else (32, 32)
    grid = (triton.cdiv(S, BLOCK_M), B * H)
    attn_fwd_kernel[grid](
        q,
        k,
        v,
        o,
        lse,
        H,
        S,
        sm_scale * 1.4426950408889634,
        *q.stride(),
        *k.stride(),
        *v.stride(),
        *o.stride(),
        lse.stride(0),
        lse.stride(1),
        HEAD_D=D,
        BLOCK_M=BLOCK_M,
        BLOCK_N=BLOCK_N,
        num_warps=8 if q.is_cuda and D == 128 else 4,
    )
    return o, lse


def sdpa(q, k, v):
    return torch.nn.functional.scaled_dot_product_attention(q, k, v)


def median_ms(fn):
    return triton.testing.do_bench(fn, return_mode="median")


def default_choice(q, k, v):
    """The backend SDPA's dispatcher picks for these inputs (a private torch function: None where it is gone)."""
    from torch.nn.attention import SDPBackend

    try:
        return SDPBackend(torch._fused_sdp_choice(q, k, v)).name
    except (AttributeError, RuntimeError, TypeError, ValueError):
        return None


def kernels_launched(fn):
    """The names of the GPU kernels one call of `fn` launches, from the profiler."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return sorted({e.name for e in prof.events() if e.device_type == DeviceType.CUDA})


def summarize(times, unavailable, flops, picked, default_kernels):
    """The record the lesson quotes, from the measured times (ms) — a pure function, so it can be tested
    without a GPU. `times` has "lesson", "default" and one entry per backend that ran."""
    backends = {name: ms for name, ms in times.items() if name in BACKENDS}
    fastest = min(backends, key=backends.get) if backends else None
    out = {
        "ms": dict(times),
        "tflops": {name: flops / ms / 1e9 for name, ms in times.items()},
        "unavailable": dict(unavailable),
        "default_backend": picked,
        "default_kernels": list(default_kernels),
        "fastest_backend": fastest,
        "lesson_vs_default": times["default"] / times["lesson"],
    }
    if fastest is not None:
        out["lesson_vs_fastest"] = backends[fastest] / times["lesson"]
    if "FLASH_ATTENTION" in backends:
        out["lesson_vs_flash"] = backends["FLASH_ATTENTION"] / times["lesson"]
    return out


def bench_attention(B=4, H=32, S=4096, D=128, dtype=torch.bfloat16):
    from torch.nn.attention import SDPBackend, sdpa_kernel

    q, k, v = (torch.randn(B, H, S, D, device=DEVICE, dtype=dtype) for _ in range(3))
    o, _ = attention_forward(q, k, v)
    max_err = (o.float() - sdpa(q, k, v).float()).abs().max().item()
    assert max_err < 2e-2, f"the lesson's kernel disagrees with SDPA by {max_err}"
    flops = 4 * B * H * S * S * D
    times = {
        "lesson": median_ms(lambda: attention_forward(q, k, v)),
        "default": median_ms(lambda: sdpa(q, k, v)),
    }
    unavailable = {}
    free, _ = torch.cuda.mem_get_info()
    for name in BACKENDS:
        if name == "MATH" and 3 * B * H * S * S * 4 > free // 4:  # its fp32 scores and probabilities
            unavailable[name] = "skipped: its S x S matrices would need too much memory here"
            continue
        try:
            with sdpa_kernel(getattr(SDPBackend, name)):
                times[name] = median_ms(lambda: sdpa(q, k, v))
        except RuntimeError as exc:  # "No available kernel": this backend does not take these inputs
            unavailable[name] = (str(exc).strip().splitlines() or ["RuntimeError"])[0][:200]
    record = summarize(
        times, unavailable, flops, default_choice(q, k, v), kernels_launched(lambda: sdpa(q, k, v))
    )
    record.update(
        shape=[B, H, S, D],
        dtype=str(dtype).replace("torch.", ""),
        causal=False,
        max_abs_diff_vs_default=max_err,
        env={
            "gpu": torch.cuda.get_device_name(),
            "torch": torch.__version__,
            "cuda": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version(),
            "triton": triton.__version__,
            "python": platform.python_version(),
        },
    )
    label = {"lesson": "this lesson's kernel", "default": "SDPA default"}
    for name, ms in times.items():
        print(f"{label.get(name, 'SDPA ' + name):<28} {ms:8.3f} ms  {record['tflops'][name]:6.0f} TFLOP/s")
    for name, why in unavailable.items():
        print(f"{'SDPA ' + name:<28} not timed: {why}")
    print(
        f"the default picked: {record['default_backend']} (kernels: {', '.join(record['default_kernels'])})"
    )
    print(f"the fastest backend: {record['fastest_backend']}")
    print(
        f"this lesson's kernel runs at {record['lesson_vs_default']:.2f}x the default's speed"
        + (
            f", {record['lesson_vs_fastest']:.2f}x the fastest backend's"
            if "lesson_vs_fastest" in record
            else ""
        )
        + (f", {record['lesson_vs_flash']:.2f}x the flash backend's" if "lesson_vs_flash" in record else "")
    )
    return record


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", default="", help="write the record to this file")
    parser.add_argument("--shape", default="4,32,4096,128", help="B,H,S,D")
    parser.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16"])
    args = parser.parse_args()
    if DEVICE != "cuda":
        print("The attention benchmark needs a GPU: the interpreter's timings measure NumPy.")
        sys.exit(0)
    B, H, S, D = (int(x) for x in args.shape.split(","))
    record = bench_attention(B, H, S, D, getattr(torch, args.dtype))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(record, f, indent=1)
        print("wrote", args.json)
