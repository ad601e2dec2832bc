"""LTTng-UST output, with a real session daemon: `memtrace run --lttng`
records the memtrace:* tracepoints, babeltrace2 lists them, and one run
recording both ways gives LTTng exactly the events of the native trace.
Without MEMTRACE_LTTNG, lttng-ust is not even loaded."""
import collections
import os

import pytest

from lttng_session import (HANG, NUMPY_SCRIPT, PROVIDER, lttng, needs_lttng,
                           record, sessiond)
from mt import CLI, PYTHON, SHIM, clean_env, program, run, shim_env, summary

pytestmark = needs_lttng


def test_the_provider_is_built_next_to_the_shim():
    assert PROVIDER == os.path.join(os.path.dirname(SHIM),
                                    "libmemtrace-lttng.so")
    assert os.path.exists(PROVIDER)


def lttng_counts(trace_dir):
    """How many of each memtrace:* event babeltrace2 lists."""
    out = run(["babeltrace2", str(trace_dir)], clean_env()).stdout
    names = [line.split()[3].rstrip(":") for line in out.splitlines()]
    return collections.Counter(n.split(":", 1)[1] for n in names
                               if n.startswith("memtrace:"))


# The native dump's event kinds that are tracepoints of the same name
# (include/memtrace/trace_events.h; the malloc API and libc calls are named
# after their entry point).
NATIVE_AS_LTTNG = {"free", "malloc_usable_size", "sys", "kernel_call",
                   "heap_move", "chunk_map", "page_fault", "baseline", "exit",
                   "counters", "region_name", "region_begin", "region_end",
                   "samples_lost"}
# Events that reach LTTng as memtrace:event (their name is a field).
NATIVE_AS_GENERIC = {"rss", "block_site", "unmap_touched", "chunk_remap",
                     "malloc_trim", "purge_touched", "own_purge_again",
                     "progress"}


def native_counts(path):
    # The file header holds what LTTng gets as the process's first event.
    counts = collections.Counter(metadata=1)
    for line in run([CLI, "dump", str(path)], clean_env()).stdout.splitlines():
        if line.startswith("#"):
            continue
        parts = line.split()
        kind = parts[2]
        fields = dict(p.split("=", 1) for p in parts[3:] if "=" in p)
        if kind in ("alloc", "realloc", "syscall"):
            counts[fields["entry"]] += 1
        elif kind in NATIVE_AS_LTTNG:
            counts[kind] += 1
        elif kind in NATIVE_AS_GENERIC:
            counts["event"] += 1
    return counts


def both_ways(tmp_path, name, cmd, **extra):
    native = tmp_path / (name + ".mt")
    env = shim_env("glibc", MEMTRACE_OUT=str(native), MEMTRACE_LTTNG="1",
                   **extra)
    trace_dir = record(tmp_path, name, cmd, env)
    return native_counts(native), lttng_counts(trace_dir)


def test_known_calls_reach_lttng_exactly_as_the_native_trace(sessiond,
                                                             tmp_path):
    native, recorded = both_ways(tmp_path, "known", [program("known_calls"),
                                                     "50"])
    # The program's own calls (tests/programs/known_calls.c), 50 rounds.
    assert recorded["malloc_usable_size"] >= 50
    assert recorded["posix_memalign"] >= 50
    assert recorded == native


def test_numpy_func2_loop_reaches_lttng_exactly(sessiond, tmp_path):
    native, recorded = both_ways(
        tmp_path, "numpy",
        [PYTHON, NUMPY_SCRIPT, "--epochs", "1", "--repeats", "10"],
        PYTHONPATH=os.environ["MEMTRACE_PYTHON_DIR"])
    # The script's regions (func1 and func2, 10 calls each) with their
    # counter snapshots at both ends.
    assert recorded["region_begin"] == 20 and recorded["counters"] == 40
    assert recorded == native


def test_memtrace_run_lttng_leaves_a_trace_babeltrace2_lists(sessiond,
                                                             tmp_path):
    out = tmp_path / "run"
    r = run([CLI, "run", "--lttng", "-o", str(out), "--quiet", "--",
             program("known_calls"), "7"], clean_env())
    assert f"LTTng trace in {out}" in r.stderr
    counts = lttng_counts(out)
    assert counts["valloc"] == 7 and counts["exit"] == 1
    listing = run(["babeltrace2", str(out)], clean_env()).stdout
    assert 'procname = "known_calls"' in listing


