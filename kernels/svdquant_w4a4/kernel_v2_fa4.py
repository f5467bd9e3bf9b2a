"""SVDQuant W4A4 GEMM, the seed's "v2_fa4" design, in CuTe DSL (sm_100a; compiled, never run here).

    y = scaled_mma(act4, wgt4) * wcscale + bias + lora_act_in @ lora_up^T

act [M, K] and wgt [N, K] are NVFP4 (e2m1, K-major) with one e4m3 scale per 16 K elements (the
128x4 scale-factor atom layout of CUTLASS's block-scaled GEMMs); lora_act_in [M, R] and lora_up
[N, R] are f16 (K-major in R); wcscale and bias are f16 [N]; y is f16 [M, N], row-major.

Warp roles (FA4 style, 192 threads): epilogue warps 0-3, MMA warp 4, TMA load warp 5. A cluster of
2 CTAs runs cta_group::2 MMAs on a 256x128 tile (128x128 per CTA), persistent over a static tile
scheduler. Pipelines: `ab` (PipelineTmaUmma: A, B, SFA, SFB on one barrier), `lora` (PipelineTmaUmma,
2 stages: this tile's LoRA-down rows and LoRA-up half), `acc` (PipelineUmmaAsync, 1 stage), and the
epilogue's PipelineTmaStore. The LoRA atoms (f16, K = 16) accumulate into the same TMEM accumulator
as the main atoms, one after every `stride` main atoms (the beta-interleave).

The places where the seed's bugs live are flags of config.SeedBugs (see README.md).
"""

import dataclasses

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils as utils
import cutlass.utils.blackwell_helpers as sm100_utils
import cutlass.utils.blockscaled_layout as blockscaled_utils
from cutlass.cute.nvgpu import OperandMajorMode, cpasync, tcgen05
from cutlass.pipeline import pipeline_init_arrive, pipeline_init_wait

from config import (ATOMS_PER_K_TILE, CTA_GROUP, LORA_ATOM_K, SF_VEC, SM_COUNT, TILE_M, TILE_N,
                    SeedBugs, Shape, solve_stages)

EPILOGUE_WARPS = (0, 1, 2, 3)
MMA_WARP = 4
LOAD_WARP = 5
THREADS_PER_CTA = 32 * 6
EPILOGUE_BARRIER_ID = 1         # the 4 epilogue warps
TMEM_POINTER_BARRIER_ID = 2     # epilogue warps + MMA warp: the TMEM address hand-off


