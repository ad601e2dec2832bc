"""An array grown by np.concatenate in a loop (a constant step of 156 KiB,
to 9.4 MiB), made anew each round: linear growth, no doubling."""
import sys

import numpy as np


def collect(nchunks, chunk):
    out = np.empty(0)
    for i in range(nchunks):
        out = np.concatenate([out, np.full(chunk, float(i))])
    return out


total = 0.0
for _ in range(int(sys.argv[1]) if len(sys.argv) > 1 else 10):
    total += collect(60, 20000).sum()
print(total)
