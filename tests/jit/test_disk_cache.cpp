// The disk cache (API.md section 15, issue 21): kernels persist across
// processes in DYNSTAGE_CACHE_DIR; a damaged, truncated or foreign entry is
// ignored and replaced, never trusted; every fault of the file system falls
// back to compiling. Each test points the cache at a fresh temporary
// directory (detail::set_disk_cache_config; the suite runs with the cache
// off, tests/main.cpp) and reads its effects from jf.stats(), the files and
// the compile log.
#include <doctest/doctest.h>

#include <dynstage/dynstage.hpp>
#include <dynstage/jit/disk_cache.hpp>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <string>
#include <vector>

#include "../test_util.hpp"

namespace {

namespace fs = std::filesystem;
namespace dd = dyn::detail;
using dyn::Array;
using test_util::iota_array;

// A fresh directory for one test, the disk cache pointed at it; the cache
// is off again (and the fault hook cleared) when the test ends.
struct TempCache {
  fs::path dir;
  explicit TempCache(std::uint64_t max_bytes = dd::kDefaultDiskCacheBytes, bool create = true) {
    static int n = 0;
    dir = fs::temp_directory_path() /
          ("dynstage_disk_cache_test_" + std::to_string(::getpid()) + "_" + std::to_string(n++));
    fs::remove_all(dir);
    if (create) fs::create_directories(dir);
    dd::set_disk_cache_config({dir.string(), max_bytes});
  }
  ~TempCache() {
    dd::set_disk_cache_config({});
    dd::disk_cache_fault() = dd::DiskFault::none;
    std::error_code ec;
    fs::permissions(dir, fs::perms::owner_all, ec);
    fs::remove_all(dir, ec);
  }
  TempCache(const TempCache&) = delete;
  TempCache& operator=(const TempCache&) = delete;

  // Every file in the directory, sorted (entries and temporary files).
  std::vector<fs::path> files() const {
    std::vector<fs::path> r;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) r.push_back(it->path());
    std::sort(r.begin(), r.end());
    return r;
  }
  std::uint64_t bytes() const {
    std::uint64_t n = 0;
    for (const auto& p : files()) n += fs::file_size(p);
    return n;
  }
};

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
void write_file(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << bytes;
}

// The key an entry's file name spells (<32 hex digits>.dkc).
dd::DiskKey key_of(const fs::path& entry) {
  const std::string h = entry.stem().string();
  REQUIRE(h.size() == 32);
  return dd::DiskKey{std::stoull(h.substr(16), nullptr, 16), std::stoull(h.substr(0, 16), nullptr, 16)};
}

// The compile log's lines (detail::jit_log_hook) while a LogCapture lives.
std::mutex log_mu;
std::vector<std::string> log_lines;
void capture(const std::string& line) {
  std::lock_guard<std::mutex> lock(log_mu);
  log_lines.push_back(line);
}
struct LogCapture {
  LogCapture() {
    std::lock_guard<std::mutex> lock(log_mu);
    log_lines.clear();
    dd::jit_log_hook().store(&capture);
  }
  ~LogCapture() { dd::jit_log_hook().store(nullptr); }
  // The lines that contain `s`.
  std::vector<std::string> with(const std::string& s) const {
    std::lock_guard<std::mutex> lock(log_mu);
    std::vector<std::string> r;
    for (const auto& l : log_lines)
      if (l.find(s) != std::string::npos) r.push_back(l);
    return r;
  }
};

// The kernels of these tests: small (no parallel tasks, so a fork()ed child
// never needs the thread pool), and different from each other.
const auto f = [](auto x) { return dyn::sin(x) * 2.0 + 1.0; };
const auto g = [](auto x) { return dyn::cos(x) * 2.0 + 1.0; };
const Array<double>& x16() {
  static const Array<double> x = iota_array<double>({16}, 0.5, 0.25);
  return x;
}

