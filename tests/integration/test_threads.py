"""Many threads, frees on other threads than the mallocs: every call is
counted once, and the live bytes come back to where they started."""
import pytest

from mt import BACKENDS, program, summary

THREADS = 4


@pytest.mark.parametrize("backend", BACKENDS)
def test_cross_thread_frees_counted_exactly(backend):
    short = summary([program("threads"), str(THREADS), "2000"], backend)
    long = summary([program("threads"), str(THREADS), "12000"], backend)
    extra = THREADS * 10000
    assert long["calls"]["malloc"] - short["calls"]["malloc"] == extra
    assert long["calls"]["free"] - short["calls"]["free"] == extra
    assert long["bytes"]["live"] == short["bytes"]["live"]
    # each thread once, though it attaches again in its teardown (the
    # count was twice the threads'), and the main thread
    assert long["threads"] == short["threads"] == 2 * THREADS + 1
    # The peak is sampled across threads, and says so.
    assert long["bytes"]["peak_live_exact"] is False
    assert long["bytes"]["peak_live"] >= 64


@pytest.mark.parametrize("backend", BACKENDS)
def test_thread_blocks_are_reused(backend):
    """A thread's counters outlive it; a thousand short threads do not
    make a thousand blocks grow the process."""
    s = summary([program("threads"), "64", "50"], backend)
    assert s["calls"]["malloc"] >= 64 * 50
    assert s["calls"]["free"] >= 64 * 50
