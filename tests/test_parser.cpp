// The scenario front end: docs/scenario-language.md -> sim::Kernel, and its diagnostics.
#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <string>
#include <vector>

#include "verify/parser.hpp"

namespace pipesim::verify {
namespace {

using sim::ExprCode;
using sim::OpKind;
using sim::StmtKind;

constexpr std::string_view kDocExample = R"(kernel hopper_ws_gemm on sm_90a
let M = 4096, N = 4096, K = 4096, TILE_K = 64, K_TILES = K / TILE_K
let TILES = (M / 128) * (N / 128)
launch ctas = 132, cluster = 2, threads = 384
pipeline ab : tma -> threads, stages = 4, tx = 32768, consumers = 2 warpgroups, multicast = 0b11

role producer warp 0:
  for tile in cluster_id .. TILES step num_clusters:
    for k in 0 .. K_TILES:
      ab.producer_acquire
      tma ab bytes = 16384                    # A: this CTA's rows
      tma ab bytes = 8192 multicast = 0b11    # half of B, to both CTAs
  ab.producer_tail

role consumer warps 4..11:
  for tile in cluster_id .. TILES step num_clusters:
    for k in 0 .. K_TILES:
      ab.consumer_wait
      compute 400 ns
      ab.consumer_release

expect ok
)";

// Declarations shared by the small scenarios below: 4 lines, then the role line (5), then the
// statements from line 6 on, indented by 2 (first column 3).
constexpr std::string_view kHeader = R"(kernel k on sm_90a
launch ctas = 4, cluster = 2, threads = 256
barrier full[4] count = 1
pipeline ab : tma -> threads, stages = 2, tx = 1024
)";

std::string role(std::string_view body) {
  std::string out(kHeader);
  out += "role r warps 0..7:\n";
  size_t start = 0;
  while (start < body.size()) {
    size_t nl = body.find('\n', start);
    if (nl == std::string_view::npos) nl = body.size();
    out += "  ";
    out += body.substr(start, nl - start);
    out += "\n";
    start = nl + 1;
  }
  return out;
}

sim::Kernel parse(std::string_view text, std::vector<Define> d = {}) {
  return parse_scenario("t.pipe", text, d);
}

struct Err {
  std::string msg;
  uint32_t line = 0, col = 0;
  std::string rendered;
};

Err err(std::string_view text, std::vector<Define> d = {}) {
  try {
    parse(text, d);
  } catch (const ParseError& e) {
    return {e.message, e.loc.line, e.loc.col, e.what()};
  }
  ADD_FAILURE() << "no error for:\n" << text;
  return {};
}

#define EXPECT_ERR(text, line_, col_, message)        \
  do {                                                \
    Err e_ = err(text);                               \
    EXPECT_EQ(e_.msg, message) << e_.rendered;        \
    EXPECT_EQ(e_.line, line_u(line_)) << e_.rendered; \
    EXPECT_EQ(e_.col, line_u(col_)) << e_.rendered;   \
  } while (0)

constexpr uint32_t line_u(int v) { return static_cast<uint32_t>(v); }

int64_t cval(const std::optional<sim::Expr>& e) {
  EXPECT_TRUE(e.has_value());
  EXPECT_TRUE(e && e->is_const());
  return e && e->is_const() ? e->code[0].value : -999;
}

std::vector<sim::ExprInstr> code(std::initializer_list<std::pair<ExprCode, int64_t>> l) {
  std::vector<sim::ExprInstr> v;
  for (auto [c, x] : l) v.push_back({c, x});
  return v;
}

bool same_code(const sim::Expr& e, const std::vector<sim::ExprInstr>& want) {
  if (e.code.size() != want.size()) return false;
  for (size_t i = 0; i < want.size(); ++i)
    if (e.code[i].code != want[i].code || e.code[i].value != want[i].value) return false;
  return true;
}

const std::vector<sim::Stmt>& body(const sim::Kernel& k) { return k.roles.at(0).body; }

// ------------------------------------------------------------------ the doc's example

TEST(ParserDoc, HeaderAndParameters) {
  sim::Kernel k = parse(kDocExample);
  EXPECT_EQ(k.name, "hopper_ws_gemm");
  EXPECT_EQ(k.file, "t.pipe");
  ASSERT_NE(k.arch, nullptr);
  EXPECT_EQ(k.arch->name, "sm_90a");
  EXPECT_EQ(k.launch.ctas, 132);
  EXPECT_EQ(k.launch.cluster, 2);
  EXPECT_EQ(k.launch.threads, 384);
  EXPECT_EQ(k.launch.ctas_per_sm, 1);
  ASSERT_EQ(k.params.size(), 6u);
  EXPECT_EQ(k.params[4], (std::pair<std::string, int64_t>{"K_TILES", 64}));
  EXPECT_EQ(k.params[5], (std::pair<std::string, int64_t>{"TILES", 1024}));
  EXPECT_EQ(k.lines.size(), 22u);
  EXPECT_EQ(k.lines[0], "kernel hopper_ws_gemm on sm_90a");
  ASSERT_TRUE(k.expect.has_value());
  EXPECT_EQ(k.expect->verdict, sim::Verdict::Ok);
  EXPECT_EQ(k.expect->loc.line, 22u);
}

TEST(ParserDoc, PipelineAndBarrierArrays) {
  sim::Kernel k = parse(kDocExample);
  ASSERT_EQ(k.pipelines.size(), 1u);
  const sim::PipelineDecl& p = k.pipelines[0];
  EXPECT_EQ(p.name, "ab");
  EXPECT_EQ(p.kind, sim::PipelineKind::TmaAsync);
  EXPECT_EQ(p.stages, 4);
  EXPECT_EQ(p.tx, 32768);
  EXPECT_EQ(p.consumers.n, 2);
  EXPECT_EQ(p.consumers.unit, sim::ArrivalUnit::Warpgroups);
  EXPECT_EQ(p.producers.n, 1);
  EXPECT_EQ(p.producers.unit, sim::ArrivalUnit::Threads);
  EXPECT_EQ(cval(p.multicast), 3);
  EXPECT_EQ(p.state, sim::StateKind::PipelineState);
  EXPECT_EQ(p.producer_phase, 1);
  EXPECT_EQ(p.consumer_phase, 0);
  EXPECT_EQ(p.tail, sim::TailVariant::Cutlass46);
  ASSERT_EQ(k.barriers.size(), 2u);
  const sim::BarrierArray& full = k.barriers[p.full];
  const sim::BarrierArray& empty = k.barriers[p.empty];
  EXPECT_EQ(full.name, "ab.full");
  EXPECT_EQ(empty.name, "ab.empty");
  EXPECT_EQ(full.size, 4u);
  EXPECT_EQ(empty.size, 4u);
  EXPECT_EQ(full.init_count, 1);
  EXPECT_EQ(empty.init_count, 4);  // 2 warpgroup arrivals x 2 CTAs in the multicast mask
  EXPECT_EQ(full.pipeline, 0);
  EXPECT_EQ(empty.pipeline, 0);
  EXPECT_EQ(full.loc.line, 5u);
  EXPECT_EQ(full.loc.col, 10u);
}

TEST(ParserDoc, RolesAndStatements) {
  sim::Kernel k = parse(kDocExample);
  ASSERT_EQ(k.roles.size(), 2u);
  EXPECT_EQ(k.roles[0].name, "producer");
  EXPECT_EQ(k.roles[0].warp_lo, 0);
  EXPECT_EQ(k.roles[0].warp_hi, 0);
  EXPECT_EQ(k.roles[1].name, "consumer");
  EXPECT_EQ(k.roles[1].warp_lo, 4);
  EXPECT_EQ(k.roles[1].warp_hi, 11);

  const auto& prod = k.roles[0].body;
  ASSERT_EQ(prod.size(), 2u);
  EXPECT_EQ(prod[0].kind, StmtKind::For);
  EXPECT_EQ(prod[1].kind, StmtKind::Pipe);
  EXPECT_EQ(prod[1].call, sim::PipeCall::ProducerTail);
  const auto& inner = prod[0].body.at(0);
  EXPECT_EQ(inner.kind, StmtKind::For);
  ASSERT_EQ(inner.body.size(), 3u);
  EXPECT_EQ(inner.body[0].call, sim::PipeCall::ProducerAcquire);
  EXPECT_EQ(inner.body[1].kind, StmtKind::Pipe);
  EXPECT_EQ(inner.body[1].call, sim::PipeCall::Tma);
  EXPECT_EQ(cval(inner.body[1].bytes), 16384);
  EXPECT_FALSE(inner.body[1].mask.has_value());
  EXPECT_EQ(cval(inner.body[2].bytes), 8192);
  EXPECT_EQ(cval(inner.body[2].mask), 3);

  const auto& cons = k.roles[1].body.at(0).body.at(0).body;
  ASSERT_EQ(cons.size(), 3u);
  EXPECT_EQ(cons[0].call, sim::PipeCall::ConsumerWait);
  EXPECT_EQ(cons[1].kind, StmtKind::Op);
  EXPECT_EQ(cons[1].op, OpKind::Compute);
  EXPECT_EQ(cval(cons[1].ns), 400);
  EXPECT_EQ(cons[2].call, sim::PipeCall::ConsumerRelease);
}

TEST(ParserDoc, LoopSlotsAndBounds) {
  sim::Kernel k = parse(kDocExample);
  EXPECT_EQ(k.num_slots, sim::kNumBuiltinSlots + 4);
  const sim::Stmt& outer = k.roles[0].body[0];
  EXPECT_EQ(outer.slot, sim::kNumBuiltinSlots);
  EXPECT_TRUE(same_code(*outer.begin, code({{ExprCode::Slot, sim::kSlotClusterId}})));
  EXPECT_EQ(cval(outer.end), 1024);
  EXPECT_TRUE(same_code(*outer.step, code({{ExprCode::Slot, sim::kSlotNumClusters}})));
  const sim::Stmt& inner = outer.body[0];
  EXPECT_EQ(inner.slot, sim::kNumBuiltinSlots + 1);
  EXPECT_EQ(cval(inner.begin), 0);
  EXPECT_EQ(cval(inner.end), 64);
  EXPECT_EQ(cval(inner.step), 1);
  EXPECT_EQ(k.roles[1].body[0].slot, sim::kNumBuiltinSlots + 2);
  EXPECT_EQ(k.roles[1].body[0].body[0].slot, sim::kNumBuiltinSlots + 3);
}

TEST(ParserDoc, Sites) {
  sim::Kernel k = parse(kDocExample);
  ASSERT_EQ(k.sites.size(), 11u);
  auto site = [&](const sim::Stmt& s) { return k.sites.at(s.site); };
  const auto& inner = k.roles[0].body[0].body[0];
  EXPECT_EQ(site(k.roles[0].body[0]).what, "for");
  EXPECT_EQ(site(k.roles[0].body[0]).loc.line, 8u);
  EXPECT_EQ(site(k.roles[0].body[0]).loc.col, 3u);
  EXPECT_EQ(site(inner.body[0]).what, "ab.producer_acquire");
  EXPECT_EQ(site(inner.body[0]).loc.line, 10u);
  EXPECT_EQ(site(inner.body[0]).loc.col, 7u);
  EXPECT_EQ(site(inner.body[1]).what, "tma ab");
  EXPECT_EQ(site(inner.body[2]).loc.line, 12u);
  EXPECT_EQ(site(k.roles[0].body[1]).what, "ab.producer_tail");
  const auto& cons = k.roles[1].body[0].body[0].body;
  EXPECT_EQ(site(cons[1]).what, "compute");
  EXPECT_EQ(site(cons[1]).loc.line, 19u);
  EXPECT_EQ(site(cons[2]).what, "ab.consumer_release");
}

