#include "verify/generate.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>

namespace pipesim::verify {
namespace {

// splitmix64: fixed, portable output for a seed (std:: distributions differ between libraries).
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed * 0xD1B54A32D192ED03ULL + 0x2545F4914F6CDD1DULL) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  bool chance(double p) { return uniform() < p; }
  int64_t range(int64_t lo, int64_t hi) {  // inclusive
    if (hi <= lo) return lo;
    return lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo + 1));
  }
  template <class T>
  const T& pick(const std::vector<T>& v) { return v[static_cast<size_t>(range(0, static_cast<int64_t>(v.size()) - 1))]; }

 private:
  uint64_t s_;
};

constexpr int kMaxWarps = 12;
constexpr int kMaxCtas = 8;
constexpr int64_t kMaxStageBytes = 64 * 1024;
// All stages of a ring together stay well inside an H100 CTA's 227 KiB of shared memory, so the
// device interpreter can give every stage its own buffer.
constexpr int64_t kMaxRingBytes = 192 * 1024;

int64_t stage_cap(int64_t stages) { return std::min(kMaxStageBytes, kMaxRingBytes / stages / 16 * 16); }

struct Lines {
  std::string text;
  void add(int indent, const std::string& s) {
    text.append(static_cast<size_t>(2 * indent), ' ');
    text += s;
    text += '\n';
  }
};

// How a role's warps arrive on a pipeline barrier (docs/scenario-language.md "Arrival units").
struct Arrivals {
  std::string decl;      // "2 warpgroups"
  int64_t count = 1;     // the barrier count the declaration gives
  int64_t per_warp = 1;  // arrivals one arriving warp makes
  bool groups = false;   // only the first warp of each warpgroup arrives
};

Arrivals pick_arrivals(Rng& r, int64_t warps) {
  std::vector<Arrivals> v;
  if (warps == 1) {
    v.push_back({"1 threads", 1, 1, false});
    v.push_back({"1 warps", 1, 1, false});
    v.push_back({"32 threads", 32, 32, false});
  } else {
    v.push_back({fmt::format("{} warps", warps), warps, 1, false});
    v.push_back({fmt::format("{} threads", 32 * warps), 32 * warps, 32, false});
    if (warps % 4 == 0) {
      v.push_back({fmt::format("{} warpgroups", warps / 4), warps / 4, 1, true});
      v.push_back(v.back());
    }
  }
  return r.pick(v);
}

std::string compute(Rng& r) {
  switch (r.range(0, 7)) {
    case 0: return fmt::format("compute {} cycles", r.range(20, 3000));
    case 1: return "compute 1 us";
    default: return fmt::format("compute {} ns", r.range(10, 2000));
  }
}

// A per-CTA (or per-cluster) loop trip count: `let NAME = expr` with its value for every index.
struct Trip {
  std::string expr;
  std::vector<int64_t> values;
  bool any_zero() const { return std::find(values.begin(), values.end(), 0) != values.end(); }
};
enum class TripNeed { Any, FirstPositive, FirstZero };

Trip make_trip(Rng& r, const std::string& idx, int64_t n, int64_t max_trip, TripNeed need) {
  for (int attempt = 0; attempt < 64; ++attempt) {
    Trip t;
    const int64_t form = r.range(0, 3);
    if (form == 0 || n == 1) {
      const int64_t c = r.range(0, max_trip);
      t.expr = fmt::format("{}", c);
      t.values.assign(static_cast<size_t>(n), c);
    } else if (form == 1 || form == 2) {
      const int64_t m = r.range(2, max_trip + 1), a = r.range(1, 3), b = r.range(0, m - 1);
      t.expr = b == 0 ? fmt::format("({} * {}) % {}", idx, a, m) : fmt::format("({} + {} * {}) % {}", b, idx, a, m);
      for (int64_t i = 0; i < n; ++i) t.values.push_back((b + i * a) % m);
    } else {
      const int64_t c = r.range(1, max_trip), a = r.range(1, 2);
      t.expr = fmt::format("max(0, {} - {} * {})", c, idx, a);
      for (int64_t i = 0; i < n; ++i) t.values.push_back(std::max<int64_t>(0, c - i * a));
    }
    if (need == TripNeed::FirstPositive && t.values[0] == 0) continue;
    if (need == TripNeed::FirstZero && t.values[0] != 0) continue;
    return t;
  }
  Trip t;  // fallbacks that always meet the need
  if (need == TripNeed::FirstZero) {
    t.expr = fmt::format("({} * 1) % 2", idx);
    for (int64_t i = 0; i < n; ++i) t.values.push_back(i % 2);
  } else {
    const int64_t c = std::max<int64_t>(1, max_trip);
    t.expr = fmt::format("{}", c);
    t.values.assign(static_cast<size_t>(n), c);
  }
  return t;
}

int64_t draw_bytes(Rng& r) {
  if (r.chance(0.5)) return int64_t{16} << r.range(0, 12);
  return 16 * r.range(1, 1024);
}

