#include "transport/local_copy.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/syscall.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <sstream>
#include <string>
#include <utility>

#include "transport/transfer_table.hpp"

namespace dualpath::transport::local_copy {

namespace {

struct region {
  uint64_t origin = 0;
  std::byte* base = nullptr;
  uint64_t length = 0;
};

// A peer process's buffer file, mapped here: its bytes [start, +length) in the peer are at `local`.
struct segment {
  uint64_t start = 0;
  uint64_t length = 0;
  std::byte* local = nullptr;
};

struct foreign_process {
  int pidfd = -1;  // readable once the process has exited (a zombie too, which kill(pid, 0) still finds)
  std::vector<segment> segments;
  std::vector<std::pair<uint64_t, uint64_t>> unmappable;  // the peer's mappings that are no dualpath buffer
  std::atomic<int64_t> checked_ns{0};                     // when it was last seen alive (steady clock)
  std::atomic<bool> gone{false};
};

// Copies hold the lock shared, so they run side by side; (de)registration and (un)mapping hold it exclusively.
struct registry {
  std::shared_mutex mutex;
  std::map<std::pair<std::vector<uint8_t>, uint64_t>, region> regions;
  std::map<int, std::unique_ptr<foreign_process>> foreign;
};

// Never destroyed: a region freed during static destruction still finds it.
registry& regs() {
  static auto* r = new registry;
  return *r;
}

bool inside(uint64_t start, uint64_t length, uint64_t addr, uint64_t n) {
  return addr >= start && addr - start <= length && n <= length - (addr - start);
}

// The peer's bytes at [addr, +length), or null when that is not inside a region it registered under `key`.
std::byte* find_local(const std::vector<uint8_t>& address, uint64_t key, uint64_t addr, uint64_t length) {
  const auto it = regs().regions.find({address, key});
  if (it == regs().regions.end() || !inside(it->second.origin, it->second.length, addr, length)) return nullptr;
  return it->second.base + (addr - it->second.origin);
}

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Whether the peer still runs, asked of the kernel at most once a millisecond.
bool alive(foreign_process& fp) {
  const int64_t now = steady_ns();
  if (now - fp.checked_ns.load(std::memory_order_relaxed) < 1'000'000) return !fp.gone.load();
  pollfd p{fp.pidfd, POLLIN, 0};
  const bool up = fp.pidfd >= 0 && poll(&p, 1, 0) == 0;
  fp.gone.store(!up);
  fp.checked_ns.store(now, std::memory_order_relaxed);
  return up;
}

enum class lookup { copied, unmapped, refused, gone };

// Under the shared lock: runs `copy` on the peer's bytes at [addr, +length) where they are mapped.
template <class Copy>
lookup copy_foreign(int pid, uint64_t addr, uint64_t length, Copy&& copy) {
  std::shared_lock lock(regs().mutex);
  const auto it = regs().foreign.find(pid);
  if (it == regs().foreign.end()) return lookup::unmapped;
  foreign_process& fp = *it->second;
  if (!alive(fp)) return lookup::gone;
  for (const auto& s : fp.segments) {
    if (inside(s.start, s.length, addr, length)) {
      copy(s.local + (addr - s.start));
      return lookup::copied;
    }
  }
  for (const auto& [start, end] : fp.unmappable)
    if (addr >= start && addr < end) return lookup::refused;
  return lookup::unmapped;
}

// The line of /proc/PID/maps that covers `addr`: its range, file offset, inode and path.
struct mapping_line {
  uint64_t start = 0, end = 0, offset = 0, inode = 0;
  bool shared = false;
  std::string path;
};

bool find_mapping(int pid, uint64_t addr, mapping_line& out) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  std::string line;
  while (std::getline(maps, line)) {
    mapping_line m;
    char perms[8] = {};
    unsigned dev_major = 0, dev_minor = 0;
    int path_at = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx %7s %lx %x:%x %lu %n", &m.start, &m.end, perms, &m.offset, &dev_major,
                    &dev_minor, &m.inode, &path_at) < 7)
      continue;
    if (addr < m.start || addr >= m.end) continue;
    m.shared = perms[3] == 's';
    if (path_at > 0 && size_t(path_at) <= line.size()) m.path = line.substr(size_t(path_at));
    out = m;
    return true;
  }
  return false;
}

// Opens the peer's file descriptor of the file with inode `inode`, or -1.
int open_peer_file(int pid, uint64_t inode) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path dir = "/proc/" + std::to_string(pid) + "/fd";
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    struct stat st {};
    if (stat(it->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_ino != inode) continue;
    return open(it->path().c_str(), O_RDWR | O_CLOEXEC);
  }
  return -1;
}

