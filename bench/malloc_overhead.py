#!/usr/bin/python3
"""Overhead of libmemtrace.so (counting mode) on malloc/free pairs.

For each backend and thread count, runs malloc_pairs bare and under the shim,
interleaved (bare, shim, bare, shim, ...) --repeats times, keeps the minimum
ns/pair per size of each configuration and prints a table.  Targets: at most
+3 ns per pair on every row, at most 1.15x for 16 B on glibc.  Always exits 0
(this is a benchmark, not a test).

Two floors are measured in the same rounds, with bench/forward_shim.c: what
an interposer adds that only forwards malloc and free ("forward"), and one
whose free also asks the allocator for the block's usable size ("+size"),
the least exact live bytes need on every backend but glibc (whose chunk
headers the shim reads inline).  A target below its floor cannot be met by any
interposer on this machine.

--baseline-shim OLD measures another build of the shim in the same rounds
(a change's before and after, interleaved) and adds its column.

--mixed draws each pair's size at random from 16 to 15 + SIZE (malloc_pairs
--mixed), as a program's blocks of mixed sizes are: a branch on the size
then mispredicts as it would there, which one size never shows.
"""
import argparse
import json
import os
import subprocess
import sys

from backend_libs import BACKEND_LIBS, backend_lib, default_libdir

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.join(HERE, '..', 'build')
MAX_ADDED_NS = 3.0
MAX_RATIO_16_GLIBC = 1.15


