// The interpreter's internals, shared by its translation units (decode.cpp, cfg.cpp, memory.cpp,
// warp.cpp, exec_*.cpp); nothing outside verify/ptx/machine*.cpp and the exec_*/decode files includes
// this. machine.hpp is the public contract.
//
// Decoded form: every instruction becomes a DInstr (an opcode, resolved types, modifier flags, up to
// kMaxOps operands and the handler that runs it). Handlers loop over the active lanes of the warp with
// the operands resolved once per instruction: a register operand is the pointer to its 32 lane
// slots, an immediate a pointer to one value read with stride 0. No string is looked at while running.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <boost/container/small_vector.hpp>

#include "verify/ptx/machine.hpp"

namespace pipesim::ptx {

// ---- Address map (docs/ptx.md, "Address spaces") --------------------------------------------------
// Generic addresses are 64-bit. The launch places global buffers from kBufferBase (0x7f00'0000'0000)
// upward, or where the launch file says. The interpreter's own windows sit below that, 1 TiB each:
//   0x7a00'0000'0000  shared: generic = kSharedWindow + shared::cluster address (sync.hpp): offset X
//                     of cluster rank r is kSharedWindow + (r << 24 | X). cvta.shared / cvta.to.shared
//                     add / remove the window; a CTA's shared::cta addresses are its own rank's
//                     shared::cluster addresses (a .shared symbol's address carries the rank).
//   0x7b00'0000'0000  local: the thread's .local depot(s) (and the .param space of device-function
//                     calls); a local-space address IS the generic one (cvta.local is the identity),
//                     every thread sees its own bytes at the same addresses.
//   0x7c00'0000'0000  kernel parameters: the launch's param_bytes; `mov %rd, param_sym` gives this
//                     window's address of the parameter and ld.param / generic ld read the same bytes.
//   0x7d00'0000'0000  const: the module's .const variables with their initialisers.
//   0x7e00'0000'0000  the module's .global variables (global space: generic == global).
// Global memory is sparse 4 KiB pages; bytes never written read 0. An access must lie inside a launch
// buffer or a module .global variable, else it is a kernel fault "bad_address".
inline constexpr uint64_t kWindowBytes = uint64_t{1} << 40;
inline constexpr uint64_t kSharedWindow = 0x7a00'0000'0000ULL;
inline constexpr uint64_t kLocalWindow = 0x7b00'0000'0000ULL;
inline constexpr uint64_t kParamWindow = 0x7c00'0000'0000ULL;
inline constexpr uint64_t kConstWindow = 0x7d00'0000'0000ULL;
inline constexpr uint64_t kGlobalVarBase = 0x7e00'0000'0000ULL;
inline constexpr uint64_t kWindowsEnd = 0x7f00'0000'0000ULL;

// The space an address is in once classified (Generic never comes out).
enum class Where : uint8_t { Global, Shared, Local, Param, Const, None };

// ---- Decoded instructions ------------------------------------------------------------------------
struct Exec;
struct DInstr;
using ExecFn = void (*)(Exec&, const DInstr&);

enum class Op : uint16_t {
  Nop, Bra, Call, Ret, Exit,
  // integer / bit / compare / move
  Add, Sub, AddC, SubC, Mul, Mad, MadC, Mul24, Mad24, Div, Rem, Abs, Neg, Min, Max, Sad,
  And, Or, Xor, Not, Cnot, Shl, Shr, Bfe, Bfi, Brev, Popc, Clz, Bfind, Fns, Prmt, Lop3, Shf,
  Dp4a, Dp2a, Setp, Selp, Slct, Set, Mov, Cvt, Cvta, Mapa, Isspacep, Getctarank, Testp, Copysign,
  // floating point
  Fma, Rcp, Sqrt, Rsqrt, Ex2, Lg2, Sin, Cos, Tanh, Cvtpack,
  // memory
  Ld, St, Atom, Red, Prefetch, Ldmatrix, Stmatrix, StAsync,
  // warp
  Shfl, Vote, Match, Redux, Activemask, Elect, BarWarpSync,
  // synchronisation (SyncRequests)
  Fence, Nanosleep, Trap, SetMaxNreg, MbarInit, MbarInval, MbarArrive, MbarArriveDrop, MbarExpectTx,
  MbarCompleteTx, MbarTestWait, MbarTryWait, MbarPendingCount, TmaLoad, BulkCopyS2C, BulkStore,
  BulkCommit, BulkWait, AsyncCopy, AsyncCommit, AsyncWait, AsyncMbarArrive, BarSync, BarArrive, BarRed,
  ClusterArrive, ClusterWait, WgmmaFence, WgmmaMma, WgmmaCommit, WgmmaWait,
  TmemAlloc, TmemDealloc, TmemRelinquish, UmmaMma, UmmaCommit, TmemLoad, TmemStore, TmemWait, Tcgen05Other,
  ClcTryCancel, ClcQuery,
};

// When an instruction's result can be read (scoreboard.cpp; docs/calibration.md, "PTX instructions"):
// None writes no register the scoreboard follows; Pass is a move (ptxas renames it away: its result is
// ready when its source is); Const reads the constant bank (ready at issue); the others wait the
// class's measured latency.
enum class Latency : uint8_t { None, Pass, Const, Alu, Convert, IntConvert, Mufu, MufuFixup, Divide, Mul64, MulHi64, Shfl, SharedLoad, GlobalLoad };
inline constexpr size_t kLatencyClasses = 14;

// How long a warp instruction holds its SM sub-partition's issue (scoreboard.cpp; kernels/interp/
// tputprobe.cu): Default one issue (fp32 arithmetic, moves, memory and the rest); Int the integer and
// compare pipe, which takes a warp in two; Convert a conversion between float formats or from an
// integer; Xu the SFU's (approximations, float to integer, population counts), which takes it in eight.
enum class IssueClass : uint8_t { Default, Int, Convert, Xu, Shared };
inline constexpr size_t kIssueClasses = 5;

enum class OpKind : uint8_t { None, Reg, Pred, Imm, Special, Sym, Addr, Vec, Sink, Label };
enum class AddrBase : uint8_t { None, Reg, Sym };

struct DOp {
  OpKind kind = OpKind::None;
  bool neg = false;          // Pred: `!%p`
  AddrBase base = AddrBase::None;
  uint8_t bits = 64;         // Reg (and Addr with a register base): the register's width
  uint8_t sreg = 0, comp = 0;  // Special: SpecialReg and component
  bool frame_rel = false;    // Sym (and Addr with a symbol base): address relative to the frame's local base
  bool to_generic = false;   // Addr with a .shared symbol base in a generic access: the symbol's generic address
  uint32_t idx = 0;          // Reg/Addr-reg: value slot; Pred: predicate index; Sym/Addr-sym: symbol;
                             // Vec: first element in DFunction::pool; Label: instruction index
  uint32_t count = 0;        // Vec: number of elements
  int64_t imm = 0;           // Imm: the value's bits; Addr: the offset
};

inline constexpr uint32_t kMaxOps = 8;
inline constexpr uint32_t kNoPc = UINT32_MAX;

// Modifier flags (DInstr::flags); their meaning depends on the opcode family.
enum : uint32_t {
  F_CC = 1u << 0,        // .cc: writes the carry flag
  F_SAT = 1u << 1,
  F_HI = 1u << 2,        // .hi
  F_WIDE = 1u << 3,      // .wide
  F_FTZ = 1u << 4,
  F_RELU = 1u << 5,
  F_CLAMP = 1u << 6,     // shf.clamp / bfind.shiftamt etc.
  F_LEFT = 1u << 7,      // shf.l
  F_TWO_DST = 1u << 8,   // setp p|q, shfl d|p, elect d|p, match d|p
  F_UNIFORM = 1u << 9,   // bra.uni / call.uni
  F_TOKEN = 1u << 10,    // mbarrier wait with a state token (not .parity)
  F_NOINC = 1u << 11,
  F_READ = 1u << 12,     // cp.async.bulk.wait_group.read
  F_MULTICAST = 1u << 13,
  F_CTA_GROUP2 = 1u << 14,
  F_TENSOR = 1u << 15,
  F_INC = 1u << 16,      // setmaxnreg.inc
  F_EXPECT_TX = 1u << 17,
  F_NOCOMPLETE = 1u << 18,
  F_CLUSTER_SPACE = 1u << 19,  // an operand in .shared::cluster
  F_ROUND_INT = 1u << 20,      // cvt .rni/.rzi/.rmi/.rpi
  F_SHIFTAMT = 1u << 21,
  F_NAN = 1u << 22,            // min/max .NaN
  F_TRANS = 1u << 23,          // ldmatrix/stmatrix .trans
  F_HAS_C = 1u << 24,          // setp/set/shfl third operand present etc.
  F_PEEK = 1u << 25,           // mbarrier.try_wait that no branch right after loops back on (decode.cpp)
  F_FENCE = 1u << 26,          // orders memory beyond the CTA: the warp waits out a fence (fenceprobe.cu)
};

// Rounding of a float result (cvt / arithmetic).
enum class Round : uint8_t { None, Rn, Rz, Rm, Rp, Rna, Rs };

struct DInstr {
  ExecFn fn = nullptr;
  Op op = Op::Nop;
  Type type = Type::None, type2 = Type::None, type3 = Type::None;
  uint8_t sub = 0;           // the family's sub-operation (compare op, shfl mode, atom op ...)
  uint8_t sub2 = 0;          // a second one (setp's boolean combine ...)
  Round round = Round::None;
  uint8_t nops = 0;
  uint8_t ndst = 0;          // ops[0 .. ndst) are written (the scoreboard's destinations), the rest read
  Latency latency = Latency::None;
  IssueClass issue = IssueClass::Default;
  bool boundary = false;     // ends a scheduling block: control flow or a synchronising op
  uint8_t vec = 1;           // ld/st vector width
  Space space = Space::None; // memory ops: the operand's space (Generic where none is written)
  bool control = false;      // changes the SIMT stack (bra, call, ret, exit)
  bool guard_neg = false;
  int32_t guard = -1;        // predicate index or -1
  uint32_t flags = 0;
  uint32_t target = 0;       // bra: target instruction; call: callee function
  uint32_t rpc = kNoPc;      // bra: reconvergence point (immediate post-dominator) or kNoPc
  int64_t aux = 0;           // a constant the family needs (prmt mode, wgmma shape ...)
  TextPos pos;
  std::array<DOp, kMaxOps> ops{};
};

// A function's .local / call .param bytes per thread, and where its parameters live.
struct DFunction {
  uint32_t index = 0;                 // Module::functions
  std::string name;
  bool is_entry = false;
  bool is_extern = false;
  uint32_t nvals = 0, npreds = 0;     // value slots (after compaction), predicate registers
  uint32_t nregs = 0;                 // value registers as declared
  std::vector<int32_t> reg_slot;      // Function::regs index -> slot (value) or ~index (pred)
  std::vector<uint8_t> reg_bits;      // Function::regs index -> width in bits (1: pred)
  uint64_t frame_bytes = 0;           // local depot + call params + own params/returns, per thread
  std::vector<uint64_t> param_offset;   // device function: its params' frame offsets
  std::vector<uint64_t> return_offset;  // device function: its returns' frame offsets
  std::vector<uint32_t> param_bytes, return_bytes;
  std::vector<DInstr> code;
  std::vector<DOp> pool;              // vector operands' elements
};

enum class SymKind : uint8_t { Shared, Global, Const, KernelParam, Frame, Function };
struct SymInfo {
  SymKind kind = SymKind::Global;
  uint64_t addr = 0;                  // Shared: offset; Global/Const: address; KernelParam: offset in
                                      // the parameter buffer; Frame: offset in the frame
  uint64_t bytes = 0;
  std::string name;
};

class Program {
 public:
  std::string path;                   // the module's path, for messages
  std::string target;
  uint32_t entry = 0;                 // Module::functions index
  std::vector<std::unique_ptr<DFunction>> functions;  // indexed by Module::functions (null: not used)
  std::vector<SymInfo> symbols;
  std::unordered_map<std::string, uint32_t> symbol_index;  // SymInfo::name -> symbols index
  uint32_t add_symbol(SymInfo s) {
    const uint32_t i = static_cast<uint32_t>(symbols.size());
    symbol_index.emplace(s.name, i);
    symbols.push_back(std::move(s));
    return i;
  }
  uint64_t static_smem = 0;           // .shared variables, laid out
  uint64_t dynamic_smem_base = 0;     // where the .extern .shared array starts (aligned)
  uint64_t const_bytes = 0;
  std::vector<uint8_t> const_init;    // the const window's bytes
  uint64_t global_var_bytes = 0;
  std::vector<std::pair<uint64_t, std::vector<uint8_t>>> global_init;  // address, bytes
  std::vector<std::pair<uint64_t, uint64_t>> global_vars;              // address, bytes
  uint64_t kernel_param_bytes = 0;
  std::vector<std::string> kernel_param_names;  // the entry's parameters, in order
  std::vector<uint32_t> kernel_param_symbols;   // their symbols
  bool explicit_cluster = false;
  const DFunction& fn(uint32_t i) const { return *functions[i]; }
};

// ---- Grid memory --------------------------------------------------------------------------------
class GlobalMemory {
 public:
  static constexpr uint64_t kPageBytes = 4096;
  // Regions whose page table would hold more pages than this look pages up in the hash alone.
  static constexpr uint64_t kMaxTablePages = uint64_t{1} << 22;  // 16 GiB of buffer, a 32 MiB table
  struct Region {
    uint64_t begin = 0, end = 0;
    std::string name;
    // Pages of [begin, end) by page number - begin / kPageBytes, filled on first touch: lanes of one
    // store land on as many pages as they have rows, and a hash lookup per lane was the epilogue's
    // main cost. The pages stay owned by GlobalMemory::pages_ (regions may overlap). An entry with
    // bit 0 set (kWritable) may be written through: its page is this memory's alone.
    mutable std::vector<uintptr_t> page_table;
  };
  GlobalMemory() = default;
  // A copy shares the pages until either side writes one (copy on write: the exhaustive search
  // copies a run at every choice, and most of a kernel's global memory is only read). Both sides'
  // cached pointers are dropped, so that a write to a shared page copies it first.
  GlobalMemory(const GlobalMemory& o);
  GlobalMemory& operator=(const GlobalMemory&) = delete;
  GlobalMemory(GlobalMemory&&) noexcept = default;
  GlobalMemory& operator=(GlobalMemory&&) noexcept = default;
  void add_region(uint64_t begin, uint64_t bytes, std::string name);
  // The region holding [addr, addr + bytes), or null.
  const Region* find(uint64_t addr, uint64_t bytes) const;
  // The page holding `addr`: allocated for writes; for reads of a page never written, a page of zeros.
  uint8_t* page_for_write(uint64_t addr);
  const uint8_t* page_for_read(uint64_t addr) const;
  // The same through the page table of `r`, the region find() returned for `addr`.
  uint8_t* page_for_write(const Region& r, uint64_t addr);
  const uint8_t* page_for_read(const Region& r, uint64_t addr) const;
  void write(uint64_t addr, const void* src, uint64_t bytes);
  void read(uint64_t addr, void* dst, uint64_t bytes) const;
  uint64_t pages() const { return pages_.size(); }
  // The contents as a set of (page number, bytes), for the exhaustive search's state hash. A page's
  // digest is kept until it is written; the caches are dropped so that the next write tells.
  uint64_t digest() const;

