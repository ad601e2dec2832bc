#!/usr/bin/python3
"""What LTTng recording costs per event, in one invocation, on the same
microbenchmark (malloc+free pairs of 16 B, one thread):

  * bare;
  * memtrace's native trace (MEMTRACE_OUT);
  * memtrace's tracepoints (MEMTRACE_LTTNG=1) in an active LTTng session;
  * lttng-ust's own liblttng-ust-libc-wrapper.so in an active session.

Each LTTng run has a session of its own (large buffers, so that events are
kept rather than discarded); the events babeltrace2 reads back are counted,
so a cheap run that dropped events shows as such.  Minimum of --repeats
interleaved runs.  A benchmark, not a test: it prints figures and exits 0.
Needs a session daemon (lttng-sessiond --daemonize)."""
import argparse
import os
import re
import shutil
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.join(HERE, "..", "build")
WRAPPER = "/usr/lib/x86_64-linux-gnu/liblttng-ust-libc-wrapper.so.1"
PAIRS = 200000


def env(**extra):
    e = {k: v for k, v in os.environ.items()
         if not k.startswith("MEMTRACE_") and k != "LD_PRELOAD"}
    e.update(extra)
    return e


def pairs(bench, extra):
    out = subprocess.run([bench, "--threads", "1", "--iterations",
                          str(PAIRS), "16"], env=env(**extra), check=True,
                         capture_output=True, text=True).stdout
    return float(re.search(r"ns_per_pair=([\d.]+)", out).group(1))


def lttng(*args):
    subprocess.run(["lttng", *args], check=True, capture_output=True)


def in_session(out_dir, events, run):
    """run() inside a fresh session recording `events`; returns its result
    and how many events the trace holds."""
    name = "mt-bench-%d" % os.getpid()
    shutil.rmtree(out_dir, ignore_errors=True)
    lttng("create", name, "--output", out_dir)
    try:
        lttng("enable-channel", "--userspace", "-s", name, "--subbuf-size",
              "8M", "--num-subbuf", "8", "big")
        lttng("enable-event", "--userspace", "-s", name, "-c", "big", events)
        lttng("start", name)
        result = run()
        lttng("stop", name)
    finally:
        lttng("destroy", name)
    listing = subprocess.run(["babeltrace2", out_dir], capture_output=True,
                             text=True).stdout
    return result, listing.count("\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", default=os.path.join(BUILD, "bench", "malloc_pairs"))
    ap.add_argument("--shim", default=os.path.join(BUILD, "shim", "libmemtrace.so"))
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    if not shutil.which("lttng"):
        raise SystemExit("lttng_cost: needs lttng-tools (apt-get install "
                         "lttng-tools)")
    tmp = tempfile.mkdtemp(prefix="memtrace-lttng-bench-")
    trace = os.path.join(tmp, "t.mt")
    shim = {"LD_PRELOAD": a.shim, "MEMTRACE_QUIET": "1"}

    def native():
        if os.path.exists(trace):
            os.unlink(trace)
        return pairs(a.bench, dict(shim, MEMTRACE_OUT=trace))

    modes = {
        "bare": lambda: (pairs(a.bench, {}), None),
        "memtrace native trace": lambda: (native(), None),
        "memtrace LTTng": lambda: in_session(
            os.path.join(tmp, "m"), "memtrace:*",
            lambda: pairs(a.bench, dict(shim, MEMTRACE_LTTNG="1"))),
        "liblttng-ust-libc-wrapper": lambda: in_session(
            os.path.join(tmp, "w"), "lttng_ust_libc:*",
            lambda: pairs(a.bench, {"LD_PRELOAD": WRAPPER})),
    }
    best = {m: 1e9 for m in modes}
    recorded = {}
    for _ in range(a.repeats):
        for m, run in modes.items():
            ns, events = run()
            best[m] = min(best[m], ns)
            if events is not None:
                recorded[m] = events
    print(f"malloc+free pairs of 16 B, {PAIRS} pairs, ns per pair "
          f"(min of {a.repeats}):")
    for m in modes:
        added = (best[m] - best["bare"]) / 2
        kept = (f", {recorded[m]} events in the trace" if m in recorded
                else "")
        print(f"  {m:28s} {best[m]:7.2f}  +{added:6.2f} ns per event{kept}")
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
