#!/usr/bin/env bash
# Compile every CUDA source for sm_80 (A100) and sm_90 (H100/H200) without linking, and
# syntax-check the host side of the CUDA op (cuda_ops.cpp, and bindings.cpp with the CUDA
# registrations) against torch's headers: proves the CUDA build holds together on a machine
# with nvcc and no GPU. Warnings fail the check. The compiles and the host check run side by
# side (each is one process on one core for most of its time); their output is printed in a
# fixed order once all have ended, and the check fails when any of them does. Then ptxas's
# report of the compiles (registers, spills) is checked against cuda/README.md's resource
# report (cuda/resource_report.py): `compile_check.sh --write-report` rewrites that section.
set -euo pipefail
cd "$(dirname "$0")"
report_mode=--check
[[ "${1:-}" == --write-report ]] && report_mode=--write
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

compile_cuda() {  # one .cu file, for both architectures; ptxas's report kept for the resource check
  local log="$out/$(basename "$1").ptxas"
  if ! nvcc -c -std=c++17 -O3 --use_fast_math -I. -Xptxas -v \
    -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
    -Werror all-warnings -Xcompiler -Wall,-Werror \
    "$1" -o "$out/$(basename "$1").o" 2>"$log"; then
    grep -v "^ptxas info\|bytes stack frame" "$log" >&2
    return 1
  fi
  echo "compiled $1 for sm_80 and sm_90"
}

check_host() {
  torch_include="$(python -c 'import torch.utils.cpp_extension as e; print(e.include_paths()[0])' 2>/dev/null || true)"
  if [[ -z "$torch_include" ]]; then
    echo "torch not importable: host files not checked"
    return 0
  fi
  # A CPU build of torch ships c10/cuda's headers but not the one CMake generates for CUDA
  # builds; an empty stand-in is enough to parse them.
  mkdir -p "$out/stub/c10/cuda/impl"
  echo "#pragma once" >"$out/stub/c10/cuda/impl/cuda_cmake_macros.h"
  # The CUDA headers: $CUDA_HOME, else beside nvcc, else /usr/local/cuda (nvcc may be a wrapper
  # elsewhere on PATH).
  cuda_include=""
  for home in "${CUDA_HOME:-}" "$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")" /usr/local/cuda; do
    if [[ -n "$home" && -f "$home/include/cuda_runtime.h" ]]; then
      cuda_include="$home/include"
      break
    fi
  done
  if [[ -z "$cuda_include" ]]; then
    echo "cuda_runtime.h not found (set CUDA_HOME)" >&2
    exit 1
  fi
  python_include="$(python -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"
  g++ -fsyntax-only -std=c++20 -Wall -Werror -DLINBENCH_WITH_CUDA -I. \
    -isystem "$torch_include" -isystem "$torch_include/torch/csrc/api/include" -isystem "$out/stub" \
    -isystem "$cuda_include" -isystem "$python_include" \
    cuda_ops.cpp bindings.cpp
  echo "checked cuda_ops.cpp and bindings.cpp (CUDA registrations) against torch's headers"
}

jobs=()
for source in cuda/*.cu; do
  compile_cuda "$source" >"$out/${#jobs[@]}.log" 2>&1 &
  jobs+=($!)
done
check_host >"$out/${#jobs[@]}.log" 2>&1 &
jobs+=($!)
status=0
for index in "${!jobs[@]}"; do
  wait "${jobs[$index]}" || status=$?
  cat "$out/$index.log"
done
[[ "$status" -ne 0 ]] && exit "$status"
if ! command -v python3 >/dev/null; then
  echo "python3 not found: the resource report not checked"
  exit 0
fi
nvcc_version="$(nvcc --version | sed -n 's/.*release [0-9.]*, V\([0-9.]*\).*/nvcc \1/p')"
python3 cuda/resource_report.py "$report_mode" --nvcc "$nvcc_version" "$out"/*.ptxas
