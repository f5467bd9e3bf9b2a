// What the H100's L2 gives the SMs (tmaprobe l2 measured hits alone): one CTA per SM, one warp,
// `depth` bulk copies of `bytes` in flight for a fixed 40 us, each CTA's copies landed before its
// deadline over the time (every SM streams the whole time: no ramp or tail in the rate).
//   mix       the first `hot` CTAs read a window the L2 holds (spread over it), the rest each stream
//             a slice of a 1.9 GiB region no launch read lately (misses): one combined limit, or the
//             L2's hit rate and the DRAM's side by side? (optionally with L2 cache hints: whether the
//             cold stream evicts the window)
//   together  groups of CTAs walk the same lines a few copies apart: do lines read together come
//             faster than the ~8 TB/s of lines read spread?
//   shares    how evenly the SMs share hits, and misses
//   order     whether a hit waits behind its own SM's earlier miss (the model's two lanes an SM)
// The issuing lane's loop is kept free of divisions, 64-bit remainders and local memory (a probe's
// own code can set its pace: docs/runs/dramprobe-mix-h100-2026-11-28.txt).
//   nvcc -std=c++20 -O3 -gencode arch=compute_90a,code=sm_90a kernels/interp/l2mixprobe.cu -o l2mixprobe && ./l2mixprobe [mix|together|shares|order]
// docs/runs/l2mixprobe-h100-2026-11-28.txt; the model's side: scenarios/calibration/l2_mix.scn,
// tools/l2mix_model.py.
#include <cuda/ptx>

#include <string>

#include "probe.cuh"

namespace ptx = cuda::ptx;

namespace {

constexpr size_t kSrcBytes = size_t{2} << 30;
constexpr uint64_t kColdBase = uint64_t{128} << 20;  // the cold region: past every hot window
constexpr int kMaxDepth = 8;

struct CtaOut {
  unsigned long long landed;  // copies landed before the deadline
  unsigned long long g0;      // the CTA's first issue (%globaltimer)
};

// What one CTA reads: a ring over [lo, lo + span) of src from lo + start on, wrapping; `hint` 1: its
// copies ask the L2 to keep their lines (evict_last), 2: to drop them first (evict_first), 0: none.
struct Plan {
  uint64_t lo, span, start;
  int hint;
};

__global__ void ring(const uint8_t* src, const Plan* plans, uint32_t bytes, int depth, uint64_t dur_ns, CtaOut* out) {
  extern __shared__ __align__(128) uint8_t smem[];
  __shared__ __align__(8) uint64_t bars[kMaxDepth];
  if ((threadIdx.x & 31) != 0) return;
  for (int j = 0; j < depth; ++j) ptx::mbarrier_init(&bars[j], 1u);
  ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  const Plan plan = plans[blockIdx.x];
  const uint8_t* base = src + plan.lo;
  uint64_t cursor = plan.start;
  uint64_t policy = 0;
  if (plan.hint == 1)
    asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
  else if (plan.hint == 2)
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  const uint64_t g0 = gt(), deadline = g0 + dur_ns;
  auto issue = [&](int j) {
    (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &bars[j], bytes);
    if (plan.hint != 0) {
      const auto dst = static_cast<uint32_t>(__cvta_generic_to_shared(smem + size_t(j) * bytes));
      const auto bar = static_cast<uint32_t>(__cvta_generic_to_shared(&bars[j]));
      asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;" ::"r"(dst),
                   "l"(base + cursor), "r"(bytes), "r"(bar), "l"(policy)
                   : "memory");
    } else {
      ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, smem + size_t(j) * bytes, base + cursor, bytes, &bars[j]);
    }
    cursor += bytes;
    if (cursor + bytes > plan.span) cursor = 0;
  };
  for (int j = 0; j < depth; ++j) issue(j);
  uint32_t phases = 0;  // bit j: the parity slot j waits for next
  unsigned long long landed = 0;
  int outstanding = depth;
  bool open = true;
  for (int j = 0; outstanding > 0;) {
    while (!ptx::mbarrier_try_wait_parity(&bars[j], (phases >> j) & 1u)) {
    }
    phases ^= 1u << j;
    --outstanding;
    if (open && gt() < deadline) {
      ++landed;
      issue(j);
      ++outstanding;
    } else {
      open = false;  // drain what is in flight before the CTA exits
    }
    if (++j == depth) j = 0;
  }
  out[blockIdx.x] = CtaOut{landed, g0};
}

