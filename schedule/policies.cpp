// The policies by name (docs/design.md §7.5, §7.7): dualpath, basic, round_robin, split, alternate, framework. Each
// is a small class; the rules themselves live in selection.cpp.
#include <algorithm>
#include <numeric>

#include "core/modes.hpp"
#include "core/names.hpp"
#include "core/status.hpp"
#include "schedule/group_policy.hpp"
#include "schedule/selection.hpp"

namespace dualpath::schedule {

namespace {

// §7.2 then §7.3 (both levels) then a read-path rule. Passes over the fetched requests:
//  1. PE per request, FIFO, until the group is overloaded (tok_e += append).
//  2. level 1: each request to the DE group with the smallest Σ tok_e (private queues).
//  3. level 2: inside each DE group in private-queue order; a request that finds no HBM, and the
//     rest of its private queue, go back to the head of the global queue (order kept, PE load undone).
//  4. read path in FIFO order, charging read_q as it goes.
// The read path needs the DE (pass 3), so pass 1 cannot charge a request's reads where they will go. When a
// PE group spans nodes their read_q differ and C2/C3 must see this fetch's reads, so pass 1 charges each
// request's hit bytes to its PE node as if read there (the most that node can get) and removes that
// estimate before pass 4 charges the real paths. With one node per group C2/C3 holds one node, so the
// estimate changes no choice (docs/design.md §7.2).
class dualpath_policy : public group_policy {
 public:
  std::string_view name() const override { return "balanced"; }

 protected:
  std::vector<assignment> assign_group(cluster_snapshot& snap, const std::vector<node_snapshot*>& group,
                                       std::deque<request_info>& waiting, const policy_params& params) override {
    std::vector<assignment> out;

    // Pass 1.
    struct candidate {
      request_info r;
      node_snapshot* pe_node;
      engine_snapshot* pe;
      int de_group = -1, de_index = -1;
    };
    std::vector<candidate> cands;
    while (!waiting.empty()) {
      const prefill_choice c = select_prefill(group, params);
      if (!c.engine) break;
      const request_info& r = waiting.front();
      c.engine->tok += r.append_tokens;
      c.engine->seq += 1;
      c.node->read_q += r.hit_bytes;  // the estimate, removed below
      cands.push_back({r, c.node, c.engine});
      waiting.pop_front();
    }
    for (auto& c : cands) c.pe_node->read_q -= c.r.hit_bytes;
    if (cands.empty()) return out;

    // Pass 2: decode nodes are sorted by id, so the nodes of one group (group_layout) are adjacent.
    groups_used_ = 0;
    totals_.clear();
    max_free_.clear();
    uint32_t last = 0;
    for (auto& n : snap.nodes) {
      if (n.kind != role::decode || n.engines.empty()) continue;
      const uint32_t g = params.groups.de_group(n.node);
      if (groups_used_ == 0 || g != last) {
        if (de_groups_.size() == groups_used_) de_groups_.emplace_back();
        de_groups_[groups_used_++].clear();
        last = g;
      }
      de_groups_[groups_used_ - 1].push_back(&n);
    }
    for (size_t i = 0; i < groups_used_; ++i) {
      totals_.push_back(total_tok(de_groups_[i]));
      max_free_.push_back(max_free_hbm(de_groups_[i]));
    }
    for (auto& c : cands) {
      // Pass 2 charges no HBM, so each group's largest free HBM holds for the whole pass.
      c.de_group = select_decode_group(totals_, max_free_, c.r);
      if (c.de_group >= 0) totals_[size_t(c.de_group)] += c.r.len;
    }

    // Pass 3.
    std::vector<size_t> order(cands.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return cands[a].de_group < cands[b].de_group; });
    std::vector<const request_info*> queue;
    for (size_t i = 0; i < order.size();) {
      const int g = cands[order[i]].de_group;
      size_t j = i;
      queue.clear();
      while (j < order.size() && cands[order[j]].de_group == g) queue.push_back(&cands[order[j++]].r);
      if (g >= 0) {
        const auto placed = place_in_decode_group(de_groups_[size_t(g)], queue, params.z_slack);
        for (size_t k = 0; k < placed.size(); ++k) cands[order[i + k]].de_index = placed[k];
      }
      i = j;
    }

