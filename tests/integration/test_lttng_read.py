"""memtrace stat, dump and explain read an LTTng trace directory (through
libbabeltrace2) and give the same figures as for the native trace of the
same run: each run here records both ways at once."""
import collections
import json
import os

import pytest

from lttng_session import NUMPY_SCRIPT, needs_lttng, record, sessiond
from mt import BACKENDS, CLI, PYTHON, clean_env, program, run, shim_env

pytestmark = [needs_lttng, pytest.mark.skipif(
    not os.environ.get("MEMTRACE_CTF_READER"),
    reason="memtrace built without libbabeltrace2")]

# Events the native trace has and LTTng does not (the file's own
# bookkeeping: thread boundaries, fork and exec marks, lost counts).
NATIVE_ONLY = {"thread_start", "thread_exit", "forked", "exec", "lost", "sites"}


def both_ways(tmp_path, name, cmd, backend="glibc", **extra):
    native = tmp_path / (name + ".mt")
    env = shim_env(backend, MEMTRACE_OUT=str(native), MEMTRACE_LTTNG="1",
                   **extra)
    return native, record(tmp_path, name, cmd, env)


def stat_json(trace, *args):
    """The trace's own process (a native trace's children's files follow,
    a line each)."""
    out = run([CLI, "stat", "--json", *args, str(trace)], clean_env()).stdout
    return json.loads(out.splitlines()[0])


def dump_kinds(trace, *args):
    out = run([CLI, "dump", *args, str(trace)], clean_env()).stdout
    return collections.Counter(line.split()[2] for line in out.splitlines()
                               if not line.startswith("#"))


@pytest.mark.parametrize("backend", BACKENDS)
def test_stat_of_the_c_known_calls_equals_the_native_trace(sessiond, backend,
                                                           tmp_path):
    native, lttng_dir = both_ways(tmp_path, "known",
                                  [program("known_calls"), "50"], backend)
    from_lttng = stat_json(lttng_dir)
    # The program's own calls (tests/programs/known_calls.c), 50 rounds.
    assert from_lttng["calls"]["valloc"] == 50
    assert from_lttng["calls"]["syscall"] >= 200
    assert from_lttng == stat_json(native)


def test_stat_dump_and_explain_of_the_numpy_loop_equal_the_native_trace(
        sessiond, tmp_path):
    native, lttng_dir = both_ways(
        tmp_path, "numpy",
        [PYTHON, NUMPY_SCRIPT, "--epochs", "1", "--repeats", "10"],
        PYTHONPATH=os.environ["MEMTRACE_PYTHON_DIR"])
    from_lttng = stat_json(lttng_dir)
    assert {r["name"]: r["count"] for r in from_lttng["regions"]} == \
        {"func1": 10, "func2": 10}
    assert from_lttng == stat_json(native)

    kinds = dump_kinds(native)
    for kind in NATIVE_ONLY:
        kinds.pop(kind, None)
    assert dump_kinds(lttng_dir) == kinds

    explain = [CLI, "explain", "--json"]
    assert run(explain + [str(lttng_dir)], clean_env()).stdout == \
        run(explain + [str(native)], clean_env()).stdout


