"""The Blackwell (sm_100a) corpus' mutants: one known Blackwell bug each, made by patching a copy of the
wheel's CUTLASS, as the Hopper ones (mutants_spec.py: the same fields, the same checks by corpus.py).

Every mutant patches the kernel of example 70 (70_blackwell_fp16_gemm.cu) and runs with the unpatched
build's `2sm` launch at corpus_sm100.MUTANT_SHAPE (2048x2048x256): the builder's 2-SM kernel
(KernelTmaWarpSpecialized2SmSm100, MmaTileShape 256x128x64, 4 k-tiles), a static cluster of 2x2x1 = 4
CTAs (two CTA pairs: ranks 0-1 and 2-3), the CLC tile scheduler (PersistentTileSchedulerSm100): a
grid of 16x16 = 256 CTAs of which 148 fit the B200 at once (37 clusters); clusterlaunchcontrol.try_cancel
hands the other 27 clusters' tiles to running ones. capture_70.cu builds both of its kernels; each
mutant is one nvcc -ptx run of it against the patched tree (the 1-SM kernel gets the patch too, but
only the 2-SM entry is checked and run).

Nothing here ever ran on a GPU: no Blackwell GPU exists for this project; the expectations rest on the
model and on CUTLASS's own code.
"""

KERNEL = "cutlass/gemm/kernel/sm100_gemm_tma_warpspecialized.hpp"
PIPELINE = "cutlass/pipeline/sm100_pipeline.hpp"
MAINLOOP = "cutlass/gemm/collective/sm100_mma_warpspecialized.hpp"

E70 = "70_blackwell_gemm"

