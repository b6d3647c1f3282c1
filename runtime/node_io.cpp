#include "runtime/node_io.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>

#include "core/errors.hpp"

namespace dualpath::runtime {

using clock_type = std::chrono::steady_clock;

namespace {

// Why a block read failed, as the one error type: a miss or another model's block is simply not there for
// us; a bad checksum or a short file is corrupt; the OS refusing the read is an I/O error.
status read_status(const storage::read_completion& c) {
  using storage::read_outcome;
  switch (c.outcome) {
    case read_outcome::ok: return {};
    case read_outcome::miss:
    case read_outcome::foreign: return status(errc::not_found, c.message);
    case read_outcome::corrupt:
    case read_outcome::truncated: return status(errc::corrupt, c.message);
    case read_outcome::io_error: return status(errc::io, c.message);
    case read_outcome::bad_request: return status(errc::internal, c.message);
  }
  return status(errc::internal, c.message);
}

uint64_t checked_slots(const node_io_options& o, storage::block_store& store) {
  const uint64_t slots = o.buffer_bytes / store.read_buffer_bytes();
  if (slots == 0) {
    throw user_error("DRAM buffer of node " + std::to_string(o.node) + " (" + std::to_string(o.buffer_bytes) +
                     " B) cannot hold one Full Block (" + std::to_string(store.read_buffer_bytes()) + " B)");
  }
  return slots;
}
}  // namespace

struct node_io::pending_reserve {
  uint32_t count = 0;
  clock_type::time_point since;
  std::function<void(result<std::vector<uint32_t>>)> done;
};

struct node_io::pending_load {
  uint64_t id = 0;
  std::vector<block_key> keys;
  load_result result;
  std::vector<int8_t> state;  // 0 pending, 1 ok, -1 failed
  std::vector<status> reasons;
  size_t outstanding = 0;
  std::function<void(load_result)> done;
};

struct node_io::pending_copy {
  size_t outstanding = 0;
  status error;
  std::function<void(status)> done;
};

node_io::node_io(const node_io_options& options, storage::block_store& store)
    : options_(options),
      store_(store),
      gate_(store, options.snic_gb_per_s),
      buffer_memory_(checked_slots(options, store) * store.read_buffer_bytes()) {
  slot_stride_ = store_.read_buffer_bytes();
  slots_total_ = uint32_t(options_.buffer_bytes / slot_stride_);
  buffer_ = buffer_memory_.data();
  for (uint32_t s = slots_total_; s-- > 0;) free_slots_.push_back(s);
  stats_.slots_total = stats_.slots_free = stats_.slots_low_water = slots_total_;

  hbm_memory_.reserve(options_.engines.size());
  for (size_t i = 0; i < options_.engines.size(); ++i) {
    hbm_memory_.emplace_back(options_.hbm_bytes);
    hbm_.push_back(std::make_unique<gpu::hbm_arena>(hbm_memory_.back().data(), options_.hbm_bytes));
    endpoints_.push_back(transport::endpoint::open(options_.fabric));
    auto& ep = *endpoints_.back();
    buffer_regions_.push_back(ep.register_memory(buffer_, uint64_t(slots_total_) * slot_stride_));
    hbm_regions_.push_back(ep.register_memory(hbm_.back()->base(), hbm_.back()->capacity()));
  }
  thread_ = std::thread([this] { run(); });
  persist_thread_ = std::thread([this] {
    for (;;) {
      std::unique_lock<std::mutex> lock(persist_mutex_);
      persist_wake_.wait(lock, [this] { return stop_ || !background_.empty(); });
      if (background_.empty()) return;
      auto task = std::move(background_.front());
      background_.pop_front();
      lock.unlock();
      task();
    }
  });
}

void node_io::post_background(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> g(persist_mutex_);
    background_.push_back(std::move(task));
  }
  persist_wake_.notify_one();
}

