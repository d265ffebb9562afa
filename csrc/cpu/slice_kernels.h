// The chunked algorithm on one (batch, head) slice: the loops that the CPU op runs in
// parallel over batch x heads. The maths is written out in linear_attention_launch.h.
#pragma once

#include <cstdint>

#include "cpu/feature_maps.h"

namespace linbench::cpu {

struct SliceDims {
  int64_t seq;
  int64_t dim_k;
  int64_t dim_v;
  int64_t chunk;
  bool causal;
  bool normalize;
  double eps;
  FeatureMap feature;  // applied to q and k as they are loaded
  double value_scale;  // out = value_scale * attention (unnormalised only); the backward scales dO
};

// Inputs of one slice: q, k (seq x dim_k), v (seq x dim_v); decay (n_chunks x dim_v) or null.
template <typename scalar_t, typename acc_t>
struct SliceInputs {
  const scalar_t* q;
  const scalar_t* k;
  const scalar_t* v;
  const acc_t* decay;
};

template <typename scalar_t, typename acc_t>
void forward_slice(const SliceDims& dims, const SliceInputs<scalar_t, acc_t>& in, scalar_t* out, acc_t* den);

// grad_out, out (seq x dim_v) and den (seq; read only when normalize) from the forward.
template <typename scalar_t, typename acc_t>
void backward_slice(const SliceDims& dims, const SliceInputs<scalar_t, acc_t>& in, const scalar_t* grad_out,
                    const scalar_t* out, const acc_t* den, scalar_t* grad_q, scalar_t* grad_k, scalar_t* grad_v);

}  // namespace linbench::cpu
