#!/usr/bin/env python3
"""Launch files for kernels/interp/gemmloads.cu (a GEMM's mainloop loads alone), one per entry and shape.

  tools/gemmloads_launch.py DIR MxNxK [MxNxK ...] [--sms 132] [--piece BYTES] [--poll 0|1|2]
                            [--stages 1..6] [--batch]

writes DIR/gemm_loads_{tensor,bulk}_MxNxK.launch.json: a persistent grid of one CTA per SM, one warp,
a ring of 32 KiB stages (six unless --stages); A is M x K and B is N x K fp16 (row-major, K contiguous). M and N must be multiples
of 128 and K of 64, the kernel's tile and k-block. --sms other than 132 (a grid of that many CTAs) adds
_gSMS to the names; --piece (the bulk entry's copy size, a divisor of the 16 KiB box) writes only the
bulk entry, named _pBYTES; --poll (how the warp waits for a stage, gemmloads.cu) adds _wPOLL; --stages
(fewer than six) _sN; --batch (wait for every stage, then issue them all again) _batch.
"""
import argparse
import json
from pathlib import Path

TILE, BLOCK_K, STAGES = 128, 64, 6
BOX = TILE * BLOCK_K * 2  # bytes of one fp16 box; a stage holds an A box and a B box
STAGE_BYTES = 2 * BOX


def shape(text):
    try:
        m, n, k = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not MxNxK")
    if m <= 0 or n <= 0 or k <= 0 or m % TILE or n % TILE or k % BLOCK_K:
        raise argparse.ArgumentTypeError(f"{text}: M and N must be positive multiples of {TILE}, K of {BLOCK_K}")
    return m, n, k


def launch(entry, m, n, k, sms, piece, poll, stages, batch):
    common = {"arch": "sm_90a", "grid": sms, "block": 32, "dynamic_smem": stages * STAGE_BYTES,
              "buffers": [{"name": "A", "bytes": m * k * 2}, {"name": "B", "bytes": n * k * 2}]}
    tiles = [{"index": 2, "u32": m // TILE}, {"index": 3, "u32": n // TILE}, {"index": 4, "u32": k // BLOCK_K}]
    if entry == "tensor":
        maps = [{"name": f"tma_{x.lower()}", "type": "f16", "dims": [k, rows], "strides": [k * 2],
                 "box": [BLOCK_K, TILE], "swizzle": "128b", "l2_promotion": "256b", "buffer": x}
                for x, rows in (("A", m), ("B", n))]
        return {"entry": "gemm_loads_tensor", **common, "tensormaps": maps,
                "params": [{"index": 0, "tensormap": "tma_a"}, {"index": 1, "tensormap": "tma_b"}, *tiles,
                           {"index": 5, "u32": poll}, {"index": 6, "u32": stages}, {"index": 7, "u32": batch}]}
    return {"entry": "gemm_loads_bulk", **common,
            "params": [{"index": 0, "pointer": "A"}, {"index": 1, "pointer": "B"}, *tiles, {"index": 5, "u32": piece},
                       {"index": 6, "u32": poll}, {"index": 7, "u32": stages}, {"index": 8, "u32": batch}]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("shapes", nargs="+", type=shape)
    ap.add_argument("--sms", type=int, default=132)
    ap.add_argument("--piece", type=int, default=BOX)
    ap.add_argument("--poll", type=int, default=0, choices=(0, 1, 2))
    ap.add_argument("--stages", type=int, default=STAGES, choices=range(1, STAGES + 1))
    ap.add_argument("--batch", action="store_true")
    args = ap.parse_args()
    if args.sms <= 0:
        ap.error("--sms must be positive")
    if args.piece <= 0 or args.piece % 16 or BOX % args.piece:
        ap.error(f"--piece must be a multiple of 16 that divides {BOX}")
    out = Path(args.dir)
    out.mkdir(parents=True, exist_ok=True)
    for m, n, k in args.shapes:
        suffix = (f"_g{args.sms}" if args.sms != 132 else "") + (f"_p{args.piece}" if args.piece != BOX else "") + \
            (f"_w{args.poll}" if args.poll else "") + (f"_s{args.stages}" if args.stages != STAGES else "") + \
            ("_batch" if args.batch else "")
        for entry in ("tensor", "bulk") if args.piece == BOX else ("bulk",):
            path = out / f"gemm_loads_{entry}_{m}x{n}x{k}{suffix}.launch.json"
            path.write_text(json.dumps(launch(entry, m, n, k, args.sms, args.piece, args.poll, args.stages, int(args.batch)), indent=1) + "\n")
            print(path)


if __name__ == "__main__":
    main()
