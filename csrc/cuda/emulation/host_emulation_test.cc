// Runs the CUDA linear-attention kernels on the CPU (emu_cuda.h, emu_warp.h, include/mma.h) and
// checks the forward and the three gradients against a float64 reference of the quadratic form,
// for fp32, fp16 and bf16, causal and bidirectional, normalised or not, with and without decay,
// ragged sequence lengths and widths, the three tile widths the generic planner can choose, and
// the fast pass (suite `fast`, part of `basic`, eight of its cases in `quick`), whose
// dispatch is checked too: it must run exactly the calls it takes.
//
//   csrc/cuda/emulation/run.sh            (plain, then AddressSanitizer, then ThreadSanitizer)
//
// It proves the indexing, the masks, the barriers, the cp.async groups and the maths, with the
// fast pass's mma.sync and ldmatrix fragments placed lane by lane as the PTX ISA specifies; it
// proves nothing about the generic pass's wmma layouts (opaque), the hardware itself, or speed.
#include "emu_cuda.h"

#include "../fast_pass.cu"
#include "../linear_attention_backward.cu"
#include "../linear_attention_forward.cu"

#include <ucontext.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

using linbench::ElementType;
using linbench::LinearAttentionShape;
using linbench::cuda_detail::KernelArgs;
using linbench::cuda_detail::round_up;

#include "emu_runtime.h"

template <class A, class B>
constexpr bool IsSameType = linbench::cuda_detail::IsSame<A, B>::value;

// ---- Element types ----
template <class T>
struct Dtype;
template <>
struct Dtype<float> {
  static constexpr ElementType kType = ElementType::f32;
  static constexpr double kRtol = 5e-4, kAtol = 5e-4;
  static constexpr const char* kName = "fp32";
  static float from(double x) { return static_cast<float>(x); }
  static double to(float x) { return x; }
};
template <>
struct Dtype<__half> {
  static constexpr ElementType kType = ElementType::f16;
  static constexpr double kRtol = 1e-2, kAtol = 1e-2;
  static constexpr const char* kName = "fp16";
  static __half from(double x) { return __float2half_rn(static_cast<float>(x)); }
  static double to(__half x) { return __half2float(x); }
};
template <>
struct Dtype<__nv_bfloat16> {
  static constexpr ElementType kType = ElementType::bf16;
  static constexpr double kRtol = 8e-2, kAtol = 8e-2;
  static constexpr const char* kName = "bf16";
  static __nv_bfloat16 from(double x) { return __float2bfloat16_rn(static_cast<float>(x)); }
  static double to(__nv_bfloat16 x) { return __bfloat162float(x); }
};

// ---- float64 reference: the quadratic form ----
struct Problem {
  Problem(int64_t bh_, int64_t seq_, int64_t dk_, int64_t dv_, bool causal_, bool normalize_, bool decay_)
      : bh(bh_), seq(seq_), dk(dk_), dv(dv_), causal(causal_), normalize(normalize_), decay(decay_) {}
  int64_t bh, seq, dk, dv;
  bool causal, normalize, decay;
  double eps = 1e-6;
  int feature_map = 0;   // applied to q and k: 0 none, 1 L2 rows, 2 elu + 1
  double v_scale = 1.0;  // out = v_scale * attention (unnormalised)
  std::vector<double> q, k, v, dout, dec;  // dec: (bh, n_chunks, dv); q, k raw (before the map)
  int64_t n_chunks() const { return (seq + 63) / 64; }
};

struct Outputs {
  std::vector<double> out, den, dq, dk, dv;
};

// Decay weight of key j for query i, column e: the product of decay[c] for chunk(j) < c <= chunk(i).
double decay_weight(const Problem& p, int64_t b, int64_t i, int64_t j, int64_t e) {
  if (!p.decay) return 1.0;
  double w = 1.0;
  for (int64_t c = j / 64 + 1; c <= i / 64; ++c) w *= p.dec[(b * p.n_chunks() + c) * p.dv + e];
  return w;
}

bool in_mask(const Problem& p, int64_t i, int64_t j) { return !p.causal || j <= i; }

// phi of raw rows (rows x cols), float64.
std::vector<double> feature_rows(const std::vector<double>& x, int64_t cols, int map) {
  std::vector<double> phi(x);
  for (size_t r = 0; r * cols < x.size(); ++r) {
    double* row = phi.data() + r * cols;
    double ss = 0.0;
    for (int64_t c = 0; c < cols; ++c) ss += row[c] * row[c];
    const double n = std::max(std::sqrt(ss), 1e-12);
    for (int64_t c = 0; c < cols; ++c) row[c] = map == 1 ? row[c] / n : (row[c] > 0 ? row[c] + 1.0 : std::exp(row[c]));
  }
  return phi;
}

