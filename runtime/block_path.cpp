#include "runtime/block_path.hpp"

#include <atomic>
#include <cstring>

#include "runtime/load_tracker.hpp"
#include "storage/snic_gate.hpp"
#include "storage/write_pacer.hpp"

namespace dualpath::runtime {

namespace {

class snic_path final : public block_path {
 public:
  snic_path(storage::block_store& store, double snic_gb_per_s)
      : file_bytes_(store.read_buffer_bytes()), gate_(store, snic_gb_per_s), pacer_(snic_gb_per_s, file_bytes_) {}

  void load(std::vector<block_key> keys, std::vector<std::byte*> files, load_result partial, done_fn done,
            std::chrono::steady_clock::time_point deadline) override {
    auto reads = loads_.add(keys, files, partial, done, deadline);
    if (!reads.ok()) {
      partial.status = reads.error();
      return done(std::move(partial));
    }
    gate_.submit(reads.value());
  }

  // Storage reads come back through the gate in the order the capped link releases them.
  bool progress(slot_pool& slots) override {
    if (loads_.empty()) return false;
    bool worked = false;
    for (auto& c : gate_.poll(std::chrono::milliseconds(0))) {
      worked = true;
      if (auto finished = loads_.complete(c)) {
        // An expired load was answered already: its slots come back only now, once nothing writes them.
        if (finished->first) finished->first(std::move(finished->second));
        else slots.release(finished->second.slots);
      }
    }
    for (auto& [done, r] : loads_.expire()) {
      worked = true;
      done(std::move(r));
    }
    return worked;
  }

  bool idle() const override { return loads_.empty(); }
  void keep(block_key, const std::byte*, uint64_t) override {}
  std::chrono::steady_clock::time_point reserve_write() override {
    return pacer_.reserve(file_bytes_, std::chrono::steady_clock::now());
  }
  uint64_t read_q() const override { return gate_.read_q(); }

  block_path_stats stats() const override {
    const auto gs = gate_.stats();
    return {gs.bytes_read, gs.bytes_read, pacer_.stats().bytes, gs.reads, gs.failed};
  }

  bool quiesce(std::chrono::milliseconds wait) override { return gate_.quiesce(wait); }

 private:
  uint64_t file_bytes_;  // one block file: what a read and a write move
  storage::snic_gate gate_;
  load_tracker loads_;  // progress thread only
  storage::write_pacer pacer_;
};

class dram_path final : public block_path {
 public:
  dram_path(storage::block_store& store, const kv_geometry& g, std::shared_ptr<dram_blocks> dram,
            background_writer& writer)
      : store_(store), geo_(g), dram_(dram ? std::move(dram) : std::make_shared<dram_blocks>()), writer_(writer) {}

  // Every hit block copied from memory on the background thread: no SNIC, no cap, no block file. A block the
  // run did not persist (left in the store by an earlier run) is read from its file and counted in
  // store_read_bytes, so the report shows it.
  void load(std::vector<block_key> keys, std::vector<std::byte*> files, load_result partial, done_fn done,
            std::chrono::steady_clock::time_point) override {
    writer_.post([this, keys = std::move(keys), files = std::move(files), r = std::move(partial),
                  done = std::move(done)]() mutable {
      for (size_t i = 0; i < keys.size() && r.status.ok(); ++i) {
        std::byte* dst = files[i] + store_.payload_offset();
        if (auto p = dram_->get(keys[i])) {
          std::memcpy(dst, p->data(), p->size());
        } else {
          for (uint32_t layer = 0; layer < geo_.layers && r.status.ok(); ++layer) {
            if (status s = store_.read_layer(keys[i], layer, dst + layer * geo_.layer_bytes()); !s.ok())
              r.status = std::move(s);
            else file_bytes_ += geo_.layer_bytes();
          }
        }
        if (r.status.ok()) r.valid = uint32_t(i + 1);
      }
      done(std::move(r));
    });
  }

  bool progress(slot_pool&) override { return false; }
  bool idle() const override { return true; }
  void keep(block_key key, const std::byte* payload, uint64_t bytes) override {
    dram_->put(key, std::make_shared<const std::vector<std::byte>>(payload, payload + bytes));
  }
  std::chrono::steady_clock::time_point reserve_write() override { return std::chrono::steady_clock::now(); }
  uint64_t read_q() const override { return 0; }
  block_path_stats stats() const override { return {0, file_bytes_.load(), 0, 0, 0}; }
  bool quiesce(std::chrono::milliseconds) override { return true; }  // its copies run on the writer, drained first

 private:
  storage::block_store& store_;
  kv_geometry geo_;
  std::shared_ptr<dram_blocks> dram_;
  background_writer& writer_;
  std::atomic<uint64_t> file_bytes_{0};  // blocks missing from `dram_`, read from their files
};

}  // namespace

std::unique_ptr<block_path> make_snic_path(storage::block_store& store, double snic_gb_per_s) {
  return std::make_unique<snic_path>(store, snic_gb_per_s);
}

std::unique_ptr<block_path> make_dram_path(storage::block_store& store, const kv_geometry& g,
                                           std::shared_ptr<dram_blocks> dram, background_writer& writer) {
  return std::make_unique<dram_path>(store, g, std::move(dram), writer);
}

}  // namespace dualpath::runtime
