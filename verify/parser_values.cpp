// Values through shared memory: `smem NAME[N]` (declaration), `store NAME[i] = v [cta = R]` and
// `load NAME[i]` (after `let x =`, `var x =` or `x =`). The engine orders loads after stores
// (sim/engine_values.cpp, read_without_wait). The Parser: verify/parser_impl.hpp.
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

}  // namespace pipesim::verify::scenario