    // Pass 4, and the requests that found no DE go back in their original order.
    std::vector<request_info> back;
    for (auto& c : cands) {
      if (c.de_index < 0) {
        c.pe->tok -= c.r.append_tokens;
        c.pe->seq -= 1;
        back.push_back(c.r);
        continue;
      }
      const engine_ref de = engine_at(de_groups_[size_t(c.de_group)], c.de_index);
      assignment a = make_assignment(c.r, *c.pe_node, c.pe->engine, *de.node, de.engine->engine);
      choose_path(a, *c.pe_node, *de.node);
      charge_reads(a, *c.pe_node, *de.node);
      out.push_back(a);
    }
    waiting.insert(waiting.begin(), back.begin(), back.end());
    return out;
  }

 protected:
  virtual void choose_path(assignment& a, const node_snapshot& pe, const node_snapshot& de) const {
    set_path(a, shorter_read_q(pe, de));
  }

 private:
  // Reused between calls: no allocation per fetch once warm. The first groups_used_ entries are live.
  std::vector<std::vector<node_snapshot*>> de_groups_;
  size_t groups_used_ = 0;
  std::vector<uint64_t> totals_;
  std::vector<uint64_t> max_free_;
};

// Baseline: the same engine choices, every hit block read through the PE node's SNIC.
class basic_policy final : public dualpath_policy {
 public:
  std::string_view name() const override { return "balanced_pe"; }

 protected:
  void choose_path(assignment& a, const node_snapshot&, const node_snapshot&) const override {
    set_path(a, read_path::pe);
  }
};

// Extension §7.5: one request's hit blocks divided between both SNICs.
class split_policy final : public dualpath_policy {
 public:
  std::string_view name() const override { return "balanced_split"; }

 protected:
  void choose_path(assignment& a, const node_snapshot& pe, const node_snapshot& de) const override {
    set_split(a, pe, de);
  }
};

// Baseline: engines in turn (PE within the fetching group, DE over the whole cluster), skipping only
// engines that cannot take work (PE above β, DE without HBM); read path by the shorter queue.
class round_robin_policy : public group_policy {
 public:
  std::string_view name() const override { return "rr_queue"; }

 protected:
  std::vector<assignment> assign_group(cluster_snapshot& snap, const std::vector<node_snapshot*>& group,
                                       std::deque<request_info>& waiting, const policy_params& params) override {
    std::vector<assignment> out;
    std::vector<std::pair<node_snapshot*, size_t>> des;
    for (auto& n : snap.nodes)
      if (n.kind == role::decode)
        for (size_t i = 0; i < n.engines.size(); ++i) des.emplace_back(&n, i);
    if (des.empty()) return out;
    // The group's PEs in turn, node after node (one cursor per group, kept by its first node).
    std::vector<std::pair<node_snapshot*, size_t>> pes;
    for (auto* n : group)
      for (size_t i = 0; i < n->engines.size(); ++i) pes.emplace_back(n, i);
    auto& pe_cursor = pe_cursor_[group.front()->node];
    while (!waiting.empty()) {
      const request_info& r = waiting.front();
      engine_snapshot* pe = nullptr;
      node_snapshot* pe_node = nullptr;
      for (size_t k = 0; k < pes.size() && !pe; ++k) {
        const auto& cand = pes[(pe_cursor + k) % pes.size()];
        auto& e = cand.first->engines[cand.second];
        if (e.tok <= params.beta_tokens) {
          pe = &e;
          pe_node = cand.first;
          pe_cursor = (pe_cursor + k + 1) % pes.size();
        }
      }
      if (!pe) break;
      std::pair<node_snapshot*, size_t> de{nullptr, 0};
      for (size_t k = 0; k < des.size() && !de.first; ++k) {
        const auto& cand = des[(de_cursor_ + k) % des.size()];
        if (cand.first->engines[cand.second].free_hbm >= r.kv_bytes) {
          de = cand;
          de_cursor_ = (de_cursor_ + k + 1) % des.size();
        }
      }
      if (!de.first) break;
      auto& de_engine = de.first->engines[de.second];
      pe->tok += r.append_tokens;
      pe->seq += 1;
      de_engine.tok += r.len;
      de_engine.seq += 1;
      de_engine.free_hbm -= r.kv_bytes;
      assignment a = make_assignment(r, *pe_node, pe->engine, *de.first, de_engine.engine);
      set_path(a, path_for(*pe_node, *de.first));
      charge_reads(a, *pe_node, *de.first);
      out.push_back(a);
      waiting.pop_front();
    }
    return out;
  }

