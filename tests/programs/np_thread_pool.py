"""A pool of four threads, each task making a few 8 MB NumPy arrays and
dropping them (the GIL let go around the work): glibc gives each thread a
heap of its own, trimmed as the arrays go and grown again by the next
task's, in huge pages (NumPy advises them), so the faults counted are a
lower bound of the churn's (new-user trial 34)."""
from concurrent.futures import ThreadPoolExecutor

import numpy as np


def task(seed):
    rng = np.random.default_rng(seed)
    x = rng.random(1_000_000)
    y = np.sin(x) * np.cos(x) + x ** 2
    return float(np.sort(y)[500_000])


with ThreadPoolExecutor(4) as pool:
    print(round(sum(pool.map(task, range(36))), 3))
