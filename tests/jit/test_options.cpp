// The option set of dyn::jit and dyn::make_jaxpr (API.md §3, "Options of
// dyn::jit"): any subset of static_argnums, polymorphic_shapes, constraints
// and cache_capacity, in any order, each with its documented effect; and the
// compile log's explanations (DYNSTAGE_LOG_COMPILES): which static argument
// changed from what to what, and the traces of jf.jaxpr()/jf.llvm_ir().
#include <dynstage/dynstage.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <mutex>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "../test_util.hpp"

namespace {

using dyn::Array;
using test_util::iota_array;

template <class O, class... Os>
inline constexpr bool has_option = (std::is_same_v<O, Os> || ...);

// jit(f, opts...) behaves as each option in `opts` says, whatever the others.
template <class... O>
void check_option_set(O... opts) {
  using Static = dyn::static_argnums<1>;
  constexpr bool is_static = has_option<Static, O...>;
  constexpr bool poly = has_option<dyn::polymorphic_shapes, O...>;
  constexpr bool constrained = has_option<dyn::constraints, O...>;
  constexpr bool capacity = has_option<dyn::cache_capacity, O...>;
  CAPTURE(is_static);
  CAPTURE(poly);
  CAPTURE(constrained);
  CAPTURE(capacity);
  auto f = [](auto a, auto k) { return a * k + 1.0; };
  if constexpr (constrained && !poly) {
    CHECK(test_util::message_of<dyn::TypeError>([&] { (void)dyn::jit(f, opts...); }) ==
          "dyn::constraints given without dyn::polymorphic_shapes: constraints apply to the dimension variables of "
          "the shape specifications");
    CHECK(test_util::message_of<dyn::TypeError>([&] { (void)dyn::make_jaxpr(f, opts...); }) ==
          "dyn::constraints given without dyn::polymorphic_shapes: constraints apply to the dimension variables of "
          "the shape specifications");
  } else {
    auto jf = dyn::jit(f, opts...);
    const auto x3 = iota_array<double>({3, 2}), x5 = iota_array<double>({5, 2});
    CHECK(dyn::array_equal(jf(x3, 2), dyn::eager(f)(x3, 2)));
    CHECK(dyn::array_equal(jf(x5, 2), dyn::eager(f)(x5, 2)));  // a new shape
    CHECK(dyn::array_equal(jf(x3, 3), dyn::eager(f)(x3, 3)));  // a new k
    // The signatures of the three calls: the shape (one for every shape when
    // polymorphic) and k when static. Without a capacity each distinct one
    // is compiled once; with cache_capacity{1} each change of signature
    // evicts the previous kernel and compiles anew.
    const std::vector<std::pair<int, int>> sigs = {
        {poly ? 0 : 3, is_static ? 2 : 0}, {poly ? 0 : 5, is_static ? 2 : 0}, {poly ? 0 : 3, is_static ? 3 : 0}};
    std::vector<std::pair<int, int>> distinct;
    std::size_t changes = 1;
    for (std::size_t i = 0; i < sigs.size(); ++i) {
      if (std::find(distinct.begin(), distinct.end(), sigs[i]) == distinct.end()) distinct.push_back(sigs[i]);
      if (i > 0 && sigs[i] != sigs[i - 1]) ++changes;
    }
    const std::size_t compiles = capacity ? changes : distinct.size();
    CHECK(jf.stats().compiles == compiles);
    CHECK(jf.stats().cache_size == (capacity ? 1 : distinct.size()));
    CHECK(jf.stats().evictions == compiles - (capacity ? 1 : distinct.size()));
    // make_jaxpr takes the same options: k is a literal when static, an
    // argument otherwise; the shapes are symbolic when polymorphic.
    const std::string jaxpr = test_util::str(dyn::make_jaxpr(f, opts...)(x3, 2));
    const std::string a = poly ? "b:f64[a,2]" : "a:f64[3,2]";
    const std::string expected =
        is_static ? "{ lambda ; " + std::string(poly ? "a:i64[] " : "") + a + ". let\n    " +
                        (poly ? "c:f64[a,2] = mul b 2.0:f64[]\n    d:f64[a,2] = add c 1.0:f64[]\n  in (d,) }"
                              : "b:f64[3,2] = mul a 2.0:f64[]\n    c:f64[3,2] = add b 1.0:f64[]\n  in (c,) }")
                  : "{ lambda ; " + std::string(poly ? "a:i64[] " : "") + a + (poly ? " c:i32[]" : " b:i32[]") +
                        ". let\n    " +
                        (poly ? "d:f64[] = convert_element_type[new_dtype=float64 weak_type=False] c\n"
                                "    e:f64[a,2] = mul b d\n    f:f64[a,2] = add e 1.0:f64[]\n  in (f,) }"
                              : "c:f64[] = convert_element_type[new_dtype=float64 weak_type=False] b\n"
                                "    d:f64[3,2] = mul a c\n    e:f64[3,2] = add d 1.0:f64[]\n  in (e,) }");
    CHECK(jaxpr == expected);
  }
}

}  // namespace

