#!/usr/bin/python3
"""The NumPy func1/func2 benchmark of shared/reference/004: func2 keeps the
astype() temporary in a name before dividing, and on glibc it runs several
times slower than func1, which does the same arithmetic.

    /usr/bin/python3 bench/numpy_temporaries.py              # the reference
    memtrace stat -- /usr/bin/python3 bench/numpy_temporaries.py
    memtrace stat --backend tcmalloc -- /usr/bin/python3 bench/numpy_temporaries.py
"""
import argparse
import gc
import os
import sys
import time

import numpy as np

try:
    import memtrace  # on PYTHONPATH under `memtrace run/stat/compare`
except ImportError:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "..", "python"))
    import memtrace


def func1(a):
    return a.astype(np.float64) / 255.0


def func2(a):
    t = a.astype(np.float64)
    return t / 255.0


def func2_out(a):
    """func2 reusing its temporary: one buffer instead of two."""
    t = a.astype(np.float64)
    return np.divide(t, 255.0, out=t)


def measure(f, a, repeats, keep_result):
    """min over `repeats` single calls, as timeit.repeat(number=1) takes it
    (perf_counter, garbage collector off), each call inside its region.
    The region's boundaries are outside the timed interval."""
    region = memtrace.region(f.__name__)
    held = None
    best = float("inf")
    gc_was_on = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeats):
            with region:
                start = time.perf_counter()
                if keep_result:
                    # The reference's second finding: holding on to the
                    # result changes what the allocator does next call.
                    held = f(a)
                else:
                    f(a)
                best = min(best, time.perf_counter() - start)
    finally:
        if gc_was_on:
            gc.enable()
    del held
    return best


def positive(text):
    n = int(text)
    if n < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a positive integer")
    return n


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=positive, default=1_000_000,
                   help="elements of the uint8 input (default 1,000,000)")
    p.add_argument("--repeats", type=positive, default=100,
                   help="timed calls per epoch; the minimum is kept")
    p.add_argument("--epochs", type=positive, default=5,
                   help="alternations of func1 and func2")
    p.add_argument("--keep-result", action="store_true",
                   help="keep each result alive until the next call (r = f(a))")
    p.add_argument("--out", action="store_true",
                   help="also run func2 dividing in place (out=t)")
    p.add_argument("--sweep", action="store_true",
                   help="repeat for sizes from size/8 to size*8")
    args = p.parse_args()

    funcs = [func1, func2] + ([func2_out] if args.out else [])
    sizes = ([args.size * k // 8 for k in (1, 2, 4, 8, 16, 32, 64)]
             if args.sweep else [args.size])
    print(f"numpy {np.__version__}, python {sys.version.split()[0]}")
    start, cpu_start = time.perf_counter(), time.process_time()
    for size in sizes:
        a = np.random.randint(0, 256, size=size, dtype=np.uint8)
        best = {}
        for _ in range(args.epochs):
            for f in funcs:
                t = measure(f, a, args.repeats, args.keep_result)
                best[f.__name__] = min(t, best.get(f.__name__, t))
                print(f"size={size} {f.__name__}: {t * 1e3:.3f} ms")
        ratio = best["func2"] / best["func1"]
        print(f"size={size} best: " + ", ".join(
            f"{k} {v * 1e3:.3f} ms" for k, v in best.items()) +
            f"; func2/func1 = {ratio:.2f}")
    # (the work's own time, from inside: without the process's start and
    # exit, which a preloaded library with kernel counters makes longer)
    print(f"work: {time.perf_counter() - start:.4f} s, "
          f"{time.process_time() - cpu_start:.4f} s of CPU")


if __name__ == "__main__":
    main()
