"""A program that makes a known number of every interposed call: the shim's
counts must equal them exactly, on every backend.

Counts are compared between runs of two lengths, so what the process does
once (start-up, libc's own first allocations) cancels out and what is left
is exactly the rounds' calls."""
import pytest

from mt import (BACKENDS, PYTHON, bare_env, fixed_layout, program, run, shim_env,
                summary)

# (300 rounds apart: a run's start-up faults vary by some 20 from run to
# run, which 100 rounds of one fault each left within the 10% allowed;
# the page-fault test failed one time in seven, with or without this
# session's changes)
SHORT, LONG = 40, 340
ROUNDS = LONG - SHORT

# One round of tests/programs/known_calls.c.
CALLS = {
    "malloc": 3, "free": 11, "calloc": 1, "realloc": 1, "reallocarray": 1,
    "posix_memalign": 1, "aligned_alloc": 1, "memalign": 1, "valloc": 1,
    "pvalloc": 1, "malloc_usable_size": 1,
    "mmap": 1, "mmap64": 1, "munmap": 2, "mremap": 1, "madvise": 2,
    "sbrk": 3, "brk": 2, "syscall": 4,
}
# What each backend adds, per round, by calling interposed functions itself.
BACKEND_CALLS = {
    # tcmalloc defines mmap, mmap64, munmap and mremap and reaches the
    # kernel with syscall().
    "tcmalloc": {"syscall": 5},
}
SYSCALLS = {"brk": 5, "mmap": 3, "munmap": 3, "mremap": 1, "madvise": 3,
            "mprotect": 0}
REQUESTED = {"malloc": 180, "calloc": 100, "realloc": 200, "reallocarray": 100,
             "posix_memalign": 100, "aligned_alloc": 128, "memalign": 100,
             "valloc": 100, "pvalloc": 100}
ADVICE = {"MADV_DONTNEED": 1, "MADV_FREE": 1, "MADV_WILLNEED": 1}


def per_round(short, long, key):
    a, b = short[key], long[key]
    return {k: (b.get(k, 0) - a.get(k, 0)) / ROUNDS for k in set(a) | set(b)}


@pytest.fixture(scope="module", params=BACKENDS)
def runs(request):
    backend = request.param
    short = summary(fixed_layout([program("known_calls"), str(SHORT)]), backend)
    long = summary(fixed_layout([program("known_calls"), str(LONG)]), backend)
    return backend, short, long


def test_backend_is_the_one_asked_for(runs):
    backend, short, _ = runs
    assert short["backend"]["name"] == backend
    assert short["backend"]["version"], "the backend's version is reported"


@pytest.mark.parametrize("backend", BACKENDS)
def test_backend_setting_alone_restarts_on_it(backend):
    """MEMTRACE_BACKEND with plain LD_PRELOAD=libmemtrace.so: the shim
    restarts the program once with the backend preloaded after it."""
    s = summary([program("known_calls"), "5"], backend, reexec=True)
    assert s["backend"]["name"] == backend
    assert s["calls"]["valloc"] == 5


def minus(a, b):
    return {k: v - b.get(k, 0) for k, v in a.items()}


def test_every_entry_point_counted_exactly(runs):
    """The program's calls: all calls less those the allocator made from
    inside malloc (tcmalloc growing its heap with sbrk, say)."""
    backend, short, long = runs
    expected = dict(CALLS)
    for name, extra in BACKEND_CALLS.get(backend, {}).items():
        expected[name] += extra
    got = minus(per_round(short, long, "calls"),
                per_round(short, long, "calls_by_allocator"))
    assert got == expected


def test_memory_syscalls_counted_once_each(runs):
    _, short, long = runs
    got = minus(per_round(short, long, "syscalls_interposed"),
                per_round(short, long, "syscalls_by_allocator"))
    assert got == SYSCALLS


def test_kernel_counts_equal_what_passed_the_interposers(runs):
    """The kernel counters see the same calls per round (this program's
    allocator calls all go through the interposers), plus the shim's own
    brk(0) queries, which they exclude again."""
    _, short, long = runs
    assert set(long["sources"]["syscalls"].values()) == {"kernel"}
    assert long["sources"]["incomplete"] == []
    assert per_round(short, long, "syscalls") == \
        per_round(short, long, "syscalls_interposed")


def test_bytes_requested(runs):
    _, short, long = runs
    got = per_round(short, long, "bytes_requested")
    assert {k: v for k, v in got.items() if v} == REQUESTED


def test_madvise_by_advice(runs):
    _, short, long = runs
    got = per_round(short, long, "madvise_by_advice")
    assert {k: v for k, v in got.items() if v} == ADVICE