// ------------------------------------------------------------------ parameters, -D

TEST(ParserParams, DefineOverridesAndLaterParamsSeeIt) {
  sim::Kernel k = parse(kDocExample, {{"K", 8192}, {"TILE_K", 128}});
  EXPECT_EQ(k.params[2].second, 8192);
  EXPECT_EQ(k.params[4], (std::pair<std::string, int64_t>{"K_TILES", 64}));
  sim::Kernel k2 = parse(kDocExample, {{"K", 8192}});
  EXPECT_EQ(k2.params[4].second, 128);
  EXPECT_EQ(cval(k2.roles[0].body[0].body[0].end), 128);
}

TEST(ParserParams, LastDefineWins) {
  sim::Kernel k = parse(kDocExample, {{"M", 256}, {"M", 512}});
  EXPECT_EQ(k.params[0].second, 512);
  EXPECT_EQ(k.params[5].second, 4 * 32);
}

TEST(ParserParams, UnknownDefineIsAnError) {
  Err e = err(kDocExample, {{"KK", 1}});
  EXPECT_EQ(e.msg, "-D KK: no parameter 'KK' in this scenario; did you mean 'K'?");
  EXPECT_EQ(e.line, 0u);
  EXPECT_EQ(e.rendered, "t.pipe: error: -D KK: no parameter 'KK' in this scenario; did you mean 'K'?\n");
}

TEST(ParserParams, IntegerLiteralForms) {
  sim::Kernel k = parse(std::string("let A = 16_384, B = 0x4000, C = 0b11, D = 0X1_0, E = 007\n") +
                        role("compute 1 ns"));
  EXPECT_EQ(k.params[0].second, 16384);
  EXPECT_EQ(k.params[1].second, 16384);
  EXPECT_EQ(k.params[2].second, 3);
  EXPECT_EQ(k.params[3].second, 16);
  EXPECT_EQ(k.params[4].second, 7);
}