def test_run_lttng_keeps_the_exit_status(sessiond, tmp_path):
    r = run([CLI, "run", "--lttng", "-o", str(tmp_path / "s"), "--quiet",
             "--", "sh", "-c", "exit 7"], clean_env(), check=False)
    assert r.returncode == 7


def test_lttng_ust_threads_are_not_counted_as_the_program(sessiond):
    """lttng-ust's listener threads allocate hundreds of blocks; they are
    the shim's work, so the program's malloc API calls come out the same.
    (lttng-ust's memory syscalls, mapping its shared buffers, are real
    syscalls of the process and stay counted.)"""
    cmd = [program("known_calls"), "20"]
    plain = summary(cmd, "glibc")["calls"]
    with_lttng = summary(cmd, "glibc", MEMTRACE_LTTNG="1")["calls"]
    malloc_api = ["malloc", "free", "calloc", "realloc", "reallocarray",
                  "posix_memalign", "aligned_alloc", "memalign", "valloc",
                  "pvalloc", "malloc_usable_size"]
    assert [with_lttng[c] for c in malloc_api] == [plain[c] for c in malloc_api]


def test_without_the_switch_lttng_ust_is_not_loaded(tmp_path):
    maps = run(["cat", "/proc/self/maps"], shim_env("glibc")).stdout
    assert "libmemtrace.so" in maps and "lttng" not in maps
    maps = run(["cat", "/proc/self/maps"],
               shim_env("glibc", MEMTRACE_LTTNG="1")).stdout
    assert "liblttng-ust" in maps


def test_missing_lttng_tools_names_the_package(tmp_path):
    r = run([CLI, "run", "--lttng", "--", "true"],
            clean_env(PATH="/nonexistent"), check=False)
    assert r.returncode != 0
    assert "lttng-tools" in r.stderr


def test_lttng_flags_that_do_not_apply_are_refused():
    r = run([CLI, "run", "--lttng", "--compress", "--", "true"], clean_env(),
            check=False)
    assert r.returncode == 2 and "--lttng" in r.stderr


EXITS = [("return", 3), ("exit", 5), ("_exit", 6), ("thread", 4),
         ("abort", 0), ("signal", 0)]


@pytest.mark.parametrize("how,code", EXITS)
def test_recording_to_lttng_keeps_output_and_status(sessiond, tmp_path, how,
                                                    code):
    cmd = [program("exits"), how, str(code)]
    bare = run(cmd, clean_env(), check=False)
    out = tmp_path / "t"
    session = f"mt-test-{os.getpid()}-exits"
    lttng("create", session, "--output", str(out))
    try:
        lttng("enable-event", "--userspace", "memtrace:*", "-s", session)
        lttng("start", session)
        traced = run(cmd, shim_env("glibc", MEMTRACE_LTTNG="1"), check=False,
                     timeout=HANG)
        lttng("stop", session)
    finally:
        lttng("destroy", session)
    assert (traced.stdout, traced.returncode) == (bare.stdout, bare.returncode)
    assert lttng_counts(out)["malloc"] >= 1


def test_threads_record_to_lttng(sessiond, tmp_path):
    """64 threads allocating at once, their events under their own vtid."""
    cmd = [program("threads"), "64", "50"]
    env = shim_env("glibc", MEMTRACE_LTTNG="1")
    trace_dir = record(tmp_path, "threads", cmd, env)
    out = run(["babeltrace2", str(trace_dir)], clean_env()).stdout
    tids = {line.split("vtid = ")[1].split(" ")[0].rstrip("},")
            for line in out.splitlines() if "memtrace:malloc:" in line}
    assert len(tids) >= 64


def test_a_forked_child_records_as_a_process_of_its_own(sessiond, tmp_path):
    out = tmp_path / "fork"
    run([CLI, "run", "--lttng", "-o", str(out), "--quiet", "--",
         program("fork_exec"), "fork", "500", "300"], clean_env(), timeout=HANG)
    listing = run(["babeltrace2", str(out)], clean_env()).stdout
    per_pid = collections.Counter(
        line.split("vpid = ")[1].split(",")[0]
        for line in listing.splitlines() if "memtrace:malloc:" in line)
    # The parent's 500 and the child's 300 (and libc's one or two each).
    assert sorted(per_pid.values()) == [pytest.approx(300, abs=3),
                                        pytest.approx(500, abs=3)]
