#include "storage/layer_hash.hpp"

#include <xxhash.h>

namespace dualpath::storage {

#if defined(__x86_64__)
uint64_t layer_hash_avx2(const void* data, size_t bytes);  // layer_hash_avx2.cpp, built with -mavx2
#endif

uint64_t layer_hash(const void* data, size_t bytes) {
#if defined(__x86_64__)
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2) return layer_hash_avx2(data, bytes);
#endif
  return XXH3_64bits(data, bytes);
}

}  // namespace dualpath::storage