// Halves the largest copy until the bytes landing per stage fit in `cap`.
void fit_copies(std::vector<int64_t>& bytes, const std::vector<int64_t>& mult, int64_t cap) {
  auto total = [&] {
    int64_t t = 0;
    for (size_t i = 0; i < bytes.size(); ++i) t += bytes[i] * mult[i];
    return t;
  };
  while (total() > cap) {
    size_t big = 0;
    for (size_t i = 1; i < bytes.size(); ++i)
      if (bytes[i] * mult[i] > bytes[big] * mult[big]) big = i;
    bytes[big] = std::max<int64_t>(16, bytes[big] / 2 / 16 * 16);
  }
}

std::string bin(int64_t v) { return fmt::format("0b{:b}", v); }

int64_t tx_delta(Rng& r, int64_t tx) {
  const int64_t d = 16 * r.range(1, 4);
  if (tx - d < 16 || r.chance(0.5)) return d;  // more expected than lands: the phase never completes
  return -d;                                   // less: the phase completes before every byte landed
}

struct Ctx {
  Rng& r;
  const GenOptions& o;
  std::string mistake = "none";
  std::set<std::string> f;        // features
  std::vector<std::string> notes;  // header lines describing the protocol
};

// ---------------------------------------------------------------- pipeline protocols

