"""The corpus' mutants: one known Hopper bug each, made by patching a copy of the wheel's CUTLASS.

Every edit names a file under include/, an exact text that must occur `count` times (default 1) and
its replacement; corpus.py fails if the text is not found as often as expected (a CUTLASS version
change can never produce a silently unpatched "mutant"), and fails if the patched build's kernel code
equals the unpatched one. Each mutant is compiled to PTX with one capture TU and runs with the
unpatched build's launch file of the same kernel at corpus.MUTANT_SHAPE (2048x2048x256): every patch
is device code, and corpus.py checks that the entry's parameters are unchanged.

expect: the verdict in scenario syntax (docs/scenario-language.md, "Expectations"): hang, or
error KIND; "racy" when it depends on timing. confidence: how sure the expectation is before the PTX
front end ran it (high: the mechanism is the one of a scenarios/bugs or scenarios/rules pair).

Kernels: 48 = example 48, KernelScheduleAuto -> KernelTmaWarpSpecializedCooperative, TF32, tile
128x128x32, 7 stages, cluster 4x2x1 (A and B multicast), persistent scheduler, no-smem epilogue
(DefaultEpilogue: no named barrier, no epilogue pipelines). 49 coop_evt / pingpong = example 49's
cooperative kernel with the TMA epilogue (and a custom EVT), and its ping-pong kernel (F16, tile
128x128x64, cluster 2x1x1).
"""

COOP = "cutlass/gemm/kernel/sm90_gemm_tma_warpspecialized_cooperative.hpp"
PINGPONG = "cutlass/gemm/kernel/sm90_gemm_tma_warpspecialized_pingpong.hpp"
PIPELINE = "cutlass/pipeline/sm90_pipeline.hpp"
MAINLOOP = "cutlass/gemm/collective/sm90_mma_tma_gmma_ss_warpspecialized.hpp"
TMA_EPILOGUE = "cutlass/epilogue/collective/sm90_epilogue_tma_warpspecialized.hpp"

E48 = "48_hopper_warp_specialized_gemm"
E49 = "49_hopper_gemm_with_collective_builder"

