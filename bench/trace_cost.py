#!/usr/bin/python3
"""What recording a trace costs, measured in one invocation:

  * ns added per traced event on malloc+free pairs (1 and 2 threads),
    against the bare run and against counting mode, and what reading the
    TSC once per event costs by itself here (the bare loop with a TSC read
    before each malloc and free): what the shim saves by reading it for
    one fast-path event in eight (shim/trace_buf.h, MT_CLOCK_EVERY);
  * bytes per event on the NumPy func1/func2 workload, plain and zstd, and
    heaptrack's file for the same run when heaptrack is installed;
  * how fast `memtrace stat TRACE` reads events (10 M of them);
  * whether recording distorts what it measures: func2/func1 with the
    trace against without memtrace (address-space layout fixed, since
    glibc's behaviour here depends on where the heap starts), and the
    NumPy workload's work counting against without memtrace (timed
    inside the script), and apart what the shim adds to a process's start
    and exit.

The pairs and the NumPy figures are measured on each of --backends (the
shim preloaded before the backend's library, as memtrace run does); the
reader's and the trace's size on the first.

Minimum of --repeats interleaved runs.  --baseline-shim OLD measures
another build of the shim in the same rounds of pairs (a change's before
and after).  A benchmark, not a test: it prints
figures and the targets, and exits 0."""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from backend_libs import BACKEND_LIBS, backend_lib

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.join(HERE, "..", "build")


def env(**extra):
    e = {k: v for k, v in os.environ.items()
         if not k.startswith("MEMTRACE_") and k != "LD_PRELOAD"}
    e.update(extra)
    return e


def pairs(bench, threads, extra, flags=()):
    out = subprocess.run([bench, "--threads", str(threads), "--iterations",
                          "2000000", *flags, "16"], env=env(**extra), check=True,
                         capture_output=True, text=True).stdout
    return float(re.search(r"ns_per_pair=([\d.]+)", out).group(1))


def numpy_run(cmd, extra, fixed=True):
    """The best func1 and func2 times (ms) of one run, the script's work
    (s, timed inside it) and the run's wall time (s, with the start and
    exit of its processes)."""
    prefix = ["setarch", os.uname().machine, "-R"] if fixed else []
    t0 = time.perf_counter()
    out = subprocess.run(prefix + cmd, env=env(**extra), check=True,
                         capture_output=True, text=True).stdout
    wall = time.perf_counter() - t0
    best = re.search(r"best: func1 ([\d.]+) ms, func2 ([\d.]+) ms", out)
    work = re.search(r"work: ([\d.]+) s, ([\d.]+) s of CPU", out)
    return (float(best.group(1)), float(best.group(2)), float(work.group(1)),
            wall, float(work.group(2)))


def with_backend(extra, backend, lib):
    """extra with the backend's library preloaded after the shim (if any)."""
    e = dict(extra)
    if lib:
        e["LD_PRELOAD"] = ":".join(x for x in (e.get("LD_PRELOAD"), lib) if x)
    if "MEMTRACE_QUIET" in e:
        e["MEMTRACE_BACKEND"] = backend
    return e


