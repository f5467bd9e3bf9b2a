#include "sim/stream.hpp"

#include <algorithm>

#include "sim/engine.hpp"
#include "sim/lowering.hpp"

namespace pipesim::sim {

OpStreams materialise(const Kernel& k, const StreamLimits& limits) {
  OpStreams s;
  s.ctas = static_cast<int>(k.launch.ctas);
  s.cluster = static_cast<int>(k.launch.cluster);
  s.threads = static_cast<int>(k.launch.threads);
  s.warps_per_cta = k.launch.warps();
  s.ctas_per_sm = std::max<int64_t>(1, k.launch.ctas_per_sm);
  s.arch = k.arch ? std::string(k.arch->name) : std::string();
  for (const BarrierArray& a : k.barriers) {
    s.array_base.push_back(s.slots);
    for (uint32_t i = 0; i < a.size; ++i) s.init_count.push_back(a.init_count.value_or(0));
    s.slots += a.size;
  }
  s.offsets.reserve(static_cast<size_t>(s.ctas) * static_cast<size_t>(s.warps_per_cta) + 1);
  s.offsets.push_back(0);
  for (int c = 0; c < s.ctas; ++c) {
    for (int w = 0; w < s.warps_per_cta; ++w) {
      WarpProgram p(k, c, w);
      Op op;
      while (p.next(op)) {
        // A computed operand the lowering refused: the run's fault, and nothing the device can run.
        const std::string at = "line " + std::to_string(k.sites[op.site].loc.line) + ": ";
        if (op.kind == OpKind::Fault) throw StreamUnavailable(at + p.fault().first + ": " + p.fault().second);
        // A value read from shared memory steers the program: its stream cannot be laid out ahead.
        if (op.kind == OpKind::SmemLoad)
          throw StreamUnavailable(at + "values through shared memory ('load') do not run on the device interpreter");
        if (op.kind == OpKind::ClcTryCancel)
          throw StreamUnavailable(at + "cluster launch control ('clc_try_cancel') does not run on the device interpreter");
        if (s.ops.size() >= limits.max_ops)
          throw StreamTooLarge("the scenario lowers to more than " + std::to_string(limits.max_ops) +
                               " operations (reached at CTA " + std::to_string(c) + " warp " + std::to_string(w) + " of " +
                               std::to_string(s.ctas) + " CTAs): too large for the device interpreter; shrink it with -D");
        DevOp d;
        d.kind = static_cast<uint8_t>(op.kind);
        d.flags = op.flags;
        d.rank = static_cast<int8_t>(op.bar.rank);
        d.slot = op.bar.array < k.barriers.size() ? barrier_slot(k, op.bar.array, op.bar.index) : 0;
        d.a = op.a;
        d.b = op.b;
        switch (op.kind) {
          case OpKind::TmaLoad:
            s.max_tma_bytes = std::max(s.max_tma_bytes, op.a);
            if (op.b != 0) s.uses_cluster_ops = true;
            break;
          case OpKind::BulkStore: s.max_store_bytes = std::max(s.max_store_bytes, op.a); break;
          case OpKind::ClusterArrive: case OpKind::ClusterWait: s.uses_cluster_ops = true; break;
          case OpKind::Mma:  // a wgmma is Hopper's own: the device runs its join (kernels/interp)
            if (!(op.flags & kFlagWgmma)) s.uses_tcgen05 = true;
            break;
          case OpKind::Commit: case OpKind::TmemAlloc: case OpKind::TmemDealloc:
          case OpKind::TmemRelinquish: case OpKind::TmemLoad: case OpKind::TmemStore: case OpKind::TmemWait:
            s.uses_tcgen05 = true;
            break;
          default: break;
        }
        if (op.bar.rank != BarRef::kOwnCta) s.uses_cluster_ops = true;
        s.ops.push_back(d);
        s.sites.push_back(op.site);
      }
      s.offsets.push_back(s.ops.size());
    }
  }
  return s;
}

std::string_view dev_status_name(DevWarpStatus st) {
  switch (st) {
    case DevWarpStatus::NotStarted: return "not started";
    case DevWarpStatus::Running: return "running";
    case DevWarpStatus::Done: return "done";
    case DevWarpStatus::TimedOut: return "timed out";
    case DevWarpStatus::StoppedOnHang: return "blocked (mbarrier)";
    case DevWarpStatus::BlockedNamed: return "blocked (named barrier)";
    case DevWarpStatus::BlockedCluster: return "blocked (cluster barrier)";
    case DevWarpStatus::Assertion: return "assertion";
    case DevWarpStatus::SkippedOnHang: return "not started (hang)";
  }
  return "?";
}

std::string_view device_outcome_name(DeviceOutcome o) {
  switch (o) {
    case DeviceOutcome::Ok: return "ok";
    case DeviceOutcome::Hang: return "hang";
    case DeviceOutcome::Fault: return "fault";
    case DeviceOutcome::Assertion: return "error assertion";
    case DeviceOutcome::Skipped: return "skipped";
    case DeviceOutcome::Unavailable: return "unavailable";
  }
  return "?";
}

}  // namespace pipesim::sim
