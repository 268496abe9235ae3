"""`tritonlab doctor`: lesson 2's "verify the stack" — versions, GPU, backend, sandbox layers, sanity kernel."""

from __future__ import annotations

import platform
import sys
from importlib import metadata
from typing import Any

from tritonlab import __version__, config
from tritonlab.runs import backend, capacity

PACKAGES = ("torch", "triton", "numpy", "typer", "rich", "fastapi", "uvicorn", "matplotlib")

LAYER_ONE = [
    "fresh child process per run (forked from a warm worker)",
    "new session; the whole process tree is killed on timeout or Stop",
    "wall-clock timeout and CPU-time limit",
    "file-size limit and output cap",
    "private temporary run directory, removed afterwards",
    "environment built from an allowlist (no tokens or secrets)",
    "runs are not dumpable (no core files; other runs cannot ptrace them or read their /proc entries)",
    "the parent never follows links or FIFOs a run planted (own log descriptor; run dir sanitized)",
]


# Issue 34: listed for layer 1 when the worker's own check proved it (the hardened probe lists it itself).
RUN_PID_NAMESPACE = (
    "each run in a PID namespace of its own, with its own /proc: the worker, the warm children and the other "
    "runs have no pid there, so it can signal, trace or read none of them"
)


def sandbox_report(chosen: str) -> dict:
    """Layer 1 always; layer 2 only as far as a real probe of bubblewrap verified it (hardening.probe)."""
    from tritonlab.runs import hardening, runfolder
    from tritonlab.runs.cgroups import proof

    probe = hardening.probe(chosen)
    report = {
        "hardened": probe["hardened"],
        "mode": probe["mode"],
        "reason": probe["reason"],
        "layers": list(LAYER_ONE) + (probe["layers"] if probe["hardened"] else []),
        "evidence": probe["evidence"],
        "run_limits": proof.report(probe["hardened"]) | {"run_folder": runfolder.probe()},
    }
    if chosen == "gpu":
        from tritonlab.runs import gpu_memory
        from tritonlab.runs.limits import gpu_memory_cap

        line = gpu_memory.probe()
        report["gpu_memory"] = {
            "cap_bytes": gpu_memory_cap(),
            "kind": "soft",
            "how": "torch.cuda.set_per_process_memory_fraction in each GPU run before learner code "
            "(TRITONLAB_GPU_MEMORY_GIB)",
            "line": line
            | {
                "how": "the driver's count (NVML) summed over each run's processes every "
                f"{config.gpu_memory_line()} s (TRITONLAB_GPU_MEMORY_LINE); past the cap plus "
                f"{gpu_memory.LINE_EXTRA >> 30} GiB the run is ended",
            },
            "not_covered": (
                "memory taken around torch's allocator between two readings of the driver's count"
                if line["held"]
                else "the CUDA context and memory allocated outside torch's caching allocator: "
                + line["reason"]
            )
            + "; without MPS or MIG nothing stronger exists, and GPU settings are left untouched",
        }
    if probe.get("missing") and probe["hardened"]:
        report["missing"] = probe["missing"]  # the walls between runs this machine's kernel did not give
    if not probe["hardened"]:
        report["not_active"] = probe["layers"]  # what the probe saw working; NOT used without the rest
        report["warning"] = (
            "learner code runs WITHOUT the hardened layer (bubblewrap, unprivileged user): "
            + probe["reason"]
            + ". Fine for your own code on your own machine; do not serve "
            "other people's code (install bubblewrap: `apt-get install bubblewrap`)."
        )
    return report


def version_tuple(text: str) -> tuple[int, ...]:
    parts = []
    for piece in text.split("+")[0].split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def known_problems(versions: dict[str, str | None], chosen: str) -> list[dict]:
    problems = []
    for name in ("torch", "triton", "numpy"):
        if versions.get(name) is None:
            problems.append(
                {
                    "problem": f"{name} is not installed",
                    "fix": "run `make install` (or `pip install -e .`) in the tritonlab folder",
                }
            )
    triton_v, numpy_v = versions.get("triton"), versions.get("numpy")
    if triton_v and numpy_v and chosen == "interpreter":
        if version_tuple(triton_v)[:2] <= (3, 6) and version_tuple(numpy_v)[:2] >= (2, 4):
            problems.append(
                {
                    "problem": f"numpy {numpy_v} with the Triton {triton_v} interpreter is a known-bad "
                    "combination (the interpreter's numpy calls fail)",
                    "fix": "pip install 'numpy<2.4', or upgrade triton",
                }
            )
    if triton_v and version_tuple(triton_v)[:2] < (3, 2):
        problems.append(
            {
                "problem": f"triton {triton_v} is older than this course supports (3.2+)",
                "fix": "pip install -U triton",
            }
        )
    return problems


