// mov (values, special registers, symbol addresses, vector pack / unpack), selp, slct, setp, set:
// comparisons over every integer and float type, with the .and / .or / .xor combine and p|q pairs.
#include <cmath>

#include "verify/ptx/float_bits.hpp"
#include "verify/ptx/machine_impl.hpp"

namespace pipesim::ptx {
namespace {

// ---- mov -------------------------------------------------------------------------------------------
void exec_mov(Exec& x, const DInstr& in) {
  const auto a = x.src(in.ops[1], 0);
  uint64_t* d = x.dst(in.ops[0]);
  const uint64_t mask = width_mask(in.ops[0].bits < type_bits(in.type) ? in.ops[0].bits : type_bits(in.type));
  for_lanes(x.mask, [&](uint32_t l) { d[l] = a[l] & mask; });
}
void exec_mov_pred(Exec& x, const DInstr& in) { x.set_pred(in.ops[0], x.pred_src(in.ops[1]), x.mask); }

// mov.bN d, {a, b ..}: the elements side by side, element 0 lowest.
void exec_pack(Exec& x, const DInstr& in) {
  const DOp& v = in.ops[1];
  const uint32_t n = v.count, w = type_bits(in.type) / n;
  uint64_t* d = x.dst(in.ops[0]);
  if (n == 2) {  // the common {lo, hi}
    const auto lo = x.src(x.elem(v, 0), 0), hi = x.src(x.elem(v, 1), 1);
    const uint64_t m = width_mask(w);
    map2(x.mask, d, lo, hi, [m, w](uint64_t a, uint64_t b) { return (a & m) | ((b & m) << w); });
    return;
  }
  uint64_t acc[32] = {};
  for (uint32_t k = 0; k < n; ++k) {
    const auto e = x.src(x.elem(v, k), 0);
    for_lanes(x.mask, [&](uint32_t l) { acc[l] |= (e[l] & width_mask(w)) << (k * w); });
  }
  for_lanes(x.mask, [&](uint32_t l) { d[l] = acc[l]; });
}
// mov.bN {a, b ..}, d: the pieces of d.
void exec_unpack(Exec& x, const DInstr& in) {
  const DOp& v = in.ops[0];
  const uint32_t n = v.count, w = type_bits(in.type) / n;
  const auto s = x.src(in.ops[1], 0);
  uint64_t copy[32];
  for_lanes(x.mask, [&](uint32_t l) { copy[l] = s[l]; });  // d may be one of the pieces
  for (uint32_t k = 0; k < n; ++k) {
    const DOp& e = x.elem(v, k);
    if (e.kind != OpKind::Reg) continue;
    uint64_t* d = x.reg(e.idx);
    for_lanes(x.mask, [&](uint32_t l) { d[l] = (copy[l] >> (k * w)) & width_mask(w); });
  }
}

// mov.b128 {lo, hi} <-> a .b128 register, which holds the low 64 bits (exec_mem.cpp): a pack whose
// high half is not zero is refused rather than truncated; an unpack gives a zero high half.
void exec_pack128(Exec& x, const DInstr& in) {
  const auto lo = x.src(x.elem(in.ops[1], 0), 0), hi = x.src(x.elem(in.ops[1], 1), 1);
  uint64_t* d = x.dst(in.ops[0]);
  for_lanes(x.mask, [&](uint32_t l) {
    if (hi[l] != 0)
      Exec::b128_upper_half_fault("mov.b128");
    d[l] = lo[l];
  });
}
void exec_unpack128(Exec& x, const DInstr& in) {
  const auto s = x.src(in.ops[1], 0);
  uint64_t copy[32];
  for_lanes(x.mask, [&](uint32_t l) { copy[l] = s[l]; });
  for (uint32_t k = 0; k < 2; ++k) {
    const DOp& e = x.elem(in.ops[0], k);
    if (e.kind != OpKind::Reg) continue;
    uint64_t* d = x.reg(e.idx);
    for_lanes(x.mask, [&](uint32_t l) { d[l] = k == 0 ? copy[l] : 0; });
  }
}

// ---- selp / slct ------------------------------------------------------------------------------------
void exec_selp(Exec& x, const DInstr& in) {
  const auto a = x.src(in.ops[1], 0), b = x.src(in.ops[2], 1);
  const uint32_t c = x.pred_src(in.ops[3]);
  uint64_t* d = x.dst(in.ops[0]);
  const uint64_t mask = width_mask(type_bits(in.type));
  for_lanes(x.mask, [&](uint32_t l) { d[l] = (((c >> l) & 1u) ? a[l] : b[l]) & mask; });
}
void exec_slct(Exec& x, const DInstr& in) {
  const auto a = x.src(in.ops[1], 0), b = x.src(in.ops[2], 1), c = x.src(in.ops[3], 2);
  uint64_t* d = x.dst(in.ops[0]);
  const uint64_t mask = width_mask(type_bits(in.type));
  const bool fc = in.type2 == Type::F32;
  for_lanes(x.mask, [&](uint32_t l) {
    const bool take_a = fc ? !(std::bit_cast<float>(static_cast<uint32_t>(c[l])) < 0.0f)
                           : static_cast<int32_t>(c[l]) >= 0;
    d[l] = (take_a ? a[l] : b[l]) & mask;
  });
}

// ---- Comparisons ----------------------------------------------------------------------------------
enum Cmp : uint8_t { EQ, NE, LT, LE, GT, GE, LO, LS, HI, HS, EQU, NEU, LTU, LEU, GTU, GEU, NUM, NAN_ };

// How a raw register value reads as the compared type.
template <class T> struct AsInt { using V = T; static V get(uint64_t r) { return static_cast<T>(r); } };
struct AsF32 { using V = float; static V get(uint64_t r) { return std::bit_cast<float>(static_cast<uint32_t>(r)); } };
struct AsF64 { using V = double; static V get(uint64_t r) { return std::bit_cast<double>(r); } };
struct AsF16 { using V = float; static V get(uint64_t r) { return f16_to_f32(static_cast<uint16_t>(r)); } };
struct AsBF16 { using V = float; static V get(uint64_t r) { return bf16_to_f32(static_cast<uint16_t>(r)); } };

template <class V>
inline bool compare(Cmp op, V a, V b) {
  if constexpr (std::is_floating_point_v<V>) {
    const bool un = std::isnan(a) || std::isnan(b);
    switch (op) {
      case EQ: return !un && a == b;
      case NE: return !un && a != b;
      case LT: case LO: return a < b;
      case LE: case LS: return a <= b;
      case GT: case HI: return a > b;
      case GE: case HS: return a >= b;
      case EQU: return un || a == b;
      case NEU: return un || a != b;
      case LTU: return un || a < b;
      case LEU: return un || a <= b;
      case GTU: return un || a > b;
      case GEU: return un || a >= b;
      case NUM: return !un;
      case NAN_: return un;
    }
    return false;
  } else {
    using UV = std::make_unsigned_t<V>;
    const UV ua = static_cast<UV>(a), ub = static_cast<UV>(b);
    switch (op) {
      case EQ: return a == b;
      case NE: return a != b;
      case LT: return a < b;
      case LE: return a <= b;
      case GT: return a > b;
      case GE: return a >= b;
      case LO: return ua < ub;
      case LS: return ua <= ub;
      case HI: return ua > ub;
      case HS: return ua >= ub;
      default: return false;
    }
  }
}

template <class L>
uint32_t compare_lanes(Exec& x, const DInstr& in, uint32_t first_src) {
  const auto a = x.src(in.ops[first_src], 0), b = x.src(in.ops[first_src + 1], 1);
  const Cmp op = static_cast<Cmp>(in.sub);
  uint32_t r = 0;
  // The comparison switch stays outside the lane loop for the common integer ones; with every lane
  // executing, the loop runs over all 32 (cheaper than walking the mask).
  const uint32_t m = x.mask;
  auto run = [&](auto cmp) {
    if (m == 0xffffffffu && a.stride && !b.stride) {
      const auto bv = L::get(*b.p);
      uint8_t t[32];  // vectorisable compares, then the bits
      for (uint32_t l = 0; l < 32; ++l) t[l] = cmp(L::get(a.p[l]), bv);
      for (uint32_t l = 0; l < 32; ++l) r |= uint32_t{t[l]} << l;
    } else {
      for_lanes(m, [&](uint32_t l) { r |= uint32_t{cmp(L::get(a[l]), L::get(b[l]))} << l; });
    }
  };
  using V = typename L::V;
  switch (op) {
    case EQ: run([](V p, V q) { return compare(EQ, p, q); }); break;
    case NE: run([](V p, V q) { return compare(NE, p, q); }); break;
    case LT: run([](V p, V q) { return compare(LT, p, q); }); break;
    case GE: run([](V p, V q) { return compare(GE, p, q); }); break;
    default: run([op](V p, V q) { return compare(op, p, q); }); break;
  }
  return r & m;
}

// The .and / .or / .xor combine with c (sub2: 0 none, 1 and, 2 or, 3 xor).
inline uint32_t combine(uint8_t boolop, uint32_t t, uint32_t c) {
  switch (boolop) {
    case 1: return t & c;
    case 2: return t | c;
    case 3: return t ^ c;
    default: return t;
  }
}

// setp: ops = p, q (or sink), a, b, c (when a bool op is given).
template <class L>
void exec_setp(Exec& x, const DInstr& in) {
  const uint32_t t = compare_lanes<L>(x, in, 2);
  const uint32_t c = in.sub2 ? x.pred_src(in.ops[4]) : 0;
  x.set_pred(in.ops[0], combine(in.sub2, t, c), x.mask);
  if (in.ops[1].kind == OpKind::Pred) x.set_pred(in.ops[1], combine(in.sub2, ~t, c), x.mask);
}
// set: d = 0xffffffff / 1.0f when true, else 0. ops = d, a, b, c.
template <class L>
void exec_set(Exec& x, const DInstr& in) {
  const uint32_t t0 = compare_lanes<L>(x, in, 1);
  const uint32_t t = combine(in.sub2, t0, in.sub2 ? x.pred_src(in.ops[3]) : 0);
  uint64_t* d = x.dst(in.ops[0]);
  const uint64_t yes = in.type == Type::F32 ? 0x3f800000u : 0xffffffffu;
  for_lanes(x.mask, [&](uint32_t l) { d[l] = ((t >> l) & 1u) ? yes : 0; });
}

template <template <class> class H>
ExecFn pick_compare(Type t) {
  switch (t) {
    case Type::U16: case Type::B16: return &H<AsInt<uint16_t>>::run;
    case Type::S16: return &H<AsInt<int16_t>>::run;
    case Type::U32: case Type::B32: return &H<AsInt<uint32_t>>::run;
    case Type::S32: return &H<AsInt<int32_t>>::run;
    case Type::U64: case Type::B64: return &H<AsInt<uint64_t>>::run;
    case Type::S64: return &H<AsInt<int64_t>>::run;
    case Type::F32: return &H<AsF32>::run;
    case Type::F64: return &H<AsF64>::run;
    case Type::F16: return &H<AsF16>::run;
    case Type::BF16: return &H<AsBF16>::run;
    default: return nullptr;
  }
}
template <class L> struct SetpH { static void run(Exec& x, const DInstr& in) { exec_setp<L>(x, in); } };
template <class L> struct SetH { static void run(Exec& x, const DInstr& in) { exec_set<L>(x, in); } };

int parse_cmp(Mods& m) {
  return m.take_one({"eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs", "equ", "neu", "ltu", "leu",
                     "gtu", "geu", "num", "nan"});
}

}  // namespace

bool decode_move(DecodeCtx& c, Mods& m, DInstr& d) {
  const Instruction& in = *c.in;
  const std::string& op = in.opcode;
  if (op == "mov") {
    const Type t = m.type(0);
    if (m.type_count() != 1) c.unsupported();
    d.op = Op::Mov;
    d.type = t;
    c.expect_ops(2, 2);
    if (t == Type::Pred) {
      d.ops[0] = c.pred_dst(in.ops[0]);
      d.ops[1] = c.pred_src(in.ops[1]);
      d.fn = exec_mov_pred;
      return true;
    }
    if (t == Type::B128) {
      // A 128-bit register: moved whole, or packed from / unpacked into two 64-bit halves.
      const bool pack = in.ops[1].kind == OperandKind::Vector, unpack = in.ops[0].kind == OperandKind::Vector;
      if ((pack && in.ops[1].elems.size() != 2) || (unpack && in.ops[0].elems.size() != 2))
        c.fail("mov.b128 packs or unpacks exactly two 64-bit halves");
      d.ops[0] = unpack ? c.vector_of(in.ops[0], Type::B64, true) : c.dest(in.ops[0], t, true);
      d.ops[1] = pack ? c.vector_of(in.ops[1], Type::B64, false) : c.value(in.ops[1], t, true);
      d.fn = pack ? exec_pack128 : unpack ? exec_unpack128 : exec_mov;
      return true;
    }
    if (type_bytes(t) > 8) c.unsupported();
    if (in.ops[1].kind == OperandKind::Vector) {
      const size_t n = in.ops[1].elems.size();
      if (n < 2 || type_bits(t) % n != 0) c.fail("cannot pack this many elements into ." + std::string(type_name(t)));
      const Type et = parse_type("b" + std::to_string(type_bits(t) / n));
      d.ops[0] = c.dest(in.ops[0], t);
      d.ops[1] = c.vector_of(in.ops[1], et, false);
      d.fn = exec_pack;
      return true;
    }
    if (in.ops[0].kind == OperandKind::Vector) {
      const size_t n = in.ops[0].elems.size();
      if (n < 2 || type_bits(t) % n != 0) c.fail("cannot unpack into this many elements");
      const Type et = parse_type("b" + std::to_string(type_bits(t) / n));
      d.ops[0] = c.vector_of(in.ops[0], et, true);
      d.ops[1] = c.value(in.ops[1], t);
      d.fn = exec_unpack;
      return true;
    }
    d.ops[0] = c.dest(in.ops[0], t);
    d.ops[1] = c.value(in.ops[1], t);
    d.fn = exec_mov;
    return true;
  }
  if (op == "selp") {
    const Type t = m.type(0);
    if (m.type_count() != 1 || t == Type::Pred || type_bytes(t) > 8) c.unsupported();
    d.op = Op::Selp;
    d.type = t;
    c.expect_ops(4, 4);
    d.ops[0] = c.dest(in.ops[0], t);
    d.ops[1] = c.value(in.ops[1], t);
    d.ops[2] = c.value(in.ops[2], t);
    d.ops[3] = c.pred_src(in.ops[3]);
    d.fn = exec_selp;
    return true;
  }
  if (op == "slct") {
    m.take("ftz");
    if (m.type_count() != 2 || (m.type(1) != Type::S32 && m.type(1) != Type::F32)) c.unsupported();
    d.op = Op::Slct;
    d.type = m.type(0);
    d.type2 = m.type(1);
    c.expect_ops(4, 4);
    d.ops[0] = c.dest(in.ops[0], d.type);
    d.ops[1] = c.value(in.ops[1], d.type);
    d.ops[2] = c.value(in.ops[2], d.type);
    d.ops[3] = c.value(in.ops[3], d.type2);
    d.fn = exec_slct;
    return true;
  }
  if (op == "setp" || op == "set") {
    const int cmp = parse_cmp(m);
    const int boolop = m.take_one({"and", "or", "xor"}) + 1;
    if (m.take("ftz")) d.flags |= F_FTZ;
    if (cmp < 0) c.unsupported();
    d.sub = static_cast<uint8_t>(cmp);
    d.sub2 = static_cast<uint8_t>(boolop);
    if (op == "setp") {
      if (m.type_count() != 1) c.unsupported();
      const Type t = m.type(0);
      d.op = Op::Setp;
      d.type = t;
      d.fn = pick_compare<SetpH>(t);
      if (!d.fn) c.unsupported();
      if (!is_float(t) && cmp >= EQU) c.unsupported();
      // p[|q], a, b[, c]: a `p|q` pair comes as a two-element vector.
      c.expect_ops(boolop ? 4 : 3, boolop ? 4 : 3);
      const Operand& first = in.ops[0];
      if (first.kind == OperandKind::Vector) {
        if (first.elems.size() != 2) c.fail("expected p or p|q");
        d.ops[0] = c.pred_dst(first.elems[0]);
        d.ops[1] = c.pred_dst(first.elems[1]);
        d.flags |= F_TWO_DST;
      } else {
        d.ops[0] = c.pred_dst(first);
        d.ops[1].kind = OpKind::Sink;
      }
      d.ops[2] = c.value(in.ops[1], t);
      d.ops[3] = c.value(in.ops[2], t);
      if (boolop) d.ops[4] = c.pred_src(in.ops[3]);
      d.nops = 5;
      return true;
    }
    if (m.type_count() != 2) c.unsupported();
    d.op = Op::Set;
    d.type = m.type(0);
    d.type2 = m.type(1);
    if (d.type != Type::U32 && d.type != Type::S32 && d.type != Type::B32 && d.type != Type::F32) c.unsupported();
    d.fn = pick_compare<SetH>(d.type2);
    if (!d.fn) c.unsupported();
    c.expect_ops(boolop ? 4 : 3, boolop ? 4 : 3);
    d.ops[0] = c.dest(in.ops[0], d.type);
    d.ops[1] = c.value(in.ops[1], d.type2);
    d.ops[2] = c.value(in.ops[2], d.type2);
    if (boolop) d.ops[3] = c.pred_src(in.ops[3]);
    return true;
  }
  return false;
}

}  // namespace pipesim::ptx