 private:
  struct Page {
    uint8_t bytes[kPageBytes] = {};
    uint64_t digest = 0;
    bool digested = false;
  };
  static constexpr uintptr_t kWritable = 1;
  uint8_t* own_page(uint64_t page);   // the page, copied first if another memory shares it
  void drop_caches() const;
  std::vector<Region> regions_;       // sorted by begin
  std::unordered_map<uint64_t, std::shared_ptr<Page>> pages_;
  mutable uint64_t last_read_page_ = UINT64_MAX, last_write_page_ = UINT64_MAX;
  mutable const uint8_t* last_read_ = nullptr;
  mutable uint8_t* last_write_ = nullptr;
  mutable size_t last_region_ = 0;
};

class GridState {
 public:
  std::shared_ptr<const Program> program;
  Launch launch;
  std::vector<uint8_t> param;         // the kernel parameter bytes
  std::vector<uint8_t> constant;      // the const window
  GlobalMemory global;
  std::vector<uint64_t> sym_value;    // Program::symbols -> address (see SymKind)
  std::vector<uint8_t> sym_shared;    // Program::symbols -> a .shared symbol (its address carries the rank)
  uint64_t smem_bytes = 0;            // per CTA: static + dynamic
  uint64_t smem_touched = 0;          // the highest shared byte any warp used, + 1 (docs/ptx.md, "Budget from the run")
  // Per CTA shared memory, allocated on first use and freed when its last warp exits. Copies of the
  // grid (clone_grid) share a CTA's block until one of them writes it (cta_shared).
  std::vector<std::shared_ptr<std::vector<uint8_t>>> shared;
  // Per CTA, for the exhaustive search's state hash (hash_grid): the digest of its shared memory,
  // and whether nothing wrote it since (a write through Exec::shared_bytes, a response, a release).
  mutable std::vector<uint64_t> shared_digest;  // a cache of the contents
  mutable std::vector<uint8_t> shared_digested;
  std::vector<uint32_t> shared_users;
  double instruction_ns = 0.57;
  double clock_ghz = 1.755;
  // The scoreboard (scoreboard.cpp): what instructions cost (set_instruction_timing), its latencies
  // again by class for the per-instruction lookup, and whether any is set.
  InstructionTiming costs;
  std::array<double, kLatencyClasses> latency_ns{};
  std::array<double, kIssueClasses> issue_ns{};  // a warp instruction's issue by class (0: instruction_ns)
  bool scoreboard = false;
  std::vector<double> store_free_ns;  // per CTA: when its store path takes the next store
  // A path that takes work in turn, as a backlog (ns of work) as of `at_ns`: warps step out of time
  // order by up to a step, so work that comes in "earlier" waits for what is queued, not for the last
  // one's time.
  struct Backlog {
    double backlog_ns = 0, at_ns = 0;
    // Work of `ns` arriving at `t`: how long it waits before the path takes it.
    double take(double t, double ns) {
      if (t > at_ns) {
        backlog_ns = std::max(0.0, backlog_ns - (t - at_ns));
        at_ns = t;
      }
      const double wait = backlog_ns;
      backlog_ns += ns;
      return wait;
    }
  };
  std::vector<Backlog> shared_banks;      // per SM: its shared-memory banks (scoreboard.cpp)
  std::vector<Backlog> param_miss_paths;  // per SM: its constant cache's misses (memory.cpp)
  // Shared-memory accesses that took more wavefronts than a conflict-free one (bank conflicts), by
  // instruction (function << 32 | pc): for the report (RunUse::bank_conflicts).
  std::unordered_map<uint64_t, SharedConflicts> shared_conflicts;
  // Per SM, per line of the parameter block: when its miss began and when its constant cache holds the
  // line (0: never read).
  struct ParamLine {
    double asked_ns = 0, ready_ns = 0;
  };
  std::vector<std::vector<ParamLine>> param_lines;
  Backlog device_stores;  // the device's store path (scoreboard.cpp)
  uint64_t global_bytes_stored = 0;  // global_bytes_stored(): not part of the state (hash_grid)
  uint32_t sm_count = 132;
  uint32_t nctas = 1, threads = 1;

