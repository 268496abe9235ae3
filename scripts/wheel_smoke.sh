#!/usr/bin/env bash
# The installed wheel works outside the repository: build it, install it with the CPU pins into a fresh venv
# in a temporary folder, then run `tritonlab doctor` and a check of the reference solution from there.
set -euo pipefail
if [ "${1:-}" = "--help" ] || [ "${1:-}" = "-h" ]; then
  echo "usage: scripts/wheel_smoke.sh   (PYTHON=python3.12 to choose the interpreter of the fresh venv)"
  echo "Build the wheel, install it into a fresh venv in a temporary folder with the CPU pins, then run"
  echo "'tritonlab doctor' and a check of vector-copy's solution from there (the 'wheel' phase of 'make test')."
  exit 0
fi
repo=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$repo/.venv/bin/python" -m pip wheel --quiet --no-deps --wheel-dir "$work/dist" "$repo"
"$python" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install --quiet -c "$repo/constraints-cpu.txt" "$work"/dist/*.whl
cd "$work"
export TRITONLAB_HOME="$work/home"
"$work/venv/bin/tritonlab" doctor --backend interpreter
# The default path: the check goes through this user's background check worker (cli/daemon.py), started now.
trap '"$work/venv/bin/tritonlab" daemon stop >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
"$work/venv/bin/tritonlab" check vector-copy --solution --backend interpreter --json > "$work/verdict.json"
"$work/venv/bin/tritonlab" daemon status --json > "$work/daemons.json"
"$work/venv/bin/python" - "$work/verdict.json" <<'PY'
import json, sys
verdict = json.load(open(sys.argv[1]))
assert verdict["passed"] is True and verdict["cases"], verdict
print(f"wheel smoke: vector-copy solution passed {len(verdict['cases'])} cases from the installed wheel")
PY
"$work/venv/bin/python" - "$work/daemons.json" <<'PY'
import json, sys
daemons = json.load(open(sys.argv[1]))
assert len(daemons) == 1 and daemons[0]["backend"] == "interpreter", daemons
print(f"wheel smoke: answered by the background check worker (pid {daemons[0]['pid']}, hardened {daemons[0]['hardened']})")
PY
"$work/venv/bin/tritonlab" daemon stop
# Data files travel with the package: the measured causes `tritonlab bench --json` attaches to short targets.
"$work/venv/bin/python" - <<'PY'
from tritonlab.perf import targets
causes = targets.causes()
assert causes and targets.CAUSES_FILE.is_file() and "site-packages" in str(targets.CAUSES_FILE), targets.CAUSES_FILE
print(f"wheel smoke: {len(causes)} measured causes read from {targets.CAUSES_FILE.name} in the installed wheel")
PY
