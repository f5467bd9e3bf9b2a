// The scenario front end: lines -> tokens (lexer.cpp) -> sim::Kernel, in one pass.
// Parameters are folded to constants as they are read; names in role bodies resolve to
// environment slots. Every check that does not need a run happens here, with the error at the
// offending token (docs/scenario-language.md).
#include "verify/parser.hpp"

#include "sim/engine.hpp"
#include "sim/rules.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <limits>
#include <unordered_map>

#include "model/arch.hpp"
#include "model/budget.hpp"
#include "model/gemv_budget.hpp"
#include "verify/lexer.hpp"

namespace pipesim::verify {

bool parse_define(std::string_view text, Define& out) {
  const size_t eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0) return false;
  const std::string v(text.substr(eq + 1));
  try {
    size_t used = 0;
    out.value = std::stoll(v, &used, 0);
    out.name = std::string(text.substr(0, eq));
    return used == v.size();
  } catch (...) {
    return false;
  }
}
bool parse_defines(const std::vector<std::string>& texts, std::vector<Define>& out, std::string& bad) {
  for (const std::string& t : texts) {
    Define def;
    if (!parse_define(t, def)) {
      bad = t;
      return false;
    }
    out.push_back(std::move(def));
  }
  return true;
}
namespace {

using sim::Expr;
using sim::ExprCode;
using sim::OpKind;
using sim::SourceLoc;
using sim::Stmt;
using sim::StmtKind;

constexpr int64_t kMaxCount = (int64_t{1} << 20) - 1;  // mbarrier arrival count / tx bound
constexpr int kMaxBlockDepth = 32;
constexpr int kMaxExprDepth = 128;

// An error found while reading: rendered by parse_scenario.
struct Diag {
  SourceLoc loc;
  uint32_t len = 1;
  std::string msg;
  std::string note;
};

uint32_t u32(size_t v) { return static_cast<uint32_t>(v); }

size_t edit_distance(std::string_view a, std::string_view b) {
  if (a.size() > 64 || b.size() > 64) return 1000;
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

// "; did you mean 'x'?" for the closest candidate within edit distance 2, else "".
std::string suggest(std::string_view name, const std::vector<std::string_view>& candidates) {
  size_t best = 3;
  std::string_view pick;
  for (std::string_view c : candidates) {
    if (c == name) continue;
    size_t d = edit_distance(name, c);
    if (d < best && d < std::max(c.size(), name.size())) {
      best = d;
      pick = c;
    }
  }
  if (pick.empty()) return {};
  return fmt::format("; did you mean '{}'?", pick);
}

std::string join(const std::vector<std::string_view>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += ", ";
    out += v[i];
  }
  return out;
}

struct Builtin {
  std::string_view name;
  uint32_t slot;
};
constexpr Builtin kBuiltins[] = {
    {"cta_id", sim::kSlotCtaId},          {"cluster_id", sim::kSlotClusterId},
    {"cluster_rank", sim::kSlotClusterRank}, {"warp", sim::kSlotWarp},
    {"warp_in_role", sim::kSlotWarpInRole}, {"num_ctas", sim::kSlotNumCtas},
    {"num_clusters", sim::kSlotNumClusters}, {"cluster_size", sim::kSlotClusterSize},
    {"num_sms", sim::kSlotNumSms},           {"is_leader", sim::kSlotIsLeader},
    {"peer_rank", sim::kSlotPeerRank},       {"num_tiles", sim::kSlotNumTiles},
};

const Builtin* find_builtin(std::string_view n) {
  for (const Builtin& b : kBuiltins)
    if (b.name == n) return &b;
  return nullptr;
}


constexpr std::string_view kStatements[] = {
    "for", "if", "let", "compute", "tma", "init", "inval", "fence_init", "arrive",
    "arrive_expect_tx", "expect_tx", "complete_tx", "arrive_drop", "wait", "test_wait",
    "store", "commit_group", "wait_group", "bar_sync", "bar_arrive", "syncthreads",
    "cluster_arrive", "cluster_wait", "cluster_sync",
    // tcgen05 (sm_100a / sm_103a)
    "mma", "commit", "tmem_alloc", "tmem_dealloc", "tmem_relinquish", "tmem_load", "tmem_store",
    "tmem_wait",
};

constexpr uint32_t kNoArray = std::numeric_limits<uint32_t>::max();  // PipelineTmaStore's full/empty

// The pipeline kinds: the arrow spelling (empty `to`: a single word), the CUTLASS class name.
struct PipeKindName {
  std::string_view from, to, cls;
  sim::PipelineKind kind;
  bool tcgen05;
};
constexpr PipeKindName kPipeKinds[] = {
    {"tma", "threads", "PipelineTmaAsync", sim::PipelineKind::TmaAsync, false},
    {"threads", "threads", "PipelineAsync", sim::PipelineKind::Async, false},
    {"tma", "umma", "PipelineTmaUmma", sim::PipelineKind::TmaUmma, true},
    {"umma", "threads", "PipelineUmmaAsync", sim::PipelineKind::UmmaAsync, true},
    {"threads", "umma", "PipelineAsyncUmma", sim::PipelineKind::AsyncUmma, true},
    {"tma_store", "", "PipelineTmaStore", sim::PipelineKind::TmaStore, false},
};

// "tma -> threads", "tma_store" ...: how messages name a pipeline kind.
std::string kind_text(sim::PipelineKind k) {
  for (const PipeKindName& n : kPipeKinds)
    if (n.kind == k) return n.to.empty() ? std::string(n.from) : fmt::format("{} -> {}", n.from, n.to);
  return "?";
}

constexpr std::string_view kDeclarations[] = {"kernel", "let",  "launch", "barrier",  "pipeline",
                                              "role",   "expect", "config", "estimate"};

// `config` keys (model::set_config_field's, '_' written for '-') and how their values are read.
enum class CfgValue : uint8_t { Int, IntOrAuto, Word, Dims, List };
struct CfgKey {
  std::string_view key;
  CfgValue value;
};
constexpr CfgKey kConfigKeys[] = {
    {"tile", CfgValue::Dims},          {"ab", CfgValue::Word},
    {"a", CfgValue::Word},             {"b", CfgValue::Word},
    {"c", CfgValue::Word},             {"sf", CfgValue::Word},
    {"sf-vec", CfgValue::Int},         {"lora-rank", CfgValue::Int},
    {"lora-stages", CfgValue::Int},    {"lora-dtype", CfgValue::Word},
    {"epilogue", CfgValue::Word},      {"epilogue-stages", CfgValue::IntOrAuto},
    {"epilogue-vectors", CfgValue::Int}, {"ab-stages", CfgValue::IntOrAuto},
    {"acc-stages", CfgValue::IntOrAuto}, {"occupancy", CfgValue::Int},
    {"solver", CfgValue::Word},        {"regs", CfgValue::Int},
    {"setmaxnreg", CfgValue::List},    {"tmem-alloc", CfgValue::Word},
    {"gemv", CfgValue::Dims},          {"stage-bytes", CfgValue::IntOrAuto},
};
// Keys of a `config gemv = M x K x L` line (the NVFP4 GEMV kernel, model/gemv_budget.hpp).
bool gemv_config_key(std::string_view k) { return k == "gemv" || k == "stage-bytes" || k == "ab-stages" || k == "regs"; }
constexpr std::string_view kEstimateOperands[] = {"A", "B", "SFA", "SFB", "C", "LA", "LU", "VEC", "AB", "LORA"};

// An expression being built: postfix code (a single Const when folded) and its source span.
struct Val {
  Expr e;
  uint32_t len = 1;
  bool is_const() const { return e.is_const(); }
  int64_t c() const { return e.code[0].value; }
  uint32_t end_col() const { return e.loc.col + len; }
};

Val make_const(int64_t v, SourceLoc loc, uint32_t len) { return Val{Expr::constant(v, loc), len}; }

// Where an expression may read what.
enum class Ctx : uint8_t {
  Const,      // declarations: parameters and launch-wide built-ins only, folded
  Role,       // role bodies: locals and built-ins are slots
  Multicast,  // a pipeline's multicast: per-CTA built-ins allowed (then rejected as non-constant)
};

// Token stream of one line.
struct Cur {
  const std::vector<Token>* t = nullptr;
  size_t i = 0;
  const Token& peek(size_t k = 0) const { return (*t)[std::min(i + k, t->size() - 1)]; }
  const Token& next() {
    const Token& r = peek();
    if (i + 1 < t->size()) ++i;
    return r;
  }
  bool at(Tok k) const { return peek().kind == k; }
  bool at_ident(std::string_view s) const { return peek().kind == Tok::Ident && peek().text == s; }
};

// Operand specifications of a statement: `name = expr`, a bare flag, `expect true|false`, or
// `kind = PipelineState|PipelineStateSimple`.
// Word: `name = IDENT` (the identifier in OGot::tok). ExprOrWord: `name = OSpec::word` (word = 1,
// the token in OGot::tok) or `name = expr`.
enum class OT : uint8_t { Expr, Flag, Bool, StateKind, Word, ExprOrWord };
struct OSpec {
  std::string_view name;
  OT type = OT::Expr;
  bool required = false;
  std::string_view word = {};
};
struct OGot {
  bool present = false;
  Token name;
  Val v;
  int64_t word = 0;  // Flag: 1; Bool: 1/0; StateKind: the enum value; ExprOrWord: 1 for the word
  Token tok;         // Word, ExprOrWord: the word's token
};

struct Local {
  std::string name;
  uint32_t slot;
  SourceLoc loc;
};

struct SrcLine {
  std::string_view text;
  LineShape shape;
};

class Parser {
 public:
  Parser(std::string_view path, std::string_view text, std::span<const Define> defines)
      : defines_(defines.begin(), defines.end()), define_used_(defines.size(), false) {
    k_.file = std::string(path);
    k_.lines = split_lines(text);
    src_.reserve(k_.lines.size());
    for (const std::string& l : k_.lines) src_.push_back({l, scan_line(l)});
  }

  const std::vector<std::string>& lines() const { return k_.lines; }

  sim::Kernel run() {
    top_level();
    finish();
    return std::move(k_);
  }

 private:
  // ---------------------------------------------------------------- errors
  [[noreturn]] static void fail(SourceLoc loc, uint32_t len, std::string msg, std::string note = {}) {
    throw Diag{loc, len, std::move(msg), std::move(note)};
  }
  [[noreturn]] static void fail(const Token& t, std::string msg, std::string note = {}) {
    fail(t.loc, t.len, std::move(msg), std::move(note));
  }
  [[noreturn]] static void fail(const Val& v, std::string msg, std::string note = {}) {
    fail(v.e.loc, v.len, std::move(msg), std::move(note));
  }
  static std::string at_line(SourceLoc l) { return fmt::format("line {}", l.line); }

  // ---------------------------------------------------------------- lines
  size_t next_significant(size_t p) const {
    while (p < src_.size() && src_[p].shape.blank) ++p;
    return p;
  }
  uint32_t indent_of(size_t p) const {
    const SrcLine& l = src_[p];
    if (l.shape.tab_col)
      fail(SourceLoc{u32(p + 1), l.shape.tab_col}, 1, "tab in indentation; indent with spaces");
    return l.shape.indent;
  }
  std::vector<Token> lex(size_t p) const {
    indent_of(p);
    try {
      return lex_line(src_[p].text, u32(p + 1));
    } catch (const LexError& e) {
      fail(e.loc, e.len, e.message);
    }
  }

  // ------------------------------------------------------------ token helpers
  static const Token& expect(Cur& c, Tok k, std::string_view what) {
    if (!c.at(k)) fail(c.peek(), fmt::format("expected {}, found {}", what, describe(c.peek())));
    return c.next();
  }
  static const Token& expect_ident(Cur& c, std::string_view what) { return expect(c, Tok::Ident, what); }
  static void expect_word(Cur& c, std::string_view word, std::string_view context = {}) {
    if (!c.at_ident(word)) {
      std::string msg = fmt::format("expected '{}'", word);
      if (!context.empty()) msg += fmt::format(" {}", context);
      fail(c.peek(), fmt::format("{}, found {}", msg, describe(c.peek())));
    }
    c.next();
  }
  static void expect_end(Cur& c) {
    if (!c.at(Tok::End)) fail(c.peek(), fmt::format("expected end of line, found {}", describe(c.peek())));
  }

