"""Fetch Ray's wheels for a machine without network, small enough to carry (under 64 MiB in all).

    python scripts/slim_ray_wheel.py DIR [--python 3.12] [--ray 2.60.0]

Downloads `ray` and its dependencies for CPython `--python` on manylinux x86_64 with pip (the ordinary client),
then rewrites the ray wheel without what tritonlab never uses (see DROP: the Java worker alone is about 31 MB
compressed) and without those files' lines in its RECORD. Install on the target with
`pip install --no-index --find-links DIR ray==VERSION`, or, beside a machine's own packages, copy only the wheels
it lacks and `pip install --no-index --no-deps --target SITE DIR/*.whl` with SITE on PYTHONPATH (a venv made with
--system-site-packages does not see the packages of a Python that is itself a venv).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import zipfile
from pathlib import Path

# The Java worker, the dashboard's web client (tritonlab starts Ray with --include-dashboard=false), and the
# RLlib and LLM libraries (never imported by Ray core or by tritonlab).
DROP = ("ray/jars/", "ray/dashboard/client/", "ray/rllib/", "ray/llm/")


def slim(wheel: Path) -> None:
    slimmed = wheel.with_suffix(".slim")
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(slimmed, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            if info.filename.startswith(DROP):
                continue
            data = src.read(info.filename)
            if info.filename.endswith(".dist-info/RECORD"):
                lines = data.decode().splitlines()
                data = ("\n".join(line for line in lines if not line.startswith(DROP)) + "\n").encode()
            dst.writestr(info, data)
    slimmed.replace(wheel)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", type=Path)
    parser.add_argument("--python", default="3.12")
    parser.add_argument("--ray", default="2.60.0")
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    platforms = ["manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux_2_28_x86_64"]
    argv = [sys.executable, "-m", "pip", "download", f"ray=={args.ray}", "--only-binary=:all:"]
    argv += ["--python-version", args.python, "-d", str(args.dir)]
    for platform in platforms:
        argv += ["--platform", platform]
    subprocess.run(argv, check=True)
    for wheel in args.dir.glob("ray-*.whl"):
        slim(wheel)
    total = sum(p.stat().st_size for p in args.dir.glob("*.whl"))
    print(f"{len(list(args.dir.glob('*.whl')))} wheels, {total / 2**20:.1f} MiB in {args.dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
