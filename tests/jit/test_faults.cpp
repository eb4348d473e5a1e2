// Faults (issue 23, item 4; docs/reliability.md "Faults"):
//   - an allocation that fails (eager, a jitted function's result, inside a
//     kernel, on several threads) is a dyn::MemoryError naming the operation
//     and the bytes; nothing crashes and the function stays usable;
//   - the print sink throwing inside dyn::debug_print (eagerly, through
//     eval_jaxpr, in a kernel, in a loop body and a branch, on several
//     threads): the sink's own exception reaches the caller, the kernel
//     frees what it owns (LeakSanitizer checks, scripts/sanitize.sh asan),
//     and the function stays usable;
//   - disk-cache files that a crash, a full disk or garbage left behind
//     (garbage, every truncation, an unparsable object with a good checksum,
//     leftover temporary files, a directory in the entry's place, a failing
//     write over a damaged entry): detected and ignored or replaced, never
//     run; entries are replaced by rename, never rewritten in place.
#include <dynstage/dynstage.hpp>

#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "../test_util.hpp"
#include "temp_cache.hpp"

namespace {

namespace fs = std::filesystem;
namespace dd = dyn::detail;
using dyn::Array;
using i64 = std::int64_t;
using test_util::iota_array;
using test_util::message_of;
using test_util::str;

}  // namespace

// ---------------------------------------------------------------------------
// Allocation failure.

TEST_CASE("faults: an eager allocation that fails is a MemoryError naming the primitive and the bytes") {
  const auto x3 = dyn::array({1.0, 2.0, 3.0});
  CHECK(message_of<dyn::MemoryError>([] { (void)dyn::zeros<double>({i64{1} << 45}); }) ==
        "broadcast_in_dim: out of memory: cannot allocate 281474976710656 bytes");
  CHECK(message_of<dyn::MemoryError>([] { (void)Array<double>({i64{1} << 45}); }) ==
        "array: out of memory: cannot allocate 281474976710656 bytes");
  CHECK(message_of<dyn::MemoryError>([&] { (void)dyn::broadcast_to(x3, {i64{1} << 43, 3}); }) ==
        "broadcast_in_dim: out of memory: cannot allocate 211106232532992 bytes");
  CHECK(message_of<dyn::MemoryError>([&] { (void)(x3 + dyn::zeros<float>({i64{1} << 44, 3})); }) ==
        "broadcast_in_dim: out of memory: cannot allocate 211106232532992 bytes");
  // The op's line, as every eager error.
  const int line = __LINE__ + 1;
  const std::string what = [&] { try { (void)dyn::broadcast_to(x3, {i64{1} << 43, 3}); } catch (const dyn::MemoryError& e) { return std::string(e.what()); } return std::string(); }();
  CHECK(what.find("(at ") != std::string::npos);
  CHECK(what.find(":" + std::to_string(line) + ")") != std::string::npos);
  // A huge temporary inside an eager loop body.
  CHECK(message_of<dyn::MemoryError>([&] {
          (void)dyn::for_loop(0, 3, 1)([&](auto, auto a) { return a + dyn::sum(dyn::ones<double>({i64{1} << 45})); })(x3);
        }) == "broadcast_in_dim: out of memory: cannot allocate 281474976710656 bytes");
  // Still usable: the next operations allocate normally.
  CHECK(str(dyn::broadcast_to(x3, {2, 3})) == "[[1. 2. 3.]\n [1. 2. 3.]]");
  // A MemoryError is a dyn::Error.
  CHECK_THROWS_AS((void)dyn::zeros<double>({i64{1} << 45}), dyn::Error);
}

