// NVFP4 batched block-scaled GEMV: a warp-specialized, TMA-pipelined kernel and a plain reference.
//
// Warp 0 is the producer: its elected lane streams the CTA's contiguous slice of A (and the matching
// sfa bytes) through a ring of shared-memory stages with cp.async.bulk, one full/empty mbarrier pair per
// stage (CUTLASS PipelineTmaAsync: producer state starts at phase 1, consumer state at phase 0).
// Warps 1..NW consume: each takes 16 bytes of A (32 E2M1 values, two 16-element scale blocks) per lane
// and step, forms exact block sums with the pre-decoded vector (int8 dot products on sm_90a, f16x2 on
// sm_100a), scales each block in f32 (exact) and accumulates rows in f32. Warp NW + 1 claims dynamic
// chunks when the plan has any (an option; the plan's split is static).
// docs/gemv.md describes the design; model/gemv_plan.cpp chooses grid, stages and layout.
#include <cuda/ptx>
#include <cuda_fp16.h>
#include <cuda_fp4.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <iterator>
#include <string>
#include <map>
#include <mutex>
#include <utility>
#include <string>

#include "kernels/gemv_nvfp4/gemv_nvfp4.hpp"
#include "model/arch.hpp"
#include "model/gemv_plan.hpp"

namespace pipesim::kernels {
namespace {

namespace ptx = cuda::ptx;

constexpr int kMaxConsumerWarps = 16;
// Instrumentation words per CTA (GemvTuning::timeline): globaltimer at entry, first full stage, end;
// chunks claimed; SM id; consumer warp 1's cycles waiting for full stages; the producer's cycles
// waiting for free slots; stages consumed; globaltimer at the producer's first issue (its first
// vector copy) and when the consumers saw the first vector land.
constexpr unsigned kTimelineWords = 10;
constexpr int kMaxThreads = 32 * (2 + kMaxConsumerWarps);  // + producer and scheduler warps

struct Params {
  const uint8_t* a;
  const uint8_t* sfa;
  const uint8_t* b;
  const uint8_t* sfb;
  __half* c;
  long long m;
  long long rows_total;
  long long sfa_total;  // bytes of sfa, all batches
  long long grid;
  int k;
  unsigned row_bytes;   // k / 2
  unsigned row_div;     // k / 64 == row_bytes / 32
  unsigned row_magic;   // floor(2^32 / row_div), at most 2^32 - 1
  int stages;
  unsigned stage_a_bytes;
  unsigned stage_stride;
  unsigned off_full, off_empty, off_vfull, off_vempty, off_flag, off_ring, off_b, off_vraw, off_rowsum;
  unsigned vraw_bytes;
  long long sfb_total;  // bytes of sfb, all batches
  unsigned b_buffer_bytes;
  int b_buffers;
  unsigned long long watchdog_ns;
  GemvWatchdogHit* hit;
  unsigned long long* timeline;  // optional: kTimelineWords per CTA (instrumentation)
  // Work split (model/gemv_plan.hpp): static rows, then chunks claimed through *counter.
  long long static_rows;
  long long chunk_rows;
  long long chunks;
  long long chunks_first_batch;
  long long chunks_per_batch;
  unsigned first_stage_bytes;
  unsigned off_hdr, off_rowsum1, off_tick, off_tfull, off_tempty, off_go, off_done;
  unsigned area0_rows, area1_rows, areas;
  long long claim_lead_bytes;  // A bytes of the static range left when the scheduler may start claiming
  unsigned* counter;  // chunk counter, 0 at launch; the launch's last claim sets it back to 0
};

// A stage header / ticket: a range of whole rows of one batch (rows == 0: no more chunks).
struct RangeRec {
  long long r0;
  int rows;
  int batch;
};

// ---- decoding --------------------------------------------------------------------------------
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000
// Blackwell: the hardware conversion (cvt.rn.f16x2.e2m1x2 through cuda_fp4.h); pairs are (2t, 2t+1).
// Values are exact, so the vector needs no correction factor. Products in f16x2 (see unit_dot).
#define GEMV_INT_DOT 0
constexpr float kDecodeFix = 1.0f;
constexpr unsigned kSlotsPerUnit = 4;  // 32 values as f16: four 16-byte slots
__device__ __forceinline__ uint4 decode_word(uint32_t w) {
  uint4 r;
  const __half2_raw h0 = __nv_cvt_fp4x2_to_halfraw2(static_cast<__nv_fp4x2_storage_t>(w & 0xFF), __NV_E2M1);
  const __half2_raw h1 = __nv_cvt_fp4x2_to_halfraw2(static_cast<__nv_fp4x2_storage_t>((w >> 8) & 0xFF), __NV_E2M1);
  const __half2_raw h2 = __nv_cvt_fp4x2_to_halfraw2(static_cast<__nv_fp4x2_storage_t>((w >> 16) & 0xFF), __NV_E2M1);
  const __half2_raw h3 = __nv_cvt_fp4x2_to_halfraw2(static_cast<__nv_fp4x2_storage_t>(w >> 24), __NV_E2M1);
  r.x = uint32_t{h0.x} | (uint32_t{h0.y} << 16);
  r.y = uint32_t{h1.x} | (uint32_t{h1.y} << 16);
  r.z = uint32_t{h2.x} | (uint32_t{h2.y} << 16);
  r.w = uint32_t{h3.x} | (uint32_t{h3.y} << 16);
  return r;
}
__device__ __forceinline__ __half2 as_h2(uint32_t u) {
  __half2 h;
  memcpy(&h, &u, 4);
  return h;
}
#else
// Hopper: integer dot products. 2 x E2M1 is a small integer (0, 1, 2, 3, 4, 6, 8, 12 and negatives),
// so a 16-element block of a·b is (1/4) x an exact int32 sum of int8 products (|sum| <= 16·144).
// The vector is stored as int8 (2b) in natural element order; the f32 vector scales carry the 1/4.
// A's nibbles become int8 with prmt (byte permute) from the 8-byte magnitude table {0,1,2,3,4,6,8,12}:
// a selector nibble's low 3 bits pick the byte, its msb (E2M1's sign) replicates that byte's sign bit
// (0 for every table entry) instead, so prmt(table, w) gives |2a| for the positive elements and 0 for
// the negative ones, prmt(table, w ^ 0x8888) the reverse; two dp4a chains and one subtraction per
// block give the signed sum. 11 instructions per 8 values (2 shifts, 1 xor, 4 prmt, 4 dp4a) instead
// of 15 for the f16 bit placement + HFMA2 (and half the vector bytes from shared memory).
#define GEMV_INT_DOT 1
constexpr float kDecodeFix = 0.25f;    // (2a)(2b) = 4ab
constexpr unsigned kSlotsPerUnit = 2;  // 32 values as int8: two 16-byte slots
constexpr uint32_t kMagLo = 0x03020100u, kMagHi = 0x0C080604u;  // 2|E2M1| for codes 0..7

__device__ __forceinline__ uint32_t prmt(uint32_t lo, uint32_t hi, uint32_t sel) {
  uint32_t d;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(lo), "r"(hi), "r"(sel));
  return d;
}
// Adds the dot product of the 8 E2M1 values of w (element e in nibble e) with 8 int8 vector values
// (blo: elements 0..3, bhi: 4..7): the positive elements' part to p, the negative ones' to q.
// `tlo` is kMagLo held in a register (see mag_table_lo): PRMT takes its first table word only from a
// register, and a literal made the compiler rematerialise it before every PRMT (16 extra
// instructions per unit in the SASS).
__device__ __forceinline__ void dot8(uint32_t w, uint32_t blo, uint32_t bhi, int& p, int& q, uint32_t tlo) {
  const uint32_t wx = w ^ 0x88888888u;
  p = __dp4a(static_cast<int>(prmt(tlo, kMagHi, w)), static_cast<int>(blo), p);
  q = __dp4a(static_cast<int>(prmt(tlo, kMagHi, wx)), static_cast<int>(blo), q);
  p = __dp4a(static_cast<int>(prmt(tlo, kMagHi, w >> 16)), static_cast<int>(bhi), p);
  q = __dp4a(static_cast<int>(prmt(tlo, kMagHi, wx >> 16)), static_cast<int>(bhi), q);
}
__device__ __forceinline__ uint32_t mag_table_lo() {
  uint32_t t;
  asm volatile("mov.b32 %0, 0x03020100;" : "=r"(t));  // opaque: stays in one register
  // A shuffle from the lane itself: the compiler cannot prove the result warp-uniform, so it keeps
  // it in an ordinary register (a uniform one made it copy the word before every PRMT again).
  return __shfl_sync(0xffffffffu, t, static_cast<int>(threadIdx.x % 32));
}
#endif

// Bytes of the decoded vector per element (int8 on Hopper, f16 on Blackwell); its f32 scales follow.
// The plan sizes the vector buffers with the same number (GemvHints::vector_elem_bytes).
constexpr unsigned kVecBytesPerElem = kSlotsPerUnit * 16 / 32;

// Vector layout in shared memory: per 32-element unit j, kSlotsPerUnit 16-byte slots. f16 (4 slots):
// slot q at 4j + (q ^ ((j >> 1) & 3)); int8 (2 slots): slot q at 2j + (q ^ ((j >> 2) & 1)); either way
// 8 consecutive units read by a quarter warp hit distinct bank groups.
// Row q and 32-byte block r within it of the n32-th 32-byte block of the stage: n32 / row_div by
// the host's magic multiplier, whose quotient is at most one short (one correction step).
struct RowPos {
  unsigned q, r;
};
__device__ __forceinline__ RowPos row_of_block(unsigned n32, const Params& p) {
  unsigned q = __umulhi(n32, p.row_magic);
  unsigned r = n32 - q * p.row_div;
  if (r >= p.row_div) {
    ++q;
    r -= p.row_div;
  }
  return {q, r};
}

__device__ __forceinline__ unsigned b_slot(unsigned j, unsigned q) {
  if constexpr (kSlotsPerUnit == 4) return 4 * j + (q ^ ((j >> 1) & 3));
  else return 2 * j + (q ^ ((j >> 2) & 1));
}
// ---- pipeline waits (optionally bounded: the device watchdog) ------------------------------------
template <bool kWatchdog>
__device__ __forceinline__ bool wait_parity(uint64_t* bar, uint32_t parity, const Params& p,
                                            volatile int* abort_flag, int barrier_kind, int stage,
                                            long long iteration) {
  if constexpr (!kWatchdog) {
    while (!ptx::mbarrier_try_wait_parity(bar, parity)) {
    }
    return true;
  } else {
    const uint64_t t0 = ptx::get_sreg_globaltimer();
    while (!ptx::mbarrier_try_wait_parity(bar, parity)) {
      if (*abort_flag) return false;
      if (ptx::get_sreg_globaltimer() - t0 > p.watchdog_ns) {
        *abort_flag = 1;
        if (p.hit != nullptr && atomicAdd(&p.hit->fired, 1) == 0) {
          p.hit->cta = static_cast<int>(blockIdx.x);
          p.hit->warp = static_cast<int>(threadIdx.x / 32);
          p.hit->barrier = barrier_kind;
          p.hit->stage = stage;
          p.hit->parity = static_cast<int>(parity);
          p.hit->iteration = iteration;
        }
        return false;
      }
    }
    return true;
  }
}

__device__ __forceinline__ void consumer_bar_sync(int consumer_threads) {
  // Named barrier 1 among the consumer warps (no cuda::ptx wrapper exists for bar.sync).
  asm volatile("bar.sync 1, %0;" ::"r"(consumer_threads) : "memory");
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}


// Decode batch `batch`'s vector into buffer `buf`. `raw` is the vector slot the producer filled by
// TMA: k/2 bytes of b, then sfb from the 16-byte boundary at or below the batch's first scale byte.
// Hopper: b as int8 (2b) in natural order, sfb as f32 times 1/4. Blackwell: b as f16 pairs in
// decode_word's pairing, sfb as f32.
__device__ void decode_vector(const Params& p, long long batch, const uint8_t* raw, uint8_t* buf, int ct,
                              int nct) {
  const unsigned words = static_cast<unsigned>(p.k) / 8;
  const uint32_t* bw = reinterpret_cast<const uint32_t*>(raw);
  uint4* slots = reinterpret_cast<uint4*>(buf);
  for (unsigned wi = ct; wi < words; wi += nct) {
    const uint32_t w = bw[wi];
#if GEMV_INT_DOT
    // The A decode's table trick: prmt gives |2x| for the positive elements (0 for the negative
    // ones) and, with the sign bits flipped, the reverse; a bytewise difference gives 2x as int8.
    const uint32_t wx = w ^ 0x88888888u;
    const uint32_t lo = __vsub4(prmt(kMagLo, kMagHi, w), prmt(kMagLo, kMagHi, wx));
    const uint32_t hi = __vsub4(prmt(kMagLo, kMagHi, w >> 16), prmt(kMagLo, kMagHi, wx >> 16));
    // word q = wi % 4 of unit wi / 4: bytes 8q .. 8q + 7 of the unit's 32, i.e. slot q / 2, half q % 2.
    uint2* dst = reinterpret_cast<uint2*>(&slots[b_slot(wi / 4, (wi % 4) / 2)]) + (wi % 2);
    *dst = make_uint2(lo, hi);
#else
    slots[b_slot(wi / 4, wi % 4)] = decode_word(w);
#endif
  }
  const unsigned nsf = static_cast<unsigned>(p.k) / 16;
  const uint8_t* sb = raw + p.row_bytes + ((batch * nsf) & 15);
  float* sf = reinterpret_cast<float*>(buf + static_cast<size_t>(p.k) * kVecBytesPerElem);
  for (unsigned i = ct; i < nsf; i += nct) {
    const __half h = __half(__nv_cvt_fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(sb[i]), __NV_E4M3));
    sf[i] = __half2float(h) * kDecodeFix;
  }
}

