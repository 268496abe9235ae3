"""scripts/load_gpu.py's figures from its check records, and their markdown table.

A record whose verdict disagrees with what its file must give (a right file failing, a wrong file passing, the
endless loop not failing as `timeout`, any `worker-lost`) is a mismatch; a check that got no verdict for a
reason other than the run's end is an error. Both make the run fail. The accounting holds by construction
and is checked here: every submitted check ends as exactly one of verdict, unfinished (cut by the run's end)
or error.
"""

from __future__ import annotations

import time

from ray_throughput import percentile, spread


def expected_ok(record: dict) -> bool:
    """Whether a record's verdict is what its file must give."""
    kinds = set(record.get("kinds", []))
    if "worker-lost" in kinds:
        return False
    if record["kind"] == "right":
        return record["passed"]
    if record["kind"] == "timeout":
        return not record["passed"] and "timeout" in kinds
    return not record["passed"]


def summarize(records: list[dict], planned: int) -> dict:
    judged = [r for r in records if "passed" in r]
    unfinished = [r for r in records if "passed" not in r and r.get("unfinished")]
    errors = [r for r in records if "passed" not in r and not r.get("unfinished")]
    mismatches = [r for r in judged if not expected_ok(r)]
    by_kind: dict[str, dict[str, int]] = {
        k: {"passed": 0, "failed": 0} for k in ("right", "wrong", "timeout")
    }
    verdict_kinds: dict[str, int] = {}
    for r in judged:
        by_kind[r["kind"]]["passed" if r["passed"] else "failed"] += 1
        for kind in r["kinds"] if not r["passed"] else ["passed"]:
            verdict_kinds[kind] = verdict_kinds.get(kind, 0) + 1
    submitted = [r for r in records if "submitted_at" in r]
    first = min((r["submitted_at"] for r in submitted), default=None)
    last_sent = max((r["submitted_at"] for r in submitted), default=None)
    done_at = [r["submitted_at"] + r["latency_s"] for r in judged]
    steady = [r["submitted_at"] + r["latency_s"] for r in judged if r["kind"] != "timeout"]
    # the window: first submission to the last verdict that was not a timeout's (a timeout's verdict comes at
    # its wall-clock limit, long after the load; it still counts when it lands inside the window)
    window = (max(steady) - first) if steady and first is not None else None
    span = (max(done_at) - first) if done_at and first is not None else None
    in_window = sum(1 for t in done_at if window and t <= first + window + 1e-9)
    latencies = [r["latency_s"] for r in judged]
    quick = [r["latency_s"] for r in judged if r["kind"] != "timeout"]
    waits = [float(r["queue_wait_s"]) for r in judged if isinstance(r.get("queue_wait_s"), int | float)]
    nodes: dict[str, int] = {}
    for r in judged:
        nodes[r.get("node") or "?"] = nodes.get(r.get("node") or "?", 0) + 1
    summary = {
        "planned": planned,
        "submitted": len(records),
        "verdicts": len(judged),
        "unfinished": len(unfinished),
        "errors": len(errors),
        "mismatches": len(mismatches),
        "accounted": len(judged) + len(unfinished) + len(errors) == len(records),
        "rate_limited_429": sum(r.get("rate_limited", 0) for r in records),
        "window_s": round(window, 2) if window else None,
        "checks_per_minute": round(60 * in_window / window, 1) if window else None,
        "submitted_per_minute": round(60 * (len(submitted) - 1) / (last_sent - first), 1)
        if len(submitted) > 1 and last_sent > first
        else None,
        "checks_per_minute_all": round(60 * len(judged) / span, 1) if span else None,
        "latency_s": spread(quick),
        "latency_s_with_timeouts": spread(latencies),
        "queue_wait_s": spread(waits),
        "queue_wait_reported": len(waits),
        "ended_after_verdict_p50_s": percentile(
            [r["ended_s"] - r["latency_s"] for r in judged if "ended_s" in r], 50
        ),
        "by_kind": by_kind,
        "verdict_kinds": dict(sorted(verdict_kinds.items())),
        "checks_per_node": nodes,
        "children": children(judged),
        "runs_cpu_per_check": runs_cpu(judged),
        "mismatch_examples": [_brief(r) for r in mismatches[:10]],
        "error_examples": [_brief(r) for r in errors[:10]],
    }
    summary["ok"] = summary["accounted"] and not errors and not mismatches and bool(judged)
    return summary


CHILD_FIGURES = ("cpu_s", "faults", "switches")


def _timing(judged: list[dict], key: str, kinds: type | tuple = (int, float)) -> list[float]:
    """A verdict timing's values over the judged checks, where it is a plain number of `kinds`."""
    values = [(r.get("timings") or {}).get(key) for r in judged]
    return [float(v) for v in values if isinstance(v, kinds) and not isinstance(v, bool)]