  // A CTA's shared memory to write: allocated, this grid's own (copied first if a copy of the grid
  // shares it), its digest dropped.
  uint8_t* cta_shared(uint32_t cta);
  // The same to read: allocated (zeros), perhaps shared with a copy of the grid.
  const uint8_t* cta_shared_read(uint32_t cta);
  // Linear CTA id of cluster rank `rank` in the cluster of CTA `cta` (UINT32_MAX: no such CTA).
  uint32_t cta_of_rank(uint32_t cta, uint32_t rank) const;
  uint32_t rank_of(uint32_t cta) const;
  std::array<uint32_t, 3> cta_coords(uint32_t cta) const;
};

// ---- The warp --------------------------------------------------------------------------------------
struct KernelFaultSignal {
  std::string kind, message;
};

struct StackEntry {
  uint32_t pc = 0, rpc = kNoPc, mask = 0;
};

struct Frame {
  const DFunction* df = nullptr;
  std::vector<uint64_t*> chunks;      // 8 registers x 32 lanes each, allocated on first touch
  std::vector<uint32_t> preds;        // one lane mask per predicate register
  // Scoreboard: when each value slot's and predicate's latest result can be read (absolute ns).
  std::vector<double> ready, pred_ready;
  // Scoreboard: a value loaded from the parameter block whose lines are read where it is first used
  // (ptxas reads parameters at their uses): (first line + 1) << 32 | (last line + 1); 0: none.
  std::vector<uint64_t> param_pending;
  uint32_t stack_base = 0;            // SIMT stack depth below this frame's entries
  uint32_t returned = 0;              // lanes that executed ret (device functions)
  uint32_t call_mask = 0;
  uint64_t local_base = 0;            // frame offset in the thread's local memory
  const DInstr* call = nullptr;       // the caller's call instruction
};

// What answer() writes, for the request step() returned last.
enum class AnswerKind : uint8_t { None, Token, Pred, NamedRed, SharedU32 };
struct PendingRequest {
  SyncRequest req;
  AnswerKind answer = AnswerKind::None;
  uint32_t lanes = 0;                 // lane mask the answer goes to
  DOp dst;                            // where
  uint8_t red_op = 0;                 // NamedRed: 0 popc, 1 and, 2 or
  uint32_t red_threads = 0;           // NamedRed .and: how many threads take part
};

inline constexpr uint32_t kRegsPerChunk = 8;

// A warp's register chunks (kRegsPerChunk registers x 32 lanes each). A copy copies their values;
// whoever copies re-points the frames' chunk pointers (Warp::clone_onto).
struct ChunkStore : std::vector<std::unique_ptr<uint64_t[]>> {
  ChunkStore() = default;
  ChunkStore(const ChunkStore& o) : std::vector<std::unique_ptr<uint64_t[]>>() {
    reserve(o.size());
    for (const auto& c : o) {
      emplace_back(new uint64_t[kRegsPerChunk * 32]);
      std::copy_n(c.get(), kRegsPerChunk * 32, back().get());
    }
  }
  ChunkStore& operator=(const ChunkStore&) = delete;
  ChunkStore(ChunkStore&&) noexcept = default;
  ChunkStore& operator=(ChunkStore&&) noexcept = default;
};

struct Exec {
  GridState* grid = nullptr;
  const Program* prog = nullptr;
  CtaPlace place;
  uint64_t shared_cta_base = 0;       // place.rank << 24: where this CTA's shared::cta window starts
  uint32_t warp = 0;
  uint32_t valid = 0;                 // lanes that exist (a partial last warp has fewer)
  uint32_t exited = 0;
  uint32_t active = 0;                // the top entry's live lanes (valid after resolve())
  uint32_t mask = 0;                  // lanes executing the current instruction (active & guard)
  uint32_t carry = 0;                 // .cc carry flag per lane
  bool need_resolve = true;
  bool dead = false;
  bool released = false;              // exited: registers, local memory and the CTA's share given back
  // The SIMT stack and the requests live inline (a warp's step touches both; a separate heap block
  // each was a cache miss per step with a thousand warps resident).
  static constexpr size_t kInlineStack = 16, kInlinePending = 4;
  boost::container::small_vector<StackEntry, kInlineStack> stack;
  std::vector<Frame> frames;
  Frame* frame = nullptr;
  const DFunction* fn = nullptr;
  const DInstr* cur = nullptr;
  uint32_t cur_pc = 0;                // the instruction executing (or executed last) and its function
  uint32_t cur_fn = 0;
  // Local memory: lane-major, `local_cap` bytes per lane.
  std::vector<uint8_t> local;
  uint64_t local_cap = 0;
  uint64_t local_top = 0;             // bytes in use per lane (frames)
  uint64_t smem_size = 0;
  std::array<uint32_t, 3> ctaid{}, tid0{};
  // Register chunks: owned here, recycled when a called frame returns.
  ChunkStore chunk_store;
  std::vector<uint64_t*> free_chunks;
  // Requests waiting to be returned by step(), and the one answer() applies to.
  boost::container::small_vector<PendingRequest, kInlinePending> pending;  // kept until the next step() (answer() reads the last one)
  size_t pending_head = 0;
  int64_t last = -1;                    // the request step() returned last, if it takes an answer
  KernelFault fault;
  bool has_fault = false;
  uint64_t executed = 0;
  uint64_t since_request = 0;         // instructions since the last request (their cost is owed)
  double owed_ns = 0;                 // issue-slot time beyond those instructions' one issue each
  double stall_ns = 0;                // since the last request: waits for operands and the store path
  // A load of the parameter block under the scoreboard (exec_ld): the lines it reads, first and last + 1
  // (0: none), noted by charge_param_read and read where the value is first used (param_lines_ready).
  uint64_t param_first_line = 0, param_last_line = 0;
  bool param_read_at_use = false;
  bool end_step = false;              // a global store or a shared access took a shared path: let the others catch up
  double block_issue = 0;             // scoreboard: when the current block's instructions have all issued
  double issue_at = 0;                // scoreboard: when the instruction executing issues
  double now_ns = 0;
  uint64_t step_count = 0;            // instructions executed in the current step() call
  alignas(64) uint64_t scratch[4][32];  // operands materialised per lane (special registers, symbols)
  uint64_t sink[32];

