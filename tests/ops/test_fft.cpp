// dyn::fft and the primitive fft (issue 24, part 2), eager and staged.
// Written from the contract and numpy.fft's: values against
// hand-computed constants and constants computed once with NumPy 1.24
// (numpy.fft, pasted below with the expression that made them), every norm,
// n cropping and padding, axes, the n-d and real transforms and their round
// trips, the jaxpr text, check_jaxpr, vmap against a loop, the transpose
// rule against the adjoint identity, both implementations (FFTW when built
// with it, and the native one) against a direct DFT, and the errors.
#include <doctest/doctest.h>

#include <dynstage/core.hpp>

#include <cmath>
#include <complex>
#include <cstdint>
#include <numbers>
#include <string>
#include <type_traits>
#include <vector>

#include "../test_util.hpp"

namespace {

using dyn::Array;
using dyn::DType;
using c64 = std::complex<float>;
using c128 = std::complex<double>;
using test_util::message_of;

template <class T>
std::vector<T> vals(const Array<T>& a) {
  return std::vector<T>(a.data(), a.data() + a.size());
}

// |got - want| <= tol * max(1, |want|) for every element.
template <class T, class U>
bool near(const Array<T>& a, const std::vector<U>& want, double tol) {
  if (a.size() != static_cast<std::int64_t>(want.size())) return false;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double err = std::abs(c128(a.data()[i]) - c128(want[i]));
    if (!(err <= tol * std::max(1.0, std::abs(c128(want[i]))))) {
      MESSAGE("element " << i << ": got " << c128(a.data()[i]) << ", want " << c128(want[i]));
      return false;
    }
  }
  return true;
}

// The direct O(n^2) DFT of one line, sign -1 (forward) or +1, unscaled.
std::vector<c128> dft(const std::vector<c128>& x, int sign) {
  const auto n = static_cast<std::int64_t>(x.size());
  std::vector<c128> y(x.size());
  for (std::int64_t k = 0; k < n; ++k) {
    c128 s = 0;
    for (std::int64_t j = 0; j < n; ++j) {
      const double a = sign * 2 * std::numbers::pi * static_cast<double>((j * k) % n) / static_cast<double>(n);
      s += x[static_cast<std::size_t>(j)] * c128(std::cos(a), std::sin(a));
    }
    y[static_cast<std::size_t>(k)] = s;
  }
  return y;
}

// x[k] = (sin(1.3 k + seed), cos(0.7 k * seed)): deterministic test data.
std::vector<c128> data(std::int64_t n, double seed) {
  std::vector<c128> v(static_cast<std::size_t>(n));
  for (std::int64_t k = 0; k < n; ++k) v[static_cast<std::size_t>(k)] = {std::sin(1.3 * k + seed), std::cos(0.7 * k * seed)};
  return v;
}

// NumPy: x = np.array([0.5, -1.25, 2.0, 3.5, -0.75]); np.fft.fft(x)
const std::vector<c128> kFft5 = {{4.0, 0.0},
                                 {-4.567627457812106, 1.3572061365862864},
                                 {3.817627457812106, -1.1326921482964938},
                                 {3.817627457812106, 1.1326921482964938},
                                 {-4.567627457812106, -1.3572061365862864}};

}  // namespace

TEST_CASE("fft: fft of [1, 2, 3, 4] is [10, -2+2i, -2, -2-2i] (hand-computed), c128 for f64 input") {
  const Array<double> x({4}, {1, 2, 3, 4});
  const auto y = dyn::fft::fft(x);
  static_assert(std::is_same_v<decltype(y), const Array<c128>>);
  CHECK(y.shape() == std::vector<std::int64_t>{4});
  CHECK(near(y, std::vector<c128>{{10, 0}, {-2, 2}, {-2, 0}, {-2, -2}}, 1e-15));
  // An integer input is computed in c64 (jnp.fft converts it, as numpy computes in complex128).
  const auto yi = dyn::fft::fft(Array<std::int32_t>({4}, {1, 2, 3, 4}));
  static_assert(std::is_same_v<decltype(yi), const Array<c64>>);
  CHECK(near(yi, std::vector<c128>{{10, 0}, {-2, 2}, {-2, 0}, {-2, -2}}, 1e-6));
  // A complex input: fft of the unit impulse at 1 is e^{-2 pi i k / 4}.
  const auto yc = dyn::fft::fft(Array<c64>({4}, {0, 1, 0, 0}));
  CHECK(near(yc, std::vector<c128>{{1, 0}, {0, -1}, {-1, 0}, {0, 1}}, 1e-6));
}

