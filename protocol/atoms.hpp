#pragma once
// Every atom of the project (CAF 0.17: atom text at most 10 characters). One list keeps names from
// colliding across components; add yours here.
#include <caf/atom.hpp>
#include <caf/type_id.hpp>

// Scheduler protocol and its control port (protocol/interfaces.hpp).
CAF_ADD_ATOM(dualpath, dualpath::atom, submit, "submit")
CAF_ADD_ATOM(dualpath, dualpath::atom, report, "report")
CAF_ADD_ATOM(dualpath, dualpath::atom, fetch, "fetch")
CAF_ADD_ATOM(dualpath, dualpath::atom, policy, "policy")
CAF_ADD_ATOM(dualpath, dualpath::atom, set, "set")
CAF_ADD_ATOM(dualpath, dualpath::atom, get, "get")
CAF_ADD_ATOM(dualpath, dualpath::atom, stats, "stats")
CAF_ADD_ATOM(dualpath, dualpath::atom, scripted, "scripted")

// Cluster runtime: clients, leaders, engines, compute workers, traffic queues.
CAF_ADD_ATOM(dualpath, dualpath::atom, turn, "turn")
CAF_ADD_ATOM(dualpath, dualpath::atom, assign, "assign")
CAF_ADD_ATOM(dualpath, dualpath::atom, load, "load")
CAF_ADD_ATOM(dualpath, dualpath::atom, reserve, "reserve")
CAF_ADD_ATOM(dualpath, dualpath::atom, release, "release")
CAF_ADD_ATOM(dualpath, dualpath::atom, adopt, "adopt")
CAF_ADD_ATOM(dualpath, dualpath::atom, copy, "copy")
CAF_ADD_ATOM(dualpath, dualpath::atom, handoff, "handoff")
CAF_ADD_ATOM(dualpath, dualpath::atom, result, "result")
CAF_ADD_ATOM(dualpath, dualpath::atom, tick, "tick")
CAF_ADD_ATOM(dualpath, dualpath::atom, start, "start")
CAF_ADD_ATOM(dualpath, dualpath::atom, layer, "layer")
CAF_ADD_ATOM(dualpath, dualpath::atom, finish, "finish")
CAF_ADD_ATOM(dualpath, dualpath::atom, decode, "decode")
CAF_ADD_ATOM(dualpath, dualpath::atom, engine_st, "engine_st")
CAF_ADD_ATOM(dualpath, dualpath::atom, verify, "verify")
CAF_ADD_ATOM(dualpath, dualpath::atom, stop, "stop")
CAF_ADD_ATOM(dualpath, dualpath::atom, persisted, "persisted")
CAF_ADD_ATOM(dualpath, dualpath::atom, complete, "complete")

// Expert-parallel lockstep of a PE group (ep_group, docs/design.md §7.6).
CAF_ADD_ATOM(dualpath, dualpath::atom, leave, "leave")
CAF_ADD_ATOM(dualpath, dualpath::atom, idle, "idle")
CAF_ADD_ATOM(dualpath, dualpath::atom, expire, "expire")

// Multi-process runs: node processes joining the launcher's registry.
CAF_ADD_ATOM(dualpath, dualpath::atom, join, "join")
CAF_ADD_ATOM(dualpath, dualpath::atom, wire, "wire")
CAF_ADD_ATOM(dualpath, dualpath::atom, ready, "ready")

// Surviving a lost node (docs/design.md §13): the launcher tells the scheduler and the clients; heartbeat.
CAF_ADD_ATOM(dualpath, dualpath::atom, lost, "lost")
// A turn re-run after a transient fault (docs/design.md §13), as the client tells the launcher.
CAF_ADD_ATOM(dualpath, dualpath::atom, retry, "retry")
CAF_ADD_ATOM(dualpath, dualpath::atom, ping, "ping")
// A lost node's index joined again with a new process (docs/design.md §13).
CAF_ADD_ATOM(dualpath, dualpath::atom, rejoin, "rejoin")
// Adaptive P/D in the runtime (docs/design.md §7.9): a node leaves the view to change role; what it holds.
CAF_ADD_ATOM(dualpath, dualpath::atom, drain, "drain")
CAF_ADD_ATOM(dualpath, dualpath::atom, held, "held")
CAF_ADD_ATOM(dualpath, dualpath::atom, role, "role")
// The serving front end asks one of its clients to run a conversation's turn (docs/design.md §18).
CAF_ADD_ATOM(dualpath, dualpath::atom, ask, "ask")
// A streamed turn's tokens as they are made, and a turn its front end gave up on (docs/design.md §18).
CAF_ADD_ATOM(dualpath, dualpath::atom, tokens, "tokens")
CAF_ADD_ATOM(dualpath, dualpath::atom, cancel, "cancel")
// A node's buffers now (free slots and HBM), which a server samples for its /metrics.
CAF_ADD_ATOM(dualpath, dualpath::atom, buffers, "buffers")
