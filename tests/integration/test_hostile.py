"""Hostile conditions: what programs do that once hung, deadlocked or
crashed a host under the shim (issue 11).  Each test compares with the
bare run and, where a trace is recorded, with what the trace reads back."""
import grp
import json
import os
import pwd
import resource
import signal
import stat
import struct
import subprocess
import tempfile
from pathlib import Path

import pytest

from mt import BACKENDS, CLI, PYTHON, bare_env, program, run, shim_env

MODES = ["counting", "tracing"]


def env_for(backend, mode, tmp_path, **extra):
    if mode == "tracing":
        extra["MEMTRACE_OUT"] = str(tmp_path / "trace.mt")
    return shim_env(backend, **extra)


def stat_json(path):
    """The summary of path's own process (the files its children wrote
    beside it follow, a line each)."""
    r = run([CLI, "stat", "--json", str(path)], os.environ.copy())
    return json.loads(r.stdout.splitlines()[0])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode", MODES)
def test_detached_threads_end_with_the_process(backend, mode, tmp_path):
    """glibc frees the DTVs of dead threads' cached stacks from a thread in
    its teardown, after its TSD destructors ran.  Asking jemalloc for the
    usable size there made it register that thread as a live one, and its
    list of threads then pointed into an unmapped stack (SIGSEGV in about
    one run in three).  The loader's blocks are sized from the shim's own
    table instead."""
    cmd = [program("hostile"), "detached", "20"]
    bare = run(cmd, bare_env(backend), check=False)
    for i in range(4):
        (tmp_path / str(i)).mkdir()
        traced = run(cmd, env_for(backend, mode, tmp_path / str(i)),
                     check=False, timeout=60)
        assert traced.returncode == bare.returncode == 3, traced.stderr
        assert traced.stdout == bare.stdout


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode", MODES)
def test_the_process_ends_with_its_last_thread(backend, mode, tmp_path):
    """The main thread calls pthread_exit; the process ends when its last
    thread does, with status 0, as without the shim, though the shim's own
    threads (trace flusher, sample collector) are still there."""
    cmd = [program("hostile"), "main_exits"]
    bare = run(cmd, bare_env(backend), check=False)
    traced = run(cmd, env_for(backend, mode, tmp_path), check=False,
                 timeout=30)
    assert traced.returncode == bare.returncode == 0, traced.stderr
    assert traced.stdout == bare.stdout == "worker done\n"
    if mode == "tracing":
        s = stat_json(tmp_path / "trace.mt")
        assert s["calls"]["malloc"] >= 1000


@pytest.mark.parametrize("mode", MODES)
def test_the_process_ends_with_its_last_thread_without_proc(mode, tmp_path):
    """The same in a sandbox without /proc (a chroot): the shim looked for
    the program's last thread in /proc/self/task, so with a trace (whose
    threads stay) the process never ended.  glibc's own count of running
    threads says it there."""
    if os.geteuid() != 0:
        pytest.skip("needs root for a mount namespace")
    hide = "mount -t tmpfs none /proc && exec \"$@\""
    cmd = ["unshare", "--mount", "sh", "-c", hide, "sh",
           program("hostile"), "main_exits"]
    traced = run(cmd, env_for("glibc", mode, tmp_path), check=False,
                 timeout=30)
    assert traced.returncode == 0, traced.stderr
    assert traced.stdout == "worker done\n"


@pytest.mark.parametrize("mode", MODES)
def test_a_child_forked_from_a_thread_ends_with_that_thread(mode, tmp_path):
    """The child's only thread is not its main thread's kind: it ends by
    returning from its thread function."""
    cmd = [program("hostile"), "fork_in_thread"]
    traced = run(cmd, env_for("glibc", mode, tmp_path), check=False,
                 timeout=30)
    assert traced.returncode == 0, traced.stderr
    assert traced.stdout == "child status 0\n"


