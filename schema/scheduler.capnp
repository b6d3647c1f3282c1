@0xf0271d0e3528a37f;
# Scheduler protocol (docs/design.md §7, issue 6): clients submit requests, leaders report their group's
# load and fetch work, the control CLI switches the policy.

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("dualpath::schema");

using import "dualpath.capnp".NodeStats;

enum Role {
  prefill @0;
  decode @1;
}

enum ReadPath {
  pe @0;      # all hit blocks through the PE node's SNIC
  de @1;      # all hit blocks through the DE node's SNIC, forwarded to the PE over the CNICs
  split @2;   # blocks [0, peBlocks) through the PE node, the rest through the DE node
}

# One turn of one agent, as a client submits it.
struct Request {
  id @0 :UInt64;
  hitTokens @1 :UInt64;     # context whose KV is in storage
  appendTokens @2 :UInt64;  # tokens to prefill this turn
  hitBytes @3 :UInt64;      # hit KV bytes to read from storage
  len @4 :UInt64;           # total tokens the DE will hold
  kvBytes @5 :UInt64;       # HBM the request needs on its DE
  hitBlocks @6 :UInt32;     # Full Blocks of hit KV
}

# A leader's report: its group's engines and its node's read queue, and which requests those numbers count
# (docs/design.md §7.1), so the scheduler keeps charging the ones they do not count yet.
struct GroupReport {
  role @0 :Role;
  stats @1 :NodeStats;
  acked @2 :List(List(UInt64));  # per engine, in stats.engines order: requests it counts (or counted since the last report)
  readAcked @3 :List(UInt64);    # requests whose reads readQ counts (or counted since the last report)
}

# A PE leader asks for work for the engines of its group (node).
struct Fetch {
  node @0 :UInt32;
}

struct Assignment {
  request @0 :Request;
  pe @1 :UInt32;
  peNode @2 :UInt32;
  de @3 :UInt32;
  deNode @4 :UInt32;
  path @5 :ReadPath;
  peBlocks @6 :UInt32;      # see ReadPath.split
}

struct Assignments {
  items @0 :List(Assignment);
}

# Answer to `policy get` / `policy set`.
struct PolicyStatus {
  ok @0 :Bool;              # false: the set was refused and the running policy stays
  active @1 :Text;          # the policy in force after the call
  known @2 :List(Text);     # every policy name the scheduler accepts
  message @3 :Text;         # why a set was refused
}

# Answer to `stats`.
struct SchedulerStats {
  policy @0 :Text;
  waiting @1 :UInt64;       # requests in the global queue
  submitted @2 :UInt64;
  assigned @3 :UInt64;
  fetches @4 :UInt64;
  switches @5 :UInt32;      # policy changes applied so far
  prefillEngines @6 :UInt32;
  decodeEngines @7 :UInt32;
  assignedPe @8 :UInt64;    # requests per read path, since start
  assignedDe @9 :UInt64;
  assignedSplit @10 :UInt64;
  pendingCharges @11 :UInt64;  # charges of the fresh view no report acknowledges yet (docs/design.md §7.1)
  expiredCharges @12 :UInt64;  # charges dropped unacknowledged after the bound, since start
  refusedCommands @13 :UInt64;  # control port: commands refused for a wrong secret (docs/design.md §13)
  nodes @14 :List(NodeLoad);    # the scheduler's view of each node, sorted by node id
}

# One node as the scheduler sees it (docs/design.md §7.1, §13): its engines' load and read queue as last
# reported (with the fresh view's charges), and the turns in flight with their PE or DE there.
struct NodeLoad {
  role @0 :Role;
  stats @1 :NodeStats;
  inFlight @2 :UInt32;
}