// One call of a fresh jit of `fn` (a new in-memory cache): its result and stats.
template <class F, class... A>
std::pair<Array<double>, dyn::JitStats> fresh_call(const F& fn, const A&... args) {
  auto jf = dyn::jit(fn);
  Array<double> r = jf(args...);
  return {r, jf.stats()};
}

// A compile, and no disk hit.
void check_compiled(const dyn::JitStats& s) {
  CHECK(s.compiles == 1);
  CHECK(s.disk_hits == 0);
}
void check_disk_hit(const dyn::JitStats& s) {
  CHECK(s.compiles == 0);
  CHECK(s.disk_hits == 1);
  CHECK(s.traces == 1);  // the key is the traced program's: a hit traces, then loads
}

// The one entry in the cache directory.
fs::path only_entry(const TempCache& c) {
  const auto fs_ = c.files();
  REQUIRE(fs_.size() == 1);
  REQUIRE(fs_[0].extension() == ".dkc");
  return fs_[0];
}

// A damaged entry of f is ignored (logged with `why`), f compiles again and
// gives the right result, and the new entry replaces the damaged one.
void check_replaced(const TempCache& c, const fs::path& entry, const Array<double>& want, const std::string& why) {
  LogCapture log;
  const auto [r, s] = fresh_call(f, x16());
  check_compiled(s);
  CHECK(dyn::array_equal(r, want));
  const auto ignored = log.with("dynstage: disk cache: ignored " + entry.string() + ": ");
  REQUIRE(ignored.size() == 1);
  CHECK(ignored[0].find(why) != std::string::npos);
  CHECK(dd::decode_disk_entry(read_file(entry), key_of(entry)).has_value());
  check_disk_hit(fresh_call(f, x16()).second);
  for (const auto& p : c.files()) CHECK(p.extension() == ".dkc");  // no temporary file left
}

}  // namespace

TEST_CASE("disk cache: a second jit of the same function loads its kernel from disk") {
  TempCache cache;
  auto jf1 = dyn::jit(f);
  const Array<double> r1 = jf1(x16());
  check_compiled(jf1.stats());
  const fs::path entry = only_entry(cache);
  CHECK(dd::decode_disk_entry(read_file(entry), key_of(entry)).has_value());

  LogCapture log;
  auto jf2 = dyn::jit(f);  // a fresh in-memory cache
  const Array<double> r2 = jf2(x16());
  check_disk_hit(jf2.stats());
  CHECK(dyn::array_equal(r2, r1));  // the same kernel: the same bits
  CHECK(dyn::allclose(r2, Array<double>(dyn::eager(f)(x16())), 1e-14));
  CHECK(log.with("disk hit (f64[16])").size() == 1);
  // Later calls are in-memory hits.
  CHECK(dyn::array_equal(Array<double>(jf2(x16())), r1));
  CHECK(jf2.stats().cache_hits == 1);
  CHECK(jf2.stats().disk_hits == 1);
  // Another function, or another shape, is another kernel.
  check_compiled(fresh_call(g, x16()).second);
  check_compiled(fresh_call(f, iota_array<double>({17})).second);
  CHECK(cache.files().size() == 3);
}