@pytest.mark.parametrize("backend", BACKENDS)
def test_malloc_in_a_signal_handler_under_a_trace(backend, tmp_path):
    """A profiling timer's handler mallocs while the program mallocs.
    Signals arrive mostly on the way back from a system call, so often
    while the thread writes a chunk out: the handler's malloc then waited
    for the buffer's lock its own thread held (a hang on every backend).
    Its events now go to the thread's second buffer, and the trace reads
    back the live figures."""
    cmd = [program("hostile"), "signal_malloc", "2000000"]
    summary = tmp_path / "summary.json"
    trace = tmp_path / "trace.mt"
    r = run(cmd, shim_env(backend, summary=str(summary),
                          MEMTRACE_OUT=str(trace)), check=False, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "pairs 2000000\n"
    live = json.loads(summary.read_text())
    replayed = stat_json(trace)
    assert live["calls"]["malloc"] >= 2000000
    for key in ("malloc", "free"):
        assert replayed["calls"][key] == live["calls"][key]
    for key in ("allocated", "freed"):
        assert replayed["bytes"][key] == live["bytes"][key]


def test_threads_of_a_child_forked_from_a_thread_record(tmp_path):
    """The parent's buffers were all closed in the child but the forking
    thread's, which had none when it had recorded nothing before the fork:
    then the child recorded nothing at all, not even its exit."""
    cmd = [program("hostile"), "fork_threads", "20"]
    r = run(cmd, shim_env("glibc", MEMTRACE_OUT=str(tmp_path / "trace.mt")),
            timeout=120)
    assert r.stdout == "children 20, failed 0\n"
    children = [p for p in tmp_path.iterdir() if p.name != "trace.mt"]
    assert len(children) == 20
    for child in children:
        # 4 threads x 100 mallocs, and what glibc allocates for them
        assert stat_json(child)["calls"]["malloc"] >= 400, child


SUBPROCESSES = """
import subprocess
subprocess.run(["/bin/echo", "spawned"])                        # vfork
subprocess.run(["/bin/echo", "forked"], preexec_fn=lambda: None)  # fork
"""


def test_subprocess_children_record_without_a_word(tmp_path):
    """Python's subprocess closes every descriptor but the ones it passes
    before exec: the forked child's trace descriptor too, which printed a
    warning into the program's stderr and lost the child's exec event.
    The file is opened again by its name.  A vfork'ed child (no fork
    handlers run) found its parent's trace at the name and recorded
    nothing, with a warning."""
    trace = tmp_path / "trace.mt"
    r = run([PYTHON, "-c", SUBPROCESSES],
            shim_env("glibc", MEMTRACE_OUT=str(trace)))
    assert r.stdout == "spawned\nforked\n"
    assert r.stderr == ""
    files = sorted(p.name for p in tmp_path.iterdir())
    # the program; the spawned echo; the forked child and its echo
    assert len(files) == 4, files
    forked = [f for f in files if f.endswith(".1")]
    assert len(forked) == 1
    child = tmp_path / forked[0][:-2]
    dump = run([CLI, "dump", str(child)], os.environ.copy()).stdout
    assert "exec " in dump
    for f in files:
        if tmp_path / f != child:  # (it ended in exec: no summary)
            s = stat_json(tmp_path / f)
            assert s["command"][0] in (PYTHON, "/bin/echo"), s["command"]


def test_quiet_means_quiet_when_kernel_counters_are_missing():
    """Where the syscall tracepoints cannot be read (no tracefs, not root),
    every process, each child and exec'd image too, printed a long notice
    into the program's stderr, MEMTRACE_QUIET or not.  The summary's
    "sources" say it; with QUIET nothing is printed."""
    if os.geteuid() != 0:
        pytest.skip("needs root for a mount namespace")
    hide = "mount -t tmpfs none /sys/kernel/tracing && exec \"$@\""
    cmd = ["unshare", "--mount", "sh", "-c", hide, "sh",
           program("exits"), "return", "3"]
    quiet = run(cmd, shim_env("glibc"), check=False)
    assert quiet.returncode == 3
    assert quiet.stderr == ""
    told = run(cmd, shim_env("glibc", quiet=False), check=False)
    assert "no kernel counters" in told.stderr


END_RECORDING, END_EXIT, END_EXEC, END_EXIT_NOW, END_SIGNAL = range(5)


def trace_status(path):
    """The status chunk of a 1.8 trace (docs/trace-format.md): end, value,
    at, lost."""
    data = path.read_bytes()
    assert data[:8] == b"MEMTRACE"
    at = 24 + struct.unpack_from("<I", data, 12)[0]
    magic, flags, tid, seq, size = struct.unpack_from("<5I", data, at)
    assert (magic, flags, tid, seq, size) == (0x4b43544d, 4, 0, 0, 32)
    return struct.unpack_from("<IiQQ", data, at + 56)


@pytest.mark.parametrize("how,code,end,value", [
    ("return", 3, END_EXIT, 3), ("exit", 5, END_EXIT, 5),
    ("_exit", 6, END_EXIT_NOW, 6), ("quick_exit", 7, END_EXIT_NOW, 7),
    ("abort", 0, END_SIGNAL, signal.SIGABRT),
    ("signal", 0, END_SIGNAL, signal.SIGTERM)])
def test_the_trace_says_how_the_process_ended(how, code, end, value,
                                              tmp_path):
    """Written over the status chunk as recording ends.  SIGTERM (a pool
    ending its workers) takes the process whole: the shim's handler
    writes the closing record as exit would and the process dies of the
    signal; the file said it was still recording, as after SIGKILL.
    quick_exit ends by glibc's own _exit, out of the shim's sight: it
    said the same.  exit's status, a return from main's too, is told to
    the shim by an exit handler (start_main.c); it said -1."""
    trace = tmp_path / "trace.mt"
    cmd = [program("exits"), how, str(code)]
    bare = run(cmd, bare_env("glibc"), check=False)
    r = run(cmd, shim_env("glibc", MEMTRACE_OUT=str(trace)), check=False)
    assert r.returncode == bare.returncode
    assert trace_status(trace)[:2] == (end, value)


INTERRUPTED = """
import os, signal
blocks = [bytearray(300_000) for _ in range(20)]
os.kill(os.getpid(), signal.SIGINT)
"""


@pytest.mark.parametrize("mode", MODES)
def test_a_python_program_ended_by_ctrl_c_keeps_its_figures(mode, tmp_path):
    """A KeyboardInterrupt that ends Python: it sets SIGINT back to the
    default and raises it again, so the process dies of it (status -2).
    The shim's handler, put where the program sets the default, writes the
    summary and the trace's closing record first; they were lost ('0
    findings' from a trace of a run stopped by Ctrl-C: new-user trial 7)."""
    cmd = [PYTHON, "-c", INTERRUPTED]
    # (a job started in the background by a shell without job control
    # inherits SIGINT ignored, and Python then never sees it)
    default = dict(preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    bare = run(cmd, bare_env("glibc"), check=False, **default)
    summary = tmp_path / "s.json"
    r = run(cmd, env_for("glibc", mode, tmp_path, MEMTRACE_SUMMARY=str(summary)),
            check=False, **default)
    assert r.returncode == bare.returncode == -signal.SIGINT
    assert "KeyboardInterrupt" in r.stderr and "KeyboardInterrupt" in bare.stderr
    assert json.loads(summary.read_text())["large"]["allocations"] >= 20
    if mode == "tracing":
        assert trace_status(tmp_path / "trace.mt")[:2] == (END_SIGNAL, signal.SIGINT)


@pytest.mark.parametrize("how", ["small_stack_term", "altstack_term"])
@pytest.mark.parametrize("mode", MODES)
def test_sigterm_on_a_small_stack_ends_the_process_as_without_the_shim(
        how, mode, tmp_path):
    """SIGTERM taken by a thread of PTHREAD_STACK_MIN already deep into
    its stack, or on a signal stack of SIGSTKSZ (as language runtimes set
    one up): the shim's handler wrote the summary there, ran past the stack,
    and the process died of SIGSEGV, where it dies of SIGTERM.  The summary
    is written on a stack of the shim's own, and the Python frames' lines
    left the static TLS each thread's stack gives room to (2.5 KiB)."""
    cmd = [program("hostile"), how]
    bare = run(cmd, bare_env("glibc"), check=False)
    summary = tmp_path / "s.json"
    r = run(cmd, env_for("glibc", mode, tmp_path, MEMTRACE_SUMMARY=str(summary)),
            check=False, timeout=60)
    assert r.returncode == bare.returncode == -signal.SIGTERM, r.stderr
    assert r.stdout == bare.stdout
    assert json.loads(summary.read_text())["calls"]["malloc"] >= 1
    if mode == "tracing":
        assert trace_status(tmp_path / "trace.mt")[:2] == (END_SIGNAL, signal.SIGTERM)


# What the shim's wrappers add to an allocator's own stack: its entry
# points and, on jemalloc, its mmap's (the allocator's system calls pass
# through them) are a few hundred bytes.
WRAPPERS_BYTES = 1024


def least_alternate_stack(cmd_of, env):
    """The smallest alternate stack, in 512-byte steps, on which the
    handler's allocations run."""
    for size in range(2048, 32768, 512):
        if run(cmd_of(size), env, check=False).returncode == 0:
            return size
    pytest.fail("no alternate stack up to 32 KiB was enough")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode", MODES)
def test_a_handler_allocating_on_a_small_alternate_stack_runs_as_bare(
        backend, mode, tmp_path):
    """A handler on an alternate stack (above a guard page) mallocs 1 MiB
    and reallocs a small block to 300000 bytes: the shim followed their
    sites with the unwinder (4 KiB of stack) and took a resident-memory
    sample with sscanf (2 KiB), and the handler ran past its stack where
    bare it needed 3 KiB (glibc) to 5 (mimalloc).  On a stack without
    room for them, the shim takes no site and no sample there."""
    def cmd(size):
        return [program("hostile"), "altstack_malloc", str(size)]
    least = least_alternate_stack(cmd, bare_env(backend))
    r = run(cmd(least + WRAPPERS_BYTES), env_for(backend, mode, tmp_path),
            check=False, timeout=60)
    assert r.returncode == 0, (least, r.returncode, r.stderr)
    assert r.stdout == "handled 100\n"


@pytest.mark.parametrize("mode", MODES)
def test_exit_from_a_handler_on_a_signal_stack_writes_the_summary(
        mode, tmp_path):
    """exit() from a handler on a stack of SIGSTKSZ: the summary, written
    by the shim's destructor there, ran past it (SIGSEGV, status 139 for
    5).  It is written on the shim's own stack where the thread's has too
    little left."""
    cmd = [program("hostile"), "altstack_exit"]
    bare = run(cmd, bare_env("glibc"), check=False)
    summary = tmp_path / "s.json"
    r = run(cmd, env_for("glibc", mode, tmp_path, MEMTRACE_SUMMARY=str(summary)),
            check=False, timeout=60)
    assert r.returncode == bare.returncode == 5, r.stderr
    assert r.stdout == bare.stdout
    assert json.loads(summary.read_text())["large"]["allocations"] >= 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_stack_the_program_made_is_not_unwound_past_its_top(backend, tmp_path):
    """A function run on a stack the program mapped under a guard page,
    entered with a return address into ordinary code (as hand-written
    context switches leave it), mallocs 1 MiB: the unwinder, following
    that address's unwind tables, read past the top (SIGSEGV on every
    allocator).  The shim walks only the stacks it knows the bounds of:
    the thread's own and its alternate stack."""
    cmd = [program("hostile"), "green_stack", "20"]
    bare = run(cmd, bare_env(backend), check=False)
    summary = tmp_path / "s.json"
    r = run(cmd, shim_env(backend, summary=str(summary)), check=False,
            timeout=60)
    assert r.returncode == bare.returncode == 0, r.stderr
    assert r.stdout == bare.stdout
    assert json.loads(summary.read_text())["large"]["allocations"] >= 20


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode", MODES)
def test_a_limit_on_the_address_space_leaves_the_main_stack_as_bare(
        backend, mode, tmp_path):
    """main, 512 KiB deep into its stack with the address space limited to
    what the process has (RLIMIT_AS), frees and mallocs 2 MiB: the large
    block's site was walked below the stack's last page, which could not
    grow (SIGSEGV in nearly half the runs, on every allocator).  Where the
    main stack would have to grow and the address space is limited, the
    site is the caller alone.  (With a trace, the shim's threads map their
    buffers when they first write, which can take what the program's next
    malloc had: its output may then say fewer, as the README says.)"""
    cmd = [program("hostile"), "as_limit", "20"]
    bare = run(cmd, bare_env(backend), check=False)
    assert bare.returncode == 0, bare.stderr
    for i in range(6):
        (tmp_path / str(i)).mkdir()
        summary = tmp_path / str(i) / "s.json"
        r = run(cmd, env_for(backend, mode, tmp_path / str(i),
                             MEMTRACE_SUMMARY=str(summary)),
                check=False, timeout=60)
        assert r.returncode == 0, (i, r.returncode, r.stderr)
        assert bare.stdout == "allocated 20 of 20 at the limit\n"
        if mode == "counting":
            assert r.stdout == bare.stdout
        else:
            assert r.stdout.endswith(" of 20 at the limit\n"), r.stdout
        assert json.loads(summary.read_text())["large"]["allocations"] >= 2


def test_a_crash_is_written_out_before_the_process_dies(tmp_path):
    """SIGSEGV: the shim's handler writes every buffer out, notes the
    signal, and the process dies of it as it would have."""
    trace = tmp_path / "trace.mt"
    cmd = [program("hostile"), "crash", "1000"]
    bare = run(cmd, bare_env("glibc"), check=False)
    r = run(cmd, shim_env("glibc", MEMTRACE_OUT=str(trace)), check=False)
    assert r.returncode == bare.returncode == -signal.SIGSEGV
    assert r.stdout == bare.stdout
    assert trace_status(trace)[:2] == (END_SIGNAL, signal.SIGSEGV)
    # The pairs right before the fault are there (they were in memory:
    # a chunk goes out when full or 100 ms old).
    dump = run([CLI, "dump", str(trace)], os.environ.copy()).stdout
    frees = sum(1 for line in dump.splitlines()
                if line.split()[2:3] == ["free"] and "usable=104" in line)
    assert frees == 1000


@pytest.mark.parametrize("mode", MODES)
def test_the_program_sees_no_handler_of_the_shim(mode, tmp_path):
    """The handlers that write a crash out, or the summary as a signal
    ends the process, are installed where the program left the default,
    and reported as the default."""
    code = ("import signal\n"
            "print([signal.getsignal(s) for s in (signal.SIGSEGV, "
            "signal.SIGBUS, signal.SIGILL, signal.SIGFPE, signal.SIGABRT, "
            "signal.SIGTERM, signal.SIGHUP, signal.SIGALRM, signal.SIGUSR1, "
            "signal.SIGUSR2)])")
    bare = run([PYTHON, "-c", code], bare_env("glibc"))
    shimmed = run([PYTHON, "-c", code], env_for("glibc", mode, tmp_path))
    assert shimmed.stdout == bare.stdout


@pytest.mark.parametrize("mode", MODES)
def test_a_low_descriptor_limit_is_left_to_the_program(mode, tmp_path):
    """Under ulimit -n 30 the shim's descriptors (8 counters, 4 samplers
    and the trace) took the program's lowest numbers, and Python died of
    EMFILE at start-up (test_subprocess's
    test_close_fds_when_max_fd_is_lowered).  Where no window above the
    program's descriptors is left the shim takes none: a number it took
    would be one the program sees and may expect closed.  The kernel
    counters fall back to interposition; a trace is not recorded, and
    that is said."""
    code = "import os; print(sorted(map(int, os.listdir('/proc/self/fd'))))"
    cmd = ["sh", "-c", "ulimit -n 30; exec \"$@\"", "sh", PYTHON, "-c", code]
    bare = run(cmd, bare_env("glibc"))
    traced = run(cmd, env_for("glibc", mode, tmp_path), check=False)
    assert traced.returncode == 0, traced.stderr
    assert traced.stdout == bare.stdout
    if mode == "tracing":  # (sh's image wrote trace.mt, then exec'd)
        assert "descriptor limit" in traced.stderr
        assert not (tmp_path / "trace.mt.1").exists()


LARGE = "300000"  # a large block: the shim follows its site (sites.c)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("args", [["detached", "10"], ["main_exits", "1"],
                                  ["fork_in_thread", "1"], ["fork_threads", "10"]],
                         ids=lambda a: a[0])
