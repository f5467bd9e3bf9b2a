"""What `pipesim check` must say about each compiled v2_fa4 kernel: the fixed kernel at the four
production shapes, and each seed bug (config.SeedBugs) alone at 4352x3840x3072 r128.

    python3 check_verdict.py PIPESIM DIR CASE        CASE: fixed_<shape> or a SeedBugs flag

DIR holds what `compile.py --out DIR --mutants` wrote. A report must name the cause and the Python
statement (kernel_v2_fa4.py:LINE, found here by the statement's text, so edits above it do not break
the test). Exit 0 when the verdict is right, 1 with the evidence when not, 2 on bad usage.
Pure Python (no cutlass): it runs with the system python3.
"""
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from config import PRODUCTION_SHAPES, SeedBugs, Shape, per_cta_bytes, solve_stages  # noqa: E402

KERNEL = os.path.join(HERE, "kernel_v2_fa4.py")
MUTANT_SHAPE = PRODUCTION_SHAPES[0]


def source_line(function: str, statement: str) -> int:
    """The line of the first `statement` inside `def function` of kernel_v2_fa4.py."""
    lines = open(KERNEL).read().splitlines()
    start = next(i for i, t in enumerate(lines) if re.match(rf"\s*def {function}\(", t))
    return next(i + 1 for i in range(start, len(lines)) if lines[i].strip().startswith(statement))


def at(function: str, statement: str) -> str:
    return f"kernel_v2_fa4.py:{source_line(function, statement)}:"


class Mismatch(Exception):
    pass


def expect(cond: bool, what: str) -> None:
    if not cond:
        raise Mismatch(what)


def run(pipesim: str, stem: str, *extra: str) -> tuple[int, str]:
    p = subprocess.run([pipesim, "check", stem + ".ptx", "--launch", stem + ".launch.json", "--max-seconds", "0", *extra],
                       capture_output=True, text=True, timeout=600)
    return p.returncode, p.stdout + p.stderr


def predicted_us(report: str) -> float:
    m = re.search(r"predicted duration: ([\d.]+) us", report)
    expect(m is not None, "no predicted duration")
    return float(m.group(1))


def ab_stage_bytes(shape: Shape) -> int:
    b = per_cta_bytes(shape)
    return b["A"] + b["B"] + b["SFA"] + b["SFB"]


def budget_ring(report: str, stage_bytes: int) -> tuple[int, int]:
    """(stages, more that fit) of the TMA ring with `stage_bytes` per CTA in the report's budget section."""
    m = re.search(rf"^  TMA ring [^\n]*?: (\d+) stages? of {stage_bytes} B per CTA[^\n]*?(?:; (\d+) more fits?)?$", report, re.M)
    expect(m is not None, f"the budget section has no TMA ring of {stage_bytes} B per stage")
    return int(m.group(1)), int(m.group(2) or 0)


def case_fixed(pipesim: str, out: str, shape: Shape) -> str:
    rc, report = run(pipesim, os.path.join(out, f"v2_fa4_{shape.name}"))
    expect(rc == 0 and " ok after " in report, "the fixed kernel is not ok")
    # The budget from the PTX run: the A/B ring has the solver's stages and no stage more fits.
    stages, more = budget_ring(report, ab_stage_bytes(shape))
    want = solve_stages(shape, SeedBugs()).num_ab_stage
    expect(stages == want and more == 0 and "[stages_lost]" not in report,
           f"the PTX budget says {stages} A/B stages (+{more}), the solver {want}, or reports stages_lost")
    return f"ok, {predicted_us(report)} us, {stages} A/B stages, none lost"


def expect_hang_at(rc: int, report: str, function: str, statement: str, warps: str, what: str) -> None:
    """A hang whose waiting warps (`warps`, a regex of the report's "warp N in CTAs ..." text) stand
    at `statement` of `function`."""
    expect(rc == 1 and "hang:" in report, "no hang")
    wait = re.search(at(function, statement) + r"[^\n]*? " + warps + r" waits on mbarrier", report)
    expect(wait is not None, f"the hang does not name {what} at {statement}")


