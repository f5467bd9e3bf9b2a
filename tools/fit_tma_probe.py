#!/usr/bin/env python3
"""Fit the model's TMA constants to the native probe (kernels/interp/tmaprobe.cu).

  tools/fit_tma_probe.py PIPESIM TMAPROBE_OUTPUT [NAME=VALUE ...]
                                # case 1: the per-copy constants (fitted, or judged at NAME=VALUE)
  tools/fit_tma_probe.py --ring PIPESIM TMAPROBE_OUTPUT [NAME=VALUE ...]
                                # case 2a: the loaded DRAM latency (fitted, or judged at NAME=VALUE)
  tools/fit_tma_probe.py --spread PIPESIM TMAPROBE_OUTPUT [NAME=VALUE ...]
                                # case 2a: dram_share_spread, from how far apart saturated rings' CTAs end
  tools/fit_tma_probe.py --dram PIPESIM TMAPROBE_OUTPUT START_OUTPUT [NAME=VALUE ...]
                                # the DRAM's constants together: rings (2a), bursts (2b) and cold starts
                                # (2c, `tmaprobe start`), over a grid, or judged at NAME=VALUE

Runs scenarios/calibration/tma_queue.scn on the model for every (bytes, depth) row the probe printed,
over a grid of (tma_latency_ns, sm_copy_bytes_per_ns, tma_copy_min_ns) set with `pipesim check
--timing`, and prints the best point by mean |model/device - 1| of the first and the last copy's
wait end, then every row at that point. The probe times from just before the first issue; the model
from the kernel's start (its first issue comes a few ns later), so both read the same interval.
"""
import itertools, json, re, subprocess, sys, tempfile, os

def fixed_timing(args):
    """NAME=VALUE arguments as a --timing dict."""
    return dict((k, float(v)) for k, v in (a.split('=') for a in args))

def section(path, header):
    """The lines of the probe output's section that starts with `header` ("== 2a", ...)."""
    on = False
    for line in open(path):
        if line.startswith('== '):
            on = line.startswith(header)
        elif on:
            yield line

def rows(path):
    """Case 1 rows (bytes, depth, first ns, last ns)."""
    out = []
    for line in section(path, '== 1'):
        m = re.match(r'\s+(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)', line)
        if m:
            out.append((int(m[1]), int(m[2]), float(m[4]), float(m[5])))
    return out

def check_args(pipesim, scenario, defs, timing, *extra):
    """`pipesim check` of a calibration scenario with -D NAME=VALUE for defs and --timing for timing."""
    args = [pipesim, 'check', *extra]
    for k, v in defs.items():
        args += ['-D', f'{k}={v}']
    for k, v in timing.items():
        args += ['--timing', f'{k}={v}']
    return args + [f'scenarios/calibration/{scenario}']

def predicted_ns(pipesim, scenario, defs, timing):
    out = subprocess.run(check_args(pipesim, scenario, defs, timing, '--json'), check=True, capture_output=True, text=True).stdout
    return json.loads(out)['results'][0]['predicted_ns']

def model(pipesim, b, d, timing, trace):
    args = check_args(pipesim, 'tma_queue.scn', {'BYTES': b, 'DEPTH': d}, timing, '--trace', trace)
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
    ev = json.load(open(trace))
    ev = ev['traceEvents'] if isinstance(ev, dict) else ev
    ends = sorted(e['ts'] + e['dur'] for e in ev if e.get('ph') == 'X' and e['name'].startswith('wait ab.full'))
    return ends[0] * 1e3, ends[-1] * 1e3

def main(pipesim, probe, fixed):
    data = rows(probe)
    trace = os.path.join(tempfile.mkdtemp(), 't.json')
    def score(timing):
        err = 0.0
        for b, d, first, last in data:
            f, l = model(pipesim, b, d, timing, trace)
            err += abs(f / first - 1) + abs(l / last - 1)
        return err / (2 * len(data))
    if fixed:
        timing = fixed_timing(fixed)
        err = score(timing)
    else:
        grid = itertools.product(range(320, 561, 20), (150, 180, 195, 210, 225, 240, 300), (50, 60, 70, 75, 80, 85, 90))
        err, timing = min(((score(t), t) for t in ({'tma_latency_ns': t0, 'sm_copy_bytes_per_ns': r, 'tma_copy_min_ns': c}
                                                     for t0, r, c in grid)), key=lambda x: x[0])
    print(f'{"judged at" if fixed else "best"}: {timing}  mean |model/device - 1| = {err:.4f} over {len(data)} rows')
    print(f'{"bytes":>8} {"depth":>6} {"first model/device":>22} {"last model/device":>22}')
    for b, d, first, last in data:
        f, l = model(pipesim, b, d, timing, trace)
        print(f'{b:8d} {d:6d} {f:9.0f} / {first:6.0f} {100*(f/first-1):+5.1f}% {l:9.0f} / {last:6.0f} {100*(l/last-1):+5.1f}%')

