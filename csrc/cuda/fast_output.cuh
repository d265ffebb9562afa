// The fast pass's output launch (included by fast_pass.cuh): per chunk, warp w computes its 16
// output rows, mask(Qx Kx^T) V_tile + Qx S, from fragments, then its state rows absorb the chunk
// and rewrite their part of the state's 16-bit copy for the next chunk.
#pragma once

namespace linbench {
namespace cuda_detail {

// Scales and stores the strip's outputs (and, kNorm with p.normalize, divides by den + eps and
// writes den).
template <class T, bool kNorm>
__device__ void store_strip(const FastPassParams& p, const FastBlock& b, int rows, int64_t row0, int warp,
                            const float (&o)[4][4], const float (&den)[2]) {
  const bool divide = kNorm && p.normalize != 0;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  T* out = static_cast<T*>(p.out);
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int row = 16 * warp + lane / 4 + 8 * half;
    if (row >= rows) continue;
    const float scale = divide ? p.out_scale / (den[half] + p.eps) : p.out_scale;
#pragma unroll
    for (int n = 0; n < 4; ++n) {
      const int col = b.tile * kFastTile + 8 * n + 2 * (lane % 4);
      if (col >= p.vx.cols) continue;
      const uint32_t pair = pack_pair<T>(o[n][2 * half] * scale, o[n][2 * half + 1] * scale);
      memcpy(static_cast<void*>(out + (row0 + row) * p.vx.cols + col), &pair, sizeof(pair));
    }
    if (divide && b.tile == 0 && lane % 4 == 0) p.den_out[row0 + row] = den[half];
  }
}

// The normalised gradients' epilogue: o_i = (o_i + a_i zaug) (times w_i), zaug the state's
// augmented row before the chunk.
template <class T>
__device__ void finish_grad_strip(const FastStage<T>& st, const GradTerms& g, const float* zaug, int warp,
                                  float (&o)[4][4]) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int row = 16 * warp + lane / 4 + 8 * half;
    const float a = aug_of(g.q_aug, st.c, row);
    const float w = g.q_row_scale ? st.w[row] : 1.0f;
#pragma unroll
    for (int n = 0; n < 4; ++n)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        float& x = o[n][2 * half + e];
        x = (x + a * zaug[8 * n + 2 * (lane % 4) + e]) * w;
      }
  }
}

// One chunk: the strip's outputs from the state as it was before the chunk (its copy, which
// fp16 holds divided by copy_scale; split, hi + lo), then the chunk's own masked scores times
// values. z: the forward's key sums, or the gradients' zaug.
template <class T, int kDk, bool kNorm>
__device__ void output_chunk(const FastPassParams& p, const FastBlock& b, const FastStage<T>& st, int rows,
                             int64_t row0, const T* copy_hi, const T* copy_lo, float copy_scale, const float* z,
                             const GradTerms& g, int warp) {
  constexpr bool split = kNorm;
  const bool divide = kNorm && p.normalize != 0;
  float o[4][4] = {};
  float den[2] = {0.0f, 0.0f};
  uint32_t qf[kDk / 16][4];
  load_strip_queries<T, kDk>(st, warp, qf);
  if constexpr (split && kIsHalf<T>) {
    // fp16's lo copy is stored times 2^11 (split_low_pair): its product first, alone in o, then
    // multiplied back before the hi product joins it.
    strip_times_state<T, kDk>(qf, copy_lo, o);
    scale_fragments(o, 1.0f / kSplitScale<T>);
    strip_times_state<T, kDk>(qf, copy_hi, o);
  } else {
    strip_times_state<T, kDk>(qf, copy_hi, o);
    if (split) strip_times_state<T, kDk>(qf, copy_lo, o);
  }
  if constexpr (kIsHalf<T>) scale_fragments(o, copy_scale);
  if (p.causal) {
    strip_intra_chunk<T, kDk, split>(st, qf, warp, p.reverse != 0, g, o, den);
    if (divide) {
      den[0] = quad_sum(den[0]);
      den[1] = quad_sum(den[1]);
    }
  }
  if (g.on) finish_grad_strip<T>(st, g, z, warp, o);
  if (divide) {
    float dot[2];
    strip_dot_keysum<T, kDk>(st, z, warp, dot);
    den[0] += dot[0];
    den[1] += dot[1];
  }
  store_strip<T, kNorm>(p, b, rows, row0, warp, o, den);
}

