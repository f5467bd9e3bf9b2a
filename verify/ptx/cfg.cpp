// The control-flow graph of a decoded function, the immediate post-dominator of every branch (where the
// lanes a divergent branch splits meet again: the SIMT stack's reconvergence point) and the register
// compaction. A branch whose post-dominator is the virtual exit node (or that sits in a loop no path
// leaves) gets kNoPc: its lanes reconverge only when they return or exit.
#include <algorithm>
#include <bit>

#include "verify/ptx/machine_impl.hpp"

namespace pipesim::ptx {
namespace {

bool ends_flow(Op op) { return op == Op::Ret || op == Op::Exit || op == Op::Trap; }

struct Graph {
  uint32_t n = 0, nb = 0, exit_node = 0;
  std::vector<uint32_t> block_of, block_start;
  std::vector<std::vector<uint32_t>> succ, pred;
  uint32_t block_end(uint32_t b) const { return (b + 1 < nb ? block_start[b + 1] : n) - 1; }
};

// The control-flow graph. For reconvergence (`for_reconvergence`), lanes that leave (ret, exit, trap)
// must not hold the others back: a guarded leave keeps only its fall-through edge, and an edge into a
// block that does nothing but leave (nvcc's shared `ret` block that early returns branch to) is dropped;
// a block left with no successor leads to the exit node. So `if (a) { if (b) return; x; } R:` gives the
// inner branch the reconvergence point x and the outer one R, where the lanes still running meet,
// also inside a persistent loop that ends by leaving (see the end).
Graph build_graph(const DFunction& df, bool for_reconvergence) {
  Graph g;
  g.n = static_cast<uint32_t>(df.code.size());
  const uint32_t n = g.n;
  std::vector<uint8_t> leader(n + 1, 0);
  leader[0] = 1;
  for (uint32_t i = 0; i < n; ++i) {
    const DInstr& d = df.code[i];
    if (d.op == Op::Bra) {
      if (d.target < n) leader[d.target] = 1;
      leader[i + 1] = 1;
    } else if (ends_flow(d.op)) {
      leader[i + 1] = 1;
    }
  }
  g.block_of.resize(n);
  for (uint32_t i = 0; i < n; ++i) {
    if (leader[i]) g.block_start.push_back(i);
    g.block_of[i] = static_cast<uint32_t>(g.block_start.size() - 1);
  }
  g.nb = static_cast<uint32_t>(g.block_start.size());
  g.exit_node = g.nb;
  g.succ.resize(g.nb + 1);
  g.pred.resize(g.nb + 1);
  std::vector<uint8_t> pure_leave(g.nb + 1, 0);
  if (for_reconvergence) {
    for (uint32_t b = 0; b < g.nb; ++b) {
      const DInstr& d = df.code[g.block_start[b]];
      pure_leave[b] = g.block_end(b) == g.block_start[b] && ends_flow(d.op) && d.guard < 0;
    }
  }
  std::vector<uint8_t> dropped(g.nb + 1, 0);  // a block with a leave edge left out
  auto edge = [&](uint32_t from, uint32_t to) {
    if (to != g.exit_node && pure_leave[to] && !pure_leave[from]) {  // the lanes leave there
      dropped[from] = 1;
      return;
    }
    g.succ[from].push_back(to);
    g.pred[to].push_back(from);
  };
  for (uint32_t b = 0; b < g.nb; ++b) {
    const uint32_t last = g.block_end(b);
    const DInstr& d = df.code[last];
    const uint32_t fall = last + 1 < n ? g.block_of[last + 1] : g.exit_node;
    if (d.op == Op::Bra) {
      edge(b, d.target < n ? g.block_of[d.target] : g.exit_node);
      if (d.guard >= 0) edge(b, fall);
    } else if (ends_flow(d.op)) {
      if (d.guard < 0 || !for_reconvergence) edge(b, g.exit_node);
      if (d.guard >= 0) {
        edge(b, fall);
        if (for_reconvergence) dropped[b] = 1;
      }
    } else {
      edge(b, fall);
    }
    if (for_reconvergence && g.succ[b].empty()) edge(b, g.exit_node);
  }
  if (!for_reconvergence) return g;
  // A loop whose only ways out leave (a persistent kernel's tile loop ending in `@done bra RET`) would
  // reach the exit node no more: give its last such block (the loop's exit, in program order) its edge
  // back, one loop at a time, so that the loop body keeps its own join points.
  for (;;) {
    std::vector<uint8_t> reach(g.nb + 1, 0);
    std::vector<uint32_t> work{g.exit_node};
    reach[g.exit_node] = 1;
    while (!work.empty()) {
      const uint32_t v = work.back();
      work.pop_back();
      for (uint32_t p : g.pred[v])
        if (!reach[p]) {
          reach[p] = 1;
          work.push_back(p);
        }
    }
    uint32_t last = g.nb;
    for (uint32_t b = 0; b < g.nb; ++b)
      if (dropped[b] && !reach[b]) last = b;
    if (last == g.nb) break;
    dropped[last] = 0;
    g.succ[last].push_back(g.exit_node);
    g.pred[g.exit_node].push_back(last);
  }
  return g;
}

}  // namespace

void compute_reconvergence(DFunction& df) {
  if (df.code.empty()) return;
  const Graph g = build_graph(df, true);
  const uint32_t nb = g.nb, exit_node = g.exit_node;
  const auto& succ = g.succ;
  const auto& pred = g.pred;
  const auto& block_start = g.block_start;
  // Post-order of the reverse graph from the exit node (iterative DFS over predecessors).
  std::vector<int32_t> po_num(nb + 1, -1);
  std::vector<uint32_t> po_order;
  {
    std::vector<uint8_t> visited(nb + 1, 0);
    std::vector<std::pair<uint32_t, size_t>> st{{exit_node, 0}};
    visited[exit_node] = 1;
    while (!st.empty()) {
      auto& [node, k] = st.back();
      if (k < pred[node].size()) {
        const uint32_t p = pred[node][k++];
        if (!visited[p]) {
          visited[p] = 1;
          st.emplace_back(p, 0);
        }
      } else {
        po_num[node] = static_cast<int32_t>(po_order.size());
        po_order.push_back(node);
        st.pop_back();
      }
    }
  }
  // Cooper, Harvey and Kennedy's iterative dominator algorithm on the reverse graph.
  constexpr uint32_t kUndef = UINT32_MAX;
  std::vector<uint32_t> ipdom(nb + 1, kUndef);
  ipdom[exit_node] = exit_node;
  auto intersect = [&](uint32_t a, uint32_t b) {
    while (a != b) {
      while (po_num[a] < po_num[b]) a = ipdom[a];
      while (po_num[b] < po_num[a]) b = ipdom[b];
    }
    return a;
  };
  bool changed = true;
  while (changed) {
    changed = false;
    for (size_t k = po_order.size(); k-- > 0;) {  // reverse post-order
      const uint32_t b = po_order[k];
      if (b == exit_node) continue;
      uint32_t best = kUndef;
      for (uint32_t s : succ[b]) {
        if (ipdom[s] == kUndef || po_num[s] < 0) continue;
        best = best == kUndef ? s : intersect(s, best);
      }
      if (best != kUndef && ipdom[b] != best) {
        ipdom[b] = best;
        changed = true;
      }
    }
  }
  for (uint32_t b = 0; b < nb; ++b) {
    DInstr& d = df.code[g.block_end(b)];
    if (d.op != Op::Bra) continue;
    const uint32_t p = ipdom[b];
    d.rpc = (p == kUndef || p == exit_node) ? kNoPc : block_start[p];
  }
}

// Liveness by the usual backward dataflow over blocks (bitsets), then one interval per register in
// instruction order covering every point where it is live, then a linear scan that gives registers
// whose intervals do not touch the same slot. An instruction under a guard may not write its
// destination, so its destinations count as read there too. Registers of different lanes never mix:
// each lane is a thread, and a thread's registers are exactly what liveness describes.
void compact_registers(DFunction& df, const std::vector<std::vector<uint32_t>>& uses,
                       const std::vector<std::vector<uint32_t>>& defs) {
  const uint32_t nregs = df.nvals;
  if (df.code.empty() || nregs == 0) return;
  const Graph g = build_graph(df, false);
  const uint32_t nb = g.nb, words = (nregs + 63) / 64;
  auto bit = [](const std::vector<uint64_t>& v, size_t base, uint32_t r) { return (v[base + r / 64] >> (r % 64)) & 1u; };
  auto set = [](std::vector<uint64_t>& v, size_t base, uint32_t r) { v[base + r / 64] |= uint64_t{1} << (r % 64); };
  std::vector<uint64_t> gen(size_t{nb} * words, 0), kill(size_t{nb} * words, 0), live_in(size_t{nb + 1} * words, 0),
      live_out(size_t{nb} * words, 0);
  for (uint32_t b = 0; b < nb; ++b) {
    const size_t base = size_t{b} * words;
    for (uint32_t i = g.block_start[b]; i <= g.block_end(b); ++i) {
      for (uint32_t r : uses[i])
        if (!bit(kill, base, r)) set(gen, base, r);
      const bool guarded = df.code[i].guard >= 0;
      for (uint32_t r : defs[i]) {
        if (guarded) {
          if (!bit(kill, base, r)) set(gen, base, r);
        } else {
          set(kill, base, r);
        }
      }
    }
  }
  bool changed = true;
  while (changed) {
    changed = false;
    for (uint32_t b = nb; b-- > 0;) {
      const size_t base = size_t{b} * words;
      for (uint32_t w = 0; w < words; ++w) {
        uint64_t out = 0;
        for (uint32_t sb : g.succ[b]) out |= live_in[size_t{sb} * words + w];
        live_out[base + w] = out;
        const uint64_t in = gen[base + w] | (out & ~kill[base + w]);
        if (in != live_in[base + w]) {
          live_in[base + w] = in;
          changed = true;
        }
      }
    }
  }
  // Intervals [lo, hi] in instruction order.
  constexpr uint32_t kNone = UINT32_MAX;
  std::vector<uint32_t> lo(nregs, kNone), hi(nregs, 0);
  auto extend = [&](uint32_t r, uint32_t a, uint32_t z) {
    lo[r] = std::min(lo[r], a);
    hi[r] = std::max(hi[r], z);
  };
  std::vector<uint32_t> first(nregs, kNone), last(nregs, 0), touched;
  for (uint32_t b = 0; b < nb; ++b) {
    const size_t base = size_t{b} * words;
    const uint32_t start = g.block_start[b], end = g.block_end(b);
    touched.clear();
    for (uint32_t i = start; i <= end; ++i) {
      auto touch = [&](uint32_t r) {
        if (first[r] == kNone) {
          first[r] = i;
          touched.push_back(r);
        }
        last[r] = i;
      };
      for (uint32_t r : uses[i]) touch(r);
      for (uint32_t r : defs[i]) touch(r);
    }
    for (uint32_t r : touched) {
      extend(r, bit(live_in, base, r) ? start : first[r], bit(live_out, base, r) ? end : last[r]);
      first[r] = kNone;
    }
    for (uint32_t w = 0; w < words; ++w) {  // live through the whole block
      uint64_t through = live_in[base + w] & live_out[base + w];
      while (through) {
        extend(w * 64 + static_cast<uint32_t>(std::countr_zero(through)), start, end);
        through &= through - 1;
      }
    }
  }
  // Linear scan: registers by start; a slot is free again once its register's interval has ended
  // before the next one starts (strictly: an instruction never writes a slot it also reads for
  // another register).
  std::vector<uint32_t> order;
  for (uint32_t r = 0; r < nregs; ++r)
    if (lo[r] != kNone) order.push_back(r);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return lo[a] < lo[b] || (lo[a] == lo[b] && a < b); });
  std::vector<uint32_t> map(nregs, 0);
  std::vector<std::pair<uint32_t, uint32_t>> active;  // (hi, slot), a min-heap on hi
  std::vector<uint32_t> free_slots;
  uint32_t slots = 0;
  auto later = [](const std::pair<uint32_t, uint32_t>& a, const std::pair<uint32_t, uint32_t>& b) { return a.first > b.first; };
  for (uint32_t r : order) {
    while (!active.empty() && active.front().first < lo[r]) {
      free_slots.push_back(active.front().second);
      std::pop_heap(active.begin(), active.end(), later);
      active.pop_back();
    }
    uint32_t slot;
    if (!free_slots.empty()) {
      slot = free_slots.back();
      free_slots.pop_back();
    } else {
      slot = slots++;
    }
    map[r] = slot;
    active.emplace_back(hi[r], slot);
    std::push_heap(active.begin(), active.end(), later);
  }
  auto remap = [&](DOp& o) {
    if (o.kind == OpKind::Reg || (o.kind == OpKind::Addr && o.base == AddrBase::Reg)) o.idx = map[o.idx];
  };
  for (DInstr& d : df.code)
    for (DOp& o : d.ops) remap(o);
  for (DOp& o : df.pool) remap(o);
  for (int32_t& s : df.reg_slot)
    if (s >= 0) s = static_cast<int32_t>(map[static_cast<uint32_t>(s)]);
  df.nvals = std::max<uint32_t>(slots, 1);
}

}  // namespace pipesim::ptx