TEST_CASE("options: every subset of the four options") {
  const dyn::static_argnums<1> s;
  const dyn::polymorphic_shapes p{"(m, _)", "..."};
  const dyn::constraints c{"m >= 1"};
  const dyn::cache_capacity n{1};
  check_option_set();
  check_option_set(s);
  check_option_set(p);
  check_option_set(c);
  check_option_set(n);
  check_option_set(s, p);
  check_option_set(s, c);
  check_option_set(s, n);
  check_option_set(p, c);
  check_option_set(p, n);
  check_option_set(c, n);
  check_option_set(s, p, c);
  check_option_set(s, p, n);
  check_option_set(s, c, n);
  check_option_set(p, c, n);
  check_option_set(s, p, c, n);
}

TEST_CASE("options: all four in every order") {
  const dyn::static_argnums<1> s;
  const dyn::polymorphic_shapes p{"(m, _)", "..."};
  const dyn::constraints c{"m >= 1"};
  const dyn::cache_capacity n{1};
  const auto all = std::make_tuple(s, p, c, n);
  // The 24 permutations of (0, 1, 2, 3).
  [&]<std::size_t... K>(std::index_sequence<K...>) {
    constexpr int perms[24][4] = {{0, 1, 2, 3}, {0, 1, 3, 2}, {0, 2, 1, 3}, {0, 2, 3, 1}, {0, 3, 1, 2}, {0, 3, 2, 1},
                                  {1, 0, 2, 3}, {1, 0, 3, 2}, {1, 2, 0, 3}, {1, 2, 3, 0}, {1, 3, 0, 2}, {1, 3, 2, 0},
                                  {2, 0, 1, 3}, {2, 0, 3, 1}, {2, 1, 0, 3}, {2, 1, 3, 0}, {2, 3, 0, 1}, {2, 3, 1, 0},
                                  {3, 0, 1, 2}, {3, 0, 2, 1}, {3, 1, 0, 2}, {3, 1, 2, 0}, {3, 2, 0, 1}, {3, 2, 1, 0}};
    (check_option_set(std::get<perms[K][0]>(all), std::get<perms[K][1]>(all), std::get<perms[K][2]>(all),
                      std::get<perms[K][3]>(all)),
     ...);
  }(std::make_index_sequence<24>{});
}

// ---------------------------------------------------------------------------
// The compile log.

namespace {

std::mutex log_mu;
std::vector<std::string> log_lines;

void capture(const std::string& line) {
  std::lock_guard<std::mutex> lock(log_mu);
  log_lines.push_back(line);
}

// The log lines written while running `f`, with times ("1.23 ms") replaced
// by "T ms" and the file:line of this file by "HERE".
template <class F>
std::vector<std::string> logged(F f) {
  {
    std::lock_guard<std::mutex> lock(log_mu);
    log_lines.clear();
  }
  dyn::detail::jit_log_hook().store(&capture);
  try {
    f();
  } catch (...) {
    dyn::detail::jit_log_hook().store(nullptr);
    throw;
  }
  dyn::detail::jit_log_hook().store(nullptr);
  std::vector<std::string> r;
  std::lock_guard<std::mutex> lock(log_mu);
  for (std::string line : log_lines) {
    std::string out;
    for (std::size_t i = 0; i < line.size();) {
      // A number followed by " ms" becomes "T ms".
      std::size_t j = i;
      while (j < line.size() && (std::isdigit(static_cast<unsigned char>(line[j])) || line[j] == '.')) ++j;
      if (j > i && line.compare(j, 3, " ms") == 0) {
        out += "T";
        i = j;
        continue;
      }
      out += line[i++];
    }
    const std::string file = __FILE__;
    for (std::size_t p = out.find(file); p != std::string::npos; p = out.find(file)) {
      std::size_t e = p + file.size() + 1;
      while (e < out.size() && std::isdigit(static_cast<unsigned char>(out[e]))) ++e;
      out.replace(p, e - p, "HERE");
    }
    r.push_back(out);
  }
  return r;
}

struct Mode {
  int level = 0;
  friend bool operator==(const Mode&, const Mode&) = default;
  friend std::ostream& operator<<(std::ostream& os, const Mode& m) { return os << "Mode{" << m.level << "}"; }
};
struct Opaque {
  int v = 0;
  friend bool operator==(const Opaque&, const Opaque&) = default;
};

}  // namespace

