#include "storage/block_files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <functional>
#include <thread>

#include <fmt/format.h>

namespace dualpath::storage {

namespace {
std::atomic<int> injected_error{0};
std::atomic<uint64_t> temp_counter{0};

status fail(int err, const std::string& what) {
  return status(errc::io, fmt::format("{} ({})", std::strerror(err), what));
}

// Unique per process, thread and call: two writers of one key never share a temporary file. The name
// is a temporary one (is_temp_name), so readers and scans never take it for a block.
std::string temp_path_for(const std::string& path, const char* tag) {
  const auto slash = path.rfind('/');
  return fmt::format("{}/.{}.{}.{}.{}{}.tmp", path.substr(0, slash), path.substr(slash + 1), ::getpid(),
                     std::hash<std::thread::id>{}(std::this_thread::get_id()) & 0xffffff, temp_counter.fetch_add(1),
                     tag);
}
}  // namespace

void inject_write_error(int error) { injected_error = error; }

std::string block_subdir(const std::string& dir, block_key key) {
  return fmt::format("{}/{:02x}", dir, unsigned(key >> 56));
}

std::string block_path(const std::string& dir, block_key key) {
  return fmt::format("{}/{:02x}/{:016x}.blk", dir, unsigned(key >> 56), key);
}

bool parse_block_name(const std::string& name, block_key* key) {
  if (name.size() != 20 || name.compare(16, 4, ".blk") != 0) return false;
  uint64_t v = 0;
  for (int i = 0; i < 16; ++i) {
    const char c = name[i];
    int d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else return false;
    v = v << 4 | uint64_t(d);
  }
  *key = v;
  return true;
}

bool is_temp_name(const std::string& name) {
  return name.size() > 5 && name[0] == '.' && name.compare(name.size() - 4, 4, ".tmp") == 0;
}

status write_file_atomic(const std::string& path, const std::byte* data, uint64_t size, bool fsync, bool direct,
                         int simulated_error) {
  const std::string dir = path.substr(0, path.rfind('/'));
  const std::string tmp = temp_path_for(path, "");
  int fd = -1;
  if (direct) fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_DIRECT | O_CLOEXEC, 0644);
  if (fd < 0 && (!direct || errno == EINVAL)) {
    if (direct) ::unlink(tmp.c_str());
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  }
  if (fd < 0) return fail(errno, "creating " + tmp);
  auto abort_with = [&](int err, const std::string& what) {
    ::close(fd);
    ::unlink(tmp.c_str());
    return fail(err, what);
  };
  if (simulated_error != 0) return abort_with(simulated_error, "writing " + tmp);
  if (const int inj = injected_error.load(); inj != 0) return abort_with(inj, "writing " + tmp + ", injected");
  uint64_t done = 0;
  while (done < size) {
    const ssize_t n = ::pwrite(fd, data + done, size - done, off_t(done));
    if (n < 0 && errno == EINVAL && direct && done == 0) {
      // The filesystem accepted O_DIRECT at open but not this write: start over buffered.
      ::close(fd);
      fd = ::open(tmp.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
      if (fd < 0) {
        const int err = errno;
        ::unlink(tmp.c_str());
        return fail(err, "reopening " + tmp);
      }
      direct = false;
      continue;
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      return abort_with(errno, "writing " + tmp);
    }
    if (n == 0) return abort_with(ENOSPC, "writing " + tmp);
    done += uint64_t(n);
  }
  if (fsync && ::fsync(fd) != 0) return abort_with(errno, "fsync " + tmp);
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return fail(err, "closing " + tmp);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return fail(err, "renaming to " + path);
  }
  if (fsync) {
    // Persist the rename itself; a failure here leaves a valid block, so it is not an error.
    const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
      ::fsync(dfd);
      ::close(dfd);
    }
  }
  return status::success();
}

file_id identity_of(const struct stat& st) {
  return {uint64_t(st.st_dev), uint64_t(st.st_ino), int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
}

bool remove_if_same(const std::string& path, const file_id& judged) {
  // Comparing, then unlinking by name, would leave a window for a rename in between. Renaming takes
  // whatever version is there at one instant out of every reader's and writer's way; only then is
  // it compared, and a version that is not the judged one goes back.
  const std::string held = temp_path_for(path, ".bad");
  if (::rename(path.c_str(), held.c_str()) != 0) return false;
  struct stat st {};
  if (::stat(held.c_str(), &st) == 0 && identity_of(st) == judged) {
    ::unlink(held.c_str());
    return true;
  }
  // A good block arrived meanwhile. If yet another writer put one in place since, the rename back
  // replaces it with this one: both are whole, valid blocks of the key. Should the rename back fail,
  // the block is gone from its name either way; the held file is not left to pile up.
  if (::rename(held.c_str(), path.c_str()) != 0) ::unlink(held.c_str());
  return false;
}

int open_for_read(const std::string& path, bool* direct) {
  if (*direct) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC);
    if (fd >= 0) return fd;
    if (errno != EINVAL) return -errno;
    *direct = false;
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  return fd >= 0 ? fd : -errno;
}

}  // namespace dualpath::storage
