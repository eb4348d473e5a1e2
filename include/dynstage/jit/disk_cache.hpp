// dynstage: the disk cache of compiled kernels (API.md section 15) — kernels
// persist across processes in $DYNSTAGE_CACHE_DIR, one file per kernel, so a
// second run of a program loads its kernels' machine code instead of
// lowering, optimising and generating it again.
//
// The key: an XXH3 128-bit hash of everything that decides the machine code
// (disk_key; docs/backend.md "Disk cache" says what and why). It is computed
// after tracing and before lowering: a hit skips lowering, optimisation and
// code generation, and loads the object file with its facts (entry symbol,
// result aliases, runtime routines).
//
// An entry (encode_disk_entry) is a header — magic, format version, the key
// echoed, the provenance (dynstage, LLVM, CPU), the payload's length and
// XXH3 64-bit checksum — then the payload. Written to a temporary file in
// the cache directory and renamed over the entry's name (atomic: a reader
// sees a whole entry or none). An entry that fails any check of its header,
// length or checksum is ignored and replaced by the next store, never
// trusted. Size bound: least recently used entries (mtime, set on every
// hit) are removed past DYNSTAGE_CACHE_MAX_BYTES. Every failure to read or
// write (missing or read-only directory, full disk) falls back to compiling:
// the user sees no error (DYNSTAGE_LOG_COMPILES=1 logs it).
//
// The declarations are the tests' hooks too; the definitions are compiled
// in the one DYNSTAGE_IMPLEMENTATION translation unit (jit/call.hpp uses them).
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "../ir/jaxpr.hpp"
#include "../llvm/backend.hpp"

namespace dyn::detail {

// dynstage's version (meson.build's project version): part of the key.
inline constexpr const char* kDynstageVersion = "0.1.0";
// The entry format this dynstage reads and writes.
inline constexpr std::uint32_t kDiskEntryFormat = 1;
inline constexpr std::uint64_t kDefaultDiskCacheBytes = std::uint64_t{1} << 30;  // 1 GiB

struct DiskCacheConfig {
  std::string dir;  // empty: the disk cache is off
  std::uint64_t max_bytes = kDefaultDiskCacheBytes;
};

// The settings from the environment's values (null: unset):
// DYNSTAGE_CACHE_DIR "off" disables the cache, unset or empty means
// ${XDG_CACHE_HOME:-$HOME/.cache}/dynstage (XDG_CACHE_HOME only if absolute,
// as the XDG spec says; neither set: off); DYNSTAGE_CACHE_MAX_BYTES is a
// number of bytes (anything else: the default, 1 GiB).
DiskCacheConfig disk_cache_config_from(const char* dir, const char* max_bytes, const char* xdg_cache_home,
                                       const char* home);
// The settings in force: the environment's, read at the first use, unless a
// test set others.
DiskCacheConfig disk_cache_config();
// Test hook: replace the settings (and forget what this process knows of the
// directory's size).
void set_disk_cache_config(const DiskCacheConfig& c);

// Test hook: faults of the file system, simulated at the store.
enum class DiskFault {
  none,
  create_fails,  // creating the temporary file fails (EACCES: a read-only directory, even for root)
  write_fails,   // writing fails half-way (ENOSPC: a full disk)
};
std::atomic<DiskFault>& disk_cache_fault();

struct DiskKey {
  std::uint64_t lo = 0, hi = 0;
  std::string hex() const;  // 32 hex digits: the entry's file name
  friend bool operator==(const DiskKey&, const DiskKey&) = default;
};

// The key of a kernel compiled from `j` with compile_kernel's arguments
// `kernel_sized` and `donated`, in this process (its build, LLVM, CPU).
DiskKey disk_key(const Jaxpr& j, const std::vector<bool>& kernel_sized, const std::vector<bool>& donated);

// The key of a runtime routine that the backend compiles once per process
// (`what`: "gemm", llvm/lower_dot.hpp): this process's build, LLVM and host.
DiskKey disk_routine_key(const std::string& what);

// One entry: its header's facts and the kernel (CompileResult's object,
// symbol, routines and result_aliases).
struct DiskEntry {
  DiskKey key;
  std::string provenance;  // disk_entry_provenance() of the writer
  std::string symbol;
  std::uint32_t routines = 0;
  std::vector<int> result_aliases;
  std::string object;
};

// "dynstage 0.1.0; LLVM 19.1.7; x86_64-pc-linux-gnu; sapphirerapids": who can
// use an entry (the key holds more: the CPU's features, the build).
const std::string& disk_entry_provenance();
std::string encode_disk_entry(const DiskEntry& e);
// The entry in `bytes` if it is whole, intact (checksum), of this format and
// provenance, and for `key`; else nullopt, and `why` says which check failed.
std::optional<DiskEntry> decode_disk_entry(std::string_view bytes, const DiskKey& key, std::string* why = nullptr);
// DIR/<key hex>.dkc
std::string disk_entry_path(const std::string& dir, const DiskKey& key);

// The entry for `key` in cfg.dir, if there is a good one (and then marks it
// used); a bad one is logged and ignored. Never throws.
std::optional<DiskEntry> disk_cache_load(const DiskCacheConfig& cfg, const DiskKey& key);
// Writes the compiled kernel's entry (atomically), then removes the least
// recently used entries past cfg.max_bytes. A failure is logged and
// otherwise ignored. Never throws.
void disk_cache_store(const DiskCacheConfig& cfg, const DiskKey& key, const CompileResult& cr);

}  // namespace dyn::detail