TEST(ParserParams, ExpressionOperatorsAndPrecedence) {
  sim::Kernel k = parse(std::string(
      "let A = 1 + 2 * 3, B = (1 + 2) * 3, C = 1 << 4 | 1, D = -7 / 2, E = -7 % 2\n"
      "let F = 3 < 4 && 2 == 2, G = min(3, 4) + max(3, 4) + cdiv(10, 4) + popcount(0xff)\n"
      "let H = ~0 ^ 5, I = !0 + !7, J = 1 || 0 && 0, L = 8 >> 1 & 6, O = 2 - 3 - 4, P = 5 != 5 >= 1\n") +
      role("compute 1 ns"));
  std::vector<int64_t> want{7, 9, 17, -3, -1, 1, 3 + 4 + 3 + 8, ~0 ^ 5, 1, 1, 4 & 6, -5, 1};
  ASSERT_EQ(k.params.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(k.params[i].second, want[i]) << k.params[i].first;
}

TEST(ParserParams, KeywordsAreNotReserved) {
  sim::Kernel k = parse(
      "let stages = 3, tx = 512\n"
      "kernel k on sm_90a\n"
      "launch ctas = 1, threads = 128\n"
      "pipeline p : tma -> threads, stages = stages, tx = tx\n"
      "role r warp 0:\n"
      "  p.producer_acquire\n");
  EXPECT_EQ(k.pipelines[0].stages, 3);
  EXPECT_EQ(k.pipelines[0].tx, 512);
}

TEST(ParserParams, LaunchBuiltinsFoldInDeclarations) {
  sim::Kernel k = parse(
      "kernel k on sm_90a\n"
      "launch ctas = 8, cluster = 4, threads = 128\n"
      "let S = num_sms, CL = cluster_size, NC = num_clusters, NT = num_ctas\n"
      "pipeline p : tma -> threads, stages = 2, tx = 16, multicast = (1 << cluster_size) - 1\n"
      "role r warp 0:\n"
      "  p.producer_acquire\n");
  EXPECT_EQ(k.params[0].second, 132);
  EXPECT_EQ(k.params[1].second, 4);
  EXPECT_EQ(k.params[2].second, 2);
  EXPECT_EQ(k.params[3].second, 8);
  EXPECT_EQ(k.barriers[k.pipelines[0].empty].init_count, 4);
}

TEST(ParserParams, DivisionByZeroAtTheOperator) {
  EXPECT_ERR("let A = 4, B = 8 / (A - 4)\n", 1, 18, "division by zero");
  EXPECT_ERR("let A = cdiv(3, 0)\n", 1, 17, "division by zero");
  EXPECT_ERR("let A = 5 % 0\n", 1, 11, "division by zero");
  EXPECT_ERR(role("let x = warp / 0"), 6, 16, "division by zero");
}

TEST(ParserParams, OverflowAndShifts) {
  EXPECT_ERR("let A = 9223372036854775807 + 1\n", 1, 29, "integer overflow in constant expression");
  EXPECT_ERR("let A = 1 << 64\n", 1, 11, "shift count 64 out of range 0..63");
  EXPECT_ERR("let A = 99999999999999999999\n", 1, 9, "integer literal out of range");
  EXPECT_ERR("let A = 0x1_0000_0000_0000_0000\n", 1, 9, "integer literal out of range");
  EXPECT_ERR("let A = 4abc\n", 1, 9, "invalid integer literal '4abc'");
  EXPECT_ERR("let A = 1__0\n", 1, 9, "invalid integer literal '1__0'");
  EXPECT_ERR("let A = 0b102\n", 1, 9, "invalid integer literal '0b102'");
}

TEST(ParserParams, NamesAndFunctions) {
  EXPECT_ERR("let TILES = 4\nlet B = TILE * 2\n", 2, 9, "unknown name 'TILE'; did you mean 'TILES'?");
  EXPECT_ERR("let A = mni(1, 2)\n", 1, 9, "unknown function 'mni'; did you mean 'min'?");
  EXPECT_ERR("let A = min(1)\n", 1, 9, "'min' takes 2 arguments, got 1");
  EXPECT_ERR("let A = popcount(1, 2)\n", 1, 9, "'popcount' takes 1 argument, got 2");
  EXPECT_ERR("let A = 1, A = 2\n", 1, 12, "duplicate parameter 'A'");
  EXPECT_ERR("let warp = 1\n", 1, 5, "'warp' is a built-in name");
  EXPECT_ERR(std::string(kHeader) + "let X = cta_id\n", 5, 9,
             "'cta_id' differs between CTAs and warps; a declaration needs a constant");
  EXPECT_ERR("let A = (1 + 2\n", 1, 15, "expected ')', found end of line");
  EXPECT_ERR("let A = 1 +\n", 1, 12, "expected an expression, found end of line");
}

// ------------------------------------------------------------------ lowering of statements

TEST(ParserLower, NonConstantExpressionsArePostfix) {
  sim::Kernel k = parse(role("let x = warp * 2 + 1\nlet y = cdiv(x, 4)\nlet z = -x"));
  const uint32_t x = sim::kNumBuiltinSlots;
  EXPECT_TRUE(same_code(*body(k)[0].value, code({{ExprCode::Slot, sim::kSlotWarp},
                                                 {ExprCode::Const, 2},
                                                 {ExprCode::Mul, 0},
                                                 {ExprCode::Const, 1},
                                                 {ExprCode::Add, 0}})));
  EXPECT_EQ(body(k)[0].slot, x);
  EXPECT_EQ(body(k)[1].slot, x + 1);
  EXPECT_TRUE(same_code(*body(k)[1].value, code({{ExprCode::Slot, x},
                                                 {ExprCode::Const, 4},
                                                 {ExprCode::Add, 0},
                                                 {ExprCode::Const, 1},
                                                 {ExprCode::Sub, 0},
                                                 {ExprCode::Const, 4},
                                                 {ExprCode::Div, 0}})));
  EXPECT_TRUE(same_code(*body(k)[2].value, code({{ExprCode::Slot, x}, {ExprCode::Neg, 0}})));
  EXPECT_EQ(body(k)[0].value->loc.line, 6u);
  EXPECT_EQ(body(k)[0].value->loc.col, 11u);
  EXPECT_EQ(k.num_slots, sim::kNumBuiltinSlots + 3);
}

TEST(ParserLower, ComputeUnits) {
  sim::Kernel k = parse(role("compute 400 ns\ncompute 2 us\ncompute 1980 cycles\ncompute 1 cycles\ncompute warp cycles\ncompute 2 ms"));
  EXPECT_EQ(cval(body(k)[0].ns), 400);
  EXPECT_EQ(cval(body(k)[1].ns), 2000);
  EXPECT_EQ(cval(body(k)[2].ns), 1000);  // 1.98 GHz
  EXPECT_EQ(cval(body(k)[3].ns), 1);     // rounded up
  EXPECT_TRUE(same_code(*body(k)[4].ns, code({{ExprCode::Slot, sim::kSlotWarp},
                                              {ExprCode::Const, 1000},
                                              {ExprCode::Mul, 0},
                                              {ExprCode::Const, 1979},
                                              {ExprCode::Add, 0},
                                              {ExprCode::Const, 1980},
                                              {ExprCode::Div, 0}})));
  EXPECT_EQ(cval(body(k)[5].ns), 2000000);
  EXPECT_ERR(role("compute 5 s"), 6, 13, "expected a time unit ('ns', 'us', 'ms' or 'cycles'), found 's'");
  EXPECT_ERR(role("compute -5 ns"), 6, 11, "compute time must not be negative, got -5");
}

TEST(ParserLower, IfElifElseNests) {
  sim::Kernel k = parse(role(
      "if warp == 0:\n  compute 1 ns\nelif warp == 1:\n  compute 2 ns\nelif warp == 2:\n  compute 3 ns\n"
      "else:\n  compute 4 ns\ncompute 5 ns"));
  ASSERT_EQ(body(k).size(), 2u);
  const sim::Stmt& s = body(k)[0];
  EXPECT_EQ(s.kind, StmtKind::If);
  EXPECT_EQ(cval(s.body[0].ns), 1);
  ASSERT_EQ(s.else_body.size(), 1u);
  const sim::Stmt& e1 = s.else_body[0];
  EXPECT_EQ(e1.kind, StmtKind::If);
  EXPECT_EQ(k.sites[e1.site].what, "elif");
  EXPECT_EQ(k.sites[e1.site].loc.line, 8u);
  EXPECT_EQ(cval(e1.body[0].ns), 2);
  const sim::Stmt& e2 = e1.else_body.at(0);
  EXPECT_EQ(cval(e2.body[0].ns), 3);
  EXPECT_EQ(cval(e2.else_body.at(0).ns), 4);
  EXPECT_EQ(cval(body(k)[1].ns), 5);
}

TEST(ParserLower, MbarrierOps) {
  sim::Kernel k = parse(role(
      "init full[1] count = 2\n"
      "arrive full[1]\n"
      "arrive full[2] count = 3, cta = 1\n"
      "arrive_expect_tx full bytes = 1024\n"
      "expect_tx full[3] bytes = -16 cta = 0\n"
      "complete_tx full[3] bytes = 16\n"
      "arrive_drop full[0] count = 1\n"
      "wait full[1] parity = 1\n"
      "wait full[1] phase = 5\n"
      "test_wait full[0] parity = 0 expect false\n"
      "inval full[1]\n"
      "fence_init"));
  const auto& b = body(k);
  ASSERT_EQ(b.size(), 12u);
  EXPECT_EQ(b[0].op, OpKind::Init);
  EXPECT_EQ(b[0].bar->array, 0u);
  EXPECT_EQ(cval(b[0].bar->index), 1);
  EXPECT_EQ(cval(b[0].count), 2);
  EXPECT_EQ(b[1].op, OpKind::Arrive);
  EXPECT_EQ(cval(b[1].count), 1);
  EXPECT_FALSE(b[1].bar->rank.has_value());
  EXPECT_EQ(cval(b[2].count), 3);
  EXPECT_EQ(cval(b[2].bar->rank), 1);
  EXPECT_EQ(b[3].op, OpKind::ArriveExpectTx);
  EXPECT_EQ(cval(b[3].bar->index), 0);  // `full` alone is full[0]
  EXPECT_EQ(cval(b[3].bytes), 1024);
  EXPECT_EQ(b[4].op, OpKind::ExpectTx);
  EXPECT_EQ(cval(b[4].bytes), -16);
  EXPECT_EQ(cval(b[4].bar->rank), 0);
  EXPECT_EQ(b[5].op, OpKind::CompleteTx);
  EXPECT_EQ(b[6].op, OpKind::ArriveDrop);
  EXPECT_EQ(b[7].op, OpKind::Wait);
  EXPECT_EQ(cval(b[7].parity), 1);
  EXPECT_FALSE(b[7].phase.has_value());
  EXPECT_EQ(cval(b[8].phase), 5);
  EXPECT_FALSE(b[8].parity.has_value());
  EXPECT_EQ(b[9].op, OpKind::TestWait);
  EXPECT_EQ(cval(b[9].expect), 0);
  EXPECT_EQ(b[10].op, OpKind::Inval);
  EXPECT_EQ(b[11].op, OpKind::FenceInit);
  EXPECT_FALSE(b[11].bar.has_value());
  EXPECT_EQ(k.sites[b[9].site].what, "test_wait");
  EXPECT_EQ(k.sites[b[9].site].loc.line, 15u);
}

TEST(ParserLower, CopiesGroupsAndBarriers) {
  sim::Kernel k = parse(role(
      "tma full[2] bytes = 4096 multicast = 0b11\n"
      "store bytes = 256\n"
      "commit_group\n"
      "wait_group 1 read\n"
      "wait_group 0\n"
      "bar_sync 1 threads = 128\n"
      "bar_arrive 2, threads = 64\n"
      "bar_sync 3\n"
      "syncthreads\n"
      "cluster_arrive\n"
      "cluster_wait\n"
      "cluster_sync"));
  const auto& b = body(k);
  ASSERT_EQ(b.size(), 13u);
  EXPECT_EQ(b[0].kind, StmtKind::Op);
  EXPECT_EQ(b[0].op, OpKind::TmaLoad);
  EXPECT_EQ(cval(b[0].bar->index), 2);
  EXPECT_EQ(cval(b[0].bytes), 4096);
  EXPECT_EQ(cval(b[0].mask), 3);
  EXPECT_EQ(b[1].op, OpKind::BulkStore);
  EXPECT_EQ(cval(b[1].bytes), 256);
  EXPECT_EQ(b[2].op, OpKind::CommitGroup);
  EXPECT_EQ(b[3].op, OpKind::WaitGroup);
  EXPECT_EQ(cval(b[3].n), 1);
  EXPECT_EQ(cval(b[3].expect), 1);  // .read
  EXPECT_FALSE(b[4].expect.has_value());
  EXPECT_EQ(b[5].op, OpKind::NamedSync);
  EXPECT_EQ(cval(b[5].id), 1);
  EXPECT_EQ(cval(b[5].threads), 128);
  EXPECT_EQ(b[6].op, OpKind::NamedArrive);
  EXPECT_EQ(cval(b[6].threads), 64);
  EXPECT_EQ(cval(b[7].threads), 256);  // bar_sync without threads: the whole CTA
  EXPECT_EQ(b[8].op, OpKind::NamedSync);
  EXPECT_EQ(cval(b[8].id), 0);
  EXPECT_EQ(cval(b[8].threads), 256);
  EXPECT_EQ(b[9].op, OpKind::ClusterArrive);
  EXPECT_EQ(b[10].op, OpKind::ClusterWait);
  EXPECT_EQ(b[11].op, OpKind::ClusterArrive);
  EXPECT_EQ(b[12].op, OpKind::ClusterWait);
  EXPECT_EQ(b[11].site, b[12].site);
  EXPECT_EQ(k.sites[b[11].site].what, "cluster_sync");
  EXPECT_EQ(k.sites[b[0].site].what, "tma");
}

TEST(ParserLower, PipelineBarrierOperandsAndState) {
  sim::Kernel k = parse(role(
      "wait ab.full[1] parity = 0\n"
      "arrive ab.empty[0] cta = 1\n"
      "ab.state producer index = 1 phase = 0 kind = PipelineStateSimple\n"
      "ab.state consumer\n"
      "ab.producer_commit\n"
      "tma ab"));
  const auto& b = body(k);
  const sim::PipelineDecl& p = k.pipelines[0];
  EXPECT_EQ(b[0].bar->array, p.full);
  EXPECT_EQ(cval(b[0].bar->index), 1);
  EXPECT_EQ(b[1].bar->array, p.empty);
  EXPECT_EQ(b[2].kind, StmtKind::SetState);
  EXPECT_EQ(b[2].side, sim::Side::Producer);
  EXPECT_EQ(cval(b[2].index), 1);
  EXPECT_EQ(cval(b[2].phase), 0);
  EXPECT_EQ(b[2].state_kind, sim::StateKind::PipelineStateSimple);
  EXPECT_EQ(k.sites[b[2].site].what, "ab.state");
  EXPECT_EQ(b[3].side, sim::Side::Consumer);
  EXPECT_FALSE(b[3].index.has_value());
  EXPECT_FALSE(b[3].state_kind.has_value());
  EXPECT_EQ(b[4].call, sim::PipeCall::ProducerCommit);
  EXPECT_EQ(b[5].call, sim::PipeCall::Tma);
  EXPECT_FALSE(b[5].bytes.has_value());  // the pipeline's tx
}

TEST(ParserLower, AsyncPipelineCountsAndOptions) {
  sim::Kernel k = parse(
      "kernel k on sm_100a\n"
      "launch ctas = 148, threads = 512, ctas_per_sm = 1\n"
      "barrier bars[2]\n"
      "pipeline q : PipelineAsync, stages = 3, producers = 2 warps, consumers = 256 threads,\n"
      "pipeline r : threads -> threads, stages = 1, state = PipelineStateSimple, tail = cutlass-4.5\n"
      "pipeline s : PipelineTmaAsync, stages = 2, tx = 64, tail = none, producer_phase = 0, consumer_phase = 1\n"
      "role r warp 0:\n"
      "  q.producer_commit\n");
  ASSERT_EQ(k.barriers.size(), 7u);
  EXPECT_FALSE(k.barriers[0].init_count.has_value());
  EXPECT_EQ(k.barriers[0].pipeline, -1);
  const sim::PipelineDecl& q = k.pipelines[0];
  EXPECT_EQ(q.kind, sim::PipelineKind::Async);
  EXPECT_EQ(q.full, 1u);
  EXPECT_EQ(q.empty, 2u);
  EXPECT_EQ(k.barriers[q.full].init_count, 2);
  EXPECT_EQ(k.barriers[q.empty].init_count, 256);
  EXPECT_EQ(q.producers.unit, sim::ArrivalUnit::Warps);
  EXPECT_EQ(k.pipelines[1].state, sim::StateKind::PipelineStateSimple);
  EXPECT_EQ(k.pipelines[1].tail, sim::TailVariant::Cutlass45);
  EXPECT_EQ(k.pipelines[2].kind, sim::PipelineKind::TmaAsync);
  EXPECT_EQ(k.pipelines[2].tail, sim::TailVariant::None);
  EXPECT_EQ(k.pipelines[2].producer_phase, 0);
  EXPECT_EQ(k.pipelines[2].consumer_phase, 1);
  EXPECT_EQ(k.barriers[k.pipelines[2].empty].init_count, 1);
  EXPECT_EQ(k.barriers[k.pipelines[2].empty].pipeline, 2);
}

TEST(ParserLower, LoopVariableScopeEndsWithItsBlock) {
  sim::Kernel k = parse(role("for i in 0 .. 4:\n  let j = i * 2\n  compute j ns\nfor i in 0 .. 2:\n  compute i ns"));
  EXPECT_EQ(body(k)[0].slot, sim::kNumBuiltinSlots);
  EXPECT_EQ(body(k)[0].body[0].slot, sim::kNumBuiltinSlots + 1);
  EXPECT_TRUE(same_code(*body(k)[0].body[1].ns, code({{ExprCode::Slot, sim::kNumBuiltinSlots + 1}})));
  EXPECT_EQ(body(k)[1].slot, sim::kNumBuiltinSlots + 2);  // a new slot for the second `i`
  EXPECT_ERR(role("for i in 0 .. 4:\n  compute 1 ns\ncompute i ns"), 8, 11, "unknown name 'i'");
  EXPECT_ERR(role("for i in 0 .. 4:\n  let i = 2"), 7, 9, "'i' is already defined");
  EXPECT_ERR(role("let x = x"), 6, 11, "unknown name 'x'");
  EXPECT_ERR(role("for i in 0 .. 4 step 0:\n  compute 1 ns"), 6, 24, "loop step must be positive, got 0");
}

// ------------------------------------------------------------------ errors: names and syntax

TEST(ParserErrors, UnknownPipelineSuggests) {
  EXPECT_ERR(role("abb.producer_acquire"), 6, 3, "unknown pipeline 'abb'; did you mean 'ab'?");
  EXPECT_ERR(role("ab.producer_aquire"), 6, 6, "unknown pipeline call 'producer_aquire'; did you mean 'producer_acquire'?");
  EXPECT_ERR(role("tma abb"), 6, 7, "unknown pipeline or barrier 'abb'; did you mean 'ab'?");
  EXPECT_ERR(role("full.producer_acquire"), 6, 3, "'full' is a barrier, not a pipeline");
}

TEST(ParserErrors, UnknownStatementAndOperand) {
  EXPECT_ERR(role("waitt full parity = 0"), 6, 3, "unknown statement 'waitt'; did you mean 'wait'?");
  EXPECT_ERR(role("arrive full cnt = 2"), 6, 15, "unknown operand 'cnt' for 'arrive'; did you mean 'count'?");
  EXPECT_ERR(role("arrive full ct = 2"), 6, 15, "unknown operand 'ct' for 'arrive'; did you mean 'cta'?");
  EXPECT_ERR(role("arrive full counts = 2"), 6, 15, "unknown operand 'counts' for 'arrive'; did you mean 'count'?");
  EXPECT_ERR(role("fence_init now"), 6, 14, "unknown operand 'now' for 'fence_init'");
  EXPECT_ERR(role("wait fulll parity = 0"), 6, 8, "unknown barrier 'fulll'; did you mean 'full'?");
  EXPECT_ERR(role("wait ab parity = 0"), 6, 8,
             "'ab' is a pipeline; name one of its barrier arrays: 'ab.full' or 'ab.empty'");
  EXPECT_ERR(role("launch ctas = 1"), 6, 3, "unknown statement 'launch'");
}

TEST(ParserErrors, MissingAndRepeatedOperands) {
  EXPECT_ERR(role("init full[0]"), 6, 3, "missing operand 'count' for 'init'");
  EXPECT_ERR(role("tma full bytes = 16 bytes = 32"), 6, 23, "repeated operand 'bytes'");
  EXPECT_ERR(role("tma full"), 6, 3, "missing operand 'bytes' for 'tma'");
  EXPECT_ERR(role("wait full"), 6, 3, "missing operand 'parity' or 'phase' for 'wait'");
  EXPECT_ERR(role("wait full parity = 0 phase = 1"), 6, 24, "'wait' takes either 'parity' or 'phase', not both");
  EXPECT_ERR(role("test_wait full parity = 0"), 6, 3, "missing operand 'expect' for 'test_wait'");
  EXPECT_ERR(role("test_wait full parity = 0 expect maybe"), 6, 36, "expected 'true' or 'false' after 'expect', found 'maybe'");
  EXPECT_ERR(role("bar_arrive 1"), 6, 3, "missing operand 'threads' for 'bar_arrive'");
  EXPECT_ERR(role("arrive full count 2"), 6, 21, "expected '=' after 'count', found '2'");
  EXPECT_ERR(role("compute 1 ns extra"), 6, 16, "expected end of line, found 'extra'");
}

TEST(ParserErrors, Indentation) {
  EXPECT_ERR(std::string(kHeader) + "role r warp 0:\n\tcompute 1 ns\n", 6, 1, "tab in indentation; indent with spaces");
  EXPECT_ERR(std::string(kHeader) + "role r warp 0:\n  \tcompute 1 ns\n", 6, 3, "tab in indentation; indent with spaces");
  EXPECT_ERR(role("compute 1 ns\n  compute 2 ns"), 7, 5, "unexpected indentation");
  EXPECT_ERR(role("for i in 0 .. 2:\n    compute 1 ns\n   compute 2 ns"), 8, 6,
             "inconsistent indentation: 5 spaces here, 6 in the rest of the block");
  EXPECT_ERR(std::string(kHeader) + "role r warp 0:\ncompute 1 ns\n", 5, 14, "expected an indented block after ':'");
  EXPECT_ERR(std::string(kHeader) + "role r warp 0:\n", 5, 14, "expected an indented block after ':'");
  EXPECT_ERR("  kernel k on sm_90a\n", 1, 3, "unexpected indentation");
  EXPECT_ERR(role("else:\n  compute 1 ns"), 6, 3, "'else' without a matching 'if'");
}

TEST(ParserErrors, IndentationWithBlankLinesAndCommentsIsFine) {
  sim::Kernel k = parse(std::string(kHeader) +
                        "# comment at column 1\n"
                        "role r warp 0:   # trailing comment\n"
                        "\n"
                        "\t# a tab-indented comment line is blank\n"
                        "    for i in 0 .. 2:\n"
                        "# dedented comment\n"
                        "          compute 1 ns\t# tab before a comment\n"
                        "    compute 2 ns\r\n");
  ASSERT_EQ(body(k).size(), 2u);
  EXPECT_EQ(body(k)[0].body.size(), 1u);
}

TEST(ParserErrors, LexicalJunk) {
  EXPECT_ERR("let A = 3 $ 4\n", 1, 11, "unexpected character '$'");
  EXPECT_ERR(std::string("let A = 3\x01\n"), 1, 10, "unexpected character byte 0x01");
  EXPECT_ERR(role("if x = 1:\n  compute 1 ns"), 6, 6, "unknown name 'x'");
  Err e = err(role("if warp = 1:\n  compute 1 ns"));
  EXPECT_EQ(e.msg, "expected ':' at the end of the 'if' line, found '='");
}

TEST(ParserErrors, StructureOfTheFile) {
  EXPECT_ERR("", 0, 0, "missing 'kernel NAME on ARCH' line");
  EXPECT_ERR("# only a comment\n", 1, 1, "missing 'kernel NAME on ARCH' line");
  EXPECT_ERR("kernel k on sm_90a\n", 1, 1, "missing 'launch' declaration");
  EXPECT_ERR("kernel k on sm_90a\nlaunch ctas = 1, threads = 32\n", 1, 1,
             "no roles: a scenario needs at least one 'role'");
  EXPECT_ERR("launch ctas = 1, threads = 32\n", 1, 1, "expected 'kernel NAME on ARCH' before 'launch'");
  EXPECT_ERR("kernel k on sm_90a\nrole r warp 0:\n  compute 1 ns\n", 2, 1, "expected 'launch' before 'role'");
  EXPECT_ERR(role("compute 1 ns") + "let X = 1\n", 7, 1, "declarations must come before the first role");
  EXPECT_ERR(role("compute 1 ns") + "expect ok\nrole s warp 9:\n  compute 1 ns\n", 8, 1,
             "'expect' must be the last line of the scenario");
  EXPECT_ERR("kernel k on sm_90a\nkernel k on sm_90a\n", 2, 1, "duplicate 'kernel' line");
  EXPECT_ERR("kernel k on sm_90a\nlaunch ctas = 1, threads = 32\nlaunch ctas = 1, threads = 32\n", 3, 1,
             "duplicate 'launch' declaration");
  EXPECT_ERR("kernal k on sm_90a\n", 1, 1, "unknown declaration 'kernal'; did you mean 'kernel'?");
  EXPECT_ERR("kernel k sm_90a\n", 1, 10, "expected 'on' after the kernel name, found 'sm_90a'");
}

TEST(ParserErrors, UnknownArch) {
  Err e = err("kernel k on sm_91a\n");
  EXPECT_EQ(e.msg, "unknown architecture 'sm_91a'; did you mean 'sm_90a'?");
  EXPECT_EQ(e.col, 13u);
  EXPECT_NE(e.rendered.find("  note: known architectures: sm_90a, sm_100a, sm_103a, sm_120a\n"), std::string::npos);
}

TEST(ParserErrors, DuplicateNames) {
  EXPECT_ERR(std::string(kHeader) + "barrier ab\n", 5, 9, "duplicate barrier, pipeline or smem name 'ab'");
  EXPECT_ERR(std::string(kHeader) + "pipeline full : PipelineAsync, stages = 1\n", 5, 10,
             "duplicate barrier, pipeline or smem name 'full'");
  EXPECT_ERR(role("compute 1 ns") + "role r warp 9:\n  compute 1 ns\n", 7, 6, "duplicate role 'r'");
  EXPECT_ERR(role("compute 1 ns") + "expect ok\nexpect hang\n", 8, 1, "'expect' given twice");
  EXPECT_ERR(role("let warp_in_role = 1"), 6, 7, "'warp_in_role' is a built-in name");
  EXPECT_ERR("let X = 1\n" + role("let X = 2"), 7, 7, "'X' is already a parameter");
}

TEST(ParserErrors, Expectations) {
  sim::Kernel k = parse(role("compute 1 ns") + "expect error pending_underflow\n");
  EXPECT_EQ(k.expect->verdict, sim::Verdict::Error);
  EXPECT_EQ(k.expect->error_kind, "pending_underflow");
  sim::Kernel k2 = parse(role("compute 1 ns") + "expect error\n");
  EXPECT_TRUE(k2.expect->error_kind.empty());
  EXPECT_EQ(parse(role("compute 1 ns") + "expect hang\n").expect->verdict, sim::Verdict::Hang);
  EXPECT_FALSE(parse(role("compute 1 ns")).expect.has_value());
  EXPECT_ERR(role("compute 1 ns") + "expect error stale_wiat\n", 7, 14,
             "unknown error kind 'stale_wiat'; did you mean 'stale_wait'?");
  EXPECT_ERR(role("compute 1 ns") + "expect fine\n", 7, 8, "expected 'ok', 'hang', 'error' or 'stopped', found 'fine'");
}

// ------------------------------------------------------------------ errors: ranges

TEST(ParserRanges, ArrivalCounts) {
  EXPECT_ERR(role("init full count = 0"), 6, 21, "arrival count must be in 1..1048575, got 0");
  EXPECT_ERR(role("arrive full count = 1 << 20"), 6, 23, "arrival count must be in 1..1048575, got 1048576");
  EXPECT_ERR(std::string(kHeader) + "barrier b count = 0\n", 5, 19, "arrival count must be in 1..1048575, got 0");
  EXPECT_NO_THROW(parse(role("init full count = 1048575")));
}

TEST(ParserRanges, TxAndCopySizes) {
  EXPECT_ERR(role("expect_tx full bytes = 2000000"), 6, 26, "byte count 2000000 is outside the tx range -1048575..1048575");
  EXPECT_ERR(role("complete_tx full bytes = -1048576"), 6, 28, "byte count -1048576 is outside the tx range -1048575..1048575");
  EXPECT_ERR(role("tma full bytes = 100"), 6, 20, "TMA size 100 is not a multiple of 16 bytes");
  EXPECT_ERR(role("tma ab bytes = 8"), 6, 18, "TMA size 8 is not a multiple of 16 bytes");
  EXPECT_ERR(role("tma ab bytes = 0"), 6, 18, "TMA size must be positive, got 0");
  EXPECT_ERR(role("store bytes = 24"), 6, 17, "bulk store size 24 is not a multiple of 16 bytes");
  EXPECT_ERR(role("tma ab bytes = 4096 row_bytes = 24"), 6, 35, "TMA row_bytes must be a multiple of 16 in 16..4080, got 24");
  EXPECT_ERR(role("tma full bytes = 4096 row_bytes = 4096"), 6, 37, "TMA row_bytes must be a multiple of 16 in 16..4080, got 4096");
  EXPECT_NO_THROW(parse(role("tma ab bytes = 4096 row_bytes = 32")));
  EXPECT_ERR(std::string(kHeader) + "pipeline p : tma -> threads, stages = 2, tx = 1 << 20\n", 5, 47,
             "tx must be in 1..1048575, got 1048576");
}

TEST(ParserRanges, LaunchShape) {
  auto launch = [](std::string_view l) { return std::string("kernel k on sm_90a\n") + std::string(l) + "\n"; };
  EXPECT_ERR(launch("launch ctas = 32, cluster = 32, threads = 128"), 2, 29, "cluster size must be in 1..16, got 32");
  EXPECT_ERR(launch("launch ctas = 32, cluster = 0, threads = 128"), 2, 29, "cluster size must be in 1..16, got 0");
  EXPECT_ERR(launch("launch ctas = 130, cluster = 4, threads = 128"), 2, 15, "ctas = 130 is not divisible by cluster = 4");
  EXPECT_ERR(launch("launch ctas = 4, threads = 100"), 2, 28, "threads = 100 is not a positive multiple of 32");
  EXPECT_ERR(launch("launch ctas = 4, threads = 2048"), 2, 28, "threads = 2048 exceeds the limit of 1024 per CTA");
  EXPECT_ERR(launch("launch ctas = 4"), 2, 1, "missing operand 'threads' for 'launch'");
  EXPECT_ERR(launch("launch ctas = 4, threads = 32, cta = 1"), 2, 32, "unknown operand 'cta' for 'launch'; did you mean 'ctas'?");
  EXPECT_ERR("kernel k on sm_120a\nlaunch ctas = 4, cluster = 2, threads = 128\n", 2, 28,
             "sm_120a does not support clusters (cluster = 2)");
}

TEST(ParserRanges, RoleWarps) {
  auto roles = [](std::string_view r) {
    return std::string("kernel k on sm_90a\nlaunch ctas = 1, threads = 384\n") + std::string(r);
  };
  EXPECT_ERR(roles("role a warps 4..12:\n  compute 1 ns\n"), 3, 17, "warp 12 is outside the CTA: threads = 384 gives warps 0..11");
  EXPECT_ERR(roles("role a warps 5..4:\n  compute 1 ns\n"), 3, 14,
             "empty warp range 5..4 (the range is inclusive: first..last)");
  Err e = err(roles("role a warps 0..4:\n  compute 1 ns\nrole b warps 4..11:\n  compute 1 ns\n"));
  EXPECT_EQ(e.msg, "role 'b' (warps 4..11) overlaps role 'a' (warps 0..4)");
  EXPECT_EQ(e.line, 5u);
  EXPECT_EQ(e.col, 14u);
  EXPECT_NE(e.rendered.find("  note: role 'a' is declared at line 3\n"), std::string::npos);
  EXPECT_ERR(roles("role a:\n  compute 1 ns\n"), 3, 7, "expected 'warp N' or 'warps A..B' after the role name, found ':'");
}

TEST(ParserRanges, BarriersAndIndices) {
  EXPECT_ERR(std::string(kHeader) + "barrier b[0]\n", 5, 11, "barrier array size must be at least 1, got 0");
  EXPECT_ERR(role("wait full[4] parity = 0"), 6, 13, "index 4 is outside 'full' (4 elements: 0..3)");
  EXPECT_ERR(role("wait ab.empty[-1] parity = 0"), 6, 17, "index -1 is outside 'ab.empty' (2 elements: 0..1)");
  EXPECT_ERR(role("wait full parity = 2"), 6, 22, "parity must be 0 or 1, got 2");
  EXPECT_ERR(role("arrive full cta = 2"), 6, 21, "cluster rank 2 is outside the cluster of 2 (ranks 0..1)");
  EXPECT_ERR(role("tma full bytes = 16 multicast = 0b100"), 6, 35,
             "multicast mask 0x4 names a rank outside the cluster of 2 (ranks 0..1)");
  EXPECT_ERR(std::string(kHeader) + "barrier huge[30000]\n", 5, 9,
             "the mbarriers need 240064 bytes of shared memory, more than sm_90a's 232448 per block");
}

TEST(ParserRanges, NamedBarriers) {
  EXPECT_ERR(role("bar_sync 16 threads = 64"), 6, 12, "named barrier id must be in 0..15, got 16");
  EXPECT_ERR(role("bar_sync 1 threads = 48"), 6, 24, "thread count 48 is not a multiple of 32");
  EXPECT_ERR(role("bar_arrive 1 threads = 512"), 6, 26, "thread count 512 exceeds the CTA's 256 threads");
  EXPECT_ERR(role("wait_group 64"), 6, 14, "wait_group count must be in 0..63, got 64");
}

TEST(ParserRanges, PipelineDeclarations) {
  const std::string h = "kernel k on sm_90a\nlaunch ctas = 2, cluster = 2, threads = 128\n";
  EXPECT_ERR(h + "pipeline p : tma -> threads, stages = 2, tx = 16, multicast = 1 << cluster_rank\n", 3, 63,
             "multicast of a pipeline must be constant for its barrier count");
  EXPECT_ERR(h + "pipeline p : tma -> threads, tx = 16\n", 3, 10, "missing option 'stages' for pipeline 'p'");
  EXPECT_ERR(h + "pipeline p : tma -> threads, stages = 2\n", 3, 10, "missing option 'tx' for pipeline 'p' (bytes per stage)");
  EXPECT_ERR(h + "pipeline p : PipelineAsync, stages = 2, tx = 16\n", 3, 41, "'tx' does not apply to a 'threads -> threads' pipeline");
  EXPECT_ERR(h + "pipeline p : PipelineAsync, stage = 2\n", 3, 29, "unknown pipeline option 'stage'; did you mean 'stages'?");
  EXPECT_ERR(h + "pipeline p : PipelineAsync, stages = 2, stages = 3\n", 3, 41, "repeated option 'stages'");
  EXPECT_ERR(h + "pipeline p : PipelineAsync, stages = 0\n", 3, 38, "stages must be in 1..65536, got 0");
  EXPECT_ERR(h + "pipeline p : tma -> warps, stages = 1\n", 3, 14,
             "expected a pipeline kind ('tma -> threads', 'threads -> threads', 'tma -> umma', 'umma -> threads', "
             "'threads -> umma', 'tma_store' or a CUTLASS class name), found 'tma'");
  EXPECT_ERR(h + "pipeline p : PipelineAsync, stages = 1, consumers = 2 lanes\n", 3, 55,
             "expected a unit ('threads', 'warps' or 'warpgroups'), found 'lanes'");
  EXPECT_ERR(h + "pipeline p : PipelineAsync, stages = 1, producers = 48 threads\n", 3, 53,
             "48 threads is neither one elected thread (1) nor a multiple of 32");
  EXPECT_ERR(h + "pipeline p : PipelineAsync, stages = 1, consumers = 0 warps\n", 3, 53,
             "consumers must be in 1..1048575, got 0");
  EXPECT_ERR(h + "pipeline p : PipelineAsync, stages = 1, multicast = 3\n", 3, 41,
             "'multicast' does not apply to a 'threads -> threads' pipeline");
  EXPECT_ERR(h + "pipeline p : tma -> threads, stages = 1, tx = 16, multicast = 0\n", 3, 63,
             "multicast mask must name at least one CTA, got 0");
  EXPECT_ERR(h + "pipeline p : PipelineAsync, stages = 1, tail = cutlass-4.7\n", 3, 48,
             "unknown tail 'cutlass-4.7'; expected 'cutlass-4.5', 'cutlass-4.6' or 'none'");
  EXPECT_ERR(h + "pipeline p : PipelineAsync, stages = 1, producer_phase = 2\n", 3, 58, "producer_phase must be in 0..1, got 2");
  EXPECT_ERR(h + "pipeline p : PipelineAsync, stages = 1, state = Simple\n", 3, 49,
             "expected 'PipelineState' or 'PipelineStateSimple', found 'Simple'");
  EXPECT_ERR(h + "pipeline p : PipelineAsync, stages = 1\nrole r warp 0:\n  tma p\n", 5, 7,
             "'tma p' needs a 'tma -> threads' or 'tma -> umma' pipeline; 'p' is 'threads -> threads'");
  EXPECT_ERR(h + "pipeline p : PipelineAsync, stages = 2\nrole r warp 0:\n  p.state producer index = 2\n", 5, 28,
             "pipeline state index must be in 0..1, got 2");
}

// ------------------------------------------------------------------ Blackwell

// A cta_group::2 persistent kernel on sm_100a: 5 declaration lines, the role line (6), then the
// statements from line 7 on, indented by 2 (first column 3).
constexpr std::string_view kBwHeader = R"(kernel k on sm_100a
launch ctas = persistent, tiles = 408, cluster = 2, threads = 192, cta_group = 2, smem = 230400, regs = 168
pipeline ab : tma -> umma, stages = 4, tx = 32768
pipeline acc : umma -> threads, stages = 2, consumers = 4 warps
pipeline cs : tma_store, stages = 2
)";

