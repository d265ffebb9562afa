// Parameters and shared-memory layout of the fast chunked pass (fast_pass.cuh), shared by the
// device code and the host side (fast_plan.cuh).
//
// One pass computes, per (bh, tile of kFastTile output columns), walking 64-token chunks:
//   out_c = mask(Qx_c Kx_c^T) Vx_c + Qx_c S_c,   S_{c+1} = S_c + Kx_c^T Vx_c
// (or, bidirectionally, out_c = Qx_c S with the whole sequence's S), the generic pass's product
// (chunked_pass.cuh) without decay. The normalised gradients add its fp32 terms, from two numbers
// a row a pre-pass writes (fast_grad_rows.cuh): w = 1 / (den + eps) and c = -(dO . out):
//   scores A_ij = (Qx_i . Kx_j + a_i b_j) * (k_row_weight ? w_j : 1)
//   output out_i = (A Vx + Qx S + a_i zaug)_i * (q_row_scale ? w_i : 1)
//   state  S += Kx^T diag(w) Vx,  zaug += sum_j w_j b_j Vx_j  (w = 1 without k_row_weight)
// with a and b each 0, 1 or c (AugValue). Its sequence is cut into segments: a state launch
// writes each segment's own Kx^T Vx (and the key sum z, or zaug) to scratch, an output launch
// starts each segment from the sum of the partials before it and walks only its chunks.
#pragma once

#include "pass_params.cuh"
#include "tile_math.cuh"