// A PipelineTmaAsync or PipelineAsync `ab` from a producer role to a consumer role, optionally
// chained through a PipelineAsync `acc` into an epilogue role; clusters, multicast, named barriers,
// cluster barriers, start-phase variants, tails, release lag and peeled waits.
std::string gen_pipeline(Ctx& c) {
  Rng& r = c.r;
  const std::string& m = c.mistake;
  Lines L;
  const bool tma = m == "wrong_tx" || r.chance(0.7);
  const int64_t cs = r.pick(std::vector<int64_t>{1, 1, 2, 2, 4});
  const int64_t ncl = r.range(1, kMaxCtas / cs);
  const int64_t ctas = cs * ncl;
  const int64_t stages = r.range(1, 8);
  const bool mc = tma && cs > 1 && r.chance(0.7);  // releases go to every CTA of the cluster
  const int64_t full_mask = (int64_t{1} << cs) - 1;

  // Warps and arrival units.
  const int64_t P = tma ? 1 : r.range(1, 3);
  Arrivals prod;
  bool prod_decl = true;
  if (tma) {
    const int64_t which = r.range(0, 3);
    prod = which == 0 ? Arrivals{"1 warps", 1, 1, false} : Arrivals{"1 threads", 1, 1, false};
    prod_decl = which <= 1;
  } else {
    prod = pick_arrivals(r, P);
  }
  const bool chain = r.chance(0.35);
  const int64_t E = chain ? r.range(1, 2) : 0;
  const bool gap = P == 1 && r.chance(0.3);
  const int64_t cons_lo = gap ? 4 : P;
  int64_t C = r.chance(0.3) ? 4 * r.range(1, 2) : r.range(1, 8);
  C = std::min(C, kMaxWarps - cons_lo - E);
  const Arrivals cons = pick_arrivals(r, C);
  const Arrivals epi = chain ? pick_arrivals(r, E) : Arrivals{};
  const int64_t acc_stages = r.range(1, 4);
  const int64_t epi_lo = cons_lo + C;
  const int64_t role_warps = epi_lo + E;
  int64_t launch_warps = role_warps + ((role_warps < kMaxWarps && r.chance(0.15)) ? 1 : 0);
  const bool idle = gap || launch_warps > role_warps;
  const int64_t busy_warps = P + C + E;  // warps that have a role

  // Loops.
  const bool tile_loop = r.chance(0.5);
  const bool cluster_loop = cs > 1 || r.chance(0.3);  // tiles per cluster (CUTLASS) or per CTA
  const int64_t tile_n = cluster_loop ? ncl : ctas;
  const int64_t tiles = r.range(m == "none" ? 0 : 1, 2 * tile_n);
  const std::string tile_header = cluster_loop ? "for tile in cluster_id .. TILES step num_clusters:"
                                               : "for tile in cta_id .. TILES step num_ctas:";
  const bool kt_cluster = mc || r.chance(0.5);
  const TripNeed need = m == "zero_trip_peeled_wait" ? TripNeed::FirstZero
                        : m == "none"                 ? TripNeed::Any
                                                      : TripNeed::FirstPositive;
  const Trip kt = make_trip(r, kt_cluster ? "cluster_id" : "cta_id", kt_cluster ? ncl : ctas, c.o.max_trip, need);
  if (kt.any_zero() || (tile_loop && tiles < tile_n)) c.f.insert("zero_trip");

  // Consumer loop form.
  std::string form = "plain";
  if (m == "zero_trip_peeled_wait") form = "peel";
  else if (m != "missing_release") {
    const int64_t x = r.range(0, 3);
    form = x == 2 ? "peel" : (x == 3 && stages >= 2) ? "lag" : "plain";
  }
  if (form != "plain") c.f.insert(form == "peel" ? "peel" : "release_lag");

  // Named barriers: ids 1..15, all distinct.
  int64_t next_id = r.range(1, 6);
  bool cons_named = r.chance(0.35);
  int start_named = r.chance(0.25) ? ((!idle && r.chance(0.5)) ? 2 : 1) : 0;  // 1 bar_sync, 2 syncthreads
  bool handshake = r.chance(0.2);
  if (m == "named_count_off" && !cons_named && start_named != 1 && !handshake) {
    const int64_t which = r.range(0, 2);
    if (which == 0) cons_named = true;
    else if (which == 1) start_named = 1;
    else handshake = true;
  }
  if (m == "named_count_off" && start_named == 2) start_named = 1;
  const int64_t cons_id = next_id++, start_id = next_id++, hs_id = next_id++;
  const int64_t hs_partner = chain ? E : C;
  int64_t cons_threads = 32 * C, start_threads = 32 * busy_warps, hs_threads = 32 * (P + hs_partner);
  if (m == "named_count_off") {
    // Off by one warp in the one barrier chosen (every statement of it agrees on the wrong count).
    std::vector<int64_t*> cand;
    if (cons_named) cand.push_back(&cons_threads);
    if (start_named == 1) cand.push_back(&start_threads);
    if (handshake) cand.push_back(&hs_threads);
    int64_t* t = r.pick(cand);
    if (*t + 32 > 32 * launch_warps && launch_warps < kMaxWarps) ++launch_warps;  // room for the extra warp
    *t = (*t + 32 <= 32 * launch_warps && (*t == 32 || r.chance(0.7))) ? *t + 32 : *t - 32;
  }

  // Cluster barriers (every warp of the cluster executes each, unless the mistake drops one).
  bool cl_start = r.chance(0.25), cl_tile = tile_loop && r.chance(0.25), cl_end = r.chance(0.25);
  if (m == "partial_cluster_barrier") cl_start = true;
  if (cl_start || cl_tile || cl_end) c.f.insert("cluster_sync");

  // Tail, state, start phases.
  std::string tail = "cutlass-4.6";
  const bool must_tail = mc || m == "missing_release" || m == "partial_cluster_barrier" || m == "wrong_start_phase";
  if (!must_tail) {
    const int64_t x = r.range(0, 9);
    tail = x < 7 ? "cutlass-4.6" : x < 9 ? "none" : "cutlass-4.5";
  }
  if (tail == "none") c.f.insert("tail_none");
  if (tail == "cutlass-4.5") c.f.insert("tail_45");
  const bool simple = r.chance(0.2);
  if (simple) c.f.insert("state_simple");
  std::string phase_variant = "standard";
  if (m == "wrong_start_phase") phase_variant = "producer0_unfixed";
  else {
    const int64_t x = r.range(0, 9);
    if (x == 0 || x == 1) phase_variant = "producer0";
    else if (x == 2 && !mc) phase_variant = "consumer1";
  }
  if (phase_variant == "consumer1" && start_named == 0) start_named = idle ? 1 : 2;
  if (phase_variant == "producer0") c.f.insert("producer_phase0");
  if (phase_variant == "consumer1") c.f.insert("consumer_phase1");
  // Warpgroup arrival units: only the first warp of a group arrives, so the group's other warps are
  // kept in step by a named barrier per warpgroup after each wait (what wgmma's warpgroup-collective
  // instructions do in a real kernel); without it a non-arriving warp can fall a lap behind.
  const int64_t wg_id = next_id + 3;
  const bool wg_sync = cons.groups;
  if (cons_named || start_named || handshake || wg_sync) c.f.insert("named_barrier");
  if (wg_sync) c.f.insert("warpgroup_sync");
  if (start_named == 2) c.f.insert("syncthreads");
  if (handshake) c.f.insert("bar_arrive");

  // Copies per stage (TMA): own loads and multicast loads, tx = what lands in each CTA.
  struct Copy {
    int64_t bytes;
    std::string mask;  // empty: own CTA only
    int64_t mult;      // how many copies of this shape land in each CTA
  };
  std::vector<Copy> copies;
  int64_t tx = 0;
  if (tma) {
    const int64_t n = r.range(1, 3);
    std::vector<std::string> masks;
    std::vector<int64_t> mults;
    for (int64_t i = 0; i < n; ++i) {
      int64_t pattern = 0;  // own
      if (mc && (i == 0 || r.chance(0.5)) && !r.chance(0.15)) pattern = r.range(1, cs == 4 ? 4 : 3);
      switch (pattern) {
        case 0: masks.emplace_back(); mults.push_back(1); break;
        case 1: masks.push_back(bin(full_mask)); mults.push_back(cs); break;
        case 2: masks.emplace_back("3 << (cluster_rank & ~1)"); mults.push_back(2); break;
        case 3: masks.emplace_back("1 << ((cluster_rank + 1) % cluster_size)"); mults.push_back(1); break;
        default: masks.emplace_back("(1 << cluster_rank) | (1 << ((cluster_rank + 1) % cluster_size))"); mults.push_back(2); break;
      }
    }
    std::vector<int64_t> bytes;
    for (int64_t i = 0; i < n; ++i) bytes.push_back(draw_bytes(r));
    fit_copies(bytes, mults, stage_cap(stages));
    for (size_t i = 0; i < bytes.size(); ++i) {
      copies.push_back({bytes[i], masks[i], mults[i]});
      tx += bytes[i] * mults[i];
      if (!masks[i].empty()) c.f.insert("multicast");
    }
  }
  if (mc) c.f.insert("multicast_release");
  // wrong_tx: the count leaves out the last copy (bug-catalog 3: the peer's multicast half), so the
  // phase completes before those bytes land; or it is off by a few 16-byte units (tx never reaches 0).
  int64_t tx_decl = tx;
  if (m == "wrong_tx")
    tx_decl = copies.size() >= 2 && r.chance(0.5) ? tx - copies.back().bytes * copies.back().mult : tx + tx_delta(r, tx);
  const int64_t empty_count = cons.count * (mc ? cs : 1);

  c.notes.push_back(fmt::format("{} pipeline ab ({} stages){}{}; {} CTAs in clusters of {}", tma ? "PipelineTmaAsync" : "PipelineAsync",
                                stages, tma ? fmt::format(", {} B per stage in {} copies", tx, copies.size()) : "",
                                chain ? fmt::format(", chained through PipelineAsync acc ({} stages) to an epilogue", acc_stages) : "",
                                ctas, cs));
  c.notes.push_back(fmt::format("consumer form {}, tail {}, start phases {}{}", form, tail, phase_variant,
                                tile_loop ? fmt::format(", {} tiles", tiles) : ""));

  // ---- header
  if (tile_loop) L.add(0, fmt::format("let TILES = {}", tiles));
  L.add(0, fmt::format("launch ctas = {}, cluster = {}, threads = {}", ctas, cs, 32 * launch_warps));
  std::string decl = fmt::format("pipeline ab : {}, stages = {}", tma ? (r.chance(0.5) ? "tma -> threads" : "PipelineTmaAsync")
                                                                     : (r.chance(0.5) ? "threads -> threads" : "PipelineAsync"),
                                 stages);
  if (tma) decl += fmt::format(", tx = {}", tx_decl);
  if (prod_decl) decl += fmt::format(", producers = {}", prod.decl);
  decl += fmt::format(", consumers = {}", cons.decl);
  if (mc) decl += fmt::format(", multicast = {}", bin(full_mask));
  if (simple) decl += ", state = PipelineStateSimple";
  else if (r.chance(0.1)) decl += ", state = PipelineState";
  if (phase_variant == "producer0" || phase_variant == "producer0_unfixed") decl += ", producer_phase = 0";
  else if (r.chance(0.1)) decl += ", producer_phase = 1";
  if (phase_variant == "consumer1") decl += ", consumer_phase = 1";
  if (tail != "cutlass-4.6" || r.chance(0.1)) decl += fmt::format(", tail = {}", tail);
  L.add(0, decl);
  if (chain)
    L.add(0, fmt::format("pipeline acc : {}, stages = {}, producers = {}, consumers = {}",
                         r.chance(0.5) ? "threads -> threads" : "PipelineAsync", acc_stages, cons.decl, epi.decl));

  auto role_line = [](const std::string& name, int64_t lo, int64_t n) {
    return n == 1 ? fmt::format("role {} warp {}:", name, lo) : fmt::format("role {} warps {}..{}:", name, lo, lo + n - 1);
  };
  auto start = [&](int in, bool skip_cluster) {
    if (start_named == 1) L.add(in, fmt::format("bar_sync {} threads = {}", start_id, start_threads));
    if (start_named == 2) L.add(in, "syncthreads");
    if (cl_start && !skip_cluster) L.add(in, "cluster_sync");
  };
  // Raw arrivals of a role as its arrival unit makes them (warpgroups: the first warp of each).
  auto unit_arrive = [&](int in, const Arrivals& a, const std::string& what) {
    if (a.groups) {
      L.add(in, "if warp_in_role % 4 == 0:");
      ++in;
    }
    L.add(in, a.per_warp == 1 ? what : what + fmt::format(" count = {}", a.per_warp));
  };

  // ---- producer
  L.add(0, "");
  L.add(0, role_line("producer", 0, P));
  L.add(1, fmt::format("let kt = {}", kt.expr));
  if (phase_variant == "consumer1") {
    // The full barriers start one phase ahead, so the consumers' parity-1 waits line up; the start
    // barrier below orders these arrivals before any consumer's first wait.
    L.add(1, "for s in 0 .. " + std::to_string(stages) + ":");
    unit_arrive(2, prod, "arrive ab.full[s]");
  }
  start(1, m == "partial_cluster_barrier");
  int in = 1;
  if (tile_loop) L.add(in++, tile_header);
  L.add(in, "for k in 0 .. kt:");
  L.add(in + 1, "ab.producer_acquire");
  if (tma) {
    for (const Copy& cp : copies) {
      if (cp.mask.empty() && copies.size() == 1 && m != "wrong_tx" && r.chance(0.3)) L.add(in + 1, "tma ab");
      else if (cp.mask.empty()) L.add(in + 1, fmt::format("tma ab bytes = {}", cp.bytes));
      else L.add(in + 1, fmt::format("tma ab bytes = {} multicast = {}", cp.bytes, cp.mask));
      if (r.chance(0.15)) L.add(in + 1, fmt::format("compute {} ns", r.range(10, 200)));
    }
  } else {
    L.add(in + 1, compute(r));
    L.add(in + 1, "ab.producer_commit");
  }
  if (cl_tile) L.add(in, "cluster_sync");
  L.add(1, "ab.producer_tail");
  if (handshake) L.add(1, fmt::format("bar_arrive {} threads = {}", hs_id, hs_threads));
  if (cl_end) L.add(1, "cluster_sync");

  // ---- consumers
  L.add(0, "");
  L.add(0, role_line("consumer", cons_lo, C));
  L.add(1, fmt::format("let kt = {}", kt.expr));
  start(1, false);
  if (m == "over_arrive") {
    // A whole extra phase of arrivals on empty[0], by nobody's consumption.
    L.add(1, "if warp_in_role == 0:");
    L.add(2, fmt::format("arrive ab.empty[0] count = {}", empty_count));
  }
  if (phase_variant == "producer0") {
    // The empty barriers start one phase ahead, so the producer's parity-0 waits line up.
    L.add(1, "for s in 0 .. " + std::to_string(stages) + ":");
    if (mc) {
      L.add(2, "for rank in 0 .. cluster_size:");
      unit_arrive(3, cons, "arrive ab.empty[s] cta = rank");
    } else {
      unit_arrive(2, cons, "arrive ab.empty[s]");
    }
  }
  in = 1;
  if (tile_loop) L.add(in++, tile_header);
  const std::string work = compute(r);
  const std::string wg_bar = fmt::format("bar_sync {} + warp_in_role / 4 threads = 128", wg_id);
  auto cwait = [&](int at) {
    L.add(at, "ab.consumer_wait");
    if (wg_sync) L.add(at, wg_bar);
  };
  if (form == "plain") {
    L.add(in, "for k in 0 .. kt:");
    cwait(in + 1);
    L.add(in + 1, work);
    if (m == "missing_release") {
      L.add(in + 1, "if k + 1 < kt:            # the last k-block of each tile is never released");
      L.add(in + 2, "ab.consumer_release");
    } else {
      L.add(in + 1, "ab.consumer_release");
    }
  } else if (form == "peel") {
    if (m == "zero_trip_peeled_wait") {
      L.add(in, "ab.consumer_wait               # peeled, also when kt == 0");
      if (wg_sync) L.add(in, wg_bar);
    } else {
      L.add(in, "if kt > 0:");
      cwait(in + 1);
    }
    L.add(in, "for k in 0 .. kt:");
    L.add(in + 1, work);
    L.add(in + 1, "ab.consumer_release");
    L.add(in + 1, "if k + 1 < kt:");
    cwait(in + 2);
  } else {  // lag: hold one stage while waiting on the next
    L.add(in, "for k in 0 .. kt:");
    cwait(in + 1);
    L.add(in + 1, work);
    L.add(in + 1, "if k > 0:");
    L.add(in + 2, "ab.consumer_release");
    L.add(in, "if kt > 0:");
    L.add(in + 1, "ab.consumer_release");
  }
  if (cons_named) {
    if (tile_loop) L.add(in, fmt::format("bar_sync {} threads = {}", cons_id, cons_threads));
    else {
      L.add(in, "for k in 0 .. kt:");
      L.add(in + 1, fmt::format("bar_sync {} threads = {}", cons_id, cons_threads));
    }
  }
  if (chain) {
    L.add(in, "acc.producer_acquire");
    if (wg_sync) L.add(in, wg_bar);
    L.add(in, compute(r));
    L.add(in, "acc.producer_commit");
  }
  if (cl_tile) L.add(in, "cluster_sync");
  if (chain) L.add(1, "acc.producer_tail");
  if (handshake && !chain) L.add(1, fmt::format("bar_sync {} threads = {}", hs_id, hs_threads));
  if (cl_end) L.add(1, "cluster_sync");

  // ---- epilogue
  if (chain) {
    const bool store = r.chance(0.4);
    if (store) c.f.insert("bulk_store");
    L.add(0, "");
    L.add(0, role_line("epilogue", epi_lo, E));
    start(1, false);
    in = 1;
    if (tile_loop) L.add(in++, tile_header);
    L.add(in, "acc.consumer_wait");
    L.add(in, compute(r));
    L.add(in, "acc.consumer_release");
    if (store) {
      L.add(in, "if warp_in_role == 0:");
      L.add(in + 1, "wait_group 0 read");
      L.add(in + 1, fmt::format("store bytes = {}", 16 * r.range(1, 1024)));
      L.add(in + 1, "commit_group");
    }
    if (cl_tile) L.add(in, "cluster_sync");
    if (store) {
      L.add(1, "if warp_in_role == 0:");
      L.add(2, "wait_group 0");
    }
    if (handshake) L.add(1, fmt::format("bar_sync {} threads = {}", hs_id, hs_threads));
    if (cl_end) L.add(1, "cluster_sync");
  }

  c.f.insert(tma ? "pipeline_tma" : "pipeline_async");
  if (chain) c.f.insert("chain");
  if (chain) c.f.insert("pipeline_async");
  if (idle) c.f.insert("idle_warps");
  if (tile_loop) c.f.insert("tile_loop");
  c.f.insert(fmt::format("cluster{}", cs));
  return L.text;
}

