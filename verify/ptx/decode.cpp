// decode(): the entry and every function it calls, instruction by instruction, into the executable
// form of machine_impl.hpp; the module's variables laid out in their spaces (see the address map there).
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "verify/ptx/float_bits.hpp"
#include "verify/ptx/machine_impl.hpp"

namespace pipesim::ptx {
namespace {

uint64_t align_up(uint64_t v, uint64_t a) { return a <= 1 ? v : (v + a - 1) / a * a; }
uint32_t var_align(const Variable& v) {
  const uint32_t natural = std::max<uint32_t>(1, type_bytes(v.type));
  return v.align ? v.align : natural;
}
uint32_t param_align(const Param& p) { return p.align ? p.align : std::max<uint32_t>(1, type_bytes(p.type)); }

}  // namespace

// ---- Mods ------------------------------------------------------------------------------------------
Mods::Mods(const Instruction& in) {
  for (const std::string& s : in.mods) {
    const Type t = parse_type(s);
    if (t != Type::None) {
      types_.push_back(t);
    } else {
      rest_.push_back(s);
    }
  }
  taken_.assign(rest_.size(), false);
}

bool Mods::take(const char* m) {
  for (size_t i = 0; i < rest_.size(); ++i)
    if (!taken_[i] && rest_[i] == m) {
      taken_[i] = true;
      return true;
    }
  return false;
}

int Mods::take_one(std::initializer_list<const char*> options) {
  int k = 0;
  for (const char* o : options) {
    if (take(o)) return k;
    ++k;
  }
  return -1;
}

bool Mods::has(const char* m) const {
  for (size_t i = 0; i < rest_.size(); ++i)
    if (!taken_[i] && rest_[i] == m) return true;
  return false;
}

bool Mods::orders_beyond_cta() const {
  return (has("release") || has("acq_rel") || has("sc")) && (has("cluster") || has("gpu") || has("sys"));
}

void Mods::take_memory_hints() {
  static const char* const kHints[] = {
      "volatile", "relaxed", "acquire", "release", "weak", "mmio", "sc", "acq_rel", "cta", "cluster",
      "gpu", "sys", "ca", "cg", "cs", "lu", "cv", "wb", "wt", "nc", "unified", "L1::evict_normal",
      "L1::evict_unchanged", "L1::evict_first", "L1::evict_last", "L1::no_allocate", "L2::evict_first",
      "L2::evict_last", "L2::evict_normal", "L2::evict_unchanged", "L2::cache_hint", "L2::64B",
      "L2::128B", "L2::256B", "L2::evict_last::L2::evict_first"};
  for (size_t i = 0; i < rest_.size(); ++i)
    for (const char* h : kHints)
      if (!taken_[i] && rest_[i] == h) taken_[i] = true;
}

bool Mods::done() const {
  return std::all_of(taken_.begin(), taken_.end(), [](bool b) { return b; });
}

// ---- DecodeCtx -----------------------------------------------------------------------------------
std::string DecodeCtx::full_name() const {
  std::string s = in->opcode;
  for (const std::string& m : in->mods) s += "." + m;
  return s;
}

void DecodeCtx::unsupported() const {
  throw PtxError(module.path, in->pos, "unsupported instruction '" + full_name() + "'");
}

void DecodeCtx::fail(const std::string& message, TextPos at) const {
  throw PtxError(module.path, at.line ? at : in->pos, "'" + full_name() + "': " + message);
}

void DecodeCtx::expect_ops(size_t lo, size_t hi) const {
  const size_t n = in->ops.size();
  if (n < lo || n > hi) {
    fail(lo == hi ? "takes " + std::to_string(lo) + " operands, not " + std::to_string(n)
                  : "takes " + std::to_string(lo) + " to " + std::to_string(hi) + " operands, not " +
                        std::to_string(n));
  }
}

uint32_t DecodeCtx::symbol(const SymbolRef& ref, TextPos at) {
  SymInfo s;
  switch (ref.kind) {
    case SymbolKind::ModuleVar: {
      if (ref.index >= module.vars.size()) fail("bad symbol", at);
      const Variable& v = module.vars[ref.index];
      // Module variables were laid out in decode(); find their symbol by name.
      if (auto it = prog.symbol_index.find(v.name); it != prog.symbol_index.end()) return it->second;
      fail("variable '" + v.name + "' of an unsupported state space", at);
    }
    case SymbolKind::FunctionVar: {
      if (ref.index >= function.vars.size()) fail("bad symbol", at);
      const Variable& v = function.vars[ref.index];
      const std::string key = function.name + "::" + v.name + "#" + std::to_string(ref.index);
      if (auto it = prog.symbol_index.find(key); it != prog.symbol_index.end()) return it->second;
      fail("variable '" + v.name + "' of an unsupported state space", at);
    }
    case SymbolKind::Param: {
      // Indices past the parameters name the function's return parameters.
      if (ref.index >= function.params.size() + function.returns.size()) fail("bad parameter", at);
      const std::string key = ref.index < function.params.size()
                                  ? function.name + "::param#" + std::to_string(ref.index)
                                  : function.name + "::ret#" + std::to_string(ref.index - function.params.size());
      if (auto it = prog.symbol_index.find(key); it != prog.symbol_index.end()) return it->second;
      fail("parameter #" + std::to_string(ref.index) + " has no place in the frame", at);
    }
    case SymbolKind::Function: {
      const std::string key = "function#" + std::to_string(ref.index);
      if (auto it = prog.symbol_index.find(key); it != prog.symbol_index.end()) return it->second;
      s.kind = SymKind::Function;
      s.addr = ref.index;
      s.name = key;
      return prog.add_symbol(std::move(s));
    }
  }
  fail("bad symbol", at);
}

namespace {

uint64_t float_imm_for(Type t, int64_t bits, uint8_t fbits) {
  const double v = fbits == 64 ? std::bit_cast<double>(static_cast<uint64_t>(bits))
                               : static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(bits)));
  switch (t) {
    case Type::F64: return std::bit_cast<uint64_t>(v);
    case Type::F32: case Type::TF32: return std::bit_cast<uint32_t>(static_cast<float>(v));
    case Type::F16: return f32_to_f16(static_cast<float>(v));
    case Type::BF16: return f32_to_bf16(static_cast<float>(v));
    case Type::F16x2: { const uint64_t h = f32_to_f16(static_cast<float>(v)); return h | h << 16; }
    case Type::BF16x2: { const uint64_t h = f32_to_bf16(static_cast<float>(v)); return h | h << 16; }
    default: return static_cast<uint64_t>(bits);  // an integer instruction takes the bits as written
  }
}

}  // namespace

