// One generic chunked pass that both the forward and the three backward products run.
//
//   out_tile (rows of a chunk x TE columns) = mask(Qx Kx^T) Vx_tile + Qx S        (causal)
//   S (kd x TE, fp32)                       += Kx^T Vx_tile                        after each chunk
//
// walking the chunks in order (or in reverse, with the mask flipped), or, bidirectionally,
// out = Qx (Kx^T Vx) with the whole sequence's state. With Qx = Q, Kx = K, Vx = V it is the
// forward; the gradients are the same product with other operands (linear_attention_backward.cu),
// plus, for the normalised backward, a rank-one term and per-row weights applied in fp32
// (PassParams, pass_params.cuh).
//
// One block owns one (bh, tile of TE output columns) pair, keeps its kd x TE slice of the
// state in shared memory (fp32, plus a copy in the element type that feeds the tensor cores)
// and walks all chunks; the contraction dimension kd is streamed in slabs of KS columns so
// that the shared memory does not grow with kd beyond the state itself. When bh x tiles blocks
// leave SMs idle, the sequence is split into segments, one block each, seeded from the partial
// states of the segments before them (PassParams::n_segs; launch_plan.cuh).
#pragma once

#include "pass_params.cuh"
#include "tile_math.cuh"

namespace linbench {
namespace cuda_detail {

// Typed views of the block's shared memory.
template <class T>
struct PassSmem {
  SmemLayout lay;
  T* qx;             // chunk x KS slab of Qx
  T* kx;             // chunk x KS slab of Kx
  T* vx;             // chunk x TE tile of Vx
  float* a_f;        // chunk x chunk scores, fp32
  T* a_e;            // masked scores in the element type (hi half when split)
  T* a_lo;           // lo half of the split scores
  float* o_f;        // chunk x TE output accumulator
  float* s_f;        // kd_padded x TE state, fp32 (the one carried across chunks)
  T* s_e;            // the state in the element type (hi half when split; fp16: scaled down)
  T* s_lo;           // lo half of the split state
  float* z;          // kd_padded: sum of Kx rows so far (forward normaliser)
  float* zaug;       // TE: sum of w_j b_j Vx_j so far (the state's augmented row)
  float* zaug_delta; // TE: this chunk's share of zaug, added when the next chunk starts
  float* den_acc;    // chunk: normaliser of each row (forward)
  float* row_scale;  // chunk: w_i for the output rows
  float* row_a;      // chunk: a_i
  float* row_b;      // chunk: b_j
  float* row_w;      // chunk: w_j for the score columns and the state update
  float* inv_norm;   // kNormSlots x chunk: 1 / max(|row|, 1e-12) of the L2-mapped inputs' rows
  unsigned* s_max;   // per slab: max |state| bits (fp16 scaling)
  float* s_scale;    // per slab: the factor s_e was divided by
};

template <class T>
__device__ PassSmem<T> carve_smem(const PassParams& p) {
  unsigned char* base = dynamic_shared_memory();
  PassSmem<T> s;
  s.lay = make_smem_layout(static_cast<int>(sizeof(T)), p.kd_padded, p.tile_cols, p.slab_cols, p.split != 0);
  s.qx = reinterpret_cast<T*>(base + s.lay.qx);
  s.kx = reinterpret_cast<T*>(base + s.lay.kx);
  s.vx = reinterpret_cast<T*>(base + s.lay.vx);
  s.a_f = reinterpret_cast<float*>(base + s.lay.a_f);
  s.a_e = reinterpret_cast<T*>(base + s.lay.a_e);
  s.a_lo = reinterpret_cast<T*>(base + s.lay.a_lo);
  s.o_f = reinterpret_cast<float*>(base + s.lay.o_f);
  s.s_f = reinterpret_cast<float*>(base + s.lay.s_f);
  s.s_e = reinterpret_cast<T*>(base + s.lay.s_e);
  s.s_lo = reinterpret_cast<T*>(base + s.lay.s_lo);
  s.z = reinterpret_cast<float*>(base + s.lay.z);
  s.zaug = reinterpret_cast<float*>(base + s.lay.zaug);
  s.zaug_delta = reinterpret_cast<float*>(base + s.lay.zaug_delta);
  s.den_acc = reinterpret_cast<float*>(base + s.lay.den_acc);
  s.row_scale = reinterpret_cast<float*>(base + s.lay.row_scale);
  s.row_a = reinterpret_cast<float*>(base + s.lay.row_a);
  s.row_b = reinterpret_cast<float*>(base + s.lay.row_b);
  s.row_w = reinterpret_cast<float*>(base + s.lay.row_w);
  s.inv_norm = reinterpret_cast<float*>(base + s.lay.inv_norm);
  s.s_max = reinterpret_cast<unsigned*>(base + s.lay.s_max);
  s.s_scale = reinterpret_cast<float*>(base + s.lay.s_scale);
  return s;
}

// Whether the pass splits operands: only 16-bit element types have anything to split.
template <class T>
__device__ __forceinline__ bool splits(const PassParams& p) {
  return !kIsFloat<T> && p.split != 0;
}

// What one visit of a chunk does.
struct ChunkWork {
  bool read_state;    // out += Qx S (the state holds earlier chunks, or the whole sequence)
  bool intra;         // out += mask(A) Vx within the chunk
  bool update_state;  // S += Kx^T diag(w) Vx
  bool finalize;      // after the update: decay S (and refresh its element copies, below)
  bool refresh_copy;  // finalize refreshes s_e (and s_lo): S is read by a later chunk of this block
  bool write_out;     // store the output rows
  int decay_chunk;    // decay[bh, decay_chunk] scales the state at finalize (-1: none)
  int next_chunk;     // chunk to prefetch into L2 (-1: none)
};

// phi(x) of one element, in fp32 (inv: the row's inverse norm, for kL2).
__device__ __forceinline__ float apply_feature_map(FeatureMap map, float x, float inv) {
  if (map == FeatureMap::kL2) return x * inv;
  if (map == FeatureMap::kElu1) return x > 0.0f ? x + 1.0f : expf(x);
  return x;
}

// Copies columns [col0, col0 + width) of the chunk's 64 rows into a row-major shared tile, with
// the operand's feature map applied in fp32 and rounded once to T (as mapping in fp32 first and
// converting would); rows past the sequence and columns past the operand read as zero (not
// phi(0): elu + 1 of a padding zero would be 1). 16-byte loads where the row stride and the base
// allow them, element by element elsewhere. `inv_norm`: the chunk's inverse row norms (kL2).
template <class T>
__device__ void load_operand_tile(T* dst, int ld_dst, const OperandSource& src, int64_t row0, int rows, int col0,
                                  int width, const float* inv_norm) {
  constexpr int V = kPack<T>;
  const T* base = static_cast<const T*>(src.ptr);
  const bool vector_ok = src.cols % V == 0 && is_aligned_16(base);
  const bool mapped = src.map != FeatureMap::kNone;
  const int packs_per_row = width / V;
  for (int g = static_cast<int>(threadIdx.x); g < kChunk * packs_per_row; g += kThreads) {
    const int r = g / packs_per_row;
    const int c = (g % packs_per_row) * V;
    const int col = col0 + c;
    Pack<T> pack;
    if (r < rows && vector_ok && col + V <= src.cols) {
      pack = load_pack(base + (row0 + r) * src.cols + col);
      if (mapped) {
        const float inv = src.map == FeatureMap::kL2 ? inv_norm[r] : 1.0f;
#pragma unroll
        for (int e = 0; e < V; ++e) pack.v[e] = from_float<T>(apply_feature_map(src.map, to_float(pack.v[e]), inv));
      }
    } else {
      const float inv = r < rows && src.map == FeatureMap::kL2 ? inv_norm[r] : 1.0f;
#pragma unroll
      for (int e = 0; e < V; ++e)
        pack.v[e] = (r < rows && col + e < src.cols)
                        ? from_float<T>(apply_feature_map(src.map, to_float(base[(row0 + r) * src.cols + col + e]), inv))
                        : from_float<T>(0.0f);
    }
    store_pack(dst + r * ld_dst + c, pack);
  }
}

// inv_norm[r] = 1 / max(|row r|, kNormEps) of the chunk's rows of `src` in fp32 (0 past the
// sequence), one warp per row: the whole row is read once more (from L2: the slab loads that
// follow read the same lines) so that slabs narrower than the row can be mapped as they land.
template <class T>
__device__ void compute_inverse_norms(const OperandSource& src, int64_t row0, int rows, float* inv_norm) {
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const T* base = static_cast<const T*>(src.ptr);
  for (int r = warp; r < kChunk; r += kWarps) {
    float sum = 0.0f;
    if (r < rows)  // uniform over the warp
      for (int e = lane; e < src.cols; e += 32) {
        const float x = to_float(base[(row0 + r) * src.cols + e]);
        sum += x * x;
      }
    sum = warp_sum(sum);
    if (lane == 0) inv_norm[r] = r < rows ? 1.0f / fmaxf(sqrtf(sum), kNormEps) : 0.0f;
  }
}

// The inverse norms of every L2-mapped operand this chunk visit loads, each into its slot.
template <class T>
__device__ void compute_chunk_norms(const PassParams& p, const PassSmem<T>& sm, int64_t row0, int rows, bool uses_q,
                                    bool uses_kv) {
  const OperandSource* sources[3] = {&p.qx, &p.kx, &p.vx};
  const bool used[3] = {uses_q, uses_kv, uses_kv};
  for (int i = 0; i < 3; ++i)
    if (used[i] && sources[i]->map == FeatureMap::kL2)
      compute_inverse_norms<T>(*sources[i], row0, rows, sm.inv_norm + sources[i]->norm_slot * kChunk);
}

// The inverse-norm row an operand's loads read (nullptr unless it is L2-mapped).
template <class T>
__device__ __forceinline__ const float* norms_of(const OperandSource& src, const PassSmem<T>& sm) {
  return src.map == FeatureMap::kL2 ? sm.inv_norm + src.norm_slot * kChunk : nullptr;
}

// L2 prefetch of `rows` whole rows of a row-major input, starting at row0.
__device__ __forceinline__ void prefetch_rows(const void* ptr, int cols, int elem_size, int64_t row0, int rows) {
  if (ptr == nullptr) return;
  const char* start = static_cast<const char*>(ptr) + row0 * cols * elem_size;
  const int64_t bytes = static_cast<int64_t>(rows) * cols * elem_size;
  for (int64_t off = static_cast<int64_t>(threadIdx.x) * 128; off < bytes; off += kThreads * 128)
    prefetch_l2(start + off);
}

__device__ __forceinline__ int chunk_rows(const PassParams& p, int chunk) {
  const int64_t left = p.seq - static_cast<int64_t>(chunk) * kChunk;
  return static_cast<int>(left < kChunk ? left : kChunk);
}

template <class T>
__device__ void prefetch_chunk(const PassParams& p, int64_t bh, int chunk, bool q, bool kv) {
  const int64_t row0 = bh * p.seq + static_cast<int64_t>(chunk) * kChunk;
  const int rows = chunk_rows(p, chunk);
  constexpr int es = static_cast<int>(sizeof(T));
  if (q) prefetch_rows(p.qx.ptr, p.qx.cols, es, row0, rows);
  if (kv) prefetch_rows(p.kx.ptr, p.kx.cols, es, row0, rows);
  if (kv) prefetch_rows(p.vx.ptr, p.vx.cols, es, row0, rows);
  if (p.q_aug == AugValue::kNegGradOutDotOut || p.k_aug == AugValue::kNegGradOutDotOut) {
    prefetch_rows(p.grad_out, p.dim_v, es, row0, rows);
    prefetch_rows(p.fwd_out, p.dim_v, es, row0, rows);
  }
}

__device__ __forceinline__ float aug_value(AugValue kind, float neg_dot) {
  return kind == AugValue::kOne ? 1.0f : (kind == AugValue::kNegGradOutDotOut ? neg_dot : 0.0f);
}

// Backward, normalised: per chunk row, w = 1 / (den + eps) and the rank-one factors a, b, with
// -(dO . out) in fp32 (zero for rows past the sequence). One warp per row.
template <class T>
__device__ void compute_row_info(const PassParams& p, const PassSmem<T>& sm, int64_t row0, int rows) {
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const bool want_dot = p.q_aug == AugValue::kNegGradOutDotOut || p.k_aug == AugValue::kNegGradOutDotOut;
  const T* grad_out = static_cast<const T*>(p.grad_out);
  const T* fwd_out = static_cast<const T*>(p.fwd_out);
  for (int r = warp; r < kChunk; r += kWarps) {
    float w = 0.0f, neg_dot = 0.0f;
    const bool valid = r < rows;  // uniform over the warp
    if (valid) {
      if (p.q_row_scale || p.k_row_weight) w = 1.0f / (p.den[row0 + r] + p.eps);
      if (want_dot) {
        const int64_t at = (row0 + r) * p.dim_v;
        float dot = 0.0f;
        for (int e = lane; e < p.dim_v; e += 32) dot += to_float(grad_out[at + e]) * to_float(fwd_out[at + e]);
        neg_dot = -warp_sum(dot);
      }
    }
    if (lane == 0) {
      sm.row_scale[r] = w;
      sm.row_w[r] = w;
      sm.row_a[r] = valid ? aug_value(p.q_aug, neg_dot) : 0.0f;
      sm.row_b[r] = valid ? aug_value(p.k_aug, neg_dot) : 0.0f;
    }
  }
}

// den_i += Qx_i . z over one slab (4 lanes per row).
template <class T>
__device__ void add_query_dot_key_sum(const T* qx, int ld, int width, const float* z, float* den_acc) {
  const int r = static_cast<int>(threadIdx.x) / 4;
  const int part = static_cast<int>(threadIdx.x) % 4;
  float sum = 0.0f;
  for (int j = part; j < width; j += 4) sum += to_float(qx[r * ld + j]) * z[j];
  sum = sum_over_row_lanes(sum);
  if (part == 0) den_acc[r] += sum;
}

// z += column sums of the Kx slab.
template <class T>
__device__ void add_key_column_sums(const T* kx, int ld, int width, float* z) {
  for (int j = static_cast<int>(threadIdx.x); j < width; j += kThreads) {
    float sum = 0.0f;
    for (int r = 0; r < kChunk; ++r) sum += to_float(kx[r * ld + j]);
    z[j] += sum;
  }
}

// Kx slab rows times w_j for the state update (the scores took w_j in fp32, from the unweighted
// Kx): the product goes back into kx, or, split, its hi half into kx and its lo half into `low`.
template <class T>
__device__ void weight_key_rows(T* kx, T* low, int ld, int width, const float* row_w, bool split) {
  for (int idx = static_cast<int>(threadIdx.x); idx < kChunk * width; idx += kThreads) {
    const int r = idx / width;
    const int j = idx % width;
    const float x = to_float(kx[r * ld + j]) * row_w[r];
    const T high = split_high<T>(x);
    kx[r * ld + j] = high;
    if (split) low[r * ld + j] = split_low<T>(x, high);
  }
}

// zaug_delta[e] = sum_j w_j b_j Vx_je over the chunk, fp32.
template <class T>
__device__ void augmented_row_of_chunk(const PassParams& p, const PassSmem<T>& sm) {
  for (int e = static_cast<int>(threadIdx.x); e < p.tile_cols; e += kThreads) {
    float sum = 0.0f;
    for (int r = 0; r < kChunk; ++r) {
      const float b = p.k_row_weight ? sm.row_b[r] * sm.row_w[r] : sm.row_b[r];
      sum += b * to_float(sm.vx[r * sm.lay.ld_v + e]);
    }
    sm.zaug_delta[e] = sum;
  }
}

// The fp32 scores become the tensor-core operand: plus the rank-one term a_i b_j, times the
// column weights w_j, causal mask (j <= i, or j >= i walking in reverse), converted (split into
// hi + lo when asked); the masked row sums go to the forward's normaliser. Rows and columns past
// the sequence are zero already (their operand rows are, and so are a_i, b_j). 4 lanes per row.
template <class T>
__device__ void prepare_scores(const PassParams& p, const PassSmem<T>& sm) {
  const int r = static_cast<int>(threadIdx.x) / 4;
  const int c0 = (static_cast<int>(threadIdx.x) % 4) * 16;
  const bool aug = p.q_aug != AugValue::kNone;
  const bool split = splits<T>(p);
  const float a = aug ? sm.row_a[r] : 0.0f;
  float sum = 0.0f;
#pragma unroll 4
  for (int j = c0; j < c0 + 16; ++j) {
    float x = sm.a_f[r * sm.lay.ld_af + j];
    if (aug) x += a * sm.row_b[j];
    if (p.k_row_weight) x *= sm.row_w[j];
    const bool keep = p.reverse ? j >= r : j <= r;
    x = keep ? x : 0.0f;
    sum += x;
    const T high = split_high<T>(x);
    sm.a_e[r * sm.lay.ld_ae + j] = high;  // in place for fp32 (a_e == a_f): same thread, same element
    if (split) sm.a_lo[r * sm.lay.ld_ae + j] = split_low<T>(x, high);
  }
  if (p.normalize_output) {
    sum = sum_over_row_lanes(sum);
    if (threadIdx.x % 4 == 0) sm.den_acc[r] += sum;
  }
}

// After the state rows [row0, row0 + rows) were updated: scale them by the decay of the next
// chunk, then refresh their element-type copy (hi, and lo when split). fp16 cannot hold a state
// that grows with the sequence (65504 max), so its copy is divided by a power of two that brings
// the slab's largest entry under 2^14, and the product Qx s_e is multiplied back (s_scale).
// bf16 has the fp32 exponent range and fp32 needs no copy.
template <class T>
__device__ void finalize_state_rows(const PassParams& p, const PassSmem<T>& sm, int64_t bh, int tile_col0, int row0,
                                    int rows, int slab, int decay_chunk, bool refresh) {
  const int te = p.tile_cols;
  const bool split = splits<T>(p);
  const float* decay = (p.decay != nullptr && decay_chunk >= 0)
                           ? p.decay + (bh * p.n_chunks + decay_chunk) * static_cast<int64_t>(p.dim_v)
                           : nullptr;
  float local_max = 0.0f;
  for (int idx = static_cast<int>(threadIdx.x); idx < rows * te; idx += kThreads) {
    const int r = row0 + idx / te;
    const int j = idx % te;
    float x = sm.s_f[r * sm.lay.ld_sf + j];
    if (decay != nullptr) {
      const int e = p.decay_on_state_rows ? r : tile_col0 + j;
      if (e < p.dim_v) {
        x *= decay[e];
        sm.s_f[r * sm.lay.ld_sf + j] = x;
      }
    }
    if constexpr (kIsHalf<T>) {
      local_max = fmaxf(local_max, fabsf(x));
    } else if constexpr (!kIsFloat<T>) {
      if (refresh) {
        const T high = split_high<T>(x);
        sm.s_e[r * sm.lay.ld_se + j] = high;
        if (split) sm.s_lo[r * sm.lay.ld_se + j] = split_low<T>(x, high);
      }
    }
  }
  if (!refresh) return;  // uniform over the block
  if constexpr (kIsHalf<T>) {
    local_max = warp_max(local_max);
    if (threadIdx.x % 32 == 0) atomicMax(&sm.s_max[slab], __float_as_uint(local_max));  // non-negative floats
    __syncthreads();                                                                    // order as unsigned
    // max < 2^exponent with exponent = biased exponent - 126 (frexpf's, without its pointer
    // argument and the stack slot it costs); zero and subnormal maxima need no shift.
    const int exponent = static_cast<int>((sm.s_max[slab] >> 23) & 0xffu) - 126;
    const int shift = exponent > 14 ? exponent - 14 : 0;
    const float down = ldexpf(1.0f, -shift);
    for (int idx = static_cast<int>(threadIdx.x); idx < rows * te; idx += kThreads) {
      const int r = row0 + idx / te;
      const int j = idx % te;
      const float x = sm.s_f[r * sm.lay.ld_sf + j] * down;
      const T high = split_high<T>(x);
      sm.s_e[r * sm.lay.ld_se + j] = high;
      if (split) sm.s_lo[r * sm.lay.ld_se + j] = split_low<T>(x, high);
    }
    if (threadIdx.x == 0) sm.s_scale[slab] = ldexpf(1.0f, shift);
  }
}

// Output rows: plus a_i zaug, times w_i, divided by the normaliser, converted and stored; tile 0
// also writes den.
template <class T>
__device__ void store_output_tile(const PassParams& p, const PassSmem<T>& sm, int64_t row0, int rows, int tile_col0,
                                  int tile) {
  constexpr int V = kPack<T>;
  T* out = static_cast<T*>(p.out);
  const int td = p.vx.cols;
  const bool aug = p.q_aug != AugValue::kNone;
  const bool vector_ok = td % V == 0 && is_aligned_16(out);
  const int packs_per_row = p.tile_cols / V;
  for (int g = static_cast<int>(threadIdx.x); g < kChunk * packs_per_row; g += kThreads) {
    const int r = g / packs_per_row;
    const int c = (g % packs_per_row) * V;
    const int col = tile_col0 + c;
    if (r >= rows || col >= td) continue;
    float scale = p.out_scale * (p.q_row_scale ? sm.row_scale[r] : 1.0f);
    if (p.normalize_output) scale /= sm.den_acc[r] + p.eps;
    const float a = aug ? sm.row_a[r] : 0.0f;
    float v[V];
#pragma unroll
    for (int e = 0; e < V; ++e) {
      float x = sm.o_f[r * sm.lay.ld_of + c + e];
      if (aug) x += a * sm.zaug[c + e];
      v[e] = x * scale;
    }
    T* dst = out + (row0 + r) * td + col;
    if (vector_ok && col + V <= td) {
      Pack<T> pack;
#pragma unroll
      for (int e = 0; e < V; ++e) pack.v[e] = from_float<T>(v[e]);
      store_pack(dst, pack);
    } else {
#pragma unroll
      for (int e = 0; e < V; ++e)
        if (col + e < td) dst[e] = from_float<T>(v[e]);
    }
  }
  if (p.normalize_output && tile == 0)
    for (int r = static_cast<int>(threadIdx.x); r < rows; r += kThreads) p.den_out[row0 + r] = sm.den_acc[r];
}

// One visit of chunk c. Phases are separated by block barriers; within a phase, the buffers
// written and read are disjoint (noted per phase).
template <class T>
__device__ void process_chunk(const PassParams& p, const PassSmem<T>& sm, int64_t bh, int tile, int c,
                              const ChunkWork& w) {
  const SmemLayout& lay = sm.lay;
  const int tile_col0 = tile * p.tile_cols;
  const int te = p.tile_cols;
  const int64_t row0 = bh * p.seq + static_cast<int64_t>(c) * kChunk;
  const int rows = chunk_rows(p, c);
  const bool uses_q = w.intra || w.read_state;
  const bool uses_kv = w.intra || w.update_state;
  const bool aug = p.q_aug != AugValue::kNone;
  const bool split = splits<T>(p);
  const float lo_alpha = 1.0f / kSplitScale<T>;

  // Per-row factors, the normaliser accumulator, and the previous chunk's share of zaug (read by
  // the loaders' consumers and the epilogue, after the barrier).
  if (needs_row_info(p)) compute_row_info<T>(p, sm, row0, rows);
  if (p.normalize_output)
    for (int r = static_cast<int>(threadIdx.x); r < kChunk; r += kThreads) sm.den_acc[r] = 0.0f;
  if (aug)
    for (int e = static_cast<int>(threadIdx.x); e < te; e += kThreads) {
      sm.zaug[e] += sm.zaug_delta[e];
      sm.zaug_delta[e] = 0.0f;
    }
  compute_chunk_norms<T>(p, sm, row0, rows, uses_q, uses_kv);
  if (w.next_chunk >= 0) prefetch_chunk<T>(p, bh, w.next_chunk, uses_q, uses_kv);
  __syncthreads();

  const int n_slabs = ceil_div(p.kd_padded, p.slab_cols);
  for (int s = 0; s < n_slabs; ++s) {
    const int col0 = s * p.slab_cols;
    const int width = min_int(p.slab_cols, p.kd_padded - col0);
    // Load: writes qx, kx (read by the previous slab's products, finished) and vx.
    if (uses_q) load_operand_tile(sm.qx, lay.ld_qk, p.qx, row0, rows, col0, width, norms_of(p.qx, sm));
    if (uses_kv) load_operand_tile(sm.kx, lay.ld_qk, p.kx, row0, rows, col0, width, norms_of(p.kx, sm));
    if (uses_kv && s == 0) load_operand_tile(sm.vx, lay.ld_v, p.vx, row0, rows, tile_col0, te, norms_of(p.vx, sm));
    __syncthreads();
    // Products that read the state as it was before this chunk: writes a_f, o_f, den_acc.
    if (w.intra)
      block_gemm<false, true>(sm.a_f, lay.ld_af, sm.qx, lay.ld_qk, sm.kx, lay.ld_qk, kChunk, kChunk, width, s > 0,
                              1.0f);
    if (w.read_state) {
      block_gemm<false, false>(sm.o_f, lay.ld_of, sm.qx, lay.ld_qk, sm.s_e + col0 * lay.ld_se, lay.ld_se, kChunk, te,
                               width, s > 0, sm.s_scale[s], split,
                               SecondProduct<T>{nullptr, sm.s_lo + col0 * lay.ld_se, lo_alpha});
      if (p.normalize_output) add_query_dot_key_sum(sm.qx, lay.ld_qk, width, sm.z + col0, sm.den_acc);
    }
    if (kIsHalf<T> && w.refresh_copy && threadIdx.x == 0) sm.s_max[s] = 0u;
    __syncthreads();
    if (w.update_state) {
      // With weights, kx becomes diag(w) Kx (split: hi in kx, lo in qx, which the products above
      // were the last to read).
      const bool split_keys = p.k_row_weight && split;
      if (p.k_row_weight) {
        weight_key_rows(sm.kx, sm.qx, lay.ld_qk, width, sm.row_w, split_keys);
        __syncthreads();
      }
      // The state's slab rows absorb the chunk: writes s_f (rows of this slab), z, zaug_delta.
      block_gemm<true, false>(sm.s_f + col0 * lay.ld_sf, lay.ld_sf, sm.kx, lay.ld_qk, sm.vx, lay.ld_v, width, te,
                              kChunk, true, 1.0f, split_keys, SecondProduct<T>{sm.qx, nullptr, lo_alpha});
      if (p.normalize_output) add_key_column_sums(sm.kx, lay.ld_qk, width, sm.z + col0);
      if (aug && s == 0) augmented_row_of_chunk(p, sm);
      __syncthreads();
      // Writes s_f, s_e, s_lo, s_scale of this slab's rows only; runs alongside the next slab's loads.
      if (w.finalize) finalize_state_rows(p, sm, bh, tile_col0, col0, width, s, w.decay_chunk, w.refresh_copy);
    }
  }

  if (w.intra) {
    // Every slab's scores are in a_f. Writes a_e, a_lo (a_f itself for fp32), den_acc.
    prepare_scores(p, sm);
    __syncthreads();
    block_gemm<false, false>(sm.o_f, lay.ld_of, sm.a_e, lay.ld_ae, sm.vx, lay.ld_v, kChunk, te, kChunk, w.read_state,
                             1.0f, split, SecondProduct<T>{sm.a_lo, nullptr, lo_alpha});
    __syncthreads();
  }
  if (w.write_out) store_output_tile(p, sm, row0, rows, tile_col0, tile);
  __syncthreads();  // the next chunk overwrites every buffer read above
}

// Empty state, empty sums, unit fp16 scales.
template <class T>
__device__ void clear_pass_state(const PassParams& p, const PassSmem<T>& sm) {
  for (int i = static_cast<int>(threadIdx.x); i < p.kd_padded * sm.lay.ld_sf; i += kThreads) sm.s_f[i] = 0.0f;
  if constexpr (!kIsFloat<T>) {
    for (int i = static_cast<int>(threadIdx.x); i < p.kd_padded * sm.lay.ld_se; i += kThreads) {
      sm.s_e[i] = from_float<T>(0.0f);
      sm.s_lo[i] = from_float<T>(0.0f);
    }
  }
  for (int i = static_cast<int>(threadIdx.x); i < p.kd_padded; i += kThreads) sm.z[i] = 0.0f;
  for (int i = static_cast<int>(threadIdx.x); i < p.tile_cols; i += kThreads) {
    sm.zaug[i] = 0.0f;
    sm.zaug_delta[i] = 0.0f;
  }
  for (int i = static_cast<int>(threadIdx.x); i < kMaxSlabs; i += kThreads) {
    sm.s_scale[i] = 1.0f;
    sm.s_max[i] = 0u;
  }
  __syncthreads();
}

// A walk over chunks [first, last] (from last to first when p.reverse):
//   kCausal: each chunk reads the state (but the first, when `state_empty`), adds its own
//            masked scores and, but for the last, updates the state for the next;
//   kAbsorb: each chunk only updates the state, nothing is written. With `decay`, the state
//            decays at every chunk boundary it passes, the last one included (a split pass's
//            partial is the state as the next segment's first chunk sees it); `refresh_last`
//            leaves the element copies of the final state ready to be read;
//   kRead:   each chunk reads the (whole-sequence) state.
enum class Walk : int { kCausal, kAbsorb, kRead };

struct WalkJob {
  Walk mode;
  int first, last;
  bool state_empty;   // kCausal
  bool decay;         // kAbsorb
  bool refresh_last;  // kAbsorb
};

template <class T>
__device__ void walk_chunks(const PassParams& p, const PassSmem<T>& sm, int64_t bh, int tile, const WalkJob& job) {
  const int n = job.last - job.first + 1;
  const bool causal = job.mode == Walk::kCausal;
  const bool absorb = job.mode == Walk::kAbsorb;
  for (int step = 0; step < n; ++step) {
    const int c = p.reverse ? job.last - step : job.first + step;
    const bool final_chunk = step + 1 == n;
    ChunkWork w;
    w.read_state = job.mode == Walk::kRead || (causal && (step > 0 || !job.state_empty));
    w.intra = causal;
    w.update_state = absorb || (causal && !final_chunk);
    w.refresh_copy = causal ? !final_chunk : (absorb && job.refresh_last && final_chunk);
    w.finalize = w.refresh_copy || (absorb && job.decay);
    w.write_out = !absorb;
    // The state passing from chunk c to the next one decays with the later chunk's factor.
    w.decay_chunk = (causal || job.decay) ? (p.reverse ? c : c + 1) : -1;
    w.next_chunk = final_chunk ? -1 : (p.reverse ? c - 1 : c + 1);
    process_chunk(p, sm, bh, tile, c, w);
  }
}

// Refreshes the element copies of the whole state (no decay), after it was set directly.
template <class T>
__device__ void refresh_state_copies(const PassParams& p, const PassSmem<T>& sm, int64_t bh, int tile_col0) {
  const int n_slabs = ceil_div(p.kd_padded, p.slab_cols);
  for (int s = 0; s < n_slabs; ++s) {
    const int row0 = s * p.slab_cols;
    finalize_state_rows(p, sm, bh, tile_col0, row0, min_int(p.slab_cols, p.kd_padded - row0), s, -1, true);
  }
  __syncthreads();
}

// ---- Split passes ----

__device__ __forceinline__ int segment_walk_index(const PassParams& p, int seg) {
  return p.reverse ? p.n_segs - 1 - seg : seg;
}

__device__ __forceinline__ int segment_first_chunk(const PassParams& p, int seg) { return seg * p.seg_chunks; }

__device__ __forceinline__ int segment_last_chunk(const PassParams& p, int seg) {
  const int end = (seg + 1) * p.seg_chunks;
  return (end < p.n_chunks ? end : p.n_chunks) - 1;
}

__device__ __forceinline__ float* partial_record(const PassParams& p, int64_t bh, int tile, int seg) {
  return p.partials + ((bh * p.num_tiles + tile) * p.n_segs + seg) * static_cast<int64_t>(p.partial_floats);
}

// Launch 1 stores the state segment `seg` adds (walked by absorb_job below), as the segment
// after it in walking order sees it, with z and zaug. The last segment's is never read (causal).
__device__ __forceinline__ bool partial_needed(const PassParams& p, int seg) {
  return !p.causal || segment_walk_index(p, seg) != p.n_segs - 1;
}

template <class T>
__device__ void store_segment_partial(const PassParams& p, const PassSmem<T>& sm, int64_t bh, int tile, int seg) {
  float* rec = partial_record(p, bh, tile, seg);
  const int te = p.tile_cols;
  const int state = p.kd_padded * te;
  for (int idx = static_cast<int>(threadIdx.x); idx < state; idx += kThreads)
    rec[idx] = sm.s_f[(idx / te) * sm.lay.ld_sf + idx % te];
  for (int r = static_cast<int>(threadIdx.x); r < p.kd_padded; r += kThreads) rec[state + r] = sm.z[r];
  for (int e = static_cast<int>(threadIdx.x); e < te; e += kThreads)  // the last chunk's share is pending
    rec[state + p.kd_padded + e] = sm.zaug[e] + sm.zaug_delta[e];
}

// Adds segment g's partial to the state: S = D_g (.) S + T_g, where D_g, with decay, is the
// product of the decays of the chunk boundaries the incoming state passes inside segment g
// (chunks first+1 .. last+1 walking forward, first .. last walking back), per state column
// (or row). `scratch` holds those products (a_f is free before the chunks are walked).
template <class T>
__device__ void fold_segment_partial(const PassParams& p, const PassSmem<T>& sm, int64_t bh, int tile, int g,
                                     float* scratch) {
  const float* rec = partial_record(p, bh, tile, g);
  const int te = p.tile_cols;
  const int tile_col0 = tile * te;
  const int state = p.kd_padded * te;
  const bool decay = p.decay != nullptr;
  if (decay) {
    const int first = segment_first_chunk(p, g) + (p.reverse ? 0 : 1);
    const int last = segment_last_chunk(p, g) + (p.reverse ? 0 : 1);
    const int count = p.decay_on_state_rows ? p.kd_padded : te;
    for (int i = static_cast<int>(threadIdx.x); i < count; i += kThreads) {
      const int e = p.decay_on_state_rows ? i : tile_col0 + i;
      float product = 1.0f;
      if (e < p.dim_v)
        for (int c = first; c <= last; ++c)
          product *= p.decay[(bh * p.n_chunks + c) * static_cast<int64_t>(p.dim_v) + e];
      scratch[i] = product;
    }
    __syncthreads();
  }
  for (int idx = static_cast<int>(threadIdx.x); idx < state; idx += kThreads) {
    const int r = idx / te;
    const int j = idx % te;
    float* x = &sm.s_f[r * sm.lay.ld_sf + j];
    const float d = decay ? scratch[p.decay_on_state_rows ? r : j] : 1.0f;
    *x = d * *x + rec[idx];
  }
  for (int r = static_cast<int>(threadIdx.x); r < p.kd_padded; r += kThreads) sm.z[r] += rec[state + r];
  for (int e = static_cast<int>(threadIdx.x); e < te; e += kThreads) sm.zaug[e] += rec[state + p.kd_padded + e];
  if (decay) __syncthreads();  // scratch is rewritten by the next fold
}

// Launch 2 starts segment `seg` from the partials of the segments before it in walking order
// (all of them bidirectionally), then walks its own chunks.
template <class T>
__device__ void start_segment_from_partials(const PassParams& p, const PassSmem<T>& sm, int64_t bh, int tile, int seg) {
  if (p.causal) {
    const int walk = segment_walk_index(p, seg);
    for (int w = 0; w < walk; ++w) fold_segment_partial(p, sm, bh, tile, p.reverse ? p.n_segs - 1 - w : w, sm.a_f);
  } else {
    for (int g = 0; g < p.n_segs; ++g) fold_segment_partial(p, sm, bh, tile, g, sm.a_f);
  }
  __syncthreads();
  refresh_state_copies(p, sm, bh, tile * p.tile_cols);
}

// One block of a launch: blockIdx = (bh, tile, pass * max_segs + segment). Every path clears
// the state, maybe seeds it from partials, then runs one or two walks from one call site, so
// that the chunk code is inlined once.
template <class T>
__device__ void run_chunked_block(const KernelArgs& args) {
  const int pass = static_cast<int>(blockIdx.z) / args.max_segs;
  const int seg = static_cast<int>(blockIdx.z) % args.max_segs;
  const PassParams& p = args.pass[pass];
  const int tile = static_cast<int>(blockIdx.y);
  if (tile >= p.num_tiles || seg >= p.n_segs) return;  // the grid covers the largest pass
  const bool partials = args.phase == Phase::kPartials;
  if (partials && (p.n_segs == 1 || !partial_needed(p, seg))) return;
  const int64_t bh = static_cast<int64_t>(blockIdx.x);
  const PassSmem<T> sm = carve_smem<T>(p);
  clear_pass_state(p, sm);

  const int first = p.n_segs > 1 ? segment_first_chunk(p, seg) : 0;
  const int last = p.n_segs > 1 ? segment_last_chunk(p, seg) : p.n_chunks - 1;
  WalkJob job{Walk::kCausal, first, last, true, false, false};  // the whole sequence, causal
  bool then_read = false;                                        // bidirectional: absorb, then read
  if (partials) {
    job = WalkJob{Walk::kAbsorb, first, last, false, p.causal && p.decay != nullptr, false};
  } else if (p.n_segs > 1) {
    start_segment_from_partials(p, sm, bh, tile, seg);
    const bool empty = p.causal && segment_walk_index(p, seg) == 0;
    job = WalkJob{p.causal ? Walk::kCausal : Walk::kRead, first, last, empty, false, false};
  } else if (!p.causal) {
    job = WalkJob{Walk::kAbsorb, first, last, false, false, true};
    then_read = true;
  }
  for (int round = 0; round < (then_read ? 2 : 1); ++round) {
    if (round == 1) job.mode = Walk::kRead;
    walk_chunks(p, sm, bh, tile, job);
  }
  if (partials) store_segment_partial(p, sm, bh, tile, seg);
}

}  // namespace cuda_detail
}  // namespace linbench
