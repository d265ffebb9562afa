// The CUDA op: argument checks and allocation in ATen, then the plain launchers of
// cuda/*.cu on the current stream (the _v1 ops: the generic pass alone, to be removed after one
// GPU measurement of the fast pass against it). Compiled only where torch has CUDA and nvcc exists.
// q, k, v go to the kernels as they are (contiguous, in their own dtype): the kernels apply
// the feature map as they load them, v_scale in their epilogues, and the map's backward in a
// last launch, so no ATen op runs around them.
#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "linear_attention_launch.h"
#include "ops.h"

namespace linbench {
namespace {

ElementType element_type(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kFloat:
      return ElementType::f32;
    case at::kHalf:
      return ElementType::f16;
    case at::kBFloat16:
      return ElementType::bf16;
    default:
      TORCH_CHECK(false, "linear_attention on CUDA takes float32, float16 or bfloat16; got ", t.scalar_type());
  }
}

LinearAttentionShape launch_shape(const at::Tensor& q, const at::Tensor& v, bool causal, bool normalize, double eps,
                                  int64_t chunk, int64_t feature_map, double v_scale) {
  TORCH_CHECK(chunk == kCudaChunk, "linear_attention on CUDA runs chunks of ", kCudaChunk, " tokens; got ", chunk);
  TORCH_CHECK(q.size(3) <= kMaxDimK && v.size(3) <= kMaxDimV, "linear_attention on CUDA takes Dk <= ", kMaxDimK,
              " and Dv <= ", kMaxDimV, "; got Dk = ", q.size(3), ", Dv = ", v.size(3));
  LinearAttentionShape shape{q.size(0) * q.size(1), q.size(2), q.size(3), v.size(3), chunk, causal, normalize,
                             static_cast<float>(eps)};
  shape.feature_map = static_cast<int>(feature_map);
  shape.v_scale = static_cast<float>(v_scale);
  return shape;
}

const float* decay_pointer(const at::Tensor& decay) { return decay.defined() ? decay.data_ptr<float>() : nullptr; }

void check_launch(cudaError_t status, const char* what) {
  TORCH_CHECK(status == cudaSuccess, what, " failed: ", cudaGetErrorString(status));
}

// A launcher of linear_attention_launch.h: the fast-or-generic one, or the generic one alone (v1).
using ForwardLauncher = decltype(&linear_attention_forward_cuda);
using BackwardLauncher = decltype(&linear_attention_backward_cuda);

std::tuple<at::Tensor, at::Tensor> run_forward(ForwardLauncher launch, const at::Tensor& q_in,
                                               const at::Tensor& k_in, const at::Tensor& v_in,
                                               const std::optional<at::Tensor>& decay_in, bool causal,
                                               bool normalize, double eps, int64_t chunk, int64_t feature_map,
                                               double v_scale) {
  check_forward_args(q_in, k_in, v_in, decay_in, causal, normalize, eps, chunk, feature_map, v_scale);
  const c10::cuda::CUDAGuard guard(q_in.device());
  const at::Tensor q = q_in.contiguous(), k = k_in.contiguous(), v = v_in.contiguous();
  const at::Tensor decay = decay_in.has_value() ? decay_in->contiguous() : at::Tensor();
  const LinearAttentionShape shape = launch_shape(q, v, causal, normalize, eps, chunk, feature_map, v_scale);
  at::Tensor out = at::empty(v.sizes(), v.options());
  at::Tensor den = at::empty(den_shape(q, normalize), q.options().dtype(at::kFloat));
  check_launch(launch(element_type(q), q.data_ptr(), k.data_ptr(), v.data_ptr(), decay_pointer(decay), out.data_ptr(),
                      normalize ? den.data_ptr<float>() : nullptr, shape, c10::cuda::getCurrentCUDAStream()),
               "linear_attention_forward_cuda");
  return {out, den};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> run_backward(
    BackwardLauncher launch, const at::Tensor& grad_out_in, const at::Tensor& q_in, const at::Tensor& k_in,
    const at::Tensor& v_in, const std::optional<at::Tensor>& decay_in, const at::Tensor& out_in,
    const at::Tensor& den_in, bool causal, bool normalize, double eps, int64_t chunk, int64_t feature_map,
    double v_scale) {
  check_backward_args(grad_out_in, q_in, k_in, v_in, decay_in, out_in, den_in, causal, normalize, eps, chunk,
                      feature_map, v_scale);
  const c10::cuda::CUDAGuard guard(q_in.device());
  const at::Tensor q = q_in.contiguous(), k = k_in.contiguous(), v = v_in.contiguous();
  const at::Tensor grad_out = grad_out_in.contiguous(), out = out_in.contiguous(), den = den_in.contiguous();
  const at::Tensor decay = decay_in.has_value() ? decay_in->contiguous() : at::Tensor();
  const LinearAttentionShape shape = launch_shape(q, v, causal, normalize, eps, chunk, feature_map, v_scale);
  at::Tensor grad_q = at::empty(q.sizes(), q.options());
  at::Tensor grad_k = at::empty(k.sizes(), k.options());
  at::Tensor grad_v = at::empty(v.sizes(), v.options());
  check_launch(launch(element_type(q), grad_out.data_ptr(), q.data_ptr(), k.data_ptr(), v.data_ptr(),
                      decay_pointer(decay), out.data_ptr(), normalize ? den.data_ptr<float>() : nullptr,
                      grad_q.data_ptr(), grad_k.data_ptr(), grad_v.data_ptr(), shape,
                      c10::cuda::getCurrentCUDAStream()),
               "linear_attention_backward_cuda");
  return {grad_q, grad_k, grad_v};
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> forward_cuda_op(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                                   const std::optional<at::Tensor>& decay, bool causal,
                                                   bool normalize, double eps, int64_t chunk, int64_t feature_map,
                                                   double v_scale) {
  return run_forward(&linear_attention_forward_cuda, q, k, v, decay, causal, normalize, eps, chunk, feature_map,
                     v_scale);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> backward_cuda_op(
    const at::Tensor& grad_out, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
    const std::optional<at::Tensor>& decay, const at::Tensor& out, const at::Tensor& den, bool causal, bool normalize,
    double eps, int64_t chunk, int64_t feature_map, double v_scale) {
  return run_backward(&linear_attention_backward_cuda, grad_out, q, k, v, decay, out, den, causal, normalize, eps,
                      chunk, feature_map, v_scale);
}

std::tuple<at::Tensor, at::Tensor> forward_cuda_v1_op(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                                      const std::optional<at::Tensor>& decay, bool causal,
                                                      bool normalize, double eps, int64_t chunk,
                                                      int64_t feature_map, double v_scale) {
  return run_forward(&linear_attention_forward_cuda_v1, q, k, v, decay, causal, normalize, eps, chunk, feature_map,
                     v_scale);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> backward_cuda_v1_op(
    const at::Tensor& grad_out, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
    const std::optional<at::Tensor>& decay, const at::Tensor& out, const at::Tensor& den, bool causal, bool normalize,
    double eps, int64_t chunk, int64_t feature_map, double v_scale) {
  return run_backward(&linear_attention_backward_cuda_v1, grad_out, q, k, v, decay, out, den, causal, normalize, eps,
                      chunk, feature_map, v_scale);
}

}  // namespace linbench
