"""Every run says what the shim cost it: the summary's shim_cost (calls x
the cost per call measured for the backend and mode, the shim's threads'
CPU time, its start-up), stat's line, and compare's mark above 2%."""
import json
import re
import os
import tempfile

import pytest

from mt import BACKENDS, CLI, clean_env, program, run, shim_env


def summary(cmd, backend="glibc", **extra):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "s.json")
        run(cmd, shim_env(backend, summary=path, **extra))
        with open(path) as f:
            return json.load(f)


def test_summary_carries_the_estimate():
    for backend in BACKENDS:
        s = summary([program("tiny_pairs"), "100000"], backend)
        k = s["shim_cost"]
        assert k["mode"] == "counting"
        assert k["calls_s"] > 0 and k["threads_s"] >= 0 and k["start_s"] >= 0
        assert abs(k["estimated_s"] - (k["calls_s"] + k["threads_s"] +
                                       k["start_s"] + k["thread_starts_s"] +
                                       k["regions_s"])) < 3e-6
        cpu = s["cpu_s"]["user"] + s["cpu_s"]["system"]
        if cpu > 0:
            assert abs(k["share_of_run"] - k["estimated_s"] / cpu) < 0.01


def test_the_shims_own_page_faults_are_said():
    """A program's faults under the shim include the shim's own, which a
    user comparing with perf stat of the bare run could not tell apart:
    some 130-400 more on one thread (new-user trial 50).  Its start-up's
    and its threads' are measured (getrusage of the thread, at the end of
    the constructor and of each of its threads), part of the process's,
    and stat says them beside the count.  /bin/true takes some 70 bare."""
    for backend in BACKENDS:
        s = summary(["/bin/true"], backend)
        own, minor = s["shim_cost"]["faults"], s["page_faults"]["minor"]
        assert 10 < own < minor, (backend, own, minor)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "s.json")
        run(["/bin/true"], shim_env("glibc", summary=path))
        r = run([CLI, "stat", path], clean_env())
        own = json.load(open(path))["shim_cost"]["faults"]
        assert re.search(r"minor faults +# %d of them the shim's start-up "
                         r"and threads'" % own, r.stdout), r.stdout
    # (a forked child's: its handler's, some 50 in a child that takes 18
    # bare; new-user trial 51)
    with tempfile.TemporaryDirectory() as d:
        run([program("fork_faults"), "1"],
            shim_env("glibc", summary=os.path.join(d, "s%p.json")))
        found = [json.load(open(os.path.join(d, n))) for n in os.listdir(d)]
        assert len(found) == 2, found
        for s in found:
            own, minor = s["shim_cost"].get("faults", 0), s["page_faults"]["minor"]
            assert 10 < own < minor, (own, minor)


def test_the_threads_the_program_starts_are_in_the_estimate():
    """Every thread the program starts inherits the kernel counters, which
    the kernel copies into it and folds back when it ends: 1,500 threads
    that did nothing took 0.02 s bare and 0.13 s under the shim, and the
    estimate said 0.001 s (new-user trial 27).  Each start is counted at
    the cost measured per thread; none without the kernel counters, which
    then cost nothing."""
    for backend in BACKENDS:
        k = summary([program("many_threads"), "400"], backend)["shim_cost"]
        per_thread = k["thread_starts_s"] / 400
        assert 20e-6 < per_thread < 200e-6, (backend, k)
        assert k["estimated_s"] >= k["thread_starts_s"], k
        off = summary([program("many_threads"), "400"], backend,
                      MEMTRACE_PERF="0")["shim_cost"]
        assert off["thread_starts_s"] == 0, (backend, off)


def test_the_regions_are_in_the_estimate():
    """At each mark of a region the shim reads the kernel counters and the
    CPU clocks, some 5 us a region: the NumPy benchmark's 1,000 regions
    took 5 ms more on tcmalloc, 2% of its work, which the estimate left
    out.  Each region call (begun and ended: `regions N` makes N of "work"
    and N of "inner", plus one "idle") is counted at what one costs, less
    without the kernel counters."""
    for backend in BACKENDS:
        on = summary([program("regions"), "300"], backend)["shim_cost"]
        off = summary([program("regions"), "300"], backend,
                      MEMTRACE_PERF="0")["shim_cost"]
        per_region_on, per_region_off = on["regions_s"] / 601, off["regions_s"] / 601
        assert 1e-6 < per_region_on < 50e-6, (backend, on)
        assert 0 < per_region_off < per_region_on, (backend, off)
        assert on["estimated_s"] >= on["regions_s"], on


def test_calls_s_grows_with_the_calls():
    for backend in BACKENDS:
        few = summary([program("tiny_pairs"), "100000"], backend)["shim_cost"]
        many = summary([program("tiny_pairs"), "1000000"], backend)["shim_cost"]
        # 10x the pairs, and the few calls of the C runtime's start-up
        assert 9 <= many["calls_s"] / few["calls_s"] <= 10.5, (backend, few, many)


