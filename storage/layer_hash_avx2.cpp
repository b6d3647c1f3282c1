// xxh3 inlined into this file alone, which storage/CMakeLists.txt builds with -mavx2 (layer_hash.hpp says
// why). It includes nothing but xxhash.h, all of whose functions XXH_INLINE_ALL makes static here, so no
// AVX2 code can stand in for a shared inline function elsewhere; only layer_hash() calls it, where the CPU
// has AVX2.
#if defined(__x86_64__)
#include <stddef.h>
#include <stdint.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace dualpath::storage {

uint64_t layer_hash_avx2(const void* data, size_t bytes) { return XXH3_64bits(data, bytes); }

}  // namespace dualpath::storage
#endif
