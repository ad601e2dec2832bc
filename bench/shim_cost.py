#!/usr/bin/python3
"""The shim's own cost per call, for the table in common/shim_cost.c.

For each backend and mode (counting; trace: MEMTRACE_OUT), runs
bench/malloc_pairs bare and under the shim, interleaved (bare, counting,
trace, bare, ...) --repeats times, one thread, and keeps the minimum of
each:

  * small: malloc(16)+free pairs;
  * large: malloc(1 MiB)+free pairs (a large block: the shim follows its
    call site, and on glibc reads its chunk and the thresholds);
  * syscall: the program's own mmap(1 MiB)+munmap pairs, one byte written
    (--mmap), i.e. two interposed memory system calls, each counted by the
    kernel counters too and credited to its call site;
  * kernel: two mprotect calls on a page of the program's own
    (--mprotect), calls the shim does not interpose: what its kernel
    counters add to each (counted, or sampled into a trace), as to glibc's
    own inside malloc and free, is the run under the shim less the same
    run with MEMTRACE_PERF=0;
  * thread: a thread started and joined that does nothing
    (--thread-starts): each inherits the kernel counters, which the
    kernel copies into it and folds back when it ends;
  * region: a region begun and ended (--regions): at each mark the shim
    reads the kernel counters and the thread's and the process's CPU time
    and faults (nothing without the shim); and the same with
    MEMTRACE_PERF=0 (region_alone: no kernel counters to read).

It prints ns added per pair (shim - bare), and the table as C, per call
(half a pair), to paste into common/shim_cost.c.  A benchmark, not a test:
exits 0.
"""
import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import tempfile

from backend_libs import backend_lib

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.join(HERE, '..', 'build')
KINDS = (('small', [], '16'), ('large', [], '1048576'),
         ('syscall', ['--mmap'], '1048576'),
         ('kernel', ['--mprotect'], '1'),
         ('thread', ['--thread-starts'], '1'),
         ('region', ['--regions'], '1'))


def clean_env(extra):
    e = {k: v for k, v in os.environ.items()
         if not k.startswith('MEMTRACE_') and k != 'LD_PRELOAD'}
    e.update(extra)
    return e


def run(bench, flags, size, extra, trace):
    if trace and os.path.exists(trace):
        os.unlink(trace)
    out = subprocess.run([bench, '--threads', '1'] + flags + [size],
                         env=clean_env(extra), capture_output=True, text=True)
    if trace and os.path.exists(trace):
        os.unlink(trace)
    if out.returncode != 0:
        sys.exit('malloc_pairs failed: %s' % out.stderr.strip())
    return float(re.search(r'ns_per_pair=([\d.]+)', out.stdout).group(1))


