"""`tritonlab profile` (profiling/, cli/profile.py, the web route, `%profile`).

Without a GPU (every test but the last): the CLI says nothing was timed, shows the static view that a real
sandboxed inspect child compiled for cuda:90, and exits 0 — through the real command in a subprocess, the real
web app's route and a real IPython shell. The parent-side validation of the child's hostile `profile.json`,
the reading of Proton's tree and the rates against the measured roofs are tested on data shaped like what the
child and Proton write. On a GPU (marked `gpu`): `tritonlab profile softmax --solution` times the kernel under
Proton.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import has_cuda

ROOT = Path(__file__).resolve().parent.parent
SOFTMAX = ROOT / "course" / "08-softmax" / "exercises" / "softmax" / "solution.py"
BASE = "http://127.0.0.1:8000"
ORIGIN = {"Origin": BASE}
TOKEN = "test-token-profile-0123456789"


def tritonlab(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "TRITONLAB_HOME": str(tmp_path / "home"),
        "TRITONLAB_WORKSPACE": str(tmp_path / "ws"),
    }
    # this checkout first; what the environment adds after it (a GPU machine's carried wheels)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-m", "tritonlab", *args], capture_output=True, text=True, env=env, timeout=600
    )


@pytest.mark.skipif(has_cuda(), reason="the no-GPU path")
def test_profile_without_a_gpu_prints_the_static_view_and_exits_0(tmp_path: Path) -> None:
    done = tritonlab(tmp_path, "profile", "softmax", "--solution")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "No GPU here" in done.stdout and "nothing was timed" in done.stdout
    assert "softmax_kernel:" in done.stdout and "registers per thread" in done.stdout
    assert "program(s) per SM" in done.stdout
    as_json = tritonlab(tmp_path, "profile", "tma-matmul", "--solution", "--json")
    assert as_json.returncode == 0, as_json.stderr
    data = json.loads(as_json.stdout)
    assert data["gpu"] is False and data["static"]["target"] == "cuda:90"
    (kernel,) = data["static"]["kernels"]
    assert kernel["kernel"] == "tma_matmul_kernel" and kernel["resources"]["registers"] > 0
    assert kernel["features"]["tma_loads"] > 0 and kernel["features"]["wgmma"] > 0  # compiled, not assumed
    broken = tmp_path / "broken.py"
    broken.write_text("import nothing_of_that_name\n")
    bad = tritonlab(tmp_path, "profile", "softmax", "--file", str(broken))
    assert bad.returncode == 1 and "could not be imported" in bad.stdout, bad.stdout + bad.stderr
    usage = tritonlab(tmp_path, "profile", "softmax", "--file", str(tmp_path / "missing.py"))
    assert usage.returncode == 2 and "does not exist" in usage.stderr


def test_the_profile_job_mode_is_a_named_entry() -> None:
    from tritonlab.runs.zygote import ENTRIES

    module, function = ENTRIES["profile"].split(":")
    assert module == "tritonlab.profiling.child" and function == "run_profile"
    assert callable(getattr(__import__(module, fromlist=[function]), function))


def test_proton_tree_gives_per_kernel_time_and_launches() -> None:
    """Shaped like Proton's `.hatchet` (tree data, shadow context, triton hook): a root frame, scope frames,
    kernel leaves with `time (ns)` and `count`; the second element is the device table."""
    from tritonlab.profiling.child import hatchet_kernels

    leaf = lambda name, ns, n, **m: {  # noqa: E731
        "frame": {"name": name, "type": "function"},
        "metrics": {"time (ns)": ns, "count": n, **m},
        "children": [],
    }
    tree = [
        {
            "frame": {"name": "ROOT", "type": "function"},
            "metrics": {"time (ns)": 999.0},
            "children": [
                {"frame": {"name": "a"}, "metrics": {}, "children": [leaf("softmax_kernel", 600.0, 10)]},
                {
                    "frame": {"name": "b"},
                    "metrics": {},
                    "children": [leaf("softmax_kernel", 400.0, 10, flops=5)],
                },
                leaf("copy", 50.0, 1),
                "junk",
            ],
        },
        {"CUDA": {"0": {"arch": "90"}}},
    ]
    kernels = hatchet_kernels(tree)
    assert [k["name"] for k in kernels] == ["softmax_kernel", "copy"]
    assert (
        kernels[0]["calls"] == 20
        and kernels[0]["time_ns"] == 1000.0
        and kernels[0]["metrics"] == {"flops": 5}
    )


def test_a_hostile_profile_is_cleaned_and_rates_come_from_the_parents_roofs() -> None:
    from tritonlab.profiling import report

    forged = {
        "gpu": "NVIDIA H200",
        "cases": [
            {
                "label": "softmax fp32 16384x4096",
                "bytes": 2 * 16384 * 4096 * 4,
                "flops": 5 * 16384 * 4096,
                "bound": "memory",
                "reps": 10,
                "event_ms": 1.0,
                "kernels": [
                    {"name": "softmax_kernel", "calls": 10, "time_ns": 1e6, "metrics": {"x": 1, "bad": "y"}},
                    {"name": "neg", "calls": -1, "time_ns": 5},
                    {"name": "inf", "calls": 1, "time_ns": float("inf")},
                    "junk",
                ],
                "gbps": 1e9,  # a rate the child claims is never used: the parent computes its own
                "problems": ["ok", 5],
            },
            "junk",
            {"label": 7, "bytes": True, "kernels": "no"},
        ]
        * 3,
        "problems": "a string",
        "import_error": ["no"],
    }
    data = report.checked(forged)
    assert data["device"] == "NVIDIA H200" and data["problems"] == [] and "import_error" not in data
    assert len(data["cases"]) == 2  # junk dropped, capped at MAX_CASES entries read
    first = data["cases"][0]
    assert [k["name"] for k in first["kernels"]] == ["softmax_kernel"] and first["kernels"][0]["metrics"] == {
        "x": 1.0
    }
    assert data["cases"][1]["label"] == "case" and data["cases"][1]["bytes"] == 0.0
    roofs = {"NVIDIA H200": {"copy_gbps": 4000.0, "matmul_bf16_tflops": 800.0}}
    rated = report.with_rates(data, roofs)
    case = rated["cases"][0]
    assert case["source"] == "proton" and case["ms"] == pytest.approx(0.1)  # 1e6 ns over 10 calls
    assert case["gbps"] == pytest.approx(2 * 16384 * 4096 * 4 / 1e-4 / 1e9)
    assert case["pct_of_roof"] == pytest.approx(100 * case["gbps"] / 4000.0)
    text = report.format_report(rated)
    assert "% of the memory roof" in text and "kernel softmax_kernel: 10 launch(es)" in text
    unrated = report.with_rates(report.checked(forged), {})
    assert report.NO_ROOF in unrated["problems"] and "pct_of_roof" not in unrated["cases"][0]


@pytest.fixture(scope="module")
def web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    from fastapi.testclient import TestClient

    from tritonlab.service import Service
    from tritonlab.web import create_app
    from tritonlab.web.security import cookie_name

    root = tmp_path_factory.mktemp("profile-web")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TRITONLAB_HOME", str(root / "home"))
        mp.delenv("TRITONLAB_LANG", raising=False)
        service = Service(workspace_dir=root / "ws", lang="en", backend="interpreter")
        with TestClient(create_app(service, TOKEN), base_url=BASE) as client:
            login = client.get(f"/?token={TOKEN}", follow_redirects=False)
            client.cookies.set(cookie_name(TOKEN), login.cookies[cookie_name(TOKEN)])
            yield client
        service.close()


def test_the_profile_route_gives_the_static_view_without_a_gpu(web) -> None:  # noqa: ANN001
    url = "/api/exercises/softmax/profile"
    code = web.get("/api/exercises/softmax/code").json()
    answer = web.post(
        url, json={"text": SOFTMAX.read_text(), "base_version": code["version"]}, headers=ORIGIN
    )
    assert answer.status_code == 200, answer.text
    data = answer.json()
    assert data["gpu"] is False and "No GPU here" in data["report"] and "softmax_kernel:" in data["report"]
    page = web.get("/lessons/08-softmax").text
    assert 'data-action="profile"' in page and 'data-profile-for="softmax"' in page
    hopper = web.get("/lessons/14-hopper")
    assert hopper.status_code == 200 and 'data-profile-for="tma-matmul"' in hopper.text
    assert "Tensor descriptors and the TMA copy engine" in hopper.text
    # the security rules of every route: Origin (CSRF), session, body limits, unknown ids
    assert web.post(url, json={}, headers={"Origin": "http://evil.example"}).status_code == 403
    assert web.post(url).status_code == 403  # no Origin header at all
    stale = web.post(url, json={"text": "x = 1\n", "base_version": "0" * 16}, headers=ORIGIN)
    assert stale.status_code == 409
    for body in ({"text": 5}, {"base_version": "v" * 100}):
        bad = web.post(url, json=body, headers=ORIGIN)
        assert bad.status_code == 422 and bad.json()["error"]
    assert web.post(url, json={"text": "x" * 3_000_000}, headers=ORIGIN).status_code == 413
    missing = web.post("/api/exercises/no-such/profile", json={}, headers=ORIGIN)
    assert missing.status_code == 404 and missing.json()["error"]
    from fastapi.testclient import TestClient

    stranger = TestClient(web.app, base_url=BASE)  # no token, no cookie
    assert stranger.post(url, json={}, headers=ORIGIN).status_code in (401, 403)


@pytest.mark.skipif(has_cuda(), reason="the no-GPU path")
def test_profile_magic_shows_the_static_view_escaped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    from tritonlab.notebook import session

    monkeypatch.setenv("TRITONLAB_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("TRITONLAB_WORKSPACE", raising=False)
    session._SESSION = None
    try:
        shell = InteractiveShell.instance()
        shell.run_line_magic("load_ext", "tritonlab")
        with capture_output() as captured:
            shell.run_line_magic("profile", "softmax --solution")
        shown = "\n".join(o.data.get("text/html", "") for o in captured.outputs)
        assert '<pre class="tritonlab-profile">' in shown and "No GPU here" in shown
        assert "softmax_kernel:" in shown
        with capture_output() as captured:
            shell.run_line_magic("profile", "no-such-exercise")
        assert 'data-kind="error"' in "\n".join(o.data.get("text/html", "") for o in captured.outputs)
    finally:
        if session._SESSION is not None:
            session._SESSION.close()
        session._SESSION = None


@pytest.mark.gpu
def test_profile_on_a_gpu_times_softmax_under_proton(tmp_path: Path) -> None:
    done = tritonlab(tmp_path, "profile", "softmax", "--solution", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads(done.stdout)
    assert data["gpu"] is True and data["cases"], data
    for case in data["cases"]:
        assert case["ms"] > 0 and case["gbps"] > 0, case
        assert case["source"] == "proton", case["problems"]
        assert any("softmax" in k["name"] for k in case["kernels"]), case["kernels"]
    assert data["static"]["kernels"][0]["resources"]["registers"] > 0