TEST_CASE("faults: a jitted function whose output cannot be allocated: MemoryError, then usable") {
  const auto x3 = dyn::array({1.0, 2.0, 3.0});
  SUBCASE("a static shape") {
    auto f = [](auto x, int k) { return dyn::broadcast_to(x, {k == 0 ? i64{2} : i64{1} << 45, 3}); };
    auto jf = dyn::jit(f, dyn::static_argnums<1>{});
    for (int rep = 0; rep < 2; ++rep)
      CHECK(message_of<dyn::MemoryError>([&] { (void)jf(x3, 1); }) ==
            "jit result #0 (f64[35184372088832,3]): out of memory: cannot allocate 844424930131968 bytes");
    CHECK(str(jf(x3, 0)) == "[[1. 2. 3.]\n [1. 2. 3.]]");
    CHECK(jf.stats().compiles == 2);  // the failing signature's kernel stays cached
    CHECK(jf.stats().cache_size == 2);
  }
  SUBCASE("a symbolic shape solved at call time; the second of two results") {
    auto f = [](auto x) {
      const dyn::Dim n = x.shape(0);
      return std::make_tuple(x * 2.0, dyn::broadcast_to(x, {n * n * n, n}));
    };
    auto jf = dyn::jit(f, dyn::polymorphic_shapes{"(n,)"});
    CHECK(message_of<dyn::MemoryError>([&] { (void)jf(Array<double>({2048})); }) ==
          "jit result #1 (f64[8589934592,2048]): out of memory: cannot allocate 140737488355328 bytes");
    auto [a, b] = jf(x3);
    CHECK(str(a) == "[2. 4. 6.]");
    CHECK(b.shape() == std::vector<i64>{27, 3});
    CHECK(jf.stats().compiles == 1);
  }
  SUBCASE("a size the kernel computes from data") {
    auto jf = dyn::jit([](auto x) { return dyn::arange<double>(dyn::sum(x)); });
    CHECK(message_of<dyn::MemoryError>([&] { (void)jf(dyn::array<i64>({i64{1} << 50})); }) ==
          "jit: out of memory: cannot allocate 9007199254740992 bytes inside the function (a temporary, or a "
          "result whose size the function computes)");
    CHECK(str(jf(dyn::array<i64>({3}))) == "[0. 1. 2.]");
    CHECK(message_of<dyn::MemoryError>([&] { (void)jf(dyn::array<i64>({i64{1} << 46})); }) ==
          "jit: out of memory: cannot allocate 562949953421312 bytes inside the function (a temporary, or a "
          "result whose size the function computes)");
    // A byte count past int64 reaches the allocator saturated.
    CHECK(message_of<dyn::MemoryError>([&] { (void)jf(dyn::array<i64>({i64{1} << 62})); }) ==
          "jit: out of memory: cannot allocate 9223372036854775744 bytes or more (the size overflows int64) inside "
          "the function (a temporary, or a result whose size the function computes)");
    CHECK(jf.stats().compiles == 1);
    // The place: the jit call's line (a kernel reports a code, not a place).
    CHECK_THROWS_WITH_AS((void)jf(dyn::array<i64>({i64{1} << 50})),
                         doctest::Contains("The error occurred while running the function jitted at "), dyn::MemoryError);
  }
  SUBCASE("a kernel temporary inside a loop body, which owns a growing array") {
    auto f = [](auto big, auto x) {
      return dyn::for_loop(0, 3, 1, {.preserve_dimensions = false})([&](auto i, auto a) {
        auto huge = dyn::concatenate({dyn::ones<double>({big * i}), dyn::ones<double>({big * i})}, 0);
        return dyn::concatenate({a, a}, 0) + dyn::sum(huge);
      })(x);
    };
    auto jf = dyn::jit(f, dyn::polymorphic_shapes{"", "(n,)"});
    // Iteration 1 asks for a 2^61-byte temporary; the loop's state is freed.
    CHECK(message_of<dyn::MemoryError>([&] { (void)jf(i64{1} << 57, x3); }) ==
          "jit: out of memory: cannot allocate 2305843009213693952 bytes inside the function (a temporary, or a "
          "result whose size the function computes)");
    CHECK(str(jf(i64{0}, x3)) == "[1. 2. 3. 1. 2. 3. 1. 2. 3. 1. 2. 3. 1. 2. 3. 1. 2. 3. 1. 2. 3. 1. 2. 3.]");
    CHECK(jf.stats().compiles == 1);
  }
}

TEST_CASE("faults: out of memory on several threads at once: each caller gets its own size") {
  auto jf = dyn::jit([](auto x) { return dyn::arange<double>(dyn::sum(x)) * 2.0; });
  std::vector<int> bad(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 25; ++rep) {
        const i64 n = (i64{1} << 47) + (i64{t} << 20) * 64;  // 2^50 + t * 2^29 bytes
        const std::string want = "jit: out of memory: cannot allocate " + std::to_string(n * 8) +
                                 " bytes inside the function (a temporary, or a result whose size the function "
                                 "computes)";
        bad[static_cast<std::size_t>(t)] += message_of<dyn::MemoryError>([&] { (void)jf(dyn::array<i64>({n})); }) != want;
        const Array<double> r = jf(dyn::array<i64>({i64{t} + 2}));
        bad[static_cast<std::size_t>(t)] += r.size() != t + 2 || r.data()[t + 1] != 2.0 * static_cast<double>(t + 1);
      }
    });
  for (auto& th : threads) th.join();
  CHECK(bad == std::vector<int>{0, 0, 0, 0});
  CHECK(jf.stats().compiles == 1);
}

