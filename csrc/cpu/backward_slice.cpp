// Backward pass of one (batch, head) slice. The states are recomputed, never stored.
//
// With the normaliser, out = N / (D + eps) is the unnormalised problem with V' = [V, 1]
// and the incoming gradient dO' = [dN, dD], dN = dO / (D + eps), dD = -(dO . out) / (D + eps).
// As in the forward, the extra column is not materialised; its terms are added on the side.
//
// Causal, chunk c (P = tril(Q K^T), G = tril(dO' V'^T)):
//   forward sweep, recomputing S:  dQ_c = G K_c + dN_c S_c^T (+ dD z_c^T)
//   reverse sweep, R' = the gradient reaching the state from later chunks:
//     dK_c = G^T Q_c + V_c R'^T (+ r'),  dV_c = P^T dN_c + K_c R',
//     then R = Q_c^T dN_c + R' (r = Q_c^T dD + r'), decayed for chunk c - 1.
#include <ATen/OpMathType.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <vector>

#include "cpu/chunk_buffers.h"
#include "cpu/feature_maps.h"
#include "cpu/slice_kernels.h"
#include "cpu/tile_gemm.h"

namespace linbench::cpu {
namespace {

template <typename acc_t>
struct BackwardScratch {
  std::vector<acc_t> q, q_t, k, k_t, v, v_t, dn, dn_t, dd, square, dq, dk, dv;
  std::vector<acc_t> state_t, key_sum, r, r_t, r_key;
  std::vector<acc_t> raw;  // q or k as given, for the feature map's backward

  BackwardScratch(const SliceDims& d)
      : q(d.chunk * d.dim_k),
        q_t(d.dim_k * d.chunk),
        k(d.chunk * d.dim_k),
        k_t(d.dim_k * d.chunk),
        v(d.chunk * d.dim_v),
        v_t(d.dim_v * d.chunk),
        dn(d.chunk * d.dim_v),
        dn_t(d.dim_v * d.chunk),
        dd(d.chunk, acc_t(0)),
        square(d.chunk * d.chunk),
        dq(d.chunk * d.dim_k),
        dk(d.chunk * d.dim_k),
        dv(d.chunk * d.dim_v),
        state_t(d.dim_v * d.dim_k, acc_t(0)),
        key_sum(d.dim_k, acc_t(0)),
        r(d.dim_k * d.dim_v, acc_t(0)),
        r_t(d.dim_v * d.dim_k),
        r_key(d.dim_k, acc_t(0)),
        raw(d.feature == FeatureMap::identity ? 0 : d.chunk * d.dim_k) {}
};

template <typename scalar_t, typename acc_t>
struct GradInputs {
  const scalar_t* grad_out;
  const scalar_t* out;
  const acc_t* den;
};

// dN (and dD) of one chunk into s.dn and s.dd.
template <typename scalar_t, typename acc_t>
void load_output_grad(const SliceDims& d, const GradInputs<scalar_t, acc_t>& g, BackwardScratch<acc_t>& s,
                      int64_t start, int64_t n) {
  load_rows(s.dn.data(), g.grad_out + start * d.dim_v, n, d.dim_v);
  if (!d.normalize) {
    // out = value_scale * attention: every gradient is the unscaled one of value_scale * dO.
    if (d.value_scale != 1.0) {
      const acc_t scale = static_cast<acc_t>(d.value_scale);
      for (int64_t i = 0; i < n * d.dim_v; ++i) s.dn[i] *= scale;
    }
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    const acc_t inv = acc_t(1) / (g.den[start + i] + static_cast<acc_t>(d.eps));
    acc_t dot_out = 0;
    acc_t* dn_row = s.dn.data() + i * d.dim_v;
    const scalar_t* out_row = g.out + (start + i) * d.dim_v;
    for (int64_t e = 0; e < d.dim_v; ++e) dot_out += dn_row[e] * static_cast<acc_t>(out_row[e]);
    for (int64_t e = 0; e < d.dim_v; ++e) dn_row[e] *= inv;
    s.dd[i] = -dot_out * inv;
  }
}

// m[i, j] += x[i] for j <= i (lower) or m[j, i] += x[i] for j <= i (upper): the rank-one
// term that the ones column of V' adds to G = dO' V'^T or to its transpose.
template <typename acc_t>
void add_row_values_lower(acc_t* m, const acc_t* x, int64_t n, int64_t ld) {
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j <= i; ++j) m[i * ld + j] += x[i];
}

template <typename acc_t>
void add_column_values_upper(acc_t* m, const acc_t* x, int64_t n, int64_t ld) {
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = j; i < n; ++i) m[j * ld + i] += x[i];
}

