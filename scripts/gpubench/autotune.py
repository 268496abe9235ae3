"""The matmul autotune study (lesson 10): every configuration of a space timed on tuning and held-out shapes;
the pick made on the tuning shapes, and what it loses on the held-out ones."""

from __future__ import annotations

from gpubench.common import bench, dev, empty_cache, log, timed

MM_SPACE: list[dict] = [
    {"kernel": "tma", "BM": 128, "BN": 256, "BK": 64, "GROUP_M": 8, "num_warps": 8, "num_stages": 3},
    {"kernel": "tma", "BM": 128, "BN": 256, "BK": 64, "GROUP_M": 8, "num_warps": 8, "num_stages": 4},
    {"kernel": "tma", "BM": 128, "BN": 128, "BK": 64, "GROUP_M": 8, "num_warps": 8, "num_stages": 4},
    {"kernel": "tma", "BM": 128, "BN": 128, "BK": 64, "GROUP_M": 8, "num_warps": 4, "num_stages": 4},
    {"kernel": "tma", "BM": 128, "BN": 128, "BK": 128, "GROUP_M": 8, "num_warps": 8, "num_stages": 3},
    {"kernel": "tma", "BM": 256, "BN": 128, "BK": 64, "GROUP_M": 8, "num_warps": 8, "num_stages": 3},
    {"kernel": "tma", "BM": 64, "BN": 256, "BK": 64, "GROUP_M": 8, "num_warps": 4, "num_stages": 4},
    {
        "kernel": "tma",
        "BM": 128,
        "BN": 256,
        "BK": 64,
        "GROUP_M": 8,
        "num_warps": 8,
        "num_stages": 3,
        "flatten": True,
    },
    {
        "kernel": "tma",
        "BM": 128,
        "BN": 256,
        "BK": 64,
        "GROUP_M": 8,
        "num_warps": 8,
        "num_stages": 3,
        "warp_spec": True,
    },
    {
        "kernel": "tma",
        "BM": 128,
        "BN": 128,
        "BK": 64,
        "GROUP_M": 8,
        "num_warps": 8,
        "num_stages": 4,
        "flatten": True,
        "warp_spec": True,
    },
    {"kernel": "ptr", "BM": 128, "BN": 256, "BK": 64, "GROUP_M": 8, "num_warps": 8, "num_stages": 3},
    {"kernel": "ptr", "BM": 128, "BN": 128, "BK": 64, "GROUP_M": 8, "num_warps": 4, "num_stages": 4},
]
TUNE_SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (4096, 11008, 4096), (2048, 8192, 2048)]
HOLDOUT_SHAPES = [
    (3072, 3072, 3072),
    (6144, 6144, 6144),
    (8192, 2048, 8192),
    (1024, 8192, 8192),
    (4096, 4096, 1024),
    (12288, 4096, 4096),
]


def cfg_name(c: dict) -> str:
    s = f"{c['kernel']} {c['BM']}x{c['BN']}x{c['BK']} w{c['num_warps']} s{c['num_stages']}"
    return s + (" flat" if c.get("flatten") else "") + (" ws" if c.get("warp_spec") else "")


def autotune_study(torch, mod, space: list[dict] | None = None, rep: float = 40) -> dict:
    """Time every config on tune and held-out shapes; pick on tune, report the loss on held-out."""
    space = space or MM_SPACE
    shapes = TUNE_SHAPES + HOLDOUT_SHAPES
    table: dict[str, dict[str, float | None]] = {}
    errors: dict[str, str] = {}
    cublas: dict[str, float] = {}
    dt = torch.bfloat16
    inputs = {}
    for m, n, k in shapes:
        inputs[(m, n, k)] = (
            torch.randn(m, k, device=dev()).to(dt),
            (torch.randn(k, n, device=dev()) / k**0.5).to(dt),
        )
    for m, n, k in shapes:
        a, b = inputs[(m, n, k)]
        t = timed(lambda a=a, b=b: torch.matmul(a, b), rep=rep)
        cublas[f"{m}x{n}x{k}"] = bench.tflops(2 * m * n * k, t["ms"]) if "ms" in t else None
    for c in space:
        name = cfg_name(c)
        table[name] = {}
        for m, n, k in shapes:
            a, b = inputs[(m, n, k)]
            key = f"{m}x{n}x{k}"
            try:
                c_out = mod.matmul(a, b, config=c)
                if key in ("4096x4096x4096", "1024x8192x8192"):
                    ref = a.float() @ b.float()
                    err = float((c_out.float() - ref).norm() / ref.norm())
                    if not err < 1e-2:
                        raise RuntimeError(f"wrong result, rel_err={err:.2e}")
            except Exception as exc:
                errors[name] = f"{type(exc).__name__}: {str(exc)[:300]}"
                table[name] = {f"{m}x{n}x{k}": None for m, n, k in shapes}
                break
            t = timed(lambda a=a, b=b, c=c: mod.matmul(a, b, config=c), rep=rep)
            table[name][key] = bench.tflops(2 * m * n * k, t["ms"]) if "ms" in t else None
        log(f"autotune {name}: " + " ".join(f"{v:.0f}" if v else "-" for v in table[name].values()))
    del inputs
    empty_cache(torch)
    tune_keys = [f"{m}x{n}x{k}" for m, n, k in TUNE_SHAPES]
    hold_keys = [f"{m}x{n}x{k}" for m, n, k in HOLDOUT_SHAPES]
    scores = {
        name: bench.geomean(row[k] or 0 for k in tune_keys)
        for name, row in table.items()
        if all(row.get(k) for k in tune_keys)
    }
    tuned = max(scores, key=scores.get) if scores else None
    report = []
    for key in tune_keys + hold_keys:
        col = {name: row.get(key) for name, row in table.items() if row.get(key)}
        if not col or tuned is None:
            continue
        best = max(col, key=col.get)
        report.append(
            {
                "shape": key,
                "set": "tune" if key in tune_keys else "holdout",
                "tuned_config": tuned,
                "tuned_tflops": col.get(tuned),
                "best_config": best,
                "best_tflops": col[best],
                "loss_pct": 100 * (1 - (col.get(tuned) or 0) / col[best]),
                "cublas_tflops": cublas.get(key),
            }
        )
    return {
        "dtype": "bf16",
        "space": [cfg_name(c) for c in space],
        "space_configs": space,
        "tune_shapes": tune_keys,
        "holdout_shapes": hold_keys,
        "tflops": table,
        "errors": errors,
        "cublas_tflops": cublas,
        "tune_scores": scores,
        "tuned_config": tuned,
        "report": report,
        "holdout_mean_loss_pct": (
            sum(r["loss_pct"] for r in report if r["set"] == "holdout")
            / max(1, sum(r["set"] == "holdout" for r in report))
        ),
    }
