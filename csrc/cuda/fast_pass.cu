// The fast pass's kernels (fast_pass.cuh), compiled once for both launchers, and its host side
// behind fast_plan.cuh: the sequence segments that fill the GPU, the scratch for their partial
// states (stream-ordered, as the generic pass's), and the two launches.
#include "fast_pass.cuh"
#include "fast_plan.cuh"

namespace linbench {
namespace cuda_detail {

// resource_report.py's fast_smem models these (the README's occupancy): both change together.
static_assert(make_fast_layout(64, 2, false).total == 49152 && make_fast_layout(64, 2, true).total == 50432);
static_assert(make_fast_layout(128, 2, false).total == 81920 && make_fast_layout(128, 2, true).total == 91648);
static_assert(make_fast_layout(64, 2, false, true).total == 49280 &&
              make_fast_layout(128, 2, false, true).total == 82048);  // fp16: 128 bytes of scales
static_assert(make_fast_layout(64, 2, true, true).total == 50560 && make_fast_layout(128, 2, true, true).total == 91776);

namespace {

// Segments of each pass so that the launch has about `slots` blocks (an SM-full of them each):
// a segment per block when bh x tiles leaves slots free, down to kFastMinSegmentChunks chunks.
void plan_fast_segments(FastArgs* args, int slots) {
  const int share = slots / args->n_passes > 0 ? slots / args->n_passes : 1;
  int first = 0;
  for (int i = 0; i < args->n_passes; ++i) {
    FastPassParams& p = args->pass[i];
    p.num_tiles = ceil_div(p.vx.cols, kFastTile);
    const int64_t row_blocks = args->bh * p.num_tiles;
    int64_t segs = row_blocks >= share ? 1 : (share + row_blocks - 1) / row_blocks;
    const int64_t most = args->n_chunks / kFastMinSegmentChunks;
    segs = segs > most ? most : segs;
    segs = segs < 1 ? 1 : segs;
    p.seg_chunks = ceil_div(args->n_chunks, static_cast<int>(segs));
    p.n_segs = ceil_div(args->n_chunks, p.seg_chunks);
    p.first_block = first;
    first += static_cast<int>(row_blocks * p.n_segs);
  }
}

int64_t fast_total_blocks(const FastArgs& args) {
  int64_t total = 0;
  for (int i = 0; i < args.n_passes; ++i)
    total += args.bh * args.pass[i].num_tiles * static_cast<int64_t>(args.pass[i].n_segs);
  return total;
}

// Whether the pass needs the state launch (and scratch): split, or bidirectional.
bool fast_needs_partials(const FastPassParams& p) { return p.n_segs > 1 || !p.causal; }

cudaError_t launch_fast_kernel(const void* kernel, int64_t blocks, int smem, FastArgs* args, cudaStream_t stream) {
  void* params[] = {args};
  const cudaError_t err = cudaLaunchKernel(kernel, dim3(static_cast<unsigned>(blocks)), dim3(kFastThreads), params,
                                           static_cast<size_t>(smem), stream);
  const cudaError_t last = cudaGetLastError();
  return err != cudaSuccess ? err : last;
}

// run_fast (fast_plan.cuh) for one element type, contraction class kDk and instance.
template <class T, int kDk, bool kNorm>
cudaError_t run_fast_passes(FastArgs* args, const DeviceLimits& limits, cudaStream_t stream, bool* ran) {
  *ran = false;
  const void* output = reinterpret_cast<const void*>(&fast_output_kernel<T, kDk, kNorm>);
  const void* state = reinterpret_cast<const void*>(&fast_state_kernel<T, kDk, kNorm>);
  const int smem = make_fast_layout(kDk, sizeof(T), kNorm, kIsHalf<T>).total;
  for (const void* kernel : {output, state}) {
    cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    // All of the SM's unified L1 as shared memory: a smaller carveout would hold fewer blocks (the
    // kernels keep nothing in L1 they need: no spills, loads bypass it with cp.async.cg).
    if (err == cudaSuccess)
      err = cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                 cudaSharedmemCarveoutMaxShared);
    if (err != cudaSuccess) return err;
  }
  int per_sm = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, output, kFastThreads, static_cast<size_t>(smem)) !=
      cudaSuccess) {
    (void)cudaGetLastError();
    per_sm = 1;
  }
  plan_fast_segments(args, limits.sm_count * (per_sm > 0 ? per_sm : 1));
  const int64_t blocks = fast_total_blocks(*args);
  if (blocks > 0x7fffffff) return cudaSuccess;  // not ran: the grid would not fit one dimension
  int64_t scratch_floats = 0;
  for (int i = 0; i < args->n_passes; ++i)
    if (fast_needs_partials(args->pass[i]))
      scratch_floats += args->bh * args->pass[i].num_tiles * args->pass[i].n_segs * int64_t{kFastPartialFloats<kDk>};
  float* scratch = nullptr;
  if (scratch_floats > 0) {
    if (cudaMallocAsync(reinterpret_cast<void**>(&scratch), static_cast<size_t>(scratch_floats) * sizeof(float),
                        stream) != cudaSuccess) {
      (void)cudaGetLastError();
      return cudaSuccess;  // not ran
    }
    float* next = scratch;
    for (int i = 0; i < args->n_passes; ++i) {
      FastPassParams& p = args->pass[i];
      p.partials = fast_needs_partials(p) ? next : nullptr;
      if (fast_needs_partials(p)) next += args->bh * p.num_tiles * p.n_segs * int64_t{kFastPartialFloats<kDk>};
    }
  }
  cudaError_t err = scratch != nullptr ? launch_fast_kernel(state, blocks, smem, args, stream) : cudaSuccess;
  if (err == cudaSuccess) err = launch_fast_kernel(output, blocks, smem, args, stream);
  if (scratch != nullptr) {
    const cudaError_t freed = cudaFreeAsync(scratch, stream);
    if (err == cudaSuccess) err = freed;
  }
  *ran = true;
  return err;
}

}  // namespace

int fast_pass_ptx_version() {
  cudaFuncAttributes attributes{};
  const void* kernel = reinterpret_cast<const void*>(&fast_output_kernel<__nv_bfloat16, 64, false>);
  if (cudaFuncGetAttributes(&attributes, kernel) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return attributes.ptxVersion;
}

namespace {

// The instance of `dtype` (bf16 or fp16) and of the passes' contraction class.
template <bool kNorm>
cudaError_t run_fast_instance(ElementType dtype, FastArgs* args, const DeviceLimits& limits, cudaStream_t stream,
                              bool* ran) {
  const bool narrow = fast_dk_class(args->pass[0].kd) == 64;
  if (dtype == ElementType::f16)
    return narrow ? run_fast_passes<__half, 64, kNorm>(args, limits, stream, ran)
                  : run_fast_passes<__half, 128, kNorm>(args, limits, stream, ran);
  return narrow ? run_fast_passes<__nv_bfloat16, 64, kNorm>(args, limits, stream, ran)
                : run_fast_passes<__nv_bfloat16, 128, kNorm>(args, limits, stream, ran);
}

}  // namespace

cudaError_t run_fast(ElementType dtype, bool normalised, FastArgs* args, const DeviceLimits& limits,
                     cudaStream_t stream, bool* ran) {
  return normalised ? run_fast_instance<true>(dtype, args, limits, stream, ran)
                    : run_fast_instance<false>(dtype, args, limits, stream, ran);
}

}  // namespace cuda_detail
}  // namespace linbench
