// Batched block-scaled NVFP4 GEMV (seed 002): c[m, l] = sum_k a[m,k,l] sfa[m,k/16,l] b[k,l] sfb[k/16,l].
//
// Memory layout (all row-major, batch outermost, K contiguous):
//   a   : l x m x k/2   bytes, two E2M1 values per byte, element 2j in the low nibble, 2j+1 in the high
//   sfa : l x m x k/16  bytes, FP8 E4M3, one scale per 16 consecutive k
//   b   : l x k/2       bytes, like a with m = 1
//   sfb : l x k/16      bytes
//   c   : l x m         fp16
// This header is plain C++ (no CUDA headers): the host-only parts (validation, decoders, the CPU
// reference) build without nvcc; the launchers are defined in gemv_nvfp4.cu.
#pragma once

#include <cstdint>
#include <string>

#include "model/gemv_plan.hpp"

namespace pipesim::kernels {

struct GemvArgs {
  const void* a = nullptr;
  const void* sfa = nullptr;
  const void* b = nullptr;
  const void* sfb = nullptr;
  void* c = nullptr;
  int64_t m = 0;
  int64_t k = 0;
  int64_t l = 0;
};

enum class GemvStatus {
  kOk = 0,
  kBadShape,      // k not a positive multiple of 64, m or l < 1, sizes out of range
  kNullPointer,   // one of a, sfa, b, sfb, c is null
  kMisaligned,    // a, sfa, b not 16-byte aligned, sfb not 4-byte aligned, c not 2-byte aligned
  kNoPlan,        // the planner found no shared-memory layout (k too large for the TMA kernel)
  kCudaError,     // a CUDA call failed (the message names it)
};

struct GemvResult {
  GemvStatus status = GemvStatus::kOk;
  std::string message;
  explicit operator bool() const { return status == GemvStatus::kOk; }
};

const char* to_string(GemvStatus s);

// Checks shapes and pointers; nothing is launched. The message says what is wrong.
GemvResult validate_gemv_args(const GemvArgs& args);

// --- Decoders (exact) -------------------------------------------------------------------------
// E2M1: sign, 2 exponent bits (bias 1), 1 mantissa bit: 0, 0.5, 1, 1.5, 2, 3, 4, 6 and negatives.
double decode_e2m1(uint8_t nibble);
// E4M3 (FN): sign, 4 exponent bits (bias 7), 3 mantissa bits, subnormals, no infinities;
// S.1111.111 is NaN. Largest finite 448, smallest subnormal 2^-9.
double decode_e4m3(uint8_t byte);

// CPU reference in double precision (Eigen, threaded over row blocks). out has l*m entries,
// out[batch * m + row]. Host pointers with the device layout above.
void gemv_reference_cpu(const uint8_t* a, const uint8_t* sfa, const uint8_t* b, const uint8_t* sfb,
                        int64_t m, int64_t k, int64_t l, double* out);

// --- Device launchers (gemv_nvfp4.cu; only where PIPESIM_HAVE_CUDA) ------------------------------
// The TMA-pipelined, warp-specialized kernel. Validates first; launches nothing on a bad argument.
// `stream` is a cudaStream_t.
struct GemvTuning {
  int64_t stage_a_bytes = 0;  // 0: the planner's choice
  int consumer_warps = 0;
  int max_stages = 0;
  int ctas_per_sm = 0;
  int units_per_lane = 0;     // 0 or 2: two 32-element units per lane per step; 1: one; 4: four
  int waves = 0;              // 0: the planner's choice
  unsigned long long* timeline = nullptr;  // device array of 10 * grid (instrumentation), per CTA:
      // %globaltimer at entry, first full stage, end; chunks it took; SM id; consumer warp 1's cycles
      // waiting for full stages; the producer's cycles waiting for free slots; stages consumed;
      // %globaltimer at the producer's first issue and when the consumers saw the first vector land
  int static_permille = -1;   // share of rows split statically, 1/1000 (-1: the planner's choice)
  int64_t chunk_bytes = 0;    // A bytes per dynamic chunk (0: one stage)
  int64_t first_stage_bytes = 0;  // A bytes of a CTA's first stage (0: a full stage)
  int claim_lead_stages = 0;  // stages before the static range's end the claims start (0: the planner's)
};
GemvResult gemv_nvfp4(const GemvArgs& args, void* stream, const GemvTuning& tuning = {});

// The launch gemv_nvfp4 gives the TMA kernel for m x k x l on architecture `arch` ("sm_90a",
// "sm_100a") with the architecture table's capacities, as pipesim's PTX launch file (docs/ptx.md):
// entry, grid, block, dynamic shared memory, buffers at fixed addresses and the parameter bytes.
// broken_producer_phase: the watchdog build's broken instantiation. Needs no GPU; "" without a plan.
std::string gemv_nvfp4_launch_json(int64_t m, int64_t k, int64_t l, const std::string& arch,
                                   bool broken_producer_phase = false);

// The plan gemv_nvfp4 uses on the current device (capacities read from it).
model::GemvPlan gemv_nvfp4_plan(int64_t m, int64_t k, int64_t l, const GemvTuning& tuning = {});

// What the loaded binary of the kernel gemv_nvfp4 launches (with `tuning`) asks of the current device,
// as the CUDA runtime reports it, beside the plan's request: the facts `pipesim budget --gemv MxKxL
// --regs R` must agree with (docs/budget.md, "The GEMV").
struct GemvResources {
  int binary_version = 0;         // cudaFuncAttributes::binaryVersion (90: sm_90 SASS)
  int regs = 0;                   // numRegs
  int64_t static_smem = 0;        // sharedSizeBytes
  int64_t local_bytes = 0;        // localSizeBytes (spills)
  int max_threads = 0;            // maxThreadsPerBlock
  int64_t dynamic_smem = 0;       // requested at launch: the plan's smem_bytes
  int64_t threads = 0, grid = 0;  // the plan's launch
  int64_t max_dynamic_smem = 0;   // cudaOccupancyAvailableDynamicSMemPerBlock(kernel, 1 CTA, threads)
  int ctas_per_sm = 0;            // cudaOccupancyMaxActiveBlocksPerMultiprocessor at the plan's launch
};
GemvResult gemv_nvfp4_resources(int64_t m, int64_t k, int64_t l, GemvResources* out, const GemvTuning& tuning = {});

// The plain CUDA-core reference kernel (one warp per row, f32 accumulation).
GemvResult gemv_nvfp4_reference(const GemvArgs& args, void* stream);

// Test hook: the same kernel built with a device watchdog (bounded mbarrier waits of watchdog_ns)
// and, when broken_producer_phase, the producer's pipeline state starting at phase 0 instead of 1.
// On a timeout the kernel stops and *hit describes the first wait that timed out.
struct GemvWatchdogHit {
  int fired = 0;        // number of waits that timed out
  int cta = -1;
  int warp = -1;        // 0: producer warp; 1..: consumer warps
  int barrier = -1;     // 0: full[], 1: empty[], 2: vfull[], 3: vempty[] (the vector pipeline)
  int stage = -1;       // ring index
  int parity = -1;      // parity waited for
  long long iteration = -1;  // the warp's pipeline iteration (stage counter)
};
GemvResult gemv_nvfp4_watchdog(const GemvArgs& args, void* stream, bool broken_producer_phase,
                               unsigned long long watchdog_ns, GemvWatchdogHit* hit);

}  // namespace pipesim::kernels
