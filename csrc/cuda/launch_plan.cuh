// Host side of the chunked kernels: argument checks, the device's limits, the choice of tile
// width, slab width and sequence split (plan_pass), and the launches (plan_and_launch), with
// the stream-ordered scratch of split passes.
#pragma once

#include "linear_attention_launch.h"
#include "pass_params.cuh"

namespace linbench {
namespace cuda_detail {

// A grid-stride kernel of kThreads-thread blocks taking one argument struct: `wanted` blocks, at
// most 8 an SM (a few waves; the stride loop takes the rest).
inline cudaError_t launch_grid_stride(const void* kernel, int64_t wanted, int sm_count, void* args,
                                      cudaStream_t stream) {
  const int64_t cap = static_cast<int64_t>(sm_count) * 8;
  const dim3 grid(static_cast<unsigned>(wanted < cap ? wanted : cap));
  void* params[] = {args};
  const cudaError_t err = cudaLaunchKernel(kernel, grid, dim3(kThreads), params, 0, stream);
  const cudaError_t last = cudaGetLastError();
  return err != cudaSuccess ? err : last;
}

inline cudaError_t check_shape(const LinearAttentionShape& shape, const float* decay) {
  if (shape.bh < 0 || shape.seq < 0 || shape.bh > 0x7fffffff) return cudaErrorInvalidValue;
  if (shape.dim_k < 1 || shape.dim_k > kMaxDimK || shape.dim_v < 1 || shape.dim_v > kMaxDimV)
    return cudaErrorInvalidValue;
  if (shape.chunk != kCudaChunk) return cudaErrorInvalidValue;
  if (decay != nullptr && (shape.normalize || !shape.causal)) return cudaErrorInvalidValue;
  if (shape.feature_map < 0 || shape.feature_map > 2) return cudaErrorInvalidValue;
  if (shape.normalize && shape.v_scale != 1.0f) return cudaErrorInvalidValue;
  return cudaSuccess;
}

struct DeviceLimits {
  int sm_count;
  int smem_per_block;  // opt-in maximum of dynamic shared memory per block
  int smem_per_sm;
  int major = 0;       // compute capability (the fast pass needs 8: mma.sync bf16, cp.async)
};

inline cudaError_t query_device_limits(DeviceLimits* limits) {
  int device = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err == cudaSuccess) err = cudaDeviceGetAttribute(&limits->sm_count, cudaDevAttrMultiProcessorCount, device);
  if (err == cudaSuccess)
    err = cudaDeviceGetAttribute(&limits->smem_per_block, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
  if (err == cudaSuccess)
    err = cudaDeviceGetAttribute(&limits->smem_per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device);
  if (err == cudaSuccess) err = cudaDeviceGetAttribute(&limits->major, cudaDevAttrComputeCapabilityMajor, device);
  return err;
}

struct PassPlan {
  int tile_cols;
  int slab_cols;
  int num_tiles;
  int smem_bytes;
  int n_segs;
  int seg_chunks;
};

constexpr int kMinSegmentChunks = 4;  // a segment shorter than this costs more than it saves

// Blocks of `kernel` that one SM holds with `smem` bytes each (registers, shared memory and
// threads all count); 0 when it does not fit.
inline int blocks_per_sm(const void* kernel, int smem) {
  int blocks = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, kThreads, static_cast<size_t>(smem)) !=
      cudaSuccess) {
    (void)cudaGetLastError();  // not fatal: plan as if one block fits
    return 1;
  }
  return blocks;
}

