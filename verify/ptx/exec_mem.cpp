// Memory instructions: ld / ldu / st (every space, vectors, ordering and cache qualifiers, which change
// nothing in a sequentially consistent single-threaded model), atom / red (lanes in lane order: a
// deterministic serialisation), prefetch (no-op), cvta / mapa / isspacep / getctarank, and ldmatrix /
// stmatrix (m8n8 .b16). Addresses: machine_impl.hpp's map.
#include <algorithm>
#include <array>
#include <cmath>

#include "verify/ptx/float_bits.hpp"
#include "verify/ptx/machine_impl.hpp"

namespace pipesim::ptx {
namespace {

uint64_t load_le(const uint8_t* p, uint32_t bytes) {
  uint64_t v = 0;
  std::memcpy(&v, p, bytes);
  return v;
}
void store_le(uint8_t* p, uint64_t v, uint32_t bytes) { std::memcpy(p, &v, bytes); }

// The wavefronts a warp's shared-memory access of `bytes` a lane takes: the SM's 32 banks of 4 bytes
// each serve one 4-byte word a wavefront, lanes touching the same word share it, and the lanes go in
// phases of 128 bytes (32 lanes of up to 4 bytes, 16 of 8, 8 of 16: the CUDA C++ Programming Guide's
// shared-memory rules for compute capability 5.x and later). Conflict-free, it is the access's bytes
// over 128, rounded up; each further word a bank must serve in a phase is a wavefront more.
struct Wavefronts {
  uint32_t taken = 0, phases = 0;  // phases: what a conflict-free access takes
};
Wavefronts shared_wavefronts(Exec& x, const DOp& addr, uint32_t bytes) {
  const uint32_t words = std::max<uint32_t>(1, (bytes + 3) / 4);
  const uint32_t per_phase = std::max<uint32_t>(1, 32 / words);
  Wavefronts total;
  for (uint32_t first = 0; first < 32; first += per_phase) {
    const uint32_t span = per_phase >= 32 ? ~0u : ((1u << per_phase) - 1) << first;
    const uint32_t m = x.mask & span;
    if (m == 0) continue;
    std::array<uint64_t, 64> w;
    size_t n = 0;
    for_lanes(m, [&](uint32_t l) {
      const uint64_t a = x.address(addr, l) / 4;
      for (uint32_t k = 0; k < words && n < w.size(); ++k) w[n++] = a + k;
    });
    std::sort(w.begin(), w.begin() + static_cast<std::ptrdiff_t>(n));
    std::array<uint8_t, 32> per_bank{};
    uint32_t most = 0;
    for (size_t i = 0; i < n; ++i)
      if (i == 0 || w[i] != w[i - 1]) most = std::max<uint32_t>(most, ++per_bank[w[i] % 32]);
    total.taken += most;
    ++total.phases;
  }
  return total;
}

// A warp's ld / st of shared memory: its wavefronts, where shared memory is timed.
void charge_shared_access(Exec& x, const DOp& addr, uint32_t bytes) {
  if (!x.grid->costs.shared_timed()) return;
  const Wavefronts w = shared_wavefronts(x, addr, bytes);
  if (w.taken > w.phases) {
    SharedConflicts& s = x.grid->shared_conflicts[uint64_t{x.cur_fn} << 32 | x.cur_pc];
    ++s.accesses;
    s.wavefronts += w.taken;
    s.conflict_free += w.phases;
  }
  x.charge_shared(w.taken);
}

// ld: ops[0] = destination vector (one element for a scalar), ops[1] = address.
void exec_ld(Exec& x, const DInstr& in) {
  const DOp& dv = in.ops[0];
  const uint32_t n = dv.count, esize = type_bytes(in.type), total = n * esize;
  const bool sign = is_signed(in.type);
  const uint32_t tbits = esize * 8;
  uint64_t* dp[8];
  uint64_t dm[8];
  for (uint32_t k = 0; k < n; ++k) {
    const DOp& e = x.elem(dv, k);
    dp[k] = e.kind == OpKind::Reg ? x.reg(e.idx) : x.sink;
    dm[k] = width_mask(e.kind == OpKind::Reg ? e.bits : 64);
  }
  const DOp& addr = in.ops[1];
  x.param_read_at_use = x.grid->scoreboard;
  x.param_first_line = x.param_last_line = 0;
  for_lanes(x.mask, [&](uint32_t l) {
    const uint8_t* p = x.access(in.space, x.address(addr, l), total, l, false);
    for (uint32_t k = 0; k < n; ++k) {
      uint64_t v = load_le(p + k * esize, esize);
      if (sign) v = sext(v, tbits);
      dp[k][l] = v & dm[k];
    }
  });
  x.param_read_at_use = false;
  if (x.param_first_line != 0) x.read_params_at_use(dv);
  if (in.space == Space::Shared) charge_shared_access(x, addr, total);
}

// ld / st .b128 (scalar): a .b128 register holds the low 64 bits of its value (what the kernels
// here keep in one: clusterlaunchcontrol responses, sync.hpp). A load whose upper half is not zero
// would lose it, and is refused rather than truncated.
void exec_ld128(Exec& x, const DInstr& in) {
  const DOp& e = x.elem(in.ops[0], 0);
  uint64_t* d = e.kind == OpKind::Reg ? x.reg(e.idx) : x.sink;
  for_lanes(x.mask, [&](uint32_t l) {
    const uint8_t* p = x.access(in.space, x.address(in.ops[1], l), 16, l, false);
    if (load_le(p + 8, 8) != 0)
      Exec::b128_upper_half_fault("ld.b128");
    d[l] = load_le(p, 8);
  });
  if (in.space == Space::Shared) charge_shared_access(x, in.ops[1], 16);
}
void exec_st128(Exec& x, const DInstr& in) {
  const DOp& e = x.elem(in.ops[1], 0);
  const Exec::Src s = e.kind == OpKind::Reg ? Exec::Src{x.reg(e.idx), 1} : x.src(e, 0);
  for_lanes(x.mask, [&](uint32_t l) {
    uint8_t* p = x.access(in.space, x.address(in.ops[0], l), 16, l, true);
    store_le(p, s[l], 8);
    store_le(p + 8, 0, 8);
  });
  if (in.space == Space::Shared) charge_shared_access(x, in.ops[0], 16);
}

// st: ops[0] = address, ops[1] = source vector.
void exec_st(Exec& x, const DInstr& in) {
  const DOp& sv = in.ops[1];
  const uint32_t n = sv.count, esize = type_bytes(in.type), total = n * esize;
  Exec::Src s[8] = {};
  for (uint32_t k = 0; k < n; ++k) {
    const DOp& e = x.elem(sv, k);
    s[k] = e.kind == OpKind::Reg ? Exec::Src{x.reg(e.idx), 1} : x.src(e, k);
  }
  const DOp& addr = in.ops[0];
  for_lanes(x.mask, [&](uint32_t l) {
    uint8_t* p = x.access(in.space, x.address(addr, l), total, l, true);
    for (uint32_t k = 0; k < n; ++k) store_le(p + k * esize, s[k][l], esize);
  });
  if (in.space == Space::Shared) charge_shared_access(x, addr, total);
  if (in.space == Space::Global) charge_global_store(x, addr, total);
}

// ---- Atomics -------------------------------------------------------------------------------------
enum AtomOp : uint8_t { A_ADD, A_INC, A_DEC, A_CAS, A_EXCH, A_MIN, A_MAX, A_AND, A_OR, A_XOR };

double fget(uint64_t r, Type t, uint32_t k) {
  switch (t) {
    case Type::F32: return std::bit_cast<float>(static_cast<uint32_t>(r));
    case Type::F64: return std::bit_cast<double>(r);
    case Type::F16: case Type::F16x2: return f16_to_f32(static_cast<uint16_t>(r >> (16 * k)));
    case Type::BF16: case Type::BF16x2: return bf16_to_f32(static_cast<uint16_t>(r >> (16 * k)));
    default: return 0;
  }
}
uint64_t fput(double v, Type t, uint32_t k) {
  switch (t) {
    case Type::F32: return std::bit_cast<uint32_t>(static_cast<float>(v));
    case Type::F64: return std::bit_cast<uint64_t>(v);
    case Type::F16: case Type::F16x2: return uint64_t{f32_to_f16(static_cast<float>(v))} << (16 * k);
    case Type::BF16: case Type::BF16x2: return uint64_t{f32_to_bf16(static_cast<float>(v))} << (16 * k);
    default: return 0;
  }
}

uint64_t atom_apply(uint8_t op, Type t, uint64_t old, uint64_t b, uint64_t c) {
  const uint32_t bits = type_bits(t);
  const uint64_t m = width_mask(bits);
  old &= m;
  b &= m;
  if (is_float(t)) {
    const uint32_t n = (t == Type::F16x2 || t == Type::BF16x2) ? 2 : 1;
    uint64_t r = 0;
    for (uint32_t k = 0; k < n; ++k) {
      const double o = fget(old, t, k), v = fget(b, t, k);
      double res = o;
      switch (op) {
        case A_ADD: res = o + v; break;
        case A_MIN: res = std::fmin(o, v); break;
        case A_MAX: res = std::fmax(o, v); break;
        case A_EXCH: return b;
        case A_CAS: return old == b ? (c & m) : old;
        default: break;
      }
      r |= fput(res, t, k);
    }
    return r & m;
  }
  const bool sign = is_signed(t);
  const int64_t so = static_cast<int64_t>(sext(old, bits)), sb = static_cast<int64_t>(sext(b, bits));
  switch (op) {
    case A_ADD: return (old + b) & m;
    case A_INC: return old >= b ? 0 : (old + 1) & m;
    case A_DEC: return (old == 0 || old > b) ? b : (old - 1) & m;
    case A_CAS: return old == b ? (c & m) : old;
    case A_EXCH: return b;
    case A_MIN: return sign ? (so < sb ? old : b) : (old < b ? old : b);
    case A_MAX: return sign ? (so > sb ? old : b) : (old > b ? old : b);
    case A_AND: return old & b;
    case A_OR: return old | b;
    case A_XOR: return old ^ b;
  }
  return old;
}

// atom: ops = d, [a], b, c(cas); red: ops = (sink), [a], b.
void exec_atom(Exec& x, const DInstr& in) {
  const uint32_t bytes = type_bytes(in.type);
  const auto b = x.src(in.ops[2], 1);
  const auto c = in.sub == A_CAS ? x.src(in.ops[3], 2) : b;
  uint64_t* d = x.dst(in.ops[0]);
  const uint64_t dmask = width_mask(in.ops[0].kind == OpKind::Reg ? in.ops[0].bits : 64);
  for_lanes(x.mask, [&](uint32_t l) {  // lane order: the serialisation the model picks
    uint8_t* p = x.access(in.space, x.address(in.ops[1], l), bytes, l, true);
    const uint64_t old = load_le(p, bytes);
    store_le(p, atom_apply(in.sub, in.type, old, b[l], c[l]), bytes);
    d[l] = old & dmask;
  });
}

// ---- Address conversions ---------------------------------------------------------------------------
// cvta.space (to generic) / cvta.to.space (from generic): sub 1 = to generic; space in in.space.
void exec_cvta(Exec& x, const DInstr& in) {
  const auto a = x.src(in.ops[1], 0);
  uint64_t* d = x.dst(in.ops[0]);
  const bool to_generic = in.sub == 1, shared = in.space == Space::Shared;
  const uint64_t m = width_mask(type_bits(in.type));
  for_lanes(x.mask, [&](uint32_t l) {
    uint64_t v = a[l] & m;
    if (shared) {
      if (to_generic) v = kSharedWindow + v;
      else if (v >= kSharedWindow && v < kSharedWindow + kWindowBytes) v -= kSharedWindow;
    }
    d[l] = v & m;
  });
}
// mapa{.shared::cluster}.type d, a, rank
void exec_mapa(Exec& x, const DInstr& in) {
  const auto a = x.src(in.ops[1], 0), r = x.src(in.ops[2], 1);
  uint64_t* d = x.dst(in.ops[0]);
  const bool generic = in.space == Space::Generic;
  const uint32_t csize = x.grid->launch.cluster_size();
  for_lanes(x.mask, [&](uint32_t l) {
    const uint32_t rank = static_cast<uint32_t>(r[l]);
    if (rank >= csize)
      Exec::kernel_fault("bad_address", "mapa to cluster rank " + std::to_string(rank) + " of a cluster of " +
                                            std::to_string(csize) + " CTAs");
    uint64_t v = a[l];
    if (generic) {
      if (x.classify(v) != Where::Shared) Exec::kernel_fault("bad_address", "mapa of a generic address outside shared memory");
      v -= kSharedWindow;
    }
    uint64_t out = cluster_address(static_cast<int32_t>(rank), shared_offset(v));
    if (generic) out += kSharedWindow;
    d[l] = out & width_mask(type_bits(in.type));
  });
}
// getctarank{.shared::cluster}.type d, a
void exec_getctarank(Exec& x, const DInstr& in) {
  const auto a = x.src(in.ops[1], 0);
  uint64_t* d = x.dst(in.ops[0]);
  for_lanes(x.mask, [&](uint32_t l) {
    uint64_t v = a[l];
    if (in.space == Space::Generic) {
      if (x.classify(v) != Where::Shared) Exec::kernel_fault("bad_address", "getctarank of an address outside shared memory");
      v -= kSharedWindow;
    }
    const int32_t r = shared_rank(v);
    d[l] = r < 0 ? x.place.rank : static_cast<uint32_t>(r);
  });
}
// isspacep.space p, a: sub = 0 global, 1 shared::cta, 2 shared::cluster, 3 local, 4 const, 5 param
void exec_isspacep(Exec& x, const DInstr& in) {
  const auto a = x.src(in.ops[1], 0);
  uint32_t r = 0;
  for_lanes(x.mask, [&](uint32_t l) {
    const uint64_t v = a[l];
    const Where w = x.classify(v);
    bool t = false;
    switch (in.sub) {
      case 0: t = w == Where::Global; break;
      case 1: {
        const int32_t rank = w == Where::Shared ? shared_rank(v - kSharedWindow) : -2;
        t = w == Where::Shared && (rank < 0 || static_cast<uint32_t>(rank) == x.place.rank);
        break;
      }
      case 2: t = w == Where::Shared; break;
      case 3: t = w == Where::Local; break;
      case 4: t = w == Where::Const; break;
      case 5: t = w == Where::Param; break;
    }
    r |= uint32_t{t} << l;
  });
  x.set_pred(in.ops[0], r, x.mask);
}

// ldmatrix / stmatrix .m8n8 .b16: lanes 8j..8j+7 give the row addresses of matrix j; lane l holds
// elements (l / 4, 2 (l % 4) .. +1) of each matrix (transposed: rows and columns swapped).
void exec_ldmatrix(Exec& x, const DInstr& in) {
  const DOp& dv = in.ops[0];
  const uint32_t nmat = dv.count;
  const bool trans = in.flags & F_TRANS;
  uint16_t mat[4][8][8];
  for (uint32_t j = 0; j < nmat; ++j)
    for (uint32_t r = 0; r < 8; ++r) {
      const uint32_t src_lane = j * 8 + r;
      const uint8_t* p = x.access(in.space, x.address(in.ops[1], src_lane), 16, src_lane, false);
      std::memcpy(mat[j][r], p, 16);
    }
  for (uint32_t j = 0; j < nmat; ++j) {
    const DOp& e = x.elem(dv, j);
    if (e.kind != OpKind::Reg) continue;
    uint64_t* d = x.reg(e.idx);
    for_lanes(x.mask, [&](uint32_t l) {
      const uint32_t row = l / 4, col = 2 * (l % 4);
      const uint16_t lo = trans ? mat[j][col][row] : mat[j][row][col];
      const uint16_t hi = trans ? mat[j][col + 1][row] : mat[j][row][col + 1];
      d[l] = uint32_t{lo} | (uint32_t{hi} << 16);
    });
  }
  x.charge_shared(nmat);  // 8 rows of 16 bytes a matrix: a wavefront each (conflict-free: assumed)
}
void exec_stmatrix(Exec& x, const DInstr& in) {
  const DOp& sv = in.ops[1];
  const uint32_t nmat = sv.count;
  const bool trans = in.flags & F_TRANS;
  for (uint32_t j = 0; j < nmat; ++j) {
    const auto s = x.src(x.elem(sv, j), 0);
    uint16_t mat[8][8] = {};
    for (uint32_t l = 0; l < 32; ++l) {
      const uint32_t row = l / 4, col = 2 * (l % 4);
      const uint16_t lo = static_cast<uint16_t>(s[l]), hi = static_cast<uint16_t>(s[l] >> 16);
      if (trans) {
        mat[col][row] = lo;
        mat[col + 1][row] = hi;
      } else {
        mat[row][col] = lo;
        mat[row][col + 1] = hi;
      }
    }
    for (uint32_t r = 0; r < 8; ++r) {
      const uint32_t lane = j * 8 + r;
      uint8_t* p = x.access(in.space, x.address(in.ops[0], lane), 16, lane, true);
      std::memcpy(p, mat[r], 16);
    }
  }
  x.charge_shared(nmat);  // 8 rows of 16 bytes a matrix: a wavefront each (conflict-free: assumed)
}

// The state space a memory instruction names (Generic when none).
Space take_space(Mods& m, bool* cluster = nullptr) {
  if (m.take("global")) return Space::Global;
  if (m.take("shared::cluster")) {
    if (cluster) *cluster = true;
    return Space::Shared;
  }
  if (m.take("shared") || m.take("shared::cta")) return Space::Shared;
  if (m.take("local")) return Space::Local;
  if (m.take("param") || m.take("param::entry") || m.take("param::func")) return Space::Param;
  if (m.take("const")) return Space::Const;
  return Space::Generic;
}
uint8_t take_vec(Mods& m) {
  const int v = m.take_one({"v2", "v4", "v8"});
  return static_cast<uint8_t>(v < 0 ? 1 : 2u << v);
}

}  // namespace

bool decode_mem(DecodeCtx& c, Mods& m, DInstr& d) {
  const Instruction& in = *c.in;
  const std::string& op = in.opcode;
  if ((op == "st" || op == "red") && m.has("async")) return false;  // st.async / red.async: decode_sync
  if (op == "ld" || op == "ldu" || op == "st") {
    const bool load = op != "st";
    const bool hint = m.has("L2::cache_hint");
    if (m.orders_beyond_cta()) d.flags |= F_FENCE;
    m.take_memory_hints();
    d.space = take_space(m);
    d.vec = take_vec(m);
    if (m.type_count() != 1) c.unsupported();
    d.type = m.type(0);
    const bool b128 = d.type == Type::B128 && d.vec == 1;
    if (d.type == Type::Pred || (type_bytes(d.type) > 8 && !b128) || type_bytes(d.type) == 0) c.unsupported();
    d.op = load ? Op::Ld : Op::St;
    c.expect_ops(hint ? 3 : 2, hint ? 3 : 2);
    const Operand& data = load ? in.ops[0] : in.ops[1];
    const Operand& addr = load ? in.ops[1] : in.ops[0];
    const size_t n = data.kind == OperandKind::Vector ? data.elems.size() : 1;
    if (n != d.vec) c.fail("the vector operand has " + std::to_string(n) + " elements, the instruction ." + std::to_string(d.vec));
    const DOp v = c.vector_of(data, d.type, load, true);
    const DOp a = c.address(addr);
    d.ops[0] = load ? v : a;
    d.ops[1] = load ? a : v;
    d.nops = 2;
    d.fn = b128 ? (load ? exec_ld128 : exec_st128) : load ? exec_ld : exec_st;
    return true;
  }
  if (op == "atom" || op == "red") {
    const bool hint = m.has("L2::cache_hint");
    if (m.orders_beyond_cta()) d.flags |= F_FENCE;
    m.take_memory_hints();
    m.take("noftz");
    d.space = take_space(m);
    const int k = m.take_one({"add", "inc", "dec", "cas", "exch", "min", "max", "and", "or", "xor"});
    if (k < 0 || m.type_count() != 1) c.unsupported();
    d.sub = static_cast<uint8_t>(k);
    d.type = m.type(0);
    const Type t = d.type;
    if (t == Type::Pred || type_bytes(t) > 8 || type_bytes(t) < 2) c.unsupported();
    if (is_float(t) && k != A_ADD && k != A_MIN && k != A_MAX && k != A_EXCH && k != A_CAS) c.unsupported();
    d.op = op == "atom" ? Op::Atom : Op::Red;
    const bool atom = op == "atom";
    const size_t nops = (atom ? 3 : 2) + (k == A_CAS ? 1 : 0) + (hint ? 1 : 0);
    c.expect_ops(nops, nops);
    size_t i = 0;
    if (atom) {
      d.ops[0] = c.dest(in.ops[i++], t, true);
    } else {
      d.ops[0].kind = OpKind::Sink;
    }
    d.ops[1] = c.address(in.ops[i++]);
    d.ops[2] = c.value(in.ops[i++], t);
    if (k == A_CAS) d.ops[3] = c.value(in.ops[i++], t);
    d.fn = exec_atom;
    return true;
  }
  if (op == "prefetch" || op == "prefetchu") {
    // Cache hints only: nothing to model (not even the address: a prefetch never faults).
    for (const char* h : {"global", "local", "L1", "L2", "tensormap", "L2::evict_last", "L2::evict_normal",
                          "const", "param", "shared", "shared::cta", "shared::cluster", "sync", "aligned"})
      m.take(h);
    c.expect_ops(1, 1);
    d.op = Op::Prefetch;
    d.fn = exec_nop;
    return true;
  }
  if (op == "cvta") {
    d.sub = m.take("to") ? 0 : 1;
    d.space = take_space(m);
    if (d.space == Space::Generic || m.type_count() != 1) c.unsupported();
    d.type = m.type(0);
    if (d.type != Type::U32 && d.type != Type::U64 && d.type != Type::B64 && d.type != Type::B32) c.unsupported();
    d.op = Op::Cvta;
    c.expect_ops(2, 2);
    d.ops[0] = c.dest(in.ops[0], d.type);
    d.ops[1] = c.value(in.ops[1], d.type, true);
    d.fn = exec_cvta;
    return true;
  }
  if (op == "mapa" || op == "getctarank") {
    bool cluster = false;
    d.space = take_space(m, &cluster);
    if ((d.space != Space::Generic && !cluster) || m.type_count() != 1) c.unsupported();
    d.type = m.type(0);
    d.op = op == "mapa" ? Op::Mapa : Op::Getctarank;
    const bool mapa = op == "mapa";
    c.expect_ops(mapa ? 3 : 2, mapa ? 3 : 2);
    d.ops[0] = c.dest(in.ops[0], mapa ? d.type : Type::U32);
    d.ops[1] = c.value(in.ops[1], d.type, true);
    if (mapa) d.ops[2] = c.value(in.ops[2], Type::U32);
    d.fn = mapa ? exec_mapa : exec_getctarank;
    return true;
  }
  if (op == "isspacep") {
    const int k = m.take_one({"global", "shared::cta", "shared::cluster", "local", "const", "param"});
    int kk = k;
    if (k < 0) {
      if (m.take("shared")) kk = 1;
      else if (m.take("param::entry")) kk = 5;
      else c.unsupported();
    }
    d.sub = static_cast<uint8_t>(kk);
    d.op = Op::Isspacep;
    c.expect_ops(2, 2);
    d.ops[0] = c.pred_dst(in.ops[0]);
    d.ops[1] = c.value(in.ops[1], Type::U64, true);
    d.fn = exec_isspacep;
    return true;
  }
  if (op == "ldmatrix" || op == "stmatrix") {
    m.take("sync");
    m.take("aligned");
    if (!m.take("m8n8")) c.unsupported();
    const int num = m.take_one({"x1", "x2", "x4"});
    if (num < 0) c.unsupported();
    if (m.take("trans")) d.flags |= F_TRANS;
    d.space = take_space(m);
    if (m.type_count() != 1 || m.type(0) != Type::B16) c.unsupported();
    d.type = Type::B16;
    d.op = op == "ldmatrix" ? Op::Ldmatrix : Op::Stmatrix;
    c.expect_ops(2, 2);
    const bool load = op == "ldmatrix";
    const Operand& regs = load ? in.ops[0] : in.ops[1];
    const size_t n = regs.kind == OperandKind::Vector ? regs.elems.size() : 1;
    if (n != (1u << num)) c.fail("expects " + std::to_string(1u << num) + " registers");
    const DOp v = c.vector_of(regs, Type::B32, load);
    const DOp a = c.address(load ? in.ops[1] : in.ops[0]);
    d.ops[0] = load ? v : a;
    d.ops[1] = load ? a : v;
    d.fn = load ? exec_ldmatrix : exec_stmatrix;
    return true;
  }
  return false;
}

}  // namespace pipesim::ptx