  // ------------------------------------------------------------ expressions
  int64_t fold(ExprCode op, int64_t a, int64_t b, const Token& at) const {
    int64_t r = 0;
    auto overflow = [&]() { fail(at, "integer overflow in constant expression"); };
    switch (op) {
      case ExprCode::Add: if (__builtin_add_overflow(a, b, &r)) overflow(); return r;
      case ExprCode::Sub: if (__builtin_sub_overflow(a, b, &r)) overflow(); return r;
      case ExprCode::Mul: if (__builtin_mul_overflow(a, b, &r)) overflow(); return r;
      case ExprCode::Div:
      case ExprCode::Mod:
        if (b == 0) fail(at, "division by zero");
        if (a == std::numeric_limits<int64_t>::min() && b == -1) overflow();
        return op == ExprCode::Div ? a / b : a % b;
      case ExprCode::Shl:
      case ExprCode::Shr:
        if (b < 0 || b > 63) fail(at, fmt::format("shift count {} out of range 0..63", b));
        return op == ExprCode::Shl
                   ? static_cast<int64_t>(static_cast<uint64_t>(a) << b)
                   : a >> b;
      case ExprCode::BitAnd: return a & b;
      case ExprCode::BitOr: return a | b;
      case ExprCode::BitXor: return a ^ b;
      case ExprCode::Lt: return a < b;
      case ExprCode::Le: return a <= b;
      case ExprCode::Gt: return a > b;
      case ExprCode::Ge: return a >= b;
      case ExprCode::Eq: return a == b;
      case ExprCode::Ne: return a != b;
      case ExprCode::And: return (a != 0) && (b != 0);
      case ExprCode::Or: return (a != 0) || (b != 0);
      case ExprCode::Min: return std::min(a, b);
      case ExprCode::Max: return std::max(a, b);
      case ExprCode::Neg:
        if (a == std::numeric_limits<int64_t>::min()) overflow();
        return -a;
      case ExprCode::Not: return a == 0;
      case ExprCode::BitNot: return ~a;
      case ExprCode::Popcount: return std::popcount(static_cast<uint64_t>(a));
      default: return 0;
    }
  }

  static Val span(Expr e, SourceLoc start, uint32_t end_col) {
    e.loc = start;
    return Val{std::move(e), end_col > start.col ? end_col - start.col : 1};
  }
  static void append(Expr& to, const Expr& from) {
    to.code.insert(to.code.end(), from.code.begin(), from.code.end());
  }

  Val unary(ExprCode op, const Token& at, Val a) const {
    SourceLoc start = at.loc;
    uint32_t end = a.end_col();
    if (a.is_const()) return make_const(fold(op, a.c(), 0, at), start, end - start.col);
    a.e.code.push_back({op, 0});
    return span(std::move(a.e), start, end);
  }

  Val binary(ExprCode op, const Token& at, Val a, const Val& b) const {
    SourceLoc start = a.e.loc;
    uint32_t end = b.end_col();
    if (a.is_const() && b.is_const()) return make_const(fold(op, a.c(), b.c(), at), start, end - start.col);
    if ((op == ExprCode::Div || op == ExprCode::Mod) && b.is_const() && b.c() == 0)
      fail(at, "division by zero");
    if ((op == ExprCode::Shl || op == ExprCode::Shr) && b.is_const() && (b.c() < 0 || b.c() > 63))
      fail(at, fmt::format("shift count {} out of range 0..63", b.c()));
    append(a.e, b.e);
    a.e.code.push_back({op, 0});
    return span(std::move(a.e), start, end);
  }

  Val parse_expr(Cur& c, Ctx ctx) {
    depth_ = 0;
    return parse_binary(c, ctx, 0);
  }

  static bool binary_op(Tok t, int level, ExprCode& op) {
    struct Entry { Tok t; int level; ExprCode op; };
    static constexpr Entry kOps[] = {
        {Tok::OrOr, 0, ExprCode::Or},    {Tok::AndAnd, 1, ExprCode::And},
        {Tok::Pipe, 2, ExprCode::BitOr}, {Tok::Caret, 3, ExprCode::BitXor},
        {Tok::Amp, 4, ExprCode::BitAnd}, {Tok::EqEq, 5, ExprCode::Eq},
        {Tok::Ne, 5, ExprCode::Ne},      {Tok::Lt, 6, ExprCode::Lt},
        {Tok::Le, 6, ExprCode::Le},      {Tok::Gt, 6, ExprCode::Gt},
        {Tok::Ge, 6, ExprCode::Ge},      {Tok::Shl, 7, ExprCode::Shl},
        {Tok::Shr, 7, ExprCode::Shr},    {Tok::Plus, 8, ExprCode::Add},
        {Tok::Minus, 8, ExprCode::Sub},  {Tok::Star, 9, ExprCode::Mul},
        {Tok::Slash, 9, ExprCode::Div},  {Tok::Percent, 9, ExprCode::Mod},
    };
    for (const Entry& e : kOps)
      if (e.t == t && e.level == level) {
        op = e.op;
        return true;
      }
    return false;
  }

  Val parse_binary(Cur& c, Ctx ctx, int level) {
    if (level == 10) return parse_unary(c, ctx);
    Val lhs = parse_binary(c, ctx, level + 1);
    ExprCode op{};
    while (binary_op(c.peek().kind, level, op)) {
      const Token& at = c.next();
      Val rhs = parse_binary(c, ctx, level + 1);
      lhs = binary(op, at, std::move(lhs), rhs);
    }
    return lhs;
  }

  void enter(const Token& at) {
    if (++depth_ > kMaxExprDepth)
      fail(at, fmt::format("expression nested too deeply (more than {} levels)", kMaxExprDepth));
  }

  Val parse_unary(Cur& c, Ctx ctx) {
    const Token& t = c.peek();
    ExprCode op{};
    if (t.kind == Tok::Minus) op = ExprCode::Neg;
    else if (t.kind == Tok::Bang) op = ExprCode::Not;
    else if (t.kind == Tok::Tilde) op = ExprCode::BitNot;
    else return parse_primary(c, ctx);
    enter(t);
    c.next();
    Val v = unary(op, t, parse_unary(c, ctx));
    --depth_;
    return v;
  }

  Val parse_primary(Cur& c, Ctx ctx) {
    const Token& t = c.peek();
    if (t.kind == Tok::Int) {
      c.next();
      return make_const(t.value, t.loc, t.len);
    }
    if (t.kind == Tok::LParen) {
      enter(t);
      c.next();
      Val v = parse_binary(c, ctx, 0);
      const Token& close = expect(c, Tok::RParen, "')'");
      --depth_;
      return span(std::move(v.e), t.loc, close.loc.col + 1);
    }
    if (t.kind == Tok::Ident) {
      c.next();
      if (c.at(Tok::LParen)) return parse_call(c, ctx, t);
      return name_value(t, ctx);
    }
    std::string note;
    if (t.kind == Tok::Assign) note = "use '==' to compare";
    fail(t, fmt::format("expected an expression, found {}", describe(t)), note);
  }

  Val parse_call(Cur& c, Ctx ctx, const Token& fn) {
    static constexpr std::string_view kFns[] = {"min", "max", "cdiv", "popcount"};
    size_t arity = fn.text == "popcount" ? 1 : 2;
    bool known = std::find(std::begin(kFns), std::end(kFns), fn.text) != std::end(kFns);
    if (!known)
      fail(fn, fmt::format("unknown function '{}'{}", fn.text,
                           suggest(fn.text, {std::begin(kFns), std::end(kFns)})),
           "functions: min(a, b), max(a, b), cdiv(a, b), popcount(a)");
    enter(c.peek());
    c.next();  // (
    std::vector<Val> args;
    std::vector<Token> commas;
    if (!c.at(Tok::RParen)) {
      for (;;) {
        args.push_back(parse_binary(c, ctx, 0));
        if (!c.at(Tok::Comma)) break;
        commas.push_back(c.next());
      }
    }
    const Token& close = expect(c, Tok::RParen, args.size() < arity ? "',' or ')'" : "')'");
    --depth_;
    if (args.size() != arity)
      fail(fn, fmt::format("'{}' takes {} argument{}, got {}", fn.text, arity,
                           arity == 1 ? "" : "s", args.size()));
    const uint32_t end = close.loc.col + 1;
    if (fn.text == "popcount") {
      Val v = unary(ExprCode::Popcount, fn, std::move(args[0]));
      return span(std::move(v.e), fn.loc, end);
    }
    if (fn.text == "min" || fn.text == "max") {
      Val v = binary(fn.text == "min" ? ExprCode::Min : ExprCode::Max, fn, std::move(args[0]), args[1]);
      return span(std::move(v.e), fn.loc, end);
    }
    // cdiv(a, b) = (a + b - 1) / b
    const Val& b = args[1];
    if (b.is_const() && b.c() == 0) fail(b, "division by zero");
    Val sum = binary(ExprCode::Add, commas[0], std::move(args[0]), b);
    Val less = binary(ExprCode::Sub, commas[0], std::move(sum), make_const(1, b.e.loc, b.len));
    Val v = binary(ExprCode::Div, commas[0], std::move(less), b);
    return span(std::move(v.e), fn.loc, end);
  }

  std::vector<std::string_view> visible_names(Ctx ctx) const {
    std::vector<std::string_view> out;
    for (const auto& p : k_.params) out.push_back(p.first);
    for (const Builtin& b : kBuiltins) out.push_back(b.name);
    if (ctx == Ctx::Role)
      for (const auto& s : scopes_)
        for (const Local& l : s) out.push_back(l.name);
    return out;
  }

  const Local* find_local(std::string_view n) const {
    for (auto s = scopes_.rbegin(); s != scopes_.rend(); ++s)
      for (const Local& l : *s)
        if (l.name == n) return &l;
    return nullptr;
  }

  Val slot_value(uint32_t slot, const Token& t) const {
    Expr e;
    e.code.push_back({ExprCode::Slot, static_cast<int64_t>(slot)});
    e.loc = t.loc;
    return Val{std::move(e), t.len};
  }

  Val name_value(const Token& t, Ctx ctx) const {
    if (ctx == Ctx::Role)
      if (const Local* l = find_local(t.text)) return slot_value(l->slot, t);
    if (auto it = param_index_.find(std::string(t.text)); it != param_index_.end())
      return make_const(k_.params[it->second].second, t.loc, t.len);
    if (const Builtin* b = find_builtin(t.text)) {
      if (ctx == Ctx::Role) return slot_value(b->slot, t);
      // Declarations are the same for every CTA: fold what the arch and the launch fix.
      if (b->slot == sim::kSlotNumSms) {
        if (!k_.arch) fail(t, "'num_sms' needs the 'kernel NAME on ARCH' line first");
        return make_const(k_.arch->cap.sms, t.loc, t.len);
      }
      if (b->slot == sim::kSlotNumCtas || b->slot == sim::kSlotNumClusters ||
          b->slot == sim::kSlotClusterSize) {
        if (!have_launch_) fail(t, fmt::format("'{}' needs the 'launch' line first", t.text));
        int64_t v = b->slot == sim::kSlotNumCtas       ? k_.launch.ctas
                    : b->slot == sim::kSlotClusterSize ? k_.launch.cluster
                                                       : k_.launch.ctas / k_.launch.cluster;
        return make_const(v, t.loc, t.len);
      }
      if (b->slot == sim::kSlotNumTiles) {
        if (!have_launch_) fail(t, "'num_tiles' needs the 'launch' line first");
        return make_const(k_.launch.tiles, t.loc, t.len);
      }
      if (ctx == Ctx::Multicast) return slot_value(b->slot, t);
      fail(t, fmt::format("'{}' differs between CTAs and warps; a declaration needs a constant", t.text));
    }
    fail(t, fmt::format("unknown name '{}'{}", t.text, suggest(t.text, visible_names(ctx))));
  }

  // ------------------------------------------------------------ checks
  static void check_range(const Val& v, int64_t lo, int64_t hi, std::string_view what) {
    if (v.is_const() && (v.c() < lo || v.c() > hi))
      fail(v, fmt::format("{} must be in {}..{}, got {}", what, lo, hi, v.c()));
  }
  static void check_count(const Val& v) { check_range(v, 1, kMaxCount, "arrival count"); }
  static void check_tx(const Val& v) {
    if (v.is_const() && (v.c() < -kMaxCount || v.c() > kMaxCount))
      fail(v, fmt::format("byte count {} is outside the tx range -{}..{}", v.c(), kMaxCount, kMaxCount));
  }
  static void check_copy_bytes(const Val& v, std::string_view what) {
    if (!v.is_const()) return;
    if (v.c() <= 0) fail(v, fmt::format("{} size must be positive, got {}", what, v.c()));
    if (v.c() % 16 != 0) fail(v, fmt::format("{} size {} is not a multiple of 16 bytes", what, v.c()));
    if (v.c() > kMaxCount)
      fail(v, fmt::format("{} size {} is above the tx limit {}", what, v.c(), kMaxCount));
  }
  void check_mask(const Val& v) const {
    if (!v.is_const()) return;
    const int64_t all = (int64_t{1} << k_.launch.cluster) - 1;
    if (v.c() == 0) fail(v, "multicast mask must name at least one CTA, got 0");
    if (v.c() < 0 || (v.c() & ~all) != 0)
      fail(v, fmt::format("multicast mask {:#x} names a rank outside the cluster of {} (ranks 0..{})",
                          v.c(), k_.launch.cluster, k_.launch.cluster - 1));
  }
  void check_rank(const Val& v) const {
    if (v.is_const() && (v.c() < 0 || v.c() >= k_.launch.cluster))
      fail(v, fmt::format("cluster rank {} is outside the cluster of {} (ranks 0..{})", v.c(),
                          k_.launch.cluster, k_.launch.cluster - 1));
  }
  void check_threads(const Val& v) const {
    if (!v.is_const()) return;
    if (v.c() <= 0) fail(v, fmt::format("thread count must be positive, got {}", v.c()));
    if (v.c() % 32 != 0) fail(v, fmt::format("thread count {} is not a multiple of 32", v.c()));
    if (v.c() > k_.launch.threads)
      fail(v, fmt::format("thread count {} exceeds the CTA's {} threads", v.c(), k_.launch.threads));
  }
  static void check_parity(const Val& v) {
    if (v.is_const() && v.c() != 0 && v.c() != 1)
      fail(v, fmt::format("parity must be 0 or 1, got {}", v.c()));
  }
  void add_barrier_bytes(int64_t elements, const Token& at) {
    barrier_elems_ += elements;
    const int64_t bytes = barrier_elems_ * 8;
    if (bytes > k_.arch->cap.smem_per_block)
      fail(at, fmt::format("the mbarriers need {} bytes of shared memory, more than {}'s {} per block",
                           bytes, k_.arch->name, k_.arch->cap.smem_per_block));
  }

