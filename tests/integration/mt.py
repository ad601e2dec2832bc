"""Running programs under libmemtrace.so and reading what it reports."""
import json
import os
import re
import subprocess
import tempfile

SHIM = os.environ["MEMTRACE_SHIM"]
CLI = os.environ["MEMTRACE_CLI"]
PROGRAMS = os.environ["MEMTRACE_TEST_PROGRAMS"]
BACKENDS = os.environ.get("MEMTRACE_TEST_BACKENDS", "glibc").split(",")
PYTHON = "/usr/bin/python3"

LIBDIR = "/usr/lib/" + subprocess.run(
    ["gcc", "-print-multiarch"], capture_output=True, text=True
).stdout.strip()
BACKEND_LIBS = {
    "glibc": None,
    "jemalloc": LIBDIR + "/libjemalloc.so.2",
    "tcmalloc": LIBDIR + "/libtcmalloc_minimal.so.4",
    "mimalloc": LIBDIR + "/libmimalloc.so.2",
}


def _mount_tracefs():
    """The kernel counters read syscall tracepoint ids from tracefs; on a
    fresh machine it may not be mounted yet (perf and memtrace mount it)."""
    if os.path.exists("/sys/kernel/tracing/events") or os.geteuid() != 0:
        return
    subprocess.run(["mount", "-t", "tracefs", "nodev", "/sys/kernel/tracing"],
                   capture_output=True)


_mount_tracefs()


def program(name):
    return os.path.join(PROGRAMS, name)


def fixed_layout(cmd):
    """cmd with address-space randomisation off, so that what an allocator
    does depends on the program alone: tcmalloc, for one, sometimes needs
    one more sbrk to align its heap, depending on where the break starts."""
    return ["setarch", os.uname().machine, "-R"] + list(cmd)


def clean_env(**extra):
    """The test's environment without any MEMTRACE_ or LD_PRELOAD setting."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("MEMTRACE_") and k != "LD_PRELOAD"}
    env.update(extra)
    return env


def bare_env(backend):
    """The program on `backend` without memtrace."""
    lib = BACKEND_LIBS[backend]
    return clean_env(**({"LD_PRELOAD": lib} if lib else {}))


def shim_env(backend, summary=None, quiet=True, reexec=False, **extra):
    """The program under memtrace, with the backend preloaded right after
    the shim, as `memtrace run` does; with `reexec`, the way a user writes
    it by hand (MEMTRACE_BACKEND alone: the shim restarts the program once
    with the backend preloaded)."""
    lib = BACKEND_LIBS.get(backend)
    preload = SHIM if reexec or not lib else SHIM + ":" + lib
    env = clean_env(LD_PRELOAD=preload, MEMTRACE_BACKEND=backend, **extra)
    if quiet:
        env["MEMTRACE_QUIET"] = "1"
    if summary:
        env["MEMTRACE_SUMMARY"] = summary
    return env


def run(cmd, env, check=True, **kw):
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, **kw)
    if check and r.returncode != 0:
        raise AssertionError(
            f"{cmd} exited {r.returncode}\nstdout: {r.stdout}\nstderr: {r.stderr}")
    return r


def summaries(cmd, backend, **extra):
    """Run cmd under the shim; return ({pid: summary}, completed process)."""
    with tempfile.TemporaryDirectory() as d:
        r = run(cmd, shim_env(backend, summary=os.path.join(d, "%p.json"), **extra))
        out = {}
        for name in os.listdir(d):
            with open(os.path.join(d, name)) as f:
                s = json.load(f)
            out[s["pid"]] = s
        return out, r


def summary(cmd, backend, **extra):
    """The summary of a single-process command."""
    found, _ = summaries(cmd, backend, **extra)
    assert len(found) == 1, f"expected one summary, got {sorted(found)}"
    return next(iter(found.values()))


def strace_counts(cmd, env, syscalls=("brk", "mmap", "munmap", "mremap", "madvise"),
                  alone=False):
    """Per-syscall counts from `strace -f -c` for one run of cmd in env,
    with a fixed address-space layout.  Only cmd gets env (through env(1));
    strace, setarch and env run bare, so that nothing but cmd varies.
    alone: strace sets the environment itself (-E) and traces cmd from its
    exec, so that nothing else exec'd (env, setarch) is counted."""
    base = clean_env()
    setenv = [f"{k}={v}" for k, v in env.items() if base.get(k) != v]
    trace = ["strace", "-f", "-c", "-e", "trace=" + ",".join(syscalls)]
    with tempfile.NamedTemporaryFile("r", suffix=".strace") as out:
        if alone:
            run(fixed_layout(trace + ["-o", out.name]
                             + [a for v in setenv for a in ("-E", v)] + list(cmd)),
                base)
        else:
            run(trace + ["-o", out.name] + fixed_layout(["env"] + setenv + list(cmd)),
                base)
        counts = dict.fromkeys(syscalls, 0)
        for line in out.read().splitlines():
            m = re.match(r"\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)$", line)
            if m and m.group(2) in counts:
                counts[m.group(2)] = int(m.group(1))
        return counts


def perf_stat_faults(cmd, env):
    """page-faults from perf stat for one run of cmd, with env given to cmd
    alone (perf itself runs bare)."""
    base = clean_env()
    setenv = [f"{k}={v}" for k, v in env.items() if base.get(k) != v]
    r = run(["perf", "stat", "-x,", "-e", "page-faults"]
            + fixed_layout(["env"] + setenv + cmd), base)
    for line in r.stderr.splitlines():
        fields = line.split(",")
        if len(fields) > 2 and fields[2].startswith("page-faults"):
            return int(fields[0])
    raise AssertionError("no page-faults line in perf stat output:\n" + r.stderr)


# A child's peak RSS (ru_maxrss) includes the memory of the process that
# forked it, up to its exec: measured from pytest, it is pytest's.  So the
# command is forked from a small process of its own, which reports.
_PEAK_RSS = """
import os, sys
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as f:
    f.write(f"{os.waitstatus_to_exitcode(status)} {usage.ru_maxrss}")
"""


def run_peak_rss(cmd, env, **kw):
    """(CompletedProcess, peak RSS in KiB) of cmd, measured apart from the
    test's own memory."""
    with tempfile.NamedTemporaryFile("r") as report:
        r = subprocess.run([PYTHON, "-c", _PEAK_RSS, report.name] + list(cmd),
                           env=env, text=True, **kw)
        code, rss = map(int, report.read().split())
    r.returncode = code
    return r, rss


def line_of(path, text):
    """The number of path's first line that holds text."""
    with open(path) as f:
        return next(i for i, line in enumerate(f, 1) if text in line)
