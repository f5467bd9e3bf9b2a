// The scenario front end: lines -> tokens (lexer.cpp) -> sim::Kernel, in one pass.
// Parameters are folded to constants as they are read; names in role bodies resolve to
// environment slots. Every check that does not need a run happens here, with the error at the
// offending token (docs/scenario-language.md).
#include "verify/parser_impl.hpp"

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

namespace scenario {

std::vector<Token> Parser::lex(size_t p) const {
  indent_of(p);
  try {
    return lex_line(src_[p].text, u32(p + 1));
  } catch (const LexError& e) {
    fail(e.loc, e.len, e.message);
  }
}

void Parser::expect_word(Cur& c, std::string_view word, std::string_view context) {
  if (!c.at_ident(word)) {
    std::string msg = fmt::format("expected '{}'", word);
    if (!context.empty()) msg += fmt::format(" {}", context);
    fail(c.peek(), fmt::format("{}, found {}", msg, describe(c.peek())));
  }
  c.next();
}

void Parser::top_level() {
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
    } else if (w == "smem") {
      parse_smem(c);
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

void Parser::finish() {
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

void Parser::parse_kernel(Cur& c) {
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

void Parser::parse_params(Cur& c) {
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

void Parser::parse_launch(Cur& c) {
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
int64_t Parser::residency(const sim::Launch& l, const OGot& smem, const OGot& regs) const {
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

// A statement the kernel's architecture lacks: "WHAT needs A or B; this kernel is on C".
void Parser::need_arch(const Token& at, bool (*has)(const model::Arch&), std::string_view what, std::string_view hint) const {
  if (has(*k_.arch)) return;
  std::vector<std::string_view> have;
  for (const model::Arch& a : model::all_archs())
    if (has(a)) have.push_back(a.name);
  std::string names;
  for (size_t i = 0; i < have.size(); ++i)
    names += fmt::format("{}{}", i == 0 ? "" : i + 1 == have.size() ? " or " : ", ", have[i]);
  fail(at, fmt::format("{} needs {}; this kernel is on {}", what, names, k_.arch->name), std::string(hint));
}

// tcgen05 statements, pipelines and cta_group = 2 need an architecture that has it.
void Parser::need_tcgen05(const Token& at) const {
  need_arch(at, [](const model::Arch& a) { return a.has_tcgen05; }, "tcgen05");
}

void Parser::parse_barrier(Cur& c) {
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

}  // namespace scenario

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
  scenario::Parser p(path, text, defines);
  try {
    return p.run();
  } catch (const scenario::Diag& d) {
    std::string rendered = render_diagnostic(path, p.lines(), d.loc, "error", d.msg, d.note, d.len);
    throw ParseError(std::move(rendered), std::string(path), d.loc, d.msg);
  }
}

}  // namespace pipesim::verify
