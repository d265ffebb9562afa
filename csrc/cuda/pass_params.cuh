// Parameters of one chunked pass (chunked_pass.cuh) and its shared-memory layout, shared by the
// device code and the host-side planner (launch_plan.cuh).
#pragma once

#include "linear_attention_launch.h"
#include "tile_math.cuh"

namespace linbench {
namespace cuda_detail {

// A rank-one term a_i b_j that the normalised backward adds to the scores, in fp32 (the
// augmented column of dO' = [dN, dD] and V' = [V, 1], kept off the tensor cores: rounding dD to
// 16 bits costs more accuracy than the cancellations of the normalised gradient can spare).
enum class AugValue : int {
  kNone = 0,
  kOne = 1,               // V' = [V, 1]
  kNegGradOutDotOut = 2,  // -(dO_i . out_i), which times 1 / (den_i + eps) is dD_i
};

// What a load applies to an operand's elements (linear_attention_launch.h's feature_map).
enum class FeatureMap : int {
  kNone = 0,
  kL2 = 1,   // the row divided by max(|row|, 1e-12): needs the row's norm before any slab lands
  kElu1 = 2, // elu(x) + 1, element by element
};

// A row-major (bh, seq, cols) input of the element type, as one operand of the pass.
struct OperandSource {
  const void* ptr;
  int cols;                          // columns = row stride in elements
  FeatureMap map = FeatureMap::kNone;
  int norm_slot = 0;                 // kL2: which of the chunk's two inverse-norm rows it uses
};

// Smallest row norm the L2 map divides by (torch.nn.functional.normalize's default eps).
constexpr float kNormEps = 1e-12f;
constexpr int kNormSlots = 2;  // q and k: the most distinct L2-mapped inputs one pass reads

// One chunked pass (see chunked_pass.cuh). With w_j = 1 / (den_j + eps) for the backward:
//   scores  A_ij = (Qx_i . Kx_j + a_i b_j) * (k_row_weight ? w_j : 1), masked
//   output  out_i = (A Vx + Qx S + a_i zaug)_i * (q_row_scale ? w_i : 1) [/ (den_i + eps) forward]
//   state   S += Kx^T diag(w) Vx,  zaug += sum_j w_j b_j Vx_j
struct PassParams {
  OperandSource qx, kx, vx;  // the output has vx.cols columns
  void* out;                 // (bh, seq, vx.cols), element type
  float* den_out;            // forward with normalize: (bh, seq), written by tile 0
  const float* decay;        // (bh, n_chunks, dim_v) or nullptr
  const void* grad_out;      // backward, normalised: dO, the forward's out, den
  const void* fwd_out;
  const float* den;
  int64_t seq;
  int n_chunks;
  int kd;          // contraction width: qx.cols == kx.cols
  int kd_padded;   // kd rounded up to 16
  int tile_cols;   // TE: output columns per block (16, 32 or 64)
  int slab_cols;   // KS: contraction columns loaded at a time (multiple of 16)
  int num_tiles;   // ceil(vx.cols / TE)
  int dim_v;       // row length of decay, grad_out and fwd_out
  float eps;
  float out_scale;          // the stored outputs times this (v_scale; 1 if none)
  int causal;               // 0: bidirectional
  int reverse;              // walk chunks last to first; the mask keeps j >= i
  int normalize_output;     // forward: out = num / (den + eps), den written
  int decay_on_state_rows;  // decay index = state row (dQ, dK) instead of state column
  AugValue q_aug, k_aug;    // a_i and b_j (both kNone, or both set)
  int q_row_scale;          // output rows times w_i
  int k_row_weight;         // score columns, state update rows and zaug terms times w_j
  int split;                // 16-bit types: scores and state as hi + lo (normalised passes)
  // Sequence split (n_segs > 1): segment g is chunks [g * seg_chunks, (g + 1) * seg_chunks).
  // A first launch writes each segment's own contribution to the state (its partial: state,
  // z, zaug) to `partials`; a second one starts each segment from the earlier segments'
  // partials (earlier in walking order; all of them bidirectionally) and walks only its chunks.
  int n_segs;
  int seg_chunks;
  int partial_floats;  // kd_padded * TE + kd_padded + TE
  float* partials;     // [bh][num_tiles][n_segs][partial_floats], scratch
};

constexpr int kMaxPasses = 3;

enum class Phase : int {
  kOutputs = 0,   // the outputs: of the whole sequence (n_segs == 1) or of one segment
  kPartials = 1,  // split passes only: each segment's partial state
};

struct KernelArgs {
  PassParams pass[kMaxPasses];
  Phase phase;
  int max_segs;  // blockIdx.z = pass * max_segs + segment
};

__host__ __device__ inline bool needs_row_info(const PassParams& p) {
  return p.q_aug == AugValue::kNegGradOutDotOut || p.k_aug == AugValue::kNegGradOutDotOut || p.q_row_scale != 0 ||
         p.k_row_weight != 0;
}

// ---- Shared-memory layout (byte offsets), the same on host (sizing) and device (carving). ----
constexpr int kMaxSlabs = 16;          // kd_padded / slab_cols, at most 512 / 32
constexpr int kMaxStateFloats = 8704;  // kd_padded x TE bound for TE > 16 (272 x 32)

struct SmemLayout {
  int ld_qk, ld_v, ld_af, ld_ae, ld_of, ld_sf, ld_se;  // leading dimensions, in elements
  int qx, kx, vx, a_f, a_e, a_lo, o_f, s_f, s_e, s_lo, z, zaug, zaug_delta;
  int den_acc, row_scale, row_a, row_b, row_w, inv_norm, s_max, s_scale;
  int total;
};

__host__ __device__ inline int take_region(int* offset, int bytes) {
  const int at = *offset;
  *offset = round_up(at + bytes, 128);
  return at;
}

// fp32 inputs (elem_size 4) need no element copies of the scores and the state: a_e and s_e
// alias a_f and s_f, and nothing is split. 16-bit rows are padded by 8 elements (16 bytes) and
// fp32 rows by 4 so consecutive rows start in different banks while staying 32-byte aligned.
__host__ __device__ inline SmemLayout make_smem_layout(int elem_size, int kd_padded, int tile_cols, int slab_cols,
                                                       bool split) {
  const bool f32 = elem_size == 4;
  split = split && !f32;
  const int pad = f32 ? 4 : 8;
  SmemLayout s{};
  s.ld_qk = slab_cols + pad;
  s.ld_v = tile_cols + pad;
  s.ld_af = kChunk + 4;
  s.ld_ae = f32 ? s.ld_af : kChunk + pad;
  s.ld_of = tile_cols + 4;
  s.ld_sf = tile_cols + 4;
  s.ld_se = f32 ? s.ld_sf : tile_cols + pad;
  int off = 0;
  s.qx = take_region(&off, kChunk * s.ld_qk * elem_size);
  s.kx = take_region(&off, kChunk * s.ld_qk * elem_size);
  s.vx = take_region(&off, kChunk * s.ld_v * elem_size);
  s.a_f = take_region(&off, kChunk * s.ld_af * 4);
  s.a_e = f32 ? s.a_f : take_region(&off, kChunk * s.ld_ae * elem_size);
  s.a_lo = split ? take_region(&off, kChunk * s.ld_ae * elem_size) : s.a_e;
  s.o_f = take_region(&off, kChunk * s.ld_of * 4);
  s.s_f = take_region(&off, kd_padded * s.ld_sf * 4);
  s.s_e = f32 ? s.s_f : take_region(&off, kd_padded * s.ld_se * elem_size);
  s.s_lo = split ? take_region(&off, kd_padded * s.ld_se * elem_size) : s.s_e;
  s.z = take_region(&off, kd_padded * 4);
  s.zaug = take_region(&off, tile_cols * 4);
  s.zaug_delta = take_region(&off, tile_cols * 4);
  s.den_acc = take_region(&off, kChunk * 4);
  s.row_scale = take_region(&off, kChunk * 4);
  s.row_a = take_region(&off, kChunk * 4);
  s.row_b = take_region(&off, kChunk * 4);
  s.row_w = take_region(&off, kChunk * 4);
  s.inv_norm = take_region(&off, kNormSlots * kChunk * 4);
  s.s_max = take_region(&off, kMaxSlabs * 4);
  s.s_scale = take_region(&off, kMaxSlabs * 4);
  s.total = off;
  return s;
}

}  // namespace cuda_detail
}  // namespace linbench
