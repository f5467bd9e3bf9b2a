// Scenario role bodies: blocks, for / if / let and every statement of a role.
// The Parser and its shared pieces: verify/parser_impl.hpp.
#include "verify/parser_impl.hpp"

namespace pipesim::verify::scenario {

void Parser::parse_role(Cur& c) {
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

std::vector<Stmt> Parser::parse_block(uint32_t opener_indent, const Token& colon, int depth, const Local* bind) {
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

void Parser::parse_stmt(Cur& c, uint32_t indent, int depth, std::vector<Stmt>& out) {
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
  if (w == "let" || w == "var") return out.push_back(parse_let(c));
  if (c.peek(1).kind != Tok::Dot)
    if (const Local* l = find_local(w)) return out.push_back(parse_assign(c, *l));
  if (w == "compute") return out.push_back(parse_compute(c));
  if (w == "tma") return out.push_back(parse_tma(c));
  if (w == "mma" || w == "commit" || w.starts_with("tmem_")) {
    if (std::find(std::begin(kStatements), std::end(kStatements), w) != std::end(kStatements))
      return out.push_back(parse_tcgen05(c));
  }
  if (w == "clc_try_cancel") return out.push_back(parse_clc_try_cancel(c));
  if (w == "wgmma" || w == "wgmma_commit" || w == "wgmma_wait") return out.push_back(parse_wgmma(c));
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

Stmt Parser::parse_for(Cur& c, uint32_t indent, int depth) {
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
    Local var{std::string(v.text), s.slot, v.loc, false};
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
    if (st.is_const()) check_rule(st, sim::operand::loop_step(st.c()));
  }
  const Token& colon = expect(c, Tok::Colon, "':' at the end of the 'for' line");
  expect_end(c);
  s.begin = b.e;
  s.end = e.e;
  s.step = st.e;
  s.slot = new_slot();
  Local var{std::string(v.text), s.slot, v.loc, false};
  s.body = parse_block(indent, colon, depth + 1, &var);
  return s;
}

Stmt Parser::parse_if(Cur& c, uint32_t indent, int depth) {
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

Stmt Parser::parse_cond_block(Cur& c, uint32_t indent, int depth, std::string_view what) {
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

Stmt Parser::parse_let(Cur& c) {
  const Token& h = c.next();
  const Token& n = expect_ident(c, "a name");
  check_new_local(n);
  expect(c, Tok::Assign, fmt::format("'=' after '{}'", n.text));
  Stmt s;
  if (c.at_ident("load") && at_smem(c, 1)) {
    s = parse_smem_load(c, new_slot(), h);
  } else {
    Val v = parse_expr(c, Ctx::Role);
    expect_end(c);
    s.kind = StmtKind::Let;
    s.site = add_site(h, std::string(h.text));
    s.slot = new_slot();
    s.value = v.e;
  }
  scopes_.back().push_back(Local{std::string(n.text), s.slot, n.loc, h.text == "var"});
  return s;
}

// NAME = expr, or NAME OP= expr with OP one of + - * ^ | & << >>: a run-time store into the
// `var`'s slot of this warp (StmtKind::Let, as `let` itself lowers).
Stmt Parser::parse_assign(Cur& c, const Local& target) {
  const Token& n = c.next();
  if (!target.mutable_)
    fail(n, fmt::format("'{}' is not a 'var' and cannot be assigned; declare it with 'var {} = ...'", n.text, n.text),
         fmt::format("defined at {}", at_line(target.loc)));
  static constexpr std::pair<Tok, sim::ExprCode> kCompound[] = {
      {Tok::Plus, sim::ExprCode::Add},      {Tok::Minus, sim::ExprCode::Sub},   {Tok::Star, sim::ExprCode::Mul},
      {Tok::Caret, sim::ExprCode::BitXor},  {Tok::Pipe, sim::ExprCode::BitOr},  {Tok::Amp, sim::ExprCode::BitAnd},
      {Tok::Shl, sim::ExprCode::Shl},       {Tok::Shr, sim::ExprCode::Shr}};
  const Token& op = c.peek();
  std::optional<sim::ExprCode> code;
  for (const auto& [tok, ec] : kCompound)
    if (op.kind == tok && c.peek(1).kind == Tok::Assign && c.peek(1).loc.col == op.loc.col + op.len) code = ec;
  if (code) c.next();
  expect(c, Tok::Assign, fmt::format("'=' or a compound assignment ('^=', '+=', ...) after '{}'", n.text));
  if (!code && c.at_ident("load") && at_smem(c, 1)) return parse_smem_load(c, target.slot, n);
  Val v = parse_expr(c, Ctx::Role);
  expect_end(c);
  Stmt s;
  s.kind = StmtKind::Let;
  s.site = add_site(n, "assign");
  s.slot = target.slot;
  s.value = code ? binary(*code, op, slot_value(target.slot, n), v).e : v.e;
  return s;
}

Stmt Parser::parse_compute(Cur& c) {
  const Token& h = c.next();
  Val v = parse_expr(c, Ctx::Role);
  if (v.is_const()) check_rule(v, sim::operand::compute_time(v.c()));
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

Stmt Parser::parse_pipe_call(Cur& c) {
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

Stmt Parser::parse_set_state(Cur& c, const Token& pn, Stmt s) {
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
    if (g[0].v.is_const()) check_rule(g[0].v, sim::operand::state_index(g[0].v.c(), stages));
    s.index = g[0].v.e;
  }
  if (g[1].present) {
    if (g[1].v.is_const()) check_rule(g[1].v, sim::operand::state_phase(g[1].v.c()));
    s.phase = g[1].v.e;
  }
  if (g[2].present) s.state_kind = static_cast<sim::StateKind>(g[2].word);
  s.site = add_site(pn, fmt::format("{}.state", pn.text));
  return s;
}

sim::BarOperand Parser::parse_bar(Cur& c, const Token& head) {
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
    if (i.is_const()) check_rule(i, sim::operand::barrier_index(i.c(), shown, size));
    b.index = i.e;
  }
  return b;
}

Stmt Parser::parse_tma(Cur& c) {
  const Token& h = c.next();
  const Token& t = c.peek();
  // box = the global box the copy reads (any integer naming it; equal boxes hit the L2); row_bytes = the
  // bytes of one of its rows in shared memory (the SM's intake counts requests by rows).
  static constexpr OSpec kPipeSpecs[] = {{"bytes"}, {"multicast"}, {"box"}, {"row_bytes"}};
  static constexpr OSpec kRawSpecs[] = {{"bytes", OT::Expr, true}, {"multicast"}, {"box"}, {"cta"}, {"row_bytes"}};
  auto row_bytes = [](Stmt& s, const OGot& g) {
    if (!g.present) return;
    check_row_bytes(g.v);
    s.row_bytes = g.v.e;
  };
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
    row_bytes(s, g[3]);
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
  if (g[3].present) {  // cta = leader_rank: the pair leader's barrier (cta_group 2); checked at run time
    check_rank(g[3].v);
    s.bar->rank = g[3].v.e;
  }
  row_bytes(s, g[4]);
  return s;
}

// init, inval, fence_init, arrive..., wait, test_wait, store, commit_group, wait_group,
// bar_sync, bar_arrive, syncthreads, cluster_arrive, cluster_wait.
Stmt Parser::parse_raw(Cur& c) {
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
      if (g[1].v.is_const()) check_rule(g[1].v, sim::operand::phase(g[1].v.c()));
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
  if (w == "store" && at_smem(c)) return parse_smem_store(c, h);
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
    if (n.is_const()) check_rule(n, sim::operand::wait_group_count(n.c()));
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
    if (id.is_const()) check_rule(id, sim::operand::named_barrier_id(id.c()));
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
Stmt Parser::parse_pipe_store(Cur& c, const Token& h) {
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
void Parser::set_cta_group(Stmt& s, const OGot& g) const {
  if (!g.present) return;
  const Val& v = g.v;
  if (v.is_const())
    if (std::string why = sim::operand::cta_group(v.c(), k_.launch.cluster); !why.empty())
      fail(v, why, v.c() == 2 ? "the CTA pairs of cta_group::2 are cluster ranks (2j, 2j+1)" : "");
  s.cta_group = v.e;
}

// The kind operand of mma and wgmma.
model::MmaKind Parser::parse_mma_kind(const Token& kt) const {
  std::optional<model::MmaKind> kind = model::mma_kind_from_name(kt.text);
  if (kind) return *kind;
  std::vector<std::string_view> kinds;
  for (int i = 0; i < model::kNumMmaKinds; ++i) kinds.push_back(model::mma_kind_name(static_cast<model::MmaKind>(i)));
  fail(kt, fmt::format("unknown mma kind '{}'{}", kt.text, suggest(kt.text, kinds)), fmt::format("kinds: {}", join(kinds)));
}

// An MMA's M, N, K and count operands (g[0..3], in that order): the constant ones checked where they stand.
void Parser::check_mma_operands(std::span<const OGot> g) const {
  static constexpr std::string_view kDims[] = {"M", "N", "K"};
  for (int i = 0; i < 3; ++i)
    if (g[i].present && g[i].v.is_const()) check_rule(g[i].v, sim::operand::mma_dim(kDims[i], g[i].v.c()));
  if (g[3].present && g[3].v.is_const()) check_rule(g[3].v, sim::operand::mma_count(g[3].v.c()));
}

// wgmma kind = K [m = 64] n = N k = KK [count = C]: wgmma.mma_async, issued by every warp of the
// warpgroup (the engine runs it once all four have: Engine::do_wgmma); wgmma_commit:
// wgmma.commit_group; wgmma_wait N: wgmma.wait_group N.
Stmt Parser::parse_wgmma(Cur& c) {
  const Token& h = c.next();
  need_arch(h, [](const model::Arch& a) { return a.has_wgmma(); }, "wgmma",
            "Blackwell's MMA is tcgen05.mma: 'mma kind = K m = M n = N k = KK', issued by one thread");
  const std::string what(h.text);
  if (h.text == "wgmma_commit") {
    Stmt s = op_stmt(OpKind::MmaCommitGroup, h, what);
    operands(c, h, {}, Ctx::Role);
    return s;
  }
  if (h.text == "wgmma_wait") {
    Stmt s = op_stmt(OpKind::MmaWaitGroup, h, what);
    Val n = parse_expr(c, Ctx::Role);
    if (n.is_const()) check_rule(n, sim::operand::wgmma_wait_count(n.c()));
    s.n = n.e;
    operands(c, h, {}, Ctx::Role);
    return s;
  }
  static constexpr OSpec kS[] = {{"kind", OT::Word, true}, {"m"}, {"n", OT::Expr, true}, {"k", OT::Expr, true}, {"count"}};
  auto g = operands(c, h, kS, Ctx::Role);
  Stmt s = op_stmt(OpKind::Mma, h, what);
  s.wgmma = true;
  s.mma_kind = parse_mma_kind(g[0].tok);
  check_mma_operands(std::span(g).subspan(1, 4));
  s.mma_m = g[1].present ? g[1].v.e : Expr::constant(64, h.loc);
  s.mma_n = g[2].v.e;
  s.mma_k = g[3].v.e;
  s.count = g[4].present ? g[4].v.e : Expr::constant(1, h.loc);
  const bool m_known = !g[1].present || g[1].v.is_const();
  if (m_known && g[2].v.is_const() && g[3].v.is_const()) {
    const int64_t m = g[1].present ? g[1].v.c() : 64, n = g[2].v.c(), k = g[3].v.c();
    const std::string why = model::wgmma_shape_error(s.mma_kind, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k));
    if (!why.empty()) {
      const std::string msg = sim::operand::wgmma_shape(s.mma_kind, m, n, k);
      if (why.starts_with("M ")) fail(g[1].v, msg);
      if (why.starts_with("N ") || why.starts_with("K ")) fail(why.starts_with("N ") ? g[2].v : g[3].v, msg);
      fail(g[0].tok, msg, "wgmma kinds: f16 (bf16 too), tf32, f8f6f4 (e4m3, e5m2), i8");
    }
  }
  return s;
}

// mma, commit, tmem_alloc, tmem_dealloc, tmem_relinquish, tmem_load, tmem_store, tmem_wait.
Stmt Parser::parse_tcgen05(Cur& c) {
  const Token& h = c.next();
  need_tcgen05(h);
  const std::string_view w = h.text;
  const std::string what(w);
  if (w == "mma") {
    static constexpr OSpec kS[] = {{"kind", OT::Word, true}, {"m", OT::Expr, true}, {"n", OT::Expr, true},
                                   {"k", OT::Expr, true},     {"count"},             {"cta_group"}};
    auto g = operands(c, h, kS, Ctx::Role);
    Stmt s = op_stmt(OpKind::Mma, h, what);
    const model::MmaKind kind = parse_mma_kind(g[0].tok);
    s.mma_kind = kind;
    check_mma_operands(std::span(g).subspan(1, 4));
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
      const std::string why = model::mma_shape_error(kind, m, n, k, static_cast<int>(group));
      if (!why.empty()) {
        const Val& at = why.starts_with("K ") ? g[3].v : why.starts_with("N ") ? g[2].v : g[1].v;
        fail(at, sim::operand::mma_shape(kind, m, n, k, group));
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
    if (g[0].v.is_const()) check_rule(g[0].v, sim::operand::tmem_access_cols(g[0].v.c()));
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

}  // namespace pipesim::verify::scenario
