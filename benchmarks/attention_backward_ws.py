"""The warp-specialised Gluon attention backward (`perf/kernels/attention_backward_ws.py`) and its launches against
the Triton backward (`attention_backward.py`'s CONFIGS) and the SDPA backends' backward (cuDNN, flash), on a
Hopper GPU.

    python benchmarks/attention_backward_ws.py --smoke          # gradients only, small shapes
    python benchmarks/attention_backward_ws.py --out bwd.json   # gradients, then 3 interleaved timing rounds

For each shape of issue 38's table (B·H·S·D, causal and full) it takes q, k, v and do at random, o and lse from
our forward, checks every candidate's dq, dk and dv against float32 autograd of the same attention (small shapes)
or against cuDNN's backward (the table's shapes) by the relative error of each gradient (‖x − ref‖ / ‖ref‖,
where the Triton backward's own error is printed beside it), then times each candidate and peer with
``triton.testing.do_bench`` in ``--runs`` interleaved rounds and reports the median TFLOP/s (the backward's
five-product count, ``attention_backward.flops``) and the ratio to the fastest SDPA backend. Needs a CUDA GPU;
the Gluon kernels need compute capability 9.x.
"""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

SHAPES = [(4, 32, 4096, 128), (2, 32, 8192, 128), (1, 32, 16384, 128), (4, 32, 4096, 64)]
SMOKE_SHAPES = [(1, 2, 256, 64), (1, 2, 384, 128), (2, 3, 1024, 128), (1, 4, 512, 64)]
#: a gradient is right when its relative error is below this (bf16 inputs and outputs; the Triton backward's is
#: printed beside it)
REL_TOL = 2e-2


def candidates(head_dim: int) -> dict[str, dict]:
    """The Gluon launches tried for a head dim (its CONFIGS entry first): the ring depths and tile sizes that
    compile without spilling (tests/test_reference_lowering.py holds the defaults)."""
    from tritonlab.perf.kernels import attention_backward_ws

    base = dict(attention_backward_ws.CONFIGS[head_dim])
    out = {"ws": base}
    if head_dim == 128:
        out["ws-dq64"] = {**base, "BLOCK_N2": 64}
        out["ws-2slots"] = {**base, "STAGES": 2}
        # 64-query blocks: fewer, larger products, but the dk/dv pass spills 128-204 bytes there (Triton 3.6)
        out["ws-m64"] = {**base, "BLOCK_M": 64, "STAGES": 2}
    else:
        out["ws-dq128"] = {**base, "BLOCK_N2": 128}
        out["ws-m32"] = {**base, "BLOCK_M": 32, "STAGES": 3}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--smoke", action="store_true", help="gradients on small shapes only")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)

    import torch
    from ws_timing import add_row, finish, hopper_report, interleaved

    from tritonlab.perf.kernels import attention, attention_backward, attention_backward_ws
    from tritonlab.perf.kernels.sdpa import BackwardPeer

    report = hopper_report()
    if report is None:
        return 2

    def reference(q, k, v, do, causal):  # noqa: ANN001, ANN202
        leaves = [t.detach().float().requires_grad_() for t in (q, k, v)]
        out = torch.nn.functional.scaled_dot_product_attention(*leaves, is_causal=causal)
        return torch.autograd.grad(out, leaves, do.float())

    def rel(x, ref) -> float:  # noqa: ANN001
        return ((x.float() - ref.float()).norm() / ref.float().norm()).item()

    shapes = SMOKE_SHAPES if args.smoke else SHAPES
    for B, H, S, D in shapes:
        q, k, v, do = (torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16) for _ in range(4))
        for causal in (False, True):
            o, lse = attention.attention(q, k, v, causal)
            call = (q, k, v, o, lse, do, causal)
            fns = {
                name: functools.partial(
                    attention_backward.attention_backward, *call, config={"GLUON": True, "WS": cfg}
                )
                for name, cfg in candidates(D).items()
            }
            fns["triton"] = functools.partial(attention_backward.attention_backward, *call)
            label = f"{B}x{H}x{S}x{D} {'causal' if causal else 'full'}"
            for name, cfg in candidates(
                D
            ).items():  # else the call would time the Triton kernels under its name
                if not attention_backward_ws.usable(q, k, v, do, lse, cfg):
                    print(f"{label:28} {name:10} not usable here", flush=True)
                    del fns[name]
            if args.smoke:
                ref = reference(q, k, v, do, causal)
            else:
                ref = BackwardPeer("sdpa_cudnn", causal)(q, k, v, o, lse, do)
            ok = {}
            for name, fn in fns.items():
                try:
                    grads = fn()
                    torch.cuda.synchronize()
                except Exception as exc:  # noqa: BLE001 - a launch that does not fit is a result, not the end
                    ok[name] = False
                    print(f"{label:28} {name:10} failed: {type(exc).__name__}: {str(exc)[:200]}", flush=True)
                    report["errors"].append({"shape": label, "name": name, "error": str(exc)[:500]})
                    continue
                errs = [rel(g, r) for g, r in zip(grads, ref, strict=True)]
                good = all(e < REL_TOL for e in errs)
                ok[name] = good
                print(f"{label:28} {name:10} rel err dq {errs[0]:.2e} dk {errs[1]:.2e} dv {errs[2]:.2e}"
                      + ("" if good else "  WRONG"), flush=True)  # fmt: skip
                if not good:
                    report["errors"].append({"shape": label, "name": name, "rel_err": errs})
            if args.smoke:
                continue
            peers = {name: BackwardPeer(name, causal) for name in ("sdpa_cudnn", "sdpa_flash")}
            timed = {n: f for n, f in fns.items() if ok[n]}
            timed.update({n: functools.partial(p, *call[:-1]) for n, p in peers.items()})
            tf, times = interleaved(timed, args.runs, attention_backward.flops(B, H, S, D, causal))
            for peer in peers.values():
                peer.release()
            best_peer = max(peers, key=lambda n: tf[n])
            add_row(report, label, 28, tf, times, best_peer, shape=[B, H, S, D], causal=causal)
    names = [n for n in report["rows"][0]["tflops"] if not n.startswith("sdpa")] if report["rows"] else []
    return finish(report, names, "SDPA backend", args.out)


if __name__ == "__main__":
    raise SystemExit(main())