TEST_CASE("fft: a length that is not a power of two, every norm (NumPy's values)") {
  const Array<double> x({5}, {0.5, -1.25, 2.0, 3.5, -0.75});
  CHECK(near(dyn::fft::fft(x), kFft5, 1e-14));
  CHECK(near(dyn::fft::fft(x, std::nullopt, -1, "backward"), kFft5, 1e-14));
  // np.fft.fft(x, norm='ortho'): kFft5 / sqrt(5)
  std::vector<c128> ortho;
  for (c128 v : kFft5) ortho.push_back(v / std::sqrt(5.0));
  CHECK(near(dyn::fft::fft(x, std::nullopt, -1, "ortho"), ortho, 1e-14));
  CHECK(near(dyn::fft::fft(x, std::nullopt, -1, "ortho"),
             std::vector<c128>{{1.7888543819998317, 0}, {-2.0427050983124846, 0.6069610361773602},
                               {1.7072949016875159, -0.5065553282342465}, {1.7072949016875159, 0.5065553282342465},
                               {-2.0427050983124846, -0.6069610361773602}},
             1e-14));
  std::vector<c128> fwd;
  for (c128 v : kFft5) fwd.push_back(v / 5.0);
  CHECK(near(dyn::fft::fft(x, std::nullopt, -1, "forward"), fwd, 1e-14));
  // ifft: backward divides by n, forward does not (np.fft.ifft(x, norm='forward') is conj(kFft5)
  // for this real x), ortho by sqrt(n).
  std::vector<c128> conj_all, conj_n, conj_sqrt;
  for (c128 v : kFft5) {
    conj_all.push_back(std::conj(v));
    conj_n.push_back(std::conj(v) / 5.0);
    conj_sqrt.push_back(std::conj(v) / std::sqrt(5.0));
  }
  CHECK(near(dyn::fft::ifft(x, std::nullopt, -1, "forward"), conj_all, 1e-14));
  CHECK(near(dyn::fft::ifft(x), conj_n, 1e-14));
  CHECK(near(dyn::fft::ifft(x, std::nullopt, -1, "ortho"), conj_sqrt, 1e-14));
  // Round trips, each norm with its own inverse.
  for (const char* norm : {"backward", "ortho", "forward"}) {
    CAPTURE(norm);
    CHECK(near(dyn::fft::ifft(dyn::fft::fft(x, std::nullopt, -1, norm), std::nullopt, -1, norm),
               std::vector<double>{0.5, -1.25, 2.0, 3.5, -0.75}, 1e-15));
  }
}

TEST_CASE("fft: n zero-pads or crops the axis first (NumPy's values)") {
  const Array<double> x({4}, {1, 2, 3, 4});
  // np.fft.fft([1., 2., 3., 4.], n=6)
  CHECK(near(dyn::fft::fft(x, 6),
             std::vector<c128>{{10, 0}, {-3.5, -4.330127018922193}, {2.5, 0.8660254037844386}, {-2, 0},
                               {2.5, -0.8660254037844386}, {-3.5, 4.330127018922193}},
             1e-14));
  // np.fft.fft([1., 2., 3., 4.], n=3)
  CHECK(near(dyn::fft::fft(x, 3), std::vector<c128>{{6, 0}, {-1.5, 0.8660254037844386}, {-1.5, -0.8660254037844386}},
             1e-14));
  CHECK(dyn::fft::fft(x, 1).shape() == std::vector<std::int64_t>{1});
}

