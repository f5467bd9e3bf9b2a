// Scenario `config` and `estimate` lines (the resource budgets) and pipeline declarations' options.
// The Parser and its shared pieces: verify/parser_impl.hpp.
#include "verify/parser_impl.hpp"

namespace pipesim::verify::scenario {

// One value of a `config` setting, [b, e) of line p, as the text set_config_field takes.
// Integers may be constant expressions (parameters included): they are folded here.
int64_t Parser::config_expr(size_t p, size_t b, size_t e) {
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

std::string Parser::config_value(size_t p, const CfgKey& key, size_t b, size_t e) {
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
void Parser::parse_config(size_t p) {
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
void Parser::parse_estimate(Cur& c) {
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
bool Parser::option_applies(sim::PipelineKind k, std::string_view opt) {
  using K = sim::PipelineKind;
  if (opt == "stages" || opt == "state") return true;
  if (opt == "tx") return k == K::TmaAsync || k == K::TmaUmma;
  if (opt == "producers") return k == K::Async || k == K::TmaAsync || k == K::AsyncUmma;
  if (opt == "consumers") return k == K::Async || k == K::TmaAsync || k == K::TmaUmma || k == K::UmmaAsync;
  if (opt == "multicast") return k != K::Async && k != K::TmaStore;
  return k != K::TmaStore;  // producer_phase, consumer_phase, tail
}

void Parser::parse_pipeline(Cur& c) {
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

sim::ArrivalUnit Parser::parse_unit(Cur& c) {
  const Token& u = c.peek();
  if (u.kind == Tok::Ident) {
    if (u.text == "threads" || u.text == "thread") { c.next(); return sim::ArrivalUnit::Threads; }
    if (u.text == "warps" || u.text == "warp") { c.next(); return sim::ArrivalUnit::Warps; }
    if (u.text == "warpgroups" || u.text == "warpgroup") { c.next(); return sim::ArrivalUnit::Warpgroups; }
  }
  fail(u, fmt::format("expected a unit ('threads', 'warps' or 'warpgroups'), found {}", describe(u)));
}

void Parser::parse_expect(Cur& c) {
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

}  // namespace pipesim::verify::scenario