// One 32-element unit from registers: 16 bytes of A, its two sfa bytes, the unit's vector slots
// (kSlotsPerUnit of them) and its two sfb values. Returns the f32 contribution (exact up to the final
// f32 addition).
__device__ __forceinline__ float unit_dot_regs(const uint4 av, const uint4 (&bv)[kSlotsPerUnit], uint16_t s,
                                               const float2 sb, uint32_t tlo) {
#if GEMV_INT_DOT
  const uint4 b0 = bv[0];  // elements 0..15 as int8
  const uint4 b1 = bv[1];  // elements 16..31
  int p0 = 0, q0 = 0, p1 = 0, q1 = 0;
  dot8(av.x, b0.x, b0.y, p0, q0, tlo);
  dot8(av.y, b0.z, b0.w, p0, q0, tlo);
  dot8(av.z, b1.x, b1.y, p1, q1, tlo);
  dot8(av.w, b1.z, b1.w, p1, q1, tlo);
  // Exact block sums (|sum| <= 2304 as int, exact as f32) times the scale product (two 4-bit
  // mantissas and 1/4: exact in f32): each product is exact (at most 12 + 8 significant bits).
  const float blk0 = static_cast<float>(p0 - q0);
  const float blk1 = static_cast<float>(p1 - q1);
#else
  (void)tlo;
  const uint4 b0 = bv[0], b1 = bv[1], b2 = bv[2], b3 = bv[3];
  // Four independent chains of four f16x2 FMAs: every f16 lane sums at most 4 products (then 8 after
  // the pairwise add), all multiples of 0.25 below 512: exact in f16.
  uint4 d = decode_word(av.x);
  __half2 c0 = __hmul2(as_h2(d.x), as_h2(b0.x));
  c0 = __hfma2(as_h2(d.y), as_h2(b0.y), c0);
  c0 = __hfma2(as_h2(d.z), as_h2(b0.z), c0);
  c0 = __hfma2(as_h2(d.w), as_h2(b0.w), c0);
  d = decode_word(av.y);
  __half2 c1 = __hmul2(as_h2(d.x), as_h2(b1.x));
  c1 = __hfma2(as_h2(d.y), as_h2(b1.y), c1);
  c1 = __hfma2(as_h2(d.z), as_h2(b1.z), c1);
  c1 = __hfma2(as_h2(d.w), as_h2(b1.w), c1);
  d = decode_word(av.z);
  __half2 c2 = __hmul2(as_h2(d.x), as_h2(b2.x));
  c2 = __hfma2(as_h2(d.y), as_h2(b2.y), c2);
  c2 = __hfma2(as_h2(d.z), as_h2(b2.z), c2);
  c2 = __hfma2(as_h2(d.w), as_h2(b2.w), c2);
  d = decode_word(av.w);
  __half2 c3 = __hmul2(as_h2(d.x), as_h2(b3.x));
  c3 = __hfma2(as_h2(d.y), as_h2(b3.y), c3);
  c3 = __hfma2(as_h2(d.z), as_h2(b3.z), c3);
  c3 = __hfma2(as_h2(d.w), as_h2(b3.w), c3);
  const float2 f0 = __half22float2(__hadd2(c0, c1));
  const float2 f1 = __half22float2(__hadd2(c2, c3));
  const float blk0 = f0.x + f0.y;
  const float blk1 = f1.x + f1.y;
#endif
  const __half2_raw sa = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(s), __NV_E4M3);
  const float s0 = __half2float(__half(__half_raw{sa.x})) * sb.x;
  const float s1 = __half2float(__half(__half_raw{sa.y})) * sb.y;
  return blk0 * s0 + blk1 * s1;
}

