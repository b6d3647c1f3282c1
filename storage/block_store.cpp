#include "storage/block_store.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/errors.hpp"
#include "storage/block_files.hpp"
#include "storage/block_index.hpp"
#include "storage/read_engine.hpp"

namespace dualpath::storage {

void aligned_free::operator()(std::byte* p) const { std::free(p); }

aligned_buffer make_aligned_buffer(uint64_t bytes) {
  const uint64_t size = std::max<uint64_t>(block_alignment, (bytes + block_alignment - 1) / block_alignment *
                                                                block_alignment);
  void* p = std::aligned_alloc(block_alignment, size);
  if (!p) throw std::bad_alloc();
  return aligned_buffer(static_cast<std::byte*>(p));
}

namespace {

// Temporary files older than this are left over from crashed writers and removed on open.
constexpr int stale_temp_seconds = 600;

void make_dirs(const std::string& dir) {
  std::string path;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    path = dir.substr(0, pos);
    if (path.empty()) continue;
    if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST)
      throw user_error(fmt::format("storage: cannot create directory {}: {}", path, std::strerror(errno)));
  }
}

// Reasons that mean "a valid block, but not one of ours" rather than damage.
bool is_foreign(const std::string& why) {
  return why == "wrong fingerprint" || why == "wrong layout" || why == "wrong key";
}

class store_impl final : public block_store {
 public:
  explicit store_impl(const store_options& o)
      : opt_(o), file_bytes_(o.format.file_bytes()), header_bytes_(o.format.header_bytes()) {
    if (opt_.dir.empty()) throw user_error("storage: no store directory given");
    while (opt_.dir.size() > 1 && opt_.dir.back() == '/') opt_.dir.pop_back();
    make_dirs(opt_.dir);
    probe_writable();
    scan();
    try {
      engine_ = std::make_unique<read_engine>(opt_.queue_depth, opt_.direct_io);
    } catch (const std::runtime_error& e) {
      throw user_error(fmt::format("storage: cannot start asynchronous reads for {}: {}", opt_.dir, e.what()));
    }
  }

  ~store_impl() override { engine_.reset(); }

  const store_options& options() const override { return opt_; }
  uint64_t read_buffer_bytes() const override { return file_bytes_; }
  uint64_t payload_offset() const override { return header_bytes_; }

  size_t lookup(const std::vector<block_key>& chain) override {
    size_t n = 0;
    while (n < chain.size() && contains(chain[n])) ++n;
    std::lock_guard<std::mutex> lock(mu_);
    // Touch from the end backwards: a chain's first blocks become the most recent, so its end is
    // evicted first.
    for (size_t i = n; i-- > 0;) index_.touch(chain[i]);
    ++stats_.lookups;
    stats_.lookup_hit_blocks += n;
    return n;
  }