  // -- registers
  uint64_t* new_chunk();
  uint64_t* reg(uint32_t slot) {
    uint64_t*& c = frame->chunks[slot / kRegsPerChunk];
    if (!c) c = new_chunk();
    return c + (slot % kRegsPerChunk) * 32;
  }
  uint32_t& pred(uint32_t i) { return frame->preds[i]; }

  // A source operand read per lane: p[lane * stride].
  struct Src {
    const uint64_t* p;
    uint32_t stride;
    uint64_t operator[](uint32_t lane) const { return p[lane * stride]; }
  };
  Src src(const DOp& o, uint32_t slot) {
    switch (o.kind) {
      case OpKind::Reg: return {reg(o.idx), 1};
      case OpKind::Imm: return {reinterpret_cast<const uint64_t*>(&o.imm), 0};
      default: return materialise(o, slot);
    }
  }
  Src materialise(const DOp& o, uint32_t slot);
  uint64_t* dst(const DOp& o) { return o.kind == OpKind::Reg ? reg(o.idx) : sink; }
  // Predicate source as a lane mask (negation applied; an immediate is all or none).
  uint32_t pred_src(const DOp& o) {
    uint32_t v = o.kind == OpKind::Pred ? frame->preds[o.idx] : (o.imm != 0 ? ~0u : 0u);
    return o.neg ? ~v : v;
  }
  // Writes predicate bits for the lanes of `m` (no-op for a sink).
  void set_pred(const DOp& o, uint32_t bits, uint32_t m) {
    if (o.kind != OpKind::Pred) return;
    uint32_t& p = frame->preds[o.idx];
    p = (p & ~m) | (bits & m);
  }
  const DOp& elem(const DOp& v, uint32_t i) const { return fn->pool[v.idx + i]; }

