#!/usr/bin/env bash
# GPU reference results, one part per call (each fits a 10-minute command):
#   fig5      linbench run --suite suites/paper-fig5-gpu.toml
#   fig2      linbench decode --suite suites/paper-fig2.toml --cuda-graph (on CUDA)
#   baseline  linbench run --suite suites/ci-gpu.toml (the gpu-regression.yml baseline)
# Run folders come back as one tarball under $OUT; plots and reports are made afterwards on any machine.
set -uo pipefail
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/linbench-gpu}
mkdir -p "$OUT" /tmp/ref
for part in "$@"; do
  echo "== $(date -u +%H:%M:%S) $part"
  start=$(date +%s)
  case $part in
    fig5) timeout 580 python3 -m linbench run --suite suites/paper-fig5-gpu.toml --out /tmp/ref/fig5 -q ;;
    fig2) timeout 400 python3 -m linbench decode --suite suites/paper-fig2.toml --device cuda --cuda-graph --out /tmp/ref/fig2 -q ;;
    baseline) timeout 400 python3 -m linbench run --suite suites/ci-gpu.toml --out /tmp/ref/baseline -q ;;
    *) echo "unknown part $part"; continue ;;
  esac
  echo "$part: exit $? in $(($(date +%s) - start)) s"
  tar czf "$OUT/$part.tgz" -C /tmp/ref "$part"
done
