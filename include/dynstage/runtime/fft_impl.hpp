// dynstage: the definitions behind runtime/fft.hpp (the implementation TU
// only): dynstage_fft, FFTW's plan cache, and the native fallback.
#pragma once

#include "fft.hpp"

#ifdef DYNSTAGE_IMPLEMENTATION

#include <algorithm>
#include <climits>
#include <cmath>
#include <complex>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <numbers>
#include <optional>
#include <string_view>
#include <tuple>
#include <vector>

#include "../array/dtype.hpp"
#include "../errors.hpp"
#include "../ir/params.hpp"

#if defined(DYNSTAGE_HAVE_FFTW) && DYNSTAGE_HAVE_FFTW
#include <fftw3.h>
#define DYNSTAGE_FFT_USES_FFTW 1
#else
#define DYNSTAGE_FFT_USES_FFTW 0
#endif

namespace dyn::detail {
namespace fft_impl {

using C = std::complex<double>;

// a * b without the C99 Annex G NaN recovery that std::complex's operator*
// calls out of line (__muldc3): the transforms multiply finite twiddles.
inline C cmul(C a, C b) {
  return {a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real()};
}

inline bool is_pow2(std::int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

// e^{-2 pi i k / n} for k < n / 2: the forward twiddles of a radix-2 FFT of size n.
inline std::vector<C> twiddles(std::int64_t n) {
  std::vector<C> tw(static_cast<std::size_t>(n / 2));
  for (std::int64_t k = 0; k < n / 2; ++k) {
    const double a = -2.0 * std::numbers::pi * static_cast<double>(k) / static_cast<double>(n);
    tw[static_cast<std::size_t>(k)] = {std::cos(a), std::sin(a)};
  }
  return tw;
}

// In place, iterative radix-2 (decimation in time after a bit-reversal
// permutation); unnormalised; `inverse` conjugates the twiddles.
inline void fft_pow2(C* a, std::int64_t n, const std::vector<C>& tw, bool inverse) {
  for (std::int64_t i = 1, j = 0; i < n; ++i) {
    std::int64_t bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) std::swap(a[i], a[j]);
  }
  for (std::int64_t len = 2; len <= n; len <<= 1) {
    const std::int64_t half = len / 2, step = n / len;
    for (std::int64_t i = 0; i < n; i += len)
      for (std::int64_t k = 0; k < half; ++k) {
        C w = tw[static_cast<std::size_t>(k * step)];
        if (inverse) w = std::conj(w);
        const C u = a[i + k], v = cmul(a[i + k + half], w);
        a[i + k] = u + v;
        a[i + k + half] = u - v;
      }
  }
}

// A power-of-two transform of size n, in place, unnormalised. Up to
// kFourStep points: fft_pow2. Beyond, the four-step algorithm (Bailey's),
// whose passes over memory are two sets of short transforms that fit in
// cache instead of log2(n) sweeps over the whole array: x as an n2 x n1
// matrix (x[j1 + n1 j2]); transforms of length n2 down its columns, done
// kBlock columns at a time; the twiddles e^{-2 pi i j1 k2 / n}; transforms
// of length n1 along its rows; then the transpose, X[k2 + n2 k1].
inline constexpr std::int64_t kFourStep = std::int64_t{1} << 14;
inline constexpr std::int64_t kBlock = 16;

class Pow2 {
public:
  explicit Pow2(std::int64_t len) : n_(len) {
    if (n_ < kFourStep) {
      tw_ = twiddles(n_);
      return;
    }
    n1_ = 1;
    while (n1_ * n1_ * 2 <= n_) n1_ <<= 1;  // n1 <= n2 = n / n1 <= 2 n1
    n2_ = n_ / n1_;
    tw1_ = twiddles(n1_);
    tw2_ = twiddles(n2_);
    // e^{-2 pi i m / n} = hi[m / n1] * lo[m % n1]: two exact tables.
    lo_.resize(static_cast<std::size_t>(n1_));
    hi_.resize(static_cast<std::size_t>(n2_));
    for (std::int64_t k = 0; k < n1_; ++k) lo_[static_cast<std::size_t>(k)] = root(k);
    for (std::int64_t k = 0; k < n2_; ++k) hi_[static_cast<std::size_t>(k)] = root(k * n1_);
    work_.resize(static_cast<std::size_t>(n_));
  }

