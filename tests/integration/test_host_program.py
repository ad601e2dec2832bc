"""Never break the host program: the same output, the same exit status and
the same open files, with and without the shim, whichever way it exits."""
import json
import os
import re
import shutil
import time

import pytest

from mt import (BACKEND_LIBS, BACKENDS, PYTHON, SHIM, bare_env, clean_env,
                program, run, shim_env)

EXITS = [("return", 0), ("return", 3), ("exit", 5), ("_exit", 6),
         ("quick_exit", 7), ("thread", 4), ("abort", 0), ("signal", 0)]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("how,code", EXITS)
def test_same_output_and_status(backend, how, code):
    cmd = [program("exits"), how, str(code)]
    bare = run(cmd, bare_env(backend), check=False)
    traced = run(cmd, shim_env(backend, quiet=False), check=False)
    assert traced.stdout == bare.stdout
    assert traced.returncode == bare.returncode
    assert "error" not in traced.stderr
    # A summary when the process exits through exit() or _exit (Python's
    # os._exit), or a signal that ends it whole takes it (SIGTERM: the
    # shim writes it on the way); none (and no crash) when it aborts.
    has_summary = "memtrace: pid" in traced.stderr
    assert has_summary == (how in ("return", "exit", "_exit", "quick_exit",
                                   "thread", "signal"))


@pytest.mark.parametrize("extra", [{}, {"MEMTRACE_OUT": "trace.mt"},
                                   {"MEMTRACE_OUT": "trace.mt",
                                    "MEMTRACE_FAULTS": "sample"}])
def test_signals_for_the_process_reach_the_program(extra, tmp_path):
    """The shim's own threads (the trace's flusher, the sample collector)
    block every signal, so one sent to the process while the program blocks
    it waits for the program's sigwait."""
    cmd = [program("exits"), "sigwait", "0"]
    if "MEMTRACE_OUT" in extra:
        extra = dict(extra, MEMTRACE_OUT=str(tmp_path / extra["MEMTRACE_OUT"]))
    traced = run(cmd, shim_env("glibc", **extra), check=False)
    assert traced.returncode == 0, traced
    assert "got signal 10" in traced.stdout


@pytest.mark.parametrize("extra", [{}, {"MEMTRACE_OUT": "trace.mt"},
                                   {"MEMTRACE_OUT": "trace.mt",
                                    "MEMTRACE_FAULTS": "sample"}])
@pytest.mark.parametrize("how", ["libc", "syscall"])
def test_a_new_user_namespace_can_be_entered(how, extra, tmp_path):
    """The kernel lets only a process of one thread unshare a user
    namespace: the shim's threads (the trace's flusher, the sample
    collector) step aside for the call, libc's unshare or the system call
    made through syscall() (which failed with EINVAL: hostile trial 2)."""
    cmd = (["unshare", "--user", "true"] if how == "libc" else
           [PYTHON, "-c", "import ctypes, os, sys; "
            "libc = ctypes.CDLL(None, use_errno=True); "
            "sys.exit(libc.syscall(272, 0x10000000) and ctypes.get_errno())"])
    if run(cmd, bare_env("glibc"), check=False).returncode != 0:
        pytest.skip("user namespaces are not allowed here")
    if "MEMTRACE_OUT" in extra:
        extra = dict(extra, MEMTRACE_OUT=str(tmp_path / extra["MEMTRACE_OUT"]))
    traced = run(cmd, shim_env("glibc", **extra), check=False)
    assert traced.returncode == 0, traced.stderr


REPLACE_FDS = """
import os, resource, sys
limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
f = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o600)
for fd in range(3, limit):  # every other descriptor becomes this file
    if fd != f:
        os.dup2(f, fd)
blocks = [bytearray(100) for _ in range(300000)]  # events to write out
del blocks
print(os.path.getsize(sys.argv[1]))
"""


def test_a_program_that_replaces_every_descriptor_keeps_its_files(tmp_path):
    """dup2 over the trace's descriptor: the shim notices before its next
    chunk, stops recording with one warning, and writes nothing into the
    program's file."""
    target = tmp_path / "program-file"
    r = run([PYTHON, "-c", REPLACE_FDS, str(target)],
            shim_env("glibc", MEMTRACE_OUT=str(tmp_path / "t.mt")),
            check=False)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "0"
    assert target.stat().st_size == 0
    assert "closed or replaced its descriptor" in r.stderr


