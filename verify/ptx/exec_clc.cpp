// Cluster launch control (sm_100a): clusterlaunchcontrol.try_cancel asks the engine for the grid's
// next cluster not yet launched (a SyncRequest; the engine writes the response into shared memory
// and completes 16 bytes on the mbarrier); query_cancel decodes a response held in a register
// (sync.hpp's clc_encode) and runs here, exactly.
#include <bit>

#include "verify/ptx/machine_impl.hpp"
#include "verify/ptx/sync.hpp"

namespace pipesim::ptx {
namespace {

void exec_try_cancel(Exec& x, const DInstr& in) {
  for_lanes(x.mask, [&](uint32_t l) {
    PendingRequest& p = x.push_request(SyncKind::ClcTryCancel);
    p.req.dst = x.to_cluster_address(in.space, x.address(in.ops[0], l), 16, l);
    p.req.bar = x.to_cluster_address(in.space, x.address(in.ops[1], l), 8, l);
    p.req.lanes = 1;
    p.req.multicast = in.flags & F_MULTICAST;
  });
}

// sub: 0 is_canceled (ops: pred d, handle), 1..3 get_first_ctaid::x/y/z (d, handle),
// 4 get_first_ctaid.v4 ({x, y, z, _}, handle).
void exec_query_cancel(Exec& x, const DInstr& in) {
  const auto h = x.src(in.ops[1], 1);
  if (in.sub == 0) {
    uint32_t t = 0;
    for_lanes(x.mask, [&](uint32_t l) { t |= clc_cancelled(h[l]) ? 1u << l : 0; });
    x.set_pred(in.ops[0], t, x.mask);
    return;
  }
  if (in.sub <= 3) {
    uint64_t* d = x.dst(in.ops[0]);
    for_lanes(x.mask, [&](uint32_t l) { d[l] = clc_ctaid(h[l], in.sub - 1u); });
    return;
  }
  for (uint32_t k = 0; k < in.ops[0].count && k < 3; ++k) {
    const DOp& e = x.elem(in.ops[0], k);
    if (e.kind != OpKind::Reg) continue;
    uint64_t* d = x.reg(e.idx);
    for_lanes(x.mask, [&](uint32_t l) { d[l] = clc_ctaid(h[l], k); });
  }
}

}  // namespace

bool decode_clc(DecodeCtx& c, Mods& m, DInstr& d) {
  const Instruction& in = *c.in;
  if (in.opcode != "clusterlaunchcontrol") return false;
  if (m.take("try_cancel")) {
    m.take("async");
    d.space = m.take("shared::cta") ? Space::Shared : Space::Generic;
    if (!m.take("mbarrier::complete_tx::bytes")) c.unsupported();
    if (m.take("multicast::cluster::all")) d.flags |= F_MULTICAST;
    if (m.type_count() != 1 || m.type(0) != Type::B128) c.unsupported();
    c.expect_ops(2, 2);
    d.op = Op::ClcTryCancel;
    d.ops[0] = c.address(in.ops[0]);
    d.ops[1] = c.address(in.ops[1]);
    d.fn = exec_try_cancel;
    return true;
  }
  if (!m.take("query_cancel")) c.unsupported();
  c.expect_ops(2, 2);
  d.op = Op::ClcQuery;
  d.fn = exec_query_cancel;
  d.ops[1] = c.value(in.ops[1], Type::B128, true);
  if (m.take("is_canceled")) {
    m.take("pred");
    d.sub = 0;
    d.ops[0] = c.pred_dst(in.ops[0]);
    return true;
  }
  const int which = m.take_one({"get_first_ctaid::x", "get_first_ctaid::y", "get_first_ctaid::z", "get_first_ctaid"});
  if (which < 0) c.unsupported();
  if (which < 3) {
    d.sub = static_cast<uint8_t>(1 + which);
    d.ops[0] = c.dest(in.ops[0], Type::B32);
    return true;
  }
  if (!m.take("v4")) c.unsupported();
  d.sub = 4;
  d.ops[0] = c.vector_of(in.ops[0], Type::B32, true);
  return true;
}

}  // namespace pipesim::ptx
