#!/usr/bin/python3
"""How much of func1 and func2 (bench/numpy_temporaries.py) is arithmetic
and how much is the allocator: the same work into buffers that already
exist and are faulted in, against the functions themselves.

func2/func1 on a machine is bounded by (arithmetic + the allocator's cost
in func2) / arithmetic: where the arithmetic is slow, the same page faults
weigh less.  Minimum of --repeats single calls, one invocation."""
import argparse
import time

import numpy as np


def func1(a):
    return a.astype(np.float64) / 255.0


def func2(a):
    t = a.astype(np.float64)
    return t / 255.0


def best_ms(f, repeats):
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - start)
    return best * 1e3


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=1_000_000)
    p.add_argument("--repeats", type=int, default=200)
    args = p.parse_args()
    a = np.random.randint(0, 256, size=args.size, dtype=np.uint8)
    t = np.empty(args.size)
    out = np.empty(args.size)
    # The arithmetic alone: the conversion and the division, into buffers
    # faulted in once, as func1 does it (in place) and as func2 does it
    # (into a second buffer).
    cast = best_ms(lambda: np.copyto(t, a, casting="unsafe"), args.repeats)
    div_in_place = best_ms(lambda: np.divide(t, 255.0, out=t), args.repeats)
    div_into = best_ms(lambda: np.divide(t, 255.0, out=out), args.repeats)
    f1 = best_ms(lambda: func1(a), args.repeats)
    f2 = best_ms(lambda: func2(a), args.repeats)
    print(f"size={args.size} (ms, min of {args.repeats})")
    print(f"  arithmetic of func1: {cast + div_in_place:.3f} "
          f"(astype {cast:.3f} + divide in place {div_in_place:.3f})")
    print(f"  arithmetic of func2: {cast + div_into:.3f} "
          f"(astype {cast:.3f} + divide into a second buffer {div_into:.3f})")
    print(f"  func1 {f1:.3f}, func2 {f2:.3f}: func2/func1 = {f2 / f1:.2f}; "
          f"without the allocator's cost it would be "
          f"{(cast + div_into) / (cast + div_in_place):.2f}")


if __name__ == "__main__":
    main()
