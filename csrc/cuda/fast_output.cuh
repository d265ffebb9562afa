// The fast pass's output launch (included by fast_pass.cuh): per chunk, warp w computes its 16
// output rows, mask(Qx Kx^T) V_tile + Qx S, from fragments, then its state rows absorb the chunk
// and rewrite their part of the state's 16-bit copy for the next chunk.
#pragma once

namespace linbench {
namespace cuda_detail {

// Scales and stores the strip's outputs (and, normalised, divides by den + eps and writes den).
template <class T, bool kNorm>
__device__ void store_strip(const FastPassParams& p, const FastBlock& b, int rows, int64_t row0, int warp,
                            const float (&o)[4][4], const float (&den)[2]) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  T* out = static_cast<T*>(p.out);
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int row = 16 * warp + lane / 4 + 8 * half;
    if (row >= rows) continue;
    const float scale = kNorm ? p.out_scale / (den[half] + p.eps) : p.out_scale;
#pragma unroll
    for (int n = 0; n < 4; ++n) {
      const int col = b.tile * kFastTile + 8 * n + 2 * (lane % 4);
      if (col >= p.vx.cols) continue;
      const uint32_t pair = pack_pair<T>(o[n][2 * half] * scale, o[n][2 * half + 1] * scale);
      memcpy(static_cast<void*>(out + (row0 + row) * p.vx.cols + col), &pair, sizeof(pair));
    }
    if (kNorm && b.tile == 0 && lane % 4 == 0) p.den_out[row0 + row] = den[half];
  }
}

// One chunk: the strip's outputs from the state as it was before the chunk (copy), then, causal,
// the state update. `last`: no later chunk of this block reads the state.
template <class T, int kDk, bool kNorm>
__device__ void output_chunk(const FastPassParams& p, const FastBlock& b, const FastStage<T>& st, int rows,
                             int64_t row0, const T* copy_hi, const T* copy_lo, const float* z, int warp) {
  constexpr bool split = kNorm;
  float o[4][4] = {};
  float den[2] = {0.0f, 0.0f};
  uint32_t qf[kDk / 16][4];
  load_strip_queries<T, kDk>(st, warp, qf);
  if (p.causal) {
    strip_intra_chunk<T, kDk>(st, qf, warp, p.reverse != 0, split, o, den);
    if (kNorm) {
      den[0] = quad_sum(den[0]);
      den[1] = quad_sum(den[1]);
    }
  }
  strip_times_state<T, kDk>(qf, copy_hi, o);
  if (split) strip_times_state<T, kDk>(qf, copy_lo, o);
  if (kNorm) {
    float dot[2];
    strip_dot_keysum<T, kDk>(st, z, warp, dot);
    den[0] += dot[0];
    den[1] += dot[1];
  }
  store_strip<T, kNorm>(p, b, rows, row0, warp, o, den);
}

template <class T, int kDk, bool kNorm>
__device__ void run_fast_output_block(const FastArgs& args) {
  const FastBlock b = decode_fast_block(args);
  const FastPassParams& p = args.pass[b.pass];
  if (b.first > b.last) return;
  unsigned char* smem = dynamic_shared_memory();
  constexpr bool split = kNorm;  // the normalised output cancels: split the 16-bit operands
  const FastSmemLayout lay = make_fast_layout(kDk, sizeof(T), split);
  const int warp = static_cast<int>(threadIdx.x) / 32;
  T* copies = reinterpret_cast<T*>(smem + lay.copy);
  const int copy_elems = lay.copy_bytes / static_cast<int>(sizeof(T));
  float* z = reinterpret_cast<float*>(smem + lay.z);
  StateRows<kDk> state{};
  fold_partials<T, kDk, kNorm>(p, b, warp, state, z);
  T* lo = split ? copies + copy_elems : nullptr;
  constexpr bool single = fast_single_copy(kDk, split);
  write_state_copy<T, kDk>(state, warp, copies, lo);
  const bool update = p.causal != 0;
  walk_segment<T, kDk>(args, p, b, smem, lay, true, update, [&](int step, const FastStage<T>& st, int rows,
                                                                int64_t row0) {
    // The copy holding the state before this chunk: double-buffered when causal and not single
    // (bidirectional, the one written before the walk holds the whole sequence's state).
    T* hi = copies + (single || !update ? 0 : (step % 2) * copy_elems);
    output_chunk<T, kDk, kNorm>(p, b, st, rows, row0, hi, lo, z, warp);
    if (!update || step == b.last - b.first) return;
    update_state_rows<T, kDk>(st, warp, state);
    if (single) __syncthreads();  // every warp has read the single copy and z: rewrite them
    T* next = copies + (single ? 0 : ((step + 1) % 2) * copy_elems);
    write_state_copy<T, kDk>(state, warp, next, lo);
    if (kNorm) add_key_sums<T, kDk>(st, warp, z);
  });
  cp_async_wait<0>();
}

// kNorm: the normalised forward (every pass of the launch is, or none is).
template <class T, int kDk, bool kNorm>
__global__ void __launch_bounds__(kFastThreads, kFastMinBlocks<kDk>)
    fast_output_kernel(const __grid_constant__ FastArgs args) {
  run_fast_output_block<T, kDk, kNorm>(args);
}

template <class T, int kDk, bool kNorm>
__global__ void __launch_bounds__(kFastThreads, kFastMinBlocks<kDk>)
    fast_state_kernel(const __grid_constant__ FastArgs args) {
  run_fast_state_block<T, kDk, kNorm>(args);
}

}  // namespace cuda_detail
}  // namespace linbench