def ring_rows(path):
    """Case 2a rows (bytes, depth, ctas, GB/s, round trip ns). Rows whose round trip per copy in the ring is
    under 200 ns are left out: there the probe's own wait-and-reissue loop (~190 ns a copy) sets the pace."""
    out = []
    for line in section(path, '== 2a'):
        m = re.match(r'\s+(\d+)\s+(\d+)\s+(\d+)\s+\d+\s+([\d.]+)\s+([\d.]+)', line)
        if m and float(m[5]) / int(m[2]) >= 200:
            out.append((int(m[1]), int(m[2]), int(m[3]), float(m[4]), float(m[5])))
    return out

def ring_defs(b, d, ctas):
    """tma_ring.scn's parameters for a probe row: the probe streams 128 MiB per launch."""
    return {'BYTES': b, 'DEPTH': d, 'CTAS': ctas, 'PER_CTA': (128 << 20) // (ctas * b)}

def ring_model(pipesim, b, d, ctas, timing):
    defs = ring_defs(b, d, ctas)
    ns = predicted_ns(pipesim, 'tma_ring.scn', defs, timing)
    return ctas * defs['PER_CTA'] * b / ns  # GB/s

def ring_main(pipesim, probe, fixed):
    data = ring_rows(probe)
    def score(timing):
        return sum(abs(ring_model(pipesim, b, d, c, timing) / g - 1) for b, d, c, g, _ in data) / len(data)
    print(f'loaded latency off: mean |model/device - 1| of GB/s = {score({"dram_loaded_ns_per_mib": 0}):.4f}')
    if fixed:
        timing = fixed_timing(fixed)
        err = score(timing)
    else:
        grid = itertools.product((0.3, 0.4, 0.5, 0.6, 0.7, 0.8), (150, 200, 225, 250, 300), (500, 700, 1000, 1500, 1e9))
        err, timing = min(((score(t), t) for t in ({'dram_loaded_knee_mib': k, 'dram_loaded_ns_per_mib': s, 'dram_loaded_max_ns': c}
                                                     for k, s, c in grid)), key=lambda x: x[0])
    print(f'{"at" if fixed else "best"}: {timing}  mean |model/device - 1| of GB/s = {err:.4f} over {len(data)} rows')
    print(f'{"bytes":>8} {"depth":>6} {"SMs":>5} {"MiB in flight":>14} {"GB/s model / device":>24}')
    for b, d, c, g, _ in data:
        m = ring_model(pipesim, b, d, c, timing)
        print(f'{b:8d} {d:6d} {c:5d} {b * d * c / 2**20:14.2f} {m:11.0f} / {g:6.0f} {100*(m/g-1):+5.1f}%')
    burst_check(pipesim, probe, timing)

def burst_rows(path):
    """Case 2b rows (bytes, copies per CTA, ctas, last end ns)."""
    out = []
    for line in section(path, '== 2b'):
        m = re.match(r'\s+(\d+)\s+(\d+)\s+(\d+)\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+([\d.]+)', line)
        if m:
            out.append((int(m[1]), int(m[2]), int(m[3]), float(m[4])))
    return out

def burst_check(pipesim, probe, timing):
    """Held out: case 2b through scenarios/calibration/tma_burst.scn at the fitted point."""
    print(f'held out, case 2b bursts: {"bytes":>8} {"copies":>6} {"CTAs":>5} {"last landing model / device":>30}')
    for b, d, c, last in burst_rows(probe):
        m = predicted_ns(pipesim, 'tma_burst.scn', {'BYTES': b, 'COPIES': d, 'CTAS': c}, timing)
        print(f'{"":27} {b:8d} {d:6d} {c:5d} {m:17.0f} / {last:6.0f} {100*(m/last-1):+5.1f}%')

def spread_rows(path):
    """Case 2a rows of 132 SMs with >= 4 MiB in flight (the DRAM queue holds copies back): (bytes, depth,
    first CTA end, last CTA end) in us."""
    out = []
    for line in section(path, '== 2a'):
        m = re.match(r'\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+([\d.]+)\.\.\s*([\d.]+)', line)
        if m and int(m[3]) == 132 and int(m[4]) * 132 >= 4 << 10:
            out.append((int(m[1]), int(m[2]), float(m[5]), float(m[6])))
    return out

def ring_ends(pipesim, b, d, timing):
    args = check_args(pipesim, 'tma_ring.scn', ring_defs(b, d, 132), timing, '--json')
    e = json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)['results'][0]['cta_ends_ns']
    return e['first'], e['last']

def spread_main(pipesim, probe, fixed):
    """dram_share_spread from how far apart the CTAs of a saturated ring end: (last - first) / last,
    model against device, over the rows of spread_rows."""
    data = spread_rows(probe)
    base = fixed_timing(fixed)
    def rel(first, last): return (last - first) / last
    def score(s):
        t = dict(base, dram_share_spread=s)
        return sum(abs(rel(*ring_ends(pipesim, b, d, t)) - rel(f, l)) for b, d, f, l in data) / len(data)
    scores = [(score(s), s) for s in (0, 0.02, 0.04, 0.06, 0.08, 0.10, 0.12, 0.15)]
    print('mean |model - device| of (last - first) / last: ' + ', '.join(f'{s}: {e:.4f}' for e, s in scores))
    err, s = min(scores)
    print(f'best dram_share_spread={s}: {err:.4f} over {len(data)} rows')
    print(f'{"bytes":>8} {"depth":>6} {"spread model / device":>24}')
    for b, d, f, l in data:
        mf, ml = ring_ends(pipesim, b, d, dict(base, dram_share_spread=s))
        print(f'{b:8d} {d:6d} {100*rel(mf, ml):10.1f}% / {100*rel(f, l):5.1f}%')

