// Cap'n Proto encodings of the start-up messages of a multi-process run.
#include "protocol/deployment_codec.hpp"
#include "schema/runtime.capnp.h"

namespace dualpath::actors {

envelope<schema::NodeSetup> encode_setup(const std::string& cluster_file, const std::string& policy) {
  capnp::MallocMessageBuilder m;
  auto b = m.initRoot<schema::NodeSetup>();
  b.setClusterFile(cluster_file);
  b.setPolicy(policy);
  return to_envelope<schema::NodeSetup>(m);
}

std::pair<std::string, std::string> decode(const envelope<schema::NodeSetup>& e) {
  envelope_reader<schema::NodeSetup> rd(e);
  auto r = rd.root();
  return {r.getClusterFile().cStr(), r.getPolicy().cStr()};
}

envelope<schema::FabricDirectory> encode(const std::vector<runtime::endpoint_entry>& entries) {
  capnp::MallocMessageBuilder m;
  auto list = m.initRoot<schema::FabricDirectory>().initEntries(uint32_t(entries.size()));
  auto put_region = [](schema::Region::Builder b, const transport::remote_region& r) {
    b.setAddr(r.addr);
    b.setKey(r.key);
    b.setLength(r.length);
  };
  for (uint32_t i = 0; i < entries.size(); ++i) {
    auto b = list[i];
    const auto& e = entries[i];
    b.setEngine(e.engine);
    b.setNode(e.node);
    b.setAddress(kj::arrayPtr(e.address.data(), e.address.size()));
    put_region(b.initBuffer(), e.buffer);
    put_region(b.initHbm(), e.hbm);
  }
  return to_envelope<schema::FabricDirectory>(m);
}

std::vector<runtime::endpoint_entry> decode(const envelope<schema::FabricDirectory>& e) {
  envelope_reader<schema::FabricDirectory> rd(e);
  auto get_region = [](schema::Region::Reader r) { return transport::remote_region{r.getAddr(), r.getKey(), r.getLength()}; };
  std::vector<runtime::endpoint_entry> out;
  for (auto r : rd.root().getEntries()) {
    runtime::endpoint_entry x;  // local base pointers stay null: they mean nothing in another process
    x.engine = r.getEngine();
    x.node = r.getNode();
    const auto address = r.getAddress();
    x.address.assign(address.begin(), address.end());
    x.buffer = get_region(r.getBuffer());
    x.hbm = get_region(r.getHbm());
    out.push_back(std::move(x));
  }
  return out;
}

envelope<schema::NodeCounters> encode(const node_counters& x) {
  capnp::MallocMessageBuilder m;
  auto b = m.initRoot<schema::NodeCounters>();
  b.setNode(x.node);
  b.setSnicBytes(x.snic_bytes);
  b.setPersistedBlocks(x.persisted_blocks);
  return to_envelope<schema::NodeCounters>(m);
}

node_counters decode(const envelope<schema::NodeCounters>& e) {
  envelope_reader<schema::NodeCounters> rd(e);
  auto r = rd.root();
  return {r.getNode(), r.getSnicBytes(), r.getPersistedBlocks()};
}

}  // namespace dualpath::actors