DOp DecodeCtx::value(const Operand& o, Type t, bool lenient_width) {
  DOp d;
  switch (o.kind) {
    case OperandKind::Reg: {
      if (o.reg >= function.regs.size()) fail("bad register", o.pos);
      const Register& r = function.regs[o.reg];
      if (r.type == Type::Pred) {
        if (t != Type::Pred) fail("register " + r.name + " is a predicate; a ." + type_name(t) + " value is expected", o.pos);
        d.kind = OpKind::Pred;
        d.idx = static_cast<uint32_t>(~df.reg_slot[o.reg]);
        d.neg = o.negate;
        d.bits = 1;
        return d;
      }
      if (t == Type::Pred) fail("register " + r.name + " is not a predicate", o.pos);
      const uint32_t rb = type_bits(r.type);
      if (t != Type::None && rb < type_bits(t) && !(lenient_width && rb >= 8))
        fail("register " + r.name + " is ." + type_name(r.type) + ", too narrow for ." + type_name(t), o.pos);
      d.kind = OpKind::Reg;
      d.idx = static_cast<uint32_t>(df.reg_slot[o.reg]);
      d.bits = static_cast<uint8_t>(rb);
      if (uses) uses->push_back(d.idx);
      return d;
    }
    case OperandKind::Imm:
      d.kind = OpKind::Imm;
      if (t == Type::Pred) {
        d.imm = o.imm != 0;
      } else if (t == Type::F32 || t == Type::F64) {
        // An integer literal where a float is expected is its value; for the 16-bit and packed float
        // types it is the bits (0x3c00), as they have no float literal syntax of their own.
        const double v = static_cast<double>(o.imm);
        d.imm = static_cast<int64_t>(float_imm_for(t, std::bit_cast<int64_t>(v), 64));
      } else {
        d.imm = o.imm;
      }
      return d;
    case OperandKind::FImm:
      d.kind = OpKind::Imm;
      d.imm = static_cast<int64_t>(float_imm_for(t, o.imm, o.fbits));
      return d;
    case OperandKind::Special:
      d.kind = OpKind::Special;
      d.sreg = static_cast<uint8_t>(o.sreg);
      d.comp = static_cast<uint8_t>(o.imm);
      return d;
    case OperandKind::Symbol: {
      d.kind = OpKind::Sym;
      d.imm = o.imm;  // `name+8`
      d.idx = symbol(o.sym, o.pos);
      d.frame_rel = prog.symbols[d.idx].kind == SymKind::Frame;
      return d;
    }
    default: fail("expected a register, an immediate or a symbol", o.pos);
  }
}