class SvdquantW4A4V2FA4:
    """One compiled kernel per (shape, bugs). `__call__` is the @cute.jit host function."""

    def __init__(self, shape: Shape, bugs: SeedBugs = SeedBugs(), num_lora_stage: int = 2):
        self.shape = shape
        self.bugs = bugs
        self.stages = solve_stages(shape, bugs, num_lora_stage)
        self.num_ab_stage = self.stages.num_ab_stage
        self.num_c_stage = self.stages.num_c_stage
        self.num_lora_stage = num_lora_stage
        self.num_acc_stage = 1
        self.lora_atoms = shape.r // LORA_ATOM_K
        self.main_atoms = (shape.k // (64 * ATOMS_PER_K_TILE)) * ATOMS_PER_K_TILE
        # beta-interleave: one LoRA atom after every `lora_stride` main atoms.
        self.lora_stride = max(1, self.main_atoms // self.lora_atoms)
        self.max_active_clusters = SM_COUNT // CTA_GROUP

        self.ab_dtype = cutlass.Float4E2M1FN
        self.sf_dtype = cutlass.Float8E4M3FN
        self.lora_dtype = cutlass.Float16
        self.c_dtype = cutlass.Float16
        self.acc_dtype = cutlass.Float32
        self.c_layout = utils.LayoutEnum.ROW_MAJOR
        self.cta_group = tcgen05.CtaGroup.TWO
        self.cluster_shape_mn = (CTA_GROUP, 1)
        self.epilogue_barrier = pipeline.NamedBarrier(barrier_id=EPILOGUE_BARRIER_ID,
                                                      num_threads=32 * len(EPILOGUE_WARPS))
        self.tmem_pointer_barrier = pipeline.NamedBarrier(barrier_id=TMEM_POINTER_BARRIER_ID,
                                                          num_threads=32 * (1 + len(EPILOGUE_WARPS)))
        self.num_tmem_alloc_cols = cute.arch.get_max_tmem_alloc_cols("sm_100")

    # ------------------------------------------------------------------ host side (trace time)

    def _make_mmas(self):
        k_major = OperandMajorMode.K
        mma = sm100_utils.make_blockscaled_trivial_tiled_mma(
            self.ab_dtype, self.ab_dtype, k_major, k_major, self.sf_dtype, SF_VEC,
            self.cta_group, (TILE_M, TILE_N))
        # SFB is partitioned by a 1-CTA MMA of N rounded up to 128 (CUTLASS's block-scaled GEMMs).
        sfb_mn = (TILE_M // CTA_GROUP, cute.round_up(TILE_N, 128))
        mma_sfb = sm100_utils.make_blockscaled_trivial_tiled_mma(
            self.ab_dtype, self.ab_dtype, k_major, k_major, self.sf_dtype, SF_VEC,
            tcgen05.CtaGroup.ONE, sfb_mn)
        lora_mma = sm100_utils.make_trivial_tiled_mma(
            self.lora_dtype, self.lora_dtype, k_major, k_major, self.acc_dtype,
            self.cta_group, (TILE_M, TILE_N))
        atom_k = cute.size(mma.shape_mnk, mode=[2])
        self.mma_tiler = (TILE_M, TILE_N, atom_k * ATOMS_PER_K_TILE)
        self.mma_tiler_sfb = (sfb_mn[0], sfb_mn[1], atom_k * ATOMS_PER_K_TILE)
        self.lora_tiler = (TILE_M, TILE_N, self.shape.r)
        self.cta_tile_shape_mnk = (TILE_M // CTA_GROUP, TILE_N, self.mma_tiler[2])
        self.cluster_layout_vmnk = cute.tiled_divide(
            cute.make_layout((*self.cluster_shape_mn, 1)), (mma.thr_id.shape,))
        self.cluster_layout_sfb_vmnk = cute.tiled_divide(
            cute.make_layout((*self.cluster_shape_mn, 1)), (mma_sfb.thr_id.shape,))
        return mma, mma_sfb, lora_mma

    def _make_smem_layouts(self, mma, lora_mma):
        self.epi_tile = sm100_utils.compute_epilogue_tile_shape(
            self.cta_tile_shape_mnk, True, self.c_layout, self.c_dtype)
        self.a_smem = sm100_utils.make_smem_layout_a(mma, self.mma_tiler, self.ab_dtype, self.num_ab_stage)
        self.b_smem = sm100_utils.make_smem_layout_b(mma, self.mma_tiler, self.ab_dtype, self.num_ab_stage)
        self.sfa_smem = blockscaled_utils.make_smem_layout_sfa(mma, self.mma_tiler, SF_VEC, self.num_ab_stage)
        self.sfb_smem = blockscaled_utils.make_smem_layout_sfb(mma, self.mma_tiler, SF_VEC, self.num_ab_stage)
        self.c_smem = sm100_utils.make_smem_layout_epi(self.c_dtype, self.c_layout, self.epi_tile,
                                                       self.num_c_stage)
        self.la_smem = sm100_utils.make_smem_layout_a(lora_mma, self.lora_tiler, self.lora_dtype,
                                                      self.num_lora_stage)
        self.lu_smem = sm100_utils.make_smem_layout_b(lora_mma, self.lora_tiler, self.lora_dtype,
                                                      self.num_lora_stage)
        sf_atom_mn = 32
        self.num_acc_tmem_cols = self.cta_tile_shape_mnk[1] * self.num_acc_stage
        self.num_sfa_tmem_cols = (self.cta_tile_shape_mnk[0] // sf_atom_mn) * ATOMS_PER_K_TILE
        self.num_sfb_tmem_cols = (self.mma_tiler_sfb[1] // sf_atom_mn) * ATOMS_PER_K_TILE

    def _shared_storage(self):
        align = 1024

        @cute.struct
        class SharedStorage:
            ab_full: cute.struct.MemRange[cutlass.Int64, self.num_ab_stage]
            ab_empty: cute.struct.MemRange[cutlass.Int64, self.num_ab_stage]
            lora_full: cute.struct.MemRange[cutlass.Int64, self.num_lora_stage]
            lora_empty: cute.struct.MemRange[cutlass.Int64, self.num_lora_stage]
            acc_full: cute.struct.MemRange[cutlass.Int64, self.num_acc_stage]
            acc_empty: cute.struct.MemRange[cutlass.Int64, self.num_acc_stage]
            tmem_dealloc: cutlass.Int64
            tmem_holding_buf: cutlass.Int32
            sC: cute.struct.Align[cute.struct.MemRange[self.c_dtype, cute.cosize(self.c_smem.outer)], align]
            sA: cute.struct.Align[cute.struct.MemRange[self.ab_dtype, cute.cosize(self.a_smem.outer)], align]
            sB: cute.struct.Align[cute.struct.MemRange[self.ab_dtype, cute.cosize(self.b_smem.outer)], align]
            sSFA: cute.struct.Align[cute.struct.MemRange[self.sf_dtype, cute.cosize(self.sfa_smem)], align]
            sSFB: cute.struct.Align[cute.struct.MemRange[self.sf_dtype, cute.cosize(self.sfb_smem)], align]
            sLA: cute.struct.Align[cute.struct.MemRange[self.lora_dtype, cute.cosize(self.la_smem.outer)], align]
            sLU: cute.struct.Align[cute.struct.MemRange[self.lora_dtype, cute.cosize(self.lu_smem.outer)], align]

        return SharedStorage

    @cute.jit
    def __call__(self, act: cute.Tensor, wgt: cute.Tensor, ascales: cute.Tensor, wscales: cute.Tensor,
                 lora_act_in: cute.Tensor, lora_up: cute.Tensor, wcscale: cute.Tensor, bias: cute.Tensor,
                 out: cute.Tensor):
        m, k, n, r = self.shape.m, self.shape.k, self.shape.n, self.shape.r
        mma, mma_sfb, lora_mma = self._make_mmas()
        self._make_smem_layouts(mma, lora_mma)

        k_major = lambda rows, cols: cute.make_ordered_layout((rows, cols, 1), order=(1, 0, 2))  # noqa: E731
        a = cute.make_tensor(act.iterator, k_major(m, k))
        b = cute.make_tensor(wgt.iterator, k_major(n, k))
        c = cute.make_tensor(out.iterator, k_major(m, n))
        la = cute.make_tensor(lora_act_in.iterator, k_major(m, r))
        lu = cute.make_tensor(lora_up.iterator, k_major(n, r))
        sfa = cute.make_tensor(ascales.iterator, blockscaled_utils.tile_atom_to_shape_SF(a.shape, SF_VEC))
        sfb = cute.make_tensor(wscales.iterator, blockscaled_utils.tile_atom_to_shape_SF(b.shape, SF_VEC))

        cluster_vmnk = self.cluster_layout_vmnk.shape
        op_a = sm100_utils.cluster_shape_to_tma_atom_A(self.cluster_shape_mn, mma.thr_id)
        op_b = sm100_utils.cluster_shape_to_tma_atom_B(self.cluster_shape_mn, mma.thr_id)
        op_sfb = sm100_utils.cluster_shape_to_tma_atom_SFB(self.cluster_shape_mn, mma.thr_id)
        stage0 = (None, None, None, 0)
        a_smem1, b_smem1 = cute.slice_(self.a_smem, stage0), cute.slice_(self.b_smem, stage0)
        sfa_smem1, sfb_smem1 = cute.slice_(self.sfa_smem, stage0), cute.slice_(self.sfb_smem, stage0)
        la_smem1, lu_smem1 = cute.slice_(self.la_smem, stage0), cute.slice_(self.lu_smem, stage0)
        tma_a, tma_tensor_a = cute.nvgpu.make_tiled_tma_atom_A(op_a, a, a_smem1, self.mma_tiler, mma, cluster_vmnk)
        tma_b, tma_tensor_b = cute.nvgpu.make_tiled_tma_atom_B(op_b, b, b_smem1, self.mma_tiler, mma, cluster_vmnk)
        tma_sfa, tma_tensor_sfa = cute.nvgpu.make_tiled_tma_atom_A(
            op_a, sfa, sfa_smem1, self.mma_tiler, mma, cluster_vmnk, internal_type=cutlass.Int16)
        tma_sfb, tma_tensor_sfb = cute.nvgpu.make_tiled_tma_atom_B(
            op_sfb, sfb, sfb_smem1, self.mma_tiler_sfb, mma_sfb, self.cluster_layout_sfb_vmnk.shape,
            internal_type=cutlass.Int16)
        tma_la, tma_tensor_la = cute.nvgpu.make_tiled_tma_atom_A(op_a, la, la_smem1, self.lora_tiler, lora_mma,
                                                                 cluster_vmnk)
        tma_lu, tma_tensor_lu = cute.nvgpu.make_tiled_tma_atom_B(op_b, lu, lu_smem1, self.lora_tiler, lora_mma,
                                                                 cluster_vmnk)
        tma_c, tma_tensor_c = cpasync.make_tiled_tma_atom(
            cpasync.CopyBulkTensorTileS2GOp(), c, cute.slice_(self.c_smem, (None, None, 0)), self.epi_tile)

        # Bytes one stage brings into one CTA; the leader expects both CTAs' (x cta_group).
        tx_factor = 1 if self.bugs.tx_without_cta_group else CTA_GROUP
        self.ab_tx_bytes = tx_factor * (cute.size_in_bytes(self.ab_dtype, a_smem1)
                                        + cute.size_in_bytes(self.ab_dtype, b_smem1)
                                        + cute.size_in_bytes(self.sf_dtype, sfa_smem1)
                                        + cute.size_in_bytes(self.sf_dtype, sfb_smem1))
        self.lora_tx_bytes = tx_factor * (cute.size_in_bytes(self.lora_dtype, la_smem1)
                                          + cute.size_in_bytes(self.lora_dtype, lu_smem1))

        cta_tiles = cute.zipped_divide(c, tiler=cute.slice_(self.cta_tile_shape_mnk, (None, None, 0)))
        sched_params = utils.PersistentTileSchedulerParams(
            cta_tiles[(0, (None, None, None))].shape, (*self.cluster_shape_mn, 1))
        grid = utils.StaticPersistentTileScheduler.get_grid_shape(sched_params, self.max_active_clusters)
        self.shared_storage = self._shared_storage()

        self.kernel(mma, mma_sfb, lora_mma,
                    tma_a, tma_tensor_a, tma_b, tma_tensor_b, tma_sfa, tma_tensor_sfa, tma_sfb, tma_tensor_sfb,
                    tma_la, tma_tensor_la, tma_lu, tma_tensor_lu, tma_c, tma_tensor_c, wcscale, bias,
                    self.cluster_layout_vmnk, self.cluster_layout_sfb_vmnk,
                    self.a_smem, self.b_smem, self.sfa_smem, self.sfb_smem, self.la_smem, self.lu_smem,
                    self.c_smem, self.epi_tile, sched_params).launch(
            grid=grid, block=[THREADS_PER_CTA, 1, 1], cluster=(*self.cluster_shape_mn, 1),
            smem=self.shared_storage.size_in_bytes(), min_blocks_per_mp=1)

    # ------------------------------------------------------------------ device side

    @cute.kernel
    def kernel(self, mma: cute.TiledMma, mma_sfb: cute.TiledMma, lora_mma: cute.TiledMma,
               tma_a: cute.CopyAtom, mA: cute.Tensor, tma_b: cute.CopyAtom, mB: cute.Tensor,
               tma_sfa: cute.CopyAtom, mSFA: cute.Tensor, tma_sfb: cute.CopyAtom, mSFB: cute.Tensor,
               tma_la: cute.CopyAtom, mLA: cute.Tensor, tma_lu: cute.CopyAtom, mLU: cute.Tensor,
               tma_c: cute.CopyAtom, mC: cute.Tensor, wcscale: cute.Tensor, bias: cute.Tensor,
               cluster_layout_vmnk: cute.Layout, cluster_layout_sfb_vmnk: cute.Layout,
               a_smem: cute.ComposedLayout, b_smem: cute.ComposedLayout, sfa_smem: cute.Layout,
               sfb_smem: cute.Layout, la_smem: cute.ComposedLayout, lu_smem: cute.ComposedLayout,
               c_smem: cute.ComposedLayout, epi_tile: cute.Tile,
               sched_params: utils.PersistentTileSchedulerParams):
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        if warp_idx == LOAD_WARP:
            for atom in (tma_a, tma_b, tma_sfa, tma_sfb, tma_la, tma_lu, tma_c):
                cpasync.prefetch_descriptor(atom)

        bidx, _, _ = cute.arch.block_idx()
        mma_coord_v = bidx % CTA_GROUP
        is_leader_cta = mma_coord_v == 0
        cta_rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
        coord_vmnk = cluster_layout_vmnk.get_flat_coord(cta_rank)
        coord_sfb_vmnk = cluster_layout_sfb_vmnk.get_flat_coord(cta_rank)
        tidx, _, _ = cute.arch.thread_idx()

        storage = utils.SmemAllocator().allocate(self.shared_storage)
        thread = pipeline.Agent.Thread
        ab_pipe = pipeline.PipelineTmaUmma.create(
            barrier_storage=storage.ab_full.data_ptr(), num_stages=self.num_ab_stage,
            producer_group=pipeline.CooperativeGroup(thread), consumer_group=pipeline.CooperativeGroup(thread, 1),
            tx_count=self.ab_tx_bytes, cta_layout_vmnk=cluster_layout_vmnk, defer_sync=True)
        lora_pipe = pipeline.PipelineTmaUmma.create(
            barrier_storage=storage.lora_full.data_ptr(), num_stages=self.num_lora_stage,
            producer_group=pipeline.CooperativeGroup(thread), consumer_group=pipeline.CooperativeGroup(thread, 1),
            tx_count=self.lora_tx_bytes, cta_layout_vmnk=cluster_layout_vmnk, defer_sync=True)
        if cutlass.const_expr(self.bugs.follower_expect_tx):
            # Bug 2: every CTA of the pair arms the leader's full barrier (arrivals and bytes doubled).
            ab_pipe = dataclasses.replace(ab_pipe, is_leader_cta=True)
            lora_pipe = dataclasses.replace(lora_pipe, is_leader_cta=True)
        acc_pipe = pipeline.PipelineUmmaAsync.create(
            barrier_storage=storage.acc_full.data_ptr(), num_stages=self.num_acc_stage,
            producer_group=pipeline.CooperativeGroup(thread),
            consumer_group=pipeline.CooperativeGroup(thread, 32 * len(EPILOGUE_WARPS) * CTA_GROUP),
            cta_layout_vmnk=cluster_layout_vmnk, defer_sync=True)
        tmem = utils.TmemAllocator(storage.tmem_holding_buf.ptr, barrier_for_retrieve=self.tmem_pointer_barrier,
                                   allocator_warp_id=EPILOGUE_WARPS[0], is_two_cta=True,
                                   two_cta_tmem_dealloc_mbar_ptr=storage.tmem_dealloc.ptr)
        pipeline_init_arrive(cluster_shape_mn=self.cluster_shape_mn, is_relaxed=True)

        sC = storage.sC.get_tensor(c_smem.outer, swizzle=c_smem.inner)
        sA = storage.sA.get_tensor(a_smem.outer, swizzle=a_smem.inner)
        sB = storage.sB.get_tensor(b_smem.outer, swizzle=b_smem.inner)
        sSFA = storage.sSFA.get_tensor(sfa_smem)
        sSFB = storage.sSFB.get_tensor(sfb_smem)
        sLA = storage.sLA.get_tensor(la_smem.outer, swizzle=la_smem.inner)
        sLU = storage.sLU.get_tensor(lu_smem.outer, swizzle=lu_smem.inner)

        # Multicast masks of the pair: A-like operands along mode 2, B-like along mode 1.
        mask_a = cpasync.create_tma_multicast_mask(cluster_layout_vmnk, coord_vmnk, mcast_mode=2)
        mask_b = cpasync.create_tma_multicast_mask(cluster_layout_vmnk, coord_vmnk, mcast_mode=1)
        mask_sfb = cpasync.create_tma_multicast_mask(cluster_layout_sfb_vmnk, coord_sfb_vmnk, mcast_mode=1)

        # Global tiles and their TMA partitions.
        tile_mk = cute.slice_(self.mma_tiler, (None, 0, None))
        tile_nk = cute.slice_(self.mma_tiler, (0, None, None))
        gA = cute.local_tile(mA, tile_mk, (None, None, None))
        gB = cute.local_tile(mB, tile_nk, (None, None, None))
        gSFA = cute.local_tile(mSFA, tile_mk, (None, None, None))
        gSFB = cute.local_tile(mSFB, cute.slice_(self.mma_tiler_sfb, (0, None, None)), (None, None, None))
        gLA = cute.local_tile(mLA, cute.slice_(self.lora_tiler, (None, 0, None)), (None, None, None))
        gLU = cute.local_tile(mLU, cute.slice_(self.lora_tiler, (0, None, None)), (None, None, None))
        gC = cute.local_tile(mC, cute.slice_(self.mma_tiler, (None, None, 0)), (None, None, None))
        k_tile_cnt = cute.size(gA, mode=[3])

        thr_mma = mma.get_slice(mma_coord_v)
        thr_lora = lora_mma.get_slice(mma_coord_v)
        tCgC = thr_mma.partition_C(gC)
        a_ctas = cute.make_layout(cute.slice_(cluster_layout_vmnk, (0, 0, None, 0)).shape)
        b_ctas = cute.make_layout(cute.slice_(cluster_layout_vmnk, (0, None, 0, 0)).shape)
        sfb_ctas = cute.make_layout(cute.slice_(cluster_layout_sfb_vmnk, (0, None, 0, 0)).shape)

        def tma_split(atom, cta_coord, ctas, smem, gmem, drop_zeros=False):
            s, g = cpasync.tma_partition(atom, cta_coord, ctas, cute.group_modes(smem, 0, 3),
                                         cute.group_modes(gmem, 0, 3))
            if cutlass.const_expr(drop_zeros):
                s, g = cute.filter_zeros(s), cute.filter_zeros(g)
            return s, g

        tAsA, tAgA = tma_split(tma_a, coord_vmnk[2], a_ctas, sA, thr_mma.partition_A(gA))
        tBsB, tBgB = tma_split(tma_b, coord_vmnk[1], b_ctas, sB, thr_mma.partition_B(gB))
        tAsSFA, tAgSFA = tma_split(tma_sfa, coord_vmnk[2], a_ctas, sSFA, thr_mma.partition_A(gSFA), True)
        tBsSFB, tBgSFB = tma_split(tma_sfb, coord_sfb_vmnk[1], sfb_ctas, sSFB,
                                   mma_sfb.get_slice(mma_coord_v).partition_B(gSFB), True)
        tAsLA, tAgLA = tma_split(tma_la, coord_vmnk[2], a_ctas, sLA, thr_lora.partition_A(gLA))
        tBsLU, tBgLU = tma_split(tma_lu, coord_vmnk[1], b_ctas, sLU, thr_lora.partition_B(gLU))

        tCrA, tCrB = mma.make_fragment_A(sA), mma.make_fragment_B(sB)
        tCrLA, tCrLU = lora_mma.make_fragment_A(sLA), lora_mma.make_fragment_B(sLU)
        acc_layout = mma.make_fragment_C(
            cute.append(mma.partition_shape_C(self.mma_tiler[:2]), self.num_acc_stage)).layout
        lora_acc_layout = lora_mma.make_fragment_C(
            cute.append(lora_mma.partition_shape_C(self.mma_tiler[:2]), self.num_acc_stage)).layout

        pipeline_init_wait(cluster_shape_mn=self.cluster_shape_mn)

        if warp_idx == LOAD_WARP:
            self._load_warp(ab_pipe, lora_pipe, sched_params, k_tile_cnt, mask_a, mask_b, mask_sfb,
                            (tma_a, tAsA, tAgA), (tma_b, tBsB, tBgB), (tma_sfa, tAsSFA, tAgSFA),
                            (tma_sfb, tBsSFB, tBgSFB), (tma_la, tAsLA, tAgLA), (tma_lu, tBsLU, tBgLU))
        if warp_idx == MMA_WARP:
            tmem.wait_for_alloc()
            acc_tmem_ptr = tmem.retrieve_ptr(self.acc_dtype)
            self._mma_warp(mma, lora_mma, ab_pipe, lora_pipe, acc_pipe, sched_params, k_tile_cnt, is_leader_cta,
                           acc_tmem_ptr, acc_layout, lora_acc_layout, tCrA, tCrB, tCrLA, tCrLU,
                           sSFA, sSFB, sfa_smem, sfb_smem)
        if warp_idx < MMA_WARP:
            tmem.allocate(self.num_tmem_alloc_cols)
            tmem.wait_for_alloc()
            acc_tmem_ptr = tmem.retrieve_ptr(self.acc_dtype)
            self._epilogue_warps(acc_pipe, sched_params, tidx, warp_idx, acc_tmem_ptr, acc_layout, tCgC,
                                 epi_tile, sC, tma_c, wcscale, bias)
            tmem.relinquish_alloc_permit()
            self.epilogue_barrier.arrive_and_wait()
            tmem.free(acc_tmem_ptr)

    @cute.jit
    def _load_warp(self, ab_pipe, lora_pipe, sched_params, k_tile_cnt, mask_a, mask_b, mask_sfb,
                   a_op, b_op, sfa_op, sfb_op, la_op, lu_op):
        sched = utils.StaticPersistentTileScheduler.create(sched_params, cute.arch.block_idx(),
                                                           cute.arch.grid_dim())
        work = sched.initial_work_tile_info()
        ab_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.num_ab_stage)
        lora_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.num_lora_stage)
        while work.is_valid_tile:
            tile = work.tile_idx
            m_tile, n_tile, l_tile = tile[0] // CTA_GROUP, tile[1], tile[2]
            # LoRA prolog of this tile: LA rows (split along M) and LU half (split along N).
            lora_pipe.producer_acquire(lora_state)
            lora_bar = lora_pipe.producer_get_barrier(lora_state)
            cute.copy(la_op[0], la_op[2][(None, m_tile, 0, l_tile)], la_op[1][(None, lora_state.index)],
                      tma_bar_ptr=lora_bar, mcast_mask=mask_a)
            cute.copy(lu_op[0], lu_op[2][(None, n_tile, 0, l_tile)], lu_op[1][(None, lora_state.index)],
                      tma_bar_ptr=lora_bar, mcast_mask=mask_b)
            lora_state.advance()
            # Main loop: A, B, SFA, SFB of one K tile on one barrier.
            for k_tile in cutlass.range(0, k_tile_cnt, 1, unroll=1):
                ab_pipe.producer_acquire(ab_state)
                bar = ab_pipe.producer_get_barrier(ab_state)
                for (atom, smem, gmem), tile_coord, mask in ((a_op, m_tile, mask_a), (b_op, n_tile, mask_b),
                                                             (sfa_op, m_tile, mask_a), (sfb_op, n_tile, mask_sfb)):
                    cute.copy(atom, gmem[(None, tile_coord, k_tile, l_tile)], smem[(None, ab_state.index)],
                              tma_bar_ptr=bar, mcast_mask=mask)
                ab_state.advance()
            sched.advance_to_next_work()
            work = sched.get_current_work()
        if cutlass.const_expr(not self.bugs.no_producer_tail):
            ab_pipe.producer_tail(ab_state)
            lora_pipe.producer_tail(lora_state)

    @cute.jit
    def _mma_warp(self, mma, lora_mma, ab_pipe, lora_pipe, acc_pipe, sched_params, k_tile_cnt, is_leader_cta,
                  acc_tmem_ptr, acc_layout, lora_acc_layout, tCrA, tCrB, tCrLA, tCrLU,
                  sSFA, sSFB, sfa_smem, sfb_smem):
        tCtAcc = cute.make_tensor(acc_tmem_ptr, acc_layout)[(None, None, None, 0)]
        # The LoRA MMA's accumulator is the same TMEM columns as the main one (the beta-interleave).
        tCtAccLora = cute.make_tensor(acc_tmem_ptr, lora_acc_layout)[(None, None, None, 0)]
        # Scale factors live in TMEM after the accumulator columns (copied there per K tile).
        sfa_ptr = cute.recast_ptr(acc_tmem_ptr + self.num_acc_tmem_cols, dtype=self.sf_dtype)
        tCtSFA = cute.make_tensor(sfa_ptr, blockscaled_utils.make_tmem_layout_sfa(
            mma, self.mma_tiler, SF_VEC, cute.slice_(sfa_smem, (None, None, None, 0))))
        sfb_ptr = cute.recast_ptr(acc_tmem_ptr + self.num_acc_tmem_cols + self.num_sfa_tmem_cols,
                                  dtype=self.sf_dtype)
        tCtSFB = cute.make_tensor(sfb_ptr, blockscaled_utils.make_tmem_layout_sfb(
            mma, self.mma_tiler, SF_VEC, cute.slice_(sfb_smem, (None, None, None, 0))))
        s2t_sfa, tCsSFA_s2t, tCtSFA_s2t = self._s2t_copy(sSFA, tCtSFA)
        s2t_sfb, tCsSFB_s2t, tCtSFB_s2t = self._s2t_copy(sSFB, tCtSFB)

        sched = utils.StaticPersistentTileScheduler.create(sched_params, cute.arch.block_idx(),
                                                           cute.arch.grid_dim())
        work = sched.initial_work_tile_info()
        ab_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.num_ab_stage)
        lora_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.num_lora_stage)
        acc_start_phase = 0 if self.bugs.acc_producer_phase_zero else 1    # bug 1 when 0
        acc_state = pipeline.PipelineState(self.num_acc_stage, cutlass.Int32(0), cutlass.Int32(0),
                                           cutlass.Int32(acc_start_phase))
        num_kblocks = cute.size(tCrA, mode=[2])
        lora_mma.set(tcgen05.Field.ACCUMULATE, True)
        while work.is_valid_tile:
            if is_leader_cta:
                acc_pipe.producer_acquire(acc_state)
            for k_tile in range(k_tile_cnt):
                if is_leader_cta:
                    ab_pipe.consumer_wait(ab_state)
                    s2t_stage = (None, None, None, None, ab_state.index)
                    cute.copy(s2t_sfa, tCsSFA_s2t[s2t_stage], tCtSFA_s2t)
                    cute.copy(s2t_sfb, tCsSFB_s2t[s2t_stage], tCtSFB_s2t)
                    for kb in cutlass.range(num_kblocks, unroll_full=True):
                        mma.set(tcgen05.Field.ACCUMULATE, (k_tile != 0) | (kb != 0))
                        kb_coord = (None, None, kb, ab_state.index)
                        cute.gemm(mma, tCtAcc, [tCrA[kb_coord], tCtSFA[(None, None, kb)]],
                                  [tCrB[kb_coord], tCtSFB[(None, None, kb)]], tCtAcc)
                        # beta-interleave: LoRA atom r after main atom r * stride.
                        atom = k_tile * num_kblocks + kb
                        if atom % self.lora_stride == 0:
                            lora_atom = atom // self.lora_stride
                            if lora_atom < self.lora_atoms:
                                if atom == 0:
                                    lora_pipe.consumer_wait(lora_state)   # lazily, before the first LoRA atom
                                lora_coord = (None, None, lora_atom, lora_state.index)
                                cute.gemm(lora_mma, tCtAccLora, tCrLA[lora_coord], tCrLU[lora_coord], tCtAccLora)
                    if cutlass.const_expr(self.bugs.consumer_releases_late):
                        # Bug 5: the stage before this one is released after this one's MMAs (to keep
                        # it alive one K tile longer), and nothing releases the very last stage once
                        # the loops end: the consumer exits without releasing every stage, so the
                        # load warps' producer_tail waits for it forever.
                        if (sched.num_tiles_executed > 0) | (k_tile > 0):
                            previous = (ab_state.index + self.num_ab_stage - 1) % self.num_ab_stage
                            ab_pipe.consumer_release(pipeline.PipelineState(
                                self.num_ab_stage, ab_state.count - 1, previous, ab_state.phase))
                    else:
                        ab_pipe.consumer_release(ab_state)
                ab_state.advance()
            if is_leader_cta:
                lora_pipe.consumer_release(lora_state)
                acc_pipe.producer_commit(acc_state)
            lora_state.advance()
            acc_state.advance()
            sched.advance_to_next_work()
            work = sched.get_current_work()
        if cutlass.const_expr(self.bugs.empty_commit_group):
            # Bug 6: a sentinel "end of work" tile committed with no MMA in its tcgen05.commit group.
            if is_leader_cta:
                acc_pipe.producer_acquire(acc_state)
                acc_pipe.producer_commit(acc_state)
            acc_state.advance()
        if cutlass.const_expr(not self.bugs.no_producer_tail):
            acc_pipe.producer_tail(acc_state)     # the epilogues of both CTAs drained the last tile

    @cute.jit
    def _epilogue_warps(self, acc_pipe, sched_params, tidx, warp_idx, acc_tmem_ptr, acc_layout, tCgC, epi_tile,
                        sC, tma_c, wcscale, bias):
        tAcc = cute.make_tensor(acc_tmem_ptr, acc_layout)
        # TMEM -> registers.
        t2r_atom = sm100_utils.get_tmem_load_op(self.cta_tile_shape_mnk, self.c_layout, self.c_dtype,
                                                self.acc_dtype, epi_tile, True)
        tAcc_epi = cute.flat_divide(tAcc[((None, None), 0, 0, None)], epi_tile)
        t2r = tcgen05.make_tmem_copy(t2r_atom, tAcc_epi[(None, None, 0, 0, 0)])
        thr_t2r = t2r.get_slice(tidx)
        tTR_tAcc = thr_t2r.partition_S(tAcc_epi)[(None, None, None, None, None, 0)]
        tTR_tAcc = cute.group_modes(tTR_tAcc, 3, cute.rank(tTR_tAcc))
        gC_epi = cute.flat_divide(tCgC[((None, None), 0, 0, None, None, None)], epi_tile)
        tTR_rAcc = cute.make_rmem_tensor(thr_t2r.partition_D(gC_epi)[(None, None, None, 0, 0, 0, 0, 0)].shape,
                                         self.acc_dtype)
        # The (row, column) inside this CTA's tile of each accumulator register: for wcscale / bias.
        cC = cute.flat_divide(cute.make_identity_tensor(self.cta_tile_shape_mnk[:2]), epi_tile)
        tTR_cC = thr_t2r.partition_D(cC)
        tTR_cC = cute.group_modes(tTR_cC, 3, cute.rank(tTR_cC))
        # Registers -> shared memory -> TMA store.
        r2s = cute.make_tiled_copy_D(
            sm100_utils.get_smem_store_op(self.c_layout, self.c_dtype, self.acc_dtype, t2r), t2r)
        tRS_sC = r2s.get_slice(tidx).partition_D(sC)
        tRS_rC = r2s.retile(cute.make_rmem_tensor(tTR_rAcc.shape, self.c_dtype))
        bSG_sC, bSG_gC_all = cpasync.tma_partition(tma_c, 0, cute.make_layout(1), cute.group_modes(sC, 0, 2),
                                                   cute.group_modes(gC_epi, 0, 2))
        c_pipe = pipeline.PipelineTmaStore.create(
            num_stages=self.num_c_stage,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32 * len(EPILOGUE_WARPS)))

        sched = utils.StaticPersistentTileScheduler.create(sched_params, cute.arch.block_idx(),
                                                           cute.arch.grid_dim())
        work = sched.initial_work_tile_info()
        acc_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.num_acc_stage)
        subtile_cnt = cute.size(tTR_tAcc.shape, mode=[3])
        while work.is_valid_tile:
            tile = work.tile_idx
            m_tile, n_tile, l_tile = tile[0] // CTA_GROUP, tile[1], tile[2]
            bSG_gC = bSG_gC_all[(None, None, None, m_tile, n_tile, l_tile)]
            bSG_gC = cute.group_modes(bSG_gC, 1, cute.rank(bSG_gC))
            n_base = n_tile * TILE_N
            acc_pipe.consumer_wait(acc_state)
            for sub in cutlass.range(subtile_cnt):
                cute.copy(t2r, tTR_tAcc[(None, None, None, sub)], tTR_rAcc)
                coords = tTR_cC[(None, None, None, sub)]
                for i in cutlass.range(cute.size(tTR_rAcc), unroll_full=True):
                    col = n_base + coords[i][1]
                    tTR_rAcc[i] = (tTR_rAcc[i] * wcscale[col].to(self.acc_dtype)
                                   + bias[col].to(self.acc_dtype))
                tRS_rC.store(r2s.retile(tTR_rAcc).load().to(self.c_dtype))
                c_buffer = (sched.num_tiles_executed * subtile_cnt + sub) % self.num_c_stage
                cute.copy(r2s, tRS_rC, tRS_sC[(None, None, None, c_buffer)])
                cute.arch.fence_proxy("async.shared", space="cta")
                self.epilogue_barrier.arrive_and_wait()
                if warp_idx == EPILOGUE_WARPS[0]:
                    cute.copy(tma_c, bSG_sC[(None, c_buffer)], bSG_gC[(None, sub)])
                    c_pipe.producer_commit()
                    c_pipe.producer_acquire()
                self.epilogue_barrier.arrive_and_wait()
            acc_pipe.consumer_release(acc_state)
            acc_state.advance()
            sched.advance_to_next_work()
            work = sched.get_current_work()
        if cutlass.const_expr(self.bugs.empty_commit_group):
            acc_pipe.consumer_wait(acc_state)       # the sentinel tile
            acc_pipe.consumer_release(acc_state)
        c_pipe.producer_tail()

    def _s2t_copy(self, sSF, tSF):
        """Shared -> TMEM copy of one stage's scale factors (tcgen05.cp 4x32x128b)."""
        sSF_compact, tSF_compact = cute.filter_zeros(sSF), cute.filter_zeros(tSF)
        s2t = tcgen05.make_s2t_copy(cute.make_copy_atom(tcgen05.Cp4x32x128bOp(self.cta_group), self.sf_dtype),
                                    tSF_compact)
        thr = s2t.get_slice(0)
        return s2t, tcgen05.get_s2t_smem_desc_tensor(s2t, thr.partition_S(sSF_compact)), thr.partition_D(tSF_compact)
