// The device interpreter: executes the op streams of sim/stream.hpp on the GPU with real mbarriers,
// real bulk copies (cp.async.bulk, multicast), real named and cluster barriers.
//
// One CUDA thread block per scenario CTA, the scenario's thread count, clusters as declared. Every
// warp runs its own stream in lockstep: lane 0 issues the mbarrier / TMA / store operations (the
// "elected thread"), all 32 lanes execute bar.sync / bar.arrive (they count threads) and
// barrier.cluster.arrive / wait (every thread of the cluster takes part). After each op the warp
// reconverges (__shfl_sync of lane 0's verdict).
//
// Hangs become reports: every mbarrier wait is bounded by %globaltimer (DeviceOptions::timeout_ms). The
// warp that times out writes CTA, warp, op index, barrier, parity and the raw 64-bit barrier state into
// its DevWarpRecord and declares the hang (a global word takes the %globaltimer of the moment). Warps
// that are still blocked 1 ms after that record where they are and stop; all of them leave together
// `grace` later, so that no exit releases someone else's cluster barrier before everyone has recorded.
// bar.sync and barrier.cluster.wait cannot be bounded: the warp writes "blocked at op i" before
// entering; if nothing ever releases it, the host's watchdog copies the records while the kernel is
// still running and gives the worker process up.
//
// tcgen05 on sm_90a: there is no hardware. An MMA is a spin of the modelled duration, a commit is the
// arrive it would make (on every CTA of its mask), TMEM allocation is bookkeeping. On sm_100a the
// commit, alloc, dealloc and relinquish are real tcgen05 instructions (compiled only: no Blackwell GPU).
#include <cuda/ptx>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "kernels/interp/runner.hpp"
#include "model/arch.hpp"
#include "sim/stream.hpp"

namespace ptx = cuda::ptx;
using pipesim::sim::DevBarrierRecord;
using pipesim::sim::DevOp;
using pipesim::sim::DevWarpRecord;
using pipesim::sim::DevWarpStatus;
using pipesim::sim::OpKind;

namespace pipesim::interp {
namespace {

// One op as the kernel reads it: DevOp packed by the runner into 16 bytes (one 128-bit load per lane,
// four shuffles per op). The runner clamps slot to the barrier count, turns Compute / Mma durations into
// SM cycles (saturated at 2^32 - 1, > 2 s) and keeps the low 32 bits of a and b, which is all any op
// reads (counts, bytes, parities, masks, named-barrier ids and thread counts).
struct IOp {
  uint32_t head;  // kind | flags << 8 | (rank + 1) << 16   (rank + 1 = 0: own CTA)
  uint32_t slot;  // barrier slot, < slots
  uint32_t a;
  uint32_t b;
};
static_assert(sizeof(IOp) == 16, "IOp is one 128-bit load");

struct Params {
  const IOp* ops;
  const uint64_t* offsets;
  const int64_t* init_count;
  int warps_per_cta;
  int cluster;
  uint32_t slots;
  uint32_t scratch_off;       // dynamic shared memory offset of the TMA / store scratch
  uint64_t timeout_ns, stuck_ns, grace_ns;
  uint64_t stuck_cyc;         // stuck_ns in SM cycles
  uint64_t check_cyc;         // how often a blocked wait looks at %globaltimer and the hang word (~20 us)
  uint64_t ns_per_cyc_q64;    // ns per SM cycle as a 0.64 fixed-point fraction (the SM clock is > 1 GHz)
  double ns_per_cyc;
  const uint8_t* src;
  uint64_t src_mask;          // src bytes - 1 (a power of two)
  uint8_t* dst;
  uint64_t dst_mask;
  int stream_sources;
  uint64_t* op_ts;            // per op begin, or null
  DevWarpRecord* warps;
  DevBarrierRecord* bars;
  unsigned long long* hang;   // %globaltimer when a hang (or assertion) was declared; 0: none
};

// %globaltimer is slow to read and ticks in 32 ns steps on the H100: it is read only at a warp's start
// and end and on the slow paths of the hang protocol. Per-op times come from clock64.
__device__ __forceinline__ uint64_t gtime() { return ptx::get_sreg_globaltimer(); }
__device__ __forceinline__ uint64_t clk() { return ptx::get_sreg_clock64(); }
__device__ __forceinline__ uint64_t cyc_to_ns(const Params& p, uint64_t c) { return __umul64hi(c, p.ns_per_cyc_q64); }

__device__ __forceinline__ void spin_cycles(uint32_t cycles) {
  if (cycles == 0) return;
  const uint64_t t0 = clk();
  while (clk() - t0 < cycles) {
  }
}

__device__ __forceinline__ uint32_t smem_addr(const void* ptr) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(ptr));
}
__device__ __forceinline__ uint32_t mapa(uint32_t addr, uint32_t rank) {
  uint32_t out;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(out) : "r"(addr), "r"(rank));
  return out;
}
__device__ __forceinline__ uint64_t* remote_ptr(uint64_t* bar, int rank) {
  return static_cast<uint64_t*>(__cluster_map_shared_rank(bar, static_cast<unsigned>(rank)));
}