def test_large_blocks_behave_as_bare(args, backend, mode, tmp_path):
    """The same hostile programs with large blocks, whose sites the shim
    follows under a lock of its own: detached threads at exit, pthread_exit
    from main, fork from a thread, fork while other threads allocate.
    (Not signal_malloc: with large blocks in the program, a handler's malloc
    crashes or deadlocks glibc and jemalloc without the shim.)"""
    cmd = [program("hostile")] + args + [LARGE]
    bare = run(cmd, bare_env(backend), check=False, timeout=60)
    shimmed = run(cmd, env_for(backend, mode, tmp_path, MEMTRACE_FORCE="1"),
                  check=False, timeout=60)
    assert shimmed.returncode == bare.returncode, shimmed.stderr
    assert shimmed.stdout == bare.stdout


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode,blocks,extra", [
    ("counting", LARGE, {}), ("tracing", LARGE, {}),
    ("tracing", "100", {"MEMTRACE_COMPRESS": "1"})],
    ids=["counting", "tracing", "compressed"])
def test_exit_from_a_signal_handler_while_main_allocates(backend, mode, blocks,
                                                         extra, tmp_path):
    """A timer's handler calls exit() (to run the atexit handlers) while
    main allocates, in regions.  Where it interrupted main in the shim,
    the shim's end waited for ever for a lock main held: the call sites'
    (large blocks: a hang in about one run in three, on every backend),
    the compressor's (a compressed trace: one run in four), the regions'.
    Each now tells its own thread's lock from another's."""
    cmd = [program("hostile"), "exit_in_handler", "50", blocks]
    bare = run(cmd, bare_env(backend), check=False, timeout=30)
    assert bare.returncode == 4
    for i in range(8):
        (tmp_path / str(i)).mkdir()
        env = env_for(backend, mode, tmp_path / str(i),
                      MEMTRACE_SUMMARY=str(tmp_path / str(i) / "s.json"),
                      **extra)
        r = run(cmd, env, check=False, timeout=20)
        assert r.returncode == bare.returncode, r.stderr
        assert r.stdout == bare.stdout == "stopping\n"


