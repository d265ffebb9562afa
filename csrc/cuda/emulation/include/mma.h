// Host stand-in for CUDA's <mma.h> (nvcuda::wmma) used by the emulation test only.
//
// Every lane of a warp holds the whole 16 x 16 tile (the real layout is opaque, and the kernels
// only touch fragments element-wise with the same operation on every element, which any layout
// satisfies). Loads check the wmma alignment rules; lane 0 stores, between two warp barriers.
#pragma once

#include <barrier>
#include <cassert>
#include <cstdint>

namespace nvcuda {
namespace wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

template <class Use, int M, int N, int K, class T, class Layout = void>
struct fragment {
  static_assert(M == 16 && N == 16 && K == 16, "the kernels use m16n16k16 only");
  static constexpr int num_elements = 256;
  T x[256];
};

namespace emu_detail {
inline void check_pointer(const void* ptr, unsigned ldm, unsigned elem_size) {
  assert(reinterpret_cast<uintptr_t>(ptr) % 32 == 0 && "wmma pointers must be 256-bit aligned");
  assert((ldm * elem_size) % 16 == 0 && "wmma ldm must be a multiple of 16 bytes");
  (void)ptr, (void)ldm, (void)elem_size;
}
template <class T>
float as_float(T v) {
  return static_cast<float>(v);
}
inline float as_float(__half v) { return __half2float(v); }
inline float as_float(__nv_bfloat16 v) { return __bfloat162float(v); }
}  // namespace emu_detail

template <class Use, class T, class L>
void fill_fragment(fragment<Use, 16, 16, 16, T, L>& f, const T& v) {
  for (int i = 0; i < 256; ++i) f.x[i] = v;
}

template <class Use, class T>
void load_matrix_sync(fragment<Use, 16, 16, 16, T, row_major>& f, const T* p, unsigned ldm) {
  emu_detail::check_pointer(p, ldm, sizeof(T));
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 16; ++c) f.x[r * 16 + c] = p[r * ldm + c];
}

template <class Use, class T>
void load_matrix_sync(fragment<Use, 16, 16, 16, T, col_major>& f, const T* p, unsigned ldm) {
  emu_detail::check_pointer(p, ldm, sizeof(T));
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 16; ++c) f.x[r * 16 + c] = p[c * ldm + r];
}

inline void load_matrix_sync(fragment<accumulator, 16, 16, 16, float>& f, const float* p, unsigned ldm,
                             layout_t layout) {
  emu_detail::check_pointer(p, ldm, sizeof(float));
  assert(layout == mem_row_major);
  (void)layout;
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 16; ++c) f.x[r * 16 + c] = p[r * ldm + c];
}

template <class T, class LA, class LB>
void mma_sync(fragment<accumulator, 16, 16, 16, float>& d, const fragment<matrix_a, 16, 16, 16, T, LA>& a,
              const fragment<matrix_b, 16, 16, 16, T, LB>& b, const fragment<accumulator, 16, 16, 16, float>& c) {
  float out[256];
  for (int r = 0; r < 16; ++r)
    for (int col = 0; col < 16; ++col) {
      float acc = c.x[r * 16 + col];
      for (int l = 0; l < 16; ++l)
        acc += emu_detail::as_float(a.x[r * 16 + l]) * emu_detail::as_float(b.x[l * 16 + col]);
      out[r * 16 + col] = acc;
    }
  for (int i = 0; i < 256; ++i) d.x[i] = out[i];
}

inline void store_matrix_sync(float* p, const fragment<accumulator, 16, 16, 16, float>& f, unsigned ldm,
                              layout_t layout) {
  emu_detail::check_pointer(p, ldm, sizeof(float));
  assert(layout == mem_row_major);
  (void)layout;
  // Warp-collective, as the real one: no lane writes before every lane is done with its earlier
  // loads (an accumulate reads the tile it then stores), and every lane sees the tile after.
  emu::Barrier* warp = emu::block->warp_barrier[threadIdx.x / 32];
  warp->arrive_and_wait();
  if (threadIdx.x % 32 == 0)
    for (int r = 0; r < 16; ++r)
      for (int c = 0; c < 16; ++c) p[r * ldm + c] = f.x[r * 16 + c];
  warp->arrive_and_wait();
}

}  // namespace wmma
}  // namespace nvcuda