DOp DecodeCtx::dest(const Operand& o, Type t, bool lenient_width) {
  if (o.kind == OperandKind::Sink) {
    DOp d;
    d.kind = OpKind::Sink;
    return d;
  }
  if (o.kind != OperandKind::Reg) fail("the destination must be a register", o.pos);
  DOp d = value(o, t, lenient_width);
  if (d.kind == OpKind::Reg && uses && defs) {  // value() counted it as read
    uses->pop_back();
    defs->push_back(d.idx);
  }
  return d;
}

DOp DecodeCtx::pred_src(const Operand& o) {
  if (o.kind == OperandKind::Imm) {
    DOp d;
    d.kind = OpKind::Imm;
    d.imm = o.imm != 0;
    d.neg = o.negate;
    return d;
  }
  if (o.kind != OperandKind::Reg) fail("expected a predicate", o.pos);
  return value(o, Type::Pred);
}

DOp DecodeCtx::pred_dst(const Operand& o) {
  if (o.kind == OperandKind::Sink) {
    DOp d;
    d.kind = OpKind::Sink;
    return d;
  }
  if (o.kind != OperandKind::Reg) fail("expected a predicate register", o.pos);
  return value(o, Type::Pred);
}

DOp DecodeCtx::address(const Operand& o) {
  if (o.kind != OperandKind::Addr) fail("expected an address [..]", o.pos);
  DOp d;
  d.kind = OpKind::Addr;
  d.imm = o.imm;
  if (!o.has_base) return d;
  if (o.base_is_sym) {
    d.base = AddrBase::Sym;
    d.idx = symbol(o.sym, o.pos);
    d.frame_rel = prog.symbols[d.idx].kind == SymKind::Frame;
    return d;
  }
  if (o.reg >= function.regs.size()) fail("bad register", o.pos);
  const Register& r = function.regs[o.reg];
  if (r.type == Type::Pred) fail("a predicate cannot be an address", o.pos);
  d.base = AddrBase::Reg;
  d.idx = static_cast<uint32_t>(df.reg_slot[o.reg]);
  d.bits = static_cast<uint8_t>(type_bits(r.type));
  if (uses) uses->push_back(d.idx);
  return d;
}

DOp DecodeCtx::vector_of(const Operand& o, Type t, bool is_dest, bool lenient_width) {
  DOp v;
  v.kind = OpKind::Vec;
  v.idx = static_cast<uint32_t>(df.pool.size());
  if (o.kind == OperandKind::Vector) {
    std::vector<DOp> elems;
    for (const Operand& e : o.elems) elems.push_back(is_dest ? dest(e, t, lenient_width) : value(e, t, lenient_width));
    v.count = static_cast<uint32_t>(elems.size());
    for (const DOp& e : elems) df.pool.push_back(e);
    return v;
  }
  const DOp e = is_dest ? dest(o, t, lenient_width) : value(o, t, lenient_width);
  df.pool.push_back(e);
  v.count = 1;
  return v;
}

