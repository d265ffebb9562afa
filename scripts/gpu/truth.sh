#!/usr/bin/env bash
# linbench's GPU batch: one call of a lent GPU machine, at most 8 minutes, most valuable first.
#
#   bash scripts/gpu/truth.sh           set-up, then every part below, in order, inside one deadline
#   bash scripts/gpu/truth.sh PART...   set-up, then those parts (to rerun one: a second call lands
#                                       on a bare machine, so set-up runs on every call)
#
# The budget, in seconds. Each part stops at its limit; none runs past the deadline, 470 s after
# the start (the device call's timeout_s is 480: ten seconds for the last lines). What a part
# leaves unused goes to the last ones. Every part writes into $OUT as it goes (a line per test,
# a line per point, a table per impl), so a call cut off anywhere keeps what was done.
#
#   part          limit  what                                                           -> $OUT/
#   setup    (a)    25   the wheels of .whl/ (fla-core and einops) into the work folder,   summary.txt
#                        fla's dispatch pinned off, its autotune cache off, a fresh Triton
#                        cache; versions and clocks; linbench's CUDA kernels built
#   tests    (b)   100   pytest -m cuda, 12 workers, a line a test as each ends, -rfE       tests.txt
#   check    (c)   120   linbench check of every fla-core impl in bf16 at B1-H2-S300, head  check.txt
#                        sizes 64 and 128, six processes at once, the autotuner pinned to
#                        one config (LINBENCH_CHECK_ONE_CONFIG: check only); a table each
#   backends (d)   100   B1 H16 D128 bf16 forward at 4k and 16k: Gated DeltaNet's and       backends.txt
#                        KDA's forms that run here against SDPA's flash and cuDNN; then
#                        those forms alone at 32 value heads (the runner leaves softmax out
#                        of --v-heads points)
#   kernel   (e)    90   $KERNEL_IMPLS against cosine:fla and SDPA at B2 H16 S16k D64 bf16, kernel.txt
#                        fwd and fwdbwd, event time and CUDA-graph replay; kernel_v1_v2.py
#                        (the fast pass beside the generic _v1, cosine and linear; V1V2_S,
#                        25 s); one ncu summary
#   decode   (f)    35   decode at batch 1, 64, 1024 with CUDA graphs; verify_decode.py     rest.txt
#   gate     (f)  rest   `ab --baseline HEAD` on a two-point ci-gpu slice, unchanged, then  rest.txt
#                        +10% planted (plant.py); started only when GATE_NEED_S (130) remain
#                  470   of the 470 (what parts leave goes to the gate)
#
# Run folders: runs.tgz, rewritten after each run (7 files under $OUT; 8 come back at most).
# Wheels: `pip download --no-deps -d .whl fla-core==0.6.0 einops` on any machine with PyPI; .whl/
# travels untracked (never commit it). Without a CUDA device the script stops at once, exit 3.
# Rerun a part in a later call, its deadline ten seconds inside the call's timeout_s:
# `TRUTH_DEADLINE_S=150 bash scripts/gpu/truth.sh check` (CHECK_IMPLS="kda:fla gla:fla": only those).
# Rehearsal on a CPU: TRUTH_DEVICE=cpu runs the same commands at toy sizes (fla's kernels under
# Triton's interpreter for the check, in fp32; no ncu, no CUDA graphs); TRUTH_BUDGET_SCALE=N
# stretches every limit N-fold on a slow machine; TRUTH_WHEELS=DIR installs another wheel folder;
# TRUTH_HIDE=einops (CPU only) makes a module unimportable, as on a machine without it.
set -uo pipefail
ROOT=$PWD
OUT=${OUT:-/tmp/linbench-gpu}
DEVICE=${TRUTH_DEVICE:-cuda}
WORK=${TRUTH_WORK:-/tmp/truth}
WHEELS=${TRUTH_WHEELS:-.whl}
PY=${PYTHON:-python3}
SCALE=${TRUTH_BUDGET_SCALE:-1}
DEADLINE=$((${TRUTH_DEADLINE_S:-470} * SCALE))
declare -A LIMIT=([setup]=25 [tests]=100 [check]=120 [backends]=100 [kernel]=90 [decode]=35 [gate]=600)
GATE_NEED_S=$((${GATE_NEED_S:-130} * SCALE))
# The kernels part's impls: a second kernel kept beside the first goes here (cosine:kernel,cosine:NEW).
KERNEL_IMPLS=${KERNEL_IMPLS:-cosine:kernel}
NCU_IMPL=${NCU_IMPL:-$(cut -d, -f1 <<<"$KERNEL_IMPLS" | cut -d: -f2)}
NCU_KERNELS=${NCU_KERNELS:-regex:linear_attention}
export PYTHONUNBUFFERED=1 PYTHONPATH=$ROOT:$WORK/site${PYTHONPATH:+:$PYTHONPATH}
# fla-core 0.6 hands chunk_gated_delta_rule to FlashQLA and chunk_kda to FlashKDA where installed:
# off, so that `fla` is fla's own kernel. Its autotune results are not cached on disk (their key
# leaves the length out, so a choice made at one length would be read at every other), and Triton
# compiles into a fresh folder of this call's own.
export FLA_DISABLE_BACKEND_DISPATCH=1 FLA_FLASH_KDA=0 FLA_CACHE_RESULTS=0 TRITON_CACHE_DIR=$WORK/triton