LIST_FDS = r"""
import fcntl, json, os, re, resource
fds = {}
for name in os.listdir('/proc/self/fd'):
    fd = int(name)
    try:
        # pipe:[123] -> pipe: the numbers differ from run to run.
        target = re.sub(r':\[\d+\]$', '', os.readlink(f'/proc/self/fd/{fd}'))
        fds[fd] = [target,
                   bool(fcntl.fcntl(fd, fcntl.F_GETFD) & fcntl.FD_CLOEXEC)]
    except OSError:
        pass  # the directory listing's own descriptor
print(json.dumps({"fds": fds, "limit": resource.getrlimit(resource.RLIMIT_NOFILE)[0]}))
"""


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("trace", [False, True])
def test_no_file_descriptor_leaks_into_the_program(backend, trace, tmp_path):
    """The program's own descriptors are the same; the shim's kernel
    counters (and its trace file) sit at the top of the range, closed on
    exec, where the lowest free number (what open() returns) never
    reaches."""
    bare = json.loads(run([PYTHON, "-c", LIST_FDS], bare_env(backend)).stdout)
    extra = {"MEMTRACE_OUT": str(tmp_path / "t.mt")} if trace else {}
    traced = json.loads(run([PYTHON, "-c", LIST_FDS],
                            shim_env(backend, summary=str(tmp_path / "s.json"),
                                     **extra)).stdout)
    low = {k: v for k, v in traced["fds"].items() if int(k) < 64}
    high = {k: v for k, v in traced["fds"].items() if int(k) >= 64}
    assert low == bare["fds"]
    # (and one connection to memtrace-hold, which keeps the tracepoints)
    ours = {"anon_inode:[perf_event]", str(tmp_path / "t.mt"), "socket"}
    assert [t for t, _ in high.values()].count("socket") <= 1, high
    for fd, (target, cloexec) in high.items():
        # resident memory, and what mappings held as they were unmapped
        statm = re.fullmatch(r"/proc/\d+/(statm|pagemap)", target)
        assert (target in ours or statm) and cloexec, (fd, target)
        assert int(fd) >= traced["limit"] - 64
    if trace:
        assert str(tmp_path / "t.mt") in [t for t, _ in high.values()]


@pytest.mark.parametrize("backend", BACKENDS)
def test_shell_pipeline_and_children(backend):
    script = "echo one; printf 'two\\nthree\\n' | sort -r; ls /nonexistent-x; exit 3"
    bare = run(["sh", "-c", script], bare_env(backend), check=False)
    traced = run(["sh", "-c", script], shim_env(backend), check=False)
    assert (traced.stdout, traced.returncode) == (bare.stdout, bare.returncode)
    assert traced.returncode == 3


def test_malloc_perturb_stays_the_programs(tmp_path):
    """MALLOC_PERTURB_ (meson test sets it) fills every block glibc hands
    out: the shim's start-up probe of glibc's mapped chunks (64 MiB) must
    not be filled (the process had 64 MiB more resident from its first
    moment, in every summary's peak RSS), and the program's blocks must
    still be.  (A block above the tcache's sizes: glibc does not fill one
    it takes from its tcache, and the probe's small blocks may be there.)"""
    src = tmp_path / "pt.c"
    src.write_text("#include <stdio.h>\n#include <stdlib.h>\n"
                   "int main(void) { volatile unsigned char *p = malloc(5000);"
                   " printf(\"%d\\n\", p[10]); return 0; }\n")
    exe = tmp_path / "pt"
    run(["gcc", "-O0", str(src), "-o", str(exe)], clean_env())
    bare = run([str(exe)], clean_env(MALLOC_PERTURB_="77")).stdout
    summary_path = tmp_path / "s.json"
    shim = run([str(exe)], shim_env("glibc", summary=str(summary_path),
                                   MALLOC_PERTURB_="77")).stdout
    assert shim == bare == f"{77 ^ 0xff}\n"
    peak = json.loads(summary_path.read_text())["peak_rss_bytes"]
    assert peak < 32 << 20, peak


@pytest.mark.parametrize("extra", [{}, {"MEMTRACE_OUT": "trace.mt"},
                                   {"MEMTRACE_SITES": "sample:1"}])
def test_the_programs_heap_is_laid_out_as_without_the_shim(extra, tmp_path):
    """The shim's own allocations as it starts (the unwinder it loads, its
    threads, its fork handlers, the check of glibc's chunk headers) stay
    out of the program's heap: its blocks sit where they would bare, and a
    realloc that grows in place bare does under the shim (1.2 KiB of the
    shim's moved every block, and a buffer doubled by realloc made 135
    mremap calls where it made 120 bare).  Nor is the heap set up before
    main: the check's malloc made glibc's per-thread cache in a heap of its
    own, the program's blocks then came from it and the break moved at
    other times, and a program of aligned blocks grew and trimmed its heap
    802 and 396 times where it did 488 and 238 bare (new-user trial 27)."""
    env = dict(extra)
    if "MEMTRACE_OUT" in env:
        env["MEMTRACE_OUT"] = str(tmp_path / env["MEMTRACE_OUT"])
    cmd = [program("heap_layout")]
    bare = run(cmd, bare_env("glibc"))
    shim = run(cmd, shim_env("glibc", **env))
    assert shim.stdout == bare.stdout, (bare.stdout, shim.stdout)


