#!/bin/bash
# Fetch what a GPU machine without network lacks for `make gpu-verify` and the other runs of docs/gpu-runs/:
#   .whl/        tritonlab's own dependencies that the H200 image does not hold (web, classroom, notebooks' format)
#   .ray-wheels/ Ray, slimmed to carry (scripts/slim_ray_wheel.py)
#   .nb-wheels/  a Jupyter kernel and nbclient, for executing notebooks there
#   .deb/        Debian's bubblewrap, unpacked there with `dpkg -x`
# Versions are those of this checkout's .venv (make install), so the GPU runs the code with what CI tested.
# The folders are git-ignored through .git/info/exclude; a device command names them in `carry`.
# Usage: bash scripts/gpu_carry.sh        (about 50 MiB in all; the device's limit is 64 MiB a call)
set -euo pipefail
if [ "${1:-}" = "--help" ] || [ "${1:-}" = "-h" ]; then
  echo "usage: bash scripts/gpu_carry.sh"
  echo "Download, with pip from .venv's versions, the wheels and .deb a GPU machine without network needs for"
  echo "'make gpu-verify': .whl/ (web, classroom, notebook format), .ray-wheels/ (slimmed Ray), .nb-wheels/"
  echo "(a Jupyter kernel), .deb/ (bubblewrap). About 50 MiB; the folders are git-ignored (.git/info/exclude)."
  exit 0
fi
cd "$(dirname "$0")/.."
PIP=(.venv/bin/python -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp
     --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64
     --platform manylinux2014_x86_64 --platform manylinux_2_34_x86_64 --platform manylinux_2_31_x86_64
     --platform manylinux_2_24_x86_64 --platform manylinux1_x86_64)
version() { .venv/bin/python -m pip show "$1" 2>/dev/null | sed -n 's/^Version: //p'; }
fetch() { local dir=$1; shift; mkdir -p "$dir"; for name in "$@"; do
  local v; v=$(version "$name"); [ -n "$v" ] || { echo "not in .venv: $name" >&2; exit 1; }
  "${PIP[@]}" -d "$dir" "$name==$v"; done; }
mkdir -p .git/info && touch .git/info/exclude
for d in /.whl/ /.ray-wheels/ /.nb-wheels/ /.deb/; do grep -qxF "$d" .git/info/exclude || echo "$d" >> .git/info/exclude; done
# Not in the image (docs/gpu-runs/2026-12-01-h200-4b8b6df/README.md says what was carried): the web and classroom stack.
fetch .whl fastapi starlette pydantic pydantic_core annotated-types typing-inspection opentelemetry-api uvicorn platformdirs \
  nbformat fastjsonschema jsonschema jsonschema-specifications referencing rpds-py jupyter_core traitlets \
  sqlalchemy greenlet alembic mako argon2-cffi argon2-cffi-bindings cffi pycparser httpx httpcore
fetch .nb-wheels nbclient jupyter_client ipykernel ipython ipython_pygments_lexers pyzmq tornado comm \
  matplotlib-inline prompt_toolkit wcwidth pexpect ptyprocess stack-data executing asttokens pure_eval \
  nest-asyncio2  # (no debugpy, jedi: a kernel runs without them, and they would not fit the 64 MiB of a call)
mkdir -p .ray-wheels && "${PIP[@]}" -d .ray-wheels "ray==$(version ray)"
.venv/bin/python -c "import sys, pathlib; sys.path.insert(0, 'scripts'); from slim_ray_wheel import slim; [slim(w) for w in pathlib.Path('.ray-wheels').glob('ray-*.whl')]"
mkdir -p .deb && (cd .deb && apt-get download -qq bubblewrap libcap2 2>/dev/null || true)
du -sh .whl .ray-wheels .nb-wheels .deb