  uint64_t sym_value(const DOp& o) const {
    return grid->sym_value[o.idx] + (o.frame_rel ? kLocalWindow + frame->local_base : 0) +
           (grid->sym_shared[o.idx] ? shared_cta_base : 0);
  }
  // The address an Addr operand names for `lane` (base + offset).
  uint64_t address(const DOp& a, uint32_t lane) {
    uint64_t base = 0;
    if (a.base == AddrBase::Reg) {
      base = reg(a.idx)[lane];
      if (a.bits < 64) base &= (uint64_t{1} << a.bits) - 1;
    } else if (a.base == AddrBase::Sym) {
      base = sym_value(a) + (a.to_generic ? kSharedWindow : 0);
    }
    return base + static_cast<uint64_t>(a.imm);
  }
  uint64_t special(uint8_t sreg, uint8_t comp, uint32_t lane) const;
  // The warp's clock: when its next instruction issues (step() starts with since_request 0).
  double elapsed_now() const {
    return now_ns + static_cast<double>(since_request) * grid->instruction_ns + owed_ns + stall_ns;
  }
  // A shared-memory access that takes `wavefronts` passes of the SM's banks (scoreboard.cpp).
  void charge_shared(uint32_t wavefronts);

  // A read of parameter bytes [off, off + bytes): a load's lines are noted for its value's first use
  // (param_read_at_use); any other read waits here for each line its SM's constant cache does not hold
  // yet (InstructionTiming::param_miss_ns).
  void charge_param_read(uint64_t off, uint32_t bytes);
  // Parameter lines [first, last] asked for now: when the last of them is in the SM's constant cache
  // (each miss after the SM's misses queued before it).
  double param_lines_ready(uint64_t first_line, uint64_t last_line, double now);
  // The registers of `v` (a load's destinations) hold parameter lines read where they are first used
  // (scoreboard.cpp).
  void read_params_at_use(const DOp& v);
  // A new miss on this SM's constant cache: how long it waits for the misses queued before it.
  double param_miss_queue(double now);

