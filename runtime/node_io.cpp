#include "runtime/node_io.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>

#include "core/status.hpp"

namespace dualpath::runtime {

namespace {

uint32_t checked_slots(const node_io_options& o, storage::block_store& store) {
  const uint64_t slots = o.buffer_bytes / store.read_buffer_bytes();
  if (slots == 0) {
    throw user_error("DRAM buffer of node " + std::to_string(o.node) + " (" + std::to_string(o.buffer_bytes) +
                     " B) cannot hold one Full Block (" + std::to_string(store.read_buffer_bytes()) + " B)");
  }
  return uint32_t(slots);
}

}  // namespace

node_io::node_io(const node_io_options& options, storage::block_store& store)
    : options_(options),
      store_(store),
      slot_stride_(store.read_buffer_bytes()),
      buffer_memory_(std::make_unique<transport::host_buffer>(uint64_t(checked_slots(options, store)) * slot_stride_,
                                                              options.fabric.buffers)),
      slots_(options.node, uint32_t(buffer_memory_->size() / slot_stride_), options.timeout),
      blocks_(options.bypass ? make_dram_path(store, options.geometry, options.dram, writer_)
                             : make_snic_path(store, options.snic_gb_per_s)),
      copies_(options.geometry.block_bytes(), options.write_queue_bytes) {
  fabric_.engines = options_.engines;
  fabric_.buffer = buffer_memory_->data();
  fabric_.buffer_bytes = uint64_t(slots_.total()) * slot_stride_;
  const uint64_t region = std::max(options_.hbm_bytes, options_.hbm_region_bytes);
  fabric_.hbm_bytes = region;
  hbm_memory_.reserve(options_.engines.size());
  for (size_t i = 0; i < options_.engines.size(); ++i) {
    hbm_memory_.emplace_back(region, options_.fabric.buffers);
    hbm_.push_back(std::make_unique<gpu::hbm_arena>(hbm_memory_.back().data(), options_.hbm_bytes));
    fabric_.hbm.push_back(hbm_.back()->base());
    fabric_.endpoints.push_back(transport::endpoint::open(options_.fabric));
    auto& ep = *fabric_.endpoints.back();
    fabric_.buffer_regions.push_back(ep.register_memory(fabric_.buffer, fabric_.buffer_bytes));
    fabric_.hbm_regions.push_back(ep.register_memory(hbm_.back()->base(), region));
  }
  mover_ = options_.bypass ? make_memcpy_mover(fabric_) : make_fabric_mover(fabric_);
  thread_ = std::thread([this] { run(); });
}

node_io::~node_io() { stop(); }

void node_io::stop() {
  {
    std::lock_guard<std::mutex> g(mutex_);
    if (stopped_) return;
    stopped_ = true;
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  spdlog::info("node {}: write-back queue peaked at {:.1f} MB of block copies", options_.node,
               copies_.peak_bytes() / 1e6);
  // A storage read still running (a stalled disk) would write into the buffer after it is freed: wait for
  // it as long as any request of this node may wait, and if it still has not landed, leave the buffer be.
  if (!blocks_->quiesce(options_.timeout)) {
    spdlog::warn("node {}: storage reads still running at shutdown; their buffer is left allocated", options_.node);
    (void)buffer_memory_.release();
  }
}

std::vector<endpoint_entry> node_io::entries() const {
  std::vector<endpoint_entry> out;
  for (size_t i = 0; i < fabric_.endpoints.size(); ++i) {
    out.push_back({options_.engines[i], options_.node, fabric_.endpoints[i]->address(),
                   fabric_.buffer_regions[i]->remote(), fabric_.hbm_regions[i]->remote(), fabric_.buffer,
                   hbm_[i]->base()});
  }
  return out;
}

void node_io::connect(const fabric_directory& directory) {
  fabric_.directory = directory;
  fabric_.peer_index.assign(fabric_.endpoints.size(), std::vector<uint32_t>(directory.size(), 0));
  for (size_t e = 0; e < directory.size(); ++e) connect_engine(uint32_t(e), directory[e].address);
}

void node_io::connect_engine(uint32_t engine, const transport::address_bytes& address) {
  for (size_t i = 0; i < fabric_.endpoints.size() && i < fabric_.peer_index.size(); ++i)
    fabric_.peer_index[i][engine] = fabric_.endpoints[i]->connect(address);
}

void node_io::node_lost(uint32_t node) {
  post_command([this, node] {
    const auto per_node = uint32_t(options_.engines.size());
    const std::string why = "node " + std::to_string(node) + " was lost";
    for (size_t i = 0; i < fabric_.endpoints.size() && i < fabric_.peer_index.size(); ++i)
      for (uint32_t e = node * per_node; e < (node + 1) * per_node && e < fabric_.peer_index[i].size(); ++e)
        fabric_.endpoints[i]->mark_down(fabric_.peer_index[i][e], why);
  });
}

void node_io::node_rejoined(std::vector<endpoint_entry> entries) {
  post_command([this, entries = std::move(entries)] {
    for (const auto& e : entries) {
      if (e.engine >= fabric_.directory.size()) continue;
      fabric_.directory[e.engine] = e;
      connect_engine(e.engine, e.address);  // a new address gets a new peer; the dead one's index keeps failing
    }
  });
}

gpu::hbm_arena& node_io::hbm(uint32_t engine) {
  const auto li = fabric_.local_index(engine);
  if (!li)
    throw std::logic_error("engine " + std::to_string(engine) + " is not on node " + std::to_string(options_.node));
  return *hbm_[*li];
}

void node_io::relayout_hbm(uint32_t engine, uint64_t capacity, uint64_t reserve_front) {
  const auto li = fabric_.local_index(engine);
  if (!li)
    throw std::logic_error("engine " + std::to_string(engine) + " is not on node " + std::to_string(options_.node));
  if (capacity > hbm_memory_[*li].size())
    throw std::logic_error("engine " + std::to_string(engine) + ": HBM of " + std::to_string(capacity) +
                           " bytes exceeds its registered " + std::to_string(hbm_memory_[*li].size()));
  hbm_[*li] = std::make_unique<gpu::hbm_arena>(hbm_memory_[*li].data(), capacity);
  if (reserve_front) hbm_[*li]->allocate(reserve_front);
}

std::byte* node_io::slot_data(uint32_t slot) const { return fabric_.buffer + slot_offset(slot); }

uint64_t node_io::slot_offset(uint32_t slot) const { return uint64_t(slot) * slot_stride_ + store_.payload_offset(); }

uint64_t node_io::hbm_offset(uint32_t engine, const std::byte* p) { return uint64_t(p - hbm(engine).base()); }

void node_io::post_command(std::function<void()> command) {
  {
    std::lock_guard<std::mutex> g(mutex_);
    commands_.push_back(std::move(command));
  }
  wake_.notify_all();
}

void node_io::reserve(uint32_t count, std::function<void(result<std::vector<uint32_t>>)> done) {
  slots_.reserve(count, std::move(done));
  wake_.notify_all();
}

void node_io::load(std::vector<block_key> keys, std::function<void(load_result)> done, uint64_t request) {
  const uint32_t n = uint32_t(keys.size());
  // Counted in read_q from the moment it is asked for: the scheduler weighs the SNIC's whole backlog,
  // and a load waiting for slots is part of it (docs/design.md §7.1). Bytes first, then the id: see
  // take_read_report.
  const uint64_t bytes = uint64_t(n) * slot_stride_;
  waiting_bytes_ += bytes;
  read_started(request);
  auto answer = [this, request, done = std::move(done)](load_result r) {
    read_finished(request);
    done(std::move(r));
  };
  // The reservation's callback runs on the progress thread (or here, when the request can never fit).
  reserve(n, [this, bytes, keys = std::move(keys),
              answer = std::move(answer)](result<std::vector<uint32_t>> slots) mutable {
    load_result partial;
    if (!slots.ok()) {
      waiting_bytes_ -= bytes;
      partial.status = slots.error();
      return answer(std::move(partial));
    }
    partial.slots = std::move(slots).value();
    if (keys.empty()) {
      waiting_bytes_ -= bytes;
      return answer(std::move(partial));
    }
    start_load(std::move(keys), std::move(partial), std::move(answer));
    waiting_bytes_ -= bytes;  // after the gate counts them: never a moment where neither does
  });
}

void node_io::read_started(uint64_t request) {
  if (request == 0) return;
  std::lock_guard<std::mutex> g(reads_mutex_);
  ++reading_[request];
}

void node_io::read_finished(uint64_t request) {
  if (request == 0) return;
  std::lock_guard<std::mutex> g(reads_mutex_);
  auto it = reading_.find(request);
  if (it == reading_.end() || --it->second > 0) return;
  reading_.erase(it);
  read_done_.push_back(request);
}

read_queue_report node_io::take_read_report() {
  read_queue_report r;
  {
    std::lock_guard<std::mutex> g(reads_mutex_);
    r.requests.reserve(reading_.size() + read_done_.size());
    for (const auto& [id, n] : reading_) r.requests.push_back(id);
    r.requests.insert(r.requests.end(), read_done_.begin(), read_done_.end());
    read_done_.clear();
  }
  r.read_q = read_q();
  return r;
}

void node_io::start_load(std::vector<block_key> keys, load_result partial, std::function<void(load_result)> done) {
  std::vector<std::byte*> files;
  for (uint32_t s : partial.slots) files.push_back(fabric_.buffer + uint64_t(s) * slot_stride_);
  blocks_->load(std::move(keys), std::move(files), std::move(partial), std::move(done),
                std::chrono::steady_clock::now() + options_.timeout);
}

void node_io::release(const std::vector<uint32_t>& slots) {
  slots_.release(slots);
  wake_.notify_all();
}

void node_io::copy(std::vector<copy_op> ops, transport::traffic_class tc, std::function<void(status)> done) {
  if (ops.empty()) return done(status{});
  // Checked on the progress thread, where the directory changes when a node rejoins; a bad op is the
  // caller's error, answered through `done`, never a throw there.
  post_command([this, ops = std::move(ops), tc, done = std::move(done)]() mutable {
    if (status s = fabric_.validate(ops); !s.ok()) return done(std::move(s));
    mover_->post(ops, tc, std::move(done));
  });
}

void node_io::persist(block_key key, block_key parent, const std::byte* payload, std::function<void()> done) {
  const uint64_t bytes = options_.geometry.block_bytes();
  std::byte* copy = copies_.take();
  if (!copy) {
    // The store is behind by a whole queue: this block is not persisted (a later turn recomputes it), and
    // the turn is answered as for a failed write, rather than memory growing without bound.
    if (persist_dropped_++ == 0)
      spdlog::warn("node {}: the write-back queue is full ({:.0f} MB): blocks beyond it are not persisted",
                   options_.node, double(options_.write_queue_bytes) / 1e6);
    ++persist_errors_;
    if (done) done();
    return;
  }
  std::memcpy(copy, payload, bytes);
  // The oracle keeps the block in DRAM before the store indexes it, so a load that finds it indexed finds it
  // here. Otherwise the write-back leaves through this node's SNIC at its cap (docs/design.md §4, §9): it is
  // answered when the capped link would have sent it, but written (and its copy given back) as soon as the
  // store takes it, so the link's backlog costs no memory; only the store's own does.
  blocks_->keep(key, copy, bytes);
  writer_.post([this, key, parent, copy, done = std::move(done)]() mutable {
    const auto leaves = blocks_->reserve_write();
    const status r = store_.write(key, parent, copy);
    copies_.give(copy);
    if (r.ok()) ++persisted_;
    else ++persist_errors_;
    if (!r.ok()) spdlog::warn("node {}: block {} not persisted: {}", options_.node, key_hex(key), r.message());
    if (done) answers_.at(leaves, std::move(done));
  });
}

uint64_t node_io::read_q() const { return blocks_->read_q() + waiting_bytes_.load(); }

std::vector<uint64_t> node_io::hbm_free() const {
  std::vector<uint64_t> out;
  for (const auto& arena : hbm_) out.push_back(arena->free_bytes());
  return out;
}

node_io_stats node_io::stats() const {
  node_io_stats s;
  const auto bs = blocks_->stats();
  s.snic_bytes = bs.snic_bytes;
  s.store_read_bytes = bs.store_read_bytes;
  s.snic_write_bytes = bs.snic_write_bytes;
  s.snic_reads = bs.snic_reads;
  s.read_failures = bs.read_failures;
  s.copies = mover_->stats().copies;
  s.copy_bytes = mover_->stats().bytes;
  s.copy_writes = mover_->stats().writes;
  s.copy_errors = mover_->stats().errors;
  s.persisted_blocks = persisted_;
  s.write_queue_peak_bytes = copies_.peak_bytes();
  s.persist_errors = persist_errors_;
  s.slots_total = slots_.total();
  s.slots_free = slots_.free_slots();
  s.slots_low_water = slots_.low_water();
  return s;
}

void node_io::run() {
  while (!stop_) {
    std::deque<std::function<void()>> commands;
    {
      std::lock_guard<std::mutex> g(mutex_);
      commands.swap(commands_);
    }
    for (auto& c : commands) c();
    if (const auto now = std::chrono::steady_clock::now(); sampler_.due(now))
      sampler_.record(now, blocks_->stats().snic_bytes, read_q());
    bool worked = !commands.empty();
    worked |= slots_.progress();
    worked |= blocks_->progress(slots_);
    worked |= mover_->progress();
    if (worked) continue;
    // Nothing to do until a command comes or it is time to poll again: transfers in flight are polled often
    // (but no core is spun that the engines and other nodes need), storage reads less often, an idle node
    // waits a millisecond. A command wakes the thread at once, whatever it waits for: a copy posted while
    // storage reads were in flight waited out a 200-µs sleep before (on the scaled 64K ablation a pass's
    // first layer fetch is such a copy).
    const auto poll = !mover_->idle()   ? std::chrono::microseconds(20)
                      : blocks_->idle() ? std::chrono::microseconds(1000)
                                        : std::chrono::microseconds(200);
    std::unique_lock<std::mutex> lock(mutex_);
    wake_.wait_for(lock, poll, [this] { return stop_ || !commands_.empty(); });
  }
}

}  // namespace dualpath::runtime