TEST_CASE("disk cache: kernels with a GEMM call, symbolic shapes or donated buffers load with their facts") {
  TempCache cache;
  // A product of 64^3 multiply-adds calls the GEMM routine (kRoutineGemm).
  auto mm = [](auto a, auto b) { return dyn::matmul(a, b) + 1.0; };
  const Array<double> a = iota_array<double>({64, 64}, 0.0, 0.001), b = iota_array<double>({64, 64}, 1.0, -0.002);
  auto m1 = dyn::jit(mm);
  const Array<double> want = m1(a, b);
  auto m2 = dyn::jit(mm);
  CHECK(dyn::array_equal(Array<double>(m2(a, b)), want));
  check_disk_hit(m2.stats());

  // Symbolic shapes: one kernel (one entry) for every n.
  auto p1 = dyn::jit(f, dyn::polymorphic_shapes{"n"});
  (void)p1(x16());
  auto p2 = dyn::jit(f, dyn::polymorphic_shapes{"n"});
  const Array<double> x5 = iota_array<double>({5});
  CHECK(dyn::array_equal(Array<double>(p2(x5)), Array<double>(p1(x5))));
  check_disk_hit(p2.stats());

  // A donated argument's buffer becomes the result (CompileResult::result_aliases).
  auto upd = [](auto x) {
    return dyn::dynamic_update_slice(x, dyn::dynamic_slice(x, {std::int64_t{0}}, {4}) + 1.0, {std::int64_t{8}});
  };
  const Array<double> want_u = Array<double>(dyn::eager(upd)(iota_array<double>({64})));
  for (int round = 0; round < 2; ++round) {
    auto ju = dyn::jit(upd, dyn::donate_argnums<0>{});
    Array<double> xu = iota_array<double>({64});
    const void* buf = xu.data();
    const Array<double> r = ju(std::move(xu));
    CHECK(dyn::array_equal(r, want_u));
    CHECK(r.data() == buf);
    CHECK(ju.stats().disk_hits == static_cast<std::size_t>(round));
  }
}

TEST_CASE("disk cache: DYNSTAGE_CACHE_DIR=off and the default directory") {
  auto cfg = dd::disk_cache_config_from("off", nullptr, "/xdg", "/home/u");
  CHECK(cfg.dir.empty());
  CHECK(cfg.max_bytes == dd::kDefaultDiskCacheBytes);
  CHECK(dd::disk_cache_config_from(nullptr, nullptr, "/xdg", "/home/u").dir == "/xdg/dynstage");
  CHECK(dd::disk_cache_config_from("", nullptr, "/xdg", "/home/u").dir == "/xdg/dynstage");
  CHECK(dd::disk_cache_config_from(nullptr, nullptr, "relative", "/home/u").dir == "/home/u/.cache/dynstage");
  CHECK(dd::disk_cache_config_from(nullptr, nullptr, nullptr, "/home/u").dir == "/home/u/.cache/dynstage");
  CHECK(dd::disk_cache_config_from(nullptr, nullptr, nullptr, nullptr).dir.empty());
  CHECK(dd::disk_cache_config_from("/c", "12345", nullptr, nullptr).dir == "/c");
  CHECK(dd::disk_cache_config_from("/c", "12345", nullptr, nullptr).max_bytes == 12345);
  CHECK(dd::disk_cache_config_from("/c", "12k", nullptr, nullptr).max_bytes == dd::kDefaultDiskCacheBytes);
  CHECK(dd::disk_cache_config_from("/c", "-1", nullptr, nullptr).max_bytes == dd::kDefaultDiskCacheBytes);

  // Off: nothing is read or written.
  TempCache cache;
  dd::set_disk_cache_config({});
  check_compiled(fresh_call(f, x16()).second);
  check_compiled(fresh_call(f, x16()).second);
  CHECK(cache.files().empty());
}

TEST_CASE("disk cache: a missing directory is created") {
  TempCache cache(dd::kDefaultDiskCacheBytes, /*create=*/false);
  REQUIRE(!fs::exists(cache.dir));
  check_compiled(fresh_call(f, x16()).second);
  CHECK(fs::is_directory(cache.dir));
  CHECK(cache.files().size() == 1);
  check_disk_hit(fresh_call(f, x16()).second);
}

TEST_CASE("disk cache: a read-only directory still serves its entries and never fails a compile") {
  TempCache cache;
  const Array<double> want = fresh_call(f, x16()).first;
  fs::permissions(cache.dir, fs::perms::owner_read | fs::perms::owner_exec);
  // Root writes to a read-only directory all the same: the hook refuses the
  // file's creation as the file system would for anyone else.
  if (::geteuid() == 0) dd::disk_cache_fault() = dd::DiskFault::create_fails;
  LogCapture log;
  const auto [r, s] = fresh_call(f, x16());
  check_disk_hit(s);
  CHECK(dyn::array_equal(r, want));
  const auto [rg, sg] = fresh_call(g, x16());  // not on disk, cannot be stored: compiled
  check_compiled(sg);
  CHECK(dyn::allclose(rg, Array<double>(dyn::eager(g)(x16())), 1e-14));
  CHECK(log.with("dynstage: disk cache: cannot create a file in " + cache.dir.string() + ": Permission denied; "
                 "the kernel is not cached on disk").size() == 1);
  CHECK(cache.files().size() == 1);
}

