#!/usr/bin/python3
"""What the shim costs, counted exactly where timing cannot resolve it.

On a machine whose identical runs differ by 5-20% (bench/sites_cost.py
measures bare against bare), a 2% or 3% target is below what timing can
tell.  This counts, on each backend, bare, counting and tracing
(MEMTRACE_OUT):

  * user-space instructions (callgrind, every thread's, the trace writer's
    too) added per malloc+free pair of each --sizes, the difference of
    runs of N and 2N pairs, so that start-up and exit cancel out;
  * the NumPy func1/func2 benchmark (tests/programs/numpy_plain.py):
    instructions per call of each (the difference of runs of 30 calls and
    5), func2/func1 against bare's, and page faults per call (getrusage,
    address-space layout fixed), which instructions leave out;
  * the whole NumPy run of 30 calls of each, start-up included: its
    instructions against bare's.

Tracing's per-call figures include what its threads do by the clock (a
resident-memory sample every 20 ms, the writer's flushes), which
callgrind's fiftyfold slower run multiplies: its pairs' figures, where the
events dominate, are the ones to read.

--baseline-shim OLD counts another build's pairs in the same table.
A benchmark, not a test: prints the figures and exits 0.

    bench/exact_cost.py [--backends glibc,jemalloc] [--sizes 16,4096]
"""
import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile

from backend_libs import BACKEND_LIBS, backend_lib

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.join(HERE, "..", "build")
NUMPY_PLAIN = os.path.join(HERE, "..", "tests", "programs", "numpy_plain.py")
PAIRS = 50000


def env_for(backend, shim, mode, tmp):
    """The environment of a run: bare preloads the backend's library, the
    shim goes before it, as `memtrace run` does."""
    e = {k: v for k, v in os.environ.items()
         if not k.startswith("MEMTRACE_") and k != "LD_PRELOAD"}
    # (Python's hash seed changes its dicts' work from run to run: some
    # 3% of a call's instructions)
    e["PYTHONHASHSEED"] = "0"
    lib = backend_lib(backend)
    preload = ([shim] if mode != "bare" else []) + ([lib] if lib else [])
    if preload:
        e["LD_PRELOAD"] = ":".join(preload)
    if mode != "bare":
        e.update(MEMTRACE_QUIET="1", MEMTRACE_BACKEND=backend)
    if mode == "tracing":
        # (a directory of its own each run: a trace is never overwritten)
        e["MEMTRACE_OUT"] = tempfile.mkdtemp(dir=tmp) + "/t.mt"
    return e


def instructions(cmd, env):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "cg")
        subprocess.run(["valgrind", "--tool=callgrind",
                        "--callgrind-out-file=" + out] + cmd,
                       env=env, check=True, capture_output=True)
        with open(out) as f:
            return int(re.search(r"^totals: (\d+)", f.read(), re.M).group(1))


def pair_instructions(bench, size, backend, shim, mode, tmp):
    many = instructions([bench, "--iterations", str(2 * PAIRS), str(size)],
                        env_for(backend, shim, mode, tmp))
    few = instructions([bench, "--iterations", str(PAIRS), str(size)],
                       env_for(backend, shim, mode, tmp))
    return (many - few) / PAIRS


def numpy_instructions(calls, which, backend, shim, mode, tmp):
    return instructions(["/usr/bin/python3", NUMPY_PLAIN, str(calls),
                         "func" + which], env_for(backend, shim, mode, tmp))


def numpy_faults(calls, which, backend, shim, mode, tmp):
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt
    subprocess.run(["setarch", os.uname().machine, "-R", "/usr/bin/python3",
                    NUMPY_PLAIN, str(calls), "func" + which],
                   env=env_for(backend, shim, mode, tmp), check=True,
                   capture_output=True)
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt - before


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", default=os.path.join(BUILD, "bench", "malloc_pairs"))
    ap.add_argument("--shim", default=os.path.join(BUILD, "shim", "libmemtrace.so"))
    ap.add_argument("--baseline-shim", metavar="OLD")
    ap.add_argument("--backends", default="glibc,jemalloc,tcmalloc,mimalloc")
    ap.add_argument("--sizes", default="16,4096,65536")
    ap.add_argument("--no-numpy", action="store_true")
    a = ap.parse_args()
    if not shutil.which("valgrind"):
        sys.exit("exact_cost.py: valgrind not found (apt-get install valgrind)")
    shims = {"new": os.path.abspath(a.shim)}
    if a.baseline_shim:
        shims["old"] = os.path.abspath(a.baseline_shim)
    backends = a.backends.split(",")
    for b in backends:
        if b not in BACKEND_LIBS:
            sys.exit(f"exact_cost.py: unknown backend {b!r}")
    sizes = [int(s) for s in a.sizes.split(",")]

    with tempfile.TemporaryDirectory() as tmp:
        print("instructions added per malloc+free pair (callgrind), "
              "counting / tracing:")
        print(f"  {'backend':9} {'size':>6} {'bare':>6}  " +
              "  ".join(f"{n:>15}" for n in shims))
        for b in backends:
            for size in sizes:
                bare = pair_instructions(a.bench, size, b, None, "bare", tmp)
                cells = []
                for shim in shims.values():
                    c, t = (pair_instructions(a.bench, size, b, shim, m, tmp) - bare
                            for m in ("counting", "tracing"))
                    cells.append(f"{c:+7.0f} / {t:+5.0f}")
                print(f"  {b:9} {size:6} {bare:6.0f}  " + "  ".join(cells))
        if a.no_numpy:
            return 0
        print("NumPy func1/func2 (numpy_plain.py): instructions per call, "
              "func2/func1 against bare's, faults per call; the whole run "
              "of 30 calls each against bare's:")
        for b in backends:
            base = None
            for mode in ("bare", "counting", "tracing"):
                shim = shims["new"]
                many = [numpy_instructions(30, w, b, shim, mode, tmp) for w in "12"]
                few = [numpy_instructions(5, w, b, shim, mode, tmp) for w in "12"]
                i1, i2 = ((m - f) / 25 for m, f in zip(many, few))
                p1, p2 = ((numpy_faults(30, w, b, shim, mode, tmp) -
                           numpy_faults(5, w, b, shim, mode, tmp)) / 25
                          for w in "12")
                whole = sum(many)
                if base is None:
                    base = (i2 / i1, whole)
                print(f"  {b:9} {mode:9} func1 {i1:10.0f}  func2 {i2:10.0f}  "
                      f"func2/func1 {i2 / i1:.4f} ({(i2 / i1) / base[0] - 1:+.2%})"
                      f"  faults {p1:.0f}, {p2:.0f}  whole run "
                      f"{whole / base[1] - 1:+.2%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
