// dyn::debug_print in compiled kernels (API section 15): the lines a jitted
// function prints are exactly eager's, in program order, at every call,
// once per loop iteration and only in the branch taken; a print survives
// dead-code elimination and fusion, and is never run from parallel tasks
// (docs/backend.md, "Threads"). Lines are captured through
// detail::debug_print_sink(), not stdout.
#include <dynstage/dynstage.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <string>

#include "../test_util.hpp"

namespace {

using dyn::Array;

struct Capture {
  std::string out;
  Capture() {
    dyn::detail::debug_print_sink() = {[](void* self, const std::string& line) { static_cast<Capture*>(self)->out += line; },
                                       this};
  }
  ~Capture() { dyn::detail::debug_print_sink() = {}; }
};

// The lines f prints eagerly and jitted (twice: a cached call prints too).
template <class F, class... A>
void check_same_lines(F f, const std::string& want, const A&... args) {
  Capture c;
  f(args...);
  CHECK(c.out == want);
  c.out.clear();
  auto jf = dyn::jit(f);
  jf(args...);
  CHECK(c.out == want);
  c.out.clear();
  jf(args...);
  CHECK(c.out == want);
}

}  // namespace

TEST_CASE("jit debug_print: the lines of eager, in program order, at every call") {
  auto f = [](auto x, auto n) {
    auto y = x * 2.0;
    dyn::debug_print("y={} n={:>4} s={:.3f} f={}", y, n, dyn::sum(x), 0.1f);
    return y + 1.0;
  };
  check_same_lines(f, "y=[2. 5. 6.] n=   3 s=6.500 f=0.1\n", Array<double>({3}, {1, 2.5, 3}), 3);
}

TEST_CASE("jit debug_print: arrays of f32, f64, i32 and bool, and a captured constant") {
  const Array<std::int32_t> k({2, 2}, {1, 20, 3, 4});
  auto f = [k](auto a, auto b) {
    dyn::debug_print("{} {} {} {}", a * 1.5f, b, b > 1.5, k);
    dyn::debug_print("{:.2f}|{:>6}", a, a > 1.0f);
    return a;
  };
  check_same_lines(f,
                   "[1.5 3.  4.5] [1. 2. 3.] [False  True  True] [[ 1 20]\n [ 3  4]]\n"
                   "[1.00 2.00 3.00]|[ False   True   True]\n",
                   Array<float>({3}, {1, 2, 3}), Array<double>({3}, {1, 2, 3}));
}

TEST_CASE("jit debug_print: one line per for_loop iteration, in order, with a trip count known only at run time") {
  auto f = [](auto x, auto n) {
    return dyn::for_loop(0, n, 1)([](auto i, auto s) {
      dyn::debug_print("i={} s={}", i, s);
      return s * 2.0;
    })(x);
  };
  check_same_lines(f, "i=0 s=[1. 2.]\ni=1 s=[2. 4.]\ni=2 s=[4. 8.]\n", Array<double>({2}, {1, 2}), 3);
  check_same_lines(f, "", Array<double>({2}, {1, 2}), 0);
}

TEST_CASE("jit debug_print: while_loop bodies and conditions, and only the cond branch taken") {
  auto f = [](auto x) {
    auto y = dyn::while_loop([](auto s) {
      dyn::debug_print("cond {}", s);
      return s < 3.0;
    })([](auto s) {
      dyn::debug_print("body {}", s);
      return s + 1.0;
    })(x);
    return dyn::cond(y > 2.5, [](auto s) {
      dyn::debug_print("then {}", s);
      return s;
    }, [](auto s) {
      dyn::debug_print("else {}", s);
      return -s;
    })(y);
  };
  check_same_lines(f, "cond 1.0\nbody 1.0\ncond 2.0\nbody 2.0\ncond 3.0\nthen 3.0\n", Array<double>::scalar(1.0));
  check_same_lines(f, "cond 5.0\nthen 5.0\n", Array<double>::scalar(5.0));
  auto g = [](auto x) {
    return dyn::cond(x > 0.0, [](auto s) {
      dyn::debug_print("then {}", s);
      return s;
    }, [](auto s) {
      dyn::debug_print("else {}", s);
      return -s;
    })(x);
  };
  check_same_lines(g, "else -1.0\n", Array<double>::scalar(-1.0));
}

TEST_CASE("jit debug_print: a print of an otherwise dead value is computed and printed; a loop that only prints runs") {
  auto f = [](auto x) {
    auto unused = dyn::exp(x) * 0.0 + 7.0;  // read by the print only
    dyn::debug_print("dead {}", unused);
    dyn::for_loop(0, 2, 1)([](auto i, auto s) {
      dyn::debug_print("loop {}", i);
      return s;
    })(x);
    return x + 1.0;
  };
  check_same_lines(f, "dead [7. 7.]\nloop 0\nloop 1\n", Array<double>({2}, {1, 2}));
  const std::string ir = dyn::jit(f).llvm_ir(Array<double>({2}, {1, 2}));
  CHECK(ir.find(";   debug_callback: effect, in order") != std::string::npos);
  CHECK(ir.find("buffer (debug_callback operand)") != std::string::npos);
}

TEST_CASE("jit debug_print: prints between parallel loops keep their order, for every thread count") {
  auto f = [](auto a) {
    auto b = a * 2.0 + 1.0;
    dyn::debug_print("sum b {}", dyn::sum(b));
    auto c = dyn::sqrt(b) * 0.0 + 1.0;
    dyn::debug_print("c[0:3] {}", dyn::slice(c, {0}, {3}));
    auto d = dyn::for_loop(0, 3, 1)([](auto i, auto s) {
      dyn::debug_print("iter {} {}", i, dyn::sum(s));
      return s + 1.0;  // a parallel elementwise loop inside the body
    })(c);
    dyn::debug_print("end {}", dyn::sum(d));
    return d;
  };
  const Array<double> big = dyn::zeros<double>({300000});
  const std::string want =
      "sum b 300000.0\nc[0:3] [1. 1. 1.]\niter 0 300000.0\niter 1 600000.0\niter 2 900000.0\nend 1200000.0\n";
  const int saved = dyn::num_threads();
  for (int t = 1; t <= 2; ++t) {
    dyn::set_num_threads(t);
    check_same_lines(f, want, big);
  }
  dyn::set_num_threads(saved);
}

TEST_CASE("jit debug_print: a placeholder count that does not match is a TypeError when traced") {
  auto f = [](auto x) {
    dyn::debug_print("{} {}", x);
    return x;
  };
  auto jf = dyn::jit(f);
  CHECK(test_util::message_of<dyn::TypeError>([&] { jf(1.0); }) ==
        "debug_print: the format '{} {}' has 2 placeholders but 1 value was given");
  // A spec that does not fit the dtype fails when traced, not in the kernel.
  auto g = dyn::jit([](auto x) {
    dyn::debug_print("{:d}", x);
    return x;
  });
  CHECK(test_util::message_of<dyn::TypeError>([&] { g(1.5); }) ==
        "debug_print: the format spec 'd' does not apply to a value of dtype f64 (invalid type specifier)");
}
