"""Configuration of the SVDQuant W4A4 "v2_fa4" kernel: production shapes, the seed's bugs as flags,
and the shared-memory stage solver (pure Python, no CuTe DSL import: the launch writer and the
tests use it too).

Shapes and solver follow /work/shared/spec/seed-kernels.md §1 and scenarios/svdquant/*.scn.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

SM_COUNT = 148                  # B200
SMEM_CAPACITY = 232448          # opt-in shared memory per block on sm_100a (CUTLASS's stage solvers)
MBAR_HELPER_BYTES = 1024        # the solver's allowance for barriers, the TMEM pointer, alignment
TILE_M, TILE_N = 256, 128       # per CTA pair (cta_group::2); each CTA holds 128 x 128
ATOMS_PER_K_TILE = 4            # mxf4nvf4 atoms of K = 64 per stage: K per stage 256
SF_VEC = 16                     # one e4m3 scale per 16 K elements
LORA_ATOM_K = 16                # f16 tcgen05.mma K
CTA_GROUP = 2


@dataclass(frozen=True)
class Shape:
    m: int
    k: int
    n: int
    r: int

    @property
    def name(self) -> str:
        return f"{self.m}x{self.k}x{self.n}_r{self.r}"


# (M, K, N, R): the file names of scenarios/svdquant/*.scn.
PRODUCTION_SHAPES = (
    Shape(4352, 3840, 3072, 128),
    Shape(4352, 10240, 3072, 32),
    Shape(4352, 15360, 3840, 128),
    Shape(4352, 3840, 15360, 128),
)


@dataclass(frozen=True)
class SeedBugs:
    """The places where the seed's bugs live (bug-catalog.md numbers); all False is the shipped kernel.

    A mutant is one flag set, e.g. SeedBugs(acc_producer_phase_zero=True)."""
    acc_producer_phase_zero: bool = False   # 1: the accumulator producer starts at phase 0, not 1
    follower_expect_tx: bool = False        # 2: the follower CTA also arms the leader's full barrier
    tx_without_cta_group: bool = False      # 3: ab / lora tx counts per CTA, not x cta_group
    no_producer_tail: bool = False          # 5: no ab / lora / acc producer_tail before exit
    consumer_releases_late: bool = False    # 5: each A/B stage released one K tile late, the last never
    empty_commit_group: bool = False        # 6: an acc commit with no MMA in its group (a sentinel tile)
    lu_estimate_per_pair: bool = False      # 8: LoRA-up SMEM estimate not divided by cta_group

    @staticmethod
    def names() -> list[str]:
        return [f.name for f in dataclasses.fields(SeedBugs)]

    @staticmethod
    def parse(text: str) -> "SeedBugs":
        """'' or 'none' -> no bug; else comma-separated flag names."""
        names = [t.strip() for t in text.split(",") if t.strip() and t.strip() != "none"]
        unknown = [n for n in names if n not in SeedBugs.names()]
        if unknown:
            raise ValueError(f"unknown seed bug {unknown[0]!r}; known: {', '.join(SeedBugs.names())}")
        return SeedBugs(**{n: True for n in names})

    def tag(self) -> str:
        on = [n for n in self.names() if getattr(self, n)]
        return "+".join(on) if on else "fixed"


@dataclass(frozen=True)
class Stages:
    num_ab_stage: int
    num_c_stage: int
    num_lora_stage: int
    lora_bytes: int             # per CTA, all LoRA stages, as the solver estimated it


def per_cta_bytes(shape: Shape) -> dict[str, int]:
    """Per-CTA shared-memory bytes of one stage of each buffer (what the TMA copies bring)."""
    cta_m = TILE_M // CTA_GROUP
    k_stage = 64 * ATOMS_PER_K_TILE
    return {
        "A": cta_m * k_stage // 2,                          # e2m1: two per byte
        "B": (TILE_N // CTA_GROUP) * k_stage // 2,          # the 2-CTA atom splits B along N
        "SFA": 128 * (k_stage // SF_VEC),                   # padded to 128 x 4 atoms
        "SFB": 128 * (k_stage // SF_VEC),
        "LA": cta_m * shape.r * 2,                          # f16, split along M
        "LU": (TILE_N // CTA_GROUP) * shape.r * 2,          # f16, split along N
        "C": 128 * 32 * 2,                                  # one 128 x 32 f16 epilogue sub-tile
        "WCBIAS": 2 * TILE_N * 2,                           # wcscale + bias, f16
    }


def solve_stages(shape: Shape, bugs: SeedBugs, num_lora_stage: int = 2) -> Stages:
    """The seed's stage solver (seed-kernels.md §1): LoRA and wcscale/bias bytes come off the
    capacity, A/B/SF stages fill what is left after the C staging buffers, C takes the rest."""
    b = per_cta_bytes(shape)
    lu = b["LU"] * (CTA_GROUP if bugs.lu_estimate_per_pair else 1)
    lora = (b["LA"] + lu) * num_lora_stage
    cap = SMEM_CAPACITY - lora - b["WCBIAS"]
    ab = b["A"] + b["B"] + b["SFA"] + b["SFB"]
    num_ab = (cap - (MBAR_HELPER_BYTES + 2 * b["C"])) // ab
    num_c = 2 + (cap - ab * num_ab - MBAR_HELPER_BYTES - 2 * b["C"]) // b["C"]
    if num_ab < 2:
        raise ValueError(f"{shape.name}: {num_ab} A/B stages fit in shared memory; the kernel needs 2")
    return Stages(num_ab, num_c, num_lora_stage, lora)