MUTANTS = [
    {
        "name": "clc_load_role_skips_grant",
        "class": "CLC response decoded differently by two roles",
        "example": E70, "variant": "2sm",
        "edits": [{"file": KERNEL,
                   "old": "        requires_clc_query = increment_pipe;\n"
                          "        if (increment_pipe) {\n"
                          "          ++clc_pipe_consumer_state;\n"
                          "        }\n"
                          "      } while (work_tile_info.is_valid());\n"
                          "      collective_mainloop.load_tail(mainloop_pipeline, mainloop_pipe_producer_state);\n",
                   "new": "        requires_clc_query = increment_pipe;\n"
                          "        if (increment_pipe) {\n"
                          "          ++clc_pipe_consumer_state;\n"
                          "        }\n"
                          "        if (work_tile_info.is_valid()) {  /* MUTANT clc_load_role_skips_grant: this role reads a granted tile as taken and decodes the next response */\n"
                          "          auto [skipped_tile_info, skipped_increment] = scheduler.fetch_next_work(work_tile_info, clc_pipeline, clc_pipe_consumer_state);\n"
                          "          work_tile_info = skipped_tile_info; cta_coord_mnkl = scheduler.work_tile_to_cta_coord(work_tile_info);\n"
                          "          if (skipped_increment) { ++clc_pipe_consumer_state; }\n"
                          "        }\n"
                          "      } while (work_tile_info.is_valid());\n"
                          "      collective_mainloop.load_tail(mainloop_pipeline, mainloop_pipe_producer_state);\n",
                   "line_offset": 5}],
        "expect": "hang", "confidence": "high",
        "why": """The TMA load warp decodes each granted CLC response as a tile already taken and reads the
next response, while the MMA, epilogue and scheduler warps decode the same response as their next
tile. The load warp then waits on the CLC pipeline's full barrier for a response the scheduler warp
only requests after the load warp's next throttle arrival (clc_throttle_pipeline), which it never
makes: the load warp and the scheduler warp wait on each other; the MMA warp waits for stages never
loaded.""",
    },
    {
        "name": "umma_peer_mask_pair_cluster",
        "class": "2-SM commit mask that assumes 2 CTAs per cluster",
        "example": E70, "variant": "2sm",
        "edits": [{"file": PIPELINE,
                   "old": "  return tmem_sync_mask;\n",
                   "new": "  return uint16_t(0b11);  // MUTANT umma_peer_mask_pair_cluster: the pair is ranks 0 and 1, as in a cluster of 2\n"}],
        "expect": "hang", "confidence": "high",
        "why": """calculate_umma_peer_mask returns 0b11 for every CTA: the CTA pair is taken to be ranks 0 and 1,
right for a cluster of 2 but not for this kernel's 2x2 cluster of two pairs. The leader of the second
pair (rank 2) signals its accumulator commits (PipelineUmmaAsync::producer_commit,
umma_arrive_multicast_2x1SM) to ranks 0 and 1: the epilogue warps of ranks 2 and 3 wait on an
accumulator full barrier no commit reaches, while ranks 0 and 1 get the arrivals of both leaders.""",
    },
    {
        "name": "acc_producer_start_phase0",
        "class": "accumulator pipeline producer starting at the wrong phase",
        "example": E70, "variant": "2sm",
        "edits": [{"file": KERNEL,
                   "old": "    AccumulatorPipelineState accumulator_pipe_producer_state = cutlass::make_producer_start_state<AccumulatorPipeline>();\n",
                   "new": "    AccumulatorPipelineState accumulator_pipe_producer_state{0, 0, 0};  // MUTANT acc_producer_start_phase0\n"}],
        "expect": "hang", "confidence": "high",
        "why": """The MMA warp's accumulator pipeline state starts at phase 0 instead of 1 (the seed's 9-minute
hang, bug-catalog 1): its first producer_acquire waits on a fresh accumulator empty barrier for a
phase only the epilogue warps complete, and they wait on the accumulator full barrier for the MMA.""",
    },
    {
        "name": "expect_tx_without_cta_group",
        "class": "expect_tx bytes not x cta_group",
        "example": E70, "variant": "2sm",
        "edits": [{"file": MAINLOOP,
                   "old": "    cutlass::bits_to_bytes(size(AtomThrShapeMNK{}) * cosize(take<0,3>(SmemLayoutA{})) * cute::sizeof_bits_v<ElementA>) +\n"
                          "    cutlass::bits_to_bytes(size(AtomThrShapeMNK{}) * cosize(take<0,3>(SmemLayoutB{})) * cute::sizeof_bits_v<ElementB>);\n",
                   "new": "    cutlass::bits_to_bytes(cosize(take<0,3>(SmemLayoutA{})) * cute::sizeof_bits_v<ElementA>) +  /* MUTANT expect_tx_without_cta_group */\n"
                          "    cutlass::bits_to_bytes(cosize(take<0,3>(SmemLayoutB{})) * cute::sizeof_bits_v<ElementB>);\n"}],
        "expect": "error early_completion", "confidence": "high",
        "why": """TmaTransactionBytes leaves out the x size(AtomThrShapeMNK) = 2 (bug-catalog 3): the pair leader's
arrive.expect_tx announces one CTA's half of a stage, but both CTAs' .cta_group::2 copies complete
their bytes on the leader's full barrier, so the phase completes when the first half has landed and
the rest lands after the MMA was released.""",
    },
    {
        "name": "follower_expect_tx",
        "class": "the follower CTA also arms its full barrier (arrive.expect_tx)",
        "example": E70, "variant": "2sm",
        "edits": [{"file": KERNEL,
                   "old": "    mainloop_pipeline_params.is_leader = lane_predicate && is_mma_leader_cta && is_participant.main_load;\n",
                   "new": "    mainloop_pipeline_params.is_leader = lane_predicate && is_participant.main_load;  // MUTANT follower_expect_tx\n"}],
        "expect": "error pending_underflow", "confidence": "high",
        "why": """Every CTA's load warp, not only the pair leader's, does the arrive.expect_tx of
PipelineTmaUmmaAsync::producer_acquire (bug-catalog 2, the seed's follower bug). The pair's
.cta_group::2 copies complete their bytes on the leader's full barrier, so the follower's own full
barrier gets an arrival and an expect_tx whose bytes never come: its phase never completes, and when
the ring wraps (8 stages: at K = 16384, 256 k-tiles) the follower's next arrive.expect_tx on that
stage finds no arrival pending. At 2048x2048x256 (4 k-tiles, at most 2 tiles per CTA) the ring
never wraps: the test checks it at 512x512x16384.""",
    },
    {
        "name": "tmem_alloc_leader_only",
        "class": "TMEM pair allocation: a pair member never joins",
        "example": E70, "variant": "2sm",
        "edits": [{"file": KERNEL,
                   "old": "      tmem_allocator.allocate(TmemAllocator::Sm100TmemCapacityColumns, &shared_storage.tmem_base_ptr);\n",
                   "new": "      if (is_mma_leader_cta) { tmem_allocator.allocate(TmemAllocator::Sm100TmemCapacityColumns, &shared_storage.tmem_base_ptr); }  // MUTANT tmem_alloc_leader_only\n"}],
        "expect": "hang", "confidence": "high",
        "why": """Only the pair leader's MMA warp issues tcgen05.alloc.cta_group::2 (the leader issues the pair's
MMAs, so it "owns" the accumulator). The 2-CTA allocation is collective: it completes only when one
warp of each CTA of the pair has issued it, so the leader's MMA warp waits in it for its peer, which
never allocates; nothing else of the leader proceeds past the tile loop's first accumulator.""",
    },
]
