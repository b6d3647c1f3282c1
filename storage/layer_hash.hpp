#pragma once
// The checksum of one Layer Block in a block file (docs/design.md §9): xxh3, 64 bits. Every read checks
// every layer, so at the disk's rate this hash is most of a store's CPU time. The xxhash library as
// packaged is built for the baseline x86-64 (SSE2): 20 GB/s on a 1 MiB block from memory on an AMD EPYC
// where its AVX2 form, the same function, reaches 35. Where the CPU has AVX2 the AVX2 form runs; the
// value is the same on every CPU and either form.
#include <cstddef>
#include <cstdint>

namespace dualpath::storage {

uint64_t layer_hash(const void* data, size_t bytes);

}  // namespace dualpath::storage