// g holds dL/dphi(x); turns it into dL/dx (L2: (g - phi (phi . g)) / n; elu + 1: g exp(x) where x <= 0).
void feature_rows_backward(std::vector<double>& g, const std::vector<double>& x, int64_t cols, int map) {
  for (size_t r = 0; r * cols < x.size(); ++r) {
    double* gr = g.data() + r * cols;
    const double* xr = x.data() + r * cols;
    if (map == 2) {
      for (int64_t c = 0; c < cols; ++c) gr[c] *= xr[c] > 0 ? 1.0 : std::exp(xr[c]);
      continue;
    }
    double ss = 0.0, xg = 0.0;
    for (int64_t c = 0; c < cols; ++c) ss += xr[c] * xr[c], xg += xr[c] * gr[c];
    const double n = std::sqrt(ss);
    if (n <= 1e-12) {
      for (int64_t c = 0; c < cols; ++c) gr[c] /= 1e-12;
      continue;
    }
    for (int64_t c = 0; c < cols; ++c) gr[c] = (gr[c] - xr[c] / n * (xg / n)) / n;
  }
}

// The same problem with q and k already mapped.
Problem mapped_problem(const Problem& p) {
  Problem m = p;
  m.q = feature_rows(p.q, p.dk, p.feature_map);
  m.k = feature_rows(p.k, p.dk, p.feature_map);
  m.feature_map = 0;
  return m;
}

void reference_forward(const Problem& p, Outputs* o) {
  if (p.feature_map != 0) return reference_forward(mapped_problem(p), o);
  o->out.assign(p.bh * p.seq * p.dv, 0.0);
  o->den.assign(p.bh * p.seq, 0.0);
  for (int64_t b = 0; b < p.bh; ++b)
    for (int64_t i = 0; i < p.seq; ++i) {
      std::vector<double> num(p.dv, 0.0);
      double den = 0.0;
      for (int64_t j = 0; j < p.seq; ++j) {
        if (!in_mask(p, i, j)) continue;
        double s = 0.0;
        for (int64_t d = 0; d < p.dk; ++d) s += p.q[(b * p.seq + i) * p.dk + d] * p.k[(b * p.seq + j) * p.dk + d];
        den += s;
        for (int64_t e = 0; e < p.dv; ++e) num[e] += s * decay_weight(p, b, i, j, e) * p.v[(b * p.seq + j) * p.dv + e];
      }
      o->den[b * p.seq + i] = den;
      for (int64_t e = 0; e < p.dv; ++e)
        o->out[(b * p.seq + i) * p.dv + e] = p.normalize ? num[e] / (den + p.eps) : p.v_scale * num[e];
    }
}

void reference_backward(const Problem& p, Outputs* o) {
  if (p.feature_map != 0) {
    reference_backward(mapped_problem(p), o);
    feature_rows_backward(o->dq, p.q, p.dk, p.feature_map);
    feature_rows_backward(o->dk, p.k, p.dk, p.feature_map);
    return;
  }
  o->dq.assign(p.bh * p.seq * p.dk, 0.0);
  o->dk.assign(p.bh * p.seq * p.dk, 0.0);
  o->dv.assign(p.bh * p.seq * p.dv, 0.0);
  for (int64_t b = 0; b < p.bh; ++b) {
    auto at = [&](int64_t i, int64_t width) { return (b * p.seq + i) * width; };
    std::vector<double> dn(p.seq * p.dv), dd(p.seq, 0.0);
    for (int64_t i = 0; i < p.seq; ++i) {
      const double inv = p.normalize ? 1.0 / (o->den[b * p.seq + i] + p.eps) : p.v_scale;
      for (int64_t e = 0; e < p.dv; ++e) {
        dn[i * p.dv + e] = p.dout[at(i, p.dv) + e] * inv;
        if (p.normalize) dd[i] -= p.dout[at(i, p.dv) + e] * o->out[at(i, p.dv) + e] * inv;
      }
    }
    for (int64_t i = 0; i < p.seq; ++i)
      for (int64_t j = 0; j < p.seq; ++j) {
        if (!in_mask(p, i, j)) continue;
        double s = 0.0, g = dd[i];
        for (int64_t d = 0; d < p.dk; ++d) s += p.q[at(i, p.dk) + d] * p.k[at(j, p.dk) + d];
        for (int64_t e = 0; e < p.dv; ++e) {
          const double w = decay_weight(p, b, i, j, e);
          g += dn[i * p.dv + e] * w * p.v[at(j, p.dv) + e];
          o->dv[at(j, p.dv) + e] += s * w * dn[i * p.dv + e];
        }
        for (int64_t d = 0; d < p.dk; ++d) {
          o->dq[at(i, p.dk) + d] += g * p.k[at(j, p.dk) + d];
          o->dk[at(j, p.dk) + d] += g * p.q[at(i, p.dk) + d];
        }
      }
  }
}