TEST_CASE("fft: axis, fft2, fftn with s and axes (NumPy's values), round trips") {
  const Array<double> a({2, 3}, {1, 2, 3, 4, -5, 6.5});
  // np.fft.fft(a, axis=0)
  CHECK(near(dyn::fft::fft(a, std::nullopt, 0), std::vector<c128>{5, -3, 9.5, -3, 7, -3.5}, 1e-15));
  CHECK(dyn::fft::fft(a, std::nullopt, 0).shape() == std::vector<std::int64_t>{2, 3});
  // np.fft.fft2(a)
  const std::vector<c128> f2 = {{11.5, 0}, {1.75, 10.825317547305483}, {1.75, -10.825317547305483},
                                {0.5, 0},  {-4.75, -9.093266739736604}, {-4.75, 9.093266739736604}};
  CHECK(near(dyn::fft::fft2(a), f2, 1e-14));
  CHECK(near(dyn::fft::fftn(a), f2, 1e-14));
  CHECK(near(dyn::fft::ifft2(dyn::fft::fft2(a)), vals(a), 1e-15));
  // The axes in the other order give the same transform.
  CHECK(near(dyn::fft::fft2(a, std::nullopt, {1, 0}), f2, 1e-14));
  // b = np.arange(24.).reshape(2, 3, 4) ** 1.5 % 7
  std::vector<double> bv(24);
  for (int i = 0; i < 24; ++i) bv[static_cast<std::size_t>(i)] = std::fmod(std::pow(static_cast<double>(i), 1.5), 7.0);
  const Array<double> b({2, 3, 4}, bv);
  // np.fft.fftn(b).ravel()
  const std::vector<c128> fn = {
      {83.52401131058939, 0},   {-6.4486692026126455, 3.037847752541074}, {-8.069250986907468, 0},
      {-6.4486692026126455, -3.037847752541074}, {-2.8461269781684333, 8.8561500990709},
      {12.865498797878232, 3.486708586583527},   {3.461296580030752, 2.952259725494317},
      {-5.344063069050525, 2.2683482347665347},  {-2.8461269781684333, -8.8561500990709},
      {-5.344063069050525, -2.2683482347665347}, {3.461296580030752, -2.952259725494317},
      {12.865498797878232, -3.486708586583527},  {-19.213644585258024, 0},
      {-2.5927811677064163, -2.9999589394026547}, {-17.13887901402959, 0},
      {-2.5927811677064163, 2.9999589394026547}, {-2.235317742138781, -4.810895603579397},
      {-8.417403507879953, 5.101822071146087},   {-0.9604074734435488, 5.311322658718533},
      {-7.033144599105831, -18.818843300138294}, {-2.235317742138781, 4.810895603579397},
      {-7.033144599105831, 18.818843300138294},  {-0.9604074734435488, -5.311322658718533},
      {-8.417403507879953, -5.101822071146087}};
  CHECK(near(dyn::fft::fftn(b), fn, 1e-13));
  CHECK(near(dyn::fft::ifftn(dyn::fft::fftn(b)), bv, 1e-14));
  // np.fft.fftn(b, s=(3, 3), axes=(0, 2)).ravel(): axis 0 padded to 3, axis 2 cropped to 3
  const std::vector<c128> fs = {
      {18.65301650226629, 0},   {0.52732082134644, 0.29398441177310075},   {0.52732082134644, -0.29398441177310075},
      {13.337606347845362, 0},  {-3.668803173922681, 2.417367281879823},   {-3.668803173922681, -2.417367281879823},
      {27.116149009832984, 0},  {-2.9528703579748417, -2.0976575274427227}, {-2.9528703579748417, 2.0976575274427227},
      {-3.583867564013859, -12.838471001605342}, {-4.251703128880375, 0.11377350209725812},
      {-2.01825837958535, -4.342635103125859},   {2.1471143423743406, -6.460833571723049},
      {4.382495378298004, -3.8023761567326813},  {-5.029609720672345, 7.665133517102415},
      {3.3172158945634855, -13.740320440526743}, {-3.333228933789041, -2.2394143055174},
      {-3.2658146168532447, 1.8391357272776956}, {-3.583867564013859, 12.838471001605342},
      {-2.01825837958535, 4.342635103125859},    {-4.251703128880375, -0.11377350209725812},
      {2.1471143423743406, 6.460833571723049},   {-5.029609720672345, -7.665133517102415},
      {4.382495378298004, 3.8023761567326813},   {3.3172158945634855, 13.740320440526743},
      {-3.2658146168532447, -1.8391357272776956}, {-3.333228933789041, 2.2394143055174}};
  const auto ys = dyn::fft::fftn(b, std::vector<std::int64_t>{3, 3}, std::vector<std::int64_t>{0, 2});
  CHECK(ys.shape() == std::vector<std::int64_t>{3, 3, 3});
  CHECK(near(ys, fs, 1e-13));
}

TEST_CASE("fft: rfft and irfft (NumPy's values), odd and even lengths, round trips") {
  const Array<double> r({8}, {1.0, -2.0, 0.5, 4.0, 3.0, -1.5, 2.5, 0.25});
  // np.fft.rfft(r)
  const auto y = dyn::fft::rfft(r);
  static_assert(std::is_same_v<decltype(y), const Array<c128>>);
  CHECK(y.shape() == std::vector<std::int64_t>{5});
  CHECK(near(y,
             std::vector<c128>{{7.75, 0}, {-5.005203820042827, -0.29809703885627936}, {1, 7.75},
                               {1.0052038200428273, -4.298097038856279}, {6.25, 0}},
             1e-14));
  // np.fft.rfft(r, n=5): cropped to 5, 3 outputs
  CHECK(near(dyn::fft::rfft(r, 5),
             std::vector<c128>{{6.5, 0}, {-2.331559480312316, 6.812530964499423}, {1.581559480312316, -0.3897715455706714}},
             1e-14));
  CHECK(near(dyn::fft::irfft(y), vals(r), 1e-15));
  const Array<c128> z({4}, {{1, 2}, {-0.5, 0.25}, {3, -1}, {0.75, 0.5}});
  // np.fft.irfft(z): n = 2 (4 - 1) = 6
  const auto x6 = dyn::fft::irfft(z);
  static_assert(std::is_same_v<decltype(x6), const Array<double>>);
  CHECK(near(x6,
             std::vector<double>{1.125, -0.3251603157205569, -0.485843918243516, 1.208333333333333,
                                 0.23584391824351605, -0.7581730176127761},
             1e-14));
  // np.fft.irfft(z, n=7): odd, z cropped to 7 // 2 + 1 = 4 (all of it)
  CHECK(near(dyn::fft::irfft(z, 7),
             std::vector<double>{1.0714285714285714, -0.1692874804911678, -0.5459225032182998, 0.36465621877766946,
                                 1.1519512892567159, -0.3820939455445861, -0.49073215020890326},
             1e-14));
  // f32 stays single precision: rfft of f32 is c64, irfft of c64 is f32.
  const Array<float> rf({8}, {1.0f, -2.0f, 0.5f, 4.0f, 3.0f, -1.5f, 2.5f, 0.25f});
  const auto yf = dyn::fft::rfft(rf);
  static_assert(std::is_same_v<decltype(yf), const Array<c64>>);
  const auto back = dyn::fft::irfft(yf, 8);
  static_assert(std::is_same_v<decltype(back), const Array<float>>);
  CHECK(near(back, vals(r), 1e-6));
  // ortho round trip
  CHECK(near(dyn::fft::irfft(dyn::fft::rfft(r, std::nullopt, -1, "ortho"), 8, -1, "ortho"), vals(r), 1e-15));
}

