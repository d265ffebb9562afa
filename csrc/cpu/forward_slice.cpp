// Forward pass of one (batch, head) slice, chunk by chunk.
//
// Causal: out_c = tril(Q_c K_c^T) V_c + Q_c S_c, then S_{c+1} = S_c + K_c^T V_c, with the
// Dk x Dv state S in fp32 (fp64 for fp64 inputs). The normaliser is not a (Dv + 1)-th
// column of V: it would make every product one column wider than a register tile, so its
// two terms, the row sums of the masked scores and q . z, are added on the side.
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

// Scratch for one chunk, reused across chunks.
template <typename acc_t>
struct ForwardScratch {
  std::vector<acc_t> q, k_t, v, scores, out, state, key_sum;

  ForwardScratch(const SliceDims& d)
      : q(d.chunk * d.dim_k),
        k_t(d.dim_k * d.chunk),
        v(d.chunk * d.dim_v),
        scores(d.chunk * d.chunk),
        out(d.chunk * d.dim_v),
        state(d.dim_k * d.dim_v, acc_t(0)),
        key_sum(d.dim_k, acc_t(0)) {}
};

// out rows of one chunk: divide by the normaliser when there is one, convert, store.
template <typename scalar_t, typename acc_t>
void store_output(const SliceDims& d, ForwardScratch<acc_t>& s, int64_t n, bool with_scores, scalar_t* out,
                  acc_t* den) {
  if (!d.normalize) {
    if (d.value_scale != 1.0) {
      const acc_t scale = static_cast<acc_t>(d.value_scale);
      for (int64_t i = 0; i < n * d.dim_v; ++i) s.out[i] *= scale;
    }
    store_rows(out, s.out.data(), n, d.dim_v);
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    acc_t row_den = dot(s.q.data() + i * d.dim_k, s.key_sum.data(), d.dim_k);
    if (with_scores)
      for (int64_t j = 0; j <= i; ++j) row_den += s.scores[i * d.chunk + j];
    den[i] = row_den;
    const acc_t inv = acc_t(1) / (row_den + static_cast<acc_t>(d.eps));
    for (int64_t e = 0; e < d.dim_v; ++e) out[i * d.dim_v + e] = static_cast<scalar_t>(s.out[i * d.dim_v + e] * inv);
  }
}

// S += K_c^T V_c and z += the chunk's key sums.
template <typename acc_t>
void absorb_chunk(const SliceDims& d, ForwardScratch<acc_t>& s, int64_t n) {
  product<Part::full>(d.dim_k, d.dim_v, n, s.k_t.data(), d.chunk, s.v.data(), d.dim_v, s.state.data(), d.dim_v, true);
  if (d.normalize)
    for (int64_t f = 0; f < d.dim_k; ++f)
      for (int64_t j = 0; j < n; ++j) s.key_sum[f] += s.k_t[f * d.chunk + j];
}

template <typename scalar_t, typename acc_t>
void load_chunk(const SliceDims& d, const SliceInputs<scalar_t, acc_t>& in, ForwardScratch<acc_t>& s, int64_t start,
                int64_t n, bool with_q) {
  if (with_q) load_feature_rows(s.q.data(), in.q + start * d.dim_k, n, d.dim_k, d.feature);
  load_feature_transposed(s.k_t.data(), in.k + start * d.dim_k, n, d.dim_k, d.chunk, d.feature);
  load_rows(s.v.data(), in.v + start * d.dim_v, n, d.dim_v);
}

template <typename scalar_t, typename acc_t>
void forward_causal(const SliceDims& d, const SliceInputs<scalar_t, acc_t>& in, scalar_t* out, acc_t* den) {
  ForwardScratch<acc_t> s(d);
  const int64_t C = d.chunk;
  for (int64_t start = 0, c = 0; start < d.seq; start += C, ++c) {
    const int64_t n = std::min(C, d.seq - start);
    load_chunk(d, in, s, start, n, true);
    if (in.decay != nullptr && c > 0) scale_columns(s.state.data(), d.dim_k, d.dim_v, in.decay + c * d.dim_v);
    product<Part::lower_out>(n, n, d.dim_k, s.q.data(), d.dim_k, s.k_t.data(), C, s.scores.data(), C, false);
    keep_lower(s.scores.data(), n, C);
    product<Part::lower_a>(n, d.dim_v, n, s.scores.data(), C, s.v.data(), d.dim_v, s.out.data(), d.dim_v, false);
    product<Part::full>(n, d.dim_v, d.dim_k, s.q.data(), d.dim_k, s.state.data(), d.dim_v, s.out.data(), d.dim_v,
                        true);
    store_output(d, s, n, true, out + start * d.dim_v, d.normalize ? den + start : nullptr);
    absorb_chunk(d, s, n);
  }
}

// Every row reads the whole sequence's state: one pass to build it, one to read it.
template <typename scalar_t, typename acc_t>
void forward_bidirectional(const SliceDims& d, const SliceInputs<scalar_t, acc_t>& in, scalar_t* out, acc_t* den) {
  ForwardScratch<acc_t> s(d);
  for (int64_t start = 0; start < d.seq; start += d.chunk) {
    const int64_t n = std::min(d.chunk, d.seq - start);
    load_chunk(d, in, s, start, n, false);
    absorb_chunk(d, s, n);
  }
  for (int64_t start = 0; start < d.seq; start += d.chunk) {
    const int64_t n = std::min(d.chunk, d.seq - start);
    load_feature_rows(s.q.data(), in.q + start * d.dim_k, n, d.dim_k, d.feature);
    product<Part::full>(n, d.dim_v, d.dim_k, s.q.data(), d.dim_k, s.state.data(), d.dim_v, s.out.data(), d.dim_v,
                        false);
    store_output(d, s, n, false, out + start * d.dim_v, d.normalize ? den + start : nullptr);
  }
}

}  // namespace

template <typename scalar_t, typename acc_t>
void forward_slice(const SliceDims& dims, const SliceInputs<scalar_t, acc_t>& in, scalar_t* out, acc_t* den) {
  if (dims.causal)
    forward_causal(dims, in, out, den);
  else
    forward_bidirectional(dims, in, out, den);
}

template void forward_slice<float, float>(const SliceDims&, const SliceInputs<float, float>&, float*, float*);
template void forward_slice<double, double>(const SliceDims&, const SliceInputs<double, double>&, double*, double*);
template void forward_slice<c10::Half, float>(const SliceDims&, const SliceInputs<c10::Half, float>&, c10::Half*,
                                              float*);
template void forward_slice<c10::BFloat16, float>(const SliceDims&, const SliceInputs<c10::BFloat16, float>&,
                                                  c10::BFloat16*, float*);

}  // namespace linbench::cpu
