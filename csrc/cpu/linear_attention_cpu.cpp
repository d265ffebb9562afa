// The CPU op: checks, contiguous inputs, then the slice kernels in parallel over B x H.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>

#include "cpu/slice_kernels.h"
#include "ops.h"

namespace linbench {
namespace {

cpu::SliceDims slice_dims(const at::Tensor& q, const at::Tensor& v, bool causal, bool normalize, double eps,
                          int64_t chunk, int64_t feature_map, double v_scale) {
  return {q.size(2), q.size(3), v.size(3), chunk, causal, normalize, eps, static_cast<cpu::FeatureMap>(feature_map),
          v_scale};
}

template <typename scalar_t, typename acc_t>
cpu::SliceInputs<scalar_t, acc_t> slice_inputs(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                               const at::Tensor& decay, int64_t bh) {
  const int64_t s = q.size(2), dk = q.size(3), dv = v.size(3);
  const acc_t* decay_ptr = decay.defined() ? decay.data_ptr<acc_t>() + bh * decay.size(2) * dv : nullptr;
  return {q.data_ptr<scalar_t>() + bh * s * dk, k.data_ptr<scalar_t>() + bh * s * dk,
          v.data_ptr<scalar_t>() + bh * s * dv, decay_ptr};
}

at::Tensor contiguous_decay(const std::optional<at::Tensor>& decay) {
  return decay.has_value() ? decay->contiguous() : at::Tensor();
}

int64_t batch_heads(const at::Tensor& q) { return q.size(0) * q.size(1); }

}  // namespace

std::tuple<at::Tensor, at::Tensor> forward_cpu_op(const at::Tensor& q_in, const at::Tensor& k_in,
                                                                const at::Tensor& v_in,
                                                                const std::optional<at::Tensor>& decay_in,
                                                                bool causal, bool normalize, double eps,
                                                                int64_t chunk, int64_t feature_map, double v_scale) {
  check_forward_args(q_in, k_in, v_in, decay_in, causal, normalize, eps, chunk, feature_map, v_scale);
  const at::Tensor q = q_in.contiguous(), k = k_in.contiguous(), v = v_in.contiguous();
  const at::Tensor decay = contiguous_decay(decay_in);
  at::Tensor out = at::empty(v.sizes(), v.options());
  at::Tensor den = at::empty(den_shape(q, normalize), q.options().dtype(accumulate_type(q.scalar_type())));
  const cpu::SliceDims dims = slice_dims(q, v, causal, normalize, eps, chunk, feature_map, v_scale);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, q.scalar_type(), "linear_attention_forward_cpu", [&] {
    using acc_t = at::opmath_type<scalar_t>;
    at::parallel_for(0, batch_heads(q), 1, [&](int64_t begin, int64_t end) {
      for (int64_t bh = begin; bh < end; ++bh) {
        acc_t* den_ptr = normalize ? den.data_ptr<acc_t>() + bh * dims.seq : nullptr;
        cpu::forward_slice<scalar_t, acc_t>(dims, slice_inputs<scalar_t, acc_t>(q, k, v, decay, bh),
                                            out.data_ptr<scalar_t>() + bh * dims.seq * dims.dim_v, den_ptr);
      }
    });
  });
  return {out, den};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> backward_cpu_op(
    const at::Tensor& grad_out_in, const at::Tensor& q_in, const at::Tensor& k_in, const at::Tensor& v_in,
    const std::optional<at::Tensor>& decay_in, const at::Tensor& out_in, const at::Tensor& den_in, bool causal,
    bool normalize, double eps, int64_t chunk, int64_t feature_map, double v_scale) {
  check_backward_args(grad_out_in, q_in, k_in, v_in, decay_in, out_in, den_in, causal, normalize, eps, chunk,
                      feature_map, v_scale);
  const at::Tensor q = q_in.contiguous(), k = k_in.contiguous(), v = v_in.contiguous();
  const at::Tensor grad_out = grad_out_in.contiguous(), out = out_in.contiguous(), den = den_in.contiguous();
  const at::Tensor decay = contiguous_decay(decay_in);
  at::Tensor grad_q = at::empty(q.sizes(), q.options());
  at::Tensor grad_k = at::empty(k.sizes(), k.options());
  at::Tensor grad_v = at::empty(v.sizes(), v.options());
  const cpu::SliceDims dims = slice_dims(q, v, causal, normalize, eps, chunk, feature_map, v_scale);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, q.scalar_type(), "linear_attention_backward_cpu", [&] {
    using acc_t = at::opmath_type<scalar_t>;
    at::parallel_for(0, batch_heads(q), 1, [&](int64_t begin, int64_t end) {
      for (int64_t bh = begin; bh < end; ++bh) {
        const int64_t qk_offset = bh * dims.seq * dims.dim_k, v_offset = bh * dims.seq * dims.dim_v;
        const acc_t* den_ptr = normalize ? den.data_ptr<acc_t>() + bh * dims.seq : nullptr;
        cpu::backward_slice<scalar_t, acc_t>(dims, slice_inputs<scalar_t, acc_t>(q, k, v, decay, bh),
                                             grad_out.data_ptr<scalar_t>() + v_offset,
                                             out.data_ptr<scalar_t>() + v_offset, den_ptr,
                                             grad_q.data_ptr<scalar_t>() + qk_offset,
                                             grad_k.data_ptr<scalar_t>() + qk_offset,
                                             grad_v.data_ptr<scalar_t>() + v_offset);
      }
    });
  });
  return {grad_q, grad_k, grad_v};
}

}  // namespace linbench
