#!/usr/bin/python3
"""CPython's regrtest under the shim, compared test case by test case with bare.

For each module, backend and mode, runs `python3 -m test -v --timeout T MODULE`
bare (glibc: nothing preloaded; another backend: its library in LD_PRELOAD)
and under the shim (LD_PRELOAD=<shim> MEMTRACE_BACKEND=<backend>
MEMTRACE_QUIET=1; tracing adds MEMTRACE_OUT=<tmpdir>/trace.%p), and reports
every test case whose result differs from bare, runs that hang or crash, and
lines the shim printed into the program's output.  A test case that
differs is run again alone, bare and under the shim, up to --reruns times
each: if the shim's run then gives a result the bare one gives too, the
case is flaky under load (regrtest's stress tests fail bare on a busy
machine) and is listed as such, not counted.  Ends with "N differ";
exit status 0 when N is 0, 1 otherwise, 2 on bad arguments.

regrtest's --timeout bounds each module run (it prints "Timeout" and
exits); a run still alive --grace seconds later is killed as hung.  Either
way the test case running then is reported, and the cases it never reached
as one line.  Each run's
output stays in --logdir (NAME.BACKEND.MODE.log, with a .json of its exit),
which --from-logs compares again without running anything.  Before any run,
each backend is checked: the shim must write a summary naming it.

Needs Debian's libpython3.11-testsuite.  Examples (2 cores):

  # everything: 84 runs, about 25 minutes with -j2 (more with hangs);
  # --bare-on glibc: 63 runs
  tests/cpython/regrtest_matrix.py --shim build/shim/libmemtrace.so -j2
  # a CI subset: about 5 minutes
  tests/cpython/regrtest_matrix.py -j2 --timeout 150 --grace 30 \\
      --modules test_subprocess,test_threading,test_gc --backends glibc,jemalloc
  # under a minute (24 runs)
  tests/cpython/regrtest_matrix.py --modules test_gc,test_mmap -j2
"""

import argparse
import concurrent.futures
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

ALL_MODULES = ["test_threading", "test_subprocess", "test_signal", "test_os",
               "test_mmap", "test_gc", "test_weakref"]
ALL_BACKENDS = ["glibc", "jemalloc", "tcmalloc", "mimalloc"]
ALL_MODES = ["counting", "tracing"]
LIBDIR = "/usr/lib/x86_64-linux-gnu"
BACKEND_LIBS = {
    "glibc": None,
    "jemalloc": LIBDIR + "/libjemalloc.so.2",
    "tcmalloc": LIBDIR + "/libtcmalloc_minimal.so.4",
    "mimalloc": LIBDIR + "/libmimalloc.so.2",
}
# Rough bare durations on 2 cores, to start the longest runs first.
WEIGHT = {"test_subprocess": 90, "test_threading": 40, "test_signal": 40,
          "test_os": 15, "test_weakref": 15, "test_mmap": 5, "test_gc": 5}

# "test_x (test.test_mod.Class.test_x) ... ok"; the description may be
# followed by a docstring line, and the status by the test's own output.
HEAD_RE = re.compile(r"^(\w+) \(((?:test\.)?[\w.]+)\)(?: \.\.\. (.*)|)$")
DOC_RE = re.compile(r"^.* \.\.\. (.*)$")
STATUS_RE = re.compile(r"(ok|FAIL|ERROR|skipped(?: .*)?|expected failure|"
                       r"unexpected success)")
SUMMARY_RE = re.compile(r"^(FAIL|ERROR): (\w+) \(([\w.]+)\)")
TIMEOUT_RE = re.compile(r"Timeout \(\d+:\d\d:\d\d\)!$")


def status_of(text):
    """The unittest status a line (or its end) carries, or None."""
    text = text.strip()
    m = STATUS_RE.fullmatch(text)
    if m:
        return m.group(1)
    # The test wrote to the stream without a newline before its status.
    m = re.search(r"(?:^|\W)(ok|FAIL|ERROR)$", text)
    return m.group(1) if m else None


