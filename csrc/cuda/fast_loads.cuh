// The fast pass's loads (fast_pass.cuh): one chunk's Qx, Kx rows and Vx tile, global -> shared
// with cp.async (16 bytes a copy, zero-filled past the sequence and past the operand's columns),
// and the feature maps applied in place once the chunk has landed (in fp32 from the raw
// element, rounded once to T, as the generic pass's loads do; padding stays zero, not phi(0)).
#pragma once

#include "fast_pass_params.cuh"
#include "warp_mma.cuh"

namespace linbench {
namespace cuda_detail {

// A stage's three tiles, typed, and (split) its rows' factors.
template <class T>
struct FastStage {
  T* q;      // [kChunk][kDk], swizzled
  T* k;      // [kChunk][kDk], swizzled
  T* v;      // [kChunk][kFastTile], swizzled
  float* w;  // [kChunk] the normalised gradients' w and c of the chunk's rows (FastPassParams)
  float* c;
};

template <class T>
__device__ __forceinline__ FastStage<T> fast_stage(unsigned char* smem, const FastSmemLayout& lay, int index) {
  unsigned char* base = smem + index * lay.stage_bytes;
  return FastStage<T>{reinterpret_cast<T*>(base + lay.q_off), reinterpret_cast<T*>(base + lay.k_off),
                      reinterpret_cast<T*>(base + lay.v_off), reinterpret_cast<float*>(base + lay.w_off),
                      reinterpret_cast<float*>(base + lay.c_off)};
}

// The chunk's w and c (64 floats each, from the padded rows the pre-pass wrote, so always whole
// 16-byte pieces): threads 0-15 copy w, 16-31 c.
__device__ __forceinline__ void issue_row_factor_loads(const FastPassParams& p, float* w, float* c,
                                                       int64_t padded_row0) {
  const int t = static_cast<int>(threadIdx.x);
  if (t >= 2 * kChunk / 4) return;
  const int piece = t % (kChunk / 4);
  const float* from = (t < kChunk / 4 ? p.row_w : p.row_c) + padded_row0 + 4 * piece;
  cp_async_16((t < kChunk / 4 ? w : c) + 4 * piece, from, 16);
}

// cp.async of columns [col0, col0 + tile_cols) of `rows` rows (the rest of the 64 zero-filled)
// into a swizzled [kChunk][tile_cols] tile.
template <class T, int kTileCols>
__device__ void issue_tile_loads(T* dst, const FastOperand& src, int64_t row0, int rows, int col0) {
  constexpr int kPieces = kTileCols / 8;
  const T* base = static_cast<const T*>(src.ptr);
  // Not unrolled: unrolled, the copies' shared-memory addresses were hoisted out of the chunk loop
  // and took the registers that pushed the output kernel past 128 (40 bytes of spills on sm_90).
#pragma unroll 1
  for (int i = static_cast<int>(threadIdx.x); i < kChunk * kPieces; i += kFastThreads) {
    const int r = i / kPieces;
    const int c = (i % kPieces) * 8;
    const bool valid = r < rows && col0 + c < src.cols;
    const T* from = valid ? base + (row0 + r) * src.cols + col0 + c : base;
    cp_async_16(dst + fast_tile_index(r, c, kTileCols), from, valid ? 16 : 0);
  }
}

// The loads of one chunk visit into a stage, as one commit group. padded_row0: the chunk's first
// row in the row factors' layout (the split instance's normalised gradients only).
template <class T, int kDk, bool kNorm>
__device__ void issue_chunk_loads(const FastPassParams& p, const FastStage<T>& st, int64_t row0, int64_t padded_row0,
                                  int rows, int tile_col0, bool with_q, bool with_kv) {
  if (with_q) issue_tile_loads<T, kDk>(st.q, p.qx, row0, rows, 0);
  if (with_kv) {
    issue_tile_loads<T, kDk>(st.k, p.kx, row0, rows, 0);
    issue_tile_loads<T, kFastTile>(st.v, p.vx, row0, rows, tile_col0);
  }
  if (kNorm && p.row_w != nullptr) issue_row_factor_loads(p, st.w, st.c, padded_row0);
  cp_async_commit();
}

__device__ __forceinline__ float fast_feature(FeatureMap map, float x, float inv) {
  return map == FeatureMap::kL2 ? x * inv : (x > 0.0f ? x + 1.0f : expf(x));
}

// phi of the first `cols` columns of one row of a swizzled tile (cols a multiple of 8), in place.
template <class T, int kTileCols>
__device__ void map_tile_row(T* tile, int row, int cols, FeatureMap map, float inv) {
  for (int c = 0; c < cols; c += 8) {
    T* at = tile + fast_tile_index(row, c, kTileCols);
    Pack<T> pack = load_pack(at);
#pragma unroll
    for (int e = 0; e < 8; ++e) pack.v[e] = from_float<T>(fast_feature(map, to_float(pack.v[e]), inv));
    store_pack(at, pack);
  }
}

// 1 / max(|row|, 1e-12) of a row held whole in a swizzled tile.
template <class T, int kTileCols>
__device__ float tile_row_inverse_norm(const T* tile, int row, int cols) {
  float sum = 0.0f;
  for (int c = 0; c < cols; c += 8) {
    const Pack<T> pack = load_pack(tile + fast_tile_index(row, c, kTileCols));
#pragma unroll
    for (int e = 0; e < 8; ++e) sum += to_float(pack.v[e]) * to_float(pack.v[e]);
  }
  return 1.0f / fmaxf(sqrtf(sum), kNormEps);
}

// The same from the row in global memory (the Vx tile holds only kFastTile of its columns).
template <class T>
__device__ float global_row_inverse_norm(const T* row, int cols) {
  float sum = 0.0f;
  for (int c = 0; c < cols; c += 8) {
    const Pack<T> pack = load_pack(row + c);
#pragma unroll
    for (int e = 0; e < 8; ++e) sum += to_float(pack.v[e]) * to_float(pack.v[e]);
  }
  return 1.0f / fmaxf(sqrtf(sum), kNormEps);
}

// Applies the operands' maps to a landed stage: thread r < 64 maps row r of Qx (and of the Vx
// tile), thread 64 + r row r of Kx. Returns whether anything was mapped (a barrier must follow).
template <class T, int kDk>
__device__ bool map_stage(const FastPassParams& p, const FastStage<T>& st, int64_t row0, int rows, int tile_col0,
                          bool with_q, bool with_kv) {
  const bool map_q = with_q && p.qx.map != FeatureMap::kNone;
  const bool map_k = with_kv && p.kx.map != FeatureMap::kNone;
  const bool map_v = with_kv && p.vx.map != FeatureMap::kNone;
  if (!map_q && !map_k && !map_v) return false;
  const int t = static_cast<int>(threadIdx.x);
  const int row = t % kChunk;
  if (row >= rows) return true;
  if (t < kChunk) {
    if (map_q) {
      const float inv = p.qx.map == FeatureMap::kL2 ? tile_row_inverse_norm<T, kDk>(st.q, row, p.kd) : 1.0f;
      map_tile_row<T, kDk>(st.q, row, p.kd, p.qx.map, inv);
    }
    const int v_cols = min_int(kFastTile, p.vx.cols - tile_col0);
    if (map_v && v_cols > 0) {
      const T* raw = static_cast<const T*>(p.vx.ptr) + (row0 + row) * p.vx.cols;
      const float inv = p.vx.map == FeatureMap::kL2 ? global_row_inverse_norm(raw, p.vx.cols) : 1.0f;
      map_tile_row<T, kFastTile>(st.v, row, v_cols, p.vx.map, inv);
    }
  } else if (map_k) {
    const float inv = p.kx.map == FeatureMap::kL2 ? tile_row_inverse_norm<T, kDk>(st.k, row, p.kd) : 1.0f;
    map_tile_row<T, kDk>(st.k, row, p.kd, p.kx.map, inv);
  }
  return true;
}

}  // namespace cuda_detail
}  // namespace linbench
