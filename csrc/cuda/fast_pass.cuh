// The fast chunked pass (parameters: fast_pass_params.cuh): 4 warps a block, scores, outputs and
// the fp32 state in mma fragments (fast_warp.cuh), the next chunk's q, k, v loading with
// cp.async while this one is computed (fast_loads.cuh), one block barrier a chunk (one more
// with a feature map, one more where the state's copy is single: normalised, or kd = 128, one
// more for fp16, whose copy is scaled by the block's largest |S|). bf16 and fp16, normalised or
// not (the normalised split's fp16 lo halves are stored times 2^11 and their products kept apart
// until multiplied back: fast_warp.cuh).
//
// Two kernels: fast_state_kernel (each segment's own Kx^T Vx and key sum, to scratch) and
// fast_output_kernel (each segment from the partials before it; the outputs). blockIdx.x runs
// over the passes' (bh, segment, tile) triples, tiles fastest, so that the tile blocks of one
// chunk run side by side and read its q and k rows from L2 after the first.
#pragma once

#include "fast_warp.cuh"

namespace linbench {
namespace cuda_detail {

struct FastBlock {
  int pass;
  int64_t bh;
  int seg, tile;
  int first, last;  // the segment's chunks
};

__device__ __forceinline__ FastBlock decode_fast_block(const FastArgs& args) {
  const int block = static_cast<int>(blockIdx.x);
  int pass = 0;
  while (pass + 1 < args.n_passes && block >= args.pass[pass + 1].first_block) ++pass;
  const FastPassParams& p = args.pass[pass];
  const int local = block - p.first_block;
  FastBlock b;
  b.pass = pass;
  b.tile = local % p.num_tiles;
  b.seg = (local / p.num_tiles) % p.n_segs;
  b.bh = static_cast<int64_t>(local / p.num_tiles / p.n_segs);
  b.first = b.seg * p.seg_chunks;
  b.last = min_int(b.first + p.seg_chunks, args.n_chunks) - 1;
  return b;
}

__device__ __forceinline__ float* fast_partial(const FastPassParams& p, const FastBlock& b, int seg, int floats) {
  return p.partials + ((b.bh * p.num_tiles + b.tile) * p.n_segs + seg) * static_cast<int64_t>(floats);
}

// Whether segment g's partial is part of segment `seg`'s starting state (all of them when
// bidirectional), and whether the state launch must write it at all.
__device__ __forceinline__ bool partial_precedes(const FastPassParams& p, int g, int seg) {
  return !p.causal || (p.reverse ? g > seg : g < seg);
}
__device__ __forceinline__ bool partial_read_later(const FastPassParams& p, int seg) {
  return !p.causal || (p.reverse ? seg > 0 : seg + 1 < p.n_segs);
}

__device__ __forceinline__ int fast_chunk_rows(const FastArgs& a, int chunk) {
  const int64_t left = a.seq - static_cast<int64_t>(chunk) * kChunk;
  return static_cast<int>(left < kChunk ? left : kChunk);
}

// The walk of a segment with the next chunk's loads in flight: body(step, chunk, stage, rows, row0)
// runs once the stage has landed (and been mapped); one barrier between chunks.
template <class T, int kDk, bool kNorm, class Body>
__device__ void walk_segment(const FastArgs& args, const FastPassParams& p, const FastBlock& b, unsigned char* smem,
                             const FastSmemLayout& lay, bool with_q, bool with_kv, Body body) {
  const int n = b.last - b.first + 1;
  const int tile_col0 = b.tile * kFastTile;
  auto chunk_of = [&](int step) { return p.reverse ? b.last - step : b.first + step; };
  auto row0_of = [&](int chunk) { return b.bh * args.seq + static_cast<int64_t>(chunk) * kChunk; };
  auto padded_of = [&](int chunk) { return (b.bh * args.n_chunks + chunk) * int64_t{kChunk}; };
  issue_chunk_loads<T, kDk, kNorm>(p, fast_stage<T>(smem, lay, 0), row0_of(chunk_of(0)), padded_of(chunk_of(0)),
                                   fast_chunk_rows(args, chunk_of(0)), tile_col0, with_q, with_kv);
  for (int step = 0; step < n; ++step) {
    const int c = chunk_of(step);
    const int rows = fast_chunk_rows(args, c);
    cp_async_wait<0>();
    __syncthreads();  // this chunk has landed for every thread; the stage loaded next is free
    if (step + 1 < n) {
      const int next = chunk_of(step + 1);
      issue_chunk_loads<T, kDk, kNorm>(p, fast_stage<T>(smem, lay, (step + 1) % kFastStages), row0_of(next),
                                       padded_of(next), fast_chunk_rows(args, next), tile_col0, with_q, with_kv);
    }
    const FastStage<T> st = fast_stage<T>(smem, lay, step % kFastStages);
    if (map_stage<T, kDk>(p, st, row0_of(c), rows, tile_col0, with_q, with_kv)) __syncthreads();
    body(step, st, rows, row0_of(c));
  }
}

// State launch: the segment's Kx^T V_tile and key sum (or, normalised gradients, Kx^T diag(w)
// V_tile and zaug), to its partial record.
template <class T, int kDk, bool kNorm>
__device__ void run_fast_state_block(const FastArgs& args) {
  const FastBlock b = decode_fast_block(args);
  const FastPassParams& p = args.pass[b.pass];
  if (!partial_read_later(p, b.seg) || b.first > b.last) return;
  unsigned char* smem = dynamic_shared_memory();
  const FastSmemLayout lay = make_fast_layout(kDk, sizeof(T), kNorm, kIsHalf<T>);
  const int warp = static_cast<int>(threadIdx.x) / 32;
  float* z = reinterpret_cast<float*>(smem + lay.z);
  if (kNorm)
    for (int d = static_cast<int>(threadIdx.x); d < kDk; d += kFastThreads) z[d] = 0.0f;
  StateRows<kDk> rows{};
  const GradTerms g = kNorm ? grad_terms(p) : GradTerms{};
  walk_segment<T, kDk, kNorm>(args, p, b, smem, lay, false, true, [&](int, const FastStage<T>& st, int, int64_t) {
    update_state_rows<T, kDk>(st, warp, rows, g.on && g.k_row_weight ? st.w : nullptr);
    if (kNorm && p.normalize) add_key_sums<T, kDk>(st, warp, z);  // each warp its own rows of z
    if (g.on && g.k_aug != AugValue::kNone) add_aug_row<T>(st, warp, g, z);  // and its columns of zaug
  });
  float* rec = fast_partial(p, b, b.seg, kFastPartialFloats<kDk>);
  const int lane = static_cast<int>(threadIdx.x) % 32;
#pragma unroll
  for (int mt = 0; mt < StateRows<kDk>::kTiles; ++mt)
#pragma unroll
    for (int n = 0; n < 4; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        rec[(state_row0<kDk>(warp, mt) + lane / 4 + 8 * (e / 2)) * kFastTile + 8 * n + 2 * (lane % 4) + e % 2] =
            rows.s[mt][n][e];
  if (kNorm) {
    __syncthreads();
    for (int d = static_cast<int>(threadIdx.x); d < kDk; d += kFastThreads) rec[kDk * kFastTile + d] = z[d];
  }
}

// Output launch, before the walk: the state (and z) from the partials of earlier segments.
template <class T, int kDk, bool kNorm>
__device__ void fold_partials(const FastPassParams& p, const FastBlock& b, int warp, StateRows<kDk>& rows, float* z) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  for (int d = static_cast<int>(threadIdx.x); kNorm && d < kDk; d += kFastThreads) z[d] = 0.0f;
  for (int g = 0; g < p.n_segs; ++g) {
    if (!partial_precedes(p, g, b.seg)) continue;
    const float* rec = fast_partial(p, b, g, kFastPartialFloats<kDk>);
#pragma unroll
    for (int mt = 0; mt < StateRows<kDk>::kTiles; ++mt)
#pragma unroll
      for (int n = 0; n < 4; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          rows.s[mt][n][e] +=
              rec[(state_row0<kDk>(warp, mt) + lane / 4 + 8 * (e / 2)) * kFastTile + 8 * n + 2 * (lane % 4) + e % 2];
    for (int d = static_cast<int>(threadIdx.x); kNorm && d < kDk; d += kFastThreads)
      z[d] += rec[kDk * kFastTile + d];
  }
}

}  // namespace cuda_detail
}  // namespace linbench

#include "fast_output.cuh"