// --- order: does a hit wait behind its own SM's earlier miss? Each CTA, `iters` times: copy `first`
// (0: a miss, fresh lines; 1: a hit, a box of a window the L2 holds) and, right after, `second`
// (-1: none), each of `bytes` on its own barrier; the warp polls both without blocking and notes the
// cycle, from the first issue, at which each completes. Out: per CTA and iteration, the two landings.
__global__ void order(const uint8_t* src, uint64_t cold_base, uint64_t window, uint32_t bytes, int first, int second, int iters,
                      uint64_t* out) {
  extern __shared__ __align__(128) uint8_t smem[];
  __shared__ __align__(8) uint64_t bars[2];
  if ((threadIdx.x & 31) != 0) return;
  ptx::mbarrier_init(&bars[0], 1u);
  ptx::mbarrier_init(&bars[1], 1u);
  ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  const uint64_t boxes = window / bytes;
  uint64_t hot = uint64_t(blockIdx.x) * 7 % boxes, cold = cold_base + uint64_t(blockIdx.x) * uint64_t(iters) * bytes;
  for (int it = 0; it < iters; ++it) {
    const uint32_t parity = uint32_t(it & 1);
    const int kinds[2] = {first, second};
    const uint64_t c0 = clk();
    for (int j = 0; j < 2; ++j) {
      if (kinds[j] < 0) continue;
      const uint8_t* from = kinds[j] == 1 ? src + hot * bytes : src + cold;
      if (kinds[j] == 1) {
        hot += 13;
        if (hot >= boxes) hot -= boxes;
      } else {
        cold += bytes;
      }
      (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &bars[j], bytes);
      ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, smem + size_t(j) * bytes, from, bytes, &bars[j]);
    }
    uint64_t land[2] = {0, 0};
    bool done0 = false, done1 = second < 0;
    while (!done0 || !done1) {
      if (!done0 && ptx::mbarrier_test_wait_parity(&bars[0], parity)) {
        land[0] = clk() - c0;
        done0 = true;
      }
      if (!done1 && ptx::mbarrier_test_wait_parity(&bars[1], parity)) {
        land[1] = clk() - c0;
        done1 = true;
      }
    }
    if (second < 0) (void)ptx::mbarrier_arrive(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &bars[1]);  // keep the parities in step
    out[(size_t(blockIdx.x) * iters + it) * 2] = land[0];
    out[(size_t(blockIdx.x) * iters + it) * 2 + 1] = land[1];
  }
}

struct Launcher {
  const uint8_t* src;
  Plan* dplans;
  CtaOut* dout;
  uint32_t bytes;
  int depth;
  // Runs the plans for `dur_ns` and returns the GB/s each CTA's copies landed at.
  std::vector<double> run(const std::vector<Plan>& plans, uint64_t dur_ns) const {
    const int ctas = int(plans.size());
    CK(cudaMemcpy(dplans, plans.data(), sizeof(Plan) * plans.size(), cudaMemcpyHostToDevice));
    ring<<<ctas, 32, bytes * uint32_t(depth)>>>(src, dplans, bytes, depth, dur_ns, dout);
    CK(cudaDeviceSynchronize());
    std::vector<CtaOut> o(static_cast<size_t>(ctas));
    CK(cudaMemcpy(o.data(), dout, sizeof(CtaOut) * o.size(), cudaMemcpyDeviceToHost));
    std::vector<double> gbs;
    for (const CtaOut& c : o) gbs.push_back(double(c.landed) * bytes / double(dur_ns));
    return gbs;
  }
  // Every SM reads the window spread over it for a while: its lines are then the L2's.
  void warm(uint64_t window, int sms) const {
    std::vector<Plan> p;
    for (int c = 0; c < sms; ++c) p.push_back(Plan{0, window, window / uint64_t(sms) * uint64_t(c) / bytes * bytes, 0});
    run(p, 20000);
  }
};

double sum(const std::vector<double>& v, size_t from, size_t to) {
  double t = 0;
  for (size_t i = from; i < to; ++i) t += v[i];
  return t;
}

}  // namespace

