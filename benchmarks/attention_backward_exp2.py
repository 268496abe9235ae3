"""The attention backward's exponentials split between the special-function unit and the FMA units
(``config["poly"] = 2``: every other 2^x by a cubic, `perf/kernels/_common.exp2_split_asm`) against its default
and every SDPA backend's backward, on a GPU.

    python benchmarks/attention_backward_exp2.py --out bwd.json

For each shape of issue 38's table (causal and full) it first compares both forms' dq, dk, dv with cuDNN's
gradients of the same inputs (relative error over all three), then times them with `bench.measure_case` (the
protocol of `bench --all`: fresh inputs, the launch hidden behind a GPU-side spin, each peer's backward alone) in
``--runs`` interleaved rounds and reports the median TFLOP/s and the ratio to the fastest backend of the row.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rep", type=float, default=60.0, help="ms of repetitions per timing (60)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)

    import torch

    from tritonlab.perf import bench
    from tritonlab.perf.kernels import attention_backward as ab
    from tritonlab.perf.kernels.cases_compute import attention_backward_cases

    if not torch.cuda.is_available():
        print("needs a CUDA GPU")
        return 2
    torch.manual_seed(0)
    report: dict = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": [], "errors": []}
    for case in attention_backward_cases("cuda"):
        D, causal = case.shape[-1], bool(case.extra["causal"])
        poly_cfg = {**ab.CONFIGS[D], "poly": 2}
        variants = {
            "default": case.ours,
            "poly2": lambda q, k, v, o, lse, do, c=causal, cfg=poly_cfg: ab.attention_backward(
                q, k, v, o, lse, do, c, config=cfg
            ),
        }
        label = f"{'x'.join(map(str, case.shape))} {'causal' if causal else 'full'}"
        inputs = case.make()
        cudnn = case.peers["sdpa_cudnn"]
        ref_flat = torch.cat([t.float().flatten() for t in cudnn(*inputs)])
        cudnn.release()
        for name, fn in variants.items():
            got = torch.cat([t.float().flatten() for t in fn(*inputs)])
            err = ((got - ref_flat).norm() / ref_flat.norm()).item()
            print(f"{label:28} {name:8} rel err vs cuDNN's gradients {err:.2e}", flush=True)
            if not err < 2e-2:
                report["errors"].append({"shape": label, "name": name, "rel_err": err})
        del inputs, ref_flat
        ms: dict[str, list[float]] = {}
        for _ in range(args.runs):
            for name, fn in variants.items():
                row = bench.measure_case(dataclasses.replace(case, ours=fn), None, peers=(name == "default"),
                                         rep=args.rep)  # fmt: skip
                for impl, entry in row["impls"].items():
                    if "ms" in entry:
                        ms.setdefault(name if impl == "triton" else impl, []).append(entry["ms"])
        tf = {n: case.nflops / (statistics.median(t) * 1e-3) / 1e12 for n, t in ms.items()}
        peers = [n for n in tf if n not in variants]
        best = max(peers, key=lambda n: tf[n])
        report["rows"].append({"shape": list(case.shape), "causal": causal, "tflops": tf, "ms": ms,
                               "fastest_peer": best})  # fmt: skip
        print(
            f"{label:28} " + "  ".join(f"{n} {tf[n]:.0f} ({tf[n] / tf[best]:.3f}×)" for n in tf), flush=True
        )
    for name in ("default", "poly2"):
        ratios = [
            r["tflops"][name] / r["tflops"][r["fastest_peer"]] for r in report["rows"] if name in r["tflops"]
        ]
        if ratios and len(ratios) == len(report["rows"]):
            gm = math.exp(sum(map(math.log, ratios)) / len(ratios))
            report.setdefault("geomean_vs_fastest", {})[name] = gm
            print(f"geomean vs the fastest backend: {name} {gm:.3f}×")
    report["date"] = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())
    if args.out:
        args.out.write_text(json.dumps(report, indent=1))
    return 1 if report["errors"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