TEST_CASE("disk cache: a directory that cannot be created falls back to compiling") {
  TempCache cache;
  write_file(cache.dir / "file", "x");
  dd::set_disk_cache_config({(cache.dir / "file" / "sub").string(), dd::kDefaultDiskCacheBytes});
  LogCapture log;
  const auto [r, s] = fresh_call(f, x16());
  check_compiled(s);
  CHECK(dyn::allclose(r, Array<double>(dyn::eager(f)(x16())), 1e-14));
  CHECK(log.with("dynstage: disk cache: cannot create " + (cache.dir / "file" / "sub").string()).size() == 1);
  check_compiled(fresh_call(f, x16()).second);
}

TEST_CASE("disk cache: a full disk leaves no entry and no temporary file") {
  TempCache cache;
  dd::disk_cache_fault() = dd::DiskFault::write_fails;
  LogCapture log;
  const auto [r, s] = fresh_call(f, x16());
  check_compiled(s);
  CHECK(dyn::allclose(r, Array<double>(dyn::eager(f)(x16())), 1e-14));
  CHECK(cache.files().empty());
  CHECK(log.with("No space left on device; the kernel is not cached on disk").size() == 1);
  check_compiled(fresh_call(f, x16()).second);  // still nothing to load
  dd::disk_cache_fault() = dd::DiskFault::none;
  check_compiled(fresh_call(f, x16()).second);  // the disk has room again: stored
  check_disk_hit(fresh_call(f, x16()).second);
}

TEST_CASE("disk cache: an entry larger than DYNSTAGE_CACHE_MAX_BYTES is not stored") {
  TempCache cache(/*max_bytes=*/100);
  LogCapture log;
  check_compiled(fresh_call(f, x16()).second);
  CHECK(cache.files().empty());
  CHECK(log.with("more than the bound of 100 (DYNSTAGE_CACHE_MAX_BYTES)").size() == 1);
}

TEST_CASE("disk cache: eviction keeps the directory under the bound, least recently used first") {
  // The entries' sizes, measured: f on 8, 9, 10 and 11 elements.
  std::vector<Array<double>> xs;
  for (std::int64_t n : {8, 9, 10, 11}) xs.push_back(iota_array<double>({n}));
  std::vector<std::uint64_t> size;
  {
    TempCache probe;
    for (const auto& x : xs) {
      const std::uint64_t before = probe.bytes();
      (void)fresh_call(f, x);
      size.push_back(probe.bytes() - before);
    }
  }
  // Room for any three entries, not for four.
  const std::uint64_t all = size[0] + size[1] + size[2] + size[3];
  const std::uint64_t bound = all - *std::min_element(size.begin(), size.end()) / 2;
  TempCache cache(bound);
  std::vector<fs::path> entry;
  for (int k = 0; k < 3; ++k) {
    const auto before = cache.files();
    check_compiled(fresh_call(f, xs[static_cast<std::size_t>(k)]).second);
    const auto after = cache.files();
    REQUIRE(after.size() == before.size() + 1);
    for (const auto& p : after)
      if (std::find(before.begin(), before.end(), p) == before.end()) entry.push_back(p);
  }
  // Entry 0 used again: entry 1 is now the least recently used.
  check_disk_hit(fresh_call(f, xs[0]).second);
  LogCapture log;
  check_compiled(fresh_call(f, xs[3]).second);
  CHECK(cache.bytes() <= bound);
  CHECK(cache.files().size() == 3);
  CHECK(fs::exists(entry[0]));
  CHECK(!fs::exists(entry[1]));
  CHECK(fs::exists(entry[2]));
  CHECK(log.with("dynstage: disk cache: evicted " + entry[1].string()).size() == 1);
  check_compiled(fresh_call(f, xs[1]).second);  // gone: compiled again
}

