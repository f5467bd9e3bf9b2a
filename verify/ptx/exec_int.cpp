// Integer arithmetic and bit operations: exact for every type each instruction takes (wrap-around,
// .sat, .cc carries, shifts past the width, the ISA's bfe / bfi / prmt / lop3 / shf definitions).
// Handlers are templates over the C++ type of the PTX type, picked once at decode time.
#include <algorithm>
#include <bit>
#include <limits>
#include <type_traits>

#include "verify/ptx/machine_impl.hpp"

namespace pipesim::ptx {
namespace {

__extension__ typedef __int128 i128;
__extension__ typedef unsigned __int128 u128;

template <class T> using U = std::make_unsigned_t<T>;
template <class T> uint64_t bits(T v) { return static_cast<uint64_t>(static_cast<U<T>>(v)); }
template <class T> constexpr uint32_t width() { return sizeof(T) * 8; }

// ---- Handlers: d = F(a, b) / F(a, b, c) / F(a) ---------------------------------------------------
template <class T, class F>
void int_unary(Exec& x, const DInstr& in) {
  const auto a = x.src(in.ops[1], 0);
  map1(x.mask, x.dst(in.ops[0]), a, [](uint64_t va) { return F::template apply<T>(static_cast<T>(va)); });
}
template <class T, class F>
void int_binary(Exec& x, const DInstr& in) {
  const auto a = x.src(in.ops[1], 0), b = x.src(in.ops[2], 1);
  map2(x.mask, x.dst(in.ops[0]), a, b,
       [](uint64_t va, uint64_t vb) { return F::template apply<T>(static_cast<T>(va), static_cast<T>(vb)); });
}
template <class T, class F>
void int_ternary(Exec& x, const DInstr& in) {
  const auto a = x.src(in.ops[1], 0), b = x.src(in.ops[2], 1), c = x.src(in.ops[3], 2);
  map3(x.mask, x.dst(in.ops[0]), a, b, c, [](uint64_t va, uint64_t vb, uint64_t vc) {
    return F::template apply<T>(static_cast<T>(va), static_cast<T>(vb), static_cast<T>(vc));
  });
}

struct AddF { template <class T> static uint64_t apply(T a, T b) { return bits<T>(static_cast<T>(uint64_t(a) + uint64_t(b))); } };
struct SubF { template <class T> static uint64_t apply(T a, T b) { return bits<T>(static_cast<T>(uint64_t(a) - uint64_t(b))); } };
struct AddSatF {  // add.sat.s32
  template <class T> static uint64_t apply(T a, T b) {
    const int64_t r = int64_t{a} + int64_t{b};
    return bits<int32_t>(static_cast<int32_t>(std::clamp<int64_t>(r, INT32_MIN, INT32_MAX)));
  }
};
struct SubSatF {
  template <class T> static uint64_t apply(T a, T b) {
    const int64_t r = int64_t{a} - int64_t{b};
    return bits<int32_t>(static_cast<int32_t>(std::clamp<int64_t>(r, INT32_MIN, INT32_MAX)));
  }
};
struct MulLoF { template <class T> static uint64_t apply(T a, T b) { return bits<T>(static_cast<T>(uint64_t(a) * uint64_t(b))); } };
struct MulHiF {
  template <class T> static uint64_t apply(T a, T b) {
    if constexpr (sizeof(T) == 8) {
      if constexpr (std::is_signed_v<T>) return bits<T>(static_cast<T>((i128{a} * i128{b}) >> 64));
      else return bits<T>(static_cast<T>((u128{a} * u128{b}) >> 64));
    } else {
      if constexpr (std::is_signed_v<T>) return bits<T>(static_cast<T>((int64_t{a} * int64_t{b}) >> width<T>()));
      else return bits<T>(static_cast<T>((uint64_t{a} * uint64_t{b}) >> width<T>()));
    }
  }
};
struct MulWideF {  // result twice the width of T, sign- or zero-extended sources
  template <class T> static uint64_t apply(T a, T b) {
    if constexpr (std::is_signed_v<T>) {
      const int64_t r = int64_t{a} * int64_t{b};
      return sizeof(T) == 4 ? static_cast<uint64_t>(r) : static_cast<uint64_t>(r) & 0xffffffffu;
    } else {
      return uint64_t{a} * uint64_t{b};
    }
  }
};
struct MadLoF {
  template <class T> static uint64_t apply(T a, T b, T c) { return bits<T>(static_cast<T>(uint64_t(a) * uint64_t(b) + uint64_t(c))); }
};
struct MadHiF {
  template <class T> static uint64_t apply(T a, T b, T c) {
    return bits<T>(static_cast<T>(MulHiF::apply<T>(a, b) + uint64_t(c)));
  }
};
struct MadHiSatF {  // mad.hi.sat.s32: the high half plus c, saturated
  template <class T> static uint64_t apply(T a, T b, T c) {
    const int64_t hi = (int64_t{a} * int64_t{b}) >> 32;
    return bits<int32_t>(static_cast<int32_t>(std::clamp<int64_t>(hi + int64_t{c}, INT32_MIN, INT32_MAX)));
  }
};
// mul24 / mad24: the low 24 bits of each source (sign-extended for .s32), a 48-bit product.
template <class T> int64_t low24(T v) {
  const uint64_t u = static_cast<uint32_t>(v) & 0xffffffu;
  return std::is_signed_v<T> ? static_cast<int64_t>(sext(u, 24)) : static_cast<int64_t>(u);
}
struct Mul24LoF { template <class T> static uint64_t apply(T a, T b) { return static_cast<uint32_t>(low24(a) * low24(b)); } };
struct Mul24HiF { template <class T> static uint64_t apply(T a, T b) { return static_cast<uint32_t>((low24(a) * low24(b)) >> 16); } };
struct Mad24LoF {
  template <class T> static uint64_t apply(T a, T b, T c) { return static_cast<uint32_t>(low24(a) * low24(b) + int64_t{c}); }
};
struct Mad24HiF {
  template <class T> static uint64_t apply(T a, T b, T c) { return static_cast<uint32_t>(((low24(a) * low24(b)) >> 16) + int64_t{c}); }
};
struct DivF {
  template <class T> static uint64_t apply(T a, T b) {
    if (b == 0) return bits<T>(static_cast<T>(~U<T>{0}));  // all ones, as the hardware gives
    if constexpr (std::is_signed_v<T>)
      if (a == std::numeric_limits<T>::min() && b == T(-1)) return bits<T>(a);
    return bits<T>(static_cast<T>(a / b));
  }
};
struct RemF {
  template <class T> static uint64_t apply(T a, T b) {
    if (b == 0) return bits<T>(a);
    if constexpr (std::is_signed_v<T>)
      if (b == T(-1)) return 0;
    return bits<T>(static_cast<T>(a % b));
  }
};
struct AbsF {
  template <class T> static uint64_t apply(T a) {
    if constexpr (std::is_signed_v<T>) return bits<T>(a < 0 ? static_cast<T>(uint64_t{0} - uint64_t(a)) : a);
    else return bits<T>(a);
  }
};
struct NegF { template <class T> static uint64_t apply(T a) { return bits<T>(static_cast<T>(uint64_t{0} - uint64_t(a))); } };
struct MinF { template <class T> static uint64_t apply(T a, T b) { return bits<T>(a < b ? a : b); } };
struct MaxF { template <class T> static uint64_t apply(T a, T b) { return bits<T>(a > b ? a : b); } };
template <class T> T relu(T r) {
  if constexpr (std::is_signed_v<T>) return r < 0 ? T(0) : r;
  else return r;
}
struct MinReluF { template <class T> static uint64_t apply(T a, T b) { return bits<T>(relu(a < b ? a : b)); } };
struct MaxReluF { template <class T> static uint64_t apply(T a, T b) { return bits<T>(relu(a > b ? a : b)); } };
struct SadF {
  template <class T> static uint64_t apply(T a, T b, T c) {
    const uint64_t diff = a < b ? uint64_t(b) - uint64_t(a) : uint64_t(a) - uint64_t(b);
    return bits<T>(static_cast<T>(diff + uint64_t(c)));
  }
};
struct AndF { template <class T> static uint64_t apply(T a, T b) { return bits<T>(static_cast<T>(a & b)); } };
struct OrF { template <class T> static uint64_t apply(T a, T b) { return bits<T>(static_cast<T>(a | b)); } };
struct XorF { template <class T> static uint64_t apply(T a, T b) { return bits<T>(static_cast<T>(a ^ b)); } };
struct NotF { template <class T> static uint64_t apply(T a) { return bits<T>(static_cast<T>(~a)); } };
struct CnotF { template <class T> static uint64_t apply(T a) { return a == 0 ? 1 : 0; } };
struct PopcF { template <class T> static uint64_t apply(T a) { return static_cast<uint64_t>(std::popcount(static_cast<U<T>>(a))); } };
struct ClzF { template <class T> static uint64_t apply(T a) { return static_cast<uint64_t>(std::countl_zero(static_cast<U<T>>(a))); } };
struct BrevF {
  template <class T> static uint64_t apply(T a) {
    U<T> v = static_cast<U<T>>(a), r = 0;
    for (uint32_t i = 0; i < width<T>(); ++i) r = static_cast<U<T>>(r | (((v >> i) & 1u) << (width<T>() - 1 - i)));
    return bits<T>(static_cast<T>(r));
  }
};
template <bool ShiftAmt>
struct BfindF {  // position of the most significant non-sign bit; 0xffffffff when there is none
  template <class T> static uint64_t apply(T a) {
    U<T> v = static_cast<U<T>>(a);
    if constexpr (std::is_signed_v<T>)
      if (a < 0) v = static_cast<U<T>>(~v);
    if (v == 0) return 0xffffffffu;
    const uint32_t pos = width<T>() - 1 - static_cast<uint32_t>(std::countl_zero(v));
    return ShiftAmt ? width<T>() - 1 - pos : pos;
  }
};
// Shifts: the amount is an unsigned 32-bit value; amounts past the width give 0 (or the sign).
template <class T>
void int_shl(Exec& x, const DInstr& in) {
  const auto a = x.src(in.ops[1], 0), b = x.src(in.ops[2], 1);
  uint64_t* d = x.dst(in.ops[0]);
  map2(x.mask, d, a, b, [](uint64_t av, uint64_t bv) -> uint64_t {
    const uint32_t n = static_cast<uint32_t>(bv);
    return n >= width<T>() ? 0 : bits<T>(static_cast<T>(static_cast<U<T>>(av) << n));
  });
}
template <class T>
void int_shr(Exec& x, const DInstr& in) {
  const auto a = x.src(in.ops[1], 0), b = x.src(in.ops[2], 1);
  uint64_t* d = x.dst(in.ops[0]);
  for_lanes(x.mask, [&](uint32_t l) {
    const uint32_t n = static_cast<uint32_t>(b[l]);
    const T v = static_cast<T>(a[l]);
    if constexpr (std::is_signed_v<T>) {
      d[l] = bits<T>(static_cast<T>(v >> std::min<uint32_t>(n, width<T>() - 1)));
    } else {
      d[l] = n >= width<T>() ? 0 : bits<T>(static_cast<T>(v >> n));
    }
  });
}
// bfe d, a, pos, len (pos and len: the low 8 bits of u32 operands).
template <class T>
void int_bfe(Exec& x, const DInstr& in) {
  const auto a = x.src(in.ops[1], 0), b = x.src(in.ops[2], 1), c = x.src(in.ops[3], 2);
  uint64_t* d = x.dst(in.ops[0]);
  constexpr uint32_t msb = width<T>() - 1;
  for_lanes(x.mask, [&](uint32_t l) {
    const uint64_t v = a[l];
    const uint32_t pos = static_cast<uint32_t>(b[l]) & 0xffu, len = static_cast<uint32_t>(c[l]) & 0xffu;
    uint64_t sbit = 0;
    if (std::is_signed_v<T> && len != 0) sbit = (v >> std::min(pos + len - 1, msb)) & 1u;
    uint64_t r = 0;
    for (uint32_t i = 0; i <= msb; ++i) {
      const uint64_t bit = (i < len && pos + i <= msb) ? (v >> (pos + i)) & 1u : sbit;
      r |= bit << i;
    }
    d[l] = r & width_mask(width<T>());
  });
}
// bfi d, f, b, pos, len: b with f's low len bits inserted at pos.
template <class T>
void int_bfi(Exec& x, const DInstr& in) {
  const auto f = x.src(in.ops[1], 0), b = x.src(in.ops[2], 1), c = x.src(in.ops[3], 2), e = x.src(in.ops[4], 3);
  uint64_t* d = x.dst(in.ops[0]);
  constexpr uint32_t msb = width<T>() - 1;
  for_lanes(x.mask, [&](uint32_t l) {
    const uint32_t pos = static_cast<uint32_t>(c[l]) & 0xffu, len = static_cast<uint32_t>(e[l]) & 0xffu;
    uint64_t r = b[l] & width_mask(width<T>());
    for (uint32_t i = 0; i < len && pos + i <= msb; ++i)
      r = (r & ~(uint64_t{1} << (pos + i))) | (((f[l] >> i) & 1u) << (pos + i));
    d[l] = r;
  });
}

// prmt: byte selection from {b, a} (bytes 0-3 of a, 4-7 of b); the default mode takes a 4-bit selector
// per result byte (bit 3: replicate the byte's sign); the named modes use c[1:0] and this table.
constexpr uint8_t kPrmtModes[6][4][4] = {
    // d.b0 .. d.b3 source byte for c[1:0] = 0..3
    {{0, 1, 2, 3}, {1, 2, 3, 4}, {2, 3, 4, 5}, {3, 4, 5, 6}},  // f4e
    {{0, 7, 6, 5}, {1, 0, 7, 6}, {2, 1, 0, 7}, {3, 2, 1, 0}},  // b4e
    {{0, 0, 0, 0}, {1, 1, 1, 1}, {2, 2, 2, 2}, {3, 3, 3, 3}},  // rc8
    {{0, 1, 2, 3}, {1, 1, 2, 3}, {2, 2, 2, 3}, {3, 3, 3, 3}},  // ecl
    {{0, 0, 0, 0}, {0, 1, 1, 1}, {0, 1, 2, 2}, {0, 1, 2, 3}},  // ecr
    {{0, 1, 0, 1}, {2, 3, 2, 3}, {0, 1, 0, 1}, {2, 3, 2, 3}},  // rc16
};
void exec_prmt(Exec& x, const DInstr& in) {
  const auto a = x.src(in.ops[1], 0), b = x.src(in.ops[2], 1), c = x.src(in.ops[3], 2);
  uint64_t* d = x.dst(in.ops[0]);
  const uint8_t mode = in.sub;  // 0 default, 1.. = table row + 1
  for_lanes(x.mask, [&](uint32_t l) {
    const uint64_t src = (a[l] & 0xffffffffu) | ((b[l] & 0xffffffffu) << 32);
    const uint32_t sel = static_cast<uint32_t>(c[l]);
    uint32_t r = 0;
    for (uint32_t i = 0; i < 4; ++i) {
      uint32_t byte;
      if (mode == 0) {
        const uint32_t s = (sel >> (4 * i)) & 0xfu;
        byte = static_cast<uint32_t>(src >> (8 * (s & 7u))) & 0xffu;
        if (s & 8u) byte = (byte & 0x80u) ? 0xffu : 0u;
      } else {
        byte = static_cast<uint32_t>(src >> (8 * kPrmtModes[mode - 1][sel & 3u][i])) & 0xffu;
      }
      r |= byte << (8 * i);
    }
    d[l] = r;
  });
}
void exec_lop3(Exec& x, const DInstr& in) {
  const auto a = x.src(in.ops[1], 0), b = x.src(in.ops[2], 1), c = x.src(in.ops[3], 2), lut = x.src(in.ops[4], 3);
  uint64_t* d = x.dst(in.ops[0]);
  for_lanes(x.mask, [&](uint32_t l) {
    const uint32_t A = static_cast<uint32_t>(a[l]), B = static_cast<uint32_t>(b[l]), C = static_cast<uint32_t>(c[l]);
    const uint32_t t = static_cast<uint32_t>(lut[l]) & 0xffu;
    uint32_t r = 0;
    for (uint32_t i = 0; i < 8; ++i)
      if ((t >> i) & 1u) r |= ((i & 4u) ? A : ~A) & ((i & 2u) ? B : ~B) & ((i & 1u) ? C : ~C);
    d[l] = r;
  });
}
// shf.{l,r}.{wrap,clamp}: a funnel shift of the 64-bit {b, a}.
void exec_shf(Exec& x, const DInstr& in) {
  const auto a = x.src(in.ops[1], 0), b = x.src(in.ops[2], 1), c = x.src(in.ops[3], 2);
  uint64_t* d = x.dst(in.ops[0]);
  const bool left = in.flags & F_LEFT, clamp = in.flags & F_CLAMP, arith = in.type == Type::S32;
  for_lanes(x.mask, [&](uint32_t l) {
    const uint32_t raw = static_cast<uint32_t>(c[l]);
    const uint32_t n = clamp ? std::min<uint32_t>(raw, 32) : (raw & 31u);
    const uint64_t v = (a[l] & 0xffffffffu) | (b[l] << 32);
    if (left) {
      d[l] = static_cast<uint32_t>((v << n) >> 32);
    } else if (arith) {
      d[l] = static_cast<uint32_t>(static_cast<uint64_t>(static_cast<int64_t>(v) >> n));
    } else {
      d[l] = static_cast<uint32_t>(v >> n);
    }
  });
}
// dp4a.atype.btype d, a, b, c / dp2a.{lo,hi}.atype.btype: integer dot products accumulated into c.
// c plus N products of a's ABits-wide fields with b's bytes from byte `b_first` on (dp2a.hi: byte 2).
template <uint32_t N, uint32_t ABits>
void dot_accumulate(Exec& x, const DInstr& in, uint32_t b_first) {
  const auto a = x.src(in.ops[1], 0), b = x.src(in.ops[2], 1), c = x.src(in.ops[3], 2);
  uint64_t* d = x.dst(in.ops[0]);
  const bool as = is_signed(in.type), bs = is_signed(in.type2);
  for_lanes(x.mask, [&](uint32_t l) {
    int64_t sum = static_cast<int32_t>(c[l]);
    for (uint32_t i = 0; i < N; ++i) {
      const uint64_t af = (a[l] >> (ABits * i)) & width_mask(ABits), bb = (b[l] >> (8 * (i + b_first))) & 0xffu;
      const int64_t av = as ? static_cast<int64_t>(sext(af, ABits)) : static_cast<int64_t>(af);
      const int64_t bv = bs ? static_cast<int64_t>(sext(bb, 8)) : static_cast<int64_t>(bb);
      sum += av * bv;
    }
    d[l] = static_cast<uint32_t>(sum);
  });
}
void exec_dp4a(Exec& x, const DInstr& in) { dot_accumulate<4, 8>(x, in, 0); }
void exec_dp2a(Exec& x, const DInstr& in) { dot_accumulate<2, 16>(x, in, (in.flags & F_HI) ? 2 : 0); }
void exec_fns(Exec& x, const DInstr& in) {
  const auto mask = x.src(in.ops[1], 0), base = x.src(in.ops[2], 1), offset = x.src(in.ops[3], 2);
  uint64_t* d = x.dst(in.ops[0]);
  for_lanes(x.mask, [&](uint32_t l) {
    const uint32_t m = static_cast<uint32_t>(mask[l]);
    const int32_t b = static_cast<int32_t>(static_cast<uint32_t>(base[l]) & 31u);
    const int32_t off = static_cast<int32_t>(offset[l]);
    uint32_t r = 0xffffffffu;
    if (off == 0) {
      if ((m >> b) & 1u) r = static_cast<uint32_t>(b);
    } else {
      int64_t count = (off > 0 ? int64_t{off} : -int64_t{off}) - 1;
      const int32_t inc = off > 0 ? 1 : -1;
      for (int32_t pos = b; pos >= 0 && pos < 32; pos += inc) {
        if ((m >> pos) & 1u) {
          if (count == 0) {
            r = static_cast<uint32_t>(pos);
            break;
          }
          --count;
        }
      }
    }
    d[l] = r;
  });
}

// .cc forms: add.cc / addc(.cc) / sub.cc / subc(.cc) / mad.lo.cc / madc: the carry flag per lane.
// Subtraction carries a borrow: sub.cc sets it when a < b, subc takes it away (a - b - borrow).
template <class T, bool Sub>
void int_carry(Exec& x, const DInstr& in) {
  using V = U<T>;
  const auto a = x.src(in.ops[1], 0), b = x.src(in.ops[2], 1);
  uint64_t* d = x.dst(in.ops[0]);
  const bool use_in = in.op == Op::AddC || in.op == Op::SubC, set = in.flags & F_CC;
  uint32_t carry = x.carry;
  for_lanes(x.mask, [&](uint32_t l) {
    const V va = static_cast<V>(a[l]), vb = static_cast<V>(b[l]);
    const V cin = use_in ? static_cast<V>((carry >> l) & 1u) : V{0};
    V r;
    bool cout;
    if (Sub) {
      r = static_cast<V>(va - vb - cin);
      cout = va < vb || (cin && va == vb);
    } else {
      r = static_cast<V>(va + vb + cin);
      cout = r < va || (cin && r == va);
    }
    d[l] = static_cast<uint64_t>(r);
    if (set) carry = (carry & ~(1u << l)) | (uint32_t{cout} << l);
  });
  x.carry = carry;
}
template <class T>
void int_mad_carry(Exec& x, const DInstr& in) {  // mad{c}.{lo,hi}{.cc}
  using V = U<T>;
  const auto a = x.src(in.ops[1], 0), b = x.src(in.ops[2], 1), c = x.src(in.ops[3], 2);
  uint64_t* d = x.dst(in.ops[0]);
  const bool use_in = in.op == Op::MadC, set = in.flags & F_CC, hi = in.flags & F_HI;
  uint32_t carry = x.carry;
  for_lanes(x.mask, [&](uint32_t l) {
    const T ta = static_cast<T>(a[l]), tb = static_cast<T>(b[l]);
    const V prod = static_cast<V>(hi ? MulHiF::apply<T>(ta, tb) : MulLoF::apply<T>(ta, tb));
    const V vc = static_cast<V>(c[l]);
    const V cin = use_in ? static_cast<V>((carry >> l) & 1u) : V{0};
    const V r = static_cast<V>(prod + vc + cin);
    const bool cout = r < prod || (cin && r == prod);
    d[l] = static_cast<uint64_t>(r);
    if (set) carry = (carry & ~(1u << l)) | (uint32_t{cout} << l);
  });
  x.carry = carry;
}

// Predicate logic: and/or/xor/not on .pred.
template <int K>
void pred_logic(Exec& x, const DInstr& in) {
  const uint32_t a = x.pred_src(in.ops[1]);
  const uint32_t b = K == 3 ? 0 : x.pred_src(in.ops[2]);
  const uint32_t r = K == 0 ? (a & b) : K == 1 ? (a | b) : K == 2 ? (a ^ b) : ~a;
  x.set_pred(in.ops[0], r, x.mask);
}
void pred_cnot(Exec& x, const DInstr& in) { x.set_pred(in.ops[0], ~x.pred_src(in.ops[1]), x.mask); }

// ---- Type dispatch --------------------------------------------------------------------------------
#define PIPESIM_INT_SWITCH(EXPR_T)                                         \
  switch (t) {                                                             \
    case Type::U16: case Type::B16: { using T = uint16_t; return EXPR_T; } \
    case Type::S16: { using T = int16_t; return EXPR_T; }                  \
    case Type::U32: case Type::B32: { using T = uint32_t; return EXPR_T; } \
    case Type::S32: { using T = int32_t; return EXPR_T; }                  \
    case Type::U64: case Type::B64: { using T = uint64_t; return EXPR_T; } \
    case Type::S64: { using T = int64_t; return EXPR_T; }                  \
    default: return nullptr;                                               \
  }

template <class F> ExecFn pick_unary(Type t) { PIPESIM_INT_SWITCH((&int_unary<T, F>)) }
template <class F> ExecFn pick_binary(Type t) { PIPESIM_INT_SWITCH((&int_binary<T, F>)) }
template <class F> ExecFn pick_ternary(Type t) { PIPESIM_INT_SWITCH((&int_ternary<T, F>)) }
ExecFn pick_shl(Type t) { PIPESIM_INT_SWITCH((&int_shl<T>)) }
ExecFn pick_shr(Type t) { PIPESIM_INT_SWITCH((&int_shr<T>)) }
ExecFn pick_bfe(Type t) { PIPESIM_INT_SWITCH((&int_bfe<T>)) }
ExecFn pick_bfi(Type t) { PIPESIM_INT_SWITCH((&int_bfi<T>)) }
ExecFn pick_mad_carry(Type t) { PIPESIM_INT_SWITCH((&int_mad_carry<T>)) }
template <bool Sub> ExecFn pick_carry(Type t) { PIPESIM_INT_SWITCH((&int_carry<T, Sub>)) }

bool is_int(Type t) {
  switch (t) {
    case Type::U16: case Type::U32: case Type::U64: case Type::S16: case Type::S32: case Type::S64:
    case Type::B16: case Type::B32: case Type::B64: return true;
    default: return false;
  }
}
Type wide_of(Type t) {
  switch (t) {
    case Type::U16: return Type::U32;
    case Type::S16: return Type::S32;
    case Type::U32: return Type::U64;
    case Type::S32: return Type::S64;
    default: return Type::None;
  }
}

}  // namespace

bool decode_int(DecodeCtx& c, Mods& m, DInstr& d) {
  const Instruction& in = *c.in;
  const std::string& op = in.opcode;
  const Type t = m.type(0);
  auto ops2 = [&](Type td, Type ta, Type tb) {
    c.expect_ops(3, 3);
    d.ops[0] = c.dest(in.ops[0], td);
    d.ops[1] = c.value(in.ops[1], ta);
    d.ops[2] = c.value(in.ops[2], tb);
    d.nops = 3;
  };
  auto ops1 = [&](Type td, Type ta) {
    c.expect_ops(2, 2);
    d.ops[0] = c.dest(in.ops[0], td);
    d.ops[1] = c.value(in.ops[1], ta);
    d.nops = 2;
  };
  auto ops3 = [&](Type td, Type ta, Type tb, Type tc) {
    c.expect_ops(4, 4);
    d.ops[0] = c.dest(in.ops[0], td);
    d.ops[1] = c.value(in.ops[1], ta);
    d.ops[2] = c.value(in.ops[2], tb);
    d.ops[3] = c.value(in.ops[3], tc);
    d.nops = 4;
  };
  d.type = t;

  // Predicate logic.
  if ((op == "and" || op == "or" || op == "xor" || op == "not" || op == "cnot") && t == Type::Pred) {
    if (m.type_count() != 1) return false;
    d.op = op == "and" ? Op::And : op == "or" ? Op::Or : op == "xor" ? Op::Xor : op == "not" ? Op::Not : Op::Cnot;
    const bool unary = op == "not" || op == "cnot";
    c.expect_ops(unary ? 2 : 3, unary ? 2 : 3);
    d.ops[0] = c.pred_dst(in.ops[0]);
    d.ops[1] = c.pred_src(in.ops[1]);
    if (!unary) d.ops[2] = c.pred_src(in.ops[2]);
    d.fn = op == "and" ? pred_logic<0> : op == "or" ? pred_logic<1> : op == "xor" ? pred_logic<2>
         : op == "not" ? pred_logic<3> : pred_cnot;
    return true;
  }
  const bool arith = op == "add" || op == "sub" || op == "mul" || op == "mad" || op == "div" || op == "rem" ||
                     op == "abs" || op == "neg" || op == "min" || op == "max" || op == "addc" || op == "subc" ||
                     op == "madc" || op == "mul24" || op == "mad24" || op == "sad";
  if (arith) {
    if (m.type_count() != 1 || !is_int(t)) return false;  // floats: decode_float
    if (op == "add" || op == "sub" || op == "addc" || op == "subc") {
      const bool sub = op == "sub" || op == "subc";
      const bool cc = m.take("cc");
      const bool sat = m.take("sat");
      d.op = op == "add" ? Op::Add : op == "sub" ? Op::Sub : op == "addc" ? Op::AddC : Op::SubC;
      ops2(t, t, t);
      if (cc || d.op == Op::AddC || d.op == Op::SubC) {
        if (type_bytes(t) < 4 || sat) c.unsupported();
        if (cc) d.flags |= F_CC;
        d.fn = sub ? pick_carry<true>(t) : pick_carry<false>(t);
      } else if (sat) {
        if (t != Type::S32) c.unsupported();
        d.fn = sub ? &int_binary<int32_t, SubSatF> : &int_binary<int32_t, AddSatF>;
      } else {
        d.fn = sub ? pick_binary<SubF>(t) : pick_binary<AddF>(t);
      }
      return true;
    }
    if (op == "mul" || op == "mad" || op == "madc") {
      const int mode = m.take_one({"lo", "hi", "wide"});
      const bool cc = m.take("cc"), sat = m.take("sat");
      const bool mad = op != "mul";
      d.op = op == "mul" ? Op::Mul : op == "mad" ? Op::Mad : Op::MadC;
      if (mode == 2) {
        const Type w = wide_of(t);
        if (w == Type::None || cc || sat || op == "madc") c.unsupported();
        d.flags |= F_WIDE;
        if (mad) {
          ops3(w, t, t, w);
          // mad.wide: the wide product plus c, in the wide type.
          switch (t) {
            case Type::U16: d.fn = [](Exec& x, const DInstr& i) {
              const auto a = x.src(i.ops[1], 0), b = x.src(i.ops[2], 1), cc2 = x.src(i.ops[3], 2);
              uint64_t* dd = x.dst(i.ops[0]);
              for_lanes(x.mask, [&](uint32_t l) { dd[l] = static_cast<uint32_t>(MulWideF::apply<uint16_t>(static_cast<uint16_t>(a[l]), static_cast<uint16_t>(b[l])) + cc2[l]); });
            }; break;
            case Type::S16: d.fn = [](Exec& x, const DInstr& i) {
              const auto a = x.src(i.ops[1], 0), b = x.src(i.ops[2], 1), cc2 = x.src(i.ops[3], 2);
              uint64_t* dd = x.dst(i.ops[0]);
              for_lanes(x.mask, [&](uint32_t l) { dd[l] = static_cast<uint32_t>(MulWideF::apply<int16_t>(static_cast<int16_t>(a[l]), static_cast<int16_t>(b[l])) + cc2[l]); });
            }; break;
            case Type::U32: d.fn = [](Exec& x, const DInstr& i) {
              const auto a = x.src(i.ops[1], 0), b = x.src(i.ops[2], 1), cc2 = x.src(i.ops[3], 2);
              uint64_t* dd = x.dst(i.ops[0]);
              for_lanes(x.mask, [&](uint32_t l) { dd[l] = MulWideF::apply<uint32_t>(static_cast<uint32_t>(a[l]), static_cast<uint32_t>(b[l])) + cc2[l]; });
            }; break;
            default: d.fn = [](Exec& x, const DInstr& i) {
              const auto a = x.src(i.ops[1], 0), b = x.src(i.ops[2], 1), cc2 = x.src(i.ops[3], 2);
              uint64_t* dd = x.dst(i.ops[0]);
              for_lanes(x.mask, [&](uint32_t l) { dd[l] = MulWideF::apply<int32_t>(static_cast<int32_t>(a[l]), static_cast<int32_t>(b[l])) + cc2[l]; });
            }; break;
          }
        } else {
          ops2(w, t, t);
          d.fn = pick_binary<MulWideF>(t);
        }
        return true;
      }
      if (mode < 0) c.fail("integer " + op + " needs .lo, .hi or .wide");
      if (mode == 1) d.flags |= F_HI;
      if (!mad) {
        if (cc || sat) c.unsupported();
        ops2(t, t, t);
        d.fn = mode == 0 ? pick_binary<MulLoF>(t) : pick_binary<MulHiF>(t);
        return true;
      }
      ops3(t, t, t, t);
      if (cc || op == "madc") {
        if (type_bytes(t) < 4 || sat) c.unsupported();
        if (cc) d.flags |= F_CC;
        d.fn = pick_mad_carry(t);
      } else if (sat) {
        if (t != Type::S32 || mode != 1) c.unsupported();
        d.fn = &int_ternary<int32_t, MadHiSatF>;
      } else {
        d.fn = mode == 0 ? pick_ternary<MadLoF>(t) : pick_ternary<MadHiF>(t);
      }
      return true;
    }
    if (op == "mul24" || op == "mad24") {
      const int mode = m.take_one({"lo", "hi"});
      if (mode < 0 || (t != Type::U32 && t != Type::S32)) c.unsupported();
      if (op == "mul24") {
        d.op = Op::Mul24;
        ops2(t, t, t);
        d.fn = t == Type::U32 ? (mode ? &int_binary<uint32_t, Mul24HiF> : &int_binary<uint32_t, Mul24LoF>)
                              : (mode ? &int_binary<int32_t, Mul24HiF> : &int_binary<int32_t, Mul24LoF>);
      } else {
        d.op = Op::Mad24;
        if (m.take("sat")) c.unsupported();
        ops3(t, t, t, t);
        d.fn = t == Type::U32 ? (mode ? &int_ternary<uint32_t, Mad24HiF> : &int_ternary<uint32_t, Mad24LoF>)
                              : (mode ? &int_ternary<int32_t, Mad24HiF> : &int_ternary<int32_t, Mad24LoF>);
      }
      return true;
    }
    if (op == "div" || op == "rem") {
      d.op = op == "div" ? Op::Div : Op::Rem;
      ops2(t, t, t);
      d.fn = op == "div" ? pick_binary<DivF>(t) : pick_binary<RemF>(t);
      return true;
    }
    if (op == "abs" || op == "neg") {
      if (op == "abs" && !is_signed(t)) c.unsupported();
      d.op = op == "abs" ? Op::Abs : Op::Neg;
      ops1(t, t);
      d.fn = op == "abs" ? pick_unary<AbsF>(t) : pick_unary<NegF>(t);
      return true;
    }
    if (op == "min" || op == "max") {
      const bool relu = m.take("relu");
      if (relu && !is_signed(t)) c.unsupported();
      d.op = op == "min" ? Op::Min : Op::Max;
      ops2(t, t, t);
      if (t == Type::B16 || t == Type::B32 || t == Type::B64) c.unsupported();
      d.fn = relu ? (op == "min" ? pick_binary<MinReluF>(t) : pick_binary<MaxReluF>(t))
                  : (op == "min" ? pick_binary<MinF>(t) : pick_binary<MaxF>(t));
      return true;
    }
    if (op == "sad") {
      d.op = Op::Sad;
      ops3(t, t, t, t);
      d.fn = pick_ternary<SadF>(t);
      return true;
    }
    return false;
  }
  if (op == "and" || op == "or" || op == "xor") {
    if (m.type_count() != 1 || !is_int(t)) c.unsupported();
    d.op = op == "and" ? Op::And : op == "or" ? Op::Or : Op::Xor;
    ops2(t, t, t);
    d.fn = op == "and" ? pick_binary<AndF>(t) : op == "or" ? pick_binary<OrF>(t) : pick_binary<XorF>(t);
    return true;
  }
  if (op == "not" || op == "cnot" || op == "popc" || op == "clz" || op == "brev") {
    if (m.type_count() != 1 || !is_int(t)) c.unsupported();
    const bool counts = op == "popc" || op == "clz";
    d.op = op == "not" ? Op::Not : op == "cnot" ? Op::Cnot : op == "popc" ? Op::Popc : op == "clz" ? Op::Clz : Op::Brev;
    ops1(counts ? Type::U32 : t, t);
    d.fn = op == "not" ? pick_unary<NotF>(t) : op == "cnot" ? pick_unary<CnotF>(t) : op == "popc" ? pick_unary<PopcF>(t)
         : op == "clz" ? pick_unary<ClzF>(t) : pick_unary<BrevF>(t);
    return true;
  }
  if (op == "bfind") {
    const bool amt = m.take("shiftamt");
    if (m.type_count() != 1 || !is_int(t)) c.unsupported();
    d.op = Op::Bfind;
    ops1(Type::U32, t);
    d.fn = amt ? pick_unary<BfindF<true>>(t) : pick_unary<BfindF<false>>(t);
    return true;
  }
  if (op == "shl" || op == "shr") {
    if (m.type_count() != 1 || !is_int(t)) c.unsupported();
    d.op = op == "shl" ? Op::Shl : Op::Shr;
    ops2(t, t, Type::U32);
    d.fn = op == "shl" ? pick_shl(t) : pick_shr(t);
    return true;
  }
  if (op == "bfe") {
    if (m.type_count() != 1 || !is_int(t) || type_bytes(t) < 4) c.unsupported();
    d.op = Op::Bfe;
    ops3(t, t, Type::U32, Type::U32);
    d.fn = pick_bfe(t);
    return true;
  }
  if (op == "bfi") {
    if (m.type_count() != 1 || (t != Type::B32 && t != Type::B64)) c.unsupported();
    d.op = Op::Bfi;
    c.expect_ops(5, 5);
    d.ops[0] = c.dest(in.ops[0], t);
    d.ops[1] = c.value(in.ops[1], t);
    d.ops[2] = c.value(in.ops[2], t);
    d.ops[3] = c.value(in.ops[3], Type::U32);
    d.ops[4] = c.value(in.ops[4], Type::U32);
    d.nops = 5;
    d.fn = pick_bfi(t);
    return true;
  }
  if (op == "prmt") {
    d.sub = static_cast<uint8_t>(m.take_one({"f4e", "b4e", "rc8", "ecl", "ecr", "rc16"}) + 1);
    if (m.type_count() != 1 || t != Type::B32) c.unsupported();
    d.op = Op::Prmt;
    ops3(t, t, t, t);
    d.fn = exec_prmt;
    return true;
  }
  if (op == "lop3") {
    if (m.type_count() != 1 || t != Type::B32) c.unsupported();
    d.op = Op::Lop3;
    c.expect_ops(5, 5);
    d.ops[0] = c.dest(in.ops[0], t);
    for (size_t k = 1; k < 5; ++k) d.ops[k] = c.value(in.ops[k], t);
    d.nops = 5;
    d.fn = exec_lop3;
    return true;
  }
  if (op == "shf") {
    const int dir = m.take_one({"l", "r"});
    const int mode = m.take_one({"wrap", "clamp"});
    if (dir < 0 || mode < 0 || m.type_count() != 1 || (t != Type::B32 && t != Type::U32 && t != Type::S32)) c.unsupported();
    if (dir == 0) d.flags |= F_LEFT;
    if (mode == 1) d.flags |= F_CLAMP;
    d.op = Op::Shf;
    ops3(t, t, t, Type::U32);
    d.fn = exec_shf;
    return true;
  }
  if (op == "dp4a" || op == "dp2a") {
    int part = 0;
    if (op == "dp2a") {
      part = m.take_one({"lo", "hi"});
      if (part < 0) c.unsupported();
      if (part == 1) d.flags |= F_HI;
    }
    if (m.type_count() != 2) c.unsupported();
    d.type = m.type(0);
    d.type2 = m.type(1);
    for (Type x : {d.type, d.type2})
      if (x != Type::U32 && x != Type::S32) c.unsupported();
    d.op = op == "dp4a" ? Op::Dp4a : Op::Dp2a;
    const Type dt = (is_signed(d.type) || is_signed(d.type2)) ? Type::S32 : Type::U32;
    ops3(dt, Type::B32, Type::B32, dt);
    d.fn = op == "dp4a" ? exec_dp4a : exec_dp2a;
    return true;
  }
  if (op == "fns") {
    if (m.type_count() != 1 || t != Type::B32) c.unsupported();
    d.op = Op::Fns;
    ops3(Type::B32, Type::B32, Type::B32, Type::S32);
    d.fn = exec_fns;
    return true;
  }
  return false;
}

}  // namespace pipesim::ptx
