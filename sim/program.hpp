// The lowered scenario: a kernel's declarations plus one structured program per warp role.
// verify/ builds it from a scenario file; sim/lowering expands it, per (CTA, warp), into the
// primitive op stream (op.hpp) that both the engine and the device interpreter execute.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/arch.hpp"
#include "sim/external.hpp"
#include "sim/op.hpp"

namespace pipesim::sim {

struct SourceLoc {
  uint32_t line = 0;  // 1-based; 0 = no location
  uint32_t col = 0;   // 1-based
};

// A bad scenario discovered after parsing (a count evaluated out of range at run time, a
// division by zero, a barrier index past the array ...). Reported as file:line:col, exit 2.
struct ScenarioError : std::runtime_error {
  SourceLoc loc;
  ScenarioError(SourceLoc l, const std::string& msg) : std::runtime_error(msg), loc(l) {}
};

// ---------------------------------------------------------------- expressions
// Integer expressions in postfix form over 64-bit values. Scenario parameters are folded to
// constants by the front end; what remains reads environment slots (built-ins, loop variables,
// role-local lets).
enum class ExprCode : uint8_t {
  Const, Slot,
  Neg, Not, BitNot,
  Add, Sub, Mul, Div, Mod, Shl, Shr, BitAnd, BitOr, BitXor,
  Lt, Le, Gt, Ge, Eq, Ne, And, Or,
  Min, Max,  // binary functions min(a, b), max(a, b)
  Popcount,  // unary function popcount(a)
};

struct ExprInstr {
  ExprCode code = ExprCode::Const;
  int64_t value = 0;  // Const: the value; Slot: the slot index
};

struct Expr {
  std::vector<ExprInstr> code;
  SourceLoc loc;
  bool is_const() const { return code.size() == 1 && code[0].code == ExprCode::Const; }
  static Expr constant(int64_t v, SourceLoc l = {}) { return Expr{{{ExprCode::Const, v}}, l}; }
};

// Fixed environment slots, filled per (CTA, warp) before a role program starts.
enum BuiltinSlot : uint32_t {
  kSlotCtaId = 0,      // blockIdx.x (linear)
  kSlotClusterId,      // cluster index in the grid
  kSlotClusterRank,    // rank of this CTA in its cluster (%cluster_ctarank)
  kSlotWarp,           // warp index in the CTA
  kSlotWarpInRole,     // warp index relative to the role's first warp
  kSlotNumCtas,        // grid size
  kSlotNumClusters,
  kSlotClusterSize,
  kSlotNumSms,
  kSlotIsLeader,       // 1 on the leader CTA of a CTA pair (even rank) or when cta_group is 1
  kSlotPeerRank,       // cluster rank of the other CTA of the pair (own rank when cta_group is 1)
  kSlotNumTiles,       // the persistent scheduler's tile count (0 without a scheduler)
  kSlotLeaderRank,     // cluster rank of this CTA pair's leader (own rank when cta_group is 1)
  kNumBuiltinSlots,
};

// --------------------------------------------------------------- declarations
// `smem NAME[N]`: N 64-bit cells per CTA through which warps pass values (a scheduler's next tile);
// `store NAME[i] = v` and `load NAME[i]` (sim/engine_values.cpp checks the order: read_without_wait).
struct SmemArray {
  std::string name;
  uint32_t size = 1;
  uint32_t first = 0;  // its first cell in the CTA's flattened cells
  SourceLoc loc;
};

struct BarrierArray {
  std::string name;       // "full", or "ab.full" for a pipeline's arrays
  uint32_t size = 1;      // elements per CTA
  // Set: initialised with this arrival count (and fenced, cluster-synced) before any role
  // runs, as CUTLASS pipeline constructors do. Unset: the scenario must `init` it itself.
  std::optional<int64_t> init_count;
  int pipeline = -1;      // owning pipeline, or -1
  SourceLoc loc;
};

enum class PipelineKind : uint8_t {
  Async,      // PipelineAsync: threads -> threads
  TmaAsync,   // PipelineTmaAsync (Hopper): tma -> threads
  TmaUmma,    // PipelineTmaUmma (Blackwell): tma -> umma
  UmmaAsync,  // PipelineUmmaAsync: umma -> threads (accumulator -> epilogue)
  AsyncUmma,  // PipelineAsyncUmma: threads -> umma
  TmaStore,   // PipelineTmaStore: staging buffers drained by bulk stores (no mbarriers)
};
enum class ArrivalUnit : uint8_t { Threads, Warps, Warpgroups };
enum class StateKind : uint8_t { PipelineState, PipelineStateSimple };
enum class TailVariant : uint8_t { Cutlass45, Cutlass46, None };

// How many arrivals one side of a pipeline contributes per stage, and in what unit.
struct Participants {
  int64_t n = 1;
  ArrivalUnit unit = ArrivalUnit::Threads;
};

struct PipelineDecl {
  std::string name;
  PipelineKind kind = PipelineKind::Async;
  int64_t stages = 1;
  int64_t tx = 0;               // TmaAsync: bytes expected per stage per CTA (arrive.expect_tx)
  Participants producers{1, ArrivalUnit::Threads};
  Participants consumers{1, ArrivalUnit::Threads};
  // Cluster ranks whose empty barriers a consumer release arrives on (the CTAs that multicast
  // into this CTA's stage). Unset: own CTA only. Evaluated per CTA.
  std::optional<Expr> multicast;
  // Barrier array ids. TmaStore has no barrier arrays: both are UINT32_MAX (never an index
  // into Kernel::barriers; nothing may use them for that kind).
  uint32_t full = 0;
  uint32_t empty = 0;
  StateKind state = StateKind::PipelineState;
  int64_t producer_phase = 1;   // start phase of producer states (CUTLASS: 1)
  int64_t consumer_phase = 0;
  TailVariant tail = TailVariant::Cutlass46;
  SourceLoc loc;
};

// ----------------------------------------------------------------- statements
enum class StmtKind : uint8_t {
  Op,        // one raw primitive (op.hpp), operands below
  Pipe,      // a pipeline call: ab.producer_acquire, tma ab ...
  For,       // for var in begin .. end step s: body
  If,        // if cond: body else: else_body
  Let,       // slot = value
  SetState,  // ab.state producer|consumer index = .. phase = .. : override this warp's state
};

enum class PipeCall : uint8_t {
  ProducerAcquire, ProducerCommit, ProducerTail,
  ConsumerWait, ConsumerRelease,
  Tma,  // TMA load into the stage last acquired by this warp; bytes (default: pipeline tx)
        // and multicast mask (default: own CTA)
  Store,  // PipelineTmaStore: bulk store of the acquired staging buffer (bytes)
};

enum class Side : uint8_t { Producer, Consumer };

// A barrier operand: array id, element index, and the cluster rank for remote access.
struct BarOperand {
  uint32_t array = 0;
  Expr index = Expr::constant(0);
  std::optional<Expr> rank;  // unset: own CTA
};

struct Stmt {
  StmtKind kind = StmtKind::Op;
  uint32_t site = 0;          // Kernel::sites index
  // Op
  OpKind op = OpKind::Compute;
  std::optional<BarOperand> bar;
  // Named operands; which ones an op uses is listed in docs/scenario-language.md.
  std::optional<Expr> count, bytes, parity, phase, mask, ns, id, threads, n, expect, box, row_bytes;
  // Pipe / SetState
  uint32_t pipeline = 0;
  PipeCall call = PipeCall::ProducerAcquire;
  Side side = Side::Producer;
  std::optional<Expr> index;  // SetState
  std::optional<StateKind> state_kind;
  // SmemStore / SmemLoad: the cell (array = Kernel::smem index); SmemStore's value is `value`,
  // SmemLoad's destination environment slot is `slot`.
  std::optional<BarOperand> cell;
  // tcgen05
  model::MmaKind mma_kind = model::MmaKind::F16;
  std::optional<Expr> mma_m, mma_n, mma_k, cols;  // mma shape (Stmt::n is wait_group N)
  std::optional<Expr> cta_group;  // tcgen05 op: overrides Launch::cta_group for this instruction
  bool wgmma = false;              // Mma: a Hopper wgmma.mma_async (warpgroup-collective), not tcgen05.mma
  // For / Let
  uint32_t slot = 0;
  std::optional<Expr> begin, end, step, value;  // For: begin/end/step; Let: value; If: value=cond
  std::vector<Stmt> body, else_body;
};

// A source site: one statement of the scenario, for reports.
struct Site {
  SourceLoc loc;
  std::string what;  // "ab.producer_acquire", "wait", "compute" ...
  // Where the kernel's own source has it, when the file checked was compiled from it (a PTX
  // instruction's `.loc`): "gemv_nvfp4.cu:412:5"; empty for scenarios.
  std::string origin;
};

struct Role {
  std::string name;
  int warp_lo = 0, warp_hi = 0;  // inclusive range
  std::vector<Stmt> body;
  SourceLoc loc;
};

struct Launch {
  int64_t ctas = 1;
  int64_t cluster = 1;
  int64_t threads = 128;
  int64_t ctas_per_sm = 1;      // resident CTAs per SM (explicit, or from smem/regs/threads)
  int64_t smem = 0;             // dynamic + static shared memory per CTA, bytes (0: unknown)
  int64_t regs = 0;             // registers per thread (0: unknown)
  int64_t cta_group = 1;        // tcgen05 cta_group of the kernel (1 or 2)
  int64_t tiles = 0;            // persistent static scheduler: tiles (0: no scheduler)
  int warps() const { return static_cast<int>((threads + 31) / 32); }
};

// Stopped: the run's budget (RunOptions::max_events, max_seconds, max_instructions) ran out before
// the kernel finished, hung or faulted: no verdict about the kernel itself.
enum class Verdict : uint8_t { Ok, Hang, Error, Stopped };

struct Expectation {
  Verdict verdict = Verdict::Ok;
  std::string error_kind;  // for Error: the rule's id ("pending_underflow" ...); may be empty
  SourceLoc loc;
  bool racy = false;       // `racy`: the verdict depends on timing (the fixed-order run's is given)
};

// Budget declarations (docs/scenario-language.md, "Budgets"): the `config` line's settings, kept as
// text for model::set_config_field (keys spelled as its flags: "lora-rank"), and the `estimate`
// lines' hand-written byte counts. verify/scenario_budget.hpp checks them against the model.
struct BudgetDecls {
  struct Setting {
    std::string key, value;
    SourceLoc loc;  // the key
  };
  struct Estimate {
    std::string operand;  // A B SFA SFB C LA LU VEC AB LORA
    int64_t bytes = 0;
    SourceLoc loc;        // the operand name
  };
  SourceLoc config_loc;   // line 0: no `config` line
  SourceLoc launch_loc;
  std::vector<Setting> config;
  std::vector<Estimate> estimates;
  bool has_config() const { return config_loc.line != 0; }
};

struct Kernel {
  std::string name;
  std::string file;                // path as given on the command line
  std::vector<std::string> lines;  // source text, for carets in reports
  const model::Arch* arch = nullptr;
  Launch launch;
  std::vector<BarrierArray> barriers;
  std::vector<SmemArray> smem;     // shared-memory value cells
  uint32_t smem_cells = 0;         // cells per CTA, all arrays
  std::vector<PipelineDecl> pipelines;
  std::vector<Role> roles;
  std::vector<Site> sites;
  uint32_t num_slots = kNumBuiltinSlots;
  std::optional<Expectation> expect;
  std::vector<std::pair<std::string, int64_t>> params;  // final values, -D applied
  BudgetDecls budget;
  // Set for a kernel whose warps run their own code (a PTX kernel): roles are empty, every op comes
  // from the program, and `barriers` holds one array whose slots the program numbers as it finds them.
  std::shared_ptr<const ExternalProgram> external;
};

}  // namespace pipesim::sim