std::string bw(std::string_view body, std::string_view header = kBwHeader) {
  std::string out(header);
  out += "role r warps 0..5:\n";
  size_t start = 0;
  while (start < body.size()) {
    size_t nl = body.find('\n', start);
    if (nl == std::string_view::npos) nl = body.size();
    out += "  ";
    out += body.substr(start, nl - start);
    out += "\n";
    start = nl + 1;
  }
  return out;
}

TEST(ParserBlackwell, LaunchPersistentAndResidency) {
  sim::Kernel k = parse(bw("compute 1 ns"));
  EXPECT_EQ(k.arch->name, "sm_100a");
  EXPECT_EQ(k.launch.cluster, 2);
  EXPECT_EQ(k.launch.tiles, 408);
  EXPECT_EQ(k.launch.ctas, 148);  // min(148 rounded down to 2, 408 x 2)
  EXPECT_EQ(k.launch.threads, 192);
  EXPECT_EQ(k.launch.cta_group, 2);
  EXPECT_EQ(k.launch.smem, 230400);
  EXPECT_EQ(k.launch.regs, 168);
  // smem: 233472 / (230400 + 1024) = 1; threads: 2048 / 192 = 10; regs: 65536 / (168 x 192) = 2.
  EXPECT_EQ(k.launch.ctas_per_sm, 1);

  auto launch = [](std::string_view arch, std::string_view l) {
    return parse(std::string("kernel k on ") + std::string(arch) + "\n" + std::string(l) +
                 "\nrole r warp 0:\n  compute 1 ns\n").launch;
  };
  EXPECT_EQ(launch("sm_100a", "launch ctas = persistent, tiles = 10, cluster = 2, threads = 128").ctas, 20);
  EXPECT_EQ(launch("sm_100a", "launch ctas = persistent, tiles = 1000, cluster = 8, threads = 128").ctas, 144);
  EXPECT_EQ(launch("sm_100a", "launch ctas = persistent tiles = 1000 threads = 128").ctas, 148);
  EXPECT_EQ(launch("sm_90a", "launch ctas = persistent, tiles = 1000, cluster = 2, threads = 128").ctas, 132);
  EXPECT_EQ(launch("sm_90a", "launch ctas = 4, threads = 128").cta_group, 1);
  EXPECT_EQ(launch("sm_90a", "launch ctas = 4, threads = 128").tiles, 0);
  // A parameter called `persistent` is an expression (names are not reserved).
  EXPECT_EQ(parse("let persistent = 6\nkernel k on sm_100a\nlaunch ctas = persistent, threads = 32\n"
                  "role r warp 0:\n  compute 1 ns\n").launch.ctas, 6);

  // Residency: min over shared memory, threads, registers (rounded up to 8 per thread), blocks.
  EXPECT_EQ(launch("sm_100a", "launch ctas = 4, threads = 128, smem = 100000").ctas_per_sm, 2);  // 233472 / 101024
  EXPECT_EQ(launch("sm_100a", "launch ctas = 4, threads = 128, regs = 128").ctas_per_sm, 4);     // 65536 / 16384
  EXPECT_EQ(launch("sm_100a", "launch ctas = 4, threads = 1024, smem = 0").ctas_per_sm, 2);      // 2048 / 1024
  EXPECT_EQ(launch("sm_100a", "launch ctas = 4, threads = 32, smem = 1024").ctas_per_sm, 32);    // blocks_per_sm
  // 65 registers are allocated as 72: 72 x 480 = 34560 fits once (65 x 480 = 31200 would fit twice).
  EXPECT_EQ(launch("sm_100a", "launch ctas = 4, threads = 480, regs = 65").ctas_per_sm, 1);
  EXPECT_EQ(launch("sm_100a", "launch ctas = 4, threads = 480, regs = 64").ctas_per_sm, 2);
  // An explicit ctas_per_sm wins; without smem/regs the default stays 1.
  EXPECT_EQ(launch("sm_100a", "launch ctas = 4, threads = 128, smem = 100000, ctas_per_sm = 1").ctas_per_sm, 1);
  EXPECT_EQ(launch("sm_100a", "launch ctas = 4, threads = 128").ctas_per_sm, 1);
}

