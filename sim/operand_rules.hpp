// The range rules of statement operands, one function per rule: each returns the sentence that
// says why a value is out of its range, or "" when it is in range. Both front ends' values meet
// the same rule: the scenario parser calls these on constants (an error at file:line:col, exit 2),
// the lowering and the engine on values computed at run time (a fault at the statement's site,
// `bad_operand` unless the rule has its own id: count_range, tx_range, tmem_bad_alloc,
// bad_mma_shape), so a constant and a computed value read the same sentence.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "model/arch.hpp"

namespace pipesim::sim::operand {

std::string parity(int64_t v);                     // wait / test_wait parity: 0 or 1
std::string phase(int64_t v);                      // wait phase = K: K >= 0
std::string arrival_count(int64_t v);              // init / arrive / arrive_drop count (count_range)
std::string tx_bytes(int64_t v);                   // arrive_expect_tx / expect_tx / complete_tx (tx_range)
std::string copy_bytes(std::string_view what, int64_t v);  // TMA / bulk store size ("TMA", "bulk store")
std::string tma_row_bytes(int64_t v);  // a TMA box's row in shared memory: 16 .. 4080, a multiple of 16
std::string multicast_mask(int64_t mask, int64_t cluster);  // at least one CTA, inside the cluster
std::string cluster_rank(int64_t rank, int64_t cluster);    // cta = R
// A TMA's `cta = R`: its own CTA's barrier, or under cta_group 2 its pair leader's.
std::string tma_barrier_rank(int64_t rank, int64_t own_rank, int64_t cta_group);
std::string barrier_index(int64_t index, std::string_view array, int64_t size);  // B[i]
std::string wait_group_count(int64_t v);           // cp.async.bulk.wait_group N
std::string named_barrier_id(int64_t v);           // bar.sync / bar.arrive id
std::string named_threads(int64_t v, int64_t cta_threads);  // bar.sync / bar.arrive thread count
std::string state_index(int64_t v, int64_t stages);  // P.state ... index = I
std::string state_phase(int64_t v);                // P.state ... phase = K
std::string loop_step(int64_t v);                  // for ... step S
std::string compute_time(int64_t ns);              // compute N ns
std::string mma_dim(std::string_view which, int64_t v);  // "M", "N", "K": 0..65535
std::string mma_count(int64_t v);                  // mma ... count = C
std::string cta_group(int64_t v, int64_t cluster);  // 1 or 2; 2 needs an even cluster
std::string tmem_alloc_cols(int64_t v);            // tcgen05.alloc / dealloc (tmem_bad_alloc)
std::string tmem_access_cols(int64_t v);           // tcgen05.ld / st columns per thread
// tcgen05.mma shape (bad_mma_shape): model::mma_shape_error's reason, with the shape.
std::string mma_shape(model::MmaKind kind, int64_t m, int64_t n, int64_t k, int64_t group);
// A wgmma shape as PTX spells it: "m64n128k16".
std::string wgmma_shape_name(int64_t m, int64_t n, int64_t k);
// wgmma.mma_async shape (bad_mma_shape): model::wgmma_shape_error's reason, with the shape.
std::string wgmma_shape(model::MmaKind kind, int64_t m, int64_t n, int64_t k);
std::string wgmma_wait_count(int64_t v);            // wgmma.wait_group N

}  // namespace pipesim::sim::operand