// mbarrier operations with no cuda::ptx wrapper (CUDA 13.0): complete_tx, arrive_drop, inval.
__device__ __forceinline__ void complete_tx_local(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void complete_tx_remote(uint64_t* bar, int rank, uint32_t bytes) {
  asm volatile("mbarrier.complete_tx.relaxed.cluster.shared::cluster.b64 [%0], %1;" ::"r"(mapa(smem_addr(bar), rank)), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void arrive_drop_local(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.arrive_drop.release.cta.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(count) : "memory");
}
__device__ __forceinline__ void arrive_drop_remote(uint64_t* bar, int rank, uint32_t count) {
  asm volatile("mbarrier.arrive_drop.shared::cluster.b64 _, [%0], %1;" ::"r"(mapa(smem_addr(bar), rank)), "r"(count)
               : "memory");
}
// Remote arrivals as CUTLASS issues them (ClusterBarrier::arrive(cta_id), ClusterTransactionBarrier::
// arrive_and_expect_tx(bytes, cta_id)): default semantics, release at CTA scope. cuda::ptx only wraps
// the .release.cluster form, which ptxas lowers to MEMBAR.ALL.CTA + MEMBAR.ALL.GPU + ERRBAR before the
// arrive: a GPU-scope fence that native pipelines do not pay (seen in the interpreter's SASS).
__device__ __forceinline__ void arrive_remote(uint64_t* bar, int rank, uint32_t count) {
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0], %1;" ::"r"(mapa(smem_addr(bar), rank)), "r"(count) : "memory");
}
__device__ __forceinline__ void arrive_expect_tx_remote(uint64_t* bar, int rank, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cluster.b64 _, [%0], %1;" ::"r"(mapa(smem_addr(bar), rank)), "r"(bytes)
               : "memory");
}
// Arrivals issued by the whole warp with one lane predicated on (CUTLASS's ClusterBarrier::arrive(cta_id,
// pred) form): no divergent branch, so the warp stays converged and the op costs little more than the
// instruction. Default semantics (release, CTA scope); the local form needs a state register.
__device__ __forceinline__ void arrive_pred(bool p, uint64_t* bar, int rank, uint32_t count) {
  if (rank < 0)
    asm volatile("{\n\t.reg .pred p;\n\t.reg .b64 st;\n\tsetp.ne.b32 p, %2, 0;\n\t"
                 "@p mbarrier.arrive.shared::cta.b64 st, [%0], %1;\n\t}" ::"r"(smem_addr(bar)),
                 "r"(count), "r"(static_cast<uint32_t>(p))
                 : "memory");
  else
    asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %2, 0;\n\t"
                 "@p mbarrier.arrive.shared::cluster.b64 _, [%0], %1;\n\t}" ::"r"(mapa(smem_addr(bar), rank)),
                 "r"(count), "r"(static_cast<uint32_t>(p))
                 : "memory");
}
__device__ __forceinline__ void arrive_expect_tx_pred(bool p, uint64_t* bar, int rank, uint32_t bytes) {
  if (rank < 0)
    asm volatile("{\n\t.reg .pred p;\n\t.reg .b64 st;\n\tsetp.ne.b32 p, %2, 0;\n\t"
                 "@p mbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1;\n\t}" ::"r"(smem_addr(bar)),
                 "r"(bytes), "r"(static_cast<uint32_t>(p))
                 : "memory");
  else
    asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %2, 0;\n\t"
                 "@p mbarrier.arrive.expect_tx.shared::cluster.b64 _, [%0], %1;\n\t}" ::"r"(mapa(smem_addr(bar), rank)),
                 "r"(bytes), "r"(static_cast<uint32_t>(p))
                 : "memory");
}
__device__ __forceinline__ void inval(uint64_t* bar) {
  asm volatile("mbarrier.inval.shared::cta.b64 [%0];" ::"r"(smem_addr(bar)) : "memory");
}

template <int N>
__device__ __forceinline__ void wait_group_dispatch(int n, bool read) {
  if constexpr (N < 64) {
    if (n == N) {
      if (read) ptx::cp_async_bulk_wait_group_read(ptx::n32_t<N>{});
      else ptx::cp_async_bulk_wait_group(ptx::n32_t<N>{});
      return;
    }
    wait_group_dispatch<N + 1>(n, read);
  }
}

__device__ __forceinline__ uint64_t raw_state(uint64_t* bar) { return *reinterpret_cast<volatile uint64_t*>(bar); }

__device__ __forceinline__ unsigned long long hang_time(const Params& p) {
  return *reinterpret_cast<volatile unsigned long long*>(p.hang);
}

__device__ void record_stop(DevWarpRecord* rec, DevWarpStatus st, int64_t i, uint32_t slot, int parity, uint64_t raw,
                            uint64_t t, uint64_t blocked_ns) {
  volatile DevWarpRecord* r = rec;
  r->slot = slot;
  r->op = i;
  r->raw = raw;
  r->parity = parity;
  r->end_ns = t;
  r->blocked_ns = blocked_ns;
  r->status = static_cast<uint8_t>(st);
}

// The part of a bounded wait after the first try_wait failed. try_wait suspends the
// thread until the phase completes or a hardware time limit passes, so a wake-up costs no polling
// delay; %globaltimer and the global hang word are read every check_cyc cycles only. Returns true when
// the warp must stop.
__device__ __forceinline__ bool wait_slow(const Params& p, uint64_t* bar, uint32_t parity, DevWarpRecord* rec, uint32_t li,
                                       uint32_t slot, uint64_t* blocked_cyc, bool leader) {
  const uint64_t c0 = clk();
  uint64_t next = c0 + p.check_cyc;
  uint64_t t0 = 0;
  while (true) {
    if (ptx::mbarrier_try_wait_parity(bar, parity)) {
      *blocked_cyc += clk() - c0;
      return false;
    }
    const uint64_t c = clk();
    if (c < next) continue;
    next = c + p.check_cyc;
    const uint64_t t = gtime();
    if (t0 == 0) t0 = t - cyc_to_ns(p, c - c0);
    const unsigned long long h = hang_time(p);
    const uint64_t blocked_ns = cyc_to_ns(p, *blocked_cyc) + (t - t0);
    if (t - t0 > p.timeout_ns) {
      if (leader) {
        atomicCAS(p.hang, 0ull, static_cast<unsigned long long>(t));
        record_stop(rec, DevWarpStatus::TimedOut, li, slot, static_cast<int>(parity), raw_state(bar), t, blocked_ns);
      }
      return true;
    }
    if (h != 0 && t > h && t - max(static_cast<unsigned long long>(t0), h) > p.stuck_ns) {
      if (leader)
        record_stop(rec, DevWarpStatus::StoppedOnHang, li, slot, static_cast<int>(parity), raw_state(bar), t, blocked_ns);
      return true;
    }
  }
}

enum : uint32_t { kFull = 0xffffffffu };
// wgmma's warpgroup join: warpgroup g uses named barrier kWgmmaJoinTop - g (the runner refuses a
// scenario whose own named barriers reach them).
constexpr uint32_t kWgmmaJoinTop = 15;

