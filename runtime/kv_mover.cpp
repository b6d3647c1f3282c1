#include "runtime/kv_mover.hpp"

#include <spdlog/spdlog.h>

#include <cstring>
#include <string>

namespace dualpath::runtime {

std::optional<uint32_t> node_fabric::local_index(uint32_t engine) const {
  for (size_t i = 0; i < engines.size(); ++i)
    if (engines[i] == engine) return uint32_t(i);
  return std::nullopt;
}

status node_fabric::validate(const std::vector<copy_op>& ops) const {
  for (const auto& op : ops) {
    if (!local_index(op.via))
      return status(errc::internal, "copy from engine " + std::to_string(op.via) + ", which is not on this node");
    if (op.dst_engine >= directory.size())
      return status(errc::internal, "copy to unknown engine " + std::to_string(op.dst_engine));
    if (op.pull() && (op.src_engine >= directory.size() || op.dst_engine != op.via))
      return status(errc::internal, "pull from engine " + std::to_string(op.src_engine) + " into engine " +
                                        std::to_string(op.dst_engine) + " by engine " + std::to_string(op.via));
    // A push reads this node's region and writes the peer's; a pull the other way round.
    const auto local_size = [&](region_kind k) { return k == region_kind::buffer ? buffer_bytes : hbm_bytes; };
    const auto peer_size = [&](uint32_t e, region_kind k) {
      return k == region_kind::buffer ? directory[e].buffer.length : directory[e].hbm.length;
    };
    const uint64_t src_size = op.pull() ? peer_size(op.src_engine, op.src_kind) : local_size(op.src_kind);
    const uint64_t dst_size = op.pull() ? local_size(op.dst_kind) : peer_size(op.dst_engine, op.dst_kind);
    if (op.src_offset + op.length > src_size || op.dst_offset + op.length > dst_size)
      return status(errc::internal, "copy of " + std::to_string(op.length) + " bytes at " +
                                        std::to_string(op.src_offset) + " -> " + std::to_string(op.dst_offset) +
                                        " leaves its region");
  }
  return {};
}

namespace {

// Whether copy b may join a gathered write that ends with copy a: the same source region, and b's bytes right
// after a's in the same destination region. Pulls are read one by one.
bool gathers(const copy_op& a, const copy_op& b) {
  return !a.pull() && !b.pull() && a.via == b.via && a.src_kind == b.src_kind && a.dst_engine == b.dst_engine &&
         a.dst_kind == b.dst_kind && a.dst_offset + a.length == b.dst_offset;
}

// Transfers through the engines' CNICs, tracked until their completions come back.
class fabric_mover final : public kv_mover {
 public:
  explicit fabric_mover(node_fabric& f) : f_(f) {}

  // Copies from one engine's region into back-to-back bytes of one destination region go as one gathered write,
  // up to the provider's gather limit and a slice: a pass's fetch of a layer takes each request's hit Layer
  // Blocks from their buffer slots into one run of its staging slot, and on shm each write of its own was a
  // system call, a copy and a completion (docs/design.md §8).
  void post(const std::vector<copy_op>& ops, transport::traffic_class tc, copy_tracker::done_fn done) override {
    std::vector<std::pair<size_t, size_t>> runs;  // [first, end) of ops that go as one write
    for (size_t i = 0; i < ops.size();) {
      const auto& ep = *f_.endpoints[*f_.local_index(ops[i].via)];
      const size_t limit = ep.gather_limit();
      uint64_t bytes = ops[i].length;
      size_t end = i + 1;
      for (; end < ops.size() && end - i < limit && gathers(ops[end - 1], ops[end]) &&
             bytes + ops[end].length <= ep.options().slice_bytes;
           ++end)
        bytes += ops[end].length;
      runs.emplace_back(i, end);
      i = end;
    }
    const uint64_t batch = tracker_.add_batch(runs.size(), std::move(done));
    std::vector<transport::gather_piece> pieces;
    for (const auto& [first, end] : runs) {
      const copy_op& op = ops[first];
      const uint32_t li = *f_.local_index(op.via);
      // This node's region is a push's source and a pull's destination; the peer's the other one.
      const auto& local =
          (op.pull() ? op.dst_kind : op.src_kind) == region_kind::buffer ? *f_.buffer_regions[li] : *f_.hbm_regions[li];
      const uint32_t peer_engine = op.pull() ? op.src_engine : op.dst_engine;
      const auto& peer = f_.directory[peer_engine];
      const auto& remote = (op.pull() ? op.src_kind : op.dst_kind) == region_kind::buffer ? peer.buffer : peer.hbm;
      const uint32_t to = f_.peer_index[li][peer_engine];
      pieces.clear();
      for (size_t k = first; k < end; ++k) {
        pieces.push_back({ops[k].src_offset, ops[k].length});
        stats_.bytes += ops[k].length;
      }
      stats_.copies += pieces.size();
      ++stats_.writes;
      const uint64_t context = tracker_.context_for(batch);
      if (op.pull()) f_.endpoints[li]->read(tc, local, op.dst_offset, to, remote, op.src_offset, op.length, context);
      else if (pieces.size() == 1)
        f_.endpoints[li]->write(tc, local, op.src_offset, to, remote, op.dst_offset, op.length, context);
      else f_.endpoints[li]->write_gather(tc, local, pieces, to, remote, op.dst_offset, context);
    }
  }

  bool progress() override {
    bool worked = false;
    for (auto& ep : f_.endpoints) {
      for (auto& c : ep->poll_completions()) {
        worked = true;
        if (!c.ok) ++stats_.errors;
        if (auto finished = tracker_.complete(c.context, c.ok, c.error)) finished->first(std::move(finished->second));
      }
      ep->poll_arrivals();  // targets make progress too (shm and loopback need it)
    }
    if (tracker_.stray() > reported_stray_) {
      spdlog::warn("node data plane: {} completions matched no copy", tracker_.stray() - reported_stray_);
      reported_stray_ = tracker_.stray();
    }
    return worked;
  }

  bool idle() const override { return tracker_.empty(); }

 private:
  node_fabric& f_;
  copy_tracker tracker_;
  uint64_t reported_stray_ = 0;
};

// The oracle: the same copies as plain memcpy between this process's buffers, finished at once.
class memcpy_mover final : public kv_mover {
 public:
  explicit memcpy_mover(const node_fabric& f) : f_(f) {}

  void post(const std::vector<copy_op>& ops, transport::traffic_class, copy_tracker::done_fn done) override {
    // Every engine's regions by their addresses in this process (the directory holds this node's too).
    const auto at = [&](uint32_t engine, region_kind k, uint64_t offset) {
      const auto& e = f_.directory[engine];
      return (k == region_kind::buffer ? e.buffer_base : e.hbm_base) + offset;
    };
    for (const auto& op : ops) {
      std::memcpy(at(op.dst_engine, op.dst_kind, op.dst_offset),
                  at(op.pull() ? op.src_engine : op.via, op.src_kind, op.src_offset), op.length);
      ++stats_.copies;
      ++stats_.writes;
      stats_.bytes += op.length;
    }
    done(status{});
  }

  bool progress() override { return false; }
  bool idle() const override { return true; }

 private:
  const node_fabric& f_;
};

}  // namespace

std::unique_ptr<kv_mover> make_fabric_mover(node_fabric& fabric) { return std::make_unique<fabric_mover>(fabric); }
std::unique_ptr<kv_mover> make_memcpy_mover(const node_fabric& fabric) {
  return std::make_unique<memcpy_mover>(fabric);
}

}  // namespace dualpath::runtime