BROKEN_PIPE = """
import os, subprocess, sys
r, w = os.pipe()
os.close(r)  # the reader went away
p = subprocess.run(sys.argv[1:], stderr=w, stdout=subprocess.PIPE, text=True)
print(p.returncode, p.stdout, end="")
"""


@pytest.mark.parametrize("extra", [{}, {"MEMTRACE_RSS": "bad"}],
                         ids=["summary", "warning"])
def test_stderr_a_pipe_nobody_reads(extra, tmp_path):
    """The program never writes to stderr, a pipe whose reader is gone;
    the shim's summary at exit (or a warning at start-up) raised SIGPIPE,
    which killed the program (status -13) before its stdout was flushed.
    The shim's writes now take back the SIGPIPE they raise."""
    cmd = [PYTHON, "-c", BROKEN_PIPE, program("exits"), "return", "3"]
    bare = run(cmd, bare_env("glibc"))
    assert bare.stdout == "3 output before exit via return\n"
    r = run(cmd, shim_env("glibc", quiet=False, **extra))
    assert r.stdout == bare.stdout


CLOSED_STDERR = """
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
os.write(fd, b"the program's data\\n")
print(fd)
"""


def test_stderr_closed_and_its_number_reused(tmp_path):
    """Started with stderr closed (prog 2>&-), the program's first file
    gets descriptor 2; the shim's summary at exit went into it.  The shim
    writes to 2 only while it is the file it was at start-up."""
    data = tmp_path / "data"
    cmd = ["sh", "-c", 'exec 2>&- "$@"', "sh", PYTHON, "-c", CLOSED_STDERR,
           str(data)]
    bare = run(cmd, bare_env("glibc"))
    assert bare.stdout == "2\n"
    expected = data.read_text()
    for mode in MODES:
        data.unlink()
        r = run(cmd, env_for("glibc", mode, tmp_path, quiet=False,
                             MEMTRACE_RSS="bad", MEMTRACE_FORCE="1"))
        assert r.stdout == bare.stdout
        assert data.read_text() == expected