// G: the kernel's tcgen05 cta_group (one kernel may not mix cta_group::1 and ::2 on sm_100a).
//
// The dispatch loop is built for a small per-op cost (docs/calibration.md, "interpreter cost"): ops
// arrive 32 at a time in registers (one 16-byte load per lane, the next batch in flight while this one
// runs) and are handed round with four shuffles; lane 0 alone issues the mbarrier / copy ops and the
// warp reconverges at the next op's shuffle; only the ops that can stop the warp (waits, test_wait,
// bar.sync, cluster wait) take a vote; nothing per op touches global memory (no %globaltimer, no
// record stores) except bar.sync / cluster waits, which must leave "blocked at op i" behind, and the
// optional per-op timestamps (clock64 based).
template <int G>
__global__ void interp_kernel_g(Params p) {
  extern __shared__ __align__(128) uint8_t smem[];
  uint64_t* bars = reinterpret_cast<uint64_t*>(smem);
  uint8_t* live = smem + p.slots * 8;                         // per slot: initialised, not invalidated
  unsigned* done = reinterpret_cast<unsigned*>(smem + ((p.slots * 9 + 15) & ~15u));
  uint32_t* tmem_slot = done + 1;
  // The CTA's clock anchor (%globaltimer, clock64) for per-op timestamps: one pair for all its warps, so
  // that stamps of warps on this SM compare to the cycle (each warp reading %globaltimer itself would
  // put a 32 ns quantisation between them, enough to invert the order of two arrivals).
  uint64_t* anchor = reinterpret_cast<uint64_t*>(done + 2);
  // The SM's tensor pipe for wgmma: the clock at which it is next free, and each warpgroup's MMA's end.
  uint64_t* pipe_free = anchor + 2;
  uint64_t* wg_end = anchor + 3;  // [8]: a CTA has at most 1024 threads
  uint32_t* wg_booked = reinterpret_cast<uint32_t*>(wg_end + 8);  // [8]: how many MMAs each warpgroup booked
  uint8_t* scratch = smem + p.scratch_off;
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int cta = blockIdx.x;
  const int rank = static_cast<int>(ptx::get_sreg_cluster_ctarank());

  // Declared barriers: initialised, fenced and cluster-synced before any role runs (as CUTLASS's
  // pipeline constructors do); the rest start zeroed and must be initialised by the scenario.
  if (threadIdx.x == 0) {
    for (uint32_t s = 0; s < p.slots; ++s) {
      bars[s] = 0;
      live[s] = 0;
      if (p.init_count[s] > 0) {
        ptx::mbarrier_init(&bars[s], static_cast<uint32_t>(p.init_count[s]));
        live[s] = 1;
      }
    }
    *done = 0;
    *tmem_slot = 0;
    *pipe_free = 0;
    for (int g = 0; g < 8; ++g) wg_booked[g] = 0;
    anchor[0] = gtime();
    anchor[1] = clk();
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  __syncthreads();
  if (p.cluster > 1) {
    ptx::barrier_cluster_arrive();
    ptx::barrier_cluster_wait();
  }

  const size_t wi = static_cast<size_t>(cta) * p.warps_per_cta + warp;
  DevWarpRecord* rec = &p.warps[wi];
  const uint64_t begin = p.offsets[wi];
  const uint32_t n_ops = static_cast<uint32_t>(p.offsets[wi + 1] - begin);  // < 64 M (StreamLimits)
  const IOp* wops = p.ops + begin;
  uint64_t* ts = p.op_ts ? p.op_ts + begin : nullptr;
  uint64_t blocked_cyc = 0;
  uint32_t wgmma_seen = 0;  // wgmma this warp has joined
  uint64_t cursor = p.stream_sources ? (static_cast<uint64_t>(wi) * 0x9E3779B1ull * 4096ull) : 0;
  uint64_t store_cursor = static_cast<uint64_t>(wi) * 0x85EBCA6Bull * 4096ull;
  bool stopped = false;
  uint64_t start_ns = 0, clk0 = 0;
  const uint64_t ts_gt0 = anchor[0], ts_clk0 = anchor[1];  // timestamps: ts_gt0 + (clk() - ts_clk0)

  if (lane == 0) {
    volatile DevWarpRecord* r = rec;
    start_ns = gtime();
    clk0 = clk();
    r->start_ns = start_ns;
    r->smid = static_cast<int32_t>(ptx::get_sreg_smid());
    r->op = 0;
    r->status = static_cast<uint8_t>(hang_time(p) ? DevWarpStatus::SkippedOnHang : DevWarpStatus::Running);
    // A CTA that starts after a hang was declared runs nothing (the model reports it as never launched).
    stopped = hang_time(p) != 0;
  }
  stopped = __shfl_sync(kFull, stopped ? 1 : 0, 0) != 0;

  uint4 cur = make_uint4(0, 0, 0, 0), nxt = make_uint4(0, 0, 0, 0);
  if (static_cast<uint32_t>(lane) < n_ops) cur = __ldg(reinterpret_cast<const uint4*>(wops + lane));
  for (uint32_t base = 0; base < n_ops && !stopped; base += 32) {
    if (base + 32 + lane < n_ops) nxt = __ldg(reinterpret_cast<const uint4*>(wops + base + 32 + lane));
    const uint32_t nb = min(32u, n_ops - base);
    for (uint32_t j = 0; j < nb; ++j) {
      const uint32_t head = __shfl_sync(kFull, cur.x, static_cast<int>(j));
      const uint32_t slot = __shfl_sync(kFull, cur.y, static_cast<int>(j));
      const uint32_t a = __shfl_sync(kFull, cur.z, static_cast<int>(j));
      const uint32_t b = __shfl_sync(kFull, cur.w, static_cast<int>(j));
      const uint32_t li = base + j;
      const OpKind kind = static_cast<OpKind>(head & 0xffu);
      const uint32_t flags = (head >> 8) & 0xffu;
      const int orank = static_cast<int>((head >> 16) & 0xffu) - 1;
      const bool remote = orank >= 0;
      uint64_t* bar = &bars[slot];
      int stop = 0;
      if (ts != nullptr) {
        if (lane == 0) ts[li] = ts_gt0 + cyc_to_ns(p, clk() - ts_clk0);
      }
      // Fast paths for the ops that dominate pipelines, executed by the whole warp without a divergent
      // branch: arrivals (one lane predicated on), waits (every lane polls the same barrier: the same
      // answer, no reconvergence), compute spins (every lane reads the clock).
      if (kind == OpKind::Arrive) {
        arrive_pred(lane == 0, bar, orank, a);
        continue;
      }
      if (kind == OpKind::Wait) {
        // try_wait suspends the warp until the phase completes (or a hardware limit): a wait is often over
        // inside the first call, so the blocked time is taken around it (over 64 cycles: it waited).
        const uint64_t cw = clk();
        if (!ptx::mbarrier_try_wait_parity(bar, a & 1u)) {
          blocked_cyc += clk() - cw;  // the first call's suspension; wait_slow counts from its own start
          stop = wait_slow(p, bar, a & 1u, rec, li, slot, &blocked_cyc, lane == 0) ? 1 : 0;
        } else if (const uint64_t d = clk() - cw; d > 64) {
          blocked_cyc += d;
        }
        if (__any_sync(kFull, stop != 0)) {
          stopped = true;
          break;
        }
        continue;
      }
      if (kind == OpKind::Compute || (kind == OpKind::Mma && !(flags & sim::kFlagWgmma))) {
        spin_cycles(a);
        continue;
      }
      if (kind == OpKind::ArriveExpectTx) {
        arrive_expect_tx_pred(lane == 0, bar, orank, a);
        continue;
      }
      switch (kind) {
        case OpKind::Mma:  // a wgmma (the others took the fast path): join the warpgroup, then the MMA
        case OpKind::NamedSync:
        case OpKind::ClusterWait: {
          uint64_t c_enter = 0;
          if (lane == 0) {
            c_enter = clk();
            // "Blocked at op li": if nothing ever releases this warp, the host's watchdog reads it.
            volatile DevWarpRecord* r = rec;
            r->op = li;
            r->status = static_cast<uint8_t>(kind == OpKind::NamedSync ? DevWarpStatus::BlockedNamed : DevWarpStatus::BlockedCluster);
          }
          __syncwarp();
          if (kind == OpKind::Mma) {
            // The warpgroup's join (its issue stalls until every warp issued it, as the H100's wgmma does:
            // docs/runs/mmaprobe-lag-h100-2026-11-26.txt) on named barrier 15 - g, which the runner kept
            // free of the scenario's own; a warpgroup short of 4 warps joins with those it has.
            const int g = warp / 4, members = min(4, p.warps_per_cta - 4 * g);
            asm volatile("bar.sync %0, %1;" ::"r"(kWgmmaJoinTop - g), "r"(32 * members) : "memory");
          } else if (kind == OpKind::NamedSync) {
            asm volatile("bar.sync %0, %1;" ::"r"(a), "r"(b) : "memory");
          } else {
            ptx::barrier_cluster_wait();
          }
          if (lane == 0) {
            // Only a warp that was blocked longer than stuck_ns can have been released by warps leaving
            // after a hang: the clocks and the hang word are read only then.
            const uint64_t waited = clk() - c_enter;
            blocked_cyc += waited;
            if (waited > p.stuck_cyc) {
              const uint64_t t = gtime();
              const uint64_t t_enter = t - cyc_to_ns(p, waited);
              const unsigned long long h = hang_time(p);
              if (h != 0 && t > h && t - max(static_cast<unsigned long long>(t_enter), h) > p.stuck_ns) {
                rec->end_ns = t;  // it was released only by warps leaving after the hang: it stays "blocked"
                rec->blocked_ns = cyc_to_ns(p, blocked_cyc);
                stop = 1;
              }
            }
            if (!stop) reinterpret_cast<volatile DevWarpRecord*>(rec)->status = static_cast<uint8_t>(DevWarpStatus::Running);
          }
          if (kind == OpKind::Mma) {
            // The warpgroup's MMA takes the SM's one tensor pipe after those already on it (`a`: its modelled
            // duration in cycles). Its first warp books it; the others read the booking (their next join
            // needs this warp, so it cannot be overwritten first) and every warp stays until it ends: the
            // emulation is synchronous, wgmma.wait_group costs nothing.
            const int g = warp / 4;
            ++wgmma_seen;
            if (lane == 0) {
              volatile uint32_t* booked = &wg_booked[g];
              if (warp % 4 == 0) {
                atomicMax(reinterpret_cast<unsigned long long*>(pipe_free), static_cast<unsigned long long>(clk()));
                wg_end[g] = atomicAdd(reinterpret_cast<unsigned long long*>(pipe_free), static_cast<unsigned long long>(a)) + a;
                __threadfence_block();
                *booked = wgmma_seen;
              } else {
                // The booking follows the join within a few cycles; the hang word (a global load) is read
                // only now and then, so that the spin does not overshoot by a memory round trip.
                for (uint32_t spins = 1; *booked < wgmma_seen; ++spins)
                  if (spins % 256 == 0 && hang_time(p) != 0) break;
              }
              __threadfence_block();
              const uint64_t end = *reinterpret_cast<volatile uint64_t*>(&wg_end[g]);
              while (clk() < end) {  // bounded: the MMA's booked end
              }
            }
            __syncwarp();
          }
          break;
        }
        case OpKind::NamedArrive:
          asm volatile("bar.arrive %0, %1;" ::"r"(a), "r"(b) : "memory");
          break;
        case OpKind::ClusterArrive:
          ptx::barrier_cluster_arrive();  // release semantics: this thread's earlier remote arrivals first
          break;
        case OpKind::TmemAlloc:
        case OpKind::TmemDealloc:
        case OpKind::TmemRelinquish:
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000
          // Real tcgen05 allocation (whole warp, .sync.aligned).
          {
            constexpr auto group = [] {
              if constexpr (G == 2) return ptx::cta_group_2;
              else return ptx::cta_group_1;
            }();
            if (kind == OpKind::TmemAlloc) {
              ptx::tcgen05_alloc(group, tmem_slot, a);
            } else if (kind == OpKind::TmemDealloc) {
              const uint32_t taddr = *reinterpret_cast<volatile uint32_t*>(tmem_slot);
              ptx::tcgen05_dealloc(group, taddr, a);
            } else {
              ptx::tcgen05_relinquish_alloc_permit(group);
            }
          }
#else
          (void)tmem_slot;  // sm_90a: bookkeeping only (no TMEM)
#endif
          break;
        default:
          if (lane != 0) break;
          switch (kind) {
            case OpKind::Compute: spin_cycles(a); break;  // the runner put SM cycles in `a`
            case OpKind::Mma: spin_cycles(a); break;      // the modelled duration, in cycles
            case OpKind::Wait:
              if (!ptx::mbarrier_try_wait_parity(bar, a & 1u))
                stop = wait_slow(p, bar, a & 1u, rec, li, slot, &blocked_cyc, true) ? 1 : 0;
              break;
            case OpKind::TestWait: {
              const bool got = ptx::mbarrier_test_wait_parity(bar, a & 1u);
              if (got != (b != 0)) {
                const uint64_t t = gtime();
                atomicCAS(p.hang, 0ull, static_cast<unsigned long long>(t));
                record_stop(rec, DevWarpStatus::Assertion, li, slot, static_cast<int>(a), raw_state(bar), t,
                            cyc_to_ns(p, blocked_cyc));
                stop = 1;
              }
              break;
            }
            case OpKind::Arrive:
              if (remote)
                arrive_remote(bar, orank, a);
              else
                (void)ptx::mbarrier_arrive(ptx::sem_release, ptx::scope_cta, ptx::space_shared, bar, a);
              break;
            case OpKind::ArriveExpectTx:
              if (remote)
                arrive_expect_tx_remote(bar, orank, a);
              else
                (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, bar, a);
              break;
            case OpKind::ExpectTx:
              if (remote)
                ptx::mbarrier_expect_tx(ptx::sem_relaxed, ptx::scope_cluster, ptx::space_cluster, remote_ptr(bar, orank), a);
              else
                ptx::mbarrier_expect_tx(ptx::sem_relaxed, ptx::scope_cta, ptx::space_shared, bar, a);
              break;
            case OpKind::CompleteTx:
              if (remote) complete_tx_remote(bar, orank, a);
              else complete_tx_local(bar, a);
              break;
            case OpKind::ArriveDrop:
              if (remote) arrive_drop_remote(bar, orank, a);
              else arrive_drop_local(bar, a);
              break;
            case OpKind::Init:
              ptx::mbarrier_init(bar, a);
              live[slot] = 1;
              break;
            case OpKind::Inval:
              inval(bar);
              live[slot] = 0;
              break;
            case OpKind::FenceInit: ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster); break;
            case OpKind::TmaLoad: {
              const uint8_t* src = p.src + (cursor & p.src_mask & ~uint64_t{127});
              if (p.stream_sources) cursor += (a + 127u) & ~127u;
              if (flags & pipesim::sim::kFlagMulticast) {
                ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, scratch, src, a, bar, static_cast<uint16_t>(b));
              } else if (flags & pipesim::sim::kFlagCtaGroup2) {
                // sm_90a has no .cta_group::2: the bytes land in the pair leader and complete on its barrier.
                const int leader = rank & ~1;
                ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, __cluster_map_shared_rank(scratch, leader), src, a,
                                   remote_ptr(bar, leader));
              } else {
                ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, scratch, src, a, bar);
              }
              break;
            }
            case OpKind::BulkStore: {
              uint8_t* dst = p.dst + (store_cursor & p.dst_mask & ~uint64_t{127});
              store_cursor += (a + 127u) & ~127u;
              ptx::cp_async_bulk(ptx::space_global, ptx::space_shared, dst, scratch, a);
              break;
            }
            case OpKind::CommitGroup: ptx::cp_async_bulk_commit_group(); break;
            case OpKind::WaitGroup: {
              const uint64_t c0 = clk();
              wait_group_dispatch<0>(static_cast<int>(a), b != 0);
              blocked_cyc += clk() - c0;
              break;
            }
            case OpKind::Commit: {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000
              constexpr auto group = [] {
                if constexpr (G == 2) return ptx::cta_group_2;
                else return ptx::cta_group_1;
              }();
              if (b != 0) ptx::tcgen05_commit_multicast(group, bar, static_cast<uint16_t>(b));
              else ptx::tcgen05_commit(group, bar);
#else
              // Emulated: the one arrival the commit makes on every CTA of its mask (own CTA if none).
              if (b == 0) {
                (void)ptx::mbarrier_arrive(ptx::sem_release, ptx::scope_cta, ptx::space_shared, bar, 1u);
              } else {
                for (int r = 0; r < p.cluster; ++r)
                  if ((b >> r) & 1)
                    arrive_remote(bar, r, 1u);
              }
#endif
              break;
            }
            default: break;  // TmemLoad / TmemStore / TmemWait / StageWrite: no hardware effect here
          }
          break;
      }
      // Only these ops can stop the warp; every other op reconverges at the next op's shuffles.
      if (kind == OpKind::Wait || kind == OpKind::TestWait || kind == OpKind::NamedSync || kind == OpKind::ClusterWait) {
        if (__any_sync(kFull, stop != 0)) {
          stopped = true;
          break;
        }
      }
    }
    cur = nxt;
  }

  if (lane == 0) {
    volatile DevWarpRecord* r = rec;
    const unsigned long long h = hang_time(p);
    if (!stopped) {
      r->op = static_cast<int64_t>(n_ops);
      const uint64_t t = gtime();
      // Per-op timestamps come from clock64: keep the end at or after the last of them.
      const uint64_t t_clk = ts_gt0 + cyc_to_ns(p, clk() - ts_clk0);
      r->end_ns = ts != nullptr ? max(t, t_clk) : t;
      r->blocked_ns = cyc_to_ns(p, blocked_cyc);
      r->cycles = clk() - clk0;
      r->status = static_cast<uint8_t>(DevWarpStatus::Done);
    } else if (h != 0 && r->status != static_cast<uint8_t>(DevWarpStatus::SkippedOnHang)) {
      // Leave together, after everyone blocked has had time to record where it is.
      while (gtime() < h + p.grace_ns) {
      }
    }
    if (r->status == static_cast<uint8_t>(DevWarpStatus::SkippedOnHang)) r->end_ns = r->start_ns;
    // The CTA's last warp snapshots every barrier.
    __threadfence_block();
    if (atomicAdd(done, 1u) == static_cast<unsigned>(p.warps_per_cta - 1)) {
      for (uint32_t s = 0; s < p.slots; ++s) {
        DevBarrierRecord bq{};
        bq.valid = 1;
        bq.initialised = live[s];
        bq.raw = raw_state(&bars[s]);
        bq.parity = live[s] && ptx::mbarrier_test_wait_parity(&bars[s], 0u) ? 1 : 0;
        p.bars[static_cast<size_t>(cta) * p.slots + s] = bq;
      }
    }
  }
  __syncwarp();
}