TEST(ParserBlackwell, BuiltinsAndNumTilesFolds) {
  sim::Kernel k = parse(bw("if is_leader:\n  arrive ab.full cta = peer_rank\ncompute num_tiles ns"));
  ASSERT_EQ(body(k).size(), 2u);
  EXPECT_TRUE(same_code(*body(k)[0].value, code({{ExprCode::Slot, sim::kSlotIsLeader}})));
  EXPECT_TRUE(same_code(*body(k)[0].body[0].bar->rank, code({{ExprCode::Slot, sim::kSlotPeerRank}})));
  EXPECT_TRUE(same_code(*body(k)[1].ns, code({{ExprCode::Slot, sim::kSlotNumTiles}})));
  // After the launch, num_tiles (and num_ctas) fold in declarations.
  sim::Kernel k2 = parse("kernel k on sm_100a\nlaunch ctas = persistent, tiles = 408, cluster = 2, threads = 128\n"
                         "let PER_CLUSTER = cdiv(num_tiles, num_clusters), N = num_ctas\n"
                         "role r warp 0:\n  compute 1 ns\n");
  EXPECT_EQ(k2.params[0], (std::pair<std::string, int64_t>{"PER_CLUSTER", 6}));  // 408 / 74 clusters
  EXPECT_EQ(k2.params[1], (std::pair<std::string, int64_t>{"N", 148}));
  EXPECT_EQ(parse("kernel k on sm_100a\nlaunch ctas = 2, threads = 32\nlet T = num_tiles\nrole r warp 0:\n"
                  "  compute 1 ns\n").params[0].second, 0);
}

