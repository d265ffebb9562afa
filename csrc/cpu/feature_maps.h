// Feature maps the CPU kernel applies to q and k as it loads a chunk, so the variants that
// need them (cosine's row L2 norm, linear's elu + 1) skip three or four full passes over q
// and k in PyTorch; the backward turns the gradients for phi(q), phi(k) into those for q, k.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "cpu/chunk_buffers.h"

namespace linbench::cpu {

enum class FeatureMap : int64_t { identity = 0, l2_normalize = 1, elu_plus_one = 2 };

// torch.nn.functional.normalize's default: rows shorter than this are divided by it instead.
constexpr double kNormEps = 1e-12;

template <typename acc_t, typename scalar_t>
inline acc_t inverse_norm(const scalar_t* row, int64_t cols) {
  acc_t total = 0;
  for (int64_t c = 0; c < cols; ++c) {
    const acc_t x = static_cast<acc_t>(row[c]);
    total += x * x;
  }
  return acc_t(1) / std::max(std::sqrt(total), static_cast<acc_t>(kNormEps));
}

// exp is libm's scalar call (GCC vectorises it only under -ffast-math): on 2·S·Dk elements it
// is what linear:kernel spends most of its time beyond cosine:kernel's (README, Kernels).
template <typename acc_t>
inline acc_t elu_plus_one(acc_t x) {
  return x > 0 ? x + acc_t(1) : std::exp(x);
}

template <typename acc_t>
inline void elu_plus_one_in_place(acc_t* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = elu_plus_one(x[i]);
}

// dst (rows x cols) = phi(src) row by row.
template <typename acc_t, typename scalar_t>
void load_feature_rows(acc_t* dst, const scalar_t* src, int64_t rows, int64_t cols, FeatureMap f) {
  load_rows(dst, src, rows, cols);
  if (f == FeatureMap::identity) return;
  for (int64_t r = 0; r < rows; ++r) {
    acc_t* row = dst + r * cols;
    if (f == FeatureMap::l2_normalize) {
      const acc_t scale = inverse_norm<acc_t>(row, cols);
      for (int64_t c = 0; c < cols; ++c) row[c] *= scale;
    } else {
      elu_plus_one_in_place(row, cols);
    }
  }
}

// dst[c, r] = phi(src)[r, c], dst row stride ld.
template <typename acc_t, typename scalar_t>
void load_feature_transposed(acc_t* dst, const scalar_t* src, int64_t rows, int64_t cols, int64_t ld, FeatureMap f) {
  if (f != FeatureMap::l2_normalize) {
    load_transposed(dst, src, rows, cols, ld);
    if (f == FeatureMap::elu_plus_one)
      for (int64_t c = 0; c < cols; ++c) elu_plus_one_in_place(dst + c * ld, rows);
    return;
  }
  for (int64_t r = 0; r < rows; ++r) {
    const scalar_t* row = src + r * cols;
    const acc_t scale = inverse_norm<acc_t>(row, cols);
    for (int64_t c = 0; c < cols; ++c) dst[c * ld + r] = static_cast<acc_t>(row[c]) * scale;
  }
}

// grad (rows x cols) holds dL/dphi(x); turn it into dL/dx, given x itself (raw, rows x cols).
//   l2: phi = x / n, n = max(|x|, eps): dL/dx = (g - phi (phi . g)) / n when |x| > eps, g / eps otherwise
//   elu + 1: dL/dx = g where x > 0, g exp(x) elsewhere
template <typename acc_t>
void feature_backward(acc_t* grad, const acc_t* x, int64_t rows, int64_t cols, FeatureMap f) {
  if (f == FeatureMap::identity) return;
  for (int64_t r = 0; r < rows; ++r) {
    acc_t* g = grad + r * cols;
    const acc_t* xr = x + r * cols;
    if (f == FeatureMap::elu_plus_one) {
      for (int64_t c = 0; c < cols; ++c)
        if (xr[c] <= 0) g[c] *= std::exp(xr[c]);
      continue;
    }
    const acc_t norm = std::sqrt(dot(xr, xr, cols));
    if (norm <= static_cast<acc_t>(kNormEps)) {
      for (int64_t c = 0; c < cols; ++c) g[c] /= static_cast<acc_t>(kNormEps);
      continue;
    }
    const acc_t inv = acc_t(1) / norm;
    const acc_t along = dot(xr, g, cols) * inv;  // phi . g
    for (int64_t c = 0; c < cols; ++c) g[c] = (g[c] - xr[c] * inv * along) * inv;
  }
}

}  // namespace linbench::cpu
