#include "sim/operand_rules.hpp"

#include <bit>
#include <limits>

#include "sim/mbarrier.hpp"

namespace pipesim::sim::operand {
namespace {

std::string str(int64_t v) { return std::to_string(v); }

std::string in_range(int64_t v, int64_t lo, int64_t hi, std::string_view what) {
  if (v >= lo && v <= hi) return {};
  return std::string(what) + " must be in " + str(lo) + ".." + str(hi) + ", got " + str(v);
}

// 0x4, -0x1: a mask as its bits read.
std::string hex(int64_t v) {
  static constexpr char kDigits[] = "0123456789abcdef";
  uint64_t u = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  std::string digits;
  do {
    digits.insert(digits.begin(), kDigits[u & 15]);
    u >>= 4;
  } while (u);
  return (v < 0 ? "-0x" : "0x") + digits;
}

constexpr int64_t kMaxInt = std::numeric_limits<int64_t>::max();

}  // namespace

std::string parity(int64_t v) {
  if (v == 0 || v == 1) return {};
  return "parity must be 0 or 1, got " + str(v);
}

std::string phase(int64_t v) { return in_range(v, 0, kMaxInt, "phase"); }

std::string arrival_count(int64_t v) {
  if (mbar_count_in_range(v)) return {};
  return "arrival count must be in 1.." + str(kMbarMaxCount) + ", got " + str(v);
}

std::string tx_bytes(int64_t v) {
  if (mbar_tx_in_range(v)) return {};
  return "byte count " + str(v) + " is outside the tx range -" + str(kMbarMaxCount) + ".." + str(kMbarMaxCount);
}

std::string copy_bytes(std::string_view what, int64_t v) {
  const std::string w(what);
  if (v <= 0) return w + " size must be positive, got " + str(v);
  if (v % 16 != 0) return w + " size " + str(v) + " is not a multiple of 16 bytes";
  if (v > kMbarMaxCount) return w + " size " + str(v) + " is above the tx limit " + str(kMbarMaxCount);
  return {};
}

std::string tma_row_bytes(int64_t v) {
  if (v < 16 || v > 4080 || v % 16 != 0) return "TMA row_bytes must be a multiple of 16 in 16..4080, got " + str(v);
  return {};
}

std::string multicast_mask(int64_t mask, int64_t cluster) {
  if (mask == 0) return "multicast mask must name at least one CTA, got 0";
  const int64_t all = cluster >= 63 ? kMaxInt : (int64_t{1} << cluster) - 1;
  if (mask < 0 || (mask & ~all) != 0)
    return "multicast mask " + hex(mask) + " names a rank outside the cluster of " + str(cluster) + " (ranks 0.." +
           str(cluster - 1) + ")";
  return {};
}

std::string cluster_rank(int64_t rank, int64_t cluster) {
  if (rank >= 0 && rank < cluster) return {};
  return "cluster rank " + str(rank) + " is outside the cluster of " + str(cluster) + " (ranks 0.." + str(cluster - 1) + ")";
}

std::string tma_barrier_rank(int64_t rank, int64_t own_rank, int64_t cta_group) {
  const int64_t leader = cta_group == 2 ? own_rank & ~1 : own_rank;
  if (rank == own_rank || rank == leader) return {};
  return "a TMA completes its bytes on its own CTA's barrier" +
         std::string(cta_group == 2 ? " or its pair leader's (rank " + str(leader) + ")" : " (the pair leader's only under cta_group 2)") +
         "; cta = " + str(rank) + " names neither";
}

std::string barrier_index(int64_t index, std::string_view array, int64_t size) {
  if (index >= 0 && index < size) return {};
  return "index " + str(index) + " is outside '" + std::string(array) + "' (" + str(size) + " element" +
         (size == 1 ? "" : "s") + ": 0.." + str(size - 1) + ")";
}

std::string wait_group_count(int64_t v) { return in_range(v, 0, 63, "wait_group count"); }

std::string named_barrier_id(int64_t v) { return in_range(v, 0, 15, "named barrier id"); }

std::string named_threads(int64_t v, int64_t cta_threads) {
  if (v <= 0) return "thread count must be positive, got " + str(v);
  if (v % 32 != 0) return "thread count " + str(v) + " is not a multiple of 32";
  if (v > cta_threads) return "thread count " + str(v) + " exceeds the CTA's " + str(cta_threads) + " threads";
  return {};
}

std::string state_index(int64_t v, int64_t stages) { return in_range(v, 0, stages - 1, "pipeline state index"); }

std::string state_phase(int64_t v) { return in_range(v, 0, kMaxInt, "pipeline state phase"); }

std::string loop_step(int64_t v) {
  if (v > 0) return {};
  return "loop step must be positive, got " + str(v);
}

std::string compute_time(int64_t ns) {
  if (ns >= 0) return {};
  return "compute time must not be negative, got " + str(ns);
}

std::string mma_dim(std::string_view which, int64_t v) { return in_range(v, 0, 65535, which); }

std::string mma_count(int64_t v) { return in_range(v, 1, std::numeric_limits<int32_t>::max(), "mma count"); }

std::string cta_group(int64_t v, int64_t cluster) {
  if (v != 1 && v != 2) return "cta_group must be 1 or 2, got " + str(v);
  if (v == 2 && cluster % 2 != 0) return "cta_group = 2 needs an even cluster size, got cluster = " + str(cluster);
  return {};
}

std::string tmem_alloc_cols(int64_t v) {
  if (v >= 32 && v <= 512 && std::has_single_bit(static_cast<uint64_t>(v))) return {};
  return "TMEM columns must be a power of two in 32..512, got " + str(v);
}

std::string tmem_access_cols(int64_t v) { return in_range(v, 1, 512, "TMEM columns"); }

std::string mma_shape(model::MmaKind kind, int64_t m, int64_t n, int64_t k, int64_t group) {
  for (int64_t d : {m, n, k})
    if (d < 0 || d > 65535) return mma_dim(d == m ? "M" : d == n ? "N" : "K", d);
  const std::string why = model::mma_shape_error(kind, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k),
                                                 static_cast<int>(group));
  if (why.empty()) return {};
  return "illegal tcgen05.mma shape M=" + str(m) + " N=" + str(n) + " K=" + str(k) + " for kind::" +
         std::string(model::mma_kind_name(kind)) + ": " + why;
}

std::string wgmma_shape(model::MmaKind kind, int64_t m, int64_t n, int64_t k) {
  for (int64_t d : {m, n, k})
    if (d < 0 || d > 65535) return mma_dim(d == m ? "M" : d == n ? "N" : "K", d);
  const std::string why = model::wgmma_shape_error(kind, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k));
  if (why.empty()) return {};
  return "illegal wgmma.mma_async shape " + wgmma_shape_name(m, n, k) + ": " + why;
}

std::string wgmma_shape_name(int64_t m, int64_t n, int64_t k) { return "m" + str(m) + "n" + str(n) + "k" + str(k); }

std::string wgmma_wait_count(int64_t v) { return in_range(v, 0, 7, "wgmma.wait_group count"); }

}  // namespace pipesim::sim::operand