def run_doctor(requested: str | None = None) -> dict[str, Any]:
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    report: dict[str, Any] = {
        "tritonlab": __version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "packages": versions,
        "data_dir": str(config.home()),
        "course_dir": str(config.course_dir()),
    }
    gpu = backend.probe_gpu(fresh=True)  # doctor verifies: never the cached answer
    report["gpu"] = {k: gpu.get(k) for k in ("cuda", "name", "capability", "cuda_version", "triton_backend")}
    report["gpu"]["driver"] = backend.driver_version()
    problems: list[dict] = []
    try:
        choice = backend.choose(requested)
        report["backend"] = {"chosen": choice.backend, "reason": choice.reason}
    except backend.BackendError as exc:
        report["backend"] = {"chosen": None, "reason": str(exc)}
        problems.append({"problem": str(exc), "fix": "use --backend interpreter, or fix the GPU stack"})
        choice = None
    problems += known_problems(versions, choice.backend if choice else "interpreter")
    report["sandbox"] = sandbox_report(choice.backend if choice else "interpreter")
    try:  # the run queue's slots a server would have here (runs/capacity.py; TRITONLAB_SLOTS overrides)
        slots = capacity.slots(choice.backend if choice else "interpreter", gpu)
        report["run_slots"] = {"count": slots.count, "reason": slots.reason}
    except capacity.SlotsError as exc:  # a malformed TRITONLAB_SLOTS
        report["run_slots"] = {"count": None, "reason": str(exc)}
        problems.append({"problem": str(exc), "fix": "unset TRITONLAB_SLOTS or give it a positive number"})
    report["sanity"] = None
    if choice is not None and versions.get("torch") and versions.get("triton"):
        report["sanity"] = sanity_kernel(choice.backend, report, problems)
    report["problems"] = problems
    report["ok"] = not problems
    return report


def sanity_kernel(chosen: str, report: dict, problems: list[dict]) -> dict:
    """Check the reference vector copy in the sandbox: if this fails, the stack is at fault, not your code."""
    from tritonlab.service import Service

    try:
        service = Service(backend=chosen)
        exercise = service.exercise("vector-copy")
        verdict = service.check(exercise, file=exercise.solution, record=False)
        info = service.zygote().info
        service.close()
    except Exception as exc:  # noqa: BLE001 - doctor reports every failure as a problem with a fix
        problems.append(
            {
                "problem": f"could not run the sanity kernel: {type(exc).__name__}: {exc}",
                "fix": "reinstall with `make install`; run `tritonlab doctor -v` and report the output",
            }
        )
        return {"passed": False, "error": str(exc)}
    if chosen == "interpreter":
        report["sandbox"]["layers"].append("address-space limit (2 GiB above the worker's own)")
    if report["sandbox"]["hardened"] and not (info.get("isolated_runs") and info.get("uid")):
        problems.append(
            {
                "problem": "the probe verified the hardened sandbox, but the worker is not running in it",
                "fix": "report this as a bug; meanwhile set TRITONLAB_SANDBOX=hardened to refuse to run",
            }
        )
    if info.get("subreaper"):
        report["sandbox"]["layers"].append("child subreaper: escaped grandchildren are collected and killed")
    # what the worker's own check proved on a real child (basicwalls.self_check)
    walls = info.get("walls") or {}
    report["sandbox"]["walls"] = walls
    if not report["sandbox"]["hardened"] and walls.get("pid") and walls.get("proc"):  # hardened: probe's
        report["sandbox"]["layers"].append(RUN_PID_NAMESPACE)
    result = {
        "passed": verdict.passed,
        "cases": len(verdict.cases),
        "seconds": round(verdict.duration_s, 2),
        "worker_import_seconds": info.get("import_seconds"),
    }
    if not verdict.passed:
        first = verdict.failures[0] if verdict.failures else None
        problems.append(
            {
                "problem": "the reference vector copy failed on the "
                f"{chosen} backend: {first.kind + ': ' + first.message if first else '?'}",
                "fix": "the environment is at fault (not your kernel): reinstall torch/triton, "
                "or try --backend interpreter",
            }
        )
    return result


