// Small dense products on chunk-sized, row-major buffers, written so the compiler keeps
// an MR x NR block of the result in vector registers across the whole inner dimension.
//
// A chunk's products are at most a few hundred rows wide, so calling a BLAS per product
// would spend more in dispatch than in arithmetic; these loops stay in L1/L2 instead.
// The block is sized to the register file: 8 x 32 floats are 16 of AVX-512's 32 registers,
// 6 x 16 floats 12 of AVX2's 16, leaving room for a row of B and a broadcast of A. Fewer
// accumulators leave the FMA units waiting on their own latency: 4 x 16 measured 27
// GFLOP/s on one AVX-512 core where 8 x 32 measured 104 (64 x 64 x 64 products).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace linbench::cpu {

// Which part of a square product is wanted, or which part of a square A is non-zero.
enum class Part {
  full,
  lower_out,  // C is lower triangular: only columns <= row are computed
  upper_out,  // C is upper triangular: only columns >= row are computed
  lower_a,    // A is lower triangular (zero above its diagonal): k runs up to the row
  upper_a,    // A is upper triangular (zero below its diagonal): k starts at the row
};

#ifdef __AVX512F__
constexpr int64_t kMR = 8;
constexpr int64_t kNR = 32;
#else
constexpr int64_t kMR = 6;
constexpr int64_t kNR = 16;
#endif

// The widest vector register the build targets, in bytes.
#if defined(__AVX512F__)
constexpr int64_t kVectorBytes = 64;
#elif defined(__AVX__)
constexpr int64_t kVectorBytes = 32;
#else
constexpr int64_t kVectorBytes = 16;
#endif

// C[rows x cols] (+)= A[rows x (k_end - k_begin)] B[(k_end - k_begin) x cols] for one
// register block; ROWS and COLS at most kMR and kNR (compile-time for the full block).
//
// The accumulators are GCC/Clang vector types rather than a plain T[ROWS][COLS] array: left
// to the auto-vectoriser, GCC 12 with -march=znver3 (AVX2) turned the array into shuffles
// and scalar adds, and cosine:kernel's forward at 4k took 196 ms where the chunked PyTorch
// form took 27 ms. Each row of B is loaded once per k as COLS / lanes vectors, each element
// of A broadcast against them.
template <typename T, int64_t ROWS, int64_t COLS>
inline void block_product(int64_t k_begin, int64_t k_end, const T* a, int64_t lda, const T* b, int64_t ldb, T* c,
                          int64_t ldc, bool accumulate) {
  constexpr int64_t kLanes = kVectorBytes / static_cast<int64_t>(sizeof(T));
  static_assert(COLS % kLanes == 0, "a full block spans whole vectors");
  constexpr int64_t kVectors = COLS / kLanes;
  typedef T Vec __attribute__((vector_size(kVectorBytes)));
  Vec acc[ROWS][kVectors];
  for (int64_t r = 0; r < ROWS; ++r)
    for (int64_t v = 0; v < kVectors; ++v) {
      if (accumulate)
        std::memcpy(&acc[r][v], c + r * ldc + v * kLanes, sizeof(Vec));
      else
        acc[r][v] = Vec{};
    }
  for (int64_t p = k_begin; p < k_end; ++p) {
    Vec b_row[kVectors];
    for (int64_t v = 0; v < kVectors; ++v) std::memcpy(&b_row[v], b + p * ldb + v * kLanes, sizeof(Vec));
    for (int64_t r = 0; r < ROWS; ++r) {
      const T a_rp = a[r * lda + p];
      for (int64_t v = 0; v < kVectors; ++v) acc[r][v] += a_rp * b_row[v];
    }
  }
  for (int64_t r = 0; r < ROWS; ++r)
    for (int64_t v = 0; v < kVectors; ++v) std::memcpy(c + r * ldc + v * kLanes, &acc[r][v], sizeof(Vec));
}

// The ragged edge: fewer rows or columns than a full block, sizes known only at run time.
template <typename T>
inline void edge_product(int64_t rows, int64_t cols, int64_t k_begin, int64_t k_end, const T* a, int64_t lda,
                         const T* b, int64_t ldb, T* c, int64_t ldc, bool accumulate) {
  for (int64_t r = 0; r < rows; ++r) {
    T* c_row = c + r * ldc;
    if (!accumulate) std::fill(c_row, c_row + cols, T(0));
    for (int64_t p = k_begin; p < k_end; ++p) {
      const T a_rp = a[r * lda + p];
      const T* b_row = b + p * ldb;
      for (int64_t j = 0; j < cols; ++j) c_row[j] += a_rp * b_row[j];
    }
  }
}

// C[m x n] (+)= A[m x k] B[k x n], restricted to the part `P` says is needed. Entries of a
// triangular C outside the triangle but inside a computed block are written too (callers
// that need exact zeros there mask afterwards); entries outside every block are untouched.
template <Part P, typename T>
void product(int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb, T* c, int64_t ldc,
             bool accumulate) {
  for (int64_t i0 = 0; i0 < m; i0 += kMR) {
    const int64_t rows = std::min(kMR, m - i0);
    int64_t col_begin = 0, col_end = n, k_begin = 0, k_end = k;
    // Triangular outputs are computed in whole register tiles (callers mask the rest):
    // a ragged edge of a few columns costs more than the tile's extra columns.
    if constexpr (P == Part::lower_out) col_end = std::min(n, (i0 + rows + kNR - 1) / kNR * kNR);
    if constexpr (P == Part::upper_out) col_begin = i0 - i0 % kNR;
    if constexpr (P == Part::lower_a) k_end = std::min(k, i0 + rows);
    if constexpr (P == Part::upper_a) k_begin = std::min(k, i0);
    const T* a_rows = a + i0 * lda;
    T* c_rows = c + i0 * ldc;
    int64_t j0 = col_begin;
    for (; rows == kMR && j0 + kNR <= col_end; j0 += kNR)
      block_product<T, kMR, kNR>(k_begin, k_end, a_rows, lda, b + j0, ldb, c_rows + j0, ldc, accumulate);
    if (j0 < col_end)
      edge_product(rows, col_end - j0, k_begin, k_end, a_rows, lda, b + j0, ldb, c_rows + j0, ldc, accumulate);
  }
}

}  // namespace linbench::cpu
