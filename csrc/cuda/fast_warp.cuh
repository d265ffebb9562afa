// The fast pass's per-warp products on the tensor cores (fast_pass.cuh). Warp w owns the 16
// chunk rows [16w, 16w + 16) of the scores and the output, and the kDk / 4 state rows
// [w kDk / 4, (w + 1) kDk / 4); all of them live in registers as mma fragments (warp_mma.cuh),
// the state in fp32 across chunks. Nothing here synchronises the block.
#pragma once

#include "fast_loads.cuh"

namespace linbench {
namespace cuda_detail {

// This lane's row address for ldmatrix .x4 of a 16 x 16 block at (row0, col0) of a swizzled tile:
// matrix m = lane / 8 is rows row0 + (m % 2) * 8 + lane % 8 and columns col0 + (m / 2) * 8 when
// kRowsFirst (the 16-row halves come first: A fragments, and B fragments read transposed), else
// rows row0 + (m / 2) * 8 + lane % 8 and columns col0 + (m % 2) * 8 (B fragments of two n tiles).
template <bool kRowsFirst, int kTileCols, class T>
__device__ __forceinline__ const T* lane_block_row(const T* tile, int row0, int col0) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int m = lane / 8;
  const int row = row0 + (kRowsFirst ? (m % 2) : (m / 2)) * 8 + lane % 8;
  const int col = col0 + (kRowsFirst ? (m / 2) : (m % 2)) * 8;
  return tile + fast_tile_index(row, col, kTileCols);
}

// Whether key block j (16 keys) of the chunk can reach query strip `warp` under the mask.
__device__ __forceinline__ bool key_block_visible(int j, int warp, bool reverse) {
  return reverse ? j >= warp : j <= warp;
}

template <class T>
constexpr bool kFastBf16 = IsSame<T, __nv_bfloat16>::value;

// The strip's Qx rows as A fragments, kept for the whole chunk: qf[kk] covers columns [16kk, 16kk + 16).
template <class T, int kDk>
__device__ void load_strip_queries(const FastStage<T>& st, int warp, uint32_t (&qf)[kDk / 16][4]) {
#pragma unroll
  for (int kk = 0; kk < kDk / 16; ++kk) ldmatrix_x4(qf[kk], lane_block_row<true, kDk>(st.q, 16 * warp, 16 * kk));
}

// The normalised gradients' fp32 terms (FastPassParams): a_i, b_j from the stage's c, w_j.
struct GradTerms {
  bool on;             // a normalised gradient's pass (else every other member is unused)
  AugValue q_aug, k_aug;
  bool q_row_scale, k_row_weight;
};

__device__ __forceinline__ GradTerms grad_terms(const FastPassParams& p) {
  return GradTerms{p.row_w != nullptr, p.q_aug, p.k_aug, p.q_row_scale != 0, p.k_row_weight != 0};
}

// a_i or b_j of chunk row r: 0, 1 or the row's c.
__device__ __forceinline__ float aug_of(AugValue kind, const float* c, int r) {
  return kind == AugValue::kOne ? 1.0f : kind == AugValue::kNegGradOutDotOut ? c[r] : 0.0f;
}

// Scores of the strip against key block j (16 keys), fp32, with the gradients' terms, masked
// (key <= query, key >= query in reverse): sc[0] keys 16j..16j+7, sc[1] the next 8.
template <class T, int kDk>
__device__ void block_scores(const FastStage<T>& st, const uint32_t (&qf)[kDk / 16][4], int warp, int j,
                             bool reverse, const GradTerms& g, float (&sc)[2][4]) {
#pragma unroll
  for (int h = 0; h < 2; ++h) sc[h][0] = sc[h][1] = sc[h][2] = sc[h][3] = 0.0f;
#pragma unroll
  for (int kk = 0; kk < kDk / 16; ++kk) {
    uint32_t b[4];
    ldmatrix_x4(b, lane_block_row<false, kDk>(st.k, 16 * j, 16 * kk));
    mma_16816<kFastBf16<T>>(sc[0], qf[kk], {b[0], b[1]});
    mma_16816<kFastBf16<T>>(sc[1], qf[kk], {b[2], b[3]});
  }
  const int lane = static_cast<int>(threadIdx.x) % 32;
  if (g.on)
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int query = 16 * warp + lane / 4 + 8 * (e / 2);
        const int key = 16 * j + 8 * h + 2 * (lane % 4) + e % 2;
        const float x = sc[h][e] + aug_of(g.q_aug, st.c, query) * aug_of(g.k_aug, st.c, key);
        sc[h][e] = g.k_row_weight ? x * st.w[key] : x;
      }
  if (j != warp) return;  // only the diagonal block is cut by the mask
#pragma unroll
  for (int h = 0; h < 2; ++h)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int query = lane / 4 + 8 * (e / 2);
      const int key = 8 * h + 2 * (lane % 4) + e % 2;
      if (reverse ? key < query : key > query) sc[h][e] = 0.0f;
    }
}

