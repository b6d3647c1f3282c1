#include "storage/block_store.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/faults.hpp"
#include "core/status.hpp"
#include "storage/block_files.hpp"
#include "storage/block_index.hpp"
#include "storage/block_reads.hpp"
#include "storage/read_engine.hpp"

namespace dualpath::storage {

void aligned_free::operator()(std::byte* p) const { std::free(p); }

aligned_buffer make_aligned_buffer(uint64_t bytes) {
  const uint64_t size =
      std::max<uint64_t>(block_alignment, (bytes + block_alignment - 1) / block_alignment * block_alignment);
  void* p = std::aligned_alloc(block_alignment, size);
  if (!p) throw std::bad_alloc();
  return aligned_buffer(static_cast<std::byte*>(p));
}

const char* outcome_name(read_outcome o) {
  switch (o) {
    case read_outcome::ok: return "ok";
    case read_outcome::miss: return "miss";
    case read_outcome::corrupt: return "corrupt";
    case read_outcome::foreign: return "foreign";
    case read_outcome::truncated: return "truncated";
    case read_outcome::io_error: return "io_error";
    case read_outcome::bad_request: return "bad_request";
  }
  return "unknown";
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

  status write(block_key key, block_key parent, const std::byte* payload) override {
    return write_impl(key, parent, [&](std::byte* image) { build_block(opt_.format, key, parent, payload, image); });
  }

  status write_layers(block_key key, block_key parent, const std::vector<const std::byte*>& layers) override {
    if (layers.size() != opt_.format.layers) {
      std::lock_guard<std::mutex> lock(mu_);
      return fail_write(errc::internal,
                        fmt::format("{} layer slices given for a {}-layer block", layers.size(), opt_.format.layers));
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

  status read_layer(block_key key, uint32_t layer, std::byte* dst) override {
    read_verdict v;
    file_id id;
    if (layer >= opt_.format.layers) {
      v = {read_outcome::bad_request, fmt::format("layer {} out of range ({} layers)", layer, opt_.format.layers)};
    } else {
      v = read_layer_file(block_path(opt_.dir, key), opt_.format, key, layer, dst, &id);
      // The seam fails a read that reached the file, as an EIO from the disk would.
      if (v.outcome != read_outcome::miss && v.outcome != read_outcome::io_error &&
          faults::fire(faults::point::storage_read))
        v = os_error_verdict(EIO);
    }
    if (v.ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.reads;
      stats_.read_bytes += opt_.format.layer_bytes();
      index_.touch(key);
      return status::success();
    }
    record_failure(key, v, id);
    return status(outcome_code(v.outcome), v.message);
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
  status write_impl(block_key key, block_key parent, const Fill& fill) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (index_.contains(key)) {
        struct stat st {};
        if (::stat(block_path(opt_.dir, key).c_str(), &st) == 0 && uint64_t(st.st_size) == file_bytes_) {
          index_.touch(key);
          return status::success();
        }
        index_.erase(key);  // removed behind our back (another process evicted it): write it again
      }
      if (opt_.capacity_bytes != 0) {
        if (file_bytes_ > opt_.capacity_bytes)
          return fail_write(errc::capacity, fmt::format("a block of {} bytes is larger than the capacity of {}",
                                                        file_bytes_, opt_.capacity_bytes));
        while (index_.bytes() + reserved_ + file_bytes_ > opt_.capacity_bytes) {
          auto victim = index_.victim(parent);
          if (!victim) return fail_write(errc::capacity, "capacity reached and nothing evictable");
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
    const std::string subdir = block_subdir(opt_.dir, key);
    status st;
    if (::mkdir(subdir.c_str(), 0755) != 0 && errno != EEXIST) {
      st = status(errc::io, fmt::format("{} (creating {})", std::strerror(errno), subdir));
    } else {
      const int simulated = faults::fire(faults::point::storage_write) ? ENOSPC : 0;
      st =
          write_file_atomic(block_path(opt_.dir, key), image.get(), file_bytes_, opt_.fsync, opt_.direct_io, simulated);
    }
    std::lock_guard<std::mutex> lock(mu_);
    reserved_ -= file_bytes_;
    if (!st.ok()) return fail_write(st.code(), st.message());
    index_.insert(key, parent, file_bytes_);
    ++stats_.writes;
    stats_.write_bytes += file_bytes_;
    return st;
  }

  // Counts and logs a write that persisted nothing. Called with mu_ held.
  status fail_write(errc code, const std::string& what) {
    ++stats_.write_errors;
    spdlog::warn("storage: block not persisted: {}", what);
    return status(code, what);
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

  // Indexes a block found on disk but not in the index.
  bool adopt(block_key key) {
    block_header h;
    if (!read_header(block_path(opt_.dir, key), opt_.format, key, &h).ok()) return false;
    std::lock_guard<std::mutex> lock(mu_);
    index_.insert(key, h.parent, file_bytes_);
    return true;
  }

  void scan() {
    // Oldest first, so the most recently written blocks end up most recently used.
    for (const found_block& b : scan_blocks(opt_.dir, opt_.format, stale_temp_seconds, &stats_.foreign))
      index_.insert(b.key, b.parent, b.bytes);
    spdlog::info("storage: {} holds {} blocks ({} bytes)", opt_.dir, index_.size(), index_.bytes());
  }

  read_completion finish_read(const read_request& r, read_result res) {
    read_completion c;
    c.user_data = r.user_data;
    c.key = r.key;
    c.bytes_read = res.bytes_read;
    // The seam fails a read that reached the file, as an EIO from the disk would.
    if (res.error == 0 && faults::fire(faults::point::storage_read)) res.error = EIO;
    read_verdict v;
    block_header h;
    if (r.buffer == nullptr) {
      v = {read_outcome::bad_request, "bad request: null buffer"};
    } else if (reinterpret_cast<uintptr_t>(r.buffer) % block_alignment != 0) {
      v = {read_outcome::bad_request, fmt::format("bad request: buffer not aligned to {} bytes", block_alignment)};
    } else if (res.error != 0) {
      v = os_error_verdict(res.error);
    } else if (res.file_size != file_bytes_ || res.bytes_read < file_bytes_) {
      // Judged by the header: another model's block of another size is foreign, not damage.
      v = read_header(block_path(opt_.dir, r.key), opt_.format, r.key, &h);
      if (v.ok()) v = {read_outcome::truncated, "truncated"};
    } else {
      v = verdict_of(check_block(r.buffer, size_t(res.bytes_read), opt_.format, r.key, &h));
    }
    c.outcome = v.outcome;
    if (v.ok()) {
      c.payload = r.buffer + header_bytes_;
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.reads;
      stats_.read_bytes += res.bytes_read;
      index_.insert(r.key, h.parent, file_bytes_);  // adopts blocks written by other processes
      return c;
    }
    c.message = std::move(v.message);
    record_failure(r.key, {c.outcome, c.message}, res.id);
    return c;
  }

  // A block that cannot be served is counted and logged; unless the request or the I/O failed (not
  // the block), it leaves the index, and a damaged file is removed so the block can be written again.
  // `judged` is the version of the file that was read: only that one is removed, never a good block
  // a writer renamed into place since.
  void record_failure(block_key key, const read_verdict& v, const file_id& judged) {
    bool remove_file = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      switch (v.outcome) {
        case read_outcome::ok: return;
        case read_outcome::miss: ++stats_.misses; break;
        case read_outcome::io_error:
        case read_outcome::bad_request: ++stats_.io_errors; break;
        case read_outcome::foreign: ++stats_.foreign; break;
        case read_outcome::corrupt:
        case read_outcome::truncated:
          ++stats_.corrupt;
          remove_file = true;
          break;
      }
      if (v.outcome != read_outcome::miss)
        spdlog::warn("storage: block {} not served ({}): {}", key_hex(key), outcome_name(v.outcome), v.message);
      if (v.outcome == read_outcome::io_error || v.outcome == read_outcome::bad_request) return;
      // Only this block leaves the index: lookups stop before it, so the chain is a miss from here on,
      // while intact descendants stay accounted for and serve again once the block is rewritten. A
      // foreign file is left alone; a write of ours replaces it.
      index_.erase(key);
    }
    if (remove_file) remove_if_same(block_path(opt_.dir, key), judged);
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