// Keeps every SM busy for `ns` (one warp per block, one block per SM), so that the SM clock is at its
// boost value when the measured launches start: an idle H100 runs at 540 MHz and needs milliseconds of
// load before it reaches 1980 MHz, longer than a calibration scenario runs.
// Reads `n` bytes so that the L2 holds only those (clean) lines: a launch that streams its TMA
// sources then reads them from DRAM, not from the previous launch's or scenario's L2 lines.
__global__ void l2_flush_read(const uint4* p, size_t n, unsigned* sink) {
  uint32_t acc = 0;
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n / sizeof(uint4); i += gridDim.x * blockDim.x) {
    const uint4 v = __ldcg(p + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9E3779B1u) *sink = acc;  // keeps the loads; practically never written
}

__global__ void clock_warmup(uint64_t ns) {
  const uint64_t t0 = gtime();
  while (gtime() - t0 < ns) {
  }
}

__global__ void clock_probe(uint64_t cycles, unsigned long long* out) {
  const uint64_t g0 = gtime();
  const uint64_t c0 = ptx::get_sreg_clock64();
  while (ptx::get_sreg_clock64() - c0 < cycles) {
  }
  const uint64_t c1 = ptx::get_sreg_clock64();
  const uint64_t g1 = gtime();
  out[0] = c1 - c0;
  out[1] = g1 - g0;
  // %globaltimer resolution: the smallest non-zero step seen.
  unsigned long long best = ~0ull;
  uint64_t last = gtime();
  for (int k = 0; k < 20000; ++k) {
    const uint64_t t = gtime();
    if (t != last) {
      best = min(best, static_cast<unsigned long long>(t - last));
      last = t;
    }
  }
  out[2] = best;
}

