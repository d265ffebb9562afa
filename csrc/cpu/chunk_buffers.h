// Moving one chunk between a (seq, dim) slice in the input's dtype and fp32/fp64 scratch.
//
// Every product of the kernel reads its operands from these small buffers, so the
// conversion from fp16/bf16 happens once per element per pass, and the transposed copies
// let every product run along contiguous rows (see tile_gemm.h).
#pragma once

#include <algorithm>
#include <cstdint>

namespace linbench::cpu {

// dst[r, c] = src[r, c] for a rows x cols block (dst row stride = cols).
template <typename acc_t, typename scalar_t>
inline void load_rows(acc_t* dst, const scalar_t* src, int64_t rows, int64_t cols) {
  for (int64_t i = 0; i < rows * cols; ++i) dst[i] = static_cast<acc_t>(src[i]);
}

// dst[c, r] = src[r, c]: a rows x cols block stored transposed, dst row stride = ld.
template <typename acc_t, typename scalar_t>
inline void load_transposed(acc_t* dst, const scalar_t* src, int64_t rows, int64_t cols, int64_t ld) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) dst[c * ld + r] = static_cast<acc_t>(src[r * cols + c]);
}

template <typename scalar_t, typename acc_t>
inline void store_rows(scalar_t* dst, const acc_t* src, int64_t rows, int64_t cols) {
  for (int64_t i = 0; i < rows * cols; ++i) dst[i] = static_cast<scalar_t>(src[i]);
}

// dst (cols x rows, row stride ld) = src (rows x cols, dense) transposed.
template <typename acc_t>
inline void transpose_block(acc_t* dst, const acc_t* src, int64_t rows, int64_t cols, int64_t ld) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) dst[c * ld + r] = src[r * cols + c];
}

template <typename acc_t>
inline void transpose(acc_t* dst, const acc_t* src, int64_t rows, int64_t cols) {
  transpose_block(dst, src, rows, cols, rows);
}

// Zero the entries above (lower) or below (upper) the diagonal of an n x n block.
template <typename acc_t>
inline void keep_lower(acc_t* m, int64_t n, int64_t ld) {
  for (int64_t i = 0; i < n; ++i) std::fill(m + i * ld + i + 1, m + i * ld + n, acc_t(0));
}

template <typename acc_t>
inline void keep_upper(acc_t* m, int64_t n, int64_t ld) {
  for (int64_t i = 0; i < n; ++i) std::fill(m + i * ld, m + i * ld + i, acc_t(0));
}

// m[r, c] *= factors[c] for a rows x cols block.
template <typename acc_t>
inline void scale_columns(acc_t* m, int64_t rows, int64_t cols, const acc_t* factors) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) m[r * cols + c] *= factors[c];
}

// m[r, c] *= factors[r] for a rows x cols block.
template <typename acc_t>
inline void scale_rows(acc_t* m, int64_t rows, int64_t cols, const acc_t* factors) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) m[r * cols + c] *= factors[r];
}

// sums[c] += sum over the n rows of m[r, c] (m row stride = cols).
template <typename acc_t>
inline void add_column_sums(acc_t* sums, const acc_t* m, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) sums[c] += m[r * cols + c];
}

template <typename acc_t>
inline acc_t dot(const acc_t* a, const acc_t* b, int64_t n) {
  acc_t total = 0;
  for (int64_t i = 0; i < n; ++i) total += a[i] * b[i];
  return total;
}

}  // namespace linbench::cpu
