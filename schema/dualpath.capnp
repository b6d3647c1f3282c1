@0xc4f1d2a9b3e58a71;
# Messages that can cross a process boundary. KV bytes never travel here: only
# descriptors, statistics and decisions do.

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("dualpath::schema");

# One engine's load as its leader reports it to the scheduler (docs/design.md §7.1).
struct EngineStats {
  engine @0 :UInt32;      # global engine id
  node @1 :UInt32;        # node (group) the engine belongs to
  seqE @2 :UInt32;        # requests on the engine
  tokE @3 :UInt64;        # tokens the engine still has to process
  freeHbm @4 :UInt64;     # free KV bytes in the engine's HBM arena
}

# A node's storage NIC queue (docs/design.md §7.1).
struct NodeStats {
  node @0 :UInt32;
  readQ @1 :UInt64;       # bytes waiting on the node's SNIC
  engines @2 :List(EngineStats);
}