def children(judged: list[dict]) -> dict:
    """Medians over the judged checks of what each of a check's two children used, as its worker reaped it
    (the verdict's `timings`: CPU seconds, page faults, involuntary context switches), and of the kernels the
    replay compiled itself; None where no verdict said."""
    out = {
        f"{child}_{figure}": percentile(_timing(judged, f"{child}_{figure}"), 50)
        for child in ("check", "replay")
        for figure in CHILD_FIGURES
    }
    out["replay_compiled"] = percentile(_timing(judged, "replay_compiled", int), 50)
    out["check_compiled"] = percentile(_timing(judged, "check_compiled", int), 50)
    # host launchers copied into the learner's cache before a GPU check child (runs/launchers.py)
    out["launchers_shared"] = percentile(_timing(judged, "launchers_shared", int), 50)
    # the share of checks whose precompile predicted a first check's kernels from the reference
    predicted = _timing(judged, "precompile_predicted", int)
    out["predicted_share"] = round(len(predicted) / len(judged), 3) if judged else None
    return out


# every run a check makes whose CPU its verdict carries (`{run}_cpu_s`), in the order a check makes them
RUNS = ("check", "precompile", "compile", "replay", "speed_record", "speed_time")


def runs_cpu(judged: list[dict]) -> dict:
    """Core-seconds per judged check of each kind of run (the sum of `{run}_cpu_s` over the checks, divided
    by their number: a run a check did not make counts 0), and `all`: what the verdicts account for, to set
    beside the sampler's CPU of the processes below the server (what no verdict names: warm children never
    used, runs stopped before their reply)."""
    if not judged:
        return {}
    out = {run: round(sum(_timing(judged, f"{run}_cpu_s")) / len(judged), 3) for run in RUNS}
    out["all"] = round(sum(out.values()), 3)
    return out


WARM = ("made", "taken", "ready_ahead", "dropped_unused")


def warm_per_check(counts: dict, verdicts: int) -> dict | None:
    """The server's warm children over the load (its `/api/status` counts after minus before), per check
    with a verdict; None when the server keeps none (no pool: the interpreter, a cluster) or did not say."""
    before, after = counts.get("before"), counts.get("after")
    if not verdicts or not isinstance(before, dict) or not isinstance(after, dict):
        return None
    try:
        return {k: round((float(after[k]) - float(before[k])) / verdicts, 2) for k in WARM}
    except (KeyError, TypeError, ValueError):
        return None


def warm_cell(w: dict | None) -> str:
    if not w:
        return "n/a (no warm children)"
    return " / ".join(f"{w[k]:.2f}" for k in WARM)


def runs_cell(r: dict) -> str:
    if not r:
        return "n/a"
    return ", ".join(f"{run.replace('_', ' ')} {r[run]:.2f}" for run in RUNS) + f" ({r['all']:.2f} in all)"


def child_cell(c: dict) -> str:
    """The report's cell for `children`: per child "CPU s, faults, switches", then the replay's compiles."""

    def one(child: str) -> str:
        cpu, faults, switches = (c.get(f"{child}_{f}") for f in CHILD_FIGURES)
        if cpu is None and faults is None and switches is None:
            return "n/a"
        shown = [
            "n/a" if v is None else f"{v:{spec}}"
            for v, spec in ((cpu, ".2f"), (faults, ".0f"), (switches, ".0f"))
        ]
        return f"{shown[0]} s, {shown[1]} faults, {shown[2]} switches"

    compiled, own = c.get("replay_compiled"), c.get("check_compiled")
    tail = "" if compiled is None else f"; the replay compiled {compiled:.0f} kernels"
    tail += "" if own is None else f", the check child {own:.0f}"
    shared = c.get("launchers_shared")
    tail += "" if shared is None else f"; {shared:.0f} host launchers shared into the learner's cache"
    return f"{one('check')} / {one('replay')}{tail}"


def _brief(r: dict) -> dict:
    keep = ("index", "exercise", "kind", "file", "passed", "kinds", "first_failure", "error", "learner")
    return {k: r[k] for k in keep if k in r}


def per_check(split: dict | None, verdicts: int) -> str:
    """The sampler's CPU split over the load divided by the checks judged, as "a / b / c / d (total)"."""
    if not split or not verdicts:
        return "n/a"
    parts = [split[k] / verdicts for k in ("server", "tree", "client", "rest")]
    return " / ".join(f"{v:.2f}" for v in parts) + f" ({split['machine'] / verdicts:.2f} in all)"


def below_cell(split: dict | None, verdicts: int) -> str:
    """The processes below the server by kind, per check with a verdict (sampler.py's `below`)."""
    below = (split or {}).get("below")
    if not below or not verdicts:
        return "n/a"
    cell = " / ".join(f"{below[k] / verdicts:.2f}" for k in ("zygote", "runs_ended", "runs_alive", "other"))
    top = ", ".join(f"{name} {v / verdicts:.2f}" for name, v in below["other_by_command"].items() if v > 0)
    return cell + (f" (other: {top})" if top else "")