def case_mutant(pipesim: str, out: str, flag: str) -> str:
    stem = os.path.join(out, f"v2_fa4_{MUTANT_SHAPE.name}_{flag}")
    rc, report = run(pipesim, stem)
    if flag == "acc_producer_phase_zero":
        # Bug 1: the MMA warp's first acc.empty wait is for a phase that never completes.
        expect_hang_at(rc, report, "_mma_warp", "acc_pipe.producer_acquire(acc_state)", r"warp 4 in CTAs 0, 2, .*",
                       "the MMA warp")
        return "hang at the MMA warp's acc.empty wait"
    if flag == "follower_expect_tx":
        # Bug 2: the follower's arrive.expect_tx is a second arrival on the leader's count-1 barrier.
        m = re.search(at("_load_warp", "ab_pipe.producer_acquire(ab_state)")
                      + r"[^\n]*? error: \[pending_underflow\][^\n]*\n  in CTA (\d+) warp 5", report)
        expect(rc == 1 and m is not None, "no pending_underflow at the load warp's ab_pipe.producer_acquire")
        expect(int(m.group(1)) % 2 == 1, f"the underflow is in CTA {m.group(1)}, not a follower (odd rank)")
        return f"pending_underflow from follower CTA {m.group(1)}"
    if flag == "tx_without_cta_group":
        # Bug 3: the leader expects one CTA's bytes; the peer's copies land after the phase completed.
        m = re.search(r"kernel_v2_fa4\.py:(\d+):[^\n]*? error: \[early_completion\]", report)
        expect(rc == 1 and m is not None, "no early_completion")
        load = range(source_line("_load_warp", "while work.is_valid_tile"), source_line("_mma_warp", "tCtAcc ="))
        expect(int(m.group(1)) in load, f"early_completion at line {m.group(1)}, not a load warp copy")
        return f"early_completion at kernel_v2_fa4.py:{m.group(1)}"
    if flag == "no_producer_tail":
        # Not bug-catalog 5's story (a consumer that exits without releasing every stage, so the
        # tail waits forever): here the tails are simply gone. That is harmless in this kernel: the
        # 2-CTA TMEM dealloc handshake (tmem.free) keeps each CTA alive until its peer's epilogue
        # has made its last remote arrival, so no arrival reaches an exited CTA.
        expect(rc == 0 and " ok after " in report, "not ok")
        return f"ok, {predicted_us(report)} us (no tail needed: the dealloc handshake)"
    if flag == "consumer_releases_late":
        # Bug 5 (bug-catalog): the MMA warp releases each A/B stage one K tile late and never the last,
        # so the consumer exits without releasing every stage: the load warps of both CTAs of a pair
        # (the release is a multicast commit) wait forever in ab_pipe.producer_tail.
        expect_hang_at(rc, report, "_load_warp", "ab_pipe.producer_tail(ab_state)", r"warp 5 in CTAs 0-\d+",
                       "both CTAs' load warps")
        return "hang at the load warps' ab_pipe.producer_tail"
    if flag == "empty_commit_group":
        # Bug 6: the sentinel commit has no MMA in its group; under empty-commit-local only the
        # leader's acc.full hears it, so the follower's epilogue waits forever.
        commit = at("_mma_warp", "acc_pipe.producer_commit(acc_state)")
        sentinel_commit = source_line("_mma_warp", "# Bug 6")
        expect(rc == 1 and re.search(r"kernel_v2_fa4\.py:(\d+):[^\n]*? warning: \[empty_commit\]", report) is not None,
               "no empty_commit warning")
        line = int(re.search(r"kernel_v2_fa4\.py:(\d+):[^\n]*? warning: \[empty_commit\]", report).group(1))
        expect(line > sentinel_commit, f"the empty commit is at line {line}, not the sentinel's ({commit})")
        expect(re.search(at("_epilogue_warps", "acc_pipe.consumer_wait(acc_state)       # the sentinel")
                         + r"[^\n]*? warps 0-3 in CTAs 1, 3, ", report) is not None,
               "the hang does not name the followers' sentinel wait")
        rc_off, report_off = run(pipesim, stem, "--assume", "empty-commit-local=off")
        expect(rc_off == 0, "with empty-commit-local=off the sentinel commit should reach both CTAs (ok)")
        return "hang under empty-commit-local (followers at the sentinel wait), ok with it off"
    if flag == "lu_estimate_per_pair":
        # Bug 8: runs, with fewer A/B stages. The kernel's solver against pipesim budget's.
        fixed = solve_stages(MUTANT_SHAPE, SeedBugs())
        bug = solve_stages(MUTANT_SHAPE, SeedBugs(lu_estimate_per_pair=True))
        expect((fixed.num_ab_stage, fixed.num_c_stage, bug.num_ab_stage, bug.num_c_stage) == (4, 2, 2, 5),
               f"stages {fixed} -> {bug}, the seed says (4, 2) -> (2, 5)")
        lu_hand = per_cta_bytes(MUTANT_SHAPE)["LU"] * 2
        b = subprocess.run([pipesim, "budget", "--arch", "sm_100a", "--tile", "256x128", "--cluster", "2",
                            "--ab", "nvfp4", "--c", "f16", "--sf", "e4m3", "--sf-vec", "16",
                            "--lora-rank", str(MUTANT_SHAPE.r), "--lora-stages", "2", "--epilogue-vectors", "2",
                            "--acc-stages", "1", "--hand", f"LU={lu_hand}"], capture_output=True, text=True)
        expect(f"num_ab_stage {bug.num_ab_stage}, num_c_stage {bug.num_c_stage}," in b.stdout
               and f"num_ab_stage {bug.num_ab_stage} → {fixed.num_ab_stage}: 2 stages lost" in b.stdout + b.stderr,
               "pipesim budget does not say 4 -> 2 A/B stages:\n" + b.stdout + b.stderr)
        expect(rc == 0, "the mutant does not run to the end")
        # Found from the kernel's own PTX run (docs/ptx.md, "Budget from the run"): the A/B ring (its
        # barriers initialised by ab_pipe's create) keeps 2 stages with room for one more, and the stage
        # solver on the measured footprints gives it the 4 the fixed kernel has (5 store buffers -> 2).
        lost = re.search(at("kernel", "ab_pipe = pipeline.PipelineTmaUmma.create(")
                         + rf"[^\n]*? warning: \[stages_lost\] ring [^\n]*? has {bug.num_ab_stage} stages of "
                         rf"{ab_stage_bytes(MUTANT_SHAPE)} B; (\d+) more fits? in the (\d+) B left", report)
        expect(lost is not None, "no stages_lost at ab_pipe's PipelineTmaUmma.create with the A/B ring's stages and bytes")
        more, left = int(lost.group(1)), int(lost.group(2))
        solver = (f"num_ab_stage {bug.num_ab_stage} → {fixed.num_ab_stage}: {fixed.num_ab_stage - bug.num_ab_stage} stages lost; "
                  f"num_c_stage {bug.num_c_stage} → {fixed.num_c_stage}")
        expect(more >= 1 and solver in report, f"the stages_lost note does not say '{solver}'")
        _, report_fixed = run(pipesim, os.path.join(out, f"v2_fa4_{MUTANT_SHAPE.name}"))
        expect("[stages_lost]" not in report_fixed, "the fixed kernel reports stages_lost")
        slow, fast = predicted_us(report), predicted_us(report_fixed)
        expect(slow > 1.3 * fast, f"{slow} us with 2 stages vs {fast} us with 4: not slower")
        return (f"ok with stages ({bug.num_ab_stage}, {bug.num_c_stage}) not (4, 2): {slow} us vs {fast} us; from the PTX: "
                f"stages_lost, {more} more in {left} B, solver {bug.num_ab_stage} → {fixed.num_ab_stage}")
    raise Mismatch(f"no expectation for {flag}")


def main(argv: list[str]) -> int:
    if len(argv) != 4:
        print(__doc__.split("\n\n")[1].strip(), file=sys.stderr)
        return 2
    pipesim, out, case = argv[1:]
    shapes = {f"fixed_{s.name}": s for s in PRODUCTION_SHAPES}
    if case not in shapes and case not in SeedBugs.names():
        print(f"check_verdict.py: unknown case {case!r}; known: {', '.join([*shapes, *SeedBugs.names()])}",
              file=sys.stderr)
        return 2
    try:
        said = case_fixed(pipesim, out, shapes[case]) if case in shapes else case_mutant(pipesim, out, case)
    except Mismatch as e:
        print(f"{case}: {e}", file=sys.stderr)
        return 1
    print(f"{case}: {said}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
