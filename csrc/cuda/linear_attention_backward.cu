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
#include "chunked_pass.cuh"
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

cudaError_t linear_attention_backward_cuda(ElementType dtype, const void* grad_out, const void* q, const void* k,
                                           const void* v, const float* decay, const void* out, const float* den,
                                           void* grad_q, void* grad_k, void* grad_v,
                                           const LinearAttentionShape& shape, cudaStream_t stream) {
  using namespace cuda_detail;
  cudaError_t err = check_shape(shape, decay);
  if (err != cudaSuccess) return err;
  if (grad_out == nullptr || q == nullptr || k == nullptr || v == nullptr || grad_q == nullptr || grad_k == nullptr ||
      grad_v == nullptr || (shape.normalize && (out == nullptr || den == nullptr)))
    return cudaErrorInvalidValue;
  if (shape.bh == 0 || shape.seq == 0) return cudaSuccess;  // nothing to compute

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

  DeviceLimits limits{};
  err = query_device_limits(&limits);
  if (err != cudaSuccess) return err;
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

}  // namespace linbench