  // -- memory
  // Where a generic address points.
  Where classify(uint64_t addr) const;
  // Host bytes for an access of `bytes` at `addr` in `space` by `lane`; faults on a bad or
  // misaligned address. `align` 0 = natural (bytes).
  uint8_t* access(Space space, uint64_t addr, uint32_t bytes, uint32_t lane, bool write, uint32_t align = 0);
  // A shared address (shared::cta or shared::cluster form, sync.hpp) -> host bytes.
  uint8_t* shared_bytes(uint64_t addr, uint32_t bytes, bool write);
  // An mbarrier / TMA shared operand -> the shared::cluster form of sync.hpp (checked).
  uint64_t to_cluster_address(Space space, uint64_t addr, uint32_t bytes, uint32_t lane);

  // -- errors
  [[noreturn]] void error(const std::string& message) const;
  [[noreturn]] static void kernel_fault(const std::string& kind, const std::string& message);
  // A .b128 register holds the low 64 bits of its value (exec_mem.cpp): `instr` (ld.b128, mov.b128)
  // of a value whose upper half is not zero is refused rather than truncated.
  [[noreturn]] static void b128_upper_half_fault(const std::string& instr);

  // -- requests
  PendingRequest& push_request(SyncKind kind);
};

// ---- Lanes --------------------------------------------------------------------------------------
template <class F>
inline void for_lanes(uint32_t m, F&& f) {
  if (m == 0xffffffffu) {
    for (uint32_t l = 0; l < 32; ++l) f(l);
  } else {
    while (m) {
      const uint32_t l = static_cast<uint32_t>(std::countr_zero(m));
      m &= m - 1;
      f(l);
    }
  }
}

// d[l] = f(a[l] ..) over the lanes of m. The common case (every lane, register or immediate sources)
// computes into a local array first: d is often one of the sources, and a loop that may alias does
// not vectorise.
template <class F>
inline void map1(uint32_t m, uint64_t* d, Exec::Src a, F&& f) {
  if (m == 0xffffffffu && a.stride) {
    uint64_t t[32];
    for (uint32_t l = 0; l < 32; ++l) t[l] = f(a.p[l]);
    std::memcpy(d, t, sizeof t);
    return;
  }
  for_lanes(m, [&](uint32_t l) { d[l] = f(a[l]); });
}
template <class F>
inline void map2(uint32_t m, uint64_t* d, Exec::Src a, Exec::Src b, F&& f) {
  if (m == 0xffffffffu && a.stride) {
    uint64_t t[32];
    if (b.stride) {
      for (uint32_t l = 0; l < 32; ++l) t[l] = f(a.p[l], b.p[l]);
    } else {
      const uint64_t bv = *b.p;
      for (uint32_t l = 0; l < 32; ++l) t[l] = f(a.p[l], bv);
    }
    std::memcpy(d, t, sizeof t);
    return;
  }
  for_lanes(m, [&](uint32_t l) { d[l] = f(a[l], b[l]); });
}
template <class F>
inline void map3(uint32_t m, uint64_t* d, Exec::Src a, Exec::Src b, Exec::Src c, F&& f) {
  if (m == 0xffffffffu && a.stride && b.stride && c.stride) {
    uint64_t t[32];
    for (uint32_t l = 0; l < 32; ++l) t[l] = f(a.p[l], b.p[l], c.p[l]);
    std::memcpy(d, t, sizeof t);
    return;
  }
  for_lanes(m, [&](uint32_t l) { d[l] = f(a[l], b[l], c[l]); });
}

inline uint64_t width_mask(uint32_t bits) { return bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1; }
inline bool is_signed(Type t) { return t == Type::S8 || t == Type::S16 || t == Type::S32 || t == Type::S64; }
inline bool is_float(Type t) {
  return t == Type::F16 || t == Type::F16x2 || t == Type::BF16 || t == Type::BF16x2 || t == Type::TF32 ||
         t == Type::F32 || t == Type::F64 || t == Type::F32x2;
}
// The packed 8-, 6- and 4-bit float formats (cvt's narrow forms; is_float leaves them out).
inline bool is_narrow_float(Type t) {
  return t == Type::E4M3x2 || t == Type::E5M2x2 || t == Type::E2M1x2 || t == Type::E2M3x2 || t == Type::E3M2x2 ||
         t == Type::UE8M0x2;
}
inline uint32_t type_bits(Type t) { return t == Type::Pred ? 1 : type_bytes(t) * 8; }
// Sign-extends the low `bits` of v.
inline uint64_t sext(uint64_t v, uint32_t bits) {
  if (bits >= 64) return v;
  const uint64_t m = uint64_t{1} << (bits - 1);
  v &= (m << 1) - 1;
  return (v ^ m) - m;
}

// ---- Decoding (decode.cpp and the families' decoders) --------------------------------------------
// The modifiers of one instruction: types in order, the rest taken one by one; leftovers are an error.
class Mods {
 public:
  explicit Mods(const Instruction& in);
  bool take(const char* m);
  // Takes the first of `options` present; returns its index or -1.
  int take_one(std::initializer_list<const char*> options);
  bool has(const char* m) const;
  // A release, acq_rel or sc ordering at cluster, gpu or sys scope, which the SM runs as a MEMBAR
  // that holds the warp (kernels/interp/fenceprobe.cu). Takes nothing.
  bool orders_beyond_cta() const;
  const std::vector<Type>& types() const { return types_; }
  Type type(size_t i) const { return i < types_.size() ? types_[i] : Type::None; }
  size_t type_count() const { return types_.size(); }
  // Takes every cache / eviction / scope / ordering hint that does not change what an access does.
  void take_memory_hints();
  bool done() const;