// One unit by its row position j (the generic path): loads, then unit_dot_regs.
__device__ __forceinline__ float unit_dot(const uint8_t* a16, const uint8_t* sf2, const uint4* bslots,
                                          const float2* sfb2, unsigned j, uint32_t tlo) {
  uint4 bv[kSlotsPerUnit];
#pragma unroll
  for (unsigned q = 0; q < kSlotsPerUnit; ++q) bv[q] = bslots[b_slot(j, q)];
  return unit_dot_regs(*reinterpret_cast<const uint4*>(a16), bv, *reinterpret_cast<const uint16_t*>(sf2),
                       sfb2[j], tlo);
}

// CUTLASS PipelineState: ring index, phase bit, and (for reports) the iteration count.
struct PipeState {
  int index;
  uint32_t phase;
  long long count;
  __device__ __forceinline__ void advance(int stages) {
    ++count;
    if (++index == stages) {
      index = 0;
      phase ^= 1u;
    }
  }
};

// Flat rows and batch of chunk t: model::gemv_chunk_range's arithmetic (whole rows of one batch). Run
// by the scheduler warp only, which has time for the 64-bit divisions.
__device__ __forceinline__ RangeRec chunk_range(const Params& p, long long t) {
  const long long first_batch = p.static_rows / p.m;
  long long b = first_batch, r0;
  if (t < p.chunks_first_batch) {
    r0 = p.static_rows + t * p.chunk_rows;
  } else {
    const long long u = t - p.chunks_first_batch;
    b = first_batch + 1 + u / p.chunks_per_batch;
    r0 = b * p.m + u % p.chunks_per_batch * p.chunk_rows;
  }
  const long long r1 = min((b + 1) * p.m, r0 + p.chunk_rows);
  return RangeRec{r0, static_cast<int>(r1 - r0), static_cast<int>(b)};
}

// x * y / z (the static split), in 32-bit arithmetic when everything fits.
__device__ __forceinline__ long long muldiv(long long x, long long y, long long z) {
  const long long xy = x * y;
  if (xy < (1LL << 32) && z < (1LL << 32)) return static_cast<unsigned>(xy) / static_cast<unsigned>(z);
  return xy / z;
}
// The batch of flat row x, in 32-bit arithmetic when it fits.
__device__ __forceinline__ long long batch_of(long long x, long long m) {
  if (x < (1LL << 32) && m < (1LL << 32)) return static_cast<unsigned>(x) / static_cast<unsigned>(m);
  return x / m;
}

