#pragma once
// Private to transport/: the libfabric objects behind endpoint and memory_region. Nothing outside this
// folder may include it (libfabric types stay inside the transport component).
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include <memory>
#include <string>

#include "transport/endpoint.hpp"

namespace dualpath::transport {

// "fi_xxx failed: <libfabric message>" for a negative libfabric return code.
std::string fabric_error(const char* what, ssize_t rc);

// Fabric and domain, shared by an endpoint and its memory regions so that a region closed after its
// endpoint still finds an open domain (closing a domain with live MRs fails).
struct fabric_core {
  fi_info* info = nullptr;
  fid_fabric* fabric = nullptr;
  fid_domain* domain = nullptr;
  ~fabric_core();
};

struct memory_region::impl {
  std::shared_ptr<fabric_core> core;
  uint64_t owner = 0;  // serial of the endpoint that registered it
  fid_mr* mr = nullptr;
  void* desc = nullptr;
  std::byte* base = nullptr;
  uint64_t length = 0;
  remote_region remote;
  ~impl();
};

}  // namespace dualpath::transport
