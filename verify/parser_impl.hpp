// The scenario parser's shared pieces and the Parser class (internal to verify/, not installed):
// parser.cpp reads lines, tokens and the top-level declarations; parser_expr.cpp expressions, range
// checks and operands; parser_budget.cpp `config` / `estimate` lines and pipeline options;
// parser_roles.cpp role bodies and their statements. Tiny members stay inline here.
#pragma once

#include "verify/parser.hpp"

#include "sim/engine.hpp"
#include "sim/operand_rules.hpp"
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

namespace pipesim::verify::scenario {

using sim::Expr;
using sim::ExprCode;
using sim::OpKind;
using sim::SourceLoc;
using sim::Stmt;
using sim::StmtKind;

inline constexpr int64_t kMaxCount = (int64_t{1} << 20) - 1;  // mbarrier arrival count / tx bound
inline constexpr int kMaxBlockDepth = 32;
inline constexpr int kMaxExprDepth = 128;

// An error found while reading: rendered by parse_scenario.
struct Diag {
  SourceLoc loc;
  uint32_t len = 1;
  std::string msg;
  std::string note;
};

inline uint32_t u32(size_t v) { return static_cast<uint32_t>(v); }

inline size_t edit_distance(std::string_view a, std::string_view b) {
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
inline std::string suggest(std::string_view name, const std::vector<std::string_view>& candidates) {
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

inline std::string join(const std::vector<std::string_view>& v) {
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
inline constexpr Builtin kBuiltins[] = {
    {"cta_id", sim::kSlotCtaId},          {"cluster_id", sim::kSlotClusterId},
    {"cluster_rank", sim::kSlotClusterRank}, {"warp", sim::kSlotWarp},
    {"warp_in_role", sim::kSlotWarpInRole}, {"num_ctas", sim::kSlotNumCtas},
    {"num_clusters", sim::kSlotNumClusters}, {"cluster_size", sim::kSlotClusterSize},
    {"num_sms", sim::kSlotNumSms},           {"is_leader", sim::kSlotIsLeader},
    {"peer_rank", sim::kSlotPeerRank},       {"num_tiles", sim::kSlotNumTiles},
    {"leader_rank", sim::kSlotLeaderRank},
};

inline const Builtin* find_builtin(std::string_view n) {
  for (const Builtin& b : kBuiltins)
    if (b.name == n) return &b;
  return nullptr;
}


inline constexpr std::string_view kStatements[] = {
    "for", "if", "let", "var", "compute", "tma", "init", "inval", "fence_init", "arrive",
    "arrive_expect_tx", "expect_tx", "complete_tx", "arrive_drop", "wait", "test_wait",
    "store", "commit_group", "wait_group", "bar_sync", "bar_arrive", "syncthreads",
    "cluster_arrive", "cluster_wait", "cluster_sync",
    // tcgen05 (sm_100a / sm_103a)
    "mma", "commit", "tmem_alloc", "tmem_dealloc", "tmem_relinquish", "tmem_load", "tmem_store",
    "tmem_wait",
    // Hopper wgmma (sm_90a)
    "wgmma", "wgmma_commit", "wgmma_wait",
    // cluster launch control (sm_100a and later)
    "clc_try_cancel",
};

inline constexpr uint32_t kNoArray = std::numeric_limits<uint32_t>::max();  // PipelineTmaStore's full/empty

// The pipeline kinds: the arrow spelling (empty `to`: a single word), the CUTLASS class name.
struct PipeKindName {
  std::string_view from, to, cls;
  sim::PipelineKind kind;
  bool tcgen05;
};
inline constexpr PipeKindName kPipeKinds[] = {
    {"tma", "threads", "PipelineTmaAsync", sim::PipelineKind::TmaAsync, false},
    {"threads", "threads", "PipelineAsync", sim::PipelineKind::Async, false},
    {"tma", "umma", "PipelineTmaUmma", sim::PipelineKind::TmaUmma, true},
    {"umma", "threads", "PipelineUmmaAsync", sim::PipelineKind::UmmaAsync, true},
    {"threads", "umma", "PipelineAsyncUmma", sim::PipelineKind::AsyncUmma, true},
    {"tma_store", "", "PipelineTmaStore", sim::PipelineKind::TmaStore, false},
};

// "tma -> threads", "tma_store" ...: how messages name a pipeline kind.
inline std::string kind_text(sim::PipelineKind k) {
  for (const PipeKindName& n : kPipeKinds)
    if (n.kind == k) return n.to.empty() ? std::string(n.from) : fmt::format("{} -> {}", n.from, n.to);
  return "?";
}

inline constexpr std::string_view kDeclarations[] = {"kernel", "let",  "launch", "barrier",  "pipeline",
                                              "role",   "expect", "config", "estimate", "smem"};

// `config` keys (model::set_config_field's, '_' written for '-') and how their values are read.
enum class CfgValue : uint8_t { Int, IntOrAuto, Word, Dims, List };
struct CfgKey {
  std::string_view key;
  CfgValue value;
};
inline constexpr CfgKey kConfigKeys[] = {
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
inline bool gemv_config_key(std::string_view k) { return k == "gemv" || k == "stage-bytes" || k == "ab-stages" || k == "regs"; }
inline constexpr std::string_view kEstimateOperands[] = {"A", "B", "SFA", "SFB", "C", "LA", "LU", "VEC", "AB", "LORA"};

// An expression being built: postfix code (a single Const when folded) and its source span.
struct Val {
  Expr e;
  uint32_t len = 1;
  bool is_const() const { return e.is_const(); }
  int64_t c() const { return e.code[0].value; }
  uint32_t end_col() const { return e.loc.col + len; }
};

inline Val make_const(int64_t v, SourceLoc loc, uint32_t len) { return Val{Expr::constant(v, loc), len}; }

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
  bool mutable_ = false;  // `var`: assignable per warp at run time; `let` and loop variables are not
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
  std::vector<Token> lex(size_t p) const;

  // ------------------------------------------------------------ token helpers
  static const Token& expect(Cur& c, Tok k, std::string_view what) {
    if (!c.at(k)) fail(c.peek(), fmt::format("expected {}, found {}", what, describe(c.peek())));
    return c.next();
  }
  static const Token& expect_ident(Cur& c, std::string_view what) { return expect(c, Tok::Ident, what); }
  static void expect_word(Cur& c, std::string_view word, std::string_view context = {});
  static void expect_end(Cur& c) {
    if (!c.at(Tok::End)) fail(c.peek(), fmt::format("expected end of line, found {}", describe(c.peek())));
  }

  // ------------------------------------------------------------ expressions
  int64_t fold(ExprCode op, int64_t a, int64_t b, const Token& at) const;

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

  Val binary(ExprCode op, const Token& at, Val a, const Val& b) const;

  Val parse_expr(Cur& c, Ctx ctx) {
    depth_ = 0;
    return parse_binary(c, ctx, 0);
  }

  static bool binary_op(Tok t, int level, ExprCode& op);

  Val parse_binary(Cur& c, Ctx ctx, int level);

  void enter(const Token& at) {
    if (++depth_ > kMaxExprDepth)
      fail(at, fmt::format("expression nested too deeply (more than {} levels)", kMaxExprDepth));
  }

  Val parse_unary(Cur& c, Ctx ctx);

  Val parse_primary(Cur& c, Ctx ctx);

  Val parse_call(Cur& c, Ctx ctx, const Token& fn);

  std::vector<std::string_view> visible_names(Ctx ctx) const;

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

  Val name_value(const Token& t, Ctx ctx) const;

  // ------------------------------------------------------------ checks
  static void check_range(const Val& v, int64_t lo, int64_t hi, std::string_view what) {
    if (v.is_const() && (v.c() < lo || v.c() > hi))
      fail(v, fmt::format("{} must be in {}..{}, got {}", what, lo, hi, v.c()));
  }
  // An operand's range rule (sim/operand_rules.hpp) on a constant; a computed value meets the same
  // rule at run time.
  static void check_rule(const Val& v, const std::string& why) {
    if (!why.empty()) fail(v, why);
  }
  static void check_count(const Val& v) {
    if (v.is_const()) check_rule(v, sim::operand::arrival_count(v.c()));
  }
  static void check_tx(const Val& v) {
    if (v.is_const()) check_rule(v, sim::operand::tx_bytes(v.c()));
  }
  static void check_copy_bytes(const Val& v, std::string_view what) {
    if (v.is_const()) check_rule(v, sim::operand::copy_bytes(what, v.c()));
  }
  static void check_row_bytes(const Val& v) {
    if (v.is_const()) check_rule(v, sim::operand::tma_row_bytes(v.c()));
  }
  void check_mask(const Val& v) const {
    if (v.is_const()) check_rule(v, sim::operand::multicast_mask(v.c(), k_.launch.cluster));
  }
  void check_rank(const Val& v) const {
    if (v.is_const()) check_rule(v, sim::operand::cluster_rank(v.c(), k_.launch.cluster));
  }
  void check_threads(const Val& v) const {
    if (v.is_const()) check_rule(v, sim::operand::named_threads(v.c(), k_.launch.threads));
  }
  static void check_parity(const Val& v) {
    if (v.is_const()) check_rule(v, sim::operand::parity(v.c()));
  }
  void add_barrier_bytes(int64_t elements, const Token& at) {
    barrier_elems_ += elements;
    const int64_t bytes = barrier_elems_ * 8;
    if (bytes > k_.arch->cap.smem_per_block)
      fail(at, fmt::format("the mbarriers need {} bytes of shared memory, more than {}'s {} per block",
                           bytes, k_.arch->name, k_.arch->cap.smem_per_block));
  }

  // ------------------------------------------------------------ operands
  std::vector<OGot> operands(Cur& c, const Token& head, std::span<const OSpec> specs, Ctx ctx);

  static int64_t parse_state_kind(Cur& c);

  // ------------------------------------------------------------ top level
  void top_level();

  SourceLoc file_start() const { return k_.lines.empty() ? SourceLoc{} : SourceLoc{1, 1}; }

  void finish();

  void parse_kernel(Cur& c);

  void parse_params(Cur& c);

  void parse_launch(Cur& c);

  int64_t residency(const sim::Launch& l, const OGot& smem, const OGot& regs) const;

  void need_arch(const Token& at, bool (*has)(const model::Arch&), std::string_view what, std::string_view hint = {}) const;
  void need_tcgen05(const Token& at) const;

  void check_new_array_name(const Token& n) {
    if (arrays_.count(std::string(n.text)) || pipes_.count(std::string(n.text)) || smem_.count(std::string(n.text)))
      fail(n, fmt::format("duplicate barrier, pipeline or smem name '{}'", n.text));
  }

  // Values through shared memory (parser_values.cpp): `smem NAME[N]`, `store NAME[i] = v`, `load NAME[i]`.
  void parse_smem(Cur& c);
  bool at_smem(const Cur& c, size_t k = 0) const {
    return c.peek(k).kind == Tok::Ident && smem_.count(std::string(c.peek(k).text));
  }
  Stmt parse_smem_store(Cur& c, const Token& h);
  // `load NAME[i]` after `let x =`, `var x =` or `x =`: the statement that loads into `slot`.
  Stmt parse_smem_load(Cur& c, uint32_t slot, const Token& at);
  sim::BarOperand parse_cell(Cur& c);
  // `clc_try_cancel CELL bar = B[i] [multicast]`: the response into an smem cell (parser_values.cpp).
  Stmt parse_clc_try_cancel(Cur& c);

  void parse_barrier(Cur& c);

  // ------------------------------------------------------------ budgets
  static bool is_config_line(std::string_view line) {
    return line.starts_with("config") && (line.size() == 6 || line[6] == ' ' || line[6] == '\t' || line[6] == '#');
  }

  int64_t config_expr(size_t p, size_t b, size_t e);

  static std::pair<size_t, size_t> trimmed(std::string_view line, size_t b, size_t e) {
    while (b < e && (line[b] == ' ' || line[b] == '\t')) ++b;
    while (e > b && (line[e - 1] == ' ' || line[e - 1] == '\t')) --e;
    return {b, e};
  }

  std::string config_value(size_t p, const CfgKey& key, size_t b, size_t e);

  void parse_config(size_t p);

  void parse_estimate(Cur& c);

  static bool option_applies(sim::PipelineKind k, std::string_view opt);

  void parse_pipeline(Cur& c);

  static sim::ArrivalUnit parse_unit(Cur& c);

  void parse_expect(Cur& c);

  // ------------------------------------------------------------ roles
  void parse_role(Cur& c);

  std::vector<Stmt> parse_block(uint32_t opener_indent, const Token& colon, int depth, const Local* bind);

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

  void parse_stmt(Cur& c, uint32_t indent, int depth, std::vector<Stmt>& out);
  Stmt parse_assign(Cur& c, const Local& target);

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

  Stmt parse_for(Cur& c, uint32_t indent, int depth);

  Stmt parse_if(Cur& c, uint32_t indent, int depth);

  Stmt parse_cond_block(Cur& c, uint32_t indent, int depth, std::string_view what);

  Stmt parse_let(Cur& c);

  Stmt parse_compute(Cur& c);

  const sim::PipelineDecl& pipe(uint32_t id) const { return k_.pipelines[id]; }

  Stmt parse_pipe_call(Cur& c);

  // A consumer-side call or state of a PipelineTmaStore (it has only a producer side).
  [[noreturn]] static void no_consumer_side(const Token& pn, const Token& at) {
    fail(at, fmt::format("'{}' is a 'tma_store' pipeline: it has no consumer side", pn.text),
         fmt::format("its calls: {}.producer_acquire, 'store {} bytes = N', {}.producer_commit, {}.producer_tail",
                     pn.text, pn.text, pn.text, pn.text));
  }

  Stmt parse_set_state(Cur& c, const Token& pn, Stmt s);

  sim::BarOperand parse_bar(Cur& c, const Token& head);

  Stmt parse_tma(Cur& c);

  Stmt parse_raw(Cur& c);

  Stmt parse_pipe_store(Cur& c, const Token& h);

  void set_cta_group(Stmt& s, const OGot& g) const;

  // tcgen05.alloc / dealloc: a power of two in 32..512.
  static void check_alloc_cols(const Val& v) {
    if (v.is_const()) check_rule(v, sim::operand::tmem_alloc_cols(v.c()));
  }

  Stmt parse_tcgen05(Cur& c);
  model::MmaKind parse_mma_kind(const Token& kt) const;
  void check_mma_operands(std::span<const OGot> m_n_k_count) const;
  // wgmma, wgmma_commit, wgmma_wait N (sm_90a): the warpgroup-collective MMA and its groups.
  Stmt parse_wgmma(Cur& c);

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
  std::unordered_map<std::string, uint32_t> smem_;    // smem value arrays
  std::vector<std::vector<Local>> scopes_;
  bool have_launch_ = false;
  bool expect_ = false;
  SourceLoc kernel_loc_, launch_loc_;
  int64_t barrier_elems_ = 0;
  int depth_ = 0;
};

}  // namespace pipesim::verify::scenario