// The lo half of a split pair (x ~= hi + lo / kSplitScale, tile_math.cuh): bf16 keeps fp32's
// range and lo as it is; fp16's lo is stored times 2^11 so that it stays a normal number, and
// the products taken from it are multiplied back (block_lo_times_values, add_lo_product).
template <class T>
__device__ __forceinline__ uint32_t split_low_pair(float x0, float x1, uint32_t hi) {
  float h0, h1;
  unpack_pair<T>(hi, &h0, &h1);
  return pack_pair<T>((x0 - h0) * kSplitScale<T>, (x1 - h1) * kSplitScale<T>);
}

// acc *= factor (a power of two here, exact in fp32).
__device__ __forceinline__ void scale_fragment(float (&acc)[4], float factor) {
#pragma unroll
  for (int e = 0; e < 4; ++e) acc[e] *= factor;
}

// The same for a strip's four output fragments.
__device__ __forceinline__ void scale_fragments(float (&o)[4][4], float factor) {
#pragma unroll
  for (int n = 0; n < 4; ++n) scale_fragment(o[n], factor);
}

// Scores of one key block as an A fragment (k = key); split: the residual in lo (split_low_pair).
template <class T>
__device__ void scores_to_fragment(const float (&sc)[2][4], bool split, uint32_t (&a)[4], uint32_t (&lo)[4]) {
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const float* x = &sc[r / 2][2 * (r % 2)];
    a[r] = pack_pair<T>(x[0], x[1]);
    lo[r] = split ? split_low_pair<T>(x[0], x[1], a[r]) : 0u;
  }
}

// o += A_j V_tile[16j .. 16j + 16) for one key block's A fragment.
template <class T>
__device__ void block_times_values(const FastStage<T>& st, int j, const uint32_t (&a)[4], float (&o)[4][4]) {
#pragma unroll
  for (int p = 0; p < 2; ++p) {
    uint32_t b[4];
    ldmatrix_x4_trans(b, lane_block_row<true, kFastTile>(st.v, 16 * j, 16 * p));
    mma_16816<kFastBf16<T>>(o[2 * p], a, {b[0], b[1]});
    mma_16816<kFastBf16<T>>(o[2 * p + 1], a, {b[2], b[3]});
  }
}

// The same for a split's lo half: into o directly (bf16), or, fp16, whose lo is stored times
// 2^11, into o taken times 2^11 for the product and back after it (exact: powers of two; no
// accumulators of its own, which the normalised output kernel has no registers for).
template <class T>
__device__ void block_lo_times_values(const FastStage<T>& st, int j, const uint32_t (&lo)[4], float (&o)[4][4]) {
  if constexpr (kIsHalf<T>) scale_fragments(o, kSplitScale<T>);
  block_times_values<T>(st, j, lo, o);
  if constexpr (kIsHalf<T>) scale_fragments(o, 1.0f / kSplitScale<T>);
}

// o += mask(Qx_strip Kx^T) V_tile for key block j; rowsum += its masked scores' row sums of this
// lane's two rows (before the quad sum). kSplit: the scores split into hi + lo.
template <class T, int kDk, bool kSplit>
__device__ __forceinline__ void key_block_intra_chunk(const FastStage<T>& st, const uint32_t (&qf)[kDk / 16][4],
                                                      int warp, int j, bool reverse, const GradTerms& g,
                                                      float (&o)[4][4], float (&rowsum)[2]) {
  if (!key_block_visible(j, warp, reverse)) return;
  float sc[2][4];
  block_scores<T, kDk>(st, qf, warp, j, reverse, g, sc);
  rowsum[0] += sc[0][0] + sc[0][1] + sc[1][0] + sc[1][1];
  rowsum[1] += sc[0][2] + sc[0][3] + sc[1][2] + sc[1][3];
  uint32_t a[4], lo[4];
  scores_to_fragment<T>(sc, kSplit, a, lo);
  block_times_values<T>(st, j, a, o);
  if (kSplit) block_lo_times_values<T>(st, j, lo, o);
}