  void run(C* a, bool inverse) {
    if (n_ < kFourStep) return fft_pow2(a, n_, tw_, inverse);
    C* buf = work_.data();  // kBlock columns, then the transpose
    for (std::int64_t j0 = 0; j0 < n1_; j0 += kBlock) {
      for (std::int64_t j2 = 0; j2 < n2_; ++j2)
        for (std::int64_t b = 0; b < kBlock; ++b) buf[b * n2_ + j2] = a[j2 * n1_ + j0 + b];
      for (std::int64_t b = 0; b < kBlock; ++b) fft_pow2(buf + b * n2_, n2_, tw2_, inverse);
      for (std::int64_t b = 0; b < kBlock; ++b)
        for (std::int64_t k2 = 0, m = 0; k2 < n2_; ++k2, m = (m + j0 + b) & (n_ - 1)) {  // m = j1 k2 mod n
          C t = cmul(hi_[static_cast<std::size_t>(m / n1_)], lo_[static_cast<std::size_t>(m % n1_)]);
          if (inverse) t = std::conj(t);
          a[k2 * n1_ + j0 + b] = cmul(buf[b * n2_ + k2], t);
        }
    }
    for (std::int64_t k2 = 0; k2 < n2_; ++k2) fft_pow2(a + k2 * n1_, n1_, tw1_, inverse);
    for (std::int64_t k0 = 0; k0 < n1_; k0 += kBlock)  // out[k1 * n2 + k2] = a[k2 * n1 + k1], by blocks
      for (std::int64_t k2 = 0; k2 < n2_; ++k2)
        for (std::int64_t k1 = k0; k1 < k0 + kBlock; ++k1) buf[k1 * n2_ + k2] = a[k2 * n1_ + k1];
    std::copy(buf, buf + n_, a);
  }

private:
  C root(std::int64_t m) const {
    const double ang = -2.0 * std::numbers::pi * static_cast<double>(m) / static_cast<double>(n_);
    return {std::cos(ang), std::sin(ang)};
  }
  std::int64_t n_, n1_ = 0, n2_ = 0;
  std::vector<C> tw_, tw1_, tw2_, lo_, hi_, work_;
};

// One length's transform, either direction: Pow2 for a power of two, else
// Bluestein's: X_k = w_k sum_j (x_j w_j) conj(w_{k-j}), w_k = e^{-i pi k^2 /
// n}, the convolution by power-of-two transforms of size m >= 2n - 1.
struct Line {
  std::int64_t n = 0, m = 0;
  std::optional<Pow2> pow2;   // of n (power of two) or m (Bluestein)
  std::vector<C> chirp;       // w_k, k < n (Bluestein)
  std::vector<C> kernel_hat;  // the FFT of conj(w) wrapped around, size m (Bluestein)
  std::vector<C> work;        // size m (Bluestein)

  explicit Line(std::int64_t len) : n(len) {
    if (n <= 1) return;
    if (is_pow2(n)) {
      pow2.emplace(n);
      return;
    }
    m = 1;
    while (m < 2 * n - 1) m <<= 1;
    pow2.emplace(m);
    chirp.resize(static_cast<std::size_t>(n));
    for (std::int64_t k = 0; k < n; ++k) {
      // k^2 mod 2n keeps the angle small and exact for large k.
      const auto k2 = static_cast<std::int64_t>((static_cast<unsigned __int128>(k) * static_cast<unsigned __int128>(k)) %
                                                static_cast<unsigned __int128>(2 * n));
      const double a = -std::numbers::pi * static_cast<double>(k2) / static_cast<double>(n);
      chirp[static_cast<std::size_t>(k)] = {std::cos(a), std::sin(a)};
    }
    kernel_hat.assign(static_cast<std::size_t>(m), C{});
    kernel_hat[0] = std::conj(chirp[0]);
    for (std::int64_t k = 1; k < n; ++k)
      kernel_hat[static_cast<std::size_t>(k)] = kernel_hat[static_cast<std::size_t>(m - k)] =
          std::conj(chirp[static_cast<std::size_t>(k)]);
    pow2->run(kernel_hat.data(), false);
    work.resize(static_cast<std::size_t>(m));
  }