// Picks TE, KS and the sequence split for a pass of `kernel` (whose dynamic shared-memory limit
// must already be the device's opt-in maximum) with contraction width kd and td output columns,
// bh rows of n_chunks chunks, on `sm_share` SMs. Blocks walk their chunks in order, so blocks
// are the only parallelism: a smaller TE gives more of them but recomputes the chunk's scores
// once per tile; a split into segments gives more of them but costs a second walk that builds
// each segment's partial state (and scratch memory). The cost model: waves of blocks x chunks
// per block x multiply-adds per chunk, plus a fixed per-chunk overhead (barriers, load latency)
// worth a 64^3 product per slab. A first guess, to tune on a GPU.
inline bool plan_pass(const void* kernel, int elem_size, int kd, int td, bool split, int64_t bh, int n_chunks,
                      bool allow_segments, const DeviceLimits& limits, int sm_share, PassPlan* plan) {
  const int kd_padded = round_up(kd, kMma);
  const int slab_choices[2] = {elem_size == 4 ? 64 : 128, elem_size == 4 ? 32 : 64};
  const int tile_choices[3] = {64, 32, 16};
  const double overhead = double(kChunk) * kChunk * kChunk;
  int max_segs = allow_segments && n_chunks >= 2 * kMinSegmentChunks ? n_chunks / kMinSegmentChunks : 1;
  max_segs = max_segs > 65535 / kMaxPasses ? 65535 / kMaxPasses : max_segs;  // grid.z holds passes x segments
  double best = -1.0;
  for (int slab_cols : slab_choices) {
    slab_cols = min_int(slab_cols, kd_padded);
    if (ceil_div(kd_padded, slab_cols) > kMaxSlabs) continue;
    for (int tile_cols : tile_choices) {
      if (tile_cols > kMma && (tile_cols > round_up(td, kMma) || kd_padded * tile_cols > kMaxStateFloats)) continue;
      const int smem = make_smem_layout(elem_size, kd_padded, tile_cols, slab_cols, split).total;
      if (smem > limits.smem_per_block) continue;
      const int per_sm = blocks_per_sm(kernel, smem);
      if (per_sm < 1) continue;
      const int num_tiles = ceil_div(td, tile_cols);
      const double slots = double(sm_share < 1 ? 1 : sm_share) * per_sm;
      const double row_blocks = double(bh) * num_tiles;
      // As many segments as fill the free slots in one wave, if the rows alone leave some.
      int n_segs = row_blocks >= slots ? 1 : static_cast<int>(slots / row_blocks);
      n_segs = n_segs > max_segs ? max_segs : n_segs;
      const int seg_chunks = ceil_div(n_chunks, n_segs);
      n_segs = ceil_div(n_chunks, seg_chunks);
      const double blocks = row_blocks * n_segs;
      const double waves = double(static_cast<int64_t>((blocks + slots - 1) / slots));
      const double products = split ? 2.0 : 1.0;  // split operands double Qx S and A Vx
      const double slab_overhead = overhead * ceil_div(kd_padded, slab_cols);
      const double update = products * kChunk * kd_padded * tile_cols + slab_overhead;
      const double work = double(kChunk) * kChunk * kd_padded + kChunk * kd_padded * tile_cols +
                          products * kChunk * kChunk * tile_cols + update;
      double cost = waves * seg_chunks * work;
      if (n_segs > 1) cost += waves * seg_chunks * update + waves * n_segs * double(kd_padded) * tile_cols;
      if (best < 0.0 || cost < best) {  // ties keep the wider tile and slab, tried first
        best = cost;
        *plan = PassPlan{tile_cols, slab_cols, num_tiles, smem, n_segs, seg_chunks};
      }
    }
  }
  return best >= 0.0;
}

inline void apply_plan(const PassPlan& plan, PassParams* p) {
  p->kd_padded = round_up(p->kd, kMma);
  p->tile_cols = plan.tile_cols;
  p->slab_cols = plan.slab_cols;
  p->num_tiles = plan.num_tiles;
  p->n_segs = plan.n_segs;
  p->seg_chunks = plan.seg_chunks;
  p->partial_floats = p->kd_padded * p->tile_cols + p->kd_padded + p->tile_cols;
  p->partials = nullptr;
}

// Scratch floats of a split pass's partials (0 when not split).
inline int64_t partial_floats_of(const PassParams& p, int64_t bh) {
  return p.n_segs > 1 ? bh * p.num_tiles * p.n_segs * static_cast<int64_t>(p.partial_floats) : 0;
}

// Fills what every pass of one launch shares.
inline void set_common(const LinearAttentionShape& shape, PassParams* p) {
  p->seq = shape.seq;
  p->n_chunks = static_cast<int>((shape.seq + kChunk - 1) / kChunk);
  p->dim_v = static_cast<int>(shape.dim_v);
  p->eps = shape.eps;
  p->causal = shape.causal ? 1 : 0;
}

