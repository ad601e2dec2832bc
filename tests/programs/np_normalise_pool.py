"""A pool of four threads, each task normalising and sorting an array of
4 to 32 MiB, with temporaries of the same size: on jemalloc, blocks of
8 MiB or more come from its oversize arena, which purges each at its free
(new-user trial 41)."""
from concurrent.futures import ThreadPoolExecutor

import numpy as np


def task(i):
    n = (512 * 1024) << (i % 4)
    a = np.random.default_rng(i).standard_normal(n)
    b = (a - a.mean()) / a.std()
    c = np.sort(b * 2.0 + 1.0)
    d = np.sqrt(np.abs(c)) + c ** 2
    return float(d[len(d) // 2])


with ThreadPoolExecutor(max_workers=4) as pool:
    print(round(sum(pool.map(task, range(12))), 3))
