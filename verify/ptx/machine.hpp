// The PTX interpreter: a warp of 32 SIMT lanes executing a decoded entry, with reconvergence at
// immediate post-dominators, over the grid's memory (param, global, const), its CTA's shared memory,
// the cluster's distributed shared memory and per-thread local memory. Everything that stays inside
// the warp or memory executes here; what synchronises with other warps or asynchronous units comes
// out as SyncRequests (sync.hpp) for the engine, whose answers come back through answer().
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "verify/ptx/ast.hpp"
#include "verify/ptx/launch.hpp"
#include "verify/ptx/sync.hpp"

namespace pipesim::model {
struct Timing;
}
namespace pipesim::sim {
class StateHash;
}

namespace pipesim::ptx {

// Bad input found while decoding or running PTX: an unknown instruction, an operand of the wrong kind,
// an access outside every memory the kernel has ... Reported as path:line:col: message (exit 2).
struct PtxError : std::runtime_error {
  std::string path;
  TextPos pos;
  PtxError(std::string p, TextPos at, const std::string& msg) : std::runtime_error(msg), path(std::move(p)), pos(at) {}
};

// A fault of the kernel itself found while running (an out-of-bounds access, a misaligned address,
// trap): a verdict `error`, not bad input.
struct KernelFault {
  uint32_t function = 0, instr = 0;
  std::string kind;     // "bad_address", "misaligned", "trap" ...
  std::string message;
};

class Program;     // the decoded module: every instruction reachable from the entry, checked
class GridState;   // global, param and const memory; every CTA's shared memory

// Decodes `entry` and every function it calls. Throws PtxError at the first instruction the
// interpreter does not support (never skips one).
std::shared_ptr<const Program> decode(const Module& module, const Function& entry);

// The grid's memory for one run: laid out from the launch (buffers, their contents, parameter bytes,
// tensor maps) and the module's variables; shared memory per CTA (static + dynamic).
std::unique_ptr<GridState> make_grid(std::shared_ptr<const Program> program, const Launch& launch);

// Geometry of one CTA, given by the caller (the engine's launch order decides %smid).
struct CtaPlace {
  uint32_t cta = 0;       // linear CTA id (x fastest)
  uint32_t cluster = 0;   // linear cluster id
  uint32_t rank = 0;      // %cluster_ctarank
  uint32_t sm = 0;
};

class Warp {
 public:
  Warp(GridState& grid, const CtaPlace& place, uint32_t warp);
  ~Warp();
  Warp(Warp&&) noexcept;
  Warp& operator=(Warp&&) noexcept;

  // Executes until the warp needs the engine (returns true, `req` filled) or exits (false). At most
  // `budget` instructions run, and no longer than they would take at one issue each counting the
  // warp's waits on operands, before it returns a Compute request of their cost anyway (a spinning
  // warp must let simulated time advance). `now_ns` feeds %clock, %clock64 and %globaltimer.
  // Throws PtxError on bad input met at run time; a kernel fault returns a Trap request whose
  // details fault() gives.
  bool step(SyncRequest& req, double now_ns, uint64_t budget = 4096);
  // The engine's answer to the last request that takes one (MbarTryWait / MbarTestWait: 1 passed,
  // 0 not; MbarArrive: the token; NamedRed: the reduced value). Writes the request's destination for
  // the lanes that issued it; ignored for a request that takes none, or when it comes twice.
  //   MbarTryWait: the predicate is already true when the request is returned (the engine resumes
  //     the warp once the phase passed); answer(0) makes it false.
  //   MbarArrive: the token is what the kernel's state register holds; a later wait on that token
  //     (try_wait / test_wait without .parity) waits on its bit 0 as the phase parity.
  //   NamedRed (bar.red): the request's c is how many of this warp's lanes hold a true predicate;
  //     the answer is the sum of c over the warps that took part: .popc gets the sum, .and holds when
  //     it reaches the participating threads (b, or the CTA's), .or when it is not zero.
  // Request shapes (sync.hpp): lanes with the same mbarrier (and count / parity) are one request with
  // `lanes` of them (a = their summed count for arrivals, expect_tx and complete_tx);
  // mbarrier.arrive.expect_tx is one request per lane; a bulk or TMA copy is one request per distinct
  // copy the lanes name (ptxas issues those on the uniform datapath: a whole warp issuing one TMA
  // store stores once), `lanes` = how many lanes named it.
  void answer(uint64_t value);
  const KernelFault* fault() const;
  uint64_t instructions() const;   // executed, warp-level (one per instruction, not per lane)
  // Where the warp is: the function and instruction it executed last (for a warp blocked on a request,
  // the instruction that made it; the entry's first instruction before it ran).
  uint32_t function() const;
  uint32_t instr() const;
  // Host memory the warp holds: its register chunks, local memory, stacks (not the CTA's shared memory
  // or the program, which warps share).
  uint64_t memory_bytes() const;
  // Whether the warp has exited (or faulted): step() returns false from now on.
  bool done() const;
  // For the exhaustive search: a copy of the warp on `grid`, a copy of the grid it runs on (every
  // register, stack entry, local byte and request; its pointers into the grid re-pointed).
  Warp clone_onto(GridState& grid) const;
  // What decides what the warp does next (registers, predicates, the SIMT stack, local memory, the
  // requests not yet returned), none of its timing.
  void hash_into(sim::StateHash& h) const;