  // ------------------------------------------------------------ operands
  std::vector<OGot> operands(Cur& c, const Token& head, std::span<const OSpec> specs, Ctx ctx) {
    std::vector<OGot> got(specs.size());
    std::vector<std::string_view> names;
    for (const OSpec& s : specs) names.push_back(s.name);
    while (!c.at(Tok::End)) {
      if (c.at(Tok::Comma)) {
        c.next();
        continue;
      }
      const Token& n = c.peek();
      if (n.kind != Tok::Ident) {
        if (specs.empty()) fail(n, fmt::format("expected end of line, found {}", describe(n)));
        fail(n, fmt::format("expected an operand of '{}' ({}), found {}", head.text, join(names), describe(n)));
      }
      size_t idx = specs.size();
      for (size_t i = 0; i < specs.size(); ++i)
        if (specs[i].name == n.text) idx = i;
      if (idx == specs.size()) {
        std::string note = specs.empty() ? fmt::format("'{}' takes no operands", head.text)
                                         : fmt::format("'{}' takes: {}", head.text, join(names));
        fail(n, fmt::format("unknown operand '{}' for '{}'{}", n.text, head.text, suggest(n.text, names)),
             note);
      }
      OGot& g = got[idx];
      if (g.present)
        fail(n, fmt::format("repeated operand '{}'", n.text), fmt::format("first given at column {}", g.name.loc.col));
      g.present = true;
      g.name = n;
      c.next();
      switch (specs[idx].type) {
        case OT::Flag:
          g.word = 1;
          break;
        case OT::Bool: {
          if (c.at(Tok::Assign)) c.next();
          const Token& w = c.peek();
          if (!(c.at_ident("true") || c.at_ident("false")))
            fail(w, fmt::format("expected 'true' or 'false' after '{}', found {}", n.text, describe(w)));
          g.word = w.text == "true" ? 1 : 0;
          g.v = make_const(g.word, w.loc, w.len);
          c.next();
          break;
        }
        case OT::StateKind: {
          expect(c, Tok::Assign, fmt::format("'=' after '{}'", n.text));
          g.word = parse_state_kind(c);
          break;
        }
        case OT::Expr:
          expect(c, Tok::Assign, fmt::format("'=' after '{}'", n.text));
          g.v = parse_expr(c, ctx);
          break;
        case OT::Word:
          expect(c, Tok::Assign, fmt::format("'=' after '{}'", n.text));
          g.tok = expect_ident(c, fmt::format("a name after '{} ='", n.text));
          break;
        case OT::ExprOrWord: {
          expect(c, Tok::Assign, fmt::format("'=' after '{}'", n.text));
          const Token& w = c.peek();
          // The word, unless a parameter has that name (names are not reserved).
          const bool name = w.kind == Tok::Ident && !param_index_.count(std::string(w.text));
          if (name && w.text == specs[idx].word) {
            g.word = 1;
            g.tok = w;
            g.v = make_const(0, w.loc, w.len);
            c.next();
          } else if (name && !find_builtin(w.text) && !suggest(w.text, {specs[idx].word}).empty()) {
            fail(w, fmt::format("unknown name '{}'{}", w.text, suggest(w.text, {specs[idx].word})));
          } else {
            g.v = parse_expr(c, ctx);
          }
          break;
        }
      }
    }
    for (size_t i = 0; i < specs.size(); ++i)
      if (specs[i].required && !got[i].present)
        fail(head, fmt::format("missing operand '{}' for '{}'", specs[i].name, head.text));
    return got;
  }

  static int64_t parse_state_kind(Cur& c) {
    const Token& w = c.peek();
    if (c.at_ident("PipelineState")) {
      c.next();
      return static_cast<int64_t>(sim::StateKind::PipelineState);
    }
    if (c.at_ident("PipelineStateSimple")) {
      c.next();
      return static_cast<int64_t>(sim::StateKind::PipelineStateSimple);
    }
    fail(w, fmt::format("expected 'PipelineState' or 'PipelineStateSimple', found {}", describe(w)));
  }

  // ------------------------------------------------------------ top level
  void top_level() {
    for (size_t p = next_significant(0); p < src_.size(); p = next_significant(pos_)) {
      const uint32_t ind = indent_of(p);
      if (ind == 0 && is_config_line(src_[p].text)) {  // raw text: values like 256x128x256
        pos_ = p + 1;
        parse_config(p);
        continue;
      }
      std::vector<Token> toks = lex(p);
      pos_ = p + 1;
      if (ind != 0) fail(toks[0], "unexpected indentation");
      Cur c{&toks, 0};
      const Token& h = c.peek();
      if (h.kind != Tok::Ident)
        fail(h, fmt::format("expected a declaration (kernel, let, launch, barrier, pipeline, config, "
                            "estimate, role or expect), found {}", describe(h)));
      const std::string_view w = h.text;
      if (expect_ && w != "expect")
        fail(h, "'expect' must be the last line of the scenario",
             fmt::format("'expect' is at {}", at_line(k_.expect->loc)));
      if (!k_.roles.empty() && w != "role" && w != "expect")
        fail(h, "declarations must come before the first role");
      if (w == "let") {
        parse_params(c);
      } else if (w == "kernel") {
        parse_kernel(c);
      } else if (w == "expect") {
        parse_expect(c);
      } else if (w == "estimate") {
        if (!k_.arch) fail(h, "expected 'kernel NAME on ARCH' before 'estimate'");
        parse_estimate(c);
      } else if (w == "launch" || w == "barrier" || w == "pipeline" || w == "role") {
        if (!k_.arch) fail(h, fmt::format("expected 'kernel NAME on ARCH' before '{}'", w));
        if (w == "barrier") parse_barrier(c);
        else if (!have_launch_ && w != "launch") fail(h, fmt::format("expected 'launch' before '{}'", w));
        else if (w == "launch") parse_launch(c);
        else if (w == "pipeline") parse_pipeline(c);
        else parse_role(c);
      } else {
        fail(h, fmt::format("unknown declaration '{}'{}", w,
                            suggest(w, {std::begin(kDeclarations), std::end(kDeclarations)})),
             "expected kernel, let, launch, barrier, pipeline, config, estimate, role or expect");
      }
    }
  }

  SourceLoc file_start() const { return k_.lines.empty() ? SourceLoc{} : SourceLoc{1, 1}; }

  void finish() {
    if (!k_.arch) fail(file_start(), 1, "missing 'kernel NAME on ARCH' line");
    if (!have_launch_) fail(file_start(), 1, "missing 'launch' declaration");
    if (k_.roles.empty()) fail(file_start(), 1, "no roles: a scenario needs at least one 'role'");
    if (!k_.budget.estimates.empty() && !k_.budget.has_config()) {
      const sim::BudgetDecls::Estimate& e = k_.budget.estimates.front();
      fail(e.loc, u32(e.operand.size()), "'estimate' needs a 'config' line: the footprints it is compared with "
           "are derived from the configuration");
    }
    for (size_t i = 0; i < defines_.size(); ++i) {
      if (define_used_[i]) continue;
      std::vector<std::string_view> names;
      for (const auto& p : k_.params) names.push_back(p.first);
      fail(SourceLoc{}, 1,
           fmt::format("-D {}: no parameter '{}' in this scenario{}", defines_[i].name, defines_[i].name,
                       suggest(defines_[i].name, names)));
    }
    // Refused before anything is allocated for it (sim::RunFootprint: measured bytes per CTA, warp, barrier).
    if (const std::string no = sim::run_footprint(k_).refusal(); !no.empty()) fail(launch_loc_, 6, "the launch is too large to simulate: " + no);
  }

  void parse_kernel(Cur& c) {
    const Token& h = c.next();
    if (k_.arch) fail(h, "duplicate 'kernel' line", fmt::format("first at {}", at_line(kernel_loc_)));
    kernel_loc_ = h.loc;
    const Token& name = expect_ident(c, "a kernel name");
    expect_word(c, "on", "after the kernel name");
    const Token& arch = expect_ident(c, "an architecture (sm_90a, sm_100a, sm_103a, sm_120a)");
    expect_end(c);
    const model::Arch* a = model::find_arch(arch.text);
    if (!a) {
      std::vector<std::string_view> known;
      for (const model::Arch& x : model::all_archs()) known.push_back(x.name);
      fail(arch, fmt::format("unknown architecture '{}'{}", arch.text, suggest(arch.text, known)),
           fmt::format("known architectures: {}", join(known)));
    }
    k_.name = std::string(name.text);
    k_.arch = a;
  }

  void parse_params(Cur& c) {
    c.next();  // let
    for (;;) {
      const Token& n = expect_ident(c, "a parameter name");
      if (find_builtin(n.text)) fail(n, fmt::format("'{}' is a built-in name", n.text));
      if (auto it = param_index_.find(std::string(n.text)); it != param_index_.end())
        fail(n, fmt::format("duplicate parameter '{}'", n.text),
             fmt::format("first defined at {}", at_line(param_locs_[it->second])));
      expect(c, Tok::Assign, fmt::format("'=' after '{}'", n.text));
      Val v = parse_expr(c, Ctx::Const);
      int64_t value = v.c();
      for (size_t i = 0; i < defines_.size(); ++i)
        if (defines_[i].name == n.text) {
          value = defines_[i].value;  // the last -D of a name wins
          define_used_[i] = true;
        }
      param_index_.emplace(std::string(n.text), k_.params.size());
      param_locs_.push_back(n.loc);
      k_.params.emplace_back(std::string(n.text), value);
      if (!c.at(Tok::Comma)) break;
      c.next();
    }
    expect_end(c);
  }

