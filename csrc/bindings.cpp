// The one place the op schemas are declared, and where each backend's kernel is registered.
// feature_map: 0 none, 1 row L2 normalisation, 2 elu + 1, applied to q and k by the op (and
// differentiated by it), so the variants that use them need no separate pass over q and k.
// v_scale: out = v_scale * (the attention of v), applied by the kernels in their epilogues (and
// to the incoming gradient in the backward); a plain number, so no device tensor is made per
// call. Unnormalised only (cosine's 1 / s^sigmoid(m); no normalised variant scales v).
// The autograd formula and the fake (meta) kernel live in Python (linbench/kernels/ops.py),
// registered with torch.library against these schemas.
#include <torch/library.h>

#include "ops.h"

TORCH_LIBRARY(linbench, m) {
  m.def(
      "linear_attention_forward(Tensor q, Tensor k, Tensor v, Tensor? decay, bool causal, bool normalize, "
      "float eps, int chunk, int feature_map=0, float v_scale=1.0) -> (Tensor, Tensor)");
  m.def(
      "linear_attention_backward(Tensor grad_out, Tensor q, Tensor k, Tensor v, Tensor? decay, Tensor out, "
      "Tensor den, bool causal, bool normalize, float eps, int chunk, int feature_map=0, float v_scale=1.0) -> "
      "(Tensor, Tensor, Tensor)");
  // TO BE REMOVED after one GPU measurement of the fast CUDA pass against them: the same two ops
  // on the generic CUDA pass alone (the CPU kernel on the CPU, as the ops above).
  m.def(
      "linear_attention_forward_v1(Tensor q, Tensor k, Tensor v, Tensor? decay, bool causal, bool normalize, "
      "float eps, int chunk, int feature_map=0, float v_scale=1.0) -> (Tensor, Tensor)");
  m.def(
      "linear_attention_backward_v1(Tensor grad_out, Tensor q, Tensor k, Tensor v, Tensor? decay, Tensor out, "
      "Tensor den, bool causal, bool normalize, float eps, int chunk, int feature_map=0, float v_scale=1.0) -> "
      "(Tensor, Tensor, Tensor)");
}

TORCH_LIBRARY_IMPL(linbench, CPU, m) {
  m.impl("linear_attention_forward", &linbench::forward_cpu_op);
  m.impl("linear_attention_backward", &linbench::backward_cpu_op);
  m.impl("linear_attention_forward_v1", &linbench::forward_cpu_op);
  m.impl("linear_attention_backward_v1", &linbench::backward_cpu_op);
}

#ifdef LINBENCH_WITH_CUDA
TORCH_LIBRARY_IMPL(linbench, CUDA, m) {
  m.impl("linear_attention_forward", &linbench::forward_cuda_op);
  m.impl("linear_attention_backward", &linbench::backward_cuda_op);
  m.impl("linear_attention_forward_v1", &linbench::forward_cuda_v1_op);
  m.impl("linear_attention_backward_v1", &linbench::backward_cuda_v1_op);
}
#endif
