// cvt: integer <-> integer (truncation, extension, .sat), float -> integer (.rni .rzi .rmi .rpi, saturating,
// NaN to 0), integer -> float, float <-> float (f64 f32 f16 bf16 tf32, .rni-style rounding to an integer
// value), and the packed forms (f16x2 / bf16x2 from two f32, fp8 / fp6 / fp4 / ue8m0 pairs to and from
// f32 pairs, f16x2 and bf16x2). Integer results are exact; float results round to nearest (the directed
// float rounding modes are approximated by it, except where the result is an integer).
#include <algorithm>
#include <cmath>
#include <limits>

#include "verify/ptx/float_bits.hpp"
#include "verify/ptx/machine_impl.hpp"

namespace pipesim::ptx {
namespace {

enum IntRound : uint8_t { RNI, RZI, RMI, RPI };

double round_int(double v, uint8_t mode) {
  switch (mode) {
    case RZI: return std::trunc(v);
    case RMI: return std::floor(v);
    case RPI: return std::ceil(v);
    default: return std::nearbyint(v);  // ties to even (the default rounding mode)
  }
}

// A register value of type t as a double (float types) or as an exact integer.
double read_float(uint64_t r, Type t) {
  switch (t) {
    case Type::F32: case Type::TF32: return std::bit_cast<float>(static_cast<uint32_t>(r));
    case Type::F64: return std::bit_cast<double>(r);
    case Type::F16: return f16_to_f32(static_cast<uint16_t>(r));
    case Type::BF16: return bf16_to_f32(static_cast<uint16_t>(r));
    default: return 0;
  }
}
uint64_t write_float(double v, Type t, Round rnd) {
  switch (t) {
    case Type::F32: {
      float f = static_cast<float>(v);
      // Directed rounding from f64: step to the neighbour when round-to-nearest went the wrong way.
      if (rnd == Round::Rz && std::fabs(static_cast<double>(f)) > std::fabs(v)) f = std::nextafter(f, 0.0f);
      else if (rnd == Round::Rm && static_cast<double>(f) > v) f = std::nextafter(f, -INFINITY);
      else if (rnd == Round::Rp && static_cast<double>(f) < v) f = std::nextafter(f, INFINITY);
      return std::bit_cast<uint32_t>(f);
    }
    case Type::F64: return std::bit_cast<uint64_t>(v);
    case Type::F16: return f32_to_f16(static_cast<float>(v));
    case Type::BF16: return f32_to_bf16(static_cast<float>(v));
    case Type::TF32: return f32_to_tf32(static_cast<float>(v));
    default: return 0;
  }
}

struct IntInfo {
  uint32_t bits;
  bool sign;
};
IntInfo int_info(Type t) { return {type_bits(t), is_signed(t)}; }

// The value of an integer register read as type t, as a 128-bit-safe pair (we only need int64/uint64).
__extension__ typedef __int128 i128;
i128 read_int(uint64_t r, Type t) {
  const IntInfo i = int_info(t);
  if (i.sign) return static_cast<int64_t>(sext(r, i.bits));
  return static_cast<i128>(r & width_mask(i.bits));
}
i128 int_min(IntInfo i) { return i.sign ? -(static_cast<i128>(1) << (i.bits - 1)) : 0; }
i128 int_max(IntInfo i) {
  return i.sign ? (static_cast<i128>(1) << (i.bits - 1)) - 1 : (static_cast<i128>(1) << i.bits) - 1;
}

// The destination register's value: the result's low dbits, sign-extended for a signed type, then cut
// to the register's width.
uint64_t store_int(i128 v, Type dt, uint32_t reg_bits) {
  const IntInfo i = int_info(dt);
  uint64_t r = static_cast<uint64_t>(v) & width_mask(i.bits);
  if (i.sign) r = sext(r, i.bits);
  return r & width_mask(reg_bits);
}

void exec_cvt(Exec& x, const DInstr& in) {
  const auto a = x.src(in.ops[1], 0);
  uint64_t* d = x.dst(in.ops[0]);
  const Type dt = in.type, st = in.type2;
  const bool dfloat = is_float(dt), sfloat = is_float(st);
  const bool sat = in.flags & F_SAT, relu = in.flags & F_RELU;
  const uint32_t reg_bits = in.ops[0].kind == OpKind::Reg ? in.ops[0].bits : 64;
  for_lanes(x.mask, [&](uint32_t l) {
    if (!dfloat && !sfloat) {
      i128 v = read_int(a[l], st);
      if (sat) v = std::clamp(v, int_min(int_info(dt)), int_max(int_info(dt)));
      d[l] = store_int(v, dt, reg_bits);
    } else if (!dfloat) {  // float -> int: round, saturate, NaN -> 0
      double v = read_float(a[l], st);
      i128 r = 0;
      if (!std::isnan(v)) {
        v = round_int(v, in.sub);
        const IntInfo i = int_info(dt);
        if (v <= static_cast<double>(int_min(i))) r = int_min(i);
        else if (v >= static_cast<double>(int_max(i))) r = int_max(i);
        else r = static_cast<i128>(v);
      }
      d[l] = store_int(r, dt, reg_bits);
    } else {
      double v;
      if (sfloat) {
        v = read_float(a[l], st);
        if (in.flags & F_ROUND_INT) v = round_int(v, in.sub);
      } else {
        const i128 iv = read_int(a[l], st);
        v = static_cast<double>(iv);
      }
      if (sat) v = std::isnan(v) ? 0.0 : std::clamp(v, 0.0, 1.0);
      if (relu && v < 0) v = 0;
      d[l] = write_float(v, dt, in.round) & width_mask(reg_bits);
    }
  });
}

// cvt.rn{.relu}{.satfinite}.{f16x2,bf16x2}.f32 d, a, b: a to the upper half, b to the lower.
void exec_cvt_pack_half(Exec& x, const DInstr& in) {
  const auto a = x.src(in.ops[1], 0), b = x.src(in.ops[2], 1);
  uint64_t* d = x.dst(in.ops[0]);
  const bool bf = in.type == Type::BF16x2, relu = in.flags & F_RELU, satf = in.flags & F_SAT;
  auto conv = [&](uint64_t r) -> uint64_t {
    float v = std::bit_cast<float>(static_cast<uint32_t>(r));
    if (relu && v < 0) v = 0;
    if (satf && std::isinf(v)) v = std::copysign(bf ? 3.3895314e38f : 65504.0f, v);
    return bf ? f32_to_bf16(v) : f32_to_f16(v);
  };
  for_lanes(x.mask, [&](uint32_t l) { d[l] = (conv(a[l]) << 16) | conv(b[l]); });
}

// Narrow pairs (sub = the narrow Type; type2 the source). To narrow: from two f32 (a upper, b lower),
// or from f16x2 / bf16x2 (element 1 upper). From narrow: to f16x2 / bf16x2 (element 0 lower).
uint32_t narrow_bits(Type t) {
  switch (t) {
    case Type::E2M1x2: return 4;
    case Type::E4M3x2: case Type::E5M2x2: case Type::UE8M0x2: return 8;
    default: return 8;  // e2m3x2 / e3m2x2: one 6-bit value per byte
  }
}
void exec_cvt_to_narrow(Exec& x, const DInstr& in) {
  const Type nt = in.type, st = in.type2;
  const MiniFormat f = mini_format(nt);
  const uint32_t w = narrow_bits(nt);
  const bool relu = in.flags & F_RELU;
  const auto a = x.src(in.ops[1], 0);
  const auto b = st == Type::F32 ? x.src(in.ops[2], 1) : a;
  uint64_t* d = x.dst(in.ops[0]);
  const uint32_t reg_bits = in.ops[0].kind == OpKind::Reg ? in.ops[0].bits : 64;
  for_lanes(x.mask, [&](uint32_t l) {
    float hi, lo;
    if (st == Type::F32) {
      hi = std::bit_cast<float>(static_cast<uint32_t>(a[l]));
      lo = std::bit_cast<float>(static_cast<uint32_t>(b[l]));
    } else if (st == Type::F16x2) {
      hi = f16_to_f32(static_cast<uint16_t>(a[l] >> 16));
      lo = f16_to_f32(static_cast<uint16_t>(a[l]));
    } else {
      hi = bf16_to_f32(static_cast<uint16_t>(a[l] >> 16));
      lo = bf16_to_f32(static_cast<uint16_t>(a[l]));
    }
    if (relu) {
      hi = hi < 0 ? 0 : hi;
      lo = lo < 0 ? 0 : lo;
    }
    const uint64_t r = (uint64_t{f32_to_mini(hi, f)} << w) | f32_to_mini(lo, f);
    d[l] = r & width_mask(reg_bits);
  });
}
void exec_cvt_from_narrow(Exec& x, const DInstr& in) {
  const Type nt = in.type2, dt = in.type;
  const MiniFormat f = mini_format(nt);
  const uint32_t w = narrow_bits(nt);
  const bool relu = in.flags & F_RELU;
  const auto a = x.src(in.ops[1], 0);
  uint64_t* d = x.dst(in.ops[0]);
  // A 256-entry table per instruction would be faster; decoding two codes per lane is cheap enough.
  for_lanes(x.mask, [&](uint32_t l) {
    uint64_t r = 0;
    for (uint32_t k = 0; k < 2; ++k) {
      float v = mini_to_f32(static_cast<uint32_t>((a[l] >> (k * w)) & width_mask(w)), f);
      if (relu && v < 0) v = 0;
      r |= uint64_t{dt == Type::BF16x2 ? f32_to_bf16(v) : f32_to_f16(v)} << (16 * k);
    }
    d[l] = r;
  });
}

}  // namespace

bool decode_cvt(DecodeCtx& c, Mods& m, DInstr& d) {
  const Instruction& in = *c.in;
  if (in.opcode != "cvt") return false;
  const int irnd = m.take_one({"rni", "rzi", "rmi", "rpi"});
  const int frnd = m.take_one({"rn", "rz", "rm", "rp", "rna", "rs"});
  m.take("ftz");
  if (m.take("sat")) d.flags |= F_SAT;
  if (m.take("satfinite")) d.flags |= F_SAT;
  if (m.take("relu")) d.flags |= F_RELU;
  if (m.type_count() != 2) c.unsupported();
  d.op = Op::Cvt;
  d.type = m.type(0);
  d.type2 = m.type(1);
  const Type dt = d.type, st = d.type2;
  if (frnd >= 0) d.round = static_cast<Round>(frnd + 1);
  if (irnd >= 0) d.sub = static_cast<uint8_t>(irnd);
  else d.sub = 0;
  // Packed forms.
  if ((dt == Type::F16x2 || dt == Type::BF16x2) && st == Type::F32) {
    c.expect_ops(3, 3);
    d.ops[0] = c.dest(in.ops[0], dt);
    d.ops[1] = c.value(in.ops[1], st);
    d.ops[2] = c.value(in.ops[2], st);
    d.fn = exec_cvt_pack_half;
    return true;
  }
  if (is_narrow_float(dt)) {
    if (st != Type::F32 && st != Type::F16x2 && st != Type::BF16x2) c.unsupported();
    d.flags &= ~F_SAT;  // the narrow formats always saturate here
    c.expect_ops(st == Type::F32 ? 3 : 2, st == Type::F32 ? 3 : 2);
    d.ops[0] = c.dest(in.ops[0], dt, true);
    d.ops[1] = c.value(in.ops[1], st);
    if (st == Type::F32) d.ops[2] = c.value(in.ops[2], st);
    d.fn = exec_cvt_to_narrow;
    return true;
  }
  if (is_narrow_float(st)) {
    if (dt != Type::F16x2 && dt != Type::BF16x2) c.unsupported();
    c.expect_ops(2, 2);
    d.ops[0] = c.dest(in.ops[0], dt);
    d.ops[1] = c.value(in.ops[1], st, true);
    d.fn = exec_cvt_from_narrow;
    return true;
  }
  const bool dfloat = is_float(dt), sfloat = is_float(st);
  for (Type t : {dt, st})
    if (t == Type::Pred || t == Type::F16x2 || t == Type::BF16x2 || type_bytes(t) > 8 || t == Type::None) c.unsupported();
  if (dfloat && sfloat && irnd >= 0) d.flags |= F_ROUND_INT;
  if (!dfloat && sfloat && irnd < 0) d.sub = RZI;  // PTX asks for an .irnd; take truncation if absent
  if (dfloat && sfloat && irnd < 0 && frnd < 0 && type_bytes(dt) < type_bytes(st) && dt != Type::TF32)
    d.round = Round::Rn;
  c.expect_ops(2, 2);
  d.ops[0] = c.dest(in.ops[0], dt, true);
  d.ops[1] = c.value(in.ops[1], st, true);
  d.fn = exec_cvt;
  return true;
}

}  // namespace pipesim::ptx