// The chunk's four key blocks, one at a time (their scores never all live at once). fp16's split
// walks them without unrolling: unrolled, its output kernel at a contraction of 64 spills past
// 128 registers (ptxas, sm_90); the others keep the unrolled walk.
template <class T, int kDk, bool kSplit>
__device__ void strip_intra_chunk(const FastStage<T>& st, const uint32_t (&qf)[kDk / 16][4], int warp, bool reverse,
                                  const GradTerms& g, float (&o)[4][4], float (&rowsum)[2]) {
  if constexpr (kSplit && kIsHalf<T>) {
#pragma unroll 1
    for (int j = 0; j < 4; ++j) key_block_intra_chunk<T, kDk, kSplit>(st, qf, warp, j, reverse, g, o, rowsum);
  } else {
#pragma unroll
    for (int j = 0; j < 4; ++j) key_block_intra_chunk<T, kDk, kSplit>(st, qf, warp, j, reverse, g, o, rowsum);
  }
}

// o += Qx_strip C, C a swizzled [kDk][kFastTile] 16-bit copy of the state.
template <class T, int kDk>
__device__ void strip_times_state(const uint32_t (&qf)[kDk / 16][4], const T* copy, float (&o)[4][4]) {
#pragma unroll
  for (int kk = 0; kk < kDk / 16; ++kk)
#pragma unroll
    for (int p = 0; p < 2; ++p) {
      uint32_t b[4];
      ldmatrix_x4_trans(b, lane_block_row<true, kFastTile>(copy, 16 * kk, 16 * p));
      mma_16816<kFastBf16<T>>(o[2 * p], qf[kk], {b[0], b[1]});
      mma_16816<kFastBf16<T>>(o[2 * p + 1], qf[kk], {b[2], b[3]});
    }
}

// The warp's state rows: kDk / 64 tiles of 16 rows x kFastTile columns.
template <int kDk>
struct StateRows {
  static constexpr int kTiles = kDk / 64;
  float s[kTiles][4][4];
};

// First state row of the warp's m tile `mt`.
template <int kDk>
__device__ __forceinline__ int state_row0(int warp, int mt) {
  return warp * (kDk / 4) + 16 * mt;
}

// B fragments of V_tile rows times w (each register: keys 16j + 8 (r % 2) + 2 (lane % 4), + 1, as
// ldmatrix .trans gives them), split into hi and lo (split_low_pair), so that the weighted
// product loses nothing the fp32 weights carry.
template <class T>
__device__ void weigh_value_fragments(const uint32_t (&b)[4], const float* w, int j, uint32_t (&hi)[4],
                                      uint32_t (&lo)[4]) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const int key = 16 * j + 8 * (r % 2) + 2 * (lane % 4);
    float x0, x1;
    unpack_pair<T>(b[r], &x0, &x1);
    x0 *= w[key], x1 *= w[key + 1];
    hi[r] = pack_pair<T>(x0, x1);
    lo[r] = split_low_pair<T>(x0, x1, hi[r]);
  }
}

// s += a B_lo for the two column tiles of B_lo (a split's lo half): directly (bf16), or, fp16,
// into s taken times 2^11 and back (block_lo_times_values).
template <class T>
__device__ void add_lo_product(const uint32_t (&a)[4], const uint32_t (&lo)[4], float (&s0)[4], float (&s1)[4]) {
  if constexpr (kIsHalf<T>) scale_fragment(s0, kSplitScale<T>), scale_fragment(s1, kSplitScale<T>);
  mma_16816<kFastBf16<T>>(s0, a, {lo[0], lo[1]});
  mma_16816<kFastBf16<T>>(s1, a, {lo[2], lo[3]});
  if constexpr (kIsHalf<T>) scale_fragment(s0, 1.0f / kSplitScale<T>), scale_fragment(s1, 1.0f / kSplitScale<T>);
}

// S_rows += Kx^T diag(w) V_tile over the whole chunk (k = key); w = nullptr: no weights.
template <class T, int kDk>
__device__ void update_state_rows(const FastStage<T>& st, int warp, StateRows<kDk>& rows, const float* w = nullptr) {
#pragma unroll
  for (int mt = 0; mt < StateRows<kDk>::kTiles; ++mt)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      uint32_t a[4];
      ldmatrix_x4_trans(a, lane_block_row<false, kDk>(st.k, 16 * j, state_row0<kDk>(warp, mt)));
#pragma unroll
      for (int p = 0; p < 2; ++p) {
        uint32_t b[4];
        ldmatrix_x4_trans(b, lane_block_row<true, kFastTile>(st.v, 16 * j, 16 * p));
        if (w != nullptr) {
          uint32_t lo[4];
          weigh_value_fragments<T>(b, w, j, b, lo);  // in place: b becomes the hi half
          add_lo_product<T>(a, lo, rows.s[mt][2 * p], rows.s[mt][2 * p + 1]);
        }
        mma_16816<kFastBf16<T>>(rows.s[mt][2 * p], a, {b[0], b[1]});
        mma_16816<kFastBf16<T>>(rows.s[mt][2 * p + 1], a, {b[2], b[3]});
      }
    }
}

