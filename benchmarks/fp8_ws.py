"""The warp-specialised Gluon fp8 GEMM (`perf/kernels/matmul_fp8_ws.py`) and its options against the Triton
kernel (`matmul_fp8.py`'s "large" launch) and every `torch._scaled_mm` scaling, on a Hopper GPU (issue 39).

    python benchmarks/fp8_ws.py --smoke            # values only, edge shapes
    python benchmarks/fp8_ws.py --out fp8ws.json   # values, then interleaved timing rounds

Values first: every candidate against the float64 product of the dequantized operands (the smoke shapes
reach past every tile edge: M, N and K not multiples of the tiles, one and an odd number of K blocks), and on
the timed shapes against the Triton kernel's output. Then each candidate and peer is timed with
`triton.testing.do_bench` (median) in ``--runs`` interleaved rounds, and the report gives TFLOP/s and the ratio
to the fastest `_scaled_mm` (per tensor, per row or block-scaled) per shape and as a geometric mean.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (4096, 11008, 4096), (8192, 4096, 14336)]
SMOKE_SHAPES = [(65, 128, 128), (200, 136, 208), (384, 640, 384), (1000, 1000, 1664), (128, 256, 4096)]


def candidates() -> dict[str, dict]:
    """The Gluon launches tried: the default (``CONFIG``) first, then one option changed at a time."""
    from tritonlab.perf.kernels import matmul_fp8_ws as ws

    base = dict(ws.CONFIG)
    out = {"ws": base, "ws-pipe" if not base["PIPE"] else "ws-no-pipe": {**base, "PIPE": not base["PIPE"]}}
    for stages in (3, 5):
        if stages != base["STAGES"]:
            out[f"ws-{stages}-stages"] = {**base, "STAGES": stages}
    out["ws-group-16"] = {**base, "GROUP_M": 16}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--smoke", action="store_true", help="values on the edge shapes only")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)

    import torch
    from ws_timing import add_row, finish, hopper_report, interleaved

    from tritonlab.perf.kernels import matmul_fp8 as k
    from tritonlab.perf.kernels import matmul_fp8_ws as ws
    from tritonlab.perf.kernels.cases_compute import ScaledMM

    report = hopper_report(values=[])
    if report is None:
        return 2

    def gluon(cfg):  # noqa: ANN001, ANN202
        def run(a, sa, w, sw, out):  # noqa: ANN001, ANN202
            ws.launch(a, sa, w, sw, out, cfg)
            return out

        return run

    def triton_large(a, sa, w, sw, out):  # noqa: ANN001, ANN202
        return k.matmul_fp8(a, sa, w, sw, out, config={**k.CONFIGS["large"], "GLUON": False})

    fns = {name: gluon(cfg) for name, cfg in candidates().items()}
    fns["triton"] = triton_large
    shapes = SMOKE_SHAPES + ([] if args.smoke else SHAPES)
    for m, n, kk in shapes:
        a, sa = k.quantize(torch.randn(m, kk, device="cuda"), 1)
        w, sw = k.quantize(torch.randn(n, kk, device="cuda") * kk**-0.5, k.SCALE_BLOCK)
        timed_shape = (m, n, kk) in SHAPES
        if timed_shape:
            ref = triton_large(a, sa, w, sw, torch.empty(m, n, device="cuda", dtype=torch.bfloat16)).double()
            against = "triton"
        else:
            ref = k.dequantize(a, sa, 1) @ k.dequantize(w, sw, k.SCALE_BLOCK).T
            against = "float64"
        top = max(ref.abs().max().item(), 1e-30)
        label = f"{m}x{n}x{kk}"
        ok = {}
        outs = {}
        for name, fn in fns.items():
            out = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
            try:
                fn(a, sa, w, sw, out)
                torch.cuda.synchronize()
            except Exception as exc:  # noqa: BLE001 - a launch that does not fit is a result, not the end
                ok[name] = False
                print(f"{label:18} {name:14} failed: {type(exc).__name__}: {str(exc)[:200]}", flush=True)
                report["errors"].append({"shape": label, "name": name, "error": str(exc)[:500]})
                continue
            rel = (out.double() - ref).abs().max().item() / top
            # bf16 rounding of the result is 2^-8 of the value; the accumulation orders differ between kernels
            good = not torch.isnan(out).any().item() and rel < 1e-2
            ok[name] = good
            outs[name] = out
            report["values"].append(
                {"shape": [m, n, kk], "name": name, "against": against, "max_rel_err": rel}
            )
            print(f"{label:18} {name:14} max err / max |{against}| {rel:.2e}" + ("" if good else "  WRONG"),
                  flush=True)  # fmt: skip
            if not good:
                report["errors"].append({"shape": label, "name": name, "max_rel_err": rel})
        if not timed_shape:
            continue
        peers = {f"scaled_mm {s}": ScaledMM(s) for s in ("tensorwise", "rowwise", "blockwise")}
        timed = {}
        for name, fn in fns.items():
            if ok.get(name):
                timed[name] = lambda fn=fn, out=outs[name], ops=(a, sa, w, sw): fn(*ops, out)
        for name, peer in peers.items():
            try:
                peer(a, sa, w, sw)
                timed[name] = lambda peer=peer, ops=(a, sa, w, sw): peer(*ops)
            except Exception as exc:  # noqa: BLE001 - a scaling this torch has no kernel for
                print(f"{label:18} {name} unavailable: {str(exc)[:160]}", flush=True)
        tf, times = interleaved(timed, args.runs, 2 * m * n * kk)
        best = max((nm for nm in tf if nm.startswith("scaled_mm")), key=lambda nm: tf[nm])
        add_row(report, label, 18, tf, times, best, shape=[m, n, kk])
    return finish(report, list(fns), "_scaled_mm", args.out)


if __name__ == "__main__":
    raise SystemExit(main())
