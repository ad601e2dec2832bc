"""No fixed limits in the trace reader: every thread, region and nesting
level of a trace is counted (issue 11, bug 4: threads after the 4096th
were dropped), with lookups that keep the time and memory of `memtrace
stat` in proportion to the trace."""
import json
import os
import subprocess
import time

from mt import CLI, clean_env, program, run, run_peak_rss, shim_env
from tracefile import (REGION_BEGIN, REGION_END, REGION_NAME, chunk, event,
                       exit_chunk, thread_chunk, trace)


def stat_json(path):
    return json.loads(run([CLI, "stat", "--json", str(path)], clean_env()).stdout)


def test_stat_of_5000_threads_equals_the_live_summary(tmp_path):
    path, live = tmp_path / "t.mt", tmp_path / "s.json"
    run([program("many_threads"), "5000", "100"],
        shim_env("glibc", summary=str(live), MEMTRACE_OUT=str(path)))
    got = stat_json(path)
    assert got["calls"]["malloc"] == json.loads(live.read_text())["calls"]["malloc"]
    assert got["calls"]["malloc"] > 5000  # each thread's, and main's own
    assert got == json.loads(live.read_text())


def synthetic_threads(path, n):
    """n threads, one malloc and free each, with thread ids reused as the
    kernel reuses them (pid_max is often 32768), and the closing record."""
    chunks = [thread_chunk(1 + i % 32000, 0, 1, tsc=i) for i in range(n)]
    path.write_bytes(trace(chunks + [exit_chunk(1, 1, tsc=n)]))


def stat_usage(path):
    """(summary, seconds, peak RSS in KiB) of one `memtrace stat --json`."""
    started = time.monotonic()
    r, peak_kib = run_peak_rss([CLI, "stat", "--json", str(path)], clean_env(),
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    seconds = time.monotonic() - started
    assert r.returncode == 0
    return json.loads(r.stdout), seconds, peak_kib


def test_100000_threads_in_bounded_time_and_memory(tmp_path):
    small, big = tmp_path / "5k.mt", tmp_path / "100k.mt"
    synthetic_threads(small, 5000)
    synthetic_threads(big, 100000)
    s_small, t_small, rss_small = stat_usage(small)
    s_big, t_big, rss_big = stat_usage(big)
    assert s_small["calls"]["malloc"] == 5000
    assert s_big["calls"]["malloc"] == 100000
    assert s_big["calls"]["free"] == 100000
    assert s_big["bytes"]["allocated"] == 100000 * 56
    # Threads that ended cost nothing: 20 times the threads, not 20 times
    # the memory (a reader that kept each would need about 2 KiB a thread
    # more: 200 MiB).
    assert rss_big < rss_small + 16 * 1024, (rss_small, rss_big)
    # Linear: 20 times the threads in well under 20 times 20 the time
    # (a linear scan per event was quadratic).
    assert t_big < 40 * t_small + 2, (t_small, t_big)


def test_every_region_and_nesting_level(tmp_path):
    """1,000 regions, more than the shim's table, and 100 calls nested in
    each other: every one is counted."""
    names, body, n = [], [], 0
    for i in range(1000):
        names.append(event(REGION_NAME, i, text=b"r%d" % i))
    for i in range(1000):
        body += [event(REGION_BEGIN, i), event(REGION_END, i, 1000 + i)]
    for i in range(100):  # r0 holds r1 holds ... r99
        body.append(event(REGION_BEGIN, i))
    for i in reversed(range(100)):
        body.append(event(REGION_END, i, 7))
    events = names + body
    path = tmp_path / "regions.mt"
    path.write_bytes(trace([chunk(7, 0, b"".join(events), len(events)),
                            exit_chunk(7, 1)]))
    s = stat_json(path)
    counts = {r["name"]: r["count"] for r in s["regions"]}
    assert len(counts) == 1000
    assert [counts[f"r{i}"] for i in range(100)] == [2] * 100
    assert [counts[f"r{i}"] for i in range(100, 1000)] == [1] * 900
    # In the order of their ids, as the live summary lists them.
    assert [r["name"] for r in s["regions"]][:3] == ["r0", "r1", "r2"]