TEST(ParserBlackwell, ForTileInTiles) {
  sim::Kernel k = parse(bw("for tile in tiles:\n  compute tile ns"));
  ASSERT_EQ(body(k).size(), 1u);
  const sim::Stmt& f = body(k)[0];
  EXPECT_EQ(f.kind, StmtKind::For);
  EXPECT_TRUE(same_code(*f.begin, code({{ExprCode::Slot, sim::kSlotClusterId}})));
  EXPECT_TRUE(same_code(*f.end, code({{ExprCode::Slot, sim::kSlotNumTiles}})));
  EXPECT_TRUE(same_code(*f.step, code({{ExprCode::Slot, sim::kSlotNumClusters}})));
  EXPECT_EQ(f.slot, sim::kNumBuiltinSlots);
  ASSERT_EQ(f.body.size(), 1u);
  EXPECT_TRUE(same_code(*f.body[0].ns, code({{ExprCode::Slot, sim::kNumBuiltinSlots}})));
  // The same IR as the explicit loop.
  sim::Kernel k2 = parse(bw("for tile in cluster_id .. num_tiles step num_clusters:\n  compute tile ns"));
  EXPECT_TRUE(same_code(*body(k2)[0].begin, f.begin->code));
  EXPECT_TRUE(same_code(*body(k2)[0].end, f.end->code));
  EXPECT_TRUE(same_code(*body(k2)[0].step, f.step->code));
}

TEST(ParserBlackwell, PipelineKindsAndCounts) {
  sim::Kernel k = parse(bw("compute 1 ns"));
  ASSERT_EQ(k.pipelines.size(), 3u);
  const sim::PipelineDecl& ab = k.pipelines[0];
  EXPECT_EQ(ab.kind, sim::PipelineKind::TmaUmma);
  EXPECT_EQ(ab.tx, 32768);  // per CTA; the leader expects tx x cta_group
  EXPECT_FALSE(ab.multicast.has_value());  // default: the pair, computed by the lowering
  EXPECT_EQ(k.barriers[ab.full].name, "ab.full");
  EXPECT_EQ(k.barriers[ab.full].init_count, 1);
  EXPECT_EQ(k.barriers[ab.empty].init_count, 1);
  const sim::PipelineDecl& acc = k.pipelines[1];
  EXPECT_EQ(acc.kind, sim::PipelineKind::UmmaAsync);
  EXPECT_EQ(k.barriers[acc.full].init_count, 1);
  EXPECT_EQ(k.barriers[acc.empty].init_count, 8);  // 4 warps x cta_group 2
  EXPECT_EQ(k.barriers[acc.empty].size, 2u);
  const sim::PipelineDecl& cs = k.pipelines[2];
  EXPECT_EQ(cs.kind, sim::PipelineKind::TmaStore);
  EXPECT_EQ(cs.stages, 2);
  EXPECT_EQ(cs.full, std::numeric_limits<uint32_t>::max());  // no barrier arrays
  EXPECT_EQ(cs.empty, std::numeric_limits<uint32_t>::max());
  EXPECT_EQ(k.barriers.size(), 4u);

  const std::string h = "kernel k on sm_100a\nlaunch ctas = 4, cluster = 2, threads = 256, cta_group = 2\n";
  auto one = [&](std::string_view decl) {
    return parse(h + std::string(decl) + "\nrole r warp 0:\n  compute 1 ns\n");
  };
  sim::Kernel a = one("pipeline p : threads -> umma, stages = 3, producers = 4 warps");
  EXPECT_EQ(a.pipelines[0].kind, sim::PipelineKind::AsyncUmma);
  EXPECT_EQ(a.barriers[a.pipelines[0].full].init_count, 8);  // 4 warps x cta_group 2
  EXPECT_EQ(a.barriers[a.pipelines[0].empty].init_count, 1);
  sim::Kernel b = one("pipeline p : PipelineTmaUmma, stages = 2, tx = 1024, consumers = 2 warps, multicast = 0b11");
  EXPECT_EQ(b.pipelines[0].kind, sim::PipelineKind::TmaUmma);
  EXPECT_EQ(b.barriers[b.pipelines[0].empty].init_count, 2);  // consumers; the mask does not count
  EXPECT_EQ(cval(b.pipelines[0].multicast), 3);
  // The tcgen05 kinds' mask is evaluated per CTA, so it may read per-CTA built-ins.
  sim::Kernel c = one("pipeline p : PipelineUmmaAsync, stages = 2, multicast = 1 << peer_rank");
  EXPECT_TRUE(same_code(*c.pipelines[0].multicast,
                        code({{ExprCode::Const, 1}, {ExprCode::Slot, sim::kSlotPeerRank}, {ExprCode::Shl, 0}})));
  EXPECT_EQ(one("pipeline p : PipelineAsyncUmma, stages = 2").pipelines[0].kind, sim::PipelineKind::AsyncUmma);
  EXPECT_EQ(one("pipeline p : PipelineTmaStore, stages = 2, state = PipelineStateSimple").pipelines[0].kind,
            sim::PipelineKind::TmaStore);
  // A tma_store pipeline is fine on Hopper too.
  EXPECT_NO_THROW(parse("kernel k on sm_90a\nlaunch ctas = 1, threads = 128\npipeline cs : tma_store, stages = 2\n"
                        "role r warp 0:\n  cs.producer_acquire\n  store cs bytes = 1024\n  cs.producer_commit\n"
                        "  cs.producer_tail\n"));
}

TEST(ParserBlackwell, PipelineCalls) {
  sim::Kernel k = parse(bw("ab.producer_acquire\ntma ab bytes = 16384 multicast = 0b11\nab.consumer_wait\n"
                           "ab.consumer_release\ncs.producer_acquire\nstore cs bytes = 4096\ncs.producer_commit\n"
                           "cs.producer_tail\ncs.state producer index = 1\nstore bytes = 32\nacc.producer_commit"));
  const auto& b = body(k);
  ASSERT_EQ(b.size(), 11u);
  EXPECT_EQ(b[1].kind, StmtKind::Pipe);
  EXPECT_EQ(b[1].call, sim::PipeCall::Tma);
  EXPECT_EQ(cval(b[1].bytes), 16384);
  EXPECT_EQ(cval(b[1].mask), 3);
  EXPECT_EQ(b[3].call, sim::PipeCall::ConsumerRelease);
  EXPECT_EQ(b[5].kind, StmtKind::Pipe);
  EXPECT_EQ(b[5].call, sim::PipeCall::Store);
  EXPECT_EQ(b[5].pipeline, 2u);
  EXPECT_EQ(cval(b[5].bytes), 4096);
  EXPECT_EQ(k.sites[b[5].site].what, "store cs");
  EXPECT_EQ(b[6].call, sim::PipeCall::ProducerCommit);
  EXPECT_EQ(b[7].call, sim::PipeCall::ProducerTail);
  EXPECT_EQ(b[8].kind, StmtKind::SetState);
  EXPECT_EQ(b[9].kind, StmtKind::Op);  // the raw bulk store is unchanged
  EXPECT_EQ(b[9].op, OpKind::BulkStore);
  EXPECT_EQ(b[10].pipeline, 1u);
}

