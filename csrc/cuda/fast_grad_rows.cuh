// The normalised backward's pre-pass on the fast path: two fp32 numbers a row that the three
// gradient passes read a chunk at a time (fast_loads.cuh), so that no pass reads `out` or den:
//   w_i = 1 / (den_i + eps),   c_i = -(dO_i . out_i)   (w_i c_i is dD_i; fp32, from the stored out)
// written at [bh][n_chunks * 64], rows past the sequence 0, so that each chunk's 64 are whole
// 16-byte pieces for cp.async and the padding weighs nothing. One thread a row, grid-stride.
#pragma once

#include "launch_plan.cuh"
#include "pass_params.cuh"
#include "tile_math.cuh"

namespace linbench {
namespace cuda_detail {

struct GradRowsArgs {
  const void* grad_out;  // (bh, seq, dim_v), element type
  const void* out;       // the forward's output, same shape
  const float* den;      // (bh, seq)
  float* w;              // [bh][n_chunks * 64]
  float* c;
  int64_t bh, seq;
  int n_chunks, dim_v;
  float eps;
};

template <class T>
__global__ void __launch_bounds__(kThreads) grad_rows_kernel(const __grid_constant__ GradRowsArgs a) {
  const int64_t padded = static_cast<int64_t>(a.n_chunks) * kChunk;
  const int64_t rows = a.bh * padded;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; r < rows; r += stride) {
    const int64_t pos = r % padded;
    float w = 0.0f, c = 0.0f;
    if (pos < a.seq) {
      const int64_t row = (r / padded) * a.seq + pos;
      const T* g = static_cast<const T*>(a.grad_out) + row * a.dim_v;
      const T* o = static_cast<const T*>(a.out) + row * a.dim_v;
      float dot = 0.0f;
      for (int e = 0; e < a.dim_v; ++e) dot += to_float(g[e]) * to_float(o[e]);
      w = 1.0f / (a.den[row] + a.eps);
      c = -dot;
    }
    a.w[r] = w;
    a.c[r] = c;
  }
}

// A thread a (padded) row.
template <class T>
cudaError_t launch_grad_rows(const GradRowsArgs& args, int sm_count, cudaStream_t stream) {
  const int64_t rows = args.bh * args.n_chunks * int64_t{kChunk};
  GradRowsArgs copy = args;
  return launch_grid_stride(reinterpret_cast<const void*>(&grad_rows_kernel<T>), (rows + kThreads - 1) / kThreads,
                            sm_count, &copy, stream);
}

}  // namespace cuda_detail
}  // namespace linbench