  void parse_launch(Cur& c) {
    const Token& h = c.next();
    if (have_launch_) fail(h, "duplicate 'launch' declaration", fmt::format("first at {}", at_line(launch_loc_)));
    static constexpr OSpec kSpecs[] = {
        {"ctas", OT::ExprOrWord, true, "persistent"}, {"cluster"}, {"threads", OT::Expr, true},
        {"ctas_per_sm"}, {"smem"}, {"regs"}, {"cta_group"}, {"tiles"}};
    enum { kCtas, kCluster, kThreads, kPerSm, kSmem, kRegs, kCtaGroup, kTiles };
    std::vector<OGot> g = operands(c, h, kSpecs, Ctx::Const);
    const model::Arch& arch = *k_.arch;
    const model::Capacity& cap = arch.cap;
    sim::Launch l;
    if (!g[kCtas].word) check_range(g[kCtas].v, 1, int64_t{1} << 31, "ctas");
    if (g[kCluster].present) {
      const Val& v = g[kCluster].v;
      check_range(v, 1, 16, "cluster size");
      if (v.c() > 1 && cap.cluster_max == 0)
        fail(v, fmt::format("{} does not support clusters (cluster = {})", arch.name, v.c()));
      if (v.c() > cap.cluster_max && cap.cluster_max > 0)
        fail(v, fmt::format("cluster size {} exceeds {}'s maximum {}", v.c(), arch.name, cap.cluster_max));
      l.cluster = v.c();
    }
    if (g[kTiles].present) {
      check_range(g[kTiles].v, 1, int64_t{1} << 31, "tiles");
      l.tiles = g[kTiles].v.c();
    }
    if (g[kCtas].word) {  // ctas = persistent: one CTA per SM, whole clusters, no more than the tiles need
      if (!g[kTiles].present)
        fail(g[kCtas].tok, "'ctas = persistent' needs the tile count: add 'tiles = N' to the launch");
      l.ctas = std::min<int64_t>(cap.sms / l.cluster * l.cluster, l.tiles * l.cluster);
    } else {
      const Val& ctas = g[kCtas].v;
      if (ctas.c() % l.cluster != 0)
        fail(ctas, fmt::format("ctas = {} is not divisible by cluster = {}", ctas.c(), l.cluster));
      l.ctas = ctas.c();
    }
    const Val& th = g[kThreads].v;
    if (th.c() <= 0 || th.c() % 32 != 0)
      fail(th, fmt::format("threads = {} is not a positive multiple of 32", th.c()));
    if (th.c() > cap.threads_per_block)
      fail(th, fmt::format("threads = {} exceeds the limit of {} per CTA", th.c(), cap.threads_per_block));
    l.threads = th.c();
    if (g[kCtaGroup].present) {
      const Val& v = g[kCtaGroup].v;
      if (v.c() != 1 && v.c() != 2) fail(v, fmt::format("cta_group must be 1 or 2, got {}", v.c()));
      if (v.c() == 2) {
        need_tcgen05(g[kCtaGroup].name);
        if (l.cluster % 2 != 0)
          fail(v, fmt::format("cta_group = 2 needs an even cluster size, got cluster = {}", l.cluster),
               "the CTA pairs of cta_group::2 are cluster ranks (2j, 2j+1)");
      }
      l.cta_group = v.c();
    }
    if (g[kSmem].present) {
      const Val& v = g[kSmem].v;
      if (v.c() < 0) fail(v, fmt::format("smem must not be negative, got {}", v.c()));
      if (v.c() > cap.smem_per_block)
        fail(v,
             fmt::format("the launch would fail: {} B of shared memory requested, {} available", v.c(),
                         cap.smem_per_block),
             fmt::format("{} allows at most {} bytes of shared memory per CTA", arch.name, cap.smem_per_block));
      l.smem = v.c();
    }
    if (g[kRegs].present) {
      check_range(g[kRegs].v, 1, cap.regs_per_thread_max, "regs");
      l.regs = g[kRegs].v.c();
    }
    if (g[kPerSm].present) {
      check_range(g[kPerSm].v, 1, cap.blocks_per_sm, "ctas_per_sm");
      l.ctas_per_sm = g[kPerSm].v.c();
    } else if (g[kSmem].present || g[kRegs].present) {
      l.ctas_per_sm = residency(l, g[kSmem], g[kRegs]);
    }
    k_.launch = l;
    have_launch_ = true;
    launch_loc_ = h.loc;
    k_.budget.launch_loc = h.loc;
  }

  // CTAs per SM from shared memory, threads and registers (the occupancy calculation); an
  // error when not even one CTA fits.
  int64_t residency(const sim::Launch& l, const OGot& smem, const OGot& regs) const {
    const model::Capacity& cap = k_.arch->cap;
    // The same limits with one resource at a time say which one makes the launch fail.
    if (l.smem > 0 && model::resident_ctas(*k_.arch, 0, l.smem, 0) == 0)
      fail(smem.v,
           fmt::format("the launch would fail: {} B of shared memory requested, {} available", l.smem,
                       cap.smem_per_sm - k_.arch->smem_reserved_per_block));
    if (l.regs > 0 && model::resident_ctas(*k_.arch, l.threads, 0, l.regs) == 0)
      fail(regs.v,
           fmt::format("the launch would fail: {} registers requested, {} available", model::allocated_regs(l.regs) * l.threads, cap.regs_per_sm),
           fmt::format("{} registers per thread (allocated as {}) x {} threads", l.regs, model::allocated_regs(l.regs), l.threads));
    return model::resident_ctas(*k_.arch, l.threads, l.smem, l.regs);
  }

  // tcgen05 statements, pipelines and cta_group = 2 need an architecture that has it.
  void need_tcgen05(const Token& at) const {
    if (k_.arch->has_tcgen05) return;
    std::vector<std::string_view> have;
    for (const model::Arch& a : model::all_archs())
      if (a.has_tcgen05) have.push_back(a.name);
    std::string names;
    for (size_t i = 0; i < have.size(); ++i)
      names += fmt::format("{}{}", i == 0 ? "" : i + 1 == have.size() ? " or " : ", ", have[i]);
    fail(at, fmt::format("tcgen05 needs {}; this kernel is on {}", names, k_.arch->name));
  }

  void check_new_array_name(const Token& n) {
    if (arrays_.count(std::string(n.text)) || pipes_.count(std::string(n.text)))
      fail(n, fmt::format("duplicate barrier or pipeline name '{}'", n.text));
  }

  void parse_barrier(Cur& c) {
    const Token& h = c.next();
    const Token& n = expect_ident(c, "a barrier name");
    check_new_array_name(n);
    sim::BarrierArray b;
    b.name = std::string(n.text);
    b.loc = n.loc;
    if (c.at(Tok::LBracket)) {
      c.next();
      Val size = parse_expr(c, Ctx::Const);
      expect(c, Tok::RBracket, "']'");
      if (size.c() < 1) fail(size, fmt::format("barrier array size must be at least 1, got {}", size.c()));
      if (size.c() > (int64_t{1} << 20)) fail(size, fmt::format("barrier array size {} is too large", size.c()));
      b.size = static_cast<uint32_t>(size.c());
    }
    static constexpr OSpec kSpecs[] = {{"count"}};
    std::vector<OGot> g = operands(c, h, kSpecs, Ctx::Const);
    if (g[0].present) {
      check_count(g[0].v);
      b.init_count = g[0].v.c();
    }
    add_barrier_bytes(b.size, n);
    arrays_.emplace(b.name, u32(k_.barriers.size()));
    k_.barriers.push_back(std::move(b));
  }

  // ------------------------------------------------------------ budgets
  static bool is_config_line(std::string_view line) {
    return line.starts_with("config") && (line.size() == 6 || line[6] == ' ' || line[6] == '\t' || line[6] == '#');
  }

  // One value of a `config` setting, [b, e) of line p, as the text set_config_field takes.
  // Integers may be constant expressions (parameters included): they are folded here.
  int64_t config_expr(size_t p, size_t b, size_t e) {
    const std::string_view line = src_[p].text;
    std::string masked(line.size(), ' ');  // same columns, only the value left
    for (size_t i = b; i < e; ++i) masked[i] = line[i];
    std::vector<Token> toks;
    try {
      toks = lex_line(masked, u32(p + 1));
    } catch (const LexError& err) {
      fail(err.loc, err.len, err.message);
    }
    Cur c{&toks, 0};
    if (c.at(Tok::End)) fail(SourceLoc{u32(p + 1), u32(b + 1)}, 1, "expected a value");
    Val v = parse_expr(c, Ctx::Const);
    expect_end(c);
    return v.c();
  }

  static std::pair<size_t, size_t> trimmed(std::string_view line, size_t b, size_t e) {
    while (b < e && (line[b] == ' ' || line[b] == '\t')) ++b;
    while (e > b && (line[e - 1] == ' ' || line[e - 1] == '\t')) --e;
    return {b, e};
  }

  std::string config_value(size_t p, const CfgKey& key, size_t b, size_t e) {
    const std::string_view line = src_[p].text;
    const std::string_view v = line.substr(b, e - b);
    const SourceLoc at{u32(p + 1), u32(b + 1)};
    switch (key.value) {
      case CfgValue::IntOrAuto:
        if (v == "auto") return "auto";
        [[fallthrough]];
      case CfgValue::Int:
        return std::to_string(config_expr(p, b, e));
      case CfgValue::Word:
        for (char ch : v)
          if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-' || ch == '.'))
            fail(at, u32(v.size()), fmt::format("{}: expected one word (a type or a choice), got '{}'", key.key, v));
        return std::string(v);
      case CfgValue::Dims: {
        // 256x128x256 (literal), or expressions separated by ' x ' (spaces around the x).
        if (v.find_first_not_of("0123456789_xX") == std::string_view::npos) return std::string(v);
        std::string out;
        size_t start = b;
        for (size_t i = b; i <= e; ++i) {
          const bool sep = i + 2 < e && line[i] == ' ' && (line[i + 1] == 'x' || line[i + 1] == 'X') && line[i + 2] == ' ';
          if (i == e || sep) {
            out += (out.empty() ? "" : "x") + std::to_string(config_expr(p, start, i));
            if (sep) start = i + 3;
            if (sep) i += 2;
          }
        }
        return out;
      }
      case CfgValue::List: {  // [a, b, ...] or one value or none
        if (v == "none") return "none";
        if (!v.starts_with("[")) return std::to_string(config_expr(p, b, e));
        if (!v.ends_with("]")) fail(at, u32(v.size()), fmt::format("{}: expected a list [N, N, ...]", key.key));
        std::string out;
        size_t start = b + 1;
        for (size_t i = b + 1; i < e; ++i)
          if (line[i] == ',' || i == e - 1) {
            out += (out.empty() ? "" : ",") + std::to_string(config_expr(p, start, i));
            start = i + 1;
          }
        return out;
      }
    }
    return std::string(v);
  }

  // config KEY = VALUE, ... (docs/scenario-language.md, "Budgets"). Read from the raw line: a
  // tile like 256x128x256 is not a token of the language.
  void parse_config(size_t p) {
    const std::string_view full = src_[p].text;
    const uint32_t ln = u32(p + 1);
    const SourceLoc head{ln, 1};
    if (expect_)
      fail(head, 6, "'expect' must be the last line of the scenario", fmt::format("'expect' is at {}", at_line(k_.expect->loc)));
    if (!k_.roles.empty()) fail(head, 6, "declarations must come before the first role");
    if (!k_.arch) fail(head, 6, "expected 'kernel NAME on ARCH' before 'config'");
    if (k_.budget.has_config())
      fail(head, 6, "duplicate 'config' line", fmt::format("first at {}", at_line(k_.budget.config_loc)));
    const std::string_view line = full.substr(0, std::min(full.find('#'), full.size()));
    // Items at commas outside brackets.
    std::vector<std::pair<size_t, size_t>> items;
    {
      int depth = 0;
      size_t start = 6;
      for (size_t i = 6; i <= line.size(); ++i) {
        if (i == line.size() || (line[i] == ',' && depth == 0)) {
          items.emplace_back(start, i);
          start = i + 1;
        } else if (line[i] == '[' || line[i] == '(') {
          ++depth;
        } else if (line[i] == ']' || line[i] == ')') {
          --depth;
        }
      }
    }
    if (items.size() == 1 && trimmed(line, items[0].first, items[0].second).first == items[0].second)
      items.clear();  // `config` alone: every default
    std::vector<std::string_view> keys;
    for (const CfgKey& k : kConfigKeys) keys.push_back(k.key);
    model::GemmConfig scratch;
    model::GemvBudgetConfig gemv_scratch;
    for (auto [b0, e0] : items) {
      auto [b, e] = trimmed(line, b0, e0);
      const SourceLoc at{ln, u32(b + 1)};
      if (b == e) fail(SourceLoc{ln, u32(b0 + 1)}, 1, "empty setting in 'config'");
      const size_t eq = line.find('=', b);
      if (eq == std::string_view::npos || eq >= e)
        fail(at, u32(e - b), fmt::format("expected KEY = VALUE in 'config', found '{}'", line.substr(b, e - b)));
      auto [kb, ke] = trimmed(line, b, eq);
      const std::string_view raw_key = line.substr(kb, ke - kb);
      const SourceLoc key_at{ln, u32(kb + 1)};
      const uint32_t key_len = std::max<uint32_t>(1, u32(raw_key.size()));
      if (raw_key.empty()) fail(at, 1, "missing key before '=' in 'config'");
      std::string key(raw_key);
      std::replace(key.begin(), key.end(), '_', '-');
      if (key == "arch" || key == "cluster" || key == "cta-group" || key == "threads")
        fail(key_at, key_len, fmt::format("'{}' is not set in 'config': it comes from the scenario's {}", raw_key,
                                          key == "arch" ? "'kernel NAME on ARCH' line" : "'launch'"));
      if (key == "hand")
        fail(key_at, key_len, "hand-written byte counts go on an 'estimate' line: estimate LU = 32768, ...");
      const CfgKey* spec = nullptr;
      for (const CfgKey& k : kConfigKeys)
        if (k.key == key) spec = &k;
      if (!spec) {
        std::vector<std::string_view> under;
        std::vector<std::string> store;
        for (const CfgKey& k : kConfigKeys) {
          std::string u(k.key);
          std::replace(u.begin(), u.end(), '-', '_');
          store.push_back(u);
        }
        for (const std::string& u : store) under.push_back(u);
        fail(key_at, key_len, fmt::format("unknown config key '{}'{}", raw_key, suggest(raw_key, under)),
             fmt::format("keys: {}", join(under)));
      }
      for (const sim::BudgetDecls::Setting& s : k_.budget.config)
        if (s.key == key) fail(key_at, key_len, fmt::format("repeated config key '{}'", raw_key),
                               fmt::format("first given at column {}", s.loc.col));
      auto [vb, ve] = trimmed(line, eq + 1, e);
      if (vb == ve) fail(SourceLoc{ln, u32(eq + 1)}, 1, fmt::format("missing value after '{} ='", raw_key));
      const std::string value = config_value(p, *spec, vb, ve);
      const bool gemv_only = key == "gemv" || key == "stage-bytes";
      if (std::string err = gemv_only ? model::set_gemv_field(gemv_scratch, key, value)
                                      : model::set_config_field(scratch, key, value);
          !err.empty())
        fail(SourceLoc{ln, u32(vb + 1)}, u32(ve - vb), "config: " + err);
      k_.budget.config.push_back({key, value, key_at});
    }
    // A GEMV configuration takes only its own keys; stage_bytes only exists for it.
    const auto gemv = std::find_if(k_.budget.config.begin(), k_.budget.config.end(),
                                   [](const sim::BudgetDecls::Setting& s) { return s.key == "gemv"; });
    for (const sim::BudgetDecls::Setting& s : k_.budget.config) {
      std::string shown = s.key;
      std::replace(shown.begin(), shown.end(), '-', '_');
      if (gemv != k_.budget.config.end() && !gemv_config_key(s.key))
        fail(s.loc, u32(shown.size()),
             fmt::format("'{}' does not apply to a GEMV configuration ('gemv = M x K x L')", shown),
             "GEMV keys: gemv, ab_stages, stage_bytes, regs");
      if (gemv == k_.budget.config.end() && s.key == "stage-bytes")
        fail(s.loc, u32(shown.size()), "'stage_bytes' applies to a GEMV configuration only: add 'gemv = M x K x L'");
    }
    k_.budget.config_loc = head;
  }

