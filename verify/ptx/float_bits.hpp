// Bit-level conversions between f32 and the narrow float formats PTX names (f16, bf16, the fp8 / fp6 /
// fp4 element types, ue8m0). f16 and bf16 round to nearest even exactly; the narrow formats round to
// nearest even with saturation to the largest finite value (the `.satfinite` PTX requires for them).
#pragma once

#include <bit>
#include <algorithm>
#include <cmath>
#include <vector>
#include <cstdint>

#include "verify/ptx/ast.hpp"

namespace pipesim::ptx {

inline uint16_t f32_to_f16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t absx = x & 0x7fffffffu;
  if (absx > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);   // NaN
  if (absx >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to infinity
  if (absx < 0x38800000u) {                                               // below 2^-14: subnormal
    const float v = std::bit_cast<float>(absx) * 16777216.0f;             // exact: a power-of-two scale
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(v)));
  }
  const uint32_t mant = absx & 0x7fffffu;
  const uint32_t exp = (absx >> 23) - 127 + 15;
  uint32_t h = (exp << 10) | (mant >> 13);
  const uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return static_cast<uint16_t>(sign | h);
}

inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0) {
    const float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  return std::bit_cast<float>(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

inline uint16_t f32_to_bf16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>(((x >> 16) & 0x8000u) | 0x7fc0u);
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}
inline float bf16_to_f32(uint16_t h) { return std::bit_cast<float>(static_cast<uint32_t>(h) << 16); }

// tf32: f32 with the low 13 mantissa bits cleared, rounded to nearest (ties away, as cvt.rna.tf32.f32).
inline uint32_t f32_to_tf32(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) >= 0x7f800000u) return x;
  return (x + 0x1000u) & 0xffffe000u;
}

// A narrow float format: sign bit (unless unsigned), `ebits` exponent bits, `mbits` mantissa bits.
struct MiniFormat {
  uint32_t ebits, mbits;
  int bias;
  bool has_sign;
  enum Special : uint8_t { Ieee, Fn, Finite, Exponent } special;
};
inline MiniFormat mini_format(Type t) {
  switch (t) {
    case Type::E4M3: case Type::E4M3x2: return {4, 3, 7, true, MiniFormat::Fn};
    case Type::E5M2: case Type::E5M2x2: return {5, 2, 15, true, MiniFormat::Ieee};
    case Type::E2M1x2: return {2, 1, 1, true, MiniFormat::Finite};
    case Type::E2M3x2: return {2, 3, 1, true, MiniFormat::Finite};
    case Type::E3M2x2: return {3, 2, 3, true, MiniFormat::Finite};
    case Type::UE8M0x2: return {8, 0, 127, false, MiniFormat::Exponent};
    default: return {4, 3, 7, true, MiniFormat::Fn};
  }
}

inline float mini_to_f32(uint32_t code, const MiniFormat& f) {
  const uint32_t mant = code & ((1u << f.mbits) - 1);
  const uint32_t exp = (code >> f.mbits) & ((1u << f.ebits) - 1);
  const bool neg = f.has_sign && ((code >> (f.ebits + f.mbits)) & 1u);
  const uint32_t emax = (1u << f.ebits) - 1;
  float v;
  if (f.special == MiniFormat::Exponent) {
    if (exp == emax) return std::nanf("");
    return std::ldexp(1.0f, static_cast<int>(exp) - f.bias);
  }
  if (f.special == MiniFormat::Ieee && exp == emax) {
    v = mant ? std::nanf("") : INFINITY;
  } else if (f.special == MiniFormat::Fn && exp == emax && mant == (1u << f.mbits) - 1) {
    v = std::nanf("");
  } else if (exp == 0) {
    v = std::ldexp(static_cast<float>(mant), 1 - f.bias - static_cast<int>(f.mbits));
  } else {
    v = std::ldexp(1.0f + std::ldexp(static_cast<float>(mant), -static_cast<int>(f.mbits)),
                   static_cast<int>(exp) - f.bias);
  }
  return neg ? -v : v;
}

// Round to nearest even, saturating to the largest finite magnitude; NaN to the format's NaN (0 where
// it has none).
inline uint32_t f32_to_mini(float x, const MiniFormat& f) {
  const uint32_t magnitude_bits = f.ebits + f.mbits;
  const uint32_t sign_bit = f.has_sign ? (1u << magnitude_bits) : 0u;
  if (std::isnan(x)) {
    if (f.special == MiniFormat::Finite) return 0;
    return f.special == MiniFormat::Exponent ? 0xffu : sign_bit | ((1u << magnitude_bits) - 1);
  }
  // The format's finite non-negative values rise with their codes: the nearest is one of the two
  // codes around |x| (a table per format, built once; the interpreter converts millions of values).
  struct Table { int key; std::vector<float> value; };
  static std::vector<Table> tables;
  const int key = (f.ebits << 12) | (f.mbits << 8) | (f.bias << 2) | static_cast<int>(f.special);
  const Table* t = nullptr;
  for (const Table& c : tables)
    if (c.key == key) t = &c;
  if (!t) {
    Table n{key, {}};
    for (uint32_t c = 0; c < (1u << magnitude_bits); ++c) {
      const float v = mini_to_f32(c, f);
      if (!std::isfinite(v)) break;
      n.value.push_back(v);
    }
    tables.push_back(std::move(n));
    t = &tables.back();
  }
  const bool neg = std::signbit(x) && f.has_sign;
  const float a = std::fabs(x);
  const auto hi = std::lower_bound(t->value.begin(), t->value.end(), a);
  uint32_t best;
  if (hi == t->value.end()) {
    best = static_cast<uint32_t>(t->value.size() - 1);  // saturate
  } else if (hi == t->value.begin()) {
    best = 0;
  } else {
    const uint32_t h = static_cast<uint32_t>(hi - t->value.begin()), l = h - 1;
    const float dl = a - t->value[l], dh = *hi - a;
    best = dl < dh ? l : dh < dl ? h : ((l & 1u) == 0 ? l : h);  // a tie goes to the even code
  }
  return (neg ? sign_bit : 0u) | best;
}

}  // namespace pipesim::ptx