  // In place on n contiguous values; unnormalised.
  void run(C* a, bool inverse) {
    if (n <= 1) return;
    if (m == 0) return pow2->run(a, inverse);
    // The inverse transform of x is the conjugate of the forward one of conj(x).
    for (std::int64_t k = 0; k < n; ++k) {
      const C x = inverse ? std::conj(a[k]) : a[k];
      work[static_cast<std::size_t>(k)] = cmul(x, chirp[static_cast<std::size_t>(k)]);
    }
    std::fill(work.begin() + n, work.end(), C{});
    pow2->run(work.data(), false);
    for (std::int64_t k = 0; k < m; ++k)
      work[static_cast<std::size_t>(k)] = cmul(work[static_cast<std::size_t>(k)], kernel_hat[static_cast<std::size_t>(k)]);
    pow2->run(work.data(), true);
    const double inv_m = 1.0 / static_cast<double>(m);
    for (std::int64_t k = 0; k < n; ++k) {
      const C y = cmul(work[static_cast<std::size_t>(k)], chirp[static_cast<std::size_t>(k)]) * inv_m;
      a[k] = inverse ? std::conj(y) : y;
    }
  }
};

// Transforms axis `axis` of the row-major array `w` of shape `dims`.
inline void along_axis(std::vector<C>& w, const std::vector<std::int64_t>& dims, std::size_t axis, bool inverse) {
  const std::int64_t n = dims[axis];
  if (n <= 1) return;
  std::int64_t outer = 1, inner = 1;
  for (std::size_t i = 0; i < axis; ++i) outer *= dims[i];
  for (std::size_t i = axis + 1; i < dims.size(); ++i) inner *= dims[i];
  Line line(n);
  if (inner == 1) {
    for (std::int64_t o = 0; o < outer; ++o) line.run(w.data() + o * n, inverse);
    return;
  }
  // Lines across the inner axes: gathered kBlock at a time (each row of
  // the block is one contiguous read), transformed, scattered back.
  constexpr std::int64_t kBlock = 16;
  std::vector<C> buf(static_cast<std::size_t>(n * kBlock));
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t i0 = 0; i0 < inner; i0 += kBlock) {
      const std::int64_t nb = std::min(kBlock, inner - i0);
      C* base = w.data() + o * n * inner + i0;
      for (std::int64_t k = 0; k < n; ++k)
        for (std::int64_t b = 0; b < nb; ++b) buf[static_cast<std::size_t>(b * n + k)] = base[k * inner + b];
      for (std::int64_t b = 0; b < nb; ++b) line.run(buf.data() + b * n, inverse);
      for (std::int64_t k = 0; k < n; ++k)
        for (std::int64_t b = 0; b < nb; ++b) base[k * inner + b] = buf[static_cast<std::size_t>(b * n + k)];
    }
}

template <class T>
void load(std::vector<C>& w, const void* in, std::int64_t count) {
  const T* p = static_cast<const T*>(in);
  w.resize(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) w[static_cast<std::size_t>(i)] = C(p[i]);
}

inline std::int64_t product(const std::int64_t* v, std::int64_t n) {
  std::int64_t r = 1;
  for (std::int64_t i = 0; i < n; ++i) r *= v[i];
  return r;
}

}  // namespace fft_impl