def parse(text):
    """Map test id -> status from regrtest -v output; also the test that was
    running when the output ended (None if none)."""
    results = {}
    pending = None          # id whose status has not come yet
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        m = HEAD_RE.match(line)
        if m:
            name, tid, rest = m.group(1), m.group(2), m.group(3)
            if rest is None and i + 1 < len(lines):
                d = DOC_RE.match(lines[i + 1])       # docstring line
                if d and not HEAD_RE.match(lines[i + 1]):
                    rest = d.group(1)
                    i += 1
            pending = tid
            if rest is not None and status_of(rest):
                results[tid] = status_of(rest)
                pending = None
        elif pending and status_of(line):
            results[pending] = status_of(line)
            pending = None
        i += 1
    # The summary at the end is authoritative (subtests, setUpClass errors).
    for line in lines:
        m = SUMMARY_RE.match(line)
        if m:
            kind, name, where = m.groups()
            tid = where if where.endswith("." + name) else where + "." + name
            if results.get(tid) != "ERROR":
                results[tid] = kind
    return results, pending


def norm(status):
    if status is None:
        return "missing"
    return "skipped" if status.startswith("skipped") else status


def environment(backend, mode, shim, tmp):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("MEMTRACE_") and k not in ("LD_PRELOAD",)}
    env["TMPDIR"] = tmp
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if mode == "bare":
        if BACKEND_LIBS[backend]:
            env["LD_PRELOAD"] = BACKEND_LIBS[backend]
    else:
        env["LD_PRELOAD"] = shim
        env["MEMTRACE_BACKEND"] = backend
        env["MEMTRACE_QUIET"] = "1"
        if mode == "tracing":
            env["MEMTRACE_OUT"] = os.path.join(tmp, "trace.%p")
    return env


def preflight(backend, args):
    """None if the shim runs Python on this backend (it writes a summary
    naming it), else what went wrong."""
    tmp = tempfile.mkdtemp(prefix=f"rtm.preflight.{backend}.", dir=args.tmpdir)
    try:
        env = environment(backend, "counting", args.shim, tmp)
        env["MEMTRACE_SUMMARY"] = os.path.join(tmp, "summary.%p.json")
        r = subprocess.run([args.python, "-c", "pass"], env=env,
                           capture_output=True, timeout=60)
        names = [f for f in os.listdir(tmp) if f.startswith("summary.")]
        if r.returncode or not names:
            return (f"exit {r.returncode}, {len(names)} summaries: "
                    + r.stderr.decode(errors="replace").strip()[-300:])
        with open(os.path.join(tmp, names[0])) as f:
            got = json.load(f).get("backend", {}).get("name")
        return None if got == backend else f"summary names backend {got!r}"
    except (OSError, ValueError, subprocess.TimeoutExpired) as e:
        return str(e)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run_one(module, backend, mode, args, logdir, case=None, attempt=0):
    """Run MODULE (or only its test CASE) once; its analyzed outcome."""
    name = f"{module}.{backend}.{mode}"
    if case:
        name += f".{case.rsplit('.', 1)[-1]}.{attempt}"
    tmp = tempfile.mkdtemp(prefix=f"rtm.{name}.", dir=args.tmpdir)
    log = os.path.join(logdir, f"{name}.log")
    cmd = [args.python, "-m", "test", "-v", "--timeout", str(args.timeout)]
    for pattern in args.ignore:
        cmd += ["-i", pattern]
    if case:
        cmd += ["-m", case]
    cmd.append(module)
    env = environment(backend, mode, args.shim, tmp)
    start = time.monotonic()
    hung = False
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=tmp, env=env, stdin=subprocess.DEVNULL,
                                stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            rc = proc.wait(timeout=args.timeout + args.grace)
        except subprocess.TimeoutExpired:
            hung = True
            os.killpg(proc.pid, signal.SIGKILL)
            rc = proc.wait()
    wall = time.monotonic() - start
    # Whatever the run left in its process group (daemons, stuck children).
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    traces = [f for f in os.listdir(tmp) if f.startswith("trace.")]
    trace_bytes = sum(os.path.getsize(os.path.join(tmp, f)) for f in traces
                      if os.path.isfile(os.path.join(tmp, f)))
    if not args.keep:
        shutil.rmtree(tmp, ignore_errors=True)
    meta = {"module": module, "backend": backend, "mode": mode, "rc": rc,
            "hung": hung, "wall": wall, "traces": len(traces),
            "trace_bytes": trace_bytes, "log": log}
    with open(log[:-len(".log")] + ".json", "w") as f:
        json.dump(meta, f)
    return analyze(meta)


