// Device helpers shared by the chunked linear-attention kernels: element conversion, 16-byte
// packs, lane-group reductions and a block-wide GEMM on shared-memory tiles (tensor cores for
// fp16/bf16, fp32 FMA for fp32). CUDA headers only: no torch, no ATen.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

#include <cstdint>

namespace linbench {
namespace cuda_detail {

constexpr int kThreads = 256;             // every kernel runs 8 warps per block
// __launch_bounds__ minimum of resident blocks per SM: 2 caps registers at 128 per thread
// (a few hundred bytes of L1-resident spills for bf16) so that two blocks can share an SM and
// hide each other's barriers and load latency; 1 lets ptxas use ~220 and keeps one block per
// SM. To measure on a GPU.
constexpr int kMinBlocksPerSm = 2;
constexpr int kWarps = kThreads / 32;
constexpr int kChunk = 64;                // tokens per chunk (kCudaChunk)
constexpr int kMma = 16;                  // wmma tile edge (m16n16k16)
constexpr unsigned kFullMask = 0xffffffffu;

static_assert(kThreads == 4 * kChunk, "row helpers give every chunk row a group of 4 lanes");

// ---- Hooks. The host emulation test (emulation/) compiles these sources with g++ and
// supplies its own versions of the two functions below; everything else is plain CUDA. ----
#ifndef LINBENCH_CUDA_HOST_EMULATION
// The block's dynamic shared memory (the only shared memory the kernels use).
__device__ __forceinline__ unsigned char* dynamic_shared_memory() {
  extern __shared__ __align__(128) unsigned char linbench_dynamic_smem[];
  return linbench_dynamic_smem;
}

// A hint: start moving the line holding `ptr` from DRAM into L2. Never faults.
__device__ __forceinline__ void prefetch_l2(const void* ptr) {
  asm volatile("prefetch.global.L2 [%0];" ::"l"(ptr));
}
#endif

// ---- Small type utilities (no <type_traits>: these files include CUDA headers only). ----
template <class A, class B>
struct IsSame {
  static constexpr bool value = false;
};
template <class A>
struct IsSame<A, A> {
  static constexpr bool value = true;
};
template <bool kCondition, class X, class Y>
struct Select {
  using type = X;
};
template <class X, class Y>
struct Select<false, X, Y> {
  using type = Y;
};

template <class T>
constexpr bool kIsFloat = IsSame<T, float>::value;
template <class T>
constexpr bool kIsHalf = IsSame<T, __half>::value;

__host__ __device__ inline int round_up(int x, int multiple) { return (x + multiple - 1) / multiple * multiple; }
__host__ __device__ inline int ceil_div(int x, int d) { return (x + d - 1) / d; }
__host__ __device__ inline int min_int(int a, int b) { return a < b ? a : b; }

// ---- Element conversion: every element type is computed in fp32. ----
__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }

template <class T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ __half from_float<__half>(float x) {
  return __float2half_rn(x);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

// 16 bytes of elements: one vector load or store.
template <class T>
constexpr int kPack = 16 / static_cast<int>(sizeof(T));

template <class T>
struct alignas(16) Pack {
  T v[kPack<T>];
};

template <class T>
__device__ __forceinline__ Pack<T> load_pack(const T* ptr) {  // ptr must be 16-byte aligned
  const uint4 raw = *reinterpret_cast<const uint4*>(ptr);
  Pack<T> pack;
  memcpy(&pack, &raw, sizeof(raw));
  return pack;
}

template <class T>
__device__ __forceinline__ void store_pack(T* ptr, const Pack<T>& pack) {  // ptr must be 16-byte aligned
  uint4 raw;
  memcpy(&raw, &pack, sizeof(raw));
  *reinterpret_cast<uint4*>(ptr) = raw;
}

__device__ __forceinline__ bool is_aligned_16(const void* ptr) {
  return (reinterpret_cast<uintptr_t>(ptr) & 15u) == 0;
}

// ---- Reductions. All 32 lanes of the warp must call these (no divergence around them). ----
// Sum over the 4 consecutive lanes that share a chunk row (lanes 4r .. 4r+3).
__device__ __forceinline__ float sum_over_row_lanes(float x) {
  x += __shfl_xor_sync(kFullMask, x, 1);
  x += __shfl_xor_sync(kFullMask, x, 2);
  return x;
}

__device__ __forceinline__ float warp_sum(float x) {
  for (int mask = 16; mask > 0; mask >>= 1) x += __shfl_xor_sync(kFullMask, x, mask);
  return x;
}

__device__ __forceinline__ float warp_max(float x) {
  for (int mask = 16; mask > 0; mask >>= 1) x = fmaxf(x, __shfl_xor_sync(kFullMask, x, mask));
  return x;
}

// ---- Block GEMM on shared-memory tiles ----
//
//   C (m x n, fp32, row-major, ldc) = [C +] alpha * (A B + alpha2 * A2 B2)
//
// A is m x k: element (i, l) sits at a[i * lda + l], or at a[l * lda + i] when kATransposed
// (that is, A is stored column-major: the transpose of a row-major k x m tile).
// B is k x n: element (l, j) sits at b[l * ldb + j], or at b[j * ldb + l] when kBTransposed.
// The second product is optional (`second`): A2 = a2 (or A when a2 is null), B2 = b2 (or B),
// with A's and B's layouts and leading dimensions. It carries the low halves of operands split
// as x = hi + lo / 2^s (split_high/split_low below): A_hi B + 2^-s A_lo B, or A B_hi + 2^-s A B_lo.
// m, n, k are multiples of 16; every pointer is 32-byte aligned; lda, ldb are multiples of 8
// elements and ldc of 4 (the wmma rules). All threads of the block call it (no barrier inside:
// the caller syncs before C is read or A, B are overwritten).
template <class T>
struct SecondProduct {
  const T* a2;  // nullptr: A
  const T* b2;  // nullptr: B
  float alpha2;
};

// Tensor cores: each warp owns a 16 x (16 * kStrip) strip of C, so one A fragment feeds kStrip
// products. The strip is computed from zero, then scaled and added to the old C: element-wise
// work on accumulator fragments of the same shape is independent of their (opaque) layout.
template <bool kATransposed, bool kBTransposed, int kStrip, class T>
__device__ void block_gemm_wmma(float* c, int ldc, const T* a, int lda, const T* b, int ldb, int m, int n, int k,
                                bool accumulate, float alpha, bool second, const SecondProduct<T>& sp) {
  namespace wmma = nvcuda::wmma;
  using LayoutA = typename Select<kATransposed, wmma::col_major, wmma::row_major>::type;
  using LayoutB = typename Select<kBTransposed, wmma::col_major, wmma::row_major>::type;
  using FragA = wmma::fragment<wmma::matrix_a, kMma, kMma, kMma, T, LayoutA>;
  using FragB = wmma::fragment<wmma::matrix_b, kMma, kMma, kMma, T, LayoutB>;
  using FragC = wmma::fragment<wmma::accumulator, kMma, kMma, kMma, float>;

  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int strips_per_row = n / (kMma * kStrip);
  const int strips = (m / kMma) * strips_per_row;
  for (int strip = warp; strip < strips; strip += kWarps) {
    const int row = (strip / strips_per_row) * kMma;
    const int col = (strip % strips_per_row) * kMma * kStrip;
    FragC acc[kStrip];
#pragma unroll
    for (int t = 0; t < kStrip; ++t) wmma::fill_fragment(acc[t], 0.0f);
    for (int l = 0; l < k; l += kMma) {
      const int a_at = kATransposed ? l * lda + row : row * lda + l;
      FragA frag_a;
      wmma::load_matrix_sync(frag_a, a + a_at, lda);
#pragma unroll
      for (int t = 0; t < kStrip; ++t) {
        const int cj = col + t * kMma;
        const int b_at = kBTransposed ? cj * ldb + l : l * ldb + cj;
        FragB frag_b;
        wmma::load_matrix_sync(frag_b, b + b_at, ldb);
        wmma::mma_sync(acc[t], frag_a, frag_b, acc[t]);
      }
    }
    if (second) {
      // bf16 keeps lo unscaled (alpha2 == 1, kSplitScale below): its products join acc directly.
      // fp16's lo is scaled up, so its products need their own accumulators.
      constexpr bool kOwnAccumulators = kIsHalf<T>;
      FragC acc2[kOwnAccumulators ? kStrip : 1];
      if constexpr (kOwnAccumulators) {
#pragma unroll
        for (int t = 0; t < kStrip; ++t) wmma::fill_fragment(acc2[t], 0.0f);
      }
      for (int l = 0; l < k; l += kMma) {
        const int a_at = kATransposed ? l * lda + row : row * lda + l;
        FragA frag_a;
        wmma::load_matrix_sync(frag_a, (sp.a2 != nullptr ? sp.a2 : a) + a_at, lda);
#pragma unroll
        for (int t = 0; t < kStrip; ++t) {
          const int cj = col + t * kMma;
          const int b_at = kBTransposed ? cj * ldb + l : l * ldb + cj;
          FragB frag_b;
          wmma::load_matrix_sync(frag_b, (sp.b2 != nullptr ? sp.b2 : b) + b_at, ldb);
          if constexpr (kOwnAccumulators) {
            wmma::mma_sync(acc2[t], frag_a, frag_b, acc2[t]);
          } else {
            wmma::mma_sync(acc[t], frag_a, frag_b, acc[t]);
          }
        }
      }
      if constexpr (kOwnAccumulators) {
#pragma unroll
        for (int t = 0; t < kStrip; ++t)
          for (int i = 0; i < acc[t].num_elements; ++i) acc[t].x[i] += sp.alpha2 * acc2[t].x[i];
      }
    }
#pragma unroll
    for (int t = 0; t < kStrip; ++t) {
      float* tile = c + row * ldc + col + t * kMma;
      if (alpha != 1.0f)
        for (int i = 0; i < acc[t].num_elements; ++i) acc[t].x[i] *= alpha;
      if (accumulate) {
        FragC old;
        wmma::load_matrix_sync(old, tile, ldc, wmma::mem_row_major);
        for (int i = 0; i < acc[t].num_elements; ++i) acc[t].x[i] += old.x[i];
      }
      wmma::store_matrix_sync(tile, acc[t], ldc, wmma::mem_row_major);
    }
  }
}

// fp32: each thread owns 4 x 4 outputs and runs the k loop with FMAs (no split operands: fp32
// needs none).
template <bool kATransposed, bool kBTransposed>
__device__ void block_gemm_fma(float* c, int ldc, const float* a, int lda, const float* b, int ldb, int m, int n, int k,
                               bool accumulate, float alpha) {
  const int tiles_per_row = n / 4;
  const int tiles = (m / 4) * tiles_per_row;
  for (int tile = static_cast<int>(threadIdx.x); tile < tiles; tile += kThreads) {
    const int row = (tile / tiles_per_row) * 4;
    const int col = (tile % tiles_per_row) * 4;
    float acc[4][4] = {};
    for (int l = 0; l < k; ++l) {
      float av[4], bv[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) av[i] = kATransposed ? a[l * lda + row + i] : a[(row + i) * lda + l];
#pragma unroll
      for (int j = 0; j < 4; ++j) bv[j] = kBTransposed ? b[(col + j) * ldb + l] : b[l * ldb + col + j];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
    }
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        float* out = c + (row + i) * ldc + col + j;
        *out = (accumulate ? *out : 0.0f) + alpha * acc[i][j];
      }
  }
}

template <bool kATransposed, bool kBTransposed, class T>
__device__ __forceinline__ void block_gemm(float* c, int ldc, const T* a, int lda, const T* b, int ldb, int m, int n,
                                           int k, bool accumulate, float alpha, bool second = false,
                                           const SecondProduct<T>& sp = SecondProduct<T>{nullptr, nullptr, 0.0f}) {
  if constexpr (kIsFloat<T>) {
    (void)second, (void)sp;
    block_gemm_fma<kATransposed, kBTransposed>(c, ldc, a, lda, b, ldb, m, n, k, accumulate, alpha);
  } else if (n % (2 * kMma) == 0) {
    block_gemm_wmma<kATransposed, kBTransposed, 2>(c, ldc, a, lda, b, ldb, m, n, k, accumulate, alpha, second, sp);
  } else {
    block_gemm_wmma<kATransposed, kBTransposed, 1>(c, ldc, a, lda, b, ldb, m, n, k, accumulate, alpha, second, sp);
  }
}

// ---- Split of an fp32 value into two element-type halves: x ~= hi + lo / kSplitScale ----
// The tensor cores take 16-bit operands; one rounding costs 2^-9 (bf16) or 2^-12 (fp16) of the
// value, which the normalised attention's cancellations amplify. hi + lo keeps about twice the
// bits. fp16's lo is stored multiplied by 2^11 (the residual is under 2^-11 of hi) so that it
// stays a normal number in fp16's narrow range, and its product is multiplied back; bf16 has
// fp32's exponent range and keeps lo as it is (block_gemm then needs no second accumulator).
template <class T>
constexpr float kSplitScale = kIsHalf<T> ? 2048.0f : 1.0f;

template <class T>
__device__ __forceinline__ T split_high(float x) {
  return from_float<T>(x);
}

template <class T>
__device__ __forceinline__ T split_low(float x, T high) {
  return from_float<T>((x - to_float(high)) * kSplitScale<T>);
}

}  // namespace cuda_detail
}  // namespace linbench
