// dyn::switch_ (API.md §13, lax.switch): the jaxpr JAX prints for lax.switch
// (the index as i32, `clamp 0:i32[] i N-1:i32[]`, one indexed
// `cond[branches=(...)]`), out-of-range indices clamped, branches of
// different result sizes (implicit outputs, as cond), a C++ index picking
// the branch at trace time, check_jaxpr, and the errors. dyn::jit runs the
// same programs in test_jit_switch.cpp.
#include <dynstage/core.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "../test_util.hpp"

using test_util::message_of;
using test_util::str;

namespace {

dyn::AnyArray i32(std::int32_t v) { return dyn::AnyArray(dyn::Array<std::int32_t>::scalar(v)); }
dyn::AnyArray i64(std::int64_t v) { return dyn::AnyArray(dyn::Array<std::int64_t>::scalar(v)); }

// JAX's documentation example of lax.switch: three branches on an f32.
const auto three = [](auto i, auto x) {
  return dyn::switch_(i, [](auto a) { return a + 1.0; }, [](auto a) { return a - 2.0; },
                      [](auto a) { return a + 3.0; })(x);
};

// Branch b returns an array of a size of its own: arange(n), zeros(n*n), ones(n+1).
const auto sizes = [](auto i, auto n) {
  return dyn::switch_(i, [&]() { return dyn::arange<double>(n); }, [&]() { return dyn::zeros<double>({n * n}); },
                      [&]() { return dyn::ones<double>({n + 1}); })();
};

}  // namespace

