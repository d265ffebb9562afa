// Host side of the fast pass (fast_pass.cuh) as the launchers see it: which calls it takes, and
// the two entry points that plan and launch it (defined in fast_pass.cu, the one file that
// compiles its kernels).
#pragma once

#include <initializer_list>

#include "fast_pass_params.cuh"
#include "launch_plan.cuh"

namespace linbench {
namespace cuda_detail {

constexpr int kFastMaxDim = 128;

__host__ inline bool fast_aligned(const void* ptr) { return (reinterpret_cast<uintptr_t>(ptr) & 15u) == 0; }

// The virtual architecture the fast pass's kernels run as on this device (cudaFuncAttributes'
// ptxVersion, 10 major + minor; 0 if unknown), defined in fast_pass.cu: an extension built for
// compute_75 + PTX runs on an sm_90 GPU by JIT, with the primitives compiled to traps (warp_mma.cuh).
int fast_pass_ptx_version();

// Why the fast pass does not take a call (nullptr: it does); the generic pass takes it then.
// `pointers`: every q, k, v-shaped tensor the call reads or writes.
__host__ inline const char* fast_path_refusal(ElementType dtype, const LinearAttentionShape& s, const float* decay,
                                              std::initializer_list<const void*> pointers, const DeviceLimits& limits) {
  if (limits.major < 8) return "the fast pass needs sm_80 or newer (bf16 mma.sync, cp.async)";
  if (dtype == ElementType::f32) return "fp32 runs the generic pass (no 16-bit tensor-core operands)";
  if (decay != nullptr) return "decay runs the generic pass";
  if (s.dim_k % 8 != 0 || s.dim_v % 8 != 0) return "Dk and Dv must be multiples of 8 (16-byte rows)";
  if (s.dim_k > kFastMaxDim || s.dim_v > kFastMaxDim) return "Dk and Dv above 128 run the generic pass";
  for (const void* ptr : pointers)
    if (!fast_aligned(ptr)) return "a tensor is not 16-byte aligned";
  if (fast_pass_ptx_version() < 80)  // last: the only check that asks the runtime
    return "the fast pass's kernels were built for a virtual architecture before compute_80 (TORCH_CUDA_ARCH_LIST)";
  return nullptr;
}

__host__ inline int fast_dk_class(int kd) { return kd <= 64 ? 64 : 128; }

// Fills what every pass of a launch shares.
__host__ inline void fast_common(const LinearAttentionShape& shape, FastArgs* args) {
  args->bh = shape.bh;
  args->seq = shape.seq;
  args->n_chunks = static_cast<int>((shape.seq + kChunk - 1) / kChunk);
}

// Plans and runs the passes of `args` (bf16 or fp16, of one contraction class; all normalised,
// on the split instance: the normalised forward, or the normalised gradients' passes with their
// row factors written already, fast_grad_rows.cuh; or none): the state launch when a pass needs
// partials, then the output launch. *ran = false (and cudaSuccess) when the scratch for the
// partials could not be had: the caller runs the generic pass instead.
cudaError_t run_fast(ElementType dtype, bool normalised, FastArgs* args, const DeviceLimits& limits,
                     cudaStream_t stream, bool* ran);

}  // namespace cuda_detail
}  // namespace linbench