// The reference gradients against central differences of L = sum(dout * out), float64.
bool check_reference_gradients() {
  Problem base{2, 131, 3, 2, true, false, false};
  std::mt19937_64 rng(7);
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> unit(0.2, 1.0), dec(0.6, 1.0);
  bool ok = true;
  // Modes 4 and 5: the feature maps (L2 with a v scale, unnormalised; elu + 1, normalised).
  for (int mode = 0; mode < 6; ++mode) {
    Problem p = base;
    p.causal = mode != 3;
    p.normalize = mode == 1 || mode == 3 || mode == 5;
    p.decay = mode == 2;
    p.feature_map = mode == 4 ? 1 : (mode == 5 ? 2 : 0);
    p.v_scale = mode == 4 ? 0.37 : 1.0;
    auto fill = [&](std::vector<double>& x, int64_t n, bool positive) {
      x.resize(n);
      for (auto& e : x) e = positive ? unit(rng) : normal(rng);
    };
    const bool positive = p.normalize && p.feature_map == 0;
    fill(p.q, p.bh * p.seq * p.dk, positive);
    fill(p.k, p.bh * p.seq * p.dk, positive);
    fill(p.v, p.bh * p.seq * p.dv, false);
    fill(p.dout, p.bh * p.seq * p.dv, false);
    p.dec.resize(p.bh * p.n_chunks() * p.dv);
    for (auto& e : p.dec) e = dec(rng);
    Outputs o;
    reference_forward(p, &o);
    reference_backward(p, &o);
    auto loss = [&](const Problem& pp) {
      Outputs oo;
      reference_forward(pp, &oo);
      double l = 0.0;
      for (size_t i = 0; i < oo.out.size(); ++i) l += pp.dout[i] * oo.out[i];
      return l;
    };
    double worst = 0.0;
    const double h = 1e-5;
    for (int which = 0; which < 3; ++which) {
      std::vector<double>& x = which == 0 ? p.q : which == 1 ? p.k : p.v;
      const std::vector<double>& g = which == 0 ? o.dq : which == 1 ? o.dk : o.dv;
      double gmax = 0.0;
      for (double e : g) gmax = std::max(gmax, std::abs(e));
      for (size_t i = 0; i < x.size(); i += 7) {
        const double keep = x[i];
        x[i] = keep + h;
        const double up = loss(p);
        x[i] = keep - h;
        const double down = loss(p);
        x[i] = keep;
        const double fd = (up - down) / (2 * h);
        worst = std::max(worst, std::abs(fd - g[i]) / gmax);  // central differences: O(h^2)
      }
    }
    std::printf("reference gradient check, mode %d: worst difference / max |gradient| %.2e\n", mode, worst);
    ok = ok && worst < 1e-6;
  }
  return ok;
}

// ---- Comparison, as linbench/correctness.py: max |a - e| / (atol * rms(e) + rtol * |e|) ----
struct Score {
  double ratio, rel;
};

double rms_of(const std::vector<double>& x) {
  double ss = 0.0;
  for (double e : x) ss += e * e;
  return std::sqrt(ss / std::max<size_t>(x.size(), 1));
}

// floor_scale: as linbench's check, the largest RMS of all compared tensors / 100, so that a
// gradient that is zero in exact arithmetic (q and k at S = 1, normalised) is judged on the
// scale of the problem.
template <class T>
Score score(const std::vector<double>& actual, const std::vector<double>& expected, double floor_scale) {
  const double rms = std::max({rms_of(expected), floor_scale, 1e-30});
  double ratio = 0.0, diff_max = 0.0;
  for (size_t i = 0; i < actual.size(); ++i) {
    if (!std::isfinite(actual[i])) return {INFINITY, INFINITY};
    const double diff = std::abs(actual[i] - expected[i]);
    diff_max = std::max(diff_max, diff);
    ratio = std::max(ratio, diff / (Dtype<T>::kAtol * rms + Dtype<T>::kRtol * std::abs(expected[i])));
  }
  return {ratio, diff_max / rms};
}

template <class T>
std::vector<T> to_device_type(std::vector<double>& x) {  // rounds x to T in place, returns the T copy
  std::vector<T> t(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    t[i] = Dtype<T>::from(x[i]);
    x[i] = Dtype<T>::to(t[i]);
  }
  return t;
}

template <class T>
std::vector<double> to_double(const std::vector<T>& t) {
  std::vector<double> x(t.size());
  for (size_t i = 0; i < t.size(); ++i) x[i] = Dtype<T>::to(t[i]);
  return x;
}

struct Case {
  int64_t bh, seq, dk, dv;
  bool causal, normalize, decay;
  int sm_count;
  double q_scale = 1.0, k_scale = 1.0, v_scale = 1.0;
  bool fail_malloc = false;
  int feature_map = 0;     // 1 L2 rows, 2 elu + 1: q and k go in raw, the kernels map them
  double out_scale = 1.0;  // the op's v_scale (unnormalised cases)
  int cc_major = 9;        // the device's compute capability (the fast pass needs 8)
  int ptx_version = 0;     // the kernels' virtual architecture, 10 major + minor (0: the device's)
  double dout_scale = 1.0;
};

// c with q and k mapped by the kernels (and, unnormalised, the output scaled by v_scale).
Case with_map(Case c, int feature_map, double v_scale) {
  c.feature_map = feature_map;
  c.out_scale = c.normalize ? 1.0 : v_scale;
  return c;
}

// The cases of `cases` with the maps linbench's variants use: L2 unnormalised with a v scale
// (cosine; normalised, L2 features give a denominator that crosses zero, which no variant
// uses), elu + 1 normalised or not (linear). No variant decays mapped features.
std::vector<Case> mapped_cases(const std::vector<Case>& cases) {
  std::vector<Case> out;
  for (const Case& c : cases) {
    if (c.decay) continue;
    if (!c.normalize) out.push_back(with_map(c, 1, 0.3));
    out.push_back(with_map(c, 2, c.normalize ? 1.0 : 1.7));
  }
  return out;
}

int g_failures = 0;

