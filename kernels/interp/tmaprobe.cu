// Native TMA probes (no interpreter): what one bulk copy costs from its issue to its last byte, how one
// SM takes in several copies, how the round trip grows when every SM streams at once (loaded DRAM
// latency), how a burst of copies from many SMs is served, and in which parts a copy completes its
// bytes on its mbarrier. docs/calibration.md says which constants of model/arch.cpp come from them (the fits: docs/runs/calibration-sessions-2026-11.md).
//   nvcc -std=c++20 -O3 -gencode arch=compute_90a,code=sm_90a kernels/interp/tmaprobe.cu -o tmaprobe && ./tmaprobe
// Every source byte comes from DRAM: copies walk a 2 GiB buffer and each launch starts where the last
// one stopped, far beyond the 50 MB L2 (except where a case says "L2").
#include <cuda/ptx>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <tuple>
#include <cstdlib>
#include <string>
#include <vector>

namespace ptx = cuda::ptx;

namespace {

constexpr size_t kSrcBytes = size_t{2} << 30;
constexpr int kSmemMax = 200 * 1024;  // one CTA per SM in every case

__device__ __forceinline__ uint64_t clk() { return ptx::get_sreg_clock64(); }
__device__ __forceinline__ uint64_t gt() { return ptx::get_sreg_globaltimer(); }

__device__ __forceinline__ void expect_and_copy(uint64_t* bar, void* dst, const uint8_t* src, uint32_t bytes) {
  (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, bar, bytes);
  ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, dst, src, bytes, bar);
}
// The whole warp polls (as CUTLASS's consumer_wait and the interpreter do: ~59 ns to wake).
__device__ __forceinline__ void wait_warp(uint64_t* bar, uint32_t parity) {
  while (!ptx::mbarrier_try_wait_parity(bar, parity)) {
  }
}

