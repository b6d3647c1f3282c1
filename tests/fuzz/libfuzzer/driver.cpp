// libFuzzer entry point for every harness of tests/fuzz/harnesses.hpp; DUALPATH_FUZZ_TARGET names the one to
// run (scripts/fuzz.sh sets it). An exception escaping a harness reaches libFuzzer, which reports it as
// a crash: only the decoder's documented error is a refusal.
#include <cstdio>
#include <cstdlib>

#include "tests/fuzz/harnesses.hpp"

namespace {
dualpath::fuzz::harness_fn target = nullptr;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* name = std::getenv("DUALPATH_FUZZ_TARGET");
  const auto* h = name ? dualpath::fuzz::find_harness(name) : nullptr;
  if (!h) {
    std::fprintf(stderr, "DUALPATH_FUZZ_TARGET must name one of:");
    for (const auto& x : dualpath::fuzz::all_harnesses()) std::fprintf(stderr, " %s", x.name);
    std::fprintf(stderr, "\n");
    std::exit(2);
  }
  target = h->run;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  target(data, size);
  return 0;
}