  // estimate NAME = BYTES, ...: hand-written per-CTA, per-stage byte counts.
  void parse_estimate(Cur& c) {
    c.next();
    const std::vector<std::string_view> names(std::begin(kEstimateOperands), std::end(kEstimateOperands));
    for (;;) {
      const Token& n = expect_ident(c, "an operand name (A, B, SFA, SFB, C, LA, LU, VEC, AB, LORA)");
      std::string name(n.text);
      for (char& ch : name) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
      if (std::find(names.begin(), names.end(), name) == names.end())
        fail(n, fmt::format("unknown operand '{}' for 'estimate'{}", n.text, suggest(name, names)),
             fmt::format("operands: {}", join(names)));
      for (const sim::BudgetDecls::Estimate& e : k_.budget.estimates)
        if (e.operand == name)
          fail(n, fmt::format("repeated estimate for '{}'", name), fmt::format("first at {}", at_line(e.loc)));
      expect(c, Tok::Assign, fmt::format("'=' after '{}'", n.text));
      Val v = parse_expr(c, Ctx::Const);
      if (v.c() < 0) fail(v, fmt::format("a byte count must not be negative, got {}", v.c()));
      k_.budget.estimates.push_back({name, v.c(), n.loc});
      if (!c.at(Tok::Comma)) break;
      c.next();
    }
    expect_end(c);
  }

  // Which pipeline options a kind takes (docs/scenario-language.md, "Pipelines").
  static bool option_applies(sim::PipelineKind k, std::string_view opt) {
    using K = sim::PipelineKind;
    if (opt == "stages" || opt == "state") return true;
    if (opt == "tx") return k == K::TmaAsync || k == K::TmaUmma;
    if (opt == "producers") return k == K::Async || k == K::TmaAsync || k == K::AsyncUmma;
    if (opt == "consumers") return k == K::Async || k == K::TmaAsync || k == K::TmaUmma || k == K::UmmaAsync;
    if (opt == "multicast") return k != K::Async && k != K::TmaStore;
    return k != K::TmaStore;  // producer_phase, consumer_phase, tail
  }

  void parse_pipeline(Cur& c) {
    c.next();
    const Token& n = expect_ident(c, "a pipeline name");
    check_new_array_name(n);
    expect(c, Tok::Colon, "':' after the pipeline name");
    sim::PipelineDecl p;
    p.name = std::string(n.text);
    p.loc = n.loc;
    const Token& kt = c.peek();
    const PipeKindName* kind = nullptr;
    for (const PipeKindName& k : kPipeKinds) {
      if (c.at_ident(k.cls)) {
        kind = &k;
        c.next();
      } else if (k.to.empty() ? c.at_ident(k.from) && c.peek(1).kind != Tok::Arrow
                              : c.at_ident(k.from) && c.peek(1).kind == Tok::Arrow &&
                                    c.peek(2).kind == Tok::Ident && c.peek(2).text == k.to) {
        kind = &k;
        for (int i = k.to.empty() ? 1 : 3; i > 0; --i) c.next();
      }
      if (kind) break;
    }
    if (!kind) {
      std::vector<std::string_view> classes;
      for (const PipeKindName& k : kPipeKinds) classes.push_back(k.cls);
      fail(kt,
           fmt::format("expected a pipeline kind ('tma -> threads', 'threads -> threads', 'tma -> umma', "
                       "'umma -> threads', 'threads -> umma', 'tma_store' or a CUTLASS class name), found {}",
                       describe(kt)),
           fmt::format("CUTLASS class names: {}", join(classes)));
    }
    if (kind->tcgen05) need_tcgen05(kt);
    p.kind = kind->kind;
    using K = sim::PipelineKind;
    static constexpr std::string_view kOpts[] = {"stages", "tx", "producers", "consumers", "multicast",
                                                 "state", "producer_phase", "consumer_phase", "tail"};
    const std::vector<std::string_view> opt_names(std::begin(kOpts), std::end(kOpts));
    std::vector<Token> seen(std::size(kOpts));
    std::vector<bool> have(std::size(kOpts), false);
    std::optional<Val> mask, tx;
    while (!c.at(Tok::End)) {
      if (c.at(Tok::Comma)) {
        c.next();
        continue;
      }
      const Token& o = expect_ident(c, "a pipeline option");
      size_t idx = std::find(opt_names.begin(), opt_names.end(), o.text) - opt_names.begin();
      if (idx == opt_names.size())
        fail(o, fmt::format("unknown pipeline option '{}'{}", o.text, suggest(o.text, opt_names)),
             fmt::format("options: {}", join(opt_names)));
      if (have[idx])
        fail(o, fmt::format("repeated option '{}'", o.text), fmt::format("first given at column {}", seen[idx].loc.col));
      if (!option_applies(p.kind, o.text)) {
        std::vector<std::string_view> ok;
        for (std::string_view x : kOpts)
          if (option_applies(p.kind, x)) ok.push_back(x);
        fail(o, fmt::format("'{}' does not apply to a '{}' pipeline", o.text, kind_text(p.kind)),
             fmt::format("a '{}' pipeline takes: {}", kind_text(p.kind), join(ok)));
      }
      have[idx] = true;
      seen[idx] = o;
      expect(c, Tok::Assign, fmt::format("'=' after '{}'", o.text));
      const std::string_view w = o.text;
      if (w == "stages") {
        Val v = parse_expr(c, Ctx::Const);
        check_range(v, 1, 1 << 16, "stages");
        p.stages = v.c();
      } else if (w == "tx") {
        Val v = parse_expr(c, Ctx::Const);
        check_range(v, 1, kMaxCount, "tx");
        p.tx = v.c();
        tx = v;
      } else if (w == "producers" || w == "consumers") {
        Val v = parse_expr(c, Ctx::Const);
        check_range(v, 1, kMaxCount, w);
        sim::Participants part{v.c(), parse_unit(c)};
        // sim arrives with one elected thread ("1 threads") or 32 per warp ("256 threads").
        if (part.unit == sim::ArrivalUnit::Threads && part.n != 1 && part.n % 32 != 0)
          fail(v, fmt::format("{} threads is neither one elected thread (1) nor a multiple of 32", part.n));
        (w == "producers" ? p.producers : p.consumers) = part;
      } else if (w == "multicast") {
        Val v = parse_expr(c, Ctx::Multicast);
        // PipelineTmaAsync: the mask sets the empty barriers' count, so it must be known here.
        // The tcgen05 kinds' mask (commit multicast / release target) is evaluated per CTA.
        if (p.kind == K::TmaAsync && !v.is_const())
          fail(v, "multicast of a pipeline must be constant for its barrier count");
        check_mask(v);
        mask = v;
      } else if (w == "state") {
        p.state = static_cast<sim::StateKind>(parse_state_kind(c));
      } else if (w == "producer_phase" || w == "consumer_phase") {
        Val v = parse_expr(c, Ctx::Const);
        check_range(v, 0, 1, w);
        (w == "producer_phase" ? p.producer_phase : p.consumer_phase) = v.c();
      } else {  // tail: the raw text up to ',' or the end, e.g. cutlass-4.5
        const Token& first = c.peek();
        const Token* last = &first;
        while (!c.at(Tok::End) && !c.at(Tok::Comma)) last = &c.next();
        if (first.kind == Tok::End || first.kind == Tok::Comma)
          fail(first, fmt::format("expected 'cutlass-4.5', 'cutlass-4.6' or 'none', found {}", describe(first)));
        std::string_view text(first.text.data(),
                              static_cast<size_t>(last->text.data() + last->text.size() - first.text.data()));
        if (text == "cutlass-4.5") p.tail = sim::TailVariant::Cutlass45;
        else if (text == "cutlass-4.6") p.tail = sim::TailVariant::Cutlass46;
        else if (text == "none") p.tail = sim::TailVariant::None;
        else
          fail(first.loc, u32(text.size()),
               fmt::format("unknown tail '{}'; expected 'cutlass-4.5', 'cutlass-4.6' or 'none'", text));
      }
    }
    if (!have[0]) fail(n, fmt::format("missing option 'stages' for pipeline '{}'", n.text));
    if ((p.kind == K::TmaAsync || p.kind == K::TmaUmma) && !have[1])
      fail(n, fmt::format("missing option 'tx' for pipeline '{}' (bytes per stage{})", n.text,
                          p.kind == K::TmaUmma ? " per CTA" : ""));
    const int64_t group = k_.launch.cta_group;
    if (p.kind == K::TmaUmma && p.tx * group > kMaxCount)
      fail(*tx, fmt::format("tx = {} per CTA makes the leader expect {} bytes (x cta_group {}), above the tx "
                            "limit {}", p.tx, p.tx * group, group, kMaxCount));
    if (mask) p.multicast = mask->e;
    const uint32_t id = u32(k_.pipelines.size());
    if (p.kind == K::TmaStore) {  // staging buffers only: no mbarriers
      p.full = p.empty = kNoArray;
      pipes_.emplace(p.name, id);
      k_.pipelines.push_back(std::move(p));
      return;
    }
    // Arrival counts per kind (docs/scenario-language.md, both pipeline tables).
    int64_t full_count = p.producers.n, empty_count = p.consumers.n;
    std::string_view empty_why = "consumers", full_why = "producers";
    switch (p.kind) {
      case K::TmaAsync:
        empty_count = p.consumers.n * (mask ? std::popcount(static_cast<uint64_t>(mask->c())) : 1);
        empty_why = "consumers x multicast CTAs";
        break;
      case K::TmaUmma: full_count = 1; break;
      case K::UmmaAsync:
        full_count = 1;
        empty_count = p.consumers.n * group;
        empty_why = "consumers x cta_group";
        break;
      case K::AsyncUmma:
        full_count = p.producers.n * group;
        empty_count = 1;
        full_why = "producers x cta_group";
        break;
      default: break;
    }
    if (empty_count > kMaxCount)
      fail(n, fmt::format("empty barrier count {} ({}) exceeds {}", empty_count, empty_why, kMaxCount));
    if (full_count > kMaxCount)
      fail(n, fmt::format("full barrier count {} ({}) exceeds {}", full_count, full_why, kMaxCount));
    auto make = [&](std::string_view side, int64_t count) {
      sim::BarrierArray b;
      b.name = fmt::format("{}.{}", p.name, side);
      b.size = static_cast<uint32_t>(p.stages);
      b.init_count = count;
      b.pipeline = static_cast<int>(id);
      b.loc = n.loc;
      k_.barriers.push_back(std::move(b));
      return u32(k_.barriers.size() - 1);
    };
    add_barrier_bytes(2 * p.stages, n);
    p.full = make("full", full_count);
    p.empty = make("empty", empty_count);
    pipes_.emplace(p.name, id);
    k_.pipelines.push_back(std::move(p));
  }

