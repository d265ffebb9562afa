// Host emulation of the few CUDA device features the linear-attention kernels use, so that the
// .cu sources compile with g++ and run on a CPU. Test-only.
//
// A block's 256 CUDA threads are fibers taking turns on one OS thread (started with ucontext,
// switched with GCC's __builtin_setjmp: host_emulation_test.cc): a barrier parks the fiber that
// reaches it until every fiber of the barrier has, so the kernels run in the same order of
// phases as with one OS thread per CUDA thread, without hundreds of threads contending for the
// machine's cores at every __syncthreads (those made the test take minutes and the machine's
// load average pass 50). A barrier that can never complete (a thread that left early) is
// reported and aborts instead of hanging. The sanitizer builds (run.sh asan, tsan) define
// EMU_OS_THREADS: one OS thread per CUDA thread with std::barrier, which the sanitizers
// understand and where ThreadSanitizer sees a missing barrier as a data race.
//
// Emulated: threadIdx/blockIdx/gridDim, __syncthreads (a block barrier), __shfl_xor_sync (a warp
// exchange: every lane of the warp must take part, as in the real thing), atomicMax, the bit
// casts, dynamic shared memory (a malloc of exactly the launch's size, so AddressSanitizer sees
// overruns), the launch API. nvcuda::wmma comes from include/mma.h; mma.sync, ldmatrix and
// cp.async (../warp_mma.cuh) from emu_warp.h. A block runs as many threads as its launch asks
// (256 for the generic pass, 128 for the fast one).
#pragma once

#include <cuda_runtime_api.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <atomic>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <deque>
#include <math.h>
#include <string.h>
#include <vector>

#define LINBENCH_CUDA_HOST_EMULATION 1

#undef __global__
#undef __device__
#undef __host__
#undef __launch_bounds__
#undef __grid_constant__
#define __global__
#define __device__
#define __host__
#define __launch_bounds__(...)
#define __grid_constant__

namespace emu {

constexpr int kMaxThreads = 256;

struct Barrier {
  virtual void arrive_and_wait() = 0;
  virtual ~Barrier() = default;
};

#ifdef EMU_OS_THREADS
// One OS thread per CUDA thread.
struct ThreadBarrier final : Barrier {
  explicit ThreadBarrier(int count) : barrier(count) {}
  void arrive_and_wait() override { barrier.arrive_and_wait(); }
  std::barrier<> barrier;
};
using BlockBarrier = ThreadBarrier;
#else
// Fibers on one OS thread: the running fiber hands the OS thread back to the block's scheduler.
void yield_fiber();
void made_progress();

struct FiberBarrier final : Barrier {
  explicit FiberBarrier(int count) : expected(count) {}
  void arrive_and_wait() override {
    const unsigned long mine = generation;
    made_progress();
    if (++arrived == expected) {
      arrived = 0;
      ++generation;
      return;
    }
    while (generation == mine) yield_fiber();
  }
  int expected;
  int arrived = 0;
  unsigned long generation = 0;
};
using BlockBarrier = FiberBarrier;
#endif

// One thread's cp.async copies (emu_warp.h): the open group, then the committed ones, oldest first.
struct AsyncCopy {
  void* dst;
  const void* src;
  int src_bytes;
};
struct AsyncQueue {
  std::vector<AsyncCopy> open;
  std::deque<std::vector<AsyncCopy>> committed;
};

struct Block {
  Barrier* block_barrier;
  Barrier* warp_barrier[kMaxThreads / 32];
  float exchange[kMaxThreads / 32][32];
  uint32_t words[kMaxThreads / 32][32][6];    // mma operands, per lane
  const void* addrs[kMaxThreads / 32][32];     // ldmatrix row addresses, per lane
  AsyncQueue copies[kMaxThreads];
  unsigned char* smem;
  size_t smem_bytes;
};

inline thread_local uint3 thread_idx;
inline thread_local uint3 block_idx;
inline thread_local dim3 grid_dim;
inline thread_local Block* block;

}  // namespace emu

#define threadIdx (emu::thread_idx)
#define blockIdx (emu::block_idx)
#define gridDim (emu::grid_dim)

inline void __syncthreads() { emu::block->block_barrier->arrive_and_wait(); }

inline float __shfl_xor_sync(unsigned mask, float value, int lane_mask, int width = 32) {
  (void)width;
  if (mask != 0xffffffffu) __builtin_trap();
  const unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  emu::block->exchange[warp][lane] = value;
  emu::block->warp_barrier[warp]->arrive_and_wait();
  const float other = emu::block->exchange[warp][lane ^ static_cast<unsigned>(lane_mask)];
  emu::block->warp_barrier[warp]->arrive_and_wait();
  return other;
}

inline unsigned atomicMax(unsigned* address, unsigned value) {
  std::atomic_ref<unsigned> ref(*address);
  unsigned old = ref.load();
  while (old < value && !ref.compare_exchange_weak(old, value)) {
  }
  return old;
}

inline unsigned __float_as_uint(float x) {
  unsigned u;
  memcpy(&u, &x, sizeof(u));
  return u;
}

inline float __uint_as_float(unsigned u) {
  float x;
  memcpy(&x, &u, sizeof(x));
  return x;
}

namespace linbench::cuda_detail {
inline unsigned char* dynamic_shared_memory() { return emu::block->smem; }
inline void prefetch_l2(const void*) {}
}  // namespace linbench::cuda_detail

#include "emu_warp.h"
