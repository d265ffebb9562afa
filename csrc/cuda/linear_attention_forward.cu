// Forward of the chunked linear attention: out (and den) from q, k, v. One generic chunked
// pass (chunked_pass.cuh) with Qx = phi(Q), Kx = phi(K), Vx = V (phi applied as the chunks
// load, v_scale in the epilogue); a block per (bh, tile of dim_v columns, segment of the
// sequence when it is split).
#include "chunked_pass.cuh"
#include "launch_plan.cuh"
#include "linear_attention_launch.h"

namespace linbench {
namespace cuda_detail {
namespace {

template <class T>
__global__ void __launch_bounds__(kThreads, kMinBlocksPerSm)
    linear_attention_forward_kernel(const __grid_constant__ KernelArgs args) {
  run_chunked_block<T>(args);
}

template <class T>
cudaError_t launch_forward(KernelArgs* args, const DeviceLimits& limits, int64_t bh, cudaStream_t stream) {
  return plan_and_launch(reinterpret_cast<const void*>(&linear_attention_forward_kernel<T>),
                         static_cast<int>(sizeof(T)), args, 1, bh, limits, stream);
}

}  // namespace
}  // namespace cuda_detail

cudaError_t linear_attention_forward_cuda(ElementType dtype, const void* q, const void* k, const void* v,
                                          const float* decay, void* out, float* den,
                                          const LinearAttentionShape& shape, cudaStream_t stream) {
  using namespace cuda_detail;
  cudaError_t err = check_shape(shape, decay);
  if (err != cudaSuccess) return err;
  if (q == nullptr || k == nullptr || v == nullptr || out == nullptr || (shape.normalize && den == nullptr))
    return cudaErrorInvalidValue;
  if (shape.bh == 0 || shape.seq == 0) return cudaSuccess;  // nothing to compute

  KernelArgs args{};
  PassParams& p = args.pass[0];
  set_common(shape, &p);
  const int dim_k = static_cast<int>(shape.dim_k);
  const int dim_v = static_cast<int>(shape.dim_v);
  const FeatureMap map = static_cast<FeatureMap>(shape.feature_map);
  p.qx = OperandSource{q, dim_k, map, 0};
  p.kx = OperandSource{k, dim_k, map, 1};
  p.vx = OperandSource{v, dim_v};
  p.out_scale = shape.v_scale;
  p.out = out;
  p.den_out = den;
  p.decay = decay;
  p.kd = dim_k;
  p.reverse = 0;
  p.normalize_output = shape.normalize ? 1 : 0;
  p.decay_on_state_rows = 0;
  p.q_aug = p.k_aug = AugValue::kNone;
  p.q_row_scale = p.k_row_weight = 0;
  p.split = shape.normalize ? 1 : 0;  // out = num / den cancels: split the 16-bit operands

  DeviceLimits limits{};
  err = query_device_limits(&limits);
  if (err != cudaSuccess) return err;
  switch (dtype) {
    case ElementType::f32:
      return launch_forward<float>(&args, limits, shape.bh, stream);
    case ElementType::f16:
      return launch_forward<__half>(&args, limits, shape.bh, stream);
    case ElementType::bf16:
      return launch_forward<__nv_bfloat16>(&args, limits, shape.bh, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace linbench
