#include "storage/snic_gate.hpp"

#include <cmath>
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include <spdlog/spdlog.h>

namespace dualpath::storage {

using clock_type = std::chrono::steady_clock;

struct snic_gate::impl {
  block_store& store;
  const double bytes_per_ns;  // 0 = uncapped
  const uint32_t depth;
  const uint64_t request_bytes;
  // Reads kept in flight at the store. Capped, about what the link drains in `lookahead` (at least
  // four, to ride out the storage's latency jitter); reading much further ahead would only delay
  // the first block.
  const uint32_t window;
  static constexpr double lookahead_ns = 100e6;

  mutable std::mutex mu;
  std::condition_variable work_cv;   // wakes the worker: new requests, arrivals, stop
  std::condition_variable ready_cv;  // wakes poll()
  std::deque<read_request> fifo;
  struct arrived_read {
    read_completion c;
    clock_type::time_point at;  // back from the store
  };
  std::deque<arrived_read> arrived;  // back from the store, not yet scheduled on the link
  struct held_read {
    read_completion c;
    clock_type::time_point release;
  };
  std::deque<held_read> held;  // on the emulated link; release times are non-decreasing
  std::deque<read_completion> ready;
  // Token bucket of the cap (bytes). Its depth, 100 ms at the cap, lets the link catch up after a
  // stall of the storage underneath while reads are pending; it starts empty whenever the link
  // has been idle, so the cap is never exceeded from the start of a busy period.
  double bucket_bytes = 0;
  double tokens = 0;
  clock_type::time_point link_last{};  // time of the last release (tokens are counted up to it)
  uint32_t in_store = 0;               // dispatched to the store, not yet arrived
  uint64_t pending_n = 0;              // submitted, not yet returned by poll()
  std::atomic<uint64_t> read_q{0};
  clock_type::time_point busy_since{};
  gate_stats st;
  bool stop = false;
  std::thread worker;

  impl(block_store& s, double cap, uint32_t d)
      : store(s),
        bytes_per_ns(cap > 0 ? cap : 0),
        depth(d == 0 ? 1 : d),
        request_bytes(s.read_buffer_bytes()),
        window(cap > 0 ? std::min<uint32_t>(depth,
                                            std::max<uint32_t>(4, uint32_t(cap * lookahead_ns / double(request_bytes))))
                       : depth) {
    st.cap_gb_per_s = cap > 0 ? cap : 0;  // 1 GB/s = 1 byte/ns
    bucket_bytes = bytes_per_ns * lookahead_ns;
  }