def print_report(report: dict, out: Any, lang: str = "en") -> None:
    """The report for people, in `lang` (src/tritonlab/locales/: [doctor] labels; the report's own English
    lines are matched against [doctor_text] and [backend_reason], and shown in English when not listed)."""
    from tritonlab.i18n import t, translate_known

    def known(text: str) -> str:
        return translate_known("doctor_text", translate_known("backend_reason", text, lang), lang)

    out.print(f"[bold]tritonlab {report['tritonlab']}[/] · Python {report['python']} · {report['platform']}")
    for name, version in report["packages"].items():
        out.print(f"  {name:<11} {version or '[red]' + t('doctor.missing', lang) + '[/]'}")
    gpu = report["gpu"]
    if gpu.get("cuda"):
        out.print(
            t(
                "doctor.gpu",
                lang,
                name=gpu["name"],
                capability=gpu["capability"],
                driver=gpu.get("driver"),
                target=gpu.get("triton_backend"),
            )
        )
    else:
        out.print(t("doctor.no_gpu", lang))
    chosen = report["backend"]
    out.print(t("doctor.backend", lang, backend=chosen["chosen"], reason=known(chosen["reason"])))
    if slots := report.get("run_slots"):
        out.print(t("doctor.run_slots", lang, reason=slots["reason"]))
    box = report["sandbox"]
    out.print(
        t("doctor.sandbox", lang, mode=t("doctor.hardened" if box["hardened"] else "doctor.basic", lang))
    )
    for layer in box["layers"]:
        out.print(f"  ✔ {known(layer)}")
    if box.get("warning"):
        out.print(f"[yellow]{t('doctor.warning', lang)}[/] {known(box['warning'])}")
    limits = box.get("run_limits") or {}
    warn = f"[yellow]{t('doctor.warning', lang)}[/]"
    for name, entry in (limits.get("controllers") or {}).items():  # per controller: active, or why not
        if entry["state"] == "active":
            out.print(f"  ✔ {known(f'per-run cgroup limit ({name}): a probe exceeded it and was stopped')}")
        elif entry["state"] == "set, not probed":
            out.print(f"  ✔ per-run cgroup {name}: {entry['reason']}")
        else:
            out.print(
                f"{warn} per-run cgroup {name}: {entry['state']} ({entry['reason']}); instead: {entry['instead']}"
            )
    if limits and not limits.get("per_run_cgroups"):
        out.print(f"{warn} {known(limits.get('note') or limits['reason'])}")
    if gpu_cap := box.get("gpu_memory"):
        out.print(
            f"  ✔ soft GPU memory cap per run: {gpu_cap['cap_bytes'] / (1 << 30):.1f} GiB ({gpu_cap['how']}; "
            f"not covered: {gpu_cap['not_covered']})"
        )
    folder = limits.get("run_folder") or {}
    if folder.get("capped"):
        cap = f"{folder['bytes'] >> 20} MiB, {folder['files']} files"
        out.print(f"  ✔ {known(f'run folder capped ({cap}): a probe folder refused past its cap')}")
    elif folder:
        out.print(
            f"[yellow]{t('doctor.warning', lang)}[/] {known('run folders are not capped: ' + folder['reason'])}"
        )
    sanity = report.get("sanity")
    if sanity:
        mark = t("doctor.sanity_passed" if sanity.get("passed") else "doctor.sanity_failed", lang)
        out.print(
            t("doctor.sanity", lang, mark=mark, cases=sanity.get("cases", 0), seconds=sanity.get("seconds"))
        )
    for p in report["problems"]:
        out.print(
            f"[red]{t('doctor.problem', lang)}[/] {known(p['problem'])}\n"
            f"  [yellow]{t('doctor.fix', lang)}[/] {known(p['fix'])}"
        )
    if report["ok"]:
        out.print(f"[bold green]{t('doctor.all_ok', lang)}[/]")