// Lets `kernel` use the device's whole opt-in shared memory (needed above 48 KB, and by the
// occupancy queries of the planner).
inline cudaError_t allow_max_smem(const void* kernel, const DeviceLimits& limits) {
  return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, limits.smem_per_block);
}

// Launches `kernel` with `args` on `stream`; returns the launch's error, else cudaGetLastError().
inline cudaError_t launch_chunked_kernel(const void* kernel, dim3 grid, int smem_bytes, KernelArgs* args,
                                         cudaStream_t stream) {
  void* params[] = {args};
  const cudaError_t err =
      cudaLaunchKernel(kernel, grid, dim3(kThreads), params, static_cast<size_t>(smem_bytes), stream);
  const cudaError_t last = cudaGetLastError();  // also clears the launch error, if any
  return err != cudaSuccess ? err : last;
}

// Plans the first n_passes passes of `args` (kd, vx.cols and split set) for `kernel`, then runs
// them: when a pass is split into segments, its partials go to scratch memory taken with
// cudaMallocAsync on `stream` (one allocation for all passes), a first launch fills it, the
// second launch writes the outputs, and cudaFreeAsync gives it back, all stream-ordered. Without
// that memory (cudaMallocAsync fails), it plans again without splitting.
inline cudaError_t plan_and_launch(const void* kernel, int elem_size, KernelArgs* args, int n_passes, int64_t bh,
                                   const DeviceLimits& limits, cudaStream_t stream) {
  cudaError_t err = allow_max_smem(kernel, limits);
  if (err != cudaSuccess) return err;
  const int sm_share = limits.sm_count / n_passes > 0 ? limits.sm_count / n_passes : 1;
  for (int attempt = 0; attempt < 2; ++attempt) {
    int smem_bytes = 0, max_tiles = 0, max_segs = 1;
    int64_t scratch_floats = 0;
    for (int i = 0; i < n_passes; ++i) {
      PassParams& p = args->pass[i];
      PassPlan plan{};
      if (!plan_pass(kernel, elem_size, p.kd, p.vx.cols, p.split != 0, bh, p.n_chunks, attempt == 0, limits, sm_share,
                     &plan))
        return cudaErrorInvalidConfiguration;  // does not fit this GPU's shared memory
      apply_plan(plan, &p);
      smem_bytes = plan.smem_bytes > smem_bytes ? plan.smem_bytes : smem_bytes;
      max_tiles = plan.num_tiles > max_tiles ? plan.num_tiles : max_tiles;
      max_segs = plan.n_segs > max_segs ? plan.n_segs : max_segs;
      scratch_floats += partial_floats_of(p, bh);
    }
    float* scratch = nullptr;
    if (scratch_floats > 0) {
      if (cudaMallocAsync(reinterpret_cast<void**>(&scratch), static_cast<size_t>(scratch_floats) * sizeof(float),
                          stream) != cudaSuccess) {
        (void)cudaGetLastError();
        continue;  // plan again, unsplit
      }
      float* next = scratch;
      for (int i = 0; i < n_passes; ++i) {
        args->pass[i].partials = args->pass[i].n_segs > 1 ? next : nullptr;
        next += partial_floats_of(args->pass[i], bh);
      }
    }
    args->max_segs = max_segs;
    const dim3 grid(static_cast<unsigned>(bh), static_cast<unsigned>(max_tiles),
                    static_cast<unsigned>(n_passes * max_segs));
    if (scratch != nullptr) {
      args->phase = Phase::kPartials;
      err = launch_chunked_kernel(kernel, grid, smem_bytes, args, stream);
    }
    if (err == cudaSuccess) {
      args->phase = Phase::kOutputs;
      err = launch_chunked_kernel(kernel, grid, smem_bytes, args, stream);
    }
    if (scratch != nullptr) {
      const cudaError_t freed = cudaFreeAsync(scratch, stream);
      if (err == cudaSuccess) err = freed;
    }
    return err;
  }
  return cudaErrorInvalidConfiguration;  // not reached: the second attempt never splits
}

}  // namespace cuda_detail
}  // namespace linbench