 private:
  std::vector<std::string> rest_;
  std::vector<bool> taken_;
  std::vector<Type> types_;
};

struct DecodeCtx {
  const Module& module;
  const Function& function;
  DFunction& df;
  Program& prog;
  const Instruction* in = nullptr;
  uint32_t index = 0;
  // The value registers (slots) the instruction reads and writes, for the register compaction.
  std::vector<uint32_t>* uses = nullptr;
  std::vector<uint32_t>* defs = nullptr;
  std::string full_name() const;
  [[noreturn]] void unsupported() const;
  [[noreturn]] void fail(const std::string& message, TextPos at = {}) const;
  // Operands.
  DOp value(const Operand& o, Type t, bool lenient_width = false);  // a source: reg / imm / special / symbol
  DOp dest(const Operand& o, Type t, bool lenient_width = false);   // a register or sink
  DOp pred_src(const Operand& o);
  DOp pred_dst(const Operand& o);
  DOp address(const Operand& o);
  DOp vector_of(const Operand& o, Type t, bool dest, bool lenient_width = true);  // {a, b ..} or one operand
  uint32_t symbol(const SymbolRef& ref, TextPos at);
  void expect_ops(size_t lo, size_t hi) const;
};

// Each family decoder returns false when the opcode is not its own.
bool decode_int(DecodeCtx& c, Mods& m, DInstr& d);
bool decode_float(DecodeCtx& c, Mods& m, DInstr& d);
bool decode_move(DecodeCtx& c, Mods& m, DInstr& d);
bool decode_cvt(DecodeCtx& c, Mods& m, DInstr& d);
bool decode_mem(DecodeCtx& c, Mods& m, DInstr& d);
bool decode_warp(DecodeCtx& c, Mods& m, DInstr& d);
bool decode_sync(DecodeCtx& c, Mods& m, DInstr& d);
bool decode_tcgen05(DecodeCtx& c, Mods& m, DInstr& d);
bool decode_clc(DecodeCtx& c, Mods& m, DInstr& d);
bool decode_control(DecodeCtx& c, Mods& m, DInstr& d);

// scoreboard.cpp: sets DInstr::latency and ndst (once decoded); waits for the instruction's operands
// and marks when its results are ready (before it runs, `lanes` the lanes it runs on); charges a global
// store of `bytes` per lane at `addr` to its CTA's store path.
void classify_latency(DInstr& d);
void scoreboard_issue(Exec& x, const DInstr& in, uint32_t lanes);
void charge_global_store(Exec& x, const DOp& addr, uint32_t bytes);

// cfg.cpp: fills DInstr::rpc of every branch of `df` with its immediate post-dominator.
void compute_reconvergence(DFunction& df);
// cfg.cpp: renumbers the value registers of `df` so that registers never live at the same time share
// a slot (nvcc's virtual registers are thousands; a few hundred are live at once). uses / defs: per
// instruction, the slots it reads and writes.
void compact_registers(DFunction& df, const std::vector<std::vector<uint32_t>>& uses,
                       const std::vector<std::vector<uint32_t>>& defs);

// warp.cpp
void exec_nop(Exec&, const DInstr&);

// memory.cpp: an address as "0x..." for fault and error messages.
std::string hex(uint64_t v);

}  // namespace pipesim::ptx
