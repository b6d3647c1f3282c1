#include "storage/block_reads.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <ctime>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace dualpath::storage {

namespace {

// Closes the fd on every path out.
struct fd_guard {
  int fd;
  ~fd_guard() {
    if (fd >= 0) ::close(fd);
  }
};

read_verdict read_header_fd(int fd, const block_format& format, block_key key, block_header* header, file_id* id) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return os_error_verdict(errno);
  if (id) *id = identity_of(st);
  std::vector<std::byte> buf(format.header_bytes());
  const ssize_t n = ::pread(fd, buf.data(), buf.size(), 0);
  if (n < 0) return os_error_verdict(errno);
  read_verdict v = verdict_of(check_header(buf.data(), size_t(n), format, key, header));
  if (v.ok() && uint64_t(st.st_size) != format.file_bytes())
    v = {read_outcome::truncated, fmt::format("wrong size {} (expected {})", st.st_size, format.file_bytes())};
  return v;
}

}  // namespace

read_verdict verdict_of(const block_check& check) {
  switch (check.fault) {
    case block_fault::none: return {};
    case block_fault::foreign: return {read_outcome::foreign, check.message};
    case block_fault::truncated: return {read_outcome::truncated, check.message};
    case block_fault::corrupt: break;
  }
  return {read_outcome::corrupt, check.message};
}

read_verdict os_error_verdict(int error) {
  if (error == ENOENT) return {read_outcome::miss, "miss"};
  return {read_outcome::io_error, fmt::format("read error: {}", std::strerror(error))};
}

errc outcome_code(read_outcome o) {
  switch (o) {
    case read_outcome::ok: return errc::ok;
    // A foreign block is not ours: for the caller, ours is simply not there.
    case read_outcome::miss:
    case read_outcome::foreign: return errc::not_found;
    case read_outcome::corrupt:
    case read_outcome::truncated: return errc::corrupt;
    case read_outcome::io_error: return errc::io;
    case read_outcome::bad_request: break;
  }
  return errc::internal;  // the caller asked for something that cannot exist
}

read_verdict read_header(const std::string& path, const block_format& format, block_key key, block_header* header,
                         file_id* id) {
  const fd_guard f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) return os_error_verdict(errno);
  return read_header_fd(f.fd, format, key, header, id);
}

read_verdict read_layer_file(const std::string& path, const block_format& format, block_key key, uint32_t layer,
                             std::byte* dst, file_id* id) {
  const fd_guard f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) return os_error_verdict(errno);
  block_header h;
  read_verdict v = read_header_fd(f.fd, format, key, &h, id);
  if (!v.ok()) return v;
  const uint64_t lb = format.layer_bytes();
  const ssize_t n = ::pread(f.fd, dst, lb, off_t(format.header_bytes() + layer * lb));
  if (n < 0) return os_error_verdict(errno);
  if (uint64_t(n) != lb) return {read_outcome::truncated, "truncated"};
  if (!check_layer(h, layer, dst)) return {read_outcome::corrupt, fmt::format("layer {} checksum", layer)};
  return {};
}

std::vector<found_block> scan_blocks(const std::string& dir, const block_format& format, int stale_temp_seconds,
                                     uint64_t* skipped) {
  std::vector<found_block> blocks;
  const time_t now = ::time(nullptr);
  DIR* top = ::opendir(dir.c_str());
  if (!top) throw user_error(fmt::format("storage: cannot read directory {}: {}", dir, std::strerror(errno)));
  while (dirent* sub = ::readdir(top)) {
    const std::string name = sub->d_name;
    if (name.size() != 2 || !std::isxdigit(name[0]) || !std::isxdigit(name[1])) continue;
    std::string subdir = dir;
    subdir.append("/").append(name);
    DIR* d = ::opendir(subdir.c_str());
    if (!d) continue;
    while (dirent* e = ::readdir(d)) {
      const std::string fname = e->d_name;
      std::string path = subdir;
      path.append("/").append(fname);
      if (is_temp_name(fname)) {
        // A writer that died mid-write; nobody ever reads these. Old ones are garbage.
        struct stat st {};
        if (::stat(path.c_str(), &st) == 0 && now - st.st_mtime > stale_temp_seconds) ::unlink(path.c_str());
        continue;
      }
      block_key key;
      if (!parse_block_name(fname, &key)) continue;
      block_header h;
      file_id id;
      const read_verdict v = read_header(path, format, key, &h, &id);
      if (!v.ok()) {
        ++*skipped;
        spdlog::info("storage: not indexing {} ({}): {}", path, outcome_name(v.outcome), v.message);
        continue;
      }
      blocks.push_back({key, h.parent, format.file_bytes(), id.mtime_ns});
    }
    ::closedir(d);
  }
  ::closedir(top);
  std::sort(blocks.begin(), blocks.end(),
            [](const found_block& a, const found_block& b) { return a.mtime_ns < b.mtime_ns; });
  return blocks;
}

}  // namespace dualpath::storage