#ifdef DYNSTAGE_IMPLEMENTATION

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <mutex>

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include "../ir/print.hpp"
#include "cache.hpp"

namespace dyn::detail {

namespace disk {

struct State {
  std::mutex mu;
  bool loaded = false;
  DiskCacheConfig cfg;
  // What this process knows of the directory's size: exact after a scan,
  // plus what it wrote since. A scan (and eviction) runs at the first store
  // and whenever the count passes the bound.
  bool scanned = false;
  std::uint64_t bytes = 0;
};
inline State& state() {
  static State s;
  return s;
}

inline void log(const std::string& what) {
  if (jit_logging()) jit_log("dynstage: disk cache: " + what);
}

inline std::string errno_text(int e) { return std::strerror(e); }

// The GNU build ID of the loaded module (executable or shared library) whose
// code holds `addr`: it changes whenever that module is linked from other
// code, so entries of another build of dynstage are never used. Without
// one (linked with --build-id=none): the module's path, size and mtime.
inline std::string module_build_id(const void* addr) {
  struct Search {
    std::uintptr_t addr;
    std::string id;
    bool found = false;
  } s{reinterpret_cast<std::uintptr_t>(addr), {}};
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* p) -> int {
        auto& s = *static_cast<Search*>(p);
        bool holds = false;
        for (int k = 0; k < info->dlpi_phnum; ++k) {
          const auto& ph = info->dlpi_phdr[k];
          const std::uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
          if (ph.p_type == PT_LOAD && s.addr >= lo && s.addr < lo + ph.p_memsz) holds = true;
        }
        if (!holds) return 0;
        s.found = true;
        for (int k = 0; k < info->dlpi_phnum; ++k) {
          const auto& ph = info->dlpi_phdr[k];
          if (ph.p_type != PT_NOTE) continue;
          const std::size_t align = ph.p_align == 8 ? 8 : 4;
          auto pad = [&](std::size_t n) { return (n + align - 1) / align * align; };
          const auto* q = reinterpret_cast<const unsigned char*>(info->dlpi_addr + ph.p_vaddr);
          const unsigned char* end = q + ph.p_memsz;
          while (q + sizeof(ElfW(Nhdr)) <= end) {
            ElfW(Nhdr) nh;
            std::memcpy(&nh, q, sizeof nh);
            const unsigned char* name = q + sizeof nh;
            const unsigned char* desc = name + pad(nh.n_namesz);
            if (desc + nh.n_descsz > end) break;
            if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0) {
              static const char* hexd = "0123456789abcdef";
              for (std::size_t b = 0; b < nh.n_descsz; ++b) {
                s.id += hexd[desc[b] >> 4];
                s.id += hexd[desc[b] & 15];
              }
              return 1;
            }
            q = desc + pad(nh.n_descsz);
          }
        }
        return 1;
      },
      &s);
  if (!s.id.empty()) return s.id;
  Dl_info info{};
  struct stat st{};
  if (dladdr(addr, &info) && info.dli_fname && ::stat(info.dli_fname, &st) == 0)
    return std::string(info.dli_fname) + " " + std::to_string(st.st_size) + " " + std::to_string(st.st_mtim.tv_sec) +
           "." + std::to_string(st.st_mtim.tv_nsec);
  return "unknown build";
}

