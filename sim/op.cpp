#include "sim/op.hpp"

namespace pipesim::sim {

std::string_view op_name(OpKind k) {
  switch (k) {
    case OpKind::Compute: return "compute";
    case OpKind::Wait: return "wait";
    case OpKind::TestWait: return "test_wait";
    case OpKind::Arrive: return "arrive";
    case OpKind::ArriveExpectTx: return "arrive_expect_tx";
    case OpKind::ExpectTx: return "expect_tx";
    case OpKind::CompleteTx: return "complete_tx";
    case OpKind::ArriveDrop: return "arrive_drop";
    case OpKind::Init: return "init";
    case OpKind::Inval: return "inval";
    case OpKind::FenceInit: return "fence_init";
    case OpKind::TmaLoad: return "tma";
    case OpKind::BulkStore: return "store";
    case OpKind::CommitGroup: return "commit_group";
    case OpKind::WaitGroup: return "wait_group";
    case OpKind::NamedSync: return "bar_sync";
    case OpKind::NamedArrive: return "bar_arrive";
    case OpKind::ClusterArrive: return "cluster_arrive";
    case OpKind::ClusterWait: return "cluster_wait";
    case OpKind::Mma: return "mma";
    case OpKind::Commit: return "commit";
    case OpKind::TmemAlloc: return "tmem_alloc";
    case OpKind::TmemDealloc: return "tmem_dealloc";
    case OpKind::TmemRelinquish: return "tmem_relinquish";
    case OpKind::TmemLoad: return "tmem_load";
    case OpKind::TmemStore: return "tmem_store";
    case OpKind::TmemWait: return "tmem_wait";
    case OpKind::StageWrite: return "stage_write";
    case OpKind::MmaCommitGroup: return "wgmma.commit_group";
    case OpKind::MmaWaitGroup: return "wgmma.wait_group";
    case OpKind::Fault: return "fault";
    case OpKind::ClcTryCancel: return "clusterlaunchcontrol.try_cancel";
    case OpKind::SmemStore: return "store";
    case OpKind::SmemLoad: return "load";
  }
  return "?";
}

}  // namespace pipesim::sim
