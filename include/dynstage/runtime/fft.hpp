// dynstage: the Fourier transforms behind the fft primitive (issue 24): one
// C entry point, dynstage_fft, that the eager kernel (eager/kernels_fft.hpp)
// and compiled kernels (llvm/lower_fft.hpp) both call, so the two compute
// the same values. The definitions are in runtime/fft_impl.hpp (the
// implementation TU only).
//
// Two implementations behind it:
//   - FFTW 3 (libfftw3-dev; GPL, optional): used when dynstage is built with
//     DYNSTAGE_HAVE_FFTW=1 (Meson defines it when it finds fftw3 and fftw3f;
//     -Dfftw=disabled builds without). A plan is made once per (transform
//     type, precision, lengths, batch, alignment) with FFTW_ESTIMATE, under a
//     mutex (FFTW's planner is not thread-safe), kept for the life of the
//     process, and executed with the new-array functions
//     (fftw_execute_dft & co.), which are thread-safe.
//   - dynstage's own (always compiled): an iterative radix-2 FFT for powers
//     of two (Bailey's four-step algorithm over it from 2^14 points) and
//     Bluestein's algorithm (a chirp convolution by power-of-two FFTs) for
//     every other length, in double precision, one axis after the other
//     (lines across other axes gathered 16 at a time).
//     Used when FFTW is absent, or when the environment variable
//     DYNSTAGE_FFT=native asks for it (the tests run both).
#pragma once

#include <cstdint>

// Computes fft_type (0 FFT, 1 IFFT, 2 RFFT, 3 IRFFT: ir/params.hpp FftType)
// over the trailing `rank` axes of `batch` contiguous blocks. `lengths` are
// the logical lengths (fft_lengths); `dtype` is the input's DType (c64, c128
// for FFT, IFFT, IRFFT; f32, f64 for RFFT). Input block: lengths (RFFT: real;
// IRFFT: lengths[:-1] + [n/2 + 1] complex); output block: lengths (RFFT:
// lengths[:-1] + [n/2 + 1] complex; IRFFT: real). IFFT and IRFFT divide by
// the product of the lengths (XLA's Fft). `in` is not modified.
extern "C" void dynstage_fft(std::int32_t fft_type, std::int32_t dtype, std::int64_t rank, const std::int64_t* lengths,
                             std::int64_t batch, const void* in, void* out);

namespace dyn::detail {
// Which implementation dynstage_fft uses now: "fftw" or "native".
const char* fft_backend();
// The native implementation, whatever fft_backend() says (tests compare it with FFTW).
void fft_native(int fft_type, int dtype, std::int64_t rank, const std::int64_t* lengths, std::int64_t batch,
                const void* in, void* out);
}  // namespace dyn::detail
