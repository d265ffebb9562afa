#include <ATen/ATen.h>

#include <cmath>

#include "ops.h"

namespace linbench {

at::ScalarType accumulate_type(at::ScalarType input) {
  return input == at::kDouble ? at::kDouble : at::kFloat;
}

std::vector<int64_t> den_shape(const at::Tensor& q, bool normalize) {
  if (!normalize) return {0};
  return {q.size(0), q.size(1), q.size(2)};
}

void check_forward_args(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                        const std::optional<at::Tensor>& decay, bool causal, bool normalize, double eps,
                        int64_t chunk, int64_t feature_map, double v_scale) {
  TORCH_CHECK(feature_map >= 0 && feature_map <= 2,
              "linear_attention: feature_map must be 0 (none), 1 (L2 rows) or 2 (elu + 1); got ", feature_map);
  TORCH_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4, "linear_attention: q, k, v must be 4-D (B, H, S, D); got ",
              q.sizes(), ", ", k.sizes(), ", ", v.sizes());
  TORCH_CHECK(q.sizes() == k.sizes(), "linear_attention: q and k must have one shape; got ", q.sizes(), " and ",
              k.sizes());
  TORCH_CHECK(v.size(0) == q.size(0) && v.size(1) == q.size(1) && v.size(2) == q.size(2),
              "linear_attention: v must agree with q in (B, H, S); got ", v.sizes(), " and ", q.sizes());
  TORCH_CHECK(q.numel() > 0 && v.numel() > 0, "linear_attention: empty inputs");
  TORCH_CHECK(q.scalar_type() == k.scalar_type() && q.scalar_type() == v.scalar_type(),
              "linear_attention: q, k, v must share one dtype");
  TORCH_CHECK(q.device() == k.device() && q.device() == v.device(), "linear_attention: q, k, v must share one device");
  TORCH_CHECK(chunk >= 1 && chunk <= 1024, "linear_attention: chunk must be in 1..1024; got ", chunk);
  TORCH_CHECK(!normalize || eps >= 0.0, "linear_attention: eps must be >= 0; got ", eps);
  TORCH_CHECK(std::isfinite(v_scale), "linear_attention: v_scale must be finite; got ", v_scale);
  TORCH_CHECK(!normalize || v_scale == 1.0, "linear_attention: v_scale needs normalize=False; got ", v_scale);
  if (!decay.has_value()) return;
  TORCH_CHECK(causal && !normalize, "linear_attention: decay needs causal=True and normalize=False");
  const int64_t n_chunks = (q.size(2) + chunk - 1) / chunk;
  TORCH_CHECK(decay->dim() == 4 && decay->size(0) == q.size(0) && decay->size(1) == q.size(1) &&
                  decay->size(2) == n_chunks && decay->size(3) == v.size(3),
              "linear_attention: decay must have shape (B, H, ceil(S / chunk), Dv) = (", q.size(0), ", ", q.size(1),
              ", ", n_chunks, ", ", v.size(3), "); got ", decay->sizes());
  TORCH_CHECK(decay->scalar_type() == accumulate_type(q.scalar_type()),
              "linear_attention: decay must be float32 (float64 for float64 inputs); got ", decay->scalar_type());
  TORCH_CHECK(decay->device() == q.device(), "linear_attention: decay must be on the inputs' device");
}

void check_backward_args(const at::Tensor& grad_out, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                         const std::optional<at::Tensor>& decay, const at::Tensor& out, const at::Tensor& den,
                         bool causal, bool normalize, double eps, int64_t chunk, int64_t feature_map,
                         double v_scale) {
  check_forward_args(q, k, v, decay, causal, normalize, eps, chunk, feature_map, v_scale);
  TORCH_CHECK(grad_out.sizes() == v.sizes() && out.sizes() == v.sizes(),
              "linear_attention_backward: grad_out and out must have v's shape ", v.sizes());
  TORCH_CHECK(grad_out.scalar_type() == v.scalar_type() && out.scalar_type() == v.scalar_type(),
              "linear_attention_backward: grad_out and out must have the inputs' dtype");
  TORCH_CHECK(den.sizes() == at::IntArrayRef(den_shape(q, normalize)),
              "linear_attention_backward: den has shape ", den.sizes(), ", expected ", den_shape(q, normalize));
  TORCH_CHECK(den.scalar_type() == accumulate_type(q.scalar_type()), "linear_attention_backward: den has dtype ",
              den.scalar_type());
}

}  // namespace linbench