template <int kProducerStartPhase, bool kWatchdog, int kUnits>
__global__ void __launch_bounds__(kMaxThreads, 1) gemv_tma_kernel(const __grid_constant__ Params p) {
  static_assert(model::kGemvClaims == 4, "the scheduler keeps four claims in four registers");
  extern __shared__ __align__(128) uint8_t smem_raw[];
  // 128-byte alignment by pointer arithmetic on smem_raw, so the compiler keeps the shared address
  // space (LDS/ATOMS rather than generic loads).
  const unsigned pad = (128u - static_cast<unsigned>(__cvta_generic_to_shared(smem_raw) & 127u)) & 127u;
  uint8_t* smem = smem_raw + pad;
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + p.off_full);
  uint64_t* empty = reinterpret_cast<uint64_t*>(smem + p.off_empty);
  uint64_t* vfull = reinterpret_cast<uint64_t*>(smem + p.off_vfull);
  uint64_t* vempty = reinterpret_cast<uint64_t*>(smem + p.off_vempty);
  uint64_t* tfull = reinterpret_cast<uint64_t*>(smem + p.off_tfull);
  uint64_t* tempty = reinterpret_cast<uint64_t*>(smem + p.off_tempty);
  uint64_t* go = reinterpret_cast<uint64_t*>(smem + p.off_go);
  volatile int* abort_flag = reinterpret_cast<volatile int*>(smem + p.off_flag);
  RangeRec* hdr = reinterpret_cast<RangeRec*>(smem + p.off_hdr);
  RangeRec* tick = reinterpret_cast<RangeRec*>(smem + p.off_tick);
  int* done = reinterpret_cast<int*>(smem + p.off_done);
  uint8_t* ring = smem + p.off_ring;
  float* rowsum0 = reinterpret_cast<float*>(smem + p.off_rowsum);
  float* rowsum1 = reinterpret_cast<float*>(smem + p.off_rowsum1);

  const int warp = static_cast<int>(threadIdx.x / 32);
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int nw = static_cast<int>(blockDim.x / 32) - 2;  // consumer warps 1..nw; warp nw + 1 schedules
  const int S = p.stages;
  // The CTA's static range of flat rows; the rows after static_rows are claimed in chunks.
  const long long s0 = muldiv(blockIdx.x, p.static_rows, p.grid);
  const long long s1 = muldiv(blockIdx.x + 1, p.static_rows, p.grid);
  const long long rb = p.row_bytes;
  const long long SA = p.stage_a_bytes;
  const long long FS = p.first_stage_bytes;  // the CTA's very first stage (<= SA)
  const bool dynamic = p.chunks > 0;

  if (threadIdx.x == 0) {
    for (int i = 0; i < S; ++i) {
      ptx::mbarrier_init(&full[i], 1);
      ptx::mbarrier_init(&empty[i], static_cast<uint32_t>(nw));
    }
    for (int i = 0; i < p.b_buffers; ++i) {
      ptx::mbarrier_init(&vfull[i], 1);
      ptx::mbarrier_init(&vempty[i], static_cast<uint32_t>(nw));
    }
    for (int i = 0; i < model::kGemvClaims; ++i) {
      ptx::mbarrier_init(&tfull[i], 1);
      ptx::mbarrier_init(&tempty[i], 1);
    }
    ptx::mbarrier_init(go, 1);
    for (unsigned i = 0; i <= p.areas; ++i) done[i] = 0;
    *abort_flag = 0;
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  __syncthreads();

  if (warp == nw + 1) {
    // ---------------- scheduler (chunk claims) ----------------
    // Under full load an atomic's round trip is several microseconds (it queues behind the SM's own
    // bulk reads), longer than a chunk takes, so four claims stay in flight, each in its own register:
    // reading one waits for that claim only. Claims are handed to the producer in order through the
    // ticket ring (full/empty barriers, one slot per claim).
    if (!dynamic || lane != 0) return;
    if (!wait_parity<kWatchdog>(go, 0, p, abort_flag, 4, 0, 0)) return;
    unsigned claim[model::kGemvClaims];  // indexed only inside unrolled loops: each stays a register
#pragma unroll
    for (int j = 0; j < model::kGemvClaims; ++j) claim[j] = atomicAdd(p.counter, 1u);
    PipeState ts{0, 1, 0};
    // 1: handed chunk t over; 0: t is past the last chunk, handed the end over; -1: stopped.
    auto publish = [&](long long t) -> int {
      if (!wait_parity<kWatchdog>(&tempty[ts.index], ts.phase, p, abort_flag, 5, ts.index, ts.count)) return -1;
      tick[ts.index] = t < p.chunks ? chunk_range(p, t) : RangeRec{0, 0, 0};
      ptx::mbarrier_arrive(&tfull[ts.index]);
      ts.advance(model::kGemvClaims);
      return t < p.chunks ? 1 : 0;
    };
    // Claims are handed over oldest first; each one handed over is replaced by a new claim. At the
    // first failing claim, every claim in flight fails too (claims only grow).
    for (bool more = true; more;) {
#pragma unroll
      for (int j = 0; j < model::kGemvClaims; ++j) {
        const int r = publish(claim[j]);
        if (r < 0) return;
        if (r == 0) {
          more = false;
          break;
        }
        claim[j] = atomicAdd(p.counter, 1u);
      }
    }
    // Every CTA makes exactly four failing claims: chunks + 4 grid in all. The one that got the last
    // value resets the counter for the next launch (stream order makes that launch see it).
    const long long last = p.chunks + model::kGemvClaims * p.grid - 1;
    bool got_last = false;
#pragma unroll
    for (int j = 0; j < model::kGemvClaims; ++j) got_last = got_last || claim[j] == last;
    if (got_last) atomicExch(p.counter, 0u);
    // producer_tail of the ticket ring.
    for (int i = 0; i < model::kGemvClaims; ++i, ts.advance(model::kGemvClaims))
      if (!wait_parity<kWatchdog>(&tempty[ts.index], ts.phase, p, abort_flag, 5, ts.index, ts.count)) return;
    return;
  }

  if (warp == 0) {
    // ---------------- producer ----------------
    if (lane != 0) return;
    PipeState ps{0, kProducerStartPhase, 0};  // CUTLASS: the producer starts at phase 1
    PipeState vs{0, 1, 0};                    // vector pipeline (always the correct start phase)
    unsigned long long* tlp = p.timeline != nullptr ? p.timeline + kTimelineWords * blockIdx.x : nullptr;
    long long pwait = 0;                      // instrumentation: cycles spent waiting for free slots
    long long vec_batch = -1;                 // the batch whose vector was loaded last
    bool first = true;                        // the CTA's first stage is first_stage_bytes long
    // "go": the scheduler may start claiming once the static range has claim_lead_bytes of A left
    // (at once when it is shorter), so the first claims return about when they are needed.
    bool went = !dynamic;
    auto give_go = [&]() {
      if (!went) {
        ptx::mbarrier_arrive(go);
        went = true;
      }
    };
    if ((s1 - s0) * rb <= p.claim_lead_bytes) give_go();
    // Streams flat rows [r0, r1): per batch segment the vector (when the batch differs from the one
    // loaded last), then the A stages; every stage's header gets `rec` (read by the consumers for the
    // first stage of a chunk). batch >= 0: the whole range lies in that batch (a chunk).
    auto stream_range = [&](long long r0, long long r1, long long batch_hint, const RangeRec& rec) -> bool {
      for (long long gs = r0, ge; gs < r1; gs = ge) {
        const long long batch = batch_hint >= 0 ? batch_hint : batch_of(gs, p.m);
        ge = batch_hint >= 0 ? r1 : min(r1, (batch + 1) * p.m);
        if (batch != vec_batch) {
          vec_batch = batch;
          // The segment's vector (raw b and sfb) by TMA, ahead of its A stages in the same stream, so
          // it never queues behind the A traffic as a plain load would.
          if (!wait_parity<kWatchdog>(&vempty[vs.index], vs.phase, p, abort_flag, 3, vs.index, vs.count))
            return false;
          uint8_t* vdst = smem + p.off_vraw + static_cast<size_t>(vs.index) * p.vraw_bytes;
          uint8_t* vsf = vdst + rb;
          const long long nsf = p.k / 16;
          const long long f_lo = batch * nsf, f_hi = f_lo + nsf;
          const long long f0 = f_lo & ~15LL;
          long long fe = (f_hi + 15) & ~15LL;
          if (fe > p.sfb_total) {
            fe = p.sfb_total & ~15LL;
            for (long long t = max(fe, f0); t < f_hi; ++t) vsf[t - f0] = p.sfb[t];
            ptx::fence_proxy_async(ptx::space_shared);
          }
          const uint32_t vtx = static_cast<uint32_t>(rb + (fe > f0 ? fe - f0 : 0));
          if (tlp && vs.count == 0) tlp[8] = ptx::get_sreg_globaltimer();
          ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &vfull[vs.index], vtx);
          ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, vdst, p.b + batch * rb,
                             static_cast<uint32_t>(rb), &vfull[vs.index]);
          if (fe > f0)
            ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, vsf, p.sfb + f0,
                               static_cast<uint32_t>(fe - f0), &vfull[vs.index]);
          vs.advance(p.b_buffers);
        }
        const long long a_end = ge * rb;
        for (long long off = gs * rb; off < a_end;) {
          const long long step = first ? FS : SA;
          first = false;
          const unsigned bytes = static_cast<unsigned>(min(step, a_end - off));
          if (!went && r1 * rb - off <= p.claim_lead_bytes) give_go();
          const int idx = ps.index;
          // producer_acquire: wait for the consumers to have released this slot.
          const long long w0 = tlp ? clock64() : 0;
          if (!wait_parity<kWatchdog>(&empty[idx], ps.phase, p, abort_flag, 1, idx, ps.count)) return false;
          if (tlp) pwait += clock64() - w0;
          uint8_t* dst = ring + static_cast<size_t>(idx) * p.stage_stride;
          uint8_t* dsf = dst + SA;
          const long long sf_lo = off / 8, sf_hi = (off + bytes) / 8;
          const long long s0f = sf_lo & ~15LL;
          long long e = (sf_hi + 15) & ~15LL;
          if (e > p.sfa_total) {
            // The last scale bytes of the whole tensor end short of a 16-byte boundary: copy the
            // remainder (< 16 bytes) by hand, before the arrive that releases the stage.
            e = p.sfa_total & ~15LL;
            for (long long t = e; t < sf_hi; ++t) dsf[t - s0f] = p.sfa[t];
            ptx::fence_proxy_async(ptx::space_shared);
          }
          hdr[idx] = rec;  // published by the arrive below (release), read after the consumers' wait
          const uint32_t tx = bytes + static_cast<uint32_t>(e - s0f);
          ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &full[idx], tx);
          ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, dst, p.a + off, bytes, &full[idx]);
          if (e > s0f)
            ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, dsf, p.sfa + s0f,
                               static_cast<uint32_t>(e - s0f), &full[idx]);
          off += bytes;
          ps.advance(S);
        }
      }
      return true;
    };

    if (s0 < s1 && !stream_range(s0, s1, -1, RangeRec{0, 0, 0})) return;
    if (dynamic) {
      give_go();
      PipeState tc{0, 0, 0};  // ticket ring, consumer side
      for (;;) {
        if (!wait_parity<kWatchdog>(&tfull[tc.index], tc.phase, p, abort_flag, 6, tc.index, tc.count)) return;
        const RangeRec rec = tick[tc.index];
        ptx::mbarrier_arrive(&tempty[tc.index]);
        tc.advance(model::kGemvClaims);
        if (rec.rows == 0) break;
        if (!stream_range(rec.r0, rec.r0 + rec.rows, rec.batch, rec)) return;
      }
      // No more chunks: one more slot whose header says so, completed by a plain arrive (no bytes).
      const int idx = ps.index;
      if (!wait_parity<kWatchdog>(&empty[idx], ps.phase, p, abort_flag, 1, idx, ps.count)) return;
      hdr[idx] = RangeRec{0, 0, 0};
      ptx::mbarrier_arrive(&full[idx]);
      ps.advance(S);
    }
    if (tlp) tlp[6] = static_cast<unsigned long long>(pwait);
    // producer_tail (CUTLASS 4.6): acquire every stage once more, so the CTA does not retire while
    // consumers still signal its barriers.
    for (int i = 0; i < p.b_buffers; ++i, vs.advance(p.b_buffers))
      if (!wait_parity<kWatchdog>(&vempty[vs.index], vs.phase, p, abort_flag, 3, vs.index, vs.count)) return;
    for (int i = 0; i < S; ++i, ps.advance(S)) {
      if (!wait_parity<kWatchdog>(&empty[ps.index], ps.phase, p, abort_flag, 1, ps.index, ps.count)) return;
    }
    return;
  }

  // ---------------- consumers ----------------
  const int cw = warp - 1;
  const int ct = static_cast<int>(threadIdx.x) - 32;
  unsigned long long* tl = (p.timeline != nullptr && ct == 0) ? p.timeline + kTimelineWords * blockIdx.x : nullptr;
  if (tl) {
    tl[0] = ptx::get_sreg_globaltimer();
    tl[4] = ptx::get_sreg_smid();
  }
  long long cwait = 0;  // instrumentation (warp 1): cycles spent waiting for full stages
  const int nct = nw * 32;

