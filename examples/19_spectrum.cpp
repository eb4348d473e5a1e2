// Lesson 19: a power spectrum with dyn::fft.
//
// A signal sampled at fs = 1000 Hz for one second holds two tones, 50 Hz
// (amplitude 1.0) and 120 Hz (amplitude 0.5), buried in Gaussian noise of
// standard deviation 2. Its power spectrum |rfft(x)|^2 / n (numpy.fft.rfft:
// the n/2 + 1 non-negative frequencies k * fs / n) shows the two tones as
// the two highest peaks, although no tone is visible in the samples. The
// same function runs eagerly and compiled by dyn::jit (the kernel calls
// FFTW, or dynstage's own transforms in a build without it: README, "FFTW
// and its licence"), and the round trip irfft(rfft(x)) gives the signal back.
#include <dynstage/dynstage.hpp>

#include <cmath>
#include <cstdlib>
#include <iostream>
#include <numbers>

int main() {
  const std::int64_t n = 1000;
  const double fs = 1000.0;
  const dyn::Array<double> t = dyn::arange<double>(n) / fs;
  const dyn::Array<double> noise = dyn::random::normal<double>(dyn::random::key(19), {n}) * 2.0;
  const double two_pi = 2 * std::numbers::pi;
  const dyn::Array<double> x = dyn::sin(t * (two_pi * 50.0)) + dyn::sin(t * (two_pi * 120.0)) * 0.5 + noise;

  // The power spectrum and its two highest peaks (dyn::top_k over the bins).
  auto spectrum = [n](auto signal) {
    auto X = dyn::fft::rfft(signal);
    auto power = dyn::real(X * dyn::conj(X)) / static_cast<double>(n);
    auto [peaks, bins] = dyn::top_k(power, 2);
    return std::tuple{power, peaks, bins};
  };
  auto [power, peaks, bins] = dyn::jit(spectrum)(x);
  std::cout << "the largest sample is " << dyn::max(dyn::abs(x))() << " (noise of std 2 hides the tones)\n";
  std::cout << power.shape()[0] << " frequency bins of " << fs / static_cast<double>(n) << " Hz\n";
  bool ok = true;
  for (int i = 0; i < 2; ++i) {
    const double f = bins(i) * fs / static_cast<double>(n);
    std::cout << "peak " << i + 1 << ": " << f << " Hz, power " << peaks(i) << "\n";
    ok = ok && (f == 50.0 || f == 120.0);
  }
  ok = ok && bins(0) != bins(1);

  // Eagerly, the same values; the jaxpr shows the fft primitive.
  auto [power_eager, peaks_eager, bins_eager] = spectrum(x);
  ok = ok && dyn::allclose(power, power_eager, 1e-12, 1e-12);
  std::cout << "--- the jaxpr\n" << dyn::make_jaxpr(spectrum)(x) << "\n";

  // The inverse transform gives the signal back.
  const dyn::Array<double> back = dyn::fft::irfft(dyn::fft::rfft(x), n);
  const double err = dyn::max(dyn::abs(back - x))();
  std::cout << "max |irfft(rfft(x)) - x| = " << err << "\n";
  ok = ok && err < 1e-12;
  std::cout << (ok ? "found the two tones\n" : "FAILED\n");
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