MUTANTS = [
    # --- a pipeline state starting at the wrong phase -------------------------------------------
    {
        "name": "producer_start_phase0",
        "class": "pipeline state starting at the wrong phase (producer)",
        "example": E48, "variant": "coop",
        "edits": [{"file": PIPELINE,
                   "old": "  constexpr uint32_t InitialProducerPhase = 1;",
                   "new": "  constexpr uint32_t InitialProducerPhase = 0;  // MUTANT producer_start_phase0"}],
        "expect": "hang", "confidence": "high",
        "why": """make_producer_start_state() starts every producer at phase 0 instead of 1. A fresh
mbarrier passes a parity-1 wait and blocks a parity-0 one: the mainloop producer's first
producer_acquire waits on empty[0] for a phase only the consumers can complete, while the consumers
wait on full[0] for a load never issued (scenarios/bugs/01_producer_phase_zero).""",
    },
    {
        "name": "consumer_start_phase1",
        "class": "pipeline state starting at the wrong phase (consumer)",
        "example": E48, "variant": "coop",
        "edits": [{"file": COOP,
                   "old": "    typename CollectiveMainloop::PipelineState mainloop_pipe_consumer_state;\n",
                   "new": "    typename CollectiveMainloop::PipelineState mainloop_pipe_consumer_state{0, 1, 0};  // MUTANT consumer_start_phase1\n"}],
        "expect": "error racy", "confidence": "low",
        "why": """The math warpgroups' mainloop pipeline state starts at phase 1: their first wait on each
fresh full[i] passes at once, so they compute on stages the TMA has not filled and release them one
round early; from then on they run one phase ahead of the data. The producer's next arrive.expect_tx
can reach full[i] while the previous round's bytes are still landing (pending_underflow), the last
round's copies are never waited on (exit_inflight), or a wait aliases (stale_wait): which comes first
depends on timing, so any error kind is accepted.""",
    },
    # --- an expect_tx off by a tile ------------------------------------------------------------------
    {
        "name": "expect_tx_plus_tile",
        "class": "expect_tx off by a tile (too many bytes)",
        "example": E48, "variant": "coop",
        "edits": [{"file": COOP,
                   "old": "    mainloop_pipeline_params.transaction_bytes = params.mainloop.tma_transaction_bytes;\n",
                   "new": "    mainloop_pipeline_params.transaction_bytes = params.mainloop.tma_transaction_bytes + CollectiveMainloop::TmaTransactionBytesNK;  // MUTANT expect_tx_plus_tile\n"}],
        "expect": "hang", "confidence": "high",
        "why": """The producer's arrive.expect_tx announces one B tile (128x32 tf32 = 16384 bytes) more per
stage than the A and B copies deliver to the CTA: tx never returns to 0, full[0]'s first phase never
completes and the consumers wait forever (the producer then blocks on empty[] once the ring is full).""",
    },
    {
        "name": "expect_tx_minus_tile",
        "class": "expect_tx off by a tile (too few bytes)",
        "example": E48, "variant": "coop",
        "edits": [{"file": COOP,
                   "old": "    mainloop_pipeline_params.transaction_bytes = params.mainloop.tma_transaction_bytes;\n",
                   "new": "    mainloop_pipeline_params.transaction_bytes = params.mainloop.tma_transaction_bytes - CollectiveMainloop::TmaTransactionBytesNK;  // MUTANT expect_tx_minus_tile\n"}],
        "expect": "error early_completion", "confidence": "high",
        "why": """The arrive.expect_tx announces only the A tile's 16384 bytes of a stage's 32768 (the B tile
is left out): the phase completes when the first 16 KiB of multicast pieces have landed and the rest
land after the consumers were released (scenarios/bugs/03_tx_bytes_mismatch).""",
    },
    # --- a named barrier count off ---------------------------------------------------------------------
    {
        "name": "epilogue_named_barrier_plus_warp",
        "class": "named barrier count off (every arrival)",
        "example": E49, "variant": "coop_evt", "defines": ["CORPUS_VARIANTS=8"],
        "edits": [{"file": TMA_EPILOGUE,
                   "old": "cutlass::arch::NamedBarrier::sync(size(TiledMma{}), cutlass::arch::ReservedNamedBarriers::EpilogueBarrier); };",
                   "new": "cutlass::arch::NamedBarrier::sync(size(TiledMma{}) + 32, cutlass::arch::ReservedNamedBarriers::EpilogueBarrier); };  /* MUTANT epilogue_named_barrier_plus_warp */"}],
        "expect": "hang", "confidence": "high",
        "why": """The TMA epilogue's synchronize() (bar.sync 1) counts 288 threads, but only the 256 threads of
the two math warpgroups take part: the first epilogue barrier waits for a warp that never comes
(scenarios/bugs/15_named_barrier_count).""",
    },
    {
        "name": "epilogue_named_barrier_mismatch",
        "class": "named barrier count off (one warp)",
        "example": E49, "variant": "coop_evt", "defines": ["CORPUS_VARIANTS=8"],
        "edits": [{"file": TMA_EPILOGUE,
                   "old": "      synchronize(); // ensure all threads have issued their async fence\n",
                   "new": "      cutlass::arch::NamedBarrier::sync(issue_tma_store ? NumThreadsPerWarpGroup : size(TiledMma{}), cutlass::arch::ReservedNamedBarriers::EpilogueBarrier);  // MUTANT epilogue_named_barrier_mismatch\n"}],
        "expect": "error named_count_mismatch", "confidence": "high",
        "why": """Before each TMA store the storing warp (warp 0 of the math threads) syncs named barrier 1 with
a count of 128 while the other seven math warps use 256: one barrier, two thread counts in one phase.""",
    },
    # --- a consumer that skips its release on the last tile -----------------------------------------
    {
        "name": "consumer_skips_release_last_tile",
        "class": "consumer skips its release on the last tile",
        "example": E48, "variant": "coop",
        "edits": [{"file": COOP,
                   "old": "          collective_mainloop.mma_tail(\n"
                          "            mainloop_pipeline,\n"
                          "            mainloop_pipe_consumer_state,\n"
                          "            work_k_tile_count\n"
                          "          );\n",
                   "new": "          collective_mainloop.mma_tail(\n"
                          "            mainloop_pipeline,\n"
                          "            mainloop_pipe_consumer_state,\n"
                          "            scheduler.is_last_tile(work_tile_info) ? 0 : work_k_tile_count  // MUTANT consumer_skips_release_last_tile\n"
                          "          );\n",
                   "line_offset": 3}],
        "expect": "hang", "confidence": "high",
        "why": """On its CTA's last work tile each math warpgroup calls mma_tail with a k-tile count of 0: it
still waits for its GMMAs (warpgroup_wait<0>) but releases nothing, so the tile's last k-stage
(K_PIPE_MMAS = 1) is never released. That stage's empty barrier, in this CTA and in the peers of its
cluster row and column, never completes its phase: the producers hang in load_tail (producer_tail
waits on every stage) and the CTAs never exit.""",
    },
    {
        "name": "consumer_skips_tail_release",
        "class": "consumer skips its release (every tile's last k-stage)",
        "example": E48, "variant": "coop",
        "edits": [{"file": MAINLOOP,
                   "old": "      pipeline.consumer_release(smem_pipe_release);                 // UNLOCK smem_pipe_release, done _computing_ on it\n",
                   "new": "      /* MUTANT consumer_skips_tail_release: no consumer_release */\n"}],
        "expect": "hang", "confidence": "high",
        "why": """CollectiveMma::mma_tail waits for the GMMAs but no longer releases the last stage of each
tile: after at most 7 more k-tiles the producer's producer_acquire waits on a stage nobody will free,
and the consumers wait on full[] for the load it cannot issue.""",
    },
    # --- a cluster barrier only some warps run -------------------------------------------------------
    {
        "name": "cluster_arrive_producer_only",
        "class": "cluster barrier only some warps run",
        "example": E48, "variant": "coop",
        "edits": [{"file": COOP,
                   "old": "        cute::cluster_arrive_relaxed();\n        return [] () { cute::cluster_wait(); };\n",
                   "new": "        if (cutlass::canonical_warp_group_idx() == 0) { cute::cluster_arrive_relaxed(); }  // MUTANT cluster_arrive_producer_only\n"
                          "        return [] () { cute::cluster_wait(); };\n"}],
        "expect": "hang", "confidence": "high",
        "why": """After the pipeline barriers are initialised only the producer warpgroup arrives on the
cluster barrier, but every thread of the 8 CTAs waits on it: the math warpgroups never arrive, so
barrier.cluster.wait never returns (scenarios/bugs/13_partial_cluster_sync).""",
    },
    # --- more Hopper bug classes ----------------------------------------------------------------------
    {
        "name": "multicast_arrival_count_plus_one",
        "class": "empty-barrier arrival count off by one",
        "example": E48, "variant": "coop",
        "edits": [{"file": PIPELINE,
                   "old": "        multicast_consumer_arrival_count = (cute::size<0>(cluster_shape) + cute::size<1>(cluster_shape) - 1) *\n"
                          "              num_consumer_warpgroups_per_cluster;\n",
                   "new": "        multicast_consumer_arrival_count = (cute::size<0>(cluster_shape) + cute::size<1>(cluster_shape) - 1) *\n"
                          "              num_consumer_warpgroups_per_cluster + 1;  // MUTANT multicast_arrival_count_plus_one\n",
                   "line_offset": 1}],
        "expect": "hang", "confidence": "high",
        "why": """PipelineTmaAsync initialises each empty barrier for (4 + 2 - 1) * 2 + 1 = 11 arrivals, but the
consumer warpgroups of the CTA's cluster row and column give 10: no empty[] phase ever completes, so
the producer's second round (and its producer_tail) waits forever.""",
    },
    {
        "name": "producer_skips_alternate_tiles",
        "class": "tile scheduler: producer and consumers walk different tiles",
        "example": E48, "variant": "coop",
        "edits": [{"file": COOP,
                   "old": "          work_tile_info = next_work_tile_info;\n"
                          "          if constexpr (IsSchedDynamicPersistent) { \n"
                          "            requires_clc_query = increment_pipe; \n",
                   "new": "          work_tile_info = next_work_tile_info;\n"
                          "          if (work_tile_info.is_valid()) { scheduler.advance_to_next_work(); work_tile_info = scheduler.get_current_work(); }  // MUTANT producer_skips_alternate_tiles\n"
                          "          if constexpr (IsSchedDynamicPersistent) { \n"
                          "            requires_clc_query = increment_pipe; \n"}],
        "expect": "hang", "confidence": "high",
        "why": """The mainloop producer warp advances its copy of the persistent tile scheduler twice per tile
and loads only every other tile of its CTA, while the math warpgroups compute all of them: with 2-3
tiles per CTA (256 tiles, 112 CTAs) the consumers wait on full[] for k-stages that are never loaded.
(A CTA with a single tile would not notice: the verdict needs >= 2 tiles per CTA.)""",
    },
    {
        "name": "pingpong_order_skip_mma_arrive",
        "class": "ordered sequence barrier: a math warpgroup skips its arrive",
        "example": E49, "variant": "pingpong", "defines": ["CORPUS_VARIANTS=2"],
        "edits": [{"file": PINGPONG,
                   "old": "        // Cue for next Math WG's MMA to start\n        math_wg_order_barrier.arrive();\n",
                   "new": "        // Cue for next Math WG's MMA to start\n        /* MUTANT pingpong_order_skip_mma_arrive: no math_wg_order_barrier.arrive() */\n",
                   "line_offset": 1}],
        "expect": "hang", "confidence": "high",
        "why": """In the ping-pong kernel each math warpgroup signals the other through the
OrderedSequenceBarrier (mbarriers) when its mainloop is done; without that arrive, warpgroup 1 waits
forever for its turn to run the mainloop, and warpgroup 0 waits for warpgroup 1's turn before its own
epilogue.""",
    },
]