def pair_rows(a, traced, backend, lib, threads):
    """One row of the pairs' table: bare, counting, tracing (and the old
    build's) on backend, min of --repeats interleaved runs."""
    on = lambda extra: with_backend(extra, backend, lib)
    best = {"bare": 1e9, "clock": 1e9, "counting": 1e9, "tracing": 1e9}
    for _ in range(a.repeats):
        best["bare"] = min(best["bare"], pairs(a.bench, threads, on({})))
        best["clock"] = min(best["clock"],
                            pairs(a.bench, threads, on({}), ["--clock"]))
        best["counting"] = min(best["counting"], pairs(
            a.bench, threads, on({"LD_PRELOAD": a.shim, "MEMTRACE_QUIET": "1"})))
        best["tracing"] = min(best["tracing"], pairs(a.bench, threads, on(traced())))
        if a.baseline_shim:
            old = os.path.abspath(a.baseline_shim)
            best["old counting"] = min(best.get("old counting", 1e9), pairs(
                a.bench, threads, on({"LD_PRELOAD": old, "MEMTRACE_QUIET": "1"})))
            best["old tracing"] = min(best.get("old tracing", 1e9), pairs(
                a.bench, threads, on({**traced(), "LD_PRELOAD": old})))
    per_event = (best["tracing"] - best["bare"]) / 2
    clock = (best["clock"] - best["bare"]) / 2
    print(f"  {backend}, {threads} thread(s): bare {best['bare']:.2f}, counting "
          f"{best['counting']:.2f}, tracing {best['tracing']:.2f}: "
          f"+{per_event:.2f} ns per traced event (target 15); a TSC "
          f"read per event would cost {clock:.2f} by itself (bare with a "
          f"read per event {best['clock']:.2f}), the shim reads it for "
          f"one event in eight")
    if a.baseline_shim:
        print(f"    old build: counting {best['old counting']:.2f}, tracing "
              f"{best['old tracing']:.2f} (this build "
              f"{best['counting'] - best['old counting']:+.2f}, "
              f"{best['tracing'] - best['old tracing']:+.2f})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", default=os.path.join(BUILD, "bench", "malloc_pairs"))
    ap.add_argument("--shim", default=os.path.join(BUILD, "shim", "libmemtrace.so"))
    ap.add_argument("--cli", default=os.path.join(BUILD, "analyzers", "memtrace"))
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--baseline-shim", metavar="OLD",
                    help="another build of libmemtrace.so, measured in the "
                         "same rounds of pairs")
    ap.add_argument("--numpy-only", action="store_true",
                    help="only the NumPy workload's timings")
    ap.add_argument("--backends", default="glibc",
                    help="comma-separated: glibc,jemalloc,tcmalloc,mimalloc")
    a = ap.parse_args()
    backends = []
    for b in a.backends.split(","):
        if b not in BACKEND_LIBS:
            sys.exit(f"unknown backend {b!r} (known: {', '.join(BACKEND_LIBS)})")
        lib = backend_lib(b)
        if lib and not os.path.exists(lib):
            print(f"note: skipping {b}: {lib} not found")
            continue
        backends.append((b, lib))
    tmp = tempfile.mkdtemp(prefix="memtrace-bench-")
    trace = os.path.join(tmp, "t.mt")

    def traced():
        # The trace and those of exec'd images (TRACE.1, ...: setarch runs
        # the NumPy script in a second image), or the next run could not
        # create its file and would record nothing.
        for name in os.listdir(tmp):
            if name == "t.mt" or re.fullmatch(r"t\.mt\.\d+", name):
                os.unlink(os.path.join(tmp, name))
        return {"LD_PRELOAD": a.shim, "MEMTRACE_QUIET": "1", "MEMTRACE_OUT": trace}

    if a.numpy_only:
        numpy_timings(a, backends, traced, tmp)
        return
    print("malloc+free pairs of 16 B (ns per pair, min of %d)" % a.repeats)
    for backend, lib in backends:
        for threads in (1, 2):
            pair_rows(a, traced, backend, lib, threads)

    # The reader's speed: a large trace (5 M pairs, ~10 M events) against
    # an empty one read the same way, so process start-up cancels out.
    subprocess.run([a.bench, "--iterations", "5000000", "16"], env=env(**traced()),
                   check=True, capture_output=True)
    big = trace + ".big"
    os.replace(trace, big)
    subprocess.run(["true"], env=env(**traced()), check=True)
    read = {}
    for name, path in (("big", big), ("empty", trace)):
        read[name] = 1e9
        for _ in range(a.repeats):
            t0 = time.perf_counter()
            r = subprocess.run([a.cli, "stat", "--json", path], check=True,
                               capture_output=True)
            read[name] = min(read[name], time.perf_counter() - t0)
        if name == "big":  # the malloc and free events (and a few more)
            calls = json.loads(r.stdout)["calls"]
            n = calls["malloc"] + calls["free"]
    rate = n / (read["big"] - read["empty"]) / 1e6
    print(f"reader: {n} events, {os.path.getsize(big)} bytes, in "
          f"{read['big'] - read['empty']:.3f} s: {rate:.0f} M events/s on one "
          f"core (target 50)")
    os.unlink(big)

    script = [sys.executable if False else "/usr/bin/python3",
              os.path.join(HERE, "numpy_temporaries.py"), "--epochs", "1",
              "--repeats", "100"]
    sizes = {}
    for name, extra in (("plain", {}), ("zstd", {"MEMTRACE_COMPRESS": "1"})):
        e = traced()
        e.update(extra)
        subprocess.run(script, env=env(**e), check=True, capture_output=True)
        sizes[name] = os.path.getsize(trace)
        t0 = time.perf_counter()
        r = subprocess.run([a.cli, "dump", trace], check=True,
                           capture_output=True, text=True)
        events = sum(1 for l in r.stdout.splitlines() if not l.startswith("#"))
        t0 = time.perf_counter()
        subprocess.run([a.cli, "stat", "--json", trace], check=True,
                       capture_output=True)
        read_s = time.perf_counter() - t0
        print(f"NumPy workload, {name}: {sizes[name]} bytes, {events} events, "
              f"{sizes[name] / events:.2f} bytes per event (target 8 plain); "
              f"stat reads it in {read_s * 1e3:.0f} ms")
    if shutil.which("heaptrack"):
        hdir = os.path.join(tmp, "heaptrack")
        os.mkdir(hdir)
        subprocess.run(["heaptrack", "-o", os.path.join(hdir, "h")] + script,
                       env=env(), check=True, capture_output=True)
        hsize = sum(os.path.getsize(os.path.join(hdir, f)) for f in os.listdir(hdir))
        print(f"  heaptrack's file for the same run: {hsize} bytes "
              f"(memtrace zstd: {sizes['zstd']})")

    numpy_timings(a, backends, traced, tmp)


