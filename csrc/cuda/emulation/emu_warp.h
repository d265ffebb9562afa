// Host emulation of the warp primitives of ../warp_mma.cuh (included by emu_cuda.h): mma.sync
// m16n8k16, ldmatrix .x4 (and .trans) and cp.async with commit groups, each lane holding exactly
// the fragment elements the PTX ISA assigns it ("Matrix Fragments for mma.m16n8k16 with
// floating point type", "ldmatrix"), so a kernel that puts an element in the wrong lane or
// register gets a wrong product here too. The collective ones exchange through the block's
// per-warp buffers between two warp barriers, as __shfl_xor_sync does. cp.async copies are held
// per thread until a cp_async_wait releases their group (the shared memory keeps its NaN bytes
// until then, so a read before the wait shows up in the results), and every copy is checked to
// land 16-byte aligned inside the block's shared memory.
#pragma once

#include <cstdio>
#include <cstdlib>

namespace emu {

[[noreturn]] inline void fail(const char* what) {
  std::fprintf(stderr, "emulation: thread %u of block %u: %s\n", thread_idx.x, block_idx.x, what);
  std::abort();
}

// `bytes` at `ptr` lie inside the block's shared memory, 16-byte aligned.
inline void check_shared(const void* ptr, size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(ptr);
  if (p < block->smem || p + bytes > block->smem + block->smem_bytes) fail("shared-memory access out of bounds");
  if (reinterpret_cast<uintptr_t>(p) % 16 != 0) fail("shared-memory row address not 16-byte aligned");
}

inline uint16_t half_of(uint32_t word, int which) { return static_cast<uint16_t>(which ? word >> 16 : word & 0xffffu); }

template <bool kBf16>
float element_value(uint16_t bits) {
  if constexpr (kBf16) {
    __nv_bfloat16 x;
    memcpy(static_cast<void*>(&x), &bits, 2);
    return __bfloat162float(x);
  } else {
    __half x;
    memcpy(static_cast<void*>(&x), &bits, 2);
    return __half2float(x);
  }
}

}  // namespace emu

namespace linbench::cuda_detail {

template <bool kBf16>
void mma_16816(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  const unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  uint32_t* mine = emu::block->words[warp][lane];
  for (int i = 0; i < 4; ++i) mine[i] = a[i];
  mine[4] = b[0], mine[5] = b[1];
  emu::block->warp_barrier[warp]->arrive_and_wait();
  const int g = static_cast<int>(lane / 4), t = static_cast<int>(lane % 4);
  float out[4];
  for (int e = 0; e < 4; ++e) {
    const int row = g + 8 * (e / 2), col = 2 * t + e % 2;
    float acc = d[e];
    for (int k = 0; k < 16; ++k) {
      // A (row, k): lane (row % 8) * 4 + (k % 8) / 2, register (row >= 8) + 2 (k >= 8), half k % 2.
      const uint32_t* a_lane = emu::block->words[warp][(row % 8) * 4 + (k % 8) / 2];
      const float x = emu::element_value<kBf16>(emu::half_of(a_lane[(row >= 8) + 2 * (k >= 8)], k % 2));
      // B (k, col): lane col * 4 + (k % 8) / 2, register (k >= 8), half k % 2.
      const uint32_t* b_lane = emu::block->words[warp][col * 4 + (k % 8) / 2];
      const float y = emu::element_value<kBf16>(emu::half_of(b_lane[4 + (k >= 8)], k % 2));
      acc += x * y;
    }
    out[e] = acc;
  }
  emu::block->warp_barrier[warp]->arrive_and_wait();  // every lane has read the others' registers
  for (int e = 0; e < 4; ++e) d[e] = out[e];
}

inline void ldmatrix_x4_impl(uint32_t (&r)[4], const void* row, bool trans) {
  const unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  emu::check_shared(row, 16);
  emu::block->addrs[warp][lane] = row;
  emu::block->warp_barrier[warp]->arrive_and_wait();
  for (int m = 0; m < 4; ++m) {
    uint16_t e[2];
    for (int i = 0; i < 2; ++i) {
      // Matrix m's element (mr, mc) is column mc of the row whose address lane 8m + mr gave.
      const int mr = trans ? 2 * static_cast<int>(lane % 4) + i : static_cast<int>(lane / 4);
      const int mc = trans ? static_cast<int>(lane / 4) : 2 * static_cast<int>(lane % 4) + i;
      const auto* src = static_cast<const uint16_t*>(emu::block->addrs[warp][8 * m + mr]);
      e[i] = src[mc];
    }
    r[m] = static_cast<uint32_t>(e[0]) | (static_cast<uint32_t>(e[1]) << 16);
  }
  emu::block->warp_barrier[warp]->arrive_and_wait();
}

inline void ldmatrix_x4(uint32_t (&r)[4], const void* row) { ldmatrix_x4_impl(r, row, false); }
inline void ldmatrix_x4_trans(uint32_t (&r)[4], const void* row) { ldmatrix_x4_impl(r, row, true); }

inline void cp_async_16(void* dst, const void* src, int src_bytes) {
  emu::check_shared(dst, 16);
  if (src_bytes != 0 && src_bytes != 16) emu::fail("cp.async source size other than 0 or 16");
  if (src_bytes != 0 && reinterpret_cast<uintptr_t>(src) % 16 != 0) emu::fail("cp.async source not 16-byte aligned");
  emu::block->copies[threadIdx.x].open.push_back(emu::AsyncCopy{dst, src, src_bytes});
}

inline void cp_async_commit() {
  emu::AsyncQueue& q = emu::block->copies[threadIdx.x];
  q.committed.push_back(std::move(q.open));
  q.open.clear();
}

template <int kPending>
void cp_async_wait() {
  emu::AsyncQueue& q = emu::block->copies[threadIdx.x];
  while (q.committed.size() > static_cast<size_t>(kPending)) {
    for (const emu::AsyncCopy& c : q.committed.front()) {
      if (c.src_bytes > 0) memcpy(c.dst, c.src, static_cast<size_t>(c.src_bytes));
      memset(static_cast<unsigned char*>(c.dst) + c.src_bytes, 0, static_cast<size_t>(16 - c.src_bytes));
    }
    q.committed.pop_front();
  }
}

}  // namespace linbench::cuda_detail