def cpu_name():
    try:
        with open('/proc/cpuinfo') as f:
            for line in f:
                if line.startswith('model name'):
                    return line.split(':', 1)[1].strip()
    except OSError:
        pass
    return platform.machine()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--bench', default=os.path.join(BUILD, 'bench',
                                                    'malloc_pairs'))
    ap.add_argument('--shim', default=os.path.join(BUILD, 'shim',
                                                   'libmemtrace.so'))
    ap.add_argument('--backends', default='glibc,jemalloc,tcmalloc,mimalloc')
    ap.add_argument('--repeats', type=int, default=5)
    ap.add_argument('--kinds', default=','.join(k[0] for k in KINDS),
                    help='which to measure (default: all)')
    ap.add_argument('--json', metavar='FILE', help='save the numbers here')
    a = ap.parse_args()
    bench, shim = os.path.abspath(a.bench), os.path.abspath(a.shim)
    tmp = tempfile.mkdtemp(prefix='memtrace-cost-')
    trace = os.path.join(tmp, 't.mt')

    rows = []
    for backend in a.backends.split(','):
        lib = backend_lib(backend)
        if lib and not os.path.exists(lib):
            print('note: skipping %s: %s not found' % (backend, lib))
            continue
        pre = [lib] if lib else []
        base = {'LD_PRELOAD': ':'.join(pre)} if pre else {}
        under = {'LD_PRELOAD': ':'.join([shim] + pre),
                 'MEMTRACE_BACKEND': backend, 'MEMTRACE_QUIET': '1'}
        configs = {'bare': (base, None), 'counting': (under, None),
                   'trace': (dict(under, MEMTRACE_OUT=trace), trace)}
        for kind, flags, size in KINDS:
            if kind not in a.kinds.split(','):
                continue
            best = {}
            # (the kernel counters' part: against the shim without them)
            these = dict(configs)
            if kind == 'region':
                these['counting_alone'] = (dict(under, MEMTRACE_PERF='0'), None)
                these['trace_alone'] = (dict(under, MEMTRACE_OUT=trace,
                                             MEMTRACE_PERF='0'), trace)
            if kind == 'kernel':
                these = {'bare': configs['counting'],
                         'counting': (dict(under, MEMTRACE_PERF='0'), None),
                         'trace': (dict(under, MEMTRACE_OUT=trace,
                                        MEMTRACE_PERF='0'), trace)}
                these.update({'counting_perf': configs['counting'],
                              'trace_perf': configs['trace']})
            for _ in range(a.repeats):
                for name, (extra, tr) in these.items():
                    ns = run(bench, flags, size, extra, tr)
                    best[name] = min(ns, best.get(name, ns))
            if kind == 'kernel':
                best = {'bare': 0, 'counting': best['counting_perf'] - best['counting'],
                        'trace': best['trace_perf'] - best['trace']}
            for mode in ('counting', 'trace'):
                rows.append({'backend': backend, 'mode': mode, 'kind': kind,
                             'bare_ns': best['bare'],
                             'shim_ns': best[mode],
                             'added_ns_per_pair':
                                 round(max(best[mode] - best['bare'], 0), 1)})
                if kind == 'region':
                    alone = best[mode + '_alone']
                    rows.append({'backend': backend, 'mode': mode,
                                 'kind': 'region_alone',
                                 'bare_ns': best['bare'], 'shim_ns': alone,
                                 'added_ns_per_pair':
                                     round(max(alone - best['bare'], 0), 1)})
            print('%-9s %-8s bare %9.1f  counting %+8.1f  trace %+8.1f '
                  'ns/pair' % (backend, kind, best['bare'],
                               best['counting'] - best['bare'],
                               best['trace'] - best['bare']), flush=True)

    date = datetime.date.today().isoformat()
    print('\n/* bench/shim_cost.py --repeats %d, %s, %s, %d CPUs */'
          % (a.repeats, date, cpu_name(), os.cpu_count()))
    print('/* ns per call (half a pair): small, large, syscall, kernel; '
          'ns per thread started: thread; ns per region (begun and '
          'ended): region, and with MEMTRACE_PERF=0 region_alone '
          '(syscall, kernel, thread and regions the median of the '
          'backends: the path is the same on each) */')
    median = {}
    for kind, per in (('syscall', 2), ('kernel', 2), ('thread', 1),
                      ('region', 1), ('region_alone', 1)):
        for mode in ('counting', 'trace'):
            v = sorted(r['added_ns_per_pair'] / per for r in rows
                       if r['mode'] == mode and r['kind'] == kind)
            if v:
                median[kind, mode] = (v[len(v) // 2] if len(v) % 2
                                      else (v[len(v) // 2 - 1] +
                                            v[len(v) // 2]) / 2)
    for backend in a.backends.split(','):
        for mode in ('counting', 'trace'):
            got = {r['kind']: r['added_ns_per_pair'] / 2 for r in rows
                   if r['backend'] == backend and r['mode'] == mode}
            if got:
                print('\t{"%s", %s, %.1f, %.1f, %.1f, %.1f, %.0f, %.0f, %.0f},'
                      % (backend, 'true' if mode == 'trace' else 'false',
                         got.get('small', 0), got.get('large', 0),
                         median.get(('syscall', mode), 0),
                         median.get(('kernel', mode), 0),
                         median.get(('thread', mode), 0),
                         median.get(('region', mode), 0),
                         median.get(('region_alone', mode), 0)))
    if a.json:
        with open(a.json, 'w') as f:
            json.dump({'repeats': a.repeats, 'date': date, 'cpu': cpu_name(),
                       'rows': rows}, f, indent=2)
            f.write('\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