void fft_native(int fft_type, int dtype, std::int64_t rank, const std::int64_t* lengths, std::int64_t batch,
                const void* in, void* out) {
  using namespace fft_impl;
  const auto d = static_cast<DType>(dtype);
  const bool dbl = d == DType::c128 || d == DType::f64;
  const auto type = static_cast<FftType>(fft_type);
  const std::int64_t N = product(lengths, rank), n_last = lengths[rank - 1], m_last = n_last / 2 + 1;
  const std::int64_t lead = product(lengths, rank - 1);  // the product of the lengths but the last
  std::vector<std::int64_t> dims{batch};
  dims.insert(dims.end(), lengths, lengths + rank);
  std::vector<C> w;
  auto store_complex = [&](const std::vector<C>& v, std::int64_t count, std::int64_t row, std::int64_t keep, double scale) {
    // count elements as rows of `row`, of which the first `keep` are stored.
    const std::int64_t rows = count / row;
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t k = 0; k < keep; ++k) {
        const C x = v[static_cast<std::size_t>(r * row + k)] * scale;
        if (dbl) static_cast<std::complex<double>*>(out)[r * keep + k] = x;
        else static_cast<std::complex<float>*>(out)[r * keep + k] = std::complex<float>(x);
      }
  };
  if (N == 0 || batch == 0) {  // an empty transform: the output (RFFT of n = 0: one zero per row) is zeros
    const std::int64_t outn = type == FftType::rfft ? batch * lead * m_last : batch * N;
    const std::size_t bytes = static_cast<std::size_t>(outn) * (dbl ? 8 : 4) * (type == FftType::irfft ? 1 : 2);
    if (bytes) std::memset(out, 0, bytes);
    return;
  }
  switch (type) {
    case FftType::fft:
    case FftType::ifft: {
      const bool inv = type == FftType::ifft;
      if (dbl) load<std::complex<double>>(w, in, batch * N);
      else load<std::complex<float>>(w, in, batch * N);
      for (std::size_t a = 1; a < dims.size(); ++a) along_axis(w, dims, a, inv);
      store_complex(w, batch * N, 1, 1, inv ? 1.0 / static_cast<double>(N) : 1.0);
      return;
    }
    case FftType::rfft: {
      if (dbl) load<double>(w, in, batch * N);
      else load<float>(w, in, batch * N);
      for (std::size_t a = 1; a < dims.size(); ++a) along_axis(w, dims, a, false);
      store_complex(w, batch * N, n_last, m_last, 1.0);
      return;
    }
    case FftType::irfft: {
      // The inverse along every axis but the last on the half spectrum, then
      // along the last axis each row made whole by Hermitian symmetry
      // (X[n - k] = conj X[k]; the imaginary parts of X[0] and, n even,
      // X[n/2] do not reach the real result).
      std::vector<std::int64_t> half = dims;
      half.back() = m_last;
      const std::int64_t rows = batch * lead;
      if (dbl) load<std::complex<double>>(w, in, rows * m_last);
      else load<std::complex<float>>(w, in, rows * m_last);
      for (std::size_t a = 1; a + 1 < half.size(); ++a) along_axis(w, half, a, true);
      Line line(n_last);
      std::vector<C> full(static_cast<std::size_t>(n_last));
      const double scale = 1.0 / static_cast<double>(N);
      for (std::int64_t r = 0; r < rows; ++r) {
        const C* h = w.data() + r * m_last;
        for (std::int64_t k = 0; k < n_last; ++k)
          full[static_cast<std::size_t>(k)] = k < m_last ? h[k] : std::conj(h[n_last - k]);
        line.run(full.data(), true);
        for (std::int64_t k = 0; k < n_last; ++k) {
          const double x = full[static_cast<std::size_t>(k)].real() * scale;
          if (dbl) static_cast<double*>(out)[r * n_last + k] = x;
          else static_cast<float*>(out)[r * n_last + k] = static_cast<float>(x);
        }
      }
      return;
    }
  }
}