TEST_SUITE("control") {

TEST_CASE("switch_: an i32 index prints as JAX prints lax.switch") {
  auto j = dyn::make_jaxpr(three)(std::int32_t{1}, 1.0f);
  CHECK(str(j) ==
        "{ lambda ; a:i32[] b:f32[]. let\n"
        "    c:i32[] = clamp 0:i32[] a 2:i32[]\n"
        "    d:f32[] = cond[\n"
        "      branches=(\n"
        "        { lambda ; e:f32[]. let f:f32[] = add e 1.0:f32[] in (f,) }\n"
        "        { lambda ; g:f32[]. let h:f32[] = sub g 2.0:f32[] in (h,) }\n"
        "        { lambda ; i:f32[]. let j:f32[] = add i 3.0:f32[] in (j,) }\n"
        "      )\n"
        "    ] c b\n"
        "  in (d,) }");
  dyn::check_jaxpr(j);
  // Out-of-range indices are clamped: -5 runs branch 0, 7 runs branch 2.
  const float want[] = {2.0f, 2.0f, -1.0f, 4.0f, 4.0f};
  const std::int32_t idx[] = {-5, 0, 1, 2, 7};
  for (int k = 0; k < 5; ++k) {
    CHECK(dyn::eval_jaxpr(j, {i32(idx[k]), dyn::AnyArray(dyn::Array<float>::scalar(1.0f))})
              .at(0)
              .get<float>()
              .data()[0] == want[k]);
    CHECK(dyn::eager(three)(dyn::Array<std::int32_t>::scalar(idx[k]), 1.0f).data()[0] == want[k]);
    CHECK(three(dyn::Array<std::int32_t>::scalar(idx[k]), dyn::Array<float>::scalar(1.0f)).data()[0] == want[k]);
  }
}

TEST_CASE("switch_: an i64 index is converted to i32 first, as lax.switch does") {
  auto j = dyn::make_jaxpr(three)(std::int64_t{1}, 1.0f);
  CHECK(str(j) ==
        "{ lambda ; a:i64[] b:f32[]. let\n"
        "    c:i32[] = convert_element_type[new_dtype=int32 weak_type=False] a\n"
        "    d:i32[] = clamp 0:i32[] c 2:i32[]\n"
        "    e:f32[] = cond[\n"
        "      branches=(\n"
        "        { lambda ; f:f32[]. let g:f32[] = add f 1.0:f32[] in (g,) }\n"
        "        { lambda ; h:f32[]. let i:f32[] = sub h 2.0:f32[] in (i,) }\n"
        "        { lambda ; j:f32[]. let k:f32[] = add j 3.0:f32[] in (k,) }\n"
        "      )\n"
        "    ] d b\n"
        "  in (e,) }");
  dyn::check_jaxpr(j);
  CHECK(dyn::eval_jaxpr(j, {i64(-1), dyn::AnyArray(dyn::Array<float>::scalar(1.0f))}).at(0).get<float>().data()[0] ==
        2.0f);
  // The conversion wraps as convert_element_type does: 2^32 + 1 is 1 as i32, in eager too.
  const std::int64_t big = (std::int64_t{1} << 32) + 1;
  CHECK(dyn::eval_jaxpr(j, {i64(big), dyn::AnyArray(dyn::Array<float>::scalar(1.0f))}).at(0).get<float>().data()[0] ==
        -1.0f);
  CHECK(dyn::eager(three)(dyn::Array<std::int64_t>::scalar(big), 1.0f).data()[0] == -1.0f);
}

TEST_CASE("switch_: branches of different result sizes give an implicit output") {
  auto j = dyn::make_jaxpr(sizes)(std::int32_t{0}, std::int64_t{4});
  CHECK(str(j) ==
        "{ lambda ; a:i32[] b:i64[]. let\n"
        "    c:i32[] = clamp 0:i32[] a 2:i32[]\n"
        "    d:i64[] e:f64[d] = cond[\n"
        "      branches=(\n"
        "        { lambda ; f:i64[]. let\n"
        "            g:f64[f] = iota[dimension=0 dtype=float64 shape=(None,)] f\n"
        "          in (f, g) }\n"
        "        { lambda ; h:i64[]. let\n"
        "            i:i64[] = mul h h\n"
        "            j:f64[i] = broadcast_in_dim[broadcast_dimensions=() shape=(None,)] 0.0:f64[]\n"
        "              i\n"
        "          in (i, j) }\n"
        "        { lambda ; k:i64[]. let\n"
        "            l:i64[] = add k 1:i64[]\n"
        "            m:f64[l] = broadcast_in_dim[broadcast_dimensions=() shape=(None,)] 1.0:f64[]\n"
        "              l\n"
        "          in (l, m) }\n"
        "      )\n"
        "      nimplicit_outputs=1\n"
        "    ] c b\n"
        "  in (d, e) }");
  dyn::check_jaxpr(j);
  for (std::int32_t i : {-1, 0, 1, 2, 3})
    for (std::int64_t n : {0, 3}) {
      const std::int64_t want = i <= 0 ? n : i == 1 ? n * n : n + 1;
      auto r = dyn::eval_jaxpr(j, {i32(i), i64(n)});
      auto e = dyn::eager(sizes)(dyn::Array<std::int32_t>::scalar(i), n);
      CHECK(r.at(0).get<std::int64_t>().data()[0] == want);
      CHECK(e.shape() == std::vector<std::int64_t>{want});
      CHECK(dyn::array_equal(r.at(1).get<double>(), e));
    }
}

TEST_CASE("switch_: a C++ index picks the branch at trace time; one branch is just called") {
  auto f = [](auto x) { return dyn::switch_(5, [](auto a) { return a * 2.0; }, [](auto a) { return a + 3.0; })(x); };
  CHECK(str(dyn::make_jaxpr(f)(1.0)) == "{ lambda ; a:f64[]. let b:f64[] = add a 3.0:f64[] in (b,) }");
  auto g = [](auto i, auto x) { return dyn::switch_(i, [](auto a) { return -a; })(x); };
  CHECK(str(dyn::make_jaxpr(g)(std::int32_t{7}, 1.0)) == "{ lambda ; a:i32[] b:f64[]. let c:f64[] = neg b in (c,) }");
  CHECK(f(dyn::Array<double>::scalar(1.0)).data()[0] == 4.0);
  CHECK(dyn::switch_(-2, [](auto a) { return a * 2.0; }, [](auto a) { return a + 3.0; })(dyn::array({1.0}))(0) ==
        2.0);
}

TEST_CASE("switch_: captured values become constants of every branch") {
  auto f = [](auto i, auto x, auto y) {
    return dyn::switch_(i, [&](auto a) { return a + y; }, [&](auto a) { return a * 2.0; },
                        [&](auto a) { return a - y * y; })(x);
  };
  auto j = dyn::make_jaxpr(f)(std::int32_t{0}, dyn::Array<double>({3}), dyn::Array<double>({3}));
  dyn::check_jaxpr(j);
  const std::string s = str(j);
  CHECK(s.find("] d c b") != std::string::npos);  // the index, the constant y, the operand x
  auto x = dyn::array({1.0, 2.0, 3.0});
  auto y = dyn::array({0.5, 1.0, 2.0});
  for (std::int32_t i : {0, 1, 2, 9}) {
    auto r = dyn::eval_jaxpr(j, {i32(i), dyn::AnyArray(x), dyn::AnyArray(y)}).at(0).get<double>();
    CHECK(dyn::array_equal(r, f(dyn::Array<std::int32_t>::scalar(i), x, y)));
  }
}

TEST_CASE("switch_: errors name the index type or the branches and their types") {
  auto fl = [](auto i, auto x) { return dyn::switch_(i, [](auto a) { return a; }, [](auto a) { return -a; })(x); };
  CHECK(message_of<dyn::TypeError>([&] { dyn::make_jaxpr(fl)(1.5, 1.0); }) ==
        "dyn::switch_(): the index must be an integer scalar, got f64[]; convert it first (e.g. "
        "dyn::astype<int>(x))");
  CHECK(message_of<dyn::TypeError>([&] { dyn::make_jaxpr(fl)(true, 1.0); }) ==
        "dyn::switch_(): the index must be an integer scalar, got bool[]; convert it first (e.g. "
        "dyn::astype<int>(x))");
  CHECK(message_of<dyn::TypeError>([&] { dyn::make_jaxpr(fl)(dyn::Array<std::int32_t>({2}), 1.0); }) ==
        "dyn::switch_(): the index must be an integer scalar, got i32[2]; convert it first (e.g. "
        "dyn::astype<int>(x))");
  CHECK(message_of<dyn::TypeError>([&] { (void)fl(dyn::Array<float>::scalar(1.0f), dyn::array({1.0})); }) ==
        "dyn::switch_(): the index must be an integer scalar, got f32[]; convert it first (e.g. "
        "dyn::astype<int>(x))");
  auto count = [](auto i, auto x) {
    return dyn::switch_(i, [](auto a) { return std::make_tuple(a); }, [](auto a) { return std::make_tuple(a); },
                        [](auto a) { return std::make_tuple(a, a); })(x);
  };
  CHECK(message_of<dyn::TypeError>([&] { dyn::make_jaxpr(count)(std::int32_t{0}, 1.0); }) ==
        "dyn::switch_(): branch 0 returns 1 values but branch 2 returns 2; return the same structure");
  auto dtype = [](auto i, auto x) {
    return dyn::switch_(i, [](auto a) { return a; }, [](auto a) { return dyn::astype<float>(a); })(x);
  };
  CHECK(message_of<dyn::TypeError>([&] { dyn::make_jaxpr(dtype)(std::int32_t{0}, dyn::Array<double>({2})); }) ==
        "dyn::switch_(): branch output #0 has type f64[2] in branch 0 but f32[2] in branch 1; return the same dtype "
        "(e.g. astype<double>)");
  auto rank = [](auto i, auto x) {
    return dyn::switch_(i, [](auto a) { return a; }, [](auto a) { return a; }, [](auto a) { return dyn::sum(a); })(x);
  };
  CHECK(message_of<dyn::TypeError>([&] { dyn::make_jaxpr(rank)(std::int32_t{0}, dyn::Array<double>({2})); }) ==
        "dyn::switch_(): branch output #0 has type f64[2] in branch 0 but f64[] in branch 2; the branches must "
        "return the same rank");
  auto size = [](auto i) {
    return dyn::switch_(i, []() { return dyn::zeros<double>({2}); }, []() { return dyn::zeros<double>({3}); })();
  };
  CHECK(message_of<dyn::ShapeError>([&] { dyn::make_jaxpr(size)(std::int32_t{0}); }) ==
        "dyn::switch_(): branch output #0 has type f64[2] in branch 0 but f64[3] in branch 1; static sizes must be "
        "equal");
}

TEST_CASE("switch_: check_jaxpr rejects an indexed cond with a bad index or mismatched branches") {
  using namespace dyn::detail;
  auto j = dyn::make_jaxpr(three)(std::int32_t{1}, 1.0f);
  // The cond equation with the clamped index replaced by the f32 operand.
  auto bad = std::make_shared<dyn::Jaxpr>(*j.jaxpr);
  bad->eqns[1].inputs[0] = bad->eqns[1].inputs[1];
  CHECK(message_of<dyn::TypeError>([&] { dyn::check_jaxpr(dyn::ClosedJaxpr{bad, {}}); }).find(
            "cond: the index must be an i32 scalar, got f32[]") != std::string::npos);
  // A branch returning another dtype.
  auto mixed = std::make_shared<dyn::Jaxpr>(*j.jaxpr);
  auto* p = &std::get<CondParams>(mixed->eqns[1].params);
  auto b2 = std::make_shared<dyn::Jaxpr>(*p->branches[2]);
  b2->outvars[0] = dyn::Atom::of_var(b2->invars[0]);
  b2->types[static_cast<std::size_t>(b2->invars[0])].dtype = dyn::DType::f64;
  p->branches[2] = b2;
  const std::string m = message_of<dyn::TypeError>([&] { dyn::check_jaxpr(dyn::ClosedJaxpr{mixed, {}}); });
  CHECK(m.find("branches[2]") != std::string::npos);
}

}  // TEST_SUITE