  bool contains(block_key key) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (index_.contains(key)) return true;
    }
    return adopt(key);  // another process may have written it
  }

  write_result write(block_key key, block_key parent, const std::byte* payload) override {
    return write_impl(key, parent, [&](std::byte* image) { build_block(opt_.format, key, parent, payload, image); });
  }

  write_result write_layers(block_key key, block_key parent, const std::vector<const std::byte*>& layers) override {
    if (layers.size() != opt_.format.layers) {
      write_result res;
      std::lock_guard<std::mutex> lock(mu_);
      return fail_write(res, EINVAL, fmt::format("{} layer slices given for a {}-layer block", layers.size(),
                                                 opt_.format.layers));
    }
    return write_impl(key, parent, [&](std::byte* image) { build_block(opt_.format, key, parent, layers, image); });
  }

  void submit(std::vector<read_request> batch) override {
    submit(std::move(batch), [this](read_completion c) {
      {
        std::lock_guard<std::mutex> lock(done_mu_);
        done_.push_back(std::move(c));
      }
      done_cv_.notify_all();
    });
  }

  void submit(std::vector<read_request> batch, completion_callback done) override {
    auto shared_done = std::make_shared<completion_callback>(std::move(done));
    std::vector<read_job> jobs;
    jobs.reserve(batch.size());
    for (const read_request& r : batch) {
      read_job j;
      j.path = block_path(opt_.dir, r.key);
      j.buffer = r.buffer;
      j.length = file_bytes_;
      if (r.buffer == nullptr) j.refuse = EFAULT;
      else if (reinterpret_cast<uintptr_t>(r.buffer) % block_alignment != 0) j.refuse = EINVAL;
      j.done = [this, r, shared_done](const read_result& res) { (*shared_done)(finish_read(r, res)); };
      jobs.push_back(std::move(j));
    }
    engine_->submit(std::move(jobs));
  }

  std::vector<read_completion> poll(std::chrono::milliseconds wait) override {
    std::unique_lock<std::mutex> lock(done_mu_);
    if (done_.empty()) done_cv_.wait_for(lock, wait, [&] { return !done_.empty(); });
    std::vector<read_completion> out(std::make_move_iterator(done_.begin()), std::make_move_iterator(done_.end()));
    done_.clear();
    return out;
  }

  bool read_layer(block_key key, uint32_t layer, std::byte* dst, std::string* reason) override {
    std::string why = read_layer_impl(key, layer, dst);
    if (why.empty()) {
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.reads;
      stats_.read_bytes += opt_.format.layer_bytes();
      index_.touch(key);
      return true;
    }
    if (reason) *reason = why;
    return false;
  }

  bool remove(block_key key) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!index_.contains(key)) {
      // Not known here; it may still be on disk (written by another process).
      return ::unlink(block_path(opt_.dir, key).c_str()) == 0;
    }
    for (block_key k : index_.erase_subtree(key)) {
      ::unlink(block_path(opt_.dir, k).c_str());
      ++stats_.removals;
    }
    return true;
  }

  store_stats stats() const override {
    std::lock_guard<std::mutex> lock(mu_);
    store_stats s = stats_;
    s.blocks = index_.size();
    s.bytes = index_.bytes();
    s.capacity_bytes = opt_.capacity_bytes;
    s.direct_io = engine_ && engine_->direct();
    s.io_uring = engine_ && engine_->uses_io_uring();
    return s;
  }

 private:
  template <class Fill>
  write_result write_impl(block_key key, block_key parent, const Fill& fill) {
    write_result res;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (index_.contains(key)) {
        struct stat st {};
        if (::stat(block_path(opt_.dir, key).c_str(), &st) == 0 && uint64_t(st.st_size) == file_bytes_) {
          index_.touch(key);
          res.ok = res.already_present = true;
          return res;
        }
        index_.erase(key);  // removed behind our back (another process evicted it): write it again
      }
      if (opt_.capacity_bytes != 0) {
        if (file_bytes_ > opt_.capacity_bytes) return fail_write(res, ENOSPC, "block larger than the capacity");
        while (index_.bytes() + reserved_ + file_bytes_ > opt_.capacity_bytes) {
          auto victim = index_.victim(parent);
          if (!victim) return fail_write(res, ENOSPC, "capacity reached and nothing evictable");
          evict_locked(*victim);
        }
      }
      reserved_ += file_bytes_;
    }
    // One image buffer per writing thread, reused: a fresh mapping per write costs page faults.
    thread_local aligned_buffer image;
    thread_local uint64_t image_bytes = 0;
    if (image_bytes < file_bytes_) {
      image = make_aligned_buffer(file_bytes_);
      image_bytes = file_bytes_;
    }
    fill(image.get());
    const std::string path = block_path(opt_.dir, key);
    file_error err;
    if (::mkdir(block_subdir(opt_.dir, key).c_str(), 0755) != 0 && errno != EEXIST)
      err = {errno, fmt::format("{} (creating {})", std::strerror(errno), block_subdir(opt_.dir, key))};
    else
      err = write_file_atomic(path, image.get(), file_bytes_, opt_.fsync, opt_.direct_io);
    std::lock_guard<std::mutex> lock(mu_);
    reserved_ -= file_bytes_;
    if (err.error != 0) return fail_write(res, err.error, err.what);
    index_.insert(key, parent, file_bytes_);
    ++stats_.writes;
    stats_.write_bytes += file_bytes_;
    res.ok = true;
    return res;
  }

  write_result& fail_write(write_result& res, int error, const std::string& what) {
    ++stats_.write_errors;
    res.ok = false;
    res.error = error;
    res.reason = what;
    spdlog::warn("storage: block not persisted: {}", what);
    return res;
  }

  void evict_locked(block_key key) {
    for (block_key k : index_.erase_subtree(key)) {
      ::unlink(block_path(opt_.dir, k).c_str());
      ++stats_.evictions;
    }
  }

  void probe_writable() {
    const std::string probe = fmt::format("{}/.probe.{}.tmp", opt_.dir, ::getpid());
    const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
      throw user_error(fmt::format("storage: directory {} is not writable: {}", opt_.dir, std::strerror(errno)));
    ::close(fd);
    ::unlink(probe.c_str());
  }

  // Reads a header synchronously and validates it; "" if the block may be indexed.
  std::string read_header(const std::string& path, block_key key, block_header* h, uint64_t* size) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return errno == ENOENT ? "miss" : std::strerror(errno);
    struct stat st {};
    ::fstat(fd, &st);
    *size = uint64_t(st.st_size);
    std::vector<std::byte> buf(header_bytes_);
    const ssize_t n = ::pread(fd, buf.data(), buf.size(), 0);
    ::close(fd);
    if (n < 0) return std::strerror(errno);
    std::string why = check_header(buf.data(), size_t(n), opt_.format, key, h).message;
    if (why.empty() && *size != file_bytes_) why = fmt::format("wrong size {} (expected {})", *size, file_bytes_);
    return why;
  }

  // Indexes a block found on disk but not in the index.
  bool adopt(block_key key) {
    block_header h;
    uint64_t size = 0;
    const std::string why = read_header(block_path(opt_.dir, key), key, &h, &size);
    if (!why.empty()) return false;
    std::lock_guard<std::mutex> lock(mu_);
    index_.insert(key, h.parent, size);
    return true;
  }

  void scan() {
    struct found {
      block_key key, parent;
      uint64_t size;
      int64_t mtime_ns;
    };
    std::vector<found> blocks;
    const time_t now = ::time(nullptr);
    DIR* top = ::opendir(opt_.dir.c_str());
    if (!top) throw user_error(fmt::format("storage: cannot read directory {}: {}", opt_.dir, std::strerror(errno)));
    while (dirent* sub = ::readdir(top)) {
      const std::string name = sub->d_name;
      if (name.size() != 2 || !std::isxdigit(name[0]) || !std::isxdigit(name[1])) continue;
      const std::string subdir = opt_.dir + "/" + name;
      DIR* d = ::opendir(subdir.c_str());
      if (!d) continue;
      while (dirent* e = ::readdir(d)) {
        const std::string fname = e->d_name;
        const std::string path = subdir + "/" + fname;
        struct stat st {};
        if (is_temp_name(fname)) {
          // A writer that died mid-write; nobody ever reads these. Old ones are garbage.
          if (::stat(path.c_str(), &st) == 0 && now - st.st_mtime > stale_temp_seconds) ::unlink(path.c_str());
          continue;
        }
        block_key key;
        if (!parse_block_name(fname, &key)) continue;
        block_header h;
        uint64_t size = 0;
        const std::string why = read_header(path, key, &h, &size);
        if (!why.empty()) {
          ++stats_.foreign;
          spdlog::info("storage: not indexing {}: {}", path, why);
          continue;
        }
        ::stat(path.c_str(), &st);
        blocks.push_back({key, h.parent, size, int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec});
      }
      ::closedir(d);
    }
    ::closedir(top);
    // Oldest first, so the most recently written blocks end up most recently used.
    std::sort(blocks.begin(), blocks.end(), [](const found& a, const found& b) { return a.mtime_ns < b.mtime_ns; });
    for (const found& b : blocks) index_.insert(b.key, b.parent, b.size);
    spdlog::info("storage: {} holds {} blocks ({} bytes)", opt_.dir, index_.size(), index_.bytes());
  }

  read_completion finish_read(const read_request& r, const read_result& res) {
    read_completion c;
    c.user_data = r.user_data;
    c.key = r.key;
    c.bytes_read = res.bytes_read;
    std::string why;
    bool foreign = false;
    if (r.buffer == nullptr) why = "bad request: null buffer";
    else if (reinterpret_cast<uintptr_t>(r.buffer) % block_alignment != 0)
      why = fmt::format("bad request: buffer not aligned to {} bytes", block_alignment);
    else if (res.error == ENOENT) why = "miss";
    else if (res.error != 0) why = fmt::format("read error: {}", std::strerror(res.error));
    else if (res.file_size != file_bytes_ || res.bytes_read < file_bytes_) {
      // Classify by the header: another model's block of another size is foreign, not corrupt.
      block_header h;
      uint64_t size = 0;
      why = read_header(block_path(opt_.dir, r.key), r.key, &h, &size);
      if (why.empty()) why = "truncated";
      foreign = is_foreign(why);
    } else {
      block_header h;
      why = check_block(r.buffer, size_t(res.bytes_read), opt_.format, r.key, &h).message;
      foreign = is_foreign(why);
      if (why.empty()) {
        c.ok = true;
        c.payload = r.buffer + header_bytes_;
        std::lock_guard<std::mutex> lock(mu_);
        ++stats_.reads;
        stats_.read_bytes += res.bytes_read;
        index_.insert(r.key, h.parent, file_bytes_);  // adopts blocks written by other processes
        return c;
      }
    }
    c.reason = why;
    record_failure(r.key, why, foreign);
    return c;
  }

  // A block that cannot be served is counted, logged and dropped from the index.
  void record_failure(block_key key, const std::string& why, bool foreign) {
    std::lock_guard<std::mutex> lock(mu_);
    const bool bad_request = why.rfind("bad request", 0) == 0;
    const bool io_error = why.rfind("read error", 0) == 0;
    if (why == "miss") ++stats_.misses;
    else if (io_error || bad_request) ++stats_.io_errors;
    else if (foreign) ++stats_.foreign;
    else ++stats_.corrupt;
    if (why != "miss") spdlog::warn("storage: block {} not served: {}", key_hex(key), why);
    // The request or the I/O failed, not the block: keep it.
    if (bad_request || io_error) return;
    // A corrupt file is garbage: remove it so the block can be written again. A foreign one (another
    // model's block under the same key) is left alone; a write of ours replaces it.
    if (!foreign && why != "miss") ::unlink(block_path(opt_.dir, key).c_str());
    // Only this block leaves the index: lookups stop before it, so the chain is a miss from here on,
    // while intact descendants stay accounted for and serve again once the block is rewritten.
    index_.erase(key);
  }

  std::string read_layer_impl(block_key key, uint32_t layer, std::byte* dst) {
    if (layer >= opt_.format.layers) return fmt::format("layer {} out of range ({} layers)", layer, opt_.format.layers);
    block_header h;
    uint64_t size = 0;
    const std::string path = block_path(opt_.dir, key);
    std::string why = read_header(path, key, &h, &size);
    if (why.empty()) {
      const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      const uint64_t lb = opt_.format.layer_bytes();
      const ssize_t n = fd < 0 ? -1 : ::pread(fd, dst, lb, off_t(header_bytes_ + layer * lb));
      if (fd >= 0) ::close(fd);
      if (n < 0 || uint64_t(n) != lb) why = "truncated";
      else if (!check_layer(h, layer, dst)) why = fmt::format("layer {} checksum", layer);
    }
    if (!why.empty()) {
      record_failure(key, why, is_foreign(why));
    }
    return why;
  }

  store_options opt_;
  const uint64_t file_bytes_, header_bytes_;
  mutable std::mutex mu_;
  block_index index_;
  uint64_t reserved_ = 0;  // bytes of writes in progress, counted against the capacity
  store_stats stats_;
  std::mutex done_mu_;
  std::condition_variable done_cv_;
  std::deque<read_completion> done_;
  std::unique_ptr<read_engine> engine_;
};

}  // namespace

std::unique_ptr<block_store> block_store::open(const store_options& options) {
  options.format.validate();
  if (options.queue_depth == 0 || options.queue_depth > 4096)
    throw user_error(fmt::format("storage: queue depth {} is outside 1..4096", options.queue_depth));
  return std::make_unique<store_impl>(options);
}

}  // namespace dualpath::storage