def test_a_program_that_closes_its_terminal_stderr_still_shows_the_summary(tmp_path):
    """sort and cat (coreutils' close_stdout) close stderr before they
    exit, and `memtrace run -- sort` at a terminal printed nothing at all.
    Where stderr was a terminal and the program closed it, the terminal is
    opened again for the summary; a file the program put at 2 gets
    nothing (test above)."""
    import pty
    master, slave = pty.openpty()
    p = subprocess.Popen([CLI, "run", "--", "sort", "-n"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=slave,
                         env=bare_env("glibc"))
    os.close(slave)
    out, _ = p.communicate(b"3\n1\n2\n", timeout=60)
    said = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # (EIO: every writer gone)
            break
        if not chunk:
            break
        said += chunk
    os.close(master)
    assert (p.returncode, out) == (0, b"1\n2\n3\n")
    assert b"memtrace: pid" in said and b"calls: malloc" in said, said


ARGS_AND_ENV = """
import hashlib, os, sys
print(len(sys.argv), hashlib.md5("\\0".join(sys.argv).encode()).hexdigest(),
      sum(k.startswith("V_") for k in os.environ), os.environ.get("LAST"))
"""

OTHER_BACKENDS = [b for b in BACKENDS if b != "glibc"]


@pytest.mark.parametrize("backend", OTHER_BACKENDS)
@pytest.mark.parametrize("args,nenv", [
    (["a"] * 5000, 0), (["x" * 1000] * 300, 0), ([], 9000)],
    ids=["5000 arguments", "300 KiB of arguments", "9000 variables"])
def test_the_restart_keeps_every_argument_and_variable(backend, args, nenv):
    """MEMTRACE_BACKEND alone: the shim restarts the program with the
    backend preloaded.  It rebuilt the command line and environment in
    tables of fixed size, and dropped what did not fit, silently: the
    arguments after the 4095th or past 256 KiB, the variables after the
    8191st."""
    cmd = [PYTHON, "-c", ARGS_AND_ENV] + args
    extra = {f"V_{i}": "1" for i in range(nenv)}
    extra["LAST"] = "here"
    bare = run(cmd, bare_env(backend) | extra)
    r = run(cmd, shim_env(backend, reexec=True, **extra))
    assert r.stdout == bare.stdout


@pytest.mark.parametrize("backend", OTHER_BACKENDS)
def test_the_restart_without_proc(backend, tmp_path):
    """Without /proc (a chroot, a sandbox) the restart could read no
    command line and ended the program with status 127; it now takes
    main's arguments and the file execve was given."""
    if os.geteuid() != 0:
        pytest.skip("needs root for a mount namespace")
    hide = "mount -t tmpfs none /proc && exec \"$@\""
    summary = tmp_path / "s.json"
    cmd = [PYTHON, "-c", ARGS_AND_ENV, "a b", "", "c"]
    bare = run(cmd, bare_env(backend) | {"LAST": "1"})
    # (The shim only in the program: unshare and sh run with /proc.)
    env = shim_env(backend, reexec=True, summary=str(summary), LAST="1")
    setenv = [f"{k}={v}" for k, v in env.items() if os.environ.get(k) != v]
    r = run(["unshare", "--mount", "sh", "-c", hide, "sh", "env"] + setenv
            + cmd, bare_env("glibc"), check=False)
    assert r.returncode == 0, r.stderr
    assert r.stdout == bare.stdout
    assert json.loads(summary.read_text())["backend"]["name"] == backend


FILL_AND_FORK = """
import os, stat
os.closerange(3, 1 << 16)  # as daemons do: the shim's descriptors too
fds = []
while True:
    try:
        fds.append(os.open("/dev/null", os.O_RDONLY))
    except OSError:
        break
pid = os.fork()
if pid == 0:
    def null(fd):
        try:
            return stat.S_ISCHR(os.fstat(fd).st_mode)
        except OSError:
            return False
    os._exit(0 if all(map(null, fds)) else 1)
_, status = os.waitpid(pid, 0)
print(len(fds) > 100, os.waitstatus_to_exitcode(status))
"""


@pytest.mark.parametrize("mode", MODES)
def test_a_child_keeps_the_descriptors_that_took_the_shims_numbers(mode,
                                                                   tmp_path):
    """The program closes every descriptor it did not open, the shim's
    counters too, opens files until the limit, some at the numbers the
    counters had, and forks: the shim's fork handler closed its old
    counters' numbers in the child, which were the program's files now.
    It closes a number only while it is still the event it opened."""
    cmd = ["sh", "-c", 'ulimit -n 256; exec "$@"', "sh", PYTHON, "-c",
           FILL_AND_FORK]
    bare = run(cmd, bare_env("glibc"))
    assert bare.stdout == "True 0\n"
    r = run(cmd, env_for("glibc", mode, tmp_path), check=False)
    assert r.stdout == bare.stdout, r.stderr


RAW_CLONE = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
SYS_clone = 56  # x86_64; (flags, stack, parent_tid, child_tid, tls)
pid = libc.syscall(SYS_clone, 17, 0, 0, 0, 0)  # SIGCHLD: fork, no handlers
if pid == 0:
    for i in range(100):
        ctypes.create_string_buffer(300000)
    os._exit(0) if sys.argv[1] == "_exit" else sys.exit(5)
_, status = os.waitpid(pid, 0)
print(os.waitstatus_to_exitcode(status))
"""


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="x86_64 numbers")
@pytest.mark.parametrize("how", ["exit", "_exit"])
def test_a_child_of_a_raw_clone_ends_as_it_would(how, tmp_path):
    """A child made by the clone system call itself (no fork handlers
    run) inherits the shim's state but not its perf rings (the kernel
    does not copy them): with a trace, its exit read them and died of
    SIGSEGV.  The rings are read only in the process that mapped them."""
    cmd = [PYTHON, "-c", RAW_CLONE, how]
    bare = run(cmd, bare_env("glibc"))
    r = run(cmd, env_for("glibc", "tracing", tmp_path), check=False,
            timeout=30)
    assert r.returncode == 0, r.stderr
    assert r.stdout == bare.stdout


PVALLOC = """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.pvalloc.restype = ctypes.c_void_p
for n in (2**64 - 1, 2**64 - 4096, 0, 1):
    ctypes.set_errno(0)
    p = libc.pvalloc(ctypes.c_size_t(n))
    print(n, p is not None, ctypes.get_errno() if p is None else 0)
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_pvalloc_of_the_largest_sizes_fails(backend):
    """On an allocator without pvalloc (jemalloc) the shim makes one from
    memalign: rounded up to whole pages, SIZE_MAX wrapped to 0 and
    pvalloc(SIZE_MAX) returned a block (of no size).  It fails with
    ENOMEM, as glibc's does (which jemalloc's programs call without the
    shim).  The others' own pvalloc answers as without the shim."""
    cmd = [PYTHON, "-c", PVALLOC]
    bare = run(cmd, bare_env(backend))
    r = run(cmd, shim_env(backend))
    assert r.stdout == bare.stdout


