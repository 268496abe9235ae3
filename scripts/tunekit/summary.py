"""What one tuning run says: per group of cases (head dim and mask; GEMM shape class) each variant's geometric
mean against the fastest peer, the best one, the recommendation (a configuration to put in CONFIGS, given only
where it was correct and timed on every case of its group and beats the current default), and what the target
"≥ 1.00× the fastest peer" would read with the best variants."""

from __future__ import annotations

import math
from typing import Any

from tunekit.plan import geomean


def _groups(section: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for case in section.get("cases", []):
        out.setdefault(case["group"], []).append(case)
    return out


def summarize(result: dict[str, Any]) -> dict[str, Any]:
    """Per section and group: every variant's geo mean × fastest peer over the group's cases (only variants
    correct and timed on all of them), the best, the default, and the recommendation."""
    out: dict[str, Any] = {}
    for name, section in result.get("sections", {}).items():
        groups: dict[str, Any] = {}
        best_ratios: list[float] = []
        for group, cases in _groups(section).items():
            cases = [c for c in cases if c.get("fastest_peer")]
            if not cases:
                continue
            variants: dict[str, dict[str, Any]] = {}
            for case in cases:
                for impl, rec in case["impls"].items():
                    if rec["kind"] == "variant":
                        variants.setdefault(impl, {"config": rec.get("config"), "ratios": []})
                        if "x_fastest_peer" in rec:
                            variants[impl]["ratios"].append(rec["x_fastest_peer"])
            scored = {v: geomean(d["ratios"]) for v, d in variants.items() if len(d["ratios"]) == len(cases)}
            default = next((v for v in variants if v.startswith("default")), None)
            entry: dict[str, Any] = {"cases": [c["case"] for c in cases], "geo_x_fastest_peer": scored}
            if scored:
                best = max(scored, key=scored.get)
                entry["best"] = {"name": best, "geo": scored[best], "config": variants[best]["config"]}
                best_ratios += [c["impls"][best]["x_fastest_peer"] for c in cases]
                if default in scored:
                    entry["default"] = {"name": default, "geo": scored[default]}
                    if best != default and scored[best] > scored[default]:
                        entry["recommend"] = {
                            "config": variants[best]["config"],
                            "gain_over_default": scored[best] / scored[default],
                        }
            groups[group] = entry
        out[name] = {
            "groups": groups,
            "geo_x_fastest_peer_with_best": geomean(best_ratios) if best_ratios else None,
        }
    return out


def _config(cfg: dict[str, Any] | None, compact: bool) -> str:
    if not cfg:
        return "—"
    if compact:
        return "`" + ",".join(f"{k}={v}" for k, v in cfg.items()) + "`"
    return f"`{cfg}`"


def _f(v: Any, fmt: str) -> str:
    return "—" if v is None or (isinstance(v, float) and not math.isfinite(v)) else format(v, fmt)


def markdown(result: dict[str, Any], compact: bool = False) -> str:
    """The run as tables (tune.md); ``compact`` (what the script prints last) leaves out the error list and
    shortens the recommendations, so the whole summary fits the tail of a device call's output."""
    env = result.get("env", {})
    lines = [
        "# Reference-kernel tuning run",
        "",
        f"{env.get('date', '?')}, {env.get('gpu', 'no GPU')}, triton {env.get('triton', '?')}, torch "
        f"{env.get('torch', '?')}, {result.get('elapsed_s', '?')} s. ratio = fastest peer's ms / ours (> 1: ours "
        "faster); medians of the interleaved rounds; hidden-launch timer.",
        "",
    ]
    summ = result.get("summary", {})
    for name, section in result.get("sections", {}).items():
        lines += [f"## {name}: {section.get('describe', '')}", ""]
        if section.get("error"):
            lines += [f"section error: {section['error']}", ""]
        lines += [
            "| case | fastest peer | ms | TFLOP/s | best ours | ms | TFLOP/s | ratio | default ratio |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for case in section.get("cases", []):
            peer, mine = case.get("fastest_peer") or {}, case.get("best_variant") or {}
            default = next((r for n, r in case["impls"].items() if n.startswith("default")), {})
            lines.append(
                f"| {case['case']} | {peer.get('name', '—')} | {_f(peer.get('ms'), '.4f')} | "
                f"{_f(peer.get('tflops'), '.0f')} | {mine.get('name', '—')} | {_f(mine.get('ms'), '.4f')} | "
                f"{_f(mine.get('tflops'), '.0f')} | {_f(mine.get('x_fastest_peer'), '.3f')} | "
                f"{_f(default.get('x_fastest_peer'), '.3f')} |"
            )
        if section.get("skipped_cases"):
            lines.append(f"\nnot reached (budget): {', '.join(section['skipped_cases'])}")
        errors = sorted(
            {
                f"{n}: {r['error'][:100]}"
                for c in section.get("cases", [])
                for n, r in c["impls"].items()
                if r.get("error")
            }
        )
        if errors and compact:
            lines += [
                "",
                f"{len(errors)} implementations failed or were unavailable (see tune.md / tune.json)",
            ]
        elif errors:
            lines += ["", "errors / unavailable: " + "; ".join(errors[:40])]
        groups = summ.get(name, {}).get("groups", {})
        if groups:
            lines += [
                "",
                "| group | best variant | geo ratio | default geo ratio | recommendation |",
                "|---|---|---|---|---|",
            ]
            for group, g in groups.items():
                best, default = g.get("best", {}), g.get("default", {})
                rec = g.get("recommend")
                lines.append(
                    f"| {group} | {best.get('name', '—')} | {_f(best.get('geo'), '.3f')} | "
                    f"{_f(default.get('geo'), '.3f')} | "
                    f"{_config(rec['config'], compact) if rec else 'keep the default'} |"
                )
            lines.append(
                f"\nwith the best variant per group: geo ratio "
                f"{_f(summ.get(name, {}).get('geo_x_fastest_peer_with_best'), '.3f')} (target ≥ 1.00)"
            )
        lines.append("")
    return "\n".join(lines)
