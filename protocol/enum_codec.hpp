#pragma once
// The project's enums and their Cap'n Proto counterparts, converted in one place.
#include "runtime/node_io.hpp"
#include "schedule/policy.hpp"
#include "schema/runtime.capnp.h"
#include "schema/scheduler.capnp.h"
#include "transport/endpoint.hpp"

namespace dualpath::actors {

inline schema::ReadPath to_schema(schedule::read_path p) {
  switch (p) {
    case schedule::read_path::pe: return schema::ReadPath::PE;
    case schedule::read_path::de: return schema::ReadPath::DE;
    case schedule::read_path::split: return schema::ReadPath::SPLIT;
  }
  return schema::ReadPath::PE;
}

inline schedule::read_path from_schema(schema::ReadPath p) {
  switch (p) {
    case schema::ReadPath::PE: return schedule::read_path::pe;
    case schema::ReadPath::DE: return schedule::read_path::de;
    case schema::ReadPath::SPLIT: return schedule::read_path::split;
  }
  return schedule::read_path::pe;
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

}  // namespace dualpath::actors