// `l2mixprobe` every table; `l2mixprobe mix`, `together`, `shares` or `order` one of them.
int main(int argc, char** argv) {
  const std::string only = argc > 1 ? argv[1] : "";
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  uint8_t* src = nullptr;
  CK(cudaMalloc(&src, kSrcBytes));
  CK(cudaMemset(src, 1, kSrcBytes));
  CK(cudaFuncSetAttribute(ring, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
  Launcher L{src, nullptr, nullptr, 32768, 4};
  CK(cudaMalloc(&L.dout, sizeof(CtaOut) * size_t(sms)));
  CK(cudaMalloc(&L.dplans, sizeof(Plan) * size_t(sms)));
  const uint64_t dur_ns = 40000;
  const uint64_t bytes = L.bytes;
  std::printf("== l2mixprobe on %s, %d SMs; one CTA per SM, one warp, %d bulk copies of %u B in flight for %llu us; median of 3 launches\n",
              prop.name, sms, L.depth, L.bytes, (unsigned long long)(dur_ns / 1000));

  if (only.empty() || only == "mix") {
    std::printf("\n== mix: `hot` CTAs read a window the L2 holds (spread over it), `cold` ones stream lines no launch read lately\n");
    std::printf("   hints 1: hot copies evict_last, cold ones evict_first (L2 cache hints)\n");
    std::printf("%10s %5s %5s %6s %10s %10s %10s\n", "window MiB", "hints", "hot", "cold", "hot GB/s", "cold GB/s", "sum GB/s");
    const uint64_t cold_region = kSrcBytes - kColdBase;
    uint64_t launch = 0;
    struct Row {
      int hot, cold;
    };
    const Row rows[] = {{sms, 0}, {sms / 2, 0}, {0, sms}, {0, sms / 2}, {sms / 2, sms / 2}, {sms * 3 / 4, sms - sms * 3 / 4}, {sms / 4, sms - sms / 4}};
    for (uint64_t window_mib : {10ull, 16ull, 24ull}) {
      const uint64_t window = window_mib << 20;
      for (int hints : {0, 1}) {
        for (const Row& row : rows) {
          const uint64_t slice = row.cold > 0 ? cold_region / uint64_t(row.cold) / bytes * bytes : bytes;
          std::vector<double> hot_gbs, cold_gbs;
          for (int rep = 0; rep < 3; ++rep) {
            L.warm(window, sms);
            // Each launch's cold CTAs start 4 MiB further into their slices (wrapping): lines not read lately.
            const uint64_t start = row.cold > 0 ? (launch++ * (uint64_t{4} << 20)) % (slice - bytes) / bytes * bytes : 0;
            std::vector<Plan> plans;
            for (int c = 0; c < row.hot; ++c) plans.push_back(Plan{0, window, window / uint64_t(row.hot) * uint64_t(c) / bytes * bytes, hints ? 1 : 0});
            for (int c = 0; c < row.cold; ++c) plans.push_back(Plan{kColdBase + uint64_t(c) * slice, slice, start, hints ? 2 : 0});
            const std::vector<double> g = L.run(plans, dur_ns);
            hot_gbs.push_back(sum(g, 0, size_t(row.hot)));
            cold_gbs.push_back(sum(g, size_t(row.hot), g.size()));
          }
          const double h = median(hot_gbs), c = median(cold_gbs);
          std::printf("%10llu %5d %5d %6d %10.1f %10.1f %10.1f\n", (unsigned long long)window_mib, hints, row.hot, row.cold, h, c, h + c);
        }
      }
    }
  }

  if (only.empty() || only == "together") {
    // Lines read together: the CTAs form `streams` groups of `sharers`; each group walks its own part
    // of a 24 MiB window the L2 holds (past the ~8 MiB where spread reads slow to ~7.8 TB/s), its CTAs
    // `lag` copies apart (0: side by side, as a GEMM's CTAs read the same A or B tile of a k-block).
    std::printf("\n== together: groups of `sharers` CTAs walk the same lines of a 24 MiB window the L2 holds, `lag` copies apart\n");
    std::printf("%8s %8s %6s %10s %12s\n", "sharers", "streams", "lag", "GB/s", "per SM GB/s");
    const uint64_t window = uint64_t{24} << 20;
    for (int sharers : {1, 2, 4, 8, 16, 33, 66, 132}) {
      const int streams = sms / sharers;
      const int ctas = streams * sharers;
      for (int lag : {0, 1, 4, 16, 64}) {
        if (sharers == 1 && lag > 0) continue;
        std::vector<double> gbs;
        for (int rep = 0; rep < 3; ++rep) {
          L.warm(window, sms);
          const uint64_t part = window / uint64_t(streams) / bytes * bytes;
          std::vector<Plan> plans;
          for (int c = 0; c < ctas; ++c) {
            const int stream = c % streams, rank = c / streams;
            plans.push_back(Plan{uint64_t(stream) * part, part, (uint64_t(rank) * uint64_t(lag) * bytes) % (part - bytes) / bytes * bytes, 0});
          }
          const std::vector<double> g = L.run(plans, dur_ns);
          gbs.push_back(sum(g, 0, g.size()));
        }
        const double t = median(gbs);
        std::printf("%8d %8d %6d %10.1f %12.1f\n", sharers, streams, lag, t, t / ctas);
      }
    }
  }
  if (only.empty() || only == "shares") {
    // How evenly the SMs share: each CTA's rate over the mean of its launch, pooled over 3 launches.
    std::printf("\n== shares: each SM's rate over its launch's mean (pooled over 3 launches); hot: a 24 MiB window the L2 holds, cold: fresh lines\n");
    std::printf("%6s %5s %6s %8s %8s %8s %8s %8s %8s %8s\n", "kind", "CTAs", "GB/s", "min", "p5", "p25", "p50", "p75", "p95", "max");
    const uint64_t window = uint64_t{24} << 20;
    const uint64_t cold_region = kSrcBytes - kColdBase;
    uint64_t launch = 0;
    for (int hot : {1, 0}) {
      for (int ctas : {sms, sms / 2}) {
        std::vector<double> rel, total;
        const uint64_t slice = cold_region / uint64_t(ctas) / bytes * bytes;
        for (int rep = 0; rep < 3; ++rep) {
          L.warm(window, sms);
          const uint64_t start = (launch++ * (uint64_t{4} << 20)) % (slice - bytes) / bytes * bytes;
          std::vector<Plan> plans;
          for (int c = 0; c < ctas; ++c)
            plans.push_back(hot ? Plan{0, window, window / uint64_t(ctas) * uint64_t(c) / bytes * bytes, 0} : Plan{kColdBase + uint64_t(c) * slice, slice, start, 0});
          const std::vector<double> g = L.run(plans, dur_ns);
          const double mean = sum(g, 0, g.size()) / double(g.size());
          for (double x : g) rel.push_back(x / mean);
          total.push_back(sum(g, 0, g.size()));
        }
        std::sort(rel.begin(), rel.end());
        auto q = [&](double f) { return rel[size_t(f * double(rel.size() - 1))]; };
        std::printf("%6s %5d %6.0f %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f\n", hot ? "hot" : "cold", ctas, median(total), q(0), q(0.05), q(0.25), q(0.5), q(0.75),
                    q(0.95), q(1));
      }
    }
  }
  if (only.empty() || only == "order") {
    // A copy alone, and a copy right after another of the same SM: the second's landing, in ns from the
    // first issue (median over CTAs and 32 iterations, the first 4 left out). 1 SM, then every SM.
    std::printf("\n== order: does a hit wait behind its own SM's earlier miss? ns from the first issue to each landing (medians)\n");
    std::printf("%5s %-22s %10s %10s\n", "SMs", "copies (32 KiB each)", "first", "second");
    const uint64_t window = uint64_t{4} << 20;
    const int iters = 32;
    uint64_t* dland = nullptr;
    CK(cudaMalloc(&dland, sizeof(uint64_t) * 2 * size_t(sms) * iters));
    CK(cudaFuncSetAttribute(order, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
    uint64_t launch = 0;
    struct Case {
      int first, second;
      const char* name;
    };
    const Case cases[] = {{0, -1, "miss alone"}, {1, -1, "hit alone"}, {0, 1, "miss, then a hit"}, {1, 0, "hit, then a miss"}, {1, 1, "hit, then a hit"}, {0, 0, "miss, then a miss"}};
    int khz = 0;
    CK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0));
    const double ghz = khz / 1e6;  // the nominal SM clock (the H100 held 1.98 GHz through these probes)
    for (int n : {1, sms}) {
      for (const Case& c : cases) {
        L.warm(window, sms);
        const uint64_t cold_base = kColdBase + (launch++ % 8) * (uint64_t{192} << 20);
        order<<<n, 32, 2 * bytes>>>(src, cold_base, window, uint32_t(bytes), c.first, c.second, iters, dland);
        CK(cudaDeviceSynchronize());
        std::vector<uint64_t> h(2 * size_t(n) * iters);
        CK(cudaMemcpy(h.data(), dland, sizeof(uint64_t) * h.size(), cudaMemcpyDeviceToHost));
        std::vector<double> a, b;
        for (int k = 0; k < n; ++k)
          for (int it = 4; it < iters; ++it) {
            a.push_back(double(h[(size_t(k) * iters + it) * 2]) / ghz);
            if (c.second >= 0) b.push_back(double(h[(size_t(k) * iters + it) * 2 + 1]) / ghz);
          }
        std::printf("%5d %-22s %10.0f %10.0f\n", n, c.name, median(a), median(b));
      }
    }
    CK(cudaFree(dland));
  }
  CK(cudaFree(L.dplans));
  CK(cudaFree(L.dout));
  CK(cudaFree(src));
  return 0;
}