def test_break_grows_and_shrinks(runs):
    _, short, long = runs
    got = per_round(short, long, "brk")
    by_allocator = per_round(short, long, "syscalls_by_allocator")["brk"]
    if by_allocator == 0:
        assert got == {"grow": 2, "grow_bytes": 16384,
                       "shrink": 2, "shrink_bytes": 16384}
    else:
        # The allocator moved the break too (tcmalloc's sbrk heap).
        assert got["grow"] - by_allocator <= 2 <= got["grow"]
        assert got["shrink"] == 2


def test_everything_allocated_is_freed(runs):
    _, short, long = runs
    assert long["bytes"]["live"] == short["bytes"]["live"]
    assert long["bytes"]["allocated"] > short["bytes"]["allocated"]
    assert long["bytes"]["peak_live"] >= 200
    assert long["bytes"]["peak_live_exact"] is True
    assert long["threads"] == 1


def test_page_faults_from_the_kernel(runs):
    """Each round writes to a fresh mapping (tests/integration/
    test_kernel_counts.py compares the rate with perf stat)."""
    _, short, long = runs
    assert long["sources"]["page_faults"] == "kernel"
    assert long["page_faults"]["minor"] - short["page_faults"]["minor"] >= 0.9 * ROUNDS
    assert long["wall_s"] > 0 and long["cpu_s"]["user"] >= 0


def test_mallopt_fixes_the_thresholds_it_sets():
    """glibc stops moving its thresholds once the program sets one with
    mallopt (as with the tunables): the summary reports the values set,
    and mallopt itself is forwarded, not counted as an allocation."""
    script = ("import ctypes\n"
              "libc = ctypes.CDLL(None)\n"
              "assert libc.mallopt(-3, 1 << 20) == 1\n"   # M_MMAP_THRESHOLD
              "assert libc.mallopt(-1, 4 << 20) == 1\n")  # M_TRIM_THRESHOLD
    s = summary([PYTHON, "-c", script], "glibc")
    assert s["glibc_thresholds"]["mmap"] == 1 << 20
    assert s["glibc_thresholds"]["trim"] == 4 << 20
    assert s["glibc_thresholds"]["dynamic"] is False
    plain = summary([PYTHON, "-c", "pass"], "glibc")
    assert plain["glibc_thresholds"]["dynamic"] is True


@pytest.mark.parametrize("backend", BACKENDS)
def test_cxx_new_and_delete_on_every_backend(backend):
    """C++'s operator new and delete: 5 of each per round, whichever
    backend defines them (jemalloc, tcmalloc and mimalloc do, and then
    call no malloc): counted as the mallocs and frees they are, exactly,
    and every byte freed again."""
    counts = {}
    for rounds in (100, 300):
        s = summary([program("cxx_new"), str(rounds)], backend)
        c = s["calls"]
        counts[rounds] = (c["malloc"] + c["aligned_alloc"], c["free"],
                          s["bytes"]["live"], s["large"]["allocations"])
    extra = [b - a for a, b in zip(counts[100], counts[300])]
    assert extra[0] == 5 * 200 and extra[1] == 5 * 200, counts
    assert extra[2] == 0, counts  # live bytes: nothing more left live
    assert extra[3] == 200, counts  # the 200,000-byte block of each round


@pytest.mark.parametrize("backend", BACKENDS)
def test_cxx_bad_alloc_passes_through(backend):
    """A new that cannot succeed throws std::bad_alloc through the shim's
    operator new as it does bare (or aborts, where the backend does bare:
    mimalloc), and a nothrow new returns NULL."""
    cmd = [program("cxx_new"), "1", "throw"]
    bare = run(cmd, bare_env(backend), check=False)
    shim = run(cmd, shim_env(backend, quiet=True), check=False)
    assert (shim.returncode, shim.stdout) == (bare.returncode, bare.stdout)
    if bare.returncode == 0:
        assert shim.stdout == "bad_alloc caught\nnothrow: null\n"


@pytest.mark.parametrize("backend", BACKENDS)
def test_freed_sizes_follow_pages_that_change_class(backend):
    """On jemalloc, tcmalloc and mimalloc a small block's size at free is
    read from the shim's map of pages (shim/block_sizes.h), not asked of
    the allocator: pages that change size class from round to round, aligned
    blocks (mimalloc's are interior addresses of bigger ones), calloc and
    realloc among them, every block freed in a scattered order.  Every
    byte counted allocated is counted freed, exactly."""
    s = {rounds: summary([program("size_churn"), str(rounds)], backend)
         for rounds in (12, 36)}
    allocated = s[36]["bytes"]["allocated"] - s[12]["bytes"]["allocated"]
    freed = s[36]["bytes"]["freed"] - s[12]["bytes"]["freed"]
    assert allocated > 24 * 4000 * 16
    assert freed == allocated, (allocated, freed)
    assert s[36]["bytes"]["live"] == s[12]["bytes"]["live"]
