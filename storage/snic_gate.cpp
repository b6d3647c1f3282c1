#include "storage/snic_gate.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>

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
    clock_type::time_point sent, at;  // dispatched to the store, back from it
  };
  std::unordered_map<uint64_t, std::pair<uint64_t, clock_type::time_point>> dispatched;  // id -> user_data, sent
  uint64_t next_id = 0;
  std::deque<arrived_read> arrived;  // back from the store, not yet scheduled on the link
  struct held_read {
    read_completion c;
    clock_type::time_point release;
  };
  std::deque<held_read> held;  // on the emulated link; release times are non-decreasing
  std::deque<read_completion> ready;
  clock_type::time_point link_free{};
  uint32_t in_store = 0;   // dispatched to the store, not yet arrived
  uint64_t pending_n = 0;  // submitted, not yet returned by poll()
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
        window(cap > 0 ? std::min<uint32_t>(depth, std::max<uint32_t>(4, uint32_t(cap * lookahead_ns / double(request_bytes))))
                       : depth) {
    st.cap_gb_per_s = cap > 0 ? cap : 0;  // 1 GB/s = 1 byte/ns
  }

  void add_read_q(uint64_t bytes) {  // under mu
    if (read_q.load() == 0) busy_since = clock_type::now();
    read_q += bytes;
    st.max_read_q = std::max(st.max_read_q, read_q.load());
  }
  void sub_read_q(uint64_t bytes) {  // under mu
    read_q -= bytes;
    if (read_q.load() == 0)
      st.busy_ns += uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now() - busy_since).count());
  }

  void run(const std::shared_ptr<impl>& self) {
    std::unique_lock<std::mutex> lock(mu);
    while (!stop) {
      // Dispatch FIFO heads while this gate has room at the store.
      std::vector<read_request> batch;
      while (!fifo.empty() && in_store + held.size() + arrived.size() < window) {
        // Tag with a gate-local id to remember the caller's user_data and the dispatch time.
        read_request r = fifo.front();
        fifo.pop_front();
        dispatched.emplace(next_id, std::make_pair(r.user_data, clock_type::now()));
        r.user_data = next_id++;
        batch.push_back(r);
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
          // The link streams a block while it is read (cut-through) but never faster than the cap:
          // it starts after the previous block left, and ends no earlier than the data arrived.
          const auto send = std::chrono::nanoseconds(int64_t(double(a.c.bytes_read) / bytes_per_ns));
          const auto start = std::max({link_free, a.sent, a.at - send});
          release = start + send;
          link_free = release;
        }
        held.push_back({std::move(a.c), release});
      }
      // Release what the link has finished sending.
      bool released = false;
      while (!held.empty() && held.front().release <= now) {
        auto& h = held.front();
        ++st.reads;
        if (!h.c.ok) ++st.failed;
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
      const auto it = dispatched.find(c.user_data);
      const auto sent = it->second.second;
      c.user_data = it->second.first;
      dispatched.erase(it);
      arrived.push_back({std::move(c), sent, clock_type::now()});
    }
    work_cv.notify_all();
  }
};

snic_gate::snic_gate(block_store& store, double cap_gb_per_s, uint32_t depth)
    : impl_(std::make_shared<impl>(store, cap_gb_per_s, depth)) {
  impl_->worker = std::thread([self = impl_] { self->run(self); });
}

snic_gate::~snic_gate() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stop = true;
  }
  impl_->work_cv.notify_all();
  impl_->worker.join();
  // Reads already at the store still write into caller buffers: wait for them, bounded.
  std::unique_lock<std::mutex> lock(impl_->mu);
  const auto deadline = clock_type::now() + std::chrono::seconds(10);
  while (impl_->in_store > 0 && clock_type::now() < deadline) {
    lock.unlock();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    lock.lock();
  }
  if (impl_->in_store > 0) spdlog::warn("snic gate: {} reads still in flight at shutdown", impl_->in_store);
}

void snic_gate::submit(std::vector<read_request> batch) {
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
    s.busy_ns += uint64_t(
        std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now() - impl_->busy_since).count());
  return s;
}

}  // namespace dualpath::storage
