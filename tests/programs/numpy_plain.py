"""shared/reference/004's benchmark written plainly: no regions, no
memtrace import.  `numpy_plain.py [REPEAT [func1|func2]]`"""
import sys
import timeit

import numpy as np

a = np.random.randint(0, 255, 1_000_000, dtype=np.uint8)


def func1(a):
    return a.astype(np.float64) / 255.0


def func2(a):
    t = a.astype(np.float64)
    return t / 255.0


repeat = int(sys.argv[1]) if len(sys.argv) > 1 else 300
only = sys.argv[2] if len(sys.argv) > 2 else None  # (func1 or func2 alone)
if only != "func2":
    print("func1", min(timeit.repeat(lambda: func1(a), number=1, repeat=repeat)))
if only != "func1":
    print("func2", min(timeit.repeat(lambda: func2(a), number=1, repeat=repeat)))