// ---------------------------------------------------------------------------
// The print sink throwing inside debug_print.

namespace {

struct SinkFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A sink that records lines and throws SinkFailure at line `throw_at` of
// this thread (counted from 1; 0: never), or an int when `throw_int`.
struct ThrowingSink {
  static inline thread_local std::string out;
  static inline thread_local int lines = 0, throw_at = 0;
  static inline thread_local bool throw_int = false;
  ThrowingSink() {
    dd::debug_print_sink() = {[](void*, const std::string& line) {
                                if (++lines == throw_at) {
                                  if (throw_int) throw 42;
                                  throw SinkFailure("the sink failed at line " + std::to_string(lines));
                                }
                                out += line;
                              },
                              nullptr};
    reset(0);
  }
  ~ThrowingSink() { dd::debug_print_sink() = {}; }
  static void reset(int at, bool as_int = false) {
    out.clear();
    lines = 0;
    throw_at = at;
    throw_int = as_int;
  }
};

template <class F>
std::string sink_failure(F&& f) {
  try {
    f();
  } catch (const SinkFailure& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("faults: the print sink throws inside debug_print: eagerly and through eval_jaxpr") {
  ThrowingSink sink;
  const auto x = dyn::array({1.0, 2.0});
  ThrowingSink::reset(1);
  CHECK(sink_failure([&] { dyn::debug_print("x={}", x); }) == "the sink failed at line 1");
  ThrowingSink::reset(0);
  dyn::debug_print("x={}", x);
  CHECK(ThrowingSink::out == "x=[1. 2.]\n");

  auto f = [](auto v) {
    dyn::debug_print("a {}", v);
    dyn::debug_print("b {}", v * 2.0);
    return v + 1.0;
  };
  const auto jx = dyn::make_jaxpr(f)(x);
  ThrowingSink::reset(2);
  CHECK(sink_failure([&] { (void)dyn::eval_jaxpr(jx, {x}); }) == "the sink failed at line 2");
  CHECK(ThrowingSink::out == "a [1. 2.]\n");
  ThrowingSink::reset(0);
  CHECK(str(dyn::eval_jaxpr(jx, {x})[0].get<double>()) == "[2. 3.]");
  CHECK(ThrowingSink::out == "a [1. 2.]\nb [2. 4.]\n");
}

TEST_CASE("faults: the print sink throws inside a jitted function: the exception reaches the caller") {
  ThrowingSink sink;
  const auto x = dyn::array({1.0, 2.0, 3.0});
  auto f = [](auto v) {
    auto y = v * 2.0;
    dyn::debug_print("y={}", y);
    dyn::debug_print("s={}", dyn::sum(y));
    return y + 1.0;
  };
  auto jf = dyn::jit(f);
  for (int at : {1, 2}) {
    ThrowingSink::reset(at);
    CHECK(sink_failure([&] { (void)jf(x); }) == "the sink failed at line " + std::to_string(at));
    CHECK(ThrowingSink::out == (at == 1 ? "" : "y=[2. 4. 6.]\n"));
  }
  // Any exception type passes through unchanged.
  ThrowingSink::reset(1, /*as_int=*/true);
  int thrown = 0;
  try {
    (void)jf(x);
  } catch (int v) {
    thrown = v;
  }
  CHECK(thrown == 42);
  ThrowingSink::reset(0);
  CHECK(str(jf(x)) == "[3. 5. 7.]");
  CHECK(ThrowingSink::out == "y=[2. 4. 6.]\ns=12.0\n");
  CHECK(jf.stats().compiles == 1);
  CHECK(jf.stats().cache_size == 1);
}

TEST_CASE("faults: the print sink throws in a loop body (which owns a growing array), a loop condition and a branch") {
  ThrowingSink sink;
  const auto x = dyn::array({1.0, 2.0});
  auto grow = [](auto v, auto n) {
    return dyn::for_loop(0, n, 1, {.preserve_dimensions = false})([](auto i, auto a) {
      dyn::debug_print("i={} a={}", i, a);
      return dyn::concatenate({a, a + 1.0}, 0);
    })(v);
  };
  auto jg = dyn::jit(grow, dyn::polymorphic_shapes{"(m,)", ""});
  ThrowingSink::reset(3);
  CHECK(sink_failure([&] { (void)jg(x, i64{4}); }) == "the sink failed at line 3");
  CHECK(ThrowingSink::out == "i=0 a=[1. 2.]\ni=1 a=[1. 2. 2. 3.]\n");
  ThrowingSink::reset(0);
  const Array<double> r = jg(x, i64{2});
  CHECK(str(r) == "[1. 2. 2. 3. 2. 3. 3. 4.]");
  CHECK(ThrowingSink::out == "i=0 a=[1. 2.]\ni=1 a=[1. 2. 2. 3.]\n");
  CHECK(jg.stats().compiles == 1);

  // In a while_loop's condition.
  auto wl = [](auto v) {
    return dyn::while_loop([](auto a) {
      dyn::debug_print("n={}", dyn::dim_value(a.shape(0)));
      return dyn::dim_value(a.shape(0)) < 8;
    }, {.preserve_dimensions = false})([](auto a) { return dyn::concatenate({a, a}, 0); })(v);
  };
  auto jw = dyn::jit(wl, dyn::polymorphic_shapes{"(m,)"});
  ThrowingSink::reset(2);
  CHECK(sink_failure([&] { (void)jw(x); }) == "the sink failed at line 2");
  CHECK(ThrowingSink::out == "n=2\n");
  ThrowingSink::reset(0);
  CHECK(str(jw(x)) == "[1. 2. 1. 2. 1. 2. 1. 2.]");
  CHECK(ThrowingSink::out == "n=2\nn=4\nn=8\n");
  CHECK(jw.stats().compiles == 1);

  auto br = [](auto v, auto p) {
    return dyn::cond(p > 0, [](auto u) {
      dyn::debug_print("pos {}", u);
      return u * 2.0;
    }, [](auto u) { return u - 1.0; })(v);
  };
  auto jb = dyn::jit(br);
  ThrowingSink::reset(1);
  CHECK(sink_failure([&] { (void)jb(x, 1.0); }) == "the sink failed at line 1");
  CHECK(str(jb(x, -1.0)) == "[0. 1.]");  // the branch that does not print
  ThrowingSink::reset(0);
  CHECK(str(jb(x, 1.0)) == "[2. 4.]");
  CHECK(ThrowingSink::out == "pos [1. 2.]\n");
  CHECK(jb.stats().compiles == 1);
}

TEST_CASE("faults: the print sink throws on some threads calling one jitted function") {
  ThrowingSink sink;
  auto f = [](auto v) {
    dyn::debug_print("v={}", v);
    return v * 3.0;
  };
  auto jf = dyn::jit(f);
  std::vector<int> bad(6, 0), caught(6, 0), lines(6, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t)
    threads.emplace_back([&, t] {
      const auto x = dyn::array({static_cast<double>(t)});
      for (int rep = 0; rep < 30; ++rep) {
        // Even threads: the sink throws at every call's print.
        ThrowingSink::reset(t % 2 == 0 ? 1 : 0);
        try {
          const Array<double> r = jf(x);
          bad[static_cast<std::size_t>(t)] += t % 2 == 0 || r.data()[0] != 3.0 * t;
          lines[static_cast<std::size_t>(t)] += ThrowingSink::out == "v=[" + std::to_string(t) + ".]\n";
        } catch (const SinkFailure& e) {
          bad[static_cast<std::size_t>(t)] += t % 2 != 0 || std::string(e.what()) != "the sink failed at line 1";
          ++caught[static_cast<std::size_t>(t)];
        }
      }
    });
  for (auto& th : threads) th.join();
  CHECK(bad == std::vector<int>(6, 0));
  CHECK(caught == std::vector<int>{30, 0, 30, 0, 30, 0});
  CHECK(lines == std::vector<int>{0, 30, 0, 30, 0, 30});
  CHECK(jf.stats().compiles == 1);
}

// ---------------------------------------------------------------------------
// Damaged, partial and leftover disk-cache files.

namespace {

const auto kf = [](auto x) { return dyn::sin(x) * 2.0 + 1.0; };
const Array<double>& x16() {
  static const Array<double> x = iota_array<double>({16}, 0.5, 0.25);
  return x;
}
dyn::JitStats call_fresh(Array<double>* out = nullptr) {
  auto jf = dyn::jit(kf);
  Array<double> r = jf(x16());
  if (out) *out = r;
  return jf.stats();
}
fs::path only_entry(const test_util::TempCache& c) {
  const auto e = c.entries();
  REQUIRE(e.size() == 1);
  return e[0];
}

// `bytes` at f's entry is ignored (the log says `why`), f compiles again with
// the right result, and a good entry replaces it (then a disk hit).
void check_replaced(const test_util::TempCache& c, const fs::path& entry, const std::string& bytes,
                    const Array<double>& want, const std::string& why) {
  test_util::write_bytes(entry, bytes);
  test_util::LogLines log;
  Array<double> r;
  const dyn::JitStats s = call_fresh(&r);
  CHECK(s.compiles == 1);
  CHECK(s.disk_hits == 0);
  CHECK(dyn::array_equal(r, want));
  const auto ignored = log.with("dynstage: disk cache: ignored " + entry.string() + ": ");
  REQUIRE(ignored.size() == 1);
  CHECK(ignored[0].find(why) != std::string::npos);
  CHECK(dd::decode_disk_entry(test_util::read_bytes(entry), test_util::key_of(entry)).has_value());
  CHECK(call_fresh().disk_hits == 1);
  CHECK(c.files() == std::vector<fs::path>{entry});  // no temporary file left
}

}  // namespace

TEST_CASE("faults: a disk-cache entry of garbage, or truncated anywhere, is ignored and replaced") {
  test_util::TempCache cache("faults_disk");
  Array<double> want;
  (void)call_fresh(&want);
  const fs::path entry = only_entry(cache);
  const std::string good = test_util::read_bytes(entry);
  std::mt19937_64 rng(23);
  std::string garbage(good.size(), '\0');
  for (char& ch : garbage) ch = static_cast<char>(rng());
  check_replaced(cache, entry, garbage, want, "not a dynstage cache entry (no magic number)");
  // Garbage after a good magic number.
  check_replaced(cache, entry, good.substr(0, 8) + garbage.substr(8), want, "");
  // Every boundary of the header (magic 8, format 4, provenance length 4,
  // key 16, payload length 8, checksum 8, provenance), into the payload, and
  // one byte short: what a writer that died part-way would leave if entries
  // were written in place.
  const std::size_t header = 48 + dd::disk_entry_provenance().size();
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{8}, std::size_t{12},
                        std::size_t{16}, std::size_t{32}, std::size_t{40}, std::size_t{47}, std::size_t{48},
                        header - 1, header, header + 1, header + 20, good.size() / 2, good.size() - 1}) {
    CAPTURE(n);
    const std::string why = n < 8 ? "not a dynstage cache entry" : n < header ? "truncated header" : "truncated: ";
    check_replaced(cache, entry, good.substr(0, n), want, why);
  }
  // One byte too many.
  check_replaced(cache, entry, good + "x", want, "trailing bytes: ");
}

TEST_CASE("faults: an entry whose object code is garbage under a good checksum is rejected by LLVM, never run") {
  test_util::TempCache cache("faults_obj");
  Array<double> want;
  (void)call_fresh(&want);
  const fs::path entry = only_entry(cache);
  auto decoded = dd::decode_disk_entry(test_util::read_bytes(entry), test_util::key_of(entry));
  REQUIRE(decoded.has_value());
  // (On a thread of its own: this thread's MRU slots hold kernels of
  // functions already gone, which a new call would release.)
  const std::size_t live = dd::live_kernels();
  for (int form = 0; form < 2; ++form) {
    CAPTURE(form);
    dd::DiskEntry bad = *decoded;
    if (form == 0) {
      std::mt19937_64 rng(7);
      for (char& ch : bad.object) ch = static_cast<char>(rng());
    } else {
      bad.object = bad.object.substr(0, bad.object.size() / 3);  // an ELF file cut short
    }
    test_util::write_bytes(entry, dd::encode_disk_entry(bad));
    test_util::LogLines log;
    Array<double> r;
    dyn::JitStats s;
    std::size_t live_in = 0;
    std::thread([&] {
      auto jf = dyn::jit(kf);
      r = jf(x16());
      s = jf.stats();
      live_in = dd::live_kernels();
    }).join();
    CHECK(s.compiles == 1);
    CHECK(s.disk_hits == 0);
    CHECK(live_in == live + 1);  // the compiled kernel only: the rejected object's was freed
    CHECK(dyn::array_equal(r, want));
    CHECK(log.with("dynstage: disk cache: LLVM rejected the entry " + entry.string()).size() == 1);
  }
  CHECK(dd::live_kernels() == live);
}

TEST_CASE("faults: temporary files a crashed writer left are never read; stale ones are removed") {
  test_util::TempCache cache("faults_tmp");
  Array<double> want;
  (void)call_fresh(&want);
  const fs::path entry = only_entry(cache);
  const std::string good = test_util::read_bytes(entry);
  fs::remove(entry);
  // A writer that died half-way (fresh: maybe still writing) and one from
  // two hours ago, both for this very entry.
  const fs::path fresh = cache.dir / (".tmp-999999-0-" + entry.filename().string());
  const fs::path stale = cache.dir / (".tmp-999998-3-" + entry.filename().string());
  test_util::write_bytes(fresh, good.substr(0, good.size() / 2));
  test_util::write_bytes(stale, good);
  const timespec old[2] = {{std::time(nullptr) - 7200, 0}, {std::time(nullptr) - 7200, 0}};
  REQUIRE(::utimensat(AT_FDCWD, stale.c_str(), old, 0) == 0);
  dd::set_disk_cache_config({cache.dir.string(), dd::kDefaultDiskCacheBytes});  // (the next store scans)
  Array<double> r;
  const dyn::JitStats s = call_fresh(&r);
  CHECK(s.compiles == 1);  // a temporary file is no entry
  CHECK(s.disk_hits == 0);
  CHECK(dyn::array_equal(r, want));
  CHECK(fs::exists(entry));
  CHECK(fs::exists(fresh));
  CHECK(!fs::exists(stale));
  CHECK(call_fresh().disk_hits == 1);
}

TEST_CASE("faults: a directory in the entry's place, and a failing write over a damaged entry") {
  test_util::TempCache cache("faults_dir");
  Array<double> want;
  (void)call_fresh(&want);
  const fs::path entry = only_entry(cache);
  const std::string good = test_util::read_bytes(entry);
  SUBCASE("a directory") {
    fs::remove(entry);
    fs::create_directories(entry / "sub");
    for (int rep = 0; rep < 2; ++rep) {
      Array<double> r;
      const dyn::JitStats s = call_fresh(&r);
      CHECK(s.compiles == 1);
      CHECK(dyn::array_equal(r, want));
    }
    CHECK(fs::is_directory(entry));
    for (const auto& p : cache.files()) CHECK(p == entry);  // no temporary file left
  }
  SUBCASE("a full disk over a damaged entry") {
    std::string damaged = good;
    damaged[damaged.size() - 5] ^= 0x20;
    test_util::write_bytes(entry, damaged);
    dd::disk_cache_fault() = dd::DiskFault::write_fails;
    for (int rep = 0; rep < 2; ++rep) {
      Array<double> r;
      const dyn::JitStats s = call_fresh(&r);
      CHECK(s.compiles == 1);  // never loaded, however often asked
      CHECK(dyn::array_equal(r, want));
      CHECK(test_util::read_bytes(entry) == damaged);  // the failed write left the old file alone
      CHECK(cache.files() == std::vector<fs::path>{entry});
    }
    dd::disk_cache_fault() = dd::DiskFault::none;
    CHECK(call_fresh().compiles == 1);
    CHECK(dd::decode_disk_entry(test_util::read_bytes(entry), test_util::key_of(entry)).has_value());
    CHECK(call_fresh().disk_hits == 1);
  }
  SUBCASE("an entry is replaced by rename, never rewritten in place") {
    std::string damaged = good;
    damaged[damaged.size() / 2] ^= 0x01;
    test_util::write_bytes(entry, damaged);
    struct stat before{};
    REQUIRE(::stat(entry.c_str(), &before) == 0);
    const int fd = ::open(entry.c_str(), O_RDONLY);  // a reader that opened the old file
    REQUIRE(fd >= 0);
    CHECK(call_fresh().compiles == 1);
    struct stat after{};
    REQUIRE(::stat(entry.c_str(), &after) == 0);
    CHECK(after.st_ino != before.st_ino);  // a new file took the name
    std::string seen(damaged.size(), '\0');
    CHECK(::pread(fd, seen.data(), seen.size(), 0) == static_cast<ssize_t>(seen.size()));
    ::close(fd);
    CHECK(seen == damaged);  // the reader's file was never written
    CHECK(dd::decode_disk_entry(test_util::read_bytes(entry), test_util::key_of(entry)).has_value());
  }
}