  void add_read_q(uint64_t bytes) {  // under mu
    if (read_q.load() == 0) busy_since = clock_type::now();
    read_q += bytes;
    st.max_read_q = std::max(st.max_read_q, read_q.load());
  }
  void sub_read_q(uint64_t bytes) {  // under mu
    read_q -= bytes;
    if (read_q.load() == 0)
      st.busy_ns +=
          uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now() - busy_since).count());
  }

  void run(const std::shared_ptr<impl>& self) {
    std::unique_lock<std::mutex> lock(mu);
    while (!stop) {
      // Dispatch FIFO heads while this gate has room at the store.
      std::vector<read_request> batch;
      while (!fifo.empty() && in_store + held.size() + arrived.size() < window) {
        if (in_store + held.size() + arrived.size() == 0 && link_last < clock_type::now()) {
          // The link was idle: its bucket starts empty, so no read leaves before it could have
          // been sent at the cap after its dispatch.
          tokens = 0;
          link_last = clock_type::now();
        }
        batch.push_back(fifo.front());
        fifo.pop_front();
        ++in_store;
      }
      if (!batch.empty()) {
        lock.unlock();
        std::weak_ptr<impl> weak = self;
        store.submit(std::move(batch), [weak](read_completion c) {
          if (auto me = weak.lock()) me->on_arrival(std::move(c));
        });
        lock.lock();
      }
      // Put arrived reads on the link.
      const auto now = clock_type::now();
      while (!arrived.empty()) {
        auto a = std::move(arrived.front());
        arrived.pop_front();
        auto release = a.at;
        if (bytes_per_ns > 0) {
          // Token bucket, in arrival order: tokens accrue at the cap since the last release, up to
          // the bucket depth; a read leaves once its data is here and the bucket holds its bytes.
          const double x = double(a.c.bytes_read);
          const auto t0 = std::max(a.at, link_last);
          const double depth_bytes = std::max(x, bucket_bytes);
          double tok = std::min(depth_bytes, tokens + bytes_per_ns * double((t0 - link_last).count()));
          release = t0;
          if (tok >= x) {
            tok -= x;
          } else {
            release = t0 + std::chrono::nanoseconds(std::llround((x - tok) / bytes_per_ns));
            tok = 0;
          }
          tokens = tok;
          link_last = release;
        }
        held.push_back({std::move(a.c), release});
      }
      // Release what the link has finished sending.
      bool released = false;
      while (!held.empty() && held.front().release <= now) {
        auto& h = held.front();
        ++st.reads;
        if (!h.c.ok()) ++st.failed;
        st.bytes_read += h.c.bytes_read;
        ready.push_back(std::move(h.c));
        held.pop_front();
        sub_read_q(request_bytes);
        released = true;
      }
      if (released) ready_cv.notify_all();
      const bool can_dispatch = !fifo.empty() && in_store + held.size() + arrived.size() < window;
      if (can_dispatch) continue;
      if (!held.empty()) work_cv.wait_until(lock, held.front().release);
      else work_cv.wait_for(lock, std::chrono::milliseconds(50));
    }
  }

  void on_arrival(read_completion c) {
    {
      std::lock_guard<std::mutex> lock(mu);
      --in_store;
      arrived.push_back({std::move(c), clock_type::now()});
    }
    work_cv.notify_all();
  }
};

snic_gate::snic_gate(block_store& store, double cap_gb_per_s, uint32_t depth)
    : impl_(std::make_shared<impl>(store, cap_gb_per_s, depth)) {
  impl_->worker = std::thread([self = impl_] { self->run(self); });
}

snic_gate::~snic_gate() {
  if (!quiesce(std::chrono::seconds(10)))
    spdlog::warn("snic gate: {} reads still in flight at shutdown", impl_->in_store);
}

bool snic_gate::quiesce(std::chrono::milliseconds wait) {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stop = true;
  }
  impl_->work_cv.notify_all();
  if (impl_->worker.joinable()) impl_->worker.join();
  // Reads already at the store still write into caller buffers: wait for them, bounded.
  std::unique_lock<std::mutex> lock(impl_->mu);
  const auto deadline = clock_type::now() + wait;
  while (impl_->in_store > 0 && clock_type::now() < deadline) {
    lock.unlock();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    lock.lock();
  }
  return impl_->in_store == 0;
}

void snic_gate::submit(const std::vector<read_request>& batch) {
  if (batch.empty()) return;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    for (auto& r : batch) {
      impl_->fifo.push_back(r);
      impl_->add_read_q(impl_->request_bytes);
      ++impl_->pending_n;
    }
  }
  impl_->work_cv.notify_all();
}

uint64_t snic_gate::read_q() const { return impl_->read_q.load(); }

uint64_t snic_gate::pending() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->pending_n;
}

std::vector<read_completion> snic_gate::poll(std::chrono::milliseconds wait) {
  std::unique_lock<std::mutex> lock(impl_->mu);
  if (impl_->ready.empty()) impl_->ready_cv.wait_for(lock, wait, [&] { return !impl_->ready.empty(); });
  std::vector<read_completion> out(std::make_move_iterator(impl_->ready.begin()),
                                   std::make_move_iterator(impl_->ready.end()));
  impl_->ready.clear();
  impl_->pending_n -= out.size();
  return out;
}

gate_stats snic_gate::stats() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  gate_stats s = impl_->st;
  if (impl_->read_q.load() > 0)
    s.busy_ns +=
        uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now() - impl_->busy_since).count());
  return s;
}

}  // namespace dualpath::storage