def numpy_timings(a, backends, traced, tmp):
    """func2/func1 tracing against bare, and the whole work counting
    against bare, on each backend."""
    # Each function's best time over --repeats interleaved runs, then the
    # ratio: the least disturbed figure of each, as the other benches.  And
    # the whole work, bare against counting, at the bench's own length (5
    # epochs: 0.25 s on tcmalloc, where one epoch's 0.05 s is timed to
    # 2% by a millisecond).
    script = ["/usr/bin/python3", os.path.join(HERE, "numpy_temporaries.py"),
              "--repeats", "100"]
    for backend, lib in backends:
        on = lambda extra: with_backend(extra, backend, lib)
        runs = (("bare", on({})), ("tracing", on(traced())),
                ("counting", on({"LD_PRELOAD": a.shim, "MEMTRACE_QUIET": "1"})))
        best = {name: [1e9] * 5 for name, _ in runs}
        ratios = []  # the work's CPU, counting over bare, round by round
        for _ in range(a.repeats):
            cpu = {}
            for name, extra in runs:
                times = numpy_run(script, extra)
                best[name] = [min(b, t) for b, t in zip(best[name], times)]
                cpu[name] = times[4]
            ratios.append(cpu["counting"] / cpu["bare"])
        ratios.sort()
        median = ratios[len(ratios) // 2]
        bare = best["bare"][1] / best["bare"][0]
        rec = best["tracing"][1] / best["tracing"][0]
        whole = best["counting"][2] / best["bare"][2]
        fixed = (best["counting"][3] - best["counting"][2]) - (
            best["bare"][3] - best["bare"][2])
        print(f"{backend}: func2/func1 {bare:.3f} without memtrace, {rec:.3f} "
              f"recording ({(rec / bare - 1) * 100:+.1f}%, target within 3%); "
              f"func1 {best['bare'][0]:.3f} / {best['tracing'][0]:.3f} ms, func2 "
              f"{best['bare'][1]:.3f} / {best['tracing'][1]:.3f} ms; the whole "
              f"work {best['bare'][2]:.3f} s bare, {best['counting'][2]:.3f} s "
              f"counting ({(whole - 1) * 100:+.1f}%, target within 2%; its "
              f"CPU {best['bare'][4]:.3f} s bare, {best['counting'][4]:.3f} s "
              f"counting, the rounds' median ratio {(median - 1) * 100:+.1f}%), and "
              f"{fixed:+.3f} s at the start and exit of its two images "
              f"(setarch, python: the kernel counters' tracepoints)")
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