def analyze(meta):
    """One run's outcome and per-case results from its log."""
    rc, log = meta["rc"], meta["log"]
    text = open(log, "rb").read().decode("utf-8", "replace")
    results, running = parse(text)
    timed_out = any(TIMEOUT_RE.search(l) for l in text.splitlines())
    if meta["hung"]:
        outcome = "HANG"
    elif timed_out:
        outcome = "TIMEOUT"
    elif rc < 0:
        outcome = f"SIG{signal.Signals(-rc).name[3:]}" if -rc in \
            signal.valid_signals() else f"signal {-rc}"
    else:
        # A test's child may print "Fatal Python error" on purpose: only
        # a run that ends without regrtest's verdict crashed.
        m = re.search(r"^Tests result: (\S+)", text, re.M)
        outcome = m.group(1) if m else (
            "FATAL" if "Fatal Python error" in text else f"exit {rc}")
    if running and outcome not in ("SUCCESS", "FAILURE"):
        results[running] = outcome
    noise = [l for l in text.splitlines() if re.search(r"memtrace", l, re.I)]
    return dict(meta, outcome=outcome, results=results, running=running,
                noise=noise)


def confirm(diff, args, logdir):
    """Run a differing case alone, bare and under the shim in turn, up to
    args.reruns times each.  True if the difference stands: no result of
    the shim's runs is one the bare runs gave."""
    m, b, mode, tid = diff["module"], diff["backend"], diff["mode"], \
        diff["test"]
    bare, shim = {diff["bare"]}, {diff["shim"]}
    for attempt in range(args.reruns):
        for which, seen in (("bare", bare), (mode, shim)):
            r = run_one(m, b, which, args, logdir, case=tid, attempt=attempt)
            # A case that cannot run alone proves nothing.
            if tid in r["results"]:
                seen.add(norm(r["results"][tid]))
        if bare & shim:
            diff["detail"] = (f"flaky: alone, bare gave {sorted(bare)}, "
                              f"the shim {sorted(shim)}")
            return False
    diff["detail"] += f" (alone, {args.reruns}x each: bare {sorted(bare)}, " \
        f"shim {sorted(shim)})"
    return True


