#!/usr/bin/env python3
"""Fit the model's per-copy TMA constants to case 1 of the native probe (kernels/interp/tmaprobe.cu).

  tools/fit_tma_probe.py PIPESIM TMAPROBE_OUTPUT

Runs scenarios/calibration/tma_queue.scn on the model for every (bytes, depth) row the probe printed,
over a grid of (tma_latency_ns, sm_copy_bytes_per_ns, tma_copy_min_ns) set with `pipesim check
--timing`, and prints the best point by mean |model/device - 1| of the first and the last copy's
wait end, then every row at that point. The probe times from just before the first issue; the model
from the kernel's start (its first issue comes a few ns later), so both read the same interval.
"""
import itertools, json, re, subprocess, sys, tempfile, os

def rows(path):
    out = []
    for line in open(path):
        if line.startswith('== 2'):
            break
        m = re.match(r'\s+(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)', line)
        if m:
            out.append((int(m[1]), int(m[2]), float(m[4]), float(m[5])))
    return out

def model(pipesim, b, d, timing, trace):
    args = [pipesim, 'check', '-D', f'BYTES={b}', '-D', f'DEPTH={d}', '--trace', trace,
            'scenarios/calibration/tma_queue.scn']
    for k, v in timing.items():
        args += ['--timing', f'{k}={v}']
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
    ev = json.load(open(trace))
    ev = ev['traceEvents'] if isinstance(ev, dict) else ev
    ends = sorted(e['ts'] + e['dur'] for e in ev if e.get('ph') == 'X' and e['name'].startswith('wait ab.full'))
    return ends[0] * 1e3, ends[-1] * 1e3

def main():
    pipesim, probe = sys.argv[1], sys.argv[2]
    data = rows(probe)
    trace = os.path.join(tempfile.mkdtemp(), 't.json')
    best = None
    for t0, r, c in itertools.product(range(320, 461, 20), (150, 180, 210, 240, 300), (50, 60, 70, 80)):
        timing = {'tma_latency_ns': t0, 'sm_copy_bytes_per_ns': r, 'tma_copy_min_ns': c}
        err = 0.0
        for b, d, first, last in data:
            f, l = model(pipesim, b, d, timing, trace)
            err += abs(f / first - 1) + abs(l / last - 1)
        err /= 2 * len(data)
        if best is None or err < best[0]:
            best = (err, timing)
    err, timing = best
    print(f'best: {timing}  mean |model/device - 1| = {err:.4f} over {len(data)} rows')
    print(f'{"bytes":>8} {"depth":>6} {"first model/device":>22} {"last model/device":>22}')
    for b, d, first, last in data:
        f, l = model(pipesim, b, d, timing, trace)
        print(f'{b:8d} {d:6d} {f:9.0f} / {first:6.0f} {100*(f/first-1):+5.1f}% {l:9.0f} / {last:6.0f} {100*(l/last-1):+5.1f}%')

main()