TEST_CASE("fft: both implementations against the direct DFT, every length 1..40 and 2-D, f64 and f32") {
  const std::string backend = dyn::detail::fft_backend();
  CHECK((backend == "fftw" || backend == "native"));
  for (std::int64_t n = 1; n <= 40; ++n) {
    CAPTURE(n);
    const std::vector<c128> x = data(n, 0.3), want = dft(x, -1);
    const std::int64_t lengths[1] = {n};
    std::vector<c128> out(static_cast<std::size_t>(n));
    dyn::detail::fft_native(0, static_cast<int>(DType::c128), 1, lengths, 1, x.data(), out.data());
    for (std::int64_t k = 0; k < n; ++k) CHECK(std::abs(out[static_cast<std::size_t>(k)] - want[static_cast<std::size_t>(k)]) <= 1e-12 * n);
    dynstage_fft(0, static_cast<int>(DType::c128), 1, lengths, 1, x.data(), out.data());
    for (std::int64_t k = 0; k < n; ++k) CHECK(std::abs(out[static_cast<std::size_t>(k)] - want[static_cast<std::size_t>(k)]) <= 1e-12 * n);
    // IFFT (scaled by 1/n) of f32 data, both implementations.
    std::vector<c64> xf(x.begin(), x.end()), of(static_cast<std::size_t>(n));
    const std::vector<c128> inv = dft(x, 1);
    dyn::detail::fft_native(1, static_cast<int>(DType::c64), 1, lengths, 1, xf.data(), of.data());
    for (std::int64_t k = 0; k < n; ++k)
      CHECK(std::abs(c128(of[static_cast<std::size_t>(k)]) - inv[static_cast<std::size_t>(k)] / static_cast<double>(n)) <= 1e-5);
    dynstage_fft(1, static_cast<int>(DType::c64), 1, lengths, 1, xf.data(), of.data());
    for (std::int64_t k = 0; k < n; ++k)
      CHECK(std::abs(c128(of[static_cast<std::size_t>(k)]) - inv[static_cast<std::size_t>(k)] / static_cast<double>(n)) <= 1e-5);
    // RFFT then IRFFT (both implementations) on the real parts, batch of 2.
    std::vector<double> re(static_cast<std::size_t>(2 * n)), back(static_cast<std::size_t>(2 * n));
    for (std::int64_t k = 0; k < 2 * n; ++k) re[static_cast<std::size_t>(k)] = std::sin(0.9 * k) + 0.1 * k;
    std::vector<c128> half(static_cast<std::size_t>(2 * (n / 2 + 1)));
    for (bool native : {true, false}) {
      auto run = native ? &dyn::detail::fft_native : [](int t, int d, std::int64_t r, const std::int64_t* l, std::int64_t b,
                                                       const void* i, void* o) { dynstage_fft(t, d, r, l, b, i, o); };
      run(2, static_cast<int>(DType::f64), 1, lengths, 2, re.data(), half.data());
      std::vector<c128> row0(re.begin(), re.begin() + n);
      const std::vector<c128> want0 = dft(row0, -1);
      for (std::int64_t k = 0; k <= n / 2; ++k) CHECK(std::abs(half[static_cast<std::size_t>(k)] - want0[static_cast<std::size_t>(k)]) <= 1e-12 * n);
      run(3, static_cast<int>(DType::c128), 1, lengths, 2, half.data(), back.data());
      for (std::int64_t k = 0; k < 2 * n; ++k) CHECK(std::abs(back[static_cast<std::size_t>(k)] - re[static_cast<std::size_t>(k)]) <= 1e-12 * n);
    }
  }
  // 2-D 6 x 10, batch 3: the native transform against FFTW-or-native through dynstage_fft, and a round trip.
  const std::int64_t lengths[2] = {6, 10};
  const std::vector<c128> x = data(3 * 60, 1.1);
  std::vector<c128> a(x.size()), b2(x.size()), back(x.size());
  dyn::detail::fft_native(0, static_cast<int>(DType::c128), 2, lengths, 3, x.data(), a.data());
  dynstage_fft(0, static_cast<int>(DType::c128), 2, lengths, 3, x.data(), b2.data());
  for (std::size_t i = 0; i < x.size(); ++i) CHECK(std::abs(a[i] - b2[i]) <= 1e-12);
  dynstage_fft(1, static_cast<int>(DType::c128), 2, lengths, 3, a.data(), back.data());
  for (std::size_t i = 0; i < x.size(); ++i) CHECK(std::abs(back[i] - x[i]) <= 1e-13);
  // A 2-D irfft of a half spectrum made by rfft, natively: the input back.
  std::vector<double> rr(60), rb(60);
  for (int i = 0; i < 60; ++i) rr[static_cast<std::size_t>(i)] = std::cos(0.37 * i * i);
  std::vector<c128> h(6 * 6);
  dyn::detail::fft_native(2, static_cast<int>(DType::f64), 2, lengths, 1, rr.data(), h.data());
  dyn::detail::fft_native(3, static_cast<int>(DType::c128), 2, lengths, 1, h.data(), rb.data());
  for (std::size_t i = 0; i < 60; ++i) CHECK(std::abs(rb[i] - rr[i]) <= 1e-13);
  // The same through dynstage_fft (FFTW in a build with it): equal to rounding.
  std::vector<c128> h2(6 * 6);
  dynstage_fft(2, static_cast<int>(DType::f64), 2, lengths, 1, rr.data(), h2.data());
  for (std::size_t i = 0; i < h.size(); ++i) CHECK(std::abs(h2[i] - h[i]) <= 1e-12);
  dynstage_fft(3, static_cast<int>(DType::c128), 2, lengths, 1, h2.data(), rb.data());
  for (std::size_t i = 0; i < 60; ++i) CHECK(std::abs(rb[i] - rr[i]) <= 1e-13);
}