 protected:
  virtual read_path path_for(const node_snapshot& pe, const node_snapshot& de) { return shorter_read_q(pe, de); }

 private:
  struct cursor_map {
    std::vector<std::pair<uint32_t, size_t>> items;
    size_t& operator[](uint32_t node) {
      for (auto& [n, c] : items)
        if (n == node) return c;
      items.emplace_back(node, 0);
      return items.back().second;
    }
  } pe_cursor_;
  size_t de_cursor_ = 0;
};

// The ablation's "+dual path" step (docs/design.md §7.7): both read paths, but without DualPath's
// scheduling: engines in turn as a framework would pick them, and the paths simply alternate, blind to the
// read queues.
class alternate_policy final : public round_robin_policy {
 public:
  std::string_view name() const override { return "rr_alternate"; }

 protected:
  read_path path_for(const node_snapshot&, const node_snapshot&) override {
    next_de_ = !next_de_;
    return next_de_ ? read_path::pe : read_path::de;
  }

 private:
  bool next_de_ = false;
};

// The paper's Basic (docs/design.md §7.7): the unmodified framework's scheduling. Engines in turn as the
// framework picks them (PEs of the fetching group, DEs over the cluster, skipping only engines that cannot
// take work), and every hit block through the PE node's SNIC: no read queue, α or Z enters any choice.
class framework_policy final : public round_robin_policy {
 public:
  std::string_view name() const override { return "rr_pe"; }

 protected:
  read_path path_for(const node_snapshot&, const node_snapshot&) override { return read_path::pe; }
};

}  // namespace

const std::vector<std::string>& policy_names() { return scheduler_policy_names(); }

bool is_policy_name(std::string_view name) { return is_scheduler_policy(name); }

std::unique_ptr<policy> make_policy(std::string_view name) {
  // One factory per name of scheduler_policy_names() (core/modes.cpp), which the names test keeps in step.
  using factory = std::unique_ptr<policy> (*)();
  static const std::pair<std::string_view, factory> factories[] = {
      {"balanced", [] { return std::unique_ptr<policy>(new dualpath_policy()); }},
      {"balanced_pe", [] { return std::unique_ptr<policy>(new basic_policy()); }},
      {"rr_queue", [] { return std::unique_ptr<policy>(new round_robin_policy()); }},
      {"balanced_split", [] { return std::unique_ptr<policy>(new split_policy()); }},
      {"rr_alternate", [] { return std::unique_ptr<policy>(new alternate_policy()); }},
      {"rr_pe", [] { return std::unique_ptr<policy>(new framework_policy()); }},
      {"balanced_rq", make_queue_aware_policy},
  };
  for (const auto& [n, make] : factories)
    if (n == name) return make();
  throw user_error(unknown_scheduler_policy(name));
}

}  // namespace dualpath::schedule
