// tcgen05 (sm_100a / sm_103a): the Tensor Memory allocator, the MMA and its commit, TMEM loads and
// stores. Each becomes a SyncRequest (sync.hpp) for the engine's Blackwell units (sim/engine.cpp).
//
// TMEM contents are not modelled: tcgen05.ld writes zeros, tcgen05.st and tcgen05.cp move nothing.
// What is modelled is the allocation (columns per SM; the address written to shared memory), when
// each MMA runs on the tensor pipe (its M, N, K read from the instruction descriptor it is given),
// which barriers a commit arrives on once the MMAs before it are done, and when loads and stores
// complete for tcgen05.wait.
#include <bit>
#include <string>

#include "verify/ptx/machine_impl.hpp"

namespace pipesim::ptx {
namespace {

// The instruction descriptor's M and N (PTX ISA, "Instruction descriptor": N >> 3 in bits 17..22,
// M >> 4 in bits 24..28, the same place for every kind incl. the block-scaled ones).
int idesc_n(uint64_t idesc) { return static_cast<int>((idesc >> 17) & 0x3f) << 3; }
int idesc_m(uint64_t idesc) { return static_cast<int>((idesc >> 24) & 0x1f) << 4; }

// tcgen05.alloc [dst], ncols: the engine answers the first column; answer() stores the TMEM address.
void exec_tmem_alloc(Exec& x, const DInstr& in) {
  const uint32_t first = static_cast<uint32_t>(std::countr_zero(x.mask));
  PendingRequest& p = x.push_request(SyncKind::TmemAlloc);
  p.req.lanes = static_cast<uint32_t>(std::popcount(x.mask));
  p.req.dst = x.to_cluster_address(in.space, x.address(in.ops[0], first), 4, first);
  p.req.a = static_cast<int64_t>(x.src(in.ops[1], 1)[first] & 0xffffffffu);
  p.req.cta_group2 = in.flags & F_CTA_GROUP2;
  p.answer = AnswerKind::SharedU32;
  p.lanes = 1u << first;
}

// Instructions that take the warp's first active lane's operand a (dealloc: taddr, ncols -> ncols).
void exec_tmem_uniform(Exec& x, const DInstr& in) {
  PendingRequest& p = x.push_request(static_cast<SyncKind>(in.sub));
  p.req.lanes = static_cast<uint32_t>(std::popcount(x.mask));
  const uint32_t first = static_cast<uint32_t>(std::countr_zero(x.mask));
  if (in.op == Op::TmemDealloc) p.req.a = static_cast<int64_t>(x.src(in.ops[1], 1)[first] & 0xffffffffu);
  else p.req.a = in.aux;
  p.req.cta_group2 = in.flags & F_CTA_GROUP2;
}

// tcgen05.mma issued by each active lane (kernels elect one): the shape from the first lane's descriptor.
void exec_umma(Exec& x, const DInstr& in) {
  const uint32_t first = static_cast<uint32_t>(std::countr_zero(x.mask));
  const uint64_t idesc = x.src(in.ops[0], 0)[first] & 0xffffffffu;
  PendingRequest& p = x.push_request(SyncKind::UmmaMma);
  p.req.lanes = static_cast<uint32_t>(std::popcount(x.mask));
  p.req.a = idesc_m(idesc);
  p.req.b = idesc_n(idesc);
  p.req.c = in.aux;
  p.req.mma_kind = in.sub2;
  p.req.cta_group2 = in.flags & F_CTA_GROUP2;
}

// tcgen05.commit [mbar] {, ctaMask}: one arrival per lane that issues it, on each CTA of the mask.
void exec_umma_commit(Exec& x, const DInstr& in) {
  for_lanes(x.mask, [&](uint32_t l) {
    PendingRequest& p = x.push_request(SyncKind::UmmaCommit);
    p.req.bar = x.to_cluster_address(in.space, x.address(in.ops[0], l), 8, l);
    p.req.lanes = 1;
    p.req.multicast = in.flags & F_MULTICAST;
    if (p.req.multicast) p.req.b = static_cast<int64_t>(x.src(in.ops[1], 1)[l] & 0xffff);
    p.req.cta_group2 = in.flags & F_CTA_GROUP2;
  });
}

// tcgen05.ld: the destination registers read as zeros (TMEM contents are not modelled).
void exec_tmem_load(Exec& x, const DInstr& in) {
  const DOp& dv = in.ops[0];
  for (uint32_t j = 0; j < dv.count; ++j) {
    const DOp& e = x.elem(dv, j);
    if (e.kind != OpKind::Reg) continue;
    uint64_t* d = x.reg(e.idx);
    for_lanes(x.mask, [&](uint32_t l) { d[l] = 0; });
  }
  PendingRequest& p = x.push_request(SyncKind::TmemLoad);
  p.req.lanes = static_cast<uint32_t>(std::popcount(x.mask));
  p.req.a = in.aux;
}

void exec_tmem_store(Exec& x, const DInstr& in) {
  PendingRequest& p = x.push_request(SyncKind::TmemStore);
  p.req.lanes = static_cast<uint32_t>(std::popcount(x.mask));
  p.req.a = in.aux;
}

// 32-bit registers per thread of a tcgen05.ld / st shape (PTX ISA, "Matrix fragments for tcgen05.ld").
int regs_per_num(const std::string& shape) {
  if (shape == "32x32b" || shape == "16x64b" || shape == "16x32bx2") return 1;
  if (shape == "16x128b") return 2;
  if (shape == "16x256b") return 4;
  return 0;
}

void take_cta_group(Mods& m, DInstr& d) {
  if (m.take("cta_group::2")) d.flags |= F_CTA_GROUP2;
  else m.take("cta_group::1");
}

}  // namespace

bool decode_tcgen05(DecodeCtx& c, Mods& m, DInstr& d) {
  const Instruction& in = *c.in;
  if (in.opcode != "tcgen05") return false;
  const size_t nin = in.ops.size();
  auto uniform = [&](Op o, SyncKind k) {
    d.op = o;
    d.sub = static_cast<uint8_t>(k);
    d.fn = exec_tmem_uniform;
  };
  take_cta_group(m, d);
  m.take("sync");
  m.take("aligned");
  if (m.take("alloc")) {
    d.space = m.take("shared::cta") ? Space::Shared : Space::Generic;
    if (m.type_count() != 1 || m.type(0) != Type::B32) c.unsupported();
    c.expect_ops(2, 2);
    d.op = Op::TmemAlloc;
    d.ops[0] = c.address(in.ops[0]);
    d.ops[1] = c.value(in.ops[1], Type::U32);
    d.fn = exec_tmem_alloc;
    return true;
  }
  if (m.take("dealloc")) {
    if (m.type_count() != 1 || m.type(0) != Type::B32) c.unsupported();
    c.expect_ops(2, 2);
    d.ops[0] = c.value(in.ops[0], Type::U32);
    d.ops[1] = c.value(in.ops[1], Type::U32);
    uniform(Op::TmemDealloc, SyncKind::TmemDealloc);
    return true;
  }
  if (m.take("relinquish_alloc_permit")) {
    c.expect_ops(0, 0);
    uniform(Op::TmemRelinquish, SyncKind::TmemRelinquish);
    return true;
  }
  if (m.take("mma")) {
    // tcgen05.mma[.sp][.ws].cta_group.kind[.block_scale[.scale_vec::NX]][.collector_usage]
    //   [d], a, b, idesc, ...: only the descriptor (operand 3) decides the modelled shape.
    const bool sparse = m.take("sp");
    m.take("ws");
    const int kind = m.take_one({"kind::f16", "kind::tf32", "kind::f8f6f4", "kind::i8", "kind::mxf8f6f4", "kind::mxf4",
                                 "kind::mxf4nvf4"});
    if (kind < 0) c.unsupported();
    m.take("block_scale");
    for (const char* s : {"scale_vec::1X", "scale_vec::2X", "scale_vec::4X", "block16", "block32", "ashift",
                          "collector::a::fill", "collector::a::use", "collector::a::lastuse", "collector::a::discard",
                          "collector::b0::fill", "collector::b0::use", "collector::b0::lastuse", "collector::b0::discard",
                          "collector::b1::fill", "collector::b1::use", "collector::b1::lastuse", "collector::b1::discard",
                          "collector::b2::fill", "collector::b2::use", "collector::b2::lastuse", "collector::b2::discard",
                          "collector::b3::fill", "collector::b3::use", "collector::b3::lastuse", "collector::b3::discard"})
      m.take(s);
    if (nin < 5) c.fail("expects [d], a, b, idesc, ..., enable-input-d");
    static constexpr int kK[] = {16, 8, 32, 32, 32, 64, 64};  // K of one dense MMA per kind
    d.op = Op::UmmaMma;
    d.sub2 = static_cast<uint8_t>(kind);  // model::MmaKind, same order
    d.aux = kK[kind] * (sparse ? 2 : 1);
    d.ops[0] = c.value(in.ops[3], Type::U32);
    d.fn = exec_umma;
    return true;
  }
  if (m.take("commit")) {
    if (!m.take("mbarrier::arrive::one")) c.unsupported();
    d.space = m.take("shared::cluster") ? Space::Shared : Space::Generic;
    if (m.take("multicast::cluster")) d.flags |= F_MULTICAST;
    if (m.type_count() != 1 || m.type(0) != Type::B64) c.unsupported();
    c.expect_ops(d.flags & F_MULTICAST ? 2 : 1, d.flags & F_MULTICAST ? 2 : 1);
    d.op = Op::UmmaCommit;
    d.ops[0] = c.address(in.ops[0]);
    if (d.flags & F_MULTICAST) d.ops[1] = c.value(in.ops[1], Type::U16, true);
    d.fn = exec_umma_commit;
    return true;
  }
  const bool load = m.take("ld");
  if (load || m.take("st")) {
    int per = 0, num = 0;
    for (const std::string& s : in.mods) {
      if (!per && (per = regs_per_num(s))) m.take(s.c_str());
      if (!num && s.size() > 1 && s[0] == 'x' && std::isdigit(static_cast<unsigned char>(s[1]))) {
        num = std::stoi(s.substr(1));
        m.take(s.c_str());
      }
    }
    m.take(load ? "pack::16b" : "unpack::16b");
    if (!per || !num || m.type_count() != 1 || m.type(0) != Type::B32) c.unsupported();
    c.expect_ops(2, 3);  // 16x32bx2 has an immediate half-splitoff
    d.op = load ? Op::TmemLoad : Op::TmemStore;
    d.aux = int64_t{per} * num;
    if (load) d.ops[0] = c.vector_of(in.ops[0], Type::B32, true);
    else d.ops[1] = c.vector_of(in.ops[nin - 1], Type::B32, false);
    d.fn = load ? exec_tmem_load : exec_tmem_store;
    return true;
  }
  if (m.take("wait::ld") || m.take("wait::st")) {
    c.expect_ops(0, 0);
    d.aux = c.full_name().find("wait::st") != std::string::npos;
    uniform(Op::TmemWait, SyncKind::TmemWait);
    return true;
  }
  if (m.take("fence::before_thread_sync") || m.take("fence::after_thread_sync")) {
    c.expect_ops(0, 0);
    uniform(Op::Tcgen05Other, SyncKind::Tcgen05Other);
    return true;
  }
  if (m.take("cp") || m.take("shift")) {
    // Copies into TMEM and row shifts: ordered with the MMAs, they move data only (not modelled).
    for (const std::string& s : in.mods) m.take(s.c_str());
    c.expect_ops(1, 2);
    uniform(Op::Tcgen05Other, SyncKind::Tcgen05Other);
    return true;
  }
  c.unsupported();
}

}  // namespace pipesim::ptx