  static sim::ArrivalUnit parse_unit(Cur& c) {
    const Token& u = c.peek();
    if (u.kind == Tok::Ident) {
      if (u.text == "threads" || u.text == "thread") { c.next(); return sim::ArrivalUnit::Threads; }
      if (u.text == "warps" || u.text == "warp") { c.next(); return sim::ArrivalUnit::Warps; }
      if (u.text == "warpgroups" || u.text == "warpgroup") { c.next(); return sim::ArrivalUnit::Warpgroups; }
    }
    fail(u, fmt::format("expected a unit ('threads', 'warps' or 'warpgroups'), found {}", describe(u)));
  }

  void parse_expect(Cur& c) {
    const Token& h = c.next();
    if (k_.expect) fail(h, "'expect' given twice", fmt::format("first at {}", at_line(k_.expect->loc)));
    sim::Expectation e;
    e.loc = h.loc;
    const Token& v = c.peek();
    if (c.at_ident("ok")) e.verdict = sim::Verdict::Ok;
    else if (c.at_ident("hang")) e.verdict = sim::Verdict::Hang;
    else if (c.at_ident("error")) e.verdict = sim::Verdict::Error;
    else if (c.at_ident("stopped")) e.verdict = sim::Verdict::Stopped;  // the run outlasts its budget (`--max-events`)
    else fail(v, fmt::format("expected 'ok', 'hang', 'error' or 'stopped', found {}", describe(v)));
    c.next();
    if (e.verdict == sim::Verdict::Error && c.at(Tok::Ident) && !c.at_ident("racy")) {
      const Token& kind = c.next();
      std::vector<std::string_view> kinds;  // the fatal rules of sim/rules.hpp
      for (const sim::RuleInfo& r : sim::kRules)
        if (r.fatal) kinds.push_back(r.id);
      if (std::find(kinds.begin(), kinds.end(), kind.text) == kinds.end())
        fail(kind, fmt::format("unknown error kind '{}'{}", kind.text, suggest(kind.text, kinds)),
             fmt::format("kinds: {}", join(kinds)));
      e.error_kind = std::string(kind.text);
    }
    if (c.at_ident("racy")) {  // the verdict depends on timing; this is the fixed-order run's
      c.next();
      e.racy = true;
    }
    expect_end(c);
    k_.expect = e;
    expect_ = true;
  }

  // ------------------------------------------------------------ roles
  void parse_role(Cur& c) {
    c.next();
    const Token& n = expect_ident(c, "a role name");
    for (const sim::Role& r : k_.roles)
      if (r.name == n.text) fail(n, fmt::format("duplicate role '{}'", n.text), fmt::format("first at {}", at_line(r.loc)));
    Val lo, hi;
    if (c.at_ident("warp")) {
      c.next();
      lo = parse_expr(c, Ctx::Const);
      hi = lo;
    } else if (c.at_ident("warps")) {
      c.next();
      lo = parse_expr(c, Ctx::Const);
      expect(c, Tok::DotDot, "'..' in the warp range");
      hi = parse_expr(c, Ctx::Const);
    } else {
      fail(c.peek(), fmt::format("expected 'warp N' or 'warps A..B' after the role name, found {}",
                                 describe(c.peek())));
    }
    const Token& colon = expect(c, Tok::Colon, "':' at the end of the role line");
    expect_end(c);
    const int64_t warps = k_.launch.warps();
    for (const Val* v : {&lo, &hi})
      if (v->c() < 0 || v->c() >= warps)
        fail(*v, fmt::format("warp {} is outside the CTA: threads = {} gives warps 0..{}", v->c(),
                             k_.launch.threads, warps - 1));
    if (hi.c() < lo.c())
      fail(SourceLoc{lo.e.loc}, hi.end_col() - lo.e.loc.col,
           fmt::format("empty warp range {}..{} (the range is inclusive: first..last)", lo.c(), hi.c()));
    sim::Role r;
    r.name = std::string(n.text);
    r.warp_lo = static_cast<int>(lo.c());
    r.warp_hi = static_cast<int>(hi.c());
    r.loc = n.loc;
    for (const sim::Role& o : k_.roles)
      if (r.warp_lo <= o.warp_hi && o.warp_lo <= r.warp_hi)
        fail(SourceLoc{lo.e.loc}, hi.end_col() - lo.e.loc.col,
             fmt::format("role '{}' (warps {}..{}) overlaps role '{}' (warps {}..{})", r.name, r.warp_lo,
                         r.warp_hi, o.name, o.warp_lo, o.warp_hi),
             fmt::format("role '{}' is declared at {}", o.name, at_line(o.loc)));
    scopes_.clear();
    r.body = parse_block(0, colon, 1, nullptr);
    k_.roles.push_back(std::move(r));
  }

  std::vector<Stmt> parse_block(uint32_t opener_indent, const Token& colon, int depth, const Local* bind) {
    if (depth > kMaxBlockDepth)
      fail(colon, fmt::format("blocks nested too deeply (more than {} levels)", kMaxBlockDepth));
    size_t p = next_significant(pos_);
    if (p == src_.size() || indent_of(p) <= opener_indent) fail(colon, "expected an indented block after ':'");
    const uint32_t block_indent = indent_of(p);
    scopes_.emplace_back();
    if (bind) scopes_.back().push_back(*bind);
    std::vector<Stmt> out;
    for (;;) {
      p = next_significant(pos_);
      if (p == src_.size()) break;
      const uint32_t ind = indent_of(p);
      if (ind <= opener_indent) break;
      if (ind != block_indent)
        fail(SourceLoc{u32(p + 1), ind + 1}, 1,
             ind > block_indent ? std::string("unexpected indentation")
                                : fmt::format("inconsistent indentation: {} spaces here, {} in the rest of the block",
                                              ind, block_indent));
      std::vector<Token> toks = lex(p);
      pos_ = p + 1;
      Cur c{&toks, 0};
      parse_stmt(c, block_indent, depth, out);
    }
    scopes_.pop_back();
    return out;
  }

  uint32_t add_site(const Token& at, std::string what) {
    k_.sites.push_back(sim::Site{at.loc, std::move(what), {}});
    return u32(k_.sites.size() - 1);
  }

  void check_new_local(const Token& n) const {
    if (find_builtin(n.text)) fail(n, fmt::format("'{}' is a built-in name", n.text));
    if (param_index_.count(std::string(n.text))) fail(n, fmt::format("'{}' is already a parameter", n.text));
    if (const Local* l = find_local(n.text))
      fail(n, fmt::format("'{}' is already defined", n.text), fmt::format("defined at {}", at_line(l->loc)));
  }

  uint32_t new_slot() { return k_.num_slots++; }

  void parse_stmt(Cur& c, uint32_t indent, int depth, std::vector<Stmt>& out) {
    const Token& h = c.peek();
    if (h.kind != Tok::Ident) fail(h, fmt::format("expected a statement, found {}", describe(h)));
    const std::string_view w = h.text;
    if (c.peek(1).kind == Tok::Dot) {
      if (pipes_.count(std::string(w))) return out.push_back(parse_pipe_call(c));
      if (arrays_.count(std::string(w)))
        fail(h, fmt::format("'{}' is a barrier, not a pipeline", w));
      if (std::find(std::begin(kStatements), std::end(kStatements), w) == std::end(kStatements))
        fail(h, fmt::format("unknown pipeline '{}'{}", w, suggest(w, pipe_names())));
    }
    if (w == "for") return out.push_back(parse_for(c, indent, depth));
    if (w == "if") return out.push_back(parse_if(c, indent, depth));
    if (w == "elif" || w == "else") fail(h, fmt::format("'{}' without a matching 'if'", w));
    if (w == "let") return out.push_back(parse_let(c));
    if (w == "compute") return out.push_back(parse_compute(c));
    if (w == "tma") return out.push_back(parse_tma(c));
    if (w == "mma" || w == "commit" || w.starts_with("tmem_")) {
      if (std::find(std::begin(kStatements), std::end(kStatements), w) != std::end(kStatements))
        return out.push_back(parse_tcgen05(c));
    }
    if (w == "cluster_sync") {
      c.next();
      expect_end(c);
      Stmt a = op_stmt(OpKind::ClusterArrive, h, "cluster_sync");
      Stmt b = op_stmt(OpKind::ClusterWait, h, {});
      b.site = a.site;
      out.push_back(std::move(a));
      out.push_back(std::move(b));
      return;
    }
    if (std::find(std::begin(kStatements), std::end(kStatements), w) != std::end(kStatements))
      return out.push_back(parse_raw(c));
    std::vector<std::string_view> cands(std::begin(kStatements), std::end(kStatements));
    cands.push_back("elif");
    cands.push_back("else");
    for (std::string_view p : pipe_names()) cands.push_back(p);
    fail(h, fmt::format("unknown statement '{}'{}", w, suggest(w, cands)));
  }

  std::vector<std::string_view> pipe_names() const {
    std::vector<std::string_view> v;
    for (const auto& p : k_.pipelines) v.push_back(p.name);
    return v;
  }
  std::vector<std::string_view> array_names() const {
    std::vector<std::string_view> v;
    for (const auto& b : k_.barriers)
      if (b.pipeline < 0) v.push_back(b.name);
    for (const auto& p : k_.pipelines) v.push_back(p.name);
    return v;
  }

  Stmt op_stmt(OpKind k, const Token& head, std::string what) {
    Stmt s;
    s.kind = StmtKind::Op;
    s.op = k;
    if (!what.empty()) s.site = add_site(head, std::move(what));
    return s;
  }

  Stmt parse_for(Cur& c, uint32_t indent, int depth) {
    const Token& h = c.next();
    const Token& v = expect_ident(c, "a loop variable");
    check_new_local(v);
    expect_word(c, "in", "after the loop variable");
    Stmt s;
    s.kind = StmtKind::For;
    s.site = add_site(h, "for");
    if (c.at_ident("tiles") && c.peek(1).kind == Tok::Colon) {
      // The static persistent scheduler: cluster_id .. num_tiles step num_clusters (both CTAs of
      // a pair, all CTAs of a cluster, get the same tiles).
      const Token& t = c.next();
      if (k_.launch.tiles == 0)
        fail(t, "'for ... in tiles' needs the tile scheduler: add 'tiles = N' to the launch");
      const Token& colon = c.next();
      expect_end(c);
      s.begin = slot_value(sim::kSlotClusterId, t).e;
      s.end = slot_value(sim::kSlotNumTiles, t).e;
      s.step = slot_value(sim::kSlotNumClusters, t).e;
      s.slot = new_slot();
      Local var{std::string(v.text), s.slot, v.loc};
      s.body = parse_block(indent, colon, depth + 1, &var);
      return s;
    }
    Val b = parse_expr(c, Ctx::Role);
    expect(c, Tok::DotDot, "'..' in the loop range");
    Val e = parse_expr(c, Ctx::Role);
    Val st = make_const(1, e.e.loc, e.len);
    if (c.at_ident("step")) {
      c.next();
      st = parse_expr(c, Ctx::Role);
      if (st.is_const() && st.c() <= 0) fail(st, fmt::format("loop step must be positive, got {}", st.c()));
    }
    const Token& colon = expect(c, Tok::Colon, "':' at the end of the 'for' line");
    expect_end(c);
    s.begin = b.e;
    s.end = e.e;
    s.step = st.e;
    s.slot = new_slot();
    Local var{std::string(v.text), s.slot, v.loc};
    s.body = parse_block(indent, colon, depth + 1, &var);
    return s;
  }

  Stmt parse_if(Cur& c, uint32_t indent, int depth) {
    Stmt top = parse_cond_block(c, indent, depth, "if");
    Stmt* cur = &top;
    for (;;) {
      size_t p = next_significant(pos_);
      if (p == src_.size() || indent_of(p) != indent) break;
      std::vector<Token> toks = lex(p);
      Cur c2{&toks, 0};
      if (c2.at_ident("elif") && c2.peek(1).kind != Tok::Dot) {
        pos_ = p + 1;
        cur->else_body.push_back(parse_cond_block(c2, indent, depth, "elif"));
        cur = &cur->else_body.back();
      } else if (c2.at_ident("else") && c2.peek(1).kind != Tok::Dot) {
        pos_ = p + 1;
        c2.next();
        const Token& colon = expect(c2, Tok::Colon, "':' after 'else'");
        expect_end(c2);
        cur->else_body = parse_block(indent, colon, depth + 1, nullptr);
        break;
      } else {
        break;
      }
    }
    return top;
  }

  Stmt parse_cond_block(Cur& c, uint32_t indent, int depth, std::string_view what) {
    const Token& h = c.next();
    Stmt s;
    s.kind = StmtKind::If;
    s.site = add_site(h, std::string(what));
    Val cond = parse_expr(c, Ctx::Role);
    const Token& colon = expect(c, Tok::Colon, fmt::format("':' at the end of the '{}' line", what));
    expect_end(c);
    s.value = cond.e;
    s.body = parse_block(indent, colon, depth + 1, nullptr);
    return s;
  }