#if GEMV_INT_DOT
  const uint32_t tlo = mag_table_lo();
#else
  const uint32_t tlo = 0;
#endif
  // The aligned path (rows of a multiple of 512 bytes; stages are multiples of 512 bytes): the vector
  // slots of lane l's unit relative to the step's first unit (b_slot depends on the unit's low bits
  // only, and a step starts at a multiple of 32 units).
  const bool aligned = p.row_bytes % 512 == 0;
  unsigned bsl[kSlotsPerUnit];
#pragma unroll
  for (unsigned k = 0; k < kSlotsPerUnit; ++k) bsl[k] = b_slot(static_cast<unsigned>(lane), k);

  PipeState cs{0, 0, 0};  // the consumer starts at phase 0
  PipeState vc{0, 0, 0};
  long long vec_batch = -1;
  int nvec = 0;        // vectors decoded so far (buffer nvec % 2 is the next one)
  unsigned area = 0;   // the chunk area the next chunk uses
  unsigned chunks_done = 0;
  bool first = true;
  // Consumes flat rows [r0, r1) (its first stage already waited for when `peeked`; batch >= 0: all in
  // that batch) into the row-sum area `base` (cap rows per warp), then writes their c: the static
  // range (dn == nullptr) after a barrier of all consumer warps, one row per thread; a chunk by the
  // last warp to finish it (counter *dn), so no warp waits for the others.
  auto consume_range = [&](long long r0, long long r1, long long batch_hint, bool peeked, float* base,
                           unsigned cap, int* dn) -> bool {
    const int rows = static_cast<int>(r1 - r0);
    // Row sums: one slice of the area per consumer warp, written only by that warp (no atomics). For a
    // chunk area, its last reduction finished before this warp could get here (plan: areas = stages + 1).
    float* const part = base + cw * cap;
    for (int i = lane; i < rows; i += 32) part[i] = 0.0f;
    __syncwarp();
    float acc = 0.0f;  // this lane's partial sum of row wrow (warp-uniform; -1: none)
    int wrow = -1;
    auto flush = [&]() {
      if (wrow >= 0) {
        const float v = warp_sum(acc);
        if (lane == 0) part[wrow] += v;
      }
      acc = 0.0f;
    };
    for (long long gs = r0, ge; gs < r1; gs = ge) {
      const long long batch = batch_hint >= 0 ? batch_hint : batch_of(gs, p.m);
      ge = batch_hint >= 0 ? r1 : min(r1, (batch + 1) * p.m);
      if (batch != vec_batch) {
        vec_batch = batch;
        if (!wait_parity<kWatchdog>(&vfull[vc.index], vc.phase, p, abort_flag, 2, vc.index, vc.count)) return false;
        if (tl && vc.count == 0) tl[9] = ptx::get_sreg_globaltimer();
        uint8_t* dbuf = smem + p.off_b + (p.b_buffers > 1 ? (nvec & 1) : 0) * p.b_buffer_bytes;
        decode_vector(p, batch, smem + p.off_vraw + static_cast<size_t>(vc.index) * p.vraw_bytes, dbuf, ct, nct);
        // Orders the vector decode before any use; a buffer is rewritten only two vectors later, after
        // every consumer passed this barrier once more. After it the raw slot is free again.
        consumer_bar_sync(nct);
        if (lane == 0) ptx::mbarrier_arrive(&vempty[vc.index]);
        vc.advance(p.b_buffers);
        ++nvec;
      }
      const uint8_t* bbuf = smem + p.off_b + (p.b_buffers > 1 ? ((nvec - 1) & 1) : 0) * p.b_buffer_bytes;
      const uint4* bslots = reinterpret_cast<const uint4*>(bbuf);
      const float2* sfb2 = reinterpret_cast<const float2*>(bbuf + static_cast<size_t>(p.k) * kVecBytesPerElem);
      const long long a_beg = gs * rb, a_end = ge * rb;
      const int seg_row0 = static_cast<int>(gs - r0);
      for (long long off = a_beg; off < a_end;) {
        const long long step = first ? FS : SA;
        first = false;
        const int idx = cs.index;
        // consumer_wait
        if (peeked) {
          peeked = false;
        } else {
          const long long w0 = tl ? clock64() : 0;
          if (!wait_parity<kWatchdog>(&full[idx], cs.phase, p, abort_flag, 0, idx, cs.count)) return false;
          if (tl) {
            cwait += clock64() - w0;
            if (cs.count == 0) tl[1] = ptx::get_sreg_globaltimer();
          }
        }
        const long long sbytes = min(step, a_end - off);
        const unsigned units = static_cast<unsigned>(sbytes) / 16;
        const uint8_t* sa = ring + static_cast<size_t>(idx) * p.stage_stride;
        const uint8_t* ssf = sa + SA + ((off / 8) & 15);
        const unsigned rel = static_cast<unsigned>(off - a_beg);  // bytes from the segment's start
        // Each warp takes a contiguous run of the stage's units (whole 512-byte steps), so a warp stays
        // in one row for several steps when rows are long.
        const unsigned per_warp = ((units + nw - 1) / nw + (32 * kUnits - 1)) & ~(32u * kUnits - 1);
        const unsigned u_end = min(units, (cw + 1) * per_warp);
        if (aligned) {
          // Rows of a multiple of 512 bytes: every 512-byte step of the warp (32 units, one per lane)
          // lies in one row, so the step's row q and first unit j0 in that row are warp-uniform, lane l
          // takes unit j0 + l, its vector slots are j0's plus a per-lane constant, and every address
          // steps by a constant. No per-lane row arithmetic, no segmented reductions.
          unsigned ub = cw * per_warp;
          if (ub < u_end) {
            const RowPos at = row_of_block((rel + 16 * ub) >> 5, p);  // rel + 16 ub: a multiple of 512
            unsigned q = at.q;
            unsigned j0 = 2 * at.r;
            const unsigned upr = 2 * p.row_div;  // units per row, a multiple of 32
            // Lane pointers, stepped by one 512-byte step (32 units) at a time; the vector ones go back
            // to the row's start when the step crosses into the next row.
            const uint8_t* ap = sa + 16 * (ub + lane);
            const uint8_t* fp = ssf + 2 * (ub + lane);
            const uint4* bp = bslots + kSlotsPerUnit * j0;
            const float2* sp = sfb2 + j0 + lane;
            for (; ub < u_end; ub += 32 * kUnits) {
              float contrib[kUnits];
              int row[kUnits];
#pragma unroll
              for (int i = 0; i < kUnits; ++i) {
                uint4 bv[kSlotsPerUnit];
#pragma unroll
                for (unsigned k = 0; k < kSlotsPerUnit; ++k) bv[k] = bp[bsl[k]];
                const float c = unit_dot_regs(*reinterpret_cast<const uint4*>(ap),
                                              bv, *reinterpret_cast<const uint16_t*>(fp), *sp, tlo);
                // Whole steps: u_end is a multiple of 32, so a step is valid for the whole warp or not.
                contrib[i] = ub + 32 * i < u_end ? c : 0.0f;
                row[i] = seg_row0 + static_cast<int>(q);
                ap += 512;
                fp += 64;
                j0 += 32;
                if (j0 == upr) {
                  j0 = 0;
                  ++q;
                  bp = bslots;
                  sp = sfb2 + lane;
                } else {
                  bp += 32 * kSlotsPerUnit;
                  sp += 32;
                }
              }
#pragma unroll
              for (int i = 0; i < kUnits; ++i) {
                if (ub + 32 * i < u_end) {
                  if (row[i] != wrow) {
                    flush();
                    wrow = row[i];
                  }
                  acc += contrib[i];
                }
              }
            }
          }
        } else {
        // Row of the warp's last unit: the row the invalid lanes report (they contribute 0), so a
        // segmented reduction never touches a row outside this segment.
        const unsigned qlast = (rel + 16 * (u_end - 1)) / static_cast<unsigned>(rb);
        for (unsigned ub = cw * per_warp; ub < u_end; ub += 32 * kUnits) {
          // kUnits independent units per lane (ILP): lane handles ub + 32 i + lane, i < kUnits.
          float contrib[kUnits];
          int row[kUnits];
          // Row and unit-within-row of unit ub + lane: o / row_bytes via o / 32 / row_div with one
          // correction step; the later units (32 units = 512 bytes further each) step from it.
          const unsigned o = rel + 16 * (ub + lane);
          const RowPos at = row_of_block(o >> 5, p);
          unsigned q = at.q, jj = 2 * at.r + ((o >> 4) & 1);
          const unsigned upr = 2 * p.row_div;  // units per row
#pragma unroll
          for (int i = 0; i < kUnits; ++i) {
            if (i > 0) {
              jj += 32;
              while (jj >= upr) {  // once for rows of >= 512 bytes
                jj -= upr;
                ++q;
              }
            }
            const unsigned u = ub + 32 * i + lane;
            const bool valid = u < u_end;
            // Invalid lanes read a real unit (the warp's first) and contribute 0, so the compiler can
            // interleave the units without branches.
            const unsigned uu = valid ? u : ub;
            const unsigned j = valid ? jj : 0u;
            const float c = unit_dot(sa + 16 * uu, ssf + 2 * uu, bslots, sfb2, j, tlo);
            contrib[i] = valid ? c : 0.0f;
            row[i] = seg_row0 + static_cast<int>(valid ? q : qlast);
          }
#pragma unroll
          for (int i = 0; i < kUnits; ++i) {
            const int rf = __shfl_sync(0xffffffffu, row[i], 0);
            const int rl = __shfl_sync(0xffffffffu, row[i], 31);
            if (rf == rl) {
              if (rf != wrow) {
                flush();
                wrow = rf;
              }
              acc += contrib[i];
            } else {
              // A row boundary inside these 512 bytes: segmented reduction, heads add.
              flush();
              wrow = -1;
              float v = contrib[i];
#pragma unroll
              for (int d = 1; d < 32; d <<= 1) {
                const float t = __shfl_down_sync(0xffffffffu, v, d);
                const int tr = __shfl_down_sync(0xffffffffu, row[i], d);
                if (lane + d < 32 && tr == row[i]) v += t;
              }
              const int prev = __shfl_up_sync(0xffffffffu, row[i], 1);
              if (lane == 0 || prev != row[i]) part[row[i]] += v;
            }
          }
        }
        }
        // consumer_release: the whole warp is done reading this stage.
        __syncwarp();
        if (lane == 0) ptx::mbarrier_arrive(&empty[idx]);
        off += sbytes;
        cs.advance(S);
      }
    }
    flush();
    if (dn == nullptr) {
      // The static range: every warp's row sums are in after the barrier; one row per thread.
      consumer_bar_sync(nct);
      for (int i = ct; i < rows; i += nct) {
        float sum = 0.0f;
        for (int w = 0; w < nw; ++w) sum += base[w * cap + i];
        p.c[r0 + i] = __float2half_rn(sum);
      }
    } else {
      // A chunk: the last warp to finish it sums and writes c (the others go on at once).
      __syncwarp();
      int last = 0;
      if (lane == 0) {
        __threadfence_block();  // this warp's row sums before its count
        last = atomicAdd(dn, 1) == nw - 1;
      }
      if (__shfl_sync(0xffffffffu, last, 0)) {
        __threadfence_block();  // every warp's row sums after the last count
        for (int i = lane; i < rows; i += 32) {
          float sum = 0.0f;
          for (int w = 0; w < nw; ++w) sum += base[w * cap + i];
          p.c[r0 + i] = __float2half_rn(sum);
        }
        __syncwarp();
        if (lane == 0) atomicExch(dn, 0);
      }
    }
    return true;
  };

  // The static range first, then the chunks the producer hands over (one call site: the inner loop is
  // inlined once).
  for (bool static_left = s0 < s1;;) {
    long long r0, r1, batch = -1;
    bool peeked = false;
    float* base = rowsum0;
    unsigned cap = p.area0_rows;
    int* dn = nullptr;
    if (static_left) {
      static_left = false;
      r0 = s0;
      r1 = s1;
    } else {
      if (!dynamic) break;
      // Peek at the next stage: its header names the chunk the producer streams next (0 rows: none).
      const int idx = cs.index;
      const long long w0 = tl ? clock64() : 0;
      if (!wait_parity<kWatchdog>(&full[idx], cs.phase, p, abort_flag, 0, idx, cs.count)) return;
      if (tl) {
        cwait += clock64() - w0;
        if (cs.count == 0) tl[1] = ptx::get_sreg_globaltimer();
      }
      const RangeRec rec = hdr[idx];
      if (rec.rows == 0) {
        __syncwarp();
        if (lane == 0) ptx::mbarrier_arrive(&empty[idx]);
        cs.advance(S);
        break;
      }
      r0 = rec.r0;
      r1 = rec.r0 + rec.rows;
      batch = rec.batch;
      peeked = true;
      base = rowsum1 + static_cast<size_t>(area) * nw * p.area1_rows;
      cap = p.area1_rows;
      dn = done + area;
      if (++area == p.areas) area = 0;
      ++chunks_done;
    }
    if (!consume_range(r0, r1, batch, peeked, base, cap, dn)) return;
  }
  if (tl) {
    tl[2] = ptx::get_sreg_globaltimer();
    tl[3] = chunks_done;
    tl[5] = static_cast<unsigned long long>(cwait);
    tl[7] = static_cast<unsigned long long>(cs.count);
  }
}