// The part of every key that is the process's: dynstage's version and build,
// and the backend's fingerprint (LLVM, host, vector math, pipeline).
inline const std::string& process_fingerprint() {
  static const std::string fp = std::string("dynstage ") + kDynstageVersion + "\nbuild " +
                                module_build_id(reinterpret_cast<const void*>(&compile_kernel)) + "\n" +
                                backend_fingerprint();
  return fp;
}

// The exact bits of every literal of `j` and its nested jaxprs, in order:
// the printed text shows a NaN's value as "nan" whatever its sign and payload.
inline void literal_bits(const Jaxpr& j, std::string& out) {
  auto atom = [&](const Atom& a) {
    if (a.is_var()) return;
    std::uint64_t f = 0, fi = 0;
    std::memcpy(&f, &a.lit.f, sizeof f);
    std::memcpy(&fi, &a.lit.fi, sizeof fi);  // a complex literal's imaginary part
    char buf[96];
    std::snprintf(buf, sizeof buf, "%d:%llx:%llx:%llx ", static_cast<int>(a.lit.dtype),
                  static_cast<unsigned long long>(a.lit.i), static_cast<unsigned long long>(f),
                  static_cast<unsigned long long>(fi));
    out += buf;
  };
  for (const Eqn& e : j.eqns) {
    for (const Atom& a : e.inputs) atom(a);
    for (const Jaxpr* b : bodies_of(e.params)) literal_bits(*b, out);
  }
  for (const Atom& a : j.outvars) atom(a);
}

inline std::string bits_str(const std::vector<bool>& v) {
  std::string s;
  for (bool b : v) s += b ? '1' : '0';
  return s;
}

inline std::timespec now_realtime() {
  std::timespec t{};
  clock_gettime(CLOCK_REALTIME, &t);
  return t;
}

// Marks `path` used now: its mtime is the LRU order. (Set explicitly, at
// the clock's resolution: the file system's own "now" is the kernel's coarse
// clock, which would tie entries written within a few milliseconds.)
inline void touch(const std::string& path) {
  const std::timespec t[2] = {now_realtime(), now_realtime()};
  (void)utimensat(AT_FDCWD, path.c_str(), t, 0);
}

inline void put_u32(std::string& s, std::uint32_t v) { s.append(reinterpret_cast<const char*>(&v), sizeof v); }
inline void put_u64(std::string& s, std::uint64_t v) { s.append(reinterpret_cast<const char*>(&v), sizeof v); }

// Reads fixed-size values and byte strings from a buffer, refusing to read
// past its end.
struct Reader {
  std::string_view b;
  std::size_t at = 0;
  bool ok = true;
  template <class T>
  T get() {
    T v{};
    if (b.size() - at < sizeof v) {
      ok = false;
      return v;
    }
    std::memcpy(&v, b.data() + at, sizeof v);
    at += sizeof v;
    return v;
  }
  std::string bytes(std::uint64_t n) {
    if (b.size() - at < n) {
      ok = false;
      return {};
    }
    std::string r(b.substr(at, static_cast<std::size_t>(n)));
    at += static_cast<std::size_t>(n);
    return r;
  }
};

inline constexpr char kMagic[8] = {'D', 'Y', 'N', 'K', 'E', 'R', 'N', 'L'};
inline constexpr const char* kEntrySuffix = ".dkc";
inline constexpr const char* kTempPrefix = ".tmp-";

