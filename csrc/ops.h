// The linbench::linear_attention_* ops at the ATen level: argument checks shared by every
// backend, and the CPU and CUDA kernels that bindings.cpp registers.
#pragma once

#include <ATen/ATen.h>

#include <optional>
#include <tuple>

namespace linbench {

// Everything a kernel assumes of its arguments, checked once with messages that name them.
void check_forward_args(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                        const std::optional<at::Tensor>& decay, bool causal, bool normalize, double eps, int64_t chunk,
                        int64_t feature_map, double v_scale);
void check_backward_args(const at::Tensor& grad_out, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                         const std::optional<at::Tensor>& decay, const at::Tensor& out, const at::Tensor& den,
                         bool causal, bool normalize, double eps, int64_t chunk, int64_t feature_map, double v_scale);

// den's shape: (B, H, S) when normalised, else (0,) (nothing to carry to the backward).
std::vector<int64_t> den_shape(const at::Tensor& q, bool normalize);
// The dtype states and the normaliser are kept in: fp64 for fp64 inputs, fp32 otherwise.
at::ScalarType accumulate_type(at::ScalarType input);

std::tuple<at::Tensor, at::Tensor> forward_cpu_op(const at::Tensor& q, const at::Tensor& k,
                                                                const at::Tensor& v,
                                                                const std::optional<at::Tensor>& decay, bool causal,
                                                                bool normalize, double eps, int64_t chunk,
                                                                int64_t feature_map, double v_scale);
std::tuple<at::Tensor, at::Tensor, at::Tensor> backward_cpu_op(
    const at::Tensor& grad_out, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
    const std::optional<at::Tensor>& decay, const at::Tensor& out, const at::Tensor& den, bool causal, bool normalize,
    double eps, int64_t chunk, int64_t feature_map, double v_scale);

#ifdef LINBENCH_WITH_CUDA
std::tuple<at::Tensor, at::Tensor> forward_cuda_op(const at::Tensor& q, const at::Tensor& k,
                                                                 const at::Tensor& v,
                                                                 const std::optional<at::Tensor>& decay, bool causal,
                                                                 bool normalize, double eps, int64_t chunk,
                                                                 int64_t feature_map, double v_scale);
std::tuple<at::Tensor, at::Tensor, at::Tensor> backward_cuda_op(
    const at::Tensor& grad_out, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
    const std::optional<at::Tensor>& decay, const at::Tensor& out, const at::Tensor& den, bool causal, bool normalize,
    double eps, int64_t chunk, int64_t feature_map, double v_scale);
// TO BE REMOVED after one GPU measurement of the fast pass against them: the generic CUDA pass
// alone, for every shape (linear_attention_launch.h's _v1 launchers).
std::tuple<at::Tensor, at::Tensor> forward_cuda_v1_op(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                                      const std::optional<at::Tensor>& decay, bool causal,
                                                      bool normalize, double eps, int64_t chunk,
                                                      int64_t feature_map, double v_scale);
std::tuple<at::Tensor, at::Tensor, at::Tensor> backward_cuda_v1_op(
    const at::Tensor& grad_out, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
    const std::optional<at::Tensor>& decay, const at::Tensor& out, const at::Tensor& den, bool causal, bool normalize,
    double eps, int64_t chunk, int64_t feature_map, double v_scale);
#endif

}  // namespace linbench