// ---- the plain reference kernel -----------------------------------------------------------------
__device__ float ref_e2m1(unsigned nib) {
  const float mag[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  const float v = mag[nib & 7];
  return (nib & 8) ? -v : v;
}
__device__ float ref_e4m3(unsigned x) {
  const int e = (x >> 3) & 15, mt = x & 7;
  const float mag = e == 0 ? ldexpf(mt / 8.0f, -6) : ldexpf(1.0f + mt / 8.0f, e - 7);
  return (x & 0x80) ? -mag : mag;
}

__global__ void gemv_reference_kernel(const uint8_t* a, const uint8_t* sfa, const uint8_t* b,
                                      const uint8_t* sfb, __half* c, long long m, long long k,
                                      long long rows_total) {
  const long long g = static_cast<long long>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (g >= rows_total) return;
  const long long batch = g / m, rb = k / 2, sb = k / 16;
  // Each product is exact in f32 (2 + 4 + 2 + 4 significant bits); the sum is kept in f64, so large
  // cancelling terms (scales across E4M3's whole range) cannot exceed the tolerance.
  double sum = 0.0;
  for (long long j = lane; j < rb; j += 32) {
    const unsigned av = a[g * rb + j], bv = b[batch * rb + j];
    const float sa = ref_e4m3(sfa[g * sb + j / 8]);
    const float sbv = ref_e4m3(sfb[batch * sb + j / 8]);
    sum += static_cast<double>(ref_e2m1(av & 15) * sa * (ref_e2m1(bv & 15) * sbv));
    sum += static_cast<double>(ref_e2m1(av >> 4) * sa * (ref_e2m1(bv >> 4) * sbv));
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  if (lane == 0) c[g] = __float2half_rn(static_cast<float>(sum));
}

// ---- host side ----------------------------------------------------------------------------------
struct DeviceInfo {
  int device = -1;
  model::Capacity cap;
  int major = 0;
  bool blackwell = false;
};

GemvResult cuda_error(const char* what, cudaError_t e) {
  return GemvResult{GemvStatus::kCudaError, std::string(what) + ": " + cudaGetErrorString(e)};
}

GemvResult device_info(DeviceInfo* out) {
  static std::mutex mu;
  static DeviceInfo cached[16];
  int dev = 0;
  if (cudaError_t e = cudaGetDevice(&dev); e != cudaSuccess) return cuda_error("cudaGetDevice", e);
  std::lock_guard<std::mutex> lock(mu);
  if (dev < 16 && cached[dev].device == dev) {
    *out = cached[dev];
    return {};
  }
  cudaDeviceProp prop{};
  if (cudaError_t e = cudaGetDeviceProperties(&prop, dev); e != cudaSuccess)
    return cuda_error("cudaGetDeviceProperties", e);
  DeviceInfo info;
  info.device = dev;
  info.major = prop.major;
  info.blackwell = prop.major >= 10;
  const model::Arch* arch = model::find_arch(info.blackwell ? "sm_100a" : "sm_90a");
  info.cap = arch->cap;
  info.cap.sms = prop.multiProcessorCount;
  info.cap.smem_per_block = static_cast<int64_t>(prop.sharedMemPerBlockOptin);
  info.cap.smem_per_sm = static_cast<int64_t>(prop.sharedMemPerMultiprocessor);
  if (dev < 16) cached[dev] = info;
  *out = info;
  return {};
}

model::GemvHints hints_of(const GemvTuning& t, const DeviceInfo& info) {
  model::GemvHints h;
  h.vector_elem_bytes = model::gemv_vector_elem_bytes(info.major);  // kVecBytesPerElem of the code that runs there
  h.stage_a_bytes = t.stage_a_bytes;
  h.consumer_warps = t.consumer_warps;
  h.max_stages = t.max_stages;
  h.ctas_per_sm = t.ctas_per_sm;
  h.waves = t.waves;
  h.static_permille = t.static_permille;
  h.chunk_bytes = t.chunk_bytes;
  h.first_stage_bytes = t.first_stage_bytes;
  h.claim_lead_stages = t.claim_lead_stages;
  return h;
}

// The plan on the current device (its capacities, the vector width of the code that runs there);
// kNoPlan with the planner's reason when there is none (*plan still says why).
GemvResult device_plan(const model::GemvShape& shape, const GemvTuning& tuning, DeviceInfo* info,
                       model::GemvPlan* plan) {
  if (GemvResult r = device_info(info); !r) return r;
  *plan = model::plan_gemv(shape, info->cap, hints_of(tuning, *info));
  if (!plan->ok) return GemvResult{GemvStatus::kNoPlan, plan->why};
  return {};
}

// The chunk counter of (device, stream): one 4-byte word per stream, allocated and zeroed (in the
// stream's order) on first use. Each launch leaves it at 0 (its last claim resets it), so launches in
// one stream share it; launches on different streams get different counters.
GemvResult chunk_counter(int device, cudaStream_t stream, unsigned** out) {
  static std::mutex mu;
  static std::map<std::pair<int, cudaStream_t>, unsigned*> counters;
  std::lock_guard<std::mutex> lock(mu);
  const auto key = std::make_pair(device, stream);
  if (auto it = counters.find(key); it != counters.end()) {
    *out = it->second;
    return {};
  }
  unsigned* c = nullptr;
  if (cudaError_t e = cudaMalloc(&c, sizeof(unsigned)); e != cudaSuccess) return cuda_error("cudaMalloc", e);
  if (cudaError_t e = cudaMemsetAsync(c, 0, sizeof(unsigned), stream); e != cudaSuccess)
    return cuda_error("cudaMemsetAsync", e);
  counters.emplace(key, c);
  *out = c;
  return {};
}

// The kernel's parameters for `x` under `plan` (pointers as given; counter, watchdog and timeline
// left for the caller): what a launch passes, and what pipesim's PTX launch file lays out.
Params make_params(const GemvArgs& x, const model::GemvPlan& plan) {
  Params p{};
  p.a = static_cast<const uint8_t*>(x.a);
  p.sfa = static_cast<const uint8_t*>(x.sfa);
  p.b = static_cast<const uint8_t*>(x.b);
  p.sfb = static_cast<const uint8_t*>(x.sfb);
  p.c = static_cast<__half*>(x.c);
  p.m = x.m;
  p.rows_total = plan.rows_total;
  p.sfa_total = x.l * x.m * (x.k / 16);
  p.grid = plan.grid;
  p.k = static_cast<int>(x.k);
  p.row_bytes = static_cast<unsigned>(x.k / 2);
  p.row_div = static_cast<unsigned>(x.k / 64);
  const unsigned long long magic = (1ULL << 32) / p.row_div;
  p.row_magic = static_cast<unsigned>(magic > 0xFFFFFFFFULL ? 0xFFFFFFFFULL : magic);
  p.stages = plan.stages;
  p.stage_a_bytes = static_cast<unsigned>(plan.stage_a_bytes);
  p.stage_stride = static_cast<unsigned>(plan.stage_stride);
  p.off_full = static_cast<unsigned>(plan.off_full);
  p.off_empty = static_cast<unsigned>(plan.off_empty);
  p.off_flag = static_cast<unsigned>(plan.off_flag);
  p.off_vfull = static_cast<unsigned>(plan.off_vfull);
  p.off_vempty = static_cast<unsigned>(plan.off_vempty);
  p.off_vraw = static_cast<unsigned>(plan.off_vraw);
  p.vraw_bytes = static_cast<unsigned>(plan.vraw_bytes);
  p.sfb_total = x.l * (x.k / 16);
  p.off_ring = static_cast<unsigned>(plan.off_ring);
  p.off_b = static_cast<unsigned>(plan.off_b);
  p.off_rowsum = static_cast<unsigned>(plan.off_rowsum);
  p.b_buffer_bytes = static_cast<unsigned>(plan.b_buffer_bytes);
  p.b_buffers = plan.b_buffers;
  p.static_rows = plan.static_rows;
  p.chunk_rows = plan.chunk_rows;
  p.chunks = plan.chunks;
  p.chunks_first_batch = plan.chunks_first_batch;
  p.chunks_per_batch = plan.chunks_per_batch;
  p.first_stage_bytes = static_cast<unsigned>(plan.first_stage_bytes);
  p.off_hdr = static_cast<unsigned>(plan.off_hdr);
  p.off_rowsum1 = static_cast<unsigned>(plan.off_rowsum1);
  p.off_tick = static_cast<unsigned>(plan.off_tick);
  p.off_tfull = static_cast<unsigned>(plan.off_tfull);
  p.off_tempty = static_cast<unsigned>(plan.off_tempty);
  p.off_go = static_cast<unsigned>(plan.off_go);
  p.off_done = static_cast<unsigned>(plan.off_done);
  p.area0_rows = static_cast<unsigned>(plan.area0_rows);
  p.area1_rows = static_cast<unsigned>(plan.area1_rows);
  p.areas = static_cast<unsigned>(plan.areas);
  p.claim_lead_bytes = plan.claim_lead_stages * plan.stage_a_bytes;
  p.counter = nullptr;
  return p;
}

template <int kPhase, bool kWatchdog, int kUnits>
GemvResult launch_tma(const GemvArgs& x, cudaStream_t stream, const GemvTuning& tuning,
                      unsigned long long watchdog_ns, GemvWatchdogHit* hit_dev) {
  if (GemvResult v = validate_gemv_args(x); !v) return v;
  DeviceInfo info;
  model::GemvPlan plan;
  if (GemvResult r = device_plan({x.m, x.k, x.l}, tuning, &info, &plan); !r) return r;
  if (plan.consumer_warps > kMaxConsumerWarps)
    return GemvResult{GemvStatus::kNoPlan, "at most 16 consumer warps"};
  Params p = make_params(x, plan);
  if (plan.chunks > 0) {
    if (GemvResult r = chunk_counter(info.device, stream, &p.counter); !r) return r;
  }
  p.watchdog_ns = watchdog_ns;
  p.hit = hit_dev;
  p.timeline = tuning.timeline;

  auto kernel = gemv_tma_kernel<kPhase, kWatchdog, kUnits>;
  static std::mutex mu;
  static int64_t smem_set[16] = {};
  {
    std::lock_guard<std::mutex> lock(mu);
    const int d = info.device < 16 ? info.device : 15;
    if (smem_set[d] < plan.smem_bytes) {
      if (cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                               static_cast<int>(plan.smem_bytes));
          e != cudaSuccess)
        return cuda_error("cudaFuncSetAttribute", e);
      smem_set[d] = plan.smem_bytes;
    }
  }
  kernel<<<static_cast<unsigned>(plan.grid), static_cast<unsigned>(plan.threads),
           static_cast<size_t>(plan.smem_bytes), stream>>>(p);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return cuda_error("gemv_tma_kernel launch", e);
  return {};
}

}  // namespace

