// PTX parser, function bodies: `{ }` scopes flattened with shadowing, register and variable
// declarations, labels (resolved innermost scope first, forward references allowed), .branchtargets
// lists, .loc, instructions and their operands.
#include <array>

#include "verify/ptx/parser_impl.hpp"

namespace pipesim::ptx::detail {
namespace {

struct SpecialInfo {
  std::string_view name;
  SpecialReg reg;
  bool vector;
};

constexpr std::array<SpecialInfo, 30> kSpecials = {{
    {"%tid", SpecialReg::Tid, true},
    {"%ntid", SpecialReg::Ntid, true},
    {"%ctaid", SpecialReg::Ctaid, true},
    {"%nctaid", SpecialReg::Nctaid, true},
    {"%laneid", SpecialReg::Laneid, false},
    {"%warpid", SpecialReg::Warpid, false},
    {"%nwarpid", SpecialReg::Nwarpid, false},
    {"%smid", SpecialReg::Smid, false},
    {"%nsmid", SpecialReg::Nsmid, false},
    {"%gridid", SpecialReg::Gridid, false},
    {"%clusterid", SpecialReg::Clusterid, true},
    {"%nclusterid", SpecialReg::Nclusterid, true},
    {"%cluster_ctaid", SpecialReg::ClusterCtaid, true},
    {"%cluster_nctaid", SpecialReg::ClusterNctaid, true},
    {"%cluster_ctarank", SpecialReg::ClusterCtarank, false},
    {"%cluster_nctarank", SpecialReg::ClusterNctarank, false},
    {"%is_explicit_cluster", SpecialReg::IsExplicitCluster, false},
    {"%clock", SpecialReg::Clock, false},
    {"%clock64", SpecialReg::Clock64, false},
    {"%globaltimer", SpecialReg::Globaltimer, false},
    {"%globaltimer_lo", SpecialReg::GlobaltimerLo, false},
    {"%globaltimer_hi", SpecialReg::GlobaltimerHi, false},
    {"%lanemask_eq", SpecialReg::LanemaskEq, false},
    {"%lanemask_le", SpecialReg::LanemaskLe, false},
    {"%lanemask_lt", SpecialReg::LanemaskLt, false},
    {"%lanemask_ge", SpecialReg::LanemaskGe, false},
    {"%lanemask_gt", SpecialReg::LanemaskGt, false},
    {"%dynamic_smem_size", SpecialReg::DynamicSmemSize, false},
    {"%total_smem_size", SpecialReg::TotalSmemSize, false},
    {"%aggr_smem_size", SpecialReg::AggrSmemSize, false},
}};

// Special registers PTX has and the AST does not (an error names them as such).
constexpr std::array<std::string_view, 8> kUnsupportedSpecials = {
    "%clock_hi", "%reserved_smem_offset_begin", "%reserved_smem_offset_end", "%reserved_smem_offset_cap",
    "%reserved_smem_offset_0", "%reserved_smem_offset_1", "%current_graph_exec", "%reserved_smem_offset_2"};

// "%r12" -> prefix "%r", number 12 (false when there is no digit suffix, or it has a leading zero).
bool split_number(std::string_view name, std::string_view& prefix, uint32_t& number) {
  size_t i = name.size();
  while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9') --i;
  const size_t n = name.size() - i;
  if (n == 0 || i == 0 || n > 9 || (n > 1 && name[i] == '0')) return false;
  number = 0;
  for (size_t k = i; k < name.size(); ++k) number = number * 10 + static_cast<uint32_t>(name[k] - '0');
  prefix = name.substr(0, i);
  return true;
}

int component(std::string_view c) {
  if (c == "x" || c == "r") return 0;
  if (c == "y" || c == "g") return 1;
  if (c == "z" || c == "b") return 2;
  if (c == "w" || c == "a") return 3;
  return -1;
}

constexpr const char* kComponentNames[4] = {".x", ".y", ".z", ".w"};

bool starts_operand_constant(const Token& t) {
  return t.kind == TokKind::Number || t.is('-') || t.is('+') || t.is('(') || t.is('~');
}

}  // namespace

void ModuleParser::body(uint32_t function, TextPos open) {
  fn_ = function;
  loc_ = SourcePos{};
  tables_.clear();
  table_uses_.clear();
  table_use_list_.clear();
  if (scopes_.size() < 2) scopes_.resize(2);
  scopes_[0].clear();
  depth_ = 0;
  const Function& f = fn();
  for (uint32_t i = 0; i < f.params.size(); ++i)
    if (!scopes_[0].names.emplace(f.params[i].name, Binding{Binding::Param, i, 1}).second)
      fail(f.pos, "parameter '" + f.params[i].name + "' of '" + f.name + "' is declared twice");
  for (uint32_t i = 0; i < f.returns.size(); ++i)
    if (!scopes_[0].names.emplace(f.returns[i].name, Binding{Binding::Return, i, 1}).second)
      fail(f.pos, "parameter '" + f.returns[i].name + "' of '" + f.name + "' is declared twice");
  push_scope(open);

  while (depth_ > 0) {
    const Token t = lex_.peek();
    if (t.kind == TokKind::End) fail(scopes_[depth_].open, "this '{' is never closed");
    if (t.is('}')) {
      lex_.next();
      pop_scope();
    } else if (t.is('{')) {
      push_scope(lex_.next().pos);
    } else if (t.is(';')) {
      lex_.next();
    } else if (t.kind == TokKind::Dir) {
      body_directive();
    } else if (t.kind == TokKind::Word && t.text[0] != '%' && lex_.peek2().is(':')) {
      lex_.next();
      lex_.next();
      label_or_list(t);
    } else if (t.is('@') || t.kind == TokKind::Word) {
      instruction();
    } else {
      fail(t.pos, "expected an instruction, a label or a directive, found " + describe(t));
    }
  }
  // brx.idx operands become the list of labels they jump through.
  Function& g = fn();
  for (size_t i = 0; i < table_uses_.size(); ++i) {
    Operand& o = g.body[table_uses_[i].instr].ops[table_uses_[i].op];
    o.kind = OperandKind::Vector;
    o.elems = tables_[table_use_list_[i]];
  }
}

void ModuleParser::push_scope(TextPos open) {
  if (depth_ + 1 >= kMaxScopeDepth) fail(open, "blocks are nested too deeply");
  ++depth_;
  if (scopes_.size() <= depth_) scopes_.resize(depth_ + 1);
  scopes_[depth_].clear();
  scopes_[depth_].open = open;
}

void ModuleParser::pop_scope() {
  resolve_pending(scopes_[depth_], depth_ > 1 ? &scopes_[depth_ - 1] : nullptr);
  scopes_[depth_].clear();
  --depth_;
}

void ModuleParser::resolve_pending(Scope& scope, Scope* outer) {
  for (const LabelRef& r : scope.pending) {
    const auto it = scope.labels.find(r.name);
    const std::string_view name = r.name;
    if (it == scope.labels.end()) {
      if (outer) {
        outer->pending.push_back(r);
        continue;
      }
      fail(r.pos, (r.want_table ? "unknown .branchtargets list '" : "unknown label '") + std::string(name) + "'");
    }
    const LabelDef& d = it->second;
    if (r.table != kNone) {
      if (d.is_table) fail(r.pos, "a .branchtargets list can only name labels, and '" + std::string(name) + "' is a list");
      tables_[r.table][r.op].label = d.target;
    } else if (r.want_table != d.is_table) {
      fail(r.pos, "'" + std::string(name) +
                      (r.want_table ? "' is a label, not a .branchtargets list" : "' is a .branchtargets list, not a label"));
    } else if (d.is_table) {
      table_uses_.push_back(r);
      table_use_list_.push_back(d.target);
    } else {
      fn().body[r.instr].ops[r.op].label = d.target;
    }
  }
}

void ModuleParser::body_directive() {
  const Token t = lex_.peek();
  if (t.text == ".reg") {
    reg_decl();
  } else if (t.text == ".local" || t.text == ".shared" || t.text == ".param" || t.text == ".global" ||
             t.text == ".const") {
    const Space space = t.text == ".local"    ? Space::Local
                        : t.text == ".shared" ? Space::Shared
                        : t.text == ".param"  ? Space::Param
                        : t.text == ".global" ? Space::Global
                                              : Space::Const;
    variable_decl(space, false, true);
  } else if (t.text == ".loc") {
    loc_directive();
  } else if (t.text == ".pragma") {
    lex_.next();
    if (lex_.peek().kind != TokKind::String)
      fail(lex_.peek().pos, "expected a string after .pragma, found " + describe(lex_.peek()));
    lex_.next();
    expect(';', "after the .pragma string");
  } else {
    fail(t.pos, "unexpected directive " + describe(t) + " inside a function body");
  }
}

void ModuleParser::loc_directive() {
  lex_.next();
  auto number = [&](const char* what) {
    const TextPos at = lex_.peek().pos;
    const uint64_t n = expect_uint(what);
    if (n > UINT32_MAX) fail(at, std::string(what) + " does not fit in 32 bits");
    return static_cast<uint32_t>(n);
  };
  SourcePos p;
  p.file = number("a file number after .loc");
  p.line = number("a line number");
  p.col = number("a column number");
  // `, function_name LABEL[+N], inlined_at F L C`: the instruction's own position is the first one.
  while (lex_.peek().is(',')) {
    lex_.next();
    const Token key = expect_word("'function_name' or 'inlined_at'");
    if (key.text == "function_name") {
      expect_word("a label");
      if (lex_.peek().is('+')) {
        lex_.next();
        expect_uint("an offset");
      }
    } else if (key.text == "inlined_at") {
      p.inlined_file = number("a file number");
      p.inlined_line = number("a line number");
      p.inlined_col = number("a column number");
    } else {
      fail(key.pos, "unknown .loc attribute '" + std::string(key.text) + "'");
    }
  }
  // The caller chain: the frame of the latest `.loc` at the inlined_at position (nvcc emits the
  // outer positions first), and this position as a frame for the `.loc`s inlined into it.
  if (p.inlined_file != 0) {
    auto it = frame_at_.find({p.inlined_file, p.inlined_line, p.inlined_col});
    if (it != frame_at_.end()) {
      p.caller = it->second;
    } else {
      m_.inline_frames.push_back(InlineFrame{p.inlined_file, p.inlined_line, p.inlined_col, -1});
      p.caller = static_cast<int32_t>(m_.inline_frames.size() - 1);
    }
  }
  m_.inline_frames.push_back(InlineFrame{p.file, p.line, p.col, p.caller});
  frame_at_[{p.file, p.line, p.col}] = static_cast<int32_t>(m_.inline_frames.size() - 1);
  loc_ = p;
}

void ModuleParser::declare(const Token& name, Binding b) {
  Scope& s = scopes_[depth_];
  bool taken = s.names.count(name.text) != 0;
  std::string_view prefix;
  uint32_t number = 0;
  if (!taken && split_number(name.text, prefix, number)) {
    const auto it = s.ranges.find(prefix);
    taken = it != s.ranges.end() && number < it->second.count;
  }
  if (taken) fail(name.pos, "'" + std::string(name.text) + "' is already declared in this scope");
  s.names.emplace(name.text, b);
}

uint32_t ModuleParser::add_register(std::string name, Type type) {
  ++module_registers_;
  fn().regs.push_back(Register{std::move(name), type});
  return static_cast<uint32_t>(fn().regs.size() - 1);
}

void ModuleParser::reg_decl() {
  lex_.next();
  uint32_t width = 1;
  Type type = Type::None;
  while (lex_.peek().kind == TokKind::Dir) {
    const Token a = lex_.next();
    if (!vector_or_type(a, false, width, type)) fail(a.pos, "unexpected " + describe(a) + " in a register declaration");
  }
  if (type == Type::None)
    fail(lex_.peek().pos, "expected a register type such as '.b32', found " + describe(lex_.peek()));
  while (true) {
    const Token name = expect_word("a register name");
    if (name.text.find('.') != std::string_view::npos || name.text.find(':') != std::string_view::npos)
      fail(name.pos, "'" + std::string(name.text) + "' is not a valid register name");
    if (lex_.peek().is('<')) {
      lex_.next();
      const TextPos at = lex_.peek().pos;
      const uint64_t count = expect_uint("the number of registers");
      expect('>', "after the number of registers");
      const char last = name.text.back();
      if (last >= '0' && last <= '9') fail(name.pos, "a register range's name cannot end in a digit");
      if (count > kMaxRegisters || count * width > kMaxRegisters - fn().regs.size())
        fail(at, "too many registers in '" + fn().name + "' (at most " + std::to_string(kMaxRegisters) + ")");
      if (module_registers_ + count * width > kMaxModuleRegisters)
        fail(at, "too many registers in the module (at most " + std::to_string(kMaxModuleRegisters) + ")");
      Scope& s = scopes_[depth_];
      bool taken = s.ranges.count(name.text) != 0;
      for (const auto& [declared, binding] : s.names) {
        std::string_view prefix;
        uint32_t number = 0;
        taken = taken || (split_number(declared, prefix, number) && prefix == name.text && number < count);
      }
      if (taken) fail(name.pos, "registers named '" + std::string(name.text) + "<N>' clash with ones already declared in this scope");
      const uint32_t base = static_cast<uint32_t>(fn().regs.size());
      for (uint32_t i = 0; i < count; ++i)
        for (uint32_t c = 0; c < width; ++c) {
          std::string reg(name.text);
          reg += std::to_string(i);
          if (width > 1) reg += kComponentNames[c];
          add_register(std::move(reg), type);
        }
      s.ranges.emplace(name.text, RegRange{base, static_cast<uint32_t>(count), width});
    } else {
      if (fn().regs.size() + width > kMaxRegisters || module_registers_ + width > kMaxModuleRegisters)
        fail(name.pos, "too many registers in '" + fn().name + "' (at most " + std::to_string(kMaxRegisters) + ")");
      const uint32_t base = static_cast<uint32_t>(fn().regs.size());
      for (uint32_t c = 0; c < width; ++c)
        add_register(width > 1 ? std::string(name.text) + kComponentNames[c] : std::string(name.text), type);
      declare(name, Binding{width > 1 ? Binding::VecReg : Binding::Reg, base, width});
    }
    if (lex_.peek().is(',')) {
      lex_.next();
      continue;
    }
    expect(';', "at the end of the register declaration");
    return;
  }
}

void ModuleParser::label_or_list(const Token& name) {
  Scope& s = scopes_[depth_];
  const Token t = lex_.peek();
  LabelDef def{static_cast<uint32_t>(fn().body.size()), false};
  if (t.is_dir(".branchtargets")) {
    lex_.next();
    const uint32_t list = static_cast<uint32_t>(tables_.size());
    tables_.emplace_back();
    do {
      const Token target = expect_word("a label");
      Operand o;
      o.kind = OperandKind::Label;
      o.pos = target.pos;
      s.pending.push_back(LabelRef{target.text, target.pos, 0, static_cast<uint32_t>(tables_[list].size()), list, false});
      tables_[list].push_back(o);
    } while (lex_.peek().is(',') && (lex_.next(), true));
    expect(';', "at the end of the .branchtargets list");
    def = LabelDef{list, true};
  } else if (t.is_dir(".calltargets")) {
    lex_.next();
    do {
      const Token target = expect_word("a function");
      const auto it = module_syms_.find(target.text);
      if (it == module_syms_.end() || it->second.kind != SymbolKind::Function)
        fail(target.pos, "unknown function '" + std::string(target.text) + "'");
    } while (lex_.peek().is(',') && (lex_.next(), true));
    expect(';', "at the end of the .calltargets list");
    return;
  } else if (t.is_dir(".callprototype")) {
    // Only indirect calls name a prototype, and they do not need it: skip to its ';'.
    while (!lex_.peek().is(';')) {
      if (lex_.peek().kind == TokKind::End) fail(t.pos, "this .callprototype never ends with ';'");
      lex_.next();
    }
    lex_.next();
    return;
  }
  if (!s.labels.emplace(name.text, def).second)
    fail(name.pos, "label '" + std::string(name.text) + "' is already defined in this scope");
}

bool ModuleParser::lookup(std::string_view name, Binding& out) const {
  std::string_view prefix;
  uint32_t number = 0;
  const bool numbered = split_number(name, prefix, number);
  for (uint32_t d = depth_ + 1; d-- > 0;) {
    const Scope& s = scopes_[d];
    if (const auto it = s.names.find(name); it != s.names.end()) {
      out = it->second;
      return true;
    }
    if (!numbered || s.ranges.empty()) continue;
    if (const auto it = s.ranges.find(prefix); it != s.ranges.end() && number < it->second.count) {
      const RegRange& r = it->second;
      out = r.width == 1 ? Binding{Binding::Reg, r.base + number, 1}
                         : Binding{Binding::VecReg, r.base + number * r.width, r.width};
      return true;
    }
  }
  return false;
}

Resolved ModuleParser::resolve(std::string_view name) const {
  Resolved r;
  if (lookup(name, r.binding)) {
    r.kind = Resolved::Bound;
    return r;
  }
  std::string_view base = name;
  const size_t dot = name.find('.');
  if (dot != std::string_view::npos) {
    base = name.substr(0, dot);
    r.component = component(name.substr(dot + 1));
    if (r.component < 0) return Resolved{};
    if (lookup(base, r.binding)) {
      r.kind = Resolved::Bound;
      return r;
    }
  }
  if (base.empty() || base[0] != '%') return Resolved{};
  for (const SpecialInfo& s : kSpecials)
    if (s.name == base) {
      r.kind = Resolved::Special;
      r.sreg = s.reg;
      r.sreg_vector = s.vector;
      return r;
    }
  std::string_view prefix;
  uint32_t number = 0;
  std::string_view pm = base;
  if (pm.ends_with("_64")) pm.remove_suffix(3);
  if (split_number(base, prefix, number) && prefix == "%envreg" && number < 32) {
    r.kind = Resolved::Special;
    r.sreg = SpecialReg::Envreg;
    r.sreg_number = number;
  } else if (split_number(pm, prefix, number) && prefix == "%pm" && number < 8) {
    r.kind = Resolved::Special;
    r.sreg = SpecialReg::Pm;
    r.sreg_number = number + (pm.size() != base.size() ? 8 : 0);
  }
  return r;
}

Operand ModuleParser::bound_operand(const Resolved& r, const Token& t) const {
  Operand o;
  o.pos = t.pos;
  const std::string name(t.text);
  if (r.kind == Resolved::Special) {
    o.kind = OperandKind::Special;
    o.sreg = r.sreg;
    if (!r.sreg_vector) {
      if (r.component >= 0) fail(t.pos, "'" + name.substr(0, name.find('.')) + "' has no components");
      o.imm = r.sreg_number;
      return o;
    }
    if (r.component >= 0) {
      o.imm = r.component;
      return o;
    }
    Operand v;
    v.kind = OperandKind::Vector;
    v.pos = t.pos;
    for (int c = 0; c < 4; ++c) {
      o.imm = c;
      v.elems.push_back(o);
    }
    return v;
  }
  const Binding& b = r.binding;
  if (r.component >= 0) {
    if (b.kind != Binding::VecReg)
      fail(t.pos, "'" + name.substr(0, name.find('.')) + "' is not a vector register");
    if (static_cast<uint32_t>(r.component) >= b.width)
      fail(t.pos, "'" + name + "' is past the end of a " + std::to_string(b.width) + "-element vector register");
    o.kind = OperandKind::Reg;
    o.reg = b.index + static_cast<uint32_t>(r.component);
    return o;
  }
  switch (b.kind) {
    case Binding::Reg:
      o.kind = OperandKind::Reg;
      o.reg = b.index;
      return o;
    case Binding::VecReg:
      o.kind = OperandKind::Vector;
      for (uint32_t c = 0; c < b.width; ++c) {
        Operand e;
        e.kind = OperandKind::Reg;
        e.reg = b.index + c;
        e.pos = t.pos;
        o.elems.push_back(e);
      }
      return o;
    case Binding::Var: o.sym = SymbolRef{SymbolKind::FunctionVar, b.index}; break;
    case Binding::Param: o.sym = SymbolRef{SymbolKind::Param, b.index}; break;
    case Binding::Return:
      o.sym = SymbolRef{SymbolKind::Param, static_cast<uint32_t>(m_.functions[fn_].params.size()) + b.index};
      break;
  }
  o.kind = OperandKind::Symbol;
  return o;
}

Operand ModuleParser::name_operand(const Token& t) {
  Operand o;
  o.pos = t.pos;
  if (t.text == "_") {
    o.kind = OperandKind::Sink;
    return o;
  }
  if (const Resolved r = resolve(t.text); r.kind != Resolved::None) {
    o = bound_operand(r, t);
  } else if (t.text[0] == '%') {
    for (std::string_view s : kUnsupportedSpecials)
      if (t.text.substr(0, t.text.find('.')) == s)
        fail(t.pos, "the special register '" + std::string(s) + "' is not supported");
    fail(t.pos, "unknown register '" + std::string(t.text) + "'");
  } else if (const auto it = module_syms_.find(t.text); it != module_syms_.end()) {
    o.kind = OperandKind::Symbol;
    o.sym = it->second;
  } else if (t.text == "WARP_SZ") {  // PTX's one predefined constant
    o.kind = OperandKind::Imm;
    o.imm = 32;
    return o;
  } else {
    fail(t.pos, "unknown symbol '" + std::string(t.text) + "'");
  }
  if (o.kind == OperandKind::Symbol && lex_.peek().is('+')) {
    lex_.next();
    o.imm = int_expr("offset");
  } else if (o.kind == OperandKind::Symbol && lex_.peek().is('-')) {
    o.imm = int_expr("offset");
  }
  return o;
}

Operand ModuleParser::address(const Token& open) {
  Operand o;
  o.kind = OperandKind::Addr;
  o.pos = open.pos;
  const Token t = lex_.peek();
  if (t.kind == TokKind::Word) {
    lex_.next();
    const Resolved r = resolve(t.text);
    if (r.kind == Resolved::Special) fail(t.pos, "a special register cannot be used as an address");
    Operand base;
    if (r.kind == Resolved::Bound) {
      base = bound_operand(r, t);
    } else if (t.text[0] == '%') {
      fail(t.pos, "unknown register '" + std::string(t.text) + "'");
    } else if (const auto it = module_syms_.find(t.text); it != module_syms_.end()) {
      base.kind = OperandKind::Symbol;
      base.sym = it->second;
    } else {
      fail(t.pos, "unknown symbol '" + std::string(t.text) + "'");
    }
    if (base.kind == OperandKind::Vector) fail(t.pos, "a vector register cannot be used as an address");
    o.has_base = true;
    o.base_is_sym = base.kind == OperandKind::Symbol;
    o.reg = base.reg;
    o.sym = base.sym;
    const Token sign = lex_.peek();
    if (sign.is('+') || sign.is('-')) {
      if (sign.is('+')) lex_.next();
      if (lex_.peek().kind == TokKind::Word)
        fail(lex_.peek().pos, "an address offset must be a constant, found " + describe(lex_.peek()));
      o.imm = int_expr("address offset");
    }
  } else if (starts_operand_constant(t)) {
    o.imm = int_expr("address");
  } else {
    fail(t.pos, "expected a register, a symbol or a constant after '[', found " + describe(t));
  }
  while (lex_.peek().is(',')) {  // `[tmap, {x, y}]`
    lex_.next();
    o.elems.push_back(operand_primary());
  }
  expect(']', "to close the address");
  return o;
}

Operand ModuleParser::operand_primary() {
  const Token t = lex_.peek();
  if (t.kind == TokKind::Word) {
    lex_.next();
    return name_operand(t);
  }
  if (t.is('[')) return address(lex_.next());
  if (t.is('{')) {
    lex_.next();
    Operand v;
    v.kind = OperandKind::Vector;
    v.pos = t.pos;
    do {
      const Token e = lex_.peek();
      if (e.is('{') || e.is('[')) fail(e.pos, "a vector operand cannot hold " + describe(e));
      if (e.is('}')) fail(e.pos, "expected a vector element, found '}'");
      Operand elem = e.is('!') ? (lex_.next(), operand_primary()) : operand_primary();
      if (e.is('!')) {
        if (elem.kind != OperandKind::Reg) fail(e.pos, "'!' can only negate a predicate register");
        elem.negate = true;
        elem.pos = e.pos;
      }
      v.elems.push_back(std::move(elem));
    } while (lex_.peek().is(',') && (lex_.next(), true));
    expect('}', "to close the vector");
    return v;
  }
  if (starts_operand_constant(t)) {
    const Value v = expr();
    Operand o;
    o.pos = t.pos;
    o.kind = v.is_float() ? OperandKind::FImm : OperandKind::Imm;
    o.imm = static_cast<int64_t>(v.bits);
    o.fbits = v.fbits;
    return o;
  }
  fail(t.pos, "expected an operand, found " + describe(t));
}

Operand ModuleParser::operand(uint32_t op_index, bool label_wanted, bool table_wanted) {
  const Token t = lex_.peek();
  if (label_wanted || table_wanted) {
    if (t.kind != TokKind::Word || t.text[0] == '%')
      fail(t.pos, std::string("expected ") + (table_wanted ? "a .branchtargets list" : "a label") + ", found " +
                      describe(t));
    lex_.next();
    Operand o;
    o.kind = OperandKind::Label;
    o.pos = t.pos;
    scopes_[depth_].pending.push_back(
        LabelRef{t.text, t.pos, static_cast<uint32_t>(fn().body.size()), op_index, kNone, table_wanted});
    return o;
  }
  if (t.is('!')) {
    lex_.next();
    Operand o = operand_primary();
    if (o.kind != OperandKind::Reg) fail(t.pos, "'!' can only negate a predicate register");
    o.negate = true;
    o.pos = t.pos;
    return o;
  }
  Operand o = operand_primary();
  if ((o.kind == OperandKind::Reg || o.kind == OperandKind::Sink) && lex_.peek().is('|')) {
    // `setp ... %p1|%p2, ...`: two destinations.
    lex_.next();
    const Token second = lex_.peek();
    Operand p = operand_primary();
    if (p.kind != OperandKind::Reg && p.kind != OperandKind::Sink)
      fail(second.pos, "expected a predicate register after '|', found " + describe(second));
    Operand pair;
    pair.kind = OperandKind::Vector;
    pair.pos = o.pos;
    pair.elems.push_back(std::move(o));
    pair.elems.push_back(std::move(p));
    return pair;
  }
  return o;
}

void ModuleParser::instruction() {
  Instruction ins;
  ins.pos = lex_.peek().pos;
  ins.src = loc_;
  if (lex_.peek().is('@')) {
    lex_.next();
    if (lex_.peek().is('!')) {
      lex_.next();
      ins.guard_negated = true;
    }
    const Token g = expect_word("a predicate register after '@'");
    const Resolved r = resolve(g.text);
    if (r.kind == Resolved::None) fail(g.pos, "unknown register '" + std::string(g.text) + "'");
    const Operand o = bound_operand(r, g);
    if (o.kind != OperandKind::Reg) fail(g.pos, "the guard '" + std::string(g.text) + "' is not a register");
    ins.has_guard = true;
    ins.guard = o.reg;
  }
  const Token op = lex_.peek();
  if (op.kind != TokKind::Word || op.text[0] == '%')
    fail(op.pos, "expected an instruction, found " + describe(op));
  lex_.next();
  size_t dot = op.text.find('.');
  ins.opcode = op.text.substr(0, dot);
  while (dot != std::string_view::npos) {
    const size_t next = op.text.find('.', dot + 1);
    ins.mods.emplace_back(op.text.substr(dot + 1, next == std::string_view::npos ? next : next - dot - 1));
    dot = next;
  }
  if (ins.opcode == "call") {
    call(ins);
  } else {
    const bool is_bra = ins.opcode == "bra", is_brx = ins.opcode == "brx";
    if (!lex_.peek().is(';')) {
      do {
        const uint32_t index = static_cast<uint32_t>(ins.ops.size());
        ins.ops.push_back(operand(index, is_bra, is_brx && index == 1));
      } while (lex_.peek().is(',') && (lex_.next(), true));
    }
    if (!lex_.peek().is(';'))
      fail(lex_.peek().pos, "expected ',' or ';' after an operand of '" + std::string(op.text) + "', found " +
                                describe(lex_.peek()));
    lex_.next();
  }
  fn().body.push_back(std::move(ins));
}

void ModuleParser::call(Instruction& ins) {
  auto list = [&](std::vector<Operand>& out, const char* what) {
    lex_.next();  // (
    if (!lex_.peek().is(')')) {
      do out.push_back(operand(kNone, false, false));
      while (lex_.peek().is(',') && (lex_.next(), true));
    }
    expect(')', what);
  };
  std::vector<Operand> rets, args;
  if (lex_.peek().is('(')) {
    list(rets, "to close the call's return list");
    expect(',', "after the call's return list");
  }
  const Token target = expect_word("the function to call");
  Operand indirect;
  if (const Resolved r = resolve(target.text); r.kind != Resolved::None) {
    indirect = bound_operand(r, target);
    if (indirect.kind != OperandKind::Reg)
      fail(target.pos, "'" + std::string(target.text) + "' is not a function or a register holding its address");
    ins.call_indirect = true;
  } else if (target.text[0] == '%') {
    fail(target.pos, "unknown register '" + std::string(target.text) + "'");
  } else if (const auto it = module_syms_.find(target.text); it == module_syms_.end()) {
    fail(target.pos, "unknown function '" + std::string(target.text) + "'");
  } else if (it->second.kind != SymbolKind::Function) {
    fail(target.pos, "'" + std::string(target.text) + "' is not a function");
  } else {
    ins.callee = it->second.index;
  }
  if (lex_.peek().is(',')) {
    lex_.next();
    if (lex_.peek().is('(')) {
      list(args, "to close the call's argument list");
      if (lex_.peek().is(',')) {
        lex_.next();
        expect_word("a .callprototype or .calltargets name");
      }
    } else {
      expect_word("the argument list or a .callprototype name");
    }
  }
  if (!lex_.peek().is(';'))
    fail(lex_.peek().pos, "expected ';' at the end of the call, found " + describe(lex_.peek()));
  lex_.next();
  ins.ret_count = static_cast<uint32_t>(rets.size());
  ins.ops = std::move(rets);
  for (Operand& a : args) ins.ops.push_back(std::move(a));
  if (ins.call_indirect) ins.ops.push_back(std::move(indirect));
}

}  // namespace pipesim::ptx::detail