ALL_MODES = {
    "counting": {},
    "tracing": {"MEMTRACE_OUT": "trace.mt"},
    "compressed": {"MEMTRACE_OUT": "trace.mt", "MEMTRACE_COMPRESS": "1"},
    "faults": {"MEMTRACE_OUT": "trace.mt", "MEMTRACE_FAULTS": "sample"},
}


def env_all(backend, mode, tmp_path, **extra):
    """The shim in one of ALL_MODES, its files in tmp_path."""
    for k, v in ALL_MODES[mode].items():
        extra[k] = str(tmp_path / v) if k == "MEMTRACE_OUT" else v
    return shim_env(backend, **extra)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode", ALL_MODES)
def test_threads_cancelled_while_they_allocate(backend, mode, tmp_path):
    """Threads that malloc and free are cancelled (deferred).  The shim
    wrote its chunks with glibc's pwritev, a cancellation point: a thread
    cancelled there ended holding its buffer's lock, and the idle flusher
    and exit waited for it for ever.  The shim's own I/O is raw system
    calls, never a cancellation point."""
    cmd = [program("hostile"), "cancel", "30"]
    bare = run(cmd, bare_env(backend), check=False)
    r = run(cmd, env_all(backend, mode, tmp_path), check=False, timeout=20)
    assert r.returncode == bare.returncode == 0, r.stderr
    assert r.stdout == bare.stdout


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode", ALL_MODES)
def test_free_is_not_a_cancellation_point(backend, mode, tmp_path):
    """A thread with a cancellation pending frees a large block: without a
    trace the shim samples resident memory there, with glibc's pread, a
    cancellation point, so the thread was cancelled inside free and the
    code after it never ran."""
    cmd = [program("hostile"), "cancel_free"]
    bare = run(cmd, bare_env(backend), check=False)
    assert bare.stdout == "1 pairs, then cancelled\n"
    r = run(cmd, env_all(backend, mode, tmp_path), check=False, timeout=20)
    assert r.returncode == bare.returncode, r.stderr
    assert r.stdout == bare.stdout


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode", ALL_MODES)
@pytest.mark.parametrize("blocks", ["0", "30"])
def test_a_file_size_limit_does_not_kill_the_program(backend, mode, blocks,
                                                     tmp_path):
    """Under ulimit -f the shim's write past the limit raised SIGXFSZ,
    whose default action killed the program (status 153): at once with
    -f 0 (the trace's header, or the summary at exit), and with threads
    whenever a chunk was placed past the limit.  The signal is blocked
    around the shim's writes, the one raised taken back, and the limit
    reads as a full disk: one warning, the program runs on."""
    cmd = ["sh", "-c", 'ulimit -f "$0"; exec "$@"', blocks,
           program("hostile"), "cancel", "20"]
    bare = run(cmd, bare_env(backend), check=False)
    r = run(cmd, env_all(backend, mode, tmp_path,
                         summary=str(tmp_path / "summary.json")),
            check=False, timeout=20)
    assert r.returncode == bare.returncode == 0, r.stderr
    assert r.stdout == bare.stdout
    if blocks == "0" or mode != "counting":  # (a summary fits in 30)
        assert "memtrace: warning: " in r.stderr


def test_a_summary_path_that_is_not_a_regular_file_stays_what_it_is(
        tmp_path):
    """MEMTRACE_SUMMARY=/dev/null (or a FIFO, or /dev/stdout, a link) was
    replaced by a regular file: the summary went to a temporary name that
    was renamed over the path, so as root /dev/null itself became a file.
    Such a path is written into (appended to), never replaced; a FIFO with
    no reader is not waited for, and a full device is one warning."""
    if os.geteuid() != 0:
        pytest.skip("needs root for mknod")
    os.mknod(tmp_path / "null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    os.mknod(tmp_path / "full", 0o666 | stat.S_IFCHR, os.makedev(1, 7))
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "out").write_text("the program's output\n")
    os.symlink("out", tmp_path / "link")
    cmd = [program("hostile"), "cancel", "1"]
    bare = run(cmd, bare_env("glibc"))
    for name in ("null", "full", "fifo", "link"):
        r = run(cmd, shim_env("glibc", summary=str(tmp_path / name)),
                check=False, timeout=20)
        assert r.returncode == 0, r.stderr
        assert r.stdout == bare.stdout
        assert ("warning" in r.stderr) == (name in ("full", "fifo")), \
            r.stderr
    for name, kind in (("null", stat.S_ISCHR), ("full", stat.S_ISCHR),
                       ("fifo", stat.S_ISFIFO), ("link", stat.S_ISLNK)):
        assert kind(os.lstat(tmp_path / name).st_mode), name
    assert sorted(os.listdir(tmp_path)) == ["fifo", "full", "link", "null",
                                            "out"]
    out = (tmp_path / "out").read_text()
    assert out.startswith("the program's output\n{")
    json.loads(out.split("\n", 1)[1])