TEST(ParserBlackwell, Tcgen05Statements) {
  sim::Kernel k = parse(bw(
      "tmem_alloc cols = 512\n"
      "mma kind = f16 m = 256 n = 256 k = 16 count = 4\n"
      "mma kind = mxf4nvf4, m = 128, n = 256, k = 64, cta_group = 1\n"
      "mma kind = f8f6f4 m = 128 * (warp + 1) n = 256 k = 32\n"
      "commit ab.empty[1] multicast = 0b11\n"
      "commit acc.full cta_group = 1\n"
      "tmem_load cols = 32\n"
      "tmem_store cols = 64\n"
      "tmem_wait ld\n"
      "tmem_wait st\n"
      "tmem_relinquish\n"
      "tmem_dealloc cols = 512 cta_group = 2"));
  const auto& b = body(k);
  ASSERT_EQ(b.size(), 12u);
  EXPECT_EQ(b[0].op, OpKind::TmemAlloc);
  EXPECT_EQ(cval(b[0].cols), 512);
  EXPECT_FALSE(b[0].cta_group.has_value());  // the launch's
  EXPECT_EQ(b[1].op, OpKind::Mma);
  EXPECT_EQ(b[1].mma_kind, model::MmaKind::F16);
  EXPECT_EQ(cval(b[1].mma_m), 256);
  EXPECT_EQ(cval(b[1].mma_n), 256);
  EXPECT_EQ(cval(b[1].mma_k), 16);
  EXPECT_EQ(cval(b[1].count), 4);
  EXPECT_EQ(b[2].mma_kind, model::MmaKind::MxF4NvF4);
  EXPECT_EQ(cval(b[2].count), 1);  // default
  EXPECT_EQ(cval(b[2].cta_group), 1);
  EXPECT_EQ(b[3].mma_kind, model::MmaKind::F8F6F4);
  EXPECT_FALSE(b[3].mma_m->is_const());  // checked at run time
  EXPECT_EQ(b[4].op, OpKind::Commit);
  EXPECT_EQ(b[4].bar->array, k.pipelines[0].empty);
  EXPECT_EQ(cval(std::optional<sim::Expr>(b[4].bar->index)), 1);
  EXPECT_EQ(cval(b[4].mask), 3);
  EXPECT_EQ(b[5].bar->array, k.pipelines[1].full);
  EXPECT_FALSE(b[5].mask.has_value());
  EXPECT_EQ(cval(b[5].cta_group), 1);
  EXPECT_EQ(b[6].op, OpKind::TmemLoad);
  EXPECT_EQ(cval(b[6].cols), 32);
  EXPECT_EQ(b[7].op, OpKind::TmemStore);
  EXPECT_EQ(b[8].op, OpKind::TmemWait);
  EXPECT_EQ(cval(b[8].n), 0);
  EXPECT_EQ(cval(b[9].n), 1);
  EXPECT_EQ(k.sites[b[9].site].what, "tmem_wait st");
  EXPECT_EQ(b[10].op, OpKind::TmemRelinquish);
  EXPECT_EQ(b[11].op, OpKind::TmemDealloc);
  EXPECT_EQ(cval(b[11].cta_group), 2);
  EXPECT_EQ(k.sites[b[1].site].what, "mma");
  EXPECT_EQ(k.sites[b[1].site].loc.line, 8u);
  // The new rule ids are accepted by expect.
  for (std::string_view kind : {"bad_mma_shape", "cta_group_mismatch", "tmem_bad_alloc", "tmem_leak",
                                "tmem_dealloc_before_peer_alloc", "smem_war"})
    EXPECT_EQ(parse(bw("compute 1 ns") + "expect error " + std::string(kind) + "\n").expect->error_kind, kind);
}

TEST(ParserBlackwellErrors, NeedsTcgen05) {
  const std::string msg = "tcgen05 needs sm_100a or sm_103a; this kernel is on sm_90a";
  EXPECT_ERR(role("mma kind = f16 m = 128 n = 128 k = 16"), 6, 3, msg);
  EXPECT_ERR(role("commit full"), 6, 3, msg);
  EXPECT_ERR(role("tmem_alloc cols = 32"), 6, 3, msg);
  EXPECT_ERR(role("tmem_dealloc cols = 32"), 6, 3, msg);
  EXPECT_ERR(role("tmem_relinquish"), 6, 3, msg);
  EXPECT_ERR(role("tmem_load cols = 32"), 6, 3, msg);
  EXPECT_ERR(role("tmem_store cols = 32"), 6, 3, msg);
  EXPECT_ERR(role("tmem_wait ld"), 6, 3, msg);
  const std::string h = "kernel k on sm_90a\nlaunch ctas = 2, cluster = 2, threads = 128\n";
  EXPECT_ERR(h + "pipeline p : tma -> umma, stages = 2, tx = 16\n", 3, 14, msg);
  EXPECT_ERR(h + "pipeline p : umma -> threads, stages = 2\n", 3, 14, msg);
  EXPECT_ERR(h + "pipeline p : PipelineAsyncUmma, stages = 2\n", 3, 14, msg);
  EXPECT_ERR("kernel k on sm_90a\nlaunch ctas = 2, cluster = 2, threads = 128, cta_group = 2\n", 2, 46, msg);
  EXPECT_ERR("kernel k on sm_120a\nlaunch ctas = 2, threads = 128\nrole r warp 0:\n  tmem_wait st\n", 4, 3,
             "tcgen05 needs sm_100a or sm_103a; this kernel is on sm_120a");
  EXPECT_NO_THROW(parse("kernel k on sm_90a\nlaunch ctas = 2, cluster = 2, threads = 128, cta_group = 1\n"
                        "role r warp 0:\n  compute 1 ns\n"));
}

TEST(ParserBlackwellErrors, Launch) {
  auto l = [](std::string_view line) { return std::string("kernel k on sm_100a\n") + std::string(line) + "\n"; };
  EXPECT_ERR(l("launch ctas = persistant, tiles = 4, threads = 128"), 2, 15,
             "unknown name 'persistant'; did you mean 'persistent'?");
  EXPECT_ERR(l("launch ctas = persistent, threads = 128"), 2, 15,
             "'ctas = persistent' needs the tile count: add 'tiles = N' to the launch");
  EXPECT_ERR(l("launch ctas = 6, cluster = 3, threads = 128, cta_group = 2"), 2, 58,
             "cta_group = 2 needs an even cluster size, got cluster = 3");
  EXPECT_ERR(l("launch ctas = 2, threads = 128, cta_group = 2"), 2, 45,
             "cta_group = 2 needs an even cluster size, got cluster = 1");
  EXPECT_ERR(l("launch ctas = 2, threads = 128, cta_group = 0"), 2, 45, "cta_group must be 1 or 2, got 0");
  EXPECT_ERR(l("launch ctas = 2, threads = 128, tiles = 0"), 2, 41, "tiles must be in 1..2147483648, got 0");
  EXPECT_ERR(l("launch ctas = 2, threads = 128, smem = 232449"), 2, 40,
             "the launch would fail: 232449 B of shared memory requested, 232448 available");
  EXPECT_ERR(l("launch ctas = 2, threads = 128, smem = 232449, ctas_per_sm = 1"), 2, 40,
             "the launch would fail: 232449 B of shared memory requested, 232448 available");
  EXPECT_ERR(l("launch ctas = 2, threads = 128, smem = -1"), 2, 40, "smem must not be negative, got -1");
  EXPECT_ERR(l("launch ctas = 2, threads = 1024, regs = 255"), 2, 41,
             "the launch would fail: 262144 registers requested, 65536 available");
  EXPECT_ERR(l("launch ctas = 2, threads = 128, regs = 256"), 2, 40, "regs must be in 1..255, got 256");
  Err e = err(l("launch ctas = 2, threads = 1024, regs = 255"));
  EXPECT_NE(e.rendered.find("  note: 255 registers per thread (allocated as 256) x 1024 threads\n"), std::string::npos)
      << e.rendered;
  EXPECT_ERR("kernel k on sm_100a\nlet T = num_tiles\n", 2, 9, "'num_tiles' needs the 'launch' line first");
  EXPECT_ERR(l("launch ctas = 2, threads = 128\nlet L = is_leader"), 3, 9,
             "'is_leader' differs between CTAs and warps; a declaration needs a constant");
  EXPECT_ERR(bw("let peer_rank = 1"), 7, 7, "'peer_rank' is a built-in name");
  EXPECT_ERR(l("launch ctas = 2, threads = 128") + "role r warp 0:\n  for t in tiles:\n    compute 1 ns\n", 4, 12,
             "'for ... in tiles' needs the tile scheduler: add 'tiles = N' to the launch");
}

TEST(ParserBlackwellErrors, Pipelines) {
  const std::string h = "kernel k on sm_100a\nlaunch ctas = 2, cluster = 2, threads = 128, cta_group = 2\n";
  EXPECT_ERR(h + "pipeline p : tma -> umma, stages = 2\n", 3, 10,
             "missing option 'tx' for pipeline 'p' (bytes per stage per CTA)");
  EXPECT_ERR(h + "pipeline p : tma -> umma, stages = 2, tx = 600000\n", 3, 44,
             "tx = 600000 per CTA makes the leader expect 1200000 bytes (x cta_group 2), above the tx limit 1048575");
  EXPECT_ERR(h + "pipeline p : umma -> threads, stages = 2, tx = 16\n", 3, 43,
             "'tx' does not apply to a 'umma -> threads' pipeline");
  EXPECT_ERR(h + "pipeline p : tma -> umma, stages = 2, tx = 16, producers = 2 warps\n", 3, 48,
             "'producers' does not apply to a 'tma -> umma' pipeline");
  EXPECT_ERR(h + "pipeline p : threads -> umma, stages = 2, consumers = 2 warps\n", 3, 43,
             "'consumers' does not apply to a 'threads -> umma' pipeline");
  EXPECT_ERR(h + "pipeline p : tma_store, stages = 2, multicast = 1\n", 3, 37,
             "'multicast' does not apply to a 'tma_store' pipeline");
  EXPECT_ERR(h + "pipeline p : tma_store, stages = 2, tail = none\n", 3, 37,
             "'tail' does not apply to a 'tma_store' pipeline");
  EXPECT_ERR(h + "pipeline p : umma -> threads, stages = 2, multicast = 0b100\n", 3, 55,
             "multicast mask 0x4 names a rank outside the cluster of 2 (ranks 0..1)");
  EXPECT_ERR(h + "pipeline p : umma -> threads, stages = 2, consumers = 1048544 threads\n", 3, 10,
             "empty barrier count 2097088 (consumers x cta_group) exceeds 1048575");
  EXPECT_ERR(h + "pipeline p : threads -> umma, stages = 2, producers = 1048544 threads\n", 3, 10,
             "full barrier count 2097088 (producers x cta_group) exceeds 1048575");
  EXPECT_ERR(h + "pipeline p : umma -> warps, stages = 2\n", 3, 14,
             "expected a pipeline kind ('tma -> threads', 'threads -> threads', 'tma -> umma', 'umma -> threads', "
             "'threads -> umma', 'tma_store' or a CUTLASS class name), found 'umma'");
}

TEST(ParserBlackwellErrors, PipelineCalls) {
  EXPECT_ERR(bw("cs.consumer_wait"), 7, 6, "'cs' is a 'tma_store' pipeline: it has no consumer side");
  EXPECT_ERR(bw("cs.consumer_release"), 7, 6, "'cs' is a 'tma_store' pipeline: it has no consumer side");
  EXPECT_ERR(bw("cs.state consumer index = 0"), 7, 12, "'cs' is a 'tma_store' pipeline: it has no consumer side");
  EXPECT_ERR(bw("wait cs.full[0] parity = 0"), 7, 8, "'cs' is a 'tma_store' pipeline; it has no barrier arrays");
  EXPECT_ERR(bw("commit cs.empty"), 7, 10, "'cs' is a 'tma_store' pipeline; it has no barrier arrays");
  EXPECT_ERR(bw("tma cs bytes = 16"), 7, 7,
             "'tma cs' needs a 'tma -> threads' or 'tma -> umma' pipeline; 'cs' is 'tma_store'");
  EXPECT_ERR(bw("tma acc"), 7, 7,
             "'tma acc' needs a 'tma -> threads' or 'tma -> umma' pipeline; 'acc' is 'umma -> threads'");
  EXPECT_ERR(bw("store ab bytes = 16"), 7, 9, "'store ab' needs a 'tma_store' pipeline; 'ab' is 'tma -> umma'");
  EXPECT_ERR(bw("store cz bytes = 16"), 7, 9, "unknown pipeline 'cz'; did you mean 'cs'?");
  EXPECT_ERR(bw("store cs"), 7, 3, "missing operand 'bytes' for 'store'");
  EXPECT_ERR(bw("store cs bytes = 24"), 7, 20, "bulk store size 24 is not a multiple of 16 bytes");
}