def markdown(report: dict) -> str:
    s, cfg, util = report["summary"], report["config"], report["utilisation"]
    gpu, cpu = util["gpu"], util["cpu"]
    lat, wait = s["latency_s"], s["queue_wait_s"]
    gpu_cell = (
        f"mean {gpu['util_mean_pct']} % / max {gpu['util_max_pct']} % over {gpu['gpus']} GPU(s), "
        f"memory max {gpu['mem_max_mib']:.0f} MiB ({gpu['samples']} samples)"
        if gpu.get("available")
        else f"n/a ({gpu.get('reason')})"
    )
    kinds = ", ".join(f"{k}: {v}" for k, v in s["verdict_kinds"].items()) or "none"
    expect = "; ".join(f"{k} {v['passed']} passed / {v['failed']} failed" for k, v in s["by_kind"].items())
    env = ", ".join(f"`{k}={v}`" for k, v in sorted(cfg["env"].items())) or "none"
    return "\n".join(
        [
            f"Measured by `scripts/load_gpu.py` on {time.strftime('%Y-%m-%d', time.gmtime(report['started_unix']))}: "
            f"mix `{cfg['mix']}` ({len(cfg['exercises'])} exercises), `--executor {cfg['executor']}`, "
            f"`--backend {report['backend']}`, {cfg['learners']} classroom learners through the web API of a real "
            f"`tritonlab serve --classroom`, {cfg['checks']} checks planned"
            + (f" at {cfg['rate']}/min" if cfg["rate"] else " (each learner again as soon as its last ended)")
            + (f", each learner's check edited {cfg['rechecks']} times" if cfg.get("rechecks", 1) > 1 else "")
            + (", every check's text unlike any other's (`--distinct`)" if cfg.get("distinct") else "")
            + f"; extra environment: {env}.",
            "",
            "| figure | value |",
            "| --- | --- |",
            f"| checks submitted / with a verdict / cut by the run's end / errors | {s['submitted']} / "
            f"{s['verdicts']} / {s['unfinished']} / {s['errors']} |",
            f"| checks per minute (first submission to the last non-timeout verdict, {s['window_s']} s) | "
            f"**{s['checks_per_minute']}** |",
            f"| latency, submission to verdict, p50 / p95 / max (timeouts left out) | {lat['p50']} / {lat['p95']} / "
            f"{lat['max']} s |",
            f"| queue wait (the verdict's `timings.queue_wait_s`), p50 / p95 / max | {wait['p50']} / {wait['p95']} / "
            f"{wait['max']} s |",
            f"| verdicts by what the file must give | {expect} |",
            f"| verdicts by kind | {kinds} |",
            f"| verdicts unlike what the file must give | {s['mismatches']} |",
            f"| checks submitted per minute (the offered rate reached) / 429 answers waited out | "
            f"{s['submitted_per_minute']} / {s['rate_limited_429']} |",
            f"| GPU utilisation (`nvidia-smi` every 0.5 s) | {gpu_cell} |",
            f"| CPU busy, whole machine ({cpu['cores']} cores), mean / p95 | {cpu['busy_mean_pct']} % / "
            f"{cpu['busy_p95_pct']} % |",
            f"| CPU core-seconds per check with a verdict: the server's process / the processes below it (runs) "
            f"/ this script / the rest of the machine | {per_check(cpu.get('split_core_s'), s['verdicts'])} |",
            f"| the processes below the server, core-seconds per check: the zygotes' own work / runs ended "
            f"(their warm start included) / runs and warm children alive at the end / other | "
            f"{below_cell(cpu.get('split_core_s'), s['verdicts'])} |",
            f"| per check, median: the check child / the replay child (CPU seconds, page faults, involuntary "
            f"context switches, as reaped) | {child_cell(s.get('children') or {})} |",
            f"| core-seconds per check with a verdict, by run, as their verdicts report them | "
            f"{runs_cell(s.get('runs_cpu_per_check') or {})} |",
            f"| warm children per check: made / taken by a run / taken ready ahead / dropped unused | "
            f"{warm_cell(s.get('warm_children_per_check'))} |",
            f"| server start / whole run | {report['timeline'].get('server_start_s')} s / "
            f"{report['timeline'].get('total_s')} s |",
            *hostile_rows(cfg.get("hostile") or [], report.get("hostile") or {}),
        ]
    )


def hostile_rows(files: list[str], h: dict) -> list[str]:
    """The table's row for `--hostile` learners (none without them): their files, and their checks on their own."""
    if not files:
        return []
    kinds = ", ".join(f"{k}: {v}" for k, v in (h.get("verdict_kinds") or {}).items()) or "none"
    named = ", ".join(f"`{f}`" for f in files)
    return [
        f"| hostile learners ({named}), not in the figures above: checks / with a verdict / cut / errors; "
        f"verdicts by kind; 429 answers | {h.get('checks')} / {h.get('verdicts')} / {h.get('unfinished')} / "
        f"{h.get('errors')}; {kinds}; {h.get('rate_limited_429')} |"
    ]