template <class T>
void run_case(const Case& c, uint64_t seed) {
  Problem p{c.bh, c.seq, c.dk, c.dv, c.causal, c.normalize, c.decay};
  p.feature_map = c.feature_map;
  p.v_scale = c.out_scale;
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> dec(0.6, 1.0);
  // Normalised attention takes positive features: elu(x) + 1 of normal noise, as linbench's
  // linear attention does.
  auto fill = [&](std::vector<double>& x, int64_t n, bool positive, double scale) {
    x.resize(n);
    for (auto& e : x) {
      const double g = normal(rng);
      e = scale * (positive ? (g > 0 ? g + 1.0 : std::exp(g)) : g);
    }
  };
  // Mapped cases take raw normal noise: the map makes it positive (elu + 1) or unit rows (L2).
  const bool positive = p.normalize && p.feature_map == 0;
  fill(p.q, p.bh * p.seq * p.dk, positive, c.q_scale);
  fill(p.k, p.bh * p.seq * p.dk, positive, c.k_scale);
  fill(p.v, p.bh * p.seq * p.dv, false, c.v_scale);
  fill(p.dout, p.bh * p.seq * p.dv, false, c.dout_scale);
  p.dec.resize(p.bh * p.n_chunks() * p.dv);
  for (auto& e : p.dec) e = static_cast<float>(dec(rng));
  std::vector<float> dec_f(p.dec.begin(), p.dec.end());

  const std::vector<T> q = to_device_type<T>(p.q), k = to_device_type<T>(p.k), v = to_device_type<T>(p.v),
                       dout = to_device_type<T>(p.dout);
  Outputs ref;
  reference_forward(p, &ref);
  reference_backward(p, &ref);

  g_sm_count = c.sm_count;
  g_fail_malloc = c.fail_malloc;
  g_cc_major = c.cc_major;
  g_ptx_version = c.ptx_version;
  LinearAttentionShape shape{c.bh, c.seq, c.dk, c.dv, 64, c.causal, c.normalize, static_cast<float>(p.eps)};
  shape.feature_map = c.feature_map;
  shape.v_scale = static_cast<float>(c.out_scale);
  const int map_launches_before = g_map_launches;
  std::vector<T> out(p.bh * p.seq * p.dv), dq(p.bh * p.seq * p.dk), dk(p.bh * p.seq * p.dk), dv(p.bh * p.seq * p.dv);
  std::vector<float> den(p.bh * p.seq, -1.0f);
  const float* decay = c.decay ? dec_f.data() : nullptr;
  const int fast_before = g_fast_launches, generic_before = g_launches;
  cudaError_t err = linbench::linear_attention_forward_cuda(Dtype<T>::kType, q.data(), k.data(), v.data(), decay,
                                                            out.data(), c.normalize ? den.data() : nullptr, shape,
                                                            nullptr);
  const int fwd_tile = g_last_tile_cols[0], fwd_segs = g_last_segs[0], fwd_fast_segs = g_last_fast_segs;
  const bool fwd_fast = g_fast_launches > fast_before && g_launches == generic_before;
  const int fast_middle = g_fast_launches, generic_middle = g_launches;
  if (err == cudaSuccess)
    err = linbench::linear_attention_backward_cuda(Dtype<T>::kType, dout.data(), q.data(), k.data(), v.data(), decay,
                                                   out.data(), c.normalize ? den.data() : nullptr, dq.data(),
                                                   dk.data(), dv.data(), shape, nullptr);
  const bool bwd_fast = g_fast_launches > fast_middle && g_launches == generic_middle;
  if (err == cudaSuccess && (g_map_launches - map_launches_before) != (c.feature_map != 0 ? 1 : 0))
    err = cudaErrorUnknown;  // the map's backward must run exactly when there is a map
  // The fast pass runs exactly the calls it takes (fast_plan.cuh), forward and backward alike.
  const bool fast_type = IsSameType<T, __nv_bfloat16> || IsSameType<T, __half>;
  const bool fast_shape = fast_type && !c.decay && c.dk % 8 == 0 && c.dv % 8 == 0 && c.dk <= 128 && c.dv <= 128 &&
                          !c.fail_malloc && c.cc_major >= 8 && (c.ptx_version == 0 || c.ptx_version >= 80);
  const bool dispatch_ok = fwd_fast == fast_shape && bwd_fast == fast_shape;
  const char* map_names[3] = {"", " l2", " elu1"};
  char plan[96];
  if (fwd_fast)
    std::snprintf(plan, sizeof(plan), "fast segs=%d%s", fwd_fast_segs, bwd_fast ? "/fast" : "/generic");
  else
    std::snprintf(plan, sizeof(plan), "TE=%d/%d,%d,%d segs=%d/%d,%d,%d", fwd_tile, g_last_tile_cols[0],
                  g_last_tile_cols[1], g_last_tile_cols[2], fwd_segs, g_last_segs[0], g_last_segs[1], g_last_segs[2]);
  char label[256];
  std::snprintf(label, sizeof(label), "%s bh=%ld S=%ld dk=%ld dv=%ld %s%s%s%s%s x%.2g %s", Dtype<T>::kName,
                long(c.bh), long(c.seq), long(c.dk), long(c.dv), c.causal ? "causal" : "bidir",
                c.normalize ? " norm" : "", c.decay ? " decay" : "", c.fail_malloc ? " no-scratch" : "",
                map_names[c.feature_map], c.out_scale, plan);
  if (err == cudaSuccess && !dispatch_ok) {
    std::printf("FAIL %s: ran the %s forward and the %s backward\n", label, fwd_fast ? "fast" : "generic",
                bwd_fast ? "fast" : "generic");
    ++g_failures;
    return;
  }
  if (err != cudaSuccess) {
    std::printf("FAIL %s: launcher returned %d\n", label, int(err));
    ++g_failures;
    return;
  }
  const double fl = std::max({rms_of(ref.out), rms_of(ref.dq), rms_of(ref.dk), rms_of(ref.dv)}) / 100;
  std::vector<std::pair<const char*, Score>> scores = {
      {"out", score<T>(to_double(out), ref.out, fl)},
      {"dq", score<T>(to_double(dq), ref.dq, fl)},
      {"dk", score<T>(to_double(dk), ref.dk, fl)},
      {"dv", score<T>(to_double(dv), ref.dv, fl)},
  };
  if (c.normalize) {
    std::vector<double> den_d(den.begin(), den.end());
    // Unmapped, den is an fp32 sum of products of the exact inputs: fp32's tolerance. Mapped,
    // the features are rounded to T before the products (as the tensor cores need them), so
    // den carries T's rounding of the features: T's tolerance.
    scores.push_back({"den", c.feature_map == 0 ? score<float>(den_d, ref.den, 0.0) : score<T>(den_d, ref.den, 0.0)});
  }
  if (c.normalize) {
    // The error any implementation makes: out is rounded to T before the backward reads it
    // (dD = -(dO . out) / (den + eps) cancels against the rest of dq and dk), and the gradients
    // are rounded to T. Printed next to the kernel's for comparison.
    Outputs floor = ref;
    for (double& x : floor.out) x = Dtype<T>::to(Dtype<T>::from(x));
    reference_backward(p, &floor);
    for (auto* g : {&floor.dq, &floor.dk, &floor.dv})
      for (double& x : *g) x = Dtype<T>::to(Dtype<T>::from(x));
    scores.push_back({"floor:dq", score<T>(floor.dq, ref.dq, fl)});
    scores.push_back({"floor:dk", score<T>(floor.dk, ref.dk, fl)});
  }
  // A tensor passes within tolerance, or, when even the floor does not (long normalised fp16
  // sequences), within 10% of the floor's error: no implementation can do better there.
  auto floor_of = [&](const std::string& name) {
    for (auto& [other, s] : scores)
      if ("floor:" + name == other) return s.ratio;
    return 0.0;
  };
  bool ok = true, floor_bound = false;
  std::string detail;
  for (auto& [name, s] : scores) {
    const bool is_floor = std::string(name).rfind("floor:", 0) == 0;  // printed, not judged
    const double fl_ratio = floor_of(name);
    const bool within = is_floor || s.ratio <= 1.0 || (fl_ratio > 1.0 && s.ratio <= 1.1 * fl_ratio);
    floor_bound = floor_bound || (s.ratio > 1.0 && within);
    ok = ok && within;
    char buf[96];
    std::snprintf(buf, sizeof(buf), " %s x%.3f(%.1e)", name, s.ratio, s.rel);
    detail += buf;
  }
  if (!ok) ++g_failures;
  std::printf("%s %s:%s\n", ok ? (floor_bound ? "ok* " : "ok  ") : "FAIL", label, detail.c_str());
  std::fflush(stdout);
}