TEST_CASE("fft: the jaxpr is JAX's (golden text), check_jaxpr accepts it") {
  auto f = [](auto x) { return dyn::fft::fft(x); };
  const auto cj = dyn::make_jaxpr(f)(Array<float>({8}));
  CHECK(dyn::to_string(cj) ==
        "{ lambda ; a:f32[8]. let\n"
        "    b:c64[8] = convert_element_type[new_dtype=complex64 weak_type=False] a\n"
        "    c:c64[8] = fft[fft_lengths=(8,) fft_type=0] b\n"
        "  in (c,) }");
  CHECK_NOTHROW(dyn::check_jaxpr(cj));
  // rfft, irfft with n, an axis that is not the last (moved there and back), a norm.
  auto g = [](auto x) { return dyn::fft::irfft(dyn::fft::rfft(x, std::nullopt, 0), 6, 0, "ortho"); };
  const auto cg = dyn::make_jaxpr(g)(Array<double>({6, 2}));
  CHECK(dyn::to_string(cg) ==
        "{ lambda ; a:f64[6,2]. let\n"
        "    b:f64[2,6] = transpose[permutation=(1, 0)] a\n"
        "    c:c128[2,4] = fft[fft_lengths=(6,) fft_type=2] b\n"
        "    d:c128[4,2] = transpose[permutation=(1, 0)] c\n"
        "    e:c128[2,4] = transpose[permutation=(1, 0)] d\n"
        "    f:f64[2,6] = fft[fft_lengths=(6,) fft_type=3] e\n"
        "    g:f64[2,6] = mul f 2.449489742783178:f64[]\n"
        "    h:f64[6,2] = transpose[permutation=(1, 0)] g\n"
        "  in (h,) }");
  CHECK_NOTHROW(dyn::check_jaxpr(cg));
  // n pads (pad) or crops (slice) before the fft; fft2 binds one fft over two lengths.
  const auto cp = dyn::make_jaxpr([](auto x) { return dyn::fft::fft2(x, std::vector<std::int64_t>{4, 2}); })(Array<c64>({3, 3}));
  CHECK(dyn::to_string(cp) ==
        "{ lambda ; a:c64[3,3]. let\n"
        "    b:c64[3,2] = slice[limit_indices=(3, 2) start_indices=(0, 0) strides=None] a\n"
        "    c:c64[4,2] = pad[padding_config=((0, 1, 0), (0, 0, 0))] b 0j:c64[]\n"
        "    d:c64[4,2] = fft[fft_lengths=(4, 2) fft_type=0] c\n"
        "  in (d,) }");
  CHECK_NOTHROW(dyn::check_jaxpr(cp));
  // Symbolic lengths print None and stay symbolic.
  const auto cs = dyn::make_jaxpr(f, dyn::polymorphic_shapes{"(n,)"})(Array<double>({5}));
  CHECK(dyn::to_string(cs) ==
        "{ lambda ; a:i64[] b:f64[a]. let\n"
        "    c:c128[a] = convert_element_type[new_dtype=complex128 weak_type=False] b\n"
        "    d:c128[a] = fft[fft_lengths=(None,) fft_type=0] c\n"
        "  in (d,) }");
  CHECK_NOTHROW(dyn::check_jaxpr(cs));
  CHECK(near(dyn::eval_jaxpr(cs, {dyn::AnyArray(Array<double>({5}, {0.5, -1.25, 2.0, 3.5, -0.75}))})[0].get<c128>(),
             kFft5, 1e-14));
}