#if DYNSTAGE_FFT_USES_FFTW
namespace fft_impl {

// One cached plan: made with FFTW_ESTIMATE (which does not touch the arrays)
// on the first call's arrays, executed on later calls' arrays with the
// new-array functions; `aligned` records whether it may assume FFTW's SIMD
// alignment (else it was made with FFTW_UNALIGNED).
struct PlanKey {
  int type;
  bool dbl;
  std::vector<std::int64_t> lengths;
  std::int64_t batch;
  bool aligned, in_place;
  friend bool operator<(const PlanKey& a, const PlanKey& b) {
    return std::tie(a.type, a.dbl, a.lengths, a.batch, a.aligned, a.in_place) <
           std::tie(b.type, b.dbl, b.lengths, b.batch, b.aligned, b.in_place);
  }
};

// Transforms of at least this many elements (batch included) are planned
// with FFTW_MEASURE, for at most kMeasureSeconds; DYNSTAGE_FFTW_ESTIMATE=1
// plans every size with FFTW_ESTIMATE (no planning time).
inline constexpr std::int64_t kMeasureElements = std::int64_t{1} << 16;
inline constexpr double kMeasureSeconds = 2.0;
inline bool estimate_only() {
  static const bool v = [] {
    const char* e = std::getenv("DYNSTAGE_FFTW_ESTIMATE");
    return e && std::string_view(e) == "1";
  }();
  return v;
}

inline std::mutex& planner_mutex() {
  static std::mutex m;
  return m;
}
inline std::map<PlanKey, void*>& plans() {  // fftw_plan or fftwf_plan; never destroyed (kernels may run at exit)
  static auto* p = new std::map<PlanKey, void*>();
  return *p;
}

template <bool Dbl>
struct Fftw;
template <>
struct Fftw<true> {
  using R = double;
  using Cx = fftw_complex;
  using Plan = fftw_plan;
  static int alignment_of(R* p) { return fftw_alignment_of(p); }
  static void set_timelimit(double s) { fftw_set_timelimit(s); }
  static void* malloc(std::size_t n) { return fftw_malloc(n); }
  static void free(void* p) { fftw_free(p); }
  static Plan c2c(int r, const int* n, int howmany, Cx* i, Cx* o, int dist, int sign, unsigned f) {
    return fftw_plan_many_dft(r, n, howmany, i, nullptr, 1, dist, o, nullptr, 1, dist, sign, f);
  }
  static Plan r2c(int r, const int* n, int howmany, R* i, Cx* o, int idist, int odist, unsigned f) {
    return fftw_plan_many_dft_r2c(r, n, howmany, i, nullptr, 1, idist, o, nullptr, 1, odist, f);
  }
  static Plan c2r(int r, const int* n, int howmany, Cx* i, R* o, int idist, int odist, unsigned f) {
    return fftw_plan_many_dft_c2r(r, n, howmany, i, nullptr, 1, idist, o, nullptr, 1, odist, f);
  }
  static void exec_c2c(Plan p, Cx* i, Cx* o) { fftw_execute_dft(p, i, o); }
  static void exec_r2c(Plan p, R* i, Cx* o) { fftw_execute_dft_r2c(p, i, o); }
  static void exec_c2r(Plan p, Cx* i, R* o) { fftw_execute_dft_c2r(p, i, o); }
};
template <>
struct Fftw<false> {
  using R = float;
  using Cx = fftwf_complex;
  using Plan = fftwf_plan;
  static int alignment_of(R* p) { return fftwf_alignment_of(p); }
  static void set_timelimit(double s) { fftwf_set_timelimit(s); }
  static void* malloc(std::size_t n) { return fftwf_malloc(n); }
  static void free(void* p) { fftwf_free(p); }
  static Plan c2c(int r, const int* n, int howmany, Cx* i, Cx* o, int dist, int sign, unsigned f) {
    return fftwf_plan_many_dft(r, n, howmany, i, nullptr, 1, dist, o, nullptr, 1, dist, sign, f);
  }
  static Plan r2c(int r, const int* n, int howmany, R* i, Cx* o, int idist, int odist, unsigned f) {
    return fftwf_plan_many_dft_r2c(r, n, howmany, i, nullptr, 1, idist, o, nullptr, 1, odist, f);
  }
  static Plan c2r(int r, const int* n, int howmany, Cx* i, R* o, int idist, int odist, unsigned f) {
    return fftwf_plan_many_dft_c2r(r, n, howmany, i, nullptr, 1, idist, o, nullptr, 1, odist, f);
  }
  static void exec_c2c(Plan p, Cx* i, Cx* o) { fftwf_execute_dft(p, i, o); }
  static void exec_r2c(Plan p, R* i, Cx* o) { fftwf_execute_dft_r2c(p, i, o); }
  static void exec_c2r(Plan p, Cx* i, R* o) { fftwf_execute_dft_c2r(p, i, o); }
};

// false: the sizes do not fit FFTW's int interface (the caller falls back).
template <bool Dbl>
bool run_fftw(FftType type, std::int64_t rank, const std::int64_t* lengths, std::int64_t batch, const void* in_c,
              void* out) {
  using F = Fftw<Dbl>;
  using R = typename F::R;
  const std::int64_t N = product(lengths, rank), n_last = lengths[rank - 1];
  const std::int64_t half = N / n_last * (n_last / 2 + 1);  // complex elements of a half spectrum
  if (N > INT_MAX || batch > INT_MAX || half > INT_MAX) return false;
  const std::vector<int> n(lengths, lengths + rank);
  void* in = const_cast<void*>(in_c);  // read only: plans preserve their input (IRFFT works on a copy)
  void* scratch = nullptr;
  if (type == FftType::irfft) {  // FFTW's c2r overwrites its input
    const std::size_t bytes = static_cast<std::size_t>(batch * half) * 2 * sizeof(R);
    scratch = F::malloc(bytes);
    if (!scratch) throw std::bad_alloc();
    std::memcpy(scratch, in_c, bytes);
    in = scratch;
  }
  const bool aligned = F::alignment_of(static_cast<R*>(in)) == 0 && F::alignment_of(static_cast<R*>(out)) == 0;
  const PlanKey key{static_cast<int>(type), Dbl, std::vector<std::int64_t>(lengths, lengths + rank), batch, aligned,
                    in == out};
  typename F::Plan plan = nullptr;
  {
    std::lock_guard<std::mutex> lock(planner_mutex());
    auto it = plans().find(key);
    if (it != plans().end()) {
      plan = static_cast<typename F::Plan>(it->second);
    } else {
      // Large transforms are planned with FFTW_MEASURE (FFTW times candidate
      // algorithms: at most kMeasureSeconds, once per size and process; for
      // 1024 x 1024 ESTIMATE's plan was 2.5x slower) on scratch arrays, as
      // MEASURE overwrites its arrays; small ones with FFTW_ESTIMATE on the
      // call's own arrays (ESTIMATE does not touch them).
      const bool measure = aligned && in != out && batch * N >= kMeasureElements && !estimate_only();
      const unsigned flags = (measure ? FFTW_MEASURE : FFTW_ESTIMATE) | (aligned ? 0u : FFTW_UNALIGNED) |
                             (type == FftType::irfft ? FFTW_DESTROY_INPUT : FFTW_PRESERVE_INPUT);
      const int r = static_cast<int>(rank), b = static_cast<int>(batch);
      void* plan_in = in;
      void* plan_out = out;
      if (measure) {
        const std::size_t complex_elems = static_cast<std::size_t>(batch * (type == FftType::rfft || type == FftType::irfft ? half : N));
        const std::size_t real_elems = static_cast<std::size_t>(batch * N);
        const std::size_t in_bytes = type == FftType::rfft ? real_elems * sizeof(R) : complex_elems * 2 * sizeof(R);
        const std::size_t out_bytes = type == FftType::irfft ? real_elems * sizeof(R) : complex_elems * 2 * sizeof(R);
        plan_in = F::malloc(in_bytes);
        plan_out = F::malloc(out_bytes);
        if (!plan_in || !plan_out) throw std::bad_alloc();
        F::set_timelimit(kMeasureSeconds);
      }
      auto* ci = static_cast<typename F::Cx*>(plan_in);
      auto* co = static_cast<typename F::Cx*>(plan_out);
      switch (type) {
        case FftType::fft: plan = F::c2c(r, n.data(), b, ci, co, static_cast<int>(N), FFTW_FORWARD, flags); break;
        case FftType::ifft: plan = F::c2c(r, n.data(), b, ci, co, static_cast<int>(N), FFTW_BACKWARD, flags); break;
        case FftType::rfft:
          plan = F::r2c(r, n.data(), b, static_cast<R*>(plan_in), co, static_cast<int>(N), static_cast<int>(half), flags);
          break;
        case FftType::irfft:
          plan = F::c2r(r, n.data(), b, ci, static_cast<R*>(plan_out), static_cast<int>(half), static_cast<int>(N), flags);
          break;
      }
      if (measure) {
        F::free(plan_in);
        F::free(plan_out);
      }
      if (!plan) {
        if (scratch) F::free(scratch);
        return false;
      }
      plans()[key] = plan;
    }
  }
  switch (type) {
    case FftType::fft:
    case FftType::ifft: F::exec_c2c(plan, static_cast<typename F::Cx*>(in), static_cast<typename F::Cx*>(out)); break;
    case FftType::rfft: F::exec_r2c(plan, static_cast<R*>(in), static_cast<typename F::Cx*>(out)); break;
    case FftType::irfft: F::exec_c2r(plan, static_cast<typename F::Cx*>(in), static_cast<R*>(out)); break;
  }
  if (scratch) F::free(scratch);
  if (type == FftType::ifft || type == FftType::irfft) {  // FFTW's inverse is unnormalised
    const R s = R(1) / static_cast<R>(N);
    const std::int64_t count = batch * N * (type == FftType::ifft ? 2 : 1);
    R* o = static_cast<R*>(out);
    for (std::int64_t i = 0; i < count; ++i) o[i] *= s;
  }
  return true;
}

}  // namespace fft_impl
#endif  // DYNSTAGE_FFT_USES_FFTW