def compare(bare, run):
    """Differences of one shim run from its bare run."""
    diffs = []
    notrun = []
    ended = run["outcome"] not in ("SUCCESS", "FAILURE", "NO_TESTS_RAN",
                                   "ENV_CHANGED") and \
        not run["outcome"].startswith("exit")
    for tid in sorted(set(bare["results"]) | set(run["results"])):
        b, r = norm(bare["results"].get(tid)), norm(run["results"].get(tid))
        if b != r and r == "missing" and ended:
            notrun.append(tid)      # never reached: the run hung or died
        elif b != r:
            diffs.append({"kind": "case", "test": tid, "bare": b, "shim": r,
                          "detail": run["results"].get(tid) or ""})
    if notrun:
        diffs.append({"kind": "notrun", "test": f"({len(notrun)} later cases)",
                      "bare": "run", "shim": "not run",
                      "detail": f"after {run['outcome']}"})
    if run["outcome"] != bare["outcome"] and not diffs:
        diffs.append({"kind": "run", "test": "(whole run)",
                      "bare": bare["outcome"], "shim": run["outcome"],
                      "detail": f"exit {bare['rc']} -> {run['rc']}"})
    def shape(line):
        # One entry per kind of message: the test that was running, pids,
        # the run's directory and the text a test wrapped around it go.
        line = line[line.find("memtrace"):] if "memtrace" in line else line
        line = re.sub(r"/\S*/rtm\.[^/\s]+", "$TMP", line)
        return re.sub(r"\d+", "N", line)
    bare_shapes = {shape(l) for l in bare["noise"]}
    seen = {}
    for line in map(shape, run["noise"]):
        if line not in bare_shapes:
            seen[line] = seen.get(line, 0) + 1
    for line, n in seen.items():
        diffs.append({"kind": "output", "test": "(output)", "bare": "",
                      "shim": f"{n}x", "detail": line[:240]})
    return diffs


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--modules", default=",".join(ALL_MODULES),
                   help="comma-separated regrtest modules (default: %(default)s)")
    p.add_argument("--backends", default=",".join(ALL_BACKENDS),
                   help="comma-separated (default: %(default)s)")
    p.add_argument("--bare-on", metavar="BACKENDS",
                   help="comma-separated: the backends run bare (default: "
                        "every one); another backend's runs are compared "
                        "with the first of these, and a case that differs "
                        "is run again alone on its own backend, bare and "
                        "under the shim, so that an allocator's own "
                        "difference is not the shim's (regrtest's results "
                        "bare were the same on the four)")
    p.add_argument("--modes", default=",".join(ALL_MODES),
                   help="counting,tracing (default: %(default)s)")
    p.add_argument("-j", "--jobs", type=int, default=1,
                   help="runs at the same time (default: 1)")
    p.add_argument("--shim", default=os.environ.get(
        "MEMTRACE_SHIM", os.path.join(root, "build/shim/libmemtrace.so")),
                   help="the shim (default: $MEMTRACE_SHIM or build/shim/...)")
    p.add_argument("--python", default="/usr/bin/python3")
    p.add_argument("--timeout", type=int, default=300,
                   help="regrtest --timeout, seconds: for the whole module "
                        "(test_subprocess takes up to 70 s traced on 2 "
                        "cores); a run is killed as hung after "
                        "timeout+grace (default: 300)")
    p.add_argument("--grace", type=int, default=60)
    p.add_argument("--reruns", type=int, default=3,
                   help="times a differing case is run again alone, bare "
                        "and under the shim, before it counts; 0: never "
                        "(default: %(default)s)")
    p.add_argument("-i", "--ignore", action="append", default=[],
                   metavar="PATTERN", help="regrtest -i: skip matching test "
                   "cases in every run (a known hang); repeatable")
    p.add_argument("--logdir", help="keep each run's output here "
                   "(default: a new directory under /tmp, printed)")
    p.add_argument("--tmpdir", default=None, help="where runs write (TMPDIR)")
    p.add_argument("--keep", action="store_true",
                   help="keep each run's directory (traces)")
    p.add_argument("--json", help="write all results to this file")
    p.add_argument("--from-logs", metavar="LOGDIR",
                   help="run nothing: compare the runs recorded in LOGDIR")
    args = p.parse_args()

    def split(s, allowed):
        items = [x for x in s.split(",") if x]
        bad = [x for x in items if allowed and x not in allowed]
        if bad or not items:
            p.error(f"unknown {bad or s!r}; choose from {','.join(allowed)}")
        return items
    modules = split(args.modules, None)
    backends = split(args.backends, ALL_BACKENDS)
    modes = split(args.modes, ALL_MODES)
    bare_on = split(args.bare_on, backends) if args.bare_on else backends
    args.shim = os.path.abspath(args.shim)
    if not os.path.exists(args.shim):
        p.error(f"no shim at {args.shim} (build it, or pass --shim)")
    for b in backends:
        if BACKEND_LIBS[b] and not os.path.exists(BACKEND_LIBS[b]):
            p.error(f"backend {b}: {BACKEND_LIBS[b]} is not installed")
    for m in modules:
        if not os.path.exists(f"/usr/lib/python3.11/test/{m}.py") and \
                not os.path.isdir(f"/usr/lib/python3.11/test/{m}"):
            p.error(f"no regrtest module {m} (apt-get install "
                    "libpython3.11-testsuite)")
    logdir = args.from_logs or args.logdir or \
        tempfile.mkdtemp(prefix="regrtest_matrix.")
    os.makedirs(logdir, exist_ok=True)
    print(f"shim {args.shim}; logs in {logdir}", flush=True)

    if not args.from_logs:
        for b in backends:
            why = preflight(b, args)
            if why:
                print(f"the shim does not run on {b}: {why}", file=sys.stderr)
                return 2
    started = time.monotonic()
    def modes_of(b):
        return (["bare"] if b in bare_on else []) + modes
    jobs = [(m, b, mode) for m in modules for b in backends
            for mode in modes_of(b)]
    jobs.sort(key=lambda j: -WEIGHT.get(j[0], 20))
    runs = {}
    lock = threading.Lock()
    if args.from_logs:
        for j in jobs:
            name = os.path.join(args.from_logs, ".".join(j) + ".json")
            if not os.path.exists(name):
                p.error(f"{name}: no such run recorded")
            with open(name) as f:
                meta = json.load(f)
            meta["log"] = name[:-len(".json")] + ".log"
            runs[j] = analyze(meta)
        jobs = []
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        futs = {pool.submit(run_one, *j, args, logdir): j for j in jobs}
        for f in concurrent.futures.as_completed(futs):
            r = f.result()
            with lock:
                runs[futs[f]] = r
                print(f"  {r['module']:16} {r['backend']:9} {r['mode']:9} "
                      f"{r['outcome']:8} {r['wall']:6.1f}s "
                      f"{len(r['results'])} cases"
                      + (f", {r['traces']} traces {r['trace_bytes'] >> 20} MiB"
                         if r['mode'] == "tracing" else ""), flush=True)

    total = 0
    all_diffs = []
    all_flaky = []
    cols = [(b, mode) for b in backends for mode in modes_of(b)]
    width = 17
    print()
    short = {"bare": "bare", "counting": "count", "tracing": "trace"}
    print(f"{'module':16}" + "".join(f"{b + '/' + short[mo]:>{width}}"
                                     for b, mo in cols))
    for m in modules:
        cells = []
        for b, mode in cols:
            r = runs[(m, b, mode)]
            if mode == "bare":
                cells.append(f"{r['outcome'][:7]} {r['wall']:.0f}s")
                continue
            d = compare(runs.get((m, b, "bare")) or runs[(m, bare_on[0], "bare")], r)
            for x in d:
                x.update(module=m, backend=b, mode=mode)
            if args.reruns and not args.from_logs:
                flaky = [x for x in d if x["kind"] == "case" and
                         not confirm(x, args, logdir)]
                all_flaky += flaky
                d = [x for x in d if x not in flaky]
            all_diffs += d
            total += len(d)
            tag = "same" if not d else f"{len(d)} diff"
            if r["outcome"] in ("HANG", "TIMEOUT") or r["outcome"].startswith(
                    "SIG") or r["outcome"] == "FATAL":
                tag = r["outcome"]
            cells.append(f"{tag} {r['wall']:.0f}s")
        print(f"{m:16}" + "".join(f"{c:>{width}}" for c in cells))
    if all_diffs:
        print()
        for d in all_diffs:
            print(f"{d['module']} {d['backend']}/{d['mode']}: {d['test']}: "
                  f"{d['bare']} -> {d['shim']}"
                  + (f"  [{d['detail']}]" if d['detail'] and
                     d['detail'] != d['shim'] else ""))
    if all_flaky:
        print()
        for d in all_flaky:
            print(f"not counted: {d['module']} {d['backend']}/{d['mode']}: "
                  f"{d['test']}: {d['bare']} -> {d['shim']}  [{d['detail']}]")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"runs": [{k: v for k, v in r.items()}
                                for r in runs.values()],
                       "differences": all_diffs, "flaky": all_flaky},
                      f, indent=1)
    if not args.from_logs:
        print(f"{len(runs)} runs in {time.monotonic() - started:.0f} s "
              f"(-j{args.jobs})")
    print(f"{total} differ")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
