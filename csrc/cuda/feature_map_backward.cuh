// The last step of the backward when q and k went through a feature map: the chunked passes
// produce dL/dphi(q) and dL/dphi(k) (in the element type, in grad_q and grad_k); this turns them
// into dL/dq and dL/dk in place, reading the raw q and k once more:
//   L2:      phi = x / n, n = max(|x|, 1e-12): dx = (g - phi (phi . g)) / n (g / 1e-12 when |x| <= 1e-12)
//   elu + 1: dx = g where x > 0, g exp(x) elsewhere
// in fp32, one warp per row, as the CPU kernel's feature_backward (cpu/feature_maps.h) does.
// One launch for both tensors; the rows are walked grid-stride.
#pragma once

#include "launch_plan.cuh"
#include "pass_params.cuh"
#include "tile_math.cuh"

namespace linbench {
namespace cuda_detail {

struct MapBackwardArgs {
  void* grad[2];       // grad_q, grad_k: (rows, cols), element type; dL/dphi in, dL/dx out
  const void* raw[2];  // q, k: the inputs the forward mapped
  int64_t rows;        // bh x seq, per tensor
  int cols;            // dim_k
  FeatureMap map;
};

template <class T>
__device__ void map_backward_row(T* g, const T* x, int cols, FeatureMap map) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  if (map == FeatureMap::kElu1) {
    for (int e = lane; e < cols; e += 32) {
      const float xe = to_float(x[e]);
      if (xe <= 0.0f) g[e] = from_float<T>(to_float(g[e]) * expf(xe));
    }
    return;
  }
  float xx = 0.0f, xg = 0.0f;
  for (int e = lane; e < cols; e += 32) {
    const float xe = to_float(x[e]);
    xx += xe * xe;
    xg += xe * to_float(g[e]);
  }
  xx = warp_sum(xx);
  xg = warp_sum(xg);
  const float norm = sqrtf(xx);
  const bool tiny = norm <= kNormEps;
  const float inv = tiny ? 1.0f / kNormEps : 1.0f / norm;
  const float along = xg * inv;  // phi . g
  for (int e = lane; e < cols; e += 32) {
    const float ge = to_float(g[e]);
    g[e] = from_float<T>(tiny ? ge * inv : (ge - to_float(x[e]) * inv * along) * inv);
  }
}

template <class T>
__global__ void __launch_bounds__(kThreads) feature_map_backward_kernel(const __grid_constant__ MapBackwardArgs args) {
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kWarps;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kWarps + static_cast<int>(threadIdx.x) / 32;
  for (int64_t row = first; row < 2 * args.rows; row += warps) {  // uniform over the warp
    const int which = row < args.rows ? 0 : 1;
    const int64_t at = (row - which * args.rows) * args.cols;
    map_backward_row(static_cast<T*>(args.grad[which]) + at, static_cast<const T*>(args.raw[which]) + at, args.cols,
                     args.map);
  }
}

// A warp a row, both tensors' rows in one grid.
template <class T>
cudaError_t launch_feature_map_backward(const MapBackwardArgs& args, int sm_count, cudaStream_t stream) {
  MapBackwardArgs copy = args;
  return launch_grid_stride(reinterpret_cast<const void*>(&feature_map_backward_kernel<T>),
                            (2 * args.rows + kWarps - 1) / kWarps, sm_count, &copy, stream);
}

}  // namespace cuda_detail
}  // namespace linbench
