// Host emulation of the few CUDA device features the linear-attention kernels use, so that the
// .cu sources compile with g++ and run on a CPU (one OS thread per CUDA thread). Test-only.
//
// Emulated: threadIdx/blockIdx/gridDim, __syncthreads (a block barrier), __shfl_xor_sync (a warp
// exchange: every lane of the warp must take part, as in the real thing), atomicMax, the bit
// casts, dynamic shared memory (a malloc of exactly the launch's size, so AddressSanitizer sees
// overruns), the launch API. nvcuda::wmma comes from include/mma.h.
#pragma once

#include <cuda_runtime_api.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <atomic>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <math.h>
#include <string.h>

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

struct Block {
  std::barrier<>* block_barrier;
  std::barrier<>* warp_barrier[kMaxThreads / 32];
  float exchange[kMaxThreads / 32][32];
  unsigned char* smem;
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
