// Cap'n Proto encodings of the start-up messages of a multi-process run.
#include "protocol/deployment_codec.hpp"

#include <algorithm>

#include "protocol/field_codec.hpp"
#include "schema/runtime.capnp.h"

namespace dualpath::protocol {

namespace {

struct region_fields {
  using T = transport::remote_region;
  using S = schema::Region;
  static inline const auto all = std::make_tuple(DP_FIELD(addr, Addr), DP_FIELD(key, Key), DP_FIELD(length, Length));
};

struct counter_fields {
  using T = node_counters;
  using S = schema::NodeCounters;
  static inline const auto all = std::make_tuple(
      DP_FIELD(node, Node), DP_FIELD(snic_bytes, SnicBytes), DP_FIELD(persisted_blocks, PersistedBlocks),
      DP_FIELD(store_read_bytes, StoreReadBytes), DP_FIELD(snic_write_bytes, SnicWriteBytes),
      DP_FIELD(persist_errors, PersistErrors), DP_FIELD(slots_free, SlotsFree), DP_FIELD(slots_total, SlotsTotal),
      DP_FIELD(prefill_busy_ns, PrefillBusyNs));
};

}  // namespace

envelope<schema::NodeSetup> encode_setup(const std::string& cluster_file, const std::string& policy) {
  return build_envelope<schema::NodeSetup>([&](schema::NodeSetup::Builder b) {
    b.setClusterFile(cluster_file);
    b.setPolicy(policy);
  });
}

std::pair<std::string, std::string> decode(const envelope<schema::NodeSetup>& e) {
  return read_envelope(e, [](schema::NodeSetup::Reader r) {
    return std::make_pair(std::string(r.getClusterFile().cStr()), std::string(r.getPolicy().cStr()));
  });
}

envelope<schema::FabricDirectory> encode(const std::vector<runtime::endpoint_entry>& entries) {
  return build_envelope<schema::FabricDirectory>([&](schema::FabricDirectory::Builder root) {
    auto list = root.initEntries(uint32_t(entries.size()));
    for (uint32_t i = 0; i < entries.size(); ++i) {
      auto b = list[i];
      const auto& e = entries[i];
      b.setEngine(e.engine);
      b.setNode(e.node);
      b.setAddress(kj::arrayPtr(e.address.data(), e.address.size()));
      write_fields(b.initBuffer(), e.buffer, region_fields::all);
      write_fields(b.initHbm(), e.hbm, region_fields::all);
    }
  });
}

std::vector<runtime::endpoint_entry> decode(const envelope<schema::FabricDirectory>& e) {
  return read_envelope(e, [](schema::FabricDirectory::Reader root) {
    std::vector<runtime::endpoint_entry> out;
    for (auto r : root.getEntries()) {
      runtime::endpoint_entry x;  // local base pointers stay null: they mean nothing in another process
      x.engine = r.getEngine();
      x.node = r.getNode();
      const auto address = r.getAddress();
      x.address.assign(address.begin(), address.end());
      read_fields(r.getBuffer(), x.buffer, region_fields::all);
      read_fields(r.getHbm(), x.hbm, region_fields::all);
      out.push_back(std::move(x));
    }
    return out;
  });
}

envelope<schema::NodeCounters> encode(const node_counters& x) {
  return build_envelope<schema::NodeCounters>([&](schema::NodeCounters::Builder b) {
    write_fields(b, x, counter_fields::all);
    const auto n = uint32_t(x.snic_samples.size());
    auto t = b.initSampleTimesNs(n);
    auto bytes = b.initSampleReadBytes(n);
    auto q = b.initSampleReadQ(n);
    for (uint32_t i = 0; i < n; ++i) {
      t.set(i, x.snic_samples[i].t_ns);
      bytes.set(i, x.snic_samples[i].read_bytes);
      q.set(i, x.snic_samples[i].read_q);
    }
    auto hbm = b.initHbmFreeBytes(uint32_t(x.hbm_free.size()));
    for (uint32_t i = 0; i < x.hbm_free.size(); ++i) hbm.set(i, x.hbm_free[i]);
  });
}

node_counters decode(const envelope<schema::NodeCounters>& e) {
  return read_envelope(e, [](schema::NodeCounters::Reader r) {
    node_counters x;
    read_fields(r, x, counter_fields::all);
    const auto t = r.getSampleTimesNs();
    const auto bytes = r.getSampleReadBytes();
    const auto q = r.getSampleReadQ();
    const uint32_t n = std::min({t.size(), bytes.size(), q.size()});
    for (uint32_t i = 0; i < n; ++i) x.snic_samples.push_back({t[i], bytes[i], q[i]});
    for (const uint64_t free : r.getHbmFreeBytes()) x.hbm_free.push_back(free);
    return x;
  });
}

}  // namespace dualpath::protocol
