"""The program's own malloc_trim calls: counted on every backend, with the
trims of the heap they made on glibc (against strace's brk), in the
summary and in a trace alike; and explain puts a churn they make on them,
not on the trim threshold (new-user trial 13: a program calling
malloc_trim(0) made half of the trims heap-trim-churn reported, and the
threshold it proposed could not remove those)."""
import json
import re
import subprocess

import pytest

from mt import (BACKENDS, CLI, clean_env, fixed_layout, perf_stat_faults,
                program, run, shim_env, summary)


def brk_shrinks_by_strace(cmd):
    """How many times the break moved back (strace -f -e brk)."""
    out = subprocess.run(["strace", "-f", "-e", "trace=brk", "-o", "/dev/stderr"]
                         + cmd, env=clean_env(), capture_output=True,
                         text=True, check=True).stderr
    prev, shrinks = 0, 0
    for m in re.finditer(r"brk\((?:0x[0-9a-f]+|NULL)\)\s+= (0x[0-9a-f]+)", out):
        now = int(m.group(1), 16)
        shrinks += prev and now < prev
        prev = now
    return shrinks


@pytest.mark.parametrize("backend", BACKENDS)
def test_malloc_trim_calls_and_their_trims_are_counted(backend):
    few = summary(fixed_layout([program("trim_loop"), "10"]), backend)
    many = summary(fixed_layout([program("trim_loop"), "40"]), backend)
    calls = many["malloc_trim"]["calls"] - few["malloc_trim"]["calls"]
    assert calls == 30, (few["malloc_trim"], many["malloc_trim"])
    shrinks = many["malloc_trim"]["shrinks"]
    if backend == "glibc":
        # each call gave the round's 8 MiB back, and no free trimmed
        assert shrinks == 40 == many["brk"]["shrink"], many["brk"]
        assert shrinks == brk_shrinks_by_strace([program("trim_loop"), "40"])
        assert many["malloc_trim"]["shrink_bytes"] == many["brk"]["shrink_bytes"]
    else:
        # (glibc's heap, which the program's blocks are not on)
        assert shrinks == 0 and many["malloc_trim"]["purges"] == 0


def test_a_trace_counts_them_as_the_summary_does(tmp_path):
    trace = tmp_path / "t.mt"
    env = shim_env("glibc", quiet=True, MEMTRACE_OUT=str(trace))
    run([program("trim_loop"), "25"], env)
    s = json.loads(run([CLI, "stat", "--json", str(trace)], clean_env()).stdout)
    trims = s["malloc_trim"]
    assert trims["calls"] == 25 and trims["shrinks"] == 25, trims
    assert trims["shrink_bytes"] == s["brk"]["shrink_bytes"], s["brk"]


def explain(*args):
    r = run([CLI, "explain", "--json", "--repeat", "1", "--backend", "glibc",
             "--", program("trim_loop")] + list(args), clean_env())
    return {f["id"]: f for f in json.loads(r.stdout)["findings"]}


def test_explain_puts_the_churn_on_the_programs_malloc_trim():
    churn = explain("30")["heap-trim-churn"]
    e = churn["evidence"]
    assert e["shrinks_by_malloc_trim_per_call"] == e["brk_shrink_per_call"] == 30, e
    assert e["malloc_trim_calls_per_call"] == 30, e
    assert "program's own calls of malloc_trim" in churn["explanation"]
    fixes = churn["fixes"]
    # the trim threshold does not decide these trims: none proposed
    assert not any("trim_threshold" in json.dumps(f) for f in fixes), fixes
    assert "malloc_trim less often" in json.dumps(fixes[0]), fixes


def test_without_its_malloc_trim_calls_the_program_does_not_churn():
    """The control: the same rounds, malloc_trim never called (free does
    not trim above the threshold the program set)."""
    assert "heap-trim-churn" not in explain("30", "0")


def madvise_by_strace(cmd):
    out = subprocess.run(["strace", "-f", "-c", "-e", "trace=madvise", "-o",
                          "/dev/stderr"] + cmd, env=clean_env(),
                         capture_output=True, text=True, check=True).stderr
    m = re.search(r"^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?madvise$",
                  out, re.M)
    return int(m.group(1)) if m else 0