// ---------------------------------------------------------------- raw mbarrier protocols

// A hand-written full/empty ring of raw mbarrier operations: per-CTA rings, or (clusters) rank 0
// feeding every CTA of its cluster by multicast with remote arrive.expect_tx and remote releases.
std::string gen_raw(Ctx& c) {
  Rng& r = c.r;
  const std::string& m = c.mistake;
  Lines L;
  const int64_t cs = r.pick(std::vector<int64_t>{1, 1, 2, 2, 4});
  const int64_t ncl = r.range(1, kMaxCtas / cs);
  const int64_t ctas = cs * ncl;
  const bool cmode = cs > 1 && r.chance(0.5);  // rank 0 feeds the cluster
  int64_t stages = r.range(1, 8);
  const bool gap = r.chance(0.2);
  const int64_t cons_lo = gap ? 4 : 1;
  const int64_t C = std::min<int64_t>(r.range(1, 8), kMaxWarps - cons_lo);
  int64_t launch_warps = cons_lo + C + ((cons_lo + C < kMaxWarps && r.chance(0.15)) ? 1 : 0);
  const bool idle = gap || launch_warps > cons_lo + C;
  const int64_t a = r.chance(0.3) ? 2 : 1;  // arrivals per consumer warp per release
  const int64_t E = C * a * (cmode ? cs : 1);
  const int64_t style = cmode ? 0 : r.range(0, 3);  // 0 arrive.expect_tx, 1 expect_tx + arrive, 2 two arrivals, 3 software complete_tx
  const int64_t F = style == 2 ? 2 : 1;
  const bool own_init = r.chance(0.5);
  const bool pre = m == "wrong_start_phase" || r.chance(0.2);  // producer starts at parity 0 (after consumers pre-arrive)
  const bool tracked_p = r.chance(0.3), tracked_c = r.chance(0.3);
  bool peel = m == "zero_trip_peeled_wait" || r.chance(0.2);
  bool drain = m == "missing_release" || m == "over_arrive" || r.chance(0.4);
  bool cons_named = r.chance(0.3);
  // The sync after an own init: 0 cluster_sync, 1 bar_sync, 2 syncthreads.
  int64_t init_sync = cmode || !own_init ? 0 : r.range(0, 2);
  if (init_sync == 2 && idle) init_sync = 1;
  bool start_bar = !own_init && r.chance(0.2);  // a bar_sync of every role warp before the loops
  if (m == "named_count_off" && !cons_named && init_sync != 1 && !start_bar) {
    if (r.chance(0.5)) cons_named = true;
    else start_bar = true;
  }
  const bool cl_start = !cmode && !own_init && r.chance(0.25);
  const bool cl_end = cmode || r.chance(0.25);
  const bool test_wait = !cmode && r.chance(0.3);

  // Trip count.
  const bool n_cluster = cmode || r.chance(0.4);
  const TripNeed need = m == "zero_trip_peeled_wait" ? TripNeed::FirstZero
                        : m == "none"                 ? TripNeed::Any
                                                      : TripNeed::FirstPositive;
  Trip n = make_trip(r, n_cluster ? "cluster_id" : "cta_id", n_cluster ? ncl : ctas, c.o.max_trip, need);
  if (m == "wrong_parity") {  // the bug needs the ring to wrap
    stages = std::min<int64_t>(stages, 3);
    const int64_t v = 3 * stages + r.range(1, 2);
    n.expr = fmt::format("{}", v);
    n.values.assign(n.values.size(), v);
  }
  if (n.any_zero()) c.f.insert("zero_trip");

  // Copies.
  std::vector<int64_t> bytes;
  const int64_t ncopies = r.range(1, 3);
  for (int64_t i = 0; i < ncopies; ++i) bytes.push_back(draw_bytes(r));
  fit_copies(bytes, std::vector<int64_t>(bytes.size(), 1), stage_cap(stages));
  int64_t T = 0;
  for (int64_t b : bytes) T += b;
  const int64_t T_decl = m != "wrong_tx" ? T : bytes.size() >= 2 && r.chance(0.5) ? T - bytes.back() : T + tx_delta(r, T);
  const int64_t full_mask = (int64_t{1} << cs) - 1;
  int64_t named_threads_cons = 32 * C, named_threads_all = 32 * (1 + C);
  if (m == "named_count_off") {
    std::vector<int64_t*> cand;
    if (cons_named) cand.push_back(&named_threads_cons);
    if (init_sync == 1 || start_bar) cand.push_back(&named_threads_all);
    int64_t* t = r.pick(cand);
    if (*t + 32 > 32 * launch_warps && launch_warps < kMaxWarps) ++launch_warps;
    *t = (*t + 32 <= 32 * launch_warps && (*t == 32 || r.chance(0.7))) ? *t + 32 : *t - 32;
  }
  const int64_t sync_id = r.range(1, 7), cons_id = sync_id + 1 + r.range(0, 6);

  c.f.insert("raw");
  c.f.insert(fmt::format("cluster{}", cs));
  if (cmode) { c.f.insert("multicast"); c.f.insert("remote_arrive"); }
  if (own_init) c.f.insert("own_init");
  if (pre) c.f.insert("producer_phase0");
  if (tracked_p || tracked_c) c.f.insert("phase_wait");
  if (peel) c.f.insert("peel");
  if (cons_named || init_sync >= 1 || start_bar) c.f.insert("named_barrier");
  if (init_sync == 2) c.f.insert("syncthreads");
  if (cl_start || cl_end || (own_init && init_sync == 0)) c.f.insert("cluster_sync");
  if (test_wait) c.f.insert("test_wait");
  if (style == 1) c.f.insert("expect_tx");
  if (style == 3) c.f.insert("complete_tx");
  if (idle) c.f.insert("idle_warps");
  c.notes.push_back(fmt::format("raw full/empty ring ({} stages, {} B per fill), {} CTAs in clusters of {}{}", stages, T, ctas, cs,
                                cmode ? ", rank 0 multicasts to its cluster" : ", one ring per CTA"));

  const std::string S = "STAGES";
  L.add(0, fmt::format("let STAGES = {}", stages));
  L.add(0, fmt::format("launch ctas = {}, cluster = {}, threads = {}", ctas, cs, 32 * launch_warps));
  if (own_init) {
    L.add(0, "barrier full[STAGES]");
    L.add(0, "barrier empty[STAGES]");
  } else {
    L.add(0, fmt::format("barrier full[STAGES] count = {}", F));
    L.add(0, fmt::format("barrier empty[STAGES] count = {}", E));
  }
  auto sync_after_init = [&](int in) {
    if (own_init) {
      if (init_sync == 0) L.add(in, "cluster_sync");
      else if (init_sync == 1) L.add(in, fmt::format("bar_sync {} threads = {}", sync_id, named_threads_all));
      else L.add(in, "syncthreads");
    }
    if (start_bar) L.add(in, fmt::format("bar_sync {} threads = {}", sync_id, named_threads_all));
    if (cl_start) L.add(in, "cluster_sync");
  };
  const std::string pwait_std = "wait empty[k % STAGES] parity = ((k / STAGES) & 1) ^ 1";
  const std::string pwait_pre = "wait empty[k % STAGES] parity = (k / STAGES) & 1";

  // ---- producer
  L.add(0, "");
  L.add(0, "role producer warp 0:");
  L.add(1, fmt::format("let n = {}", n.expr));
  if (own_init) {
    L.add(1, "for i in 0 .. STAGES:");
    L.add(2, fmt::format("init full[i] count = {}", F));
    L.add(2, fmt::format("init empty[i] count = {}", E));
    L.add(1, "fence_init");
  }
  sync_after_init(1);
  int in = 1;
  if (cmode) L.add(in++, "if cluster_rank == 0:");
  L.add(in, "for k in 0 .. n:");
  if (pre) {
    if (tracked_p) L.add(in + 1, "wait empty[k % STAGES] phase = k / STAGES");
    else L.add(in + 1, pwait_pre);
  } else if (tracked_p) {
    L.add(in + 1, "if k >= STAGES:");
    L.add(in + 2, "wait empty[k % STAGES] phase = k / STAGES - 1");
  } else {
    L.add(in + 1, pwait_std);
  }
  if (cmode) {
    L.add(in + 1, "for rank in 0 .. cluster_size:");
    L.add(in + 2, fmt::format("arrive_expect_tx full[k % STAGES] bytes = {} cta = rank", T_decl));
    for (int64_t b : bytes) L.add(in + 1, fmt::format("tma full[k % STAGES] bytes = {} multicast = {}", b, bin(full_mask)));
  } else if (style == 1) {
    L.add(in + 1, fmt::format("expect_tx full[k % STAGES] bytes = {}", T_decl));
    for (int64_t b : bytes) L.add(in + 1, fmt::format("tma full[k % STAGES] bytes = {}", b));
    L.add(in + 1, "arrive full[k % STAGES]");
  } else if (style == 3) {
    L.add(in + 1, fmt::format("arrive_expect_tx full[k % STAGES] bytes = {}", T_decl));
    L.add(in + 1, compute(r));
    for (int64_t b : bytes) L.add(in + 1, fmt::format("complete_tx full[k % STAGES] bytes = {}", b));
  } else {
    L.add(in + 1, fmt::format("arrive_expect_tx full[k % STAGES] bytes = {}", T_decl));
    for (int64_t b : bytes) L.add(in + 1, fmt::format("tma full[k % STAGES] bytes = {}", b));
    if (style == 2) L.add(in + 1, "arrive full[k % STAGES]");
  }
  if (drain) {
    // Wait for the consumers' last release of every stage (what producer_tail does).
    L.add(in, "for k in n .. n + STAGES:");
    L.add(in + 1, pre ? pwait_pre : pwait_std);
  }
  if (cl_end) L.add(1, "cluster_sync");

  // ---- consumers
  L.add(0, "");
  L.add(0, C == 1 ? fmt::format("role consumer warp {}:", cons_lo) : fmt::format("role consumer warps {}..{}:", cons_lo, cons_lo + C - 1));
  L.add(1, fmt::format("let n = {}", n.expr));
  sync_after_init(1);
  const std::string target = cmode ? " cta = 0" : "";
  const std::string release = fmt::format("arrive empty[k % STAGES]{}{}", a == 1 ? "" : fmt::format(" count = {}", a), target);
  if (pre && m != "wrong_start_phase") {
    L.add(1, "for s in 0 .. STAGES:");
    L.add(2, fmt::format("arrive empty[s]{}{}", a == 1 ? "" : fmt::format(" count = {}", a), target));
  }
  auto cwait = [&](const std::string& kexpr) {
    if (m == "wrong_parity") return fmt::format("wait full[{} % STAGES] parity = 0             # the phase bit never flips", kexpr);
    if (tracked_c) return fmt::format("wait full[{0} % STAGES] phase = {0} / STAGES", kexpr);
    return fmt::format("wait full[{0} % STAGES] parity = ({0} / STAGES) & 1", kexpr);
  };
  const std::string work = compute(r);
  if (peel) {
    if (m == "zero_trip_peeled_wait") {
      L.add(1, cwait("0") + (tracked_c ? "" : ""));
    } else {
      L.add(1, "if n > 0:");
      L.add(2, cwait("0"));
    }
  }
  L.add(1, "for k in 0 .. n:");
  if (!peel) L.add(2, cwait("k"));
  L.add(2, work);
  if (cons_named) L.add(2, fmt::format("bar_sync {} threads = {}", cons_id, named_threads_cons));
  if (m == "missing_release") {
    L.add(2, "if k + 1 < n:                  # the last release is missing");
    L.add(3, release);
  } else {
    L.add(2, release);
  }
  if (m == "over_arrive") {
    L.add(2, "if warp_in_role == 0 && k == 0:  # released twice");
    L.add(3, release);
  }
  if (peel) {
    L.add(2, "if k + 1 < n:");
    L.add(3, cwait("(k + 1)"));
  }
  if (test_wait) {
    // The last fill of its stage: nothing completes that barrier again.
    L.add(1, "if n > 0:");
    L.add(2, "test_wait full[(n - 1) % STAGES] parity = ((n - 1) / STAGES) & 1 expect true");
  }
  if (cl_end) L.add(1, "cluster_sync");
  (void)S;
  return L.text;
}

}  // namespace