namespace fft_impl {
inline bool native_requested() {
  static const bool v = [] {
    const char* e = std::getenv("DYNSTAGE_FFT");
    return e && std::string_view(e) == "native";
  }();
  return v;
}
}  // namespace fft_impl

const char* fft_backend() { return DYNSTAGE_FFT_USES_FFTW && !fft_impl::native_requested() ? "fftw" : "native"; }

}  // namespace dyn::detail

extern "C" void dynstage_fft(std::int32_t fft_type, std::int32_t dtype, std::int64_t rank, const std::int64_t* lengths,
                             std::int64_t batch, const void* in, void* out) {
  using namespace dyn::detail;
#if DYNSTAGE_FFT_USES_FFTW
  const std::int64_t N = fft_impl::product(lengths, rank);
  if (!fft_impl::native_requested() && N > 0 && batch > 0) {
    const auto d = static_cast<dyn::DType>(dtype);
    const bool dbl = d == dyn::DType::c128 || d == dyn::DType::f64;
    const auto t = static_cast<FftType>(fft_type);
    if (dbl ? fft_impl::run_fftw<true>(t, rank, lengths, batch, in, out)
            : fft_impl::run_fftw<false>(t, rank, lengths, batch, in, out))
      return;
  }
#endif
  fft_native(fft_type, dtype, rank, lengths, batch, in, out);
}

#endif  // DYNSTAGE_IMPLEMENTATION