if [ "$DEVICE" = cuda ] && ! "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
  echo "truth.sh: no CUDA device here (torch.cuda.is_available() is False); TRUTH_DEVICE=cpu rehearses on the CPU" >&2
  exit 3
fi
if [ "$DEVICE" = cpu ]; then  # toy sizes: the same commands, tiny work
  SEQ_STD=256 SEQ_BACK=128,256 BATCHES=1,4 DECODE_CTX=128 HEADS=2 V_HEADS=4 DIM=16 GATE_SEQ=256 PLANT_SEQ=256
  STD=(--batch 1 --heads 2 --dim 16) GRAPH=() CHECK_ENV=(TRITON_INTERPRET=1) CHECK_DTYPE=fp32
  CHECK_SHAPES=B1-H1-S20-Dk16-Dv16,B1-H1-S20-Dk32-Dv32 CHECK_JOBS=${CHECK_JOBS:-2} TESTS_WORKERS=${TESTS_WORKERS:-2}
  PYTEST_SEL=(tests/variants/test_fla.py tests/runner/test_worker.py)
else
  SEQ_STD=16k SEQ_BACK=4k,16k BATCHES=1,64,1024 DECODE_CTX=1k HEADS=16 V_HEADS=32 DIM=128 GATE_SEQ=16k PLANT_SEQ=16384
  STD=(--batch 2 --heads 16 --dim 64) GRAPH=(--cuda-graph) CHECK_ENV=() CHECK_DTYPE=bf16
  CHECK_SHAPES=B1-H2-S300-Dk64-Dv64,B1-H2-S300-Dk128-Dv128 CHECK_JOBS=${CHECK_JOBS:-6} TESTS_WORKERS=${TESTS_WORKERS:-12}
  PYTEST_SEL=()
