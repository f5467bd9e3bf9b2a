// Floating-point arithmetic on f32, f64, f16, bf16 and the packed f16x2 / bf16x2 / f32x2: add sub mul fma mad
// div rcp sqrt rsqrt ex2 lg2 sin cos tanh abs neg min max copysign testp. Results round to nearest;
// the directed rounding modes, .ftz and the .approx error bounds are not modelled (values may differ
// from the GPU's in the last bits; no verdict depends on them). .sat clamps to [0, 1], .relu to >= 0.
#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>

#include "verify/ptx/float_bits.hpp"
#include "verify/ptx/machine_impl.hpp"

namespace pipesim::ptx {
namespace {

// How a register holds the values of a format: N elements of V.
struct FmtF32 {
  using V = float;
  static constexpr uint32_t n = 1;
  static V get(uint64_t r, uint32_t) { return std::bit_cast<float>(static_cast<uint32_t>(r)); }
  static uint64_t put(V v, uint32_t) { return std::bit_cast<uint32_t>(v); }
};
struct FmtF64 {
  using V = double;
  static constexpr uint32_t n = 1;
  static V get(uint64_t r, uint32_t) { return std::bit_cast<double>(r); }
  static uint64_t put(V v, uint32_t) { return std::bit_cast<uint64_t>(v); }
};
struct FmtF16 {
  using V = float;
  static constexpr uint32_t n = 1;
  static V get(uint64_t r, uint32_t) { return f16_to_f32(static_cast<uint16_t>(r)); }
  static uint64_t put(V v, uint32_t) { return f32_to_f16(v); }
};
struct FmtBF16 {
  using V = float;
  static constexpr uint32_t n = 1;
  static V get(uint64_t r, uint32_t) { return bf16_to_f32(static_cast<uint16_t>(r)); }
  static uint64_t put(V v, uint32_t) { return f32_to_bf16(v); }
};
struct FmtF16x2 {
  using V = float;
  static constexpr uint32_t n = 2;
  static V get(uint64_t r, uint32_t k) { return f16_to_f32(static_cast<uint16_t>(r >> (16 * k))); }
  static uint64_t put(V v, uint32_t k) { return uint64_t{f32_to_f16(v)} << (16 * k); }
};
struct FmtBF16x2 {
  using V = float;
  static constexpr uint32_t n = 2;
  static V get(uint64_t r, uint32_t k) { return bf16_to_f32(static_cast<uint16_t>(r >> (16 * k))); }
  static uint64_t put(V v, uint32_t k) { return uint64_t{f32_to_bf16(v)} << (16 * k); }
};

struct FmtF32x2 {
  using V = float;
  static constexpr uint32_t n = 2;
  static V get(uint64_t r, uint32_t k) { return std::bit_cast<float>(static_cast<uint32_t>(r >> (32 * k))); }
  static uint64_t put(V v, uint32_t k) { return uint64_t{std::bit_cast<uint32_t>(v)} << (32 * k); }
};

template <class V>
V post(V v, uint32_t flags) {
  if (flags & F_SAT) v = std::isnan(v) ? V(0) : std::fmin(std::fmax(v, V(0)), V(1));
  if (flags & F_RELU) v = (v < V(0)) ? V(0) : v;
  return v;
}

template <class Fmt, class F>
void float_unary(Exec& x, const DInstr& in) {
  const auto a = x.src(in.ops[1], 0);
  uint64_t* d = x.dst(in.ops[0]);
  const uint32_t flags = in.flags;
  for_lanes(x.mask, [&](uint32_t l) {
    uint64_t r = 0;
    for (uint32_t k = 0; k < Fmt::n; ++k) r |= Fmt::put(post(F::apply(Fmt::get(a[l], k)), flags), k);
    d[l] = r;
  });
}
template <class Fmt, class F>
void float_binary(Exec& x, const DInstr& in) {
  const auto a = x.src(in.ops[1], 0), b = x.src(in.ops[2], 1);
  uint64_t* d = x.dst(in.ops[0]);
  const uint32_t flags = in.flags;
  for_lanes(x.mask, [&](uint32_t l) {
    uint64_t r = 0;
    for (uint32_t k = 0; k < Fmt::n; ++k)
      r |= Fmt::put(post(F::apply(Fmt::get(a[l], k), Fmt::get(b[l], k), flags), flags), k);
    d[l] = r;
  });
}
template <class Fmt>
void float_fma(Exec& x, const DInstr& in) {
  const auto a = x.src(in.ops[1], 0), b = x.src(in.ops[2], 1), c = x.src(in.ops[3], 2);
  uint64_t* d = x.dst(in.ops[0]);
  const uint32_t flags = in.flags;
  for_lanes(x.mask, [&](uint32_t l) {
    uint64_t r = 0;
    for (uint32_t k = 0; k < Fmt::n; ++k)
      r |= Fmt::put(post(std::fma(Fmt::get(a[l], k), Fmt::get(b[l], k), Fmt::get(c[l], k)), flags), k);
    d[l] = r;
  });
}

struct FAdd { template <class V> static V apply(V a, V b, uint32_t) { return a + b; } };
struct FSub { template <class V> static V apply(V a, V b, uint32_t) { return a - b; } };
struct FMul { template <class V> static V apply(V a, V b, uint32_t) { return a * b; } };
struct FDiv { template <class V> static V apply(V a, V b, uint32_t) { return a / b; } };
struct FMin {
  template <class V> static V apply(V a, V b, uint32_t f) {
    if ((f & F_NAN) && (std::isnan(a) || std::isnan(b))) return std::numeric_limits<V>::quiet_NaN();
    return std::fmin(a, b);
  }
};
struct FMax {
  template <class V> static V apply(V a, V b, uint32_t f) {
    if ((f & F_NAN) && (std::isnan(a) || std::isnan(b))) return std::numeric_limits<V>::quiet_NaN();
    return std::fmax(a, b);
  }
};
struct FCopysign { template <class V> static V apply(V a, V b, uint32_t) { return std::copysign(b, a); } };
struct FNeg { template <class V> static V apply(V a) { return -a; } };
struct FAbs { template <class V> static V apply(V a) { return std::fabs(a); } };
struct FRcp { template <class V> static V apply(V a) { return V(1) / a; } };
struct FSqrt { template <class V> static V apply(V a) { return std::sqrt(a); } };
struct FRsqrt { template <class V> static V apply(V a) { return V(1) / std::sqrt(a); } };
struct FEx2 { template <class V> static V apply(V a) { return std::exp2(a); } };
struct FLg2 { template <class V> static V apply(V a) { return std::log2(a); } };
struct FSin { template <class V> static V apply(V a) { return std::sin(a); } };
struct FCos { template <class V> static V apply(V a) { return std::cos(a); } };
struct FTanh { template <class V> static V apply(V a) { return std::tanh(a); } };

// The handler for the register format of `t`: `pick(Fmt{})` for the format's tag; nullptr where `t` is
// not a format of this file. One table for the unary, binary and fma handlers.
template <class Pick>
ExecFn by_format(Type t, Pick pick) {
  switch (t) {
    case Type::F32: return pick(FmtF32{});
    case Type::F64: return pick(FmtF64{});
    case Type::F16: return pick(FmtF16{});
    case Type::BF16: return pick(FmtBF16{});
    case Type::F16x2: return pick(FmtF16x2{});
    case Type::BF16x2: return pick(FmtBF16x2{});
    case Type::F32x2: return pick(FmtF32x2{});
    default: return nullptr;
  }
}
template <class F>
ExecFn pick_unary(Type t) {
  return by_format(t, []<class Fmt>(Fmt) -> ExecFn { return &float_unary<Fmt, F>; });
}
template <class F>
ExecFn pick_binary(Type t) {
  return by_format(t, []<class Fmt>(Fmt) -> ExecFn { return &float_binary<Fmt, F>; });
}
ExecFn pick_fma(Type t) {
  return by_format(t, []<class Fmt>(Fmt) -> ExecFn { return &float_fma<Fmt>; });
}

// testp.op.type p, a
template <class Fmt>
void exec_testp(Exec& x, const DInstr& in) {
  const auto a = x.src(in.ops[1], 0);
  uint32_t r = 0;
  for_lanes(x.mask, [&](uint32_t l) {
    const auto v = Fmt::get(a[l], 0);
    bool t = false;
    switch (in.sub) {
      case 0: t = std::isfinite(v); break;
      case 1: t = std::isinf(v); break;
      case 2: t = !std::isnan(v); break;
      case 3: t = std::isnan(v); break;
      case 4: t = std::isnormal(v); break;
      case 5: t = std::fpclassify(v) == FP_SUBNORMAL; break;
    }
    r |= uint32_t{t} << l;
  });
  x.set_pred(in.ops[0], r, x.mask);
}

}  // namespace

bool decode_float(DecodeCtx& c, Mods& m, DInstr& d) {
  const Instruction& in = *c.in;
  const std::string& op = in.opcode;
  static const char* const kBinary[] = {"add", "sub", "mul", "div", "min", "max", "copysign"};
  static const char* const kUnary[] = {"neg", "abs", "rcp", "sqrt", "rsqrt", "ex2", "lg2", "sin", "cos", "tanh"};
  const bool binary = std::find(std::begin(kBinary), std::end(kBinary), op) != std::end(kBinary);
  const bool unary = std::find(std::begin(kUnary), std::end(kUnary), op) != std::end(kUnary);
  const bool ternary = op == "fma" || op == "mad";
  if (op == "testp") {
    const int k = m.take_one({"finite", "infinite", "number", "notanumber", "normal", "subnormal"});
    if (k < 0 || m.type_count() != 1) c.unsupported();
    d.op = Op::Testp;
    d.type = m.type(0);
    d.sub = static_cast<uint8_t>(k);
    c.expect_ops(2, 2);
    d.ops[0] = c.pred_dst(in.ops[0]);
    d.ops[1] = c.value(in.ops[1], d.type);
    d.fn = d.type == Type::F32 ? &exec_testp<FmtF32> : d.type == Type::F64 ? &exec_testp<FmtF64> : nullptr;
    if (!d.fn) c.unsupported();
    return true;
  }
  if (!binary && !unary && !ternary) return false;
  if (m.type_count() != 1) return false;
  const Type t = m.type(0);
  if (!is_float(t) || t == Type::TF32) return false;
  // Modifiers that do not change the modelled value: rounding modes, flush-to-zero, accuracy.
  const int rnd = m.take_one({"rn", "rz", "rm", "rp"});
  m.take("ftz");
  m.take("approx");
  m.take("full");
  m.take("oob");
  if (m.take("sat") || m.take("satfinite")) d.flags |= F_SAT;
  if (m.take("relu")) d.flags |= F_RELU;
  if (m.take("NaN")) d.flags |= F_NAN;
  if (m.has("xorsign")) c.unsupported();
  if (rnd >= 0) d.round = static_cast<Round>(rnd + 1);
  d.type = t;
  if (ternary) {
    d.op = op == "fma" ? Op::Fma : Op::Mad;
    c.expect_ops(4, 4);
    d.ops[0] = c.dest(in.ops[0], t);
    for (size_t k = 1; k < 4; ++k) d.ops[k] = c.value(in.ops[k], t);
    d.fn = pick_fma(t);
  } else if (binary) {
    d.op = op == "add" ? Op::Add : op == "sub" ? Op::Sub : op == "mul" ? Op::Mul : op == "div" ? Op::Div
         : op == "min" ? Op::Min : op == "max" ? Op::Max : Op::Copysign;
    c.expect_ops(3, 3);
    d.ops[0] = c.dest(in.ops[0], t);
    d.ops[1] = c.value(in.ops[1], t);
    d.ops[2] = c.value(in.ops[2], t);
    d.fn = op == "add" ? pick_binary<FAdd>(t) : op == "sub" ? pick_binary<FSub>(t) : op == "mul" ? pick_binary<FMul>(t)
         : op == "div" ? pick_binary<FDiv>(t) : op == "min" ? pick_binary<FMin>(t) : op == "max" ? pick_binary<FMax>(t)
         : pick_binary<FCopysign>(t);
  } else {
    d.op = op == "neg" ? Op::Neg : op == "abs" ? Op::Abs : op == "rcp" ? Op::Rcp : op == "sqrt" ? Op::Sqrt
         : op == "rsqrt" ? Op::Rsqrt : op == "ex2" ? Op::Ex2 : op == "lg2" ? Op::Lg2 : op == "sin" ? Op::Sin
         : op == "cos" ? Op::Cos : Op::Tanh;
    c.expect_ops(2, 2);
    d.ops[0] = c.dest(in.ops[0], t);
    d.ops[1] = c.value(in.ops[1], t);
    d.fn = op == "neg" ? pick_unary<FNeg>(t) : op == "abs" ? pick_unary<FAbs>(t) : op == "rcp" ? pick_unary<FRcp>(t)
         : op == "sqrt" ? pick_unary<FSqrt>(t) : op == "rsqrt" ? pick_unary<FRsqrt>(t) : op == "ex2" ? pick_unary<FEx2>(t)
         : op == "lg2" ? pick_unary<FLg2>(t) : op == "sin" ? pick_unary<FSin>(t) : op == "cos" ? pick_unary<FCos>(t)
         : pick_unary<FTanh>(t);
  }
  if (!d.fn) c.unsupported();
  return true;
}

}  // namespace pipesim::ptx