TEST(ParserBlackwellErrors, Tcgen05Statements) {
  EXPECT_ERR(bw("mma kind = f16 m = 64 n = 128 k = 16"), 7, 22,
             "illegal tcgen05.mma shape M=64 N=128 K=16 for kind::f16: M must be 128 or 256 under cta_group::2, got 64");
  EXPECT_ERR(bw("mma kind = f16 m = 96 n = 128 k = 16 cta_group = 1"), 7, 22,
             "illegal tcgen05.mma shape M=96 N=128 K=16 for kind::f16: M must be 64 or 128 under cta_group::1, got 96");
  EXPECT_ERR(bw("mma kind = f16 m = 256 n = 24 k = 16"), 7, 30,
             "illegal tcgen05.mma shape M=256 N=24 K=16 for kind::f16: N must be 16..256 in steps of 16 under "
             "cta_group::2, got 24");
  EXPECT_ERR(bw("mma kind = tf32 m = 256 n = 256 k = 16"), 7, 39,
             "illegal tcgen05.mma shape M=256 N=256 K=16 for kind::tf32: K must be 8 for kind::tf32, got 16");
  EXPECT_ERR(bw("mma kind = mxf4 m = 64 n = 256 k = 64 cta_group = 1"), 7, 23,
             "illegal tcgen05.mma shape M=64 N=256 K=64 for kind::mxf4: kind::mxf4 under cta_group::1 needs M = 128, "
             "got 64");
  EXPECT_ERR(bw("mma kind = bf16 m = 256 n = 256 k = 16"), 7, 14, "unknown mma kind 'bf16'; did you mean 'f16'?");
  EXPECT_ERR(bw("mma m = 256 n = 256 k = 16"), 7, 3, "missing operand 'kind' for 'mma'");
  EXPECT_ERR(bw("mma kind = f16 m = 256 n = 256 k = 16 count = 0"), 7, 49,
             "mma count must be in 1..2147483647, got 0");
  EXPECT_ERR(bw("mma kind = f16 m = 256 n = 256 k = 16 cta_group = 3"), 7, 53, "cta_group must be 1 or 2, got 3");
  EXPECT_ERR(bw("tmem_alloc cols = 48"), 7, 21, "TMEM columns must be a power of two in 32..512, got 48");
  EXPECT_ERR(bw("tmem_alloc cols = 16"), 7, 21, "TMEM columns must be a power of two in 32..512, got 16");
  EXPECT_ERR(bw("tmem_dealloc cols = 1024"), 7, 23, "TMEM columns must be a power of two in 32..512, got 1024");
  EXPECT_ERR(bw("tmem_alloc"), 7, 3, "missing operand 'cols' for 'tmem_alloc'");
  EXPECT_ERR(bw("tmem_load cols = 0"), 7, 20, "TMEM columns must be in 1..512, got 0");
  EXPECT_ERR(bw("tmem_wait"), 7, 12, "expected 'ld' or 'st' after 'tmem_wait', found end of line");
  EXPECT_ERR(bw("tmem_wait ldd"), 7, 13, "expected 'ld' or 'st' after 'tmem_wait', found 'ldd'");
  EXPECT_ERR(bw("tmem_relinquish cols = 32"), 7, 19, "unknown operand 'cols' for 'tmem_relinquish'");
  EXPECT_ERR(bw("commit ab.empty multicast = 0b100"), 7, 31,
             "multicast mask 0x4 names a rank outside the cluster of 2 (ranks 0..1)");
  EXPECT_ERR(bw("commit"), 7, 9, "expected a barrier after 'commit', found end of line");
  EXPECT_ERR(bw("tmem_alocc cols = 32"), 7, 3, "unknown statement 'tmem_alocc'; did you mean 'tmem_alloc'?");
  const std::string one = "kernel k on sm_100a\nlaunch ctas = 2, threads = 128\nrole r warp 0:\n";
  EXPECT_ERR(one + "  tmem_alloc cols = 32 cta_group = 2\n", 4, 36,
             "cta_group = 2 needs an even cluster size, got cluster = 1");
  EXPECT_NO_THROW(parse(one + "  mma kind = f16 m = 64 n = 8 k = 16\n"));  // cta_group::1 from the launch
}

// ------------------------------------------------------------------ rendering

TEST(ParserRender, CaretSpansTheToken) {
  Err e = err(role("abb.producer_acquire"));
  EXPECT_EQ(e.rendered,
            "t.pipe:6:3: error: unknown pipeline 'abb'; did you mean 'ab'?\n"
            "    abb.producer_acquire\n"
            "    ^~~\n");
}

TEST(ParserRender, CaretSpansTheExpressionAndNote) {
  Err e = err(std::string(kHeader) + "role a warps 0..3:\n  compute 1 ns\nrole b warps 2 + 1..7:\n  compute 1 ns\n");
  EXPECT_EQ(e.rendered,
            "t.pipe:7:14: error: role 'b' (warps 3..7) overlaps role 'a' (warps 0..3)\n"
            "  role b warps 2 + 1..7:\n"
            "               ^~~~~~~~\n"
            "  note: role 'a' is declared at line 5\n");
}

TEST(ParserRender, RenderDiagnosticDirectly) {
  std::vector<std::string> lines{"first", "  wait x\tparity = 1"};
  EXPECT_EQ(render_diagnostic("f.pipe", lines, {2, 10}, "warning", "odd", "see here", 6),
            "f.pipe:2:10: warning: odd\n"
            "    wait x\tparity = 1\n"
            "          \t^~~~~~\n"
            "  note: see here\n");
  EXPECT_EQ(render_diagnostic("f.pipe", lines, {}, "error", "no place"), "f.pipe: error: no place\n");
  EXPECT_EQ(render_diagnostic("f.pipe", lines, {9, 1}, "error", "past the end"), "f.pipe:9:1: error: past the end\n");
  // A caret at the end of a line (an "expected ..., found end of line") stays one column wide.
  EXPECT_EQ(render_diagnostic("f.pipe", lines, {1, 6}, "error", "eol", {}, 4), "f.pipe:1:6: error: eol\n  first\n       ^\n");
}

TEST(ParserRender, ControlCharactersAreShownSafely) {
  Err e = err(std::string("let A = 3\x01\n"));
  EXPECT_EQ(e.rendered,
            "t.pipe:1:10: error: unexpected character byte 0x01\n"
            "  let A = 3?\n"
            "           ^\n");
}

// ------------------------------------------------------------------ robustness

TEST(ParserRobust, DeepNestingIsAnError) {
  std::string deep(kHeader);
  deep += "role r warp 0:\n";
  for (int i = 0; i < 200; ++i) deep += std::string(static_cast<size_t>(2 * (i + 1)), ' ') + "if 1:\n";
  deep += std::string(402, ' ') + "compute 1 ns\n";
  Err e = err(deep);
  EXPECT_EQ(e.msg, "blocks nested too deeply (more than 32 levels)");
  EXPECT_EQ(e.line, 37u);

  Err p = err("let A = " + std::string(100000, '(') + "1" + std::string(100000, ')') + "\n");
  EXPECT_EQ(p.msg, "expression nested too deeply (more than 128 levels)");
  Err u = err("let A = " + std::string(100000, '-') + "1\n");
  EXPECT_EQ(u.msg, "expression nested too deeply (more than 128 levels)");
}

TEST(ParserRobust, JunkNeverCrashes) {
  std::mt19937 rng(12345);
  const std::string base(kDocExample);
  int errors = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::string text = base;
    const int edits = 1 + static_cast<int>(rng() % 8);
    for (int e = 0; e < edits; ++e) {
      const size_t at = rng() % (text.size() + 1);
      switch (rng() % 4) {
        case 0: text.insert(at, 1, static_cast<char>(rng() % 256)); break;
        case 1: if (at < text.size()) text.erase(at, 1 + rng() % 20); break;
        case 2: text.insert(at, std::string(1 + rng() % 4, " :.\n#\t=[]-("[rng() % 12])); break;
        default: if (at < text.size()) text[at] = "0123456789abz_ ."[rng() % 16]; break;
      }
    }
    try {
      parse(text);
    } catch (const ParseError& pe) {
      ++errors;
      ASSERT_FALSE(pe.message.empty());
      ASSERT_EQ(std::string(pe.what()).rfind("t.pipe", 0), 0u);
    }
  }
  EXPECT_GT(errors, 1000);
  std::string junk;
  for (int i = 0; i < 4096; ++i) junk += static_cast<char>(rng() % 256);
  EXPECT_THROW(parse(junk), ParseError);
  EXPECT_THROW(parse(std::string(1000, '\n')), ParseError);
  EXPECT_THROW(parse(std::string("\0\0\0", 3)), ParseError);
}

// ------------------------------------------------------------------ per-warp mutable variables
TEST(ParserVar, AssignmentsStoreIntoTheVarsSlot) {
  sim::Kernel k = parse(role("var p = 0\np ^= 1\np = warp\nfor i in 0 .. 4:\n  if i == 2:\n    p += i"));
  const uint32_t p = sim::kNumBuiltinSlots;
  ASSERT_EQ(body(k).size(), 4u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(body(k)[i].kind, StmtKind::Let);
    EXPECT_EQ(body(k)[i].slot, p);  // one slot: assignments do not declare new names
  }
  EXPECT_EQ(cval(body(k)[0].value), 0);
  EXPECT_TRUE(same_code(*body(k)[1].value, code({{ExprCode::Slot, p}, {ExprCode::Const, 1}, {ExprCode::BitXor, 0}})));
  EXPECT_TRUE(same_code(*body(k)[2].value, code({{ExprCode::Slot, sim::kSlotWarp}})));
  const sim::Stmt& inner = body(k)[3].body.at(0).body.at(0);  // for -> if -> p += i
  EXPECT_EQ(inner.kind, StmtKind::Let);
  EXPECT_EQ(inner.slot, p);
  EXPECT_TRUE(same_code(*inner.value, code({{ExprCode::Slot, p}, {ExprCode::Slot, p + 1}, {ExprCode::Add, 0}})));
}

TEST(ParserVar, OnlyAVarCanBeAssigned) {
  // Lines: the header is 4 lines, the role line is 5, the body starts at line 6, column 3.
  EXPECT_ERR(role("let x = 1\nx = 2"), 7, 3, "'x' is not a 'var' and cannot be assigned; declare it with 'var x = ...'");
  EXPECT_ERR(role("for i in 0 .. 4:\n  i += 1"), 7, 5,
             "'i' is not a 'var' and cannot be assigned; declare it with 'var i = ...'");
  EXPECT_ERR(role("var x = 1\nvar x = 2"), 7, 7, "'x' is already defined");
  EXPECT_ERR(role("var x = 1\nx ^ = 2"), 7, 5,
             "expected '=' or a compound assignment ('^=', '+=', ...) after 'x', found '^'");
  EXPECT_ERR(role("var x = 1\nx += "), 7, 7, "expected an expression, found end of line");
  EXPECT_ERR(role("x = 1"), 6, 3, "unknown statement 'x'");
}

}  // namespace
}  // namespace pipesim::verify