// Removes the least recently used entries until the directory holds at most
// cfg.max_bytes, and temporary files a crashed writer left (older than an
// hour). Called with state().mu held.
inline void evict(const DiskCacheConfig& cfg, State& st) {
  namespace fs = std::filesystem;
  struct File {
    std::timespec mtime;
    std::uint64_t size;
    std::string path;
  };
  std::vector<File> files;
  std::uint64_t total = 0;
  std::error_code ec;
  const std::time_t stale = std::time(nullptr) - 3600;
  for (fs::directory_iterator it(cfg.dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    struct stat sb{};
    if (::stat(it->path().c_str(), &sb) != 0 || !S_ISREG(sb.st_mode)) continue;
    if (name.rfind(kTempPrefix, 0) == 0) {
      if (sb.st_mtim.tv_sec < stale) (void)::unlink(it->path().c_str());
      continue;
    }
    if (name.size() < 4 || name.compare(name.size() - 4, 4, kEntrySuffix) != 0) continue;
    files.push_back({sb.st_mtim, static_cast<std::uint64_t>(sb.st_size), it->path().string()});
    total += static_cast<std::uint64_t>(sb.st_size);
  }
  std::sort(files.begin(), files.end(), [](const File& a, const File& b) {
    if (a.mtime.tv_sec != b.mtime.tv_sec) return a.mtime.tv_sec < b.mtime.tv_sec;
    if (a.mtime.tv_nsec != b.mtime.tv_nsec) return a.mtime.tv_nsec < b.mtime.tv_nsec;
    return a.path < b.path;
  });
  for (const File& f : files) {
    if (total <= cfg.max_bytes) break;
    if (::unlink(f.path.c_str()) == 0 || errno == ENOENT) {
      total -= f.size;
      log("evicted " + f.path + " (" + std::to_string(f.size) + " bytes; the directory holds at most " +
          std::to_string(cfg.max_bytes) + ")");
    }
  }
  st.bytes = total;
  st.scanned = true;
}

// Writes `bytes` to a new temporary file in cfg.dir and renames it to
// `path`. Returns "" or what failed.
inline std::string write_atomically(const DiskCacheConfig& cfg, const std::string& path, const std::string& bytes) {
  static std::atomic<std::uint64_t> counter{0};
  const std::string tmp = (std::filesystem::path(cfg.dir) /
                           (std::string(kTempPrefix) + std::to_string(::getpid()) + "-" +
                            std::to_string(counter.fetch_add(1)) + "-" +
                            std::filesystem::path(path).filename().string()))
                              .string();
  const DiskFault fault = disk_cache_fault().load();
  const int fd = fault == DiskFault::create_fails ? (errno = EACCES, -1)
                                                  : ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return "cannot create a file in " + cfg.dir + ": " + errno_text(errno);
  std::size_t done = 0;
  int err = 0;
  while (done < bytes.size()) {
    std::size_t n = bytes.size() - done;
    if (fault == DiskFault::write_fails) {
      if (done >= bytes.size() / 2) {
        err = ENOSPC;
        break;
      }
      n = bytes.size() / 2 - done + 1;
    }
    const ssize_t w = ::write(fd, bytes.data() + done, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      err = errno;
      break;
    }
    done += static_cast<std::size_t>(w);
  }
  if (::close(fd) != 0 && !err) err = errno;
  if (!err && ::rename(tmp.c_str(), path.c_str()) != 0) err = errno;
  if (err) {
    (void)::unlink(tmp.c_str());
    return "cannot write " + path + ": " + errno_text(err);
  }
  return "";
}

}  // namespace disk

DiskCacheConfig disk_cache_config_from(const char* dir, const char* max_bytes, const char* xdg_cache_home,
                                       const char* home) {
  DiskCacheConfig c;
  const std::string d = dir ? dir : "";
  if (d == "off") c.dir.clear();
  else if (!d.empty()) c.dir = d;
  else if (xdg_cache_home && xdg_cache_home[0] == '/') c.dir = std::string(xdg_cache_home) + "/dynstage";
  else if (home && home[0]) c.dir = std::string(home) + "/.cache/dynstage";
  if (max_bytes && max_bytes[0] >= '0' && max_bytes[0] <= '9') {
    char* end = nullptr;
    errno = 0;
    const unsigned long long v = std::strtoull(max_bytes, &end, 10);
    if (errno == 0 && end && *end == '\0') c.max_bytes = v;
  }
  return c;
}

DiskCacheConfig disk_cache_config() {
  disk::State& st = disk::state();
  std::lock_guard<std::mutex> lock(st.mu);
  if (!st.loaded) {
    st.cfg = disk_cache_config_from(std::getenv("DYNSTAGE_CACHE_DIR"), std::getenv("DYNSTAGE_CACHE_MAX_BYTES"),
                                    std::getenv("XDG_CACHE_HOME"), std::getenv("HOME"));
    st.loaded = true;
  }
  return st.cfg;
}

void set_disk_cache_config(const DiskCacheConfig& c) {
  disk::State& st = disk::state();
  std::lock_guard<std::mutex> lock(st.mu);
  st.cfg = c;
  st.loaded = true;
  st.scanned = false;
  st.bytes = 0;
}

std::atomic<DiskFault>& disk_cache_fault() {
  static std::atomic<DiskFault> f{DiskFault::none};
  return f;
}

std::string DiskKey::hex() const {
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(hi),
                static_cast<unsigned long long>(lo));
  return buf;
}