TEST_CASE("fft: vmap equals a loop of calls (batch axis 0 and 1)") {
  std::vector<double> v(3 * 8);
  for (int i = 0; i < 24; ++i) v[static_cast<std::size_t>(i)] = std::sin(0.7 * i * i);
  const Array<double> xs({3, 8}, v);
  auto f = [](auto x) { return dyn::fft::rfft(x, 6); };
  const Array<c128> batched = dyn::vmap(f)(xs);
  REQUIRE(batched.shape() == std::vector<std::int64_t>{3, 4});
  for (std::int64_t i = 0; i < 3; ++i) {
    const Array<double> row({8}, std::vector<double>(v.begin() + 8 * i, v.begin() + 8 * i + 8));
    const auto one = vals(f(row));
    for (std::int64_t k = 0; k < 4; ++k) CHECK(std::abs(batched.data()[i * 4 + k] - one[static_cast<std::size_t>(k)]) <= 1e-14);
  }
  // Batched along axis 1, a 2-D transform of each (2, 4) slice.
  const Array<double> ys({2, 3, 4}, v);
  auto g = [](auto x) { return dyn::fft::fft2(x); };
  const Array<c128> b2 = dyn::vmap(g, {1}, 0)(ys);
  REQUIRE(b2.shape() == std::vector<std::int64_t>{3, 2, 4});
  for (std::int64_t j = 0; j < 3; ++j) {
    std::vector<double> s;
    for (std::int64_t i = 0; i < 2; ++i)
      for (std::int64_t k = 0; k < 4; ++k) s.push_back(v[static_cast<std::size_t>(i * 12 + j * 4 + k)]);
    const auto one = vals(g(Array<double>({2, 4}, s)));
    for (std::size_t k = 0; k < 8; ++k) CHECK(std::abs(b2.data()[j * 8 + static_cast<std::int64_t>(k)] - one[k]) <= 1e-13);
  }
}

TEST_CASE("fft: the transpose rule satisfies <ct, A x> = <A^T ct, x> for FFT, IFFT, RFFT, IRFFT") {
  using namespace dyn::detail;
  // Bilinear (no conjugation) pairing of two arrays of one dtype, as reals or complex.
  auto dot = [](const dyn::AnyArray& a, const dyn::AnyArray& b) {
    c128 s = 0;
    auto at = [](const dyn::AnyArray& x, std::int64_t i) -> c128 {
      switch (x.dtype()) {
        case DType::f64: return x.get<double>().data()[i];
        case DType::c128: return x.get<c128>().data()[i];
        default: FAIL("dtype"); return 0;
      }
    };
    REQUIRE(a.size() == b.size());
    for (std::int64_t i = 0; i < a.size(); ++i) s += at(a, i) * at(b, i);
    return s;
  };
  struct Case {
    FftType t;
    std::vector<std::int64_t> lengths, in_shape, out_shape;
  };
  for (const Case& c : {Case{FftType::fft, {3, 4}, {2, 3, 4}, {2, 3, 4}}, Case{FftType::ifft, {5}, {2, 5}, {2, 5}},
                        Case{FftType::rfft, {3, 6}, {3, 6}, {3, 4}}, Case{FftType::rfft, {7}, {2, 7}, {2, 4}},
                        Case{FftType::irfft, {6}, {2, 4}, {2, 6}}, Case{FftType::irfft, {3, 5}, {3, 3}, {3, 5}}}) {
    CAPTURE(static_cast<int>(c.t));
    CAPTURE(c.lengths.size());
    const bool real_in = c.t == FftType::rfft, real_out = c.t == FftType::irfft;
    std::int64_t nin = 1, nout = 1;
    for (auto d : c.in_shape) nin *= d;
    for (auto d : c.out_shape) nout *= d;
    auto make = [](bool real, const std::vector<std::int64_t>& shape, std::int64_t n, double seed) -> dyn::AnyArray {
      const std::vector<c128> d = data(n, seed);
      if (real) {
        std::vector<double> r;
        for (c128 v : d) r.push_back(v.real());
        return dyn::AnyArray(Array<double>(shape, r));
      }
      return dyn::AnyArray(Array<c128>(shape, d));
    };
    const dyn::AnyArray x = make(real_in, c.in_shape, nin, 0.4), ct = make(real_out, c.out_shape, nout, 1.7);
    const FftParams p{c.t, c.lengths};
    const Value y = bind1(Prim::fft, {Value{x, nullptr, false}}, p);
    dyn::Shape xs;
    for (auto d : c.in_shape) xs.push_back(dyn::Dim(d));
    const std::vector<Tangent> r =
        transpose_rule(Prim::fft, {LinArg{std::nullopt, x.dtype(), xs}}, {Tangent(Value{ct, nullptr, false})}, p);
    REQUIRE(r.at(0).has_value());
    REQUIRE(r[0]->array.dtype() == x.dtype());
    REQUIRE(r[0]->array.shape() == c.in_shape);
    const c128 lhs = dot(ct, y.array), rhs = dot(r[0]->array, x);
    if (real_in || real_out) {
      // A map between real and complex values is only real-linear: JAX's
      // convention (jax-ml/jax#6223) makes the real parts of the two
      // pairings agree (RFFT's transpose is Re(F pad(ct)), IRFFT's the
      // conjugate of its gradient mask rfft(ct) / N).
      CHECK(std::abs(lhs.real() - rhs.real()) <= 1e-12 * (1 + std::abs(lhs)));
    } else {
      CHECK(std::abs(lhs - rhs) <= 1e-12 * (1 + std::abs(lhs)));
    }
  }
}