node_io::~node_io() {
  {
    std::lock_guard<std::mutex> g(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  {
    std::lock_guard<std::mutex> g(persist_mutex_);
  }
  persist_wake_.notify_all();
  if (persist_thread_.joinable()) persist_thread_.join();
  // Regions before endpoints: a region must not outlive the endpoint that registered it.
  buffer_regions_.clear();
  hbm_regions_.clear();
  endpoints_.clear();
}

std::vector<endpoint_entry> node_io::entries() const {
  std::vector<endpoint_entry> out;
  for (size_t i = 0; i < endpoints_.size(); ++i) {
    out.push_back({options_.engines[i], options_.node, endpoints_[i]->address(), buffer_regions_[i]->remote(),
                   hbm_regions_[i]->remote(), buffer_, hbm_[i]->base()});
  }
  return out;
}

void node_io::connect(const fabric_directory& directory) {
  directory_ = directory;
  peer_index_.assign(endpoints_.size(), std::vector<uint32_t>(directory.size(), 0));
  for (size_t i = 0; i < endpoints_.size(); ++i) {
    for (size_t e = 0; e < directory.size(); ++e) peer_index_[i][e] = endpoints_[i]->connect(directory[e].address);
  }
}

uint32_t node_io::local_index(uint32_t engine) const {
  for (size_t i = 0; i < options_.engines.size(); ++i)
    if (options_.engines[i] == engine) return uint32_t(i);
  throw std::logic_error("engine " + std::to_string(engine) + " is not on node " + std::to_string(options_.node));
}

gpu::hbm_arena& node_io::hbm(uint32_t engine) { return *hbm_[local_index(engine)]; }

std::byte* node_io::slot_data(uint32_t slot) const {
  return buffer_ + uint64_t(slot) * slot_stride_ + store_.payload_offset();
}

uint64_t node_io::slot_offset(uint32_t slot) const { return uint64_t(slot) * slot_stride_ + store_.payload_offset(); }

uint64_t node_io::hbm_offset(uint32_t engine, const std::byte* p) { return uint64_t(p - hbm(engine).base()); }

void node_io::reserve(uint32_t count, std::function<void(result<std::vector<uint32_t>>)> done) {
  if (count > slots_total_) {
    done(status(errc::capacity, "request needs " + std::to_string(count) + " Full Blocks but the DRAM buffer of node " +
                                    std::to_string(options_.node) + " holds " + std::to_string(slots_total_)));
    return;
  }
  auto r = std::make_shared<pending_reserve>();
  r->count = count;
  r->since = clock_type::now();
  r->done = std::move(done);
  {
    std::lock_guard<std::mutex> g(mutex_);
    reserves_.push_back(std::move(r));
  }
  wake_.notify_all();
}

void node_io::load(std::vector<block_key> keys, std::function<void(load_result)> done) {
  auto l = std::make_shared<pending_load>();
  l->keys = std::move(keys);
  l->done = std::move(done);
  const uint32_t n = uint32_t(l->keys.size());
  reserve(n, [this, l](result<std::vector<uint32_t>> slots) {
    if (!slots.ok()) {
      l->result.status = slots.error();
      l->done(std::move(l->result));
      return;
    }
    l->result.slots = std::move(slots).value();
    post_load(l);
  });
}

void node_io::post_load(std::shared_ptr<pending_load> l) {
  // Runs on the progress thread (reserve callbacks do).
  if (l->keys.empty()) {
    l->done(std::move(l->result));
    return;
  }
  if (options_.bypass) {
    post_background([this, l] {
      const auto& g = options_.geometry;
      for (size_t i = 0; i < l->keys.size() && l->result.status.ok(); ++i) {
        for (uint32_t layer = 0; layer < g.layers; ++layer) {
          std::byte* dst = slot_data(l->result.slots[i]) + layer * g.layer_bytes();
          if (status s = store_.read_layer(l->keys[i], layer, dst); !s.ok()) {
            l->result.status = std::move(s);
            break;
          }
        }
        if (l->result.status.ok()) l->result.valid = uint32_t(i + 1);
      }
      l->done(std::move(l->result));
    });
    return;
  }
  std::vector<storage::read_request> batch;
  l->state.assign(l->keys.size(), 0);
  l->reasons.assign(l->keys.size(), status{});
  l->outstanding = l->keys.size();
  {
    std::lock_guard<std::mutex> g(mutex_);
    l->id = next_context_++;
    loads_.push_back(l);
  }
  for (size_t i = 0; i < l->keys.size(); ++i) {
    std::byte* base = buffer_ + uint64_t(l->result.slots[i]) * slot_stride_;
    batch.push_back({l->keys[i], base, (l->id << 20) | i});
  }
  gate_.submit(std::move(batch));
}

void node_io::release(const std::vector<uint32_t>& slots) {
  {
    std::lock_guard<std::mutex> g(mutex_);
    free_slots_.insert(free_slots_.end(), slots.begin(), slots.end());
    stats_.slots_free = uint32_t(free_slots_.size());
  }
  wake_.notify_all();
}

void node_io::copy(std::vector<copy_op> ops, transport::traffic_class tc, std::function<void(status)> done) {
  if (ops.empty()) {
    done(status{});
    return;
  }
  auto batch = std::make_shared<pending_copy>();
  batch->outstanding = ops.size();
  batch->done = std::move(done);
  {
    std::lock_guard<std::mutex> g(mutex_);
    commands_.push_back([this, ops = std::move(ops), tc, batch] {
      if (options_.bypass) {
        for (const auto& op : ops) {
          const uint32_t li = local_index(op.via);
          const std::byte* src = (op.src_kind == region_kind::buffer ? buffer_ : hbm_[li]->base()) + op.src_offset;
          const auto& peer = directory_.at(op.dst_engine);
          std::byte* dst = (op.dst_kind == region_kind::buffer ? peer.buffer_base : peer.hbm_base) + op.dst_offset;
          std::memcpy(dst, src, op.length);
        }
        batch->done(status{});
        return;
      }
      for (const auto& op : ops) {
        const uint32_t li = local_index(op.via);
        const auto& src = op.src_kind == region_kind::buffer ? *buffer_regions_[li] : *hbm_regions_[li];
        const auto& peer = directory_.at(op.dst_engine);
        const auto& dst = op.dst_kind == region_kind::buffer ? peer.buffer : peer.hbm;
        uint64_t context;
        {
          std::lock_guard<std::mutex> g(mutex_);
          context = next_context_++;
          copies_.emplace_back(context, batch);
          stats_.copies++;
          stats_.copy_bytes += op.length;
        }
        endpoints_[li]->write(tc, src, op.src_offset, peer_index_[li][op.dst_engine], dst, op.dst_offset, op.length,
                              context);
      }
    });
  }
  wake_.notify_all();
}

void node_io::persist(block_key key, block_key parent, const std::byte* payload, std::function<void()> done) {
  auto copy = std::make_shared<std::vector<std::byte>>(payload, payload + options_.geometry.block_bytes());
  post_background([this, key, parent, copy, done = std::move(done)] {
    const auto r = store_.write(key, parent, copy->data());
    {
      std::lock_guard<std::mutex> g(mutex_);
      if (r.ok()) ++stats_.persisted_blocks;
      else ++stats_.persist_errors;
    }
    if (!r.ok()) spdlog::warn("node {}: block {} not persisted: {}", options_.node, key_hex(key), r.message());
    if (done) done();
  });
}

uint64_t node_io::read_q() const { return gate_.read_q(); }

node_io_stats node_io::stats() const {
  std::lock_guard<std::mutex> g(mutex_);
  node_io_stats s = stats_;
  const auto gs = gate_.stats();
  s.snic_bytes = gs.bytes_read;
  s.snic_reads = gs.reads;
  s.read_failures = gs.failed;
  return s;
}

void node_io::progress_reserves() {
  // Grants waiting reservations in FIFO order; the head blocks the rest so a large request is not starved.
  std::vector<std::pair<std::shared_ptr<pending_reserve>, std::vector<uint32_t>>> granted;
  std::vector<std::shared_ptr<pending_reserve>> expired;
  {
    std::lock_guard<std::mutex> g(mutex_);
    while (!reserves_.empty() && reserves_.front()->count <= free_slots_.size()) {
      auto r = reserves_.front();
      reserves_.pop_front();
      std::vector<uint32_t> slots(free_slots_.end() - r->count, free_slots_.end());
      free_slots_.resize(free_slots_.size() - r->count);
      granted.emplace_back(std::move(r), std::move(slots));
    }
    const auto now = clock_type::now();
    while (!reserves_.empty() && now - reserves_.front()->since > options_.timeout) {
      expired.push_back(reserves_.front());
      reserves_.pop_front();
    }
    stats_.slots_free = uint32_t(free_slots_.size());
    stats_.slots_low_water = std::min(stats_.slots_low_water, stats_.slots_free);
  }
  for (auto& [r, slots] : granted) r->done(std::move(slots));
  for (auto& r : expired)
    r->done(status(errc::timeout, "timed out waiting for DRAM buffer space on node " + std::to_string(options_.node)));
}

void node_io::run() {
  while (!stop_) {
    bool worked = false;
    std::deque<std::function<void()>> commands;
    {
      std::lock_guard<std::mutex> g(mutex_);
      commands.swap(commands_);
    }
    for (auto& c : commands) c();
    worked |= !commands.empty();
    progress_reserves();

    // Storage reads: completions come back through the gate in the order the capped link releases them.
    bool loads_pending;
    {
      std::lock_guard<std::mutex> g(mutex_);
      loads_pending = !loads_.empty();
    }
    if (loads_pending) {
      for (auto& c : gate_.poll(std::chrono::milliseconds(0))) {
        worked = true;
        const uint64_t id = c.user_data >> 20;
        const size_t index = c.user_data & ((1u << 20) - 1);
        std::shared_ptr<pending_load> l;
        {
          std::lock_guard<std::mutex> g(mutex_);
          auto it = std::find_if(loads_.begin(), loads_.end(), [&](const auto& p) { return p->id == id; });
          if (it == loads_.end()) continue;
          l = *it;
        }
        l->state[index] = c.ok() ? 1 : -1;
        if (!c.ok()) l->reasons[index] = read_status(c);
        l->result.bytes += c.bytes_read;
        if (--l->outstanding == 0) {
          {
            std::lock_guard<std::mutex> g(mutex_);
            loads_.erase(std::find(loads_.begin(), loads_.end(), l));
          }
          uint32_t valid = 0;
          while (valid < l->state.size() && l->state[valid] == 1) ++valid;
          l->result.valid = valid;
          if (valid < l->state.size()) l->result.status = l->reasons[valid];
          l->done(std::move(l->result));
        }
      }
    }

    for (auto& ep : endpoints_) {
      for (auto& c : ep->poll_completions()) {
        worked = true;
        std::shared_ptr<pending_copy> batch;
        {
          std::lock_guard<std::mutex> g(mutex_);
          auto it = std::find_if(copies_.begin(), copies_.end(), [&](const auto& p) { return p.first == c.context; });
          if (it == copies_.end()) continue;
          batch = it->second;
          copies_.erase(it);
          if (!c.ok) stats_.copy_errors++;
        }
        if (!c.ok && batch->error.ok()) batch->error = status(errc::transfer, c.error);
        if (--batch->outstanding == 0) batch->done(batch->error);
      }
      ep->poll_arrivals();
    }

    bool idle;
    {
      std::lock_guard<std::mutex> g(mutex_);
      idle = copies_.empty() && commands_.empty();
    }
    if (worked) continue;
    if (idle && !loads_pending) {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait_for(lock, std::chrono::milliseconds(1), [this] { return stop_ || !commands_.empty(); });
    } else if (idle) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    } else {
      // Transfers in flight: poll often, but do not spin a core that the engines and other nodes need.
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }
}

}  // namespace dualpath::runtime
