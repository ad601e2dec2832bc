#!/usr/bin/python3
"""What the shim adds to malloc_trim: a tight loop of malloc_trim(0) on a
small heap (bench/trim_calls.c), bare and under the shim, interleaved,
minimum of --repeats.  The shim looks at the resident memory (two reads of
/proc/self/statm) once 50 times its last look's cost has passed; the target is the
loop within 1.25x bare.  A benchmark, not a test: prints and exits 0."""
import argparse
import os
import re
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.join(HERE, "..", "build")


def ns_per_call(bench, extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("MEMTRACE_") and k != "LD_PRELOAD"}
    env.update(extra)
    out = subprocess.run([bench], env=env, check=True, capture_output=True,
                         text=True).stdout
    return float(re.search(r"ns_per_call=([\d.]+)", out).group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", default=os.path.join(BUILD, "bench", "trim_calls"))
    ap.add_argument("--shim", default=os.path.join(BUILD, "shim", "libmemtrace.so"))
    ap.add_argument("--repeats", type=int, default=7)
    a = ap.parse_args()
    modes = {"bare": {}, "shim": {"LD_PRELOAD": a.shim, "MEMTRACE_QUIET": "1"}}
    best = {}
    for _ in range(a.repeats):
        for name, extra in modes.items():
            v = ns_per_call(a.bench, extra)
            best[name] = min(best.get(name, v), v)
    ratio = best["shim"] / best["bare"]
    print(f"malloc_trim(0) on a small heap, min of {a.repeats}: bare "
          f"{best['bare']:.1f} ns, shim {best['shim']:.1f} ns, {ratio:.2f}x "
          f"(target at most 1.25x: {'met' if ratio <= 1.25 else 'NOT MET'})")


if __name__ == "__main__":
    main()
