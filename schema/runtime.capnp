@0xa7e83d4a7fdca0ef;
# Cluster runtime protocol (docs/design.md §3, §4): turn payloads, node data-plane commands and the PE -> DE
# hand-off. KV bytes never travel here; only block keys, buffer slots and region offsets do.

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("dualpath::schema");
using Scheduler = import "scheduler.capnp";

# Monotonic nanosecond timestamps of one turn's life (0 = not reached).
struct TurnTimes {
  submitted @0 :Int64;
  assigned @1 :Int64;
  kvReady @2 :Int64;      # hit KV in the DRAM buffer(s)
  prefillStart @3 :Int64;
  firstToken @4 :Int64;
  secondToken @5 :Int64;
  done @6 :Int64;         # the turn answered: its blocks are in storage
  lastToken @7 :Int64;    # the last token generated (before waiting for the write-back)
  handoff @8 :Int64;      # the decode engine received the hand-off
  inHbm @9 :Int64;        # ... and has the turn's KV in its HBM (the DE buffer's blocks loaded)
}

# The tokens of one turn, served by the agent client to the PE that was assigned the request.
struct TurnPayload {
  request @0 :UInt64;
  agent @1 :UInt32;
  turn @2 :UInt32;
  tokens @3 :List(Int32);   # the whole prompt
  gen @4 :UInt32;           # tokens to generate
  hitBlocks @5 :UInt32;     # leading Full Blocks the client found in the store
  times @6 :TurnTimes;
  stream @7 :Bool;          # send each token to the client as it is made (TurnTokens), not only at the end
  stopTokens @8 :List(Int32);  # the turn ends early after generating one of these (a served model's end ids)
  temperature @9 :Float32;  # 0: greedy; else tokens are drawn (gpu/sampling.hpp)
  topP @10 :Float32 = 1;
  seed @11 :UInt64;         # the draws depend on it and the token's position only
}

# PE or DE -> client, for a streamed turn: generated tokens [first, first + tokens) as they are made.
struct TurnTokens {
  request @0 :UInt64;
  first @1 :UInt32;
  tokens @2 :List(Int32);
  validHitBlocks @3 :UInt32;  # hit blocks the PE loaded intact: the answer's cached prompt tokens
}

# PE -> DE: the prompt is prefilled; its KV sits in the DE node's buffer slots (one per block).
struct Handoff {
  payload @0 :TurnPayload;
  firstToken @1 :Int32;
  deSlots @2 :List(UInt32);
  validHitBlocks @3 :UInt32;  # hit blocks that arrived intact (the rest was recomputed)
  path @4 :Scheduler.ReadPath;
  corruptBlocks @5 :UInt32;
  kvVerified @6 :UInt64;      # Layer Blocks checked on arrival (modeled backend)
  kvCorrupt @7 :UInt64;
}

# DE -> client: the turn finished (or failed with `error`).
# Why a turn failed (docs/design.md §13): a transient fault (a KV transfer's error completion) is re-run
# by its client, which looks the hits up again; any other failure is the turn's answer.
enum Failure {
  none @0;
  fatal @1;
  transient @2;
}

struct TurnResult {
  request @0 :UInt64;
  agent @1 :UInt32;
  turn @2 :UInt32;
  generated @3 :List(Int32);
  times @4 :TurnTimes;
  path @5 :Scheduler.ReadPath;
  validHitBlocks @6 :UInt32;
  corruptBlocks @7 :UInt32;
  kvVerified @8 :UInt64;
  kvCorrupt @9 :UInt64;
  error @10 :Text;
  promptTokens @11 :UInt32;
  failure @12 :Failure;
}

# Node data plane: read Full Blocks through the SNIC into buffer slots.
struct LoadBlocks {
  keys @0 :List(UInt64);
  request @1 :UInt64;  # the request the blocks are for, named in the leader's report (0: none)
}

struct LoadResult {
  slots @0 :List(UInt32);
  valid @1 :UInt32;
  bytes @2 :UInt64;
  reason @3 :Text;          # why the first bad block is bad ("" when all arrived)
  code @4 :UInt8;           # its dualpath::errc (0 = ok)
}

struct Slots {
  slots @0 :List(UInt32);
  count @1 :UInt32;         # reserve: how many are wanted
}

enum RegionKind {
  buffer @0;
  hbm @1;
}

struct CopyOp {
  via @0 :UInt32;           # engine whose CNIC initiates (on the node that executes the batch)
  srcKind @1 :RegionKind;
  srcOffset @2 :UInt64;
  dstEngine @3 :UInt32;
  dstKind @4 :RegionKind;
  dstOffset @5 :UInt64;
  length @6 :UInt64;
  srcEngine @7 :UInt32 = 0xffffffff;  # a pull: the engine whose region `via` reads (default: a push)
}

struct CopyBatch {
  ops @0 :List(CopyOp);
  trafficClass @1 :TrafficClass;
}

enum TrafficClass {
  model @0;                 # latency-critical model traffic (collectives, PD hand-off), served first
  kv @1;                    # bulk KV forwarding, in the gaps (docs/design.md §8)
}

# Multi-process runs (docs/design.md §13): what a launcher and the node processes it starts tell each other.

# The registry's answer to a joining node: the run it belongs to.
struct NodeSetup {
  clusterFile @0 :Text;     # the launcher's validated configuration, as a cluster file
  policy @1 :Text;          # run policy
}

# A registered memory region at one endpoint.
struct Region {
  addr @0 :UInt64;
  key @1 :UInt64;
  length @2 :UInt64;
}

# One engine's CNIC as every peer needs it: its fabric address and its two registered regions.
struct EndpointEntry {
  engine @0 :UInt32;
  node @1 :UInt32;
  address @2 :Data;
  buffer @3 :Region;        # the node's DRAM buffer as registered at this endpoint
  hbm @4 :Region;           # the engine's HBM arena
}

# Endpoints of one node (when it registers) or of the whole cluster (the registry's answer).
struct FabricDirectory {
  entries @0 :List(EndpointEntry);
}

# A node process's data-plane counters at the end of a run.
struct NodeCounters {
  node @0 :UInt32;
  snicBytes @1 :UInt64;
  persistedBlocks @2 :UInt64;
  storeReadBytes @3 :UInt64;     # bytes read from block files by the node
  snicWriteBytes @4 :UInt64;     # write-back through the node's SNIC
  sampleTimesNs @5 :List(Int64); # the SNIC's samples (steady clock), docs/design.md §15
  sampleReadBytes @6 :List(UInt64);
  sampleReadQ @7 :List(UInt64);
  persistErrors @8 :UInt64;      # write-backs that persisted nothing (ENOSPC, EROFS, EIO)
  slotsFree @9 :UInt32;          # DRAM buffer slots free now, and in all
  slotsTotal @10 :UInt32;
  hbmFreeBytes @11 :List(UInt64); # free KV bytes of each of the node's engines now, by local index
  prefillBusyNs @12 :UInt64;     # engine-time its prefill engines spent in passes so far (adaptive P/D)
}