// Every collective equation of j and of its nested bodies, with its jaxpr.
template <class F>
void for_each_collective(const Jaxpr& j, F&& f) {
  for (const Eqn& e : j.eqns) {
    if (prim_kind(e.prim) == Kind::collective) f(j, e);
    if (const auto* p = std::get_if<ForLoopParams>(&e.params)) for_each_collective(*p->body_jaxpr, f);
    if (const auto* p = std::get_if<ScanParams>(&e.params)) for_each_collective(*p->jaxpr, f);
    if (const auto* p = std::get_if<WhileLoopParams>(&e.params)) {
      for_each_collective(*p->cond_jaxpr, f);
      for_each_collective(*p->body_jaxpr, f);
    }
    if (const auto* p = std::get_if<CondParams>(&e.params))
      for (const auto& br : p->branches) for_each_collective(*br, f);
  }
}

DiskKey disk_key(const Jaxpr& j, const std::vector<bool>& kernel_sized, const std::vector<bool>& donated) {
  std::string text = "dynstage disk cache key\n" + disk::process_fingerprint();
  text += "\nkernel-allocated results " + disk::bits_str(kernel_sized);
  text += "\ndonated arguments " + disk::bits_str(donated);
  text += "\nexplicit " + disk::bits_str(j.in_explicit) + " " + disk::bits_str(j.out_explicit);
  text += std::string("\ncount_copies ") + (count_copies().load() ? "1" : "0") + " buffer_reuse " +
          (buffer_reuse().load() ? "1" : "0") + " stream_bytes " + std::to_string(stream_bytes().load());
  text += "\njaxpr\n" + to_string(j) + "\nliterals ";
  // What the printed jaxpr leaves out of a collective: its mesh's shape and
  // group size (runtime/distributed.hpp, collective_descriptor).
  for_each_collective(j, [&](const Jaxpr& in, const Eqn& e) {
    text += "\n" + collective_descriptor(e.prim, e.inputs.empty() ? DType::i32 : in.type_of(e.inputs[0]).dtype,
                                         std::get<CollectiveParams>(e.params));
  });
  disk::literal_bits(j, text);
  const XXH128_hash_t h = XXH3_128bits(text.data(), text.size());
  return DiskKey{h.low64, h.high64};
}

DiskKey disk_routine_key(const std::string& what) {
  const std::string text = "dynstage disk cache key\n" + disk::process_fingerprint() + "\nruntime routine " + what;
  const XXH128_hash_t h = XXH3_128bits(text.data(), text.size());
  return DiskKey{h.low64, h.high64};
}

const std::string& disk_entry_provenance() {
  static const std::string p = [] {
    // The fingerprint's LLVM, triple and cpu lines.
    const std::string& fp = backend_fingerprint();
    auto line = [&](const std::string& head) {
      const std::size_t a = fp.find(head);
      if (a == std::string::npos) return std::string();
      const std::size_t e = fp.find('\n', a);
      return fp.substr(a, e == std::string::npos ? std::string::npos : e - a);
    };
    return std::string("dynstage ") + kDynstageVersion + "; " + line("LLVM ") + "; " + line("triple ") + "; " +
           line("cpu ");
  }();
  return p;
}

std::string encode_disk_entry(const DiskEntry& e) {
  std::string payload;
  disk::put_u32(payload, static_cast<std::uint32_t>(e.symbol.size()));
  payload += e.symbol;
  disk::put_u32(payload, e.routines);
  disk::put_u32(payload, static_cast<std::uint32_t>(e.result_aliases.size()));
  for (int a : e.result_aliases) disk::put_u32(payload, static_cast<std::uint32_t>(a));
  disk::put_u64(payload, e.object.size());
  payload += e.object;

  std::string r(disk::kMagic, sizeof disk::kMagic);
  disk::put_u32(r, kDiskEntryFormat);
  disk::put_u32(r, static_cast<std::uint32_t>(e.provenance.size()));
  disk::put_u64(r, e.key.lo);
  disk::put_u64(r, e.key.hi);
  disk::put_u64(r, payload.size());
  disk::put_u64(r, XXH3_64bits(payload.data(), payload.size()));
  r += e.provenance;
  r += payload;
  return r;
}

