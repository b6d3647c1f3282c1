#pragma once
// The project's enums and their Cap'n Proto counterparts, converted in one place.
#include <utility>

#include "protocol/failure.hpp"
#include "runtime/node_io.hpp"
#include "schedule/policy.hpp"
#include "schema/runtime.capnp.h"
#include "schema/scheduler.capnp.h"
#include "transport/endpoint.hpp"

namespace dualpath::protocol {

// Both directions read one table; a value outside it (a corrupt message) maps to the first entry.
inline constexpr std::pair<schedule::read_path, schema::ReadPath> read_paths[] = {
    {schedule::read_path::pe, schema::ReadPath::PE},
    {schedule::read_path::de, schema::ReadPath::DE},
    {schedule::read_path::split, schema::ReadPath::SPLIT}};

inline schema::ReadPath to_schema(schedule::read_path p) {
  for (const auto& [ours, wire] : read_paths)
    if (ours == p) return wire;
  return read_paths[0].second;
}

inline schedule::read_path from_schema(schema::ReadPath p) {
  for (const auto& [ours, wire] : read_paths)
    if (wire == p) return ours;
  return read_paths[0].first;
}

inline schema::RegionKind to_schema(runtime::region_kind k) {
  return k == runtime::region_kind::buffer ? schema::RegionKind::BUFFER : schema::RegionKind::HBM;
}

inline runtime::region_kind from_schema(schema::RegionKind k) {
  return k == schema::RegionKind::BUFFER ? runtime::region_kind::buffer : runtime::region_kind::hbm;
}

inline schema::TrafficClass to_schema(transport::traffic_class c) {
  return c == transport::traffic_class::kv ? schema::TrafficClass::KV : schema::TrafficClass::MODEL;
}

inline transport::traffic_class from_schema(schema::TrafficClass c) {
  return c == schema::TrafficClass::KV ? transport::traffic_class::kv : transport::traffic_class::model;
}

inline constexpr std::pair<failure_kind, schema::Failure> failures[] = {
    {failure_kind::none, schema::Failure::NONE},
    {failure_kind::fatal, schema::Failure::FATAL},
    {failure_kind::transient, schema::Failure::TRANSIENT}};

// A value outside the table (a corrupt message) is fatal: never re-run on a guess.
inline schema::Failure to_schema(failure_kind k) {
  for (const auto& [ours, wire] : failures)
    if (ours == k) return wire;
  return schema::Failure::FATAL;
}

inline failure_kind from_schema(schema::Failure k) {
  for (const auto& [ours, wire] : failures)
    if (wire == k) return ours;
  return failure_kind::fatal;
}

}  // namespace dualpath::protocol
