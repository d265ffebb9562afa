#!/usr/bin/env bash
# GPU checks in parts, most valuable first, for one or two calls of a lent GPU machine.
#
#   truth.sh quick        = setup correct kernel backends decodebatch gate (more than one 10-minute
#                           call on a fresh GPU machine: split it, most valuable parts first)
#   truth.sh PART...      any parts, in the order given
#
# Parts (each with its own time limit, writing its own file under $OUT, so what finished comes
# back even when a later part is cut off; at most 8 files come back from a device call):
#   setup        versions, fla-core's dispatch settings, the kernel library built   -> summary.txt
#   check        linbench check over every impl, fp32 and bf16: a process for each fla and
#                compiled impl (their first compiles take minutes), one for the rest of
#                each variant, fourteen at a time                                  -> check.txt
#   cudatests    pytest -m cuda (12 workers, a line a test)                        -> tests.txt
#   correct      check, then cudatests
#   kernel       cosine:kernel against cosine:fla and SDPA's backends at B2 H16 S16k
#                D64 bf16, fwd and fwd+bwd, time and peak memory; one ncu summary    -> kernel.tgz
#   backends     every Gated DeltaNet and KDA backend and cuLA's lightning at 4k and 16k,
#                B1 H16 (32 value heads) D128 bf16, fwd and fwd+bwd, against SDPA's flash and cuDNN -> backends.tgz
#   decodebatch  linbench decode at batch 1, 64 and 1024 with CUDA graphs, then
#                against a hand-timed loop (verify_decode.py)                      -> decode.tgz
#   gate         linbench ab --baseline HEAD on a ci-gpu slice, unchanged and with a
#                planted +10% in one cosine:kernel point (plant.py)               -> gate.tgz
#   tests doctor fig2 fig5lite   the earlier parts (whole suite, doctor, paper-fig2, Figure 5 lite)
#
# Run from the repository root on a CUDA machine (its python3 holds torch). Wheels the machine
# lacks (fla-core) are installed from .whl/ when that folder is there. Without a CUDA device the
# script stops at once with exit 3. Rehearsal on a CPU machine: TRUTH_DEVICE=cpu runs every part at
# toy sizes on the CPU (no ncu, no CUDA graphs), to catch a typo before device time is spent.
set -uo pipefail
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
# fla-core 0.6 hands chunk_gated_delta_rule to FlashQLA and chunk_kda to FlashKDA where those are
# installed; pinned off so that an `fla` number is fla's own Triton kernel.
export FLA_DISABLE_BACKEND_DISPATCH=1 FLA_FLASH_KDA=0
OUT=${OUT:-/tmp/linbench-gpu}
DEVICE=${TRUTH_DEVICE:-cuda}
WORK=${TRUTH_WORK:-/tmp/truth}
ROOT=$PWD
PY=${PYTHON:-python3}
mkdir -p "$OUT" "$WORK"
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$OUT/summary.txt"; }
note() { echo "$*" | tee -a "$OUT/summary.txt"; }
lb() { "$PY" -m linbench "$@"; }

if [ "$DEVICE" = cuda ] && ! "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
  echo "truth.sh: no CUDA device here (torch.cuda.is_available() is False); TRUTH_DEVICE=cpu rehearses on the CPU" >&2
  exit 3
fi
if [ "$DEVICE" = cpu ]; then  # toy sizes: the commands are the same, the work is tiny
  SEQ_STD=256 SEQ_BACK=128,256 BATCHES=1,4 DECODE_CTX=128 GRAPH="" HEADS_BIG=2 V_HEADS_BIG=4 DIM_BIG=16 GATE_SEQ=256,512 PLANT_SEQ=512
  SDPA_PINNED=softmax:sdpa-flash,softmax:sdpa-math SDPA_ALL=softmax:sdpa,softmax:sdpa-flash
  PYTEST_MARK="not cuda and not slow and not slurm and not ray" PYTEST_SEL="tests/variants/test_registry.py"
