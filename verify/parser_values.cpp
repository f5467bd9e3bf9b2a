// Values through shared memory: `smem NAME[N]` (declaration), `store NAME[i] = v [cta = R]` and
// `load NAME[i]` (after `let x =`, `var x =` or `x =`), and the cell a cluster launch control
// response lands in (`clc_try_cancel NAME[i] bar = B[j] [multicast]`). The engine orders loads after
// stores and responses (sim/engine_values.cpp, read_without_wait). The Parser: verify/parser_impl.hpp.
#include "verify/parser_impl.hpp"

namespace pipesim::verify::scenario {

void Parser::parse_smem(Cur& c) {
  c.next();
  const Token& n = expect_ident(c, "a name for the shared-memory cells");
  check_new_array_name(n);
  sim::SmemArray a;
  a.name = std::string(n.text);
  a.loc = n.loc;
  a.first = k_.smem_cells;
  if (c.at(Tok::LBracket)) {
    c.next();
    Val size = parse_expr(c, Ctx::Const);
    expect(c, Tok::RBracket, "']'");
    if (size.c() < 1 || size.c() > (int64_t{1} << 16))
      fail(size, fmt::format("smem array size must be in 1..65536, got {}", size.c()));
    a.size = static_cast<uint32_t>(size.c());
  }
  expect_end(c);
  k_.smem_cells += a.size;
  smem_.emplace(a.name, u32(k_.smem.size()));
  k_.smem.push_back(std::move(a));
}

// NAME or NAME[i]: a cell of an smem array (the index checked by its rule, sim/operand_rules.hpp).
sim::BarOperand Parser::parse_cell(Cur& c) {
  const Token& n = c.next();
  sim::BarOperand cell;
  cell.array = smem_.at(std::string(n.text));
  if (c.at(Tok::LBracket)) {
    c.next();
    Val i = parse_expr(c, Ctx::Role);
    expect(c, Tok::RBracket, "']'");
    const sim::SmemArray& a = k_.smem[cell.array];
    if (i.is_const()) check_rule(i, sim::operand::barrier_index(i.c(), a.name, a.size));
    cell.index = i.e;
  }
  return cell;
}

Stmt Parser::parse_smem_store(Cur& c, const Token& h) {
  Stmt s = op_stmt(OpKind::SmemStore, h, "store");
  s.cell = parse_cell(c);
  expect(c, Tok::Assign, fmt::format("'=' after '{}'", k_.smem[s.cell->array].name));
  Val v = parse_expr(c, Ctx::Role);
  s.value = v.e;
  static constexpr OSpec kS[] = {{"cta"}};  // st.shared::cluster into cluster rank R
  auto g = operands(c, h, kS, Ctx::Role);
  if (g[0].present) {
    check_rank(g[0].v);
    s.cell->rank = g[0].v.e;
  }
  return s;
}

Stmt Parser::parse_smem_load(Cur& c, uint32_t slot, const Token& at) {
  const Token& h = c.next();  // load
  Stmt s = op_stmt(OpKind::SmemLoad, at, "load");
  s.cell = parse_cell(c);
  s.slot = slot;
  operands(c, h, {}, Ctx::Role);
  return s;
}

// clc_try_cancel CELL bar = B[i] [multicast]: clusterlaunchcontrol.try_cancel.async.shared::cta.
// mbarrier::complete_tx::bytes[.multicast::cluster::all].b128 [CELL], [B[i]]. The 16-byte response is
// one cell here: the cancelled cluster's id, or -1 (sim/engine_values.cpp).
Stmt Parser::parse_clc_try_cancel(Cur& c) {
  const Token& h = c.next();
  need_arch(h, [](const model::Arch& a) { return a.has_clc; }, "clusterlaunchcontrol.try_cancel",
            "cluster launch control came with Blackwell; a Hopper persistent kernel uses a static scheduler ('for tile in tiles')");
  if (!at_smem(c))
    fail(c.peek(), fmt::format("expected the smem cell the response lands in after 'clc_try_cancel', found {}", describe(c.peek())),
         "declare it with 'smem NAME[N]' (one cell per CLC pipeline stage)");
  Stmt s = op_stmt(OpKind::ClcTryCancel, h, "clc_try_cancel");
  s.cell = parse_cell(c);
  if (!c.at_ident("bar"))
    fail(c.peek(), fmt::format("expected 'bar = B[i]' (the mbarrier the response completes 16 bytes on), found {}", describe(c.peek())));
  c.next();
  expect(c, Tok::Assign, "'=' after 'bar'");
  s.bar = parse_bar(c, h);
  static constexpr OSpec kS[] = {{"multicast", OT::Flag}};  // .multicast::cluster::all
  auto g = operands(c, h, kS, Ctx::Role);
  if (g[0].present) s.mask = sim::Expr::constant(1, g[0].name.loc);
  return s;
}

}  // namespace pipesim::verify::scenario