TEST_CASE("fft: errors name the operation, the lengths and the user's line") {
  const Array<double> x({4}, {1, 2, 3, 4});
  CHECK(message_of<dyn::TypeError>([&] { (void)dyn::fft::fft(x, std::nullopt, -1, "unitary"); }) ==
        "dyn::fft::fft: norm must be \"backward\", \"ortho\" or \"forward\", got \"unitary\"");
  CHECK(message_of<dyn::IndexError>([&] { (void)dyn::fft::ifft(x, std::nullopt, 1); }) ==
        "dyn::fft::ifft: axis 1 is out of bounds for an array of rank 1");
  CHECK(message_of<dyn::ShapeError>([&] { (void)dyn::fft::fft(x, 0); }) ==
        "dyn::fft::fft: invalid number of data points (0) specified");
  CHECK(message_of<dyn::ShapeError>([&] { (void)dyn::fft::irfft(Array<c128>({1})); }) ==
        "dyn::fft::irfft: invalid number of data points (0) specified");
  CHECK(message_of<dyn::IndexError>([&] { (void)dyn::fft::fft2(Array<double>({2, 2}), std::nullopt, {0, -2}); }) ==
        "dyn::fft::fft2: axis 0 appears twice in axes");
  CHECK(message_of<dyn::ShapeError>([&] {
          (void)dyn::fft::fftn(Array<double>({2, 2}), std::vector<std::int64_t>{2}, std::vector<std::int64_t>{0, 1});
        }) == "dyn::fft::fftn: s and axes must have the same length, got 1 and 2");
  // The primitive itself: an irfft whose operand does not have n // 2 + 1 values names both lengths.
  using namespace dyn::detail;
  const Value z{dyn::AnyArray(Array<c128>({2, 4})), nullptr, false};
  CHECK(message_of<dyn::ShapeError>([&] { (void)bind1(Prim::fft, {z}, FftParams{FftType::irfft, {8}}); }) ==
        "fft (irfft, fft_lengths=(8,)): an irfft of length 8 needs 5 complex values along the last axis (n // 2 + "
        "1), got 4 (operand c128[2,4])");
  CHECK(message_of<dyn::ShapeError>([&] { (void)bind1(Prim::fft, {z}, FftParams{FftType::fft, {5}}); }) ==
        "fft (fft, fft_lengths=(5,)): axis 1 of the operand c128[2,4] must have size 5, got 4");
  CHECK(message_of<dyn::TypeError>([&] { (void)bind1(Prim::fft, {z}, FftParams{FftType::rfft, {4}}); }) ==
        "fft (rfft, fft_lengths=(4,)) does not accept dtype c128; it requires f32 or f64");
  CHECK(message_of<dyn::ShapeError>([&] { (void)bind1(Prim::fft, {z}, FftParams{FftType::fft, {2, 2, 4}}); }) ==
        "fft (fft, fft_lengths=(2, 2, 4)): the operand must have at least 3 axes, got c128[2,4]");
  // The message carries the user's line.
  std::string what;
  const int line = __LINE__ + 2;
  try {
    (void)dyn::fft::rfft(x, std::nullopt, -1, "none");
  } catch (const dyn::TypeError& e) {
    what = e.what();
  }
  CHECK(what.find("(at " + std::string(__FILE__) + ":" + std::to_string(line) + ")") != std::string::npos);
}