// ------------------------------------------------------------------------------------ host side
struct Runtime {
  bool ready = false;
  std::string why;
  std::string device;
  int sms = 0;
  double cycles_per_ns = 0;
  double gt_res = 0;
  uint8_t* src = nullptr;
  uint8_t* dst = nullptr;
  uint64_t src_bytes = uint64_t{512} << 20;
  uint64_t dst_bytes = uint64_t{256} << 20;
};

Runtime& runtime() {
  static Runtime rt;
  static bool tried = false;
  if (tried) return rt;
  tried = true;
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    rt.why = std::string("no CUDA device: ") + (e != cudaSuccess ? cudaGetErrorString(e) : "none found");
    return rt;
  }
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  if (prop.major < 9) {
    rt.why = std::string("the interpreter needs sm_90 or newer; device 0 is ") + prop.name;
    return rt;
  }
  rt.sms = prop.multiProcessorCount;
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s, sm_%d%d, %d SMs", prop.name, prop.major, prop.minor, prop.multiProcessorCount);
  rt.device = buf;
  if (cudaMalloc(&rt.src, rt.src_bytes) != cudaSuccess || cudaMalloc(&rt.dst, rt.dst_bytes) != cudaSuccess) {
    rt.why = "cannot allocate the copy buffers";
    return rt;
  }
  cudaMemset(rt.src, 1, rt.src_bytes);
  unsigned long long* d = nullptr;
  cudaMalloc(&d, 3 * sizeof(unsigned long long));
  unsigned long long h[3] = {0, 0, 0};
  for (int k = 0; k < 2; ++k) {  // after 50 ms of load on every SM: the boost clock the runs will see
    clock_warmup<<<prop.multiProcessorCount, 32>>>(50'000'000);
    clock_probe<<<1, 1>>>(uint64_t{40} << 20, d);
    cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
  }
  cudaFree(d);
  if (cudaGetLastError() != cudaSuccess || h[1] == 0) {
    rt.why = "the clock probe failed";
    return rt;
  }
  rt.cycles_per_ns = static_cast<double>(h[0]) / static_cast<double>(h[1]);
  rt.gt_res = static_cast<double>(h[2]);
  rt.ready = true;
  return rt;
}

