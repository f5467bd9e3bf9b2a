// The scoreboard: when a warp's instruction can issue, given when the instructions that produce its
// operands deliver them, and what an SM's path for global stores takes (docs/calibration.md, "PTX
// instructions"). The PTX is not the order the SM issues in: ptxas schedules each basic block by its
// dependences. So inside a block an instruction issues at its place in the block (one per
// `instruction_ns`) or when its operands are ready, whichever is later, and the branch or synchronising
// op that ends the block waits for all of them: a block takes the longer of its issue and its critical
// path, and a chain carried from one block to the next waits at each. The wait is a stall: its warp
// waits, its sub-partition's issue slot does not. Latencies are per class of PTX instruction, measured
// on the H100 by kernels/interp/latprobe.cu.
#include "verify/ptx/machine_impl.hpp"

namespace pipesim::ptx {

Latency latency_class(const DInstr& d) {
  switch (d.op) {
    case Op::Nop: case Op::Bra: case Op::Call: case Op::Ret: case Op::Exit: return Latency::None;
    case Op::Mov: return Latency::Pass;
    case Op::Cvt: {
      const bool df = is_float(d.type), sf = is_float(d.type2);
      if (df && sf) return Latency::Convert;
      if (df || sf) return Latency::IntConvert;
      return Latency::Pass;  // between integer widths: a register choice or one ALU op
    }
    case Op::Cvtpack: return Latency::Convert;
    case Op::Rcp: case Op::Sqrt: case Op::Rsqrt: case Op::Ex2: case Op::Lg2: case Op::Sin: case Op::Cos:
    case Op::Tanh:
      // Without .ftz the approximations add a fix-up for subnormals (rcp.approx.f32: 41 cycles against
      // ex2.approx.ftz.f32's 17).
      return d.flags & F_FTZ ? Latency::Mufu : Latency::MufuFixup;
    // Integer division is an emulated sequence of its own (measured); a float div.rn is taken as an
    // SFU approximation with its fix-up (assumed).
    case Op::Div: case Op::Rem: return is_float(d.type) ? Latency::MufuFixup : Latency::Divide;
    // A 64-bit integer multiply (.lo or .hi; .wide is one IMAD) is a sequence of 32-bit IMADs on the
    // SM (latprobe: mul.lo.u64 17 cycles, mul.hi.u64 37). CUTLASS's tile schedulers divide by FastDivmod.
    case Op::Mul: case Op::Mad: case Op::MadC:
      if ((d.flags & F_WIDE) || (d.type != Type::U64 && d.type != Type::S64)) return Latency::Alu;
      return d.flags & F_HI ? Latency::MulHi64 : Latency::Mul64;
    case Op::Ld: case Op::Atom:
      switch (d.space) {
        case Space::Shared: return Latency::SharedLoad;
        case Space::Param: case Space::Const: return Latency::Const;
        default: return Latency::GlobalLoad;  // global, local and generic: an L2 hit
      }
    case Op::Ldmatrix: return Latency::SharedLoad;
    case Op::Shfl: return Latency::Shfl;
    case Op::Vote: case Op::Match: case Op::Redux: case Op::Activemask: case Op::Elect: return Latency::Alu;
    default: break;
  }
  if (d.op < Op::Ld) return Latency::Alu;  // integer, bit, compare, move and floating-point families
  return Latency::None;  // stores, the warp's barriers and every synchronising op (the engine times them)
}

namespace {

// A float format, the 8-, 6- and 4-bit ones included (is_float leaves those out).
bool is_float_format(Type t) { return is_float(t) || is_narrow_float(t) || t == Type::E4M3 || t == Type::E5M2; }

IssueClass issue_class(const DInstr& d) {
  const bool fl = is_float(d.type);
  switch (d.op) {
    case Op::Cvt: {
      const bool df = is_float_format(d.type), sf = is_float_format(d.type2);
      if (sf && !df) return IssueClass::Xu;  // F2I
      // F2F (F2FP, to the 8-bit formats too), I2F; between integer widths: a move.
      return df ? IssueClass::Convert : IssueClass::Default;
    }
    case Op::Cvtpack: return IssueClass::Convert;
    case Op::Rcp: case Op::Sqrt: case Op::Rsqrt: case Op::Ex2: case Op::Lg2: case Op::Sin: case Op::Cos:
    case Op::Tanh: case Op::Popc: case Op::Clz: case Op::Bfind: case Op::Brev:
      return IssueClass::Xu;
    case Op::Div: case Op::Rem: return fl ? IssueClass::Xu : IssueClass::Int;
    // Compares, selects, minimum and maximum run on the integer pipe for floats too (assumed: the CUDA
    // C++ Programming Guide puts "compare, minimum, maximum" at the integer rate), and so does fp64.
    case Op::Setp: case Op::Selp: case Op::Slct: case Op::Set: case Op::Min: case Op::Max: case Op::Testp:
    case Op::Copysign:
      return IssueClass::Int;
    case Op::Fma: case Op::Add: case Op::Sub: case Op::Mul: case Op::Mad: case Op::Abs: case Op::Neg:
      if (fl) return d.type == Type::F64 ? IssueClass::Int : IssueClass::Default;
      return IssueClass::Int;
    case Op::Mov: return IssueClass::Default;
    // A shared-memory access holds the sub-partition's issue for its dispatch (smemprobe.cu's mix).
    case Op::Ld: case Op::St: return d.space == Space::Shared ? IssueClass::Shared : IssueClass::Default;
    case Op::Ldmatrix: case Op::Stmatrix: return IssueClass::Shared;
    default: break;
  }
  if (d.op > Op::Exit && d.op < Op::Mov) return IssueClass::Int;  // the integer, bit and compare families
  return IssueClass::Default;
}

}  // namespace

void classify_latency(DInstr& d) {
  d.issue = issue_class(d);
  d.latency = latency_class(d);
  d.ndst = d.latency == Latency::None ? 0 : (d.flags & F_TWO_DST) ? 2 : 1;
  d.boundary = d.control || d.op >= Op::Fence || (d.flags & F_FENCE);
}

namespace {

template <class F>
void each_operand(const Exec& x, const DOp& o, F&& f) {
  if (o.kind == OpKind::Vec) {
    for (uint32_t k = 0; k < o.count; ++k) f(x.fn->pool[o.idx + k]);
  } else {
    f(o);
  }
}

}  // namespace

void scoreboard_issue(Exec& x, const DInstr& in, uint32_t lanes) {
  Frame& fr = *x.frame;
  if (fr.ready.size() != x.fn->nvals) {  // the grid was given latencies after this frame was pushed
    fr.ready.resize(x.fn->nvals, 0.0);
    fr.pred_ready.resize(x.fn->npreds, 0.0);
  }
  double src = in.guard >= 0 ? fr.pred_ready[static_cast<uint32_t>(in.guard)] : 0.0;
  const double clock = x.elapsed_now();
  const auto read = [&](const DOp& o) {
    if (o.kind == OpKind::Reg || (o.kind == OpKind::Addr && o.base == AddrBase::Reg)) {
      // A parameter value's first use reads its lines (ptxas's placement; the SM waits here).
      if (o.idx < fr.param_pending.size() && fr.param_pending[o.idx] != 0) {
        const uint64_t tag = fr.param_pending[o.idx];
        fr.ready[o.idx] = std::max(fr.ready[o.idx], x.param_lines_ready((tag >> 32) - 1, (tag & 0xffffffffu) - 1, clock));
        fr.param_pending[o.idx] = 0;
      }
      src = std::max(src, fr.ready[o.idx]);
    } else if (o.kind == OpKind::Pred) {
      src = std::max(src, fr.pred_ready[o.idx]);
    }
  };
  for (uint32_t i = in.ndst; i < kMaxOps; ++i) each_operand(x, in.ops[i], read);  // unused ones are None
  if (in.boundary) {
    // A branch or synchronising op issues after every instruction of its block (ptxas schedules a
    // block's instructions before the op that ends it) and once its own operands are ready.
    // A fence beyond the CTA (or an op that carries one) holds the warp until the fence completes.
    const double t = std::max({clock, src, x.block_issue}) + ((in.flags & F_FENCE) && lanes != 0 ? x.grid->costs.fence_ns : 0.0);
    x.stall_ns += t - clock;
    x.block_issue = 0;
    x.issue_at = t;
    return;
  }
  // Inside a block, ptxas orders instructions by their operands: one issues at its place in the
  // block's order or once its operands are ready, whichever is later, without holding up those after
  // it that do not need it.
  const double t = std::max(clock, src);
  x.issue_at = t;
  // A class that holds the sub-partition longer than one issue owes the rest (its slot's time).
  const double extra = std::max(0.0, x.grid->issue_ns[static_cast<size_t>(in.issue)] - x.grid->instruction_ns);
  x.owed_ns += extra;
  x.block_issue = std::max(x.block_issue, t + x.grid->instruction_ns + extra);
  if (lanes == 0 || in.ndst == 0) return;  // nothing written
  const double ready = in.latency == Latency::Pass ? src : t + x.grid->latency_ns[static_cast<size_t>(in.latency)];
  const auto write = [&](const DOp& o) {
    if (o.kind == OpKind::Reg && o.idx < fr.param_pending.size()) fr.param_pending[o.idx] = 0;  // overwritten
    if (o.kind == OpKind::Reg) fr.ready[o.idx] = ready;
    else if (o.kind == OpKind::Pred) fr.pred_ready[o.idx] = ready;
  };
  for (uint32_t i = 0; i < in.ndst; ++i) each_operand(x, in.ops[i], write);
}

void Exec::read_params_at_use(const DOp& v) {
  const uint64_t tag = (param_first_line << 32) | param_last_line;
  each_operand(*this, v, [&](const DOp& o) {
    if (o.kind != OpKind::Reg) return;
    if (frame->param_pending.size() <= o.idx) frame->param_pending.resize(fn->nvals, 0);
    frame->param_pending[o.idx] = tag;
  });
}

void Exec::charge_shared(uint32_t wavefronts) {
  const InstructionTiming& c = grid->costs;
  if (wavefronts == 0 || !c.shared_timed()) return;
  // The SM's banks serve a wavefront every shared_wavefront_ns to all its warps: a backlog that
  // drains with time. The step ends here so that the SM's other warps come in time order (a warp a step
  // ahead would put its accesses in the backlog before theirs).
  const double t = grid->scoreboard ? issue_at : elapsed_now();
  double taken = t;
  if (c.shared_wavefront_ns > 0) {
    if (grid->shared_banks.size() <= place.sm) grid->shared_banks.resize(place.sm + 1);
    taken += grid->shared_banks[place.sm].take(t, static_cast<double>(wavefronts) * c.shared_wavefront_ns);
  }
  // The warp goes on once the banks take its access and its own time is out: an access's least, or
  // its wavefronts' where they take longer (smemprobe.cu: one warp stores every 4.2 cycles, a 32-way
  // conflicted store every 62.8, and the fmas after an access wait for it). Its issue slot's share is
  // the scoreboard's (IssueClass::Shared); the rest is a stall, the slot free for other warps.
  const double own = std::max(c.shared_access_ns, static_cast<double>(wavefronts) * c.shared_warp_wavefront_ns);
  stall_ns += std::max(0.0, std::max(t + own, taken) - elapsed_now());
  end_step = true;
}

void charge_global_store(Exec& x, const DOp& addr, uint32_t bytes) {
  GridState& g = *x.grid;
  g.global_bytes_stored += uint64_t{bytes} * static_cast<uint64_t>(std::popcount(x.mask));
  const InstructionTiming& c = g.costs;
  if (c.store_sector_ns <= 0 && c.store_issue_ns <= 0 && c.device_sector_ns <= 0 && c.device_partial_sector_ns <= 0) return;
  // The 32-byte sectors the warp's lanes write, and which of their bytes: a sector written whole
  // costs store_sector_ns, one written in part store_partial_sector_ns (kernels/interp/gstprobe.cu),
  // on the SM's path and likewise on the device's.
  struct Sector {
    uint64_t index;
    uint32_t bytes;
  };
  std::array<Sector, 64> sectors;
  size_t n = 0;
  bool overflow = false;
  for_lanes(x.mask, [&](uint32_t l) {
    const uint64_t a = x.address(addr, l);
    for (uint64_t s = a / 32; s <= (a + bytes - 1) / 32; ++s) {
      const uint64_t lo = std::max(a, s * 32) - s * 32, hi = std::min(a + bytes, s * 32 + 32) - s * 32;
      const uint32_t m = static_cast<uint32_t>(((uint64_t{1} << hi) - 1) & ~((uint64_t{1} << lo) - 1));
      size_t k = 0;
      while (k < n && sectors[k].index != s) ++k;
      if (k == n) {
        if (n == sectors.size()) {
          overflow = true;
          continue;
        }
        sectors[n++] = {s, 0};
      }
      sectors[k].bytes |= m;
    }
  });
  size_t whole = 0;
  for (size_t k = 0; k < n; ++k) whole += sectors[k].bytes == ~0u;
  const double in_part = static_cast<double>(n - whole) + (overflow ? 32.0 : 0.0);  // overflow: not reached
  const double cost = c.store_issue_ns + static_cast<double>(whole) * c.store_sector_ns + in_part * c.store_partial_sector_ns;
  const double t = x.grid->scoreboard ? x.issue_at : x.elapsed_now();
  // The device's path: the store waits for the work queued before it (a backlog that drains with time).
  double begin = t;
  if (c.device_sector_ns > 0 || c.device_partial_sector_ns > 0)
    begin += g.device_stores.take(t, static_cast<double>(whole) * c.device_sector_ns + in_part * c.device_partial_sector_ns);
  // One path per CTA, first come first served: the store issues once both paths take it (its block
  // ends no earlier). The step ends here, so that the engine lets the CTA's other warps store in time
  // order rather than after all of this warp's stores ahead of them.
  double& free = g.store_free_ns[x.place.cta];
  begin = std::max(begin, free);
  free = begin + cost;
  if (g.scoreboard) x.block_issue = std::max(x.block_issue, begin + g.instruction_ns);
  else x.stall_ns += begin - t;
  x.end_step = true;
}

}  // namespace pipesim::ptx