def vm_size_kib(env):
    r = run(["grep", "VmSize", "/proc/self/status"], env)
    return int(r.stdout.split()[1])


@pytest.mark.parametrize("mode", ["tracing", "compressed", "faults"])
def test_the_shims_threads_take_no_malloc_arena(mode, tmp_path):
    """The shim's threads (flusher, sampler, collector) were started
    through the shim's own pthread_create, whose start frees a block in
    the new thread: glibc gave each a malloc arena, 64 MiB of address
    space, about 200 MiB in all.  Under ulimit -v the program's own
    threads then could not be created (EAGAIN) where they could bare."""
    extra = vm_size_kib(env_all("glibc", mode, tmp_path)) - \
        vm_size_kib(bare_env("glibc"))
    assert extra < 64 * 1024, f"{extra} KiB more address space"
    cmd = ["sh", "-c", 'ulimit -v 250000; exec "$@"', "sh",
           program("hostile"), "cancel", "3"]
    bare = run(cmd, bare_env("glibc"), check=False)
    (tmp_path / "run").mkdir()
    r = run(cmd, env_all("glibc", mode, tmp_path / "run"), check=False,
            timeout=20)
    assert r.returncode == bare.returncode == 0, r.stdout + r.stderr
    assert r.stdout == bare.stdout


def as_nobody(nproc):
    """For preexec_fn: the child runs as nobody (a user with no other
    process here), at most nproc processes and threads."""
    uid, gid = pwd.getpwnam("nobody").pw_uid, grp.getgrnam("nogroup").gr_gid

    def drop():
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)
        resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
    return drop


@pytest.mark.skipif(os.geteuid() != 0, reason="runs the program as nobody")
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode", ["tracing", "faults"])
@pytest.mark.parametrize("what", [["cancel", "3"], ["forks", "4"],
                                  ["shells", "3"]],
                         ids=["threads", "processes", "shells"])
def test_a_tight_limit_on_threads_leaves_the_program_its_threads(backend,
                                                                 mode, what):
    """RLIMIT_NPROC counts a user's threads and processes (root is
    exempt): with the fewest that let the program start its threads, or
    fork its children, bare, its pthread_create or fork failed (EAGAIN)
    under a trace, whose writer, sampler and collector threads took two or
    three of them.  Now the shim's threads stop for good when the
    program's thread or process cannot start, and say so; the trace is
    still written.  (popen and system start their shells through glibc's
    own posix_spawn, which the shim does not see: their failures are told
    by what they return.)"""
    cmd = [program("hostile")] + what
    d = Path(tempfile.mkdtemp(prefix="mt-nproc-"))
    os.chmod(d, 0o777)
    try:
        limited_as_nobody(cmd, backend, mode, d)
    finally:
        for f in d.iterdir():
            f.unlink()
        d.rmdir()


def limited_as_nobody(cmd, backend, mode, d):
    """The least RLIMIT_NPROC cmd needs bare as nobody, then cmd under the
    shim at that limit, its trace in d."""
    # (a build nobody cannot read, a checkout in root's home say: nothing
    # to test here)
    try:
        free = subprocess.run(cmd, env=env_all(backend, mode, d),
                              preexec_fn=as_nobody(4096), capture_output=True,
                              text=True, timeout=60)
    except (PermissionError, KeyError) as e:  # (KeyError: no nobody)
        pytest.skip(f"nobody cannot run the build here: {e}")
    if free.returncode != 0 or not (d / "trace.mt").exists():
        pytest.skip(f"nobody cannot run the build under the shim here: "
                    f"{free.stderr[-300:]}")
    for f in d.iterdir():
        f.unlink()
    bare = None
    for least in range(2, 33):
        bare = subprocess.run(cmd, env=bare_env(backend),
                              preexec_fn=as_nobody(least),
                              capture_output=True, text=True)
        if bare.returncode == 0:
            break
    assert bare.returncode == 0, bare.stderr
    r = subprocess.run(cmd, env=env_all(backend, mode, d),
                       preexec_fn=as_nobody(least), capture_output=True,
                       text=True, timeout=60)
    assert (r.returncode, r.stdout) == (0, bare.stdout), (least, r.stderr)
    # (popen's shells are exec'd under the shim and start its threads
    # afresh, taking the room the parent's gave up: whether the parent's
    # were running when its popen failed is a race; the program's results
    # are what holds)
    if cmd[1] != "shells":
        assert "memtrace stopped its own" in r.stderr
    assert stat_json(d / "trace.mt")["calls"]["malloc"] >= 4


@pytest.mark.parametrize("backend", BACKENDS)
def test_many_short_threads_reuse_the_shims_blocks(backend, tmp_path):
    """1,000 threads made and ended one round after another.  glibc frees
    NULL at each thread's very end, after the TSD destructors gave the
    thread's counter block back: that free took a block again, which
    nothing gave back, so each thread ever made kept one (an mmap each:
    10,000 threads, 36 MiB and 7x the time, growing quadratically as each
    attach walked them all)."""
    cmd = [program("hostile"), "cancel", "250"]
    summary = tmp_path / "summary.json"
    r = run(cmd, shim_env(backend, summary=str(summary), MEMTRACE_PERF="0"),
            timeout=60)
    assert r.stdout == "cancelled 250 rounds of 4 threads\n"
    s = json.loads(summary.read_text())
    assert s["threads"] >= 1000
    assert s["shim_syscalls"]["mmap"] < 100, s["shim_syscalls"]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode", ALL_MODES)
