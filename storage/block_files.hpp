#pragma once
// Where blocks live in a store directory and how one is written atomically.
// Layout: <dir>/<first two hex digits of the key>/<16 hex digits>.blk; temporary files start with '.'
// and end in ".tmp", so a reader or a directory scan never mistakes them for blocks.
#include <sys/stat.h>

#include <cstdint>
#include <string>

#include "core/block_key.hpp"
#include "core/status.hpp"

namespace dualpath::storage {

std::string block_subdir(const std::string& dir, block_key key);
std::string block_path(const std::string& dir, block_key key);
// Parses "<16 hex>.blk"; false for anything else (temporary files, strangers).
bool parse_block_name(const std::string& name, block_key* key);
bool is_temp_name(const std::string& name);

// Writes `size` bytes at `data` to `path` atomically: a unique temporary name in the same directory,
// optional fsync of the file, rename over `path`, optional fsync of the directory. `direct` tries
// O_DIRECT (data, size aligned) and falls back to buffered writes where it is refused. On failure the
// temporary file is removed and an `io` status carries the OS error text; `path` is untouched.
// `simulated_error` (an errno, 0 = none) fails the write after the temporary file is created, where a
// full disk would: the store's fault seam.
status write_file_atomic(const std::string& path, const std::byte* data, uint64_t size, bool fsync, bool direct,
                         int simulated_error = 0);

// One version of a file at a path: an atomic rename over the path puts another version there (another
// inode, another mtime), so a reader can later tell whether the file it judged is still the one there.
struct file_id {
  uint64_t dev = 0, ino = 0;
  int64_t mtime_ns = 0;
  bool operator==(const file_id& o) const { return dev == o.dev && ino == o.ino && mtime_ns == o.mtime_ns; }
  bool operator!=(const file_id& o) const { return !(*this == o); }
};
file_id identity_of(const struct stat& st);

// Removes the file at `path` if it is still the version `judged`. A version renamed into place since
// then (a writer replacing a corrupt block with a good one) stays. True if `judged` was removed.
bool remove_if_same(const std::string& path, const file_id& judged);

// Opens a block file for reading, with O_DIRECT when `*direct` is true; if the filesystem refuses it
// (EINVAL), clears `*direct` and opens buffered. Returns the fd or -errno.
int open_for_read(const std::string& path, bool* direct);

// Test seam: while set (non-zero), every write_file_atomic fails with this errno after creating the
// temporary file, as a full disk would. Only for tests that cannot mount a small filesystem.
void inject_write_error(int error);

}  // namespace dualpath::storage
