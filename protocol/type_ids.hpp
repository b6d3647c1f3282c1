#pragma once
// The project's single CAF type-ID block: every type that crosses a process boundary, and every actor
// handle sent inside a message. Register it on every actor system:
//   cfg.add_message_types<caf::id_block::dualpath>();
// or remote_actor fails with unexpected_actor_messaging_interface.
#include <caf/meta/type_name.hpp>
#include <caf/type_id.hpp>

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <kj/debug.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "protocol/atoms.hpp"
#include "protocol/handles.hpp"

namespace dualpath::schema {
// Cap'n Proto structs (generated from schema/*.capnp) that travel in envelopes.
struct Request;
struct GroupReport;
struct Fetch;
struct Assignments;
struct PolicyStatus;
struct SchedulerStats;
struct TurnPayload;
struct TurnTokens;
struct Handoff;
struct TurnResult;
struct LoadBlocks;
struct LoadResult;
struct Slots;
struct CopyBatch;
struct NodeSetup;
struct FabricDirectory;
struct NodeCounters;
}  // namespace dualpath::schema

namespace dualpath::protocol {

// A Cap'n Proto message of root type `Schema` as flat, unpacked words (capnp::messageToFlatArray).
// The type parameter only keeps typed actor interfaces honest; the bytes are the wire format.
template <class Schema>
struct envelope {
  std::vector<uint8_t> bytes;
};

template <class Inspector, class Schema>
typename Inspector::result_type inspect(Inspector& f, envelope<Schema>& x) {
  return f(caf::meta::type_name("envelope"), x.bytes);
}

// Serializes a built message into an envelope.
template <class Schema>
envelope<Schema> to_envelope(capnp::MessageBuilder& message) {
  const auto words = capnp::messageToFlatArray(message);
  const auto bytes = words.asBytes();
  return envelope<Schema>{std::vector<uint8_t>(bytes.begin(), bytes.end())};
}

// Reads an envelope (copies the bytes into aligned words first). Throws kj::Exception on garbage,
// which the receiving handler turns into an error reply.
template <class Schema>
class envelope_reader {
 public:
  explicit envelope_reader(const envelope<Schema>& e)
      : words_(kj::heapArray<capnp::word>((e.bytes.size() + sizeof(capnp::word) - 1) / sizeof(capnp::word))),
        reader_(copy(words_, e.bytes), limits(words_.size())) {}
  typename Schema::Reader root() { return reader_.getRoot<Schema>(); }

 private:
  static kj::ArrayPtr<const capnp::word> copy(kj::Array<capnp::word>& words, const std::vector<uint8_t>& bytes) {
    // A flat message is whole words (to_envelope). A partial last word would leave the tail of words_
    // uninitialised (heapArray does not clear) and the decode would read it: refuse such an envelope.
    KJ_REQUIRE(bytes.size() % sizeof(capnp::word) == 0, "envelope is not whole 8-byte words", bytes.size());
    if (!bytes.empty()) std::memcpy(words.begin(), bytes.data(), bytes.size());
    return words.asPtr();
  }
  // Reading is bounded by the envelope's own size (docs/design.md §16, "Fuzzing"). Cap'n Proto's default
  // traversal limit (8 Mi words) let an envelope of a few hundred bytes claim millions of zero-sized list
  // elements, each decoded into a struct: the fuzz replay found Assignments and CopyBatch envelopes that
  // took seconds and gigabytes each. Our decoders follow every pointer of a well-formed message once, so
  // twice its words plus slack (a test reading root() again) never refuses one.
  static capnp::ReaderOptions limits(size_t words) {
    capnp::ReaderOptions o;
    o.traversalLimitInWords = 2 * words + 256;
    return o;
  }
  kj::Array<capnp::word> words_;
  capnp::FlatArrayMessageReader reader_;
};

}  // namespace dualpath::protocol

CAF_BEGIN_TYPE_ID_BLOCK(dualpath, caf::first_custom_type_id)
CAF_ADD_TYPE_ID(dualpath, (dualpath::protocol::envelope<dualpath::schema::Request>))
CAF_ADD_TYPE_ID(dualpath, (dualpath::protocol::envelope<dualpath::schema::GroupReport>))
CAF_ADD_TYPE_ID(dualpath, (dualpath::protocol::envelope<dualpath::schema::Fetch>))
CAF_ADD_TYPE_ID(dualpath, (dualpath::protocol::envelope<dualpath::schema::Assignments>))
CAF_ADD_TYPE_ID(dualpath, (dualpath::protocol::envelope<dualpath::schema::PolicyStatus>))
CAF_ADD_TYPE_ID(dualpath, (dualpath::protocol::envelope<dualpath::schema::SchedulerStats>))
CAF_ADD_TYPE_ID(dualpath, (dualpath::protocol::envelope<dualpath::schema::TurnPayload>))
CAF_ADD_TYPE_ID(dualpath, (dualpath::protocol::envelope<dualpath::schema::Handoff>))
CAF_ADD_TYPE_ID(dualpath, (dualpath::protocol::envelope<dualpath::schema::TurnResult>))
CAF_ADD_TYPE_ID(dualpath, (dualpath::protocol::envelope<dualpath::schema::LoadBlocks>))
CAF_ADD_TYPE_ID(dualpath, (dualpath::protocol::envelope<dualpath::schema::LoadResult>))
CAF_ADD_TYPE_ID(dualpath, (dualpath::protocol::envelope<dualpath::schema::Slots>))
CAF_ADD_TYPE_ID(dualpath, (dualpath::protocol::envelope<dualpath::schema::CopyBatch>))
CAF_ADD_TYPE_ID(dualpath, (dualpath::protocol::envelope<dualpath::schema::NodeSetup>))
CAF_ADD_TYPE_ID(dualpath, (dualpath::protocol::envelope<dualpath::schema::FabricDirectory>))
CAF_ADD_TYPE_ID(dualpath, (dualpath::protocol::envelope<dualpath::schema::NodeCounters>))
CAF_ADD_TYPE_ID(dualpath, (dualpath::protocol::node_handles))
CAF_ADD_TYPE_ID(dualpath, (dualpath::protocol::cluster_handles))
// Request ids an engine's numbers count (engine -> leader, docs/design.md §7.1).
CAF_ADD_TYPE_ID(dualpath, (std::vector<uint64_t>))
CAF_ADD_TYPE_ID(dualpath, (dualpath::protocol::envelope<dualpath::schema::TurnTokens>))
CAF_END_TYPE_ID_BLOCK(dualpath)