template <class T>
void run_cases(const std::vector<Case>& cases, uint64_t seed) {
  for (const Case& c : cases) run_case<T>(c, seed++);
}

// Launcher argument checks (nothing runs).
void check_rejections() {
  float dummy[4] = {};
  auto fwd = [&](LinearAttentionShape s, const float* decay, float* den) {
    return linbench::linear_attention_forward_cuda(ElementType::bf16, dummy, dummy, dummy, decay, dummy, den, s,
                                                   nullptr);
  };
  const LinearAttentionShape good{1, 8, 4, 4, 64, true, false, 1e-6f};
  struct {
    const char* what;
    LinearAttentionShape shape;
    const float* decay;
    float* den;
    cudaError_t expect;
  } checks[] = {
      {"chunk 32", {1, 8, 4, 4, 32, true, false, 1e-6f}, nullptr, nullptr, cudaErrorInvalidValue},
      {"dim_k 513", {1, 8, 513, 4, 64, true, false, 1e-6f}, nullptr, nullptr, cudaErrorInvalidValue},
      {"dim_v 257", {1, 8, 4, 257, 64, true, false, 1e-6f}, nullptr, nullptr, cudaErrorInvalidValue},
      {"dim_k 0", {1, 8, 0, 4, 64, true, false, 1e-6f}, nullptr, nullptr, cudaErrorInvalidValue},
      {"decay + normalize", {1, 8, 4, 4, 64, true, true, 1e-6f}, dummy, dummy, cudaErrorInvalidValue},
      {"decay + bidirectional", {1, 8, 4, 4, 64, false, false, 1e-6f}, dummy, nullptr, cudaErrorInvalidValue},
      {"normalize without den", {1, 8, 4, 4, 64, true, true, 1e-6f}, nullptr, nullptr, cudaErrorInvalidValue},
      {"feature map 3", {1, 8, 4, 4, 64, true, false, 1e-6f, 3}, nullptr, nullptr, cudaErrorInvalidValue},
      {"v scale + normalize", {1, 8, 4, 4, 64, true, true, 1e-6f, 0, 2.0f}, nullptr, dummy, cudaErrorInvalidValue},
      {"empty seq", {1, 0, 4, 4, 64, true, false, 1e-6f}, nullptr, nullptr, cudaSuccess},
      {"empty bh", {0, 8, 4, 4, 64, true, false, 1e-6f}, nullptr, nullptr, cudaSuccess},
  };
  (void)good;
  const int before = g_launches;
  for (auto& c : checks) {
    const cudaError_t got = fwd(c.shape, c.decay, c.den);
    if (got != c.expect) {
      std::printf("FAIL rejection %s: got %d\n", c.what, int(got));
      ++g_failures;
    }
  }
  if (g_launches != before) {
    std::printf("FAIL rejections launched a kernel\n");
    ++g_failures;
  }
  std::printf("argument checks done\n");
}