// ---- Layout and the driver ----------------------------------------------------------------------
namespace {

void layout_function(const Function& f, DFunction& df, Program& prog) {
  df.name = f.name;
  df.is_entry = f.is_entry;
  df.is_extern = f.is_extern;
  df.reg_slot.resize(f.regs.size());
  df.reg_bits.resize(f.regs.size());
  for (size_t i = 0; i < f.regs.size(); ++i) {
    if (f.regs[i].type == Type::Pred) {
      df.reg_slot[i] = ~static_cast<int32_t>(df.npreds++);
      df.reg_bits[i] = 1;
    } else {
      df.reg_slot[i] = static_cast<int32_t>(df.nvals++);
      df.reg_bits[i] = static_cast<uint8_t>(type_bits(f.regs[i].type));
    }
  }
  // The frame: .local variables and call-scope .param variables, then (device functions) the
  // function's own parameters and returns. Every thread has its own copy.
  uint64_t off = 0;
  for (size_t i = 0; i < f.vars.size(); ++i) {
    const Variable& v = f.vars[i];
    SymInfo s;
    s.name = f.name + "::" + v.name + "#" + std::to_string(i);
    s.bytes = v.bytes();
    if (v.space == Space::Local || v.space == Space::Param) {
      off = align_up(off, var_align(v));
      s.kind = SymKind::Frame;
      s.addr = off;
      off += std::max<uint64_t>(v.bytes(), 1);
    } else if (v.space == Space::Shared) {
      s.kind = SymKind::Shared;
      if (v.is_extern) {
        s.addr = UINT64_MAX;  // the dynamic area: placed once statics are known
      } else {
        prog.static_smem = align_up(prog.static_smem, var_align(v));
        s.addr = prog.static_smem;
        prog.static_smem += v.bytes();
      }
    } else {
      continue;  // other spaces inside a function are reported where used
    }
    prog.add_symbol(s);
  }
  if (!f.is_entry) {
    // Params then returns, each a frame slot laid out the same way; only the tag differs.
    auto frame_slots = [&](const std::vector<Param>& list, const char* tag, std::vector<uint64_t>& offsets,
                           std::vector<uint32_t>& sizes) {
      for (size_t i = 0; i < list.size(); ++i) {
        off = align_up(off, param_align(list[i]));
        offsets.push_back(off);
        sizes.push_back(static_cast<uint32_t>(list[i].bytes()));
        SymInfo s;
        s.kind = SymKind::Frame;
        s.addr = off;
        s.bytes = list[i].bytes();
        s.name = f.name + "::" + tag + "#" + std::to_string(i);
        prog.add_symbol(s);
        off += std::max<uint64_t>(list[i].bytes(), 1);
      }
    };
    frame_slots(f.params, "param", df.param_offset, df.param_bytes);
    frame_slots(f.returns, "ret", df.return_offset, df.return_bytes);
  } else {
    uint64_t poff = 0;
    for (size_t i = 0; i < f.params.size(); ++i) {
      poff = align_up(poff, param_align(f.params[i]));
      SymInfo s;
      s.kind = SymKind::KernelParam;
      s.addr = poff;
      s.bytes = f.params[i].bytes();
      s.name = f.name + "::param#" + std::to_string(i);
      prog.kernel_param_names.push_back(f.params[i].name);
      prog.kernel_param_symbols.push_back(prog.add_symbol(s));
      poff += f.params[i].bytes();
    }
    prog.kernel_param_bytes = poff;
  }
  df.frame_bytes = align_up(off, 16);
}

// A try_wait is a wait loop when a branch within the next few instructions goes back to it or before
// (CUTLASS's `LAB_WAIT: try_wait P1; @P1 bra DONE; bra LAB_WAIT;`, nvcc's `while (!try_wait(...))`: try_wait,
// selp, setp, bra). Any other try_wait is a peek whose answer the code takes as it comes (CUTLASS's
// producer_try_acquire and consumer_try_wait tokens): the hardware returns false once its time limit
// passes, and the kernel must cope, so the engine holds it until its phase or that limit
// (Timing::mbarrier_try_wait_limit_ns), not until the phase alone. Holding it until the phase hangs a
// 2-stage CUTLASS ring that the GPU runs: the peek at the next stage waits for a release that comes
// only after this stage's copies, which follow the peek.
void mark_peeks(DFunction& df) {
  constexpr size_t kLoopReach = 4;
  for (size_t i = 0; i < df.code.size(); ++i) {
    DInstr& d = df.code[i];
    if (d.op != Op::MbarTryWait) continue;
    bool loop = false;
    for (size_t j = i + 1; j < df.code.size() && j <= i + kLoopReach && !loop; ++j)
      loop = df.code[j].op == Op::Bra && df.code[j].target <= i;
    if (!loop) d.flags |= F_PEEK;
  }
}

void decode_body(const Module& module, const Function& f, DFunction& df, Program& prog) {
  df.code.resize(f.body.size());
  std::vector<std::vector<uint32_t>> uses(f.body.size()), defs(f.body.size());
  for (size_t i = 0; i < f.body.size(); ++i) {
    const Instruction& in = f.body[i];
    DecodeCtx c{module, f, df, prog, &in, static_cast<uint32_t>(i), &uses[i], &defs[i]};
    DInstr& d = df.code[i];
    d.pos = in.pos;
    if (in.has_guard) {
      if (in.guard >= f.regs.size() || f.regs[in.guard].type != Type::Pred)
        c.fail("the guard is not a predicate register");
      d.guard = ~df.reg_slot[in.guard];
      d.guard_neg = in.guard_negated;
    }
    Mods m(in);
    const bool known = decode_control(c, m, d) || decode_move(c, m, d) || decode_cvt(c, m, d) ||
                       decode_int(c, m, d) || decode_float(c, m, d) ||
                       decode_mem(c, m, d) || decode_warp(c, m, d) || decode_sync(c, m, d) ||
                       decode_tcgen05(c, m, d) || decode_clc(c, m, d);
    if (!known || !m.done() || d.fn == nullptr) c.unsupported();
    classify_latency(d);
    if (d.space == Space::Generic) {  // `ld.u32 %r, [shared_var]`: a variable named in a generic access is
      for (DOp& o : d.ops)            // its generic address
        if (o.kind == OpKind::Addr && o.base == AddrBase::Sym && prog.symbols[o.idx].kind == SymKind::Shared)
          o.to_generic = true;
    }
    if (d.op == Op::Call) {  // a call's return registers are written when it returns
      const DOp& rets = d.ops[0];
      for (uint32_t k = 0; k < rets.count; ++k)
        if (df.pool[rets.idx + k].kind == OpKind::Reg) defs[i].push_back(df.pool[rets.idx + k].idx);
    }
  }
  // A warp may never run past the last instruction: nvcc ends every body in ret, exit or a branch, and
  // a hand-written or damaged file that does not is refused here (found by fuzz_ptx_kernel).
  const auto ends_flow = [](const DInstr& d) {
    return d.guard < 0 && (d.op == Op::Ret || d.op == Op::Exit || d.op == Op::Bra || d.op == Op::Trap);
  };
  if (df.code.empty() || !ends_flow(df.code.back()))
    throw PtxError(module.path, f.body.empty() ? f.pos : f.body.back().pos,
                   "'" + f.name + "' can run past its last instruction: a body must end in ret, exit or an unconditional bra");
  for (size_t i = 0; i < df.code.size(); ++i)
    if (df.code[i].op == Op::Bra && df.code[i].target >= df.code.size())
      throw PtxError(module.path, f.body[i].pos, "the branch target is past the last instruction of '" + f.name + "'");
  mark_peeks(df);
  compute_reconvergence(df);
  df.nregs = df.nvals;
  compact_registers(df, uses, defs);
}

}  // namespace