template <>
struct std::hash<Mode> {
  std::size_t operator()(const Mode& m) const { return std::hash<int>{}(m.level); }
};
template <>
struct std::hash<Opaque> {
  std::size_t operator()(const Opaque& m) const { return std::hash<int>{}(m.v); }
};

TEST_CASE("log: a static argument's change names the argument and both values") {
  auto f = [](auto a, int k, Mode m, auto b) { return a * double(k + m.level) + b; };
  auto jf = dyn::jit(f, dyn::static_argnums<1, 2>{});
  const auto x = iota_array<double>({3});
  const auto lines = logged([&] {
    (void)jf(x, 2, Mode{1}, 1.0);
    (void)jf(x, 2, Mode{1}, 1.0);  // a hit: no line
    (void)jf(x, 3, Mode{1}, 1.0);
    (void)jf(x, 3, Mode{4}, 1.0);
  });
  REQUIRE(lines.size() == 3);
  CHECK(lines[0] == "dynstage: jit of the function at HERE: compiled (f64[3], f64[]) in T ms (trace T ms, lower T ms, "
                    "LLVM T ms); cache miss: first call");
  CHECK(lines[1] == "dynstage: jit of the function at HERE: compiled (f64[3], f64[]) in T ms (trace T ms, lower T ms, "
                    "LLVM T ms); cache miss: static argument #1 changed from 2 to 3");
  CHECK(lines[2] == "dynstage: jit of the function at HERE: compiled (f64[3], f64[]) in T ms (trace T ms, lower T ms, "
                    "LLVM T ms); cache miss: static argument #2 changed from Mode{1} to Mode{4}");
}

TEST_CASE("log: a static argument without operator<< is named by its type") {
  auto f = [](auto a, Opaque o) { return a * double(o.v); };
  auto jf = dyn::jit(f, dyn::static_argnums<1>{});
  const auto x = iota_array<double>({2});
  const auto lines = logged([&] {
    (void)jf(x, Opaque{1});
    (void)jf(x, Opaque{2});
  });
  REQUIRE(lines.size() == 2);
  CHECK(lines[1].find("cache miss: static argument #1 changed from a value of type ") != std::string::npos);
  CHECK(lines[1].find("Opaque") != std::string::npos);
}

TEST_CASE("log: jf.jaxpr() and jf.llvm_ir() traces are logged, and not cached") {
  auto jf = dyn::jit([](auto a, auto n) { return a + dyn::astype<double>(n); });
  const auto x = iota_array<double>({3, 4});
  const auto lines = logged([&] {
    (void)jf.jaxpr(x, std::int64_t{2});
    (void)jf.llvm_ir(x, std::int64_t{2});
  });
  REQUIRE(lines.size() == 2);
  CHECK(lines[0] == "dynstage: jf.jaxpr() of the function jitted at HERE: traced (f64[3,4], i64[]) in T ms; not "
                    "cached (an inspection traces again)");
  CHECK(lines[1] == "dynstage: jf.llvm_ir() of the function jitted at HERE: traced (f64[3,4], i64[]) in T ms, "
                    "compiled in T ms; not cached (an inspection traces again)");
  CHECK(jf.stats().traces == 0);
  CHECK(jf.stats().compiles == 0);
}

TEST_CASE("options: a function without results (void) traces to an empty jaxpr") {
  // JAX: a function returning None has no outputs. (This is also what g++
  // makes of a function whose body failed to compile, so that the user sees
  // that error alone.)
  auto f = [](auto a) { (void)(a + 1.0); };
  const auto x = iota_array<double>({3});
  CHECK(test_util::str(dyn::make_jaxpr(f)(x)) == "{ lambda ; a:f64[3]. let  in () }");
  auto jf = dyn::jit(f);
  static_assert(std::is_same_v<decltype(jf(x)), std::tuple<>>);
  (void)jf(x);
  static_assert(std::is_same_v<decltype(dyn::eager(f)(x)), std::tuple<>>);
}
