#!/usr/bin/env bash
# Record the stored traces of tests/traces/ again (heaptrack's habit: the
# analyses are pinned on traces with known content, not only on live runs).
#
#   tests/traces/record.sh BUILD_DIR      then   tests/traces/expect.py BUILD_DIR
#
# Run it only when the trace format changes on purpose; commit the traces
# and the expected outputs together.  The C programs run from a copy in a
# directory that is removed afterwards, so the readers never find their
# binaries and name their code by object and offset, the same on every
# machine.  sequence-1.4.mt is not re-recorded: it is the last trace of
# format 1.4 (shim of commit f275590^, `tests/sequence`), kept to show old
# files stay readable; so is kept-jemalloc-1.9.mt, the last of format 1.9
# (rss events without their time_ms; shim of c0e3298); and
# killed-region-race.mt, a race caught once (tests/traces/check.py).
set -euo pipefail
build=$(realpath "${1:?usage: record.sh BUILD_DIR}")
here=$(dirname "$(realpath "$0")")
src=$(realpath "$here/../..")
shim=$build/shim/libmemtrace.so
scratch=$(mktemp -d /tmp/memtrace-stored.XXXXXX)
trap 'rm -rf "$scratch"' EXIT

record() { # NAME BACKEND [VAR=VALUE...] -- CMD...
	local name=$1 backend=$2; shift 2
	local vars=()
	while [ "$1" != -- ]; do vars+=("$1"); shift; done
	shift
	rm -f "$here/$name.mt"
	env MEMTRACE_BACKEND="$backend" MEMTRACE_OUT="$here/$name.mt" \
	    MEMTRACE_COMPRESS=1 MEMTRACE_QUIET=1 "${vars[@]}" \
	    LD_PRELOAD="$shim" "$@" >/dev/null
}

for prog in churn thread_heaps c_fragments grow io_churn realloc_shrink \
	    c_realloc_slurp kept_batches read_first; do
	cp "$build/tests/$prog" "$scratch/$prog"
done

cd "$src"
# The reference case, with regions: func2's heap churns on glibc.
record numpy-regions glibc -- /usr/bin/python3 bench/numpy_temporaries.py --epochs 1
# The same benchmark written plainly: no regions, sites by Python line.
record numpy-plain glibc -- /usr/bin/python3 tests/programs/numpy_plain.py 100
# The same with 1 fault in 8 sampled (format 1.12): the faults by site.
record numpy-plain-faults glibc MEMTRACE_FAULTS=sample:8 -- /usr/bin/python3 tests/programs/numpy_plain.py 30
# glibc's thread heaps shrunk by free() (madvise out of any interposer's sight).
record thread-heaps glibc -- "$scratch/thread_heaps" churn 40
# jemalloc purging large blocks, with every page fault sampled.
record churn-jemalloc jemalloc MEMTRACE_FAULTS=sample -- "$scratch/churn" big 8
# Memory kept: a cache mostly evicted, its pages kept by jemalloc.
record kept-jemalloc jemalloc -- "$scratch/c_fragments"
# A buffer doubled by realloc each round, purged by jemalloc: growth.
record grow-jemalloc jemalloc -- "$scratch/grow" grow 30
# Mappings that churn beside a run whose system time is its writes': the
# churn's share is what its faults can take, not the writes' time.
record io-churn glibc -- "$scratch/io_churn" 30
# A buffer grown by realloc past the mmap threshold, shrunk back to 4 KiB
# by realloc each round (format 1.18: where its blocks are given back).
record shrink-glibc glibc -- "$scratch/realloc_shrink" 20
# Four rounds of a buffer grown by realloc 4 KiB at a time to 32 MiB:
# few cycles, most of the run (new-user trial 42).
record slurp-glibc glibc -- "$scratch/c_realloc_slurp" 32
# np.append of a row's two statistics to an array, 20,000 rows: a buffer
# grown in small steps, copied at each (new-user trial 43).
record np-append-glibc glibc -- /usr/bin/python3 tests/programs/np_append_rows.py 20000
# Four threads' NumPy arrays churning glibc's thread heaps in huge pages:
# a churn below the bar as counted, from a count that is a lower bound.
record thread-numpy-glibc glibc -- /usr/bin/python3 tests/programs/np_thread_pool.py
# Four threads of 4-32 MiB arrays on jemalloc: its oversize arena purges
# them; the setting that avoids it is one to try (new-user trial 41).
record thread-numpy-jemalloc jemalloc -- /usr/bin/python3 tests/programs/np_normalise_pool.py
# Batches of 64 KiB records, every 16th kept: glibc keeps the freed pages
# for the next batch, and after the last for nobody; the fixes that give
# them back say what faulting them in again costs (new-user trial 44).
record kept-batches-glibc glibc -- "$scratch/kept_batches" 4
# A steady control on tcmalloc: nothing to find.
record steady-tcmalloc tcmalloc -- "$scratch/churn" steady 20
# NumPy frames on tcmalloc: memory kept beside the live arrays in about
# half the runs (record again until explain says memory-kept).
record np-frames-tcmalloc tcmalloc -- /usr/bin/python3 tests/programs/np_frame_filter.py 16
# A table from calloc read before it is written, freed at the end: more
# faults than pages, none of them memory given back (new-user trial 50).
MALLOC_PERTURB_= record read-first-glibc glibc -- "$scratch/read_first"
# The same control as an LTTng trace (CTF, read through babeltrace2).
lttng_out=$here/steady-lttng
rm -rf "$lttng_out"
session=memtrace-stored-$$
lttng list >/dev/null 2>&1 || lttng-sessiond --daemonize
lttng create "$session" --output "$lttng_out" >/dev/null
lttng enable-event --userspace 'memtrace:*' -s "$session" >/dev/null
lttng add-context --userspace -t vpid -t vtid -s "$session" >/dev/null
lttng start "$session" >/dev/null
env MEMTRACE_LTTNG=1 MEMTRACE_QUIET=1 LD_PRELOAD="$shim" \
    "$scratch/churn" steady 20 >/dev/null
lttng stop "$session" >/dev/null
lttng destroy "$session" >/dev/null
ls -l "$here"/*.mt; du -sh "$lttng_out"