@pytest.mark.parametrize("backend", ["jemalloc", "mimalloc"])
def test_the_shim_leaves_no_block_of_its_own_in_the_allocators_heap(backend):
    """A lookup of the shim's that fails as it starts (tc_nallocx on
    mimalloc) left dlerror's message, 90 bytes, live in the allocator's
    heap: on mimalloc it kept a segment that every 256 KiB-8 MiB request
    then reused, where bare each made one anew, and the program ran in
    0.37 s of CPU under the shim against 0.49 s bare (new-user trial 47).
    The allocator's count at main, and where its first small blocks fall,
    are as bare (jemalloc and mimalloc place them alike from run to run;
    glibc's heap starts at a random offset, heap_layout's test above)."""
    if backend not in BACKENDS:
        pytest.skip("%s not installed" % backend)
    cmd = [program("allocated_at_start")]
    bare = run(cmd, bare_env(backend))
    shim = run(cmd, shim_env(backend))
    assert shim.stdout == bare.stdout, (bare.stdout, shim.stdout)


@pytest.mark.parametrize("backend", BACKENDS)
def test_resident_memory_is_looked_at_a_bounded_number_of_times(backend,
                                                                 tmp_path):
    """A string rebuilt by s = s + piece past 1 MiB: the live bytes fall by
    half at every step.  The look after glibc's first malloc after a fall
    took the live bytes with the new block as where the next fall starts,
    so each step was a fall: three reads of /proc/self/statm a step,
    36,000 a second, a second of system time in six (new-user trial 8).
    A look costs some 6 us; at most one each 20 ms period, and one per
    eighth of growth and sixteenth of a fall: a few hundred a second at
    the most."""
    s = tmp_path / "s.json"
    run([program("string_rebuild"), "2", "40000"],
        shim_env(backend, summary=str(s)))
    summary = json.loads(s.read_text())
    looks = summary["resident"]["samples"]
    assert looks <= 10 + 300 * summary["wall_s"], (looks, summary["wall_s"])


HOLDER_SEEN = r"""
import os, signal, socket, time
got = []
signal.signal(signal.SIGCHLD, lambda *a: got.append(1))
bufs = [bytearray(1 << 20) for _ in range(20)]
held = "not held"
for _ in range(300):  # (it starts beside the program: on a busy machine, later)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect("\0memtrace-hold-%d" % os.getuid())
        held = "held"
        break
    except OSError:
        s.close()
        time.sleep(0.01)
try:
    os.waitpid(-1, os.WNOHANG)
    children = "a child"
except ChildProcessError:
    children = "no child"
me = os.getpid()
kids = open(f"/proc/{me}/task/{me}/children").read().split()
print(held, children, kids, len(got))
"""