def test_a_trace_costs_more_and_its_summary_says_the_same():
    with tempfile.TemporaryDirectory() as d:
        trace = os.path.join(d, "t.mt")
        live = summary([program("tiny_pairs"), "100000"], "glibc",
                       MEMTRACE_OUT=trace)
        counted = summary([program("tiny_pairs"), "100000"], "glibc")
        k = live["shim_cost"]
        assert k["mode"] == "trace"
        assert k["calls_s"] > 2 * counted["shim_cost"]["calls_s"]
        # The trace's summary carries the live one's, from its closing record.
        r = run([CLI, "stat", "--json", trace], clean_env())
        assert json.loads(r.stdout.splitlines()[0])["shim_cost"] == k


def test_stat_says_it_beside_the_time():
    r = run([CLI, "stat", "--", program("tiny_pairs"), "100000"], clean_env())
    assert "shim's own (estimate)" in r.stderr
    assert "of the cpu time" in r.stderr
    # (a cost below a millisecond in microseconds: "0.000 s, 24.1% of the
    # cpu time" of a parent that only waits; new-user trial 51)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "s.json")
        run(["/bin/true"], shim_env("glibc", summary=path))
        est = json.load(open(path))["shim_cost"]["estimated_s"]
        r = run([CLI, "stat", path], clean_env())
        shown = "%.6f" % est if 0 < est < 1e-3 else "%.3f" % est
        assert " %s s  shim's own (estimate)" % shown in r.stdout, (est, r.stdout)


def test_stderr_summary_says_it_is_an_estimate():
    r = run([program("tiny_pairs"), "1000"], shim_env("glibc", quiet=False))
    assert "shim's own time (estimate from measured costs)" in r.stderr


def compare_json(*cmd):
    r = run([CLI, "compare", "--repeat", "1", "--json", "--", *cmd],
            clean_env())
    (region,) = json.loads(r.stdout)["regions"]
    return region["backends"]


def test_compare_marks_a_backend_the_shim_moved():
    # Tiny allocations and nothing else: the shim's share is far above 2%.
    backends = compare_json(program("tiny_pairs"), "2000000")
    assert set(backends) == set(BACKENDS)
    for b, m in backends.items():
        assert m["shim_share"] > 0.02, (b, m)
        assert m["shim_moved_figures"] is True
    r = run([CLI, "compare", "--backends", "glibc", "--repeat", "1", "--",
             program("tiny_pairs"), "2000000"], clean_env())
    row = next(l for l in r.stdout.splitlines()
               if "of the cpu time (estimate)" in l)
    assert row.rstrip().endswith("*")
    assert "it may have moved these figures" in r.stdout


def test_compare_does_not_mark_a_run_the_shim_barely_touched():
    # A thousand pairs, then 300 ms of arithmetic.
    backends = compare_json(program("tiny_pairs"), "1000", "300")
    for b, m in backends.items():
        assert m["shim_share"] < 0.02, (b, m)
        assert m["shim_moved_figures"] is False
    r = run([CLI, "compare", "--backends", "glibc", "--repeat", "1", "--",
             program("tiny_pairs"), "1000", "300"], clean_env())
    assert "may have moved" not in r.stdout


def test_explain_says_it():
    r = run([CLI, "explain", "--", program("tiny_pairs"), "100000"],
            clean_env())
    assert "shim's own time on glibc (estimate from measured costs)" in r.stdout
    r = run([CLI, "explain", "--json", "--", program("tiny_pairs"), "100000"],
            clean_env())
    (k,) = json.loads(r.stdout)["shim_cost"]
    assert k["backend"] == "glibc" and k["estimated_s"] > 0


def test_explain_does_not_say_a_tiny_process_was_moved():
    """A process of a few milliseconds: the shim's start-up is a large
    share of it (29% of a parent that only forks), yet there is no figure
    worth a finding for it to move (new-user trial 17): the share is said,
    not the warning."""
    r = run([CLI, "explain", "--", program("exits"), "return", "0"],
            clean_env())
    line = next(l for l in r.stdout.splitlines() if l.startswith("shim's own time"))
    assert "may have moved" not in line, line


