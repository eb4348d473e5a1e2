// dyn::debug_print (API section 15; jax.debug.print): the debug_callback
// primitive's jaxpr text, eager printing (at once, in program order, once
// per loop iteration, only in the branch taken), the value formats and the
// errors. The lines are captured through detail::debug_print_sink(), not
// stdout. tests/jit/test_jit_debug_print.cpp compares compiled kernels'
// lines with these.
#include <dynstage/core.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <string>

#include "../test_util.hpp"

namespace {

using dyn::Array;

// Captures every printed line while alive.
struct Capture {
  std::string out;
  Capture() {
    dyn::detail::debug_print_sink() = {[](void* self, const std::string& line) { static_cast<Capture*>(self)->out += line; },
                                       this};
  }
  ~Capture() { dyn::detail::debug_print_sink() = {}; }
};

}  // namespace

TEST_CASE("debug_print: the jaxpr is JAX's debug_callback, with no outputs") {
  auto f = [](auto x, auto i) {
    dyn::debug_print("i={} x={}", i, x);
    return x * 2.0f;
  };
  const std::string text = test_util::str(dyn::make_jaxpr(f)(Array<float>({3}, {1, 2, 3}), 4));
  CHECK(text ==
        "{ lambda ; a:f32[3] b:i32[]. let\n"
        "    debug_callback[callback=<function debug_print fmt='i={} x={}'> effect=Debug] b\n"
        "      a\n"
        "    c:f32[3] = mul a 2.0:f32[]\n"
        "  in (c,) }");
}

TEST_CASE("debug_print: a print of an otherwise dead value is kept, after what it reads, in program order") {
  auto f = [](auto x) {
    auto y = x + 1.0;
    dyn::debug_print("{}", y * 3.0);  // nothing else uses y * 3
    dyn::debug_print("second {}", x);
    return x;
  };
  const std::string text = test_util::str(dyn::make_jaxpr(f)(Array<double>({2}, {1, 2})));
  CHECK(text ==
        "{ lambda ; a:f64[2]. let\n"
        "    b:f64[2] = add a 1.0:f64[]\n"
        "    c:f64[2] = mul b 3.0:f64[]\n"
        "    debug_callback[callback=<function debug_print fmt='{}'> effect=Debug] c\n"
        "    debug_callback[callback=<function debug_print fmt='second {}'> effect=Debug] a\n"
        "  in (a,) }");
  Capture c;
  dyn::eval_jaxpr(dyn::make_jaxpr(f)(Array<double>({2}, {1, 2})), {dyn::AnyArray(Array<double>({2}, {1, 2}))});
  CHECK(c.out == "[6. 9.]\nsecond [1. 2.]\n");
}

TEST_CASE("debug_print: the format is printed as a Python string literal") {
  auto f = [](auto x) {
    dyn::debug_print("it's {}\n", x);
    return x;
  };
  const std::string text = test_util::str(dyn::make_jaxpr(f)(1.0));
  CHECK(text.find("callback=<function debug_print fmt=\"it's {}\\n\">") != std::string::npos);
}

TEST_CASE("debug_print: eagerly, prints at once") {
  Capture c;
  dyn::debug_print("i={} x={}", 3, Array<float>({3}, {1, 2.5f, 3}));
  dyn::debug_print("no values");
  CHECK(c.out == "i=3 x=[1.  2.5 3. ]\nno values\n");
}

TEST_CASE("debug_print: scalars print as Python's str, arrays as NumPy's") {
  Capture c;
  dyn::debug_print("{} {} {} {} {}", 2.0, 0.1f, -7, true, std::int64_t{1} << 40);
  dyn::debug_print("{} {} {} {}", 1e-5, 1e20, std::nan(""), -INFINITY);
  dyn::debug_print("{}", Array<double>({3}, {1, 2, 3}));
  dyn::debug_print("{}", Array<float>({2}, {0.1f, 1.5f}));
  dyn::debug_print("{}", Array<std::int32_t>({2, 2}, {1, 20, 3, 4}));
  dyn::debug_print("{}", Array<bool>({2}, {true, false}));
  CHECK(c.out ==
        "2.0 0.1 -7 True 1099511627776\n"
        "1e-05 1e+20 nan -inf\n"
        "[1. 2. 3.]\n"
        "[0.1 1.5]\n"
        "[[ 1 20]\n [ 3  4]]\n"
        "[ True False]\n");
}