def in_new_netns(cmd):
    """cmd where no memtrace-hold listens yet (abstract sockets are per
    network namespace): the shim there starts one."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("a network namespace of its own needs root")
    return ["unshare", "--net", "--"] + cmd


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_tracepoint_holder_is_no_child_of_the_program(backend):
    """The shim starts memtrace-hold (so that no process's exit waits for
    the kernel to unregister the syscall tracepoints) where none runs: the
    program sees no child of it, no SIGCHLD, and wait() finds nothing;
    the holder listens afterwards."""
    r = run(in_new_netns([PYTHON, "-c", HOLDER_SEEN]), shim_env(backend))
    assert r.stdout.split("\n")[0] == "held no child [] 0", r.stdout + r.stderr


def test_no_tracepoint_holder_under_a_tracer():
    """strace -f follows children: a holder started under it would keep it
    waiting after the program ended.  None is started."""
    if not shutil.which("strace"):
        pytest.skip("strace not installed")
    start = time.monotonic()
    shim = shim_env("glibc")
    # (strace itself not under the shim: the program alone)
    r = run(in_new_netns(["strace", "-f", "-o", "/dev/null", "env"] +
                         [f"{k}={v}" for k, v in shim.items()] +
                         [PYTHON, "-c", HOLDER_SEEN]), clean_env())
    assert r.stdout.startswith("not held no child [] 0"), r.stdout + r.stderr
    assert time.monotonic() - start < 30


ALLOCATOR_LIBS = sorted({lib for lib in (
    BACKEND_LIBS[b] for b in BACKENDS if BACKEND_LIBS.get(b)) if lib}
    | {lib.replace("_minimal", "") for b in BACKENDS
       if (lib := BACKEND_LIBS.get(b)) and "tcmalloc" in lib
       and os.path.exists(lib.replace("_minimal", ""))})


@pytest.mark.parametrize("lib", ALLOCATOR_LIBS)
def test_an_allocator_preloaded_before_the_shim_runs_as_without_it(lib,
                                                                   tmp_path):
    """LD_PRELOAD=libjemalloc.so.2:libmemtrace.so, the user's own order:
    the allocator maps memory in its own start-up, through the shim's mmap,
    before the shim's constructor ran.  Resolving every symbol there opened
    libc, whose dlopen allocated from that allocator: jemalloc and the full
    tcmalloc waited for ever on the lock they held, mimalloc recursed until
    its stack ran out.  Now the program runs as without the shim, which
    says once why it records nothing."""
    code = ("import sys; d = {i: str(i) * 3 for i in range(50000)}; "
            "print(len(d), sum(map(len, d.values()))); sys.exit(3)")
    summary = tmp_path / "s.json"
    bare = run([PYTHON, "-c", code], clean_env(LD_PRELOAD=lib), check=False,
               timeout=60)
    under = run([PYTHON, "-c", code],
                clean_env(LD_PRELOAD=lib + ":" + SHIM,
                          MEMTRACE_SUMMARY=str(summary)),
                check=False, timeout=60)
    assert (under.returncode, under.stdout) == (bare.returncode, bare.stdout)
    assert bare.returncode == 3
    warnings = [l for l in under.stderr.splitlines() if "memtrace" in l]
    assert len(warnings) == 1, under.stderr
    assert (lib + " defines malloc and comes before libmemtrace.so"
            in warnings[0]), warnings
    assert "LD_PRELOAD=libmemtrace.so:" + lib in warnings[0]
    assert "memtrace run --backend " in warnings[0]
    assert not summary.exists()


REAPER = """
import os
child = os.fork()
if child == 0:
    os._exit(7)
reaped = []
while True:
    try:
        reaped.append(os.wait()[0] == child)
    except ChildProcessError:
        break
print(reaped)
"""


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"),
                    reason="needs root for a pid and network namespace")
def test_an_init_that_waits_for_all_its_children_ends(tmp_path):
    """PID 1 of a namespace (a container's init), or a subreaper, waits for
    all its children.  Where no memtrace-hold was reachable (a network
    namespace of its own) the shim started one, orphaned, which became the
    init's child and waited for the init to end: it never did.  The shim
    starts none there."""
    cmd = ["timeout", "-s", "KILL", "60", "unshare", "-pfn", "--mount-proc",
           "env", "LD_PRELOAD=" + SHIM, "MEMTRACE_QUIET=1", PYTHON, "-c",
           REAPER]
    bare = run(cmd[:8] + cmd[10:], clean_env(), check=False)
    r = run(cmd, clean_env(), check=False)
    assert bare.stdout == "[True]\n", bare
    assert (r.returncode, r.stdout) == (bare.returncode, bare.stdout), r.stderr


DONTUNMAP_HINT = """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = libc.mremap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                      ctypes.c_int, ctypes.c_int, ctypes.c_long]
libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
libc.mremap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t,
                        ctypes.c_int, ctypes.c_void_p]
n = 1 << 20
old = libc.mmap(None, n, 3, 0x22, -1, 0)
hint = libc.mmap(None, 4 * n, 3, 0x22, -1, 0)
libc.munmap(hint, 4 * n)
hint += n
new = libc.mremap(old, n, n, 1 | 4, hint)  # MREMAP_MAYMOVE | MREMAP_DONTUNMAP
print("at the hint" if new == hint else "elsewhere" if new != 2**64 - 1
      else "failed %d" % ctypes.get_errno())
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_mremap_passes_the_address_a_dontunmap_move_asks_for(backend):
    """mremap's fifth argument is read by the kernel with MREMAP_FIXED, and
    as a hint with MREMAP_DONTUNMAP: the shim passed it with the first
    only, and the mapping moved elsewhere than bare."""
    cmd = [PYTHON, "-c", DONTUNMAP_HINT]
    bare = run(cmd, bare_env(backend))
    r = run(cmd, shim_env(backend))
    assert r.stdout == bare.stdout
