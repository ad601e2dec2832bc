"""Hostile conditions: what programs do that once hung, deadlocked or
crashed a host under the shim (issue 11).  Each test compares with the
bare run and, where a trace is recorded, with what the trace reads back."""
import json
import os
import subprocess

import pytest

from mt import BACKENDS, CLI, bare_env, program, run, shim_env

MODES = ["counting", "tracing"]


def env_for(backend, mode, tmp_path, **extra):
    if mode == "tracing":
        extra["MEMTRACE_OUT"] = str(tmp_path / "trace.mt")
    return shim_env(backend, **extra)


def stat_json(path):
    r = run([CLI, "stat", "--json", str(path)], os.environ.copy())
    return json.loads(r.stdout)


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
def test_a_child_forked_from_a_thread_ends_with_that_thread(mode, tmp_path):
    """The child's only thread is not its main thread's kind: it ends by
    returning from its thread function."""
    cmd = [program("hostile"), "fork_in_thread"]
    traced = run(cmd, env_for("glibc", mode, tmp_path), check=False,
                 timeout=30)
    assert traced.returncode == 0, traced.stderr
    assert traced.stdout == "child status 0\n"