def run(bench, threads, sizes, preload, extra_env, mixed=False):
    env = dict(os.environ)
    for k in ('LD_PRELOAD', 'MEMTRACE_BACKEND', 'MEMTRACE_QUIET',
              'MEMTRACE_SUMMARY'):
        env.pop(k, None)
    if preload:
        env['LD_PRELOAD'] = ':'.join(preload)
    env.update(extra_env)
    out = subprocess.run([bench, '--threads', str(threads)]
                         + (['--mixed'] if mixed else []) + sizes, env=env,
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit('malloc_pairs failed (LD_PRELOAD=%s): %s'
                 % (env.get('LD_PRELOAD', ''), out.stderr.strip()))
    result = {}
    for line in out.stdout.splitlines():
        f = dict(kv.split('=', 1) for kv in line.split())
        result[int(f['size'])] = float(f['ns_per_pair'])
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--bench', default=os.path.join(BUILD, 'bench',
                                                    'malloc_pairs'))
    ap.add_argument('--shim', default=os.path.join(BUILD, 'shim',
                                                   'libmemtrace.so'))
    ap.add_argument('--forward', default=os.path.join(
        BUILD, 'bench', 'libforward_shim.so'))
    ap.add_argument('--forward-sizes', default=os.path.join(
        BUILD, 'bench', 'libforward_sizes_shim.so'))
    ap.add_argument('--libdir', default=None,
                    help='where the backend libraries are '
                         '(default: /usr/lib/$(gcc -print-multiarch))')
    ap.add_argument('--backends', default='glibc,jemalloc,tcmalloc,mimalloc')
    ap.add_argument('--threads', default='1,2')
    ap.add_argument('--repeats', type=int, default=7)
    ap.add_argument('--sizes', default='16,256,4096,65536,1048576')
    ap.add_argument('--mixed', action='store_true',
                    help='each pair of a size drawn from 16 to 15 + SIZE '
                         '(rounded down to a power of two)')
    ap.add_argument('--json', metavar='FILE', help='save the numbers here')
    ap.add_argument('--baseline-shim', metavar='OLD',
                    help='another build of libmemtrace.so, measured in the '
                         'same rounds')
    a = ap.parse_args()

    bench, shim = os.path.abspath(a.bench), os.path.abspath(a.shim)
    forward = os.path.abspath(a.forward)
    forward_sizes = os.path.abspath(a.forward_sizes)
    for path in (bench, shim, forward, forward_sizes):
        if not os.path.exists(path):
            sys.exit('not found: %s (build first: ninja -C build)' % path)
    libdir = a.libdir or default_libdir()
    sizes = a.sizes.split(',')
    threads = [int(t) for t in a.threads.split(',')]

    rows = []
    for backend in a.backends.split(','):
        if backend not in BACKEND_LIBS:
            sys.exit('unknown backend %r (known: %s)'
                     % (backend, ', '.join(BACKEND_LIBS)))
        lib = backend_lib(backend, libdir)
        if lib and not os.path.exists(lib):
            print('note: skipping %s: %s not found' % (backend, lib))
            continue
        bare_pre = [lib] if lib else []
        shim_env = {'MEMTRACE_BACKEND': backend, 'MEMTRACE_QUIET': '1'}
        for nt in threads:
            bare, inst, fwd, fwd_sizes, old = {}, {}, {}, {}, {}
            configs = [(bare, bare_pre, {}), (inst, [shim] + bare_pre, shim_env),
                       (fwd, [forward] + bare_pre, {}),
                       (fwd_sizes, [forward_sizes] + bare_pre, {})]
            if a.baseline_shim:
                configs.append((old, [os.path.abspath(a.baseline_shim)]
                                + bare_pre, shim_env))
            for _ in range(a.repeats):
                for best, pre, env in configs:
                    for size, ns in run(bench, nt, sizes, pre, env,
                                        a.mixed).items():
                        best[size] = min(ns, best.get(size, ns))
            for size in sorted(bare):
                b, s = bare[size], inst[size]
                ok = s - b <= MAX_ADDED_NS
                if backend == 'glibc' and size == 16:
                    ok = ok and s / b <= MAX_RATIO_16_GLIBC
                # The floor that applies: glibc's sizes are read inline.
                floor = fwd[size] if backend == 'glibc' else fwd_sizes[size]
                below = floor - b > MAX_ADDED_NS or (
                    backend == 'glibc' and size == 16
                    and floor / b > MAX_RATIO_16_GLIBC)
                rows.append({'backend': backend, 'threads': nt, 'size': size,
                             'bare_ns': b, 'shim_ns': s,
                             'added_ns': round(s - b, 2),
                             'ratio': round(s / b, 4), 'pass': ok,
                             'forward_added_ns': round(fwd[size] - b, 2),
                             'forward_sizes_added_ns':
                                 round(fwd_sizes[size] - b, 2),
                             'target_below_floor': below,
                             'old_shim_ns': old.get(size)})

    hdr = '%-9s %7s %8s %9s %9s %9s %6s %9s %9s %9s  %s'
    print(hdr % ('backend', 'threads', 'size', 'bare ns', 'shim ns',
                 'added ns', 'ratio', 'forward', '+size', 'vs old', 'target'))
    for r in rows:
        vs_old = ('%+9.2f' % (r['shim_ns'] - r['old_shim_ns'])
                  if r['old_shim_ns'] is not None else '%9s' % '-')
        print('%-9s %7d %8d %9.2f %9.2f %+9.2f %6.3f %+9.2f %+9.2f %s  %s'
              % (r['backend'], r['threads'], r['size'], r['bare_ns'],
                 r['shim_ns'], r['added_ns'], r['ratio'],
                 r['forward_added_ns'], r['forward_sizes_added_ns'], vs_old,
                 'PASS' if r['pass'] else
                 'FAIL (below floor)' if r['target_below_floor'] else 'FAIL'))
    failed = sum(not r['pass'] for r in rows)
    unreachable = sum(r['target_below_floor'] for r in rows)
    print('targets (<= +%.0f ns/pair on every row, <= %.2fx for 16 B on '
          'glibc; min of %d runs): %s'
          % (MAX_ADDED_NS, MAX_RATIO_16_GLIBC, a.repeats,
             'no rows measured' if not rows else 'HOLD' if not failed
             else 'DO NOT HOLD (%d of %d rows fail)' % (failed, len(rows))))
    if unreachable:
        print('%d rows ask for less than the floor measured in the same '
              'rounds (forwarding alone on glibc, forwarding and usable '
              'sizes on the others)' % unreachable)
    if a.json:
        with open(a.json, 'w') as f:
            json.dump({'repeats': a.repeats, 'bench': bench, 'shim': shim,
                       'max_added_ns': MAX_ADDED_NS,
                       'max_ratio_16_glibc': MAX_RATIO_16_GLIBC,
                       'rows': rows}, f, indent=2)
            f.write('\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