def test_each_process_and_image_of_a_trace_reads_as_its_native_file(
        sessiond, tmp_path):
    """fork_exec exec: the parent, then a child that execs itself.  LTTng
    holds them all in one trace; the native trace has a file for each
    (trace, trace.CHILD, trace.CHILD.1)."""
    native = tmp_path / "fx.mt"
    lttng_dir = tmp_path / "fx"
    run([CLI, "run", "--lttng", "-o", str(lttng_dir), "--quiet", "--",
         program("fork_exec"), "exec", "500", "300"],
        clean_env(MEMTRACE_OUT=str(native)))
    child = next(int(p.name.split(".")[2]) for p in tmp_path.iterdir()
                 if p.name.startswith("fx.mt."))
    assert (tmp_path / f"fx.mt.{child}.1").exists()

    r = run([CLI, "stat", "--json", str(lttng_dir)], clean_env())
    assert json.loads(r.stdout) == stat_json(native)
    assert f"also holds process {child}" in r.stderr
    after_exec = stat_json(lttng_dir, "--pid", f"{child}.1")
    assert after_exec["calls"]["malloc"] >= 300
    assert after_exec == stat_json(f"{native}.{child}.1")

    # The child's image before exec has no closing record, in both: its
    # figures are partial, and it ended in exec (not killed).
    before_exec = [stat_json(lttng_dir, "--pid", str(child)),
                   stat_json(f"{native}.{child}")]
    for s in before_exec:
        assert s["partial"] is True and s["recording"]["end"] == "exec"
    # The same figures (LTTng's exec says no path, nor a status record).
    same = [{k: v for k, v in s.items() if k not in ("recording", "partial_reason")}
            for s in before_exec]
    assert same[0] == same[1]
    r = run([CLI, "dump", "--pid", str(child), str(lttng_dir)], clean_env())
    assert f"next image is --pid {child}.1" in r.stderr

    for pick, says in ((f"{child}.2", f"--pid {child}, or {child}.1"),
                       ("1", "no process 1 in this trace")):
        r = run([CLI, "stat", "--pid", pick, str(lttng_dir)], clean_env(),
                check=False)
        assert r.returncode == 1 and says in r.stderr


def test_lttng_alone_gives_each_process_its_live_summary(sessiond, tmp_path):
    """Recording to LTTng only (no native file): stat of each process in
    the trace equals the summary that process wrote itself at exit."""
    summaries = tmp_path / "s"
    summaries.mkdir()
    lttng_dir = record(tmp_path, "alone",
                       [program("fork_exec"), "fork", "500", "300"],
                       shim_env("glibc", summary=str(summaries / "%p.json"),
                                MEMTRACE_LTTNG="1"))
    live = {int(p.stem): json.loads(p.read_text())
            for p in summaries.iterdir()}
    assert len(live) == 2
    for pid, summary in live.items():
        assert stat_json(lttng_dir, "--pid", str(pid)) == summary, pid


def test_events_lttng_discarded_are_an_error_unless_salvaged(sessiond,
                                                              tmp_path):
    # Two 4 KiB sub-buffers cannot keep 200,000 calls' events.
    lttng_dir = record(tmp_path, "small", [program("known_calls"), "5000"],
                       shim_env("glibc", MEMTRACE_LTTNG="1"),
                       channel=["--subbuf-size=4096", "--num-subbuf=2"])
    r = run([CLI, "stat", str(lttng_dir)], clean_env(), check=False)
    assert r.returncode == 1
    assert "LTTng discarded" in r.stderr and "--subbuf-size" in r.stderr
    r = run([CLI, "stat", "--salvage", str(lttng_dir)], clean_env(),
            check=False)
    assert "events LTTng discarded skipped" in r.stderr


def test_a_trace_without_the_process_context_names_the_fix(sessiond,
                                                           tmp_path):
    lttng_dir = record(tmp_path, "noctx", [program("known_calls"), "3"],
                       shim_env("glibc", MEMTRACE_LTTNG="1"), contexts=())
    r = run([CLI, "stat", str(lttng_dir)], clean_env(), check=False)
    assert r.returncode == 1
    assert "lttng add-context -u -t vpid -t vtid" in r.stderr


def test_a_directory_without_a_trace_is_a_clear_error(tmp_path):
    for args in (["stat"], ["dump"], ["explain"]):
        r = run([CLI, *args, str(tmp_path)], clean_env(), check=False)
        assert r.returncode == 1, args
        assert "no CTF trace in this directory" in r.stderr


def test_bad_pid_values_are_usage_errors(tmp_path):
    for bad in ("x", "0", "-3", "12.", "12.x"):
        r = run([CLI, "stat", "--pid", bad, str(tmp_path)], clean_env(),
                check=False)
        assert r.returncode == 2 and "--pid needs a process id" in r.stderr