GemvResult gemv_nvfp4(const GemvArgs& args, void* stream, const GemvTuning& tuning) {
  if (tuning.units_per_lane == 1)
    return launch_tma<1, false, 1>(args, static_cast<cudaStream_t>(stream), tuning, 0, nullptr);
  if (tuning.units_per_lane == 4)
    return launch_tma<1, false, 4>(args, static_cast<cudaStream_t>(stream), tuning, 0, nullptr);
  return launch_tma<1, false, 2>(args, static_cast<cudaStream_t>(stream), tuning, 0, nullptr);
}

namespace {

template <int kPhase, bool kWatchdog, int kUnits>
GemvResult resources_of(int64_t m, int64_t k, int64_t l, const GemvTuning& tuning, GemvResources* out) {
  DeviceInfo info;
  model::GemvPlan plan;
  if (GemvResult r = device_plan({m, k, l}, tuning, &info, &plan); !r) return r;
  auto kernel = gemv_tma_kernel<kPhase, kWatchdog, kUnits>;
  cudaFuncAttributes a{};
  if (cudaError_t e = cudaFuncGetAttributes(&a, kernel); e != cudaSuccess) return cuda_error("cudaFuncGetAttributes", e);
  GemvResources r;
  r.binary_version = a.binaryVersion;
  r.regs = a.numRegs;
  r.static_smem = static_cast<int64_t>(a.sharedSizeBytes);
  r.local_bytes = static_cast<int64_t>(a.localSizeBytes);
  r.max_threads = a.maxThreadsPerBlock;
  r.dynamic_smem = plan.smem_bytes;
  r.threads = plan.threads;
  r.grid = plan.grid;
  // Both queries answer within the kernel's opt-in attribute (48 KiB until set): raise it to the
  // device's opt-in limit (never lower than a launch may have set it) so they report the hardware's.
  if (cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           static_cast<int>(info.cap.smem_per_block - r.static_smem));
      e != cudaSuccess)
    return cuda_error("cudaFuncSetAttribute", e);
  size_t avail = 0;
  if (cudaError_t e = cudaOccupancyAvailableDynamicSMemPerBlock(&avail, kernel, 1, static_cast<int>(plan.threads));
      e != cudaSuccess)
    return cuda_error("cudaOccupancyAvailableDynamicSMemPerBlock", e);
  r.max_dynamic_smem = static_cast<int64_t>(avail);
  if (cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&r.ctas_per_sm, kernel, static_cast<int>(plan.threads),
                                                                    static_cast<size_t>(plan.smem_bytes));
      e != cudaSuccess)
    return cuda_error("cudaOccupancyMaxActiveBlocksPerMultiprocessor", e);
  *out = r;
  return {};
}

}  // namespace

