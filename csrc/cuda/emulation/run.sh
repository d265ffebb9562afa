#!/bin/sh
# Builds and runs the host emulation test of the CUDA kernels (no GPU needed): plain (a block's
# threads as fibers on one OS thread), then with AddressSanitizer, then with ThreadSanitizer
# (one OS thread per CUDA thread there: barrier bugs show up as data races).
# Usage: csrc/cuda/emulation/run.sh [plain|asan|tsan|all] [full|basic|quick|fast|fastsan|maps|split|plans]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cuda_include=${CUDA_HOME:-/usr/local/cuda}/include
out=${TMPDIR:-/tmp}/linbench_cuda_emulation
mkdir -p "$out"
build() {  # name, extra flags (debug info only where a sanitizer's report needs its lines: it
  # makes the plain build, what the tests run, about a third longer)
  g++ -std=c++20 -O2 -Wall -Wextra -Wno-unused-parameter -Wno-unknown-pragmas -I"$here/include" -I"$here/../.." -I"$cuda_include" \
    -x c++ "$here/host_emulation_test.cc" -o "$out/$1" -pthread $2
}
what=${1:-all}
suite=${2:-basic}
san_suite=${2:-quick}  # the sanitizers: quick unless a suite is named (fastsan: the fast pass alone)
if [ "$what" = plain ] || [ "$what" = all ]; then build plain "" && "$out/plain" "$suite"; fi
# The sanitizers follow OS threads, not fibers: their builds run one OS thread per CUDA thread.
if [ "$what" = asan ] || [ "$what" = all ]; then build asan "-g -DEMU_OS_THREADS -fsanitize=address,undefined" && "$out/asan" "$san_suite"; fi
if [ "$what" = tsan ] || [ "$what" = all ]; then build tsan "-g -DEMU_OS_THREADS -fsanitize=thread" && "$out/tsan" "$san_suite"; fi
