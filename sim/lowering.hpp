// Lowering: a role's structured program + (CTA, warp) -> the warp's primitive op stream.
// Pipeline calls expand here, against the warp's own pipeline state, exactly as CUTLASS /
// CuTe DSL pipeline classes would issue them. The engine pulls ops lazily; the device
// interpreter materialises the same stream, so the two cannot drift apart.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/container/small_vector.hpp>

#include "sim/op.hpp"
#include "sim/program.hpp"
#include "sim/state_hash.hpp"

namespace pipesim::sim {

// Evaluates a postfix expression over an environment. Throws ScenarioError at expr.loc on
// division by zero or a malformed expression.
int64_t eval(const Expr& expr, const std::vector<int64_t>& env);

// Geometry of one CTA in the grid.
struct CtaCoord {
  int cta = 0;
  int cluster = 0;
  int rank = 0;
};
CtaCoord cta_coord(const Kernel& k, int cta);

// Index of the role that owns `warp`, or -1.
int role_of_warp(const Kernel& k, int warp);

// Arrivals one warp contributes per call for a pipeline side (0 if not its turn): threads -> 32
// per warp, warps -> 1, warpgroups -> 1 from the first warp of each group of four in the role.
int64_t arrivals_per_warp(const Participants& p, int warp_in_role);

class WarpProgram {
 public:
  WarpProgram(const Kernel& kernel, int cta, int warp);

  int role() const { return role_; }
  // The next primitive op; false once the role's program has finished (the warp exits).
  bool next(Op& op);
  // Its position and state (loop variables, `var`s, pipeline states, ops not yet taken), for the
  // exhaustive search's visited set (sim/explore.hpp).
  void hash_into(StateHash& h) const;
  // A computed operand out of its range (sim/operand_rules.hpp): next() yields an OpKind::Fault at
  // the statement's site, then the program ends. The rule's id and its sentence.
  const std::pair<std::string, std::string>& fault() const { return fault_; }
  // A load's value, delivered by whoever executes the SmemLoad op (the engine) before the next op.
  void set_value(uint32_t slot, int64_t v) {
    env_[slot] = v;
    hashed_ = false;
  }

 private:
  struct Frame {
    const std::vector<Stmt>* body = nullptr;
    size_t pc = 0;
    const Stmt* loop = nullptr;  // set for a for-loop body: re-enter while var < end
    int64_t end = 0, step = 1;
  };
  struct SideState {
    int64_t index = 0, phase = 0;  // PipelineState; PipelineStateSimple keeps n in `index`
    int64_t advances = 0;          // since the start (or the last override)
    StateKind kind = StateKind::PipelineState;
    bool overridden = false;
  };
  struct PipeWarp {
    SideState producer, consumer;
    int64_t acquired = -1;              // stage of the last producer_acquire
    // Stages waited on and not yet released, oldest at `head` (a FIFO kept inline).
    boost::container::small_vector<int64_t, 8> unreleased;
    size_t head = 0;
  };

  void expand(const Stmt& s);   // pushes ops for one statement onto queue_
  void expand_pipe(const Stmt& s);
  void set_state(const Stmt& s);
  Op make(OpKind kind, const Stmt& s) const;
  bool bar_of(const Stmt& s, BarRef& out);
  // Yields the fault op and ends the program when `why` is not empty (a rule broke).
  bool refuse(const Stmt& s, std::string_view rule, std::string why);
  int64_t value(const std::optional<Expr>& e, int64_t fallback) const;
  uint64_t box_of(const Stmt& s) const;
  bool set_row(Op& op, const Stmt& s);
  int64_t stage_index(const SideState& st, int64_t stages) const;
  int64_t stage_phase(const SideState& st, int64_t stages) const;
  void advance(SideState& st, int64_t stages);
  void emit_acquire_wait(const PipelineDecl& p, PipeWarp& pw, const Stmt& s);
  void emit_producer_acquire(const PipelineDecl& p, PipeWarp& pw, const Stmt& s);
  void require_acquired(const PipelineDecl& p, const PipeWarp& pw, const Stmt& s) const;

  int64_t leader_rank() const;   // cluster rank of this CTA pair's leader (own rank if cta_group 1)
  int64_t pair_mask() const;     // the pair's ranks (own rank only if cta_group 1)
  BarRef at_leader(uint32_t array, int64_t index) const;
  int64_t cta_group_of(const Stmt& s);  // 0: refused
  void push_commit(const Stmt& s, uint32_t array, int64_t index, int64_t mask);

  const Kernel* kernel_;
  int role_ = -1;
  std::pair<std::string, std::string> fault_;  // refuse(): rule id, sentence
  CtaCoord coord_;
  // Inline storage: thousands of warps step in turn, so their state stays out of separate
  // heap blocks.
  boost::container::small_vector<int64_t, 24> env_;
  boost::container::small_vector<Frame, 6> stack_;
  boost::container::small_vector<PipeWarp, 4> pipes_;
  // Ops of the current statement, consumed from qhead_: an inline buffer (most statements make
  // one to three ops) and a spill vector for long expansions (tails, wide multicasts).
  static constexpr uint32_t kIdleSteps = 4096;  // statements without an op before next() yields anyway
  static constexpr size_t kQueueInline = 8;
  // hash_into's digest of the state, kept until next() or set_value() changes it: the search hashes
  // every warp at every state it reaches, and most warps did not move since the last.
  mutable uint64_t hash_ = 0;
  mutable bool hashed_ = false;
  Op qbuf_[kQueueInline];
  std::vector<Op> qspill_;
  size_t qsize_ = 0, qhead_ = 0;
  void emit(const Op& op) {
    if (qsize_ < kQueueInline) qbuf_[qsize_] = op;
    else qspill_.push_back(op);
    ++qsize_;
  }
};

}  // namespace pipesim::sim