TEST_CASE("debug_print: format specs apply to scalars and to each element of an array") {
  Capture c;
  dyn::debug_print("{:.3f}|{:>5}|{:<4}|{:+d}", 3.14159, 42, true, 7);
  dyn::debug_print("{:.2f}", Array<double>({2, 2}, {1, 22, 3.5, 4}));
  dyn::debug_print("{:>6}", Array<bool>({2}, {true, false}));
  dyn::debug_print("{1} {0} {1}", 1, 2);
  dyn::debug_print("{{literal}} {}", 5);
  CHECK(c.out ==
        "3.142|   42|True|+7\n"
        "[[ 1.00 22.00]\n [ 3.50  4.00]]\n"
        "[  True  False]\n"
        "2 1 2\n"
        "{literal} 5\n");
}

TEST_CASE("debug_print: in eager control flow, once per iteration, only in the branch taken") {
  Capture c;
  auto f = [](auto x) {
    dyn::debug_print("before {}", x);
    auto y = dyn::for_loop(0, 3, 1)([](auto i, auto s) {
      dyn::debug_print("i={} s={}", i, s);
      return s + 1.0;
    })(x);
    auto z = dyn::while_loop([](auto s) { return s < 5.0; })([](auto s) {
      dyn::debug_print("while {}", s);
      return s + 1.0;
    })(y);
    auto w = dyn::cond(z > 4.0, [](auto s) {
      dyn::debug_print("then {}", s);
      return s;
    }, [](auto s) {
      dyn::debug_print("else {}", s);
      return -s;
    })(z);
    dyn::debug_print("after {}", w);
    return w;
  };
  const std::string want =
      "before 1.0\ni=0 s=1.0\ni=1 s=2.0\ni=2 s=3.0\nwhile 4.0\nthen 5.0\nafter 5.0\n";
  f(Array<double>::scalar(1.0));
  CHECK(c.out == want);
  // The traced program, interpreted: the same lines.
  c.out.clear();
  const auto j = dyn::make_jaxpr(f)(Array<double>::scalar(1.0));
  CHECK(c.out.empty());  // tracing prints nothing
  dyn::eval_jaxpr(j, {dyn::AnyArray(Array<double>::scalar(1.0))});
  CHECK(c.out == want);
}

TEST_CASE("debug_print: a loop whose body prints is kept though its result is unused") {
  auto f = [](auto x) {
    dyn::for_loop(0, 2, 1)([](auto i, auto s) {
      dyn::debug_print("{}", i);
      return s;
    })(x);
    return x + 1.0;
  };
  const auto j = dyn::make_jaxpr(f)(1.0);
  CHECK(test_util::str(j).find("for_loop") != std::string::npos);
  Capture c;
  dyn::eval_jaxpr(j, {dyn::AnyArray(Array<double>::scalar(1.0))});
  CHECK(c.out == "0\n1\n");
}

TEST_CASE("debug_print: placeholders that do not match the values are a TypeError naming debug_print") {
  auto traced = [](auto x) {
    dyn::debug_print("x={} y={}", x);
    return x;
  };
  CHECK(test_util::message_of<dyn::TypeError>([&] { dyn::make_jaxpr(traced)(1.0); }) ==
        "debug_print: the format 'x={} y={}' has 2 placeholders but 1 value was given");
  CHECK(test_util::message_of<dyn::TypeError>([] { dyn::debug_print("{}", 1, 2); }) ==
        "debug_print: the format '{}' has 1 placeholder but 2 values were given");
  CHECK(test_util::message_of<dyn::TypeError>([] { dyn::debug_print("x={", 1); }) ==
        "debug_print: bad format 'x={': the '{' at position 2 is not closed (fields are {}, {:spec}, {k} or "
        "{k:spec}; write {{ and }} for braces)");
  CHECK(test_util::message_of<dyn::TypeError>([] { dyn::debug_print("{} {0}", 1); }) ==
        "debug_print: bad format '{} {0}': automatic ({}) and manual ({0}) field numbering do not mix (fields "
        "are {}, {:spec}, {k} or {k:spec}; write {{ and }} for braces)");
  CHECK(test_util::message_of<dyn::TypeError>([] { dyn::debug_print("{:d}", 1.5); }) ==
        "debug_print: the format spec 'd' does not apply to a value of dtype f64 (invalid type specifier)");
  // Traced: when the equation is recorded (the shape rule tries each spec).
  CHECK(test_util::message_of<dyn::TypeError>([] {
          dyn::make_jaxpr([](auto x) {
            dyn::debug_print("{:d}", x);
            return x;
          })(1.5f);
        }) == "debug_print: the format spec 'd' does not apply to a value of dtype f32 (invalid type specifier)");
  // The error names the user's line.
  try {
    dyn::debug_print("{}");
    FAIL("no error");
  } catch (const dyn::TypeError& e) {
    CHECK(std::string(e.what()).find("test_debug_print.cpp") != std::string::npos);
  }
}
