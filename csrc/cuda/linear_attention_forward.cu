// Forward of the chunked linear attention: out (and den) from q, k, v, as one chunked pass with
// Qx = phi(Q), Kx = phi(K), Vx = V (phi applied as the chunks load, v_scale in the epilogue).
// bf16 and fp16 with Dk, Dv multiples of 8 up to 128 and no decay run the fast
// pass (fast_pass.cuh: mma.sync fragments, cp.async, 4 warps a block); everything else the
// generic pass (chunked_pass.cuh), a block per (bh, tile of dim_v columns, segment of the sequence).
#include "chunked_pass.cuh"
#include "fast_plan.cuh"
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

namespace {

cudaError_t check_forward_call(const void* q, const void* k, const void* v, const float* decay, void* out, float* den,
                               const LinearAttentionShape& shape) {
  const cudaError_t err = cuda_detail::check_shape(shape, decay);
  if (err != cudaSuccess) return err;
  if (q == nullptr || k == nullptr || v == nullptr || out == nullptr || (shape.normalize && den == nullptr))
    return cudaErrorInvalidValue;
  return cudaSuccess;
}

// The fast pass's forward: *ran = false when it did not run (the generic pass must).
cudaError_t fast_forward(ElementType dtype, const void* q, const void* k, const void* v, void* out, float* den,
                         const LinearAttentionShape& shape, const cuda_detail::DeviceLimits& limits,
                         cudaStream_t stream, bool* ran) {
  using namespace cuda_detail;
  FastArgs args{};
  fast_common(shape, &args);
  args.n_passes = 1;
  FastPassParams& p = args.pass[0];
  const FeatureMap map = static_cast<FeatureMap>(shape.feature_map);
  p.qx = FastOperand{q, static_cast<int>(shape.dim_k), map};
  p.kx = FastOperand{k, static_cast<int>(shape.dim_k), map};
  p.vx = FastOperand{v, static_cast<int>(shape.dim_v), FeatureMap::kNone};
  p.out = out;
  p.den_out = den;
  p.kd = static_cast<int>(shape.dim_k);
  p.causal = shape.causal ? 1 : 0;
  p.reverse = 0;
  p.normalize = shape.normalize ? 1 : 0;
  p.out_scale = shape.v_scale;
  p.eps = shape.eps;
  return run_fast(dtype, p.normalize != 0, &args, limits, stream, ran);
}

// The generic pass's forward (chunked_pass.cuh).
cudaError_t generic_forward(ElementType dtype, const void* q, const void* k, const void* v, const float* decay,
                            void* out, float* den, const LinearAttentionShape& shape,
                            const cuda_detail::DeviceLimits& limits, cudaStream_t stream) {
  using namespace cuda_detail;
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

}  // namespace

cudaError_t linear_attention_forward_cuda(ElementType dtype, const void* q, const void* k, const void* v,
                                          const float* decay, void* out, float* den,
                                          const LinearAttentionShape& shape, cudaStream_t stream) {
  cudaError_t err = check_forward_call(q, k, v, decay, out, den, shape);
  if (err != cudaSuccess || shape.bh == 0 || shape.seq == 0) return err;  // an empty call computes nothing
  cuda_detail::DeviceLimits limits{};
  err = cuda_detail::query_device_limits(&limits);
  if (err != cudaSuccess) return err;
  if (cuda_detail::fast_path_refusal(dtype, shape, decay, {q, k, v, out}, limits) == nullptr) {
    bool ran = false;
    err = fast_forward(dtype, q, k, v, out, den, shape, limits, stream, &ran);
    if (ran || err != cudaSuccess) return err;
  }
  return generic_forward(dtype, q, k, v, decay, out, den, shape, limits, stream);
}

// TO BE REMOVED after one GPU measurement of the fast pass against it: the generic pass for
// every shape, as the forward ran before the fast pass.
cudaError_t linear_attention_forward_cuda_v1(ElementType dtype, const void* q, const void* k, const void* v,
                                             const float* decay, void* out, float* den,
                                             const LinearAttentionShape& shape, cudaStream_t stream) {
  cudaError_t err = check_forward_call(q, k, v, decay, out, den, shape);
  if (err != cudaSuccess || shape.bh == 0 || shape.seq == 0) return err;
  cuda_detail::DeviceLimits limits{};
  err = cuda_detail::query_device_limits(&limits);
  if (err != cudaSuccess) return err;
  return generic_forward(dtype, q, k, v, decay, out, den, shape, limits, stream);
}

}  // namespace linbench
