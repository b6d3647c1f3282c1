#pragma once
// Every atom of the project (CAF 0.17: atom text at most 10 characters). One list keeps names from
// colliding across components; add yours here.
#include <caf/atom.hpp>
#include <caf/type_id.hpp>

// Scheduler protocol (actors/scheduler.hpp) and its control port (actors/control.hpp).
CAF_ADD_ATOM(dualpath, dualpath::atom, submit, "submit")
CAF_ADD_ATOM(dualpath, dualpath::atom, report, "report")
CAF_ADD_ATOM(dualpath, dualpath::atom, fetch, "fetch")
CAF_ADD_ATOM(dualpath, dualpath::atom, policy, "policy")
CAF_ADD_ATOM(dualpath, dualpath::atom, set, "set")
CAF_ADD_ATOM(dualpath, dualpath::atom, get, "get")
CAF_ADD_ATOM(dualpath, dualpath::atom, stats, "stats")
CAF_ADD_ATOM(dualpath, dualpath::atom, scripted, "scripted")