def test_what_malloc_trim_gives_back_inside_the_heap_is_a_purge():
    """Rounds of 200k small blocks under a block kept for the run, which
    pins the top of glibc's heap: free never trims, but the program's
    malloc_trim(0) after each round madvises the free pages below it away,
    and the next round faults them in again (new-user trial 14: 610k
    faults, 70% of the CPU, and explain found nothing).  The shim measures
    what each call gave back by the resident memory it took away."""
    cmd = [program("pinned_rounds"), "20", "trim"]
    s = summary(fixed_layout(cmd), "glibc")
    trims = s["malloc_trim"]
    assert trims["calls"] == 20, trims
    assert trims["purges"] == madvise_by_strace(cmd) == 20, trims
    assert trims["purged_bytes"] > 20 * (30 << 20), trims  # (40 MB a round)
    r = run([CLI, "explain", "--json", "--repeat", "1", "--backend", "glibc",
             "--"] + cmd, clean_env())
    found = {f["id"]: f for f in json.loads(r.stdout)["findings"]}
    purge = found["purge-churn"]
    assert purge["evidence"]["purges_by_malloc_trim_per_call"] == 20, purge
    assert "malloc_trim less often" in purge["fixes"][0]["description"]
    r = run([CLI, "explain", "--json", "--repeat", "1", "--backend", "glibc",
             "--", program("pinned_rounds"), "20"], clean_env())
    assert not [f for f in json.loads(r.stdout)["findings"]
                if f["id"].endswith("churn")], r.stdout


def test_malloc_trims_madvise_calls_are_the_kernels_count():
    """20,000 blocks of 200 B to 2 KB freed and trimmed, each round: each
    malloc_trim(0) madvises some 22 free stretches of the heap away, and
    the shim sees one purge a call (new-user trial 23: "madvise 300
    times", strace 6,600).  explain counts them from the kernel's count.
    A trim threshold, which malloc_trim called each round does not obey
    (its setting alone: "no clear effect"), is proposed only after the
    calls, for free()'s own trims, once the calls are fewer (new-user
    trial 27: malloc_trim called each round made half of the trims;
    without the calls the faults fell by half, with the threshold too by
    98%)."""
    cmd = [program("trim_rounds"), "50"]
    truth = madvise_by_strace(cmd)
    assert truth > 5 * 50, truth
    r = run([CLI, "explain", "--json", "--repeat", "1", "--backend", "glibc",
             "--"] + cmd, clean_env())
    found = {f["id"]: f for f in json.loads(r.stdout)["findings"]}
    e = found["purge-churn"]["evidence"]
    assert e["madvise_by_allocator_per_call"] == truth, e
    assert e["madvise_by_malloc_trim_per_call"] == truth, e
    assert e["purges_by_malloc_trim_per_call"] == 50, e
    assert "%d of the madvise calls were made by 50 of the program's own " \
        "calls of malloc_trim" % truth in found["purge-churn"]["explanation"]
    churn = found["heap-trim-churn"]
    fixes = churn["fixes"]
    calls = [i for i, f in enumerate(fixes)
             if "malloc_trim less often" in f["description"]]
    assert calls, fixes
    thresholds = [f for f in fixes if "trim_threshold" in json.dumps(f)]
    assert thresholds, fixes
    for f in thresholds:
        assert fixes.index(f) > calls[0], fixes
        assert "once malloc_trim is called less often" in f["description"], f
    # The ground truth, bare: without the calls, free's trims fault the
    # heap in again each round, and the setting proposed stops them.
    setting = thresholds[0]["setting"].split("=", 1)
    kept = [program("trim_rounds"), "50", "keep"]
    without = perf_stat_faults(kept, {})
    assert without > 20 * 50 * 50, without
    assert perf_stat_faults(kept, {setting[0]: setting[1]}) < without / 5


def test_every_call_of_a_service_that_trims_after_each_request_is_measured():
    """malloc_trim(0) after each request, some 0.2-0.8 ms apart: the shim
    looked at one call a millisecond, and said half of the calls and of
    the bytes they gave back (2,007 of 4,000, 3.2 GiB of 6.3; new-user
    trial 31).  It looks once 50 times its last look's cost has passed:
    nearly every call here, against strace's madvise bytes."""
    cmd = [program("trim_requests"), "1000"]
    out = subprocess.run(["strace", "-f", "-e", "trace=madvise", "-o", "/dev/stderr"]
                         + cmd, env=clean_env(), capture_output=True,
                         text=True, check=True).stderr
    given = sum(int(m.group(1)) for m in
                re.finditer(r"madvise\(0x[0-9a-f]+, (\d+), MADV_DONTNEED\)", out))
    assert given > 1000 * (1 << 20), given
    trims = summary(fixed_layout(cmd), "glibc")["malloc_trim"]
    assert trims["calls"] == 1000, trims
    assert trims["purges"] >= 950, trims
    assert 0.9 * given <= trims["purged_bytes"] <= 1.1 * given, (trims, given)


def test_stat_shows_the_programs_malloc_trim_calls():
    """The summary had them, and stat's table did not: 1,900 madvise calls
    of glibc's stood there with no word of the 100 malloc_trim calls that
    made them (new-user trial 49)."""
    r = run([CLI, "stat", "--", program("trim_loop"), "25"], clean_env())
    (line,) = [l for l in (r.stdout + r.stderr).splitlines()
               if "malloc_trim calls" in l]
    assert re.match(r"\s+25\s+malloc_trim calls\s+# \d+ of them purged", line), line
