// A fresh disk-cache directory for one test (tests/jit/test_soak.cpp,
// test_faults.cpp): the disk cache points at it while the TempCache lives,
// and is off again (the fault hook cleared) when it goes. The suite runs with
// the cache off (tests/main.cpp); test_disk_cache.cpp has its own copy.
#pragma once

#include <dynstage/jit/disk_cache.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <string>
#include <vector>

namespace test_util {

struct TempCache {
  std::filesystem::path dir;
  explicit TempCache(const std::string& tag, std::uint64_t max_bytes = dyn::detail::kDefaultDiskCacheBytes) {
    static int n = 0;
    dir = std::filesystem::temp_directory_path() /
          ("dynstage_" + tag + "_" + std::to_string(::getpid()) + "_" + std::to_string(n++));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    dyn::detail::set_disk_cache_config({dir.string(), max_bytes});
  }
  ~TempCache() {
    dyn::detail::set_disk_cache_config({});
    dyn::detail::disk_cache_fault() = dyn::detail::DiskFault::none;
    std::error_code ec;
    std::filesystem::permissions(dir, std::filesystem::perms::owner_all, ec);
    std::filesystem::remove_all(dir, ec);
  }
  TempCache(const TempCache&) = delete;
  TempCache& operator=(const TempCache&) = delete;

  // Every file in the directory, sorted (entries and temporary files).
  std::vector<std::filesystem::path> files() const {
    std::vector<std::filesystem::path> r;
    std::error_code ec;
    for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
      r.push_back(it->path());
    std::sort(r.begin(), r.end());
    return r;
  }
  std::vector<std::filesystem::path> entries() const {
    std::vector<std::filesystem::path> r;
    for (const auto& p : files())
      if (p.extension() == ".dkc" && p.filename().string().rfind(".tmp-", 0) != 0) r.push_back(p);
    return r;
  }
  std::uint64_t bytes() const {
    std::uint64_t n = 0;
    std::error_code ec;
    for (const auto& p : files()) n += std::filesystem::file_size(p, ec);
    return n;
  }
};

inline std::string read_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
inline void write_bytes(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << bytes;
}

// The key an entry's file name spells (<32 hex digits>.dkc).
inline dyn::detail::DiskKey key_of(const std::filesystem::path& entry) {
  const std::string h = entry.stem().string();
  return dyn::detail::DiskKey{std::stoull(h.substr(16), nullptr, 16), std::stoull(h.substr(0, 16), nullptr, 16)};
}

// The compile log's lines (detail::jit_log_hook) while a LogLines lives.
struct LogLines {
  static std::mutex& mu() {
    static std::mutex m;
    return m;
  }
  static std::vector<std::string>& lines() {
    static std::vector<std::string> l;
    return l;
  }
  static void capture(const std::string& line) {
    std::lock_guard<std::mutex> lock(mu());
    lines().push_back(line);
  }
  LogLines() {
    std::lock_guard<std::mutex> lock(mu());
    lines().clear();
    dyn::detail::jit_log_hook().store(&capture);
  }
  ~LogLines() { dyn::detail::jit_log_hook().store(nullptr); }
  // The lines that contain `s`.
  std::vector<std::string> with(const std::string& s) const {
    std::lock_guard<std::mutex> lock(mu());
    std::vector<std::string> r;
    for (const auto& l : lines())
      if (l.find(s) != std::string::npos) r.push_back(l);
    return r;
  }
};

}  // namespace test_util