template <typename T>
T* upload(const std::vector<T>& v) {
  T* d = nullptr;
  const size_t bytes = std::max<size_t>(1, v.size() * sizeof(T));
  if (cudaMalloc(&d, bytes) != cudaSuccess) return nullptr;
  if (!v.empty()) cudaMemcpy(d, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice);
  return d;
}

}  // namespace

sim::DeviceResult run_in_process(const sim::OpStreams& s, const sim::DeviceOptions& o) {
  sim::DeviceResult res;
  Runtime& rt = runtime();
  if (!rt.ready) {
    res.outcome = sim::DeviceOutcome::Unavailable;
    res.message = rt.why;
    return res;
  }
  res.device = rt.device;
  res.cycles_per_ns = rt.cycles_per_ns;
  res.globaltimer_resolution_ns = rt.gt_res;
  if (s.ctas == 0) {  // the worker's hello: availability only
    res.outcome = sim::DeviceOutcome::Ok;
    return res;
  }

  // Ops as the device reads them (IOp): Compute and MMA durations in SM cycles (an MMA carries its
  // modelled duration: sm_90a has no tcgen05), the slot clamped, a and b cut to their low 32 bits.
  const std::vector<DevOp>& ops = s.ops;
  std::vector<IOp> iops(ops.size());
  const model::Arch* arch = model::find_arch(s.arch);
  const auto to_cycles = [&](double ns) -> uint32_t {
    const double c = ns * rt.cycles_per_ns;
    return c <= 0 ? 0u : c >= 4294967295.0 ? 0xffffffffu : static_cast<uint32_t>(c + 0.5);
  };
  bool wgmma = false;      // wgmma ops present: their joins need named barriers the scenario leaves free
  int64_t top_named = -1;  // the highest named barrier the scenario uses
  for (size_t k = 0; k < ops.size(); ++k) {
    const DevOp& op = ops[k];
    IOp& q = iops[k];
    const auto kd = static_cast<OpKind>(op.kind);
    q.head = static_cast<uint32_t>(op.kind) | static_cast<uint32_t>(op.flags) << 8 |
             static_cast<uint32_t>(static_cast<uint8_t>(op.rank + 1)) << 16;
    q.slot = op.slot < s.slots ? op.slot : 0;
    q.a = static_cast<uint32_t>(op.a);
    q.b = static_cast<uint32_t>(op.b);
    if (kd == OpKind::Compute) {
      q.a = to_cycles(static_cast<double>(op.a));
    } else if (kd == OpKind::Mma && (op.flags & sim::kFlagWgmma)) {
      const sim::MmaShape sh = sim::unpack_mma(op.a);
      const double rate = arch ? arch->wgmma_flops_per_clk[static_cast<size_t>(sh.kind)] * arch->time.tensor_clock_ghz : 0;
      q.a = rate > 0 ? to_cycles(2.0 * sh.m * sh.n * sh.k / rate * static_cast<double>(std::max<int64_t>(1, op.b))) : 0;
      wgmma = true;
    } else if (kd == OpKind::Mma) {
      const sim::MmaShape sh = sim::unpack_mma(op.a);
      const int g = (op.flags & sim::kFlagCtaGroup2) ? 2 : 1;
      const double rate = arch ? arch->mma_flops_per_clk[static_cast<size_t>(sh.kind)] * arch->time.clock_ghz : 0;
      q.a = rate > 0 ? to_cycles(2.0 * (sh.m / g) * sh.n * sh.k / rate * static_cast<double>(op.b)) : 0;
    } else if (kd == OpKind::NamedSync || kd == OpKind::NamedArrive) {
      top_named = std::max<int64_t>(top_named, op.a);
    }
  }
  const int64_t join_ids = (s.warps_per_cta + 3) / 4;  // kWgmmaJoinTop down to kWgmmaJoinTop - join_ids + 1
  if (wgmma && top_named > static_cast<int64_t>(kWgmmaJoinTop) - join_ids) {
    res.outcome = sim::DeviceOutcome::Unavailable;
    res.message = "the interpreter joins each warpgroup's wgmma on named barriers " + std::to_string(kWgmmaJoinTop - join_ids + 1) +
                  ".." + std::to_string(kWgmmaJoinTop) + ", and this scenario uses named barrier " + std::to_string(top_named);
    return res;
  }

  // + done, tmem slot, clock anchor, the tensor pipe's free clock, 8 warpgroups' MMA ends and counts
  const uint32_t bar_bytes = ((s.slots * 9 + 15) & ~15u) + 128;
  const int64_t scratch = std::max<int64_t>(128, (std::max(s.max_tma_bytes, s.max_store_bytes) + 127) & ~int64_t{127});
  const uint32_t scratch_off = (bar_bytes + 127) & ~127u;
  const int64_t need = scratch_off + scratch;
  constexpr int64_t kSmemPerBlock = 232448, kSmemPerSm = 233472;
  if (need > kSmemPerBlock) {
    res.outcome = sim::DeviceOutcome::Unavailable;
    res.message = "the interpreter needs " + std::to_string(need) + " bytes of shared memory per CTA (a " +
                  std::to_string(scratch) + "-byte copy buffer), more than the " + std::to_string(kSmemPerBlock) + " a CTA can have";
    return res;
  }
  int64_t smem = need;
  if (o.model_occupancy) {
    // At most ctas_per_sm CTAs on an SM, as the model launches them.
    const int64_t floor_per = kSmemPerSm / (s.ctas_per_sm + 1) - 1024 + 128;
    smem = std::min<int64_t>(kSmemPerBlock, std::max(need, floor_per));
  }
  smem = (smem + 127) & ~int64_t{127};
  bool group2 = false;  // the kernel's tcgen05 instructions use cta_group::2
  for (const DevOp& op : ops) {
    const auto kd = static_cast<OpKind>(op.kind);
    if ((kd == OpKind::Mma || kd == OpKind::Commit || kd == OpKind::TmemAlloc || kd == OpKind::TmemDealloc) &&
        (op.flags & sim::kFlagCtaGroup2))
      group2 = true;
  }
  void (*interp_kernel)(Params) = group2 ? interp_kernel_g<2> : interp_kernel_g<1>;
  cudaFuncSetAttribute(interp_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
  if (s.cluster > 8) cudaFuncSetAttribute(interp_kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);

  cudaLaunchConfig_t cfg{};
  cudaLaunchAttribute attr[1];
  cfg.gridDim = dim3(static_cast<unsigned>(s.ctas));
  cfg.blockDim = dim3(static_cast<unsigned>(s.threads));
  cfg.dynamicSmemBytes = static_cast<size_t>(smem);
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = static_cast<unsigned>(s.cluster);
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  int clusters = 0;
  if (cudaOccupancyMaxActiveClusters(&clusters, interp_kernel, &cfg) != cudaSuccess || clusters == 0) {
    cudaGetLastError();
    res.outcome = sim::DeviceOutcome::Unavailable;
    res.message = "a cluster of " + std::to_string(s.cluster) + " CTAs with " + std::to_string(smem) +
                  " bytes of shared memory each cannot be resident on this GPU";
    return res;
  }
  int per_sm = 0;
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, interp_kernel, s.threads, static_cast<size_t>(smem));
  res.residency = per_sm;

  const size_t nwarps = static_cast<size_t>(s.ctas) * static_cast<size_t>(s.warps_per_cta);
  Params p{};
  IOp* d_ops = upload(iops);
  uint64_t* d_off = upload(s.offsets);
  int64_t* d_init = upload(s.init_count.empty() ? std::vector<int64_t>{0} : s.init_count);
  DevWarpRecord* d_w = nullptr;
  DevBarrierRecord* d_b = nullptr;
  uint64_t* d_ts = nullptr;
  unsigned long long* d_hang = nullptr;
  cudaMalloc(&d_w, nwarps * sizeof(DevWarpRecord));
  cudaMalloc(&d_b, std::max<size_t>(1, static_cast<size_t>(s.ctas) * s.slots) * sizeof(DevBarrierRecord));
  if (o.timestamps) cudaMalloc(&d_ts, std::max<size_t>(1, ops.size()) * sizeof(uint64_t));
  cudaMalloc(&d_hang, sizeof(unsigned long long));
  if (!d_ops || !d_off || !d_init || !d_w || !d_b || !d_hang || (o.timestamps && !d_ts)) {
    res.outcome = sim::DeviceOutcome::Unavailable;
    res.message = "out of device memory for the op streams (" + std::to_string(ops.size()) + " ops)";
    return res;
  }
  p.ops = d_ops;
  p.offsets = d_off;
  p.init_count = d_init;
  p.warps_per_cta = s.warps_per_cta;
  p.cluster = s.cluster;
  p.slots = s.slots;
  p.scratch_off = scratch_off;
  p.timeout_ns = static_cast<uint64_t>(o.timeout_ms * 1e6);
  p.stuck_ns = 2'000'000;
  p.grace_ns = 10'000'000;
  p.stuck_cyc = static_cast<uint64_t>(static_cast<double>(p.stuck_ns) * rt.cycles_per_ns);
  p.check_cyc = static_cast<uint64_t>(20000.0 * rt.cycles_per_ns);
  p.ns_per_cyc = 1.0 / rt.cycles_per_ns;
  p.ns_per_cyc_q64 = rt.cycles_per_ns > 1.0 ? static_cast<uint64_t>(std::ldexp(p.ns_per_cyc, 64)) : ~uint64_t{0};
  p.src = rt.src;
  p.src_mask = rt.src_bytes - 1;
  p.dst = rt.dst;
  p.dst_mask = rt.dst_bytes - 1;
  p.stream_sources = o.stream_sources ? 1 : 0;
  p.op_ts = d_ts;
  p.warps = d_w;
  p.bars = d_b;
  p.hang = d_hang;

  cudaStream_t st = nullptr, side = nullptr;
  cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
  cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  cfg.stream = st;

  const double watchdog_s = o.watchdog_s > 0 ? o.watchdog_s : 2.0 * o.timeout_ms * 1e-3 + 50.0 * o.predicted_ns * 1e-9 + 0.5;
  double best = 0;
  const int reps = std::max(1, o.repeats);
  bool stuck = false;
  cudaError_t err = cudaSuccess;
  if (o.warmup_ms > 0) clock_warmup<<<rt.sms, 32, 0, st>>>(static_cast<uint64_t>(o.warmup_ms * 1e6));
  for (int rep = 0; rep < reps; ++rep) {
    cudaMemsetAsync(d_w, 0, nwarps * sizeof(DevWarpRecord), st);
    cudaMemsetAsync(d_b, 0, std::max<size_t>(1, static_cast<size_t>(s.ctas) * s.slots) * sizeof(DevBarrierRecord), st);
    cudaMemsetAsync(d_hang, 0, sizeof(unsigned long long), st);
    if (d_ts) cudaMemsetAsync(d_ts, 0, std::max<size_t>(1, ops.size()) * sizeof(uint64_t), st);
    if (o.stream_sources)
      l2_flush_read<<<rt.sms * 4, 512, 0, st>>>(reinterpret_cast<const uint4*>(rt.dst), rt.dst_bytes, reinterpret_cast<unsigned*>(rt.dst));
    cudaEventRecord(e0, st);
    err = cudaLaunchKernelEx(&cfg, interp_kernel, p);
    if (err != cudaSuccess) break;
    cudaEventRecord(e1, st);
    const auto t0 = std::chrono::steady_clock::now();
    while ((err = cudaStreamQuery(st)) == cudaErrorNotReady) {
      if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > watchdog_s) {
        stuck = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    if (stuck || err != cudaSuccess) break;
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    if (rep == 0 || ms * 1e6 < best) best = ms * 1e6;
    unsigned long long h = 0;
    cudaMemcpy(&h, d_hang, sizeof h, cudaMemcpyDeviceToHost);
    if (h != 0) break;  // a hang or an assertion: no point repeating it
  }
  res.kernel_ns = best;
  res.warps.resize(nwarps);
  res.barriers.resize(static_cast<size_t>(s.ctas) * s.slots);
  if (stuck) {
    // The kernel sits in a wait that cannot be bounded (bar.sync, barrier.cluster.wait). Read the records
    // while it runs, through a second stream; this process's context is then given up.
    res.watchdog = true;
    res.outcome = sim::DeviceOutcome::Hang;
    res.message = "the kernel did not finish within " + std::to_string(watchdog_s) +
                  " s: warps are stuck in a wait that cannot be bounded (named or cluster barrier); records read while it ran";
    void* hw = nullptr;
    void* hb = nullptr;
    void* ht = nullptr;  // per-op times: crosscheck replays the device's order of events with them
    cudaMallocHost(&hw, nwarps * sizeof(DevWarpRecord));
    cudaMallocHost(&hb, std::max<size_t>(1, res.barriers.size()) * sizeof(DevBarrierRecord));
    if (d_ts && !ops.empty()) cudaMallocHost(&ht, ops.size() * sizeof(uint64_t));
    cudaMemcpyAsync(hw, d_w, nwarps * sizeof(DevWarpRecord), cudaMemcpyDeviceToHost, side);
    cudaMemcpyAsync(hb, d_b, res.barriers.size() * sizeof(DevBarrierRecord), cudaMemcpyDeviceToHost, side);
    if (ht) cudaMemcpyAsync(ht, d_ts, ops.size() * sizeof(uint64_t), cudaMemcpyDeviceToHost, side);
    const auto t0 = std::chrono::steady_clock::now();
    while (cudaStreamQuery(side) == cudaErrorNotReady &&
           std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < 2.0)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (cudaStreamQuery(side) == cudaSuccess) {
      std::memcpy(res.warps.data(), hw, nwarps * sizeof(DevWarpRecord));
      std::memcpy(res.barriers.data(), hb, res.barriers.size() * sizeof(DevBarrierRecord));
      if (ht) {
        res.op_begin_ns.resize(ops.size());
        std::memcpy(res.op_begin_ns.data(), ht, ops.size() * sizeof(uint64_t));
      }
    } else {
      res.message += " (the records could not be read)";
    }
    return res;  // the worker exits after this (DevicePool)
  }
  if (err != cudaSuccess) {
    res.outcome = sim::DeviceOutcome::Fault;
    res.message = std::string("device: fault (") + cudaGetErrorString(err) + ")";
    return res;  // the context is dead; the worker exits
  }
  cudaMemcpy(res.warps.data(), d_w, nwarps * sizeof(DevWarpRecord), cudaMemcpyDeviceToHost);
  if (!res.barriers.empty())
    cudaMemcpy(res.barriers.data(), d_b, res.barriers.size() * sizeof(DevBarrierRecord), cudaMemcpyDeviceToHost);
  if (d_ts) {
    res.op_begin_ns.resize(ops.size());
    if (!ops.empty()) cudaMemcpy(res.op_begin_ns.data(), d_ts, ops.size() * sizeof(uint64_t), cudaMemcpyDeviceToHost);
  }
  uint64_t first = ~uint64_t{0}, last = 0;
  double cyc_sum = 0, ns_sum = 0;
  bool assertion = false, hang = false;
  for (const DevWarpRecord& w : res.warps) {
    const auto stt = static_cast<DevWarpStatus>(w.status);
    if (stt == DevWarpStatus::Assertion) assertion = true;
    if (stt == DevWarpStatus::TimedOut || stt == DevWarpStatus::StoppedOnHang || stt == DevWarpStatus::BlockedNamed ||
        stt == DevWarpStatus::BlockedCluster || stt == DevWarpStatus::SkippedOnHang)
      hang = true;
    if (w.start_ns) first = std::min<uint64_t>(first, w.start_ns);
    if (stt == DevWarpStatus::Done && w.cycles > 0 && w.end_ns > w.start_ns + 1000) {
      cyc_sum += static_cast<double>(w.cycles);
      ns_sum += static_cast<double>(w.end_ns - w.start_ns);
    }
    last = std::max<uint64_t>(last, w.end_ns);
  }
  res.span_ns = last > first ? static_cast<double>(last - first) : 0;
  res.sm_mhz = ns_sum > 0 ? cyc_sum / ns_sum * 1e3 : 0;
  res.outcome = assertion ? sim::DeviceOutcome::Assertion : hang ? sim::DeviceOutcome::Hang : sim::DeviceOutcome::Ok;
  cudaFree(d_ops);
  cudaFree(d_off);
  cudaFree(d_init);
  cudaFree(d_w);
  cudaFree(d_b);
  if (d_ts) cudaFree(d_ts);
  cudaFree(d_hang);
  cudaStreamDestroy(st);
  cudaStreamDestroy(side);
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  return res;
}

}  // namespace pipesim::interp