def test_explain_measures_the_shim_where_it_ran_without_it():
    """Records of mixed sizes replaced at random, cold in the cache: the
    estimate (calls times a tight loop's cost a call) said 0.041 s, 4.7%
    of the run, where the shim added 0.21 s (new-user trial 20).  Where
    explain ran the command without the shim (several backends), it says
    what the shim added, measured: the fastest run under it against the
    fastest without it, which on such a program is past the estimate."""
    env = clean_env()
    env.pop("MALLOC_PERTURB_", None)
    # (a busy machine spreads the runs past the difference: tried again
    # with more of them, then skipped, as the allocators' timings are;
    # 2 of 4 tries failed so beside another job)
    for repeat in ("3", "5"):
        r = run([CLI, "explain", "--json", "--backend", "glibc,mimalloc",
                 "--repeat", repeat, "--", program("random_records"), "1", "6"], env)
        out = json.loads(r.stdout)
        costs = {k["backend"]: k for k in out["shim_cost"]}
        assert set(costs) == {"glibc", "mimalloc"}, costs
        glibc = costs["glibc"]
        bare = min(next(b for b in out["bare_runs"] if b["backend"] == "glibc")["cpu_s"])
        # (the fastest run under the shim is at most the runs' median; 0
        # where it ran faster than the fastest without it, a busy machine)
        assert glibc["measured_s"] <= max(0, glibc["cpu_s"] - bare) + 1e-6, (glibc, bare)
        # each backend marked where the estimate is past 2% of the run, or
        # the measured cost past twice the runs' spread and 2% of the runs
        # without it (a producer/consumer on tcmalloc: estimated 0.038 s,
        # measured 0.1-0.7 s of 1.6 s, unmarked; new-user trial 46)
        for b, k in costs.items():
            least = min(next(x for x in out["bare_runs"]
                             if x["backend"] == b)["cpu_s"])
            by_estimate = k["share_of_run"] > 0.02 and k["estimated_s"] >= 0.005
            by_measure = (k["measured_s"] > 2 * k["runs_spread_s"] and
                          k["measured_s"] > 0.02 * least and
                          k["measured_s"] >= 0.005)
            assert k["moved_figures"] == (by_estimate or by_measure), (k, least)
        if glibc["measured_s"] > glibc["estimated_s"] + glibc["runs_spread_s"]:
            break
    else:
        pytest.skip("too busy a machine: the runs vary past what the shim "
                    "added: %s" % glibc)


def test_explain_says_the_shims_cost_on_several_backends_as_a_table():
    """A table of the backends under one header: a line of 400
    characters a backend, the same words again each time, was read as a
    wall (new-user trial 38); one backend keeps its line.  One run a
    side has no spread to tell: not "the runs vary by 0.000 s" (new-user
    trial 39)."""
    env = clean_env()
    r = run([CLI, "explain", "--backend", "glibc,mimalloc", "--repeat", "1",
             "--", program("random_records"), "1", "1"], env)
    assert re.search(r"^shim's own time \(estimate from measured costs; "
                     r"measured: its fastest run's CPU less the fastest "
                     r"run's without it; backends are compared, and fixes "
                     r"judged, on the runs without it\):$", r.stdout,
                     re.M), r.stdout
    for b in ("glibc", "mimalloc"):
        assert re.search(r"^  %s +[\d.]+ s, [\d.]+%% of [\d.]+ s of cpu; "
                         r"measured [\d.]+ s, from one run each \(how "
                         r"much runs vary is not known\)" % b, r.stdout,
                         re.M), r.stdout
    assert "vary by" not in r.stdout
    r = run([CLI, "explain", "--repeat", "1", "--", program("random_records"),
             "1", "1"], env)
    assert re.search(r"^shim's own time on glibc \(estimate from measured "
                     r"costs\): [\d.]+ s, [\d.]+% of the run's [\d.]+ s of "
                     r"cpu", r.stdout, re.M), r.stdout


def test_calls_only_the_kernel_counters_saw_cost_what_counting_them_costs():
    """glibc grows a thread's heap by mprotect, which the shim does not
    interpose: only its kernel counters count those.  619k of them were
    charged as calls the shim interposes (429 ns each): 0.27 s, "it may
    have moved the figures", where the run lost 0.012 s (new-user trial
    28).  They cost what counting one costs (bench/shim_cost.py --kinds
    kernel: some 40 ns)."""
    s = summary([program("arena_rounds"), "2", "200"], "glibc")
    mprotect = s["syscalls"]["mprotect"]
    assert mprotect > 50_000, s["syscalls"]
    k = s["shim_cost"]
    assert k["calls_s"] < 0.5 * mprotect * 429.3e-9, (k, mprotect)
    assert k["calls_s"] >= mprotect * 20e-9, (k, mprotect)


def test_two_runs_spread_is_half_their_difference():
    """Of two runs, the median is their mean, not the lower (which read
    every --repeat 2 spread as 0.000 s, and compare's median as its min:
    new-user trial 29): the spread said is at least half the bare runs'
    difference."""
    r = run([CLI, "explain", "--json", "--backend", "glibc,mimalloc",
             "--repeat", "2", "--", program("random_records"), "1", "1"],
            clean_env())
    out = json.loads(r.stdout)
    for cost in out["shim_cost"]:
        (cpu,) = [b["cpu_s"] for b in out["bare_runs"]
                  if b["backend"] == cost["backend"]]
        assert len(cpu) == 2, out["bare_runs"]
        assert cost["runs_spread_s"] >= (max(cpu) - min(cpu)) / 2 - 1e-9, (cost, cpu)
        assert cost["runs_spread_s"] > 0 or cpu[0] == cpu[1], (cost, cpu)
