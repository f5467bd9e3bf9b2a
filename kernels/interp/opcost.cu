// Native micro-benchmarks next to the interpreter: what the H100 itself charges for the operations the
// calibration scenarios repeat, written as straight-line CUDA (no interpreter), and the interpreter's
// dispatch skeleton without any operation. Used to split a calibration slope into hardware cost and
// interpreter cost (docs/calibration.md). Standalone:
//   nvcc -std=c++20 -O3 -gencode arch=compute_90a,code=sm_90a kernels/interp/opcost.cu -o opcost && ./opcost
// Prints one line per case: cycles per iteration (median of 7 launches, N = 4096 iterations after 64
// warm-up iterations), and ns at the SM clock measured in the same launch.
#include <cuda/ptx>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <utility>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "probe.cuh"

namespace ptx = cuda::ptx;

namespace {

constexpr int kN = 4096, kWarm = 64;

__device__ __forceinline__ uint32_t sa(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }

struct Out {
  unsigned long long cyc, ns;
  unsigned long long sink;
};

enum Case : int {
  kArriveState,     // lane 0: mbarrier.arrive.release.cta.shared::cta (returns state), count-1 barrier
  kArriveSink,      // lane 0: mbarrier.arrive.shared::cluster _ (CUTLASS form), own CTA's barrier
  kArriveNoPhase,   // lane 0: arrive on a barrier of count 1<<20 (no phase completes)
  kDispatchOnly,    // whole warp: the interpreter's per-op skeleton (4 shfl, branch on a kind) without an op
  kDispatchArrive,  // the skeleton + lane 0's arrive (what op_issue measures)
  kWake,            // 2 warps ping-pong on two count-1 barriers: per iteration two hand-overs
  kNamed,           // 4 warps: bar.sync 1, 128
  kNamedStore,      // 4 warps: a volatile global store, then bar.sync 1, 128 (the interpreter's record)
  kCluster,         // cluster of 2, one warp each: barrier.cluster.arrive + wait
  kClusterRelaxed,  // same with .relaxed arrive
  kRemote,          // cluster of 2 ping-pong via remote arrive (CUTLASS form) + local try_wait
  kTma4k,           // one warp: arrive.expect_tx + 4 KiB cp.async.bulk (streaming from DRAM) + wait
  kTma16k,
  kWakeWarp,        // as kWake, but every lane of the two warps polls (CUTLASS consumer_wait: the whole warpgroup)
  kTma4kL2,         // as kTma4k, always the same 4 KiB (an L2 hit after the first)
  kCases
};
const char* const kNames[kCases] = {"arrive (state, count 1)", "arrive (sink, count 1)", "arrive (no phase completes)",
                                    "dispatch skeleton only",  "dispatch + arrive",      "arrive->wake hand-over x2",
                                    "bar.sync 4 warps",        "st.volatile + bar.sync", "cluster arrive+wait (2)",
                                    "cluster relaxed+wait (2)", "remote arrive hand-over x2", "TMA 4 KiB round trip",
                                    "TMA 16 KiB round trip", "hand-over x2, whole-warp waits", "TMA 4 KiB round trip, L2 hit"};

__device__ __forceinline__ bool try_wait(uint64_t* bar, uint32_t parity) { return ptx::mbarrier_try_wait_parity(bar, parity); }
__device__ __forceinline__ void wait(uint64_t* bar, uint32_t parity) {
  while (!try_wait(bar, parity)) {
  }
}
__device__ __forceinline__ void arrive_sink(uint64_t* bar, uint32_t rank) {
  uint32_t r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(sa(bar)), "r"(rank));
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(r) : "memory");
}