// rows[i, :] += scale[i] * vec for an n x dim block.
template <typename acc_t>
void add_scaled_vector(acc_t* rows, const acc_t* scale, const acc_t* vec, int64_t n, int64_t dim) {
  for (int64_t i = 0; i < n; ++i)
    for (int64_t f = 0; f < dim; ++f) rows[i * dim + f] += scale[i] * vec[f];
}

// grad (n rows of q or k) from dL/dphi to dL/dx, reading the raw rows at src.
template <typename scalar_t, typename acc_t>
void through_feature_map(const SliceDims& d, BackwardScratch<acc_t>& s, acc_t* grad, const scalar_t* src, int64_t n) {
  if (d.feature == FeatureMap::identity) return;
  load_rows(s.raw.data(), src, n, d.dim_k);
  feature_backward(grad, s.raw.data(), n, d.dim_k, d.feature);
}

template <typename scalar_t, typename acc_t>
void grad_q_sweep(const SliceDims& d, const SliceInputs<scalar_t, acc_t>& in, const GradInputs<scalar_t, acc_t>& g,
                  BackwardScratch<acc_t>& s, scalar_t* grad_q) {
  const int64_t C = d.chunk;
  for (int64_t start = 0, c = 0; start < d.seq; start += C, ++c) {
    const int64_t n = std::min(C, d.seq - start);
    load_feature_rows(s.k.data(), in.k + start * d.dim_k, n, d.dim_k, d.feature);
    load_transposed(s.v_t.data(), in.v + start * d.dim_v, n, d.dim_v, C);
    load_output_grad(d, g, s, start, n);
    // S^T is dv x dk: a decay of S's column e scales row e of S^T.
    if (in.decay != nullptr && c > 0) scale_rows(s.state_t.data(), d.dim_v, d.dim_k, in.decay + c * d.dim_v);
    product<Part::lower_out>(n, n, d.dim_v, s.dn.data(), d.dim_v, s.v_t.data(), C, s.square.data(), C, false);
    keep_lower(s.square.data(), n, C);
    if (d.normalize) add_row_values_lower(s.square.data(), s.dd.data(), n, C);
    product<Part::lower_a>(n, d.dim_k, n, s.square.data(), C, s.k.data(), d.dim_k, s.dq.data(), d.dim_k, false);
    product<Part::full>(n, d.dim_k, d.dim_v, s.dn.data(), d.dim_v, s.state_t.data(), d.dim_k, s.dq.data(), d.dim_k,
                        true);
    if (d.normalize) {
      add_scaled_vector(s.dq.data(), s.dd.data(), s.key_sum.data(), n, d.dim_k);
      add_column_sums(s.key_sum.data(), s.k.data(), n, d.dim_k);
    }
    product<Part::full>(d.dim_v, d.dim_k, n, s.v_t.data(), C, s.k.data(), d.dim_k, s.state_t.data(), d.dim_k, true);
    through_feature_map(d, s, s.dq.data(), in.q + start * d.dim_k, n);
    store_rows(grad_q + start * d.dim_k, s.dq.data(), n, d.dim_k);
  }
}