std::shared_ptr<const Program> decode(const Module& module, const Function& entry) {
  auto prog = std::make_shared<Program>();
  prog->path = module.path;
  prog->target = module.target;
  const Function* base = module.functions.data();
  if (&entry < base || &entry >= base + module.functions.size())
    throw PtxError(module.path, entry.pos, "the entry is not a function of this module");
  prog->entry = static_cast<uint32_t>(&entry - base);
  if (!entry.is_entry) throw PtxError(module.path, entry.pos, "'" + entry.name + "' is not an .entry");
  const EntryDirectives& dir = entry.directives;
  prog->explicit_cluster = dir.explicitcluster || dir.reqnctapercluster[0].has_value();

  // Module variables: .shared statics first (in order), .const and .global in their windows.
  uint64_t const_off = 0, global_off = 0;
  for (const Variable& v : module.vars) {
    SymInfo s;
    s.name = v.name;
    s.bytes = v.bytes();
    if (v.space == Space::Shared) {
      s.kind = SymKind::Shared;
      if (v.is_extern) {
        s.addr = UINT64_MAX;
      } else {
        prog->static_smem = align_up(prog->static_smem, var_align(v));
        s.addr = prog->static_smem;
        prog->static_smem += v.bytes();
      }
    } else if (v.space == Space::Const) {
      const_off = align_up(const_off, var_align(v));
      s.kind = SymKind::Const;
      s.addr = kConstWindow + const_off;
      if (prog->const_init.size() < const_off + v.bytes()) prog->const_init.resize(const_off + v.bytes());
      std::copy_n(v.init.begin(), std::min<uint64_t>(v.init.size(), v.bytes()), prog->const_init.begin() + static_cast<std::ptrdiff_t>(const_off));
      const_off += v.bytes();
    } else if (v.space == Space::Global) {
      global_off = align_up(global_off, std::max<uint32_t>(var_align(v), 16));
      s.kind = SymKind::Global;
      s.addr = kGlobalVarBase + global_off;
      prog->global_vars.emplace_back(s.addr, std::max<uint64_t>(v.bytes(), 1));
      if (!v.init.empty()) prog->global_init.emplace_back(s.addr, v.init);
      global_off += std::max<uint64_t>(v.bytes(), 1);
    } else {
      continue;
    }
    prog->add_symbol(s);
  }
  prog->const_bytes = const_off;
  prog->global_var_bytes = global_off;

  // The call graph from the entry.
  prog->functions.resize(module.functions.size());
  std::vector<uint32_t> work{prog->entry};
  std::vector<uint32_t> order;
  std::set<uint32_t> seen{prog->entry};
  while (!work.empty()) {
    const uint32_t fi = work.back();
    work.pop_back();
    order.push_back(fi);
    for (const Instruction& in : module.functions[fi].body)
      if (in.opcode == "call" && !in.call_indirect && in.callee < module.functions.size() && seen.insert(in.callee).second)
        work.push_back(in.callee);
  }
  std::sort(order.begin(), order.end());
  for (uint32_t fi : order) {
    prog->functions[fi] = std::make_unique<DFunction>();
    prog->functions[fi]->index = fi;
    layout_function(module.functions[fi], *prog->functions[fi], *prog);
    prog->functions[fi]->index = fi;
  }
  // The dynamic shared area after every static, at the largest alignment any .extern array asks.
  uint64_t dyn_align = 16;
  for (const Variable& v : module.vars)
    if (v.space == Space::Shared && v.is_extern) dyn_align = std::max<uint64_t>(dyn_align, var_align(v));
  for (uint32_t fi : order)
    for (const Variable& v : module.functions[fi].vars)
      if (v.space == Space::Shared && v.is_extern) dyn_align = std::max<uint64_t>(dyn_align, var_align(v));
  prog->dynamic_smem_base = align_up(prog->static_smem, dyn_align);
  for (SymInfo& s : prog->symbols)
    if (s.kind == SymKind::Shared && s.addr == UINT64_MAX) s.addr = prog->dynamic_smem_base;

  for (uint32_t fi : order) {
    const Function& f = module.functions[fi];
    DFunction& df = *prog->functions[fi];
    if (f.is_extern) continue;
    decode_body(module, f, df, *prog);
  }
  return prog;
}

}  // namespace pipesim::ptx