// One kernel per case (the case is a template argument: a run-time switch in the loop would cost more
// than most of the operations it measures).
template <int c>
__global__ void bench(const uint8_t* src, uint64_t src_mask, Out* out, const uint4* ops) {
  __shared__ __align__(128) uint64_t bars[4];
  __shared__ __align__(128) uint8_t buf[16384];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const uint32_t rank = ptx::get_sreg_cluster_ctarank();
  if (threadIdx.x == 0) {
    ptx::mbarrier_init(&bars[0], c == kArriveNoPhase ? (1u << 20) - 1 : 1u);
    ptx::mbarrier_init(&bars[1], 1u);
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  __syncthreads();
  if (c == kCluster || c == kClusterRelaxed || c == kRemote) {
    ptx::barrier_cluster_arrive();
    ptx::barrier_cluster_wait();
  }
  unsigned long long sink = 0;
  uint64_t c0 = 0, g0 = 0;
  uint4 cur = ops[lane];
  uint64_t cursor = 0;
  for (int i = -kWarm; i < kN; ++i) {
    if (i == 0) {
      __syncwarp();
      c0 = clk();
      g0 = gt();
    }
    const uint32_t par = static_cast<uint32_t>(i + kWarm) & 1u;
    switch (c) {  // constant: folded
      case kArriveState:
        if (lane == 0) sink ^= ptx::mbarrier_arrive(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &bars[0], 1u);
        __syncwarp();
        break;
      case kArriveSink:
      case kArriveNoPhase:
        if (lane == 0) arrive_sink(&bars[0], rank);
        __syncwarp();
        break;
      case kDispatchOnly:
      case kDispatchArrive: {
        const int j = (i + kWarm) & 31;
        const uint32_t h = __shfl_sync(~0u, cur.x, j), s = __shfl_sync(~0u, cur.y, j), a = __shfl_sync(~0u, cur.z, j),
                       b = __shfl_sync(~0u, cur.w, j);
        if (lane == 0) {
          if (c == kDispatchArrive && (h & 0xff) == 3) (void)ptx::mbarrier_arrive(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &bars[s & 1], a);
          else sink += h + s + a + b;
        }
        break;
      }
      case kWake:
        if (warp == 0) {
          if (lane == 0) {
            (void)ptx::mbarrier_arrive(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &bars[0], 1u);
            wait(&bars[1], par);
          }
        } else if (warp == 1) {
          if (lane == 0) {
            wait(&bars[0], par);
            (void)ptx::mbarrier_arrive(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &bars[1], 1u);
          }
        }
        __syncwarp();
        break;
      case kNamedStore:
        if (lane == 0) *reinterpret_cast<volatile unsigned long long*>(&out[1 + warp].sink) = static_cast<unsigned long long>(i);
        __syncwarp();
        [[fallthrough]];
      case kNamed:
        asm volatile("bar.sync 1, 128;" ::: "memory");
        break;
      case kCluster:
        ptx::barrier_cluster_arrive();
        ptx::barrier_cluster_wait();
        break;
      case kClusterRelaxed:
        ptx::barrier_cluster_arrive(ptx::sem_relaxed);
        ptx::barrier_cluster_wait();
        break;
      case kRemote:
        if (lane == 0) {
          if (rank == 0) {
            arrive_sink(&bars[0], 1);
            wait(&bars[0], par);
          } else {
            wait(&bars[0], par);
            arrive_sink(&bars[0], 0);
          }
        }
        __syncwarp();
        break;
      case kWakeWarp:
        if (warp == 0) {
          if (lane == 0) (void)ptx::mbarrier_arrive(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &bars[0], 1u);
          wait(&bars[1], par);
        } else if (warp == 1) {
          wait(&bars[0], par);
          if (lane == 0) (void)ptx::mbarrier_arrive(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &bars[1], 1u);
        }
        __syncwarp();
        break;
      case kTma4k:
      case kTma16k:
      case kTma4kL2:
        if (lane == 0) {
          const uint32_t bytes = c == kTma16k ? 16384u : 4096u;
          if (c == kTma4kL2) cursor = 0;
          (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &bars[1], bytes);
          ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, buf, src + (cursor & src_mask), bytes, &bars[1]);
          cursor += bytes;
          wait(&bars[1], par);
        }
        __syncwarp();
        break;
      default: break;
    }
  }
  __syncwarp();
  const uint64_t c1 = clk(), g1 = gt();
  if (threadIdx.x == 0 && rank == 0) {
    out[0].cyc = c1 - c0;
    out[0].ns = g1 - g0;
    out[0].sink = sink;
  }
}

template <int... C>
constexpr auto table(std::integer_sequence<int, C...>) {
  return std::array<void (*)(const uint8_t*, uint64_t, Out*, const uint4*), sizeof...(C)>{&bench<C>...};
}

}  // namespace

int main() {
  const auto kernels = table(std::make_integer_sequence<int, kCases>{});
  uint8_t* src = nullptr;
  const size_t src_bytes = size_t{512} << 20;
  Out* out = nullptr;
  uint4* ops = nullptr;
  if (cudaMalloc(&src, src_bytes) != cudaSuccess || cudaMalloc(&out, 8 * sizeof(Out)) != cudaSuccess ||
      cudaMalloc(&ops, 32 * sizeof(uint4)) != cudaSuccess) {
    std::printf("allocation failed\n");
    return 1;
  }
  cudaMemset(src, 1, src_bytes);
  std::vector<uint4> h(32);
  for (int k = 0; k < 32; ++k) h[k] = make_uint4(3u, 0u, 1u, 0u);  // "arrive, slot 0, count 1"
  cudaMemcpy(ops, h.data(), sizeof(uint4) * 32, cudaMemcpyHostToDevice);
  std::printf("%-30s %12s %10s %9s\n", "case", "cycles/iter", "ns/iter", "SM MHz");
  for (int c = 0; c < kCases; ++c) {
    const bool cl = c == kCluster || c == kClusterRelaxed || c == kRemote;
    const int threads = (c == kNamed || c == kNamedStore) ? 128 : (c == kWake || c == kWakeWarp ? 64 : 32);
    const ClusterLaunch launch(cl ? 2 : 1, static_cast<unsigned>(threads), 0, cl ? 2 : 1);
    const cudaLaunchConfig_t& cfg = launch.cfg;
    std::vector<double> cyc, ns;
    for (int r = 0; r < 7; ++r) {
      if (cudaLaunchKernelEx(&cfg, kernels[c], static_cast<const uint8_t*>(src), static_cast<uint64_t>(src_bytes - 1) & ~uint64_t{127},
                             out, static_cast<const uint4*>(ops)) != cudaSuccess ||
          cudaDeviceSynchronize() != cudaSuccess) {
        std::printf("%-30s failed: %s\n", kNames[c], cudaGetErrorString(cudaGetLastError()));
        return 1;
      }
      Out o{};
      cudaMemcpy(&o, out, sizeof o, cudaMemcpyDeviceToHost);
      cyc.push_back(static_cast<double>(o.cyc) / kN);
      ns.push_back(static_cast<double>(o.ns) / kN);
    }
    std::sort(cyc.begin(), cyc.end());
    std::sort(ns.begin(), ns.end());
    std::printf("%-30s %12.1f %10.1f %9.0f\n", kNames[c], cyc[3], ns[3], cyc[3] / ns[3] * 1e3);
  }
  return 0;
}