template <typename scalar_t, typename acc_t>
void grad_kv_sweep(const SliceDims& d, const SliceInputs<scalar_t, acc_t>& in, const GradInputs<scalar_t, acc_t>& g,
                   BackwardScratch<acc_t>& s, scalar_t* grad_k, scalar_t* grad_v) {
  const int64_t C = d.chunk;
  const int64_t n_chunks = (d.seq + C - 1) / C;
  for (int64_t c = n_chunks - 1; c >= 0; --c) {
    const int64_t start = c * C, n = std::min(C, d.seq - start);
    load_feature_rows(s.q.data(), in.q + start * d.dim_k, n, d.dim_k, d.feature);
    load_feature_transposed(s.q_t.data(), in.q + start * d.dim_k, n, d.dim_k, C, d.feature);
    load_feature_rows(s.k.data(), in.k + start * d.dim_k, n, d.dim_k, d.feature);
    load_rows(s.v.data(), in.v + start * d.dim_v, n, d.dim_v);
    load_output_grad(d, g, s, start, n);
    transpose_block(s.dn_t.data(), s.dn.data(), n, d.dim_v, C);
    transpose(s.r_t.data(), s.r.data(), d.dim_k, d.dim_v);

    // dK_c = G^T Q_c + V_c R'^T, G^T[j, i] = v'_j . dO'_i for i >= j.
    product<Part::upper_out>(n, n, d.dim_v, s.v.data(), d.dim_v, s.dn_t.data(), C, s.square.data(), C, false);
    keep_upper(s.square.data(), n, C);
    if (d.normalize) add_column_values_upper(s.square.data(), s.dd.data(), n, C);
    product<Part::upper_a>(n, d.dim_k, n, s.square.data(), C, s.q.data(), d.dim_k, s.dk.data(), d.dim_k, false);
    product<Part::full>(n, d.dim_k, d.dim_v, s.v.data(), d.dim_v, s.r_t.data(), d.dim_k, s.dk.data(), d.dim_k, true);
    if (d.normalize)
      for (int64_t j = 0; j < n; ++j)
        for (int64_t f = 0; f < d.dim_k; ++f) s.dk[j * d.dim_k + f] += s.r_key[f];

    // dV_c = P^T dN_c + K_c R', P^T[j, i] = k_j . q_i for i >= j.
    product<Part::upper_out>(n, n, d.dim_k, s.k.data(), d.dim_k, s.q_t.data(), C, s.square.data(), C, false);
    keep_upper(s.square.data(), n, C);
    product<Part::upper_a>(n, d.dim_v, n, s.square.data(), C, s.dn.data(), d.dim_v, s.dv.data(), d.dim_v, false);
    product<Part::full>(n, d.dim_v, d.dim_k, s.k.data(), d.dim_k, s.r.data(), d.dim_v, s.dv.data(), d.dim_v, true);
    through_feature_map(d, s, s.dk.data(), in.k + start * d.dim_k, n);
    store_rows(grad_k + start * d.dim_k, s.dk.data(), n, d.dim_k);
    store_rows(grad_v + start * d.dim_v, s.dv.data(), n, d.dim_v);

    product<Part::full>(d.dim_k, d.dim_v, n, s.q_t.data(), C, s.dn.data(), d.dim_v, s.r.data(), d.dim_v, true);
    if (d.normalize)
      for (int64_t f = 0; f < d.dim_k; ++f)
        for (int64_t i = 0; i < n; ++i) s.r_key[f] += s.q_t[f * C + i] * s.dd[i];
    if (in.decay != nullptr && c > 0) scale_columns(s.r.data(), d.dim_k, d.dim_v, in.decay + c * d.dim_v);
  }
}