fi
if [ -n "${TRUTH_HIDE:-}" ]; then  # rehearsal only: these modules fail to import, as where absent
  [ "$DEVICE" = cpu ] || { echo "truth.sh: TRUTH_HIDE is for a CPU rehearsal only" >&2; exit 2; }
  for module in ${TRUTH_HIDE//,/ }; do
    mkdir -p "$WORK.hide/$module"
    echo "raise ModuleNotFoundError(\"No module named '$module'\", name='$module')" >"$WORK.hide/$module/__init__.py"
  done
  export PYTHONPATH=$WORK.hide:$PYTHONPATH
  echo "truth.sh: for this rehearsal, made unimportable: $TRUTH_HIDE (installed metadata still names it)"
fi
mkdir -p "$OUT"
log() { echo "== $(date -u +%H:%M:%S) +$((SECONDS - T0)) s $*" | tee -a "$OUT/summary.txt"; }
note() { echo "$*" | tee -a "$OUT/summary.txt"; }
left_s() { echo $((PART_END - SECONDS)); }  # seconds left of the running part
until_end() {  # a timeout for a command that must end MARGIN seconds before the part does (at least 1)
  local s=$((PART_END - SECONDS - $1))
  echo $((s < 1 ? 1 : s))
}
clocks() {
  [ "$DEVICE" = cuda ] && command -v nvidia-smi >/dev/null || return 0
  nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active \
    --format=csv,noheader 2>&1 | sed "s/^/clocks $1 (SM, max SM, memory, power, temperature, throttle): /" | tee -a "$OUT/summary.txt"
}
append() { if command -v flock >/dev/null; then flock "$WORK/append.lock" cat "$1" >>"$2"; else cat "$1" >>"$2"; fi; }
pack_runs() { tar czf "$WORK/runs.tgz.new" -C "$WORK" runs 2>/dev/null && mv "$WORK/runs.tgz.new" "$OUT/runs.tgz"; }

part_setup() {
  rm -rf "$WORK" && mkdir -p "$WORK/site" "$WORK/triton" "$WORK/runs" "$WORK/check"
  local name
  for name in fla_core einops; do
    ls "$WHEELS"/"$name"-*.whl >/dev/null 2>&1 ||
      note "setup: no $name wheel in $WHEELS/ (pip download --no-deps -d .whl fla-core==0.6.0 einops)"
  done
  if ls "$WHEELS"/*.whl >/dev/null 2>&1; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$WORK/site" \
      "$WHEELS"/*.whl 2>&1 | tail -3 | tee -a "$OUT/summary.txt"
    note "setup: installed into $WORK/site: $(cd "$WHEELS" && echo *.whl)"
  fi
  [ "$DEVICE" = cuda ] && nvidia-smi --query-gpu=name,driver_version,power.limit,memory.used,memory.total \
    --format=csv 2>&1 | tee -a "$OUT/summary.txt"
  clocks idle
  note "git HEAD: $(git -C "$ROOT" log -1 --format='%h %s' 2>/dev/null || echo 'none (no .git here)')"
  local info
  info=$(env ${CHECK_ENV[@]+"${CHECK_ENV[@]}"} "$PY" scripts/gpu/batch_info.py versions "$DEVICE" 2>&1 |
    grep -v -e UserWarning -e _cpu_device_warning)
  note "$info"
  HAVE_WARM=$(grep -c "^linbench warm: yes" <<<"$info")
  local start=$SECONDS
  timeout "$(until_end 2)" "$PY" -m linbench build 2>&1 | tail -2 | tee -a "$OUT/summary.txt"
  note "setup: kernel library built in $((SECONDS - start)) s"
}

# ---- The place for `linbench warm` ----------------------------------------------------------
# A command that compiles and tunes a sweep's kernels at each point's own shape, before it is
# timed, runs here, inside the timing part's limit, with the sweep's own arguments. Until linbench
# has one (set-up reports "linbench warm: yes|no"), the first call of each timing process tunes.
warm_for() {
  [ "$HAVE_WARM" -gt 0 ] && [ "$1" = run ] || return 0
  shift
  local start=$SECONDS
  timeout -s INT -k 5 "$(($(until_end 5) / 3 + 1))" "$PY" -m linbench warm "$@" --device "$DEVICE" 2>&1 | tail -3
  echo "warm: $((SECONDS - start)) s"
}

# run_lb FILE CAP TITLE COMMAND ARG...: one `linbench COMMAND` (run or decode) of at most CAP
# seconds (and the part's end): its lines into $OUT/FILE.txt as each point ends, then a table per
# impl from its results.csv; the run folder into runs.tgz. LAST_RUN names the folder.
run_lb() {
  local file=$OUT/$1.txt folder=$WORK/runs/$1 cap=$2 title=$3 command=$4 limit start=$SECONDS before rc
  shift 4
  limit=$(($(left_s) - 5))
  [ "$cap" -lt "$limit" ] && limit=$cap
  LAST_RUN=""
  if [ "$limit" -lt 10 ]; then
    note "$title: not started: $limit s left" | tee -a "$file"
    return
  fi
  echo "### $title (limit $limit s)" >>"$file"
  warm_for "$command" "$@" >>"$file"
  mkdir -p "$folder" && before=$(ls "$folder")
  timeout -s INT -k 5 "$limit" "$PY" -m linbench "$command" "$@" --device "$DEVICE" --allow-failures --out "$folder" >>"$file" 2>&1
  rc=$?
  # shellcheck disable=SC2012  # run folders have plain names; the newest is this run's
  LAST_RUN=$(ls -td "$folder"/*/ 2>/dev/null | head -1)
  if [ -n "$LAST_RUN" ] && ! grep -qx "$(basename "$LAST_RUN")" <<<"$before"; then
    "$PY" "$ROOT/scripts/gpu/rows.py" "$LAST_RUN" >>"$file" 2>&1
  else
    LAST_RUN=""
  fi
  note "$title: exit $rc in $((SECONDS - start)) s$([ "$rc" = 124 ] && echo ': stopped at its limit')"
  pack_runs
}