std::optional<DiskEntry> decode_disk_entry(std::string_view bytes, const DiskKey& key, std::string* why) {
  auto fail = [&](std::string w) -> std::optional<DiskEntry> {
    if (why) *why = std::move(w);
    return std::nullopt;
  };
  disk::Reader in{bytes};
  const std::string magic = in.bytes(sizeof disk::kMagic);
  if (!in.ok || magic != std::string_view(disk::kMagic, sizeof disk::kMagic))
    return fail("not a dynstage cache entry (no magic number)");
  const auto format = in.get<std::uint32_t>();
  const auto prov_len = in.get<std::uint32_t>();
  DiskEntry e;
  e.key.lo = in.get<std::uint64_t>();
  e.key.hi = in.get<std::uint64_t>();
  const auto payload_len = in.get<std::uint64_t>();
  const auto checksum = in.get<std::uint64_t>();
  if (!in.ok) return fail("truncated header");
  if (format != kDiskEntryFormat)
    return fail("entry format " + std::to_string(format) + ", this dynstage reads format " +
                std::to_string(kDiskEntryFormat));
  e.provenance = in.bytes(prov_len);
  if (!in.ok) return fail("truncated header");
  if (e.provenance != disk_entry_provenance())
    return fail("made by \"" + e.provenance + "\", this process is \"" + disk_entry_provenance() + "\"");
  if (!(e.key == key)) return fail("the header's key " + e.key.hex() + " is not the file's " + key.hex());
  const std::size_t have = bytes.size() - in.at;
  if (have != payload_len)
    return fail((have < payload_len ? "truncated: " : "trailing bytes: ") + std::to_string(have) +
                " payload bytes, the header says " + std::to_string(payload_len));
  const std::string_view payload = bytes.substr(in.at);
  if (XXH3_64bits(payload.data(), payload.size()) != checksum) return fail("checksum mismatch (a damaged entry)");
  disk::Reader p{payload};
  e.symbol = p.bytes(p.get<std::uint32_t>());
  e.routines = p.get<std::uint32_t>();
  const auto naliases = p.get<std::uint32_t>();
  for (std::uint32_t k = 0; p.ok && k < naliases; ++k) e.result_aliases.push_back(static_cast<int>(p.get<std::uint32_t>()));
  e.object = p.bytes(p.get<std::uint64_t>());
  if (!p.ok || p.at != payload.size() || e.symbol.empty()) return fail("malformed payload");
  return e;
}

std::string disk_entry_path(const std::string& dir, const DiskKey& key) {
  return (std::filesystem::path(dir) / (key.hex() + disk::kEntrySuffix)).string();
}

std::optional<DiskEntry> disk_cache_load(const DiskCacheConfig& cfg, const DiskKey& key) {
  try {
    const std::string path = disk_entry_path(cfg.dir, key);
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return std::nullopt;  // no entry (or no directory): a miss
    std::string bytes;
    struct stat sb{};
    if (::fstat(fd, &sb) == 0 && sb.st_size > 0) bytes.reserve(static_cast<std::size_t>(sb.st_size));
    char buf[1 << 16];
    for (;;) {
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      bytes.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fd);
    std::string why;
    std::optional<DiskEntry> e = decode_disk_entry(bytes, key, &why);
    if (!e) {
      disk::log("ignored " + path + ": " + why + "; compiling (the new kernel replaces it)");
      return std::nullopt;
    }
    disk::touch(path);
    return e;
  } catch (...) {  // (out of memory, filesystem errors: a miss)
    return std::nullopt;
  }
}

void disk_cache_store(const DiskCacheConfig& cfg, const DiskKey& key, const CompileResult& cr) {
  try {
    DiskEntry e{key, disk_entry_provenance(), cr.symbol, cr.routines, cr.result_aliases, cr.object};
    const std::string bytes = encode_disk_entry(e);
    const std::string path = disk_entry_path(cfg.dir, key);
    if (bytes.size() > cfg.max_bytes) {
      disk::log("not storing " + path + ": " + std::to_string(bytes.size()) + " bytes, more than the bound of " +
                std::to_string(cfg.max_bytes) + " (DYNSTAGE_CACHE_MAX_BYTES)");
      return;
    }
    std::error_code ec;
    std::filesystem::create_directories(cfg.dir, ec);
    if (ec) {
      disk::log("cannot create " + cfg.dir + ": " + ec.message() + "; the kernel is not cached on disk");
      return;
    }
    if (const std::string err = disk::write_atomically(cfg, path, bytes); !err.empty()) {
      disk::log(err + "; the kernel is not cached on disk");
      return;
    }
    disk::touch(path);
    disk::State& st = disk::state();
    std::lock_guard<std::mutex> lock(st.mu);
    st.bytes += bytes.size();
    if (!st.scanned || st.bytes > cfg.max_bytes) disk::evict(cfg, st);
  } catch (...) {  // (out of memory, filesystem errors: not stored)
  }
}

}  // namespace dyn::detail

#endif  // DYNSTAGE_IMPLEMENTATION
