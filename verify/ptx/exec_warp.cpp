// Warp-collective instructions over the lanes that execute them (the active, guarded lanes, within the
// membermask): shfl.sync (the ISA's clamp / segment semantics exactly; a source lane that does not take
// part gives whatever its register holds, which the ISA leaves unpredictable), vote.sync, match.sync,
// redux.sync, activemask, elect.sync, bar.warp.sync (a no-op for a warp that runs in lockstep).
#include <cmath>
#include <limits>

#include "verify/ptx/machine_impl.hpp"

namespace pipesim::ptx {
namespace {

// The lanes taking part: executing and named in the membermask (read from the first executing lane).
uint32_t group_of(Exec& x, const DOp& membermask) {
  if (membermask.kind == OpKind::None) return x.mask;
  const auto mm = x.src(membermask, 3);
  const uint32_t first = static_cast<uint32_t>(std::countr_zero(x.mask));
  return x.mask & static_cast<uint32_t>(mm[first]);
}

// shfl: ops = d, p (or sink), a, b, c, membermask; sub = mode (0 up, 1 down, 2 bfly, 3 idx)
void exec_shfl(Exec& x, const DInstr& in) {
  const auto a = x.src(in.ops[2], 0), b = x.src(in.ops[3], 1), c = x.src(in.ops[4], 2);
  uint64_t src[32];
  for (uint32_t l = 0; l < 32; ++l) src[l] = a[l];  // d may be a
  uint64_t* d = x.dst(in.ops[0]);
  uint32_t pbits = 0;
  const uint8_t mode = in.sub;
  for_lanes(x.mask, [&](uint32_t l) {
    const int32_t lane = static_cast<int32_t>(l);
    const int32_t bval = static_cast<int32_t>(b[l] & 31u);
    const int32_t cval = static_cast<int32_t>(c[l] & 31u);
    const int32_t segmask = static_cast<int32_t>((c[l] >> 8) & 31u);
    const int32_t max_lane = (lane & segmask) | (cval & ~segmask);
    const int32_t min_lane = lane & segmask;
    int32_t j = lane;
    bool pval = false;
    switch (mode) {
      case 0: j = lane - bval; pval = j >= max_lane; break;
      case 1: j = lane + bval; pval = j <= max_lane; break;
      case 2: j = lane ^ bval; pval = j <= max_lane; break;
      default: j = min_lane | (bval & ~segmask); pval = j <= max_lane; break;
    }
    if (!pval) j = lane;
    d[l] = src[static_cast<uint32_t>(j) & 31u] & 0xffffffffu;
    pbits |= uint32_t{pval} << l;
  });
  x.set_pred(in.ops[1], pbits, x.mask);
}

// vote: ops = d, a (pred), membermask; sub = 0 all, 1 any, 2 uni, 3 ballot
void exec_vote(Exec& x, const DInstr& in) {
  const uint32_t g = group_of(x, in.ops[2]);
  const uint32_t p = x.pred_src(in.ops[1]) & g;
  switch (in.sub) {
    case 0: x.set_pred(in.ops[0], p == g ? ~0u : 0u, x.mask); break;
    case 1: x.set_pred(in.ops[0], p != 0 ? ~0u : 0u, x.mask); break;
    case 2: x.set_pred(in.ops[0], (p == 0 || p == g) ? ~0u : 0u, x.mask); break;
    default: {
      uint64_t* d = x.dst(in.ops[0]);
      for_lanes(x.mask, [&](uint32_t l) { d[l] = p; });
    }
  }
}

// match: ops = d, p (or sink), a, membermask; sub = 0 any, 1 all
void exec_match(Exec& x, const DInstr& in) {
  const uint32_t g = group_of(x, in.ops[3]);
  const auto a = x.src(in.ops[2], 0);
  const uint64_t vm = width_mask(type_bits(in.type));
  uint64_t* d = x.dst(in.ops[0]);
  uint64_t vals[32];
  for_lanes(g, [&](uint32_t l) { vals[l] = a[l] & vm; });
  if (in.sub == 0) {
    uint32_t res[32];
    for_lanes(x.mask, [&](uint32_t l) {
      uint32_t same = 0;
      for_lanes(g, [&](uint32_t j) { same |= uint32_t{vals[j] == (a[l] & vm)} << j; });
      res[l] = same;
    });
    for_lanes(x.mask, [&](uint32_t l) { d[l] = res[l]; });
    return;
  }
  bool all = true;
  const uint32_t first = g ? static_cast<uint32_t>(std::countr_zero(g)) : 0;
  for_lanes(g, [&](uint32_t l) { all = all && vals[l] == vals[first]; });
  for_lanes(x.mask, [&](uint32_t l) { d[l] = all ? g : 0; });
  x.set_pred(in.ops[1], all ? ~0u : 0u, x.mask);
}

// redux.sync: ops = d, a, membermask; sub = 0 add, 1 min, 2 max, 3 and, 4 or, 5 xor
void exec_redux(Exec& x, const DInstr& in) {
  const uint32_t g = group_of(x, in.ops[2]);
  const auto a = x.src(in.ops[1], 0);
  uint64_t* d = x.dst(in.ops[0]);
  uint64_t r = 0;
  if (in.type == Type::F32) {
    float acc = in.sub == 1 ? INFINITY : -INFINITY;
    bool nan = false;
    for_lanes(g, [&](uint32_t l) {
      float v = std::bit_cast<float>(static_cast<uint32_t>(a[l]));
      if (in.flags & F_CLAMP) v = std::fabs(v);  // .abs
      nan = nan || std::isnan(v);
      acc = in.sub == 1 ? std::fmin(acc, v) : std::fmax(acc, v);
    });
    if (nan && (in.flags & F_NAN)) acc = std::numeric_limits<float>::quiet_NaN();
    r = std::bit_cast<uint32_t>(acc);
  } else {
    const bool sign = in.type == Type::S32;
    int64_t acc = in.sub == 1 ? (sign ? INT32_MAX : int64_t{UINT32_MAX}) : in.sub == 2 ? (sign ? INT32_MIN : 0) : 0;
    if (in.sub == 3) acc = UINT32_MAX;
    for_lanes(g, [&](uint32_t l) {
      const int64_t v = sign ? int64_t{static_cast<int32_t>(a[l])} : int64_t{static_cast<uint32_t>(a[l])};
      switch (in.sub) {
        case 0: acc += v; break;
        case 1: acc = std::min(acc, v); break;
        case 2: acc = std::max(acc, v); break;
        case 3: acc &= v; break;
        case 4: acc |= v; break;
        default: acc ^= v; break;
      }
    });
    r = static_cast<uint32_t>(acc);
  }
  for_lanes(x.mask, [&](uint32_t l) { d[l] = r; });
}

void exec_activemask(Exec& x, const DInstr& in) {
  uint64_t* d = x.dst(in.ops[0]);
  const uint32_t a = x.active;
  for_lanes(x.mask, [&](uint32_t l) { d[l] = a; });
}

// elect.sync d|p, membermask: the lowest lane of the group is the leader.
void exec_elect(Exec& x, const DInstr& in) {
  const uint32_t g = group_of(x, in.ops[2]);
  const uint32_t leader = g ? static_cast<uint32_t>(std::countr_zero(g)) : 0;
  uint64_t* d = x.dst(in.ops[0]);
  for_lanes(x.mask, [&](uint32_t l) { d[l] = leader; });
  x.set_pred(in.ops[1], g ? (1u << leader) : 0u, x.mask);
}

// `d|p` (a two-element vector) or `d` alone.
void pair_dest(DecodeCtx& c, DInstr& d, const Operand& o, Type t, bool pred_second) {
  if (o.kind == OperandKind::Vector) {
    if (o.elems.size() != 2) c.fail("expected d or d|p");
    d.ops[0] = c.dest(o.elems[0], t);
    d.ops[1] = pred_second ? c.pred_dst(o.elems[1]) : c.dest(o.elems[1], t);
    d.flags |= F_TWO_DST;
  } else {
    d.ops[0] = c.dest(o, t);
    d.ops[1].kind = OpKind::Sink;
  }
}

}  // namespace

bool decode_warp(DecodeCtx& c, Mods& m, DInstr& d) {
  const Instruction& in = *c.in;
  const std::string& op = in.opcode;
  if (op == "shfl") {
    const bool sync = m.take("sync");
    const int mode = m.take_one({"up", "down", "bfly", "idx"});
    if (mode < 0 || m.type_count() != 1 || m.type(0) != Type::B32) c.unsupported();
    d.op = Op::Shfl;
    d.sub = static_cast<uint8_t>(mode);
    d.type = Type::B32;
    c.expect_ops(sync ? 5 : 4, sync ? 5 : 4);
    pair_dest(c, d, in.ops[0], Type::B32, true);
    d.ops[2] = c.value(in.ops[1], Type::B32);
    d.ops[3] = c.value(in.ops[2], Type::B32);
    d.ops[4] = c.value(in.ops[3], Type::B32);
    if (sync) d.ops[5] = c.value(in.ops[4], Type::B32);
    d.fn = exec_shfl;
    return true;
  }
  if (op == "vote") {
    const bool sync = m.take("sync");
    const int mode = m.take_one({"all", "any", "uni", "ballot"});
    if (mode < 0 || m.type_count() != 1) c.unsupported();
    d.op = Op::Vote;
    d.sub = static_cast<uint8_t>(mode);
    d.type = m.type(0);
    if ((mode == 3) != (d.type == Type::B32) || (mode != 3 && d.type != Type::Pred)) c.unsupported();
    c.expect_ops(sync ? 3 : 2, sync ? 3 : 2);
    d.ops[0] = mode == 3 ? c.dest(in.ops[0], Type::B32) : c.pred_dst(in.ops[0]);
    d.ops[1] = c.pred_src(in.ops[1]);
    if (sync) d.ops[2] = c.value(in.ops[2], Type::B32);
    d.fn = exec_vote;
    return true;
  }
  if (op == "match") {
    const int mode = m.take_one({"any", "all"});
    if (mode < 0 || !m.take("sync") || m.type_count() != 1) c.unsupported();
    d.type = m.type(0);
    if (d.type != Type::B32 && d.type != Type::B64) c.unsupported();
    d.op = Op::Match;
    d.sub = static_cast<uint8_t>(mode);
    c.expect_ops(3, 3);
    pair_dest(c, d, in.ops[0], Type::B32, true);
    if (mode == 0 && d.ops[1].kind != OpKind::Sink) c.fail("match.any has no predicate destination");
    d.ops[2] = c.value(in.ops[1], d.type);
    d.ops[3] = c.value(in.ops[2], Type::B32);
    d.fn = exec_match;
    return true;
  }
  if (op == "redux") {
    if (!m.take("sync")) c.unsupported();
    const int k = m.take_one({"add", "min", "max", "and", "or", "xor"});
    if (m.take("abs")) d.flags |= F_CLAMP;
    if (m.take("NaN")) d.flags |= F_NAN;
    if (k < 0 || m.type_count() != 1) c.unsupported();
    d.type = m.type(0);
    const Type t = d.type;
    const bool ok = (k <= 2 && (t == Type::U32 || t == Type::S32)) || (k >= 3 && t == Type::B32) ||
                    ((k == 1 || k == 2) && t == Type::F32);
    if (!ok) c.unsupported();
    d.op = Op::Redux;
    d.sub = static_cast<uint8_t>(k);
    c.expect_ops(3, 3);
    d.ops[0] = c.dest(in.ops[0], t);
    d.ops[1] = c.value(in.ops[1], t);
    d.ops[2] = c.value(in.ops[2], Type::B32);
    d.fn = exec_redux;
    return true;
  }
  if (op == "activemask") {
    if (m.type_count() != 1 || m.type(0) != Type::B32) c.unsupported();
    d.op = Op::Activemask;
    c.expect_ops(1, 1);
    d.ops[0] = c.dest(in.ops[0], Type::B32);
    d.fn = exec_activemask;
    return true;
  }
  if (op == "elect") {
    if (!m.take("sync")) c.unsupported();
    d.op = Op::Elect;
    c.expect_ops(2, 2);
    pair_dest(c, d, in.ops[0], Type::B32, true);
    d.ops[2] = c.value(in.ops[1], Type::B32);
    d.fn = exec_elect;
    return true;
  }
  if (op == "bar" && m.has("warp")) {
    m.take("warp");
    if (!m.take("sync")) c.unsupported();
    d.op = Op::BarWarpSync;
    c.expect_ops(1, 1);
    d.ops[0] = c.value(in.ops[0], Type::B32);
    d.fn = exec_nop;
    return true;
  }
  return false;
}

}  // namespace pipesim::ptx