bool GeneratedScenario::has(std::string_view feature) const {
  return std::find(features.begin(), features.end(), feature) != features.end();
}

const std::vector<std::string_view>& mistake_kinds() {
  static const std::vector<std::string_view> k = {"wrong_tx",          "wrong_start_phase",       "missing_release",
                                                  "named_count_off",   "zero_trip_peeled_wait",   "partial_cluster_barrier",
                                                  "over_arrive",       "wrong_parity"};
  return k;
}

GeneratedScenario generate(const GenOptions& options, uint64_t seed) {
  GenOptions o = options;
  o.max_trip = std::clamp(o.max_trip, 1, 8);
  Rng r(seed);
  const bool inject = r.uniform() < o.mistake_rate;
  const bool raw = r.chance(0.35);
  Ctx c{r, o, "none", {}, {}};
  if (inject) {
    std::vector<std::string> kinds;
    for (std::string_view k : mistake_kinds()) {
      if (raw && k == "partial_cluster_barrier") continue;  // the pipeline form pins its effect
      if (!raw && k == "wrong_parity") continue;            // pipeline calls track the parity themselves
      kinds.emplace_back(k);
    }
    c.mistake = r.pick(kinds);
  }
  const std::string body = raw ? gen_raw(c) : gen_pipeline(c);

  GeneratedScenario g;
  g.seed = seed;
  g.shape = raw ? "raw" : "pipeline";
  g.mistake = c.mistake;
  g.features.assign(c.f.begin(), c.f.end());
  std::string head = fmt::format("# pipesim generate: seed={} shape={} mistake-rate={}\n", seed, g.shape, options.mistake_rate);
  head += fmt::format("# generated: mistake={}\n", g.mistake);
  for (const std::string& n : c.notes) head += "# " + n + "\n";
  std::string feats;
  for (const std::string& f : g.features) feats += (feats.empty() ? "" : ",") + f;
  head += "# features: " + feats + "\n";
  head += fmt::format("kernel gen_{} on sm_90a\n", seed);
  g.text = head + body;
  return g;
}

std::string generate_scenario(const GenOptions& options, uint64_t seed) { return generate(options, seed).text; }

}  // namespace pipesim::verify
