"""The warp-specialised Gluon attention forward (`perf/kernels/attention_ws.py`) and its options against the
Triton forward (`attention.py`'s CONFIGS) and the SDPA backends that can win (cuDNN, flash), on a Hopper GPU.

    python benchmarks/attention_ws.py --smoke            # values only, small shapes (a hang ends at --timeout)
    python benchmarks/attention_ws.py --out ws.json      # values, then 3 interleaved timing rounds

For each shape of issue 38's table (B·H·S·D, causal and full) it first checks each candidate's ``o`` and ``lse``
against a float32 computation (small shapes) or against cuDNN's output (the table's shapes), then times every
candidate with ``triton.testing.do_bench`` in ``--runs`` interleaved rounds and reports the median TFLOP/s, and
the ratio to the fastest SDPA backend. Needs a CUDA GPU; the Gluon kernel needs compute capability 9.x.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

SHAPES = [(4, 32, 4096, 128), (2, 32, 8192, 128), (1, 32, 16384, 128), (4, 32, 4096, 64)]
SMOKE_SHAPES = [(1, 2, 256, 64), (1, 2, 384, 128), (2, 3, 1024, 128), (1, 4, 512, 64)]


def candidates(head_dim: int) -> dict[str, dict]:
    """The Gluon launches tried for a head dim (its CONFIGS entry first). Earlier runs measured the ring slots,
    the longest-first causal order and one program per SM (H100-80GB-HBM3 runs 2026-12-06 (94b849e) and
    (ad36972)), the exponentials split between the special-function and FMA units (H100-80GB-HBM3 run 2026-12-06
    (e0b94ae)), three computing warpgroups and a 256-key block at head dim 64 (H100-80GB-HBM3 run 2026-12-06
    (8906b98)). These time the default against ping-pong toggled and, at head dim 64, the two-warpgroup launch."""
    from tritonlab.perf.kernels import attention_ws

    base = dict(attention_ws.CONFIGS[head_dim])
    out = {"ws": base}
    if base["PINGPONG"]:
        out["ws-no-pingpong"] = {**base, "PINGPONG": False}
    else:
        out["ws-pingpong"] = {**base, "PINGPONG": True}
    if head_dim == 64:
        # the default is three warpgroups there: the two-warpgroup launch of head dim 128 beside it
        out["ws-2wg"] = dict(attention_ws.CONFIGS[128])
    return out


def reference(q, k, v, causal: bool):  # noqa: ANN001, ANN201
    """o and natural-log lse in float32."""
    import torch

    s = (q.float() @ k.float().transpose(-1, -2)) / math.sqrt(q.shape[-1])
    if causal:
        n = q.shape[2]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    lse = torch.logsumexp(s, dim=-1)
    return torch.softmax(s, dim=-1) @ v.float(), lse


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--smoke", action="store_true", help="values on small shapes only")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--only", help="comma-separated candidate names to time (default: all)")
    args = parser.parse_args(argv)

    import torch
    from ws_timing import add_row, finish, hopper_report, interleaved

    from tritonlab.perf.kernels import attention, attention_ws

    LOG2E = attention.LOG2E
    report = hopper_report()
    if report is None:
        return 2

    def gluon_fn(cfg):  # noqa: ANN001, ANN202
        def run(q, k, v, causal):  # noqa: ANN001, ANN202
            o = torch.empty_like(q)
            lse = torch.empty(q.shape[:3], device=q.device, dtype=torch.float32)
            attention_ws.launch(q, k, v, o, lse, causal, LOG2E / math.sqrt(q.shape[-1]), cfg)
            return o, lse

        return run

    shapes = SMOKE_SHAPES if args.smoke else SHAPES
    for B, H, S, D in shapes:
        q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        for causal in (False, True):
            fns = {name: gluon_fn(cfg) for name, cfg in candidates(D).items()}
            if args.only:
                keep = set(args.only.split(","))
                fns = {n: f for n, f in fns.items() if n in keep}
            # the Triton kernel that was the default before the Gluon one (its CONFIGS launch)
            fns["triton"] = lambda q, k, v, c: attention.attention(q, k, v, c, config=attention.default_config(
                q.shape[-1], c))  # fmt: skip
            if args.smoke:
                ref_o, ref_lse = reference(q, k, v, causal)
            else:
                ref_o = attention.sdpa_cudnn(q, k, v, causal).float()
                ref_lse = None
            label = f"{B}x{H}x{S}x{D} {'causal' if causal else 'full'}"
            ok = {}
            for name, fn in fns.items():
                try:
                    o, lse = fn(q, k, v, causal)
                    torch.cuda.synchronize()
                except Exception as exc:  # noqa: BLE001 - a launch that does not fit is a result, not the end
                    ok[name] = False
                    print(f"{label:28} {name:12} failed: {type(exc).__name__}: {str(exc)[:200]}", flush=True)
                    report["errors"].append({"shape": label, "name": name, "error": str(exc)[:500]})
                    continue
                err = (o.float() - ref_o).abs().max().item()
                lse_err = (lse - ref_lse).abs().max().item() if ref_lse is not None else None
                good = err < 3e-2 and (lse_err is None or lse_err < 1e-3) and not torch.isnan(o).any().item()
                ok[name] = good
                print(f"{label:28} {name:12} max|o err| {err:.2e}" + (f" lse {lse_err:.2e}" if lse_err else "")
                      + ("" if good else "  WRONG"), flush=True)  # fmt: skip
                if not good:
                    report["errors"].append({"shape": label, "name": name, "o_err": err, "lse_err": lse_err})
            if args.smoke:
                continue
            peers = {
                "sdpa_cudnn": lambda q, k, v, c: attention.sdpa_cudnn(q, k, v, c),
                "sdpa_flash": lambda q, k, v, c: attention.sdpa_flash(q, k, v, c),
            }
            timed = {**{n: f for n, f in fns.items() if ok[n]}, **peers}
            calls = {n: (lambda fn=f, a=(q, k, v, causal): fn(*a)) for n, f in timed.items()}
            tf, times = interleaved(calls, args.runs, attention.flops(B, H, S, D, causal))
            best_peer = max(("sdpa_cudnn", "sdpa_flash"), key=lambda n: tf[n])
            add_row(report, label, 28, tf, times, best_peer, shape=[B, H, S, D], causal=causal)
    names = [n for n in report["rows"][0]["tflops"] if not n.startswith("sdpa")] if report["rows"] else []
    return finish(report, names, "SDPA backend", args.out)


if __name__ == "__main__":
    raise SystemExit(main())