// Bidirectional: S = K^T V, z = K^T 1, R = Q^T dN, r = Q^T dD over the whole sequence, then
// dQ = dN S^T + dD z^T, dK = V R^T + 1 r^T, dV = K R, chunk by chunk.
template <typename scalar_t, typename acc_t>
void backward_bidirectional(const SliceDims& d, const SliceInputs<scalar_t, acc_t>& in,
                            const GradInputs<scalar_t, acc_t>& g, BackwardScratch<acc_t>& s, scalar_t* grad_q,
                            scalar_t* grad_k, scalar_t* grad_v) {
  const int64_t C = d.chunk;
  for (int64_t start = 0; start < d.seq; start += C) {
    const int64_t n = std::min(C, d.seq - start);
    load_feature_rows(s.k.data(), in.k + start * d.dim_k, n, d.dim_k, d.feature);
    load_transposed(s.v_t.data(), in.v + start * d.dim_v, n, d.dim_v, C);
    load_feature_transposed(s.q_t.data(), in.q + start * d.dim_k, n, d.dim_k, C, d.feature);
    load_output_grad(d, g, s, start, n);
    product<Part::full>(d.dim_v, d.dim_k, n, s.v_t.data(), C, s.k.data(), d.dim_k, s.state_t.data(), d.dim_k, true);
    product<Part::full>(d.dim_k, d.dim_v, n, s.q_t.data(), C, s.dn.data(), d.dim_v, s.r.data(), d.dim_v, true);
    if (d.normalize) {
      add_column_sums(s.key_sum.data(), s.k.data(), n, d.dim_k);
      for (int64_t f = 0; f < d.dim_k; ++f)
        for (int64_t i = 0; i < n; ++i) s.r_key[f] += s.q_t[f * C + i] * s.dd[i];
    }
  }
  transpose(s.r_t.data(), s.r.data(), d.dim_k, d.dim_v);
  for (int64_t start = 0; start < d.seq; start += C) {
    const int64_t n = std::min(C, d.seq - start);
    load_feature_rows(s.k.data(), in.k + start * d.dim_k, n, d.dim_k, d.feature);
    load_rows(s.v.data(), in.v + start * d.dim_v, n, d.dim_v);
    load_output_grad(d, g, s, start, n);
    product<Part::full>(n, d.dim_k, d.dim_v, s.dn.data(), d.dim_v, s.state_t.data(), d.dim_k, s.dq.data(), d.dim_k,
                        false);
    product<Part::full>(n, d.dim_k, d.dim_v, s.v.data(), d.dim_v, s.r_t.data(), d.dim_k, s.dk.data(), d.dim_k, false);
    product<Part::full>(n, d.dim_v, d.dim_k, s.k.data(), d.dim_k, s.r.data(), d.dim_v, s.dv.data(), d.dim_v, false);
    if (d.normalize) {
      add_scaled_vector(s.dq.data(), s.dd.data(), s.key_sum.data(), n, d.dim_k);
      for (int64_t j = 0; j < n; ++j)
        for (int64_t f = 0; f < d.dim_k; ++f) s.dk[j * d.dim_k + f] += s.r_key[f];
    }
    through_feature_map(d, s, s.dq.data(), in.q + start * d.dim_k, n);
    through_feature_map(d, s, s.dk.data(), in.k + start * d.dim_k, n);
    store_rows(grad_q + start * d.dim_k, s.dq.data(), n, d.dim_k);
    store_rows(grad_k + start * d.dim_k, s.dk.data(), n, d.dim_k);
    store_rows(grad_v + start * d.dim_v, s.dv.data(), n, d.dim_v);
  }
}

}  // namespace

template <typename scalar_t, typename acc_t>
void backward_slice(const SliceDims& dims, const SliceInputs<scalar_t, acc_t>& in, const scalar_t* grad_out,
                    const scalar_t* out, const acc_t* den, scalar_t* grad_q, scalar_t* grad_k, scalar_t* grad_v) {
  const GradInputs<scalar_t, acc_t> g{grad_out, out, den};
  BackwardScratch<acc_t> s(dims);
  if (!dims.causal) {
    backward_bidirectional(dims, in, g, s, grad_q, grad_k, grad_v);
    return;
  }
  grad_q_sweep(dims, in, g, s, grad_q);
  grad_kv_sweep(dims, in, g, s, grad_k, grad_v);
}

#define LINBENCH_INSTANTIATE_BACKWARD(scalar_t, acc_t)                                                             \
  template void backward_slice<scalar_t, acc_t>(const SliceDims&, const SliceInputs<scalar_t, acc_t>&,           \
                                                const scalar_t*, const scalar_t*, const acc_t*, scalar_t*, scalar_t*, \
                                                scalar_t*);
LINBENCH_INSTANTIATE_BACKWARD(float, float)
LINBENCH_INSTANTIATE_BACKWARD(double, double)
LINBENCH_INSTANTIATE_BACKWARD(c10::Half, float)
LINBENCH_INSTANTIATE_BACKWARD(c10::BFloat16, float)
#undef LINBENCH_INSTANTIATE_BACKWARD

}  // namespace linbench::cpu