// What the planner picks for the benchmark's shapes on an A100 and an H100 (no kernel runs).
void print_plans() {
  struct Gpu {
    const char* name;
    int sms, smem_block, smem_sm;
  } gpus[] = {{"A100", 108, 166912, 167936}, {"H100", 132, 232448, 233472}};
  struct Shape {
    int64_t bh, seq, dk, dv;
    bool normalize;
  } shapes[] = {{32, 16384, 64, 64, false}, {32, 16384, 128, 128, false}, {32, 16384, 64, 64, true},
                {32, 16384, 128, 64, true},  {8, 4096, 64, 64, false},    {32, 16384, 512, 256, true}};
  for (const Gpu& gpu : gpus)
    for (const Shape& sh : shapes) {
      g_sm_count = gpu.sms;
      g_smem_per_block = gpu.smem_block;
      g_smem_per_sm = gpu.smem_sm;
      linbench::cuda_detail::DeviceLimits limits{gpu.sms, gpu.smem_block, gpu.smem_sm};
      const int n_chunks = static_cast<int>((sh.seq + 63) / 64);
      struct {
        const char* what;
        int kd, td, share;
      } passes[] = {{"fwd", int(sh.dk), int(sh.dv), gpu.sms},
                    {"dq", int(sh.dv), int(sh.dk), gpu.sms / 3},
                    {"dk", int(sh.dv), int(sh.dk), gpu.sms / 3},
                    {"dv", int(sh.dk), int(sh.dv), gpu.sms / 3}};
      std::printf("%s bf16 bh=%ld S=%ld dk=%ld dv=%ld%s:", gpu.name, long(sh.bh), long(sh.seq), long(sh.dk),
                  long(sh.dv), sh.normalize ? " norm" : "");
      for (auto& ps : passes) {
        linbench::cuda_detail::PassPlan plan{};
        const bool ok = linbench::cuda_detail::plan_pass(nullptr, 2, ps.kd, ps.td, sh.normalize, sh.bh, n_chunks, true,
                                                         limits, ps.share, &plan);
        const double scratch = plan.n_segs > 1 ? double(sh.bh) * plan.num_tiles * plan.n_segs *
                                                     (round_up(ps.kd, 16) * plan.tile_cols + round_up(ps.kd, 16) +
                                                      plan.tile_cols) * 4.0
                                               : 0.0;
        if (ok)
          std::printf("  %s TE=%d KS=%d segs=%d smem=%dK scratch=%.1fMB", ps.what, plan.tile_cols, plan.slab_cols,
                      plan.n_segs, plan.smem_bytes / 1024, scratch / 1e6);
        else
          std::printf("  %s: does not fit", ps.what);
      }
      std::printf("\n");
    }
}

