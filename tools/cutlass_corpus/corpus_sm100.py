"""The Blackwell (sm_100a) part of the CUTLASS acceptance corpus (README.md "Blackwell"): which
examples, kernels and shapes `corpus.py build BUILD_DIR --arch sm_100a` captures. Nothing here is
ever run: no Blackwell GPU exists for this project; the launch files describe a 148-SM B200."""

# (M, N, K): square, skinny N, K-heavy, small (as the Hopper corpus)
GEMM_SHAPES = [(4096, 4096, 4096), (4096, 128, 4096), (512, 512, 16384), (2048, 2048, 256)]

# FMHA forward (B, H, Q, K) at head dim 128, no GQA: a prefill, a long KV with a short Q, small
FMHA_SHAPES = [(1, 16, 4096, 4096), (1, 8, 256, 16384), (1, 16, 512, 512)]

# The seed's production shapes (seed 001: M x K x N = 4352 x {3840, 15360, 10240} x {3072, 15360, 3840}), as
# (M, N, K): its CUTLASS baseline (section 4.2) was timed there
SEED_SHAPES = [(4352, 3072, 3840), (4352, 15360, 3840), (4352, 3840, 15360), (4352, 3072, 10240)]

# FP4 GEMV (M, K, batch): the example's default 4096x2048, a K-heavy one, a batched small one
GEMV_SHAPES = [(4096, 2048, 1), (1024, 8192, 1), (512, 2048, 4)]

EXAMPLES = [
    {
        "name": "70_blackwell_gemm",
        "tu": "capture_70.cu",
        "source": "examples/70_blackwell_gemm/70_blackwell_fp16_gemm.cu",
        "shapes": GEMM_SHAPES,
    },
    {
        "name": "72_blackwell_narrow_precision_gemm",
        "tu": "capture_72.cu",
        "source": "examples/72_blackwell_narrow_precision_gemm/72b_blackwell_nvfp4_nvfp4_gemm.cu",
        "shapes": GEMM_SHAPES,
    },
    {
        # the seed's CUTLASS baseline: NVFP4 block-scaled at its three tiles (capture_72_seed.cu says why
        # this kernel); the headers only, example 72's source for the wheel's version
        "name": "72_blackwell_nvfp4_seed_tiles",
        "tu": "capture_72_seed.cu",
        "source": "examples/72_blackwell_narrow_precision_gemm/72a_blackwell_nvfp4_bf16_gemm.cu",
        "shapes": SEED_SHAPES,
    },
    {
        "name": "73_blackwell_gemm_preferred_cluster",
        "tu": "capture_73.cu",
        "source": "examples/73_blackwell_gemm_preferred_cluster/blackwell_gemm_preferred_cluster.cu",
        "shapes": GEMM_SHAPES,
    },
    {
        "name": "74_blackwell_gemm_streamk",
        "tu": "capture_74.cu",
        "source": "examples/74_blackwell_gemm_streamk/blackwell_gemm_streamk.cu",
        "shapes": GEMM_SHAPES,
    },
    {
        "name": "77_blackwell_fmha",
        "tu": "capture_77.cu",
        # the TU includes the example's headers, not its .cu (capture_77.cu says why)
        "source": "examples/77_blackwell_fmha/77_blackwell_fmha.cu",
        "extra_sources": ["examples/77_blackwell_fmha/device/fmha.hpp",
                          "examples/77_blackwell_fmha/kernel/sm100_fmha_fwd_kernel_tma_warpspecialized.hpp",
                          "examples/77_blackwell_fmha/collective/sm100_fmha_fwd_mainloop_tma_warpspecialized.hpp",
                          "examples/77_blackwell_fmha/collective/sm100_fmha_fwd_epilogue_tma_warpspecialized.hpp"],
        "include_dirs": ["examples/77_blackwell_fmha"],
        "shapes": FMHA_SHAPES,
        "shape_label": "b{}_h{}_q{}_k{}_d128",
    },
    {
        "name": "91_fp4_gemv",
        "tu": "capture_91.cu",
        "source": "examples/91_fp4_gemv/91_fp4_gemv.cu",
        "shapes": GEMV_SHAPES,
        "shape_label": "m{}_k{}_b{}",
    },
]

TARGET = {
    "arch": "sm_100a",
    "gencode": "arch=compute_100a,code=compute_100a",
    "sm_count": 148,                 # B200
    "smem_per_block_optin": 232448,  # sm_100: 227 KiB, as sm_90
    "examples": EXAMPLES,
    "manifest": "manifest_sm100.json",
    "census": "census_sm100.txt",
    "extra_headers": ["capture_sm100.hpp"],
    "mutants": {"spec": "mutants_sm100_spec", "dir": "mutants_sm100", "records": "mutants_sm100.json"},
}
