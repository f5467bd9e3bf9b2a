// Budget checker: one GEMM configuration → every shared-memory buffer, the stage counts, TMEM columns,
// registers and occupancy, with errors for what cannot launch and warnings for hand-written byte
// counts that disagree with the footprints derived from the shapes (bug-catalog items 7, 8, 9).
//
// The configuration is plain data: the `pipesim budget` command fills it from flags, a scenario can
// fill it from its own key/value pairs through set_config_field (same keys as the flags).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/arch.hpp"
#include "model/footprint.hpp"
#include "model/registers.hpp"
#include "model/stages.hpp"

namespace pipesim::model {

// A byte count somebody wrote by hand for one operand, per CTA and per stage.
// Operand names: A, B, SFA, SFB, C (one epilogue buffer), LA, LU (LoRA down / up, one stage),
// VEC (all per-column epilogue vectors together), AB (A+B+SFA+SFB), LORA (LA+LU).
struct HandEstimate {
  std::string operand;
  int64_t bytes = 0;
};

enum class TmemAlloc { automatic, max, pow2 };

struct GemmConfig {
  std::string arch = "sm_100a";
  // MMA tile: the CTA pair's M under cta_group 2 (CUTLASS mma_tiler_mn), N, and K per stage
  // (0: CUTLASS's choice, 4 MMA instructions' K).
  int mma_m = 256;
  int mma_n = 128;
  int tile_k = 0;
  int cluster_m = 2;
  int cluster_n = 1;
  int cta_group = 0;  // 0: CUTLASS's choice (2 when mma_m == 256, else 1)
  OperandFormat a{Dtype::e2m1, Dtype::e4m3, 16};
  OperandFormat b{Dtype::e2m1, Dtype::e4m3, 16};
  Dtype c = Dtype::f16;
  std::optional<Dtype> sf;  // overrides the formats' scale type
  int sf_vec = 0;           // overrides the formats' vector (0: keep)
  // LoRA side operands of seed 001: LA [mma_m, R] (split along M), LU [mma_n, R] (split along N).
  int lora_rank = 0;
  int lora_stages = 0;
  Dtype lora_dtype = Dtype::f16;
  bool epilogue_tma = true;   // C staged in shared memory and stored by TMA
  int epilogue_stages = -1;   // -1: solver
  int epilogue_vectors = 0;   // per-column vectors in c dtype (seed: wcscale and bias = 2)
  int ab_stages = -1;         // -1: solver; else fixed by the kernel
  int acc_stages = -1;        // -1: CUTLASS's rule; else fixed (seed 001 uses 1)
  int occupancy = 1;
  enum class Solver { automatic, cutlass, seed } solver = Solver::automatic;
  int threads = 192;          // CUTLASS / seed: 4 epilogue + MMA + TMA warps
  int regs_per_thread = 0;    // 0: unknown
  std::vector<int> setmaxnreg;
  TmemAlloc tmem_alloc = TmemAlloc::automatic;
  std::vector<HandEstimate> hand;
};

// A whole decimal integer (spaces around allowed); nullopt otherwise.
std::optional<int64_t> parse_int(std::string_view s);
// "256x128x256" → {256, 128, 256}; x, X, × and * separate; nullopt when a part is not an integer.
std::optional<std::vector<int64_t>> parse_dims(std::string_view s);

// Sets one field from text, with the `pipesim budget` flag names (without dashes):
// arch, tile (MxN or MxNxK), cluster (M or MxN), cta-group, ab, a, b, c, sf, sf-vec, lora-rank,
// lora-stages, lora-dtype, epilogue (tma|none), epilogue-stages (auto|N), epilogue-vectors,
// ab-stages (auto|N), acc-stages (auto|N), occupancy, solver (auto|cutlass|seed), threads, regs, setmaxnreg (N,N,...),
// tmem-alloc (auto|max|pow2), hand (NAME=BYTES[,NAME=BYTES...], appends).
// Returns an error sentence, or "" when accepted.
std::string set_config_field(GemmConfig& cfg, std::string_view key, std::string_view value);

enum class Severity { note, warning, error };

struct Finding {
  Severity severity = Severity::note;
  std::string message;
};

// "note", "warning", "error".
const char* severity_name(Severity s);
bool has_severity(const std::vector<Finding>& findings, Severity s);
// 2: bad input or an error; 1: warnings; 0: notes at most.
int exit_code_of(bool bad_input, const std::vector<Finding>& findings);

struct BufferLine {
  std::string name;           // "A", "SFB", "C", "LU", "barriers", ...
  std::string what;           // how it was derived, e.g. "128 × 256 × 4 bit"
  int64_t bytes_per_stage = 0;
  int stages = 0;
  int64_t bytes = 0;          // bytes_per_stage × stages
  int64_t allocated = 0;      // after 1024-byte alignment
};

struct TmemRange {
  std::string name;
  int first = 0;
  int columns = 0;
};

struct Mismatch {
  std::string operand;
  int64_t hand = 0;
  int64_t derived = 0;
  double ratio = 0;                 // hand / derived
  std::vector<std::string> causes;  // likely causes; empty: unknown
  std::string message;              // the whole warning
};

struct OccupancyLimits {
  int by_threads = 0;
  int by_blocks = 0;
  int by_smem = 0;
  int by_regs = 0;   // 0: registers unknown
  int by_tmem = 0;   // 0: no TMEM
  int achieved = 0;  // min of the known limits
};

struct BudgetReport {
  GemmConfig config;            // as resolved (cta_group, tile_k, formats filled in)
  std::string arch_name;
  std::string arch_note;        // the table row's uncertainty, if any
  Capacity cap;
  bool device_capacity = false; // limits came from the GPU present, not the table
  int64_t solver_capacity = 0;  // what the stage solver divides
  bool valid = false;           // the configuration could be evaluated
  bool bad_input = false;       // invalid configuration (exit 2)
  MmaInfo mma;
  int sf_vec = 0;
  std::optional<Dtype> sf;
  AbFootprint ab;
  EpilogueTile epi;
  int64_t lora_la = 0, lora_lu = 0, vectors = 0;
  StageResult solved;           // the solver on the derived numbers
  std::optional<StageResult> solved_hand;  // the solver on the hand-written numbers
  int num_ab_stage = 0, num_c_stage = 0, num_acc_stage = 0, num_lora_stage = 0;  // in effect
  std::vector<BufferLine> buffers;
  int64_t total = 0;            // shared memory the CTA requests
  int64_t capacity = 0;         // per-block limit
  int64_t headroom = 0;         // capacity − total (negative: over)
  double percent = 0;
  TmemColumns tmem;
  std::vector<TmemRange> tmem_map;
  RegisterReport regs;
  OccupancyLimits occupancy;
  std::vector<Mismatch> mismatches;
  std::vector<Finding> findings;

  bool has(Severity s) const;
  // 0: fits, nothing to say; 1: warnings (hand-written estimates off, stages lost, occupancy not
  // reached, TMEM contention); 2: bad input or a configuration that cannot launch or run.
  int exit_code() const;
};

// check_registers, with its errors and warnings added to `findings` ("registers: ...").
RegisterReport register_findings(const RegisterConfig& rc, const Capacity& cap, std::vector<Finding>& findings);

// CTAs per SM that threads, blocks, shared memory (the request plus the driver's per-block reservation),
// registers and TMEM allow; a warning in `findings` where `occupancy` is not reached.
OccupancyLimits occupancy_limits(const Arch& arch, const Capacity& cap, int threads, int64_t smem_total,
                                 int64_t smem_capacity, const RegisterReport& regs, int tmem_requested, int occupancy,
                                 std::vector<Finding>& findings);

// `device`: the real limits of the GPU present (query_device_capacity), used instead of the table's
// capacities when given.
BudgetReport check_budget(const GemmConfig& cfg, const Capacity* device = nullptr);

// The human report: aligned tables of buffers, TMEM columns, registers, occupancy, then findings.
std::string format_report(const BudgetReport& r);

}  // namespace pipesim::model
