// Plain launchers of the CUDA kernels: only CUDA runtime types, no torch, so the .cu files
// that define them compile with `nvcc -c` on a machine without a GPU or libtorch.
//
// The op (same maths as the CPU kernel in cpu/linear_attention_cpu.cpp):
//   num_i = sum_{j in M(i)} (q_i . k_j) v_j        M(i) = {j <= i} causal, all j otherwise
//   den_i = sum_{j in M(i)}  q_i . k_j             (only when normalize)
//   out_i = num_i / (den_i + eps) if normalize else num_i
// Chunkwise: a C x C masked product inside a chunk of `chunk` tokens and a dim_k x dim_v
// state, always fp32, carried across chunks. With `decay` (causal, unnormalised only), the
// state's column e is multiplied by decay[bh, c, e] just before chunk c (c >= 1) reads it.
//
// Feature maps (feature_map): the kernels apply phi to q and k as they load them, in fp32 before
// rounding to the element type (0: none, 1: rows divided by max(|row|, 1e-12), 2: elu + 1), and
// the backward returns the gradients for q and k themselves (dphi applied in a last launch).
// v_scale multiplies the output (unnormalised only); the backward's gradients are those of
// v_scale * dO. q, k, v are read in their own element type: nothing is converted beforehand.
//
// Layout: q, k (bh, seq, dim_k), v, out, grad_out, grad_v (bh, seq, dim_v), contiguous,
// element type `dtype`; den (bh, seq) fp32; decay (bh, n_chunks, dim_v) fp32 or nullptr,
// n_chunks = ceil(seq / chunk). Every launcher returns the first CUDA error it met.
//
// Two kernels run these: the fast pass (cuda/fast_pass.cuh: bf16 and fp16, Dk and Dv
// multiples of 8 up to 128, no decay, sm_80 or newer) and the generic pass (cuda/chunked_pass.cuh)
// for everything else. cuda/README.md says which shapes take which.
#pragma once

#include <cstdint>
#include <cuda_runtime_api.h>

namespace linbench {

enum class ElementType : int { f32 = 0, f16 = 1, bf16 = 2 };

struct LinearAttentionShape {
  int64_t bh;      // batch x heads
  int64_t seq;     // any length >= 1, not only multiples of `chunk`
  int64_t dim_k;   // 1 .. kMaxDimK
  int64_t dim_v;   // 1 .. kMaxDimV
  int64_t chunk;   // tokens per chunk; the CUDA kernels take kCudaChunk only
  bool causal;
  bool normalize;
  float eps;
  int feature_map = 0;  // 0 none, 1 L2 rows, 2 elu + 1 (of q and k)
  float v_scale = 1.0f; // out = v_scale * attention; unnormalised only
};

constexpr int64_t kMaxDimK = 512;  // cosformer's features are 2 x head dim wide
constexpr int64_t kMaxDimV = 256;
constexpr int64_t kCudaChunk = 64;

// out and (when normalize) den from q, k, v.
cudaError_t linear_attention_forward_cuda(ElementType dtype, const void* q, const void* k, const void* v,
                                          const float* decay, void* out, float* den,
                                          const LinearAttentionShape& shape, cudaStream_t stream);

// grad_q, grad_k, grad_v from grad_out and the forward's inputs (raw q and k: the launcher maps
// them as the forward does), out and den. The states are recomputed, never stored per chunk.
cudaError_t linear_attention_backward_cuda(ElementType dtype, const void* grad_out, const void* q, const void* k,
                                           const void* v, const float* decay, const void* out, const float* den,
                                           void* grad_q, void* grad_k, void* grad_v,
                                           const LinearAttentionShape& shape, cudaStream_t stream);

// TO BE REMOVED after one GPU measurement of the fast pass against them: the same two calls on
// the generic pass alone (chunked_pass.cuh), as they ran before the fast pass existed.
cudaError_t linear_attention_forward_cuda_v1(ElementType dtype, const void* q, const void* k, const void* v,
                                             const float* decay, void* out, float* den,
                                             const LinearAttentionShape& shape, cudaStream_t stream);
cudaError_t linear_attention_backward_cuda_v1(ElementType dtype, const void* grad_out, const void* q, const void* k,
                                              const void* v, const float* decay, const void* out, const float* den,
                                              void* grad_q, void* grad_k, void* grad_v,
                                              const LinearAttentionShape& shape, cudaStream_t stream);

}  // namespace linbench