  Stmt parse_let(Cur& c) {
    const Token& h = c.next();
    const Token& n = expect_ident(c, "a name");
    check_new_local(n);
    expect(c, Tok::Assign, fmt::format("'=' after '{}'", n.text));
    Val v = parse_expr(c, Ctx::Role);
    expect_end(c);
    Stmt s;
    s.kind = StmtKind::Let;
    s.site = add_site(h, "let");
    s.slot = new_slot();
    s.value = v.e;
    scopes_.back().push_back(Local{std::string(n.text), s.slot, n.loc});
    return s;
  }

  Stmt parse_compute(Cur& c) {
    const Token& h = c.next();
    Val v = parse_expr(c, Ctx::Role);
    if (v.is_const() && v.c() < 0) fail(v, fmt::format("compute time must not be negative, got {}", v.c()));
    const Token& u = c.peek();
    Stmt s = op_stmt(OpKind::Compute, h, "compute");
    if (c.at_ident("ns")) {
      s.ns = v.e;
    } else if (c.at_ident("us")) {
      s.ns = binary(ExprCode::Mul, u, v, make_const(1000, u.loc, u.len)).e;
    } else if (c.at_ident("ms")) {
      s.ns = binary(ExprCode::Mul, u, v, make_const(1000000, u.loc, u.len)).e;
    } else if (c.at_ident("cycles")) {
      // ns = ceil(cycles * 1000 / MHz)
      const int64_t mhz = std::max<int64_t>(1, static_cast<int64_t>(k_.arch->time.clock_ghz * 1000.0 + 0.5));
      Val x = binary(ExprCode::Mul, u, v, make_const(1000, u.loc, u.len));
      x = binary(ExprCode::Add, u, std::move(x), make_const(mhz - 1, u.loc, u.len));
      x = binary(ExprCode::Div, u, std::move(x), make_const(mhz, u.loc, u.len));
      s.ns = x.e;
    } else {
      fail(u, fmt::format("expected a time unit ('ns', 'us', 'ms' or 'cycles'), found {}", describe(u)));
    }
    s.ns->loc = v.e.loc;
    c.next();
    expect_end(c);
    return s;
  }

  const sim::PipelineDecl& pipe(uint32_t id) const { return k_.pipelines[id]; }

  Stmt parse_pipe_call(Cur& c) {
    const Token& pn = c.next();
    c.next();  // .
    const uint32_t id = pipes_.at(std::string(pn.text));
    const Token& call = expect_ident(c, "a pipeline call after '.'");
    struct Call { std::string_view name; sim::PipeCall call; };
    static constexpr Call kCalls[] = {
        {"producer_acquire", sim::PipeCall::ProducerAcquire}, {"producer_commit", sim::PipeCall::ProducerCommit},
        {"producer_tail", sim::PipeCall::ProducerTail},       {"consumer_wait", sim::PipeCall::ConsumerWait},
        {"consumer_release", sim::PipeCall::ConsumerRelease},
    };
    Stmt s;
    s.pipeline = id;
    if (call.text == "state") return parse_set_state(c, pn, s);
    const Call* found = nullptr;
    for (const Call& k : kCalls)
      if (k.name == call.text) found = &k;
    if (!found) {
      std::vector<std::string_view> names;
      for (const Call& k : kCalls) names.push_back(k.name);
      names.push_back("state");
      std::string note;
      if (call.text == "full" || call.text == "empty")
        note = fmt::format("'{}.{}' is a barrier array; use it as an operand, e.g. 'wait {}.{}[0] parity = 0'",
                           pn.text, call.text, pn.text, call.text);
      fail(call, fmt::format("unknown pipeline call '{}'{}", call.text, suggest(call.text, names)), note);
    }
    if (pipe(id).kind == sim::PipelineKind::TmaStore &&
        (found->call == sim::PipeCall::ConsumerWait || found->call == sim::PipeCall::ConsumerRelease))
      no_consumer_side(pn, call);
    expect_end(c);
    s.kind = StmtKind::Pipe;
    s.call = found->call;
    s.site = add_site(pn, fmt::format("{}.{}", pn.text, call.text));
    return s;
  }

  // A consumer-side call or state of a PipelineTmaStore (it has only a producer side).
  [[noreturn]] static void no_consumer_side(const Token& pn, const Token& at) {
    fail(at, fmt::format("'{}' is a 'tma_store' pipeline: it has no consumer side", pn.text),
         fmt::format("its calls: {}.producer_acquire, 'store {} bytes = N', {}.producer_commit, {}.producer_tail",
                     pn.text, pn.text, pn.text, pn.text));
  }

  Stmt parse_set_state(Cur& c, const Token& pn, Stmt s) {
    s.kind = StmtKind::SetState;
    const Token& side = c.peek();
    if (c.at_ident("producer")) s.side = sim::Side::Producer;
    else if (c.at_ident("consumer")) s.side = sim::Side::Consumer;
    else fail(side, fmt::format("expected 'producer' or 'consumer', found {}", describe(side)));
    if (s.side == sim::Side::Consumer && pipe(s.pipeline).kind == sim::PipelineKind::TmaStore)
      no_consumer_side(pn, side);
    c.next();
    static constexpr OSpec kSpecs[] = {{"index"}, {"phase"}, {"kind", OT::StateKind}};
    Token head = pn;
    head.text = "state";
    std::vector<OGot> g = operands(c, head, kSpecs, Ctx::Role);
    const int64_t stages = pipe(s.pipeline).stages;
    if (g[0].present) {
      check_range(g[0].v, 0, stages - 1, "pipeline state index");
      s.index = g[0].v.e;
    }
    if (g[1].present) {
      check_range(g[1].v, 0, std::numeric_limits<int64_t>::max(), "pipeline state phase");
      s.phase = g[1].v.e;
    }
    if (g[2].present) s.state_kind = static_cast<sim::StateKind>(g[2].word);
    s.site = add_site(pn, fmt::format("{}.state", pn.text));
    return s;
  }

  sim::BarOperand parse_bar(Cur& c, const Token& head) {
    const Token& n = c.peek();
    if (n.kind != Tok::Ident) fail(n, fmt::format("expected a barrier after '{}', found {}", head.text, describe(n)));
    c.next();
    sim::BarOperand b;
    const std::string name(n.text);
    std::string shown = name;
    if (auto pit = pipes_.find(name); pit != pipes_.end()) {
      const sim::PipelineDecl& p = pipe(pit->second);
      if (p.kind == sim::PipelineKind::TmaStore)
        fail(n, fmt::format("'{}' is a 'tma_store' pipeline; it has no barrier arrays", name));
      if (!c.at(Tok::Dot))
        fail(n, fmt::format("'{}' is a pipeline; name one of its barrier arrays: '{}.full' or '{}.empty'", name, name, name));
      c.next();
      const Token& which = expect_ident(c, "'full' or 'empty'");
      if (which.text == "full") b.array = p.full;
      else if (which.text == "empty") b.array = p.empty;
      else fail(which, fmt::format("expected 'full' or 'empty' after '{}.', found {}", name, describe(which)));
      shown = k_.barriers[b.array].name;
    } else if (auto ait = arrays_.find(name); ait != arrays_.end()) {
      b.array = ait->second;
    } else {
      fail(n, fmt::format("unknown barrier '{}'{}", name, suggest(name, array_names())));
    }
    if (c.at(Tok::LBracket)) {
      c.next();
      Val i = parse_expr(c, Ctx::Role);
      expect(c, Tok::RBracket, "']'");
      const uint32_t size = k_.barriers[b.array].size;
      if (i.is_const() && (i.c() < 0 || i.c() >= size))
        fail(i, fmt::format("index {} is outside '{}' ({} element{}: 0..{})", i.c(), shown, size,
                            size == 1 ? "" : "s", size - 1));
      b.index = i.e;
    }
    return b;
  }

  Stmt parse_tma(Cur& c) {
    const Token& h = c.next();
    const Token& t = c.peek();
    // box = the global box the copy reads (any integer naming it; equal boxes hit the L2).
    static constexpr OSpec kPipeSpecs[] = {{"bytes"}, {"multicast"}, {"box"}};
    static constexpr OSpec kRawSpecs[] = {{"bytes", OT::Expr, true}, {"multicast"}, {"box"}};
    if (t.kind == Tok::Ident && pipes_.count(std::string(t.text)) && c.peek(1).kind != Tok::Dot) {
      c.next();
      const uint32_t id = pipes_.at(std::string(t.text));
      const sim::PipelineKind kind = pipe(id).kind;
      if (kind != sim::PipelineKind::TmaAsync && kind != sim::PipelineKind::TmaUmma)
        fail(t, fmt::format("'tma {}' needs a 'tma -> threads' or 'tma -> umma' pipeline; '{}' is '{}'", t.text,
                            t.text, kind_text(kind)));
      std::vector<OGot> g = operands(c, h, kPipeSpecs, Ctx::Role);
      Stmt s;
      s.kind = StmtKind::Pipe;
      s.call = sim::PipeCall::Tma;
      s.pipeline = id;
      if (g[0].present) {
        check_copy_bytes(g[0].v, "TMA");
        s.bytes = g[0].v.e;
      }
      if (g[1].present) {
        check_mask(g[1].v);
        s.mask = g[1].v.e;
      }
      if (g[2].present) s.box = g[2].v.e;
      s.site = add_site(h, fmt::format("tma {}", t.text));
      return s;
    }
    if (t.kind == Tok::Ident && !pipes_.count(std::string(t.text)) && !arrays_.count(std::string(t.text)))
      fail(t, fmt::format("unknown pipeline or barrier '{}'{}", t.text, suggest(t.text, array_names())));
    Stmt s = op_stmt(OpKind::TmaLoad, h, "tma");
    s.bar = parse_bar(c, h);
    std::vector<OGot> g = operands(c, h, kRawSpecs, Ctx::Role);
    check_copy_bytes(g[0].v, "TMA");
    s.bytes = g[0].v.e;
    if (g[1].present) {
      check_mask(g[1].v);
      s.mask = g[1].v.e;
    }
    if (g[2].present) s.box = g[2].v.e;
    return s;
  }