def start_rows(path):
    """Case 2c: {(bytes, depth, ctas, per_cta): [(copy j, min, median, max landing ns)]}."""
    out = {}
    for line in section(path, '== 2c'):
        m = re.match(r'\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*$', line)
        if m:
            out.setdefault(tuple(int(x) for x in m.groups()[:4]), []).append((int(m[5]), float(m[6]), float(m[7]), float(m[8])))
    return out

WAKE_NS = 55  # the H100's whole-warp wake (model/arch.cpp): the probe stamps a landing when its warp sees it

def start_model(pipesim, b, d, ctas, per_cta, timing, trace):
    """The model's landings of each CTA's copies in tma_ring.scn as its warp sees them: per CTA, the
    completions of its full barriers in order, each seen a wake after it and after the one before (ns)."""
    args = check_args(pipesim, 'tma_ring.scn', {'BYTES': b, 'DEPTH': d, 'CTAS': ctas, 'PER_CTA': per_cta}, timing, '--trace', trace)
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
    ev = json.load(open(trace))
    ev = ev['traceEvents'] if isinstance(ev, dict) else ev
    per = {}
    for e in ev:
        if e.get('ph') == 'i' and e['name'].startswith('ab.full'):
            per.setdefault(e['pid'], []).append(e['ts'] * 1e3)
    out = []
    for v in per.values():
        seen, t = [], 0.0
        for landed in sorted(v):
            t = max(t, landed) + WAKE_NS
            seen.append(t)
        out.append(seen)
    return out

def dram_score(pipesim, probe, start, timing, show=False):
    """Mean |model/device - 1| of ring GB/s (2a), burst last landings (2b), cold-start median landings
    (2c), and mean |model - device| of saturated rings' (last - first) / last CTA ends."""
    ring_data = ring_rows(probe)
    rings = sum(abs(ring_model(pipesim, b, d, c, timing) / g - 1) for b, d, c, g, _ in ring_data) / len(ring_data)
    bursts = burst_rows(probe)
    burst = sum(abs(predicted_ns(pipesim, 'tma_burst.scn', {'BYTES': b, 'COPIES': d, 'CTAS': c}, timing) / last - 1)
                for b, d, c, last in bursts) / len(bursts)
    def rel(first, last): return (last - first) / last
    spreads = spread_rows(probe)
    spread = sum(abs(rel(*ring_ends(pipesim, b, d, timing)) - rel(f, l)) for b, d, f, l in spreads) / len(spreads)
    trace = os.path.join(tempfile.mkdtemp(), 't.json')
    errs = []
    for (b, d, c, p), copies in start_rows(start).items():
        per = start_model(pipesim, b, d, c, p, timing, trace)
        if show:
            print(f'   cold start {b} B x {d} deep, {c} CTAs, {p} copies each: copy, device min / median / max, model min / median / max (ns)')
        for j, lo, med, hi in copies:
            t = sorted(v[j] for v in per)
            errs.append(abs(t[len(t) // 2] / med - 1))
            if show:
                print(f'   {j:4d} {lo:7.0f} {med:7.0f} {hi:7.0f}   {t[0]:7.0f} {t[len(t) // 2]:7.0f} {t[-1]:7.0f}  {100 * (t[len(t) // 2] / med - 1):+5.1f}%')
    return rings, burst, sum(errs) / len(errs), spread

def dram_main(pipesim, probe, start, fixed):
    def line(t, sc):
        return (' '.join(f'{k}={v:g}' for k, v in t.items()) +
                f'  rings {sc[0]:.4f} bursts {sc[1]:.4f} cold starts {sc[2]:.4f} (sum {sum(sc[:3]):.4f}), ring spread {sc[3]:.4f}')
    if fixed:
        timing = fixed_timing(fixed)
    else:
        best = None
        for h, sp, o in itertools.product((3000, 3030, 3060, 3100), (0.1, 0.15, 0.2, 0.3), (0, 0.2, 0.25, 0.3)):
            t = {'hbm_bytes_per_ns': h, 'dram_share_spread': sp, 'dram_copy_overlap': o}
            sc = dram_score(pipesim, probe, start, t)
            print(line(t, sc), flush=True)
            if best is None or sum(sc[:3]) < best[0]:
                best = (sum(sc[:3]), t)
        timing = best[1]
        print('best:', end=' ')
    print(line(timing, dram_score(pipesim, probe, start, timing, show=True)))


if sys.argv[1] == '--dram':
    dram_main(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:])
elif sys.argv[1] == '--ring':
    ring_main(sys.argv[2], sys.argv[3], sys.argv[4:])
elif sys.argv[1] == '--spread':
    spread_main(sys.argv[2], sys.argv[3], sys.argv[4:])
else:
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