namespace linbench {
namespace cuda_detail {

constexpr int kFastThreads = 128;             // 4 warps: warp w owns chunk rows [16w, 16w + 16)
constexpr int kFastWarps = kFastThreads / 32;
constexpr int kFastTile = 32;                 // output columns per block (TE)
constexpr int kFastStages = 2;                // chunks in shared memory: the one computed, the one loading
constexpr int kFastMinSegmentChunks = 2;      // a shorter segment costs more than it saves
constexpr int kFastMaxPasses = 3;

static_assert(kChunk == 16 * kFastWarps, "a warp owns 16 rows of a chunk");

// Blocks the register budget allows per SM (__launch_bounds__): 4 x 128 threads at <= 128
// registers for a contraction of 64 (16 warps an SM); 2 at <= 255 for 128, whose shared memory
// allows no more than 2 anyway.
template <int kDk>
constexpr int kFastMinBlocks = kDk <= 64 ? 4 : 2;

// One row-major (bh, seq, cols) operand: cols is a multiple of 8 and the base 16-byte aligned
// (fast_plan.cuh checks), so every 16-byte piece of a row is one cp.async.
struct FastOperand {
  const void* ptr;
  int cols;
  FeatureMap map;
};

struct FastPassParams {
  FastOperand qx, kx, vx;   // vx.cols = the output's width
  void* out;                // (bh, seq, vx.cols)
  float* den_out;           // normalised forward: (bh, seq), written by tile 0
  float* partials;          // [bh][tiles][segs][partial_floats] scratch (state launch writes)
  int kd;                   // contraction width (qx.cols == kx.cols <= the kernel's kDk)
  int num_tiles;            // ceil(vx.cols / kFastTile)
  int n_segs, seg_chunks;   // segment g = chunks [g * seg_chunks, min((g + 1) * seg_chunks, n_chunks))
  int first_block;          // this pass's first block in the launch (blocks of all passes in a row)
  int causal;               // 0: every chunk reads the whole sequence's state
  int reverse;              // walk from the last chunk; the mask keeps key >= query
  int normalize;            // forward: out = num / (den + eps), den = masked row sums + Qx . z (run by
                            // the split instance, kNorm, as the normalised gradients are)
  const float* row_w;       // normalised gradients: w and c of each row, [bh][n_chunks * 64] (rows past
  const float* row_c;       // the sequence 0); nullptr otherwise. Split instance only.
  AugValue q_aug, k_aug;    // a_i and b_j of the rank-one term (both kNone without it)
  int q_row_scale;          // output rows times w_i
  int k_row_weight;         // score columns, state update and zaug terms times w_j
  float out_scale;          // stored outputs times this (v_scale; 1 if none)
  float eps;
};

struct FastArgs {
  FastPassParams pass[kFastMaxPasses];
  int n_passes;
  int64_t bh;
  int64_t seq;
  int n_chunks;
};

// Floats of one segment's partial: its kDk x kFastTile state slice, then z (kDk; the normalised
// gradients keep zaug, kFastTile of them, in its place).
template <int kDk>
constexpr int kFastPartialFloats = kDk * kFastTile + kDk;

// ---- Shared memory (bytes). 16-bit tiles are stored without padding, their 16-byte pieces
// permuted within each row by fast_swizzle so that ldmatrix's eight row reads of a matrix hit
// distinct banks. ----
struct FastSmemLayout {
  int stage_bytes;       // one stage: qx [64][kDk], kx [64][kDk], vx [64][kFastTile] (split: w, c [64] fp32)
  int q_off, k_off, v_off;  // within a stage
  int w_off, c_off;      // within a stage, split only: the chunk's rows' w and c (normalised gradients)
  int copy;              // the state's 16-bit copy: [copies][kDk][kFastTile] (hi), then lo when split
  int copy_bytes;        // one copy
  int copies;            // 2 (double-buffered: no barrier before it is rewritten) or 1 (fast_single_copy)
  int z;                 // split: [kDk] fp32 key sums (the forward), or zaug [kFastTile] (the gradients)
  int scale;             // fp16: [2] the copies' power-of-two factors, then [kFastWarps] the warps' max |S|
  int total;
};

// One copy of the state (a barrier before it is rewritten) when split, and at a contraction of
// 128, where the second copy's 8 KiB would cost A100 a resident block (2 of 80 KiB fit in its
// 164 KiB, not 2 of 88).
__host__ __device__ constexpr bool fast_single_copy(int dk_padded, bool split) { return split || dk_padded > 64; }

// scaled: fp16, whose copy of the state is divided by a power of two to stay in range.
__host__ __device__ constexpr FastSmemLayout make_fast_layout(int dk_padded, int elem_size, bool split,
                                                              bool scaled = false) {
  FastSmemLayout s{};
  s.q_off = 0;
  s.k_off = kChunk * dk_padded * elem_size;
  s.v_off = 2 * s.k_off;
  s.w_off = s.v_off + kChunk * kFastTile * elem_size;
  s.c_off = s.w_off + (split ? kChunk * 4 : 0);
  s.stage_bytes = s.c_off + (split ? kChunk * 4 : 0);
  s.copy = kFastStages * s.stage_bytes;
  s.copy_bytes = dk_padded * kFastTile * elem_size;
  s.copies = fast_single_copy(dk_padded, split) ? 1 : 2;
  s.z = s.copy + s.copy_bytes * (split ? 2 : s.copies);
  s.scale = s.z + (split ? dk_padded * 4 : 0);
  s.total = s.scale + (scaled ? 128 : 0);
  return s;
}

// The 16-byte piece `piece` of row `row` in a row of `pieces` pieces: its place in shared memory.
// 8 or more pieces: piece ^ (row % 8); 4 pieces (kFastTile 16-bit columns): piece ^ (row / 2 % 4),
// which also spreads 8 consecutive rows over the 32 banks.
__host__ __device__ constexpr int fast_swizzle(int row, int piece, int pieces) {
  return pieces >= 8 ? piece ^ (row & 7) : piece ^ ((row >> 1) & 3);
}

// Element offset of (row, col) in a swizzled tile of `cols` 16-bit columns.
__host__ __device__ constexpr int fast_tile_index(int row, int col, int cols) {
  return row * cols + fast_swizzle(row, col >> 3, cols >> 3) * 8 + (col & 7);
}

}  // namespace cuda_detail
}  // namespace linbench