// --- 1. One SM alone: `depth` copies of `bytes` issued back to back, then each waited in order.
// Per iteration and copy: cycles from the first issue to the copy's completion as the warp sees it.
__global__ void roundtrip(const uint8_t* src, uint64_t base, uint32_t bytes, int depth, int iters, uint64_t* land, uint64_t* issue_cyc) {
  extern __shared__ __align__(128) uint8_t smem[];
  __shared__ __align__(8) uint64_t bars[8];
  const int lane = threadIdx.x & 31;
  if (lane == 0) {
    for (int j = 0; j < depth; ++j) ptx::mbarrier_init(&bars[j], 1u);
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  __syncwarp();
  uint64_t cursor = base;
  for (int it = 0; it < iters; ++it) {
    __syncwarp();
    const uint64_t c0 = clk();
    if (lane == 0) {
      for (int j = 0; j < depth; ++j) {
        expect_and_copy(&bars[j], smem + size_t(j) * bytes, src + (cursor % kSrcBytes), bytes);
        cursor += bytes;
      }
    }
    __syncwarp();
    const uint64_t c1 = clk();
    for (int j = 0; j < depth; ++j) {
      wait_warp(&bars[j], uint32_t(it & 1));
      if (lane == 0) land[size_t(it) * depth + j] = clk() - c0;
    }
    if (lane == 0) issue_cyc[it] = c1 - c0;
  }
}

// --- 2. Every CTA (one per SM) keeps `depth` copies of `bytes` in flight for `per_cta` copies (a ring:
// wait the oldest, reissue it). `per_cta == depth` is a burst: issue all at once, wait all.
// Per CTA: first issue and last landing (%globaltimer), summed round trips (cycles), copies.
struct CtaStat {
  unsigned long long g_first, g_last, rt_cyc, n, cyc, g_span;
};
// `land` (optional): the cycle, from the CTA's first issue, at which the warp saw each of its first `nland`
// copies (case 2c: how a cold start is served).
// `window`: the copies walk src modulo this many bytes (case 4: a window that fits the L2 is read from it).
__global__ void stream(const uint8_t* src, uint64_t base, uint32_t bytes, int depth, int per_cta, CtaStat* st,
                       uint64_t* land = nullptr, int nland = 0, uint64_t window = kSrcBytes) {
  extern __shared__ __align__(128) uint8_t smem[];
  __shared__ __align__(8) uint64_t bars[16];
  __shared__ uint64_t issued[16];
  const int lane = threadIdx.x & 31;
  if (lane == 0) {
    for (int j = 0; j < depth; ++j) ptx::mbarrier_init(&bars[j], 1u);
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  __syncwarp();
  // In a window (case 4) the CTAs start evenly spread over it, or all at `base` when it is 1 (the same
  // lines read by every SM at about the same time, as a GEMM's A and B tiles are).
  // base 2: each CTA cycles through its own slice (window / CTAs) only: as many distinct lines as a
  // spread window, but each SM's span is 1/CTAs of it.
  const uint64_t slice = window / gridDim.x / bytes * bytes;
  uint64_t cursor = window == kSrcBytes ? base + uint64_t(blockIdx.x) * uint64_t(per_cta) * bytes
                    : base == 1         ? 0
                                        : uint64_t(blockIdx.x) * slice;
  const bool own = window != kSrcBytes && base == 2;
  const uint64_t lo = own ? cursor : 0, span = own ? slice : window;
  if (own) cursor = 0;
  const uint64_t g0 = gt(), c0 = clk();
  unsigned long long rt = 0;
  if (lane == 0)
    for (int j = 0; j < depth && j < per_cta; ++j) {
      issued[j] = clk();
      expect_and_copy(&bars[j], smem + size_t(j) * bytes, src + lo + (cursor % span), bytes);
      cursor += bytes;
    }
  __syncwarp();
  for (int i = 0; i < per_cta; ++i) {
    const int j = i % depth;
    wait_warp(&bars[j], uint32_t((i / depth) & 1));
    if (lane == 0) {
      const uint64_t now = clk();
      if (i < nland) land[size_t(blockIdx.x) * nland + i] = now - c0;
      rt += now - issued[j];
      if (i + depth < per_cta) {
        issued[j] = now;
        expect_and_copy(&bars[j], smem + size_t(j) * bytes, src + lo + (cursor % span), bytes);
        cursor += bytes;
      }
    }
    __syncwarp();
  }
  const uint64_t g1 = gt(), c1 = clk();
  if (lane == 0) st[blockIdx.x] = CtaStat{g0, g1, rt, (unsigned long long)per_cta, c1 - c0, g1 - g0};
}

// --- 3. Parts: expect_tx(x) on a count-1 barrier, then one copy of `bytes` (x <= bytes). If the copy
// completes its bytes in parts and a part ends exactly at x, the phase completes there and the rest
// counts in the next phase. Per x: whether phase 0 completed (after 20 us, all bytes in) and the raw
// 64-bit state. `l2`: every copy reads the same 64 KiB (L2 hits after the first).
__global__ void parts(const uint8_t* src, uint64_t base, uint32_t bytes, uint32_t x_step, int nx, int l2, unsigned* flipped,
                      unsigned long long* raw) {
  extern __shared__ __align__(128) uint8_t smem[];
  __shared__ __align__(8) uint64_t bar;
  if (threadIdx.x != 0) return;
  for (int k = blockIdx.x; k < nx; k += gridDim.x) {
    const uint32_t x = x_step * uint32_t(k + 1);
    ptx::mbarrier_init(&bar, 1u);
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
    const uint64_t off = l2 ? 0 : base + uint64_t(k) * 262144;
    (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &bar, x);
    ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, smem, src + (off % kSrcBytes), bytes, &bar);
    const uint64_t until = gt() + 20000;
    while (gt() < until) {
    }
    flipped[k] = ptx::mbarrier_try_wait_parity(&bar, 0u) ? 1u : 0u;
    raw[k] = *reinterpret_cast<volatile unsigned long long*>(&bar);
    asm volatile("mbarrier.inval.shared::cta.b64 [%0];" ::"r"(static_cast<uint32_t>(__cvta_generic_to_shared(&bar))) : "memory");
  }
}

#define CK(x)                                                                                  \
  do {                                                                                         \
    cudaError_t e_ = (x);                                                                      \
    if (e_ != cudaSuccess) {                                                                   \
      std::printf("%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));         \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

uint64_t g_base = 0;  // where the next launch's copies start in the source buffer
uint64_t take(uint64_t bytes) {
  const uint64_t b = g_base;
  g_base = (g_base + bytes + 4096) % kSrcBytes;
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  // `tmaprobe parts`: case 3 only (a few seconds, no SM-wide streams).
  // `tmaprobe start`: case 2c alone (a few seconds).
  const bool only_parts = argc > 1 && std::string(argv[1]) == "parts";
  const bool only_start = argc > 1 && std::string(argv[1]) == "start";
  // `tmaprobe l2`: case 4 alone (the L2's bandwidth to the SMs, against the DRAM's).
  const bool only_l2 = argc > 1 && std::string(argv[1]) == "l2";
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  uint8_t* src = nullptr;
  CK(cudaMalloc(&src, kSrcBytes + (size_t{1} << 20)));  // a copy that starts near the end may run past it
  CK(cudaMemset(src, 1, kSrcBytes + (size_t{1} << 20)));
  CK(cudaFuncSetAttribute(roundtrip, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemMax));
  CK(cudaFuncSetAttribute(stream, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemMax));
  CK(cudaFuncSetAttribute(parts, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemMax));
  // SM clock: cycles over globaltimer in a long stream launch below; start with the nominal clock.
  int khz = 0;
  CK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0));
  std::printf("== tmaprobe on %s, %d SMs, nominal SM clock %.0f MHz\n", prop.name, sms, khz / 1e3);

  if (!only_parts) {
  // Measured SM clock (cycles per ns) from a loaded stream, used to convert every cycle count.
  std::vector<CtaStat> st{size_t(sms), CtaStat{}};
  CtaStat* dst = nullptr;
  CK(cudaMalloc(&dst, sizeof(CtaStat) * size_t(sms)));
  double ghz = 0;
  {
    std::vector<double> r;
    for (int rep = 0; rep < 3; ++rep) {
      stream<<<sms, 32, 4 * 32768>>>(src, take(uint64_t(sms) * 256 * 32768), 32768, 4, 256, dst);
      CK(cudaDeviceSynchronize());
      CK(cudaMemcpy(st.data(), dst, sizeof(CtaStat) * size_t(sms), cudaMemcpyDeviceToHost));
      for (auto& s : st) r.push_back(double(s.cyc) / double(s.g_span));
    }
    ghz = median(r);
    std::printf("   SM clock during the probes: %.3f GHz\n", ghz);
  }

  if (only_l2) {
    // 4. Every SM streams a ring of copies out of a window of `window` bytes of src (the CTAs start
    // spread over it): a window within the 50 MB L2 is served from it after the first launch (4 launches,
    // the first warms it, the median of the others). Device bandwidth = bytes copied / (last landing -
    // first issue).
    std::printf("\n== 4. L2: CTAs (one per SM) stream rings of copies out of a window of src; GB/s, median of 3 launches\n");
    std::printf("%10s %5s %8s %6s %5s %10s %12s\n", "window MiB", "same", "bytes", "depth", "CTAs", "GB/s", "round trip");
    std::printf("   same = 1: every CTA starts at the window's start (they read the same lines together)\n");
    std::printf("   same = 2: each CTA reads only its own slice (window / CTAs) over and over\n");
    // `tmaprobe l2 W...`: only these windows (MiB, spread), and only the rows that measure bandwidth.
    std::vector<std::pair<uint64_t, int>> windows{{8, 0}, {8, 1}, {24, 0}, {24, 1}, {40, 0}, {64, 0}, {2048, 0}};
    std::vector<std::tuple<uint32_t, int, int>> rows{
        {32768, 4, sms}, {16384, 8, sms}, {16384, 4, sms}, {32768, 6, sms}, {8192, 8, sms}, {65536, 2, sms}, {65536, 3, sms},
        {32768, 4, 16}, {16384, 4, 16}, {65536, 2, 16}, {32768, 4, 66}};
    if (argc > 2) {
      windows.clear();
      // W: spread over W MiB; W/s: each CTA in its own slice of W MiB (same = 2).
      for (int a = 2; a < argc; ++a) windows.emplace_back(std::stoull(argv[a]), std::string(argv[a]).find("/s") != std::string::npos ? 2 : 0);
      rows = {{65536, 3, sms}, {65536, 2, sms}, {32768, 4, sms}, {32768, 6, sms}};
    }
    for (auto [window_mib, same] : windows) {
      for (auto [bytes, depth, ctas] : rows) {
        const int per_cta = 384;
        std::vector<double> g, r;
        for (int rep = 0; rep < 4; ++rep) {
          stream<<<ctas, 32, bytes * depth>>>(src, uint64_t(same), bytes, depth, per_cta, dst, nullptr, 0, window_mib << 20);
          CK(cudaDeviceSynchronize());
          if (rep == 0) continue;
          std::vector<CtaStat> s{size_t(ctas), CtaStat{}};
          CK(cudaMemcpy(s.data(), dst, sizeof(CtaStat) * size_t(ctas), cudaMemcpyDeviceToHost));
          unsigned long long gmin = ~0ull, gmax = 0;
          double rsum = 0, n = 0;
          for (auto& c : s) {
            gmin = std::min(gmin, c.g_first);
            gmax = std::max(gmax, c.g_last);
            rsum += double(c.rt_cyc) / ghz;
            n += double(c.n);
          }
          g.push_back(double(ctas) * per_cta * bytes / double(gmax - gmin));
          r.push_back(rsum / n);
        }
        std::printf("%10llu %5d %8u %6d %5d %10.1f %12.1f\n", (unsigned long long)window_mib, same, bytes, depth, ctas, median(g), median(r));
      }
    }
    return 0;
  }

  if (!only_start) {
  // 1. One SM alone.
  std::printf("\n== 1. one SM alone: issue `depth` copies back to back, wait each (whole warp polls, ~59 ns wake)\n");
  std::printf("%8s %6s %10s %12s %12s %14s\n", "bytes", "depth", "issue ns", "first ns", "last ns", "last-first B/ns");
  const int iters = 48;
  uint64_t *land = nullptr, *icyc = nullptr;
  CK(cudaMalloc(&land, sizeof(uint64_t) * iters * 8));
  CK(cudaMalloc(&icyc, sizeof(uint64_t) * iters));
  for (uint32_t bytes : {1024u, 4096u, 8192u, 16384u, 32768u, 65536u, 98304u}) {
    for (int depth : {1, 2, 4, 8}) {
      if (size_t(bytes) * depth > size_t(kSmemMax)) continue;
      roundtrip<<<1, 32, bytes * depth>>>(src, take(uint64_t(iters) * depth * bytes), bytes, depth, iters, land, icyc);
      CK(cudaDeviceSynchronize());
      std::vector<uint64_t> h(size_t(iters) * depth), hi(iters);
      CK(cudaMemcpy(h.data(), land, sizeof(uint64_t) * h.size(), cudaMemcpyDeviceToHost));
      CK(cudaMemcpy(hi.data(), icyc, sizeof(uint64_t) * iters, cudaMemcpyDeviceToHost));
      std::vector<double> first, last, iss;
      for (int it = 4; it < iters; ++it) {  // 4 warm-up iterations
        first.push_back(double(h[size_t(it) * depth]) / ghz);
        last.push_back(double(h[size_t(it) * depth + depth - 1]) / ghz);
        iss.push_back(double(hi[it]) / ghz);
      }
      const double f = median(first), l = median(last);
      std::printf("%8u %6d %10.1f %12.1f %12.1f", bytes, depth, median(iss), f, l);
      if (depth > 1) std::printf(" %14.1f", double(bytes) * (depth - 1) / (l - f));
      std::printf("\n");
    }
  }

  // 2. Every SM streams (ring of `depth` copies) or bursts; per-CTA round trip and device bandwidth.
  std::printf("\n== 2a. %d SMs stream: a ring of `depth` copies per SM; bandwidth and the mean round trip (issue to\n"
              "   the waiting warp seeing it), median of 3 launches; Little: in flight / bandwidth\n", sms);
  std::printf("%8s %6s %6s %10s %10s %12s %12s %12s\n", "bytes", "depth", "SMs", "KiB/SM", "GB/s", "round trip", "Little ns",
              "CTA ends us");
  auto run_stream = [&](uint32_t bytes, int depth, int ctas, int per_cta, double& gbps, double& rt_ns, double& end_first,
                        double& end_median, double& end_last) {
    std::vector<double> g, r, lo, hi, sm;
    for (int rep = 0; rep < 3; ++rep) {
      stream<<<ctas, 32, bytes * depth>>>(src, take(uint64_t(ctas) * per_cta * bytes), bytes, depth, per_cta, dst);
      CK(cudaDeviceSynchronize());
      std::vector<CtaStat> s{size_t(ctas), CtaStat{}};
      CK(cudaMemcpy(s.data(), dst, sizeof(CtaStat) * size_t(ctas), cudaMemcpyDeviceToHost));
      unsigned long long gmin = ~0ull, gmax = 0;
      double rsum = 0, n = 0;
      std::vector<double> ends;
      for (auto& c : s) {
        gmin = std::min(gmin, c.g_first);
        gmax = std::max(gmax, c.g_last);
        rsum += double(c.rt_cyc) / ghz;
        n += double(c.n);
      }
      for (auto& c : s) ends.push_back(double(c.g_last - gmin));
      std::sort(ends.begin(), ends.end());
      g.push_back(double(ctas) * per_cta * bytes / double(gmax - gmin));
      r.push_back(rsum / n);
      lo.push_back(ends.front());
      hi.push_back(ends.back());
      sm.push_back(ends[ends.size() / 2]);
    }
    gbps = median(g);
    rt_ns = median(r);
    end_first = median(lo);
    end_median = median(sm);
    end_last = median(hi);
  };
  for (uint32_t bytes : {4096u, 8192u, 16384u, 32768u}) {
    for (int depth : {1, 2, 4, 6, 8, 12}) {
      if (size_t(bytes) * depth > size_t(kSmemMax) || depth > 16) continue;
      for (int ctas : {sms, sms / 2, sms / 4}) {
        const int per_cta = std::max(64, int((uint64_t(128) << 20) / (uint64_t(ctas) * bytes)));
        double gbps, rt, lo, med, hi;
        run_stream(bytes, depth, ctas, per_cta, gbps, rt, lo, med, hi);
        std::printf("%8u %6d %6d %10.0f %10.1f %12.1f %12.1f %5.1f..%5.1f\n", bytes, depth, ctas, bytes * depth / 1024.0, gbps, rt,
                    double(bytes) * depth * ctas / gbps, lo / 1e3, hi / 1e3);
      }
    }
  }
  std::printf("\n== 2b. burst: every CTA issues `depth` copies at once and waits them all (bug 11 is 128 x 4 x 32 KiB);\n"
              "   CTA end times (first issue of any CTA to this CTA's last landing), median of 3 launches\n");
  std::printf("%8s %6s %6s %10s %10s %10s %10s %10s\n", "bytes", "depth", "CTAs", "MiB", "first end", "median end", "last end",
              "GB/s");
  for (auto [bytes, depth, ctas] : std::vector<std::tuple<uint32_t, int, int>>{{32768, 4, 128},
                                                                               {32768, 4, 132},
                                                                               {32768, 1, 128},
                                                                               {32768, 2, 128},
                                                                               {32768, 6, 128},
                                                                               {16384, 8, 128},
                                                                               {8192, 16, 128},
                                                                               {32768, 4, 64},
                                                                               {32768, 4, 32},
                                                                               {65536, 2, 128},
                                                                               {65536, 3, 128}}) {
    double gbps, rt, lo, med, hi;
    run_stream(bytes, depth, ctas, depth, gbps, rt, lo, med, hi);
    std::printf("%8u %6d %6d %10.1f %10.1f %10.1f %10.1f %10.1f\n", bytes, depth, ctas, double(bytes) * depth * ctas / 1048576.0,
                lo, med, hi, gbps);
  }
  }  // !only_start

  // 2c. A cold start: when each of a CTA's first copies lands, from the launch's first issue. A ring's
  // first `depth` copies are a burst; a GEMV's pipeline starts this way (36 KiB stages: 32 KiB of A and
  // its scales).
  std::printf("\n== 2c. cold start: the landing of copy j (seen by the waiting warp) from the launch's first issue,\n"
              "   min / median / max over the CTAs, each the median of 3 launches (ns)\n");
  for (auto [bytes, depth, ctas, per_cta] : std::vector<std::tuple<uint32_t, int, int, int>>{{32768, 1, 128, 1},
                                                                                          {32768, 4, 128, 4},
                                                                                          {36864, 4, 132, 7},
                                                                                          {36864, 4, 132, 14},
                                                                                          {32768, 4, 132, 64},
                                                                                          {32768, 2, 132, 64},
                                                                                          {16384, 8, 132, 64},
                                                                                          {8192, 4, 132, 64},
                                                                                          {32768, 4, 66, 64}}) {
    const int nland = std::min(per_cta, 16);
    uint64_t* dland = nullptr;
    CK(cudaMalloc(&dland, sizeof(uint64_t) * size_t(ctas) * size_t(nland)));
    std::vector<std::vector<double>> lo(static_cast<size_t>(nland)), md(lo), hi(lo);
    for (int rep = 0; rep < 3; ++rep) {
      stream<<<ctas, 32, bytes * depth>>>(src, take(uint64_t(ctas) * per_cta * bytes), bytes, depth, per_cta, dst, dland, nland);
      CK(cudaDeviceSynchronize());
      std::vector<CtaStat> s{size_t(ctas), CtaStat{}};
      std::vector<uint64_t> h(size_t(ctas) * size_t(nland));
      CK(cudaMemcpy(s.data(), dst, sizeof(CtaStat) * size_t(ctas), cudaMemcpyDeviceToHost));
      CK(cudaMemcpy(h.data(), dland, sizeof(uint64_t) * h.size(), cudaMemcpyDeviceToHost));
      unsigned long long gmin = ~0ull;
      for (auto& c : s) gmin = std::min(gmin, c.g_first);
      for (int j = 0; j < nland; ++j) {
        std::vector<double> t;
        for (int c = 0; c < ctas; ++c)
          t.push_back(double(s[size_t(c)].g_first - gmin) + double(h[size_t(c) * size_t(nland) + size_t(j)]) / ghz);
        std::sort(t.begin(), t.end());
        lo[size_t(j)].push_back(t.front());
        md[size_t(j)].push_back(t[t.size() / 2]);
        hi[size_t(j)].push_back(t.back());
      }
    }
    std::printf("   bytes %u depth %d CTAs %d copies per CTA %d\n", bytes, depth, ctas, per_cta);
    for (int j = 0; j < nland; ++j)
      std::printf("   %8u %6d %6d %6d %4d %10.1f %10.1f %10.1f\n", bytes, depth, ctas, per_cta, j, median(lo[size_t(j)]),
                  median(md[size_t(j)]), median(hi[size_t(j)]));
    CK(cudaFree(dland));
  }
  if (only_start) return 0;

  }  // !only_parts

  // 3. Parts.
  std::printf("\n== 3. parts: expect_tx(x), one copy of B bytes; x where phase 0 completed (i.e. a part ended at x)\n");
  unsigned* fl = nullptr;
  unsigned long long* raw = nullptr;
  const int kMaxX = 4096;
  CK(cudaMalloc(&fl, sizeof(unsigned) * kMaxX));
  CK(cudaMalloc(&raw, sizeof(unsigned long long) * kMaxX));
  for (int l2 : {0, 1}) {
    // Sizes of an odd number of 16-byte halves (272, 1040, 4112, 13328: session 7) end in half a
    // 32-byte sector: can a part end at x = B - 32j (the tail landed before whole sectors)?
    for (uint32_t bytes : {256u, 272u, 1024u, 1040u, 4096u, 4112u, 13328u, 16384u, 65536u}) {
      const uint32_t step = bytes <= 4112 || bytes % 32 ? 16 : (bytes == 16384 ? 64 : 256);
      const int nx = int(bytes / step);
      std::vector<int> count(static_cast<size_t>(nx), 0);
      std::vector<unsigned long long> last_raw(static_cast<size_t>(nx));
      const int reps = 4;
      for (int rep = 0; rep < reps; ++rep) {
        parts<<<std::min(nx, 64), 32, bytes>>>(src, take(uint64_t(nx) * 262144), bytes, step, nx, l2, fl, raw);
        CK(cudaDeviceSynchronize());
        std::vector<unsigned> h(static_cast<size_t>(nx));
        CK(cudaMemcpy(h.data(), fl, sizeof(unsigned) * h.size(), cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(last_raw.data(), raw, sizeof(unsigned long long) * size_t(nx), cudaMemcpyDeviceToHost));
        for (int k = 0; k < nx; ++k) count[size_t(k)] += int(h[size_t(k)]);
      }
      std::printf("   %s B=%-6u x step %-4u completed at x =", l2 ? "L2  " : "DRAM", bytes, step);
      int shown = 0;
      for (int k = 0; k < nx; ++k)
        if (count[size_t(k)] > 0 && shown++ < 80) std::printf(" %u(%d/%d)", step * uint32_t(k + 1), count[size_t(k)], reps);
      if (shown > 80) std::printf(" ... (%d in all)", shown);
      int at0 = 0, at16 = 0;
      for (int k = 0; k + 1 < nx; ++k)  // x < B
        if (count[size_t(k)] > 0) ((step * uint32_t(k + 1)) % 32 ? at16 : at0) += 1;
      std::printf("\n      x < B where it completed: %d at multiples of 32, %d at odd multiples of 16", at0, at16);
      std::printf("\n      raw state at x=%u: %016llx, at x=B/2: %016llx, at x=B: %016llx\n", step, last_raw[0],
                  last_raw[size_t(nx / 2 - 1)], last_raw[size_t(nx - 1)]);
    }
  }
  return 0;
}