TEST_CASE("disk cache: a truncated entry is ignored and replaced") {
  TempCache cache;
  const Array<double> want = fresh_call(f, x16()).first;
  const fs::path entry = only_entry(cache);
  const std::string good = read_file(entry);
  SUBCASE("in the payload") {
    write_file(entry, good.substr(0, good.size() / 2));
    check_replaced(cache, entry, want, "truncated: ");
  }
  SUBCASE("in the header") {
    write_file(entry, good.substr(0, 20));
    check_replaced(cache, entry, want, "truncated header");
  }
  SUBCASE("empty") {
    write_file(entry, "");
    check_replaced(cache, entry, want, "not a dynstage cache entry");
  }
}

TEST_CASE("disk cache: an entry with flipped bits is ignored and replaced") {
  TempCache cache;
  const Array<double> want = fresh_call(f, x16()).first;
  const fs::path entry = only_entry(cache);
  std::string bytes = read_file(entry);
  SUBCASE("in the object code") {
    bytes[bytes.size() * 3 / 4] ^= 0x10;
    write_file(entry, bytes);
    check_replaced(cache, entry, want, "checksum mismatch (a damaged entry)");
  }
  SUBCASE("in the checksum") {
    bytes[40] ^= 0x01;  // (magic 8, format 4, provenance length 4, key 16, payload length 8)
    write_file(entry, bytes);
    check_replaced(cache, entry, want, "checksum mismatch (a damaged entry)");
  }
  SUBCASE("in the key") {
    bytes[17] ^= 0x04;
    write_file(entry, bytes);
    check_replaced(cache, entry, want, "the header's key ");
  }
  SUBCASE("in the magic number") {
    bytes[0] ^= 0x01;
    write_file(entry, bytes);
    check_replaced(cache, entry, want, "not a dynstage cache entry (no magic number)");
  }
}

TEST_CASE("disk cache: an entry from another CPU, LLVM version or entry format is ignored and replaced") {
  TempCache cache;
  const Array<double> want = fresh_call(f, x16()).first;
  const fs::path entry = only_entry(cache);
  const std::string good = read_file(entry);
  auto decoded = dd::decode_disk_entry(good, key_of(entry));
  REQUIRE(decoded.has_value());
  const std::string prov = dd::disk_entry_provenance();
  CHECK(decoded->provenance == prov);
  // A well-formed entry (good checksum) whose header names another machine.
  auto rewrite = [&](const std::string& from, const std::string& to) {
    const std::size_t at = prov.find(from);
    REQUIRE(at != std::string::npos);
    dd::DiskEntry e = *decoded;
    e.provenance = prov.substr(0, at) + to + prov.substr(prov.find(';', at) == std::string::npos ? prov.size()
                                                                                                 : prov.find(';', at));
    write_file(entry, dd::encode_disk_entry(e));
  };
  SUBCASE("another CPU") {
    rewrite("cpu ", "cpu another-cpu");
    check_replaced(cache, entry, want, "cpu another-cpu\", this process is \"" + prov + "\"");
  }
  SUBCASE("another LLVM version") {
    rewrite("LLVM ", "LLVM 18.1.8");
    check_replaced(cache, entry, want, "LLVM 18.1.8");
  }
  SUBCASE("another entry format") {
    std::string bytes = good;
    const std::uint32_t format = dd::kDiskEntryFormat + 1;
    bytes.replace(8, 4, reinterpret_cast<const char*>(&format), 4);
    write_file(entry, bytes);
    check_replaced(cache, entry, want,
                   "entry format " + std::to_string(format) + ", this dynstage reads format " +
                       std::to_string(dd::kDiskEntryFormat));
  }
}

