"""shared/reference/004's benchmark with a region around each call:
`numpy_regions.py [REPEAT]` (needs the memtrace module on PYTHONPATH)."""
import sys

import memtrace
import numpy as np

a = np.random.randint(0, 255, 1_000_000, dtype=np.uint8)


def func1(a):
    return a.astype(np.float64) / 255.0


def func2(a):
    t = a.astype(np.float64)
    return t / 255.0


def outside():
    # (a large block outside any region)
    return np.ones(200_000)


repeat = int(sys.argv[1]) if len(sys.argv) > 1 else 100
outside()
for f in (func1, func2):  # (as timeit.repeat runs them: one, then the other)
    region = memtrace.region(f.__name__)
    for _ in range(repeat):
        with region:
            f(a)  # (the result freed inside the region, as timeit does)
