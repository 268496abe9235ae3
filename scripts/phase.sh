#!/usr/bin/env bash
# `scripts/phase.sh NAME CMD...`: run one phase of `make test`, print its duration, and keep a running table in
# .phase-times so the last phase can print where CI's time went.
set -u
if [ $# -lt 2 ] || [ "$1" = "--help" ] || [ "$1" = "-h" ]; then
  echo "usage: scripts/phase.sh NAME CMD [ARG...]"
  echo "Run CMD as the phase NAME of 'make test': print its duration and status, and append them to .phase-times."
  [ $# -ge 1 ] && { [ "$1" = "--help" ] || [ "$1" = "-h" ]; } && exit 0 || exit 2
fi
name=$1; shift
start=$(date +%s.%N)
echo "=== phase ${name} ==="
"$@"
code=$?
end=$(date +%s.%N)
seconds=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
status=$([ "$code" = 0 ] && echo ok || echo "FAILED ($code)")
printf '%-10s %8s s  %s\n' "$name" "$seconds" "$status" >> .phase-times
echo "=== phase ${name}: ${seconds} s, ${status} ==="
exit "$code"