part_tests() {
  local args=(-v -rfE -p no:cacheprovider -n "$TESTS_WORKERS" -m cuda) start=$SECONDS
  # A hung test is named and the others go on (pytest-timeout, where installed: the CUDA image has it).
  "$PY" -c "import pytest_timeout" 2>/dev/null && args+=(--timeout "${TEST_TIMEOUT_S:-60}")
  # -v: one line a test as it ends, so a run cut off at its limit still names its failures.
  timeout -s INT -k 5 "$(until_end 5)" "$PY" -m pytest "${args[@]}" ${PYTEST_SEL[@]+"${PYTEST_SEL[@]}"} \
    >"$OUT/tests.txt" 2>&1
  note "pytest -m cuda: exit $? in $((SECONDS - start)) s: $(tail -1 "$OUT/tests.txt")"
  grep -E "(PASSED|FAILED|ERROR|SKIPPED) " "$OUT/tests.txt" | grep -oE "PASSED|FAILED|ERROR|SKIPPED" | sort | uniq -c |
    tr '\n' ' ' | sed 's/^/  tests that ended: /' | tee -a "$OUT/summary.txt"
  echo | tee -a "$OUT/summary.txt"
  grep -E "^(FAILED|ERROR) |\] (FAILED|ERROR) " "$OUT/tests.txt" | sort -u | sed 's/^/  /' | head -40 | tee -a "$OUT/summary.txt"
}

check_one() {  # one impl's check, its table appended to check.txt when it ends
  local impl=$1 file=$WORK/check/${1/:/-}.txt start=$SECONDS rc verdict limit=$(($(left_s) - 5))
  if [ "$limit" -lt 15 ]; then
    note "check $impl: not started: $limit s left of the part" | tee -a "$OUT/check.txt"
    return
  fi
  env LINBENCH_CHECK_ONE_CONFIG=1 ${CHECK_ENV[@]+"${CHECK_ENV[@]}"} timeout -s INT -k 5 "$limit" "$PY" -m linbench \
    check --variant "$impl" --device "$DEVICE" --dtype "$CHECK_DTYPE" --shape "$CHECK_SHAPES" -q >"$file" 2>&1
  rc=$?
  case $rc in
    0) verdict=passed ;;
    1) verdict=FAILED ;;
    124) verdict="stopped at the part's limit" ;;
    *) verdict="exit $rc" ;;
  esac
  # Every cell unavailable (fla not importable, say): exit 0, but nothing was proven.
  [ "$rc" = 0 ] && grep -q "^0 cells checked" "$file" && verdict="nothing checked: $(grep -A1 '^unavailable here:' "$file" | sed -n 2p)"
  { echo "### $impl: $verdict in $((SECONDS - start)) s"; grep -v -e UserWarning -e _cpu_device_warning "$file"; echo; } >"$file.block"
  append "$file.block" "$OUT/check.txt"
  note "check $impl: $verdict in $((SECONDS - start)) s: $(grep -E 'cells checked|^error' "$file" | tail -1)"
}