TEST_CASE("disk cache: another kernel's entry under this key is never run") {
  TempCache cache;
  const Array<double> want_g = fresh_call(g, x16()).first;
  const fs::path entry_g = only_entry(cache);
  const Array<double> want_f = fresh_call(f, x16()).first;
  fs::path entry_f;
  for (const auto& p : cache.files())
    if (p != entry_g) entry_f = p;
  REQUIRE(!entry_f.empty());
  // g's entry, intact, copied to f's name.
  fs::copy_file(entry_g, entry_f, fs::copy_options::overwrite_existing);
  check_replaced(cache, entry_f, want_f, "the header's key " + key_of(entry_g).hex() + " is not the file's " +
                                             key_of(entry_f).hex());
  CHECK(!dyn::allclose(want_f, want_g));
  // g's own entry is untouched.
  const auto [rg, sg] = fresh_call(g, x16());
  check_disk_hit(sg);
  CHECK(dyn::array_equal(rg, want_g));
}

namespace {
std::size_t ignored_lines() {
  std::lock_guard<std::mutex> lock(log_mu);
  return static_cast<std::size_t>(std::count_if(log_lines.begin(), log_lines.end(), [](const std::string& l) {
    return l.find("dynstage: disk cache: ignored") != std::string::npos;
  }));
}
}  // namespace

