# Source this first in a command run on a GPU machine without network, from the root of a copy of the tree that
# carried what scripts/gpu_carry.sh fetched (.whl, .nb-wheels, optionally .ray-wheels and .deb):
#
#     source scripts/gpu_env.sh COMMIT [--ray] [--hardened]
#
# It installs the carried wheels into /tmp/site (the machine's own torch and Triton stay), unpacks the .deb files
# (bubblewrap) into /tmp/bw, and exports PATH, LD_LIBRARY_PATH, PYTHONPATH (/tmp/site, then this tree's src),
# PYTHONUNBUFFERED and TRITONLAB_COMMIT (a copied tree has no .git, so gpu_runs.py names the run folder from it).
# `--ray` installs .ray-wheels too; `--hardened` exports TRITONLAB_SANDBOX=hardened (the class loads' setting).
# On failure it prints pip's output and returns 1; on success it prints one line: the seconds the set-up took.
# The record of a run (docs/gpu-runs/*/command.sh) then holds only what that run measured.

if [ "${1:-}" = "--help" ] || [ "${1:-}" = "-h" ] || [ -z "${1:-}" ]; then
  echo "usage: source scripts/gpu_env.sh COMMIT [--ray] [--hardened]"
  echo "Install the wheels scripts/gpu_carry.sh fetched into /tmp/site, unpack .deb/ into /tmp/bw, and export"
  echo "PATH, LD_LIBRARY_PATH, PYTHONPATH and TRITONLAB_COMMIT for a GPU machine without network."
  # shellcheck disable=SC2317  # run as a script (--help), `exit` ends it; sourced, `return` does
  return 0 2>/dev/null || exit 0
fi

gpu_env_start=$(date +%s)
gpu_env_commit=$1
shift
gpu_env_wheels=(.whl/*.whl .nb-wheels/*.whl)
for gpu_env_arg in "$@"; do
  case $gpu_env_arg in
    --ray) gpu_env_wheels+=(.ray-wheels/*.whl) ;;
    --hardened) export TRITONLAB_SANDBOX=hardened ;;
    *) echo "gpu_env.sh: unknown option $gpu_env_arg" >&2; return 1 2>/dev/null || exit 1 ;;
  esac
done
if ! python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
  "${gpu_env_wheels[@]}" > /tmp/gpu-env-install.txt 2>&1; then
  cat /tmp/gpu-env-install.txt
  return 1 2>/dev/null || exit 1
fi
mkdir -p /tmp/bw
for gpu_env_deb in .deb/*.deb; do
  [ -e "$gpu_env_deb" ] && dpkg -x "$gpu_env_deb" /tmp/bw
done
export PATH=/tmp/site/bin:/tmp/bw/usr/bin:$PATH
export LD_LIBRARY_PATH=/tmp/bw/lib/x86_64-linux-gnu:/tmp/bw/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
export PYTHONPATH=/tmp/site:$PWD/src PYTHONUNBUFFERED=1 TRITONLAB_COMMIT=$gpu_env_commit
echo "gpu_env.sh: set up in $(( $(date +%s) - gpu_env_start )) s (commit $gpu_env_commit)"
unset gpu_env_start gpu_env_commit gpu_env_wheels gpu_env_arg gpu_env_deb