// Maps the peer's buffer that covers `addr`, or records that its mapping there is none. False when nothing
// new is known (no mapping there, or the peer is gone).
bool map_foreign(int pid, uint64_t addr) {
  // Opened before its maps are read, so it cannot name a later process that took over the PID.
  const int pidfd = int(syscall(SYS_pidfd_open, pid, 0));
  mapping_line m;
  if (pidfd < 0 || !find_mapping(pid, addr, m)) {
    if (pidfd >= 0) close(pidfd);
    return false;
  }
  segment seg;
  const bool buffer = m.shared && m.path.rfind("/memfd:dualpath-buffer", 0) == 0;
  if (buffer) {
    const int fd = open_peer_file(pid, m.inode);
    struct stat st {};
    if (fd >= 0 && fstat(fd, &st) == 0 && st.st_size > 0 && m.start >= m.offset) {
      void* p = mmap(nullptr, size_t(st.st_size), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (p != MAP_FAILED) seg = segment{m.start - m.offset, uint64_t(st.st_size), static_cast<std::byte*>(p)};
    }
    if (fd >= 0) close(fd);
  }
  std::unique_lock lock(regs().mutex);
  auto& fp = regs().foreign[pid];
  if (!fp) {
    fp = std::make_unique<foreign_process>();
    fp->pidfd = pidfd;
    fp->checked_ns = steady_ns();
  } else {
    close(pidfd);
  }
  if (!seg.local) {
    fp->unmappable.emplace_back(m.start, m.end);
    return true;
  }
  for (const auto& s : fp->segments) {
    if (s.start == seg.start) {  // another thread mapped it meanwhile
      munmap(seg.local, seg.length);
      return true;
    }
  }
  fp->segments.push_back(seg);
  return true;
}

// A peer found gone: its buffers are unmapped (their memory goes back to the host once nobody maps them), and
// a later copy to its PID looks again (a dead process has no mappings; a new one under that PID its own).
void forget_foreign(int pid) {
  std::unique_lock lock(regs().mutex);
  const auto it = regs().foreign.find(pid);
  if (it == regs().foreign.end() || !it->second->gone) return;
  for (const auto& s : it->second->segments) munmap(s.local, s.length);
  if (it->second->pidfd >= 0) close(it->second->pidfd);
  regs().foreign.erase(it);
}

template <class Copy>
bool copy_to_peer(const std::vector<uint8_t>& address, uint64_t key, uint64_t addr, uint64_t length, int foreign_pid,
                  Copy&& copy) {
  if (foreign_pid <= 0) {
    std::shared_lock lock(regs().mutex);
    std::byte* at = find_local(address, key, addr, length);
    if (at) copy(at);
    return at != nullptr;
  }
  for (int attempt = 0; attempt < 2; ++attempt) {
    switch (copy_foreign(foreign_pid, addr, length, copy)) {
      case lookup::copied: return true;
      case lookup::refused: return false;
      case lookup::gone: forget_foreign(foreign_pid); return false;
      case lookup::unmapped: break;
    }
    if (attempt == 1 || !map_foreign(foreign_pid, addr)) return false;
  }
  return false;
}

}  // namespace

int address_pid(const std::vector<uint8_t>& address) {
  const std::string text(address.begin(), address.end());
  int pid = 0;
  if (std::sscanf(text.c_str(), "fi_shm://%d:", &pid) != 1 || pid == getpid()) return 0;
  return pid;
}

void add(const std::vector<uint8_t>& address, uint64_t key, uint64_t origin, std::byte* base, uint64_t length) {
  std::unique_lock lock(regs().mutex);
  regs().regions[{address, key}] = region{origin, base, length};
}

void remove(const std::vector<uint8_t>& address, uint64_t key) {
  std::unique_lock lock(regs().mutex);
  regs().regions.erase({address, key});
}

bool write(const std::vector<uint8_t>& address, uint64_t key, uint64_t remote_addr, const local_piece* pieces,
           size_t count, int foreign_pid) {
  uint64_t length = 0;
  for (size_t i = 0; i < count; ++i) length += pieces[i].length;
  return copy_to_peer(address, key, remote_addr, length, foreign_pid, [&](std::byte* at) {
    for (size_t i = 0; i < count; ++i) {
      std::memcpy(at, pieces[i].at, pieces[i].length);
      at += pieces[i].length;
    }
  });
}

bool read(const std::vector<uint8_t>& address, uint64_t key, uint64_t remote_addr, std::byte* local, uint64_t length,
          int foreign_pid) {
  return copy_to_peer(address, key, remote_addr, length, foreign_pid,
                      [&](const std::byte* at) { std::memcpy(local, at, length); });
}

}  // namespace dualpath::transport::local_copy
