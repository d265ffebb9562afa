// Backward of the chunked linear attention: grad_q, grad_k, grad_v. Each gradient is the generic
// chunked pass (chunked_pass.cuh) with other operands; the three run in the same launch(es),
// blockIdx.z picking the gradient (and the segment), so that they share the GPU:
//
//   dQ = causal pass    (Qx = dO', Kx = V', Vx = K)   dQ_c = tril(dO'_c V'_c^T) K_c + dO'_c S'_c^T
//   dK = reverse pass   (Qx = V', Kx = dO', Vx = Q)   dK_c = triu(V'_c dO'_c^T) Q_c + V'_c R'^T
//   dV = reverse pass   (Qx = K,  Kx = Q,   Vx = dN)  dV_c = triu(K_c Q_c^T) dN_c + K_c R'
//
// Unnormalised: dO' = dN = dO and V' = V. Normalised, with w_i = 1 / (den_i + eps):
// dN = diag(w) dO, dD_i = -w_i (dO_i . out_i), dO' = [dN, dD], V' = [V, 1]. The extra column of
// dO' and V' is the pass's rank-one term a_i b_j (fp32, never rounded to 16 bits) and diag(w)
// is applied in fp32 too: to the output rows of dQ (q_row_scale), to the score columns and the
// state update of dK and dV (k_row_weight). dV needs only the first dim_v columns of dV', which
// do not involve the extra column.
// The states (S'^T = sum V'^T K for dQ, R'^T = sum dO'^T Q for dK, R' = sum Q^T dO' for dV) are
// recomputed on the way, never stored per chunk (a split pass stores one partial per segment of
// at least 4 chunks). With decay, S'^T and R'^T decay along their rows (the dim_v index), R'
// along its columns, with the factor of the later of the two chunks.
// Bidirectional: the same three products with the whole sequence's state.
// Feature maps: Q and K are read raw and mapped as they load (every operand that is Q or K
// carries the map), so the passes give dL/dphi(Q) and dL/dphi(K); a last launch
// (feature_map_backward.cuh) turns those into dL/dQ and dL/dK in place. v_scale: the gradients
// are those of v_scale * dO, applied in each pass's epilogue (unnormalised only).
// The calls the fast pass takes (fast_plan.cuh: bf16 and fp16, Dk and Dv up to 128) run the three
// products on it (fast_pass.cuh), the normalised ones with w_i and -(dO_i . out_i) written first
// by a pre-pass (fast_grad_rows.cuh) and applied in fp32 as above; the rest on the generic pass.
#include "chunked_pass.cuh"
#include "fast_grad_rows.cuh"
#include "fast_plan.cuh"
#include "feature_map_backward.cuh"
#include "launch_plan.cuh"
#include "linear_attention_launch.h"

