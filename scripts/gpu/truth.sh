#!/usr/bin/env bash
# One GPU call: the test suite with CUDA present, the doctor, the correctness matrix on CUDA,
# and decode timed against a hand-timed loop. Run from the repository root on a CUDA machine
# (python3 there holds torch); results go under $OUT (at most 8 files come back: keep it so).
set -uo pipefail
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/linbench-gpu}
mkdir -p "$OUT"
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$OUT/summary.txt"; }

log "env"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu,memory.used --format=csv | tee -a "$OUT/summary.txt"
python3 -c "import torch; print('torch', torch.__version__, torch.version.cuda)" | tee -a "$OUT/summary.txt"

log "kernel build"
python3 -c "
import time, torch, linbench
t = time.perf_counter()
linbench.attention(*(torch.randn(1, 1, 64, 64, device='cuda') for _ in range(3)), variant='cosine', impl='kernel', causal=True)
print(f'kernel library ready in {time.perf_counter() - t:.1f} s')" 2>&1 | tail -2 | tee -a "$OUT/summary.txt"

log "test suite with CUDA present (python -m pytest -q)"
start=$(date +%s)
timeout 420 python3 -m pytest -q -p no:cacheprovider >"$OUT/tests.txt" 2>&1
echo "pytest exit $? in $(($(date +%s) - start)) s" | tee -a "$OUT/summary.txt"
tail -25 "$OUT/tests.txt" | tee -a "$OUT/summary.txt"

if python3 -m linbench doctor --help >/dev/null 2>&1; then
  log "doctor"
  timeout 120 python3 -m linbench doctor --device cuda 2>&1 | tee "$OUT/doctor.txt"
  timeout 120 python3 -m linbench doctor --device cuda --json >"$OUT/doctor.json" 2>&1
fi

log "decode against a hand-timed loop (bf16, B1 H8 D64, --cuda-graph)"
rm -rf /tmp/dec && timeout 300 python3 -m linbench decode --variant cosine,linear,cosformer,heinsen \
  --context 1k,16k,256k --dtype bf16 --device cuda --tokens 100 --cuda-graph --out /tmp/dec -q 2>&1 | tail -3
timeout 240 python3 scripts/gpu/verify_decode.py /tmp/dec/* 2>&1 | tee "$OUT/decode_verify.txt"

log "correctness matrix on CUDA (fp32, bf16)"
timeout 300 python3 -m linbench check --device cuda --dtype fp32,bf16 >"$OUT/check.txt" 2>&1
echo "check exit $?" | tee -a "$OUT/summary.txt"
tail -8 "$OUT/check.txt" | tee -a "$OUT/summary.txt"

tar czf "$OUT/runs.tgz" -C /tmp dec 2>/dev/null
log "done"