part_check() {
  local impls impl
  impls=${CHECK_IMPLS:-$("$PY" scripts/gpu/batch_info.py fla-impls)}  # CHECK_IMPLS="V:I V:I": a rerun of some only
  impls=${impls//,/ }
  note "check: $(wc -w <<<"$impls") fla-core impls, $CHECK_JOBS at a time, $CHECK_DTYPE at $CHECK_SHAPES"
  for impl in $impls; do
    while [ "$(jobs -rp | wc -l)" -ge "$CHECK_JOBS" ]; do wait -n; done
    check_one "$impl" &
  done
  wait
}

part_backends() {
  local forms sdpa sweep=(--batch 1 --heads "$HEADS" --dim "$DIM" --seq "$SEQ_BACK" --dtype bf16 --mode fwd --budget-s 0.3)
  echo "### the forms, and why the others are left out" >>"$OUT/backends.txt"
  forms=$("$PY" scripts/gpu/batch_info.py runnable "$DEVICE" gated-deltanet kda 2>>"$OUT/backends.txt")
  sdpa=$("$PY" scripts/gpu/batch_info.py runnable "$DEVICE" softmax:sdpa-flash softmax:sdpa-cudnn 2>>"$OUT/backends.txt")
  note "backends: ${forms:-none runs here}; against ${sdpa:-no SDPA backend}"
  [ -n "$forms" ] || return 0
  local against=(--no-against)
  [ -n "$sdpa" ] && against=(--against "$sdpa")
  run_lb backends $(($(left_s) * 3 / 5)) "equal heads (H$HEADS): the forms against ${sdpa:-nothing}" run \
    --variant "$forms" "${against[@]}" "${sweep[@]}"
  run_lb backends "$(left_s)" "value heads x2 (H$HEADS HV$V_HEADS): the linear forms alone" run \
    --variant "$forms" --no-against --v-heads "$V_HEADS" "${sweep[@]}"
  clocks "after the backends"
}

part_kernel() {
  local v1v2_s=${V1V2_S:-25}
  run_lb kernel $(($(left_s) - ${NCU_S:-25} - v1v2_s)) "$KERNEL_IMPLS against cosine:fla and SDPA" run \
    --variant "$KERNEL_IMPLS,cosine:fla" --against softmax:sdpa "${STD[@]}" --seq "$SEQ_STD" --dtype bf16 \
    --mode fwd,fwdbwd ${GRAPH[@]+"${GRAPH[@]}"}
  clocks "after the kernel's points"
  # The fast pass beside the generic one (the _v1 ops, kept for this measurement), cosine and
  # linear normalised, a row as each is measured.
  if [ "$DEVICE" = cuda ]; then
    echo "### kernel_v1_v2.py --reps 20: the fast pass against the generic one (_v1)" >>"$OUT/kernel.txt"
    timeout "$(until_end "${NCU_S:-25}")" "$PY" scripts/gpu/kernel_v1_v2.py --reps 20 >>"$OUT/kernel.txt" 2>&1
    note "kernel_v1_v2: exit $? (124: cut off at its limit, the rows it measured kept)"
  else
    note "kernel_v1_v2: left out (it needs a CUDA device)" | tee -a "$OUT/kernel.txt"
  fi
  if [ "$DEVICE" != cuda ] || ! command -v ncu >/dev/null; then
    note "ncu: left out (no CUDA device or no ncu here)" | tee -a "$OUT/kernel.txt"
    return
  fi
  # The second (warm) call's three kernels: the first call builds and warms the library.
  timeout "$(until_end 2)" ncu --clock-control none -k "$NCU_KERNELS" --launch-skip 3 --launch-count 3 \
    "$PY" scripts/gpu/ncu_kernel.py "$NCU_IMPL" >"$WORK/ncu.txt" 2>&1
  note "ncu of cosine:$NCU_IMPL exit $?: $(grep -cE '^  [a-z_]+.*\(' "$WORK/ncu.txt") kernels profiled"
  { echo "### ncu --clock-control none, cosine:$NCU_IMPL fwd+bwd, the second call"; cat "$WORK/ncu.txt"; } >>"$OUT/kernel.txt"
}

part_decode() {
  run_lb rest $(($(left_s) * 3 / 5)) "decode at batch $BATCHES, context $DECODE_CTX" decode \
    --variant gated-deltanet,cosine --against softmax:kvcache --context "$DECODE_CTX" --batch "$BATCHES" \
    --dtype bf16 --tokens 50 ${GRAPH[@]+"${GRAPH[@]}"}
  [ -n "$LAST_RUN" ] || return 0
  local verify=() start=$SECONDS
  [ "$DEVICE" = cpu ] && verify=(--rehearse)
  echo "### verify_decode.py: each row against a hand-timed loop" >>"$OUT/rest.txt"
  timeout "$(until_end 2)" "$PY" scripts/gpu/verify_decode.py ${verify[@]+"${verify[@]}"} "$LAST_RUN" >>"$OUT/rest.txt" 2>&1
  note "verify_decode: exit $? in $((SECONDS - start)) s: $(tail -1 "$OUT/rest.txt")"
}

part_gate() {
  if [ "$(left_s)" -lt "$GATE_NEED_S" ]; then
    note "gate: not started: $(left_s) s left, it needs about $GATE_NEED_S (run \`truth.sh gate\` in a call of its own)" |
      tee -a "$OUT/rest.txt"
    return
  fi
  # A throwaway repository whose HEAD is this tree, so that `ab --baseline HEAD` compares this
  # code with itself; then the same with a slowdown planted in one point of the current side.
  local repo=$WORK/abrepo side start limit suite=suites/ci-gpu.toml
  mkdir -p "$repo" && tar --exclude=./.git --exclude=./.whl --exclude=./.venv --exclude=./results -cf - . | tar -xf - -C "$repo"
  (cd "$repo" && git init -q && git add -A && git -c user.name=truth -c user.email=truth@localhost commit -qm base) ||
    { note "gate: no git repository could be made here" | tee -a "$OUT/rest.txt"; return; }
  [ "$DEVICE" = cpu ] && suite=suites/gate-cpu.toml
  local args=(--suite "$suite" --variant cosine:kernel --against softmax:sdpa --seq "$GATE_SEQ" --mode fwd
    --device "$DEVICE" --rounds 3 --max-rounds 3)
  [ "$DEVICE" = cpu ] && args+=(--batch 1 --heads 2 --dim 16)
  for side in same planted; do
    if [ "$side" = planted ]; then
      (cd "$repo" && PYTHONPATH=$repo "$PY" "$ROOT/scripts/gpu/plant.py" "$repo" "$PLANT_SEQ" 10 "$DEVICE") 2>&1 |
        tee -a "$OUT/rest.txt"
    fi
    start=$SECONDS limit=$(until_end 5)
    [ "$side" = same ] && limit=$((limit / 2))
    echo "### gate, $side (limit $limit s)" >>"$OUT/rest.txt"
    (cd "$repo" && PYTHONPATH=$repo timeout -s INT -k 5 "$limit" "$PY" -m linbench ab --baseline HEAD "${args[@]}" \
      --out "$WORK/gate-$side") >>"$OUT/rest.txt" 2>&1
    note "gate $side: exit $? in $((SECONDS - start)) s"
  done
}

PARTS=(tests check backends kernel decode gate)
parts=()
for part in "${@:-${PARTS[@]}}"; do
  if ! declare -F "part_$part" >/dev/null; then echo "truth.sh: unknown part '$part'; parts: ${PARTS[*]}" >&2; exit 2; fi
  [ "$part" = setup ] || parts+=("$part")  # set-up runs first on every call anyway
done
T0=$SECONDS
HAVE_WARM=0
LAST_RUN=""
for part in setup "${parts[@]}"; do
  limit=$((LIMIT[$part] * SCALE))
  left=$((DEADLINE - (SECONDS - T0)))
  [ "$left" -lt "$limit" ] && limit=$left
  if [ "$limit" -lt 10 ]; then
    log "$part: not started: $left s left before the deadline"
    continue
  fi
  log "$part (limit $limit s)"
  PART_END=$((SECONDS + limit))
  started=$SECONDS
  "part_$part"
  note "== $part took $((SECONDS - started)) s of its $limit"
done
log "done"