TEST_CASE("fft: check_jaxpr recomputes an fft equation's type by its rule (wrong length, wrong dtype, bad params)") {
  const auto cj = dyn::make_jaxpr([](auto x) { return dyn::fft::rfft(x); })(Array<double>({2, 8}));
  REQUIRE(dyn::to_string(cj) ==
          "{ lambda ; a:f64[2,8]. let\n"
          "    b:c128[2,5] = fft[fft_lengths=(8,) fft_type=2] a\n"
          "  in (b,) }");
  auto check_message = [](const dyn::ClosedJaxpr& c) { return message_of<dyn::TypeError>([&] { dyn::check_jaxpr(c); }); };
  auto j = std::make_shared<dyn::Jaxpr>(*cj.jaxpr);
  j->types.at(static_cast<std::size_t>(j->eqns[0].outputs[0])).shape = {dyn::JDim{2, -1}, dyn::JDim{8, -1}};
  CHECK(check_message({j, cj.consts}) ==
        "check_jaxpr: equation #0 `b:c128[2,8] = fft[fft_lengths=(8,) fft_type=2] a`: output #0 has type c128[2,8] "
        "but the rule gives c128[2,5]");
  j = std::make_shared<dyn::Jaxpr>(*cj.jaxpr);
  j->types.at(static_cast<std::size_t>(j->eqns[0].outputs[0])).dtype = DType::c64;
  CHECK(check_message({j, cj.consts}) ==
        "check_jaxpr: equation #0 `b:c64[2,5] = fft[fft_lengths=(8,) fft_type=2] a`: output #0 has type c64[2,5] "
        "but the rule gives c128[2,5]");
  j = std::make_shared<dyn::Jaxpr>(*cj.jaxpr);
  std::get<dyn::detail::FftParams>(j->eqns[0].params).fft_lengths = {6};
  CHECK(check_message({j, cj.consts}) ==
        "check_jaxpr: equation #0 `b:c128[2,5] = fft[fft_lengths=(6,) fft_type=2] a`: the rule of fft rejects its "
        "operands (f64[2,8]): fft (rfft, fft_lengths=(6,)): axis 1 of the operand f64[2,8] must have size 6, got 8");
}

TEST_CASE("fft: the native transform's four-step path (2^14 points and more) and Bluestein over it, against direct sums") {
  // 2^14 and 2^15 (n2 = 2 n1), 12289 (prime: Bluestein with a 2^15-point convolution), a batch of 2-D 3 x 2^14.
  for (std::int64_t n : {std::int64_t{1} << 14, std::int64_t{1} << 15, std::int64_t{12289}}) {
    CAPTURE(n);
    const std::vector<c128> x = data(n, 0.7);
    std::vector<c128> y(x.size()), back(x.size()), z(x.size());
    const std::int64_t lengths[1] = {n};
    dyn::detail::fft_native(0, static_cast<int>(DType::c128), 1, lengths, 1, x.data(), y.data());
    double mag = 0;
    for (c128 v : y) mag = std::max(mag, std::abs(v));
    for (std::int64_t k : {std::int64_t{0}, std::int64_t{1}, std::int64_t{2}, std::int64_t{777}, n / 2, n - 1, n - 4097}) {
      c128 s = 0;  // the direct sum of bin k
      for (std::int64_t j = 0; j < n; ++j) {
        const double a = -2 * std::numbers::pi * static_cast<double>((j * k) % n) / static_cast<double>(n);
        s += x[static_cast<std::size_t>(j)] * c128(std::cos(a), std::sin(a));
      }
      CAPTURE(k);
      CHECK(std::abs(y[static_cast<std::size_t>(k)] - s) <= 1e-13 * mag);
    }
    dyn::detail::fft_native(1, static_cast<int>(DType::c128), 1, lengths, 1, y.data(), back.data());
    dynstage_fft(0, static_cast<int>(DType::c128), 1, lengths, 1, x.data(), z.data());  // FFTW, when built with it
    double round_trip = 0, vs_fftw = 0;  // the largest differences
    for (std::size_t i = 0; i < x.size(); ++i) {
      round_trip = std::max(round_trip, std::abs(back[i] - x[i]));
      vs_fftw = std::max(vs_fftw, std::abs(z[i] - y[i]));
    }
    CHECK(round_trip <= 1e-14);
    CHECK(vs_fftw <= 1e-14 * mag);
  }
  const std::int64_t lengths[2] = {3, std::int64_t{1} << 14};
  const std::vector<c128> x = data(2 * 3 * (1 << 14), 0.2);
  std::vector<c128> y(x.size()), z(x.size());
  dyn::detail::fft_native(0, static_cast<int>(DType::c128), 2, lengths, 2, x.data(), y.data());
  dynstage_fft(0, static_cast<int>(DType::c128), 2, lengths, 2, x.data(), z.data());
  double mag = 0;
  double diff = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    mag = std::max(mag, std::abs(z[i]));
    diff = std::max(diff, std::abs(z[i] - y[i]));
  }
  CHECK(diff <= 1e-14 * mag);
}
