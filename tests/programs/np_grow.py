"""An array grown by np.append in a loop, 200 values (1600 B) a step:
`np_grow.py [STEPS]`.  The step is less than a page: where glibc maps a
block its usable size is rounded up to pages, where the heap serves it
not, so a block is smaller than the one before one time in three."""
import sys

import numpy as np

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 1500
out = np.empty(0)
for i in range(steps):
    out = np.append(out, np.arange(200, dtype=np.float64) * i)
print(out.size, float(out.sum()))