else
  SEQ_STD=16k SEQ_BACK=4k,16k BATCHES=1,64,1024 DECODE_CTX=1k GRAPH=--cuda-graph HEADS_BIG=16 V_HEADS_BIG=32 DIM_BIG=128 GATE_SEQ=4k,16k PLANT_SEQ=16384
  SDPA_PINNED=softmax:sdpa-flash,softmax:sdpa-cudnn SDPA_ALL=softmax:sdpa,$SDPA_PINNED,softmax:sdpa-efficient
  PYTEST_MARK=cuda PYTEST_SEL=""
fi

part_setup() {
  if [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1 && ! "$PY" -c "import fla" 2>/dev/null; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
    export PYTHONPATH=$PYTHONPATH:/tmp/site
  fi
  [ "$DEVICE" = cuda ] && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu,memory.used,memory.total --format=csv | tee -a "$OUT/summary.txt"
  "$PY" - <<'EOF' 2>&1 | tee -a "$OUT/summary.txt"
import importlib, os, subprocess, torch
names = ("triton", "fla", "flashinfer", "flash_attn", "cudnn", "flash_qla", "flash_kda", "cula")
found = {n: getattr(importlib.import_module(n), "__version__", "?") for n in names if importlib.util.find_spec(n)}
head = subprocess.run(["git", "log", "-1", "--format=%h %s"], capture_output=True, text=True).stdout.strip()
print(f"torch {torch.__version__}; cuda {torch.version.cuda}; {found}; git HEAD: {head or 'none'}")
print("FLA_DISABLE_BACKEND_DISPATCH=" + os.environ.get("FLA_DISABLE_BACKEND_DISPATCH", ""))
EOF
  local start=$SECONDS
  timeout 240 "$PY" -m linbench build 2>&1 | tail -3 | tee -a "$OUT/summary.txt"
  note "kernel library built in $((SECONDS - start)) s"
}

# The impls whose first call compiles: fla's Triton kernels (autotuned: every config compiled,
# for each dtype and head dim check draws) and torch.compile. On the H200 of 2026-11-27 these
# took minutes between them; each gets a process of its own, all at once, so one slow compile
# holds up no other table.
list_impls() {  # heavy: every fla and compiled impl, one a line; light V: the rest of V's, as V:A,V:B
  "$PY" - "$@" <<'EOF'
import sys
from linbench.variants.registry import get_variant, list_variants
heavy = lambda impl: impl.startswith(("fla", "compiled"))
if sys.argv[1] == "heavy":
    print("\n".join(f"{v}:{i}" for v in list_variants() for i in get_variant(v).impls if heavy(i)))
else:
    variant = get_variant(sys.argv[2])
    print(",".join(f"{variant.name}:{i}" for i in variant.impls if not heavy(i)))
EOF
}

part_check() {
  local variants jobs=() heavy
  variants=$("$PY" -c "from linbench.variants.registry import list_variants; print(' '.join(list_variants()))")
  mkdir -p "$WORK/check"
  heavy=$(list_impls heavy)
  for job in $heavy; do jobs+=("$job"); done
  for variant in $variants; do jobs+=("$(list_impls light "$variant")"); done
  local running=0 name
  for job in "${jobs[@]}"; do
    name=${job%%,*}
    timeout -s INT -k 10 "${CHECK_LIMIT:-240}" "$PY" -m linbench check --variant "$job" --device "$DEVICE" \
      --dtype fp32,bf16 -q >"$WORK/check/${name/:/-}.txt" 2>&1 &
    running=$((running + 1))
    if [ "$running" -ge "${CHECK_JOBS:-14}" ]; then wait -n; running=$((running - 1)); fi
  done
  wait
  for job in "${jobs[@]}"; do
    name=${job%%,*}
    echo "### $job" >>"$OUT/check.txt"
    cat "$WORK/check/${name/:/-}.txt" >>"$OUT/check.txt"
    note "check $job: $(grep -E 'cells checked|error:' "$WORK/check/${name/:/-}.txt" | tail -1)"
  done
}

part_cudatests() {
  local start=$SECONDS
  # -v: one line a test as it ends, so a run cut off at its limit still names its failures.
  # shellcheck disable=SC2086  # PYTEST_SEL is a list of paths, or nothing
  timeout -s INT -k 10 "${TESTS_LIMIT:-180}" "$PY" -m pytest -v -rfE -p no:cacheprovider \
    -n "${TESTS_WORKERS:-12}" -m "$PYTEST_MARK" $PYTEST_SEL >"$OUT/tests.txt" 2>&1
  note "pytest -m '$PYTEST_MARK': exit $? in $((SECONDS - start)) s: $(tail -1 "$OUT/tests.txt")"
  grep -E " FAILED | ERROR " "$OUT/tests.txt" | sed 's/^/  /' | head -30 | tee -a "$OUT/summary.txt"
}

# check, then the tests: side by side they shared 16 cores between thirteen processes compiling
# the same kernels, and neither finished.
part_correct() {
  part_check
  part_cudatests
}

part_kernel() {
  rm -rf "$WORK/kernel" && mkdir -p "$WORK/kernel"
  # shellcheck disable=SC2086  # GRAPH is one flag or nothing
  timeout -s INT -k 10 "${KERNEL_LIMIT:-150}" "$PY" -m linbench run --variant cosine:kernel,cosine:fla,cosine:chunked \
    --against "$SDPA_ALL" \
    --batch 2 --heads 16 --dim 64 --seq "$SEQ_STD" --dtype bf16 --mode fwd,fwdbwd --device "$DEVICE" $GRAPH \
    --allow-failures --out "$WORK/kernel" -q 2>&1 | tail -4 | tee -a "$OUT/summary.txt"
  for run in "$WORK"/kernel/*/; do lb report "$run" --format md >"$run/report.md" 2>&1; done
  if [ "$DEVICE" = cuda ] && command -v ncu >/dev/null; then
    # The second (warm) call's three kernels: the first call builds and warms the library.
    timeout "${NCU_LIMIT:-45}" ncu --clock-control none -k regex:linear_attention --launch-skip 3 --launch-count 3 \
      "$PY" scripts/gpu/ncu_kernel.py >"$WORK/kernel/ncu.txt" 2>&1
    note "ncu exit $?: $(grep -cE '^  [a-z_]+.*\(' "$WORK/kernel/ncu.txt") kernels profiled"
  fi
  tar czf "$OUT/kernel.tgz" -C "$WORK" kernel
}

part_backends() {
  rm -rf "$WORK/backends" && mkdir -p "$WORK/backends"
  # 5-8 s a point on the H200 (a fresh worker each, its fla kernels autotuned): every backend of
  # Gated DeltaNet and KDA (and cuLA's lightning) at Qwen3.5's TP2 shard (16 q/k heads, 32 value
  # heads: --v-heads), two lengths and two modes; the libraries not installed are left out with
  # their reason.
  local impls=gated-deltanet:chunked,gated-deltanet:fla,gated-deltanet:fla-recurrent,gated-deltanet:fla-dispatch
  impls+=,gated-deltanet:flash-qla,gated-deltanet:flashinfer,gated-deltanet:cudnn,kda:chunked,kda:fla
  impls+=,kda:flash-kda,kda:flashinfer,kda:flashinfer-recurrent,kda:cudnn,kda:cula,lightning:cula
  timeout -s INT -k 10 "${BACKENDS_LIMIT:-200}" "$PY" -m linbench run --variant "$impls" \
    --against "$SDPA_PINNED" --batch 1 --heads "$HEADS_BIG" --v-heads "$V_HEADS_BIG" --dim "$DIM_BIG" \
    --seq "$SEQ_BACK" --dtype bf16 --mode fwd,fwdbwd --device "$DEVICE" --budget-s 0.3 \
    --allow-failures --out "$WORK/backends" -q 2>&1 | tail -4 | tee -a "$OUT/summary.txt"
  for run in "$WORK"/backends/*/; do lb report "$run" --format md >"$run/report.md" 2>&1; done
  tar czf "$OUT/backends.tgz" -C "$WORK" backends
}

part_decodebatch() {
  rm -rf "$WORK/decode" && mkdir -p "$WORK/decode"
  # shellcheck disable=SC2086
  timeout -s INT -k 10 "${DECODE_LIMIT:-60}" "$PY" -m linbench decode --variant gated-deltanet,cosine \
    --against softmax:kvcache --context "$DECODE_CTX" --batch "$BATCHES" --dtype bf16 --device "$DEVICE" \
    --tokens 50 $GRAPH --allow-failures --out "$WORK/decode" -q 2>&1 | tail -3 | tee -a "$OUT/summary.txt"
  local verify=()
  [ "$DEVICE" = cpu ] && verify=(--rehearse)
  for run in "$WORK"/decode/*/; do
    timeout "${VERIFY_LIMIT:-45}" "$PY" scripts/gpu/verify_decode.py "${verify[@]}" "$run" 2>&1 | tee "$WORK/decode/verify.txt" | tail -12
  done
  tar czf "$OUT/decode.tgz" -C "$WORK" decode
}

part_gate() {
  # A throwaway repository whose HEAD is this tree, so that `ab --baseline HEAD` compares this
  # code with itself; then the same with a slowdown planted in one point of the current side.
  local repo=$WORK/abrepo
  rm -rf "$repo" "$WORK/gate" && mkdir -p "$WORK/gate"
  mkdir -p "$repo"
  tar --exclude=./.git --exclude=./.whl --exclude=./.venv --exclude=./results -cf - . | tar -xf - -C "$repo"
  (cd "$repo" && git init -q && git add -A && git -c user.name=truth -c user.email=truth@localhost commit -qm base)
  local suite=suites/ci-gpu.toml
  [ "$DEVICE" = cpu ] && suite=suites/gate-cpu.toml
  local args=(--suite "$suite" --variant cosine:kernel --against softmax:sdpa --seq "$GATE_SEQ"
    --mode fwd --device "$DEVICE" --rounds 3 --max-rounds "${GATE_MAX_ROUNDS:-4}")
  [ "$DEVICE" = cpu ] && args+=(--batch 1 --heads 2 --dim 16)
  for side in same planted; do
    if [ "$side" = planted ]; then
      (cd "$repo" && PYTHONPATH=$repo "$PY" "$ROOT/scripts/gpu/plant.py" "$repo" "$PLANT_SEQ" 10 "$DEVICE") 2>&1 | tee -a "$OUT/summary.txt"
    fi
    local start=$SECONDS
    (cd "$repo" && PYTHONPATH=$repo timeout -s INT -k 10 "${GATE_LIMIT:-120}" "$PY" -m linbench ab --baseline HEAD \
      "${args[@]}" --out "$WORK/gate/$side") >"$WORK/gate/$side.txt" 2>&1
    note "gate $side: exit $? in $((SECONDS - start)) s: $(grep -E 'PASS|FAIL|REGRESSION|INCONCLUSIVE' "$WORK/gate/$side.txt" | tail -1)"
  done
  tar czf "$OUT/gate.tgz" -C "$WORK" gate
}

part_tests() {
  local start=$SECONDS
  timeout -s INT -k 10 "${TESTS_LIMIT:-200}" "$PY" -m pytest -q -p no:cacheprovider >"$OUT/tests-all.txt" 2>&1
  note "pytest exit $? in $((SECONDS - start)) s: $(tail -1 "$OUT/tests-all.txt")"
}

part_doctor() { timeout 40 "$PY" -m linbench doctor --device "$DEVICE" 2>&1 | tee "$OUT/doctor.txt"; }

part_fig2() {
  timeout 110 "$PY" -m linbench decode --suite suites/paper-fig2.toml --device "$DEVICE" $GRAPH \
    --out "$WORK/fig2" -q 2>&1 | tail -2
  tar czf "$OUT/fig2.tgz" -C "$WORK" fig2
}

part_fig5lite() {
  timeout "${FIG5_LIMIT:-100}" "$PY" -m linbench run --suite suites/paper-fig5-gpu.toml --dim 64 \
    --variant cosine:kernel,cosine:chunked --against softmax:sdpa --out "$WORK/fig5" -q 2>&1 | tail -2
  tar czf "$OUT/fig5.tgz" -C "$WORK" fig5
}

parts=("$@")
[ "${parts[*]}" = quick ] && parts=(setup correct kernel backends decodebatch gate)
for part in "${parts[@]}"; do
  if ! declare -F "part_$part" >/dev/null; then echo "truth.sh: unknown part '$part'" >&2; exit 2; fi
done
for part in "${parts[@]}"; do
  log "$part"
  started=$SECONDS
  "part_$part"
  note "$part took $((SECONDS - started)) s"
done
log "done"
