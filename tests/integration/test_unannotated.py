"""explain on programs that mark no region (tests/corpus/, and a few of
tests/programs/), on every backend: the cause where there is one, and no
churn finding that the kernel's own figures do not bear out.

Ground truth comes from the bare run on the same backend: perf stat's page
faults against the most pages the process ever had resident (peak RSS,
measured apart from pytest), and strace's count of the system call the
finding is about."""
import json
import os

import pytest

from mt import (BACKENDS, CLI, PYTHON, bare_env, clean_env,
                perf_stat_faults, program, run, run_peak_rss, strace_counts)

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "..", "corpus")
PROGRAMS = os.path.join(HERE, "..", "programs")
PAGE = os.sysconf("SC_PAGE_SIZE")


# name: (command, the finding glibc must give, None for a control, or
# "program-mappings" for a program whose own mappings churn: said as such
# on every backend, with no allocator setting or backend proposed)
CASES = {
    "c_trim_churn": ([program("c_trim_churn")], "heap-trim-churn"),
    "c_mmap_churn": ([program("c_mmap_churn")], "mmap-churn"),
    "thread_heaps": ([program("thread_heaps"), "churn", "100"], "thread-heap-churn"),
    "numpy_plain": ([PYTHON, os.path.join(PROGRAMS, "numpy_plain.py"), "100"],
                    "heap-trim-churn"),
    "c_steady": ([program("c_steady")], None),
    "c_file_maps": ([program("c_file_maps")], "program-mappings"),
    "cpp_vector": ([program("cpp_vector")], None),
    "thread_heaps_steady": ([program("thread_heaps"), "steady", "100"], None),
    "np_inplace": ([PYTHON, os.path.join(CORPUS, "np_inplace.py")], None),
    "py_dicts": ([PYTHON, os.path.join(CORPUS, "py_dicts.py")], None),
}
CHURN = {"heap-trim-churn": "brk", "thread-heap-churn": "madvise",
         "mmap-churn": "munmap", "purge-churn": "madvise"}


def explain(cmd, backend):
    r = run([CLI, "explain", "--json", "--repeat", "1", "--backend", backend,
             "--"] + cmd, clean_env())
    return json.loads(r.stdout)["findings"]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_explain_against_the_kernel(name, backend):
    cmd, glibc_cause = CASES[name]
    findings = explain(cmd, backend)
    churn = [f for f in findings if f["id"] in CHURN]
    ids = {f["id"] for f in churn}
    if glibc_cause == "program-mappings":
        assert ids == {"mmap-churn"}, findings
        (f,) = churn
        assert "the program itself" in f["explanation"]
        assert {x["kind"] for x in f["fixes"]} == {"code"}
    elif glibc_cause and backend == "glibc":
        assert glibc_cause in ids, churn
    if glibc_cause is None:
        assert not ids, churn  # a control: nothing churns
    if not churn:
        return
    # Every churn said must show in the bare run: the system calls that
    # give memory back, repeated, and faults beyond one per page ever
    # resident, at least one per such call (memory taken again).
    env = bare_env(backend)
    faults = perf_stat_faults(cmd, env)
    _, peak_kib = run_peak_rss(cmd, env, capture_output=True)
    counts = strace_counts(cmd, env)
    for f in churn:
        calls = counts[CHURN[f["id"]]]
        assert calls >= 10, (f["id"], counts)
        assert faults - peak_kib * 1024 / PAGE >= calls, (faults, peak_kib, f)


def test_the_corpus_runs_bare():
    """(The programs themselves: each ends well, on every backend.)"""
    for name, (cmd, _) in CASES.items():
        for backend in BACKENDS:
            run(cmd, bare_env(backend))