// zaug[col] += sum over the chunk's keys of b_j (times w_j) V_tile[j][col]: warp w owns the 8
// columns [8w, 8w + 8), its lanes' quarters of the keys summed by shuffles, in a fixed order.
template <class T>
__device__ void add_aug_row(const FastStage<T>& st, int warp, const GradTerms& g, float* zaug) {
  static_assert(kFastTile == 8 * kFastWarps, "a warp owns 8 columns of zaug");
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int col = 8 * warp + lane % 8;
  float sum = 0.0f;
  for (int key = 16 * (lane / 8); key < 16 * (lane / 8 + 1); ++key) {
    const float b = aug_of(g.k_aug, st.c, key) * (g.k_row_weight ? st.w[key] : 1.0f);
    sum += b * to_float(st.v[fast_tile_index(key, col, kFastTile)]);
  }
  sum += __shfl_xor_sync(kFullMask, sum, 8);
  sum += __shfl_xor_sync(kFullMask, sum, 16);
  if (lane < 8) zaug[col] += sum;
}

// Writes the warp's state rows times `mul` into the 16-bit copy (hi), and, split, the residual into
// `lo` (split_low_pair: fp16's times 2^11).
template <class T, int kDk>
__device__ void write_state_copy(const StateRows<kDk>& rows, int warp, T* hi, T* lo, float mul) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
#pragma unroll
  for (int mt = 0; mt < StateRows<kDk>::kTiles; ++mt)
#pragma unroll
    for (int n = 0; n < 4; ++n)
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int row = state_row0<kDk>(warp, mt) + lane / 4 + 8 * half;
        const int at = fast_tile_index(row, 8 * n + 2 * (lane % 4), kFastTile);
        const float x[2] = {rows.s[mt][n][2 * half] * mul, rows.s[mt][n][2 * half + 1] * mul};
        const uint32_t h = pack_pair<T>(x[0], x[1]);
        memcpy(static_cast<void*>(hi + at), &h, sizeof(h));
        if (lo != nullptr) {
          const uint32_t l = split_low_pair<T>(x[0], x[1], h);
          memcpy(static_cast<void*>(lo + at), &l, sizeof(l));
        }
      }
}

// The largest |S| of the warp's state rows (every lane gets it).
template <int kDk>
__device__ float state_rows_max(const StateRows<kDk>& rows) {
  float m = 0.0f;
#pragma unroll
  for (int mt = 0; mt < StateRows<kDk>::kTiles; ++mt)
#pragma unroll
    for (int n = 0; n < 4; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) m = fmaxf(m, fabsf(rows.s[mt][n][e]));
  return warp_max(m);
}

// Sum over the 4 lanes of a quad (one fragment row).
__device__ __forceinline__ float quad_sum(float x) { return sum_over_row_lanes(x); }

// Qx_i . z for this lane's two strip rows (lane / 4 and + 8), summed over the quad.
template <class T, int kDk>
__device__ void strip_dot_keysum(const FastStage<T>& st, const float* z, int warp, float (&dot)[2]) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int row = 16 * warp + lane / 4 + 8 * half;
    float sum = 0.0f;
    for (int d = lane % 4; d < kDk; d += 4) sum += to_float(st.q[fast_tile_index(row, d, kDk)]) * z[d];
    dot[half] = quad_sum(sum);
  }
}

// z[d] += sum over the chunk's keys of Kx[key][d], for the warp's state rows d.
template <class T, int kDk>
__device__ void add_key_sums(const FastStage<T>& st, int warp, float* z) {
  constexpr int kRows = kDk / 4;             // 16 or 32 rows a warp
  constexpr int kLanesPerRow = 32 / kRows;   // 2 or 1
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int d = warp * kRows + lane % kRows;
  const int part = lane / kRows;
  float sum = 0.0f;
  for (int key = part; key < kChunk; key += kLanesPerRow) sum += to_float(st.k[fast_tile_index(key, d, kDk)]);
  if (kLanesPerRow == 2) sum += __shfl_xor_sync(kFullMask, sum, 16);
  if (part == 0) z[d] += sum;
}

}  // namespace cuda_detail
}  // namespace linbench