namespace linbench {
namespace cuda_detail {
namespace {

template <class T>
__global__ void __launch_bounds__(kThreads, kMinBlocksPerSm)
    linear_attention_backward_kernel(const __grid_constant__ KernelArgs args) {
  run_chunked_block<T>(args);
}

// The three gradients run side by side in each launch, each planned for a third of the SMs;
// then, with a feature map, its backward on grad_q and grad_k.
template <class T>
cudaError_t launch_backward(KernelArgs* args, const MapBackwardArgs& map_args, const DeviceLimits& limits, int64_t bh,
                            cudaStream_t stream) {
  const cudaError_t err = plan_and_launch(reinterpret_cast<const void*>(&linear_attention_backward_kernel<T>),
                                          static_cast<int>(sizeof(T)), args, kMaxPasses, bh, limits, stream);
  if (err != cudaSuccess || map_args.map == FeatureMap::kNone) return err;
  return launch_feature_map_backward<T>(map_args, limits.sm_count, stream);
}

}  // namespace
}  // namespace cuda_detail

namespace {

cudaError_t check_backward_call(const void* grad_out, const void* q, const void* k, const void* v, const float* decay,
                                const void* out, const float* den, void* grad_q, void* grad_k, void* grad_v,
                                const LinearAttentionShape& shape) {
  const cudaError_t err = cuda_detail::check_shape(shape, decay);
  if (err != cudaSuccess) return err;
  if (grad_out == nullptr || q == nullptr || k == nullptr || v == nullptr || grad_q == nullptr || grad_k == nullptr ||
      grad_v == nullptr || (shape.normalize && (out == nullptr || den == nullptr)))
    return cudaErrorInvalidValue;
  return cudaSuccess;
}

// One fast pass of the backward: Qx, Kx (both kd wide) against Vx, into `out` (without the
// normalised gradients' terms: set by the caller).
cuda_detail::FastPassParams fast_gradient_pass(cuda_detail::FastOperand qx, cuda_detail::FastOperand kx,
                                               cuda_detail::FastOperand vx, void* out, bool reverse,
                                               const LinearAttentionShape& shape) {
  cuda_detail::FastPassParams p{};  // no normalised terms: row_w nullptr, both augs kNone (0)
  p.qx = qx, p.kx = kx, p.vx = vx, p.out = out;
  p.kd = qx.cols;
  p.causal = shape.causal ? 1 : 0;
  p.reverse = reverse ? 1 : 0;
  p.normalize = 0;
  p.out_scale = shape.v_scale;
  p.eps = shape.eps;
  return p;
}

// The normalised gradients' terms on the three passes (the generic pass's, above): dQ's rows
// carry a_i = c_i and w_i, its keys b_j = 1; dK's rows a_i = 1, its keys b_j = c_j and w_j; dV's
// keys w_j.
void set_normalised_terms(const float* w, const float* c, cuda_detail::FastPassParams (&passes)[3]) {
  using cuda_detail::AugValue;
  for (cuda_detail::FastPassParams& p : passes) p.row_w = w, p.row_c = c;
  passes[0].q_aug = AugValue::kNegGradOutDotOut, passes[0].k_aug = AugValue::kOne, passes[0].q_row_scale = 1;
  passes[1].q_aug = AugValue::kOne, passes[1].k_aug = AugValue::kNegGradOutDotOut, passes[1].k_row_weight = 1;
  passes[2].k_row_weight = 1;
}

// The three passes in one launch pair when Dk and Dv fall in one contraction class, else two.
// *ran = false when a group did not run (no scratch): the caller reruns every gradient.
cudaError_t run_fast_gradients(ElementType dtype, const cuda_detail::FastPassParams (&passes)[3], bool normalised,
                               const LinearAttentionShape& shape, const cuda_detail::DeviceLimits& limits,
                               cudaStream_t stream, bool* ran) {
  using namespace cuda_detail;
  const int dk = static_cast<int>(shape.dim_k), dv = static_cast<int>(shape.dim_v);
  const bool together = fast_dk_class(dk) == fast_dk_class(dv);
  FastArgs groups[2]{};
  for (FastArgs& g : groups) fast_common(shape, &g);
  for (const FastPassParams& p : passes) {
    FastArgs& g = groups[together || p.kd == dv ? 0 : 1];
    g.pass[g.n_passes++] = p;
  }
  *ran = true;
  for (FastArgs& g : groups) {
    if (g.n_passes == 0) continue;
    bool group_ran = false;
    const cudaError_t err = run_fast(dtype, normalised, &g, limits, stream, &group_ran);
    if (err != cudaSuccess || !group_ran) {
      *ran = group_ran;
      return err;
    }
  }
  return cudaSuccess;
}

// The gradients on the fast pass: dQ = (dO, V, phi(K)) walking forward, dK = (V, dO, phi(Q))
// and dV = (phi(K), phi(Q), dO) walking back (the generic passes' operands, see above), after
// the normalised gradients' pre-pass; then the feature map's backward. *ran = false when the
// fast pass did not run (no scratch).
cudaError_t fast_backward(ElementType dtype, const void* grad_out, const void* q, const void* k, const void* v,
                          const void* out, const float* den, void* grad_q, void* grad_k, void* grad_v,
                          const LinearAttentionShape& shape, const cuda_detail::DeviceLimits& limits,
                          cudaStream_t stream, bool* ran) {
  using namespace cuda_detail;
  const int dk = static_cast<int>(shape.dim_k), dv = static_cast<int>(shape.dim_v);
  const FeatureMap map = static_cast<FeatureMap>(shape.feature_map);
  const FastOperand dO{grad_out, dv, FeatureMap::kNone}, V{v, dv, FeatureMap::kNone}, Q{q, dk, map}, K{k, dk, map};
  FastPassParams passes[3] = {fast_gradient_pass(dO, V, K, grad_q, false, shape),
                              fast_gradient_pass(V, dO, Q, grad_k, true, shape),
                              fast_gradient_pass(K, Q, dO, grad_v, true, shape)};
  float* rows = nullptr;  // the normalised pre-pass's w, then c
  const int n_chunks = static_cast<int>((shape.seq + kChunk - 1) / kChunk);
  const int64_t padded = shape.bh * n_chunks * int64_t{kChunk};
  *ran = false;
  cudaError_t err = cudaSuccess;
  if (shape.normalize) {
    if (cudaMallocAsync(reinterpret_cast<void**>(&rows), static_cast<size_t>(2 * padded) * sizeof(float), stream) !=
        cudaSuccess) {
      (void)cudaGetLastError();
      return cudaSuccess;  // not ran
    }
    const GradRowsArgs args{grad_out, out, den, rows, rows + padded, shape.bh, shape.seq, n_chunks, dv, shape.eps};
    set_normalised_terms(args.w, args.c, passes);
    err = dtype == ElementType::f16 ? launch_grad_rows<__half>(args, limits.sm_count, stream)
                                    : launch_grad_rows<__nv_bfloat16>(args, limits.sm_count, stream);
  }
  if (err == cudaSuccess) err = run_fast_gradients(dtype, passes, shape.normalize, shape, limits, stream, ran);
  if (rows != nullptr) {
    const cudaError_t freed = cudaFreeAsync(rows, stream);
    if (err == cudaSuccess) err = freed;
  }
  if (err != cudaSuccess || !*ran || map == FeatureMap::kNone) return err;
  const MapBackwardArgs map_args{{grad_q, grad_k}, {q, k}, shape.bh * shape.seq, dk, map};
  return dtype == ElementType::f16 ? launch_feature_map_backward<__half>(map_args, limits.sm_count, stream)
                                   : launch_feature_map_backward<__nv_bfloat16>(map_args, limits.sm_count, stream);
}

// The generic pass's backward (chunked_pass.cuh).
cudaError_t generic_backward(ElementType dtype, const void* grad_out, const void* q, const void* k, const void* v,
                             const float* decay, const void* out, const float* den, void* grad_q, void* grad_k,
                             void* grad_v, const LinearAttentionShape& shape, const cuda_detail::DeviceLimits& limits,
                             cudaStream_t stream) {
  using namespace cuda_detail;
  const int dim_k = static_cast<int>(shape.dim_k);
  const int dim_v = static_cast<int>(shape.dim_v);
  const int norm = shape.normalize ? 1 : 0;
  const AugValue one = norm ? AugValue::kOne : AugValue::kNone;
  const AugValue neg_dot = norm ? AugValue::kNegGradOutDotOut : AugValue::kNone;

  const FeatureMap map = static_cast<FeatureMap>(shape.feature_map);
  const OperandSource q_src{q, dim_k, map, 0}, k_src{k, dim_k, map, 1};
  KernelArgs args{};
  PassParams& dq = args.pass[0];
  PassParams& dk = args.pass[1];
  PassParams& dv = args.pass[2];
  // dQ: rows of dO' = w_i [dO_i, -(dO_i . out_i)] against V' = [V, 1]; w_i scales the output row.
  dq.qx = OperandSource{grad_out, dim_v}, dq.kx = OperandSource{v, dim_v}, dq.vx = k_src;
  dq.q_aug = neg_dot, dq.k_aug = one, dq.q_row_scale = norm, dq.k_row_weight = 0;
  dq.kd = dim_v, dq.reverse = 0, dq.decay_on_state_rows = 1, dq.out = grad_q;
  // dK: V' against dO' (walking back); w_j weighs the key side.
  dk.qx = OperandSource{v, dim_v}, dk.kx = OperandSource{grad_out, dim_v}, dk.vx = q_src;
  dk.q_aug = one, dk.k_aug = neg_dot, dk.q_row_scale = 0, dk.k_row_weight = norm;
  dk.kd = dim_v, dk.reverse = 1, dk.decay_on_state_rows = 1, dk.out = grad_k;
  // dV: K against Q (walking back), values dN = diag(w) dO: w_j weighs the key side.
  dv.qx = k_src, dv.kx = q_src, dv.vx = OperandSource{grad_out, dim_v};
  dv.q_aug = AugValue::kNone, dv.k_aug = AugValue::kNone, dv.q_row_scale = 0, dv.k_row_weight = norm;
  dv.kd = dim_k, dv.reverse = 1, dv.decay_on_state_rows = 0, dv.out = grad_v;

  for (PassParams* p : {&dq, &dk, &dv}) {
    set_common(shape, p);
    p->den_out = nullptr;
    p->decay = decay;
    p->grad_out = grad_out;
    p->fwd_out = out;
    p->den = den;
    p->normalize_output = 0;
    p->out_scale = shape.v_scale;
    p->split = norm;  // the normalised gradients cancel: split the 16-bit operands
  }
  const MapBackwardArgs map_args{{grad_q, grad_k}, {q, k}, shape.bh * shape.seq, dim_k, map};
  switch (dtype) {
    case ElementType::f32:
      return launch_backward<float>(&args, map_args, limits, shape.bh, stream);
    case ElementType::f16:
      return launch_backward<__half>(&args, map_args, limits, shape.bh, stream);
    case ElementType::bf16:
      return launch_backward<__nv_bfloat16>(&args, map_args, limits, shape.bh, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace

cudaError_t linear_attention_backward_cuda(ElementType dtype, const void* grad_out, const void* q, const void* k,
                                           const void* v, const float* decay, const void* out, const float* den,
                                           void* grad_q, void* grad_k, void* grad_v,
                                           const LinearAttentionShape& shape, cudaStream_t stream) {
  cudaError_t err = check_backward_call(grad_out, q, k, v, decay, out, den, grad_q, grad_k, grad_v, shape);
  if (err != cudaSuccess || shape.bh == 0 || shape.seq == 0) return err;  // an empty call computes nothing
  cuda_detail::DeviceLimits limits{};
  err = cuda_detail::query_device_limits(&limits);
  if (err != cudaSuccess) return err;
  if (cuda_detail::fast_path_refusal(dtype, shape, decay, {grad_out, q, k, v, out, grad_q, grad_k, grad_v}, limits) ==
      nullptr) {
    bool ran = false;
    err = fast_backward(dtype, grad_out, q, k, v, out, den, grad_q, grad_k, grad_v, shape, limits, stream, &ran);
    if (ran || err != cudaSuccess) return err;
  }
  return generic_backward(dtype, grad_out, q, k, v, decay, out, den, grad_q, grad_k, grad_v, shape, limits, stream);
}

// TO BE REMOVED after one GPU measurement of the fast pass against it: the generic pass for
// every shape, as the backward ran before the fast pass.
cudaError_t linear_attention_backward_cuda_v1(ElementType dtype, const void* grad_out, const void* q, const void* k,
                                              const void* v, const float* decay, const void* out, const float* den,
                                              void* grad_q, void* grad_k, void* grad_v,
                                              const LinearAttentionShape& shape, cudaStream_t stream) {
  cudaError_t err = check_backward_call(grad_out, q, k, v, decay, out, den, grad_q, grad_k, grad_v, shape);
  if (err != cudaSuccess || shape.bh == 0 || shape.seq == 0) return err;
  cuda_detail::DeviceLimits limits{};
  err = cuda_detail::query_device_limits(&limits);
  if (err != cudaSuccess) return err;
  return generic_backward(dtype, grad_out, q, k, v, decay, out, den, grad_q, grad_k, grad_v, shape, limits, stream);
}

}  // namespace linbench
