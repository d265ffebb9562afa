#!/usr/bin/env bash
# GPU checks, in parts (each with its own time limit), for one or a few device calls:
#   tests   the README's test command with CUDA present
#   doctor  linbench doctor on CUDA
#   decode  every decoder timed by linbench decode --cuda-graph, then against a hand-timed loop
#   check   the correctness matrix on CUDA for the kernels and linear, fp32 and bf16
#   fig2    paper-fig2 on CUDA (with --cuda-graph); fig5lite: paper-fig5-gpu's length sweep for
#           cosine:kernel, cosine:chunked and softmax:sdpa
# Run from the repository root on a CUDA machine (python3 there holds torch). Each part writes
# one file (or tarball) under $OUT, so what finished comes back even if a later part is cut off.
set -uo pipefail
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/linbench-gpu}
mkdir -p "$OUT" /tmp/ref
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$OUT/summary.txt"; }

log "env"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu,memory.used --format=csv | tee -a "$OUT/summary.txt"
python3 -c "
import time, torch, linbench
t = time.perf_counter()
linbench.attention(*(torch.randn(1, 1, 64, 64, device='cuda') for _ in range(3)), variant='cosine', impl='kernel', causal=True)
print(f'torch {torch.__version__}; kernel library ready in {time.perf_counter() - t:.1f} s')" 2>&1 | tail -1 | tee -a "$OUT/summary.txt"

for part in "$@"; do
  log "$part"
  start=$(date +%s)
  case $part in
    tests)
      timeout -s INT -k 10 "${TESTS_LIMIT:-200}" python3 -m pytest -q -p no:cacheprovider >"$OUT/tests.txt" 2>&1
      echo "pytest exit $? in $(($(date +%s) - start)) s" | tee -a "$OUT/summary.txt"
      tail -30 "$OUT/tests.txt" | tee -a "$OUT/summary.txt" ;;
    doctor)
      timeout 40 python3 -m linbench doctor --device cuda 2>&1 | tee "$OUT/doctor.txt" ;;
    decode)
      rm -rf /tmp/ref/decode
      timeout "${DECODE_LIMIT:-120}" python3 -m linbench decode --variant cosine,linear,cosformer,heinsen --context "${DECODE_CONTEXTS:-1k,16k,256k}" \
        --dtype bf16 --device cuda --tokens 100 --cuda-graph --out /tmp/ref/decode -q 2>&1 | tail -3
      timeout "${VERIFY_LIMIT:-70}" python3 scripts/gpu/verify_decode.py /tmp/ref/decode/* 2>&1 | tee "$OUT/decode_verify.txt"
      tar czf "$OUT/decode.tgz" -C /tmp/ref decode ;;
    check)
      timeout 60 python3 -m linbench check --device cuda --dtype fp32,bf16 \
        --variant linear,cosine:kernel,cosformer:kernel,heinsen:kernel >"$OUT/check.txt" 2>&1
      echo "check exit $?" | tee -a "$OUT/summary.txt"; tail -12 "$OUT/check.txt" ;;
    fig2)
      timeout 110 python3 -m linbench decode --suite suites/paper-fig2.toml --device cuda --cuda-graph \
        --out /tmp/ref/fig2 -q 2>&1 | tail -2
      tar czf "$OUT/fig2.tgz" -C /tmp/ref fig2 ;;
    fig5lite)
      timeout "${FIG5_LIMIT:-100}" python3 -m linbench run --suite suites/paper-fig5-gpu.toml --dim 64 \
        --variant cosine:kernel,cosine:chunked --baseline softmax:sdpa --out /tmp/ref/fig5 -q 2>&1 | tail -2
      tar czf "$OUT/fig5.tgz" -C /tmp/ref fig5 ;;
    *) echo "unknown part $part" ;;
  esac
  echo "$part took $(($(date +%s) - start)) s" | tee -a "$OUT/summary.txt"
done
log "done"