@pytest.mark.parametrize("how", [["prctl"], ["syscall"], ["syscall", "tsync"],
                                 ["prctl", "fork"], ["prctl", "exec"]],
                         ids=["prctl", "seccomp", "seccomp-tsync", "prctl-fork",
                              "prctl-exec"])
def test_a_seccomp_sandbox_does_not_kill_the_program(backend, mode, how,
                                                     tmp_path):
    """A program that installs a seccomp filter killing the process on any
    system call but the memory ones, write and exit: the shim's own calls
    (the summary's /proc reads and writes, the trace's pwritev, its
    threads' sleeps) killed it with SIGSYS where bare it exits 3.  Now the
    shim writes out what it has before the filter goes in, and makes no
    system call after it: nor in a child forked after it, whose fork
    handler (getpid, the kernel counters) and _exit (getpid) were killed
    by the filter it inherits, where bare it exits 4; nor in an image it
    execs, which inherits the filter too and starts without memtrace (its
    start-up killed it, where bare the image ran)."""
    bare = subprocess.run([program("sandboxed")] + how, env=bare_env(backend),
                          capture_output=True, text=True)
    assert bare.returncode == 3 and bare.stdout == "sandboxed: done\n"
    r = subprocess.run([program("sandboxed")] + how,
                       env=env_all(backend, mode, tmp_path),
                       capture_output=True, text=True, timeout=60)
    assert (r.returncode, r.stdout) == (3, bare.stdout), r.stderr
    assert "seccomp filter" in r.stderr
    if "MEMTRACE_OUT" in ALL_MODES[mode]:
        s = stat_json(tmp_path / ALL_MODES[mode]["MEMTRACE_OUT"])
        assert s["calls"]["malloc"] >= 20  # the 20 rounds before the filter


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode", ALL_MODES)
def test_large_blocks_on_stacks_that_come_and_go(backend, mode, tmp_path):
    """Coroutines on stacks mapped and unmapped in turn, a handler on an
    alternate stack mapped and unmapped: the shim unwinds each large
    block's stack and remembers the walks by where their return addresses
    lay, and never reads a stack that is gone (the same output, status 0),
    and every block is put on its code."""
    exe = program("coroutines")
    bare = subprocess.run([exe], env=bare_env(backend), capture_output=True,
                          text=True)
    r = subprocess.run([exe], env=env_all(backend, mode, tmp_path,
                                          MEMTRACE_SUMMARY=str(tmp_path / "s.json")),
                       capture_output=True, text=True, timeout=60)
    assert (r.returncode, r.stdout) == (0, bare.stdout), r.stderr
    sites = json.loads((tmp_path / "s.json").read_text())["sites"]
    made = sum(x["large"]["allocations"] for x in sites)
    assert made >= 700, made  # 600 in the coroutines, 100 in the handler


@pytest.mark.parametrize("backend", ["glibc", "mimalloc"])
@pytest.mark.parametrize("mode", ALL_MODES)
def test_fork_in_a_signal_handler_of_a_single_threaded_program(backend, mode,
                                                               tmp_path):
    """A program of one thread forks in a profiling timer's handler,
    wherever main is, inside malloc or free too; each child allocates and
    exits 3.  glibc's fork and malloc take no lock in a process of one
    thread, but the shim's threads (with a trace) made it one of several:
    the fork, or the child's first malloc, waited for ever for the arena's
    lock the interrupted malloc held (15 hangs in 20 runs).  The program's
    thread is alone to glibc while the shim's are the only others.
    (jemalloc's and tcmalloc's own fork handlers take their locks: those
    hang without the shim too.)"""
    if backend not in BACKENDS:
        pytest.skip(f"{backend} is not installed")
    cmd = [program("hostile"), "fork_in_handler", "40"]
    bare = run(cmd, bare_env(backend), check=False, timeout=30)
    assert bare.stdout == "forked 40 children, 0 failed\n"
    for i in range(3):
        (tmp_path / str(i)).mkdir()
        r = run(cmd, env_all(backend, mode, tmp_path / str(i)), check=False,
                timeout=30)
        assert (r.returncode, r.stdout) == (bare.returncode, bare.stdout), \
            r.stderr


def test_setuid_reaches_the_shims_threads(tmp_path):
    """The program's thread is alone to glibc while the shim's are the
    only others (above); setuid and its kind must still change the
    credentials of the shim's threads, or they would keep root's."""
    if os.geteuid() != 0:
        pytest.skip("needs root")
    code = ("import os\n"
            "os.setresuid(65534, 65534, 65534)\n"
            "for t in os.listdir('/proc/self/task'):\n"
            "    s = open(f'/proc/self/task/{t}/status').read()\n"
            "    print([l.split()[1:] for l in s.splitlines()\n"
            "           if l.startswith('Uid:')][0])\n")
    os.chmod(tmp_path, 0o777)
    r = run([PYTHON, "-c", code],
            env_all("glibc", "tracing", tmp_path), timeout=30)
    lines = r.stdout.splitlines()
    assert len(lines) >= 3, r.stdout  # the program's and the shim's
    assert set(lines) == {"['65534', '65534', '65534', '65534']"}, r.stdout


def test_a_relative_summary_path_is_where_the_program_started(tmp_path):
    """MEMTRACE_SUMMARY=s.json names a file in the directory the program
    started in, as MEMTRACE_OUT does: a program that changes directory
    does not carry its summary along (nor into a chroot)."""
    (tmp_path / "sub").mkdir()
    env = shim_env("glibc", summary="s.json")
    run([PYTHON, "-c", "import os; os.chdir('sub')"], env, cwd=tmp_path)
    assert (tmp_path / "s.json").exists()
    assert not (tmp_path / "sub" / "s.json").exists()
