#!/usr/bin/python3
"""The shim's estimate of its own cost against what it costs.

For each program and backend (and mode), runs it bare and under the shim,
interleaved, --repeats times, and keeps the minimum of each of wall time
and CPU time (user + system, of the process and its threads, from wait4).
Prints the measured difference (shim - bare), and the ratio of the wall
times (shim / bare), beside the summary's
shim_cost.estimated_s (of the run with the least CPU time), and their
ratio.  The estimate is CPU time: on one thread it is also wall time; with
several threads running at once, compare it with the CPU difference.
A benchmark, not a test: exits 0.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from backend_libs import backend_lib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, '..')
BUILD = os.path.join(ROOT, 'build')


def timed(cmd, env):
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    if status != 0:
        sys.exit('%s failed (status %d)' % (' '.join(cmd), status))
    return wall, ru.ru_utime + ru.ru_stime


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--shim', default=os.path.join(BUILD, 'shim',
                                                   'libmemtrace.so'))
    ap.add_argument('--repeats', type=int, default=5)
    ap.add_argument('--backends', default='glibc,jemalloc,tcmalloc,mimalloc')
    ap.add_argument('--modes', default='counting,trace')
    ap.add_argument('--programs', default='small pairs,2 threads,numpy_plain',
                    help='which of the programs, by name')
    a = ap.parse_args()
    pairs = os.path.join(BUILD, 'bench', 'malloc_pairs')
    programs = [
        ('small pairs', [pairs, '--iterations', '20000000', '16']),
        ('2 threads', [pairs, '--threads', '2', '--iterations', '10000000',
                       '16', '256']),
        ('numpy_plain', ['/usr/bin/python3',
                         os.path.join(ROOT, 'tests', 'programs',
                                      'numpy_plain.py'), '100']),
    ]
    programs = [p for p in programs if p[0] in a.programs.split(',')]
    tmp = tempfile.mkdtemp(prefix='memtrace-check-')
    base = {k: v for k, v in os.environ.items()
            if not k.startswith('MEMTRACE_') and k != 'LD_PRELOAD'}
    print('%-12s %-9s %-8s %9s %9s %9s %7s %9s %9s %7s' % (
        'program', 'backend', 'mode', 'bare cpu', '+cpu', '+wall',
        'wall x', 'estimate', 'of which', 'est/cpu'))
    for name, cmd in programs:
        for backend in a.backends.split(','):
            lib = backend_lib(backend)
            pre = [lib] if lib else []
            for mode in a.modes.split(','):
                summary = os.path.join(tmp, 's.json')
                trace = os.path.join(tmp, 't.mt')
                bare_env = dict(base)
                if pre:
                    bare_env['LD_PRELOAD'] = ':'.join(pre)
                shim_env = dict(base, LD_PRELOAD=':'.join([a.shim] + pre),
                                MEMTRACE_BACKEND=backend, MEMTRACE_QUIET='1',
                                MEMTRACE_SUMMARY=summary)
                if mode == 'trace':
                    shim_env['MEMTRACE_OUT'] = trace
                    shim_env['MEMTRACE_FORCE'] = '1'
                bare, shim, est = [], [], None
                for _ in range(a.repeats):
                    bare.append(timed(cmd, bare_env))
                    w, c = timed(cmd, shim_env)
                    k = json.load(open(summary))['shim_cost']
                    if not shim or c < min(x[1] for x in shim):
                        est = k
                    shim.append((w, c))
                    if os.path.exists(trace):
                        os.unlink(trace)
                bw, bc = min(x[0] for x in bare), min(x[1] for x in bare)
                sw, sc = min(x[0] for x in shim), min(x[1] for x in shim)
                d = sc - bc
                print('%-12s %-9s %-8s %9.3f %+9.3f %+9.3f %7.3f %9.3f %9s %7s' % (
                    name, backend, mode, bc, d, sw - bw, sw / bw,
                    est['estimated_s'],
                    '%.3f+%.3f' % (est['calls_s'],
                                   est['threads_s'] + est['start_s']),
                    '%.2f' % (est['estimated_s'] / d) if d > 0 else '-'),
                    flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