GemvResult gemv_nvfp4_resources(int64_t m, int64_t k, int64_t l, GemvResources* out, const GemvTuning& tuning) {
  if (!out) return GemvResult{GemvStatus::kNullPointer, "gemv_nvfp4_resources: out is null"};
  if (tuning.units_per_lane == 1) return resources_of<1, false, 1>(m, k, l, tuning, out);
  if (tuning.units_per_lane == 4) return resources_of<1, false, 4>(m, k, l, tuning, out);
  return resources_of<1, false, 2>(m, k, l, tuning, out);
}

model::GemvPlan gemv_nvfp4_plan(int64_t m, int64_t k, int64_t l, const GemvTuning& tuning) {
  DeviceInfo info;
  model::GemvPlan p;
  if (GemvResult r = device_plan({m, k, l}, tuning, &info, &p); !r) p.why = r.message;
  return p;
}

std::string gemv_nvfp4_launch_json(int64_t m, int64_t k, int64_t l, const std::string& arch_name, bool broken_producer_phase) {
  const model::Arch* arch = model::find_arch(arch_name);
  if (!arch) return {};
  DeviceInfo info;  // the table's device: no GPU is asked
  info.cap = arch->cap;
  info.major = arch->has_tcgen05 ? 10 : 9;
  info.blackwell = arch->has_tcgen05;
  const model::GemvPlan plan = model::plan_gemv({m, k, l}, info.cap, hints_of(GemvTuning{}, info));
  if (!plan.ok) return {};
  // Buffers at fixed, readable addresses, 256-byte aligned one after another.
  struct Buffer { const char* name; int64_t bytes; uint64_t address; };
  Buffer buffers[] = {{"a", l * m * k / 2, 0}, {"sfa", l * m * k / 16, 0}, {"b", l * k / 2, 0},
                      {"sfb", l * k / 16, 0}, {"c", l * m * 2, 0}, {"counter", 4, 0}};
  uint64_t at = 0x7f0000000000ULL;
  for (Buffer& b : buffers) {
    b.address = at;
    at += (static_cast<uint64_t>(b.bytes) + 255) / 256 * 256;
  }
  auto ptr = [&](int i) { return reinterpret_cast<void*>(buffers[i].address); };
  const GemvArgs x{ptr(0), ptr(1), ptr(2), ptr(3), ptr(4), m, k, l};
  Params p = make_params(x, plan);
  if (plan.chunks > 0) p.counter = static_cast<unsigned*>(ptr(5));
  if (broken_producer_phase) p.watchdog_ns = 1000000000000ULL;  // the watchdog build: it never fires in a model run
  std::string hex;
  const auto* bytes = reinterpret_cast<const unsigned char*>(&p);
  for (size_t i = 0; i < sizeof p; ++i) {
    static const char* d = "0123456789abcdef";
    hex += d[bytes[i] >> 4];
    hex += d[bytes[i] & 15];
  }
  // The instantiations gemv_nvfp4 and gemv_nvfp4_watchdog(broken) launch: <1, false, 2> and <0, true, 2>.
  std::string out = "{\n";
  out += std::string("  \"entry\": \"gemv_tma_kernelILi") + (broken_producer_phase ? "0ELb1" : "1ELb0") + "ELi2EE\",\n";
  out += "  \"arch\": \"" + arch_name + "\",\n";
  out += "  \"grid\": " + std::to_string(plan.grid) + ", \"block\": " + std::to_string(plan.threads) +
         ", \"dynamic_smem\": " + std::to_string(plan.smem_bytes) + ",\n";
  out += "  \"buffers\": [\n";
  for (size_t i = 0; i < std::size(buffers); ++i) {
    char addr[32];
    std::snprintf(addr, sizeof addr, "0x%llx", static_cast<unsigned long long>(buffers[i].address));
    out += std::string("    {\"name\": \"") + buffers[i].name + "\", \"bytes\": " + std::to_string(buffers[i].bytes) +
           ", \"address\": \"" + addr + "\"}" + (i + 1 < std::size(buffers) ? ",\n" : "\n");
  }
  out += "  ],\n  \"params\": [{\"index\": 0, \"hex\": \"" + hex + "\"}]\n}\n";
  return out;
}

GemvResult gemv_nvfp4_watchdog(const GemvArgs& args, void* stream, bool broken_producer_phase,
                               unsigned long long watchdog_ns, GemvWatchdogHit* hit) {
  GemvWatchdogHit* dev = nullptr;
  if (cudaError_t e = cudaMalloc(&dev, sizeof(GemvWatchdogHit)); e != cudaSuccess)
    return cuda_error("cudaMalloc", e);
  GemvWatchdogHit init{};
  cudaMemcpy(dev, &init, sizeof init, cudaMemcpyHostToDevice);
  auto s = static_cast<cudaStream_t>(stream);
  GemvResult r = broken_producer_phase ? launch_tma<0, true, 2>(args, s, {}, watchdog_ns, dev)
                                       : launch_tma<1, true, 2>(args, s, {}, watchdog_ns, dev);
  if (r) {
    if (cudaError_t e = cudaStreamSynchronize(s); e != cudaSuccess) r = cuda_error("watchdog run", e);
  }
  // A run the watchdog stopped left its chunk counter wherever the claims were: zero it.
  DeviceInfo info;
  unsigned* counter = nullptr;
  if (device_info(&info) && chunk_counter(info.device, s, &counter)) {
    cudaMemsetAsync(counter, 0, sizeof(unsigned), s);
    cudaStreamSynchronize(s);
  }
  cudaMemcpy(hit, dev, sizeof *hit, cudaMemcpyDeviceToHost);
  cudaFree(dev);
  return r;
}

GemvResult gemv_nvfp4_reference(const GemvArgs& x, void* stream) {
  if (GemvResult v = validate_gemv_args(x); !v) return v;
  const long long rows = x.l * x.m;
  constexpr int kWarps = 8;
  const long long blocks = (rows + kWarps - 1) / kWarps;
  gemv_reference_kernel<<<static_cast<unsigned>(blocks), 32 * kWarps, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const uint8_t*>(x.a), static_cast<const uint8_t*>(x.sfa), static_cast<const uint8_t*>(x.b),
      static_cast<const uint8_t*>(x.sfb), static_cast<__half*>(x.c), x.m, x.k, rows);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return cuda_error("reference kernel launch", e);
  return {};
}

}  // namespace pipesim::kernels
