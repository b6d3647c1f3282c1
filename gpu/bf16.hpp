#pragma once
// bf16 / fp16 <-> fp32 conversions (host side). bf16 is the KV storage and default weight format.
#include <cstdint>
#include <cstring>

namespace dualpath::gpu {

// A float's bits and back (std::bit_cast before C++20).
inline uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float float_of_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline uint16_t float_to_bf16(float f) {
  uint32_t u = bits_of(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);  // NaN stays NaN
  u += 0x7fffu + ((u >> 16) & 1u);                                         // round to nearest even
  return uint16_t(u >> 16);
}

inline float bf16_to_float(uint16_t h) { return float_of_bits(uint32_t(h) << 16); }

inline float round_bf16(float f) { return bf16_to_float(float_to_bf16(f)); }

inline float fp16_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu, u;
  if (exp == 0) {
    if (mant == 0) {
      u = sign;
    } else {  // subnormal: normalise
      exp = 127 - 15 + 1;
      while ((mant & 0x400u) == 0) {
        mant <<= 1;
        --exp;
      }
      u = sign | (exp << 23) | ((mant & 0x3ffu) << 13);
    }
  } else if (exp == 31) {
    u = sign | 0x7f800000u | (mant << 13);
  } else {
    u = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  return float_of_bits(u);
}

inline uint16_t float_to_fp16(float f) {
  const uint32_t u = bits_of(f);
  const uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  const int32_t exp = int32_t((u >> 23) & 0xffu) - 127 + 15;
  uint32_t mant = u & 0x7fffffu;
  if (((u >> 23) & 0xffu) == 0xffu) return uint16_t(sign | 0x7c00u | (mant ? 0x200u : 0));
  if (exp >= 31) return uint16_t(sign | 0x7c00u);  // overflow -> inf
  if (exp <= 0) {                                  // subnormal or zero
    if (exp < -10) return sign;
    mant |= 0x800000u;
    const uint32_t shift = uint32_t(14 - exp);
    uint32_t half = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1u))) ++half;
    return uint16_t(sign | half);
  }
  uint32_t half = (uint32_t(exp) << 10) | (mant >> 13);
  const uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;  // may carry into the exponent: correct
  return uint16_t(sign | half);
}

}  // namespace dualpath::gpu