TEST_CASE("disk cache: two processes compiling the same kernel at once both succeed") {
  TempCache cache;
  const auto h = [](auto x) { return dyn::tanh(x) * 3.0 - dyn::exp(-x); };
  const Array<double> want = Array<double>(dyn::eager(h)(x16()));
  LogCapture log;
  // Both processes, in rounds: remove the entry (on alternate rounds, so
  // that each round one of them finds none and writes one while the other
  // reads or writes), then call a fresh jit. Every result must be right, and
  // no process may ever see a partial entry (it would be logged as ignored).
  auto rounds = [&](int parity) {
    bool ok = true;
    for (int round = 0; round < 6; ++round) {
      if (round % 2 == parity)
        for (const auto& p : cache.files())
          if (p.extension() == ".dkc") fs::remove(p);
      auto jh = dyn::jit(h);
      ok = ok && dyn::allclose(Array<double>(jh(x16())), want, 1e-14);
      ok = ok && jh.stats().compiles + jh.stats().disk_hits == 1;
    }
    return ok;
  };
  int go[2];
  REQUIRE(::pipe(go) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {  // the child: no doctest here, only an exit code
    int code = 0;
    try {
      char c = 0;
      if (::read(go[0], &c, 1) != 1) ::_exit(10);
      if (!rounds(1)) code |= 1;
      if (ignored_lines() != 0) code |= 2;
    } catch (...) {
      code |= 4;
    }
    ::_exit(code);
  }
  REQUIRE(::write(go[1], "g", 1) == 1);  // both start now
  const bool parent_ok = rounds(0);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  ::close(go[0]);
  ::close(go[1]);
  CHECK(parent_ok);
  CHECK(ignored_lines() == 0);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  // What the race left is one good entry, no temporary file.
  const fs::path entry = only_entry(cache);
  CHECK(dd::decode_disk_entry(read_file(entry), key_of(entry)).has_value());
  const auto [r, s] = fresh_call(h, x16());
  check_disk_hit(s);
  CHECK(dyn::allclose(r, want, 1e-14));
}

TEST_CASE("log: a compile's line gives trace, lowering and LLVM times; a disk hit's gives trace and load") {
  TempCache cache;
  LogCapture log;
  (void)fresh_call(f, x16());
  (void)fresh_call(f, x16());
  const auto compiled = log.with(": compiled (f64[16]) in ");
  const auto hit = log.with(": disk hit (f64[16]) in ");
  REQUIRE(compiled.size() == 1);
  REQUIRE(hit.size() == 1);
  // "... in T ms (trace A ms, lower B ms, LLVM C ms); cache miss: first call": the three parts
  // are separate measures of one compile, so they add up to at most its time.
  double total = 0, trace = 0, lower = 0, llvm = 0;
  const char* c = std::strstr(compiled[0].c_str(), ") in ");
  REQUIRE(c);
  REQUIRE(std::sscanf(c, ") in %lf ms (trace %lf ms, lower %lf ms, LLVM %lf ms); cache miss: first call", &total,
                      &trace, &lower, &llvm) == 4);
  CHECK(trace > 0);
  CHECK(lower > 0);
  CHECK(llvm > 0);
  CHECK(trace + lower + llvm <= total + 0.02);  // (each is rounded to 0.01 ms)
  CHECK(compiled[0].find("; cache miss: first call") != std::string::npos);
  double load = 0;
  const char* h = std::strstr(hit[0].c_str(), ") in ");
  REQUIRE(h);
  REQUIRE(std::sscanf(h, ") in %lf ms (trace %lf ms, load %lf ms); cache miss: first call", &total, &trace, &load) == 3);
  CHECK(trace > 0);
  CHECK(load > 0);
  CHECK(hit[0].find("dynstage: jit of the function at ") == 0);
}

// A new process (this test executable again, on one test case) sees only
// what is on disk: the GEMM routines are not in it yet. The child below
// runs a kernel that calls them, with the cache in DYNSTAGE_TEST_CHILD_CACHE
// (tests/main.cpp turns DYNSTAGE_CACHE_DIR off), and writes its stats to
// DIR/child.txt: compiles, disk hits, and how many stores it attempted
// (with DYNSTAGE_TEST_CHILD_READ_ONLY, every store fails and is logged).
namespace {
int run_child(const fs::path& dir, bool read_only) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setenv("DYNSTAGE_TEST_CHILD_CACHE", dir.c_str(), 1);
    if (read_only) ::setenv("DYNSTAGE_TEST_CHILD_READ_ONLY", "1", 1);
    const std::string out = (dir / ".." / (dir.filename().string() + ".child.log")).string();
    if (std::freopen(out.c_str(), "w", stdout) == nullptr) ::_exit(126);
    ::execl("/proc/self/exe", "/proc/self/exe", "-tc=disk cache child:*", "--no-colors", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  if (pid < 0 || ::waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}
}  // namespace

TEST_CASE("disk cache child: a kernel that calls the GEMM routines") {
  const char* dir = std::getenv("DYNSTAGE_TEST_CHILD_CACHE");
  if (!dir) return;  // only run by the test below, in a process of its own
  dd::set_disk_cache_config({dir, dd::kDefaultDiskCacheBytes});
  if (std::getenv("DYNSTAGE_TEST_CHILD_READ_ONLY")) dd::disk_cache_fault() = dd::DiskFault::create_fails;
  LogCapture log;
  auto mm = [](auto a, auto b) { return dyn::matmul(a, b) + 1.0; };
  const Array<double> a = iota_array<double>({64, 64}, 0.0, 0.001), b = iota_array<double>({64, 64}, 1.0, -0.002);
  auto jm = dyn::jit(mm);
  const Array<double> r = jm(a, b);
  CHECK(dyn::allclose(r, Array<double>(dyn::eager(mm)(a, b)), 1e-12));
  std::ofstream(fs::path(dir) / "child.txt") << jm.stats().compiles << " " << jm.stats().disk_hits << " "
                                              << log.with("cannot create a file in").size();
}

TEST_CASE("disk cache: a new process loads a GEMM kernel and the GEMM routines from disk") {
  TempCache cache;
  REQUIRE(run_child(cache.dir, false) == 0);  // compiles and stores both
  CHECK(read_file(cache.dir / "child.txt") == "1 0 0");
  std::size_t entries = 0;
  for (const auto& p : cache.files()) entries += p.extension() == ".dkc";
  CHECK(entries == 2);  // the kernel and the GEMM routines
  // The second process can store nothing: it loads the kernel and the
  // routines, and compiles neither (a compile would try to store).
  REQUIRE(run_child(cache.dir, true) == 0);
  CHECK(read_file(cache.dir / "child.txt") == "0 1 0");
  std::error_code ec;
  fs::remove(cache.dir.parent_path() / (cache.dir.filename().string() + ".child.log"), ec);
}