 private:
  Warp() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Per-instruction cost in nanoseconds charged for instructions executed between requests
// (the arch's issue rate); set by the caller once.
void set_instruction_ns(GridState& grid, double ns);

// A shared-memory instruction's bank conflicts over a run: how often it ran with a conflict, and the
// wavefronts those executions took against the conflict-free count (one per phase of lanes).
struct SharedConflicts {
  uint64_t accesses = 0, wavefronts = 0, conflict_free = 0;
};
// By instruction (function << 32 | pc), for the run's report.
const std::unordered_map<uint64_t, SharedConflicts>& shared_conflicts(const GridState& grid);

// What a warp's own instructions cost beyond their issue (scoreboard.cpp; docs/calibration.md, "PTX
// instructions"), in ns: when each class of result can be read, and what an SM's global-store path
// takes per store instruction and per 32-byte sector it writes whole or in part, and what the
// device's takes per sector. All zero: no latencies and free stores (the model before the scoreboard).
struct InstructionTiming {
  double alu_ns = 0, convert_ns = 0, int_convert_ns = 0, mufu_ns = 0, mufu_fixup_ns = 0, divide_ns = 0, shfl_ns = 0;
  double mul64_ns = 0, mulhi64_ns = 0;  // 64-bit integer mul / mad: .lo, .hi
  double shared_load_ns = 0, global_load_ns = 0;
  double store_issue_ns = 0, store_sector_ns = 0, store_partial_sector_ns = 0;
  double device_sector_ns = 0, device_partial_sector_ns = 0;  // the device's, per sector
  // A parameter line's first read on an SM (its constant cache is cold at launch), and the line.
  double param_miss_ns = 0, param_line_bytes = 0;
  double param_miss_interval_ns = 0;  // an SM's misses, one after another (its miss path)
  // A warp instruction's issue on its sub-partition by class (IssueClass: integer and compare,
  // conversions, the SFU's); 0: one issue like any other.
  double int_issue_ns = 0, convert_issue_ns = 0, xu_issue_ns = 0, shared_issue_ns = 0;
  // A fence beyond the CTA (fence.acq_rel.gpu, membar.gl, an arrive or store released at cluster or
  // gpu scope): the warp waits this long.
  double fence_ns = 0;
  // Shared memory (ld / st / ldmatrix / stmatrix): the SM's banks take a wavefront (a pass of the 32
  // banks) every shared_wavefront_ns from all its warps in turn; the access holds its warp at least
  // shared_access_ns, and shared_warp_wavefront_ns a wavefront.
  double shared_wavefront_ns = 0, shared_access_ns = 0, shared_warp_wavefront_ns = 0;
  bool shared_timed() const { return shared_wavefront_ns > 0 || shared_access_ns > 0 || shared_warp_wavefront_ns > 0; }
};
InstructionTiming instruction_timing(const model::Timing& timing);
void set_instruction_timing(GridState& grid, const InstructionTiming& t);

// For the exhaustive search: a copy of the grid's memory (global pages shared until written), and a
// hash of it (global memory, each CTA's shared memory up to the highest byte used), not of its timing.
std::unique_ptr<GridState> clone_grid(const GridState& grid);
void hash_grid(const GridState& grid, sim::StateHash& h);

// The clock %clock / %clock64 count (GHz, default 1.755) and the SM count %nsmid gives (default 132).
void set_clock_ghz(GridState& grid, double ghz);
void set_sm_count(GridState& grid, uint32_t sms);
// Shared memory of one CTA: the static variables, then the dynamic area (launch.dynamic_smem).
uint64_t shared_bytes_per_cta(const GridState& grid);
// The highest byte of shared memory any warp of any CTA used so far (loads, stores, barriers, copy
// destinations and sources), + 1.
uint64_t shared_bytes_touched(const GridState& grid);
// The bytes the warps stored to global memory with st.global so far (every lane's, repeats included).
uint64_t global_bytes_stored(const GridState& grid);

// Memory access for the front end (tests, reports): read/write bytes at a generic address.
bool read_memory(const GridState& grid, uint32_t cta, uint64_t generic_addr, void* out, uint64_t bytes);
uint64_t shared_window_base();   // generic address of shared::cta offset 0 (docs/ptx.md)
// The whole address map (global buffers, the shared / local / param / const windows, module .global
// variables) is described at the top of verify/ptx/machine_impl.hpp.

}  // namespace pipesim::ptx
