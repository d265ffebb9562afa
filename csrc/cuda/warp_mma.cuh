// Warp-level primitives of the fast chunked kernels (fast_pass.cuh): the tensor-core product
// mma.sync.m16n8k16 (16-bit operands, fp32 accumulators), ldmatrix (8 x 8 tiles of 16-bit
// elements from shared memory into fragments, optionally transposed), and cp.async (16-byte
// global -> shared copies that do not go through registers, in commit groups).
//
// The fragment layouts (PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point type"
// and "ldmatrix"), with g = lane / 4 and t = lane % 4:
//   A (16 x 16, row-major): a[0] = (g, 2t..2t+1), a[1] = (g+8, 2t..), a[2] = (g, 2t+8..), a[3] = (g+8, 2t+8..)
//   B (16 x 8, k x n):      b[0] = (k 2t..2t+1, n g), b[1] = (k 2t+8..2t+9, n g)
//   C (16 x 8, fp32):       c[0], c[1] = (g, 2t), (g, 2t+1); c[2], c[3] = (g+8, 2t), (g+8, 2t+1)
//   ldmatrix .x4: lanes 8m .. 8m+7 give the row addresses of matrix m (16 bytes each); register m
//   of lane L gets matrix m's elements (L/4, 2(L%4)) and (L/4, 2(L%4)+1), or, with .trans,
//   (2(L%4), L/4) and (2(L%4)+1, L/4).
// Each 32-bit register holds two 16-bit elements, the lower column (or k) in the low half.
//
// The host emulation (emulation/emu_warp.h) defines the same functions with these layouts,
// element by element, so the kernels' use of them is checked on the CPU.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace linbench {
namespace cuda_detail {

#ifndef LINBENCH_CUDA_HOST_EMULATION
// Built for an architecture before sm_80 (an extension built for an older GPU, or PTX for one that
// a newer GPU compiles on load), the primitives compile to a trap: the launchers never run the
// fast pass there (fast_path_refusal checks the device and the kernels' PTX version).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#define LINBENCH_FAST_PASS_UNSUPPORTED 1
#endif

// The asm that reads or writes shared memory says so ("memory"), so that no compiler moves a plain
// load or store of the same tiles across it; the barriers between them order the threads.

__device__ __forceinline__ uint32_t shared_address(const void* ptr) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(ptr));
}

// d += A B for one 16 x 8 tile (kBf16: bf16 operands, else fp16).
template <bool kBf16>
__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
#ifdef LINBENCH_FAST_PASS_UNSUPPORTED
  __trap();
#else
  if constexpr (kBf16) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
#endif
}

// Four 8 x 8 matrices; `row` is this lane's row address (see the layout above).
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* row) {
#ifdef LINBENCH_FAST_PASS_UNSUPPORTED
  r[0] = r[1] = r[2] = r[3] = 0u;
  __trap();
#else
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(row))
               : "memory");
#endif
}

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* row) {
#ifdef LINBENCH_FAST_PASS_UNSUPPORTED
  r[0] = r[1] = r[2] = r[3] = 0u;
  __trap();
#else
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(row))
               : "memory");
#endif
}

// 16 bytes from global to shared memory, of which the first `src_bytes` (0 or 16) are read and
// the rest zero-filled (rows past the sequence, columns past the operand).
__device__ __forceinline__ void cp_async_16(void* dst, const void* src, int src_bytes) {
#ifdef LINBENCH_FAST_PASS_UNSUPPORTED
  __trap();
#else
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared_address(dst)), "l"(src),
               "r"(src_bytes)
               : "memory");
#endif
}

__device__ __forceinline__ void cp_async_commit() {
#ifndef LINBENCH_FAST_PASS_UNSUPPORTED
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

// Waits until at most kPending of this thread's committed groups are still in flight.
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
#ifndef LINBENCH_FAST_PASS_UNSUPPORTED
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
#endif
}
#endif

// Two fp32 values as one register of two 16-bit elements (lo in the low half).
template <class T>
__device__ __forceinline__ uint32_t pack_pair(float lo, float hi);
template <>
__device__ __forceinline__ uint32_t pack_pair<__nv_bfloat16>(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  uint32_t r;
  memcpy(&r, &v, sizeof(r));
  return r;
}
template <>
__device__ __forceinline__ uint32_t pack_pair<__half>(float lo, float hi) {
  const __half2 v = __floats2half2_rn(lo, hi);
  uint32_t r;
  memcpy(&r, &v, sizeof(r));
  return r;
}

// The two fp32 values of a register packed by pack_pair.
template <class T>
__device__ __forceinline__ void unpack_pair(uint32_t r, float* lo, float* hi);
template <>
__device__ __forceinline__ void unpack_pair<__nv_bfloat16>(uint32_t r, float* lo, float* hi) {
  __nv_bfloat162 v;
  memcpy(static_cast<void*>(&v), &r, sizeof(r));
  *lo = __low2float(v);
  *hi = __high2float(v);
}
template <>
__device__ __forceinline__ void unpack_pair<__half>(uint32_t r, float* lo, float* hi) {
  __half2 v;
  memcpy(static_cast<void*>(&v), &r, sizeof(r));
  *lo = __low2float(v);
  *hi = __high2float(v);
}

}  // namespace cuda_detail
}  // namespace linbench