int main(int argc, char** argv) {
  const std::string suite = argc > 1 ? argv[1] : "full";
  if (suite == "plans") {
    print_plans();
    return 0;
  }
  if (!check_reference_gradients()) {
    std::printf("FAIL: the reference gradients are wrong\n");
    return 1;
  }
  check_rejections();

  // (bh, seq, dk, dv, causal, normalize, decay, sm_count)
  std::vector<Case> basic;
  for (int mode = 0; mode < 5; ++mode) {
    const bool causal = mode < 3, normalize = mode == 1 || mode == 4, decay = mode == 2;
    basic.push_back({1, 1, 1, 1, causal, normalize, decay, 108});
    basic.push_back({2, 5, 3, 7, causal, normalize, decay, 108});
    basic.push_back({1, 64, 16, 16, causal, normalize, decay, 108});
    basic.push_back({2, 100, 20, 12, causal, normalize, decay, 1});
    basic.push_back({1, 130, 64, 64, causal, normalize, decay, 1});      // TE 64
    basic.push_back({1, 130, 64, 64, causal, normalize, decay, 10000});  // TE 16
    basic.push_back({1, 200, 33, 40, causal, normalize, decay, 4});
  }
  std::vector<Case> wide;  // several slabs of the contraction, several tiles
  for (int mode = 0; mode < 5; ++mode) {
    const bool causal = mode < 3, normalize = mode == 1 || mode == 4, decay = mode == 2;
    wide.push_back({1, 70, 130, 24, causal, normalize, decay, 1});
    wide.push_back({1, 70, 24, 129, causal, normalize, decay, 1});
  }
  std::vector<Case> large = {
      {1, 66, 512, 16, true, false, false, 1},
      {1, 66, 16, 256, true, true, false, 1},
      {1, 66, 256, 128, false, true, false, 1},
  };
  std::vector<Case> fp16_range = {
      // State entries past fp16's 65504 (k ~ 300, v ~ 30, 200 tokens: ~1e5): the scaled copy
      // must hold them.
      {1, 200, 16, 16, true, true, false, 1, 0.1, 300.0, 30.0},
      {1, 200, 16, 16, false, true, false, 1, 0.1, 300.0, 30.0},
  };
  std::vector<Case> longer = {{1, 600, 32, 32, true, false, true, 1}, {1, 600, 32, 32, true, true, false, 1}};
  // linbench check's largest shape, and the length its run gate uses for B*H = 32 at D = 64.
  std::vector<Case> gate = {{1, 257, 32, 32, true, true, false, 108}, {1, 257, 32, 32, false, true, false, 108},
                            {1, 724, 64, 64, true, true, false, 108}};

  // Split sequences: many SMs for one row, so the planner cuts the sequence into segments.
  std::vector<Case> split;
  for (int mode = 0; mode < 5; ++mode) {
    const bool causal = mode < 3, normalize = mode == 1 || mode == 4, decay = mode == 2;
    split.push_back({1, 1000, 24, 40, causal, normalize, decay, 10000});  // 16 chunks, 4 segments
    split.push_back({2, 800, 20, 12, causal, normalize, decay, 10000});   // 13 chunks: segments of 5, 5, 3
  }
  std::vector<Case> split_fallback = {{1, 1000, 24, 40, true, true, false, 10000, 1.0, 1.0, 1.0, true},
                                      {1, 1000, 24, 40, true, false, true, 10000, 1.0, 1.0, 1.0, true}};

  // Feature maps fused into the loads: a contraction of several slabs (dk = 130, so the L2 norm
  // must cover the whole row before the first slab lands), tiles of the raw q and k as the
  // backward's Vx, split sequences, ragged chunks, and an all-zero q (the L2 map's 1e-12 floor).
  std::vector<Case> maps = mapped_cases({{2, 100, 20, 12, true, false, false, 1}, {2, 100, 20, 12, true, true, false, 1},
                                         {1, 70, 130, 24, true, false, false, 1}, {1, 70, 130, 24, false, true, false, 1},
                                         {1, 70, 24, 129, true, true, false, 1}, {1, 600, 20, 12, true, false, false, 10000},
                                         {1, 600, 20, 12, false, true, false, 10000}, {1, 1, 3, 2, true, true, false, 108}});
  // fp16 leaves out the zero q: its exact gradient, g / 1e-12, is past fp16's range (inf in any
  // implementation that returns fp16 gradients).
  const std::vector<Case> maps_fp16 = maps;
  maps.push_back(with_map({1, 70, 24, 12, true, false, false, 1, 0.0}, 1, 0.5));

  // The fast pass (bf16, Dk and Dv multiples of 8 up to 128): ragged last chunks, S = 1, Dk != Dv,
  // contractions padded to 64 and 128, ragged tiles (Dv = 48, 80), the two classes of
  // contraction in one backward (Dk = 128, Dv = 64), segments (many SMs) and one segment (one
  // SM), bidirectional, normalised, and the feature maps with a v scale.
  const std::vector<Case> fast_plain = {
      {1, 1, 8, 8, true, false, false, 108},         {2, 100, 64, 64, true, false, false, 1},
      {1, 300, 64, 32, true, false, false, 10000},   {1, 300, 32, 48, false, false, false, 1},
      {1, 300, 64, 64, false, true, false, 10000},   {2, 200, 64, 64, true, true, false, 1},
      {1, 200, 128, 64, true, false, false, 10000},  {1, 130, 96, 128, true, true, false, 1},
      {1, 257, 16, 80, true, false, false, 10000}};
  std::vector<Case> fast = fast_plain;
  for (const Case& c : mapped_cases({fast_plain[2], fast_plain[3], fast_plain[5]})) fast.push_back(c);
  Case before_sm80 = fast_plain[2];  // a GPU before sm_80 runs the generic pass
  before_sm80.cc_major = 7;
  fast.push_back(before_sm80);
  Case jit_from_compute75 = fast_plain[2];  // an sm_90 GPU running kernels built as compute_75 PTX
  jit_from_compute75.ptx_version = 75;
  fast.push_back(jit_from_compute75);
  // The normalised backward on the fast pass with segments (their partial zaug folded in): causal,
  // both contraction classes in one backward, a ragged tile, bidirectional with Dk != Dv; and
  // without scratch for its row factors, the generic pass.
  const std::vector<Case> fast_norm = {{1, 300, 64, 64, true, true, false, 10000},
                                       {1, 200, 128, 64, true, true, false, 10000},
                                       {2, 257, 16, 80, true, true, false, 10000},
                                       {1, 300, 32, 48, false, true, false, 10000},
                                       {1, 300, 64, 64, true, true, false, 10000, 1.0, 1.0, 1.0, true}};
  const size_t first_norm = fast.size();
  for (const Case& c : fast_norm) fast.push_back(c);
  for (const Case& c : mapped_cases({fast_norm[0]})) fast.push_back(c);

  // fp16 (the same cases: normalised, its split's lo halves scaled) and states past fp16's 65504
  // (k ~ 300, v ~ 30, 600 tokens: ~1e5, the forward's and dQ's), which the copy's power-of-two
  // factor must hold; q and dO small enough that the outputs and gradients themselves fit.
  std::vector<Case> fast_fp16 = fast;
  Case big_state{1, 600, 64, 32, true, false, false, 10000, 0.001, 300.0, 30.0};
  big_state.dout_scale = 0.001;
  Case big_state_bidir = big_state;
  big_state_bidir.causal = false, big_state_bidir.dk = 32, big_state_bidir.sm_count = 1;
  Case big_state_normalised = big_state;  // the copy's factor beside the split's scaled lo halves
  big_state_normalised.normalize = true, big_state_normalised.dv = 64;
  for (const Case& c : {big_state, big_state_bidir, big_state_normalised}) fast_fp16.push_back(c);

  if (suite == "fast") {
    run_cases<__nv_bfloat16>(fast, 9800);
    run_cases<__half>(fast_fp16, 9900);
  } else if (suite == "fastsan") {  // for the sanitizers: the fast pass alone, forward and backward
    run_cases<__nv_bfloat16>({fast[2], fast[3], fast[6], fast[9], fast[first_norm + 1]}, 9800);
    run_cases<__half>({big_state, fast_fp16[first_norm + 1]}, 9900);
  } else if (suite == "maps") {
    run_cases<float>(maps, 9500);
    run_cases<__nv_bfloat16>(maps, 9600);
    run_cases<__half>(maps_fp16, 9700);
  } else if (suite == "fp16range") {
    run_cases<__half>(fp16_range, 7000);
  } else if (suite == "split") {
    run_cases<float>(split, 8400);
    run_cases<__nv_bfloat16>(split, 8500);
    run_cases<__half>(split, 8600);
    run_cases<__nv_bfloat16>(split_fallback, 8700);
  } else if (suite == "quick") {  // for the sanitizer runs
    std::vector<Case> quick = {{2, 100, 20, 12, true, true, false, 1}, {1, 130, 24, 40, true, false, true, 10000},
                               {1, 70, 24, 129, false, true, false, 1}, {1, 70, 130, 24, true, false, false, 1},
                               {1, 600, 20, 12, true, false, true, 10000}, {1, 600, 20, 12, false, true, false, 10000},
                               {1, 600, 20, 12, true, true, false, 10000}};
    run_cases<__nv_bfloat16>(quick, 100);
    run_cases<__half>(quick, 200);
    run_cases<float>(quick, 300);
    // L2 over two slabs, elu + 1 bidirectional normalised, L2 split, elu + 1 split normalised, zero q.
    const std::vector<Case> quick_maps = {maps[3], maps[5], maps[7], maps[9], maps.back()};
    run_cases<__nv_bfloat16>(quick_maps, 400);
    run_cases<float>(quick_maps, 500);
    // The fast pass: segments, bidirectional with a ragged tile, normalised bidirectional with
    // segments, both contraction classes in one backward, the L2 map with a v scale, elu + 1, the
    // normalised causal backward with segments and both classes; fp16 with a state past its range,
    // and fp16's normalised causal backward with segments and both classes.
    const std::vector<Case> quick_fast = {fast[2], fast[3], fast[4], fast[6], fast[9], fast[10], fast[first_norm + 1]};
    run_cases<__nv_bfloat16>(quick_fast, 600);
    run_cases<__half>({big_state, fast_fp16[first_norm + 1]}, 700);
  } else {
    run_cases<float>(basic, 1000);
    run_cases<__nv_bfloat16>(basic, 2000);
    run_cases<__half>(basic, 3000);
    run_cases<float>(wide, 4000);
    run_cases<__nv_bfloat16>(wide, 5000);
    run_cases<__half>(wide, 6000);
    run_cases<__half>(fp16_range, 7000);
    run_cases<__nv_bfloat16>(longer, 8000);
    run_cases<float>(longer, 8100);
    run_cases<float>(split, 8400);
    run_cases<__nv_bfloat16>(split, 8500);
    run_cases<__half>(split, 8600);
    run_cases<__nv_bfloat16>(split_fallback, 8700);
    run_cases<__nv_bfloat16>(gate, 8200);
    run_cases<__half>(gate, 8300);
    run_cases<float>(maps, 9500);
    run_cases<__nv_bfloat16>(maps, 9600);
    run_cases<__half>(maps_fp16, 9700);
    run_cases<__nv_bfloat16>(fast, 9800);
    run_cases<__half>(fast_fp16, 9900);
    if (suite == "full") {
      run_cases<__nv_bfloat16>(large, 9000);
      run_cases<float>(large, 9100);
    }
  }
  std::printf(g_failures ? "%d FAILURES\n" : "all passed\n", g_failures);
  return g_failures ? 1 : 0;
}
