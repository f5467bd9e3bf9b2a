// Everything that synchronises with other warps or with an asynchronous unit becomes a SyncRequest
// (sync.hpp): mbarrier operations, TMA and bulk copies, named and cluster barriers, wgmma, fences that
// the rules look at, nanosleep, setmaxnreg, trap. Lanes of one instruction are grouped by identical
// operands where the hardware counts them together (an arrive of 32 lanes on one barrier is one
// request with a = 32); bulk and TMA copies are one request per distinct copy the lanes name.
//
// Copies move NO data: shared memory contents written by TMA / bulk / cp.async copies are not
// modelled (a kernel that reads them reads whatever the threads stored there, or zeros); neither are
// the wgmma accumulators. What is modelled is when the copies land and how many bytes they count.
#include <algorithm>
#include <cstdio>
#include <string>

#include "sim/l2.hpp"
#include "verify/ptx/machine_impl.hpp"

namespace pipesim::ptx {
namespace {

// Lanes of one instruction grouped by (address, key).
struct Group {
  uint64_t addr = 0, key = 0;
  uint32_t lanes = 0, mask = 0;
  int64_t sum = 0;
};
struct Groups {
  Group g[32];
  uint32_t n = 0;
  void add(uint64_t addr, uint64_t key, uint32_t lane, int64_t value) {
    for (uint32_t i = 0; i < n; ++i)
      if (g[i].addr == addr && g[i].key == key) {
        ++g[i].lanes;
        g[i].mask |= 1u << lane;
        g[i].sum += value;
        return;
      }
    g[n++] = Group{addr, key, 1, 1u << lane, value};
  }
};

uint64_t mbar_address(Exec& x, const DInstr& in, const DOp& a, uint32_t lane) {
  return x.to_cluster_address(in.space, x.address(a, lane), 8, lane);
}

// ---- mbarrier ---------------------------------------------------------------------------------
// ops: init [a], count | inval [a] | expect_tx / complete_tx [a], bytes
void exec_mbar_simple(Exec& x, const DInstr& in) {
  const auto v = in.ops[1].kind != OpKind::None ? x.src(in.ops[1], 1) : Exec::Src{x.sink, 0};
  Groups gs;
  for_lanes(x.mask, [&](uint32_t l) {
    const int64_t val = static_cast<int64_t>(v[l] & 0xffffffffu);
    gs.add(mbar_address(x, in, in.ops[0], l), in.op == Op::MbarInit ? static_cast<uint64_t>(val) : 0, l, val);
  });
  for (uint32_t i = 0; i < gs.n; ++i) {
    const Group& g = gs.g[i];
    PendingRequest& p = x.push_request(in.op == Op::MbarInit ? SyncKind::MbarInit
                                       : in.op == Op::MbarInval ? SyncKind::MbarInval
                                       : in.op == Op::MbarExpectTx ? SyncKind::MbarExpectTx
                                                                   : SyncKind::MbarCompleteTx);
    p.req.bar = g.addr;
    p.req.lanes = g.lanes;
    // init: every lane sets the same count; expect / complete: the lanes' bytes add up.
    p.req.a = in.op == Op::MbarInit ? static_cast<int64_t>(g.key) : in.op == Op::MbarInval ? 0 : g.sum;
  }
}

// arrive / arrive_drop: ops = state (or sink), [a], count-or-bytes (None: 1).
void exec_mbar_arrive(Exec& x, const DInstr& in) {
  const bool has_count = in.ops[2].kind != OpKind::None;
  const auto c = has_count ? x.src(in.ops[2], 1) : Exec::Src{x.sink, 0};
  const bool expect_tx = in.flags & F_EXPECT_TX;
  const bool drop = in.op == Op::MbarArriveDrop;
  if (expect_tx) {  // each lane's arrive.expect_tx is its own arrival with its bytes
    for_lanes(x.mask, [&](uint32_t l) {
      const uint64_t bar = mbar_address(x, in, in.ops[1], l);
      const int64_t bytes = static_cast<int64_t>(c[l] & 0xffffffffu);
      if (drop) {
        PendingRequest& e = x.push_request(SyncKind::MbarExpectTx);
        e.req.bar = bar;
        e.req.a = bytes;
        PendingRequest& p = x.push_request(SyncKind::MbarArriveDrop);
        p.req.bar = bar;
        p.req.a = 1;
        p.req.fence = in.flags & F_FENCE;
      } else {
        PendingRequest& p = x.push_request(SyncKind::MbarArriveExpectTx);
        p.req.bar = bar;
        p.req.a = bytes;
        p.req.fence = in.flags & F_FENCE;
      }
    });
    return;
  }
  Groups gs;
  for_lanes(x.mask, [&](uint32_t l) {
    gs.add(mbar_address(x, in, in.ops[1], l), 0, l, has_count ? static_cast<int64_t>(c[l] & 0xffffffffu) : 1);
  });
  for (uint32_t i = 0; i < gs.n; ++i) {
    const Group& g = gs.g[i];
    PendingRequest& p = x.push_request(drop ? SyncKind::MbarArriveDrop : SyncKind::MbarArrive);
    p.req.bar = g.addr;
    p.req.lanes = g.lanes;
    p.req.a = g.sum;
    p.req.fence = in.flags & F_FENCE;
    if (!drop) {
      p.answer = AnswerKind::Token;
      p.lanes = g.mask;
      p.dst = in.ops[0];
    }
  }
}

// test_wait / try_wait: ops = pred, [a], parity-or-token
void exec_mbar_wait(Exec& x, const DInstr& in) {
  // The parity operand, or a state token from mbarrier.arrive: the token holds the phase parity of the
  // arrival in bit 0 and the wait is on that parity; either way bit 0.
  const auto ph = x.src(in.ops[2], 1);
  const bool try_wait = in.op == Op::MbarTryWait;
  const bool peek = try_wait && (in.flags & F_PEEK);  // decode.cpp, mark_peeks
  Groups gs;
  for_lanes(x.mask, [&](uint32_t l) { gs.add(mbar_address(x, in, in.ops[1], l), ph[l] & 1u, l, 0); });
  for (uint32_t i = 0; i < gs.n; ++i) {
    const Group& g = gs.g[i];
    PendingRequest& p = x.push_request(try_wait ? SyncKind::MbarTryWait : SyncKind::MbarTestWait);
    p.req.bar = g.addr;
    p.req.lanes = g.lanes;
    p.req.a = static_cast<int64_t>(g.key);
    p.answer = AnswerKind::Pred;
    p.lanes = g.mask;
    p.dst = in.ops[0];
    p.req.peek = peek;
    // try_wait returns only once the phase passed: true unless the engine says otherwise (a peek's
    // time limit).
    if (try_wait) x.set_pred(in.ops[0], ~0u, g.mask);
  }
}

// mbarrier.pending_count.b64 d, state: the token carries no count; 0.
void exec_mbar_pending(Exec& x, const DInstr& in) {
  uint64_t* d = x.dst(in.ops[0]);
  for_lanes(x.mask, [&](uint32_t l) { d[l] = 0; });
}

// ---- Copies ------------------------------------------------------------------------------------------
uint32_t tensormap_at(Exec& x, uint64_t addr, uint32_t lane) {
  const Where w = x.classify(addr);
  if (w == Where::Local) Exec::kernel_fault("bad_tensormap", "tensor map address " + hex(addr) + " is in local memory");
  const uint8_t* p = x.access(Space::Generic, addr, 16, lane, false, 8);
  uint64_t tag = 0;
  uint32_t index = 0;
  std::memcpy(&tag, p, 8);
  std::memcpy(&index, p + 8, 4);
  if (tag != kTensorMapTag || index >= x.grid->launch.tensormaps.size())
    Exec::kernel_fault("bad_tensormap", "no tensor map of the launch at " + hex(addr) +
                                            " (the 128 bytes there do not hold one)");
  return index;
}

void check_global_range(Exec& x, uint64_t addr, uint64_t bytes, const char* what) {
  if (x.classify(addr) != Where::Global || !x.grid->global.find(addr, std::max<uint64_t>(bytes, 1)))
    Exec::kernel_fault("bad_address", std::string(what) + " of " + std::to_string(bytes) + " bytes at " + hex(addr) +
                                          " is outside every buffer of the launch");
  if (addr % 16 != 0) Exec::kernel_fault("misaligned", std::string(what) + " at " + hex(addr) + " is not 16-byte aligned");
}

uint64_t shared_dst(Exec& x, Space space, uint64_t addr, uint64_t bytes, uint32_t lane) {
  const uint64_t a = x.to_cluster_address(space, addr, 1, lane);
  if (shared_offset(a) % 16 != 0)
    Exec::kernel_fault("misaligned", "copy destination " + hex(a) + " in shared memory is not 16-byte aligned");
  x.shared_bytes(a, static_cast<uint32_t>(std::min<uint64_t>(bytes, UINT32_MAX)), true);
  return a;
}

// The operands that make one bulk / TMA copy. Lanes of one instruction that name the same copy are one
// copy: ptxas issues these instructions on the warp's uniform datapath, once per distinct set of
// operands (a whole warp issuing a TMA store, as CUTLASS's epilogue does, stores the box once).
struct CopyKey {
  uint64_t dst = 0, src = 0, bar = 0, size = 0, mask = 0;
  int64_t coord[5] = {};
  bool operator==(const CopyKey&) const = default;
};
struct CopyGroups {
  CopyKey key[32];
  uint32_t lane[32] = {}, lanes[32] = {};
  uint32_t n = 0;
};
// Fills the keys of the executing lanes and groups them. ops: `dst`, `src` addresses, `bar` (or -1),
// `size` / `mask` operands (or -1), `coords` vector (or -1).
void group_copies(Exec& x, const DInstr& in, int dst, int src, int bar, int size, int mask, int coords, CopyGroups& g) {
  CopyKey keys[32];
  for_lanes(x.mask, [&](uint32_t l) {
    keys[l].dst = x.address(in.ops[static_cast<size_t>(dst)], l);
    keys[l].src = x.address(in.ops[static_cast<size_t>(src)], l);
    if (bar >= 0) keys[l].bar = x.address(in.ops[static_cast<size_t>(bar)], l);
  });
  if (size >= 0) {
    const auto v = x.src(in.ops[static_cast<size_t>(size)], 1);
    for_lanes(x.mask, [&](uint32_t l) { keys[l].size = v[l] & 0xffffffffu; });
  }
  if (mask >= 0) {
    const auto v = x.src(in.ops[static_cast<size_t>(mask)], 2);
    for_lanes(x.mask, [&](uint32_t l) { keys[l].mask = v[l] & 0xffffu; });
  }
  if (coords >= 0) {
    const DOp& cv = in.ops[static_cast<size_t>(coords)];
    for (uint32_t k = 0; k < cv.count && k < 5; ++k) {
      const auto v = x.src(x.elem(cv, k), 0);
      for_lanes(x.mask, [&](uint32_t l) { keys[l].coord[k] = static_cast<int32_t>(v[l]); });
    }
  }
  for_lanes(x.mask, [&](uint32_t l) {
    for (uint32_t i = 0; i < g.n; ++i)
      if (g.key[i] == keys[l]) {
        ++g.lanes[i];
        return;
      }
    g.key[g.n] = keys[l];
    g.lane[g.n] = l;
    g.lanes[g.n++] = 1;
  });
}

// The request for copy `i` of `g`, with a = the bytes it moves: the box of the tensor map at `tmap`
// (a tensor copy) or its size operand (a plain one). Callers check the global side of a plain copy.
PendingRequest& copy_request(Exec& x, SyncKind kind, const CopyGroups& g, uint32_t i, bool tensor, uint64_t tmap) {
  PendingRequest& p = x.push_request(kind);
  p.req.lanes = g.lanes[i];
  if (tensor) {
    p.req.tensormap = tensormap_at(x, tmap, g.lane[i]);
    p.req.a = static_cast<int64_t>(x.grid->launch.tensormaps[p.req.tensormap].box_bytes());
  } else {
    p.req.a = static_cast<int64_t>(g.key[i].size);
  }
  return p;
}

// The global box copy `k` reads or writes, for the L2 (sim::Op::box): the tensor map and the box's
// coordinates, or the global address and size of a plain bulk copy. Where the map's L2 promotion
// fills several boxes' rows at once, the key names the group (the innermost coordinate divided
// down to it), so the group's other boxes hit what this one's miss brought in.
uint64_t global_box(PendingRequest& p, const CopyKey& k, bool tensor, uint64_t addr, const Exec& x) {
  if (tensor) {
    const TensorMapDesc& t = x.grid->launch.tensormaps[p.req.tensormap];
    p.req.tma_row16 = t.row16();
    const uint32_t fill = t.l2_fill_boxes();
    int64_t coord[5];
    std::copy(std::begin(k.coord), std::end(k.coord), coord);
    if (fill > 1) {
      const int64_t group = int64_t{t.box[0]} * fill;
      coord[0] = coord[0] >= 0 ? coord[0] / group : (coord[0] - group + 1) / group;
      p.req.l2_fill_boxes = static_cast<uint8_t>(std::min<uint32_t>(fill, 255));
    }
    return sim::box_key(uint64_t{p.req.tensormap} + 1, coord, 5);
  }
  const int64_t where[2] = {static_cast<int64_t>(addr), static_cast<int64_t>(k.size)};
  return sim::box_key(0, where, 2);
}

// Global -> shared::cluster (tensor or plain) and shared::cta -> shared::cluster: TmaLoad.
// ops: [dst], [src or tmap], [mbar], size (plain; None for tensor), ctaMask (multicast; else None),
// coordinates (tensor)
void exec_tma_load(Exec& x, const DInstr& in) {
  const bool tensor = in.flags & F_TENSOR, multicast = in.flags & F_MULTICAST;
  CopyGroups g;
  group_copies(x, in, 0, 1, 2, tensor ? -1 : 3, multicast ? 4 : -1, tensor ? 5 : -1, g);
  for (uint32_t i = 0; i < g.n; ++i) {
    const CopyKey& k = g.key[i];
    const uint32_t l = g.lane[i];
    PendingRequest& p = copy_request(x, SyncKind::TmaLoad, g, i, tensor, k.src);
    if (!tensor) {
      if (in.space == Space::Global) check_global_range(x, k.src, k.size, "bulk copy source");
      if (k.size % 16 != 0) Exec::kernel_fault("misaligned", "bulk copy size " + std::to_string(k.size) + " is not a multiple of 16");
    }
    p.req.dst = shared_dst(x, Space::Shared, k.dst, static_cast<uint64_t>(p.req.a), l);
    p.req.bar = x.to_cluster_address(Space::Shared, k.bar, 8, l);
    p.req.b = static_cast<int64_t>(k.mask);
    p.req.cta_group2 = in.flags & F_CTA_GROUP2;
    if (tensor || in.space == Space::Global) p.req.box = global_box(p, k, tensor, k.src, x);
  }
}

// Shared::cta -> global (plain, tensor, reduce): BulkStore. ops: [dst or tmap], [src], size (plain),
// coordinates (tensor, ops[5])
void exec_bulk_store(Exec& x, const DInstr& in) {
  const bool tensor = in.flags & F_TENSOR;
  CopyGroups g;
  group_copies(x, in, 0, 1, -1, tensor ? -1 : 2, -1, tensor ? 5 : -1, g);
  for (uint32_t i = 0; i < g.n; ++i) {
    const CopyKey& k = g.key[i];
    PendingRequest& p = copy_request(x, SyncKind::BulkStore, g, i, tensor, k.dst);
    if (!tensor) check_global_range(x, k.dst, k.size, "bulk store destination");
    p.req.box = global_box(p, k, tensor, k.dst, x);
    p.req.dst = shared_dst(x, Space::Shared, k.src, static_cast<uint64_t>(p.req.a), g.lane[i]);
  }
}

// cp.async (Ampere): ops = [dst], [src], cp-size. One request for the warp: a = all lanes' bytes.
void exec_async_copy(Exec& x, const DInstr& in) {
  const auto size = x.src(in.ops[2], 1);
  int64_t total = 0;
  for_lanes(x.mask, [&](uint32_t l) {
    const int64_t b = static_cast<int64_t>(size[l] & 0xffu);
    (void)x.to_cluster_address(in.space, x.address(in.ops[0], l), static_cast<uint32_t>(b), l);
    total += b;
  });
  PendingRequest& p = x.push_request(SyncKind::AsyncCopy);
  p.req.a = total;
  p.req.lanes = static_cast<uint32_t>(std::popcount(x.mask));
}

void exec_async_mbar_arrive(Exec& x, const DInstr& in) {
  Groups gs;
  for_lanes(x.mask, [&](uint32_t l) { gs.add(mbar_address(x, in, in.ops[0], l), 0, l, 1); });
  for (uint32_t i = 0; i < gs.n; ++i) {
    PendingRequest& p = x.push_request(SyncKind::AsyncMbarArrive);
    p.req.bar = gs.g[i].addr;
    p.req.lanes = gs.g[i].lanes;
    p.req.b = (in.flags & F_NOINC) ? 1 : 0;
  }
}

// st.async / red.async: the store (or reduction) to a cluster CTA's shared memory, then complete_tx of
// its bytes on that CTA's mbarrier. ops = [a], value vector, [mbar]
void exec_st_async(Exec& x, const DInstr& in) {
  const DOp& sv = in.ops[1];
  const uint32_t n = sv.count, esize = type_bytes(in.type), total = n * esize;
  Groups gs;
  for_lanes(x.mask, [&](uint32_t l) {
    const uint64_t a = x.to_cluster_address(Space::Shared, x.address(in.ops[0], l), total, l);
    uint8_t* p = x.shared_bytes(a, total, true);
    for (uint32_t k = 0; k < n; ++k) {
      const auto s = x.src(x.elem(sv, k), 0);
      uint64_t v = s[l];
      if (in.op == Op::Red) {  // red.async: only .add / .min / .max / .inc / .dec / .and / .or / .xor on ints
        uint64_t old = 0;
        std::memcpy(&old, p + k * esize, esize);
        const uint64_t m = width_mask(esize * 8);
        const bool sign = is_signed(in.type);
        const int64_t so = static_cast<int64_t>(sext(old, esize * 8)), sn = static_cast<int64_t>(sext(v, esize * 8));
        switch (in.sub) {
          case 0: v = (old + v) & m; break;
          case 5: v = sign ? (so < sn ? old : v) : std::min(old & m, v & m); break;
          case 6: v = sign ? (so > sn ? old : v) : std::max(old & m, v & m); break;
          case 7: v = old & v; break;
          case 8: v = old | v; break;
          case 9: v = old ^ v; break;
          default: break;
        }
      }
      std::memcpy(p + k * esize, &v, esize);
    }
    gs.add(x.to_cluster_address(Space::Shared, x.address(in.ops[2], l), 8, l), 0, l, total);
  });
  for (uint32_t i = 0; i < gs.n; ++i) {
    PendingRequest& p = x.push_request(SyncKind::MbarCompleteTx);
    p.req.bar = gs.g[i].addr;
    p.req.lanes = gs.g[i].lanes;
    p.req.a = gs.g[i].sum;
  }
}

// ---- One request per warp -----------------------------------------------------------------------
// Kinds without operands (fences, commits) and with uniform immediates (wait_group N ...).
void exec_plain(Exec& x, const DInstr& in) {
  PendingRequest& p = x.push_request(static_cast<SyncKind>(in.sub));
  p.req.lanes = static_cast<uint32_t>(std::popcount(x.mask));
  const uint32_t first = static_cast<uint32_t>(std::countr_zero(x.mask));
  if (in.ops[0].kind != OpKind::None) p.req.a = static_cast<int64_t>(x.src(in.ops[0], 0)[first] & 0xffffffffu);
  p.req.b = in.aux;
  if (in.op == Op::WgmmaMma) {  // aux = m << 32 | n << 16 | k
    p.req.a = in.aux >> 32;
    p.req.b = (in.aux >> 16) & 0xffff;
    p.req.c = in.aux & 0xffff;
    p.req.mma_kind = in.sub2;
  }
}

// bar / barrier: ops = (d), a (id), b (count, None = the CTA), c (pred, red); sub2: 0 popc, 1 and, 2 or
void exec_named(Exec& x, const DInstr& in) {
  const uint32_t first = static_cast<uint32_t>(std::countr_zero(x.mask));
  const SyncKind kind = in.op == Op::BarSync ? SyncKind::NamedSync : in.op == Op::BarArrive ? SyncKind::NamedArrive
                                                                                           : SyncKind::NamedRed;
  PendingRequest& p = x.push_request(kind);
  p.req.lanes = static_cast<uint32_t>(std::popcount(x.mask));
  p.req.a = static_cast<int64_t>(x.src(in.ops[1], 0)[first] & 0xffffffffu);
  p.req.b = in.ops[2].kind != OpKind::None ? static_cast<int64_t>(x.src(in.ops[2], 1)[first] & 0xffffffffu) : 0;
  if (kind == SyncKind::NamedRed) {
    // This warp's share: how many of its lanes hold a true predicate. The engine sums the shares of the
    // warps; answer() turns the sum into popc / and / or.
    const uint32_t t = x.pred_src(in.ops[3]) & x.mask;
    p.req.c = std::popcount(t);
    p.answer = AnswerKind::NamedRed;
    p.lanes = x.mask;
    p.dst = in.ops[0];
    p.red_op = in.sub2;
    p.red_threads = p.req.b ? static_cast<uint32_t>(p.req.b) : x.grid->threads;
  }
}

void exec_trap(Exec&, const DInstr& in) {
  Exec::kernel_fault("trap", in.op == Op::Trap && in.sub ? "brkpt: the kernel stopped at a breakpoint"
                                                         : "trap: the kernel aborted");
}

void exec_createpolicy(Exec& x, const DInstr& in) {
  uint64_t* d = x.dst(in.ops[0]);
  for_lanes(x.mask, [&](uint32_t l) { d[l] = 0x1000000000000000ull; });  // an opaque cache policy
}

Space mbar_space(Mods& m) {
  if (m.take("shared") || m.take("shared::cta") || m.take("shared::cluster")) return Space::Shared;
  return Space::Generic;
}
void take_sem_scope(Mods& m) {
  for (const char* s : {"release", "relaxed", "acquire", "cta", "cluster", "gpu", "sys", "sync", "aligned"}) m.take(s);
}

}  // namespace

bool decode_sync(DecodeCtx& c, Mods& m, DInstr& d) {
  const Instruction& in = *c.in;
  const std::string& op = in.opcode;
  const size_t nin = in.ops.size();
  auto plain = [&](Op o, SyncKind k) {
    d.op = o;
    d.sub = static_cast<uint8_t>(k);
    d.fn = exec_plain;
  };
  if (op == "mbarrier") {
    const int k = m.take_one({"init", "inval", "arrive", "arrive_drop", "expect_tx", "complete_tx", "test_wait",
                              "try_wait", "pending_count"});
    if (k < 0) c.unsupported();
    const bool parity = m.take("parity");
    if (m.take("expect_tx")) d.flags |= F_EXPECT_TX;
    if (m.take("noComplete")) d.flags |= F_NOCOMPLETE;
    // An arrival releases at the CTA's scope unless it names the cluster's (release is the default).
    if ((k == 2 || k == 3) && m.has("cluster") && !m.has("relaxed")) d.flags |= F_FENCE;
    take_sem_scope(m);
    d.space = mbar_space(m);
    if (m.type_count() != 1 || m.type(0) != Type::B64) c.unsupported();
    d.type = Type::B64;
    switch (k) {
      case 0: case 1: case 4: case 5: {  // init / inval / expect_tx / complete_tx
        d.op = k == 0 ? Op::MbarInit : k == 1 ? Op::MbarInval : k == 4 ? Op::MbarExpectTx : Op::MbarCompleteTx;
        const size_t want = k == 1 ? 1 : 2;
        c.expect_ops(want, want);
        d.ops[0] = c.address(in.ops[0]);
        if (want == 2) d.ops[1] = c.value(in.ops[1], Type::U32);
        d.fn = exec_mbar_simple;
        return true;
      }
      case 2: case 3: {  // arrive / arrive_drop
        d.op = k == 2 ? Op::MbarArrive : Op::MbarArriveDrop;
        const bool tx = d.flags & F_EXPECT_TX;
        c.expect_ops(tx ? 3 : 2, 3);
        d.ops[0] = c.dest(in.ops[0], Type::B64);
        d.ops[1] = c.address(in.ops[1]);
        if (nin == 3) d.ops[2] = c.value(in.ops[2], Type::U32);
        d.fn = exec_mbar_arrive;
        return true;
      }
      case 6: case 7: {  // test_wait / try_wait
        d.op = k == 6 ? Op::MbarTestWait : Op::MbarTryWait;
        if (!parity) d.flags |= F_TOKEN;
        c.expect_ops(3, k == 7 ? 4 : 3);
        d.ops[0] = c.pred_dst(in.ops[0]);
        d.ops[1] = c.address(in.ops[1]);
        d.ops[2] = c.value(in.ops[2], parity ? Type::U32 : Type::B64);
        if (nin == 4) d.ops[3] = c.value(in.ops[3], Type::U32);  // suspend-time hint: unused
        d.fn = exec_mbar_wait;
        return true;
      }
      default:
        d.op = Op::MbarPendingCount;
        c.expect_ops(2, 2);
        d.ops[0] = c.dest(in.ops[0], Type::U32);
        d.ops[1] = c.value(in.ops[1], Type::B64);
        d.fn = exec_mbar_pending;
        return true;
    }
  }
  if (op == "cp" || op == "st" || op == "red") {
    // cp.async.bulk[.tensor|.prefetch] / cp.reduce.async.bulk / cp.async (Ampere) / st.async / red.async
    const bool reduce = m.take("reduce");
    if (!m.take("async")) return false;  // plain st / red: decode_mem
    if (op != "cp") {
      // st.async / red.async .shared::cluster.mbarrier::complete_tx::bytes
      take_sem_scope(m);
      if (!m.take("shared::cluster") || !m.take("mbarrier::complete_tx::bytes")) c.unsupported();
      if (op == "red") {
        const int k = m.take_one({"add", "inc", "dec", "cas", "exch", "min", "max", "and", "or", "xor"});
        if (k < 0 || k == 1 || k == 2 || k == 3 || k == 4) c.unsupported();
        d.sub = static_cast<uint8_t>(k);
      }
      d.vec = static_cast<uint8_t>(m.take("v2") ? 2 : m.take("v4") ? 4 : 1);
      if (m.type_count() != 1 || (is_float(m.type(0)) && op == "red")) c.unsupported();
      d.type = m.type(0);
      d.op = op == "st" ? Op::StAsync : Op::Red;
      c.expect_ops(3, 3);
      d.ops[0] = c.address(in.ops[0]);
      d.ops[1] = c.vector_of(in.ops[1], d.type, false);
      d.ops[2] = c.address(in.ops[2]);
      d.fn = exec_st_async;
      return true;
    }
    if (m.take("bulk")) {
      const bool tensor = m.take("tensor");
      if (m.take("prefetch")) {  // cp.async.bulk.prefetch(.tensor).L2.global: a hint
        for (const char* s : {"1d", "2d", "3d", "4d", "5d", "L2", "global", "tile", "im2col", "im2col::w",
                              "im2col::w::128", "tile::gather4", "L2::cache_hint"})
          m.take(s);
        d.op = Op::Prefetch;
        d.fn = exec_nop;
        return true;
      }
      if (m.take("commit_group")) {
        c.expect_ops(0, 0);
        plain(Op::BulkCommit, SyncKind::BulkCommit);
        return true;
      }
      if (m.take("wait_group")) {
        if (m.take("read")) d.aux = 1;
        c.expect_ops(1, 1);
        d.ops[0] = c.value(in.ops[0], Type::U32);
        plain(Op::BulkWait, SyncKind::BulkWait);
        return true;
      }
      if (tensor) {
        const int dims = m.take_one({"1d", "2d", "3d", "4d", "5d"});
        if (dims < 0) c.unsupported();
        d.flags |= F_TENSOR;
        d.aux = dims + 1;
      }
      const bool hint = m.take("L2::cache_hint");
      for (const char* s : {"tile", "im2col", "im2col::w", "im2col::w::128", "tile::gather4", "tile::scatter4",
                            "cta_group::1", "im2col_no_offs"})
        m.take(s);
      if (m.take("cta_group::2")) d.flags |= F_CTA_GROUP2;
      if (m.take("multicast::cluster")) d.flags |= F_MULTICAST;
      if (reduce) m.take_one({"add", "min", "max", "inc", "dec", "and", "or", "xor"});
      if (m.take("mbarrier::complete_tx::bytes")) {
        // global -> shared::cluster (or ::cta), or shared::cta -> shared::cluster: complete_tx on [mbar]
        const bool from_global = m.take("global");
        m.take("shared::cluster");
        m.take("shared::cta");
        d.op = Op::TmaLoad;
        d.space = from_global ? Space::Global : Space::Shared;
        // [dst], [src|tmap, coords], (size,) [mbar] (, im2col offsets) (, ctaMask) (, policy)
        if (nin < (tensor ? 3u : 4u)) c.expect_ops(tensor ? 3 : 4, 7);
        size_t i = 0;
        d.ops[0] = c.address(in.ops[i++]);
        d.ops[1] = c.address(in.ops[i++]);
        if (tensor) {
          if (in.ops[1].elems.empty()) c.fail("a tensor copy needs [tensorMap, {coordinates}]");
          d.ops[5] = c.vector_of(in.ops[1].elems[0], Type::S32, false);
        } else {
          d.ops[3] = c.value(in.ops[i++], Type::U32);
        }
        d.ops[2] = c.address(in.ops[i++]);
        if (tensor && i < nin && in.ops[i].kind == OperandKind::Vector) ++i;  // im2col offsets
        if (d.flags & F_MULTICAST) {
          if (i >= nin) c.fail("a .multicast::cluster copy needs a CTA mask");
          d.ops[4] = c.value(in.ops[i++], Type::U16, true);
        }
        if (hint) {
          if (i >= nin) c.fail(".L2::cache_hint needs a cache policy operand");
          c.value(in.ops[i++], Type::B64);
        }
        if (i != nin) c.fail("too many operands");
        d.fn = exec_tma_load;
        return true;
      }
      if (m.take("bulk_group")) {
        // shared::cta -> global (plain, tensor, reduce; the reduction's element type is a type suffix)
        if (!m.take("global") || !m.take("shared::cta")) c.unsupported();
        m.take("cp_mask");
        d.op = Op::BulkStore;
        if (nin < (tensor ? 2u : 3u)) c.expect_ops(tensor ? 2 : 3, 5);
        size_t i = 0;
        d.ops[0] = c.address(in.ops[i++]);
        d.ops[1] = c.address(in.ops[i++]);
        if (tensor) {
          if (in.ops[0].elems.empty()) c.fail("a tensor copy needs [tensorMap, {coordinates}]");
          d.ops[5] = c.vector_of(in.ops[0].elems[0], Type::S32, false);
        } else {
          d.ops[2] = c.value(in.ops[i++], Type::U32);
        }
        if (hint) {
          if (i >= nin) c.fail(".L2::cache_hint needs a cache policy operand");
          c.value(in.ops[i++], Type::B64);
        }
        if (i < nin && !tensor) c.value(in.ops[i++], Type::B16);  // .cp_mask byte mask
        if (i != nin) c.fail("too many operands");
        d.fn = exec_bulk_store;
        return true;
      }
      c.unsupported();
    }
    // Ampere cp.async
    if (m.take("commit_group")) {
      plain(Op::AsyncCommit, SyncKind::AsyncCommit);
      return true;
    }
    if (m.take("wait_group")) {
      c.expect_ops(1, 1);
      d.ops[0] = c.value(in.ops[0], Type::U32);
      plain(Op::AsyncWait, SyncKind::AsyncWait);
      return true;
    }
    if (m.take("wait_all")) {
      plain(Op::AsyncWait, SyncKind::AsyncWait);
      return true;
    }
    if (m.take("mbarrier")) {
      if (!m.take("arrive")) c.unsupported();
      if (m.take("noinc")) d.flags |= F_NOINC;
      d.space = mbar_space(m);
      if (m.type_count() != 1 || m.type(0) != Type::B64) c.unsupported();
      d.op = Op::AsyncMbarArrive;
      c.expect_ops(1, 1);
      d.ops[0] = c.address(in.ops[0]);
      d.fn = exec_async_mbar_arrive;
      return true;
    }
    if (m.take_one({"ca", "cg"}) >= 0) {
      d.space = m.take("shared") || m.take("shared::cta") ? Space::Shared : Space::None;
      if (d.space != Space::Shared || !m.take("global")) c.unsupported();
      const bool hint = m.take("L2::cache_hint");
      m.take_one({"L2::64B", "L2::128B", "L2::256B"});
      d.op = Op::AsyncCopy;
      c.expect_ops(3, 5);
      d.ops[0] = c.address(in.ops[0]);
      d.ops[1] = c.address(in.ops[1]);
      d.ops[2] = c.value(in.ops[2], Type::U32);
      (void)hint;
      d.fn = exec_async_copy;
      return true;
    }
    c.unsupported();
  }
  if (op == "bar" || op == "barrier") {
    m.take("cta");
    if (m.take("cluster")) {
      const int k = m.take_one({"arrive", "wait"});
      if (k < 0) c.unsupported();
      const int sem = m.take_one({"release", "relaxed", "acquire"});
      m.take("aligned");
      c.expect_ops(0, 0);
      plain(k == 0 ? Op::ClusterArrive : Op::ClusterWait, k == 0 ? SyncKind::ClusterArrive : SyncKind::ClusterWait);
      d.aux = k == 0 && sem == 1 ? 1 : 0;  // ClusterArrive: b = 1 for .relaxed (no release semantics)
      return true;
    }
    const int k = m.take_one({"sync", "arrive", "red"});
    m.take("aligned");
    if (k < 0) c.unsupported();
    d.op = k == 0 ? Op::BarSync : k == 1 ? Op::BarArrive : Op::BarRed;
    if (k == 2) {
      const int r = m.take_one({"popc", "and", "or"});
      if (r < 0 || m.type_count() != 1) c.unsupported();
      d.sub2 = static_cast<uint8_t>(r);
      d.type = m.type(0);
      if ((r == 0) != (d.type == Type::U32)) c.unsupported();
      c.expect_ops(3, 4);
      d.ops[0] = r == 0 ? c.dest(in.ops[0], Type::U32) : c.pred_dst(in.ops[0]);
      d.ops[1] = c.value(in.ops[1], Type::U32);
      if (nin == 4) d.ops[2] = c.value(in.ops[2], Type::U32);
      d.ops[3] = c.pred_src(in.ops[nin - 1]);
    } else {
      c.expect_ops(k == 1 ? 2 : 1, 2);
      d.ops[1] = c.value(in.ops[0], Type::U32);
      if (nin == 2) d.ops[2] = c.value(in.ops[1], Type::U32);
    }
    d.fn = exec_named;
    return true;
  }
  if (op == "fence" || op == "membar") {
    if (m.take("mbarrier_init")) {
      m.take("release");
      m.take("cluster");
      plain(Op::Fence, SyncKind::FenceInit);
      return true;
    }
    const bool proxy = m.take("proxy");
    if (proxy && (m.take("async") || m.take("async::generic"))) {
      for (const char* s : {"global", "shared::cta", "shared::cluster", "release", "acquire", "sync_restrict::shared::cluster",
                            "sync_restrict::shared::cta", "cluster", "cta"})
        m.take(s);
      plain(Op::Fence, SyncKind::FenceProxyAsync);
      return true;
    }
    if (proxy) m.take_one({"alias", "tensormap::generic"});
    else if ((op == "membar" && (m.has("gl") || m.has("sys"))) || m.orders_beyond_cta()) d.flags |= F_FENCE;
    for (const char* s : {"sc", "acq_rel", "acquire", "release", "cta", "cluster", "gpu", "sys", "gl", "sync_restrict::shared::cluster",
                          "sync_restrict::shared::cta"})
      m.take(s);
    d.op = Op::Fence;
    d.fn = exec_nop;  // orders nothing the model keeps apart (the engine is sequentially consistent)
    return true;
  }
  if (op == "nanosleep") {
    if (m.type_count() != 1 || m.type(0) != Type::U32) c.unsupported();
    c.expect_ops(1, 1);
    d.ops[0] = c.value(in.ops[0], Type::U32);
    plain(Op::Nanosleep, SyncKind::Sleep);
    return true;
  }
  if (op == "setmaxnreg") {
    const int k = m.take_one({"inc", "dec"});
    m.take("sync");
    m.take("aligned");
    if (k < 0 || m.type_count() != 1 || m.type(0) != Type::U32) c.unsupported();
    c.expect_ops(1, 1);
    d.ops[0] = c.value(in.ops[0], Type::U32);
    d.aux = k == 0 ? 1 : 0;
    plain(Op::SetMaxNreg, SyncKind::SetMaxNreg);
    return true;
  }
  if (op == "trap" || op == "brkpt") {
    c.expect_ops(0, 0);
    d.op = Op::Trap;
    d.sub = op == "brkpt";
    d.fn = exec_trap;
    return true;
  }
  if (op == "createpolicy") {
    m.take_one({"fractional", "range"});
    for (const char* s : {"L2::evict_last", "L2::evict_normal", "L2::evict_first", "L2::evict_unchanged"}) m.take(s);
    if (m.type_count() != 1 || m.type(0) != Type::B64) c.unsupported();
    c.expect_ops(1, 5);
    d.ops[0] = c.dest(in.ops[0], Type::B64);
    d.fn = exec_createpolicy;
    return true;
  }
  if (op == "wgmma") {
    m.take("sync");
    m.take("aligned");
    if (m.take("fence")) {
      c.expect_ops(0, 0);
      plain(Op::WgmmaFence, SyncKind::WgmmaFence);
      return true;
    }
    if (m.take("commit_group")) {
      c.expect_ops(0, 0);
      plain(Op::WgmmaCommit, SyncKind::WgmmaCommit);
      return true;
    }
    if (m.take("wait_group")) {
      c.expect_ops(1, 1);
      d.ops[0] = c.value(in.ops[0], Type::U32);
      plain(Op::WgmmaWait, SyncKind::WgmmaWait);
      return true;
    }
    if (!m.take("mma_async")) c.unsupported();
    m.take("sp");
    m.take("satfinite");
    // The shape: m64nNkK.
    int mm = 0, nn = 0, kk = 0;
    bool shape = false;
    for (const std::string& s : in.mods) {
      if (std::sscanf(s.c_str(), "m%dn%dk%d", &mm, &nn, &kk) == 3) {
        shape = m.take(s.c_str());
        break;
      }
    }
    if (!shape || m.type_count() != 3) c.unsupported();
    const Type at = m.type(1);
    uint8_t kind;
    switch (at) {
      case Type::F16: case Type::BF16: kind = 0; break;       // model::MmaKind::F16
      case Type::TF32: kind = 1; break;                        // TF32
      case Type::E4M3: case Type::E5M2: kind = 2; break;       // F8F6F4
      case Type::S8: case Type::U8: kind = 3; break;           // I8
      default: c.unsupported();
    }
    plain(Op::WgmmaMma, SyncKind::WgmmaMma);
    d.sub2 = kind;
    d.aux = (int64_t{mm} << 32) | (int64_t{nn} << 16) | int64_t{kk};
    d.type = m.type(0);
    d.type2 = at;
    d.type3 = m.type(2);
    if (nin < 4) c.fail("expects d, a, b, scale-d ...");
    return true;
  }
  return false;
}

}  // namespace pipesim::ptx
