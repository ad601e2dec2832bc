#!/usr/bin/python3
"""What a large block allocated from Python code costs the shim's sites
(MEMTRACE_SITES), per allocation: at a known site (the same line in a
loop: the Python frames and the allocator's caller looked up) and at a new
one (each of --sites functions, compiled apart, allocating once: the
site's first allocation, which walks and names its native stack too),
each called through map() so that the stack has a C builtin between its
Python frames.  Minimum of --repeats runs, sites on less sites off,
with small blocks sampled (MEMTRACE_SITES=1, the default: their sites
are new too, a new function's every one) and without (large).

    python_sites_cost.py [--shim build/shim/libmemtrace.so]"""
import argparse
import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))

CHILD = r'''
import sys, time
from collections import deque
n_known, n_new = int(sys.argv[1]), int(sys.argv[2])
import numpy as np
size = 256 << 7
def known(i):
    return np.empty(size)
fs = []
for k in range(n_new):
    ns = {"size": size, "np": np}
    exec(compile("def f%d(i):\n    return np.empty(size)\n" % k, "gen%d.py" % k, "exec"), ns)
    fs.append(ns["f%d" % k])
deque(map(known, range(1000)), maxlen=0)
t = time.perf_counter_ns()
deque(map(known, range(n_known)), maxlen=0)
known_ns = (time.perf_counter_ns() - t) / n_known
def each():
    """(one place for both rounds: the second's sites are the first's)"""
    t = time.perf_counter_ns()
    for f in fs:
        deque(map(f, (0,)), maxlen=0)
    return (time.perf_counter_ns() - t) / n_new
first_ns, again_ns = [each() for _ in range(2)]
print(known_ns, first_ns, again_ns)
'''


def run(shim, sites, n_known, n_new):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("MEMTRACE_") and k != "LD_PRELOAD"}
    env.update(LD_PRELOAD=shim, MEMTRACE_QUIET="1", MEMTRACE_SITES=sites)
    out = subprocess.run(["/usr/bin/python3", "-c", CHILD, str(n_known),
                          str(n_new)], env=env, check=True,
                         capture_output=True, text=True).stdout
    return [float(x) for x in out.split()]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shim", default=os.path.join(HERE, "..", "build", "shim",
                                                   "libmemtrace.so"))
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--known", type=int, default=100000)
    ap.add_argument("--sites", type=int, default=1000)
    a = ap.parse_args()
    best = {}
    for _ in range(a.repeats):
        for sites in ("0", "large", "1"):
            got = run(a.shim, sites, a.known, a.sites)
            best[sites] = [min(x, y) for x, y in zip(best.get(sites, got), got)]
    off = best["0"]
    print(f"ns per large allocation (256 KiB np.empty via map), min of {a.repeats}")
    print(f"{'MEMTRACE_SITES':15} {'known site':>11} {'new site':>9} {'(same, again)':>14}")
    for sites in ("0", "large", "1"):
        b = best[sites]
        print(f"{sites:15} {b[0]:11.0f} {b[1]:9.0f} {b[2]:14.0f}")
    for sites in ("large", "1"):
        b = best[sites]
        print(f"added ({sites}): known site {b[0] - off[0]:.0f} ns, new site "
              f"{b[1] - off[1]:.0f} ns")

if __name__ == "__main__":
    main()