// Writes the state's 16-bit copy (and lo, split). fp16 divides it by a power of two that brings
// the block's largest |S| under 2^15 (fp16 ends at 65504; the state grows with the sequence),
// the warps' maxima gathered behind one barrier, and keeps that factor in *factor_out.
template <class T, int kDk>
__device__ void publish_state(const StateRows<kDk>& state, int warp, T* hi, T* lo, float* scale, float* factor_out) {
  float factor = 1.0f;
  if constexpr (kIsHalf<T>) {
    float* maxima = scale + 2;
    const float mine = state_rows_max<kDk>(state);
    if (threadIdx.x % 32 == 0) maxima[warp] = mine;
    __syncthreads();
    float largest = 0.0f;
    for (int w = 0; w < kFastWarps; ++w) largest = fmaxf(largest, maxima[w]);
    int exponent = 0;
    frexpf(largest, &exponent);  // largest < 2^exponent
    factor = exponent > 15 ? ldexpf(1.0f, exponent - 15) : 1.0f;
    if (threadIdx.x == 0) *factor_out = factor;
  }
  write_state_copy<T, kDk>(state, warp, hi, lo, 1.0f / factor);
}

template <class T, int kDk, bool kNorm>
__device__ void run_fast_output_block(const FastArgs& args) {
  const FastBlock b = decode_fast_block(args);
  const FastPassParams& p = args.pass[b.pass];
  if (b.first > b.last) return;
  unsigned char* smem = dynamic_shared_memory();
  constexpr bool split = kNorm;  // the normalised output cancels: split the 16-bit operands
  const FastSmemLayout lay = make_fast_layout(kDk, sizeof(T), split, kIsHalf<T>);
  const int warp = static_cast<int>(threadIdx.x) / 32;
  T* copies = reinterpret_cast<T*>(smem + lay.copy);
  const int copy_elems = lay.copy_bytes / static_cast<int>(sizeof(T));
  float* z = reinterpret_cast<float*>(smem + lay.z);
  float* scale = reinterpret_cast<float*>(smem + lay.scale);  // fp16: each copy's factor (publish_state)
  StateRows<kDk> state{};
  const GradTerms g = kNorm ? grad_terms(p) : GradTerms{};
  fold_partials<T, kDk, kNorm>(p, b, warp, state, z);
  T* lo = split ? copies + copy_elems : nullptr;
  constexpr bool single = fast_single_copy(kDk, split);
  publish_state<T, kDk>(state, warp, copies, lo, scale, &scale[0]);
  const bool update = p.causal != 0;
  walk_segment<T, kDk, kNorm>(args, p, b, smem, lay, true, update, [&](int step, const FastStage<T>& st, int rows,
                                                                       int64_t row0) {
    // The copy holding the state before this chunk: double-buffered when causal and not single
    // (bidirectional, the one written before the walk holds the whole sequence's state).
    const int buf = single || !update ? 0 : step % 2;
    const float factor = kIsHalf<T> ? scale[buf] : 1.0f;
    output_chunk<T, kDk, kNorm>(p, b, st, rows, row0, copies + buf * copy_elems, lo, factor, z, g, warp);
    if (!update || step == b.last - b.first) return;
    update_state_rows<T, kDk>(st, warp, state, g.on && g.k_row_weight ? st.w : nullptr);
    if (single) __syncthreads();  // every warp has read the single copy and z: rewrite them
    const int next = single ? 0 : (step + 1) % 2;
    publish_state<T, kDk>(state, warp, copies + next * copy_elems, lo, scale, &scale[next]);
    if (kNorm && p.normalize) add_key_sums<T, kDk>(st, warp, z);
    if (g.on && g.k_aug != AugValue::kNone) add_aug_row<T>(st, warp, g, z);
  });
  cp_async_wait<0>();
}

// kNorm: the split instance, for the normalised forward and the normalised gradients (every pass
// of the launch is one of those, or none is).
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