  // init, inval, fence_init, arrive..., wait, test_wait, store, commit_group, wait_group,
  // bar_sync, bar_arrive, syncthreads, cluster_arrive, cluster_wait.
  Stmt parse_raw(Cur& c) {
    const Token& h = c.next();
    const std::string_view w = h.text;
    const std::string what(w);
    auto with_bar = [&](OpKind k) {
      Stmt s = op_stmt(k, h, what);
      s.bar = parse_bar(c, h);
      return s;
    };
    auto set_rank = [&](Stmt& s, const OGot& g) {
      if (!g.present) return;
      check_rank(g.v);
      s.bar->rank = g.v.e;
    };
    if (w == "init") {
      Stmt s = with_bar(OpKind::Init);
      static constexpr OSpec kS[] = {{"count", OT::Expr, true}};
      auto g = operands(c, h, kS, Ctx::Role);
      check_count(g[0].v);
      s.count = g[0].v.e;
      return s;
    }
    if (w == "inval") {
      Stmt s = with_bar(OpKind::Inval);
      operands(c, h, {}, Ctx::Role);
      return s;
    }
    if (w == "arrive" || w == "arrive_drop") {
      Stmt s = with_bar(w == "arrive" ? OpKind::Arrive : OpKind::ArriveDrop);
      static constexpr OSpec kS[] = {{"count"}, {"cta"}};
      auto g = operands(c, h, kS, Ctx::Role);
      if (g[0].present) check_count(g[0].v);
      s.count = g[0].present ? g[0].v.e : Expr::constant(1, h.loc);
      set_rank(s, g[1]);
      return s;
    }
    if (w == "arrive_expect_tx" || w == "expect_tx" || w == "complete_tx") {
      Stmt s = with_bar(w == "arrive_expect_tx" ? OpKind::ArriveExpectTx
                        : w == "expect_tx"      ? OpKind::ExpectTx
                                                : OpKind::CompleteTx);
      static constexpr OSpec kS[] = {{"bytes", OT::Expr, true}, {"cta"}};
      auto g = operands(c, h, kS, Ctx::Role);
      check_tx(g[0].v);
      s.bytes = g[0].v.e;
      set_rank(s, g[1]);
      return s;
    }
    if (w == "wait") {
      Stmt s = with_bar(OpKind::Wait);
      static constexpr OSpec kS[] = {{"parity"}, {"phase"}, {"cta"}};
      auto g = operands(c, h, kS, Ctx::Role);
      if (g[0].present == g[1].present)
        fail(g[0].present ? g[1].name : h,
             g[0].present ? "'wait' takes either 'parity' or 'phase', not both"
                          : "missing operand 'parity' or 'phase' for 'wait'");
      if (g[0].present) {
        check_parity(g[0].v);
        s.parity = g[0].v.e;
      } else {
        check_range(g[1].v, 0, std::numeric_limits<int64_t>::max(), "phase");
        s.phase = g[1].v.e;
      }
      set_rank(s, g[2]);
      return s;
    }
    if (w == "test_wait") {
      Stmt s = with_bar(OpKind::TestWait);
      static constexpr OSpec kS[] = {{"parity", OT::Expr, true}, {"expect", OT::Bool, true}, {"cta"}};
      auto g = operands(c, h, kS, Ctx::Role);
      check_parity(g[0].v);
      s.parity = g[0].v.e;
      s.expect = g[1].v.e;  // 1: the test must find the phase completed; 0: not completed
      set_rank(s, g[2]);
      return s;
    }
    if (w == "store" && c.at(Tok::Ident) && c.peek(1).kind != Tok::Assign) return parse_pipe_store(c, h);
    if (w == "store") {
      Stmt s = op_stmt(OpKind::BulkStore, h, what);
      static constexpr OSpec kS[] = {{"bytes", OT::Expr, true}};
      auto g = operands(c, h, kS, Ctx::Role);
      check_copy_bytes(g[0].v, "bulk store");
      s.bytes = g[0].v.e;
      return s;
    }
    if (w == "wait_group") {
      Stmt s = op_stmt(OpKind::WaitGroup, h, what);
      Val n = parse_expr(c, Ctx::Role);
      check_range(n, 0, 63, "wait_group count");
      s.n = n.e;
      static constexpr OSpec kS[] = {{"read", OT::Flag}};
      auto g = operands(c, h, kS, Ctx::Role);
      // `.read` is carried in Stmt::expect = 1 (unset: plain wait_group), like Op::b.
      if (g[0].present) s.expect = Expr::constant(1, g[0].name.loc);
      return s;
    }
    if (w == "bar_sync" || w == "bar_arrive") {
      Stmt s = op_stmt(w == "bar_sync" ? OpKind::NamedSync : OpKind::NamedArrive, h, what);
      Val id = parse_expr(c, Ctx::Role);
      check_range(id, 0, 15, "named barrier id");
      s.id = id.e;
      static constexpr OSpec kSync[] = {{"threads"}};
      static constexpr OSpec kArrive[] = {{"threads", OT::Expr, true}};
      auto g = operands(c, h, w == "bar_sync" ? std::span<const OSpec>(kSync) : std::span<const OSpec>(kArrive),
                        Ctx::Role);
      if (g[0].present) {
        check_threads(g[0].v);
        s.threads = g[0].v.e;
      } else {
        s.threads = Expr::constant(k_.launch.threads, h.loc);
      }
      return s;
    }
    if (w == "syncthreads") {
      Stmt s = op_stmt(OpKind::NamedSync, h, what);
      operands(c, h, {}, Ctx::Role);
      s.id = Expr::constant(0, h.loc);
      s.threads = Expr::constant(k_.launch.threads, h.loc);
      return s;
    }
    OpKind k = w == "fence_init"     ? OpKind::FenceInit
               : w == "commit_group" ? OpKind::CommitGroup
               : w == "cluster_arrive" ? OpKind::ClusterArrive
                                       : OpKind::ClusterWait;
    Stmt s = op_stmt(k, h, what);
    operands(c, h, {}, Ctx::Role);
    return s;
  }

  // store P bytes = N: bulk store of a PipelineTmaStore's acquired staging buffer.
  Stmt parse_pipe_store(Cur& c, const Token& h) {
    const Token& t = c.next();
    auto it = pipes_.find(std::string(t.text));
    if (it == pipes_.end())
      fail(t, fmt::format("unknown pipeline '{}'{}", t.text, suggest(t.text, pipe_names())),
           "'store P bytes = N' stores a 'tma_store' pipeline's buffer; a raw bulk store is 'store bytes = N'");
    const sim::PipelineKind kind = pipe(it->second).kind;
    if (kind != sim::PipelineKind::TmaStore)
      fail(t, fmt::format("'store {}' needs a 'tma_store' pipeline; '{}' is '{}'", t.text, t.text, kind_text(kind)));
    static constexpr OSpec kS[] = {{"bytes", OT::Expr, true}};
    auto g = operands(c, h, kS, Ctx::Role);
    check_copy_bytes(g[0].v, "bulk store");
    Stmt s;
    s.kind = StmtKind::Pipe;
    s.call = sim::PipeCall::Store;
    s.pipeline = it->second;
    s.bytes = g[0].v.e;
    s.site = add_site(h, fmt::format("store {}", t.text));
    return s;
  }

  // A statement's `cta_group = G` override of the launch's cta_group.
  void set_cta_group(Stmt& s, const OGot& g) const {
    if (!g.present) return;
    const Val& v = g.v;
    if (v.is_const()) {
      if (v.c() != 1 && v.c() != 2) fail(v, fmt::format("cta_group must be 1 or 2, got {}", v.c()));
      if (v.c() == 2 && k_.launch.cluster % 2 != 0)
        fail(v, fmt::format("cta_group = 2 needs an even cluster size, got cluster = {}", k_.launch.cluster),
             "the CTA pairs of cta_group::2 are cluster ranks (2j, 2j+1)");
    }
    s.cta_group = v.e;
  }

  // tcgen05.alloc / dealloc: a power of two in 32..512.
  static void check_alloc_cols(const Val& v) {
    if (!v.is_const()) return;
    const int64_t x = v.c();
    if (x < 32 || x > 512 || !std::has_single_bit(static_cast<uint64_t>(x)))
      fail(v, fmt::format("TMEM columns must be a power of two in 32..512, got {}", x));
  }

  // mma, commit, tmem_alloc, tmem_dealloc, tmem_relinquish, tmem_load, tmem_store, tmem_wait.
  Stmt parse_tcgen05(Cur& c) {
    const Token& h = c.next();
    need_tcgen05(h);
    const std::string_view w = h.text;
    const std::string what(w);
    if (w == "mma") {
      static constexpr OSpec kS[] = {{"kind", OT::Word, true}, {"m", OT::Expr, true}, {"n", OT::Expr, true},
                                     {"k", OT::Expr, true},     {"count"},             {"cta_group"}};
      auto g = operands(c, h, kS, Ctx::Role);
      Stmt s = op_stmt(OpKind::Mma, h, what);
      const Token& kt = g[0].tok;
      std::optional<model::MmaKind> kind = model::mma_kind_from_name(kt.text);
      if (!kind) {
        std::vector<std::string_view> kinds;
        for (int i = 0; i < model::kNumMmaKinds; ++i) kinds.push_back(model::mma_kind_name(static_cast<model::MmaKind>(i)));
        fail(kt, fmt::format("unknown mma kind '{}'{}", kt.text, suggest(kt.text, kinds)),
             fmt::format("kinds: {}", join(kinds)));
      }
      s.mma_kind = *kind;
      static constexpr std::string_view kDims[] = {"M", "N", "K"};
      for (int i = 0; i < 3; ++i) check_range(g[1 + i].v, 0, 65535, kDims[i]);
      if (g[4].present) check_range(g[4].v, 1, std::numeric_limits<int32_t>::max(), "mma count");
      set_cta_group(s, g[5]);
      s.mma_m = g[1].v.e;
      s.mma_n = g[2].v.e;
      s.mma_k = g[3].v.e;
      s.count = g[4].present ? g[4].v.e : Expr::constant(1, h.loc);
      // Checked here when everything is known; the engine checks the rest at run time.
      const bool group_known = !s.cta_group || s.cta_group->is_const();
      if (g[1].v.is_const() && g[2].v.is_const() && g[3].v.is_const() && group_known) {
        const int64_t group = s.cta_group ? s.cta_group->code[0].value : k_.launch.cta_group;
        const int m = static_cast<int>(g[1].v.c()), n = static_cast<int>(g[2].v.c()), k = static_cast<int>(g[3].v.c());
        const std::string why = model::mma_shape_error(*kind, m, n, k, static_cast<int>(group));
        if (!why.empty()) {
          const Val& at = why.starts_with("K ") ? g[3].v : why.starts_with("N ") ? g[2].v : g[1].v;
          fail(at, fmt::format("illegal tcgen05.mma shape M={} N={} K={} for kind::{}: {}", m, n, k,
                               model::mma_kind_name(*kind), why));
        }
      }
      return s;
    }
    if (w == "commit") {
      Stmt s = op_stmt(OpKind::Commit, h, what);
      s.bar = parse_bar(c, h);
      static constexpr OSpec kS[] = {{"multicast"}, {"cta_group"}};
      auto g = operands(c, h, kS, Ctx::Role);
      if (g[0].present) {
        check_mask(g[0].v);
        s.mask = g[0].v.e;
      }
      set_cta_group(s, g[1]);
      return s;
    }
    if (w == "tmem_alloc" || w == "tmem_dealloc") {
      Stmt s = op_stmt(w == "tmem_alloc" ? OpKind::TmemAlloc : OpKind::TmemDealloc, h, what);
      static constexpr OSpec kS[] = {{"cols", OT::Expr, true}, {"cta_group"}};
      auto g = operands(c, h, kS, Ctx::Role);
      check_alloc_cols(g[0].v);
      s.cols = g[0].v.e;
      set_cta_group(s, g[1]);
      return s;
    }
    if (w == "tmem_load" || w == "tmem_store") {
      Stmt s = op_stmt(w == "tmem_load" ? OpKind::TmemLoad : OpKind::TmemStore, h, what);
      static constexpr OSpec kS[] = {{"cols", OT::Expr, true}};
      auto g = operands(c, h, kS, Ctx::Role);
      check_range(g[0].v, 1, 512, "TMEM columns");
      s.cols = g[0].v.e;
      return s;
    }
    if (w == "tmem_wait") {
      const Token& which = c.peek();
      if (!c.at_ident("ld") && !c.at_ident("st"))
        fail(which, fmt::format("expected 'ld' or 'st' after 'tmem_wait', found {}", describe(which)));
      c.next();
      Stmt s = op_stmt(OpKind::TmemWait, h, fmt::format("tmem_wait {}", which.text));
      s.n = Expr::constant(which.text == "ld" ? 0 : 1, which.loc);
      operands(c, h, {}, Ctx::Role);
      return s;
    }
    Stmt s = op_stmt(OpKind::TmemRelinquish, h, what);  // tmem_relinquish
    operands(c, h, {}, Ctx::Role);
    return s;
  }

  // ------------------------------------------------------------ state
  sim::Kernel k_;
  std::vector<SrcLine> src_;
  size_t pos_ = 0;
  std::vector<Define> defines_;
  std::vector<bool> define_used_;
  std::unordered_map<std::string, size_t> param_index_;
  std::vector<SourceLoc> param_locs_;
  std::unordered_map<std::string, uint32_t> arrays_;  // user barrier arrays
  std::unordered_map<std::string, uint32_t> pipes_;
  std::vector<std::vector<Local>> scopes_;
  bool have_launch_ = false;
  bool expect_ = false;
  SourceLoc kernel_loc_, launch_loc_;
  int64_t barrier_elems_ = 0;
  int depth_ = 0;
};

}  // namespace

std::string render_diagnostic(std::string_view file, const std::vector<std::string>& lines, sim::SourceLoc loc,
                              std::string_view severity, std::string_view msg, std::string_view note,
                              uint32_t caret_len) {
  std::string out;
  if (loc.line == 0) {
    out = fmt::format("{}: {}: {}\n", file, severity, msg);
  } else {
    out = fmt::format("{}:{}:{}: {}: {}\n", file, loc.line, loc.col, severity, msg);
    if (loc.line <= lines.size()) {
      const std::string& src = lines[loc.line - 1];
      std::string shown, caret;
      for (char ch : src) {
        const auto uc = static_cast<unsigned char>(ch);
        shown += (uc < 0x20 && ch != '\t') || uc == 0x7f ? '?' : ch;
      }
      const size_t col0 = loc.col > 0 ? loc.col - 1 : 0;
      for (size_t i = 0; i < col0; ++i) {
        if (i >= src.size()) caret += ' ';
        else if (src[i] == '\t') caret += '\t';
        else if ((static_cast<unsigned char>(src[i]) & 0xC0) != 0x80) caret += ' ';  // UTF-8 lead byte
      }
      size_t len = caret_len == 0 ? 1 : caret_len;
      if (col0 < src.size()) len = std::min(len, src.size() - col0);
      else len = 1;
      caret += '^';
      caret.append(len - 1, '~');
      out += fmt::format("  {}\n  {}\n", shown, caret);
    }
  }
  if (!note.empty()) out += fmt::format("  note: {}\n", note);
  return out;
}

sim::Kernel parse_scenario(std::string_view path, std::string_view text, std::span<const Define> defines) {
  Parser p(path, text, defines);
  try {
    return p.run();
  } catch (const Diag& d) {
    std::string rendered = render_diagnostic(path, p.lines(), d.loc, "error", d.msg, d.note, d.len);
    throw ParseError(std::move(rendered), std::string(path), d.loc, d.msg);
  }
}

}  // namespace pipesim::verify
